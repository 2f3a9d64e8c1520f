//! Tests of the key module: cosign key files (upstream fixtures in `testdata/`), hostile
//! key files, public-key parsing and fingerprints.

use super::encrypted_key::{NONCE_LEN, SALT_LEN, random_secret_key, seal_envelope};
use super::public_key::encode_pem;
use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/k8s-manifest-sigstore"
);
const K1_KEY: &str = "derived/pkg/k8smanifest/testdata/testkey.encrypted-cosign-key.pem";
const K1_PUB: &str = "derived/pkg/k8smanifest/testdata/testpub.pem";
const K2_KEY: &str = "derived/pkg/cosign/testdata/testkey.encrypted-cosign-key.pem";
const K2_PUB: &str = "derived/pkg/cosign/testdata/testpub.pem";
const K3_PUB: &str = "example/verify-resource/cosign.pub";

/// Reads a fixture from `testdata/`; a missing one fails the test.
fn fixture(rel: &str) -> String {
    let path: PathBuf = Path::new(FIXTURES).join(rel);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} unreadable: {e}", path.display()))
}

fn envelope_json(pem_text: &str) -> serde_json::Value {
    let block = pem::parse(pem_text).expect("test PEM parses");
    serde_json::from_slice(block.contents()).expect("test envelope is JSON")
}

fn repem(label: &str, json: &serde_json::Value) -> String {
    encode_pem(label, serde_json::to_vec(json).expect("JSON serializes"))
}

fn sample_encrypted_key() -> (SigningKey, String) {
    let secret = random_secret_key().expect("key generation");
    let pem_text = encrypt_private_key(&secret, b"pw").expect("encrypt");
    (SigningKey::from(secret), pem_text)
}

fn assert_decrypts_to_fixture_pub(key_rel: &str, pub_rel: &str) {
    let (key_pem, pub_pem) = (fixture(key_rel), fixture(pub_rel));
    assert!(key_pem.contains("ENCRYPTED COSIGN PRIVATE KEY"));
    let signing = decrypt_private_key(&key_pem, b"").expect("fixture key decrypts");
    let expected = parse_public_key_pem(&pub_pem).expect("fixture pub parses");
    assert_eq!(*signing.verifying_key(), expected);
}

#[test]
fn fixture_k1_decrypts_with_empty_password_and_matches_its_public_key() {
    assert_decrypts_to_fixture_pub(K1_KEY, K1_PUB);
}

#[test]
fn fixture_k2_decrypts_with_empty_password_and_matches_its_public_key() {
    assert_decrypts_to_fixture_pub(K2_KEY, K2_PUB);
}

#[test]
fn fixture_key_with_wrong_password_is_wrong_password() {
    let key_pem = fixture(K1_KEY);
    let err = decrypt_private_key(&key_pem, b"not-the-password").unwrap_err();
    assert!(matches!(err, KeyError::WrongPassword), "{err}");
}

#[test]
fn fixture_public_keys_reencode_byte_for_byte_and_have_known_fingerprints() {
    let cases = [
        (
            K1_PUB,
            "8e41db5d0e354e853d28e5be5c63a085fec58ad350bac8d07ab6689ab2a19afd",
        ),
        (
            K2_PUB,
            "f01eea9f0b3761d635e21477afc1613da40d7f82969e41a51fd36c29029972df",
        ),
        (
            K3_PUB,
            "66e7b47c956826ca17e683d7b72565b03a14e53c0505a1fdd3db7e321dcab4bc",
        ),
    ];
    for (rel, fingerprint) in cases {
        let text = fixture(rel);
        let key = parse_public_key_pem(&text).expect("fixture pub parses");
        assert_eq!(public_key_pem(&key).expect("encodes"), text, "{rel}");
        assert_eq!(public_key_fingerprint(&key), fingerprint, "{rel}");
    }
}

/// Asserts that `text` is one PEM block labelled `label`, from its first line to its last.
fn assert_pem_block(text: &str, label: &str) {
    assert!(
        text.starts_with(&format!("-----BEGIN {label}-----\n")),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("-----END {label}-----\n")),
        "{text}"
    );
}

#[test]
fn generated_key_round_trips_through_encrypt_and_decrypt() {
    let pair = generate_key_pair(b"correct horse").expect("generate");
    assert_pem_block(&pair.private_key_pem, "ENCRYPTED SIGSTORE PRIVATE KEY");
    let signing = decrypt_private_key(&pair.private_key_pem, b"correct horse").expect("decrypt");
    let public = parse_public_key_pem(&pair.public_key_pem).expect("pub parses");
    assert_eq!(*signing.verifying_key(), public);

    // And an explicitly given key comes back identical.
    let (original, pem_text) = sample_encrypted_key();
    let decrypted = decrypt_private_key(&pem_text, b"pw").expect("decrypt");
    assert_eq!(original.to_bytes(), decrypted.to_bytes());
}

#[test]
fn written_envelope_has_cosign_shape_and_parameters() {
    let (_, pem_text) = sample_encrypted_key();
    let json = envelope_json(&pem_text);
    assert_eq!(json["kdf"]["name"], "scrypt");
    assert_eq!(json["kdf"]["params"]["N"], 32768);
    assert_eq!(json["kdf"]["params"]["r"], 8);
    assert_eq!(json["kdf"]["params"]["p"], 1);
    assert_eq!(json["cipher"]["name"], "nacl/secretbox");
    let salt = BASE64
        .decode(json["kdf"]["salt"].as_str().expect("salt string"))
        .expect("salt base64");
    let nonce = BASE64
        .decode(json["cipher"]["nonce"].as_str().expect("nonce string"))
        .expect("nonce base64");
    assert_eq!(salt.len(), 32);
    assert_eq!(nonce.len(), 24);
    let body = pem::parse(&pem_text).expect("parses");
    let text = std::str::from_utf8(body.contents()).expect("utf8");
    assert!(
        text.starts_with(r#"{"kdf":{"name":"scrypt","params":{"N":32768,"r":8,"p":1},"salt":""#),
        "{text}"
    );
}

#[test]
fn generated_key_with_wrong_password_is_wrong_password() {
    let (_, pem_text) = sample_encrypted_key();
    let err = decrypt_private_key(&pem_text, b"wrong").unwrap_err();
    assert!(matches!(err, KeyError::WrongPassword), "{err}");
}

#[test]
fn legacy_cosign_label_is_accepted() {
    let (original, pem_text) = sample_encrypted_key();
    let legacy = repem(LEGACY_COSIGN_PRIVATE_KEY_LABEL, &envelope_json(&pem_text));
    let decrypted = decrypt_private_key(&legacy, b"pw").expect("decrypt");
    assert_eq!(original.to_bytes(), decrypted.to_bytes());
}

#[test]
fn signature_made_with_decrypted_key_verifies_with_parsed_public_key() {
    let pair = generate_key_pair(b"").expect("generate");
    let signing = decrypt_private_key(&pair.private_key_pem, b"").expect("decrypt");
    let message = b"apiVersion: v1\nkind: ConfigMap\n";
    let signature: Signature = signing.sign(message);
    let der = signature.to_der();
    let parsed_sig = Signature::from_der(der.as_bytes()).expect("DER signature parses");
    let public = parse_public_key_pem(&pair.public_key_pem).expect("pub parses");
    assert!(public.verify(message, &parsed_sig).is_ok());
    assert!(public.verify(b"something else", &parsed_sig).is_err());
}

#[test]
fn fixture_key_signature_verifies_with_fixture_public_key() {
    let (key_pem, pub_pem) = (fixture(K2_KEY), fixture(K2_PUB));
    let signing = decrypt_private_key(&key_pem, b"").expect("decrypt");
    let signature: Signature = signing.sign(b"hello");
    let public = parse_public_key_pem(&pub_pem).expect("pub parses");
    let parsed = Signature::from_der(signature.to_der().as_bytes()).expect("DER");
    assert!(public.verify(b"hello", &parsed).is_ok());
}

/// Asserts that `err` matches the pattern (and its `if` guard), showing the error if not.
macro_rules! assert_error {
    ($err:expr, $($pattern:tt)+) => {{
        let err = $err;
        assert!(matches!(err, $($pattern)+), "{err}");
    }};
}

/// Decrypts `pem_text` (password `pw`) after `edit` changed its envelope JSON: the error.
fn decrypt_edited(pem_text: &str, edit: impl FnOnce(&mut serde_json::Value)) -> KeyError {
    let mut json = envelope_json(pem_text);
    edit(&mut json);
    decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err()
}

/// Rewrites the kdf params of a valid key file and tries to decrypt it.
fn decrypt_with_params(n: u64, r: u64, p: u64) -> (KeyError, Duration) {
    let (_, pem_text) = sample_encrypted_key();
    let start = Instant::now();
    let err = decrypt_edited(&pem_text, |json| {
        json["kdf"]["params"] = serde_json::json!({ "N": n, "r": r, "p": p });
    });
    (err, start.elapsed())
}

#[test]
fn hostile_scrypt_n_is_refused_quickly() {
    let (err, elapsed) = decrypt_with_params(1 << 30, 8, 1);
    assert_error!(err, KeyError::ScryptParamsTooExpensive { n, .. } if n == 1 << 30);
    assert!(elapsed < Duration::from_millis(500), "took {elapsed:?}");
}

#[test]
fn hostile_scrypt_r_times_p_is_refused() {
    let (err, _) = decrypt_with_params(1 << 10, 1 << 20, 1 << 20);
    assert_error!(err, KeyError::ScryptParamsTooExpensive { .. });
    let (err, _) = decrypt_with_params(1 << 15, u64::MAX, 2);
    assert_error!(err, KeyError::ScryptParamsTooExpensive { .. });
}

#[test]
fn scrypt_work_above_the_bound_is_refused() {
    // Each parameter alone is within bounds, the product is not.
    let (err, _) = decrypt_with_params(1 << 20, 16, 1);
    assert_error!(err, KeyError::ScryptParamsTooExpensive { .. });
}

#[test]
fn scrypt_n_not_a_power_of_two_or_zero_params_are_invalid() {
    for (n, r, p) in [
        (1000, 8, 1),
        (0, 8, 1),
        (1, 8, 1),
        (32768, 0, 1),
        (32768, 8, 0),
        // scrypt requires N < 2^(16 r).
        (1 << 16, 1, 1),
    ] {
        let (err, _) = decrypt_with_params(n, r, p);
        assert_error!(err, KeyError::InvalidScryptParams { .. });
    }
}

#[test]
fn wrong_salt_or_nonce_length_is_refused() {
    let (_, pem_text) = sample_encrypted_key();
    let err = decrypt_edited(&pem_text, |json| {
        json["kdf"]["salt"] = BASE64.encode([0u8; 16]).into();
    });
    assert_error!(err, KeyError::BadSaltLength { len: 16, .. });
    let err = decrypt_edited(&pem_text, |json| {
        json["cipher"]["nonce"] = BASE64.encode([0u8; 12]).into();
    });
    assert_error!(err, KeyError::BadNonceLength { len: 12, .. });
}

#[test]
fn truncated_ciphertext_is_refused() {
    let (_, pem_text) = sample_encrypted_key();
    let err = decrypt_edited(&pem_text, |json| {
        json["ciphertext"] = BASE64.encode([0u8; 5]).into();
    });
    assert_error!(err, KeyError::CiphertextTooShort { len: 5, .. });
}

#[test]
fn other_kdf_or_cipher_names_are_refused() {
    let (_, pem_text) = sample_encrypted_key();
    let err = decrypt_edited(&pem_text, |json| json["kdf"]["name"] = "argon2".into());
    assert_error!(err, KeyError::UnsupportedKdf(ref n) if n == "argon2");
    let err = decrypt_edited(&pem_text, |json| json["cipher"]["name"] = "aes-gcm".into());
    assert_error!(err, KeyError::UnsupportedCipher(ref n) if n == "aes-gcm");
}

#[test]
fn garbage_input_is_no_pem_block() {
    let err = decrypt_private_key("this is not a key", b"").unwrap_err();
    assert_error!(err, KeyError::NoPemBlock);
    let err = parse_public_key_pem("").unwrap_err();
    assert_error!(err, KeyError::NoPemBlock);
}

#[test]
fn malformed_pem_is_invalid_pem() {
    for text in [
        "-----BEGIN PUBLIC KEY-----\n!!!not base64!!!\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ] {
        let err = parse_public_key_pem(text).unwrap_err();
        assert!(matches!(err, KeyError::InvalidPem { .. }), "{text}: {err}");
    }
}

#[test]
fn wrong_pem_label_is_refused_for_both_key_kinds() {
    let pair = generate_key_pair(b"").expect("generate");
    let err = decrypt_private_key(&pair.public_key_pem, b"").unwrap_err();
    assert_error!(err, KeyError::WrongPemLabel { ref found, .. } if found == "PUBLIC KEY");
    let err = parse_public_key_pem(&pair.private_key_pem).unwrap_err();
    assert_error!(
        err,
        KeyError::WrongPemLabel { ref found, .. } if found == SIGSTORE_PRIVATE_KEY_LABEL
    );
}

#[test]
fn two_pem_blocks_are_refused() {
    let pair = generate_key_pair(b"").expect("generate");
    let doubled = format!("{}{}", pair.public_key_pem, pair.public_key_pem);
    let err = parse_public_key_pem(&doubled).unwrap_err();
    assert_error!(err, KeyError::MultiplePemBlocks { count: 2 });
}

#[test]
fn envelope_that_is_not_json_is_invalid_envelope_json() {
    let text = encode_pem(SIGSTORE_PRIVATE_KEY_LABEL, b"{not json".to_vec());
    let err = decrypt_private_key(&text, b"").unwrap_err();
    assert_error!(err, KeyError::InvalidEnvelopeJson { .. });

    // Valid JSON, wrong shape (missing fields, negative N).
    let text = encode_pem(SIGSTORE_PRIVATE_KEY_LABEL, br#"{"kdf":{}}"#.to_vec());
    let err = decrypt_private_key(&text, b"").unwrap_err();
    assert_error!(err, KeyError::InvalidEnvelopeJson { .. });
    let (_, pem_text) = sample_encrypted_key();
    let err = decrypt_edited(&pem_text, |json| json["kdf"]["params"]["N"] = (-1).into());
    assert_error!(err, KeyError::InvalidEnvelopeJson { .. });
}

#[test]
fn bad_base64_field_is_invalid_base64_naming_the_field() {
    let (_, pem_text) = sample_encrypted_key();
    for (path, field) in [
        (("kdf", "salt"), "kdf.salt"),
        (("cipher", "nonce"), "cipher.nonce"),
    ] {
        let err = decrypt_edited(&pem_text, |json| json[path.0][path.1] = "***".into());
        assert!(
            matches!(err, KeyError::InvalidBase64 { field: f, .. } if f == field),
            "{field}: {err}"
        );
    }
    let err = decrypt_edited(&pem_text, |json| json["ciphertext"] = "not base64!".into());
    assert_error!(
        err,
        KeyError::InvalidBase64 {
            field: "ciphertext",
            ..
        }
    );
}

/// Asserts that `err` is [`KeyError::UnsupportedKeyType`] naming every one of `names`.
fn assert_unsupported(err: KeyError, names: &[&str]) {
    assert!(
        matches!(err, KeyError::UnsupportedKeyType { ref algorithm }
            if names.iter().all(|name| algorithm.contains(name))),
        "{names:?}: {err}"
    );
}

/// SPKI for an Ed25519 key (RFC 8410), built from bytes.
fn ed25519_spki_der() -> Vec<u8> {
    let mut der = vec![
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
    ];
    der.extend_from_slice(&[0x42; 32]);
    der
}

#[test]
fn ed25519_public_key_is_unsupported_key_type() {
    let text = encode_pem(PUBLIC_KEY_LABEL, ed25519_spki_der());
    let err = parse_public_key_pem(&text).unwrap_err();
    assert_unsupported(err, &["Ed25519", "1.3.101.112"]);
}

#[test]
fn p384_public_key_is_unsupported_key_type_naming_the_curve() {
    // SPKI header for id-ecPublicKey on secp384r1 with a 97-byte point; the point
    // bytes are never looked at because the curve is refused first.
    let mut der = vec![
        0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05,
        0x2b, 0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00, 0x04,
    ];
    der.extend_from_slice(&[0x11; 96]);
    let err = parse_public_key_pem(&encode_pem(PUBLIC_KEY_LABEL, der)).unwrap_err();
    assert_unsupported(err, &["P-384", "1.3.132.0.34"]);
}

#[test]
fn encrypted_ed25519_private_key_is_unsupported_key_type() {
    // PKCS#8 for an Ed25519 key (RFC 8410), built from bytes.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&[0x07; 32]);
    let text = seal_envelope(&der, b"", &[1; SALT_LEN], &[2; NONCE_LEN]).expect("seal");
    let err = decrypt_private_key(&text, b"").unwrap_err();
    assert_unsupported(err, &["Ed25519"]);
}

#[test]
fn encrypted_non_pkcs8_plaintext_is_invalid_private_key() {
    let text =
        seal_envelope(b"not DER at all", b"", &[1; SALT_LEN], &[2; NONCE_LEN]).expect("seal");
    let err = decrypt_private_key(&text, b"").unwrap_err();
    assert_error!(err, KeyError::InvalidPrivateKey { .. });
}

#[test]
fn public_key_pem_tolerates_surrounding_whitespace() {
    let pair = generate_key_pair(b"").expect("generate");
    let padded = format!("\n\n  {}  \n\t\n", pair.public_key_pem);
    let key = parse_public_key_pem(&padded).expect("parses");
    assert_eq!(public_key_pem(&key).expect("encodes"), pair.public_key_pem);
}

#[test]
fn public_key_pem_output_is_pkix_public_key_block() {
    let pair = generate_key_pair(b"").expect("generate");
    assert_pem_block(&pair.public_key_pem, "PUBLIC KEY");
}

#[test]
fn fingerprint_is_sha256_of_spki_der_in_lowercase_hex() {
    let pair = generate_key_pair(b"").expect("generate");
    let key = parse_public_key_pem(&pair.public_key_pem).expect("parses");
    let der = pem::parse(&pair.public_key_pem).expect("pem");
    let expected = hex::encode(Sha256::digest(der.contents()));
    let fingerprint = public_key_fingerprint(&key);
    assert_eq!(fingerprint, expected);
    assert_eq!(fingerprint.len(), 64);
    assert!(
        fingerprint
            .chars()
            .all(|c| matches!(c, '0'..='9' | 'a'..='f'))
    );
}
