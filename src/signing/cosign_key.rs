//! Cosign key files: the password-encrypted private key (`cosign.key`) and the PKIX
//! public key (`cosign.pub`).
//!
//! # Format
//!
//! This follows what cosign writes and reads (cosign `pkg/cosign/keys.go`, which
//! encrypts with sigstore's `pkg/encrypted` package):
//!
//! * The private key file is one PEM block labelled `ENCRYPTED SIGSTORE PRIVATE KEY`
//!   (older cosign releases wrote `ENCRYPTED COSIGN PRIVATE KEY`; both are read, the
//!   first is written). Its body is a JSON envelope:
//!
//!   ```json
//!   {"kdf":{"name":"scrypt","params":{"N":32768,"r":8,"p":1},"salt":"<base64>"},
//!    "cipher":{"name":"nacl/secretbox","nonce":"<base64>"},
//!    "ciphertext":"<base64>"}
//!   ```
//!
//!   The secretbox key is `scrypt(password, salt, N, r, p)` truncated to 32 bytes, the
//!   plaintext is the PKCS#8 DER encoding of the private key, and all binary fields
//!   are standard base64 with padding (Go's encoding of `[]byte` in JSON).
//! * The public key file is a `PUBLIC KEY` PEM block holding a DER
//!   SubjectPublicKeyInfo.
//!
//! # Guarantees
//!
//! * Only ECDSA P-256 keys are accepted; anything else is
//!   [`CosignKeyError::UnsupportedKeyType`], naming the algorithm found.
//! * The scrypt parameters in a key file are honoured, but bounded (see
//!   [`MAX_SCRYPT_N`], [`MAX_SCRYPT_R_TIMES_P`], [`MAX_SCRYPT_WORK`]) *before* any
//!   key derivation runs, so a hostile key file cannot make us spend minutes of CPU
//!   or gigabytes of memory.
//! * A wrong password is reported as [`CosignKeyError::WrongPassword`], distinct from
//!   every kind of malformed file.
//! * The derived symmetric key and the decrypted PKCS#8 DER are zeroized when dropped.
//! * No function here panics on malformed input.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Key, Nonce, XSalsa20Poly1305};
use p256::ecdsa::{SigningKey, VerifyingKey};
use pkcs8::{EncodePrivateKey, ObjectIdentifier, PrivateKeyInfo};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use spki::{DecodePublicKey, EncodePublicKey, SubjectPublicKeyInfoRef};
use zeroize::Zeroizing;

/// PEM label written by current cosign for encrypted private keys.
pub const SIGSTORE_PRIVATE_KEY_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// PEM label written by older cosign releases; still accepted when reading.
pub const LEGACY_COSIGN_PRIVATE_KEY_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";
/// PEM label of a PKIX (SubjectPublicKeyInfo) public key.
pub const PUBLIC_KEY_LABEL: &str = "PUBLIC KEY";

/// Largest scrypt `N` accepted from a key file (2^20; cosign writes 2^15).
pub const MAX_SCRYPT_N: u64 = 1 << 20;
/// Largest scrypt `r * p` accepted from a key file (cosign writes 8).
pub const MAX_SCRYPT_R_TIMES_P: u64 = 64;
/// Largest scrypt `N * r * p` accepted from a key file. CPU time is proportional to
/// this product and memory to `128 * N * r`, so this caps memory at 1 GiB and work at
/// 32 times cosign's own parameters (2^15 * 8 * 1).
pub const MAX_SCRYPT_WORK: u64 = 1 << 23;

/// Parameters used when writing a key file; the same as cosign's so that cosign can
/// read our keys with its usual cost.
const WRITE_SCRYPT_LOG_N: u8 = 15;
const WRITE_SCRYPT_R: u32 = 8;
const WRITE_SCRYPT_P: u32 = 1;

const KDF_NAME: &str = "scrypt";
const CIPHER_NAME: &str = "nacl/secretbox";
/// Salt length written by sigstore's `pkg/encrypted`; every cosign key file has it.
const SALT_LEN: usize = 32;
const NONCE_LEN: usize = 24;
const SECRETBOX_KEY_LEN: usize = 32;
const SECRETBOX_TAG_LEN: usize = 16;

/// `id-ecPublicKey` (RFC 5480).
const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// `secp256r1` / P-256 (RFC 5480).
const OID_SECP256R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");

/// Why a cosign key could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CosignKeyError {
    #[error("not valid PEM: {source}")]
    InvalidPem {
        #[source]
        source: pem::PemError,
    },
    #[error("no PEM block found")]
    NoPemBlock,
    #[error("expected exactly one PEM block, found {count}")]
    MultiplePemBlocks { count: usize },
    #[error("PEM block is labelled {found:?}, expected {expected}")]
    WrongPemLabel {
        found: String,
        expected: &'static str,
    },
    #[error("encrypted private key is not a valid cosign JSON envelope: {source}")]
    InvalidEnvelopeJson {
        #[source]
        source: serde_json::Error,
    },
    #[error("field {field} of the encrypted private key is not valid base64: {source}")]
    InvalidBase64 {
        field: &'static str,
        #[source]
        source: base64::DecodeError,
    },
    #[error("unsupported key derivation function {0:?} (only \"scrypt\" is supported)")]
    UnsupportedKdf(String),
    #[error("unsupported cipher {0:?} (only \"nacl/secretbox\" is supported)")]
    UnsupportedCipher(String),
    #[error(
        "invalid scrypt parameters N={n}, r={r}, p={p}: N must be a power of two \
         greater than 1 and below 2^(16*r), and r and p must be positive"
    )]
    InvalidScryptParams { n: u64, r: u64, p: u64 },
    #[error(
        "scrypt parameters N={n}, r={r}, p={p} are too expensive (limits: N <= 2^20, \
         r*p <= 64, N*r*p <= 2^23); refusing to derive a key from this file"
    )]
    ScryptParamsTooExpensive { n: u64, r: u64, p: u64 },
    #[error("scrypt salt is {len} bytes, expected {SALT_LEN}")]
    BadSaltLength { len: usize },
    #[error("secretbox nonce is {len} bytes, expected {NONCE_LEN}")]
    BadNonceLength { len: usize },
    #[error(
        "ciphertext is {len} bytes, shorter than the {SECRETBOX_TAG_LEN}-byte authentication tag"
    )]
    CiphertextTooShort { len: usize },
    #[error("wrong password for the encrypted private key (or the key file was modified)")]
    WrongPassword,
    #[error("decrypted private key is not valid PKCS#8: {source}")]
    InvalidPrivateKey {
        #[source]
        source: pkcs8::Error,
    },
    #[error("invalid public key: {source}")]
    InvalidPublicKey {
        #[source]
        source: spki::Error,
    },
    #[error("unsupported key type {algorithm}; only ECDSA P-256 keys are supported")]
    UnsupportedKeyType { algorithm: String },
    #[error("the operating system's random number generator failed: {source}")]
    Randomness {
        #[source]
        source: rand_core::Error,
    },
    #[error("could not generate a P-256 private key from the random bytes drawn")]
    KeyGeneration,
    #[error("encoding the private key as PKCS#8 failed: {source}")]
    EncodePrivateKey {
        #[source]
        source: pkcs8::Error,
    },
    #[error("encoding the public key as SubjectPublicKeyInfo failed: {source}")]
    EncodePublicKey {
        #[source]
        source: spki::Error,
    },
    #[error("encrypting the private key failed")]
    Encrypt,
    #[error("serializing the encrypted private key envelope failed: {source}")]
    EncodeEnvelope {
        #[source]
        source: serde_json::Error,
    },
}

/// A freshly generated key pair, as the two files `cosign generate-key-pair` writes.
#[derive(Debug)]
pub struct GeneratedKeyPair {
    /// `cosign.key`: the password-encrypted private key PEM.
    pub private_key_pem: Zeroizing<String>,
    /// `cosign.pub`: the PKIX public key PEM.
    pub public_key_pem: String,
}

// The JSON envelope. Field order matches cosign's output, so our files look the same.
#[derive(Serialize, Deserialize)]
struct Envelope {
    kdf: KdfSection,
    cipher: CipherSection,
    ciphertext: String,
}

#[derive(Serialize, Deserialize)]
struct KdfSection {
    name: String,
    params: ScryptParamsJson,
    salt: String,
}

// u64 rather than u32 so that an out-of-range value in a file is reported as
// "too expensive" with its real value, not as a JSON type error.
#[derive(Serialize, Deserialize)]
struct ScryptParamsJson {
    #[serde(rename = "N")]
    n: u64,
    r: u64,
    p: u64,
}

#[derive(Serialize, Deserialize)]
struct CipherSection {
    name: String,
    nonce: String,
}

/// Encrypts `key` with `password` into a cosign `ENCRYPTED SIGSTORE PRIVATE KEY` PEM,
/// using cosign's own scrypt parameters and fresh random salt and nonce.
pub fn encrypt_private_key(
    key: &p256::SecretKey,
    password: &[u8],
) -> Result<String, CosignKeyError> {
    // SecretDocument zeroizes the DER on drop.
    let der = key
        .to_pkcs8_der()
        .map_err(|source| CosignKeyError::EncodePrivateKey { source })?;

    let mut salt = [0u8; SALT_LEN];
    let mut nonce = [0u8; NONCE_LEN];
    OsRng
        .try_fill_bytes(&mut salt)
        .map_err(|source| CosignKeyError::Randomness { source })?;
    OsRng
        .try_fill_bytes(&mut nonce)
        .map_err(|source| CosignKeyError::Randomness { source })?;

    seal_envelope(der.as_bytes(), password, &salt, &nonce)
}

/// Builds the PEM-wrapped JSON envelope around `plaintext`. Split from
/// [`encrypt_private_key`] so tests can seal arbitrary plaintexts (e.g. non-P-256 keys).
fn seal_envelope(
    plaintext: &[u8],
    password: &[u8],
    salt: &[u8; SALT_LEN],
    nonce: &[u8; NONCE_LEN],
) -> Result<String, CosignKeyError> {
    let params = scrypt::Params::new(
        WRITE_SCRYPT_LOG_N,
        WRITE_SCRYPT_R,
        WRITE_SCRYPT_P,
        SECRETBOX_KEY_LEN,
    )
    .map_err(|_| CosignKeyError::InvalidScryptParams {
        n: 1 << WRITE_SCRYPT_LOG_N,
        r: u64::from(WRITE_SCRYPT_R),
        p: u64::from(WRITE_SCRYPT_P),
    })?;
    let box_key = derive_key(password, salt, &params)?;
    let cipher = XSalsa20Poly1305::new(Key::from_slice(box_key.as_slice()));
    let ciphertext = cipher
        .encrypt(Nonce::from_slice(nonce), plaintext)
        .map_err(|_| CosignKeyError::Encrypt)?;

    let envelope = Envelope {
        kdf: KdfSection {
            name: KDF_NAME.to_owned(),
            params: ScryptParamsJson {
                n: 1 << WRITE_SCRYPT_LOG_N,
                r: u64::from(WRITE_SCRYPT_R),
                p: u64::from(WRITE_SCRYPT_P),
            },
            salt: BASE64.encode(salt),
        },
        cipher: CipherSection {
            name: CIPHER_NAME.to_owned(),
            nonce: BASE64.encode(nonce),
        },
        ciphertext: BASE64.encode(&ciphertext),
    };
    let json = serde_json::to_vec(&envelope)
        .map_err(|source| CosignKeyError::EncodeEnvelope { source })?;
    Ok(encode_pem(SIGSTORE_PRIVATE_KEY_LABEL, json))
}

/// Decrypts a cosign encrypted private key PEM (either label) with `password`.
pub fn decrypt_private_key(pem_text: &str, password: &[u8]) -> Result<SigningKey, CosignKeyError> {
    let block = single_pem_block(pem_text)?;
    if block.tag() != SIGSTORE_PRIVATE_KEY_LABEL && block.tag() != LEGACY_COSIGN_PRIVATE_KEY_LABEL {
        return Err(CosignKeyError::WrongPemLabel {
            found: block.tag().to_owned(),
            expected: "ENCRYPTED SIGSTORE PRIVATE KEY or ENCRYPTED COSIGN PRIVATE KEY",
        });
    }
    let envelope: Envelope = serde_json::from_slice(block.contents())
        .map_err(|source| CosignKeyError::InvalidEnvelopeJson { source })?;

    // Check everything that is cheap to check before running the KDF, so a malformed
    // file never costs a key derivation.
    if envelope.kdf.name != KDF_NAME {
        return Err(CosignKeyError::UnsupportedKdf(envelope.kdf.name));
    }
    if envelope.cipher.name != CIPHER_NAME {
        return Err(CosignKeyError::UnsupportedCipher(envelope.cipher.name));
    }
    let params = bounded_scrypt_params(&envelope.kdf.params)?;
    let salt = decode_base64("kdf.salt", &envelope.kdf.salt)?;
    if salt.len() != SALT_LEN {
        return Err(CosignKeyError::BadSaltLength { len: salt.len() });
    }
    let nonce = decode_base64("cipher.nonce", &envelope.cipher.nonce)?;
    if nonce.len() != NONCE_LEN {
        return Err(CosignKeyError::BadNonceLength { len: nonce.len() });
    }
    let ciphertext = decode_base64("ciphertext", &envelope.ciphertext)?;
    if ciphertext.len() < SECRETBOX_TAG_LEN {
        return Err(CosignKeyError::CiphertextTooShort {
            len: ciphertext.len(),
        });
    }

    let box_key = derive_key(password, &salt, &params)?;
    let cipher = XSalsa20Poly1305::new(Key::from_slice(box_key.as_slice()));
    // The only failure secretbox reports once lengths are right is a bad tag, which
    // for a well-formed file means the password was wrong.
    let der = Zeroizing::new(
        cipher
            .decrypt(Nonce::from_slice(&nonce), ciphertext.as_slice())
            .map_err(|_| CosignKeyError::WrongPassword)?,
    );

    let info = PrivateKeyInfo::try_from(der.as_slice())
        .map_err(|source| CosignKeyError::InvalidPrivateKey { source })?;
    ensure_p256(info.algorithm.oid, info.algorithm.parameters_oid().ok())?;
    let secret = p256::SecretKey::try_from(info)
        .map_err(|source| CosignKeyError::InvalidPrivateKey { source })?;
    Ok(SigningKey::from(secret))
}

/// Encodes `key` as a PKIX `PUBLIC KEY` PEM, as in `cosign.pub`.
pub fn public_key_pem(key: &VerifyingKey) -> Result<String, CosignKeyError> {
    key.to_public_key_pem(pkcs8::LineEnding::LF)
        .map_err(|source| CosignKeyError::EncodePublicKey { source })
}

/// Reads a PKIX `PUBLIC KEY` PEM holding an ECDSA P-256 key.
pub fn parse_public_key_pem(pem_text: &str) -> Result<VerifyingKey, CosignKeyError> {
    let block = single_pem_block(pem_text)?;
    if block.tag() != PUBLIC_KEY_LABEL {
        return Err(CosignKeyError::WrongPemLabel {
            found: block.tag().to_owned(),
            expected: PUBLIC_KEY_LABEL,
        });
    }
    let spki = SubjectPublicKeyInfoRef::try_from(block.contents())
        .map_err(|source| CosignKeyError::InvalidPublicKey { source })?;
    ensure_p256(spki.algorithm.oid, spki.algorithm.parameters_oid().ok())?;
    VerifyingKey::from_public_key_der(block.contents())
        .map_err(|source| CosignKeyError::InvalidPublicKey { source })
}

/// Generates a new P-256 key pair, the private half encrypted with `password`.
pub fn generate_key_pair(password: &[u8]) -> Result<GeneratedKeyPair, CosignKeyError> {
    let secret = random_secret_key()?;
    let private_key_pem = Zeroizing::new(encrypt_private_key(&secret, password)?);
    let verifying_key = VerifyingKey::from(&SigningKey::from(&secret));
    let public_key_pem = public_key_pem(&verifying_key)?;
    Ok(GeneratedKeyPair {
        private_key_pem,
        public_key_pem,
    })
}

/// Lowercase hex SHA-256 of the key's SubjectPublicKeyInfo DER; the same value as
/// `openssl pkey -pubin -outform DER | sha256sum` on `cosign.pub`.
pub fn public_key_fingerprint(key: &VerifyingKey) -> String {
    // Encoding a valid P-256 point as SPKI cannot fail in practice; should it ever,
    // fall back to hashing the SEC1 point so the function stays total and distinct
    // keys still get distinct names.
    let digest = match key.to_public_key_der() {
        Ok(der) => Sha256::digest(der.as_bytes()),
        Err(_) => Sha256::digest(key.to_encoded_point(false).as_bytes()),
    };
    hex::encode(digest)
}

/// Draws a private key from the OS RNG without panicking if the RNG fails
/// (`SecretKey::random` would panic via `OsRng::fill_bytes`).
fn random_secret_key() -> Result<p256::SecretKey, CosignKeyError> {
    // A uniformly random 32-byte string is outside [1, n) with probability about
    // 2^-32, so a handful of attempts only fails if the RNG is broken.
    for _ in 0..8 {
        let mut bytes = Zeroizing::new([0u8; 32]);
        OsRng
            .try_fill_bytes(bytes.as_mut_slice())
            .map_err(|source| CosignKeyError::Randomness { source })?;
        if let Ok(secret) = p256::SecretKey::from_slice(bytes.as_slice()) {
            return Ok(secret);
        }
    }
    Err(CosignKeyError::KeyGeneration)
}

/// Validates and bounds the scrypt parameters read from a key file.
fn bounded_scrypt_params(p: &ScryptParamsJson) -> Result<scrypt::Params, CosignKeyError> {
    let invalid = || CosignKeyError::InvalidScryptParams {
        n: p.n,
        r: p.r,
        p: p.p,
    };
    let too_expensive = || CosignKeyError::ScryptParamsTooExpensive {
        n: p.n,
        r: p.r,
        p: p.p,
    };
    if p.n < 2 || !p.n.is_power_of_two() || p.r == 0 || p.p == 0 {
        return Err(invalid());
    }
    let r_times_p = p.r.checked_mul(p.p).ok_or_else(too_expensive)?;
    let work = r_times_p.checked_mul(p.n).ok_or_else(too_expensive)?;
    if p.n > MAX_SCRYPT_N || r_times_p > MAX_SCRYPT_R_TIMES_P || work > MAX_SCRYPT_WORK {
        return Err(too_expensive());
    }
    // The bounds above keep r and p far below u32::MAX and N below 2^64.
    let log_n = u8::try_from(p.n.trailing_zeros()).map_err(|_| too_expensive())?;
    let r = u32::try_from(p.r).map_err(|_| too_expensive())?;
    let pp = u32::try_from(p.p).map_err(|_| too_expensive())?;
    // scrypt itself also requires N < 2^(16 r); it reports that here.
    scrypt::Params::new(log_n, r, pp, SECRETBOX_KEY_LEN).map_err(|_| invalid())
}

fn derive_key(
    password: &[u8],
    salt: &[u8],
    params: &scrypt::Params,
) -> Result<Zeroizing<[u8; SECRETBOX_KEY_LEN]>, CosignKeyError> {
    let mut key = Zeroizing::new([0u8; SECRETBOX_KEY_LEN]);
    scrypt::scrypt(password, salt, params, key.as_mut_slice()).map_err(|_| {
        CosignKeyError::InvalidScryptParams {
            n: 1u64 << params.log_n(),
            r: u64::from(params.r()),
            p: u64::from(params.p()),
        }
    })?;
    Ok(key)
}

fn decode_base64(field: &'static str, text: &str) -> Result<Vec<u8>, CosignKeyError> {
    BASE64
        .decode(text)
        .map_err(|source| CosignKeyError::InvalidBase64 { field, source })
}

/// Parses exactly one PEM block. Text around it is ignored, as Go's `pem.Decode`
/// (which cosign uses) does, but a second block is refused because it would be
/// ambiguous which key was meant.
fn single_pem_block(pem_text: &str) -> Result<pem::Pem, CosignKeyError> {
    let mut blocks =
        pem::parse_many(pem_text.trim()).map_err(|source| CosignKeyError::InvalidPem { source })?;
    match blocks.len() {
        0 => Err(CosignKeyError::NoPemBlock),
        1 => blocks.pop().ok_or(CosignKeyError::NoPemBlock),
        count => Err(CosignKeyError::MultiplePemBlocks { count }),
    }
}

/// PEM with 64-column lines and `\n` endings, as Go's `pem.Encode` writes.
fn encode_pem(label: &str, contents: Vec<u8>) -> String {
    pem::encode_config(
        &pem::Pem::new(label, contents),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// Accepts only `id-ecPublicKey` on `secp256r1`; otherwise names what was found.
fn ensure_p256(
    algorithm: ObjectIdentifier,
    curve: Option<ObjectIdentifier>,
) -> Result<(), CosignKeyError> {
    if algorithm == OID_EC_PUBLIC_KEY && curve == Some(OID_SECP256R1) {
        return Ok(());
    }
    let algorithm = if algorithm == OID_EC_PUBLIC_KEY {
        match curve {
            Some(c) => format!("EC on curve {} ({c})", curve_name(c)),
            None => format!("EC without a named curve ({algorithm})"),
        }
    } else {
        format!("{} ({algorithm})", algorithm_name(algorithm))
    };
    Err(CosignKeyError::UnsupportedKeyType { algorithm })
}

fn algorithm_name(oid: ObjectIdentifier) -> &'static str {
    match oid.to_string().as_str() {
        "1.2.840.113549.1.1.1" => "RSA",
        "1.2.840.113549.1.1.10" => "RSA-PSS",
        "1.3.101.110" => "X25519",
        "1.3.101.111" => "X448",
        "1.3.101.112" => "Ed25519",
        "1.3.101.113" => "Ed448",
        "1.2.840.10040.4.1" => "DSA",
        _ => "unknown algorithm",
    }
}

fn curve_name(oid: ObjectIdentifier) -> &'static str {
    match oid.to_string().as_str() {
        "1.3.132.0.34" => "P-384",
        "1.3.132.0.35" => "P-521",
        "1.3.132.0.10" => "secp256k1",
        "1.2.840.10045.3.1.1" => "P-192",
        "1.3.132.0.33" => "P-224",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::Signature;
    use p256::ecdsa::signature::{Signer, Verifier};
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
        assert!(matches!(err, CosignKeyError::WrongPassword), "{err}");
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

    #[test]
    fn generated_key_round_trips_through_encrypt_and_decrypt() {
        let pair = generate_key_pair(b"correct horse").expect("generate");
        assert!(
            pair.private_key_pem
                .starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
        );
        assert!(
            pair.private_key_pem
                .ends_with("-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
        );
        let signing =
            decrypt_private_key(&pair.private_key_pem, b"correct horse").expect("decrypt");
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
            text.starts_with(
                r#"{"kdf":{"name":"scrypt","params":{"N":32768,"r":8,"p":1},"salt":""#
            ),
            "{text}"
        );
    }

    #[test]
    fn generated_key_with_wrong_password_is_wrong_password() {
        let (_, pem_text) = sample_encrypted_key();
        let err = decrypt_private_key(&pem_text, b"wrong").unwrap_err();
        assert!(matches!(err, CosignKeyError::WrongPassword), "{err}");
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

    /// Rewrites the kdf params of a valid key file and tries to decrypt it.
    fn decrypt_with_params(n: u64, r: u64, p: u64) -> (CosignKeyError, Duration) {
        let (_, pem_text) = sample_encrypted_key();
        let mut json = envelope_json(&pem_text);
        json["kdf"]["params"] = serde_json::json!({ "N": n, "r": r, "p": p });
        let hostile = repem(SIGSTORE_PRIVATE_KEY_LABEL, &json);
        let start = Instant::now();
        let err = decrypt_private_key(&hostile, b"pw").unwrap_err();
        (err, start.elapsed())
    }

    #[test]
    fn hostile_scrypt_n_is_refused_quickly() {
        let (err, elapsed) = decrypt_with_params(1 << 30, 8, 1);
        assert!(
            matches!(err, CosignKeyError::ScryptParamsTooExpensive { n, .. } if n == 1 << 30),
            "{err}"
        );
        assert!(elapsed < Duration::from_millis(500), "took {elapsed:?}");
    }

    #[test]
    fn hostile_scrypt_r_times_p_is_refused() {
        let (err, _) = decrypt_with_params(1 << 10, 1 << 20, 1 << 20);
        assert!(
            matches!(err, CosignKeyError::ScryptParamsTooExpensive { .. }),
            "{err}"
        );
        let (err, _) = decrypt_with_params(1 << 15, u64::MAX, 2);
        assert!(
            matches!(err, CosignKeyError::ScryptParamsTooExpensive { .. }),
            "{err}"
        );
    }

    #[test]
    fn scrypt_work_above_the_bound_is_refused() {
        // Each parameter alone is within bounds, the product is not.
        let (err, _) = decrypt_with_params(1 << 20, 16, 1);
        assert!(
            matches!(err, CosignKeyError::ScryptParamsTooExpensive { .. }),
            "{err}"
        );
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
            assert!(
                matches!(err, CosignKeyError::InvalidScryptParams { .. }),
                "{err}"
            );
        }
    }

    #[test]
    fn wrong_salt_or_nonce_length_is_refused() {
        let (_, pem_text) = sample_encrypted_key();
        let mut json = envelope_json(&pem_text);
        json["kdf"]["salt"] = BASE64.encode([0u8; 16]).into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::BadSaltLength { len: 16 }),
            "{err}"
        );

        let mut json = envelope_json(&pem_text);
        json["cipher"]["nonce"] = BASE64.encode([0u8; 12]).into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::BadNonceLength { len: 12 }),
            "{err}"
        );
    }

    #[test]
    fn truncated_ciphertext_is_refused() {
        let (_, pem_text) = sample_encrypted_key();
        let mut json = envelope_json(&pem_text);
        json["ciphertext"] = BASE64.encode([0u8; 5]).into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::CiphertextTooShort { len: 5 }),
            "{err}"
        );
    }

    #[test]
    fn other_kdf_or_cipher_names_are_refused() {
        let (_, pem_text) = sample_encrypted_key();
        let mut json = envelope_json(&pem_text);
        json["kdf"]["name"] = "argon2".into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::UnsupportedKdf(ref n) if n == "argon2"),
            "{err}"
        );

        let mut json = envelope_json(&pem_text);
        json["cipher"]["name"] = "aes-gcm".into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::UnsupportedCipher(ref n) if n == "aes-gcm"),
            "{err}"
        );
    }

    #[test]
    fn garbage_input_is_no_pem_block() {
        let err = decrypt_private_key("this is not a key", b"").unwrap_err();
        assert!(matches!(err, CosignKeyError::NoPemBlock), "{err}");
        let err = parse_public_key_pem("").unwrap_err();
        assert!(matches!(err, CosignKeyError::NoPemBlock), "{err}");
    }

    #[test]
    fn malformed_pem_is_invalid_pem() {
        let text = "-----BEGIN PUBLIC KEY-----\n!!!not base64!!!\n-----END PUBLIC KEY-----\n";
        let err = parse_public_key_pem(text).unwrap_err();
        assert!(matches!(err, CosignKeyError::InvalidPem { .. }), "{err}");
        let text = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let err = parse_public_key_pem(text).unwrap_err();
        assert!(matches!(err, CosignKeyError::InvalidPem { .. }), "{err}");
    }

    #[test]
    fn wrong_pem_label_is_refused_for_both_key_kinds() {
        let pair = generate_key_pair(b"").expect("generate");
        let err = decrypt_private_key(&pair.public_key_pem, b"").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::WrongPemLabel { ref found, .. } if found == "PUBLIC KEY"),
            "{err}"
        );
        let err = parse_public_key_pem(&pair.private_key_pem).unwrap_err();
        assert!(
            matches!(err, CosignKeyError::WrongPemLabel { ref found, .. }
                if found == SIGSTORE_PRIVATE_KEY_LABEL),
            "{err}"
        );
    }

    #[test]
    fn two_pem_blocks_are_refused() {
        let pair = generate_key_pair(b"").expect("generate");
        let doubled = format!("{}{}", pair.public_key_pem, pair.public_key_pem);
        let err = parse_public_key_pem(&doubled).unwrap_err();
        assert!(
            matches!(err, CosignKeyError::MultiplePemBlocks { count: 2 }),
            "{err}"
        );
    }

    #[test]
    fn envelope_that_is_not_json_is_invalid_envelope_json() {
        let text = encode_pem(SIGSTORE_PRIVATE_KEY_LABEL, b"{not json".to_vec());
        let err = decrypt_private_key(&text, b"").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::InvalidEnvelopeJson { .. }),
            "{err}"
        );

        // Valid JSON, wrong shape (missing fields, negative N).
        let text = encode_pem(SIGSTORE_PRIVATE_KEY_LABEL, br#"{"kdf":{}}"#.to_vec());
        let err = decrypt_private_key(&text, b"").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::InvalidEnvelopeJson { .. }),
            "{err}"
        );
        let (_, pem_text) = sample_encrypted_key();
        let mut json = envelope_json(&pem_text);
        json["kdf"]["params"]["N"] = (-1).into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::InvalidEnvelopeJson { .. }),
            "{err}"
        );
    }

    #[test]
    fn bad_base64_field_is_invalid_base64_naming_the_field() {
        let (_, pem_text) = sample_encrypted_key();
        for (path, field) in [
            (("kdf", "salt"), "kdf.salt"),
            (("cipher", "nonce"), "cipher.nonce"),
        ] {
            let mut json = envelope_json(&pem_text);
            json[path.0][path.1] = "***".into();
            let err =
                decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
            assert!(
                matches!(err, CosignKeyError::InvalidBase64 { field: f, .. } if f == field),
                "{err}"
            );
        }
        let mut json = envelope_json(&pem_text);
        json["ciphertext"] = "not base64!".into();
        let err =
            decrypt_private_key(&repem(SIGSTORE_PRIVATE_KEY_LABEL, &json), b"pw").unwrap_err();
        assert!(
            matches!(
                err,
                CosignKeyError::InvalidBase64 {
                    field: "ciphertext",
                    ..
                }
            ),
            "{err}"
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
        assert!(
            matches!(err, CosignKeyError::UnsupportedKeyType { ref algorithm }
                if algorithm.contains("Ed25519") && algorithm.contains("1.3.101.112")),
            "{err}"
        );
    }

    #[test]
    fn p384_public_key_is_unsupported_key_type_naming_the_curve() {
        // SPKI header for id-ecPublicKey on secp384r1 with a 97-byte point; the point
        // bytes are never looked at because the curve is refused first.
        let mut der = vec![
            0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x05, 0x2b, 0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00, 0x04,
        ];
        der.extend_from_slice(&[0x11; 96]);
        let err = parse_public_key_pem(&encode_pem(PUBLIC_KEY_LABEL, der)).unwrap_err();
        assert!(
            matches!(err, CosignKeyError::UnsupportedKeyType { ref algorithm }
                if algorithm.contains("P-384") && algorithm.contains("1.3.132.0.34")),
            "{err}"
        );
    }

    #[test]
    fn encrypted_ed25519_private_key_is_unsupported_key_type() {
        // PKCS#8 for an Ed25519 key (RFC 8410), built from bytes.
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&[0x07; 32]);
        let text = seal_envelope(&der, b"", &[1; SALT_LEN], &[2; NONCE_LEN]).expect("seal");
        let err = decrypt_private_key(&text, b"").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::UnsupportedKeyType { ref algorithm }
                if algorithm.contains("Ed25519")),
            "{err}"
        );
    }

    #[test]
    fn encrypted_non_pkcs8_plaintext_is_invalid_private_key() {
        let text =
            seal_envelope(b"not DER at all", b"", &[1; SALT_LEN], &[2; NONCE_LEN]).expect("seal");
        let err = decrypt_private_key(&text, b"").unwrap_err();
        assert!(
            matches!(err, CosignKeyError::InvalidPrivateKey { .. }),
            "{err}"
        );
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
        assert!(
            pair.public_key_pem
                .starts_with("-----BEGIN PUBLIC KEY-----\n")
        );
        assert!(pair.public_key_pem.ends_with("-----END PUBLIC KEY-----\n"));
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
}
