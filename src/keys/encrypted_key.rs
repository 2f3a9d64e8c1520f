//! Password-encrypted private keys in cosign's file format (see the module docs of
//! [`keys`](super) for the format), and key-pair generation.

use super::error::KeyError;
use super::public_key::{encode_pem, ensure_p256, public_key_pem, single_pem_block};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Key, Nonce, XSalsa20Poly1305};
use p256::ecdsa::{SigningKey, VerifyingKey};
use pkcs8::{EncodePrivateKey, PrivateKeyInfo};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// PEM label written by current cosign for encrypted private keys.
pub const SIGSTORE_PRIVATE_KEY_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// PEM label written by older cosign releases; still accepted when reading.
pub const LEGACY_COSIGN_PRIVATE_KEY_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";

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
pub(super) const SALT_LEN: usize = 32;
pub(super) const NONCE_LEN: usize = 24;
const SECRETBOX_KEY_LEN: usize = 32;
const SECRETBOX_TAG_LEN: usize = 16;

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
pub fn encrypt_private_key(key: &p256::SecretKey, password: &[u8]) -> Result<String, KeyError> {
    // SecretDocument zeroizes the DER on drop.
    let der = key
        .to_pkcs8_der()
        .map_err(|source| KeyError::EncodePrivateKey { source })?;

    let mut salt = [0u8; SALT_LEN];
    let mut nonce = [0u8; NONCE_LEN];
    OsRng
        .try_fill_bytes(&mut salt)
        .map_err(|source| KeyError::Randomness { source })?;
    OsRng
        .try_fill_bytes(&mut nonce)
        .map_err(|source| KeyError::Randomness { source })?;

    seal_envelope(der.as_bytes(), password, &salt, &nonce)
}

/// Builds the PEM-wrapped JSON envelope around `plaintext`. Split from
/// [`encrypt_private_key`] so tests can seal arbitrary plaintexts (e.g. non-P-256 keys).
pub(super) fn seal_envelope(
    plaintext: &[u8],
    password: &[u8],
    salt: &[u8; SALT_LEN],
    nonce: &[u8; NONCE_LEN],
) -> Result<String, KeyError> {
    let params = scrypt::Params::new(
        WRITE_SCRYPT_LOG_N,
        WRITE_SCRYPT_R,
        WRITE_SCRYPT_P,
        SECRETBOX_KEY_LEN,
    )
    .map_err(|_| KeyError::InvalidScryptParams {
        n: 1 << WRITE_SCRYPT_LOG_N,
        r: u64::from(WRITE_SCRYPT_R),
        p: u64::from(WRITE_SCRYPT_P),
    })?;
    let box_key = derive_key(password, salt, &params)?;
    let cipher = XSalsa20Poly1305::new(Key::from_slice(box_key.as_slice()));
    let ciphertext = cipher
        .encrypt(Nonce::from_slice(nonce), plaintext)
        .map_err(|_| KeyError::Encrypt)?;

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
    let json =
        serde_json::to_vec(&envelope).map_err(|source| KeyError::EncodeEnvelope { source })?;
    Ok(encode_pem(SIGSTORE_PRIVATE_KEY_LABEL, json))
}

/// Decrypts a cosign encrypted private key PEM (either label) with `password`.
pub fn decrypt_private_key(pem_text: &str, password: &[u8]) -> Result<SigningKey, KeyError> {
    let block = single_pem_block(pem_text)?;
    if block.tag() != SIGSTORE_PRIVATE_KEY_LABEL && block.tag() != LEGACY_COSIGN_PRIVATE_KEY_LABEL {
        return Err(KeyError::WrongPemLabel {
            found: block.tag().to_owned(),
            expected: "ENCRYPTED SIGSTORE PRIVATE KEY or ENCRYPTED COSIGN PRIVATE KEY",
        });
    }
    let envelope: Envelope = serde_json::from_slice(block.contents())
        .map_err(|source| KeyError::InvalidEnvelopeJson { source })?;

    // Check everything that is cheap to check before running the KDF, so a malformed
    // file never costs a key derivation.
    if envelope.kdf.name != KDF_NAME {
        return Err(KeyError::UnsupportedKdf(envelope.kdf.name));
    }
    if envelope.cipher.name != CIPHER_NAME {
        return Err(KeyError::UnsupportedCipher(envelope.cipher.name));
    }
    let params = bounded_scrypt_params(&envelope.kdf.params)?;
    let salt = decode_base64("kdf.salt", &envelope.kdf.salt)?;
    if salt.len() != SALT_LEN {
        return Err(KeyError::BadSaltLength {
            len: salt.len(),
            expected: SALT_LEN,
        });
    }
    let nonce = decode_base64("cipher.nonce", &envelope.cipher.nonce)?;
    if nonce.len() != NONCE_LEN {
        return Err(KeyError::BadNonceLength {
            len: nonce.len(),
            expected: NONCE_LEN,
        });
    }
    let ciphertext = decode_base64("ciphertext", &envelope.ciphertext)?;
    if ciphertext.len() < SECRETBOX_TAG_LEN {
        return Err(KeyError::CiphertextTooShort {
            len: ciphertext.len(),
            tag_len: SECRETBOX_TAG_LEN,
        });
    }

    let box_key = derive_key(password, &salt, &params)?;
    let cipher = XSalsa20Poly1305::new(Key::from_slice(box_key.as_slice()));
    // The only failure secretbox reports once lengths are right is a bad tag, which
    // for a well-formed file means the password was wrong.
    let der = Zeroizing::new(
        cipher
            .decrypt(Nonce::from_slice(&nonce), ciphertext.as_slice())
            .map_err(|_| KeyError::WrongPassword)?,
    );

    let info = PrivateKeyInfo::try_from(der.as_slice())
        .map_err(|source| KeyError::InvalidPrivateKey { source })?;
    ensure_p256(info.algorithm.oid, info.algorithm.parameters_oid().ok())?;
    let secret =
        p256::SecretKey::try_from(info).map_err(|source| KeyError::InvalidPrivateKey { source })?;
    Ok(SigningKey::from(secret))
}

/// Generates a new P-256 key pair, the private half encrypted with `password`.
pub fn generate_key_pair(password: &[u8]) -> Result<GeneratedKeyPair, KeyError> {
    let secret = random_secret_key()?;
    let private_key_pem = Zeroizing::new(encrypt_private_key(&secret, password)?);
    let verifying_key = VerifyingKey::from(&SigningKey::from(&secret));
    let public_key_pem = public_key_pem(&verifying_key)?;
    Ok(GeneratedKeyPair {
        private_key_pem,
        public_key_pem,
    })
}

/// Draws a private key from the OS RNG without panicking if the RNG fails
/// (`SecretKey::random` would panic via `OsRng::fill_bytes`).
pub(super) fn random_secret_key() -> Result<p256::SecretKey, KeyError> {
    // A uniformly random 32-byte string is outside [1, n) with probability about
    // 2^-32, so a handful of attempts only fails if the RNG is broken.
    for _ in 0..8 {
        let mut bytes = Zeroizing::new([0u8; 32]);
        OsRng
            .try_fill_bytes(bytes.as_mut_slice())
            .map_err(|source| KeyError::Randomness { source })?;
        if let Ok(secret) = p256::SecretKey::from_slice(bytes.as_slice()) {
            return Ok(secret);
        }
    }
    Err(KeyError::KeyGeneration)
}

/// Validates and bounds the scrypt parameters read from a key file.
fn bounded_scrypt_params(p: &ScryptParamsJson) -> Result<scrypt::Params, KeyError> {
    let invalid = || KeyError::InvalidScryptParams {
        n: p.n,
        r: p.r,
        p: p.p,
    };
    let too_expensive = || KeyError::ScryptParamsTooExpensive {
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
) -> Result<Zeroizing<[u8; SECRETBOX_KEY_LEN]>, KeyError> {
    let mut key = Zeroizing::new([0u8; SECRETBOX_KEY_LEN]);
    scrypt::scrypt(password, salt, params, key.as_mut_slice()).map_err(|_| {
        KeyError::InvalidScryptParams {
            n: 1u64 << params.log_n(),
            r: u64::from(params.r()),
            p: u64::from(params.p()),
        }
    })?;
    Ok(key)
}

fn decode_base64(field: &'static str, text: &str) -> Result<Vec<u8>, KeyError> {
    BASE64
        .decode(text)
        .map_err(|source| KeyError::InvalidBase64 { field, source })
}
