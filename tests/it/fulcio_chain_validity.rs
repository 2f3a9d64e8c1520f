//! Every certificate of a keyless signature's Fulcio chain, the root included, must be
//! valid at the verified signing time, on every path (issue 35, item 1; the class of cosign
//! GHSA-wfqv-66vq-46rm / CVE-2026-24122). sigstore-verify and mansign's legacy `rekord`
//! check take every CA certificate of the trust root as a webpki trust anchor, and webpki
//! never checks an anchor's dates; `verify::sigstore::fulcio_chain` now does.
//!
//! Each test signs with a Sigstore instance made by the test
//! (`tests/it/common/test_instance.rs`) whose only fault is one CA certificate's validity,
//! and checks the cold annotation path, the vouched (cached) path, `mansign verify`, the
//! legacy `rekord` path, standard bundles (library and `mansign verify-bundle`) and an
//! admission review. The same instance with a good chain verifies on each path, so a
//! refusal is the chain's doing.

use crate::common;
use common::admission_fixture::decide;
use common::test_instance::{IDENTITY, ISSUER, SIGNING_TIME, Signed, TestInstance, Validity};
use mansign::admission::{Outcome, ReviewOptions, Reviewer};
use mansign::conformance::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
use mansign::policy::{LoadOptions, load_str};
use mansign::trust::TrustRoot;
use mansign::verify::{SigstoreError, verify_certificate_set};
use std::path::Path;
use std::sync::Arc;

const CODE: &str = "chain-certificate-not-valid-at-signing-time";
const INTERMEDIATE: &str = "CN=test-fulcio-intermediate";
const ROOT: &str = "CN=test-fulcio-root";
const SIGNED_AT: &str = "2025-06-01T12:00:00Z";

/// The refusal names the certificate, the bound it crossed and the signing time.
fn assert_names(err: &SigstoreError, subject: &str, bound: &str, time: &str) {
    let text = err.to_string();
    assert_eq!(err.code(), CODE, "{text}");
    for needle in [subject, bound, time] {
        assert!(text.contains(needle), "{needle:?} not in {text:?}");
    }
}

/// A closed authority window, so a certificate without an SCT may be logged as `rekord`
/// (issue 35 item 2's rule), and the chain is all that can refuse it.
fn retired(mut v: Validity) -> Validity {
    v.valid_for = ("2020-01-01T00:00:00Z", Some("2030-01-01T00:00:00Z"));
    v
}

fn cli_verify(dir: &Path, instance: &TestInstance, signed: &Signed) -> assert_cmd::assert::Assert {
    let root = common::write(dir, "root.json", &instance.trusted_root_json().to_string());
    let file = common::write(dir, "signed.yaml", &signed.manifest_yaml());
    common::mansign()
        .args(["verify", "-f"])
        .arg(&file)
        .arg("--trusted-root")
        .arg(&root)
        .args([
            "--certificate-identity",
            IDENTITY,
            "--certificate-oidc-issuer",
            ISSUER,
        ])
        .assert()
}

fn cli_verify_bundle(
    dir: &Path,
    instance: &TestInstance,
    bundle: &serde_json::Value,
    message: &[u8],
) -> assert_cmd::assert::Assert {
    let root = common::write(dir, "root.json", &instance.trusted_root_json().to_string());
    let bundle = common::write(dir, "a.sigstore.json", &bundle.to_string());
    let artifact = dir.join("artifact");
    std::fs::write(&artifact, message).unwrap();
    common::mansign()
        .args(["verify-bundle", "--bundle"])
        .arg(&bundle)
        .arg("--trusted-root")
        .arg(&root)
        .args([
            "--certificate-identity",
            IDENTITY,
            "--certificate-oidc-issuer",
            ISSUER,
        ])
        .arg(&artifact)
        .assert()
}

fn library_bundle(trust: &TrustRoot, signed: &Signed) -> Result<(), SigstoreError> {
    let bundle = SigstoreBundle::from_json(&signed.bundle_json().to_string()).unwrap();
    match BundleVerifier::new(trust).verify(
        &bundle,
        BundleArtifact::Bytes(&signed.message),
        &ExpectedSigner::identity(IDENTITY, ISSUER),
    ) {
        Ok(_) => Ok(()),
        Err(mansign::conformance::BundleError::Check(e)) => Err(e),
        Err(other) => panic!("not a verification failure: {other}"),
    }
}

/// A reviewer admitting ConfigMaps signed by [`IDENTITY`] under `trust`.
fn reviewer(trust: TrustRoot) -> Reviewer {
    let text = format!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: keyless}}\n\
         spec:\n  match:\n    kinds: [ConfigMap]\n  namespaceBinding: [\"*\"]\n  attestors:\n  \
         - entries:\n    - keyless:\n        issuer: {ISSUER}\n        subject: {IDENTITY}\n"
    );
    let options = LoadOptions::default().with_trust_root(Arc::new(trust));
    let policy = load_str("policy.yaml", &text, ".".as_ref(), &options)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    Reviewer::new(policy, ReviewOptions::default())
}

/// Every path verifies a signature of `validity`'s instance (the control).
fn every_path_verifies(validity: Validity) {
    let dir = tempfile::tempdir().unwrap();
    let instance = TestInstance::new(validity);
    let trust = instance.trust_root();
    let signed = instance.sign("hashedrekord", true);
    // cold, then vouched
    verify_certificate_set(&trust, &signed.message, &signed.set).unwrap();
    verify_certificate_set(&trust, &signed.message, &signed.set).unwrap();
    assert_eq!(trust.certificate_cache_stats().hits, 1);
    cli_verify(dir.path(), &instance, &signed).success();
    library_bundle(&instance.trust_root(), &signed).unwrap();
    cli_verify_bundle(
        dir.path(),
        &instance,
        &signed.bundle_json(),
        &signed.message,
    )
    .success();
    let (outcome, code, message) = decide(
        &reviewer(instance.trust_root()),
        &signed.object(),
        "CREATE",
        None,
    );
    assert_eq!(outcome, Outcome::Allowed, "{code:?}: {message}");
    // legacy rekord, no SCT, from a retired authority
    let legacy = TestInstance::new(retired(validity));
    let rekord = legacy.sign("rekord", false);
    verify_certificate_set(&legacy.trust_root(), &rekord.message, &rekord.set).unwrap();
    cli_verify(dir.path(), &legacy, &rekord).success();
}

/// Every path refuses a signature of `validity`'s instance, naming `subject` and `bound`.
fn every_path_refuses(validity: Validity, subject: &str, bound: &str) {
    let dir = tempfile::tempdir().unwrap();
    let instance = TestInstance::new(validity);
    let signed = instance.sign("hashedrekord", true);

    let cold = verify_certificate_set(&instance.trust_root(), &signed.message, &signed.set)
        .expect_err("cold path: verified");
    assert_names(&cold, subject, bound, SIGNED_AT);

    cli_verify(dir.path(), &instance, &signed)
        .code(1)
        .stdout(predicates::str::contains(subject))
        .stdout(predicates::str::contains(bound));

    let bundle = library_bundle(&instance.trust_root(), &signed).expect_err("bundle: verified");
    assert_names(&bundle, subject, bound, SIGNED_AT);
    cli_verify_bundle(
        dir.path(),
        &instance,
        &signed.bundle_json(),
        &signed.message,
    )
    .code(1)
    .stderr(predicates::str::contains(subject))
    .stderr(predicates::str::contains(bound));

    let (outcome, code, message) = decide(
        &reviewer(instance.trust_root()),
        &signed.object(),
        "CREATE",
        None,
    );
    assert_eq!(outcome, Outcome::Denied, "admission: {code:?}: {message}");
    assert!(
        message.contains(subject) && message.contains(bound),
        "{message}"
    );

    let legacy = TestInstance::new(retired(validity));
    let rekord = legacy.sign("rekord", false);
    let err = verify_certificate_set(&legacy.trust_root(), &rekord.message, &rekord.set)
        .expect_err("legacy rekord: verified");
    assert_names(&err, subject, bound, SIGNED_AT);
    cli_verify(dir.path(), &legacy, &rekord).code(1);
}

#[test]
fn a_chain_valid_at_the_signing_time_verifies_on_every_path() {
    every_path_verifies(Validity::GOOD);
}

#[test]
fn an_intermediate_expired_before_the_signing_time_is_refused_on_every_path() {
    every_path_refuses(
        Validity::EXPIRED_INTERMEDIATE,
        INTERMEDIATE,
        "expired at 2024-01-01T00:00:00Z",
    );
}

#[test]
fn a_root_expired_before_the_signing_time_is_refused_while_the_window_is_open() {
    every_path_refuses(
        Validity::EXPIRED_ROOT,
        ROOT,
        "expired at 2024-01-01T00:00:00Z",
    );
}

#[test]
fn an_intermediate_not_yet_valid_at_the_signing_time_is_refused() {
    every_path_refuses(
        Validity::FUTURE_INTERMEDIATE,
        INTERMEDIATE,
        "not valid before 2026-01-01T00:00:00Z",
    );
}

/// The vouched path: a certificate whose chain verified at one time is not vouched for at
/// a later time the intermediate no longer covers, although the leaf still is valid and the
/// authorities are the same.
#[test]
fn a_vouched_certificate_is_checked_again_once_its_intermediate_expired() {
    let instance = TestInstance::new(Validity::INTERMEDIATE_EXPIRES_DURING_LEAF);
    let trust = instance.trust_root();
    let signed = instance.sign("hashedrekord", true);
    verify_certificate_set(&trust, &signed.message, &signed.set).unwrap();
    assert_eq!(trust.certificate_cache_stats().entries, 1);
    // The same certificate, logged a day later (the leaf is valid until 2025-06-03).
    let later = instance.log.at(&signed.set, SIGNING_TIME + 86_400);
    let err = verify_certificate_set(&trust, &signed.message, &later)
        .expect_err("vouched path: verified after the intermediate expired");
    assert_names(
        &err,
        INTERMEDIATE,
        "expired at 2025-06-02T00:00:00Z",
        "2025-06-02T12:00:00Z",
    );
    assert_eq!(
        trust.certificate_cache_stats().hits,
        0,
        "the cache vouched for it"
    );
}
