//! One Kubernetes object and where it came from.

use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// Where input came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    File(PathBuf),
    Stdin,
    /// Input handed over by a library caller or the webhook, named by the caller.
    Named(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Stdin => f.write_str("<stdin>"),
            Source::Named(n) => f.write_str(n),
        }
    }
}

/// Where a document sits: its source and its 0-based position among the non-empty
/// documents of that source; for an item of a `v1 List`, also its 0-based position in the
/// List's `items`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentOrigin {
    pub source: Source,
    pub index: usize,
    pub item: Option<usize>,
}

impl fmt::Display for DocumentOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.source, self.index + 1)?;
        match self.item {
            // Numbered from 1 like documents; `items[N]` is the field path.
            Some(i) => write!(f, ", List item {} (items[{i}])", i + 1),
            None => Ok(()),
        }
    }
}

/// Why a value is not a Kubernetes object mansign can name: which field is missing or wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The value is not a mapping.
    #[error("expected a mapping, found {found}")]
    NotAMapping { found: &'static str },
    /// A required field is not there.
    #[error("missing field `{field}`")]
    Missing { field: &'static str },
    /// A required string field is the empty string.
    #[error("field `{field}` is empty")]
    Empty { field: &'static str },
    /// A field of the wrong type.
    #[error("field `{field}` must be {expected}, found {found}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    /// `apiVersion` without a version (`apps/`).
    #[error("field `apiVersion` is malformed: {api_version:?}")]
    MalformedApiVersion { api_version: String },
}

/// Group, version, kind, namespace and name of an object. The group of core objects
/// (`apiVersion: v1`) is the empty string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ObjectIdentity {
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectIdentity {
    /// Reads the identity of a Kubernetes object, or says which field is missing or wrong.
    pub fn of(value: &Value) -> Result<Self, IdentityError> {
        let obj = value.as_object().ok_or(IdentityError::NotAMapping {
            found: type_name(value),
        })?;
        let api_version = string_field(obj.get("apiVersion"), "apiVersion")?;
        let kind = string_field(obj.get("kind"), "kind")?;
        let metadata = match obj.get("metadata") {
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(IdentityError::WrongType {
                    field: "metadata",
                    expected: "a mapping",
                    found: type_name(other),
                });
            }
            None => return Err(IdentityError::Missing { field: "metadata" }),
        };
        let name = string_field(metadata.get("name"), "metadata.name")?;
        let namespace = match metadata.get("namespace") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(IdentityError::WrongType {
                    field: "metadata.namespace",
                    expected: "a string",
                    found: type_name(other),
                });
            }
        };
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.clone()),
        };
        if version.is_empty() {
            return Err(IdentityError::MalformedApiVersion { api_version });
        }
        Ok(ObjectIdentity {
            group,
            version,
            kind,
            namespace,
            name,
        })
    }

    /// `apiVersion` as written in the object.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Same object for matching a signed document: group, kind, namespace and name. The
    /// version is left out on purpose: the API server may serve a signed `v1beta1`
    /// object as `v1` (kubectl-sigstore matches the same way).
    pub fn same_object(&self, other: &ObjectIdentity) -> bool {
        self.group == other.group
            && self.kind == other.kind
            && self.name == other.name
            && self.namespace == other.namespace
    }
}

impl fmt::Display for ObjectIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        f.write_str(" ")?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        f.write_str(&self.name)
    }
}

fn string_field(v: Option<&Value>, field: &'static str) -> Result<String, IdentityError> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(IdentityError::Empty { field }),
        Some(other) => Err(IdentityError::WrongType {
            field,
            expected: "a string",
            found: type_name(other),
        }),
        None => Err(IdentityError::Missing { field }),
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A Kubernetes object read from input.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub origin: DocumentOrigin,
    pub identity: ObjectIdentity,
    pub value: Value,
}

impl Document {
    /// Wraps a parsed value, checking that it is a Kubernetes object.
    pub fn new(origin: DocumentOrigin, value: Value) -> Result<Self, IdentityError> {
        let identity = ObjectIdentity::of(&value)?;
        Ok(Document {
            origin,
            identity,
            value,
        })
    }

    /// `metadata.annotations`, if present and a mapping.
    pub fn annotations(&self) -> Option<&serde_json::Map<String, Value>> {
        self.value
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object)
    }
}
