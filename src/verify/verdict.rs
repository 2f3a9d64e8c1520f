//! Verification results that explain themselves.

use super::attestors::attestor_set::{EntryMatch, SetFailure};
use super::attestors::failure::{Attempt, best_attempt};
use super::sigstore::signer::SignerInfo;
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

impl Verified {
    /// Every accepted signer: the entries' under an attestor policy, else the one signer.
    pub fn signers(&self) -> impl Iterator<Item = &SignerInfo> {
        let one = self.entries.is_empty().then_some(&self.signer);
        one.into_iter()
            .chain(self.entries.iter().map(|e| &e.signer))
    }
}

/// The first check that failed, and why: typed down to the check ([`Rejection::code`]
/// names it for metrics and JSON), with a message for people ([`Display`](fmt::Display)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    #[error("{0}")]
    Annotations(AnnotationError),
    #[error("no trusted key or identity configured")]
    NoAttestors,
    /// No signature set was accepted by a trusted attestor: every attempt and why (when
    /// the attempt that got furthest failed on the signature's age, [`Rejection::check`] is
    /// `max-age`).
    #[error("no signature set verified: {}", join(.attempts))]
    NoTrustedSignature { attempts: Vec<Attempt> },
    /// An attestor set of the policy did not reach its count.
    #[error("attestor policy not satisfied: {0}")]
    AttestorSetNotSatisfied(SetFailure),
    /// Verifying would take more signature checks than the object's budget.
    #[error(
        "more than {limit} signature checks for one object (signature sets x attestors); \
         refused"
    )]
    BudgetExceeded { limit: usize },
    /// Displayed with its causes: a verdict's reason is read whole, it has no `source()`.
    #[error("{}", crate::error::Chain(.0))]
    Message(MessageError),
    #[error(
        "the signed message has no document for {object} (it holds: {}{})",
        .signed.join(", "),
        more_documents(*.unlisted)
    )]
    NotInMessage {
        object: String,
        /// The first [`MAX_LISTED_DOCUMENTS`] objects the message holds.
        signed: Vec<String>,
        /// How many more it holds.
        unlisted: usize,
    },
    #[error("modified since signing: {}{}", join(.diffs), more_text(*.unreported))]
    Modified {
        diffs: Vec<FieldDiff>,
        /// Further differences not listed.
        unreported: usize,
    },
    /// The object and its signed document could not be compared.
    #[error("cannot compare the object with its signed document: {0}")]
    Uncomparable(CompareError),
    /// The signed `mansign.dev/expires` has passed.
    #[error("signature expired: the signed document expires at {at}")]
    Expired { at: jiff::Timestamp },
    /// A signed time annotation (`mansign.dev/expires`, `mansign.dev/signed-at`) is
    /// malformed: fail closed.
    #[error("signed time annotation is invalid: {reason}")]
    InvalidSignedTime { reason: String },
    /// A public key the policy names by reference (a Kubernetes Secret or ConfigMap) is not
    /// available: deleted, unreadable, missing the data key, not a public key, or not read
    /// yet. Fail closed: nothing is checked against the keys that are available.
    #[error("a public key the policy names is not available: {reason}")]
    KeyUnresolved { reason: String },
}

fn join<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Rejection {
    /// Stable name of the failed step, for JSON output and metrics: `not-signed`,
    /// `no-signature`, `annotations`, `configuration`, `signature`, `max-age`, `budget`,
    /// `message`, `match`, `diff`, `expired`.
    pub fn check(&self) -> &'static str {
        match self {
            Rejection::Annotations(AnnotationError::NoMessage { .. }) => "not-signed",
            Rejection::Annotations(AnnotationError::NoSignature { .. }) => "no-signature",
            Rejection::Annotations(_) => "annotations",
            Rejection::NoAttestors | Rejection::KeyUnresolved { .. } => "configuration",
            Rejection::NoTrustedSignature { attempts } => {
                if best_attempt(attempts).is_some_and(|a| a.failure.is_age()) {
                    "max-age"
                } else {
                    "signature"
                }
            }
            Rejection::AttestorSetNotSatisfied(set) => {
                if set.is_age() {
                    "max-age"
                } else {
                    "signature"
                }
            }
            Rejection::BudgetExceeded { .. } => "budget",
            Rejection::Message(_) => "message",
            Rejection::NotInMessage { .. } => "match",
            Rejection::Modified { .. } | Rejection::Uncomparable(_) => "diff",
            Rejection::Expired { .. } | Rejection::InvalidSignedTime { .. } => "expired",
        }
    }

    /// Stable machine code of the exact reason (`untrusted-chain`, `subject-mismatch`,
    /// `modified`, ...), documented in docs/cli.md: for a signature failure, the code of
    /// the attempt that got furthest.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::Annotations(e) => e.code(),
            Rejection::NoAttestors => "no-attestors",
            Rejection::NoTrustedSignature { attempts } => {
                best_attempt(attempts).map_or("no-signature-sets", |a| a.failure.code())
            }
            Rejection::AttestorSetNotSatisfied(set) => set.code(),
            Rejection::BudgetExceeded { .. } => "budget-exceeded",
            Rejection::Message(_) => "malformed-message",
            Rejection::NotInMessage { .. } => "not-in-message",
            Rejection::Modified { .. } => "modified",
            Rejection::Uncomparable(_) => "uncomparable",
            Rejection::Expired { .. } => "expired",
            Rejection::InvalidSignedTime { .. } => "invalid-signed-time",
            Rejection::KeyUnresolved { .. } => "key-unresolved",
        }
    }
}

/// Most objects a [`Rejection::NotInMessage`] names (a message may hold 1,000).
pub const MAX_LISTED_DOCUMENTS: usize = 20;

fn more_documents(unlisted: usize) -> String {
    if unlisted == 0 {
        String::new()
    } else {
        format!(" and {unlisted} more")
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
        if let Some(item) = self.origin.as_ref().and_then(|o| o.item) {
            // 1-based like `document`: the position in the List's `items`.
            v["item"] = json!(item + 1);
        }
        match &self.result {
            Ok(ok) => {
                v["signatureSet"] = json!(ok.signature_set);
                v["signer"] = json!(ok.signer);
                if !ok.entries.is_empty() {
                    v["attestors"] = json!(ok.entries);
                }
            }
            Err(r) => {
                let mut failure =
                    json!({"check": r.check(), "code": r.code(), "reason": r.to_string()});
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
