//! The per-trust-root certificate cache skips a certificate's chain and SCT, never a check
//! that depends on the signature set: every test first verifies the real set (so the
//! certificate is cached), then shows that a set reusing that certificate is still refused
//! for its own fault — after the certificate expired, at a time its Fulcio authority no
//! longer covers, with a bad SET, a signature over another message, a body about another
//! signature, certificate or hash, a body with a duplicate key — and that the cache is the
//! root's own. The checks of a vouched set are mansign's own (`verify/sigstore/hashedrekord.rs`), so
//! these tests are what shows them refusing.
//!
//! Fixtures and the test's own Rekor log: tests/it/common/rekor_log.rs.

use crate::common::rekor_log;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mansign::annotations::SignedAnnotations;
use mansign::trust::{TrustRoot, VouchedStats};
use mansign::verify::{SigstoreError, verify_certificate_set};
use rekor_log::{
    NOT_BEFORE, PGI_ROOT, STAGING_ROOT, TestLog, fixture, pgi_json, prime, signed, with_body,
    with_raw_body,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// A log of the test's own trusted with the public-good root, and the fixture's signatures
/// with set 0 verified once (its certificate cached).
fn primed_on_own_log() -> (TestLog, TrustRoot, SignedAnnotations) {
    let log = TestLog::new();
    let (trust, ann) = (log.trusted_by(pgi_json()), signed());
    prime(&trust, &ann);
    (log, trust, ann)
}

/// The public-good root of the fixture's time, and the fixture's signatures with set 0
/// verified once (its certificate cached).
fn primed_on_pgi() -> (TrustRoot, SignedAnnotations) {
    let (trust, ann) = (TrustRoot::from_file(fixture(PGI_ROOT)).unwrap(), signed());
    prime(&trust, &ann);
    (trust, ann)
}

/// The public-good root's logs with the staging Fulcio CAs: the fixture's certificates do
/// not chain to it.
fn pgi_logs_with_staging_fulcio() -> TrustRoot {
    let mut root = pgi_json();
    let staging: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(STAGING_ROOT)).unwrap()).unwrap();
    root["certificateAuthorities"] = staging["certificateAuthorities"].clone();
    TrustRoot::from_json(&root.to_string()).unwrap()
}

/// Set 0 logged again with its entry body edited by `edit`, verified against `trust`: the
/// refusal.
fn refusal_with_body(
    log: &TestLog,
    trust: &TrustRoot,
    ann: &SignedAnnotations,
    edit: impl FnOnce(&mut Value),
) -> SigstoreError {
    let set = with_body(log, &ann.sets[0], edit);
    verify_certificate_set(trust, &ann.message, &set).unwrap_err()
}

/// The certificate cache of `trust` answered `hits` lookups.
fn assert_cache_used(trust: &TrustRoot, hits: u64) {
    assert_eq!(
        trust.certificate_cache_stats().hits,
        hits,
        "the cache was used"
    );
}

#[test]
fn a_second_set_with_the_same_certificate_skips_only_chain_and_sct() {
    let (log, trust, ann) = primed_on_own_log();
    // The same certificate in another entry, a minute later, verifies from the cache.
    let later = log.at(&ann.sets[0], NOT_BEFORE + 61);
    let evidence = verify_certificate_set(&trust, &ann.message, &later).unwrap();
    assert_eq!(evidence.rekor.integrated_time, NOT_BEFORE + 61);
    assert_eq!(
        trust.certificate_cache_stats(),
        VouchedStats {
            hits: 1,
            misses: 1,
            entries: 1
        }
    );
}

/// Set 0 logged again after its certificate expired, or before it was issued.
#[test]
fn rejects_a_cached_certificate_after_it_expired_or_before_it_was_issued() {
    for (what, time) in [
        ("after it expired", NOT_BEFORE + 601),
        ("before it was issued", NOT_BEFORE - 1),
    ] {
        let (log, trust, ann) = primed_on_own_log();
        let set = log.at(&ann.sets[0], time);
        let err = verify_certificate_set(&trust, &ann.message, &set).unwrap_err();
        assert!(
            matches!(err, SigstoreError::CertificateNotValidAt { .. }),
            "{what}: {err}"
        );
    }
}

#[test]
fn rejects_a_cached_certificate_at_a_time_its_authority_no_longer_covers() {
    // The root's 2022 Fulcio authority ends at 07:58:00, inside the certificate's ten
    // minutes: at 07:55:19 the chain is trusted, at 07:59:00 no trusted authority issued
    // the certificate, although the certificate itself is still valid.
    let mut root = pgi_json();
    for ca in root["certificateAuthorities"].as_array_mut().unwrap() {
        if ca["validFor"]["start"] == json!("2022-04-13T20:06:15.000Z") {
            ca["validFor"]["end"] = json!("2022-06-17T07:58:00Z");
        }
    }
    let log = TestLog::new();
    let (trust, ann) = (log.trusted_by(root), signed());
    prime(&trust, &ann);
    let after = log.at(&ann.sets[0], NOT_BEFORE + 222);
    let err = verify_certificate_set(&trust, &ann.message, &after).unwrap_err();
    assert!(
        matches!(err, SigstoreError::UntrustedCertificate(_)),
        "{err}"
    );
    // Control: inside the authority's window the same certificate verifies.
    let before = log.at(&ann.sets[0], NOT_BEFORE + 100);
    verify_certificate_set(&trust, &ann.message, &before).unwrap();
}

#[test]
fn rejects_a_cached_certificate_with_a_tampered_set() {
    let (trust, ann) = primed_on_pgi();
    let mut set = ann.sets[0].clone();
    set.bundle.as_mut().unwrap().payload.integrated_time += 1;
    let err = verify_certificate_set(&trust, &ann.message, &set).unwrap_err();
    assert!(
        matches!(err, SigstoreError::SignedEntryTimestamp(_)),
        "{err}"
    );
}

#[test]
fn rejects_a_cached_certificate_over_another_message() {
    let (trust, ann) = primed_on_pgi();
    let mut other = ann.message.clone();
    other.extend_from_slice(b"  key5: injected\n");
    let err = verify_certificate_set(&trust, &other, &ann.sets[0]).unwrap_err();
    assert!(matches!(err, SigstoreError::BadSignature(_)), "{err}");
}

#[test]
fn rejects_a_cached_certificate_with_another_sets_signature() {
    let (trust, ann) = primed_on_pgi();
    let mut set = ann.sets[0].clone();
    set.signature = ann.sets[1].signature.clone();
    assert!(verify_certificate_set(&trust, &ann.message, &set).is_err());
    assert_cache_used(&trust, 1);
}

#[test]
fn rejects_a_cached_certificate_whose_body_logs_another_signature() {
    let (log, trust, ann) = primed_on_own_log();
    let other = STANDARD.encode(&ann.sets[1].signature);
    let err = refusal_with_body(&log, &trust, &ann, |body| {
        body["spec"]["signature"]["content"] = json!(other);
    });
    assert!(matches!(err, SigstoreError::EntryMismatch(_)), "{err}");
}

#[test]
fn another_trust_root_does_not_see_the_cached_certificate() {
    let (_pgi, ann) = primed_on_pgi();
    // The pgi root's logs but staging's Fulcio CAs: the certificate is not trusted.
    let other = pgi_logs_with_staging_fulcio();
    let err = verify_certificate_set(&other, &ann.message, &ann.sets[0]).unwrap_err();
    assert!(
        matches!(err, SigstoreError::UntrustedCertificate(_)),
        "{err}"
    );
    assert_eq!(other.certificate_cache_stats().hits, 0);
}

#[test]
fn a_failed_chain_is_not_remembered() {
    let (trust, ann) = (pgi_logs_with_staging_fulcio(), signed());
    for _ in 0..2 {
        assert!(verify_certificate_set(&trust, &ann.message, &ann.sets[0]).is_err());
    }
    assert_eq!(
        trust.certificate_cache_stats(),
        VouchedStats {
            hits: 0,
            misses: 2,
            entries: 0
        }
    );
}

#[test]
fn rejects_a_cached_certificate_whose_body_logs_another_certificate() {
    let (log, trust, ann) = primed_on_own_log();
    let other_pem = ann.sets[1].certificate_pem.clone().unwrap();
    let err = refusal_with_body(&log, &trust, &ann, |body| {
        body["spec"]["signature"]["publicKey"]["content"] = json!(STANDARD.encode(other_pem));
    });
    assert!(matches!(err, SigstoreError::EntryMismatch(_)), "{err}");
    assert_cache_used(&trust, 1);
}

#[test]
fn rejects_a_cached_certificate_whose_body_logs_another_hash() {
    let (log, trust, ann) = primed_on_own_log();
    let other = hex::encode(Sha256::digest(b"another message"));
    let err = refusal_with_body(&log, &trust, &ann, |body| {
        body["spec"]["data"]["hash"]["value"] = json!(other);
    });
    assert!(matches!(err, SigstoreError::EntryMismatch(_)), "{err}");
    // another algorithm, or no hash at all, is a malformed entry
    let err = refusal_with_body(&log, &trust, &ann, |body| {
        body["spec"]["data"]["hash"]["algorithm"] = json!("sha512");
    });
    assert!(matches!(err, SigstoreError::MalformedEntry(_)), "{err}");
    let err = refusal_with_body(&log, &trust, &ann, |body| {
        body["spec"]["data"] = json!({});
    });
    assert!(matches!(err, SigstoreError::MalformedEntry(_)), "{err}");
    assert_cache_used(&trust, 3);
}

#[test]
fn a_cached_certificate_in_a_body_with_a_duplicate_key_is_refused() {
    // JSON decoders differ on duplicate keys (first or last wins): mansign refuses them.
    let (log, trust, ann) = primed_on_own_log();
    let set = with_raw_body(&log, &ann.sets[0], |body| {
        body.replacen(
            "\"spec\":",
            "\"spec\":{\"data\":{},\"signature\":{}},\"spec\":",
            1,
        )
    });
    let err = verify_certificate_set(&trust, &ann.message, &set).unwrap_err();
    assert!(
        matches!(
            err,
            SigstoreError::MalformedEntry(_) | SigstoreError::MalformedBundle(_)
        ),
        "{err}"
    );
}

#[test]
fn a_vouched_certificate_is_judged_by_its_own_facts() {
    // Issue 26: the root keeps what was read from each certificate (identity, issuer,
    // claims, key) and a vouched set is not parsed again. Two certificates vouched for: each
    // set, verified again from the cache, names its own signer, exactly as the first time.
    let (trust, ann) = (TrustRoot::from_file(fixture(PGI_ROOT)).unwrap(), signed());
    let first: Vec<_> = ann
        .sets
        .iter()
        .map(|set| verify_certificate_set(&trust, &ann.message, set).unwrap())
        .collect();
    assert_ne!(first[0].key_fingerprint, first[1].key_fingerprint);
    for (set, first) in ann.sets.iter().zip(&first) {
        assert_eq!(
            &verify_certificate_set(&trust, &ann.message, set).unwrap(),
            first
        );
    }
    assert_eq!(
        trust.certificate_cache_stats(),
        VouchedStats {
            hits: 2,
            misses: 2,
            entries: 2
        }
    );
    // Set 0's signature and entry with set 1's (vouched) certificate: checked with that
    // certificate's cached key, and refused.
    let mut swapped = ann.sets[0].clone();
    swapped.certificate_pem = ann.sets[1].certificate_pem.clone();
    let err = verify_certificate_set(&trust, &ann.message, &swapped).unwrap_err();
    assert!(matches!(err, SigstoreError::BadSignature(_)), "{err}");
    assert_cache_used(&trust, 3);
}

#[test]
fn a_certificate_is_remembered_only_once_its_whole_set_verified() {
    // A first sight whose chain and SCT verify but whose log entry is about another
    // signature: refused, and the certificate is not vouched for on its strength.
    let log = TestLog::new();
    let (trust, ann) = (log.trusted_by(pgi_json()), signed());
    let other = STANDARD.encode(&ann.sets[1].signature);
    let err = refusal_with_body(&log, &trust, &ann, |body| {
        body["spec"]["signature"]["content"] = json!(other);
    });
    assert!(matches!(err, SigstoreError::EntryMismatch(_)), "{err}");
    assert_eq!(trust.certificate_cache_stats().entries, 0);
    prime(&trust, &ann);
    assert_eq!(trust.certificate_cache_stats().entries, 1);
}

#[test]
fn a_first_sight_refuses_each_set_fault_with_one_set_check() {
    // Issue 26: on a certificate's first sight sigstore-verify checks the SET once (its
    // second, duplicate log pass is skipped). Each fault is still refused cold, and nothing
    // is remembered.
    let log = TestLog::new();
    let ann = signed();
    let root = log.added_to(pgi_json()).to_string();
    let cold = || TrustRoot::from_json(&root).unwrap();
    let mut tampered = ann.sets[0].clone();
    tampered.bundle.as_mut().unwrap().payload.integrated_time += 1;
    let future = jiff::Timestamp::now().as_second() + 3600;
    let mut other_message = ann.message.clone();
    other_message.extend_from_slice(b"  key5: injected\n");
    let cases: Vec<(&str, Vec<u8>, mansign::annotations::SignatureSet, &str)> = vec![
        ("a tampered SET", ann.message.clone(), tampered, "SET"),
        (
            "integrated in the future",
            ann.message.clone(),
            log.at(&ann.sets[0], future),
            "time",
        ),
        (
            "integrated after the certificate expired",
            ann.message.clone(),
            log.at(&ann.sets[0], NOT_BEFORE + 601),
            "validity",
        ),
        (
            "integrated before the certificate was issued",
            ann.message.clone(),
            log.at(&ann.sets[0], NOT_BEFORE - 1),
            "validity",
        ),
        ("another message", other_message, ann.sets[0].clone(), "any"),
    ];
    for (name, message, set, kind) in cases {
        let trust = cold();
        let err = verify_certificate_set(&trust, &message, &set).unwrap_err();
        let expected = match kind {
            "SET" => matches!(err, SigstoreError::SignedEntryTimestamp(_)),
            "time" => matches!(err, SigstoreError::IntegratedTime(_)),
            "validity" => matches!(err, SigstoreError::CertificateNotValidAt { .. }),
            _ => true,
        };
        assert!(expected, "{name}: {err}");
        assert_eq!(trust.certificate_cache_stats().entries, 0, "{name}");
    }
    // Control: the same set re-logged inside the certificate's validity verifies cold.
    let trust = cold();
    verify_certificate_set(&trust, &ann.message, &log.at(&ann.sets[0], NOT_BEFORE + 61)).unwrap();
    assert_eq!(trust.certificate_cache_stats().entries, 1);
}
