//! The verification pipeline for one object (see the [module docs](super) for the steps).

use super::attestors::attestor::Attestor;
use super::attestors::attestor_set::AttestorPolicy;
use super::attestors::checks::{BudgetExceeded, Leaf, SignatureChecks};
use super::attestors::failure::{AgeFailure, Attempt, CheckFailure};
use super::cache::{Accepted, CacheKey, VerificationCache, cache_key};
use super::compare::{CompareRules, compare_with_signed};
use super::sigstore::signer::{SignerInfo, Undated};
use super::verdict::{DocumentVerdict, MAX_LISTED_DOCUMENTS, Rejection, Verdict, Verified};
use crate::annotations::{AnnotationDomain, extract};
use crate::limits::Limits;
use crate::manifest::{
    Document, IdentityError, IgnoreFields, ObjectIdentity, Tolerances, expiry_of, parse_message,
    signed_at_of,
};
use crate::parallel::{default_parallelism, map_in_order};
use serde_json::Value;
use std::sync::Arc;

/// Which signatures a [`Verifier`] requires.
#[derive(Debug, Clone)]
pub enum Requirement {
    /// One signature set accepted by any one of these attestors (`--key`, `--certificate-*`).
    AnyOf(Vec<Attestor>),
    /// Attestor sets, all required, each N-of-M (policy files; see [`AttestorPolicy`]).
    Policy(AttestorPolicy),
}

/// Which checks one verification may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VerifyMode {
    /// The full verification (signature checks when the cache does not answer).
    Full,
    /// No signature check: the verdict from the cache, or none. Signed documents of at most
    /// `max_signed_bytes` (their JSON text); a hit is counted when `count_hit` (else the
    /// caller counts it with [`Verifier::count_cache_hit`]).
    CachedOnly {
        max_signed_bytes: usize,
        count_hit: bool,
    },
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
    /// Oldest acceptable signing time of a signature (`--max-age`).
    max_age: Option<jiff::SignedDuration>,
    /// Signature acceptances already proven for this requirement (shared by clones).
    cache: Arc<VerificationCache>,
    /// Threads [`Verifier::verify_documents`] may use.
    parallelism: usize,
    /// Why a public key the requirement needs could not be read (a policy's Kubernetes key
    /// reference): every document is then refused with it, before anything is checked.
    unresolved: Option<Arc<str>>,
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
            cache: Arc::new(VerificationCache::default()),
            parallelism: default_parallelism(),
            unresolved: None,
        }
    }

    /// Refuses every document with [`Rejection::KeyUnresolved`]: a key the requirement
    /// names by reference could not be read (fail closed; never a stale or partial check).
    pub fn with_unresolved_keys(mut self, reason: impl Into<String>) -> Self {
        self.unresolved = Some(Arc::from(reason.into()));
        self
    }

    /// Why the requirement's keys are not all available, if they are not.
    pub fn unresolved_keys(&self) -> Option<&str> {
        self.unresolved.as_deref()
    }

    /// Uses `cache` for signature acceptances (see [`VerificationCache`]); by default each
    /// requirement gets its own cache of [`DEFAULT_CACHE_ENTRIES`](super::DEFAULT_CACHE_ENTRIES)
    /// entries, shared by clones of the verifier.
    pub fn with_cache(mut self, cache: Arc<VerificationCache>) -> Self {
        self.cache = cache;
        self
    }

    /// The cache of signature acceptances (for its statistics).
    pub fn cache(&self) -> &Arc<VerificationCache> {
        &self.cache
    }

    /// How many threads [`Verifier::verify_documents`] may use (default: the available
    /// parallelism, at most 16; 1 verifies on the calling thread only). The verdicts are the
    /// same and in the same order whatever the number.
    pub fn with_parallelism(mut self, threads: usize) -> Self {
        self.parallelism = threads.max(1);
        self
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

    /// The ignore fields set by [`with_ignore_fields`](Self::with_ignore_fields).
    pub fn ignore_fields(&self) -> &IgnoreFields {
        &self.ignore
    }

    /// Differences tolerated for live objects: an ignore profile, digest pinning,
    /// namespace binding (see [`Tolerances`]).
    pub fn with_tolerances(mut self, tolerances: Tolerances) -> Self {
        self.tolerances = tolerances;
        self
    }

    /// The tolerances set by [`with_tolerances`](Self::with_tolerances).
    pub fn tolerances(&self) -> &Tolerances {
        &self.tolerances
    }

    /// Checks freshness (signed expiry, maximum age), and the validity of certificate
    /// attestors' certificates on sets without a Rekor bundle, at this time instead of now.
    pub fn with_clock(mut self, now: jiff::Timestamp) -> Self {
        self.clock = Some(now);
        self
    }

    /// Rejects signatures older than `max_age` (no replay of old signed versions). The age is
    /// measured from the signed signing time (`mansign.dev/signed-at` in the signed document),
    /// bounded by the transparency-log time where there is one (the earlier of the two; a
    /// signed time later than the log entry is refused). A keyless signature without a
    /// signed time is dated by its log time (its certificate lived minutes, at that time); a
    /// key or certificate-attestor signature without a signed time cannot prove its age and
    /// is refused.
    pub fn with_max_age(mut self, max_age: jiff::SignedDuration) -> Self {
        self.max_age = Some(max_age);
        self
    }

    /// Who must have signed.
    pub fn requirement(&self) -> &Requirement {
        &self.requirement
    }

    /// The maximum signature age this verifier enforces, if any.
    pub fn max_age(&self) -> Option<jiff::SignedDuration> {
        self.max_age
    }

    fn now(&self) -> jiff::Timestamp {
        self.clock.unwrap_or_else(jiff::Timestamp::now)
    }

    /// The max-age rule for one accepted signer of `signed_doc` (see
    /// [`with_max_age`](Self::with_max_age)).
    fn check_age(
        &self,
        signer: &SignerInfo,
        signed_at: Option<jiff::Timestamp>,
    ) -> Result<(), AgeFailure> {
        let Some(max_age) = self.max_age else {
            return Ok(());
        };
        let now = self.now();
        let effective = signer
            .signing_time(signed_at)
            .map_err(|undated| match undated {
                Undated::NoSignedTime => AgeFailure::NoSignedTime { max_age },
                Undated::SignedAfterLogged {
                    signed_at,
                    logged_at,
                } => AgeFailure::SignedAfterLogged {
                    signed_at,
                    logged_at,
                },
            })?;
        let oldest = now
            .checked_sub(max_age)
            .map_err(|_| AgeFailure::OutOfRange { max_age, now })?;
        if effective < oldest {
            return Err(AgeFailure::TooOld {
                signed_at: effective,
                max_age,
            });
        }
        Ok(())
    }

    /// Verifies every document, on up to [`Verifier::with_parallelism`] threads; the
    /// verdicts are in input order. The run passes only if every document does.
    pub fn verify_documents<'a>(&self, docs: impl IntoIterator<Item = &'a Document>) -> Verdict {
        let docs: Vec<&Document> = docs.into_iter().collect();
        Verdict {
            documents: map_in_order(&docs, self.parallelism, |d| self.verify_document(d)),
        }
    }

    /// Verifies one document read from input.
    pub fn verify_document(&self, doc: &Document) -> DocumentVerdict {
        match self.verify_document_with(doc, VerifyMode::Full) {
            Some(verdict) => verdict,
            None => unreachable!("a full verification always decides"),
        }
    }

    /// Verifies an object that did not come from a file (library callers, the webhook).
    pub fn verify_object(&self, object: &Value) -> Result<DocumentVerdict, IdentityError> {
        let identity = ObjectIdentity::of(object)?;
        let result = self.check(&identity, object, VerifyMode::Full);
        Ok(DocumentVerdict {
            origin: None,
            object: identity,
            result: result.unwrap_or_else(|| unreachable!("a full verification always decides")),
        })
    }

    /// [`Verifier::verify_document`] without any signature check: the same verdict when the
    /// document's signature material was accepted before (a hit in [`Verifier::cache`]),
    /// `None` when the verdict needs a signature check, or when the signed document it is
    /// compared with is larger than `max_signed_bytes` (its JSON text). A hit costs a hash
    /// of the annotations, reading the signed document and the comparison, so an async
    /// caller can answer it on its own thread (with a small bound) and send only the `None`
    /// cases to [`BlockingVerifications`](super::BlockingVerifications). Counts a cache hit
    /// when it answers, nothing otherwise (the full verification that follows counts).
    pub fn verify_document_cached(
        &self,
        doc: &Document,
        max_signed_bytes: usize,
    ) -> Option<DocumentVerdict> {
        let mode = VerifyMode::CachedOnly {
            max_signed_bytes,
            count_hit: true,
        };
        self.verify_document_with(doc, mode)
    }

    /// Verifies one document in `mode`: `None` only under [`VerifyMode::CachedOnly`], when
    /// the verdict needs a signature check.
    pub(crate) fn verify_document_with(
        &self,
        doc: &Document,
        mode: VerifyMode,
    ) -> Option<DocumentVerdict> {
        Some(DocumentVerdict {
            origin: Some(doc.origin.clone()),
            object: doc.identity.clone(),
            result: self.check(&doc.identity, &doc.value, mode)?,
        })
    }

    /// Counts a verification answered from the cache (for a caller of
    /// [`VerifyMode::CachedOnly`] that did not count it: it used the verdict only once other
    /// verifiers answered too).
    pub(crate) fn count_cache_hit(&self) {
        self.cache.record(true);
    }

    /// Step 0: signature material accepted before for this requirement. No decoding,
    /// YAML parsing or signature check, only reading the signed document back, its signed
    /// time (max age) and the comparison. `None` when the hit cannot decide: the age rule
    /// fails for this document (the uncached path names why), or the signed document is
    /// larger than `max_signed_bytes`.
    fn check_hit(
        &self,
        hit: &Accepted,
        identity: &ObjectIdentity,
        object: &Value,
        max_signed_bytes: usize,
    ) -> Option<Result<Verified, Rejection>> {
        let text = match find_signed_document(&hit.signed_docs, identity) {
            Ok(text) => text,
            Err(rejection) => return Some(Err(rejection)),
        };
        if text.len() > max_signed_bytes {
            return None;
        }
        // Written by the cache from a parsed document: it reads back (else: the full path).
        let signed_doc: Value = serde_json::from_str(text.as_ref()).ok()?;
        let signed_at = match signed_at_of(&signed_doc) {
            Ok(at) => at,
            Err(e) => {
                return Some(Err(Rejection::InvalidSignedTime {
                    reason: crate::error::chain(&e),
                }));
            }
        };
        // Another document of the same message may carry another signed time: the age
        // rule is checked for this one. Under a maximum age, a document dated otherwise
        // than the one the acceptance was made for takes the full path: with several
        // sets, another one may be the first accepted for it.
        if self.max_age.is_some() && signed_at != hit.signed_at {
            return None;
        }
        if !hit
            .verified
            .signers()
            .all(|signer| self.check_age(signer, signed_at).is_ok())
        {
            return None;
        }
        Some(self.check_signed(identity, object, &signed_doc, hit.verified.clone()))
    }

    /// The verdict in `mode`: `None` only under [`VerifyMode::CachedOnly`], when it needs
    /// a signature check.
    fn check(
        &self,
        identity: &ObjectIdentity,
        object: &Value,
        mode: VerifyMode,
    ) -> Option<Result<Verified, Rejection>> {
        if let Some(reason) = &self.unresolved {
            // Answered without a check: a cache-only answer, counted as one.
            if let VerifyMode::CachedOnly {
                count_hit: true, ..
            } = mode
            {
                self.count_cache_hit();
            }
            return Some(Err(Rejection::KeyUnresolved {
                reason: reason.to_string(),
            }));
        }
        // 0. signature material accepted before (see `check_hit`). A cache that remembers
        // nothing is not consulted (nor counted).
        let key = self
            .cache
            .remembers()
            .then(|| cache_key(object, &self.domain, &self.limits, self.max_age))
            .flatten();
        let max_signed_bytes = match mode {
            VerifyMode::Full => usize::MAX,
            VerifyMode::CachedOnly {
                max_signed_bytes, ..
            } => max_signed_bytes,
        };
        let decided = key.as_ref().and_then(|key| {
            let hit = self.cache.find(key, self.now())?;
            self.check_hit(&hit, identity, object, max_signed_bytes)
        });
        match mode {
            // counted once decided
            VerifyMode::Full if key.is_some() => self.cache.record(decided.is_some()),
            VerifyMode::Full => {}
            VerifyMode::CachedOnly { count_hit, .. } => {
                if count_hit && decided.is_some() {
                    self.count_cache_hit();
                }
                return decided;
            }
        }
        if let Some(result) = decided {
            return Some(result);
        }
        Some(self.check_signatures(identity, object, key))
    }

    /// Steps 1 to 5, when the cache did not decide.
    fn check_signatures(
        &self,
        identity: &ObjectIdentity,
        object: &Value,
        key: Option<CacheKey>,
    ) -> Result<Verified, Rejection> {
        // 1. annotations
        let signed = extract(object, &self.domain, &self.limits).map_err(Rejection::Annotations)?;
        // 2. the signed document for this object (its signed time dates the signatures)
        let signed_docs =
            parse_message(&signed.message, &self.limits).map_err(Rejection::Message)?;
        let candidates: Vec<(ObjectIdentity, &Value)> = signed_docs
            .iter()
            .filter_map(|doc| Some((ObjectIdentity::of(doc).ok()?, doc)))
            .collect();
        let signed_doc = *find_signed_document(&candidates, identity)?;
        let signed_at = signed_at_of(signed_doc).map_err(|e| Rejection::InvalidSignedTime {
            reason: crate::error::chain(&e),
        })?;
        // 3. signature sets against the requirement, each check once, within the budget
        let fresh =
            |signer: &SignerInfo| self.check_age(signer, signed_at).map_err(CheckFailure::Age);
        let mut checks = SignatureChecks::new(
            &signed.message,
            &signed.sets,
            self.now(),
            &fresh,
            self.limits.max_signature_checks,
        );
        let budget = |e: BudgetExceeded| Rejection::BudgetExceeded { limit: e.limit };
        let accepted = match &self.requirement {
            Requirement::Policy(policy) => {
                let entries = policy
                    .evaluate_with(&mut checks)
                    .map_err(budget)?
                    .map_err(Rejection::AttestorSetNotSatisfied)?;
                // A policy has at least one set, a set at least one entry: never empty.
                let Some(first) = entries.first() else {
                    return Err(Rejection::NoAttestors);
                };
                Verified {
                    signature_set: first.signature_set,
                    signer: first.signer.clone(),
                    entries,
                }
            }
            Requirement::AnyOf(attestors) => {
                if attestors.is_empty() {
                    return Err(Rejection::NoAttestors);
                }
                // the first set a trusted attestor accepts wins
                let mut attempts = Vec::new();
                let mut accepted = None;
                'sets: for (position, set) in signed.sets.iter().enumerate() {
                    for attestor in attestors {
                        let leaf = Leaf::of(attestor);
                        match checks.check(position, leaf).map_err(budget)? {
                            Ok(signer) => {
                                accepted = Some((set.index, signer));
                                break 'sets;
                            }
                            Err(failure) => attempts.push(Attempt {
                                signature_set: set.index,
                                attestor: attestor.describe(),
                                failure,
                            }),
                        }
                    }
                }
                let Some((signature_set, signer)) = accepted else {
                    return Err(Rejection::NoTrustedSignature { attempts });
                };
                Verified {
                    signature_set,
                    signer,
                    entries: Vec::new(),
                }
            }
        };
        if let Some(key) = key {
            self.cache
                .put(key, &accepted, &candidates, self.max_age, signed_at);
        }
        self.check_signed(identity, object, signed_doc, accepted)
    }

    /// Steps 4 and 5, once the signatures are accepted (`accepted` says by whom).
    fn check_signed(
        &self,
        identity: &ObjectIdentity,
        object: &Value,
        signed_doc: &Value,
        accepted: Verified,
    ) -> Result<Verified, Rejection> {
        // 4. compare
        let rules = CompareRules {
            ignore: &self.ignore,
            tolerances: &self.tolerances,
            domain: &self.domain,
            identity,
            limits: &self.limits,
        };
        let comparison =
            compare_with_signed(signed_doc, object, &rules).map_err(Rejection::Uncomparable)?;
        if !comparison.is_equal() {
            return Err(Rejection::Modified {
                diffs: comparison.diffs,
                unreported: comparison.unreported,
            });
        }
        // 5. freshness: the signed expiry, if any
        let now = self.now();
        match expiry_of(signed_doc) {
            Ok(Some(at)) if now >= at => return Err(Rejection::Expired { at }),
            Ok(_) => {}
            Err(e) => {
                return Err(Rejection::InvalidSignedTime {
                    reason: crate::error::chain(&e),
                });
            }
        }
        Ok(accepted)
    }
}

/// The signed document for an object among the signed documents that have an identity
/// (in message order): same group, kind, namespace and name (version is ignored, as
/// upstream). The same group/kind/name in another namespace is returned too, so the
/// comparison names `metadata.namespace` instead of a vaguer "not found".
fn find_signed_document<'d, T>(
    candidates: &'d [(ObjectIdentity, T)],
    identity: &ObjectIdentity,
) -> Result<&'d T, Rejection> {
    let exact = candidates.iter().find(|(id, _)| id.same_object(identity));
    let moved = candidates.iter().find(|(id, _)| {
        id.group == identity.group && id.kind == identity.kind && id.name == identity.name
    });
    match exact.or(moved) {
        Some((_, doc)) => Ok(doc),
        None => Err(Rejection::NotInMessage {
            object: identity.to_string(),
            signed: candidates
                .iter()
                .take(MAX_LISTED_DOCUMENTS)
                .map(|(id, _)| id.to_string())
                .collect(),
            unlisted: candidates.len().saturating_sub(MAX_LISTED_DOCUMENTS),
        }),
    }
}
