//! A Rekor log made by the test and the 2022 keyless fixture it re-logs: shared by
//! `tests/it/certificate_cache.rs`, `tests/it/warm_cold.rs` and `tests/it/keyless_verify.rs`, which build tampered Rekor
//! bodies with a valid SET over them (a faulty or private log signs whatever it is sent).
//!
//! Fixtures: testdata/ (k8s-manifest-sigstore, sigstore-trust-roots; provenance in
//! testdata/README.md). A missing fixture fails the test.
#![allow(dead_code)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, SignatureSet, SignedAnnotations, extract};
use mansign::manifest::load_inputs;
use mansign::trust::TrustRoot;
use mansign::verify::verify_certificate_set;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{DerSignature, SigningKey};
use p256::pkcs8::EncodePublicKey as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
pub const PGI_ROOT: &str = "k8s-manifest-sigstore/_external/sigstore-cosign-v3.0.4/pkg/cosign/testdata/trusted_root_pgi.json";
pub const STAGING_ROOT: &str = "sigstore-trust-roots/staging/trusted_root.json";
/// 2022, hashedrekord, two sets with two certificates. Set 0's certificate is valid for ten
/// minutes from 2022-06-17T07:55:18Z; its entry was integrated at 1_655_452_519.
pub const KEYLESS_MULTI: &str =
    "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-keyless-multi-signed.yaml";
pub const NOT_BEFORE: i64 = 1_655_452_518;

pub fn fixture(rel: &str) -> PathBuf {
    let p = Path::new(FIXTURES).join(rel);
    assert!(p.exists(), "fixture testdata/{rel} is missing");
    p
}

/// The annotations of [`KEYLESS_MULTI`]: the message and its two keyless sets.
pub fn signed() -> SignedAnnotations {
    let files = load_inputs(&[fixture(KEYLESS_MULTI)], &Limits::default()).unwrap();
    extract(
        &files[0].documents[0].value,
        &AnnotationDomain::default(),
        &Limits::default(),
    )
    .unwrap()
}

/// The trust root that vouches for [`KEYLESS_MULTI`]'s certificates, as JSON.
pub fn pgi_json() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(PGI_ROOT)).unwrap()).unwrap()
}

/// A Rekor log key made by the test, trusted by the roots built with [`TestLog::trusted_by`],
/// so a test can move an entry's integrated time or body and sign a valid SET over it.
pub struct TestLog {
    key: SigningKey,
    pub log_id_hex: String,
}

impl Default for TestLog {
    fn default() -> Self {
        Self::new()
    }
}

impl TestLog {
    pub fn new() -> Self {
        let key = SigningKey::random(&mut rand_core::OsRng);
        let spki = key.verifying_key().to_public_key_der().unwrap();
        TestLog {
            log_id_hex: hex::encode(Sha256::digest(spki.as_bytes())),
            key,
        }
    }

    /// `root` with this log added to its `tlogs`, as JSON.
    pub fn added_to(&self, mut root: Value) -> Value {
        let spki = self.key.verifying_key().to_public_key_der().unwrap();
        root["tlogs"].as_array_mut().unwrap().push(json!({
            "baseUrl": "https://rekor.test.invalid",
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": STANDARD.encode(spki.as_bytes()),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": "2020-01-01T00:00:00Z"}
            },
            "logId": {"keyId": STANDARD.encode(hex::decode(&self.log_id_hex).unwrap())}
        }));
        root
    }

    /// A fresh trust root: `root` with this log added.
    pub fn trusted_by(&self, root: Value) -> TrustRoot {
        TrustRoot::from_json(&self.added_to(root).to_string()).unwrap()
    }

    /// The set, its entry integrated at `time`, with a fresh SET by this log.
    pub fn at(&self, set: &SignatureSet, time: i64) -> SignatureSet {
        let mut set = set.clone();
        set.bundle.as_mut().unwrap().payload.integrated_time = time;
        self.resign(&mut set);
        set
    }

    /// Re-points the set's bundle at this log and signs a fresh SET over it.
    pub fn resign(&self, set: &mut SignatureSet) {
        set.bundle.as_mut().unwrap().payload.log_id = self.log_id_hex.clone();
        self.sign_as_is(set);
    }

    /// Signs a fresh SET over the set's payload as it stands, log id included: with another
    /// log's id, a SET that log's key did not make.
    pub fn sign_as_is(&self, set: &mut SignatureSet) {
        let bundle = set.bundle.as_mut().unwrap();
        let p = &bundle.payload;
        let payload = format!(
            r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
            p.body, p.integrated_time, p.log_id, p.log_index
        );
        let sig: DerSignature = self.key.sign(payload.as_bytes());
        bundle.signed_entry_timestamp = STANDARD.encode(sig.as_bytes());
    }

    /// `set` with its body replaced by `body` (the exact bytes logged), integrated at `time`.
    pub fn logging(&self, set: &SignatureSet, body: &[u8], time: i64) -> SignatureSet {
        let mut set = set.clone();
        set.bundle.as_mut().unwrap().payload.body = STANDARD.encode(body);
        self.at(&set, time)
    }
}

/// Verifies set 0 as logged, so its certificate is cached, and checks that it was.
pub fn prime(trust: &TrustRoot, ann: &SignedAnnotations) {
    verify_certificate_set(trust, &ann.message, &ann.sets[0]).unwrap();
    assert_eq!(trust.certificate_cache_stats().entries, 1);
}

/// The logged body of `set`, as JSON.
pub fn body_json(set: &SignatureSet) -> Value {
    serde_json::from_slice(&body_bytes(set)).unwrap()
}

/// The logged body of `set`, as its bytes.
pub fn body_bytes(set: &SignatureSet) -> Vec<u8> {
    STANDARD
        .decode(&set.bundle.as_ref().unwrap().payload.body)
        .unwrap()
}

/// `set` with its body edited by `edit` and a valid SET over the edited body, integrated
/// one second after the certificate's notBefore.
pub fn with_body(log: &TestLog, set: &SignatureSet, edit: impl FnOnce(&mut Value)) -> SignatureSet {
    let mut body = body_json(set);
    edit(&mut body);
    log.logging(set, body.to_string().as_bytes(), NOT_BEFORE + 1)
}

/// `set` with its body's text edited by `edit` (for what JSON values cannot express:
/// duplicate keys, exact spellings) and a valid SET over the result.
pub fn with_raw_body(
    log: &TestLog,
    set: &SignatureSet,
    edit: impl FnOnce(String) -> String,
) -> SignatureSet {
    let body = String::from_utf8(body_bytes(set)).unwrap();
    let edited = edit(body.clone());
    assert_ne!(edited, body, "the edit changed nothing");
    log.logging(set, edited.as_bytes(), NOT_BEFORE + 1)
}
