//! The verification cache saves the signature checks of a re-applied object, never a
//! verdict: the object is compared every time, and another requirement has its own cache.

use crate::common;

use common::MULTI_DOC;
use mansign::Limits;
use mansign::keys;
use mansign::manifest::{Document, DocumentOrigin, Source};
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::verify::{Attestor, TrustedKey, Verifier};
use serde_json::json;

fn signed(at: Option<&str>) -> (Vec<Document>, String) {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let mut files = vec![common::load_text("x", "x", MULTI_DOC)];
    let mut options = SignOptions::default();
    options.signed_at = at.map(|t| t.parse().unwrap());
    sign_files(&mut files, &KeySigner::new(key), &options).unwrap();
    (files.remove(0).documents, pair.public_key_pem.to_string())
}

fn verifier(public_key_pem: &str) -> Verifier {
    Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("k", public_key_pem).unwrap(),
    )])
}

#[test]
fn a_reapplied_object_is_a_cache_hit_with_the_same_verdict() {
    let (docs, key) = signed(None);
    let v = verifier(&key);
    let first = v.verify_document(&docs[0]);
    let second = v.verify_document(&docs[0]);
    assert!(first.is_verified() && second.is_verified());
    assert_eq!(first.result.unwrap(), second.result.unwrap());
    let stats = v.cache().stats();
    assert_eq!((stats.misses, stats.hits, stats.entries), (1, 1, 1));
}

#[test]
fn a_tampered_object_with_cached_signatures_is_still_rejected() {
    let (docs, key) = signed(None);
    let v = verifier(&key);
    assert!(v.verify_document(&docs[0]).is_verified());
    let mut tampered = docs[0].value.clone();
    tampered["data"]["mode"] = json!("permissive");
    let verdict = v.verify_object(&tampered).unwrap();
    assert_eq!(verdict.result.unwrap_err().code(), "modified");
    assert_eq!(
        v.cache().stats().hits,
        1,
        "the signatures came from the cache"
    );
}

#[test]
fn clones_share_the_cache_and_other_requirements_do_not() {
    let (docs, key) = signed(None);
    let v = verifier(&key);
    assert!(v.clone().verify_document(&docs[0]).is_verified());
    assert!(v.verify_document(&docs[0]).is_verified());
    assert_eq!(v.cache().stats().hits, 1);
    // A verifier for another key never sees this acceptance.
    let other = keys::generate_key_pair(b"").unwrap();
    let w = verifier(&other.public_key_pem);
    assert!(!w.verify_document(&docs[0]).is_verified());
    assert_eq!(w.cache().stats().hits, 0);
}

#[test]
fn a_cached_acceptance_expires_with_the_maximum_age() {
    let (docs, key) = signed(Some("2026-06-01T12:00:00Z"));
    let v = verifier(&key).with_max_age(jiff::SignedDuration::from_hours(1));
    let early = v
        .clone()
        .with_clock("2026-06-01T12:30:00Z".parse().unwrap());
    assert!(early.verify_document(&docs[0]).is_verified());
    let late = v.with_clock("2026-06-01T13:00:01Z".parse().unwrap());
    let verdict = late.verify_document(&docs[0]);
    assert_eq!(verdict.result.unwrap_err().code(), "too-old");
}

/// The documents signed together in one message with a fresh key: the signed objects and
/// the public key PEM.
fn sign_together(docs: Vec<serde_json::Value>) -> (Vec<serde_json::Value>, String) {
    use mansign::annotations::{AnnotationDomain, EmbedMode, SignatureSet, embed};
    use mansign::manifest::build_message;
    use p256::ecdsa::signature::Signer as _;
    use p256::ecdsa::{DerSignature, SigningKey};
    use p256::pkcs8::{EncodePublicKey as _, LineEnding};

    let message = build_message(docs.iter());
    let key = SigningKey::random(&mut rand_core::OsRng);
    let signature: DerSignature = key.sign(&message);
    let set = SignatureSet {
        index: 0,
        signature: signature.as_bytes().to_vec(),
        certificate_pem: None,
        bundle: None,
    };
    let signed = docs
        .into_iter()
        .map(|mut d| {
            let (domain, limits) = (AnnotationDomain::default(), Limits::default());
            embed(
                &mut d,
                &domain,
                &message,
                std::slice::from_ref(&set),
                EmbedMode::Replace,
                &limits,
            )
            .unwrap();
            d
        })
        .collect();
    let pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    (signed, pem)
}

/// Two documents signed in one message, but with different signed times: a cache hit for
/// one must not carry its age over to the other.
#[test]
fn a_cache_hit_checks_the_age_of_the_document_it_compares_with() {
    let doc = |name: &str, at: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns",
                            "annotations": {"mansign.dev/signed-at": at}},
               "data": {"a": "1"}})
    };
    let fresh = doc("fresh", "2026-06-01T12:00:00Z");
    let old = doc("old", "2026-05-01T12:00:00Z");
    let (signed, pem) = sign_together(vec![fresh, old]);
    let v = verifier(&pem)
        .with_max_age(jiff::SignedDuration::from_hours(24))
        .with_clock("2026-06-01T13:00:00Z".parse().unwrap());
    // without the cache: the fresh document verifies, the old one is too old
    let uncached = v.clone().with_cache(std::sync::Arc::new(
        mansign::verify::VerificationCache::new(0),
    ));
    assert!(uncached.verify_object(&signed[0]).unwrap().is_verified());
    let expected = uncached.verify_object(&signed[1]).unwrap();
    assert_eq!(expected.result.unwrap_err().code(), "too-old");
    // with it: the same verdicts, although both objects carry the same signature material
    assert!(v.verify_object(&signed[0]).unwrap().is_verified());
    // the acceptance is cached, but it cannot answer for the old document without checks
    assert!(
        v.verify_document_cached(&document(&signed[1]), usize::MAX)
            .is_none()
    );
    let verdict = v.verify_object(&signed[1]).unwrap();
    assert_eq!(verdict.result.unwrap_err().code(), "too-old");
    assert!(v.verify_object(&signed[0]).unwrap().is_verified());
    let cached = v.verify_document_cached(&document(&signed[0]), usize::MAX);
    assert!(cached.unwrap().is_verified());
    // counted once each, when decided: the old document was a miss (its signatures had to
    // be checked again), the fresh one's second and third verifications hits
    let stats = v.cache().stats();
    assert_eq!((stats.hits, stats.misses), (2, 2), "{stats:?}");
}

fn document(value: &serde_json::Value) -> Document {
    let origin = DocumentOrigin {
        source: Source::Named("request".into()),
        index: 0,
        item: None,
    };
    Document::new(origin, value.clone()).unwrap()
}

#[test]
fn verify_document_cached_answers_only_from_the_cache_and_within_its_bound() {
    let (docs, key) = signed(None);
    let v = verifier(&key);
    // the PolicyException, the second signed document
    let exception = &docs[1];
    assert!(v.verify_document_cached(exception, usize::MAX).is_none());
    assert_eq!(
        v.cache().stats().misses,
        0,
        "an unanswered look-up is not a miss"
    );
    let full = v.verify_document(exception);
    assert!(full.is_verified());
    let cached = v.verify_document_cached(exception, usize::MAX).unwrap();
    assert_eq!(cached.result.unwrap(), full.result.unwrap());
    assert_eq!(cached.object, full.object);
    // Another signed document (its own message): not cached.
    assert!(v.verify_document_cached(&docs[0], usize::MAX).is_none());
    let mut tampered = exception.value.clone();
    tampered["spec"]["match"]["any"][0]["resources"]["names"][0] = json!("*");
    let verdict = v
        .verify_document_cached(&document(&tampered), usize::MAX)
        .unwrap();
    assert_eq!(verdict.result.unwrap_err().code(), "modified");
    // Same signature material on an object the message does not hold.
    let mut renamed = exception.value.clone();
    renamed["metadata"]["name"] = json!("allow-everything");
    let verdict = v
        .verify_document_cached(&document(&renamed), usize::MAX)
        .unwrap();
    let expected = v
        .clone()
        .with_cache(std::sync::Arc::new(
            mansign::verify::VerificationCache::new(0),
        ))
        .verify_document(&document(&renamed));
    assert_eq!(verdict.result.unwrap_err().code(), "not-in-message");
    assert_eq!(expected.result.unwrap_err().code(), "not-in-message");
    // A signed document larger than the bound is left to the full verification.
    assert!(v.verify_document_cached(exception, 100).is_none());
    let stats = v.cache().stats();
    assert_eq!((stats.hits, stats.misses), (3, 1), "{stats:?}");
}

/// A message of 25 documents, and an object it does not hold: the refusal names 20 of them
/// and counts the rest, from the cache as without it.
#[test]
fn not_in_message_names_a_bounded_number_of_signed_objects() {
    let docs: Vec<_> = (0..25)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("cm-{i}"), "namespace": "ns"}})
        })
        .collect();
    let (signed, pem) = sign_together(docs);
    let v = verifier(&pem);
    assert!(v.verify_object(&signed[0]).unwrap().is_verified());
    let mut other = signed[0].clone();
    other["metadata"]["name"] = json!("cm-other");
    for round in ["cached", "uncached"] {
        let v = match round {
            "cached" => v.clone(),
            _ => v.clone().with_cache(std::sync::Arc::new(
                mansign::verify::VerificationCache::new(0),
            )),
        };
        let rejection = v.verify_object(&other).unwrap().result.unwrap_err();
        let mansign::verify::Rejection::NotInMessage {
            signed, unlisted, ..
        } = &rejection
        else {
            panic!("{round}: {rejection:?}");
        };
        assert_eq!(
            signed.len(),
            mansign::verify::MAX_LISTED_DOCUMENTS,
            "{round}"
        );
        assert_eq!(*unlisted, 5, "{round}");
        assert!(signed[0].contains("cm-0"), "{round}: {signed:?}");
        let text = rejection.to_string();
        assert!(text.ends_with(" and 5 more)"), "{round}: {text}");
        assert!(!text.contains("cm-24"), "{round}: {text}");
    }
    assert_eq!(v.cache().stats().hits, 1);
}
