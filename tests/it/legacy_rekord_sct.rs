//! Certificate transparency does not depend on the log entry's kind (issue 35, item 2): a
//! certificate without an embedded SCT is refused as `hashedrekord` and as legacy `rekord`
//! alike, unless the trust root says its CA retired and the entry was logged before then
//! (the 2021 kubectl-sigstore signatures; `verify::sigstore::legacy_rekord` and
//! docs/compatibility.md draw the line).

use crate::common;
use common::rekor_log::FIXTURES;
use common::test_instance::{IDENTITY, ISSUER, TestInstance, Validity};
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, extract};
use mansign::manifest::load_inputs;
use mansign::trust::TrustRoot;
use mansign::verify::{SigstoreError, verify_certificate_set};
use std::path::Path;

/// The authority open-ended, as every current Fulcio CA is.
const CURRENT: Validity = Validity::GOOD;

fn retired_in(end: &'static str) -> Validity {
    Validity {
        valid_for: ("2020-01-01T00:00:00Z", Some(end)),
        ..Validity::GOOD
    }
}

fn assert_sct_refusal(err: &SigstoreError, needle: &str) {
    assert_eq!(err.code(), "sct-invalid", "{err}");
    assert!(err.to_string().contains(needle), "{needle:?} not in {err}");
}

#[test]
fn a_certificate_without_an_sct_is_refused_whatever_the_entry_kind() {
    let instance = TestInstance::new(CURRENT);
    let trust = instance.trust_root();
    for kind in ["hashedrekord", "rekord"] {
        let signed = instance.sign(kind, false);
        let err = verify_certificate_set(&trust, &signed.message, &signed.set)
            .expect_err(&format!("{kind} without an SCT: verified"));
        assert_eq!(err.code(), "sct-invalid", "{kind}: {err}");
    }
    // Named: the authority is current, so transparency is required.
    let signed = instance.sign("rekord", false);
    let err = verify_certificate_set(&trust, &signed.message, &signed.set).unwrap_err();
    assert_sct_refusal(&err, "is current");
    // The CLI says so too, with the code.
    let dir = tempfile::tempdir().unwrap();
    let root = common::write(
        dir.path(),
        "root.json",
        &instance.trusted_root_json().to_string(),
    );
    let file = common::write(dir.path(), "signed.yaml", &signed.manifest_yaml());
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
        .code(1)
        .stdout(predicates::str::contains("no embedded SCT"));
}

#[test]
fn a_certificate_with_an_sct_verifies_as_hashedrekord() {
    let instance = TestInstance::new(CURRENT);
    let signed = instance.sign("hashedrekord", true);
    verify_certificate_set(&instance.trust_root(), &signed.message, &signed.set).unwrap();
}

#[test]
fn a_retired_authoritys_certificate_without_an_sct_verifies_as_rekord_only_before_it_retired() {
    // Retired in 2030 (after the 2025 signing time): accepted.
    let instance = TestInstance::new(retired_in("2030-01-01T00:00:00Z"));
    let signed = instance.sign("rekord", false);
    verify_certificate_set(&instance.trust_root(), &signed.message, &signed.set).unwrap();
    // The same root with a successor authority from 2025-01-01: the CA retired then, and the
    // entry (2025-06-01) is later.
    let mut root = instance.trusted_root_json();
    let other = TestInstance::new(CURRENT);
    let mut successor = other.trusted_root_json()["certificateAuthorities"][0].clone();
    successor["validFor"] = serde_json::json!({"start": "2025-01-01T00:00:00Z"});
    root["certificateAuthorities"]
        .as_array_mut()
        .unwrap()
        .push(successor);
    let trust = TrustRoot::from_json(&root.to_string()).unwrap();
    let err = verify_certificate_set(&trust, &signed.message, &signed.set)
        .expect_err("logged after a successor authority took over: verified");
    assert_sct_refusal(&err, "2025-01-01T00:00:00Z");
    // And `hashedrekord` never takes the exception.
    let hashed = instance.sign("hashedrekord", false);
    let err = verify_certificate_set(&instance.trust_root(), &hashed.message, &hashed.set)
        .expect_err("hashedrekord without an SCT: verified");
    assert_eq!(err.code(), "sct-invalid", "{err}");
}

/// The 2021 kubectl-sigstore signatures (legacy `rekord`, no SCT, the 2021 `sigstore` CA,
/// integrated 2021-09-15) are inside the line for the public-good roots mansign embeds and
/// the snapshots in testdata/.
#[test]
fn the_2021_kubectl_sigstore_signatures_still_verify() {
    let rel = "k8s-manifest-sigstore/test/e2e/testdata/sample-configmap-with-keyless-sig.yaml";
    let files = load_inputs(&[Path::new(FIXTURES).join(rel)], &Limits::default()).unwrap();
    let ann = extract(
        &files[0].documents[0].value,
        &AnnotationDomain::default(),
        &Limits::default(),
    )
    .unwrap();
    for trust in [
        TrustRoot::public_good().unwrap(),
        TrustRoot::from_file(Path::new(FIXTURES).join(common::rekor_log::PGI_ROOT)).unwrap(),
        TrustRoot::from_file(
            Path::new(FIXTURES).join("kyverno/trust-root/sigstore-public-trusted_root.json"),
        )
        .unwrap(),
    ] {
        verify_certificate_set(&trust, &ann.message, &ann.sets[0])
            .unwrap_or_else(|e| panic!("{}: {e}", trust.origin()));
    }
}
