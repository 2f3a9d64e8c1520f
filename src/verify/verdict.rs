//! Verification results that explain themselves.

use crate::annotations::AnnotationError;
use crate::manifest::{DocumentOrigin, FieldDiff, MessageError, ObjectIdentity};
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt;

/// Who signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SignerInfo {
    Key { name: String, fingerprint: String },
}

impl fmt::Display for SignerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignerInfo::Key { name, fingerprint } => {
                write!(
                    f,
                    "key {name} (sha256:{})",
                    &fingerprint[..fingerprint.len().min(16)]
                )
            }
        }
    }
}

/// A document that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Index of the signature set that verified (0 = `signature`, N = `signature_N`).
    pub signature_set: usize,
    pub signer: SignerInfo,
}

/// The first check that failed, and why.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Rejection {
    #[error("{0}")]
    Annotations(AnnotationError),
    #[error("no trusted key or identity configured")]
    NoAttestors,
    #[error("no signature set verified: {}", .attempts.join("; "))]
    NoTrustedSignature { attempts: Vec<String> },
    #[error("{0}")]
    Message(MessageError),
    #[error("the signed message has no document for {object} (it holds: {})", .signed.join(", "))]
    NotInMessage { object: String, signed: Vec<String> },
    #[error("modified since signing: {}", .diffs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Modified { diffs: Vec<FieldDiff> },
}

impl Rejection {
    /// Stable name of the failed check, for JSON output and metrics.
    pub fn check(&self) -> &'static str {
        match self {
            Rejection::Annotations(AnnotationError::NoMessage { .. }) => "not-signed",
            Rejection::Annotations(AnnotationError::NoSignature { .. }) => "no-signature",
            Rejection::Annotations(_) => "annotations",
            Rejection::NoAttestors => "configuration",
            Rejection::NoTrustedSignature { .. } => "signature",
            Rejection::Message(_) => "message",
            Rejection::NotInMessage { .. } => "match",
            Rejection::Modified { .. } => "diff",
        }
    }
}

/// The verdict for one document.
#[derive(Debug, Clone)]
pub struct DocumentVerdict {
    pub origin: Option<DocumentOrigin>,
    pub object: ObjectIdentity,
    pub result: Result<Verified, Rejection>,
}

impl DocumentVerdict {
    pub fn is_verified(&self) -> bool {
        self.result.is_ok()
    }

    /// JSON form (documented in docs/cli.md; field names are stable).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "source": self.origin.as_ref().map(|o| o.source.to_string()),
            "document": self.origin.as_ref().map(|o| o.index + 1),
            "object": self.object,
            "verified": self.is_verified(),
        });
        match &self.result {
            Ok(ok) => {
                v["signatureSet"] = json!(ok.signature_set);
                v["signer"] = json!(ok.signer);
            }
            Err(r) => {
                let mut failure = json!({"check": r.check(), "reason": r.to_string()});
                match r {
                    Rejection::Modified { diffs } => failure["diff"] = json!(diffs),
                    Rejection::NoTrustedSignature { attempts } => {
                        failure["attempts"] = json!(attempts)
                    }
                    _ => {}
                }
                v["failure"] = failure;
            }
        }
        v
    }
}

impl fmt::Display for DocumentVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(o) = &self.origin {
            write!(f, "{o}: ")?;
        }
        write!(f, "{}: ", self.object)?;
        match &self.result {
            Ok(ok) => write!(
                f,
                "verified (signature set {}, {})",
                ok.signature_set, ok.signer
            ),
            Err(r) => write!(f, "FAILED [{}] {r}", r.check()),
        }
    }
}

/// Verdicts for a run.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub documents: Vec<DocumentVerdict>,
}

impl Verdict {
    /// True when there is at least one document and every document verified.
    pub fn is_verified(&self) -> bool {
        !self.documents.is_empty() && self.documents.iter().all(DocumentVerdict::is_verified)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "verified": self.is_verified(),
            "documents": self.documents.iter().map(DocumentVerdict::to_json).collect::<Vec<_>>(),
        })
    }
}
