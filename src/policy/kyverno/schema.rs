//! The Kyverno policy schema, as far as mansign reads it (`api/kyverno/v1`,
//! research kyverno-manifests §1a). `validate.manifests` and everything below it is strict
//! (`deny_unknown_fields`): an unknown field there is an error naming it. Other rule kinds
//! are kept opaque, because rules without `validate.manifests` are skipped.

use crate::policy::selector::{MatchResources, ObjectReference};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A Kyverno policy document (only the fields mansign reads are typed).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KyvernoPolicyDocument {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: Spec,
}

#[derive(Debug, Deserialize)]
pub struct Metadata {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// `All` (default) or `One` (only the first matching rule applies: refused).
    #[serde(default)]
    pub apply_rules: Option<String>,
    /// `Enforce`/`enforce` or `Audit`/`audit` (Kyverno's default: `Audit`; mansign's:
    /// `Enforce`).
    #[serde(default)]
    pub validation_failure_action: Option<String>,
    #[serde(default)]
    pub validation_failure_action_overrides: Option<Vec<ActionOverrideSpec>>,
}

/// An item of `validationFailureActionOverrides` / `failureActionOverrides`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActionOverrideSpec {
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub namespace_selector: Option<Value>,
}

/// A rule. Fields of other rule types are kept opaque: such rules are skipped.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub name: String,
    #[serde(rename = "match", default)]
    pub match_resources: Option<MatchResources>,
    #[serde(default)]
    pub exclude: Option<MatchResources>,
    #[serde(default)]
    pub validate: Option<Validate>,
    #[serde(default)]
    pub preconditions: Option<Value>,
    #[serde(default)]
    pub context: Option<Value>,
    #[serde(default)]
    pub cel_preconditions: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Validate {
    #[serde(default)]
    pub manifests: Option<Manifests>,
    #[serde(default)]
    pub failure_action: Option<String>,
    #[serde(default)]
    pub failure_action_overrides: Option<Vec<ActionOverrideSpec>>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub pattern: Option<Value>,
    #[serde(default)]
    pub any_pattern: Option<Value>,
    #[serde(default)]
    pub deny: Option<Value>,
    #[serde(default)]
    pub foreach: Option<Value>,
    #[serde(default)]
    pub pod_security: Option<Value>,
    #[serde(default)]
    pub cel: Option<Value>,
    #[serde(default)]
    pub assert: Option<Value>,
}

/// `validate.manifests`: every field is known; anything else is an error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifests {
    #[serde(default)]
    pub attestors: Vec<AttestorSetSpec>,
    #[serde(default)]
    pub annotation_domain: Option<String>,
    #[serde(default)]
    pub ignore_fields: Vec<IgnoreFieldsSpec>,
    #[serde(default)]
    pub dry_run: Option<DryRun>,
    #[serde(default)]
    pub repository: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttestorSetSpec {
    #[serde(default)]
    pub count: Option<usize>,
    #[serde(default)]
    pub entries: Vec<AttestorSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttestorSpec {
    #[serde(default)]
    pub keys: Option<KeysSpec>,
    #[serde(default)]
    pub certificates: Option<CertificatesSpec>,
    #[serde(default)]
    pub keyless: Option<KeylessSpec>,
    #[serde(default)]
    pub attestor: Option<AttestorSetSpec>,
    #[serde(default)]
    pub annotations: Option<Value>,
    #[serde(default)]
    pub repository: Option<String>,
    #[serde(default)]
    pub signature_algorithm: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeysSpec {
    #[serde(default)]
    pub public_keys: Option<String>,
    #[serde(default)]
    pub signature_algorithm: Option<String>,
    #[serde(default)]
    pub kms: Option<String>,
    #[serde(default)]
    pub secret: Option<Value>,
    #[serde(default)]
    pub rekor: Option<RekorSpec>,
    #[serde(default)]
    pub ctlog: Option<CtlogSpec>,
}

/// Kyverno `CertificateAttestor` (`api/kyverno/v1/image_verification_types.go`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificatesSpec {
    #[serde(default)]
    pub cert: Option<String>,
    #[serde(default)]
    pub cert_chain: Option<String>,
    #[serde(default)]
    pub rekor: Option<RekorSpec>,
    #[serde(default)]
    pub ctlog: Option<CtlogSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeylessSpec {
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub subject_reg_exp: Option<String>,
    #[serde(default)]
    pub issuer_reg_exp: Option<String>,
    #[serde(default)]
    pub roots: Option<String>,
    #[serde(default)]
    pub rekor: Option<RekorSpec>,
    #[serde(default)]
    pub ctlog: Option<CtlogSpec>,
    #[serde(default)]
    pub additional_extensions: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RekorSpec {
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub pubkey: Option<String>,
    #[serde(default)]
    pub ignore_tlog: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CtlogSpec {
    #[serde(default, rename = "ignoreSCT")]
    pub ignore_sct: Option<bool>,
    #[serde(default)]
    pub pubkey: Option<String>,
    #[serde(default)]
    pub tsa_cert_chain: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DryRun {
    #[serde(default)]
    pub enable: Option<bool>,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IgnoreFieldsSpec {
    #[serde(default)]
    pub objects: Vec<ObjectReference>,
    #[serde(default)]
    pub fields: Vec<String>,
}
