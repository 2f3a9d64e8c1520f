//! Policy files: Kyverno `validate.manifests` policies loaded unchanged, and mansign's own
//! `ManifestPolicy`, give the verdicts of the Kyverno fixtures
//! (`testdata/kyverno/README.md`).
//!
//! Fixtures: testdata/kyverno (provenance in testdata/README.md); a missing one fails.

use crate::common;

use mansign::policy::{
    LoadOptions, ObjectVerdict, PolicyError, PolicySet, RequestContext, load_file, load_str,
};
use mansign::trust::TrustRoot;
use mansign::verify::Rejection;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/kyverno");

/// `testdata/kyverno/<rel>`; a missing fixture fails the test.
fn fixture(rel: &str) -> PathBuf {
    let p = Path::new(FIXTURES).join(rel);
    assert!(p.exists(), "fixture testdata/kyverno/{rel} is missing");
    p
}

/// The public-good `trusted_root.json` copied into the fixtures, as JSON a current parser
/// takes: the copy predates the `mediaType` field, which is added here.
fn fixture_trusted_root_json() -> String {
    let path = fixture("trust-root/sigstore-public-trusted_root.json");
    let mut root: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    root["mediaType"] = "application/vnd.dev.sigstore.trustedroot+json;version=0.1".into();
    root.to_string()
}

/// Loads with the fixtures' public-good trusted root (deterministic: not the developer's
/// cached root).
fn options() -> LoadOptions {
    let root = TrustRoot::from_json(&fixture_trusted_root_json()).unwrap();
    LoadOptions::default().with_trust_root(Arc::new(root))
}

fn policy_file(rel: &str) -> PolicySet {
    load_file(&fixture(rel), &options()).unwrap()
}

fn policy_text(text: &str) -> Result<PolicySet, PolicyError> {
    load_str("test-policy.yaml", text, Path::new(FIXTURES), &options())
}

/// The verdict for the only document of a fixture file.
fn verdict_for_file(policy: &PolicySet, rel: &str) -> ObjectVerdict {
    let path = fixture(rel);
    let docs = common::load_documents(&path);
    assert_eq!(docs.len(), 1, "{rel}");
    policy.verify_document(&docs[0], &RequestContext::default())
}

/// `request.object` of an extracted Kyverno unit-test AdmissionRequest.
fn admission_object(rel: &str) -> Value {
    let path = fixture(rel);
    let request: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    request["object"].clone()
}

/// A key from the fixtures.
fn pem(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

/// Indents a PEM for a YAML block scalar at `spaces`.
fn block(pem: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    pem.trim()
        .lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn failure(v: &ObjectVerdict) -> String {
    assert_eq!(v.rules.len(), 1, "{v}");
    match &v.rules[0].verdict.result {
        Ok(_) => panic!("expected a failure: {v}"),
        Err(e) => e.to_string(),
    }
}

/// The signature set each entry of the first rule was verified by.
fn signature_sets(v: &ObjectVerdict) -> Vec<usize> {
    let verified = v.rules[0].verdict.result.as_ref().unwrap();
    verified.entries.iter().map(|e| e.signature_set).collect()
}

/// The error's message names each of `words`.
fn names_each(err: &PolicyError, words: &[&str]) {
    let msg = err.to_string();
    for w in words {
        assert!(msg.contains(w), "{w}: {msg}");
    }
}

// ---------------------------------------------------------------------------------------
// Kyverno chainsaw `verify-manifests/single-signature`: count 1 over [K1, K2]

const SINGLE: &str = "chainsaw-verify-manifests/single-signature";
const MULTI: &str = "chainsaw-verify-manifests/multi-signatures";

fn chainsaw(dir: &str, resource: &str) -> ObjectVerdict {
    let policy = policy_file(&format!("{dir}/policy.yaml"));
    verdict_for_file(&policy, &format!("{dir}/resource-{resource}.yaml"))
}

#[test]
fn single_signature_policy_denies_unsigned_service() {
    let v = chainsaw(SINGLE, "no-signature");
    assert!(!v.is_verified());
    assert!(
        failure(&v).contains("cosign.sigstore.dev/message is missing"),
        "{v}"
    );
}

#[test]
fn single_signature_policy_allows_service_signed_by_k2_only() {
    let v = chainsaw(SINGLE, "one-signature");
    assert!(v.is_verified(), "{v}");
    let verified = v.rules[0].verdict.result.as_ref().unwrap();
    assert_eq!(verified.entries.len(), 1);
    assert_eq!(
        verified.entries[0].entry.to_string(),
        "attestors[0].entries[1]"
    );
}

#[test]
fn single_signature_policy_allows_service_signed_by_k1_and_k2() {
    let v = chainsaw(SINGLE, "two-signatures");
    assert!(v.is_verified(), "{v}");
}

#[test]
fn single_signature_policy_denies_tampered_service_naming_spec_selector_app() {
    let v = chainsaw(SINGLE, "bad-signatures");
    assert!(!v.is_verified());
    assert!(matches!(
        v.rules[0].verdict.result,
        Err(Rejection::Modified { .. })
    ));
    assert!(failure(&v).contains("spec.selector.app"), "{v}");
}

// Kyverno chainsaw `verify-manifests/multi-signatures`: no count, so K1 and K2 both needed

#[test]
fn multi_signatures_policy_denies_unsigned_service() {
    let v = chainsaw(MULTI, "no-signature");
    assert!(!v.is_verified());
}

#[test]
fn multi_signatures_policy_denies_service_signed_by_k2_only() {
    let v = chainsaw(MULTI, "one-signature");
    assert!(!v.is_verified());
    let reason = failure(&v);
    assert!(reason.contains("1 of 2 required entries"), "{reason}");
    assert!(reason.contains("attestors[0].entries[0]"), "{reason}");
}

#[test]
fn multi_signatures_policy_allows_service_signed_by_k1_and_k2() {
    let v = chainsaw(MULTI, "two-signatures");
    assert!(v.is_verified(), "{v}");
    assert_eq!(signature_sets(&v), [0, 1]);
}

#[test]
fn multi_signatures_policy_denies_tampered_service() {
    let v = chainsaw(MULTI, "bad-signatures");
    assert!(!v.is_verified());
    assert!(failure(&v).contains("spec.selector.app"), "{v}");
}

// Kyverno CLI test `manifests/verify-signature`: two rules in one ClusterPolicy

fn rule_result(v: &ObjectVerdict, rule: &str) -> bool {
    v.rules
        .iter()
        .find(|r| r.rule == rule)
        .unwrap_or_else(|| panic!("rule {rule} did not apply: {v}"))
        .verdict
        .is_verified()
}

#[test]
fn cli_verify_signature_rules_give_the_kyverno_test_results() {
    let policy = policy_file("cli-verify-signature/policies.yaml");
    let path = fixture("cli-verify-signature/resources.yaml");
    let docs = common::load_documents(&path);
    let verdicts: Vec<ObjectVerdict> = docs
        .iter()
        .map(|d| policy.verify_document(d, &RequestContext::default()))
        .collect();
    let by_name = |name: &str| {
        verdicts
            .iter()
            .find(|v| v.object.name == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    // kyverno-test.yaml: test-service/validate-yaml fail, test-service2/validate-yaml pass,
    // test-service3/validate-yaml-multi-sig pass.
    assert!(!rule_result(by_name("test-service"), "validate-yaml"));
    assert!(rule_result(by_name("test-service2"), "validate-yaml"));
    assert!(rule_result(
        by_name("test-service3"),
        "validate-yaml-multi-sig"
    ));
    // Both rules match every Service; all must pass: test-service2 (K2 only) is not
    // verified as an object because the multi-sig rule needs K1 too.
    assert!(!by_name("test-service2").is_verified());
    assert!(by_name("test-service3").is_verified());
}

// Kyverno chainsaw `validate/e2e/yaml-signing`: Deployment signed by K1

#[test]
fn yaml_signing_policy_allows_deployment_signed_by_k1_and_denies_unsigned() {
    let policy = policy_file("chainsaw-yaml-signing/policy.yaml");
    let v = verdict_for_file(
        &policy,
        "chainsaw-yaml-signing/chainsaw-step-02-apply-1-1.yaml",
    );
    assert!(v.is_verified(), "{v}");
    let v = verdict_for_file(&policy, "chainsaw-yaml-signing/bad.yaml");
    assert!(!v.is_verified(), "{v}");
}

#[test]
fn objects_no_rule_applies_to_are_not_verified() {
    let policy = policy_file(&format!("{SINGLE}/policy.yaml"));
    let cm: Value = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}
    });
    let v = policy
        .verify_object(&cm, &RequestContext::default())
        .unwrap();
    assert!(v.no_rule_applies());
    assert!(!v.is_verified());
    assert!(v.to_string().contains("no policy rule applies"), "{v}");
}

// ---------------------------------------------------------------------------------------
// Kyverno unit tests (`validate_manifest_test.go`): request.object of the AdmissionRequests

/// A ClusterPolicy for ConfigMaps and Services in the Kyverno unit-test shape.
fn unit_policy(attestors: &str) -> PolicySet {
    let text = common::kyverno_unit_policy_with_attestors(
        "",
        "ConfigMap, Service",
        "",
        "",
        &format!("{attestors}\n"),
    );
    policy_text(&text).unwrap()
}

fn key_entry(rel: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!(
        "{pad}- keys:\n{pad}    publicKeys: |-\n{}",
        block(&pem(rel), indent + 6)
    )
}

fn k1_only() -> String {
    format!(
        "        - entries:\n{}",
        key_entry("keys/ecdsa-pub-1.pem", 10)
    )
}

fn unit_verdict(policy: &PolicySet, request: &str) -> ObjectVerdict {
    let object = admission_object(&format!("unit-validate-manifest/{request}-adreq.json"));
    policy
        .verify_object(&object, &RequestContext::default())
        .unwrap()
}

#[test]
fn unit_signed_configmap_is_allowed() {
    let policy = unit_policy(&k1_only());
    let v = unit_verdict(&policy, "signed");
    assert!(v.is_verified(), "{v}");
}

#[test]
fn unit_unsigned_configmap_is_denied() {
    let policy = unit_policy(&k1_only());
    let v = unit_verdict(&policy, "unsigned");
    assert!(!v.is_verified(), "{v}");
}

#[test]
fn unit_tampered_configmap_is_denied_naming_data_key3() {
    let policy = unit_policy(&k1_only());
    let v = unit_verdict(&policy, "invalid");
    assert!(!v.is_verified());
    assert!(failure(&v).contains("data.key3 added"), "{v}");
}

fn k1_k2(count: Option<usize>) -> String {
    let count = count
        .map(|c| format!("          count: {c}\n"))
        .unwrap_or_default();
    format!(
        "        - entries:\n{}\n{}\n{count}",
        key_entry("keys/ecdsa-pub-1.pem", 10),
        key_entry("keys/ecdsa-pub-2.pem", 10)
    )
}

#[test]
fn unit_service_signed_by_k1_is_denied_when_k1_and_k2_are_both_required() {
    let policy = unit_policy(&k1_k2(None));
    let v = unit_verdict(&policy, "multi-sig");
    assert!(!v.is_verified());
    let reason = failure(&v);
    assert!(reason.contains("attestors[0].entries[1]"), "{reason}");
}

#[test]
fn unit_service_with_server_defaults_signed_by_k1_is_allowed_with_count_1() {
    // The object carries clusterIP, ipFamilies, type: ClusterIP... and namespace test-ns,
    // none of them signed: the Kyverno loader's anchored `kubernetes` tolerances accept
    // exactly these server additions.
    let policy = unit_policy(&k1_k2(Some(1)));
    let v = unit_verdict(&policy, "multi-sig");
    assert!(v.is_verified(), "{v}");
}

#[test]
fn unit_count_3_over_k1_k2_and_nested_k1_is_denied_because_each_signer_counts_once() {
    // Upstream Test_VerifyManifest_MustAll_ValidYAML passes this: Kyverno counts entries, so
    // K1's one signature satisfies both the K1 entry and the nested set. mansign counts
    // distinct signers: two signatures cannot make a count of three. Deliberately stricter
    // (docs/policy.md, "count").
    let attestors = format!(
        "        - count: 3\n          entries:\n{}\n{}\n          - attestor:\n              entries:\n{}\n",
        key_entry("keys/ecdsa-pub-1.pem", 10),
        key_entry("keys/ecdsa-pub-2.pem", 10),
        key_entry("keys/ecdsa-pub-1.pem", 14),
    );
    let policy = unit_policy(&attestors);
    common::assert_noted(&policy.notes, &["names the same signer as"]);
    let v = unit_verdict(&policy, "multi-sig2");
    assert!(!v.is_verified(), "{v}");
    let err = failure(&v);
    assert!(err.contains("2 of 3 required entries verified"), "{err}");
    assert!(err.contains("each signer counts once"), "{err}");
}

#[test]
fn unit_count_2_over_k1_k2_is_satisfied_by_two_distinct_signers() {
    let attestors = format!(
        "        - count: 2\n          entries:\n{}\n{}\n",
        key_entry("keys/ecdsa-pub-1.pem", 10),
        key_entry("keys/ecdsa-pub-2.pem", 10),
    );
    let policy = unit_policy(&attestors);
    assert!(policy.notes.is_empty(), "{:?}", policy.notes);
    let v = unit_verdict(&policy, "multi-sig2");
    assert!(v.is_verified(), "{v}");
    let verified = v.rules[0].verdict.result.as_ref().unwrap();
    let entries: Vec<String> = verified
        .entries
        .iter()
        .map(|e| e.entry.to_string())
        .collect();
    assert_eq!(
        entries,
        ["attestors[0].entries[0]", "attestors[0].entries[1]"]
    );
}

#[test]
fn several_keys_in_one_public_keys_are_one_entry_each() {
    // Kyverno's ExpandStaticKeys: `publicKeys` with K1 and K2 and no count needs both.
    let keys = format!(
        "{}\n{}",
        pem("keys/ecdsa-pub-1.pem").trim(),
        pem("keys/ecdsa-pub-2.pem").trim()
    );
    let attestors = format!(
        "        - entries:\n          - keys:\n              publicKeys: |-\n{}\n",
        block(&keys, 16)
    );
    let policy = unit_policy(&attestors);
    let v = unit_verdict(&policy, "multi-sig");
    assert!(!v.is_verified());
    assert!(failure(&v).contains("1 of 2 required entries"), "{v}");
    let v = unit_verdict(&policy, "multi-sig2");
    assert!(v.is_verified(), "{v}");
}

#[test]
fn server_default_tolerance_does_not_accept_another_service_type() {
    // `type: ClusterIP` is tolerated when unsigned; `LoadBalancer` is not.
    let policy = unit_policy(&k1_k2(Some(1)));
    let mut object = admission_object("unit-validate-manifest/multi-sig-adreq.json");
    object["spec"]["type"] = "LoadBalancer".into();
    let v = policy
        .verify_object(&object, &RequestContext::default())
        .unwrap();
    assert!(!v.is_verified());
    assert!(failure(&v).contains("spec.type"), "{v}");
}

#[test]
fn namespaced_kyverno_policy_applies_only_in_its_namespace() {
    let policy = |ns: &str| {
        policy_text(&format!(
            "apiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {{name: p, namespace: {ns}}}\nspec:\n  rules:\n  - name: r\n    match: {{any: [{{resources: {{kinds: [Service]}}}}]}}\n    validate:\n      manifests:\n        attestors:\n{}\n",
            k1_only()
        ))
        .unwrap()
    };
    let object = admission_object("unit-validate-manifest/multi-sig-adreq.json");
    let ctx = RequestContext::default();
    assert!(
        policy("test-ns")
            .verify_object(&object, &ctx)
            .unwrap()
            .is_verified()
    );
    let elsewhere = policy("other").verify_object(&object, &ctx).unwrap();
    assert!(elsewhere.no_rule_applies());
    assert!(!elsewhere.is_verified());
}

#[test]
fn mansign_policy_binds_unnamespaced_signatures_only_where_listed() {
    let object = admission_object("unit-validate-manifest/multi-sig-adreq.json");
    let policy = |ns: &str| {
        policy_text(&format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: p}}\nspec:\n  ignoreProfile: kubernetes\n  namespaceBinding: [{ns}]\n  attestors:\n  - entries: [{K1}]\n"
        ))
        .unwrap()
    };
    let ctx = RequestContext::default();
    let v = policy("test-ns").verify_object(&object, &ctx).unwrap();
    assert!(v.is_verified(), "{v}");
    let v = policy("other-ns").verify_object(&object, &ctx).unwrap();
    assert!(!v.is_verified());
    assert!(failure(&v).contains("metadata.namespace added"), "{v}");
}

// ---------------------------------------------------------------------------------------
// Fields mansign cannot honour are refused, naming the field

/// A Kyverno ClusterPolicy `name` with one rule `r` for `kind` objects that trusts the key
/// keys/ecdsa-pub-1.pem; the extras (whole lines) go at spec level, into `validate`, into
/// `manifests` and into the key entry.
fn k1_policy(name: &str, kind: &str, extras: [&str; 4]) -> String {
    let [spec_extra, validate_extra, manifests_extra, entry_extra] = extras;
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {{name: {name}}}
spec:
{spec_extra}  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [{kind}]
    validate:
{validate_extra}      manifests:
{manifests_extra}        attestors:
        - entries:
          - keys:
{entry_extra}              publicKeys: |-
{}
",
        block(&pem("keys/ecdsa-pub-1.pem"), 16)
    )
}

fn refusal(manifests_extra: &str, entry_extra: &str) -> PolicyError {
    let text = k1_policy("refused", "Service", ["", "", manifests_extra, entry_extra]);
    policy_text(&text).unwrap_err()
}

#[test]
fn enabled_dry_run_is_refused_naming_the_field() {
    let err = refusal("        dryRun:\n          enable: true\n", "");
    assert!(matches!(err, PolicyError::DryRun { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("spec.rules[0].validate.manifests.dryRun.enable"),
        "{err}"
    );
}

#[test]
fn disabled_dry_run_is_accepted() {
    let text = format!(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {{name: p}}\nspec:\n  rules:\n  - name: r\n    match: {{any: [{{resources: {{kinds: [Service]}}}}]}}\n    validate:\n      manifests:\n        dryRun: {{enable: false, namespace: x}}\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n{}\n",
        block(&pem("keys/ecdsa-pub-1.pem"), 16)
    );
    assert!(policy_text(&text).is_ok());
}

#[test]
fn oci_repository_is_refused_naming_the_field() {
    let err = refusal("        repository: ghcr.io/acme/bundle:v1\n", "");
    assert!(matches!(err, PolicyError::Repository { .. }), "{err}");
    assert!(
        err.to_string().contains("validate.manifests.repository"),
        "{err}"
    );
}

#[test]
fn unknown_signature_algorithm_is_refused_naming_the_field() {
    let err = refusal("", "              signatureAlgorithm: sha512\n");
    assert!(
        matches!(err, PolicyError::SignatureAlgorithm { .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("attestors[0].entries[0].keys.signatureAlgorithm"),
        "{err}"
    );
}

#[test]
fn kms_key_reference_is_refused_naming_the_field() {
    let text =
        std::fs::read_to_string(common::fixture("policy-kyverno/kms-key-reference.yaml")).unwrap();
    let err = policy_text(&text).unwrap_err();
    assert!(matches!(err, PolicyError::KeyReference { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("attestors[0].entries[0].keys.publicKeys"),
        "{msg}"
    );
    assert!(msg.contains("gcpkms://projects/p"), "{msg}");
}

#[test]
fn unknown_field_in_manifests_is_refused_naming_it() {
    let err = refusal("        dryrun: {enable: true}\n", "");
    assert!(matches!(err, PolicyError::Syntax { .. }), "{err}");
    names_each(
        &err,
        &[
            "test-policy.yaml: document 1",
            "unknown field `dryrun`",
            "spec.rules[0].validate.manifests",
        ],
    );
}

#[test]
fn keyless_without_issuer_is_refused() {
    let text = std::fs::read_to_string(common::fixture(
        "policy-kyverno/keyless-without-issuer.yaml",
    ))
    .unwrap();
    let err = policy_text(&text).unwrap_err();
    assert!(err.to_string().contains("keyless needs issuer"), "{err}");
}

#[test]
fn rules_without_validate_manifests_are_skipped_with_a_note() {
    let text = format!(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {{name: p}}\nspec:\n  rules:\n  - name: labels\n    match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}\n    validate:\n      pattern: {{metadata: {{labels: {{app: '?*'}}}}}}\n  - name: signed\n    match: {{any: [{{resources: {{kinds: [Service]}}}}]}}\n    validate:\n      manifests:\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n{}\n",
        block(&pem("keys/ecdsa-pub-1.pem"), 16)
    );
    let policy = policy_text(&text).unwrap();
    assert_eq!(policy.rules.len(), 1);
    assert_eq!(policy.rules[0].rule, "signed");
    assert!(
        policy.notes[0].contains("\"labels\" skipped"),
        "{:?}",
        policy.notes
    );
}

// ---------------------------------------------------------------------------------------
// mansign ManifestPolicy: AND across sets, N-of-M, nesting, strict fields

fn mansign_policy(attestors: &str) -> PolicySet {
    let text = format!(
        "apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata:
  name: release
spec:
  match:
    kinds: [Service]
  attestors:
{attestors}
"
    );
    policy_text(&text).unwrap()
}

const K1: &str = "{keys: {path: keys/ecdsa-pub-1.pem}}";
const K2: &str = "{keys: {path: keys/ecdsa-pub-2.pem}}";
const T: &str = "{keys: {path: k8s-manifest-sigstore/testpub.pem}}";

fn mansign_verdict(attestors: &str, resource: &str) -> ObjectVerdict {
    let policy = mansign_policy(attestors);
    verdict_for_file(&policy, &format!("{SINGLE}/resource-{resource}.yaml"))
}

/// The ManifestPolicy with `attestors` verifies the Service signed by K1 and K2 and denies
/// the one signed by K2 only, naming `failure_text`.
fn needs_both_signatures(attestors: &str, failure_text: &str) {
    let v = mansign_verdict(attestors, "two-signatures");
    assert!(v.is_verified(), "{attestors}: {v}");
    let v = mansign_verdict(attestors, "one-signature");
    assert!(!v.is_verified(), "{attestors}");
    assert!(failure(&v).contains(failure_text), "{attestors}: {v}");
}

#[test]
fn mansign_policy_requires_every_attestor_set() {
    let sets = format!("  - entries: [{K1}]\n  - entries: [{K2}]");
    needs_both_signatures(&sets, "attestors[0]: 0 of 1 required");
}

#[test]
fn mansign_policy_count_is_n_of_m() {
    let set = format!("  - count: 2\n    entries: [{K1}, {T}, {K2}]");
    needs_both_signatures(&set, "1 of 2 required entries");
}

#[test]
fn mansign_policy_nested_set_is_one_entry() {
    // All of: T, or-else (K1 or K2) — T never signed these, so only count 1 passes.
    let all = format!("  - entries: [{T}, {{attestor: {{count: 1, entries: [{K1}, {K2}]}}}}]");
    let v = mansign_verdict(&all, "one-signature");
    assert!(!v.is_verified());
    let one = format!(
        "  - count: 1\n    entries: [{T}, {{attestor: {{count: 1, entries: [{K1}, {K2}]}}}}]"
    );
    let v = mansign_verdict(&one, "one-signature");
    assert!(v.is_verified(), "{v}");
    let verified = v.rules[0].verdict.result.as_ref().unwrap();
    assert_eq!(
        verified.entries[0].entry.to_string(),
        "attestors[0].entries[1].attestor.entries[1]"
    );
}

#[test]
fn mansign_policy_unknown_field_is_refused_naming_it() {
    let text = "apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata: {name: x}
spec:
  attestors:
  - entries:
    - keys: {path: keys/ecdsa-pub-1.pem, rekor: {}}
";

    let err = policy_text(text).unwrap_err();
    names_each(
        &err,
        &[
            "test-policy.yaml: document 1",
            "spec.attestors[0].entries[0].keys",
            "unknown field `rekor`",
        ],
    );
}

#[test]
fn mansign_policy_count_above_entries_is_refused() {
    let text = format!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: x}}\nspec:\n  attestors:\n  - count: 3\n    entries: [{K1}, {K2}]\n"
    );

    let err = policy_text(&text).unwrap_err();
    assert!(
        err.to_string()
            .contains("count 3 is larger than the number of entries (2)"),
        "{err}"
    );
}

#[test]
fn unknown_document_kind_is_refused() {
    let err = policy_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n").unwrap_err();
    assert!(matches!(err, PolicyError::UnknownKind { .. }), "{err}");
}

// ---------------------------------------------------------------------------------------
// Keyless entries: real public-good signatures (k8s-manifest-sigstore fixture)

const KEYLESS_CM: &str =
    "k8s-manifest-sigstore/pkg-k8smanifest-testdata/sample-configmap-keyless-multi-signed.yaml";

#[test]
fn keyless_count_2_over_both_signer_identities_is_allowed() {
    let text = "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: keyless}
spec:
  rules:
  - name: two-people
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      manifests:
        attestors:
        - count: 2
          entries:
          - keyless:
              subject: hkitahar@redhat.com
              issuer: https://accounts.google.com
              rekor: {url: https://rekor.sigstore.dev}
          - keyless:
              subject: hirokuni.kitahara1@ibm.com
              issuer: https://github.com/login/oauth
              rekor: {url: https://rekor.sigstore.dev}
";
    let policy = policy_text(text).unwrap();
    let v = verdict_for_file(&policy, KEYLESS_CM);
    assert!(v.is_verified(), "{v}");
    assert_eq!(signature_sets(&v), [0, 1]);
}

#[test]
fn keyless_subject_with_the_wrong_issuer_is_denied() {
    // Kyverno allows this (it ignores the issuer of manifest signatures); mansign does not.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("root.json"), fixture_trusted_root_json()).unwrap();
    let text = "apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata: {name: wrong-issuer}
spec:
  attestors:
  - entries:
    - keyless:
        subject: hirokuni.kitahara1@ibm.com
        issuer: https://accounts.google.com
        trustedRoot: root.json
";
    let policy = load_str(
        "wrong-issuer.yaml",
        text,
        dir.path(),
        &LoadOptions::default(),
    )
    .unwrap();
    let v = verdict_for_file(&policy, KEYLESS_CM);
    assert!(!v.is_verified());
    let reason = failure(&v);
    assert!(reason.contains("signer not allowed"), "{reason}");
}

#[test]
fn keyless_subject_regex_is_anchored() {
    let policy = |re: &str| {
        policy_text(&format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: re}}\nspec:\n  attestors:\n  - entries:\n    - keyless:\n        subjectRegExp: '{re}'\n        issuer: https://github.com/login/oauth\n"
        ))
        .unwrap()
    };
    let v = verdict_for_file(&policy(r".*@ibm\.com"), KEYLESS_CM);
    assert!(v.is_verified(), "{v}");
    let v = verdict_for_file(&policy(r"hirokuni"), KEYLESS_CM);
    assert!(!v.is_verified(), "{v}");
}

#[test]
fn mansign_policy_max_age_rejects_old_signatures() {
    // The fixture's signatures were logged in 2022: far older than a week.
    let policy = |max_age: &str| {
        policy_text(&format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: age}}\nspec:\n{max_age}  attestors:\n  - entries:\n    - keyless:\n        subject: hirokuni.kitahara1@ibm.com\n        issuer: https://github.com/login/oauth\n"
        ))
        .unwrap()
    };
    let v = verdict_for_file(&policy(""), KEYLESS_CM);
    assert!(v.is_verified(), "{v}");
    let v = verdict_for_file(&policy("  maxAge: 7d\n"), KEYLESS_CM);
    assert!(!v.is_verified(), "{v}");
    assert!(failure(&v).contains("older than the maximum age"), "{v}");
}

#[test]
fn mansign_policy_bad_max_age_is_refused_naming_the_field() {
    let err = policy_text(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {name: age}\nspec:\n  maxAge: soon\n  attestors:\n  - entries:\n    - keyless: {subject: a, issuer: https://x}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("spec.maxAge"), "{err}");
}

// ---------------------------------------------------------------------------------------
// The CLI

#[test]
fn cli_verify_with_kyverno_policy_reports_each_rule_and_exits_by_verdict() {
    let policy = fixture(&format!("{SINGLE}/policy.yaml"));
    let good = fixture(&format!("{SINGLE}/resource-two-signatures.yaml"));
    let bad = fixture(&format!("{SINGLE}/resource-bad-signatures.yaml"));
    fixture("trust-root/sigstore-public-trusted_root.json");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root.json");
    std::fs::write(&root, fixture_trusted_root_json()).unwrap();
    let run = |input: &Path| {
        common::mansign()
            .args(["verify", "-f"])
            .arg(input)
            .arg("--policy")
            .arg(&policy)
            .arg("--trusted-root")
            .arg(&root)
            .output()
            .unwrap()
    };
    let out = run(&good);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout
            .contains("policy validate-yaml rule validate-yaml: verified (attestors[0].entries[0]"),
        "{stdout}"
    );
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("spec.selector.app"));
}

#[test]
fn cli_refuses_policy_with_key_flags() {
    let policy = fixture(&format!("{SINGLE}/policy.yaml"));
    let key = fixture("keys/ecdsa-pub-1.pem");
    common::mansign()
        .args(["verify", "-f", "x.yaml", "--policy"])
        .arg(&policy)
        .arg("--key")
        .arg(&key)
        .assert()
        .code(2);
}

#[test]
fn cli_reports_objects_no_rule_applies_to_as_not_verified() {
    let policy = fixture(&format!("{SINGLE}/policy.yaml"));
    let dir = tempfile::tempdir().unwrap();
    let cm = common::write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n",
    );
    let out = common::mansign()
        .args(["verify", "--output", "json", "-f"])
        .arg(&cm)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["verified"], false);
    assert_eq!(json["documents"][0]["rules"], serde_json::json!([]));
    assert_eq!(json["documents"][0]["failure"]["check"], "no-policy-rule");
}

#[test]
fn cli_max_age_cannot_loosen_a_policy_max_age() {
    // Policy: 7 days; flag: 100 years. The 2022 signatures stay too old.
    let file = fixture(KEYLESS_CM);
    let dir = tempfile::tempdir().unwrap();
    let policy = common::write(
        dir.path(),
        "p.yaml",
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {name: age}\nspec:\n  maxAge: 7d\n  attestors:\n  - entries:\n    - keyless:\n        subject: hirokuni.kitahara1@ibm.com\n        issuer: https://github.com/login/oauth\n",
    );
    common::mansign()
        .args(["verify", "-f"])
        .arg(&file)
        .arg("--policy")
        .arg(&policy)
        .args(["--max-age", "36500d"])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("older than the maximum age"));
}

// ---------------------------------------------------------------------------------------
// Failure actions (docs/policy.md, "Failure actions")

/// The unit policy with `spec` fields and `validate` fields added.
fn action_policy(spec_extra: &str, validate_extra: &str) -> Result<PolicySet, PolicyError> {
    policy_text(&k1_policy(
        "actions",
        "ConfigMap",
        [spec_extra, validate_extra, "", ""],
    ))
}

#[test]
fn unknown_failure_action_is_refused_naming_the_field() {
    let err = action_policy("  validationFailureAction: Warn\n", "").unwrap_err();
    assert!(
        err.to_string().contains("spec.validationFailureAction"),
        "{err}"
    );
    let err = action_policy("", "      failureAction: ENFORCE\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.rules[0].validate.failureAction"),
        "{err}"
    );
}

#[test]
fn action_override_with_a_namespace_selector_is_refused_naming_the_field() {
    let err = action_policy(
        "  validationFailureActionOverrides:\n  - action: Audit\n    namespaceSelector:\n      matchLabels: {env: dev}\n",
        "",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.validationFailureActionOverrides[0].namespaceSelector"),
        "{err}"
    );
}

#[test]
fn action_override_without_namespaces_or_action_is_refused() {
    let err =
        action_policy("", "      failureActionOverrides:\n      - action: Audit\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("validate.failureActionOverrides[0].namespaces"),
        "{err}"
    );
    let err = action_policy(
        "  validationFailureActionOverrides:\n  - namespaces: [dev]\n",
        "",
    )
    .unwrap_err();
    assert!(err.to_string().contains("[0].action"), "{err}");
}

#[test]
fn offline_verdict_fails_an_audit_rule_and_names_its_action() {
    let policy = action_policy("  validationFailureAction: Audit\n", "").unwrap();
    let v = unit_verdict(&policy, "invalid");
    assert!(!v.is_verified(), "an audit rule still fails offline: {v}");
    assert!(v.to_string().contains("FAILED [diff] (Audit)"), "{v}");
    assert_eq!(v.to_json()["rules"][0]["action"], "Audit");
    let enforce = action_policy("", "").unwrap();
    let v = unit_verdict(&enforce, "invalid");
    assert_eq!(v.to_json()["rules"][0]["action"], "Enforce");
}

#[test]
fn mansign_policy_failure_action_is_enforce_or_audit_only() {
    let text = |action: &str| {
        format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: m}}\nspec:\n  failureAction: {action}\n  attestors:\n  - entries:\n    - keys:\n        path: keys/ecdsa-pub-1.pem\n"
        )
    };
    let audit = policy_text(&text("Audit")).unwrap();
    assert_eq!(
        audit.rules[0].failure_action,
        mansign::policy::FailureActions::always(mansign::policy::FailureAction::Audit)
    );
    let err = policy_text(&text("audit")).unwrap_err();
    assert!(err.to_string().contains("failureAction"), "{err}");
}
