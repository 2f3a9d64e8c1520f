//! The verification pipeline for one object (see the [module docs](super) for the steps).

use super::attestor::Attestor;
use super::attestor_set::AttestorPolicy;
use super::compare::{CompareRules, compare_with_signed};
use super::signer::SignerInfo;
use super::verdict::{DocumentVerdict, Rejection, Verdict, Verified};
use crate::annotations::{AnnotationDomain, extract};
use crate::limits::Limits;
use crate::manifest::{
    Document, IgnoreFields, ObjectIdentity, Tolerances, expiry_of, parse_message,
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
        // 5. compare
        let rules = CompareRules {
            ignore: &self.ignore,
            tolerances: &self.tolerances,
            domain: &self.domain,
            identity,
        };
        let comparison =
            compare_with_signed(signed_doc, object, &rules).map_err(Rejection::Uncomparable)?;
        if !comparison.is_equal() {
            return Err(Rejection::Modified {
                diffs: comparison.diffs,
                unreported: comparison.unreported,
            });
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
