//! One rule walk: the webhook's review (cold, and answered from the cache) and the policy
//! evaluation `mansign verify --policy` runs must agree on every admission test object,
//! verdict AND reason. Objects: the Kyverno unit-test AdmissionReviews
//! (testdata/kyverno/unit-validate-manifest/admissionreview-wrapped), the bodies recorded
//! from kube-apiserver (testdata/cluster/recorded), and objects signed here with a fresh key
//! (signed, tampered, unsigned; namespaced and cluster-scoped) under each policy kind
//! (`ManifestPolicy`, Kyverno `ClusterPolicy`, Kyverno namespaced `Policy`), under Enforce,
//! Audit, per-namespace overrides, several rules and an unresolved key reference.
//!
//! The policy side is the library call of the CLI's evaluation
//! ([`PolicySet::verify_document`], what `mansign verify --policy` runs per document) with
//! the request's context (operation, user, the API server's namespace); the expected
//! admission decision is derived from its per-rule verdicts with the wording rules of
//! docs/admission.md (an enforced failure denies, naming `reason [code] (policy P, rule R)`;
//! an audited one warns; otherwise `verified: signers`). Requests the webhook decides before
//! any rule is walked (skipped operations, subresources, a status-only write) are checked
//! to be exactly those.

use crate::common;
use crate::common::admission_fixture;

use admission_fixture::{Key, key, review_body, sign, with_server_metadata};
use mansign::admission::{Decision, Outcome, ReviewOptions, Reviewer};
use mansign::manifest::{Document, DocumentOrigin, IgnoreFields, Source};
use mansign::policy::{
    FailureAction, LoadOptions, ObjectVerdict, PolicySet, RequestContext, UserInfo, load_str,
};
use mansign::trust::TrustRoot;
use mansign::verify::SignerInfo;
use serde_json::{Value, json};
use std::sync::Arc;

/// One policy, as text: loaded afresh for every cold review (clones of a loaded set share
/// their verifiers' caches).
struct Policy {
    name: String,
    text: String,
    options: fn() -> LoadOptions,
}

impl Policy {
    fn load(&self) -> PolicySet {
        load_str(&self.name, &self.text, ".".as_ref(), &(self.options)())
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", self.name, self.text))
    }
}

/// What the webhook decided, as compared.
#[derive(Debug, PartialEq, Eq)]
struct Decided {
    outcome: Outcome,
    reason_code: Option<String>,
    message: String,
    signers: Vec<String>,
}

impl From<&Decision> for Decided {
    fn from(d: &Decision) -> Self {
        Decided {
            outcome: d.outcome,
            reason_code: d.reason_code.clone(),
            message: d.message.clone(),
            signers: d.signers.clone(),
        }
    }
}

/// `subject (issuer)`, `key NAME (sha256:…)`, `certificate SUBJECT (sha256:…)`: the signer
/// names of a decision (docs/admission.md).
fn signer_label(signer: &SignerInfo) -> String {
    let short = |f: &str| f.chars().take(16).collect::<String>();
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
        // (SignerInfo may become `#[non_exhaustive]`.)
        #[allow(unreachable_patterns)]
        other => panic!("a signer this test does not name: {other:?}"),
    }
}

/// The decision the policy evaluation's verdict means for an admission request.
fn expected(verdict: &ObjectVerdict) -> Decided {
    if verdict.no_rule_applies() {
        return Decided {
            outcome: Outcome::NotMatched,
            reason_code: None,
            message: "no policy rule applies to this object".into(),
            signers: Vec::new(),
        };
    }
    let mut signers: Vec<String> = Vec::new();
    let mut enforced = Vec::new();
    let mut audited = Vec::new();
    for rule in &verdict.rules {
        match &rule.verdict.result {
            Ok(verified) => {
                let found: Vec<String> = if verified.entries.is_empty() {
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
            Err(rejection) => {
                let failure = (
                    rejection.code(),
                    format!(
                        "{rejection} [{}] (policy {}, rule {})",
                        rejection.code(),
                        rule.policy,
                        rule.rule
                    ),
                );
                if rule.action == FailureAction::Enforce {
                    enforced.push(failure);
                } else {
                    audited.push(failure);
                }
            }
        }
    }
    let joined = |f: &[(&str, String)]| {
        f.iter()
            .map(|(_, m)| m.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    for (failures, outcome) in [
        (&enforced, Outcome::Denied),
        (&audited, Outcome::AuditWarned),
    ] {
        if let Some((code, _)) = failures.first() {
            return Decided {
                outcome,
                reason_code: Some(code.to_string()),
                message: joined(failures),
                signers,
            };
        }
    }
    Decided {
        outcome: Outcome::Allowed,
        reason_code: None,
        message: format!("verified: {}", signers.join(", ")),
        signers,
    }
}

/// The policy side: the request's object as the API server gives it (the request's
/// namespace filled in; a Namespace has none), evaluated like `mansign verify --policy`
/// evaluates a document, in the request's context. `None` for a request the webhook
/// decides before walking any rule.
fn policy_side(policy: &PolicySet, body: &[u8]) -> Option<(ObjectVerdict, Option<IgnoreFields>)> {
    let review: Value = serde_json::from_slice(body).unwrap();
    let request = &review["request"];
    let operation = request["operation"].as_str().unwrap();
    if !matches!(operation, "CREATE" | "UPDATE") {
        return None;
    }
    let (group, kind) = (
        request["kind"]["group"].as_str().unwrap_or_default(),
        request["kind"]["kind"].as_str().unwrap_or_default(),
    );
    let mut unverified = None;
    if let Some(sub) = request["subResource"].as_str().filter(|s| !s.is_empty()) {
        if sub != "status" {
            return None;
        }
        unverified = Some(mansign::admission::status_write::unverified_fields(
            group, kind,
        )?);
    }
    let mut object = request["object"].clone();
    let is_namespace =
        request["resource"]["group"] == "" && request["resource"]["resource"] == "namespaces";
    if let Some(ns) = request["namespace"].as_str().filter(|n| !n.is_empty())
        && !is_namespace
    {
        let meta = object["metadata"].as_object_mut().unwrap();
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                meta.insert("namespace".into(), json!(ns));
            }
            Some(claimed) => assert_eq!(claimed, ns, "a namespace conflict is not compared"),
        }
    }
    let ctx = RequestContext {
        operation: Some(operation.to_string()),
        user: Some(UserInfo {
            username: request["userInfo"]["username"]
                .as_str()
                .unwrap_or_default()
                .into(),
            groups: request["userInfo"]["groups"]
                .as_array()
                .map(|g| g.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                .unwrap_or_default(),
            roles: None,
            cluster_roles: None,
        }),
        namespace_known: true,
        any_version: true,
    };
    let origin = DocumentOrigin {
        source: Source::Named("request.object".into()),
        index: 0,
        item: None,
    };
    let doc = Document::new(origin, object).expect("a Kubernetes object");
    Some((policy.verify_document(&doc, &ctx), unverified))
}

/// What one comparison found.
#[derive(Default)]
struct Tally {
    compared: usize,
    cached: usize,
    before_walk: usize,
    outcomes: Vec<Outcome>,
}

/// Runs `body` through the webhook (a cold reviewer, then the same reviewer answering from
/// its cache) and through the policy evaluation; panics naming `what` on any difference.
fn compare(what: &str, policy: &Policy, body: &[u8], tally: &mut Tally) {
    let reviewer = Reviewer::new(policy.load(), ReviewOptions::default());
    let cold = reviewer.review(body);
    let cold_decided = Decided::from(&cold.decision);
    let cached = reviewer.review_cached(body);
    if let Some(cached) = &cached {
        assert_eq!(
            Decided::from(&cached.decision),
            cold_decided,
            "{what} under {}: the cached review differs from the cold one",
            policy.name
        );
        assert_eq!(cached.response, cold.response, "{what}: cached response");
        tally.cached += 1;
    }
    match policy_side(&policy.load(), body) {
        None => {
            assert!(
                matches!(cold.decision.outcome, Outcome::Skipped)
                    || cold.decision.reason_code.as_deref() == Some("subresource"),
                "{what} under {}: decided before any rule, but {:?}",
                policy.name,
                cold.decision
            );
            tally.before_walk += 1;
        }
        Some((verdict, unverified)) => {
            let verdict = match unverified {
                // A status write: the policy side compares without the fields the kind's
                // status strategy takes from the stored object.
                Some(fields) => status_write_verdict(policy, body, fields),
                None => verdict,
            };
            let want = expected(&verdict);
            assert_eq!(
                cold_decided, want,
                "{what} under {}: the webhook and `verify --policy` disagree\npolicy side:\n{verdict}",
                policy.name
            );
            tally.compared += 1;
            tally.outcomes.push(want.outcome);
        }
    }
}

/// The policy side of a `status` write: every rule's verifier without the fields the
/// status strategy leaves unverified (the webhook's rule for such writes).
fn status_write_verdict(policy: &Policy, body: &[u8], unverified: IgnoreFields) -> ObjectVerdict {
    let set = policy.load();
    let mut with_ignored = PolicySet {
        rules: Vec::new(),
        ..Default::default()
    };
    for mut rule in set.rules {
        rule.ignore.push(mansign::policy::IgnoreBinding {
            objects: Vec::new(),
            fields: unverified.0.clone(),
        });
        with_ignored.rules.push(rule);
    }
    policy_side(&with_ignored, body).unwrap().0
}

// ---------------------------------------------------------------------------------------
// Policies

fn key_block(pem: &str, indent: usize) -> String {
    pem.trim()
        .lines()
        .map(|l| format!("{}{l}\n", " ".repeat(indent)))
        .collect()
}

fn default_options() -> LoadOptions {
    LoadOptions::default()
}

/// A `ManifestPolicy` for `kinds` trusting `pem`, with `extra` spec lines.
fn manifest_policy(name: &str, kinds: &str, pem: &str, extra: &str) -> Policy {
    Policy {
        name: format!("{name}.yaml"),
        text: format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: {name}}}\n\
             spec:\n  match: {{kinds: [{kinds}]}}\n  ignoreProfile: kubernetes\n{extra}  attestors:\n  - entries:\n    - keys:\n        publicKeys: |\n{}",
            key_block(pem, 10)
        ),
        options: default_options,
    }
}

/// A Kyverno policy (`kind` ClusterPolicy or Policy, `namespace` for a Policy) with one
/// manifests rule per `(rule name, validate extra)`; `spec_extra` indented two spaces.
fn kyverno_policy(
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    kinds: &str,
    pem: &str,
    spec_extra: &str,
    rules: &[(&str, &str)],
) -> Policy {
    let ns = namespace.map_or(String::new(), |n| format!("  namespace: {n}\n"));
    let rules: String = rules
        .iter()
        .map(|(rule, validate_extra)| {
            format!(
                "  - name: {rule}\n    match:\n      any:\n      - resources:\n          kinds: [{kinds}]\n    validate:\n{validate_extra}      manifests:\n        ignoreFields:\n        - objects: [{{kind: \"*\"}}]\n          fields: [metadata.managedFields, metadata.uid, metadata.creationTimestamp, metadata.resourceVersion, metadata.generation]\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n{}",
                key_block(pem, 18)
            )
        })
        .collect();
    Policy {
        name: format!("{name}.yaml"),
        text: format!(
            "apiVersion: kyverno.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\n{ns}spec:\n{spec_extra}  rules:\n{rules}"
        ),
        options: default_options,
    }
}

// ---------------------------------------------------------------------------------------
// Generated objects

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  mode: strict\n";
const CONFIG_MAP_NO_NS: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: floating\ndata:\n  mode: strict\n";
const NAMESPACE: &str =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels:\n    team: a\n";
const CLUSTER_ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n";

/// An object with `data`/`labels` changed after signing.
fn tampered(object: &Value) -> Value {
    let mut v = object.clone();
    if v.get("data").is_some() {
        v["data"]["mode"] = json!("lax");
    } else {
        v["metadata"]["labels"] = json!({"team": "mallory"});
    }
    v
}

fn unsigned(object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("annotations");
    }
    v
}

/// Every generated object: (what, object), each as it arrives (server metadata added).
fn generated(signer: &Key, other: &Key) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (name, text) in [
        ("configmap", CONFIG_MAP),
        ("configmap-without-namespace", CONFIG_MAP_NO_NS),
        ("namespace", NAMESPACE),
        ("clusterrole", CLUSTER_ROLE),
    ] {
        let signed = sign(signer, text).remove(0);
        let by_other = sign(other, text).remove(0);
        for (variant, object) in [
            ("signed", signed.clone()),
            ("tampered", tampered(&signed)),
            ("unsigned", unsigned(&signed)),
            ("signed by another key", by_other),
        ] {
            out.push((
                format!("{name} {variant}"),
                with_server_metadata(&object, false),
            ));
        }
    }
    out
}

/// A request body for `object`; a ConfigMap without a namespace goes to `team-b`.
fn body_for(object: &Value, operation: &str) -> Vec<u8> {
    let mut body: Value = serde_json::from_slice(&review_body(object, operation, None)).unwrap();
    if object["kind"] == "ConfigMap" && object["metadata"].get("namespace").is_none() {
        body["request"]["namespace"] = json!("team-b");
    }
    serde_json::to_vec(&body).unwrap()
}

#[test]
fn webhook_and_verify_policy_agree_on_generated_objects_under_every_policy_kind() {
    let signer = key();
    let other = key();
    let pem = &signer.public_key_pem;
    let all = "ConfigMap, Namespace, ClusterRole";
    let policies = vec![
        manifest_policy("enforce", all, pem, ""),
        manifest_policy("audit", all, pem, "  failureAction: Audit\n"),
        manifest_policy(
            "pinned",
            "v1/ConfigMap, rbac.authorization.k8s.io/v1/ClusterRole",
            pem,
            "",
        ),
        kyverno_policy(
            "ClusterPolicy",
            None,
            "cluster-enforce",
            all,
            pem,
            "  validationFailureAction: Enforce\n",
            &[("manifests", "")],
        ),
        kyverno_policy(
            "ClusterPolicy",
            None,
            "cluster-audit-overrides",
            all,
            pem,
            "  validationFailureAction: Audit\n  validationFailureActionOverrides:\n  - action: Enforce\n    namespaces: [team-a]\n",
            &[("manifests", "")],
        ),
        kyverno_policy(
            "ClusterPolicy",
            None,
            "two-rules",
            all,
            pem,
            "",
            &[
                ("audited", "      failureAction: Audit\n"),
                ("enforced", "      failureAction: Enforce\n"),
            ],
        ),
        kyverno_policy(
            "Policy",
            Some("team-a"),
            "namespaced",
            "ConfigMap",
            pem,
            "  validationFailureAction: Enforce\n",
            &[("manifests", "")],
        ),
        // A key reference nobody resolved: every matched object is denied, even in Audit.
        Policy {
            name: "unresolved.yaml".into(),
            text: "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: unresolved\nspec:\n  validationFailureAction: Audit\n  rules:\n  - name: manifests\n    match:\n      any:\n      - resources:\n          kinds: [ConfigMap]\n    validate:\n      manifests:\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: k8s://mansign-system/release-key\n".into(),
            options: default_options,
        },
    ];
    let objects = generated(&signer, &other);
    let mut tally = Tally::default();
    for policy in &policies {
        for (what, object) in &objects {
            for operation in ["CREATE", "UPDATE", "DELETE"] {
                compare(
                    &format!("{operation} {what}"),
                    policy,
                    &body_for(object, operation),
                    &mut tally,
                );
            }
        }
    }
    eprintln!(
        "compared {} requests ({} also answered from the cache), {} decided before any rule",
        tally.compared, tally.cached, tally.before_walk
    );
    for outcome in [
        Outcome::Allowed,
        Outcome::Denied,
        Outcome::AuditWarned,
        Outcome::NotMatched,
    ] {
        assert!(
            tally.outcomes.contains(&outcome),
            "no generated request was {outcome:?}: the comparison does not cover it"
        );
    }
    assert!(tally.cached > 0, "no answer came from the cache");
    assert!(tally.before_walk > 0);
}

// ---------------------------------------------------------------------------------------
// The Kyverno unit-test AdmissionReviews and the recorded API server bodies

/// The Kyverno fixtures' public-good root (the media type mansign requires added).
// Default then fields: the form that stays valid once the option structs are non-exhaustive.
#[allow(clippy::field_reassign_with_default)]
fn kyverno_options() -> LoadOptions {
    let mut root: Value = serde_json::from_str(
        &std::fs::read_to_string(common::fixture(
            "kyverno/trust-root/sigstore-public-trusted_root.json",
        ))
        .unwrap(),
    )
    .unwrap();
    root["mediaType"] = "application/vnd.dev.sigstore.trustedroot+json;version=0.1".into();
    let mut options = LoadOptions::default();
    options.trust_root = Some(Arc::new(TrustRoot::from_json(&root.to_string()).unwrap()));
    options
}

fn kyverno_unit_policy(name: &str, action: &str) -> Policy {
    let pem = std::fs::read_to_string(common::fixture("kyverno/keys/ecdsa-pub-1.pem")).unwrap();
    Policy {
        name: format!("{name}.yaml"),
        text: format!(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: {name}\nspec:\n  validationFailureAction: {action}\n  rules:\n  - name: manifests\n    match:\n      any:\n      - resources:\n          kinds: [ConfigMap, Service]\n    validate:\n      manifests:\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n{}",
            key_block(&pem, 18)
        ),
        options: kyverno_options,
    }
}

#[test]
fn webhook_and_verify_policy_agree_on_the_kyverno_admission_reviews() {
    let dir = common::fixture("kyverno/unit-validate-manifest/admissionreview-wrapped");
    let mut bodies: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    bodies.sort();
    assert_eq!(bodies.len(), 5, "the five Kyverno AdmissionReviews");
    let mut tally = Tally::default();
    for policy in [
        kyverno_unit_policy("enforce", "Enforce"),
        kyverno_unit_policy("audit", "Audit"),
    ] {
        for path in &bodies {
            let body = std::fs::read(path).unwrap();
            compare(&path.display().to_string(), &policy, &body, &mut tally);
        }
    }
    assert_eq!(tally.compared, 10);
    for outcome in [Outcome::Allowed, Outcome::Denied, Outcome::AuditWarned] {
        assert!(tally.outcomes.contains(&outcome), "{outcome:?} not covered");
    }
}

#[test]
fn webhook_and_verify_policy_agree_on_the_recorded_api_server_bodies() {
    let recorded = |f: &str| common::fixture(&format!("cluster/recorded/{f}"));
    let read = |f: &str| std::fs::read_to_string(recorded(f)).unwrap();
    let namespace_key = read("namespace-create.pub");
    let service_key = read("services-status-update.pub");
    let cases = [
        (
            "namespace-create.json",
            manifest_policy("namespaces", "v1/Namespace", &namespace_key, ""),
        ),
        (
            "namespace-create.json",
            manifest_policy("wrong-key", "v1/Namespace", &service_key, ""),
        ),
        (
            "services-status-update.json",
            manifest_policy("services", "v1/Service", &service_key, ""),
        ),
        (
            "services-status-update.json",
            manifest_policy(
                "services-audit",
                "v1/Service",
                &service_key,
                "  failureAction: Audit\n",
            ),
        ),
        (
            "pods-status-update.json",
            manifest_policy("pods", "v1/Pod", &service_key, ""),
        ),
    ];
    let mut tally = Tally::default();
    for (file, policy) in &cases {
        let body = std::fs::read(recorded(file)).unwrap();
        compare(file, policy, &body, &mut tally);
    }
    assert_eq!(
        tally.compared,
        cases.len(),
        "every recorded write walks the rules"
    );
    for outcome in [Outcome::Allowed, Outcome::Denied, Outcome::AuditWarned] {
        assert!(tally.outcomes.contains(&outcome), "{outcome:?} not covered");
    }
}
