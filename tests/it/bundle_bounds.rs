//! Standard Sigstore bundles are bounded before any cryptography (issue 35, item 3; the
//! class of sigstore-go GHSA-cq38-jh5f-37mq): more than `Limits::max_bundle_tlog_entries`
//! (32) transparency-log entries or `Limits::max_bundle_timestamps` (32) RFC 3161
//! timestamps are refused with the count, through the library and `mansign verify-bundle`.

use crate::common;
use common::test_instance::{IDENTITY, ISSUER, Signed, TestInstance, Validity};
use mansign::Limits;
use mansign::conformance::{
    BundleArtifact, BundleError, BundleVerifier, ExpectedSigner, SigstoreBundle,
};
use serde_json::{Value, json};

/// `signed`'s bundle with its one log entry repeated `entries` times and `timestamps`
/// RFC 3161 timestamps (opaque bytes: the bound is checked before any is read).
fn inflated(signed: &Signed, entries: usize, timestamps: usize) -> Value {
    let mut bundle = signed.bundle_json();
    let entry = bundle["verificationMaterial"]["tlogEntries"][0].clone();
    bundle["verificationMaterial"]["tlogEntries"] = Value::Array(vec![entry; entries]);
    if timestamps > 0 {
        let ts = json!({"signedTimestamp": "MAA="});
        bundle["verificationMaterial"]["timestampVerificationData"] =
            json!({"rfc3161Timestamps": vec![ts; timestamps]});
    }
    bundle
}

fn verify(
    bundle: &Value,
    signed: &Signed,
    trust: &mansign::trust::TrustRoot,
    limits: Limits,
) -> Result<(), BundleError> {
    let bundle = SigstoreBundle::from_json(&bundle.to_string()).unwrap();
    BundleVerifier::new(trust)
        .with_limits(limits)
        .verify(
            &bundle,
            BundleArtifact::Bytes(&signed.message),
            &ExpectedSigner::identity(IDENTITY, ISSUER),
        )
        .map(|_| ())
}

fn assert_too_many(result: Result<(), BundleError>, what: &str, count: usize, limit: usize) {
    let err = result.expect_err("verified");
    assert!(
        matches!(&err, BundleError::TooManyEntries { what: w, count: c, limit: l }
            if *w == what && *c == count && *l == limit),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&count.to_string()) && text.contains(&limit.to_string()),
        "{text}"
    );
}

#[test]
fn a_bundle_with_more_log_entries_or_timestamps_than_the_limit_is_refused_with_the_count() {
    let instance = TestInstance::new(Validity::GOOD);
    let trust = instance.trust_root();
    let signed = instance.sign("hashedrekord", true);
    // The control: the bundle as made verifies.
    verify(&inflated(&signed, 1, 0), &signed, &trust, Limits::default()).unwrap();
    for entries in [33, 2_000] {
        assert_too_many(
            verify(
                &inflated(&signed, entries, 0),
                &signed,
                &trust,
                Limits::default(),
            ),
            "transparency log entries",
            entries,
            32,
        );
    }
    assert_too_many(
        verify(
            &inflated(&signed, 1, 33),
            &signed,
            &trust,
            Limits::default(),
        ),
        "RFC 3161 timestamps",
        33,
        32,
    );
    // The bound is the caller's Limits.
    assert_too_many(
        verify(
            &inflated(&signed, 1, 0),
            &signed,
            &trust,
            Limits::default().with_max_bundle_tlog_entries(0),
        ),
        "transparency log entries",
        1,
        0,
    );
}

/// Refused before any check: entries whose SETs are garbage, under a trust root that does
/// not know their log, are still refused for their number.
#[test]
fn the_count_is_refused_before_any_cryptography() {
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    let mut bundle = inflated(&signed, 40, 0);
    for entry in bundle["verificationMaterial"]["tlogEntries"]
        .as_array_mut()
        .unwrap()
    {
        entry["inclusionPromise"]["signedEntryTimestamp"] = json!("AAAA");
    }
    let stranger = TestInstance::new(Validity::GOOD).trust_root();
    assert_too_many(
        verify(&bundle, &signed, &stranger, Limits::default()),
        "transparency log entries",
        40,
        32,
    );
    // At the bound, the bundle is judged on its merits (here: a log the root does not know).
    let at_bound = inflated(&signed, 32, 0);
    let err = verify(&at_bound, &signed, &stranger, Limits::default()).unwrap_err();
    assert!(!matches!(err, BundleError::TooManyEntries { .. }), "{err}");
}

#[test]
fn verify_bundle_refuses_thousands_of_entries_naming_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    let root = common::write(
        dir.path(),
        "root.json",
        &instance.trusted_root_json().to_string(),
    );
    let artifact = dir.path().join("artifact");
    std::fs::write(&artifact, &signed.message).unwrap();
    let run = |bundle: &Value| {
        let path = common::write(dir.path(), "a.sigstore.json", &bundle.to_string());
        common::mansign()
            .args(["verify-bundle", "--bundle"])
            .arg(&path)
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
    };
    run(&inflated(&signed, 1, 0)).success();
    run(&inflated(&signed, 11_888, 0))
        .code(2)
        .stderr(predicates::str::contains("11888 transparency log entries"))
        .stderr(predicates::str::contains("limit of 32"));
    run(&inflated(&signed, 1, 100))
        .code(2)
        .stderr(predicates::str::contains("100 RFC 3161 timestamps"));
}
