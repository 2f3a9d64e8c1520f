//! Verification: is this object exactly what a trusted signer signed?
//!
//! [`Verifier::verify_document`] runs one pipeline per object and stops at the first
//! failing check:
//!
//! 1. read the signature annotations (message + signature sets);
//! 2. check the signature sets against the [`Requirement`]: any one trusted attestor, or
//!    every attestor set of an [`AttestorPolicy`] (N-of-M, nested);
//! 3. read the signed documents out of the message;
//! 4. find the signed document for this object (group, kind, namespace, name);
//! 5. compare the object with it (signature annotations and ignored fields left out).
//!
//! The result, a [`DocumentVerdict`], explains itself: which set and which attestor
//! verified, or which check failed and why. The CLI and the webhook print it as is.
//!
//! Keyless signatures are checked in full ([`verify_certificate_set`]: Fulcio chain at the
//! Rekor integrated time, SCT, SET, Rekor body, signature over M), then the signer is
//! judged by an [`IdentityPolicy`]:
//!
//! ```no_run
//! use mansign::trust::TrustRoot;
//! use mansign::verify::{Attestor, IdentityPolicy, KeylessAttestor, Verifier};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let identity = IdentityPolicy::builder()
//!     .issuer("https://token.actions.githubusercontent.com")
//!     .subject("https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main")
//!     .build()?;
//! let trust = Arc::new(TrustRoot::public_good()?); // embedded, offline
//! let verifier = Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(trust, identity))]);
//! let object: serde_json::Value = serde_json::from_str(&std::fs::read_to_string("cm.json")?)?;
//! let verdict = verifier.verify_object(&object)?;
//! println!("{verdict}"); // ... verified (signature set 0, subject https://github.com/...)
//! # Ok(())
//! # }
//! ```

mod attestor;
mod attestor_set;
mod certificate;
mod evidence;
mod identity;
mod key_bundle;
mod keyless;
mod legacy_rekord;
mod rekor_entry;
pub(crate) mod sigstore;
mod sigstore_error;
mod verdict;

pub use attestor::{Attestor, KeylessAttestor, TrustedKey};
pub use attestor_set::{
    AttestorEntry, AttestorPolicy, AttestorSet, AttestorSetError, EntryFailure, EntryMatch,
    EntryPath, SetFailure,
};
pub use certificate::{
    CertificateAttestor, CertificateAttestorError, CertificateCheckError, SigningTime,
};
pub use evidence::{
    CertificateSubject, RekorEvidence, SigstoreEvidence, WorkflowClaims, format_unix_time,
};
pub use identity::{
    AnchoredRegex, Claim, ClaimMatcher, IdentityPolicy, IdentityPolicyBuilder, IdentityPolicyError,
    ValueMatcher,
};
pub use key_bundle::verify_key_set_with_bundle;
pub use keyless::verify_certificate_set;
pub use sigstore_error::SigstoreError;
pub use verdict::{DocumentVerdict, Rejection, SignerInfo, Verdict, Verified};

use crate::annotations::{AnnotationDomain, extract, strip_signature_annotations};
use crate::limits::Limits;
use crate::manifest::{
    Document, IgnoreFields, ObjectIdentity, Tolerances, diff_documents, expiry_of, parse_message,
    path_bytes_within,
};
use serde_json::Value;

/// Which signatures a [`Verifier`] requires.
#[derive(Debug, Clone)]
pub enum Requirement {
    /// One signature set accepted by any one of these attestors (`--key`, `--certificate-*`).
    AnyOf(Vec<Attestor>),
    /// Attestor sets, all required, each N-of-M (policy files; see [`AttestorPolicy`]).
    Policy(AttestorPolicy),
}

/// Checks documents against a set of trusted attestors.
#[derive(Debug, Clone)]
pub struct Verifier {
    requirement: Requirement,
    domain: AnnotationDomain,
    limits: Limits,
    ignore: IgnoreFields,
    tolerances: Tolerances,
    /// Fixed "now" for freshness checks (tests, replays); the system clock when unset.
    clock: Option<jiff::Timestamp>,
    /// Oldest acceptable transparency-log time of a signature (`--max-age`).
    max_age: Option<jiff::SignedDuration>,
}

impl Verifier {
    /// A verifier that accepts a signature made by any one of `attestors`.
    pub fn new(attestors: Vec<Attestor>) -> Self {
        Self::with_requirement(Requirement::AnyOf(attestors))
    }

    /// A verifier that requires every attestor set of `policy` (N-of-M, nested).
    pub fn for_policy(policy: AttestorPolicy) -> Self {
        Self::with_requirement(Requirement::Policy(policy))
    }

    /// A verifier for any [`Requirement`].
    pub fn with_requirement(requirement: Requirement) -> Self {
        Verifier {
            requirement,
            domain: AnnotationDomain::default(),
            limits: Limits::default(),
            ignore: IgnoreFields::none(),
            tolerances: Tolerances::default(),
            clock: None,
            max_age: None,
        }
    }

    pub fn with_domain(mut self, domain: AnnotationDomain) -> Self {
        self.domain = domain;
        self
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn with_ignore_fields(mut self, ignore: IgnoreFields) -> Self {
        self.ignore = ignore;
        self
    }

    /// Differences tolerated for live objects: an ignore profile, digest pinning,
    /// namespace binding (see [`Tolerances`]).
    pub fn with_tolerances(mut self, tolerances: Tolerances) -> Self {
        self.tolerances = tolerances;
        self
    }

    /// Checks freshness (signed expiry, maximum age), and the validity of certificate
    /// attestors' certificates on sets without a Rekor bundle, at this time instead of now.
    pub fn with_clock(mut self, now: jiff::Timestamp) -> Self {
        self.clock = Some(now);
        self
    }

    /// Rejects signatures whose Rekor integrated time is older than `max_age` (no replay
    /// of old signed versions). A signature without transparency-log time (key-signed,
    /// no bundle) cannot prove its age and is rejected too.
    pub fn with_max_age(mut self, max_age: jiff::SignedDuration) -> Self {
        self.max_age = Some(max_age);
        self
    }

    /// The maximum signature age this verifier enforces, if any.
    pub fn max_age(&self) -> Option<jiff::SignedDuration> {
        self.max_age
    }

    fn now(&self) -> jiff::Timestamp {
        self.clock.unwrap_or_else(jiff::Timestamp::now)
    }

    /// The max-age check for one signer; `Err` says why it is too old.
    fn check_age(&self, signer: &SignerInfo) -> Result<(), String> {
        let Some(max_age) = self.max_age else {
            return Ok(());
        };
        let Some(signed_at) = signer.logged_at() else {
            return Err(format!(
                "no transparency-log time to check the maximum age ({max_age:#}) against"
            ));
        };
        let oldest = self
            .now()
            .checked_sub(max_age)
            .map_err(|e| format!("maximum age {max_age:#}: {e}"))?;
        if signed_at < oldest {
            return Err(format!(
                "signed at {signed_at}, older than the maximum age {max_age:#}"
            ));
        }
        Ok(())
    }

    /// Verifies every document; the run passes only if every document does.
    pub fn verify_documents<'a>(&self, docs: impl IntoIterator<Item = &'a Document>) -> Verdict {
        Verdict {
            documents: docs.into_iter().map(|d| self.verify_document(d)).collect(),
        }
    }

    /// Verifies one document read from input.
    pub fn verify_document(&self, doc: &Document) -> DocumentVerdict {
        DocumentVerdict {
            origin: Some(doc.origin.clone()),
            object: doc.identity.clone(),
            result: self.check(&doc.identity, &doc.value),
        }
    }

    /// Verifies an object that did not come from a file (library callers, the webhook).
    pub fn verify_object(&self, object: &Value) -> Result<DocumentVerdict, String> {
        let identity = ObjectIdentity::of(object)?;
        let result = self.check(&identity, object);
        Ok(DocumentVerdict {
            origin: None,
            object: identity,
            result,
        })
    }

    fn check(&self, identity: &ObjectIdentity, object: &Value) -> Result<Verified, Rejection> {
        // 1. annotations
        let signed = extract(object, &self.domain, &self.limits).map_err(Rejection::Annotations)?;
        // 2. signature sets against the requirement
        let attestors = match &self.requirement {
            Requirement::AnyOf(attestors) => attestors,
            Requirement::Policy(policy) => {
                let entries = policy
                    .evaluate_at(&signed.message, &signed.sets, self.now())
                    .map_err(Rejection::AttestorSetNotSatisfied)?;
                // A policy has at least one set, a set at least one entry: never empty.
                let Some(first) = entries.first() else {
                    return Err(Rejection::NoAttestors);
                };
                for e in &entries {
                    self.check_age(&e.signer)
                        .map_err(|reason| Rejection::TooOld {
                            reason: format!("signature set {}: {reason}", e.signature_set),
                        })?;
                }
                let accepted = Verified {
                    signature_set: first.signature_set,
                    signer: first.signer.clone(),
                    entries,
                };
                return self.check_signed(identity, object, &signed.message, accepted);
            }
        };
        if attestors.is_empty() {
            return Err(Rejection::NoAttestors);
        }
        // the first set a trusted attestor accepts wins
        let mut attempts = Vec::new();
        let mut accepted = None;
        'sets: for set in &signed.sets {
            for attestor in attestors {
                match attestor
                    .check_at(&signed.message, set, self.now())
                    .and_then(|signer| self.check_age(&signer).map(|_| signer))
                {
                    Ok(signer) => {
                        accepted = Some((set.index, signer));
                        break 'sets;
                    }
                    Err(reason) => attempts.push(format!(
                        "signature set {} with {}: {}",
                        set.index,
                        attestor.describe(),
                        reason
                    )),
                }
            }
        }
        let Some((signature_set, signer)) = accepted else {
            return Err(Rejection::NoTrustedSignature { attempts });
        };
        let accepted = Verified {
            signature_set,
            signer,
            entries: Vec::new(),
        };
        self.check_signed(identity, object, &signed.message, accepted)
    }

    /// Steps 3 to 6, once the signatures are accepted (`accepted` says by whom).
    fn check_signed(
        &self,
        identity: &ObjectIdentity,
        object: &Value,
        message: &[u8],
        accepted: Verified,
    ) -> Result<Verified, Rejection> {
        // 3. signed documents
        let signed_docs = parse_message(message, &self.limits).map_err(Rejection::Message)?;
        // 4. the signed document for this object
        let mut candidates = Vec::new();
        for v in &signed_docs {
            if let Ok(id) = ObjectIdentity::of(v) {
                candidates.push((id, v));
            }
        }
        let exact = candidates.iter().find(|(id, _)| id.same_object(identity));
        // Same group/kind/name in another namespace: compare anyway, so the diff names
        // `metadata.namespace` instead of a vaguer "not found".
        let moved = candidates.iter().find(|(id, _)| {
            id.group == identity.group && id.kind == identity.kind && id.name == identity.name
        });
        let Some((_, signed_doc)) = exact.or(moved) else {
            return Err(Rejection::NotInMessage {
                object: identity.to_string(),
                signed: candidates.iter().map(|(id, _)| id.to_string()).collect(),
            });
        };
        // 5. compare, within the bounds of the paths it builds
        let limit = self.limits.max_compared_path_bytes;
        for (what, doc) in [("the object", object), ("the signed document", *signed_doc)] {
            if !path_bytes_within(doc, limit) {
                return Err(Rejection::TooLargeToCompare { what, limit });
            }
        }
        let mut expected = (*signed_doc).clone();
        let mut actual = object.clone();
        strip_signature_annotations(&mut expected, &self.domain);
        strip_signature_annotations(&mut actual, &self.domain);
        let diffs = diff_documents(&expected, &actual, &self.ignore);
        let diffs = self.tolerances.apply(identity, &expected, diffs);
        if !diffs.is_empty() {
            return Err(Rejection::Modified { diffs });
        }
        // 6. freshness: the signed expiry, if any
        let now = self.now();
        match expiry_of(signed_doc) {
            Ok(Some(at)) if now >= at => return Err(Rejection::Expired { at: at.to_string() }),
            Ok(_) => {}
            Err(reason) => return Err(Rejection::InvalidExpiry { reason }),
        }
        Ok(accepted)
    }
}

/// The DER of the first certificate in a `certificate` annotation's PEM. Further blocks
/// are never used: intermediates come from the trust root or the policy, not from the
/// object. The error is the reason, for the caller's error type.
fn first_certificate_der(pem_text: &str) -> Result<Vec<u8>, String> {
    let blocks = pem::parse_many(pem_text).map_err(|e| format!("not PEM: {e}"))?;
    let first = blocks.into_iter().next().ok_or("no PEM block")?;
    if first.tag() != "CERTIFICATE" {
        return Err(format!("PEM block is {}, not CERTIFICATE", first.tag()));
    }
    Ok(first.into_contents())
}
