//! Which objects and requests a rule applies to, read as Kyverno reads it (issue 21 items 1,
//! 10 and 11; issue 27 item 2): every kind selector form, conditions on the requesting user
//! in `ManifestPolicy`, the failure action in any of Kyverno's spellings — each the same in
//! the loader, the webhook, offline `verify`, `policy convert` and `policy explain`.

use crate::common;

use mansign::admission::{Outcome, ReviewOptions, Reviewer};
use mansign::policy::convert::{ConvertOptions, convert_str};
use mansign::policy::explain::{explain_json, explain_text};
use mansign::policy::{FailureAction, LoadOptions, PolicySet, RequestContext, load_str};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const CONTROLLER: &str = "system:serviceaccount:kube-system:replicaset-controller";

fn key_pem() -> String {
    std::fs::read_to_string(Path::new(REPO).join("testdata/kyverno/keys/ecdsa-pub-1.pem")).unwrap()
}

fn indent(text: &str, by: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect()
}

fn load(text: &str) -> Result<PolicySet, String> {
    load_str("p.yaml", text, Path::new(REPO), &LoadOptions::default()).map_err(|e| e.to_string())
}

/// A Kyverno ClusterPolicy: `spec_extra` at spec level, `rule` (match/exclude...) in the
/// rule, `validate_extra` in validate; the K1 key as the one attestor.
fn kyverno(spec_extra: &str, rule: &str, validate_extra: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n{}  rules:\n  - name: r\n{}    validate:\n{}      manifests:\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |\n{}",
        indent(spec_extra, 2),
        indent(rule, 4),
        indent(validate_extra, 6),
        indent(&key_pem(), 16)
    )
}

/// A ManifestPolicy with `selection` (match/exclude) in its spec and the K1 key.
fn manifest_policy(selection: &str) -> String {
    format!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: p\nspec:\n{}  attestors:\n  - entries:\n    - keys:\n        publicKeys: |\n{}",
        indent(selection, 2),
        indent(&key_pem(), 10)
    )
}

fn exception(api_version: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "PolicyException",
        "metadata": {"name": "let-me-in", "namespace": namespace},
        "spec": {"exceptions": [{"policyName": "*", "ruleNames": ["*"]}]},
    })
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
}

/// The AdmissionReview the API server sends for creating `object` as `user` in `groups`.
fn review(object: &Value, resource: &str, user: &str, groups: &[&str]) -> Vec<u8> {
    let api = object["apiVersion"].as_str().unwrap();
    let (group, version) = api.split_once('/').unwrap_or(("", api));
    let request = json!({
        "uid": "00000000-0000-4000-8000-000000000010",
        "kind": {"group": group, "version": version, "kind": object["kind"]},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": object["metadata"]["name"],
        "operation": "CREATE",
        "userInfo": {"username": user, "groups": groups},
        "object": object,
    });
    common::admission_review_body(request, object["metadata"]["namespace"].as_str())
}

fn webhook(set: &PolicySet, object: &Value, resource: &str, user: &str) -> Outcome {
    Reviewer::new(set.clone(), ReviewOptions::default())
        .review(&review(object, resource, user, &["system:authenticated"]))
        .decision
        .outcome
}

/// Offline: true when a rule applies and the object fails it.
fn fails_offline(set: &PolicySet, object: &Value) -> bool {
    let v = set
        .verify_object(object, &RequestContext::default())
        .unwrap();
    !v.rules.is_empty() && !v.is_verified()
}

// ---------------------------------------------------------------------------------------
// Item 1: kind selectors

#[test]
fn subresource_forms_of_a_kind_selector_select_the_object_as_kyverno_matches_it() {
    for kind in [
        "kyverno.io/*/PolicyException/*",
        "v2/PolicyException/*",
        "PolicyException/*",
        "PolicyException.*",
        "*/PolicyException/*",
    ] {
        let text = kyverno(
            "",
            &format!("match:\n  any:\n  - resources:\n      kinds: [{kind:?}]\n"),
            "failureAction: Enforce\n",
        );
        let set = load(&text).unwrap();
        let object = exception("kyverno.io/v2", "default");
        assert_eq!(
            webhook(&set, &object, "policyexceptions", "mallory"),
            Outcome::Denied,
            "{kind}"
        );
        assert!(fails_offline(&set, &object), "{kind}");
    }
}

#[test]
fn a_selector_of_a_subresource_only_is_refused_naming_the_field() {
    let cases = [
        (
            kyverno(
                "",
                "match:\n  any:\n  - resources:\n      kinds: [PolicyException, Pod/status]\n",
                "",
            ),
            "spec.rules[0].match.any[0].resources.kinds[1]",
        ),
        (
            kyverno(
                "",
                "match:\n  any:\n  - resources:\n      kinds: [Pod]\nexclude:\n  resources:\n    kinds: [\"*/*/PolicyException\"]\n",
                "",
            ),
            "spec.rules[0].exclude.resources.kinds[0]",
        ),
        (
            manifest_policy("match:\n  kinds: [PolicyException.kyverno.io]\n"),
            "spec.match.kinds[0]",
        ),
        (
            manifest_policy(
                "match:\n  kinds: [Pod]\nexclude:\n- names: [a]\n- kinds: [kyverno.io/PolicyException]\n",
            ),
            "spec.exclude[1].kinds[0]",
        ),
    ];
    for (text, field) in cases {
        let err = load(&text).unwrap_err();
        assert!(err.contains(field), "{field}: {err}");
        assert!(err.contains("kind selector"), "{err}");
    }
}

#[test]
fn policy_convert_reads_kind_selectors_as_the_loader_does() {
    let text = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [v2/PolicyException/*]\n",
        "failureAction: Enforce\n",
    );
    let conversion =
        convert_str("p.yaml", &text, Path::new(REPO), &ConvertOptions::default()).unwrap();
    let yaml = conversion.to_yaml();
    assert!(yaml.contains("v2/PolicyException/*"), "{yaml}");
    let converted = load(&yaml).unwrap();
    let object = exception("kyverno.io/v2", "default");
    assert_eq!(
        webhook(&converted, &object, "policyexceptions", "mallory"),
        Outcome::Denied
    );
    let refused = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [Pod/status]\n",
        "",
    );
    let err = convert_str(
        "p.yaml",
        &refused,
        Path::new(REPO),
        &ConvertOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("spec.rules[0].match.any[0].resources.kinds[0]"),
        "{err}"
    );
}

#[test]
fn policy_explain_says_how_each_kind_selector_is_read() {
    let text = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [kyverno.io/*/PolicyException/*, v2/PolicyException]\n",
        "failureAction: Enforce\n",
    );
    let explained = explain_text(&load(&text).unwrap());
    assert!(
        explained.contains(
            "kyverno.io/*/PolicyException/* [kind \"PolicyException\" (group \"kyverno.io\", \
             any version, the object and its subresources)]"
        ),
        "{explained}"
    );
    assert!(
        explained.contains(
            "v2/PolicyException [kind \"PolicyException\" (any group, version \"v2\", the \
             object)]"
        ),
        "{explained}"
    );
}

#[test]
fn kyverno_blocks_mansign_would_read_differently_are_refused() {
    // Kyverno reads `any` and ignores the inline form (and refuses inline resources next to
    // any/all); mansign would AND them and apply the rule to fewer objects.
    let inline = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [PolicyException]\n  subjects:\n  - kind: User\n    name: nobody\n",
        "",
    );
    let err = load(&inline).unwrap_err();
    assert!(err.contains("spec.rules[0].match:"), "{err}");
    let both = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [PolicyException]\n  all:\n  - resources:\n      names: [nothing]\n",
        "",
    );
    let err = load(&both).unwrap_err();
    assert!(err.contains("both any and all"), "{err}");
}

#[test]
fn a_namespace_is_selected_by_its_own_name_as_kyverno_does() {
    let text = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [Namespace]\n      namespaces: [prod-*]\n",
        "failureAction: Enforce\n",
    );
    let set = load(&text).unwrap();
    let request = RequestContext {
        namespace_known: true,
        any_version: true,
        ..RequestContext::default()
    };
    let ns =
        |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let v = set.verify_object(&ns("prod-a"), &request).unwrap();
    assert!(!v.rules.is_empty() && !v.is_verified(), "{v}");
    let v = set.verify_object(&ns("dev"), &request).unwrap();
    assert!(v.no_rule_applies(), "{v}");
}

// ---------------------------------------------------------------------------------------
// Item 10: conditions on the requesting user in a ManifestPolicy

const EXCLUDE_CONTROLLER: &str = "match:\n  kinds: [Pod]\nexclude:\n  kinds: [Pod]\n  subjects:\n  - kind: ServiceAccount\n    namespace: kube-system\n    name: replicaset-controller\n";

#[test]
fn a_manifest_policy_exclude_by_subject_exempts_the_controller_in_the_webhook() {
    let set = load(&manifest_policy(EXCLUDE_CONTROLLER)).unwrap();
    let object = pod("web");
    assert_eq!(
        webhook(&set, &object, "pods", CONTROLLER),
        Outcome::NotMatched
    );
    assert_eq!(webhook(&set, &object, "pods", "alice"), Outcome::Denied);
    // A service account of the same name elsewhere is someone else.
    assert_eq!(
        webhook(
            &set,
            &object,
            "pods",
            "system:serviceaccount:team-a:replicaset-controller"
        ),
        Outcome::Denied
    );
    // Offline there is no request: the exclusion is not met, the object is checked.
    assert!(fails_offline(&set, &object));
    let notes = set.offline_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("exclusion by requesting user is taken as not met"),
        "{notes:?}"
    );
}

#[test]
fn a_manifest_policy_match_by_group_applies_to_members_in_the_webhook_and_always_offline() {
    let set = load(&manifest_policy(
        "match:\n  kinds: [Pod]\n  subjects:\n  - kind: Group\n    name: system:serviceaccounts:ci\n",
    ))
    .unwrap();
    let object = pod("web");
    let in_group = Reviewer::new(set.clone(), ReviewOptions::default())
        .review(&review(
            &object,
            "pods",
            "system:serviceaccount:ci:deployer",
            &["system:serviceaccounts", "system:serviceaccounts:ci"],
        ))
        .decision
        .outcome;
    assert_eq!(in_group, Outcome::Denied);
    assert_eq!(webhook(&set, &object, "pods", "alice"), Outcome::NotMatched);
    assert!(fails_offline(&set, &object));
    assert!(set.offline_notes()[0].contains("taken as met"));
}

#[test]
fn a_manifest_policy_exclude_list_excludes_by_any_alternative() {
    let set = load(&manifest_policy(
        "match:\n  kinds: [Pod, ReplicaSet]\nexclude:\n- kinds: [Pod]\n  subjects: [{kind: ServiceAccount, namespace: kube-system, name: replicaset-controller}]\n- names: [skip-*]\n",
    ))
    .unwrap();
    assert_eq!(
        webhook(&set, &pod("web"), "pods", CONTROLLER),
        Outcome::NotMatched
    );
    assert_eq!(
        webhook(&set, &pod("skip-me"), "pods", "alice"),
        Outcome::NotMatched
    );
    assert_eq!(webhook(&set, &pod("web"), "pods", "alice"), Outcome::Denied);
}

#[test]
fn a_manifest_policy_refuses_user_conditions_it_cannot_evaluate() {
    for (selection, field, words) in [
        (
            "match:\n  kinds: [Pod]\nexclude:\n  roles: [kube-system:admin]\n",
            "spec.exclude.roles",
            "does not resolve roles",
        ),
        (
            "match:\n  kinds: [Pod]\n  clusterRoles: [cluster-admin]\n",
            "spec.match.clusterRoles",
            "does not resolve roles",
        ),
        (
            "match:\n  kinds: [Pod]\nexclude:\n  subjects: [{kind: Serviceaccount, namespace: kube-system, name: x}]\n",
            "spec.exclude.subjects[0].kind",
            "not User, Group or ServiceAccount",
        ),
        (
            "match:\n  kinds: [Pod]\nexclude:\n  subjects: [{kind: ServiceAccount, name: replicaset-controller}]\n",
            "spec.exclude.subjects[0].namespace",
            "needs a namespace",
        ),
        ("match: []\n", "spec.match", "selects nothing"),
        (
            "match:\n  kinds: [Pod]\nexclude:\n- names: [x]\n- {}\n",
            "spec.exclude[1]",
            "would exclude every object",
        ),
        (
            "match:\n  kinds: [Pod]\n  subject: []\n",
            "spec.match",
            "unknown field `subject`",
        ),
    ] {
        let err = load(&manifest_policy(selection)).unwrap_err();
        assert!(err.contains(field) && err.contains(words), "{field}: {err}");
    }
}

#[test]
fn policy_explain_names_the_subjects_and_what_verify_makes_of_them() {
    let set = load(&manifest_policy(EXCLUDE_CONTROLLER)).unwrap();
    let text = explain_text(&set);
    assert!(
        text.contains(&format!("requested by service account {CONTROLLER}")),
        "{text}"
    );
    assert!(text.contains("offline `verify` has no request"), "{text}");
    let json = explain_json(&set);
    assert!(
        json["rules"][0]["appliesTo"]
            .as_str()
            .unwrap()
            .contains(CONTROLLER),
        "{json}"
    );
}

#[test]
fn verify_says_user_conditions_are_not_evaluated_offline_and_checks_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, manifest_policy(EXCLUDE_CONTROLLER)).unwrap();
    let manifest = dir.path().join("pod.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mansign"))
        .arg("verify")
        .arg("--policy")
        .arg(&policy)
        .arg("-f")
        .arg(&manifest)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no admission request offline")
            && stderr.contains("exclusion by requesting user is taken as not met"),
        "{stderr}"
    );
}

/// The real upstream policy (Kyverno chainsaw `validate/e2e/yaml-signing`) excludes Pods
/// created by the replicaset-controller and ReplicaSets by the deployment-controller.
#[test]
fn the_upstream_yaml_signing_policy_converts_with_its_subject_excludes() {
    let path = Path::new(REPO).join("testdata/kyverno/chainsaw-yaml-signing/policy.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let conversion = convert_str(
        "policy.yaml",
        &text,
        path.parent().unwrap(),
        &ConvertOptions::default(),
    )
    .unwrap();
    let yaml = conversion.to_yaml();
    for name in ["replicaset-controller", "deployment-controller"] {
        assert!(yaml.contains(name), "{yaml}");
    }
    let original = load(&text).unwrap();
    let converted = load(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let signed: Value = {
        let text = std::fs::read_to_string(
            Path::new(REPO)
                .join("testdata/kyverno/chainsaw-yaml-signing/chainsaw-step-02-apply-1-1.yaml"),
        )
        .unwrap();
        let mut v = mansign::manifest::parse_documents(&text, &mansign::Limits::default())
            .unwrap()
            .remove(0)
            .1;
        v["metadata"]["namespace"] = json!("default");
        v
    };
    let mut unsigned = signed.clone();
    unsigned["metadata"]["annotations"] = json!({});
    let test_pod = pod("test-pod");
    let cases = [
        (&signed, "deployments", "alice", Outcome::Allowed),
        (&unsigned, "deployments", "alice", Outcome::Denied),
        (&test_pod, "pods", "alice", Outcome::Denied),
        (&test_pod, "pods", CONTROLLER, Outcome::NotMatched),
        (
            &test_pod,
            "pods",
            "system:serviceaccount:kube-system:deployment-controller",
            Outcome::Denied,
        ),
    ];
    for (object, resource, user, expected) in cases {
        for (which, set) in [("original", &original), ("converted", &converted)] {
            assert_eq!(
                webhook(set, object, resource, user),
                expected,
                "{which}: {} by {user}\n{yaml}",
                object["kind"]
            );
        }
    }
}

#[test]
fn policy_convert_drops_match_roles_with_a_note_and_refuses_exclude_roles() {
    let matched = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [Pod]\n    roles: [default:dev]\n",
        "failureAction: Enforce\n",
    );
    let conversion = convert_str(
        "p.yaml",
        &matched,
        Path::new(REPO),
        &ConvertOptions::default(),
    )
    .unwrap();
    common::assert_noted(&conversion.notes, &["match.any[0].roles", "dropped"]);
    let excluded = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [Pod]\nexclude:\n  any:\n  - clusterRoles: [cluster-admin]\n",
        "",
    );
    let err = convert_str(
        "p.yaml",
        &excluded,
        Path::new(REPO),
        &ConvertOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("exclude.any[0].clusterRoles") && err.contains("cannot exclude by role"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Item 11 and issue 27 item 2: the failure action in every spelling Kyverno accepts

#[test]
fn the_policys_validation_failure_action_is_read_in_every_spelling() {
    for (spelling, action) in [
        ("Enforce", FailureAction::Enforce),
        ("enforce", FailureAction::Enforce),
        ("Audit", FailureAction::Audit),
        ("audit", FailureAction::Audit),
    ] {
        let text = kyverno(
            &format!("validationFailureAction: {spelling}\n"),
            "match:\n  any:\n  - resources:\n      kinds: [PolicyException]\n",
            "",
        );
        let set = load(&text).unwrap();
        assert_eq!(set.rules[0].failure_action.default, action, "{spelling}");
        let text_out = explain_text(&set);
        let json_out = explain_json(&set).to_string();
        for out in [&text_out, &json_out] {
            assert!(!out.contains("no failureAction named"), "{spelling}: {out}");
        }
        let expected = match action {
            FailureAction::Enforce => "the webhook denies the request",
            _ => "the webhook allows it with a warning (Audit)",
        };
        assert!(text_out.contains(expected), "{spelling}: {text_out}");
        let outcome = webhook(
            &set,
            &exception("kyverno.io/v2", "default"),
            "policyexceptions",
            "mallory",
        );
        let wanted = match action {
            FailureAction::Enforce => Outcome::Denied,
            _ => Outcome::AuditWarned,
        };
        assert_eq!(outcome, wanted, "{spelling}");
    }
    // Named nowhere: Kyverno would audit, mansign enforces, and explain says so.
    let text = kyverno(
        "",
        "match:\n  any:\n  - resources:\n      kinds: [PolicyException]\n",
        "",
    );
    let set = load(&text).unwrap();
    assert!(explain_text(&set).contains("no failureAction named"));
}
