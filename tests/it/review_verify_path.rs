//! Verification-path regressions found in review, end to end with a real key signature:
//! objects an attacker changed in a security-relevant way that compared equal to what was
//! signed, and an object that made the comparison take gigabytes.

use mansign::Limits;
use mansign::annotations::{AnnotationDomain, EmbedMode, SignatureSet, embed};
use mansign::manifest::build_message;
use mansign::verify::{Attestor, TrustedKey, Verifier};
use p256::ecdsa::signature::Signer as _;
use serde_json::{Value, json};

/// Signs `doc` with a fresh key; returns the signed object and a verifier for that key.
fn sign(doc: &Value) -> (Value, Verifier) {
    let key = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
    let message = build_message([doc]);
    let signature: p256::ecdsa::DerSignature = key.sign(&message);
    let mut signed = doc.clone();
    embed(
        &mut signed,
        &AnnotationDomain::default(),
        &message,
        &[SignatureSet {
            index: 0,
            signature: signature.as_bytes().to_vec(),
            certificate_pem: None,
            bundle: None,
        }],
        EmbedMode::Replace,
        &Limits::default(),
    )
    .unwrap();
    let trusted = TrustedKey::new("release.pub", *key.verifying_key());
    (signed, Verifier::new(vec![Attestor::Key(trusted)]))
}

fn deny_all_ingress() -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "deny-all", "namespace": "prod"},
        "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"]},
    })
}

#[test]
fn signed_object_verifies() {
    let (signed, verifier) = sign(&deny_all_ingress());
    let verdict = verifier.verify_object(&signed).unwrap();
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_an_added_empty_list_item() {
    // `ingress: [{}]` allows all ingress; the signed policy (no ingress rules) denies it.
    let (mut signed, verifier) = sign(&deny_all_ingress());
    signed["spec"]["ingress"] = json!([{}]);
    let verdict = verifier.verify_object(&signed).unwrap();
    assert!(!verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_an_added_list_item_without_leaves() {
    // `from: []` in a rule also means "from anywhere".
    let (mut signed, verifier) = sign(&deny_all_ingress());
    signed["spec"]["ingress"] = json!([{"from": [], "ports": []}]);
    let verdict = verifier.verify_object(&signed).unwrap();
    assert!(!verdict.is_verified(), "{verdict}");
}

#[test]
fn rejects_an_added_match_all_aggregation_selector() {
    // An empty selector aggregates every ClusterRole (cluster-admin included) into this one.
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "viewer"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    });
    let (mut signed, verifier) = sign(&role);
    signed["aggregationRule"] = json!({"clusterRoleSelectors": [{}]});
    let verdict = verifier.verify_object(&signed).unwrap();
    assert!(!verdict.is_verified(), "{verdict}");
}

#[test]
fn an_object_whose_field_paths_would_take_gigabytes_is_compared_in_linear_space() {
    // 60 levels of 4 KiB keys over 2000 leaves: a 260 KiB object whose flattened paths
    // (one copy of the whole key chain per leaf) would take about 500 MB. The comparison
    // builds paths only for the hundred differences it reports and counts the rest.
    let (mut signed, verifier) = sign(&deny_all_ingress());
    let mut bomb = Value::Object((0..2000).map(|i| (i.to_string(), json!(1))).collect());
    for level in 0..60 {
        bomb = json!({ format!("{level}{}", "k".repeat(4096)): bomb });
    }
    signed["spec"]["x"] = bomb;
    let verdict = verifier.verify_object(&signed).unwrap();
    match verdict.result {
        Err(mansign::verify::Rejection::Modified { diffs, unreported }) => {
            assert_eq!(diffs.len(), mansign::manifest::MAX_REPORTED_DIFFS);
            assert_eq!(diffs.len() + unreported, 2000);
        }
        other => panic!("{other:?}"),
    }
}
