//! Keyless verification, offline, against real kubectl-sigstore fixtures: who signed is
//! proven (Fulcio chain, SCT, SET, Rekor body, signature over M) and then judged by an
//! identity policy. Every rejection path has its own test.
//!
//! Fixtures: testdata/ (k8s-manifest-sigstore, sigstore-trust-roots; provenance in
//! testdata/README.md). A missing fixture fails the test.

use crate::common::rekor_log;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, SignatureSet, SignedAnnotations, extract};
use mansign::manifest::load_inputs;
use mansign::trust::TrustRoot;
use mansign::verify::{
    Attestor, CertificateSubject, IdentityPolicy, IdentityPolicyError, KeylessAttestor, Rejection,
    RekorEvidence, SignerInfo, SigstoreError, SigstoreEvidence, TrustedKey, Verifier,
    WorkflowClaims, verify_certificate_set, verify_key_set_with_bundle,
};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{DerSignature, SigningKey};
use p256::pkcs8::EncodePublicKey as _;
use rekor_log::{KEYLESS_MULTI, PGI_ROOT, STAGING_ROOT, TestLog, fixture, pgi_json};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;

// KEYLESS_MULTI (tests/it/common/rekor_log.rs), 2022, hashedrekord: set 0 hkitahar@redhat.com
// (Google), set 1 hirokuni.kitahara1@ibm.com (GitHub OAuth).
/// 2021, legacy rekord, no issuer extension, hirokuni.kitahara1@gmail.com.
const KEYLESS_2021: &str =
    "k8s-manifest-sigstore/test/e2e/testdata/sample-configmap-with-keyless-sig.yaml";
const MODIFIED_2021: &str =
    "k8s-manifest-sigstore/test/e2e/testdata/sample-configmap-modified.yaml";
const KEY_SIGNED: &str =
    "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-multi-signed.yaml";
const K1: &str = "k8s-manifest-sigstore/derived/pkg/k8smanifest/testdata/testpub.pem";

const GOOGLE: &str = "https://accounts.google.com";
const GITHUB_OAUTH: &str = "https://github.com/login/oauth";
const REDHAT: &str = "hkitahar@redhat.com";
const IBM: &str = "hirokuni.kitahara1@ibm.com";
const GMAIL: &str = "hirokuni.kitahara1@gmail.com";

// ---------------------------------------------------------------------------------------
// helpers

fn pgi() -> Arc<TrustRoot> {
    Arc::new(TrustRoot::from_file(fixture(PGI_ROOT)).unwrap())
}

/// The first document of a fixture and its signature annotations.
fn signed(rel: &str) -> (Value, SignedAnnotations) {
    let files = load_inputs(&[fixture(rel)], &Limits::default()).unwrap();
    let value = files[0].documents[0].value.clone();
    let ann = extract(&value, &AnnotationDomain::default(), &Limits::default()).unwrap();
    (value, ann)
}

fn policy(subject: &str, issuer: &str) -> IdentityPolicy {
    IdentityPolicy::builder()
        .subject(subject)
        .issuer(issuer)
        .build()
        .unwrap()
}

/// Subject only: 2021 certificates carry no issuer extension.
fn subject_only(subject: &str) -> IdentityPolicy {
    IdentityPolicy::builder()
        .subject(subject)
        .insecure_any_identity()
        .build()
        .unwrap()
}

fn keyless(trust: &Arc<TrustRoot>, identity: IdentityPolicy) -> Verifier {
    Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(
        trust.clone(),
        identity,
    ))])
}

fn no_trusted_signature(r: &Rejection) -> String {
    match r {
        Rejection::NoTrustedSignature { attempts } => attempts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("expected a signature failure, got {other}"),
    }
}

/// The pgi root plus `log` as an extra trusted Rekor log.
fn pgi_with_log(log: &TestLog) -> TrustRoot {
    log.trusted_by(pgi_json())
}

/// Edits the decoded Rekor body of a set.
fn edit_body(set: &mut SignatureSet, edit: impl FnOnce(&mut Value)) {
    let bundle = set.bundle.as_mut().unwrap();
    let mut body: Value =
        serde_json::from_slice(&STANDARD.decode(&bundle.payload.body).unwrap()).unwrap();
    edit(&mut body);
    bundle.payload.body = STANDARD.encode(body.to_string());
}

// ---------------------------------------------------------------------------------------
// fixtures that verify

#[test]
fn keyless_multi_signed_set_0_is_hkitahar_via_google() {
    let (trust, (_, ann)) = (pgi(), signed(KEYLESS_MULTI));
    let evidence = verify_certificate_set(&trust, &ann.message, &ann.sets[0]).unwrap();
    assert_eq!(evidence.subject, CertificateSubject::Email(REDHAT.into()));
    assert_eq!(evidence.issuer.as_deref(), Some(GOOGLE));
    assert_eq!(evidence.rekor.log_index, 2_690_357);
    assert_eq!(evidence.rekor.integrated_time, 1_655_452_519);
    assert_eq!(
        evidence.rekor.log_id,
        "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d"
    );
}

#[test]
fn keyless_multi_signed_set_1_is_ibm_via_github_oauth() {
    let (trust, (_, ann)) = (pgi(), signed(KEYLESS_MULTI));
    let evidence = verify_certificate_set(&trust, &ann.message, &ann.sets[1]).unwrap();
    assert_eq!(evidence.subject, CertificateSubject::Email(IBM.into()));
    assert_eq!(evidence.issuer.as_deref(), Some(GITHUB_OAUTH));
    assert_eq!(evidence.rekor.log_index, 2_690_355);
}

#[test]
fn keyless_multi_signed_verifies_for_the_redhat_identity_through_set_0() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_MULTI));
    let verdict = keyless(&trust, policy(REDHAT, GOOGLE))
        .verify_object(&value)
        .unwrap();
    let ok = verdict.result.unwrap();
    assert_eq!(ok.signature_set, 0);
    assert_eq!(
        ok.signer.to_string(),
        "subject hkitahar@redhat.com (issuer https://accounts.google.com), \
         rekor log index 2690357 at 2022-06-17T07:55:19Z"
    );
}

#[test]
fn keyless_multi_signed_verifies_for_the_ibm_identity_through_set_1() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_MULTI));
    let verdict = keyless(&trust, policy(IBM, GITHUB_OAUTH))
        .verify_object(&value)
        .unwrap();
    let ok = verdict.result.unwrap();
    assert_eq!(ok.signature_set, 1);
    assert!(matches!(ok.signer, SignerInfo::Certificate { ref subject, .. } if subject == IBM));
}

#[test]
fn keyless_multi_signed_verifies_against_the_embedded_public_good_root() {
    let (_, ann) = signed(KEYLESS_MULTI);
    let trust = TrustRoot::public_good().unwrap();
    for set in &ann.sets {
        verify_certificate_set(&trust, &ann.message, set).unwrap();
    }
}

#[test]
fn legacy_rekord_2021_signature_verifies_with_no_issuer_extension() {
    let (trust, (value, ann)) = (pgi(), signed(KEYLESS_2021));
    let evidence = verify_certificate_set(&trust, &ann.message, &ann.sets[0]).unwrap();
    assert_eq!(evidence.subject, CertificateSubject::Email(GMAIL.into()));
    assert_eq!(evidence.issuer, None);
    assert_eq!(evidence.rekor.log_index, 693_859);
    assert_eq!(evidence.rekor.integrated_time, 1_631_694_290);
    let verdict = keyless(&trust, subject_only(GMAIL))
        .verify_object(&value)
        .unwrap();
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn legacy_rekord_2021_signature_verifies_against_the_embedded_public_good_root() {
    let (_, ann) = signed(KEYLESS_2021);
    let trust = TrustRoot::public_good().unwrap();
    verify_certificate_set(&trust, &ann.message, &ann.sets[0]).unwrap();
}

#[test]
fn signer_info_json_names_subject_issuer_and_rekor_entry() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_MULTI));
    let verdict = keyless(&trust, policy(REDHAT, GOOGLE))
        .verify_object(&value)
        .unwrap();
    let json = verdict.to_json();
    assert_eq!(
        json["signer"],
        json!({
            "kind": "certificate",
            "subject": REDHAT,
            "issuer": GOOGLE,
            "logIndex": 2_690_357,
            "logId": "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d",
            "integratedTime": "2022-06-17T07:55:19Z",
            // SHA-256 of the leaf's public key: the signer's identity for counting distinct
            // signers (issue 21 item 5).
            "keyFingerprint": "02759bbfb9bedd0b4aabdd6d5ea860c8dcff7215950ac8009dcc886e34e8689b"
        })
    );
}

// ---------------------------------------------------------------------------------------
// identity rejections

#[test]
fn rejects_wrong_subject() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_MULTI));
    let verdict = keyless(&trust, policy("someone@example.com", GOOGLE))
        .verify_object(&value)
        .unwrap();
    let attempts = no_trusted_signature(&verdict.result.unwrap_err());
    assert!(
        attempts.contains(r#"subject "hkitahar@redhat.com" is not "someone@example.com""#),
        "{attempts}"
    );
}

#[test]
fn rejects_wrong_issuer_with_the_right_subject() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_MULTI));
    // hkitahar@redhat.com signed through Google, not GitHub.
    let verdict = keyless(&trust, policy(REDHAT, GITHUB_OAUTH))
        .verify_object(&value)
        .unwrap();
    let attempts = no_trusted_signature(&verdict.result.unwrap_err());
    assert!(
        attempts.contains(
            r#"signature set 0 with keyless identity [issuer https://github.com/login/oauth, subject hkitahar@redhat.com]: signer not allowed: issuer "https://accounts.google.com" is not "https://github.com/login/oauth""#
        ),
        "{attempts}"
    );
}

#[test]
fn rejects_legacy_signature_for_wrong_subject() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_2021));
    let verdict = keyless(&trust, subject_only("test-signer@example.com"))
        .verify_object(&value)
        .unwrap();
    assert_eq!(verdict.result.unwrap_err().check(), "signature");
}

#[test]
fn rejects_legacy_signature_when_an_issuer_is_required() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_2021));
    let verdict = keyless(&trust, policy(GMAIL, GOOGLE))
        .verify_object(&value)
        .unwrap();
    let attempts = no_trusted_signature(&verdict.result.unwrap_err());
    assert!(
        attempts.contains("certificate has no issuer claim"),
        "{attempts}"
    );
}

#[test]
fn rejects_subject_regex_that_matches_only_unanchored() {
    let (trust, (value, _)) = (pgi(), signed(KEYLESS_MULTI));
    // Both patterns occur inside the subjects, but neither matches a whole subject.
    for pattern in ["hkitahar@redhat", r"redhat\.com", r"kitahara1@ibm"] {
        let identity = IdentityPolicy::builder()
            .subject_regex(pattern)
            .issuer_regex("https://.*")
            .build()
            .unwrap();
        let verdict = keyless(&trust, identity).verify_object(&value).unwrap();
        assert!(!verdict.is_verified(), "{pattern} matched: {verdict}");
    }
    let whole = IdentityPolicy::builder()
        .subject_regex(r"hkitahar@redhat\.com")
        .issuer(GOOGLE)
        .build()
        .unwrap();
    assert!(
        keyless(&trust, whole)
            .verify_object(&value)
            .unwrap()
            .is_verified()
    );
}

#[test]
fn rejects_github_uri_under_a_lookalike_org() {
    let identity = IdentityPolicy::builder()
        .subject_regex("https://github.com/org/.*")
        .issuer("https://token.actions.githubusercontent.com")
        .build()
        .unwrap();
    let evidence = |subject: &str| SigstoreEvidence {
        subject: CertificateSubject::Uri(subject.into()),
        issuer: Some("https://token.actions.githubusercontent.com".into()),
        claims: WorkflowClaims::default(),
        rekor: RekorEvidence {
            log_index: 1,
            log_id: String::new(),
            integrated_time: 1,
        },
        key_fingerprint: String::new(),
    };
    assert!(
        identity
            .matches(&evidence(
                "https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main"
            ))
            .is_ok()
    );
    assert!(
        identity
            .matches(&evidence(
                "https://github.com/org.evil/repo/.github/workflows/sign.yaml@refs/heads/main"
            ))
            .is_err()
    );
}

#[test]
fn refuses_keyless_policy_without_issuer_constraint() {
    assert_eq!(
        IdentityPolicy::builder()
            .subject(REDHAT)
            .build()
            .unwrap_err(),
        IdentityPolicyError::MissingIssuer
    );
    assert_eq!(
        IdentityPolicy::builder()
            .subject_regex(".*")
            .build()
            .unwrap_err(),
        IdentityPolicyError::MissingIssuer
    );
}

#[test]
fn refuses_keyless_policy_without_identity_constraint() {
    assert_eq!(
        IdentityPolicy::builder()
            .issuer(GOOGLE)
            .build()
            .unwrap_err(),
        IdentityPolicyError::MissingIdentity
    );
}

// ---------------------------------------------------------------------------------------
// cryptographic rejections

#[test]
fn rejects_certificate_without_bundle() {
    let (trust, (mut value, mut ann)) = (pgi(), signed(KEYLESS_MULTI));
    ann.sets[0].bundle = None;
    assert_eq!(
        verify_certificate_set(&trust, &ann.message, &ann.sets[0]),
        Err(SigstoreError::NoBundle)
    );
    let annotations = value["metadata"]["annotations"].as_object_mut().unwrap();
    annotations.remove("cosign.sigstore.dev/bundle");
    annotations.remove("cosign.sigstore.dev/bundle_1");
    let verdict = keyless(&trust, policy(REDHAT, GOOGLE))
        .verify_object(&value)
        .unwrap();
    let attempts = no_trusted_signature(&verdict.result.unwrap_err());
    assert!(attempts.contains("no Rekor bundle"), "{attempts}");
}

/// A set of a fixture changed one way, and the error that change must meet.
struct SetCase {
    name: &'static str,
    fixture: &'static str,
    /// Whether the trust root also trusts the test log that `tamper` may sign with.
    log_trusted: bool,
    /// The message and the set to verify, from the fixture's annotations.
    tamper: fn(&TestLog, &SignedAnnotations) -> (Vec<u8>, SignatureSet),
    expect: fn(&SigstoreError) -> bool,
}

fn set_signature_timestamp(e: &SigstoreError) -> bool {
    matches!(e, SigstoreError::SignedEntryTimestamp(_))
}
fn entry_mismatch(e: &SigstoreError) -> bool {
    matches!(e, SigstoreError::EntryMismatch(_))
}
fn bad_signature(e: &SigstoreError) -> bool {
    matches!(e, SigstoreError::BadSignature(_))
}
fn not_valid_at(e: &SigstoreError) -> bool {
    matches!(e, SigstoreError::CertificateNotValidAt { .. })
}

/// Set 0 of the fixture, as it stands, over its own message.
fn set0(ann: &SignedAnnotations) -> (Vec<u8>, SignatureSet) {
    (ann.message.clone(), ann.sets[0].clone())
}

/// Set 0 with its Rekor body edited by `edit` and re-signed by `log`.
fn set0_body(
    log: &TestLog,
    ann: &SignedAnnotations,
    edit: impl FnOnce(&mut Value),
) -> (Vec<u8>, SignatureSet) {
    let (message, mut set) = set0(ann);
    edit_body(&mut set, edit);
    log.resign(&mut set);
    (message, set)
}

/// Set 0 with its integrated time moved by `by` and nothing re-signed.
fn set0_time_moved(ann: &SignedAnnotations, by: i64) -> (Vec<u8>, SignatureSet) {
    let (message, mut set) = set0(ann);
    set.bundle.as_mut().unwrap().payload.integrated_time += by;
    (message, set)
}

/// The SET over the payload is the test key's; the logID stays rekor.sigstore.dev's.
fn set0_foreign_set(log: &TestLog, ann: &SignedAnnotations) -> (Vec<u8>, SignatureSet) {
    let (message, mut set) = set0(ann);
    log.sign_as_is(&mut set);
    (message, set)
}

fn other_hash(b: &mut Value) {
    b["spec"]["data"]["hash"]["value"] = json!(hex::encode(Sha256::digest(b"other")));
}

const SET_CASES: &[SetCase] = &[
    SetCase {
        name: "tampered integrated time",
        fixture: KEYLESS_MULTI,
        log_trusted: false,
        tamper: |_, ann| set0_time_moved(ann, 1),
        expect: set_signature_timestamp,
    },
    SetCase {
        name: "tampered integrated time on a legacy rekord entry",
        fixture: KEYLESS_2021,
        log_trusted: false,
        tamper: |_, ann| set0_time_moved(ann, -1),
        expect: set_signature_timestamp,
    },
    SetCase {
        name: "SET by another key under the trusted log id",
        fixture: KEYLESS_MULTI,
        log_trusted: false,
        tamper: set0_foreign_set,
        expect: set_signature_timestamp,
    },
    SetCase {
        name: "legacy SET by another key under the trusted log id",
        fixture: KEYLESS_2021,
        log_trusted: false,
        tamper: set0_foreign_set,
        expect: set_signature_timestamp,
    },
    SetCase {
        name: "signature over a different message",
        fixture: KEYLESS_MULTI,
        log_trusted: false,
        tamper: |_, ann| {
            let (mut other, set) = set0(ann);
            other.extend_from_slice(b"  key5: injected\n");
            (other, set)
        },
        expect: bad_signature,
    },
    SetCase {
        name: "legacy signature over a different message",
        fixture: KEYLESS_2021,
        log_trusted: false,
        tamper: |_, ann| (b"apiVersion: v1\n".to_vec(), ann.sets[0].clone()),
        expect: bad_signature,
    },
    SetCase {
        name: "signature of another set with this certificate",
        fixture: KEYLESS_MULTI,
        log_trusted: false,
        tamper: |_, ann| {
            let (message, mut set) = set0(ann);
            set.signature = ann.sets[1].signature.clone();
            (message, set)
        },
        expect: |_| true,
    },
    SetCase {
        name: "Rekor body with another signature, valid SET",
        fixture: KEYLESS_MULTI,
        log_trusted: true,
        tamper: |log, ann| {
            let other = STANDARD.encode(&ann.sets[1].signature);
            set0_body(log, ann, |b| {
                b["spec"]["signature"]["content"] = json!(other)
            })
        },
        expect: entry_mismatch,
    },
    SetCase {
        name: "Rekor body with another hash, valid SET",
        fixture: KEYLESS_MULTI,
        log_trusted: true,
        tamper: |log, ann| set0_body(log, ann, other_hash),
        expect: entry_mismatch,
    },
    SetCase {
        // The certificate is valid for ten minutes from 2022-06-17T07:55:18Z.
        name: "integrated time after the certificate expired",
        fixture: KEYLESS_MULTI,
        log_trusted: true,
        tamper: |log, ann| {
            (
                ann.message.clone(),
                with_integrated_time(log, &ann.sets[0], 1_655_452_519 + 3600),
            )
        },
        expect: not_valid_at,
    },
    SetCase {
        name: "legacy integrated time before the certificate was issued",
        fixture: KEYLESS_2021,
        log_trusted: true,
        tamper: |log, ann| {
            (
                ann.message.clone(),
                with_integrated_time(log, &ann.sets[0], 1_631_694_290 - 60),
            )
        },
        expect: not_valid_at,
    },
    SetCase {
        name: "legacy rekord body with another certificate, valid SET",
        fixture: KEYLESS_2021,
        log_trusted: true,
        tamper: |log, ann| {
            let (_, multi) = signed(KEYLESS_MULTI);
            let other_cert = STANDARD.encode(multi.sets[0].certificate_pem.as_ref().unwrap());
            set0_body(log, ann, |b| {
                b["spec"]["signature"]["publicKey"]["content"] = json!(other_cert)
            })
        },
        expect: entry_mismatch,
    },
    SetCase {
        name: "legacy rekord body with another hash, valid SET",
        fixture: KEYLESS_2021,
        log_trusted: true,
        tamper: |log, ann| set0_body(log, ann, other_hash),
        expect: entry_mismatch,
    },
    SetCase {
        // The legacy path cannot check SCTs, so a 2022 certificate (which embeds one) must
        // not be accepted through a rekord entry, even one with a valid SET.
        name: "legacy rekord entry for a certificate with an embedded SCT",
        fixture: KEYLESS_MULTI,
        log_trusted: true,
        tamper: |log, ann| {
            let (message, set) = set0(ann);
            let body = json!({
                "apiVersion": "0.0.1",
                "kind": "rekord",
                "spec": {
                    "data": {"hash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(&message))}},
                    "signature": {
                        "content": STANDARD.encode(&set.signature),
                        "format": "x509",
                        "publicKey": {"content": STANDARD.encode(set.certificate_pem.as_ref().unwrap())}
                    }
                }
            });
            set0_body(log, ann, |b| *b = body)
        },
        expect: |e| matches!(e, SigstoreError::Sct(_)),
    },
];

#[test]
fn rejects_each_tampered_set() {
    for case in SET_CASES {
        let log = TestLog::new();
        let trust = if case.log_trusted {
            pgi_with_log(&log)
        } else {
            TrustRoot::from_file(fixture(PGI_ROOT)).unwrap()
        };
        let (_, ann) = signed(case.fixture);
        let (message, set) = (case.tamper)(&log, &ann);
        let err = verify_certificate_set(&trust, &message, &set)
            .expect_err(&format!("{}: verified", case.name));
        assert!((case.expect)(&err), "{}: {err}", case.name);
    }
}

#[test]
fn rejects_set_signed_by_an_untrusted_log_key() {
    let (trust, (_, ann)) = (pgi(), signed(KEYLESS_MULTI));
    let log = TestLog::new();
    for original in &ann.sets {
        let mut set = original.clone();
        log.resign(&mut set);
        let err = verify_certificate_set(&trust, &ann.message, &set).unwrap_err();
        assert!(matches!(err, SigstoreError::UnknownLog { .. }), "{err}");
    }
}

#[test]
fn rejects_certificate_from_a_different_trust_root() {
    let (staging, pgi_path) = (fixture(STAGING_ROOT), fixture(PGI_ROOT));
    // The pgi root's Rekor and CT logs, but staging's Fulcio CAs: the SET and the log
    // are fine, the certificate is not from a trusted CA.
    let mut root: Value =
        serde_json::from_str(&std::fs::read_to_string(&pgi_path).unwrap()).unwrap();
    let staging_root: Value =
        serde_json::from_str(&std::fs::read_to_string(&staging).unwrap()).unwrap();
    root["certificateAuthorities"] = staging_root["certificateAuthorities"].clone();
    let trust = TrustRoot::from_json(&root.to_string()).unwrap();
    for rel in [KEYLESS_MULTI, KEYLESS_2021] {
        let (_, ann) = signed(rel);
        let err = verify_certificate_set(&trust, &ann.message, &ann.sets[0]).unwrap_err();
        assert!(
            matches!(err, SigstoreError::UntrustedCertificate(_)),
            "{rel}: {err}"
        );
    }
    // And the whole staging root trusts neither the certificate nor the log.
    let (_, ann) = signed(KEYLESS_MULTI);
    let trust = TrustRoot::from_file(&staging).unwrap();
    assert!(verify_certificate_set(&trust, &ann.message, &ann.sets[0]).is_err());
}

/// Moves the integrated time of a set and re-signs its SET with a trusted test log, so that
/// only the time itself can be wrong.
fn with_integrated_time(log: &TestLog, set: &SignatureSet, time: i64) -> SignatureSet {
    let mut set = set.clone();
    set.bundle.as_mut().unwrap().payload.integrated_time = time;
    log.resign(&mut set);
    set
}

#[test]
fn rejects_integrated_time_in_the_future() {
    let log = TestLog::new();
    let (trust, (_, ann), (_, legacy)) = (
        pgi_with_log(&log),
        signed(KEYLESS_MULTI),
        signed(KEYLESS_2021),
    );
    let tomorrow = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        + 86_400;
    for (message, set) in [
        (&ann.message, &ann.sets[0]),
        (&legacy.message, &legacy.sets[0]),
    ] {
        let set = with_integrated_time(&log, set, tomorrow);
        assert!(verify_certificate_set(&trust, message, &set).is_err());
    }
    let set = with_integrated_time(&log, &legacy.sets[0], tomorrow);
    let err = verify_certificate_set(&trust, &legacy.message, &set).unwrap_err();
    assert!(matches!(err, SigstoreError::IntegratedTime(_)), "{err}");
}

#[test]
fn resigned_set_from_a_trusted_test_log_verifies() {
    // Control for the two tests above: re-signing an unchanged body with a trusted log key
    // verifies, so those rejections come from the body, not from the test log.
    let log = TestLog::new();
    let (trust, (_, ann)) = (pgi_with_log(&log), signed(KEYLESS_MULTI));
    let mut set = ann.sets[0].clone();
    log.resign(&mut set);
    let evidence = verify_certificate_set(&trust, &ann.message, &set).unwrap();
    assert_eq!(evidence.rekor.log_id, log.log_id_hex);
}

// ---------------------------------------------------------------------------------------
// the document check and attestor kinds

#[test]
fn modified_configmap_fails_on_diff_data_key2() {
    let (trust, (value, _)) = (pgi(), signed(MODIFIED_2021));
    let verdict = keyless(&trust, subject_only(GMAIL))
        .verify_object(&value)
        .unwrap();
    match verdict.result {
        Err(Rejection::Modified { diffs, .. }) => {
            assert_eq!(diffs.len(), 1, "{diffs:?}");
            assert_eq!(diffs[0].to_string(), r#"data.key2 added ("val2")"#);
        }
        other => panic!("expected a diff on data.key2, got {other:?}"),
    }
}

#[test]
fn key_attestor_refuses_a_keyless_set() {
    let (k1, (value, _)) = (fixture(K1), signed(KEYLESS_MULTI));
    let key = TrustedKey::from_pem("K1", &std::fs::read_to_string(k1).unwrap()).unwrap();
    let verdict = Verifier::new(vec![Attestor::Key(key)])
        .verify_object(&value)
        .unwrap();
    let attempts = no_trusted_signature(&verdict.result.unwrap_err());
    assert!(attempts.contains("carries a certificate"), "{attempts}");
}

#[test]
fn keyless_attestor_refuses_a_set_without_certificate() {
    let (trust, (value, _)) = (pgi(), signed(KEY_SIGNED));
    let verdict = keyless(&trust, policy(REDHAT, GOOGLE))
        .verify_object(&value)
        .unwrap();
    let attempts = no_trusted_signature(&verdict.result.unwrap_err());
    assert!(attempts.contains("no certificate"), "{attempts}");
}

// ---------------------------------------------------------------------------------------
// keyed signatures with a Rekor bundle (a test log; no keyed fixture carries one)

/// A key-signed set over `message` with a hashedrekord entry in `log`.
fn keyed_set_with_bundle(log: &TestLog, signer: &SigningKey, message: &[u8]) -> SignatureSet {
    let sig: DerSignature = signer.sign(message);
    let spki_pem = signer
        .verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .unwrap();
    let body = json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(message))}},
            "signature": {
                "content": STANDARD.encode(sig.as_bytes()),
                "publicKey": {"content": STANDARD.encode(spki_pem)}
            }
        }
    });
    let mut set = SignatureSet {
        index: 0,
        signature: sig.as_bytes().to_vec(),
        certificate_pem: None,
        bundle: Some(mansign::annotations::RekorBundle {
            signed_entry_timestamp: String::new(),
            payload: mansign::annotations::RekorPayload {
                body: STANDARD.encode(body.to_string()),
                integrated_time: 1_700_000_000,
                log_index: 42,
                log_id: String::new(),
            },
        }),
    };
    log.resign(&mut set);
    set
}

#[test]
fn keyed_set_with_bundle_verifies_set_and_body() {
    let log = TestLog::new();
    let trust = pgi_with_log(&log);
    let signer = SigningKey::random(&mut rand_core::OsRng);
    let set = keyed_set_with_bundle(&log, &signer, b"M");
    let spki = signer.verifying_key().to_public_key_der().unwrap();
    let evidence = verify_key_set_with_bundle(&trust, b"M", &set, spki.as_bytes()).unwrap();
    assert_eq!(evidence.log_index, 42);
    assert_eq!(evidence.integrated_time, 1_700_000_000);
}

#[test]
fn keyed_set_with_bundle_rejects_a_body_naming_another_key() {
    let log = TestLog::new();
    let trust = pgi_with_log(&log);
    let signer = SigningKey::random(&mut rand_core::OsRng);
    let other = SigningKey::random(&mut rand_core::OsRng);
    let set = keyed_set_with_bundle(&log, &other, b"M");
    // The trusted key is `signer`, the logged entry is `other`'s.
    let mut forged = set.clone();
    let sig: DerSignature = signer.sign(b"M");
    forged.signature = sig.as_bytes().to_vec();
    let spki = signer.verifying_key().to_public_key_der().unwrap();
    let err = verify_key_set_with_bundle(&trust, b"M", &forged, spki.as_bytes()).unwrap_err();
    assert!(matches!(err, SigstoreError::EntryMismatch(_)), "{err}");
}

#[test]
fn keyed_set_with_tampered_integrated_time_is_rejected_by_the_key_attestor() {
    let log = TestLog::new();
    let trust = pgi_with_log(&log);
    let signer = SigningKey::random(&mut rand_core::OsRng);
    let mut set = keyed_set_with_bundle(&log, &signer, b"M");
    set.bundle.as_mut().unwrap().payload.integrated_time += 1;
    let key = TrustedKey::new("test", *signer.verifying_key()).with_trust_root(Arc::new(trust));
    let err = Attestor::Key(key).check(b"M", &set).unwrap_err();
    assert!(err.to_string().contains("signed entry timestamp"), "{err}");
}

#[test]
fn key_attestor_reports_the_rekor_entry_of_a_keyed_bundle() {
    let log = TestLog::new();
    let trust = pgi_with_log(&log);
    let signer = SigningKey::random(&mut rand_core::OsRng);
    let set = keyed_set_with_bundle(&log, &signer, b"M");
    let key = TrustedKey::new("test", *signer.verifying_key()).with_trust_root(Arc::new(trust));
    let signer_info = Attestor::Key(key).check(b"M", &set).unwrap();
    assert!(
        signer_info
            .to_string()
            .ends_with("rekor log index 42 at 2023-11-14T22:13:20Z"),
        "{signer_info}"
    );
}

#[test]
fn key_attestor_without_trust_root_refuses_a_bundle_it_cannot_check() {
    let log = TestLog::new();
    let signer = SigningKey::random(&mut rand_core::OsRng);
    let set = keyed_set_with_bundle(&log, &signer, b"M");
    let key = TrustedKey::new("test", *signer.verifying_key());
    let err = Attestor::Key(key).check(b"M", &set).unwrap_err();
    assert!(err.to_string().contains("no trust root"), "{err}");
}

// ---------------------------------------------------------------------------------------
// CLI

fn mansign() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("mansign").unwrap()
}

#[test]
fn cli_verifies_keyless_fixture_with_cosign_flags() {
    let (file, root) = (fixture(KEYLESS_MULTI), fixture(PGI_ROOT));
    mansign()
        .args(["verify", "-f"])
        .arg(file)
        .arg("--trusted-root")
        .arg(root)
        .args(["--certificate-identity", IBM, "--certificate-oidc-issuer", GITHUB_OAUTH])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "verified (signature set 1, subject hirokuni.kitahara1@ibm.com (issuer https://github.com/login/oauth), rekor log index 2690355 at 2022-06-17T07:55:09Z)",
        ));
}

#[test]
fn cli_fails_keyless_fixture_with_wrong_issuer() {
    let file = fixture(KEYLESS_MULTI);
    mansign()
        .args(["verify", "-f"])
        .arg(file)
        .args([
            "--certificate-identity",
            IBM,
            "--certificate-oidc-issuer",
            GOOGLE,
        ])
        .assert()
        .code(1);
}

#[test]
fn cli_refuses_keyless_without_issuer() {
    let file = fixture(KEYLESS_MULTI);
    mansign()
        .args(["verify", "-f"])
        .arg(file)
        .args(["--certificate-identity", IBM])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("needs --certificate-oidc-issuer"));
}

#[test]
fn cli_refuses_keyless_without_identity() {
    let file = fixture(KEYLESS_MULTI);
    mansign()
        .args(["verify", "-f"])
        .arg(file)
        .args(["--certificate-oidc-issuer", GOOGLE])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("needs --certificate-identity"));
}

#[test]
fn cli_names_an_unreadable_trusted_root() {
    let file = fixture(KEYLESS_MULTI);
    mansign()
        .args(["verify", "-f"])
        .arg(file)
        .args([
            "--trusted-root",
            "/nonexistent/root.json",
            "--insecure-any-identity",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "/nonexistent/root.json: cannot read trusted root",
        ));
}
