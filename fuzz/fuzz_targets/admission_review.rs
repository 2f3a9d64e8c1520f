//! The admission handler: `Reviewer::review` on arbitrary request bodies, under a policy
//! with a keyless rule (seeds: AdmissionReview requests wrapping the signed fixtures of
//! testdata/). It must answer every body, never panic, and its answer must never depend on
//! what it saw before (issue 28). Every body is reviewed by a cold reviewer (a fresh trust
//! root that has vouched for no certificate, and verification caches that remember
//! nothing) and by the warm reviewer, whose caches stay warm across inputs and whose trust
//! root vouched, before the first input, for the certificate of the keyless fixture the
//! seeds wrap, so a mutated keyless set with that certificate is judged by mansign's own
//! per-set checks there and by the full Sigstore verification in the cold one. The warm
//! reviewer's verdict, and `Reviewer::review_cached`'s whenever it answers (the verification
//! cache holds the body's signatures), must be the cold one (allowed or not, status code).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::admission::{ReviewOptions, Reviewed, Reviewer};
use mansign::policy::{LoadOptions, load_str};
use mansign::trust::TrustRoot;
use mansign::verify::VerificationCache;
use std::path::Path;
use std::sync::{Arc, OnceLock};

const POLICY: &str = r#"apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata:
  name: fuzz
spec:
  match:
    kinds: [ConfigMap, PolicyException]
  ignoreProfile: kubernetes
  attestors:
  - entries:
    - keyless:
        issuer: https://accounts.google.com
        subject: hkitahar@redhat.com
"#;

/// k8s-manifest-sigstore's 2022 keyless ConfigMap (testdata/README.md): set 0 is
/// hkitahar@redhat.com via Google, verified by the embedded public-good root.
const KEYLESS: &str = include_str!(
    "../../testdata/k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-keyless-multi-signed.yaml"
);

/// The fuzz policy over a trust root of its own (so no certificate is vouched for yet).
fn policies() -> mansign::policy::PolicySet {
    let options = LoadOptions::default()
        .with_trust_root(Arc::new(TrustRoot::public_good().expect("embedded root")))
        .with_limits(mansign::Limits::default());
    load_str("fuzz policy", POLICY, Path::new("/nonexistent"), &options)
        .expect("the fuzz policy loads")
}

/// An AdmissionReview CREATE request for the keyless fixture.
fn keyless_review() -> Vec<u8> {
    let (_, object) = mansign::manifest::parse_documents(KEYLESS, &mansign::Limits::default())
        .expect("the keyless fixture parses")
        .into_iter()
        .next()
        .expect("one document");
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "warm-up",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "sample-cm",
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": object,
        }
    })
    .to_string()
    .into_bytes()
}

/// The reviewer under test: its caches stay warm across inputs, and its trust root vouched
/// for the keyless fixture's certificate before the first input.
fn reviewer() -> &'static Reviewer {
    static REVIEWER: OnceLock<Reviewer> = OnceLock::new();
    REVIEWER.get_or_init(|| {
        let reviewer = Reviewer::new(policies(), ReviewOptions::default());
        let warm_up = reviewer.review(&keyless_review());
        let allowed = warm_up
            .response
            .as_ref()
            .ok()
            .and_then(|r| serde_json::from_slice::<serde_json::Value>(r).ok())
            .map(|r| r["response"]["allowed"].clone());
        assert_eq!(
            allowed,
            Some(serde_json::Value::Bool(true)),
            "the keyless fixture is admitted: {:?}",
            warm_up.decision
        );
        reviewer
    })
}

/// A reviewer that has seen nothing: a fresh trust root and caches that remember nothing,
/// so every answer is the full verification.
fn cold() -> Reviewer {
    let mut set = policies();
    for rule in &mut set.rules {
        rule.verifier = rule
            .verifier
            .clone()
            .with_cache(Arc::new(VerificationCache::new(0)));
    }
    Reviewer::new(set, ReviewOptions::default())
}

/// The verdict of an answer: allowed or not and the status code, or
/// the code of a body that is no answerable review. The message texts may differ: a
/// signature refused on the warm path is described by mansign, on the cold one by
/// sigstore-verify, under the same reason.
fn verdict(answer: &Reviewed) -> Result<[serde_json::Value; 2], &'static str> {
    let bytes = answer.response.as_ref().map_err(|b| b.code)?;
    let value: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    Ok([
        value["response"]["allowed"].clone(),
        value["response"]["status"]["code"].clone(),
    ])
}

fn assert_same(what: &str, answer: &Reviewed, cold: &Reviewed) {
    assert_eq!(verdict(answer), verdict(cold), "{what}");
}

fuzz_target!(|data: &[u8]| {
    let warm = reviewer();
    let full = cold().review(data);
    if let Some(cached) = warm.review_cached(data) {
        assert_same("the cached answer", &cached, &full);
    }
    assert_same("the warm answer", &warm.review(data), &full);
});
