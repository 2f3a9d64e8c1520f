//! Public keys a policy names by reference instead of holding them: a Kubernetes Secret
//! (`k8s://NAMESPACE/NAME`, cosign's convention: the Secret's `cosign.pub` data key) or a
//! ConfigMap data key (a Kyverno `context` entry of type `configMap` read as
//! `{{ NAME.data.KEY }}`). The loader records each reference and takes its value from a
//! [`ResolvedKeys`] the caller filled (the webhook from a watch, the CLI from one read);
//! a reference without a usable value makes the rule deny (see [`PolicyRule::unresolved_keys`](super::PolicyRule::unresolved_keys)).

use base64::Engine as _;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The Secret data key cosign writes the public key to (`cosign generate-key-pair
/// k8s://NS/NAME`), read when a `k8s://` reference names none.
pub const COSIGN_PUB: &str = "cosign.pub";

/// The kind of object a reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyObject {
    Secret,
    ConfigMap,
}

impl KeyObject {
    /// The API resource (`secrets`, `configmaps`).
    pub fn resource(self) -> &'static str {
        match self {
            KeyObject::Secret => "secrets",
            KeyObject::ConfigMap => "configmaps",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            KeyObject::Secret => "Secret",
            KeyObject::ConfigMap => "ConfigMap",
        }
    }
}

/// One data key of one Secret or ConfigMap holding PEM public keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyReference {
    pub object: KeyObject,
    pub namespace: String,
    pub name: String,
    /// The data key (`cosign.pub` for a `k8s://` Secret reference naming none).
    pub key: String,
}

impl fmt::Display for KeyReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{} key {:?}",
            self.object.kind(),
            self.namespace,
            self.name,
            self.key
        )
    }
}

/// Why a key reference (`k8s://…`, a `secretRef`/`configMapRef`) or a
/// `{{ NAME.data.KEY }}` variable was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyReferenceError {
    #[error("namespace {text:?} is not a Kubernetes name (lowercase letters, digits, `-`)")]
    Namespace { text: String },
    #[error(
        "{} name {text:?} is not a Kubernetes name (lowercase letters, digits, `-`, `.`)",
        .object.kind()
    )]
    ObjectName { object: KeyObject, text: String },
    #[error("data key {text:?} is not a Secret/ConfigMap key (letters, digits, `-`, `_`, `.`)")]
    DataKey { text: String },
    #[error("{text:?} is not k8s://NAMESPACE/NAME or k8s://NAMESPACE/NAME/KEY")]
    NotAK8sUri { text: String },
    #[error(
        "{text:?}: variables and JMESPath expressions are not supported, except a whole value \
         of the form \"{{{{ NAME.data.KEY }}}}\" (NAME a configMap context entry of the rule)"
    )]
    UnsupportedVariable { text: String },
}

/// Why a reference has no usable value: the object or its data key is missing or
/// unreadable, or it was not read (yet).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum KeyValueError {
    /// Nothing was recorded for the reference.
    #[error("{reference}: not read (yet)")]
    NotRead { reference: KeyReference },
    /// The object is not there; `watched`: a watch says so (it may come back).
    #[error("{}", missing(.reference, *.watched))]
    Missing {
        reference: KeyReference,
        watched: bool,
    },
    /// The object has no such data key.
    #[error("{reference}: the {} has no data key {:?}", .reference.object.kind(), .reference.key)]
    NoDataKey { reference: KeyReference },
    #[error("{reference}: data value is not a string")]
    NotAString { reference: KeyReference },
    #[error("{reference}: data value is not base64")]
    NotBase64 {
        reference: KeyReference,
        #[source]
        source: base64::DecodeError,
    },
    #[error("{reference}: data value is not UTF-8 text")]
    NotUtf8 { reference: KeyReference },
    /// The API server could not be read; `origin` names the cluster access.
    #[error("{reference}: cannot read it ({origin})")]
    Unreadable {
        reference: KeyReference,
        origin: String,
        #[source]
        source: Box<crate::kube::KubeError>,
    },
    /// A watch of the object failed, in the watch's words.
    #[error("{reference}: {reason}")]
    Watch {
        reference: KeyReference,
        reason: String,
    },
}

fn missing(reference: &KeyReference, watched: bool) -> String {
    format!(
        "{reference}: the {} {}/{} does not exist{}",
        reference.object.kind(),
        reference.namespace,
        reference.name,
        if watched {
            " (deleted, or not created yet)"
        } else {
            ""
        }
    )
}

/// A DNS-1123 subdomain (Secret and ConfigMap names) or label (namespaces): lowercase
/// letters, digits, `-` and (names only) `.`, at most 253 (63) characters.
fn is_name(text: &str, dots: bool) -> bool {
    let max = if dots { 253 } else { 63 };
    !text.is_empty()
        && text.len() <= max
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (dots && c == '.'))
        && text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && text
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// A data key: letters, digits, `-`, `_`, `.` (the API server's rule for Secret and
/// ConfigMap keys), at most 253 characters.
fn check_data_key(text: &str) -> Result<(), KeyReferenceError> {
    let ok = !text.is_empty()
        && text.len() <= 253
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(KeyReferenceError::DataKey { text: text.into() })
    }
}

impl KeyReference {
    /// A reference checked for well-formed names.
    pub fn new(
        object: KeyObject,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<KeyReference, KeyReferenceError> {
        if !is_name(namespace, false) {
            return Err(KeyReferenceError::Namespace {
                text: namespace.into(),
            });
        }
        if !is_name(name, true) {
            return Err(KeyReferenceError::ObjectName {
                object,
                text: name.into(),
            });
        }
        check_data_key(key)?;
        Ok(KeyReference {
            object,
            namespace: namespace.into(),
            name: name.into(),
            key: key.into(),
        })
    }

    /// `k8s://NAMESPACE/NAME` (cosign's form, data key `cosign.pub`) or
    /// `k8s://NAMESPACE/NAME/KEY`. `None` when the text is not a `k8s://` reference at all.
    pub fn parse_k8s_uri(text: &str) -> Option<Result<KeyReference, KeyReferenceError>> {
        let rest = text.trim().strip_prefix("k8s://")?;
        let parts: Vec<&str> = rest.split('/').collect();
        Some(match parts.as_slice() {
            [ns, name] => KeyReference::new(KeyObject::Secret, ns, name, COSIGN_PUB),
            [ns, name, key] => KeyReference::new(KeyObject::Secret, ns, name, key),
            _ => Err(KeyReferenceError::NotAK8sUri {
                text: text.trim().into(),
            }),
        })
    }

    /// The public key text this reference names in a Secret or ConfigMap as the API server
    /// returns it (`data` values base64 for a Secret, text for a ConfigMap; a ConfigMap's
    /// `binaryData` is not read). The error says what is missing.
    pub fn value_in(&self, object: &Value) -> Result<String, KeyValueError> {
        let reference = || self.clone();
        let data = object.get("data").and_then(Value::as_object);
        let Some(value) = data.and_then(|d| d.get(&self.key)) else {
            return Err(KeyValueError::NoDataKey {
                reference: reference(),
            });
        };
        let Some(text) = value.as_str() else {
            return Err(KeyValueError::NotAString {
                reference: reference(),
            });
        };
        match self.object {
            KeyObject::ConfigMap => Ok(text.to_string()),
            KeyObject::Secret => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|source| KeyValueError::NotBase64 {
                        reference: reference(),
                        source,
                    })?;
                String::from_utf8(bytes).map_err(|_| KeyValueError::NotUtf8 {
                    reference: reference(),
                })
            }
        }
    }
}

/// `{{ NAME.data.KEY }}` (spaces inside the braces optional), the one Kyverno variable form
/// mansign reads: `(NAME, KEY)`. `None` when the text holds no `{{` at all; an error for any
/// other use of variables or JMESPath.
pub fn parse_data_variable(text: &str) -> Option<Result<(String, String), KeyReferenceError>> {
    if !text.contains("{{") && !text.contains("}}") {
        return None;
    }
    let unsupported = || {
        Err(KeyReferenceError::UnsupportedVariable {
            text: text.trim().into(),
        })
    };
    let Some(inner) = text
        .trim()
        .strip_prefix("{{")
        .and_then(|t| t.strip_suffix("}}"))
    else {
        return Some(unsupported());
    };
    let inner = inner.trim();
    let parts: Vec<&str> = inner.split('.').collect();
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match parts.as_slice() {
        [name, "data", key] if ident(name) && check_data_key(key).is_ok() => {
            Some(Ok((name.to_string(), key.to_string())))
        }
        _ => Some(unsupported()),
    }
}

/// What a reference holds, as the caller read it: the public key text, or why there is none
/// (the object or key is missing, unreadable, not yet read).
#[derive(Debug, Clone, Default)]
pub struct ResolvedKeys {
    values: BTreeMap<KeyReference, Result<String, KeyValueError>>,
}

impl ResolvedKeys {
    pub fn new() -> ResolvedKeys {
        ResolvedKeys::default()
    }

    /// Records what `reference` holds.
    pub fn insert(&mut self, reference: KeyReference, value: Result<String, KeyValueError>) {
        self.values.insert(reference, value);
    }

    /// The value of `reference`; an error when it was never read.
    pub fn get(&self, reference: &KeyReference) -> Result<&str, KeyValueError> {
        match self.values.get(reference) {
            Some(Ok(text)) => Ok(text),
            Some(Err(e)) => Err(e.clone()),
            None => Err(KeyValueError::NotRead {
                reference: reference.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn k8s_uris() {
        let r = KeyReference::parse_k8s_uri("k8s://cosign-system/release")
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                r.object,
                r.namespace.as_str(),
                r.name.as_str(),
                r.key.as_str()
            ),
            (KeyObject::Secret, "cosign-system", "release", "cosign.pub")
        );
        let r = KeyReference::parse_k8s_uri("k8s://ns/name/other.pub")
            .unwrap()
            .unwrap();
        assert_eq!(r.key, "other.pub");
        assert!(KeyReference::parse_k8s_uri("-----BEGIN PUBLIC KEY-----").is_none());
        assert!(KeyReference::parse_k8s_uri("gcpkms://x").is_none());
        for bad in [
            "k8s://ns",
            "k8s://ns/",
            "k8s:///name",
            "k8s://NS/name",
            "k8s://ns/name/key/more",
            "k8s://ns/Name",
            "k8s://ns/name/bad key",
            "k8s://ns/{{x}}",
        ] {
            let e = KeyReference::parse_k8s_uri(bad)
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(!e.is_empty(), "{bad}");
        }
    }

    #[test]
    fn data_variables() {
        assert_eq!(
            parse_data_variable("{{ keys.data.production }}")
                .unwrap()
                .unwrap(),
            ("keys".into(), "production".into())
        );
        assert_eq!(
            parse_data_variable("{{keys.data.prod_2}}")
                .unwrap()
                .unwrap(),
            ("keys".into(), "prod_2".into())
        );
        assert!(parse_data_variable("-----BEGIN PUBLIC KEY-----").is_none());
        for bad in [
            "{{ request.object.metadata.name }}",
            "{{ keys.data.production | base64_decode(@) }}",
            "{{ keys.data }}",
            "{{ keys }}",
            "prefix {{ keys.data.production }}",
            "{{ keys.data.production }} suffix",
            "{{ keys.metadata.name }}",
            "{{ to_upper(keys.data.production) }}",
            "{{ keys.data.\"production\" }}",
            "{{ keys.data.production }",
            "}}",
            "{{keys.data.cosign.pub}}",
        ] {
            let e = parse_data_variable(bad).unwrap().unwrap_err().to_string();
            assert!(
                e.contains("not supported") || e.contains("are not"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn values_in_objects() {
        let secret = KeyReference::new(KeyObject::Secret, "ns", "s", COSIGN_PUB).unwrap();
        let obj = json!({"data": {"cosign.pub": "UEVN"}});
        assert_eq!(secret.value_in(&obj).unwrap(), "PEM");
        let e = secret
            .value_in(&json!({"data": {"other": "UEVN"}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no data key \"cosign.pub\""), "{e}");
        let e = secret.value_in(&json!({})).unwrap_err().to_string();
        assert!(e.contains("Secret ns/s"), "{e}");
        let e = secret
            .value_in(&json!({"data": {"cosign.pub": "%%"}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not base64"), "{e}");
        let cm = KeyReference::new(KeyObject::ConfigMap, "ns", "c", "production").unwrap();
        assert_eq!(
            cm.value_in(&json!({"data": {"production": "PEM"}}))
                .unwrap(),
            "PEM"
        );
        let e = cm
            .value_in(&json!({"binaryData": {"production": "UEVN"}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ConfigMap ns/c"), "{e}");
        let mut resolved = ResolvedKeys::new();
        assert!(
            resolved
                .get(&cm)
                .unwrap_err()
                .to_string()
                .contains("not read")
        );
        let gone = KeyValueError::Watch {
            reference: cm.clone(),
            reason: "gone".into(),
        };
        resolved.insert(cm.clone(), Err(gone.clone()));
        assert_eq!(resolved.get(&cm).unwrap_err().to_string(), gone.to_string());
    }
}
