//! A kubectl-sigstore `verify -c` config (k8s-manifest-sigstore `VerifyResourceOption`,
//! research k8s-manifest-sigstore §5.8) as one `ManifestPolicy`.

use super::conversion::{Conversion, ConvertOptions, refuse};
use super::ignore::ignore_fields;
use super::issuers::{learn, pinned_issuer};
use crate::annotations::AnnotationDomain;
use crate::manifest::parse_documents;
use crate::policy::kyverno::{IgnoreFieldsSpec, KeylessSpec};
use crate::policy::{Location, PolicyError, typed};
use serde_json::{Map, Value, json};

/// Keys of a k8s-manifest-sigstore `VerifyResourceOption` config (`kubectl sigstore verify
/// -c`, research k8s-manifest-sigstore §5.8).
pub(super) const CONFIG_KEYS: &[&str] = &[
    "signers",
    "ignoreFields",
    "annotationKeyDomain",
    "skipObjects",
    "maxResourceManifestNum",
];

/// A kubectl-sigstore config file (one document, no `apiVersion`/`kind`, only its keys) as
/// one `ManifestPolicy`: `signers` → keyless entries of which one must verify (as upstream:
/// any one signer), each with its issuer pinned; `ignoreFields` translated like Kyverno's;
/// `annotationKeyDomain`; the k8s-manifest-sigstore defaults → the `kubernetes` profile.
/// `None` when the text is not such a config.
pub(super) fn kubectl_sigstore_config(
    origin: &str,
    text: &str,
    options: &ConvertOptions,
) -> Result<Option<Conversion>, PolicyError> {
    let Ok(documents) = parse_documents(text, &options.load.limits) else {
        return Ok(None);
    };
    let [(_, Value::Object(config))] = documents.as_slice() else {
        return Ok(None);
    };
    if config.contains_key("apiVersion")
        || config.contains_key("kind")
        || !config.keys().any(|k| CONFIG_KEYS.contains(&k.as_str()))
    {
        return Ok(None);
    }
    let at = Location {
        origin: origin.into(),
        document: 1,
        field: String::new(),
    };
    if let Some(key) = config.keys().find(|k| !CONFIG_KEYS.contains(&k.as_str())) {
        return Err(refuse(
            &at.at(key),
            "not a field mansign reads from a kubectl-sigstore config",
        ));
    }
    let mut out = Conversion::default();
    let signers: Vec<String> = match config.get("signers") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| PolicyError::Invalid {
            at: at.at("signers"),
            reason: e.to_string(),
        })?,
    };
    if signers.is_empty() {
        return Err(refuse(
            &at.at("signers"),
            "without signers kubectl-sigstore accepts any keyless signer; mansign needs the \
             signers' subjects (or verify with --key)",
        ));
    }
    let ctx = learn(origin, options, &[AnnotationDomain::default()])?;
    let mut entries = Vec::new();
    for (i, signer) in signers.iter().enumerate() {
        let entry_at = at.at(format!("signers[{i}]"));
        let spec = KeylessSpec {
            subject: Some(signer.clone()),
            ..KeylessSpec::default()
        };
        let issuer = pinned_issuer(&spec, &entry_at, &ctx, &mut out)?;
        entries.push(json!({"keyless": {"issuer": issuer, "subject": signer}}));
    }
    let mut spec = Map::new();
    if let Some(domain) = config.get("annotationKeyDomain") {
        let d = domain.as_str().unwrap_or_default();
        AnnotationDomain::new(d).map_err(|e| PolicyError::Invalid {
            at: at.at("annotationKeyDomain"),
            reason: e.to_string(),
        })?;
        spec.insert("annotationDomain".into(), json!(d));
    }
    spec.insert("ignoreProfile".into(), json!("kubernetes"));
    spec.insert("namespaceBinding".into(), json!(["*"]));
    if let Some(v) = config.get("ignoreFields") {
        let bindings: Vec<IgnoreFieldsSpec> =
            typed::from_value(v).map_err(|reason| PolicyError::Invalid {
                at: at.at("ignoreFields"),
                reason,
            })?;
        spec.insert(
            "ignoreFields".into(),
            ignore_fields(&bindings, &at.at("ignoreFields"))?,
        );
    }
    if config.contains_key("skipObjects") {
        out.notes.push(format!(
            "{}: dropped: mansign verifies those objects too (it has no out-of-scope objects)",
            at.at("skipObjects")
        ));
    }
    if config.contains_key("maxResourceManifestNum") {
        out.notes.push(format!(
            "{}: dropped: mansign matches an object to its signed document by identity",
            at.at("maxResourceManifestNum")
        ));
    }
    spec.insert(
        "attestors".into(),
        json!([{"count": 1, "entries": entries}]),
    );
    out.documents.push(json!({
        "apiVersion": crate::policy::mansign::API_VERSION,
        "kind": crate::policy::mansign::KIND,
        "metadata": {"name": "kubectl-sigstore-config"},
        "spec": spec,
    }));
    Ok(Some(out))
}
