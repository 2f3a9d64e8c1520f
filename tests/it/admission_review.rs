//! The admission decision core (`mansign::admission::Reviewer`) and `mansign admission
//! review`, on real data: the Kyverno unit-test AdmissionReviews (testdata/kyverno,
//! provenance in testdata/README.md) and PolicyExceptions signed in the test on the
//! loopback Sigstore stack with GitHub-shaped identities.

use crate::common;
use crate::common::stack;

use common::dup_tests_a::template;
use mansign::admission::{Look, Outcome, ReviewOptions, Reviewed, Reviewer};
use mansign::policy::{LoadOptions, PolicySet, load_file, load_str};
use mansign::trust::TrustRoot;
use serde_json::{Value, json};
use stack::Stack;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";
/// The identity of the sign workflow on main of the repository `ORG/<repo>`.
macro_rules! sign_workflow {
    ($repo:literal) => {
        concat!(
            "https://github.com/ORG/",
            $repo,
            "/.github/workflows/sign.yaml@refs/heads/main"
        )
    };
}
const TEAM_A: &str = sign_workflow!("team-a-exceptions");
const TEAM_B: &str = sign_workflow!("team-b-exceptions");
const PLATFORM: &str = sign_workflow!("platform-exceptions");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------
// Signed fixtures: signed once on a stack that is stopped afterwards (verification is
// offline; only the stack's trusted root is kept).

struct Signed {
    trusted_root: String,
    /// PolicyException `exc-a`, no namespace, signed by team-a's workflow.
    by_team_a: Value,
    /// `exc-b`, no namespace, signed by team-b's workflow.
    by_team_b: Value,
    /// `exc-platform`, no namespace, signed by the platform workflow.
    by_platform: Value,
    /// `exc-backup`, namespace `backup`, signed by the platform workflow.
    backup_by_platform: Value,
    /// `exc-large`, namespace `backup`, signed by the platform workflow, larger than
    /// `CACHED_REVIEW_MAX_BYTES` (2,000 pod names).
    large_by_platform: Value,
}

/// A PolicyException over `CACHED_REVIEW_MAX_BYTES` as signed YAML: `exception` with
/// 2,000 more pod names.
fn large_exception() -> String {
    let names: String = (0..2000)
        .map(|i| format!("        - job-{i:04}-with-a-long-name-for-padding-*\n"))
        .collect();
    assert!(names.len() > mansign::admission::CACHED_REVIEW_MAX_BYTES);
    exception("exc-large", Some("backup")) + &names
}

/// PolicyException `name` (for pods `nightly-backup-*`), in `namespace` if given.
fn exception(name: &str, namespace: Option<&str>) -> String {
    let ns = namespace.map_or(String::new(), |n| format!("  namespace: {n}\n"));
    template(
        "policy-exception.yaml",
        &[("  # NAMESPACE\n", &ns), ("NAME", name)],
    )
}

fn github_token(stack: &Stack, subject: &str) -> String {
    let repository = subject
        .strip_prefix("https://github.com/")
        .and_then(|s| s.split("/.github/").next())
        .unwrap();
    stack.mint_token(&[
        &format!("iss={GITHUB_ISSUER}"),
        &format!("sub={subject}"),
        &format!("repository={repository}"),
        "ref=refs/heads/main",
        "event_name=push",
        "workflow=sign",
    ])
}

fn sign(stack: &Stack, subject: &str, manifest: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let input = common::write(dir.path(), "in.yaml", manifest);
    let out = dir.path().join("out.yaml");
    let token = github_token(stack, subject);
    stack.keyless_sign_to(common::mansign(), &[], &input, &out, token);
    let files = mansign::manifest::load_inputs(&[out], &mansign::Limits::default()).unwrap();
    files[0].documents[0].value.clone()
}

fn signed() -> &'static Signed {
    static SIGNED: OnceLock<Signed> = OnceLock::new();
    SIGNED.get_or_init(|| {
        let stack = Stack::start();
        let signed = Signed {
            trusted_root: std::fs::read_to_string(stack.trusted_root()).unwrap(),
            by_team_a: sign(&stack, TEAM_A, &exception("exc-a", None)),
            by_team_b: sign(&stack, TEAM_B, &exception("exc-b", None)),
            by_platform: sign(&stack, PLATFORM, &exception("exc-platform", None)),
            backup_by_platform: sign(&stack, PLATFORM, &exception("exc-backup", Some("backup"))),
            large_by_platform: sign(&stack, PLATFORM, &large_exception()),
        };
        drop(stack);
        signed
    })
}

fn stack_options() -> LoadOptions {
    LoadOptions::default().with_trust_root(Arc::new(
        TrustRoot::from_json(&signed().trusted_root).unwrap(),
    ))
}

/// A ManifestPolicy for PolicyExceptions signed by the platform workflow; `extra` adds
/// spec fields (e.g. `failureAction: Audit`).
fn platform_policy(extra: &str) -> PolicySet {
    let text = keyless_exceptions_policy("platform", "PolicyException", extra);
    load_str("platform.yaml", &text, repo(), &stack_options()).unwrap()
}

/// A ManifestPolicy `name` for `kinds` (namespaceBinding `*`, the kubernetes ignore
/// profile) trusting the platform workflow; `extra` adds spec fields.
fn keyless_exceptions_policy(name: &str, kinds: &str, extra: &str) -> String {
    template(
        "keyless-exceptions-policy.yaml",
        &[
            ("POLICY", name),
            ("KINDS", kinds),
            ("  # EXTRA\n", extra),
            ("ISSUER", GITHUB_ISSUER),
            ("PLATFORM", PLATFORM),
        ],
    )
}

fn per_namespace_policy() -> PolicySet {
    load_file(
        &repo().join("examples/policy/per-namespace-signers.yaml"),
        &stack_options(),
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------------
// Requests and answers

struct Request {
    operation: &'static str,
    namespace: Option<&'static str>,
    object: Option<Value>,
    old_object: Option<Value>,
    dry_run: bool,
}

impl Request {
    fn create(namespace: &'static str, object: &Value) -> Request {
        Request {
            operation: "CREATE",
            namespace: Some(namespace),
            object: Some(object.clone()),
            old_object: None,
            dry_run: false,
        }
    }

    fn body(&self) -> Vec<u8> {
        let object = self.object.as_ref().or(self.old_object.as_ref());
        let name = object
            .and_then(|o| o["metadata"]["name"].as_str())
            .unwrap_or_default();
        let (group, version, kind) = match object {
            Some(o) => {
                let api = o["apiVersion"].as_str().unwrap_or_default();
                let (g, v) = api.split_once('/').unwrap_or(("", api));
                (g.to_string(), v.to_string(), o["kind"].clone())
            }
            None => ("kyverno.io".into(), "v2".into(), json!("PolicyException")),
        };
        let request = json!({
            "uid": "7f8a3c2e-1111-4a4a-9c9c-000000000001",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": "policyexceptions"},
            "name": name,
            "operation": self.operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": self.object,
            "oldObject": self.old_object,
            "dryRun": self.dry_run,
        });
        common::admission_review_body(request, self.namespace)
    }
}

/// The response of an answered request, and the decision.
fn answer(reviewer: &Reviewer, body: &[u8]) -> (Value, Reviewed) {
    let reviewed = reviewer.review(body);
    let bytes = reviewed
        .response
        .as_ref()
        .unwrap_or_else(|bad| panic!("bad review [{}]: {bad}", bad.code))
        .clone();
    let response: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(response["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(response["kind"], "AdmissionReview");
    assert_eq!(
        response["response"]["allowed"].as_bool(),
        Some(reviewed.decision.outcome.is_allowed()),
        "{response}"
    );
    (response["response"].clone(), reviewed)
}

fn reviewer(policy: PolicySet) -> Reviewer {
    Reviewer::new(policy, ReviewOptions::default())
}

fn assert_denied(response: &Value, reviewed: &Reviewed, code: &str, in_message: &str) {
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(reviewed.decision.outcome, Outcome::Denied);
    assert_eq!(response["status"]["code"], 403, "{response}");
    assert_eq!(response["status"]["reason"], "Forbidden", "{response}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains(in_message), "{message}");
    assert!(message.contains(&format!("[{code}]")), "{message}");
    assert_eq!(reviewed.decision.reason_code.as_deref(), Some(code));
    assert_eq!(reviewed.decision.message, message);
}

fn assert_allowed(response: &Value, reviewed: &Reviewed, outcome: Outcome) {
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(
        reviewed.decision.outcome, outcome,
        "{:?}",
        reviewed.decision
    );
}

// ---------------------------------------------------------------------------------------
// Kyverno's unit-test AdmissionReviews

fn kyverno(rel: &str) -> PathBuf {
    common::fixture(&format!("kyverno/{rel}"))
}

fn kyverno_review(name: &str) -> Vec<u8> {
    std::fs::read(kyverno(&format!(
        "unit-validate-manifest/admissionreview-wrapped/{name}-admissionreview.json"
    )))
    .unwrap()
}

/// Kyverno's unit-test policy shape: ConfigMaps and Services signed by the first test key.
fn kyverno_unit_policy(action: &str) -> PolicySet {
    kyverno_unit_policy_with(action, "")
}

/// The same, with `spec` fields (`action`) and `validate` fields (`validate_extra`, indented
/// six spaces).
fn kyverno_unit_policy_with(action: &str, validate_extra: &str) -> PolicySet {
    let text = common::kyverno_unit_policy(action, "ConfigMap, Service", "", validate_extra);
    load_str("unit.yaml", &text, repo(), &kyverno_options()).unwrap()
}

/// The answer of a reviewer of `policy` to Kyverno's unit-test review `review`.
fn kyverno_answer(policy: PolicySet, review: &str) -> (Value, Reviewed) {
    answer(&reviewer(policy), &kyverno_review(review))
}

/// `policy` denies Kyverno's tampered ConfigMap review (`invalid`), naming `data.key3`.
fn assert_tampered_denied(policy: PolicySet) {
    let (response, reviewed) = kyverno_answer(policy, "invalid");
    assert_denied(&response, &reviewed, "modified", "data.key3");
}

/// `policy` allows Kyverno's tampered ConfigMap review (`invalid`) with an audit warning.
fn assert_tampered_audited(policy: PolicySet) {
    let (response, reviewed) = kyverno_answer(policy, "invalid");
    assert_allowed(&response, &reviewed, Outcome::AuditWarned);
}

/// The fixtures' public-good root (deterministic: not the developer's cached root).
fn kyverno_options() -> LoadOptions {
    LoadOptions::default().with_trust_root(Arc::new(
        TrustRoot::from_file(kyverno_root_for_cli()).unwrap(),
    ))
}

#[test]
fn kyverno_signed_configmap_review_is_allowed_with_its_uid() {
    let (response, reviewed) = kyverno_answer(kyverno_unit_policy(""), "signed");
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    assert_eq!(response["uid"], "2529b894-5fca-4df9-a92b-7110f42bfa09");
    let d = &reviewed.decision;
    assert_eq!(d.uid, "2529b894-5fca-4df9-a92b-7110f42bfa09");
    assert_eq!(d.kind, "ConfigMap");
    assert_eq!(d.namespace.as_deref(), Some("sample-ns"));
    assert_eq!(d.name, "sample-cm");
    assert_eq!(d.operation, "CREATE");
    assert_eq!(d.user, "kubernetes-admin");
    assert!(!d.dry_run);
    assert_eq!(d.signers.len(), 1, "{:?}", d.signers);
    assert!(d.signers[0].starts_with("key "), "{:?}", d.signers);
}

#[test]
fn kyverno_unsigned_configmap_review_is_denied() {
    let (response, reviewed) = kyverno_answer(kyverno_unit_policy(""), "unsigned");
    assert_denied(
        &response,
        &reviewed,
        "not-signed",
        "policy unit, rule manifests",
    );
}

#[test]
fn kyverno_tampered_configmap_review_is_denied_naming_data_key3() {
    assert_tampered_denied(kyverno_unit_policy(""));
}

#[test]
fn kyverno_multi_signature_service_review_is_allowed_with_server_defaults() {
    let (response, reviewed) = kyverno_answer(kyverno_unit_policy(""), "multi-sig");
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

#[test]
fn kyverno_audit_policy_allows_the_tampered_configmap_with_a_warning() {
    let (response, reviewed) = kyverno_answer(
        kyverno_unit_policy("  validationFailureAction: Audit\n"),
        "invalid",
    );
    assert_allowed(&response, &reviewed, Outcome::AuditWarned);
    let warnings = response["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{response}");
    let w = warnings[0].as_str().unwrap();
    assert!(w.chars().count() <= 120, "{w}");
    assert!(!w.starts_with("Warning:"), "{w}");
    assert!(w.contains("policy unit rule manifests"), "{w}");
    assert!(w.contains("[modified]"), "{w}");
    assert_eq!(reviewed.decision.reason_code.as_deref(), Some("modified"));
    assert!(reviewed.decision.message.contains("data.key3"));
    assert!(response["status"].get("code").is_none(), "{response}");
}

#[test]
fn kyverno_lower_case_enforce_denies() {
    let text_policy = kyverno_unit_policy("  validationFailureAction: enforce\n");
    assert_tampered_denied(text_policy);
}

#[test]
fn rule_failure_action_takes_precedence_over_the_policys() {
    assert_tampered_audited(kyverno_unit_policy_with(
        "  validationFailureAction: Enforce\n",
        "      failureAction: Audit\n",
    ));
    assert_tampered_denied(kyverno_unit_policy_with(
        "  validationFailureAction: audit\n",
        "      failureAction: enforce\n",
    ));
}

#[test]
fn failure_action_overrides_apply_per_namespace() {
    // The fixture's namespace is sample-ns.
    let audit_in_samples = "  validationFailureAction: Enforce
  validationFailureActionOverrides:
  - action: Audit
    namespaces: [sample-*]
";
    assert_tampered_audited(kyverno_unit_policy(audit_in_samples));
    let audit_elsewhere = "  validationFailureAction: Enforce
  validationFailureActionOverrides:
  - action: Audit
    namespaces: [sandbox]
";
    assert_tampered_denied(kyverno_unit_policy(audit_elsewhere));
    // Rule-level overrides come first: enforce in sample-ns although the policy audits.
    assert_tampered_denied(kyverno_unit_policy_with(
        "  validationFailureAction: Audit\n",
        "      failureActionOverrides:\n      - action: Enforce\n        namespaces: [sample-ns]\n",
    ));
}

#[test]
fn audit_rule_does_not_excuse_an_enforce_rule_that_fails_too() {
    let mut policy = kyverno_unit_policy("  validationFailureAction: Audit\n");
    policy.extend(kyverno_unit_policy(""));
    let (response, reviewed) = kyverno_answer(policy, "invalid");
    assert_denied(&response, &reviewed, "modified", "data.key3");
    // The audit rule's warning is still sent.
    assert_eq!(
        response["warnings"].as_array().unwrap().len(),
        1,
        "{response}"
    );
}

#[test]
fn roles_are_unknown_in_a_request_so_a_role_exclusion_does_not_skip_the_rule() {
    // A rule that excludes cluster-admins: the request carries no roles, so the exclusion
    // cannot be known to hold and the rule applies.
    let text = common::kyverno_unit_policy(
        "",
        "ConfigMap",
        "    exclude:\n      any:\n      - clusterRoles: [cluster-admin]\n",
        "",
    );
    let policy = load_str("unit.yaml", &text, repo(), &kyverno_options()).unwrap();
    let (response, reviewed) = answer(&reviewer(policy), &kyverno_review("unsigned"));
    assert_denied(&response, &reviewed, "not-signed", "policy unit");
}

#[test]
fn the_requesting_user_decides_subject_exclusions() {
    // `kubernetes-admin` (the fixture's user) is excluded: not matched, allowed; another
    // user is not.
    let policy = |user: &str| {
        let text = common::kyverno_unit_policy(
            "",
            "ConfigMap",
            &format!(
                "    exclude:\n      any:\n      - subjects:\n        - kind: User\n          name: {user}\n"
            ),
            "",
        );
        load_str("unit.yaml", &text, repo(), &kyverno_options()).unwrap()
    };
    let (response, reviewed) = answer(
        &reviewer(policy("kubernetes-admin")),
        &kyverno_review("unsigned"),
    );
    assert_allowed(&response, &reviewed, Outcome::NotMatched);
    let (response, reviewed) = answer(
        &reviewer(policy("someone-else")),
        &kyverno_review("unsigned"),
    );
    assert_denied(&response, &reviewed, "not-signed", "policy unit");
}

#[test]
fn generate_name_create_of_a_matched_kind_is_denied() {
    let r = reviewer(kyverno_unit_policy(""));
    let mut v = signed_review_value();
    let meta = v["request"]["object"]["metadata"].as_object_mut().unwrap();
    meta.remove("name");
    meta.insert("generateName".into(), json!("sample-"));
    v["request"]["name"] = json!("");
    let (response, reviewed) = answer(&r, &serde_json::to_vec(&v).unwrap());
    assert_denied(&response, &reviewed, "malformed-object", "metadata.name");
}

#[test]
fn hostile_bodies_get_an_answer_or_a_code_never_a_panic() {
    // Every prefix and a set of byte edits of a real review: each is answered or refused.
    let r = reviewer(kyverno_unit_policy(""));
    let body = kyverno_review("signed");
    for cut in (0..body.len()).step_by(97) {
        let _ = r.review(&body[..cut]);
    }
    for (i, at) in (0..body.len()).step_by(131).enumerate() {
        let mut edited = body.clone();
        edited[at] = [b'{', b'[', b'"', b'\\', 0xff, b'0'][i % 6];
        let reviewed = r.review(&edited);
        if let Err(bad) = &reviewed.response {
            assert_eq!(reviewed.decision.outcome, Outcome::Invalid, "{bad}");
        }
    }
    let v = signed_review_value();
    for (field, value) in [
        ("object", json!("a string")),
        ("object", json!([1, 2])),
        ("userInfo", json!(null)),
        ("kind", json!("ConfigMap")),
        ("namespace", json!(7)),
        ("dryRun", json!("yes")),
    ] {
        let mut edited = v.clone();
        edited["request"][field] = value;
        let _ = r.review(&serde_json::to_vec(&edited).unwrap());
    }
}

#[test]
fn reviewer_is_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<Reviewer>();
    shared::<Reviewed>();
}

// ---------------------------------------------------------------------------------------
// Manifests signed on the stack

#[test]
fn signed_policy_exception_is_allowed_and_names_its_signer() {
    let r = reviewer(platform_policy(""));
    let (response, reviewed) = answer(&r, &in_namespace(&signed().backup_by_platform, "backup"));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    assert_eq!(
        reviewed.decision.signers,
        vec![format!("{PLATFORM} ({GITHUB_ISSUER})")]
    );
    assert_eq!(
        reviewed.decision.kind,
        "kyverno.io/v2, Kind=PolicyException"
    );
    assert!(response.get("warnings").is_none(), "{response}");
}

/// PolicyException `plain` in `backup`, without signature.
fn unsigned_exception() -> Value {
    mansign::manifest::parse_documents(
        &exception("plain", Some("backup")),
        &mansign::Limits::default(),
    )
    .unwrap()
    .remove(0)
    .1
}

/// `exc-backup` signed by the platform workflow, without the metadata field `field`.
fn backup_without(field: &str) -> Value {
    let mut object = signed().backup_by_platform.clone();
    remove(&mut object["metadata"], field);
    object
}

#[test]
fn unsigned_matched_object_is_denied() {
    let r = reviewer(platform_policy(""));
    let unsigned = unsigned_exception();
    let (response, reviewed) = answer(&r, &in_namespace(&unsigned, "backup"));
    assert_denied(&response, &reviewed, "not-signed", "policy platform");
}

fn tampered(object: &Value) -> Value {
    let mut t = object.clone();
    t["spec"]["match"]["any"][0]["resources"]["names"][0] = json!("*");
    t
}

#[test]
fn tampered_object_is_denied_with_the_diff_path_in_the_message() {
    let r = reviewer(platform_policy(""));
    let object = tampered(&signed().backup_by_platform);
    let (response, reviewed) = answer(&r, &in_namespace(&object, "backup"));
    assert_denied(
        &response,
        &reviewed,
        "modified",
        "spec.match.any[0].resources.names[0]",
    );
}

#[test]
fn update_verifies_the_new_object_not_the_old_one() {
    let r = reviewer(platform_policy(""));
    let good = signed().backup_by_platform.clone();
    let bad = tampered(&good);
    let update = |object: &Value, old: &Value| Request {
        operation: "UPDATE",
        namespace: Some("backup"),
        object: Some(object.clone()),
        old_object: Some(old.clone()),
        dry_run: false,
    };
    let (response, reviewed) = answer(&r, &update(&bad, &good).body());
    assert_denied(&response, &reviewed, "modified", "names[0]");
    let (response, reviewed) = answer(&r, &update(&good, &bad).body());
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    assert_eq!(reviewed.decision.operation, "UPDATE");
}

#[test]
fn delete_and_connect_are_allowed_without_verification() {
    let r = reviewer(platform_policy(""));
    let bad = tampered(&signed().backup_by_platform);
    for (operation, object, old) in [
        ("DELETE", None, Some(bad.clone())),
        ("CONNECT", Some(bad.clone()), None),
    ] {
        let req = Request {
            operation,
            namespace: Some("backup"),
            object,
            old_object: old,
            dry_run: false,
        };
        let (response, reviewed) = answer(&r, &req.body());
        assert_allowed(&response, &reviewed, Outcome::Skipped);
        assert_eq!(reviewed.decision.operation, operation);
    }
}

#[test]
fn dry_run_requests_are_verified_like_real_ones() {
    let r = reviewer(platform_policy(""));
    let mut req = Request::create("backup", &tampered(&signed().backup_by_platform));
    req.dry_run = true;
    let (response, reviewed) = answer(&r, &req.body());
    assert_denied(&response, &reviewed, "modified", "names[0]");
    assert!(reviewed.decision.dry_run);
    let mut req = Request::create("backup", &signed().backup_by_platform);
    req.dry_run = true;
    let (response, reviewed) = answer(&r, &req.body());
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

#[test]
fn objects_no_rule_matches_are_allowed_without_verification() {
    let r = reviewer(platform_policy(""));
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "plain", "namespace": "backup"}, "data": {"a": "b"},
    });
    let (response, reviewed) = answer(&r, &in_namespace(&config_map, "backup"));
    assert_allowed(&response, &reviewed, Outcome::NotMatched);
    assert!(reviewed.decision.signers.is_empty());
}

#[test]
fn audit_rule_allows_a_tampered_object_with_a_warning() {
    let r = reviewer(platform_policy("  failureAction: Audit\n"));
    let object = tampered(&signed().backup_by_platform);
    let (response, reviewed) = answer(&r, &in_namespace(&object, "backup"));
    assert_allowed(&response, &reviewed, Outcome::AuditWarned);
    let warnings = response["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    let w = warnings[0].as_str().unwrap();
    assert!(
        w.starts_with("mansign audit: policy platform rule platform: [modified]"),
        "{w}"
    );
    assert!(w.chars().count() <= 120, "{w}");
    assert_eq!(reviewed.decision.reason_code.as_deref(), Some("modified"));
}

#[test]
fn audit_rule_allows_an_unsigned_object_with_a_warning() {
    let r = reviewer(platform_policy("  failureAction: Audit\n"));
    let object = backup_without("annotations");
    let (response, reviewed) = answer(&r, &in_namespace(&object, "backup"));
    assert_allowed(&response, &reviewed, Outcome::AuditWarned);
    assert_eq!(reviewed.decision.reason_code.as_deref(), Some("not-signed"));
}

#[test]
fn review_at_judges_the_signature_age_at_the_given_time() {
    let r = reviewer(platform_policy("  maxAge: 1h\n"));
    let body = in_namespace(&signed().backup_by_platform, "backup");
    let (response, reviewed) = answer(&r, &body);
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(2);
    let reviewed = r.review_at(&body, later);
    assert_eq!(
        reviewed.decision.outcome,
        Outcome::Denied,
        "{:?}",
        reviewed.decision
    );
    let response: Value = serde_json::from_slice(reviewed.response.as_ref().unwrap()).unwrap();
    assert_eq!(response["response"]["allowed"], false);
}

#[test]
fn an_object_claiming_another_namespace_than_the_request_is_denied() {
    let r = reviewer(platform_policy(""));
    // Signed for `backup`, sent in a request for `payments`.
    let (response, reviewed) = answer(&r, &in_namespace(&signed().backup_by_platform, "payments"));
    assert_denied(&response, &reviewed, "namespace-mismatch", "\"backup\"");
}

#[test]
fn an_object_without_namespace_gets_the_request_namespace() {
    // Signed for `backup`, the object omits its namespace, the request is for `payments`:
    // verified as stored (in payments), so the signed namespace differs.
    let r = reviewer(platform_policy(""));
    let object = backup_without("namespace");
    let (response, reviewed) = answer(&r, &in_namespace(&object, "payments"));
    assert_denied(&response, &reviewed, "modified", "metadata.namespace");
    // ... and in `backup` it verifies.
    let (response, reviewed) = answer(&r, &in_namespace(&object, "backup"));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

// ---------------------------------------------------------------------------------------
// Answers without a signature check (`review_cached`, what the server answers on its async
// threads): the same answer as `review`, or none

/// `review_cached`'s answer, which must be byte for byte the one a reviewer that never saw
/// the object (`cold`, the same policies with empty caches) gives.
fn cached_answer(
    reviewer: &Reviewer,
    cold: impl Fn() -> Reviewer,
    body: &[u8],
) -> Option<Reviewed> {
    let cached = reviewer.review_cached(body)?;
    let full = cold().review(body);
    assert_eq!(
        cached.response.as_ref().map_err(|b| b.code),
        full.response.as_ref().map_err(|b| b.code)
    );
    assert_eq!(
        format!("{:?}", cached.decision),
        format!("{:?}", full.decision)
    );
    Some(cached)
}

fn cache_lookups(reviewer: &Reviewer) -> Vec<(u64, u64)> {
    reviewer
        .policies()
        .rules
        .iter()
        .map(|r| {
            let s = r.verifier.cache().stats();
            (s.hits, s.misses)
        })
        .collect()
}

fn response_of(reviewed: &Reviewed) -> Value {
    let response: Value = serde_json::from_slice(reviewed.response.as_ref().unwrap()).unwrap();
    response["response"].clone()
}

#[test]
fn review_cached_answers_a_signed_object_only_once_its_signatures_are_cached() {
    let r = reviewer(platform_policy(""));
    let body = in_namespace(&signed().backup_by_platform, "backup");
    assert!(r.review_cached(&body).is_none(), "verified without a check");
    // The refusal is not a cache miss: the full review that follows counts it.
    assert_eq!(cache_lookups(&r), vec![(0, 0)]);
    let (response, reviewed) = answer(&r, &body);
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    assert_eq!(cache_lookups(&r), vec![(0, 1)]);
    let cold = || reviewer(platform_policy(""));
    let cached = cached_answer(&r, cold, &body).expect("a cached signature set");
    assert_eq!(cache_lookups(&r), vec![(1, 1)]);
    assert_eq!(cached.decision.outcome, Outcome::Allowed);
    assert_eq!(
        cached.decision.signers,
        vec![format!("{PLATFORM} ({GITHUB_ISSUER})")]
    );
}

#[test]
fn review_cached_denies_a_changed_object_whose_signatures_are_cached() {
    let r = reviewer(platform_policy(""));
    let cold = || reviewer(platform_policy(""));
    let good = signed().backup_by_platform.clone();
    answer(&r, &in_namespace(&good, "backup"));
    // `object` in `namespace`, answered from the cache, is denied with `code` naming `field`.
    let denied_from_cache = |object: &Value, namespace: &'static str, code: &str, field: &str| {
        let reviewed = cached_answer(&r, cold, &in_namespace(object, namespace))
            .expect("a cached signature set");
        assert_denied(&response_of(&reviewed), &reviewed, code, field);
    };
    // Same annotations (a cache hit), other content: the comparison still runs.
    let bad = tampered(&good);
    denied_from_cache(&bad, "backup", "modified", "names[0]");
    // Moved to another namespace than signed: denied too.
    let mut moved = good.clone();
    moved["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    denied_from_cache(&moved, "payments", "modified", "metadata.namespace");
    // Copied onto another object: the signed message does not hold it.
    let mut renamed = good.clone();
    renamed["metadata"]["name"] = json!("exc-everything");
    denied_from_cache(&renamed, "backup", "not-in-message", "exc-backup");
    // An Audit rule warns from the cache as it does after checking.
    let audit = reviewer(platform_policy("  failureAction: Audit\n"));
    answer(&audit, &in_namespace(&good, "backup"));
    let cold_audit = || reviewer(platform_policy("  failureAction: Audit\n"));
    let reviewed = cached_answer(&audit, cold_audit, &in_namespace(&bad, "backup"))
        .expect("a cached signature set");
    assert_eq!(reviewed.decision.outcome, Outcome::AuditWarned);
    // A body over the bound is left to the full review, cached or not.
    let mut large = Request::create("backup", &good);
    large.operation = "UPDATE";
    let padding = "x".repeat(mansign::admission::CACHED_REVIEW_MAX_BYTES);
    large.old_object = Some(json!({"padding": padding}));
    assert!(r.review_cached(&large.body()).is_none());
    let (response, reviewed) = answer(&r, &large.body());
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

#[test]
fn review_cached_answers_what_needs_no_verification_at_once() {
    let r = reviewer(platform_policy(""));
    let cold = || reviewer(platform_policy(""));
    let bad = tampered(&signed().backup_by_platform);
    let delete = Request {
        operation: "DELETE",
        namespace: Some("backup"),
        object: None,
        old_object: Some(bad.clone()),
        dry_run: false,
    };
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "plain", "namespace": "backup"}, "data": {"a": "b"},
    });
    let unsigned = unsigned_exception();
    for (body, outcome) in [
        (delete.body(), Outcome::Skipped),
        (in_namespace(&config_map, "backup"), Outcome::NotMatched),
        (
            in_namespace(&signed().backup_by_platform, "payments"),
            Outcome::Denied,
        ),
        (b"{not json".to_vec(), Outcome::Invalid),
    ] {
        let reviewed = cached_answer(&r, cold, &body).expect("answered without a check");
        assert_eq!(
            reviewed.decision.outcome, outcome,
            "{:?}",
            reviewed.decision
        );
    }
    // An unsigned object needs no signature check either, but it has no cached set: the
    // full review answers it (and denies it).
    let body = in_namespace(&unsigned, "backup");
    assert!(r.review_cached(&body).is_none());
    let (response, reviewed) = answer(&r, &body);
    assert_denied(&response, &reviewed, "not-signed", "policy platform");
    assert_eq!(cache_lookups(&r), vec![(0, 0)], "nothing was looked up");
}

#[test]
fn review_cached_needs_every_matched_rule_cached() {
    // Two rules match; the first one's verifier cache (shared by clones) is warmed alone.
    let policies = || {
        let mut set = platform_policy("");
        set.rules
            .extend(platform_policy("  failureAction: Audit\n").rules);
        set
    };
    let both = policies();
    let first_only = PolicySet {
        rules: vec![both.rules[0].clone()],
        ..PolicySet::default()
    };
    let body = in_namespace(&signed().backup_by_platform, "backup");
    answer(&reviewer(first_only), &body);
    let r = reviewer(both);
    assert_eq!(cache_lookups(&r), vec![(0, 1), (0, 0)]);
    assert!(
        r.review_cached(&body).is_none(),
        "the second rule is not cached"
    );
    // The first rule's answer from the cache was not used: not counted.
    assert_eq!(cache_lookups(&r), vec![(0, 1), (0, 0)]);
    answer(&r, &body);
    assert_eq!(cache_lookups(&r), vec![(1, 1), (0, 1)]);
    let cached = cached_answer(&r, || reviewer(policies()), &body).expect("both rules cached");
    assert_eq!(cached.decision.outcome, Outcome::Allowed);
    assert_eq!(cache_lookups(&r), vec![(2, 1), (1, 1)]);
}

/// `reviewer.look(body)` as the webhook answers it: inline, or finished from what the look
/// parsed and matched (`PendingReview::finish` takes no body: nothing is read again), or,
/// for a body too large to read inline, the full review.
fn looked(reviewer: &Arc<Reviewer>, body: &[u8]) -> (&'static str, Reviewed) {
    match reviewer.look(body) {
        Look::Answered(reviewed) => ("answered", *reviewed),
        Look::Pending(pending) => ("pending", pending.finish()),
        Look::Unread => ("unread", reviewer.review(body)),
    }
}

#[test]
fn a_look_that_needs_a_check_is_finished_from_what_it_read_with_the_answer_review_gives() {
    let policy = || platform_policy("");
    let good = signed().backup_by_platform.clone();
    let mut large = Request::create("backup", &good);
    large.operation = "UPDATE";
    large.old_object =
        Some(json!({"padding": "x".repeat(mansign::admission::CACHED_REVIEW_MAX_BYTES)}));
    let delete = Request {
        operation: "DELETE",
        namespace: Some("backup"),
        object: None,
        old_object: Some(good.clone()),
        dry_run: false,
    };
    let by_team_a = {
        let mut o = signed().by_team_a.clone();
        o["metadata"]["namespace"] = json!("backup");
        o
    };
    let cases: Vec<(&str, Vec<u8>, &str, Outcome)> = vec![
        (
            "signed",
            in_namespace(&good, "backup"),
            "pending",
            Outcome::Allowed,
        ),
        (
            "tampered",
            in_namespace(&tampered(&good), "backup"),
            "pending",
            Outcome::Denied,
        ),
        (
            "unsigned",
            in_namespace(&unsigned_exception(), "backup"),
            "pending",
            Outcome::Denied,
        ),
        (
            "another signer",
            in_namespace(&by_team_a, "backup"),
            "pending",
            Outcome::Denied,
        ),
        (
            "moved",
            in_namespace(&good, "payments"),
            "answered",
            Outcome::Denied,
        ),
        ("delete", delete.body(), "answered", Outcome::Skipped),
        (
            "not json",
            b"{not json".to_vec(),
            "answered",
            Outcome::Invalid,
        ),
        ("large", large.body(), "unread", Outcome::Allowed),
    ];
    for (what, body, path, outcome) in cases {
        // A reviewer that never saw the object, as the webhook's on its first request.
        let r = Arc::new(reviewer(policy()));
        let (took, reviewed) = looked(&r, &body);
        assert_eq!(took, path, "{what}");
        assert_eq!(
            reviewed.decision.outcome, outcome,
            "{what}: {:?}",
            reviewed.decision
        );
        let full = reviewer(policy()).review(&body);
        assert_eq!(
            reviewed.response.as_ref().map_err(|b| b.code),
            full.response.as_ref().map_err(|b| b.code),
            "{what}"
        );
        assert_eq!(
            format!("{:?}", reviewed.decision),
            format!("{:?}", full.decision),
            "{what}"
        );
        // The cache-only look counted nothing; the finished check counted as one review.
        let lookups = cache_lookups(&r);
        let cold = reviewer(policy());
        cold.review(&body);
        assert_eq!(lookups, cache_lookups(&cold), "{what}");
    }
    // Once the signatures are cached, the look answers inline, as review_cached does.
    let r = Arc::new(reviewer(policy()));
    let body = in_namespace(&good, "backup");
    assert_eq!(looked(&r, &body).0, "pending");
    let (took, reviewed) = looked(&r, &body);
    assert_eq!(
        (took, reviewed.decision.outcome),
        ("answered", Outcome::Allowed)
    );
    assert_eq!(cache_lookups(&r), vec![(1, 1)]);
}

#[test]
fn review_cached_leaves_a_large_signed_document_to_the_full_review() {
    // The attack the bound is for: a small object carrying the annotations of a large signed
    // one makes every cached answer read and compare the large document.
    let r = reviewer(platform_policy(""));
    let large = signed().large_by_platform.clone();
    let (response, reviewed) = answer(&r, &in_namespace(&large, "backup"));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    assert_eq!(cache_lookups(&r), vec![(0, 1)]);
    let mut small = large.clone();
    small["spec"]["match"]["any"][0]["resources"]["names"] = json!(["*"]);
    let body = in_namespace(&small, "backup");
    assert!(body.len() < mansign::admission::CACHED_REVIEW_MAX_BYTES);
    assert!(
        r.review_cached(&body).is_none(),
        "read a large signed document inline"
    );
    // The full review answers it from the cache, and denies it (the message, bounded to
    // 1,024 characters, starts with the 2,000 differences).
    let (response, reviewed) = answer(&r, &body);
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(reviewed.decision.reason_code.as_deref(), Some("modified"));
    assert_eq!(cache_lookups(&r), vec![(1, 1)]);
}

#[test]
fn review_cached_answers_for_a_bounded_number_of_matched_rules() {
    let rules = |n: usize| {
        let mut set = platform_policy("");
        for _ in 1..n {
            set.rules.extend(platform_policy("").rules);
        }
        set
    };
    let body = in_namespace(&signed().backup_by_platform, "backup");
    let max = mansign::admission::CACHED_REVIEW_MAX_RULES;
    let at_max = reviewer(rules(max));
    answer(&at_max, &body);
    assert!(at_max.review_cached(&body).is_some());
    let over = reviewer(rules(max + 1));
    answer(&over, &body);
    assert!(over.review_cached(&body).is_none());
    let (response, reviewed) = answer(&over, &body);
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

#[test]
fn review_cached_leaves_a_signature_past_its_maximum_age_to_the_full_review() {
    let r = reviewer(platform_policy("  maxAge: 1h\n"));
    let body = in_namespace(&signed().backup_by_platform, "backup");
    answer(&r, &body);
    let now = jiff::Timestamp::now();
    assert!(r.review_cached_at(&body, now).is_some());
    let later = now + jiff::SignedDuration::from_hours(2);
    assert!(r.review_cached_at(&body, later).is_none());
    let reviewed = r.review_at(&body, later);
    assert_eq!(reviewed.decision.outcome, Outcome::Denied);
    assert_eq!(reviewed.decision.reason_code.as_deref(), Some("too-old"));
}

// ---------------------------------------------------------------------------------------
// Per-namespace signers (examples/policy/per-namespace-signers.yaml)

fn in_namespace(object: &Value, ns: &'static str) -> Vec<u8> {
    Request::create(ns, object).body()
}

/// `r` denies `object` in namespace `ns` as signed by a subject not trusted there, naming
/// `in_message`.
fn assert_subject_mismatch(r: &Reviewer, object: &Value, ns: &'static str, in_message: &str) {
    let (response, reviewed) = answer(r, &in_namespace(object, ns));
    assert_denied(&response, &reviewed, "subject-mismatch", in_message);
}

#[test]
fn team_signature_is_accepted_in_its_own_namespace() {
    let r = reviewer(per_namespace_policy());
    let (response, reviewed) = answer(&r, &in_namespace(&signed().by_team_a, "team-a"));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    assert_eq!(
        reviewed.decision.signers,
        vec![format!("{TEAM_A} ({GITHUB_ISSUER})")]
    );
    let (response, reviewed) = answer(&r, &in_namespace(&signed().by_team_b, "team-b"));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

#[test]
fn team_signature_is_rejected_in_another_teams_namespace() {
    let r = reviewer(per_namespace_policy());
    assert_subject_mismatch(&r, &signed().by_team_a, "team-b", "team-b-exceptions");
    assert_subject_mismatch(&r, &signed().by_team_b, "team-a", "team-a-exceptions");
}

#[test]
fn team_signature_is_rejected_outside_the_team_namespaces() {
    let r = reviewer(per_namespace_policy());
    assert_subject_mismatch(
        &r,
        &signed().by_team_a,
        "payments",
        "policy platform-exceptions",
    );
}

#[test]
fn central_signature_is_accepted_in_every_namespace() {
    let r = reviewer(per_namespace_policy());
    for ns in ["team-a", "team-b", "payments"] {
        let (response, reviewed) = answer(&r, &in_namespace(&signed().by_platform, ns));
        assert_allowed(&response, &reviewed, Outcome::Allowed);
        assert_eq!(
            reviewed.decision.signers,
            vec![format!("{PLATFORM} ({GITHUB_ISSUER})")],
            "{ns}"
        );
    }
}

/// The same decision in Kyverno documents: a namespaced `Policy` per team namespace and a
/// `ClusterPolicy` for the rest (docs/admission.md).
fn kyverno_per_namespace_policy() -> PolicySet {
    let team = |ns: &str, subject: &str| {
        template(
            "kyverno-team-exceptions-policy.yaml",
            &[
                ("NAMESPACE", ns),
                ("ISSUER", GITHUB_ISSUER),
                ("TEAM", subject),
                ("PLATFORM", PLATFORM),
            ],
        )
    };
    let platform = template(
        "kyverno-platform-exceptions-policy.yaml",
        &[("ISSUER", GITHUB_ISSUER), ("PLATFORM", PLATFORM)],
    );
    let text = format!(
        "{}---\n{}---\n{platform}",
        team("team-a", TEAM_A),
        team("team-b", TEAM_B)
    );
    load_str(
        "kyverno-per-namespace.yaml",
        &text,
        repo(),
        &stack_options(),
    )
    .unwrap()
}

#[test]
fn kyverno_policies_express_the_same_per_namespace_signers() {
    let r = reviewer(kyverno_per_namespace_policy());
    let s = signed();
    for (object, ns, allowed) in [
        (&s.by_team_a, "team-a", true),
        (&s.by_team_a, "team-b", false),
        (&s.by_team_a, "payments", false),
        (&s.by_team_b, "team-b", true),
        (&s.by_team_b, "team-a", false),
        (&s.by_platform, "team-a", true),
        (&s.by_platform, "team-b", true),
        (&s.by_platform, "payments", true),
    ] {
        let (response, reviewed) = answer(&r, &in_namespace(object, ns));
        assert_eq!(
            response["allowed"], allowed,
            "{} in {ns}: {response}",
            object["metadata"]["name"]
        );
        if !allowed {
            assert_eq!(
                reviewed.decision.reason_code.as_deref(),
                Some("subject-mismatch")
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bad reviews: an error with a code, never a panic, never an answer

/// The code of a body the reviewer cannot read. Such a body is refused by its uid (HTTP 200,
/// `allowed: false`, `[code]` in the message) when the uid can be read, and is an HTTP 400
/// ([`mansign::admission::BadReview`]) only when it cannot: an HTTP error would leave the
/// request to the webhook's failurePolicy (issue 35, item 4).
fn bad_code(body: &[u8]) -> String {
    let r = reviewer(kyverno_unit_policy(""));
    let reviewed = r.review(body);
    assert_eq!(reviewed.decision.outcome, Outcome::Invalid);
    let code = reviewed
        .decision
        .reason_code
        .clone()
        .expect("a reason code");
    match (
        &reviewed.response,
        mansign::admission::request::readable_uid(body),
    ) {
        (Err(bad), None) => assert_eq!(bad.code, code),
        (Ok(answer), Some(uid)) => {
            let answer: Value = serde_json::from_slice(answer).unwrap();
            let response = &answer["response"];
            assert_eq!(response["uid"], uid.as_str(), "{answer}");
            assert_eq!(response["allowed"], false, "{answer}");
            let message = response["status"]["message"].as_str().unwrap();
            assert!(message.ends_with(&format!("[{code}]")), "{message}");
            assert_eq!(reviewed.decision.uid, uid);
        }
        (response, uid) => panic!("uid {uid:?} read, yet answered {response:?}"),
    }
    code
}

fn signed_review_value() -> Value {
    serde_json::from_slice(&kyverno_review("signed")).unwrap()
}

#[test]
fn malformed_json_is_a_bad_review() {
    assert_eq!(bad_code(b"{\"apiVersion\": "), "malformed-json");
    assert_eq!(bad_code(b"[]"), "malformed-json");
    assert_eq!(bad_code(b""), "malformed-json");
    assert_eq!(bad_code(&[0xff, 0xfe, b'{']), "malformed-json");
}

/// Removes `key` from the object `v`.
fn remove(v: &mut Value, key: &str) {
    v.as_object_mut().unwrap().remove(key);
}

/// An edit of a signed review.
type ReviewEdit = fn(&mut Value);

/// (the bad-review code, edits of a signed review that each draw it): a wrong apiVersion or
/// kind, a missing request, a missing or empty uid, a request without operation or user, a
/// CREATE without object.
const BAD_REVIEWS: &[(&str, &[ReviewEdit])] = &[
    (
        "wrong-api-version",
        &[
            |v| v["apiVersion"] = json!("admission.k8s.io/v1beta1"),
            |v| v["kind"] = json!("ConfigMap"),
        ],
    ),
    (
        "missing-request",
        &[|v| remove(v, "request"), |v| v["request"] = Value::Null],
    ),
    (
        "missing-uid",
        &[
            |v| remove(&mut v["request"], "uid"),
            |v| v["request"]["uid"] = json!(""),
            |v| v["request"]["uid"] = json!(7),
        ],
    ),
    (
        "malformed-request",
        &[
            |v| remove(&mut v["request"], "operation"),
            |v| v["request"]["operation"] = json!("PATCH"),
        ],
    ),
    (
        "missing-object",
        &[|v| v["request"]["object"] = Value::Null],
    ),
];

#[test]
fn bad_reviews_are_refused_with_their_code() {
    for (code, edits) in BAD_REVIEWS {
        // Each edit, applied to a fresh signed review, makes it a bad review with `code`.
        for (i, edit) in edits.iter().enumerate() {
            let mut v = signed_review_value();
            edit(&mut v);
            let got = bad_code(&serde_json::to_vec(&v).unwrap());
            assert_eq!(got, *code, "edit {i} of the {code} cases");
        }
    }
}

#[test]
fn oversized_body_is_a_bad_review_before_it_is_read() {
    let r = Reviewer::new(
        kyverno_unit_policy(""),
        ReviewOptions::default().with_max_body_bytes(1024),
    );
    let body = kyverno_review("signed");
    assert!(body.len() > 1024);
    // A review with a readable uid is refused by it (HTTP 200): never left to failurePolicy.
    let reviewed = r.review(&body);
    assert_eq!(
        reviewed.decision.reason_code.as_deref(),
        Some("body-too-large")
    );
    let answer: Value = serde_json::from_slice(&reviewed.response.unwrap()).unwrap();
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    // The default limit: 3 MiB, one byte over is refused.
    let big = vec![b' '; 3 * 1024 * 1024 + 1];
    assert_eq!(bad_code(&big), "body-too-large");
}

#[test]
fn deeply_nested_json_is_a_bad_review_without_a_stack_overflow() {
    for depth in [67, 10_000, 1_000_000] {
        let body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(bad_code(body.as_bytes()), "too-deeply-nested", "{depth}");
    }
    // Nested inside the object, unterminated: still refused by the scan.
    let mut v = signed_review_value();
    v["request"]["object"]["data"]["deep"] = json!("x");
    let text = serde_json::to_string(&v).unwrap().replace(
        "\"deep\":\"x\"",
        &format!(
            "\"deep\":{}",
            "{\"a\":".repeat(100) + "1" + &"}".repeat(100)
        ),
    );
    assert_eq!(bad_code(text.as_bytes()), "too-deeply-nested");
}

#[test]
fn nesting_at_the_object_limit_is_answered() {
    // 64 levels inside the object (the manifest reader's bound) are within the limit.
    let mut v = signed_review_value();
    let text = serde_json::to_string(&v["request"]["object"]).unwrap();
    let nested = format!("{}1{}", "[".repeat(62), "]".repeat(62));
    let object_text = text.replacen("\"val1\"", &nested, 1);
    v["request"]["object"] = serde_json::from_str(&object_text).unwrap();
    let r = reviewer(kyverno_unit_policy(""));
    let (response, reviewed) = answer(&r, &serde_json::to_vec(&v).unwrap());
    assert_denied(&response, &reviewed, "modified", "data.key1");
}

// ---------------------------------------------------------------------------------------
// `mansign admission review`

fn kyverno_policy_file(dir: &Path, action: &str) -> PathBuf {
    common::write(
        dir,
        "policy.yaml",
        &common::kyverno_unit_policy(action, "ConfigMap, Service", "", ""),
    )
}

fn cli_review(policy: &Path, review: &Path) -> std::process::Output {
    common::mansign()
        .args(["admission", "review", "--policy"])
        .arg(policy)
        .arg("--trusted-root")
        .arg(kyverno_root_for_cli())
        .arg("-f")
        .arg(review)
        .output()
        .unwrap()
}

/// The fixture root with `mediaType`, written once for CLI runs.
fn kyverno_root_for_cli() -> PathBuf {
    static ROOT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut v: Value = serde_json::from_str(
            &std::fs::read_to_string(kyverno("trust-root/sigstore-public-trusted_root.json"))
                .unwrap(),
        )
        .unwrap();
        v["mediaType"] = "application/vnd.dev.sigstore.trustedroot+json;version=0.1".into();
        let path = common::write(dir.path(), "trusted_root.json", &v.to_string());
        (dir, path)
    })
    .1
    .clone()
}

#[test]
fn cli_prints_exactly_the_reviewer_response_and_exits_by_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let policy = kyverno_policy_file(dir.path(), "");
    let loaded = load_file(
        &policy,
        &LoadOptions::default().with_trust_root(Arc::new(
            TrustRoot::from_file(kyverno_root_for_cli()).unwrap(),
        )),
    )
    .unwrap();
    let r = reviewer(loaded);
    for (name, code) in [
        ("signed", 0),
        ("unsigned", 1),
        ("invalid", 1),
        ("multi-sig", 0),
    ] {
        let path = kyverno(&format!(
            "unit-validate-manifest/admissionreview-wrapped/{name}-admissionreview.json"
        ));
        let out = cli_review(&policy, &path);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut expected = r.review(&std::fs::read(&path).unwrap()).response.unwrap();
        // the response body the server sends, then a newline (issue 39, item 15)
        expected.push(b'\n');
        assert_eq!(
            out.stdout, expected,
            "{name}: byte-equal to Reviewer::review, newline-terminated"
        );
    }
}

#[test]
fn cli_reads_the_review_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let policy = kyverno_policy_file(dir.path(), "");
    common::mansign()
        .args(["admission", "review", "--policy"])
        .arg(&policy)
        .arg("--trusted-root")
        .arg(kyverno_root_for_cli())
        .args(["-f", "-"])
        .write_stdin(kyverno_review("invalid"))
        .assert()
        .code(1)
        .stdout(predicates::str::contains("data.key3"))
        .stderr(predicates::str::starts_with("<stdin>: denied"))
        // the code once on the decision line, not once before the message and once in it
        .stderr(predicates::function::function(|e: &str| {
            e.matches("[modified]").count() == 1
        }));
}

#[test]
fn cli_audit_policy_exits_0_with_the_warning() {
    let dir = tempfile::tempdir().unwrap();
    let policy = kyverno_policy_file(dir.path(), "  validationFailureAction: Audit\n");
    let review =
        kyverno("unit-validate-manifest/admissionreview-wrapped/invalid-admissionreview.json");
    let out = cli_review(&policy, &review);
    assert_eq!(out.status.code(), Some(0));
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["response"]["allowed"], true);
    assert_eq!(
        response["response"]["warnings"].as_array().unwrap().len(),
        1
    );
}

#[test]
fn offline_verify_fails_an_audit_rule_and_shows_the_action() {
    let dir = tempfile::tempdir().unwrap();
    let policy = kyverno_policy_file(dir.path(), "  validationFailureAction: Audit\n");
    let out = common::mansign()
        .args(["verify", "--policy"])
        .arg(&policy)
        .arg("--trusted-root")
        .arg(kyverno_root_for_cli())
        .arg("-f")
        .arg(kyverno("unit-validate-manifest/invalid-resource.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAILED [diff] (Audit)"), "{stdout}");
}

#[test]
fn cli_bad_review_exits_2_naming_the_file_and_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let policy = kyverno_policy_file(dir.path(), "");
    let review = common::write(dir.path(), "review.json", "{\"apiVersion\": \"v1\"}");
    let out = cli_review(&policy, &review);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&review.display().to_string()), "{stderr}");
    assert!(stderr.contains("[wrong-api-version]"), "{stderr}");
    let missing = dir.path().join("missing.json");
    let out = cli_review(&policy, &missing);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.json"));
}

/// A request body edited as JSON (subresource, kind, namespace), for the cases the
/// `Request` builder does not make.
fn edited(req: &Request, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut review: Value = serde_json::from_slice(&req.body()).unwrap();
    edit(&mut review["request"]);
    serde_json::to_vec(&review).unwrap()
}

#[test]
fn a_write_through_a_subresource_is_denied_and_a_status_write_is_verified() {
    let r = reviewer(platform_policy(""));
    // `kubectl scale` of a signed Deployment: the request carries a Scale, not the object,
    // and no rule names Scale. It must not pass as "no rule applies".
    let scale = json!({
        "apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": "backup"}, "spec": {"replicas": 0},
    });
    let body = edited(
        &Request {
            operation: "UPDATE",
            namespace: Some("backup"),
            object: Some(scale.clone()),
            old_object: Some(scale),
            dry_run: false,
        },
        |request| {
            request["resource"] =
                json!({"group": "apps", "version": "v1", "resource": "deployments"});
            request["subResource"] = json!("scale");
        },
    );
    let (response, reviewed) = answer(&r, &body);
    assert_denied(&response, &reviewed, "subresource", "deployments/scale");
    // A status write is not "status only" (issue 21, item 3): for a kind mansign has no
    // status strategy for, everything but status is the request's, so it is verified.
    let status_write = |object: &Value| {
        edited(&Request::create("backup", object), |request| {
            request["operation"] = json!("UPDATE");
            request["subResource"] = json!("status");
        })
    };
    let body = status_write(&tampered(&signed().backup_by_platform));
    let (response, reviewed) = answer(&r, &body);
    assert_denied(
        &response,
        &reviewed,
        "modified",
        "spec.match.any[0].resources.names[0]",
    );
    let mut with_status = signed().backup_by_platform.clone();
    with_status["status"] = json!({"ready": true});
    let (response, reviewed) = answer(&r, &status_write(&with_status));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
}

#[test]
fn a_kind_pinned_to_a_version_still_matches_the_object_sent_in_another_version() {
    let text = keyless_exceptions_policy("pinned", "kyverno.io/v2/PolicyException", "");
    let r = reviewer(load_str("pinned.yaml", &text, repo(), &stack_options()).unwrap());
    // The signed v2 object passes.
    let (response, reviewed) = answer(&r, &in_namespace(&signed().backup_by_platform, "backup"));
    assert_allowed(&response, &reviewed, Outcome::Allowed);
    // The same exception sent unsigned as v2beta1 (a webhook registered for every
    // version sends it as is) is matched and denied, not waved through as unmatched.
    let mut unsigned = mansign::manifest::parse_documents(
        &exception("plain", Some("backup")),
        &mansign::Limits::default(),
    )
    .unwrap()
    .remove(0)
    .1;
    unsigned["apiVersion"] = json!("kyverno.io/v2beta1");
    let (response, reviewed) = answer(&r, &in_namespace(&unsigned, "backup"));
    assert_denied(&response, &reviewed, "not-signed", "policy pinned");
    // The signed v2 document sent as v2beta1 is a different object: denied.
    let mut relabelled = signed().backup_by_platform.clone();
    relabelled["apiVersion"] = json!("kyverno.io/v2beta1");
    let (response, reviewed) = answer(&r, &in_namespace(&relabelled, "backup"));
    assert!(!reviewed.decision.outcome.is_allowed(), "{response}");
}

#[test]
fn a_namespaced_kyverno_policy_does_not_apply_to_a_cluster_scoped_request() {
    let text = "apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: team-configmaps
  namespace: team-a
spec:
  validationFailureAction: Enforce
  rules:
  - name: signed
    match:
      any:
      - resources:
          kinds: [ClusterRole, ConfigMap]
    validate:
      manifests:
        attestors:
        - entries:
          - keys:
              publicKeys: |-
                -----BEGIN PUBLIC KEY-----
                MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAESNpI3RIORxVxOOnxGq+gmUVKgbTm
                DVI9bX8G4XqiyspEm/7mb7QANWuO9NrHxxNldvBtBuKC3zjZKs2giviYAQ==
                -----END PUBLIC KEY-----
";
    let r = reviewer(load_str("team.yaml", text, repo(), &stack_options()).unwrap());
    let cluster_role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "viewer"}, "rules": [],
    });
    let req = Request {
        operation: "CREATE",
        namespace: None,
        object: Some(cluster_role),
        old_object: None,
        dry_run: false,
    };
    let (response, reviewed) = answer(&r, &req.body());
    assert_allowed(&response, &reviewed, Outcome::NotMatched);
    // In its own namespace the policy applies: an unsigned ConfigMap is denied.
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "plain", "namespace": "team-a"}, "data": {"a": "b"},
    });
    let (response, reviewed) = answer(&r, &in_namespace(&config_map, "team-a"));
    assert_denied(&response, &reviewed, "not-signed", "team-configmaps");
}

#[test]
fn a_service_account_subject_without_namespace_is_refused_when_loading() {
    for block in ["match", "exclude"] {
        let subjects = if block == "match" {
            "        subjects:\n        - kind: ServiceAccount\n          name: deployer\n"
        } else {
            "    exclude:\n      any:\n      - subjects:\n        - kind: ServiceAccount\n          name: deployer\n"
        };
        let text = template(
            "kyverno-service-account-subject-policy.yaml",
            &[
                ("# SUBJECTS\n", subjects),
                ("ISSUER", GITHUB_ISSUER),
                ("PLATFORM", PLATFORM),
            ],
        );
        let err = load_str("sa.yaml", &text, repo(), &stack_options()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("{block}.any[0].subjects[0].namespace"))
                && message.contains("needs a namespace"),
            "{message}"
        );
    }
}
