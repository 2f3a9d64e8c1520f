//! What verification proves about who signed: the certificate's subject, issuer and CI
//! claims, and the transparency-log entry that dates the signature. Evidence, not
//! judgement: whether a signer is acceptable is the identity policy's decision.

use serde::Serialize;
use std::fmt;

/// The SAN identity of a Fulcio certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum CertificateSubject {
    Email(String),
    Uri(String),
}

impl CertificateSubject {
    pub fn as_str(&self) -> &str {
        match self {
            CertificateSubject::Email(v) | CertificateSubject::Uri(v) => v,
        }
    }
}

impl fmt::Display for CertificateSubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Fulcio CI claims of a certificate (extensions under `1.3.6.1.4.1.57264.1`), each
/// as the certificate states it. Only set for certificates issued to CI workloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowClaims {
    /// `.1.2` (deprecated GitHub) event that triggered the workflow, e.g. `push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_trigger: Option<String>,
    /// `.1.3` (deprecated GitHub) commit SHA the workflow ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_sha: Option<String>,
    /// `.1.4` (deprecated GitHub, no successor) workflow display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_name: Option<String>,
    /// `.1.5` (deprecated GitHub) repository as `owner/name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_repository: Option<String>,
    /// `.1.6` (deprecated GitHub) ref, e.g. `refs/heads/main`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_ref: Option<String>,
    /// `.1.9` build signer URI (the workflow file at its ref).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_signer_uri: Option<String>,
    /// `.1.10` build signer digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_signer_digest: Option<String>,
    /// `.1.11` runner environment, e.g. `github-hosted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_environment: Option<String>,
    /// `.1.12` source repository URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_uri: Option<String>,
    /// `.1.13` source repository digest (commit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_digest: Option<String>,
    /// `.1.14` source repository ref.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_ref: Option<String>,
    /// `.1.15` source repository identifier (immutable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_identifier: Option<String>,
    /// `.1.16` source repository owner URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_owner_uri: Option<String>,
    /// `.1.17` source repository owner identifier (immutable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_owner_identifier: Option<String>,
    /// `.1.18` build config URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_config_uri: Option<String>,
    /// `.1.19` build config digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_config_digest: Option<String>,
    /// `.1.20` build trigger, e.g. `push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_trigger: Option<String>,
    /// `.1.21` run invocation URI (the CI run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_invocation_uri: Option<String>,
    /// `.1.22` source repository visibility at signing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_visibility_at_signing: Option<String>,
}

impl WorkflowClaims {
    pub fn is_empty(&self) -> bool {
        *self == WorkflowClaims::default()
    }
}

/// The transparency-log entry a signature was verified against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RekorEvidence {
    /// Global log index of the entry.
    pub log_index: u64,
    /// Hex SHA-256 of the log's key (the log ID).
    pub log_id: String,
    /// When the log integrated the entry (Unix seconds), authenticated by the SET.
    #[serde(serialize_with = "serialize_unix_time")]
    pub integrated_time: i64,
}

impl RekorEvidence {
    /// The integrated time as RFC 3339 UTC (`2026-01-02T03:04:05Z`).
    pub fn integrated_time_rfc3339(&self) -> String {
        format_unix_time(self.integrated_time)
    }
}

/// Unix seconds as RFC 3339 UTC; the raw number if out of range.
pub fn format_unix_time(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| format!("@{seconds}"))
}

fn serialize_unix_time<S: serde::Serializer>(seconds: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_unix_time(*seconds))
}

/// Who signed a keyless signature set, as proven by verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SigstoreEvidence {
    /// The certificate's SAN (email or URI).
    pub subject: CertificateSubject,
    /// The OIDC issuer from Fulcio extension `.1.8`, else legacy `.1.1`. Certificates
    /// from 2021 carry neither.
    pub issuer: Option<String>,
    pub claims: WorkflowClaims,
    pub rekor: RekorEvidence,
    /// Hex SHA-256 of the certificate's public key (SubjectPublicKeyInfo DER, P-256 keys
    /// re-encoded: [`crate::keys::spki_fingerprint`]): the key that made the signature.
    pub key_fingerprint: String,
}
