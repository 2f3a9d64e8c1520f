//! One `AdmissionReview` request in, one response out: a pure function of the body, the
//! policy set and the clock (no I/O).
//!
//! The decision, step by step (`docs/admission.md`):
//!
//! 1. Read the body ([`super::request`]): bounded, or a [`BadReview`]: refused with
//!    `allowed: false` when its uid can be read ([`super::request::readable_uid`]), else
//!    HTTP 400 (not an `AdmissionReview` at all).
//! 2. `DELETE` and `CONNECT`: allowed ([`Outcome::Skipped`]). A write through a
//!    subresource other than `status`: denied (`subresource`). A `status` write: verified
//!    like any write, without the fields its kind's status strategy takes from the stored
//!    object ([`super::status_write`]); allowed unverified only for kinds whose strategy
//!    keeps nothing but `status` from the request.
//! 3. The namespace is the request's (`request.namespace`, the API server's truth): an
//!    object without one gets it; an object that names another is denied
//!    (`namespace-mismatch`; the API server itself refuses such a request). A `Namespace`
//!    is the exception: the API server sends its own name as `request.namespace`, and the
//!    object, cluster-scoped, has none.
//! 4. Matching, before any decoding or cryptography: the rules that apply to the object
//!    (its own identity or the one `request.kind`/`request.name` give, whichever matches
//!    more) under the request's operation and user. None: allowed
//!    ([`Outcome::NotMatched`]).
//! 5. Every matching rule verifies the object (`request.object`, the new object of an
//!    `UPDATE`; dry-run requests alike). A failed rule denies under `Enforce`, and warns
//!    under `Audit`. A verification failure is always an answer (allowed or denied), never
//!    an HTTP error.
//!
//! Steps 4 and 5 are the policy set's own evaluation ([`PolicySet::matching_rules`],
//! [`evaluate_rules`]), the one `mansign verify --policy` runs, given the request's
//! identities and context; [`Reviewer::review_cached`] is the same walk in its cache-only
//! mode ([`CacheMode::CachedOnly`]).

use super::decision::{Decision, Outcome, RequestKind};
pub use super::request::BadReview;
use super::request::{ParsedRequest, operation_name, parse, readable_uid};
use super::response::{Answer, MAX_WARNING_CHARS, body as response_body, bounded, refusal};
use super::status_write::{strategy_of, unverified_fields};
use crate::manifest::{
    AdmissionWrite, Document, DocumentOrigin, IgnoreFields, ObjectIdentity, Source,
};
use crate::policy::{
    CacheMode, Evaluation, FailureAction, PolicySet, RequestContext, RuleVerdict, UserInfo,
    evaluate_rules,
};
use crate::verify::{Rejection, SignerInfo};
use kube_core::admission::{AdmissionRequest, Operation};
use kube_core::dynamic::DynamicObject;
use serde_json::Value;
use std::sync::Arc;

/// Bounds and switches of the reviewer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReviewOptions {
    /// Largest request body answered (the API server sends at most 3 MiB objects).
    pub max_body_bytes: usize,
}

/// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
/// so it is built from [`ReviewOptions::default()`] and these, never as a literal.
impl ReviewOptions {
    /// Sets `max_body_bytes`.
    pub fn with_max_body_bytes(mut self, value: usize) -> Self {
        self.max_body_bytes = value;
        self
    }
}

/// The request limit of the Kubernetes API server for one object, plus the review envelope.
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Deepest nesting of a request body: the object's bound ([`crate::Limits::max_depth`]) plus the
/// envelope (`AdmissionReview` → `request` → `object`). The manifest reader's default
/// (`Limits::default().max_depth`, 64) is checked by a unit test.
pub const MAX_REVIEW_DEPTH: usize = 64 + 2;

impl Default for ReviewOptions {
    fn default() -> Self {
        ReviewOptions {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The largest request body, and the largest signed document (as JSON), that
/// [`Reviewer::review_cached`] answers: tens of microseconds of work at most. A signed
/// PolicyException's review is 5 to 20 KiB.
pub const CACHED_REVIEW_MAX_BYTES: usize = 64 * 1024;

/// The most matched rules [`Reviewer::review_cached`] answers for (each costs a hash of the
/// annotations, reading a signed document and a comparison).
pub const CACHED_REVIEW_MAX_RULES: usize = 4;

/// The answer to one request.
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// The `AdmissionReview` response body (HTTP 200), or why the request cannot be answered.
    pub response: Result<Vec<u8>, BadReview>,
    pub decision: Decision,
}

/// What [`Reviewer::look`] found: the answer, or what it read for the check it could not
/// make.
#[derive(Debug)]
pub enum Look {
    /// Answered without a signature check (what [`Reviewer::review_cached`] returns).
    Answered(Box<Reviewed>),
    /// The answer needs a signature check: [`PendingReview::finish`] makes it (on a
    /// blocking thread) from what was parsed and matched, without reading the body again.
    Pending(PendingReview),
    /// The body is larger than [`CACHED_REVIEW_MAX_BYTES`] and was not read: call
    /// [`Reviewer::review`] (on a blocking thread).
    Unread,
}

/// A request whose answer needs a signature check: its parsed request, its document and
/// the rules that matched it, with the reviewer that matched them.
pub struct PendingReview {
    reviewer: Arc<Reviewer>,
    request: Box<AdmissionRequest<DynamicObject>>,
    verification: Box<Verification>,
    clock: Option<jiff::Timestamp>,
}

impl std::fmt::Debug for PendingReview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingReview")
            .field("uid", &self.request.uid)
            .field("rules", &self.verification.rules.len())
            .finish_non_exhaustive()
    }
}

impl PendingReview {
    /// The answer, with every signature check the cache could not answer made: the same
    /// [`Reviewed`] that [`Reviewer::review`] gives for the body.
    pub fn finish(self) -> Reviewed {
        let PendingReview {
            reviewer,
            request,
            verification,
            clock,
        } = self;
        let (decision, answer) = match reviewer.verify(verification, clock, FULL) {
            Ok(decided) => decided,
            Err(_) => unreachable!("a review that may check signatures always decides"),
        };
        Reviewed {
            response: Ok(response_body(&request, &answer)),
            decision,
        }
    }
}

/// The part of a review that checks signatures: the document, the rules that matched it
/// (indexes into the reviewer's policy set) and what their evaluation reads of the request.
struct Verification {
    decision: Decision,
    rules: Vec<usize>,
    doc: Document,
    ctx: RequestContext,
    identities: Vec<ObjectIdentity>,
    unverified: Option<IgnoreFields>,
    admission: Option<AdmissionWrite>,
}

/// How far [`Reviewer::decide`] got.
enum Step {
    Decided(Box<(Decision, Answer)>),
    Verify(Box<Verification>),
}

/// Answers admission requests under a policy set. `Send + Sync`: share it behind an `Arc`.
#[derive(Debug)]
pub struct Reviewer {
    policies: PolicySet,
    options: ReviewOptions,
}

/// One failed rule.
struct RuleFailure {
    policy: String,
    rule: String,
    action: FailureAction,
    code: &'static str,
    reason: String,
}

impl RuleFailure {
    /// `status.message` part: the reason first, then the code and the rule.
    fn message(&self) -> String {
        format!(
            "{} [{}] (policy {}, rule {})",
            self.reason, self.code, self.policy, self.rule
        )
    }

    /// One warning of at most [`MAX_WARNING_CHARS`]: the rule, then the reason.
    fn warning(&self) -> String {
        bounded(
            &format!(
                "mansign audit: policy {} rule {}: [{}] {}",
                self.policy, self.rule, self.code, self.reason
            ),
            MAX_WARNING_CHARS,
        )
    }
}

impl Reviewer {
    pub fn new(policies: PolicySet, options: ReviewOptions) -> Self {
        Reviewer { policies, options }
    }

    pub fn policies(&self) -> &PolicySet {
        &self.policies
    }

    pub fn options(&self) -> &ReviewOptions {
        &self.options
    }

    /// Answers one request body. Never panics on input.
    pub fn review(&self, body: &[u8]) -> Reviewed {
        self.review_with(body, None, FULL)
            .unwrap_or_else(unreachable_needs_check)
    }

    /// [`Reviewer::review`] at a fixed time (signature validity, expiry, maximum age):
    /// for tests and for replaying a request as it was answered.
    pub fn review_at(&self, body: &[u8], now: jiff::Timestamp) -> Reviewed {
        self.review_with(body, Some(now), FULL)
            .unwrap_or_else(unreachable_needs_check)
    }

    /// The answer [`Reviewer::review`] gives, when it needs no signature check: a request
    /// that is invalid, skipped or matched by no rule, a denial decided before verifying,
    /// and objects whose every matched rule finds its signatures in its verifier's cache
    /// ([`Verifier::verify_document_cached`](crate::verify::Verifier::verify_document_cached)).
    /// `None` when an answer needs a signature check, when the body or the signed
    /// document is larger than [`CACHED_REVIEW_MAX_BYTES`], or when more than
    /// [`CACHED_REVIEW_MAX_RULES`] rules match: call [`Reviewer::review`] (on a
    /// blocking thread). The work is bounded (parsing at most that many bytes twice and one
    /// comparison), so an async server can answer re-applied objects on its own threads.
    pub fn review_cached(&self, body: &[u8]) -> Option<Reviewed> {
        self.review_with(body, None, CACHED_ONLY)
    }

    /// [`Reviewer::review_cached`] at a fixed time.
    pub fn review_cached_at(&self, body: &[u8], now: jiff::Timestamp) -> Option<Reviewed> {
        self.review_with(body, Some(now), CACHED_ONLY)
    }

    /// [`Reviewer::review_cached`], keeping on a miss what it read: the request parsed,
    /// its object matched against the rules and read as a document, for
    /// [`PendingReview::finish`] to check the signatures of without parsing or matching
    /// again. The webhook answers [`Look::Answered`] on its own threads and finishes a
    /// [`Look::Pending`] on its blocking pool.
    pub fn look(self: &Arc<Self>, body: &[u8]) -> Look {
        self.look_at(body, None)
    }

    fn look_at(self: &Arc<Self>, body: &[u8], now: Option<jiff::Timestamp>) -> Look {
        if body.len() > CACHED_REVIEW_MAX_BYTES {
            return Look::Unread;
        }
        let (request, step) = match self.read(body) {
            Ok(read) => read,
            Err(refused) => return Look::Answered(refused),
        };
        let verification = match step {
            Step::Decided(decided) => {
                let (decision, answer) = *decided;
                return Look::Answered(Box::new(Reviewed {
                    response: Ok(response_body(&request, &answer)),
                    decision,
                }));
            }
            Step::Verify(verification) => verification,
        };
        match self.verify(verification, now, CACHED_ONLY) {
            Ok((decision, answer)) => Look::Answered(Box::new(Reviewed {
                response: Ok(response_body(&request, &answer)),
                decision,
            })),
            Err(verification) => Look::Pending(PendingReview {
                reviewer: Arc::clone(self),
                request: Box::new(request),
                verification,
                clock: now,
            }),
        }
    }

    /// The review in `checks`' mode; `None` only under [`CACHED_ONLY`], when it needs a
    /// signature check or the body is larger than [`CACHED_REVIEW_MAX_BYTES`].
    fn review_with(
        &self,
        body: &[u8],
        now: Option<jiff::Timestamp>,
        checks: CacheMode,
    ) -> Option<Reviewed> {
        if checks != FULL && body.len() > CACHED_REVIEW_MAX_BYTES {
            return None;
        }
        let (request, step) = match self.read(body) {
            Ok(read) => read,
            Err(refused) => return Some(*refused),
        };
        let (decision, answer) = match step {
            Step::Decided(decided) => *decided,
            Step::Verify(verification) => self.verify(verification, now, checks).ok()?,
        };
        Some(Reviewed {
            response: Ok(response_body(&request, &answer)),
            decision,
        })
    }

    /// Steps 1 to 4: the body parsed (or refused), the request decided before any
    /// signature check, or what the check needs.
    fn read(&self, body: &[u8]) -> Result<(AdmissionRequest<DynamicObject>, Step), Box<Reviewed>> {
        let ParsedRequest {
            request,
            object,
            old_object,
        } = match parse(body, self.options.max_body_bytes, MAX_REVIEW_DEPTH) {
            Ok(parsed) => parsed,
            Err(bad) => {
                // With a readable uid, refused (HTTP 200): `failurePolicy` never decides.
                let uid = readable_uid(body);
                return Err(Box::new(Reviewed {
                    response: match &uid {
                        Some(uid) => Ok(refusal(uid, bad.code, &bad.message)),
                        None => Err(bad.clone()),
                    },
                    decision: Decision {
                        uid: uid.unwrap_or_default(),
                        outcome: Outcome::Invalid,
                        kind: String::new(),
                        request_kind: RequestKind::default(),
                        namespace: None,
                        name: String::new(),
                        operation: String::new(),
                        user: String::new(),
                        dry_run: false,
                        signers: Vec::new(),
                        reason_code: Some(bad.code.into()),
                        message: bad.message,
                    },
                }));
            }
        };
        let step = self.decide(&request, object, old_object);
        Ok((request, step))
    }
}

/// The decision on one parsed request: skipped, refused before verifying, or the one
/// rule walk's verdicts.
impl Reviewer {
    /// Steps 2 to 4: the decision when no signature check is needed, else what the check
    /// needs.
    fn decide(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        object: Option<Value>,
        old_object: Option<Value>,
    ) -> Step {
        let namespace = request.namespace.clone().filter(|ns| !ns.is_empty());
        let mut decision = undecided(request, object.as_ref());
        let allow = Answer {
            allowed: true,
            message: None,
            warnings: Vec::new(),
        };
        let Some(object) =
            object.filter(|_| matches!(request.operation, Operation::Create | Operation::Update))
        else {
            decision.outcome = Outcome::Skipped;
            decision.message = format!("{} requests are not verified", decision.operation);
            return Step::Decided(Box::new((decision, allow)));
        };
        // A `status` write keeps part of the request (its kind's status strategy says
        // which): verified like any write, without the fields that are not the request's.
        let mut status_write = None;
        if let Some(sub) = request.sub_resource.as_deref().filter(|s| !s.is_empty()) {
            if sub != "status" {
                let (decision, answer) = subresource_write(decision, request, sub);
                return Step::Decided(Box::new((decision, answer)));
            }
            match unverified_fields(&request.kind.group, &request.kind.kind) {
                Some(fields) => status_write = Some(fields),
                None => {
                    let (decision, answer) = status_only_write(decision, request);
                    return Step::Decided(Box::new((decision, answer)));
                }
            }
        }
        let ctx = request_context(&decision.operation, request);
        let containing = containing_namespace(request, namespace.as_deref());
        let (object, namespace_conflict) = with_request_namespace(object, containing);
        let identities = identities_of(request, &decision.name, &object, &namespace_conflict);
        let rules = self
            .policies
            .matching_rule_indexes(&object, &identities, &ctx);
        let Some(first) = rules.first().and_then(|&i| self.policies.rules.get(i)) else {
            decision.outcome = Outcome::NotMatched;
            decision.message = "no policy rule applies to this object".into();
            return Step::Decided(Box::new((decision, allow)));
        };
        let enforced = |code: &'static str, reason: String| RuleFailure {
            policy: first.policy.clone(),
            rule: first.rule.clone(),
            action: FailureAction::Enforce,
            code,
            reason,
        };
        if let Some(claimed) = &namespace_conflict {
            let reason = format!(
                "object metadata.namespace {claimed:?} is not the request's namespace {}",
                containing.map_or("(none: cluster scope)".to_string(), |n| format!("{n:?}"))
            );
            let (decision, answer) = finish(decision, vec![enforced("namespace-mismatch", reason)]);
            return Step::Decided(Box::new((decision, answer)));
        }
        let origin = DocumentOrigin {
            source: Source::Named("request.object".into()),
            index: 0,
            item: None,
        };
        let doc = match Document::new(origin, object) {
            Ok(doc) => doc,
            Err(reason) => {
                let failure = enforced(
                    "malformed-object",
                    format!(
                        "request.object is not a Kubernetes object mansign can verify: {reason}"
                    ),
                );
                let (decision, answer) = finish(decision, vec![failure]);
                return Step::Decided(Box::new((decision, answer)));
            }
        };
        Step::Verify(Box::new(Verification {
            decision,
            rules,
            doc,
            ctx,
            identities,
            unverified: status_write,
            admission: Some(admission_write(&request.operation, old_object)),
        }))
    }

    /// Step 5: every matched rule verifies the document. `Err` (the verification back, for
    /// a later full check) only under [`CACHED_ONLY`], when a verdict needs a signature
    /// check.
    fn verify(
        &self,
        verification: Box<Verification>,
        now: Option<jiff::Timestamp>,
        checks: CacheMode,
    ) -> Result<(Decision, Answer), Box<Verification>> {
        let mut v = verification;
        // The indexes are this reviewer's own matches (a pending review carries its
        // reviewer); one that is not would mean a rule left unchecked, so it is refused.
        let Some(rules) = v
            .rules
            .iter()
            .map(|&i| self.policies.rules.get(i))
            .collect::<Option<Vec<_>>>()
        else {
            let failure = RuleFailure {
                policy: String::new(),
                rule: String::new(),
                action: FailureAction::Enforce,
                code: "internal-error",
                reason: "the matched rules are not this reviewer's".into(),
            };
            return Ok(finish(v.decision, vec![failure]));
        };
        // The evaluation borrows the rest; what it takes by value goes back if the
        // verification is handed back for a full check.
        let eval = Evaluation {
            ctx: &v.ctx,
            identities: std::mem::take(&mut v.identities),
            mode: checks,
            clock: now,
            unverified: v.unverified.as_ref(),
            admission: v.admission.take(),
        };
        let verdicts = evaluate_rules(&rules, &v.doc, &eval);
        let Evaluation {
            identities,
            admission,
            ..
        } = eval;
        let Some(verdicts) = verdicts else {
            v.identities = identities;
            v.admission = admission;
            return Err(v);
        };
        let mut decision = v.decision;
        let failures = failures_of(verdicts, &mut decision.signers);
        Ok(finish(decision, failures))
    }
}

/// What the tolerances read of the request besides its object (only `CREATE` and `UPDATE`
/// are verified).
fn admission_write(operation: &Operation, old_object: Option<Value>) -> AdmissionWrite {
    match operation {
        Operation::Update => AdmissionWrite::Update {
            old_object: old_object.map(std::sync::Arc::new),
        },
        _ => AdmissionWrite::Create,
    }
}

/// The decision record of a request before anything is decided: what it asks (kind,
/// namespace, name, operation, user), allowed until a check says otherwise.
fn undecided(request: &AdmissionRequest<DynamicObject>, object: Option<&Value>) -> Decision {
    let namespace = request.namespace.clone().filter(|ns| !ns.is_empty());
    let object_name = object
        .and_then(|o| o.get("metadata")?.get("name")?.as_str())
        .map(str::to_string);
    Decision {
        uid: request.uid.clone(),
        outcome: Outcome::Allowed,
        kind: kind_label(
            &request.kind.group,
            &request.kind.version,
            &request.kind.kind,
        ),
        request_kind: RequestKind {
            group: request.kind.group.clone(),
            version: request.kind.version.clone(),
            kind: request.kind.kind.clone(),
        },
        namespace,
        name: if request.name.is_empty() {
            object_name.unwrap_or_default()
        } else {
            request.name.clone()
        },
        operation: operation_name(&request.operation).into(),
        user: request.user_info.username.clone().unwrap_or_default(),
        dry_run: request.dry_run,
        signers: Vec::new(),
        reason_code: None,
        message: String::new(),
    }
}

/// The identities the rules may select the object by: the one the request gives, the
/// object's own, and the namespace the object claims when it is not the request's.
fn identities_of(
    request: &AdmissionRequest<DynamicObject>,
    name: &str,
    object: &Value,
    namespace_conflict: &Option<String>,
) -> Vec<ObjectIdentity> {
    let request_id = ObjectIdentity {
        group: request.kind.group.clone(),
        version: request.kind.version.clone(),
        kind: request.kind.kind.clone(),
        namespace: request.namespace.clone().filter(|ns| !ns.is_empty()),
        name: name.to_string(),
    };
    // The rules apply under the object's own identity, the one the request gives, or
    // the namespace the object claims: whichever selects more.
    let mut identities = vec![request_id];
    if let Ok(id) = ObjectIdentity::of(object) {
        identities.push(id);
    }
    if let Some(claimed) = namespace_conflict {
        let mut id = identities[0].clone();
        id.namespace = Some(claimed.clone());
        identities.push(id);
    }
    identities
}

/// The failed rules of the verdicts, in rule order; the signers of the verified ones go to
/// `signers` (each once).
fn failures_of(verdicts: Vec<RuleVerdict>, signers: &mut Vec<String>) -> Vec<RuleFailure> {
    let mut failures = Vec::new();
    for RuleVerdict {
        policy,
        rule,
        verdict,
        action,
    } in verdicts
    {
        match verdict.result {
            Ok(verified) => {
                let found = if verified.entries.is_empty() {
                    vec![signer_label(&verified.signer)]
                } else {
                    verified
                        .entries
                        .iter()
                        .map(|e| signer_label(&e.signer))
                        .collect()
                };
                for s in found {
                    if !signers.contains(&s) {
                        signers.push(s);
                    }
                }
            }
            Err(rejection) => failures.push(RuleFailure {
                policy,
                rule,
                action,
                code: rejection.code(),
                reason: reason_text(&rejection),
            }),
        }
    }
    failures
}

/// The full review: every verification.
const FULL: CacheMode = CacheMode::Full;

/// The cache-only review ([`Reviewer::review_cached`]).
const CACHED_ONLY: CacheMode = CacheMode::CachedOnly {
    max_signed_bytes: CACHED_REVIEW_MAX_BYTES,
    max_rules: CACHED_REVIEW_MAX_RULES,
};

/// Under [`CacheMode::Full`] every path decides.
fn unreachable_needs_check() -> Reviewed {
    unreachable!("a review that may check signatures always decides")
}

/// A `status` write of a kind whose status strategy takes everything but `status` from the
/// stored object ([`super::status_write::FromStored::AllButStatus`]): no signed content
/// changes, allowed unverified.
fn status_only_write(
    mut decision: Decision,
    request: &AdmissionRequest<DynamicObject>,
) -> (Decision, Answer) {
    let source = strategy_of(&request.kind.group, &request.kind.kind).map_or("", |s| s.source);
    decision.outcome = Outcome::Skipped;
    decision.message = format!(
        "{}/status: the API server keeps only status from this write ({source}), and status \
         is not signed",
        request.resource.resource
    );
    (
        decision,
        Answer {
            allowed: true,
            message: None,
            warnings: Vec::new(),
        },
    )
}

/// A `CREATE` or `UPDATE` through a subresource other than `status` (`deployments/scale`,
/// `pods/ephemeralcontainers`, ...). It changes the object without sending it whole, so it
/// cannot be compared with a signed document: denied, fail-closed. The webhook only
/// receives subresources its rules list (deploy/ lists none), so a denial here means
/// someone registered the subresource for checking.
fn subresource_write(
    mut decision: Decision,
    request: &AdmissionRequest<DynamicObject>,
    sub: &str,
) -> (Decision, Answer) {
    let resource = format!("{}/{sub}", request.resource.resource);
    let message = format!(
        "{resource}: a write through the {sub} subresource changes the object outside its \
         signed manifest and cannot be verified [subresource]; remove {resource} from the \
         webhook's rules if such writes are to be allowed"
    );
    decision.outcome = Outcome::Denied;
    decision.reason_code = Some("subresource".into());
    decision.message = message.clone();
    (
        decision,
        Answer {
            allowed: false,
            message: Some(message),
            warnings: Vec::new(),
        },
    )
}

/// The request's operation and user (a request carries no roles: unknown).
fn request_context(operation: &str, request: &AdmissionRequest<DynamicObject>) -> RequestContext {
    RequestContext {
        operation: Some(operation.to_string()),
        user: Some(UserInfo {
            username: request.user_info.username.clone().unwrap_or_default(),
            groups: request.user_info.groups.clone().unwrap_or_default(),
            roles: None,
            cluster_roles: None,
        }),
        namespace_known: true,
        any_version: true,
    }
}

/// The decision and the answer from the failed rules.
fn finish(mut decision: Decision, failures: Vec<RuleFailure>) -> (Decision, Answer) {
    let (enforced, audited): (Vec<_>, Vec<_>) = failures
        .iter()
        .partition(|f| f.action == FailureAction::Enforce);
    let warnings: Vec<String> = audited.iter().map(|f| f.warning()).collect();
    if let Some(first) = enforced.first() {
        let message = enforced
            .iter()
            .map(|f| f.message())
            .collect::<Vec<_>>()
            .join("; ");
        decision.outcome = Outcome::Denied;
        decision.reason_code = Some(first.code.into());
        decision.message = message.clone();
        return (
            decision,
            Answer {
                allowed: false,
                message: Some(message),
                warnings,
            },
        );
    }
    if let Some(first) = audited.first() {
        decision.outcome = Outcome::AuditWarned;
        decision.reason_code = Some(first.code.into());
        decision.message = audited
            .iter()
            .map(|f| f.message())
            .collect::<Vec<_>>()
            .join("; ");
    } else {
        decision.outcome = Outcome::Allowed;
        decision.message = format!("verified: {}", decision.signers.join(", "));
    }
    (
        decision,
        Answer {
            allowed: true,
            message: None,
            warnings,
        },
    )
}

/// The object with the request's namespace, and the namespace the object claimed when it
/// disagrees. The API server fills an empty `metadata.namespace` from the request and
/// clears it for cluster-scoped kinds before admission (`EnsureObjectNamespaceMatches
/// RequestNamespace`), so a disagreement is not a request it sends: refused.
fn with_request_namespace(mut object: Value, namespace: Option<&str>) -> (Value, Option<String>) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return (object, None);
    };
    let claimed = match metadata.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    match (namespace, claimed) {
        (Some(ns), None) => {
            metadata.insert("namespace".into(), Value::String(ns.into()));
            (object, None)
        }
        (Some(ns), Some(c)) if ns == c => (object, None),
        (None, None) => (object, None),
        (_, Some(c)) => (object, Some(c)),
    }
}

/// The namespace that contains the request's object: `request.namespace`, except for a
/// `Namespace`, where the API server sends the Namespace's own name there
/// (k8s.io/apiserver v0.34.4 `pkg/endpoints/handlers/create.go`, "if len(namespace) == 0 &&
/// scope.Resource == namespaceGVR { namespace = name }"; for the other verbs
/// `pkg/endpoints/request/requestinfo.go` reads it from `/namespaces/{name}`) while the
/// object itself, cluster-scoped, has its `metadata.namespace` cleared
/// (`pkg/registry/rest/meta.go` `EnsureObjectNamespaceMatchesRequestNamespace` with the
/// empty namespace `ExpectedNamespaceForScope` gives a cluster-scoped resource). Every other
/// cluster-scoped kind arrives with an empty `request.namespace`, so mansign needs to know no
/// other kind's scope.
fn containing_namespace<'a>(
    request: &AdmissionRequest<DynamicObject>,
    namespace: Option<&'a str>,
) -> Option<&'a str> {
    let is_namespace =
        request.resource.group.is_empty() && request.resource.resource == "namespaces";
    if is_namespace { None } else { namespace }
}

/// `group/version, Kind=Kind` (`Kind` only for the core group).
fn kind_label(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{group}/{version}, Kind={kind}")
    }
}

/// The reason of a rejection, for people.
fn reason_text(rejection: &Rejection) -> String {
    rejection.to_string()
}

/// `subject (issuer)`, `key NAME (sha256:…)`, `certificate SUBJECT (sha256:…)`.
fn signer_label(signer: &SignerInfo) -> String {
    match signer {
        SignerInfo::Certificate {
            subject, issuer, ..
        } => match issuer {
            Some(issuer) => format!("{subject} ({issuer})"),
            None => subject.clone(),
        },
        SignerInfo::Key {
            name, fingerprint, ..
        } => format!("key {name} (sha256:{})", short(fingerprint)),
        SignerInfo::SigningCertificate {
            subject,
            fingerprint,
            ..
        } => format!("certificate {subject} (sha256:{})", short(fingerprint)),
    }
}

fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_depth_is_the_manifest_depth_plus_the_envelope() {
        assert_eq!(MAX_REVIEW_DEPTH, crate::Limits::default().max_depth + 2);
    }

    #[test]
    fn a_verification_naming_a_rule_the_reviewer_does_not_have_is_denied() {
        // Fail closed: a rule index that is not the reviewer's is never a rule skipped.
        let reviewer = Reviewer::new(PolicySet::default(), ReviewOptions::default());
        let origin = DocumentOrigin {
            source: Source::Named("request.object".into()),
            index: 0,
            item: None,
        };
        let object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "a"},
        });
        let verification = Verification {
            decision: Decision {
                uid: "u".into(),
                outcome: Outcome::Allowed,
                kind: "ConfigMap".into(),
                request_kind: RequestKind::default(),
                namespace: Some("a".into()),
                name: "x".into(),
                operation: "CREATE".into(),
                user: String::new(),
                dry_run: false,
                signers: Vec::new(),
                reason_code: None,
                message: String::new(),
            },
            rules: vec![0],
            doc: Document::new(origin, object).unwrap(),
            ctx: RequestContext::default(),
            identities: Vec::new(),
            unverified: None,
            admission: None,
        };
        let Ok((decision, answer)) = reviewer.verify(Box::new(verification), None, FULL) else {
            panic!("a full check always decides");
        };
        assert!(!answer.allowed);
        assert_eq!(decision.outcome, Outcome::Denied);
        assert_eq!(decision.reason_code.as_deref(), Some("internal-error"));
    }

    #[test]
    fn request_namespace_fills_an_empty_one_and_a_different_one_conflicts() {
        let object = serde_json::json!({"metadata": {"name": "x"}});
        let (filled, conflict) = with_request_namespace(object, Some("team-a"));
        assert_eq!(filled["metadata"]["namespace"], "team-a");
        assert_eq!(conflict, None);
        let object = serde_json::json!({"metadata": {"name": "x", "namespace": "team-b"}});
        let (_, conflict) = with_request_namespace(object.clone(), Some("team-a"));
        assert_eq!(conflict.as_deref(), Some("team-b"));
        let (_, conflict) = with_request_namespace(object, None);
        assert_eq!(conflict.as_deref(), Some("team-b"));
    }
}
