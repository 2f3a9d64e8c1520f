//! Verification results that explain themselves.

use super::attestor_set::{EntryMatch, SetFailure};
use super::signer::SignerInfo;
use crate::annotations::AnnotationError;
use crate::manifest::{CompareError, DocumentOrigin, FieldDiff, MessageError, ObjectIdentity};
use serde_json::{Value, json};
use std::fmt;

/// A document that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Index of the signature set that verified (0 = `signature`, N = `signature_N`).
    pub signature_set: usize,
    pub signer: SignerInfo,
    /// Under an attestor policy: every entry that was satisfied, by which set and signer
    /// (`signature_set`/`signer` above are the first of them). Empty for any-of attestors.
    pub entries: Vec<EntryMatch>,
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
    /// An attestor set of the policy did not reach its count.
    #[error("attestor policy not satisfied: {0}")]
    AttestorSetNotSatisfied(SetFailure),
    #[error("{0}")]
    Message(MessageError),
    #[error("the signed message has no document for {object} (it holds: {})", .signed.join(", "))]
    NotInMessage { object: String, signed: Vec<String> },
    #[error("modified since signing: {}{}", .diffs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "), more_text(*.unreported))]
    Modified {
        diffs: Vec<FieldDiff>,
        /// Further differences not listed.
        unreported: usize,
    },
    /// The object and its signed document could not be compared.
    #[error("cannot compare the object with its signed document: {0}")]
    Uncomparable(CompareError),
    /// The signed `mansign.dev/expires` has passed (or cannot be read).
    #[error("signature expired: the signed document expires at {at}")]
    Expired { at: String },
    /// The signed expiry annotation is malformed: fail closed.
    #[error("signed expiry is invalid: {reason}")]
    InvalidExpiry { reason: String },
    /// Under an attestor policy, a signature older than the maximum age.
    #[error("signature too old: {reason}")]
    TooOld { reason: String },
}

impl Rejection {
    /// Stable name of the failed check, for JSON output and metrics.
    pub fn check(&self) -> &'static str {
        match self {
            Rejection::Annotations(AnnotationError::NoMessage { .. }) => "not-signed",
            Rejection::Annotations(AnnotationError::NoSignature { .. }) => "no-signature",
            Rejection::Annotations(_) => "annotations",
            Rejection::NoAttestors => "configuration",
            Rejection::NoTrustedSignature { .. } | Rejection::AttestorSetNotSatisfied(_) => {
                "signature"
            }
            Rejection::Message(_) => "message",
            Rejection::NotInMessage { .. } => "match",
            Rejection::Modified { .. } | Rejection::Uncomparable(_) => "diff",
            Rejection::Expired { .. } | Rejection::InvalidExpiry { .. } => "expired",
            Rejection::TooOld { .. } => "max-age",
        }
    }
}

fn more_text(unreported: usize) -> String {
    if unreported == 0 {
        String::new()
    } else {
        format!("; and {unreported} more difference(s)")
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
                if !ok.entries.is_empty() {
                    v["attestors"] = json!(ok.entries);
                }
            }
            Err(r) => {
                let mut failure = json!({"check": r.check(), "reason": r.to_string()});
                match r {
                    Rejection::Modified { diffs, unreported } => {
                        failure["diff"] = json!(diffs);
                        if *unreported > 0 {
                            failure["unreportedDiffs"] = json!(unreported);
                        }
                    }
                    Rejection::NoTrustedSignature { attempts } => {
                        failure["attempts"] = json!(attempts)
                    }
                    Rejection::AttestorSetNotSatisfied(set) => failure["attestorSet"] = json!(set),
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
            Ok(ok) if ok.entries.is_empty() => write!(
                f,
                "verified (signature set {}, {})",
                ok.signature_set, ok.signer
            ),
            Ok(ok) => {
                let entries: Vec<String> = ok.entries.iter().map(ToString::to_string).collect();
                write!(f, "verified ({})", entries.join("; "))
            }
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
