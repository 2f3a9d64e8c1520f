//! Freshness: a signed `--expires` is enforced; the same documents pass before expiry.

use crate::common;
use crate::common::stack;

use common::MULTI_DOC;
use mansign::Limits;
use mansign::keys;
use mansign::manifest::EXPIRES_ANNOTATION;
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::verify::{Attestor, Rejection, TrustedKey, Verifier};
use predicates::prelude::*;

fn signed_with_expiry(at: &str) -> (Vec<mansign::manifest::Document>, Verifier) {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let mut files = vec![common::load_text("x", "x", MULTI_DOC)];
    let options = SignOptions::default().with_expires_at(at.parse().unwrap());
    sign_files(&mut files, &KeySigner::new(key), &options).unwrap();
    let verifier = Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("k", &pair.public_key_pem).unwrap(),
    )]);
    (files.remove(0).documents, verifier)
}

/// The verdict, at `clock`, on the documents signed to expire at 2026-06-01T12:00:00Z.
fn expiring_documents_verified_at(clock: &str) -> mansign::verify::Verdict {
    let (docs, verifier) = signed_with_expiry("2026-06-01T12:00:00Z");
    verifier
        .with_clock(clock.parse().unwrap())
        .verify_documents(&docs)
}

/// Fails the test, naming every document, unless all of them are verified.
fn assert_all_verified(verdict: &mansign::verify::Verdict) {
    let all: Vec<String> = verdict.documents.iter().map(ToString::to_string).collect();
    assert!(verdict.is_verified(), "{}", all.join("\n"));
}

#[test]
fn documents_pass_before_their_signed_expiry() {
    assert_all_verified(&expiring_documents_verified_at("2026-06-01T11:59:59Z"));
}

#[test]
fn documents_are_rejected_after_their_signed_expiry() {
    let verdict = expiring_documents_verified_at("2026-06-01T12:00:00Z");
    for d in &verdict.documents {
        match &d.result {
            Err(Rejection::Expired { at }) => assert_eq!(at.to_string(), "2026-06-01T12:00:00Z"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_expiry_is_signed_so_extending_it_breaks_the_signature_match() {
    let (mut docs, verifier) = signed_with_expiry("2026-06-01T12:00:00Z");
    docs[0].value["metadata"]["annotations"][EXPIRES_ANNOTATION] = "2099-01-01T00:00:00Z".into();
    let verdict = verifier
        .with_clock("2026-06-02T00:00:00Z".parse().unwrap())
        .verify_document(&docs[0]);
    assert_eq!(verdict.result.unwrap_err().check(), "diff");
}

#[test]
fn removing_the_expiry_annotation_is_detected() {
    let (mut docs, verifier) = signed_with_expiry("2026-06-01T12:00:00Z");
    docs[0].value["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(EXPIRES_ANNOTATION);
    let verdict = verifier
        .with_clock("2026-06-02T00:00:00Z".parse().unwrap())
        .verify_document(&docs[0]);
    // The signed document still carries the expiry: the diff names the removed field
    // (and the signed expiry would reject it anyway).
    assert!(verdict.result.is_err());
}

#[test]
fn cli_signed_expiry_passes_before_and_fails_after_it() {
    // No sleeps: the CLI signs with a one-hour window and verifies now; the passing of
    // time is simulated with the verifier's injected clock on the very file it wrote.
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    let signed = common::sign_with(&["--expires", "1h"], &input, &kd.key);
    let text = std::fs::read_to_string(&signed).unwrap();
    assert!(text.contains("mansign.dev/expires: \""), "{text}");
    common::verify_with_key(&signed, &kd.pubkey).success();
    let docs = mansign::manifest::load_inputs(&[signed], &Limits::default())
        .unwrap()
        .remove(0)
        .documents;
    let verifier = Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("k", &std::fs::read_to_string(&kd.pubkey).unwrap()).unwrap(),
    )]);
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(2);
    let verdict = verifier.with_clock(later).verify_documents(&docs);
    for d in &verdict.documents {
        assert!(matches!(d.result, Err(Rejection::Expired { .. })), "{d}");
    }
}

#[test]
fn cli_verify_rejects_an_expired_document() {
    // Signed through the library with an expiry in the past (the CLI refuses to sign one),
    // with a key pair the CLI made; the CLI then checks it against the real clock.
    let kd = common::key_dir("cosign");
    let pem = std::fs::read_to_string(&kd.key).unwrap();
    let secret = keys::decrypt_private_key(&pem, b"test-password").unwrap();
    let mut files = vec![common::load_text("x", "x", MULTI_DOC)];
    let options = SignOptions::default().with_expires_at("2026-06-01T12:00:00Z".parse().unwrap());
    sign_files(&mut files, &KeySigner::new(secret), &options).unwrap();
    let out: String = files[0]
        .documents
        .iter()
        .map(|d| mansign::manifest::to_yaml(&d.value))
        .collect::<Vec<_>>()
        .join("---\n");
    let signed = kd.write("expired.yaml", &out);
    common::verify_with_key(&signed, &kd.pubkey)
        .code(1)
        .stdout(predicate::str::contains(
            "[expired] signature expired: the signed document expires at 2026-06-01T12:00:00Z",
        ));
}

#[test]
fn cli_refuses_an_expiry_in_the_past() {
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    common::fails(
        &mut common::with_key(
            "sign",
            &["--expires", "2020-01-01T00:00:00Z"],
            &input,
            &kd.key,
        ),
        2,
        &["not in the future"],
    );
}

mod max_age {
    use super::common::fixture;
    use mansign::Limits;
    use mansign::manifest::load_inputs;
    use mansign::trust::TrustRoot;
    use mansign::verify::{
        Attestor, IdentityPolicy, KeylessAttestor, Rejection, TrustedKey, Verifier,
    };
    use std::sync::Arc;

    /// The 2022 keyless fixture: set 1 by hirokuni.kitahara1@ibm.com (GitHub OAuth),
    /// logged at 2022-06-17T07:55:09Z.
    fn keyless_fixture() -> (Vec<mansign::manifest::Document>, Verifier) {
        let file = fixture(
            "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-keyless-multi-signed.yaml",
        );
        let root = fixture(
            "k8s-manifest-sigstore/_external/sigstore-cosign-v3.0.4/pkg/cosign/testdata/trusted_root_pgi.json",
        );
        let trust = Arc::new(TrustRoot::from_file(root).unwrap());
        let identity = IdentityPolicy::builder()
            .subject("hirokuni.kitahara1@ibm.com")
            .issuer("https://github.com/login/oauth")
            .build()
            .unwrap();
        let docs = load_inputs(&[file], &Limits::default())
            .unwrap()
            .remove(0)
            .documents;
        (
            docs,
            Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(
                trust, identity,
            ))]),
        )
    }

    /// The verdict on the keyless fixture with a one-hour maximum age, at `clock`.
    fn verdict_at(clock: &str) -> mansign::verify::Verdict {
        let (docs, verifier) = keyless_fixture();
        verifier
            .with_clock(clock.parse().unwrap())
            .with_max_age(jiff::SignedDuration::from_hours(1))
            .verify_documents(&docs)
    }

    /// The attempts of the first document's rejection, one a line; any other outcome
    /// fails the test.
    fn attempts_of(verdict: &mansign::verify::Verdict) -> String {
        match &verdict.documents[0].result {
            Err(Rejection::NoTrustedSignature { attempts }) => attempts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn signature_younger_than_max_age_passes() {
        super::assert_all_verified(&verdict_at("2022-06-17T08:55:00Z"));
    }

    #[test]
    fn signature_older_than_max_age_is_rejected() {
        let all = attempts_of(&verdict_at("2022-06-17T08:55:10Z"));
        assert!(
            all.contains("signed at 2022-06-17T07:55:09Z, older than the maximum age"),
            "{all}"
        );
    }

    #[test]
    fn key_signature_without_log_time_fails_a_max_age() {
        let (file, key) = (
            fixture(
                "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-multi-signed.yaml",
            ),
            fixture("k8s-manifest-sigstore/derived/pkg/k8smanifest/testdata/testpub.pem"),
        );
        let pem = std::fs::read_to_string(key).unwrap();
        let docs = load_inputs(&[file], &Limits::default())
            .unwrap()
            .remove(0)
            .documents;
        let verifier = Verifier::new(vec![Attestor::Key(
            TrustedKey::from_pem("K1", &pem).unwrap(),
        )]);
        assert!(verifier.verify_documents(&docs).is_verified());
        let verdict = verifier
            .with_max_age(jiff::SignedDuration::from_hours(24 * 365 * 100))
            .verify_documents(&docs);
        let all = attempts_of(&verdict);
        assert!(all.contains("no signed signing time"), "{all}");
    }
}

/// `--max-age` / `maxAge` measure the signed signing time (`mansign.dev/signed-at`), never
/// a transparency-log time alone for key signatures (anyone can log an old signature).
mod signed_time {
    use super::common::{MULTI_DOC, key_pair, write};
    use mansign::keys;
    use mansign::manifest::{SIGNED_AT_ANNOTATION, to_yaml};
    use mansign::signing::{KeySigner, SignOptions, sign_files};
    use mansign::verify::Attestor;
    use mansign::verify::{
        AttestorEntry, AttestorPolicy, AttestorSet, Rejection, TrustedKey, Verifier,
    };
    use predicates::prelude::*;

    const T: &str = "2026-06-01T12:00:00Z";

    fn signed_at(at: &str, key_pem: &str, password: &[u8]) -> Vec<mansign::manifest::Document> {
        let key = keys::decrypt_private_key(key_pem, password).unwrap();
        let mut files = vec![super::common::load_text("x", "x", MULTI_DOC)];
        let options = SignOptions::default().with_signed_at(at.parse().unwrap());
        sign_files(&mut files, &KeySigner::new(key), &options).unwrap();
        files.remove(0).documents
    }

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn every_signed_document_carries_its_signing_time() {
        let pair = keys::generate_key_pair(b"").unwrap();
        let docs = signed_at(T, &pair.private_key_pem, b"");
        for d in &docs {
            assert_eq!(
                d.value["metadata"]["annotations"][SIGNED_AT_ANNOTATION],
                T,
                "{}",
                to_yaml(&d.value)
            );
        }
    }

    #[test]
    fn key_signature_younger_than_max_age_passes_and_older_is_max_age() {
        let pair = keys::generate_key_pair(b"").unwrap();
        let docs = signed_at(T, &pair.private_key_pem, b"");
        let verifier = Verifier::new(vec![Attestor::Key(
            TrustedKey::from_pem("k", &pair.public_key_pem).unwrap(),
        )])
        .with_max_age(jiff::SignedDuration::from_hours(2));
        let young = verifier.clone().with_clock(at("2026-06-01T13:59:59Z"));
        assert!(young.verify_documents(&docs).is_verified());
        let old = verifier.with_clock(at("2026-06-01T14:00:01Z"));
        for d in &old.verify_documents(&docs).documents {
            let rejection = d.result.as_ref().unwrap_err();
            assert_eq!(rejection.check(), "max-age", "{rejection}");
            assert_eq!(rejection.code(), "too-old", "{rejection}");
            assert!(
                rejection
                    .to_string()
                    .contains("signed at 2026-06-01T12:00:00Z, older than the maximum age 2h"),
                "{rejection}"
            );
        }
    }

    #[test]
    fn max_age_is_classified_the_same_under_a_policy() {
        let pair = keys::generate_key_pair(b"").unwrap();
        let docs = signed_at(T, &pair.private_key_pem, b"");
        let key = TrustedKey::from_pem("k", &pair.public_key_pem).unwrap();
        let policy = AttestorPolicy::new(vec![
            AttestorSet::new(None, vec![AttestorEntry::Keys(vec![key])]).unwrap(),
        ])
        .unwrap();
        let verifier = Verifier::for_policy(policy)
            .with_max_age(jiff::SignedDuration::from_hours(1))
            .with_clock(at("2026-06-02T00:00:00Z"));
        let verdict = verifier.verify_document(&docs[0]);
        let rejection = verdict.result.unwrap_err();
        assert!(
            matches!(rejection, Rejection::AttestorSetNotSatisfied(_)),
            "{rejection}"
        );
        assert_eq!(rejection.check(), "max-age");
        assert_eq!(rejection.code(), "too-old");
    }

    #[test]
    fn cli_json_names_the_max_age_check() {
        let dir = tempfile::tempdir().unwrap();
        let (key, pubkey) = key_pair(dir.path(), "cosign");
        let docs = signed_at(
            "2026-01-01T00:00:00Z",
            &std::fs::read_to_string(&key).unwrap(),
            b"test-password",
        );
        let text: Vec<String> = docs.iter().map(|d| to_yaml(&d.value)).collect();
        let file = write(dir.path(), "old.yaml", &text.join("---\n"));
        super::common::with_key(
            "verify",
            &["--output", "json", "--max-age", "1d"],
            &file,
            &pubkey,
        )
        .assert()
        .code(1)
        .stdout(predicate::str::contains(r#""check": "max-age""#))
        .stdout(predicate::str::contains(r#""code": "too-old""#));
    }
}

/// Against the loopback Rekor: a key signature logged now but signed long ago is as old as
/// its signed time; a signed time after the log entry is not credible.
mod logged_key_signatures {
    use super::common::MULTI_DOC;
    use super::stack;
    use mansign::keys;
    use mansign::manifest::Document;
    use mansign::signing::{KeySigner, RekorOptions, SignOptions, TlogUploadingSigner, sign_files};
    use mansign::trust::TrustRoot;
    use mansign::verify::{Attestor, TrustedKey, Verifier};
    use std::sync::Arc;

    fn sign_and_log(stack: &stack::Stack, signed_at: jiff::Timestamp) -> (Vec<Document>, Verifier) {
        let pair = keys::generate_key_pair(b"").unwrap();
        let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
        let signer = TlogUploadingSigner::new(
            KeySigner::new(key),
            pair.public_key_pem.clone(),
            RekorOptions::default().with_url(stack.rekor_url().to_string()),
        );
        let mut files = vec![super::common::load_text("x", "x", MULTI_DOC)];
        let options = SignOptions::default().with_signed_at(signed_at);
        sign_files(&mut files, &signer, &options).unwrap();
        let trust = Arc::new(TrustRoot::from_file(stack.trusted_root()).unwrap());
        let key = TrustedKey::from_pem("k", &pair.public_key_pem)
            .unwrap()
            .with_trust_root(trust);
        let verifier = Verifier::new(vec![Attestor::Key(key)])
            .with_max_age(jiff::SignedDuration::from_hours(24));
        (files.remove(0).documents, verifier)
    }

    #[test]
    fn a_fresh_log_entry_does_not_make_an_old_key_signature_young() {
        let stack = stack::Stack::start();
        let ten_days_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(240);
        let (docs, verifier) = sign_and_log(&stack, ten_days_ago);
        let verdict = verifier.verify_document(&docs[0]);
        let rejection = verdict.result.unwrap_err();
        assert_eq!(rejection.code(), "too-old", "{rejection}");
        // ... while the same flow signed now passes: the log entry itself verifies.
        let (docs, verifier) = sign_and_log(&stack, jiff::Timestamp::now());
        let verdict = verifier.verify_document(&docs[0]);
        assert!(verdict.is_verified(), "{verdict}");
    }

    #[test]
    fn a_signed_time_after_the_log_entry_is_refused() {
        let stack = stack::Stack::start();
        let tomorrow = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24);
        let (docs, verifier) = sign_and_log(&stack, tomorrow);
        let rejection = verifier.verify_document(&docs[0]).result.unwrap_err();
        assert_eq!(
            rejection.code(),
            "signed-time-after-log-time",
            "{rejection}"
        );
        assert_eq!(rejection.check(), "max-age");
    }
}

/// Issue 39, item 2: `--max-age` on a key signature with no Rekor bundle is measured from
/// the signed time, and `verify --help`, docs/cli.md and docs/policy.md say so.
mod max_age_of_key_signatures {
    use super::common::{self, MULTI_DOC, fixture, key_pair, mansign, write};

    #[test]
    fn a_key_signature_without_a_bundle_is_dated_by_its_signed_time() {
        let dir = tempfile::tempdir().unwrap();
        let (key, pubkey) = key_pair(dir.path(), "k");
        let input = write(dir.path(), "x.yaml", MULTI_DOC);
        common::sign_with_key(&input, &key);
        let signed = dir.path().join("x.yaml.signed");
        mansign()
            .args(["verify", "--max-age", "1h", "--key"])
            .arg(&pubkey)
            .arg(&signed)
            .assert()
            .success();
        // kubectl-sigstore's key signature carries no signed time: rejected, saying why
        let out = mansign()
            .args(["verify", "--max-age", "36500d", "--key"])
            .arg(fixture(
                "k8s-manifest-sigstore/derived/pkg/k8smanifest/testdata/testpub.pem",
            ))
            .arg(fixture(
                "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-multi-signed.yaml",
            ))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", common::all_output(&out));
        assert!(
            common::all_output(&out).contains("no signed signing time"),
            "{}",
            common::all_output(&out)
        );
    }

    #[test]
    fn help_and_docs_say_the_same_of_max_age() {
        let out = mansign().args(["verify", "--help"]).assert().success();
        let help = String::from_utf8_lossy(&out.get_output().stdout).replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            help.contains("measured from the signed time `mansign.dev/signed-at`"),
            "{help}"
        );
        for doc in ["docs/cli.md", "docs/policy.md"] {
            let text =
                std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
                    .unwrap();
            assert!(
                text.contains("from the signed time") && text.contains("mansign.dev/signed-at"),
                "{doc} dates maxAge from the signed time"
            );
            assert!(
                !text.contains("have no log time and fail")
                    && !text.contains("no log time = rejected"),
                "{doc} still says a key signature without a log time fails"
            );
        }
    }
}
