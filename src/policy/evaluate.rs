//! The one rule walk: which rules select an object, and each one's verdict. `mansign verify
//! --policy` ([`PolicySet::verify_document`]) and the admission webhook (`admission::review`,
//! cold and cache-only) both call it, so they cannot disagree on which rules apply, how a
//! rule verifies, or which failure action a failed rule takes.

use super::action::FailureAction;
use super::selector::RequestContext;
use super::verdict::{ObjectVerdict, RuleVerdict};
use super::{PolicyRule, PolicySet};
use crate::manifest::{AdmissionWrite, Document, IgnoreFields, ObjectIdentity, Tolerances};
use crate::verify::VerifyMode;
use serde_json::Value;

/// Which verifications an evaluation may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheMode {
    /// The full verification (signature checks when the cache does not answer).
    Full,
    /// No signature check: every rule's verdict from its verifier's cache, or no verdict at
    /// all (the evaluation answers `None`). Bounded work: at most `max_rules` rules, signed
    /// documents of at most `max_signed_bytes` (their JSON text).
    CachedOnly {
        max_signed_bytes: usize,
        max_rules: usize,
    },
}

/// The inputs of one evaluation besides the document.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Evaluation<'a> {
    /// The request's operation and user, and whether the namespace is the API server's.
    pub ctx: &'a RequestContext,
    /// More identities a rule may select the object by (the one an admission request
    /// names, the namespace the object claims): a rule applies when it selects any of them
    /// or the document's own (unknowns add checks, never remove one).
    pub identities: Vec<ObjectIdentity>,
    pub mode: CacheMode,
    /// Judge freshness at this time instead of now.
    pub clock: Option<jiff::Timestamp>,
    /// Fields no rule compares (a `status` write: what the API server takes from the
    /// stored object).
    pub unverified: Option<&'a IgnoreFields>,
    /// The document is an admission request's object, not a file: the request's operation
    /// and, for an `UPDATE`, the stored object it replaces. Tolerances that depend on the
    /// object's history (a field with no managedFields owner, a value kept from the stored
    /// object) read it (see `Tolerances::admission`).
    pub admission: Option<AdmissionWrite>,
}

impl<'a> Evaluation<'a> {
    /// What `mansign verify --policy` evaluates: the document's own identity, full checks.
    pub fn full(ctx: &'a RequestContext) -> Self {
        Evaluation {
            ctx,
            identities: Vec::new(),
            mode: CacheMode::Full,
            clock: None,
            unverified: None,
            admission: None,
        }
    }

    /// More identities a rule may select the object by.
    pub fn with_identities(mut self, identities: Vec<ObjectIdentity>) -> Self {
        self.identities = identities;
        self
    }

    /// Which verifications the evaluation may do.
    pub fn with_mode(mut self, mode: CacheMode) -> Self {
        self.mode = mode;
        self
    }

    /// Judge freshness at this time instead of now.
    pub fn with_clock(mut self, now: jiff::Timestamp) -> Self {
        self.clock = Some(now);
        self
    }

    /// Fields no rule compares.
    pub fn with_unverified(mut self, unverified: &'a IgnoreFields) -> Self {
        self.unverified = Some(unverified);
        self
    }

    /// The document is an admission request's object, written by `write`.
    pub fn with_admission(mut self, write: AdmissionWrite) -> Self {
        self.admission = Some(write);
        self
    }
}

impl PolicySet {
    /// Verifies one document read from input under every rule that applies to it (the
    /// full [`PolicySet::evaluate`]).
    pub fn verify_document(&self, doc: &Document, ctx: &RequestContext) -> ObjectVerdict {
        match self.evaluate(doc, &Evaluation::full(ctx)) {
            Some(verdict) => verdict,
            None => unreachable!("a full evaluation always decides"),
        }
    }

    /// The rules that select `object` under any of `identities`, in policy order.
    pub fn matching_rules(
        &self,
        object: &Value,
        identities: &[ObjectIdentity],
        ctx: &RequestContext,
    ) -> Vec<&PolicyRule> {
        self.rules
            .iter()
            .filter(|r| identities.iter().any(|id| r.applies_to(object, id, ctx)))
            .collect()
    }

    /// [`PolicySet::matching_rules`] by their places in [`PolicySet::rules`], in policy
    /// order: what a caller keeps to evaluate them later without borrowing the set.
    pub fn matching_rule_indexes(
        &self,
        object: &Value,
        identities: &[ObjectIdentity],
        ctx: &RequestContext,
    ) -> Vec<usize> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, r)| identities.iter().any(|id| r.applies_to(object, id, ctx)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Every rule that selects the document (its own identity or one of
    /// [`Evaluation::identities`]), with its verdict. `None` only under
    /// [`CacheMode::CachedOnly`], when a verdict needs a signature check.
    pub fn evaluate(&self, doc: &Document, eval: &Evaluation) -> Option<ObjectVerdict> {
        let mut identities = vec![doc.identity.clone()];
        identities.extend(eval.identities.iter().cloned());
        let rules = self.matching_rules(&doc.value, &identities, eval.ctx);
        Some(ObjectVerdict {
            origin: Some(doc.origin.clone()),
            object: doc.identity.clone(),
            rules: evaluate_rules(&rules, doc, eval)?,
        })
    }
}

/// The verdicts of `rules` (already matched) for the document, in rule order. `None` only
/// under [`CacheMode::CachedOnly`]: more rules than it answers for, or one rule whose
/// verdict needs a signature check (then nothing is counted as a cache hit: the full
/// evaluation that follows counts).
pub fn evaluate_rules(
    rules: &[&PolicyRule],
    doc: &Document,
    eval: &Evaluation,
) -> Option<Vec<RuleVerdict>> {
    if let CacheMode::CachedOnly { max_rules, .. } = eval.mode
        && rules.len() > max_rules
    {
        return None;
    }
    let verifiers: Vec<_> = rules
        .iter()
        .map(|rule| {
            let mut verifier = rule.verifier_for(&doc.identity);
            if let Some(write) = &eval.admission {
                let tolerances = verifier.tolerances().clone();
                verifier = verifier.with_tolerances(Tolerances {
                    admission: Some(write.clone()),
                    ..tolerances
                });
            }
            if let Some(unverified) = eval.unverified {
                let mut ignore = verifier.ignore_fields().clone();
                ignore.0.extend(unverified.0.iter().cloned());
                verifier = verifier.with_ignore_fields(ignore);
            }
            match eval.clock {
                Some(now) => verifier.with_clock(now),
                None => verifier,
            }
        })
        .collect();
    let verdicts = match eval.mode {
        CacheMode::Full => verifiers
            .iter()
            .map(|v| v.verify_document(doc))
            .collect::<Vec<_>>(),
        CacheMode::CachedOnly {
            max_signed_bytes, ..
        } => {
            let verdicts = verifiers
                .iter()
                .map(|v| {
                    let mode = VerifyMode::CachedOnly {
                        max_signed_bytes,
                        count_hit: false,
                    };
                    v.verify_document_with(doc, mode)
                })
                .collect::<Option<Vec<_>>>()?;
            // Counted only now: a rule answered from the cache while another needed the
            // full path is counted by the full path.
            for v in &verifiers {
                v.count_cache_hit();
            }
            verdicts
        }
    };
    Some(
        rules
            .iter()
            .zip(verdicts)
            .map(|(r, verdict)| RuleVerdict {
                policy: r.policy.clone(),
                rule: r.rule.clone(),
                verdict,
                action: action_of(r, doc.identity.namespace.as_deref(), eval.ctx),
            })
            .collect(),
    )
}

/// What a failure of `rule` does for an object in `namespace`.
fn action_of(rule: &PolicyRule, namespace: Option<&str>, ctx: &RequestContext) -> FailureAction {
    match namespace {
        // An unavailable key is never audited away.
        _ if !rule.unresolved_keys.is_empty() => FailureAction::Enforce,
        Some(ns) => rule.failure_action.for_namespace(Some(ns)),
        // The API server's namespace (admission): cluster-scoped.
        None if ctx.namespace_known => rule.failure_action.for_namespace(None),
        // Offline: the object may be applied anywhere.
        None => rule.failure_action.strictest(),
    }
}
