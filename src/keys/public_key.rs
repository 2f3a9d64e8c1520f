//! PKIX public keys (`cosign.pub`): parsing, encoding and fingerprints. Only ECDSA P-256
//! is accepted; anything else is refused naming the algorithm found.

use super::error::KeyError;
use p256::ecdsa::VerifyingKey;
use pkcs8::ObjectIdentifier;
use sha2::{Digest, Sha256};
use spki::{DecodePublicKey, EncodePublicKey, SubjectPublicKeyInfoRef};

/// PEM label of a PKIX (SubjectPublicKeyInfo) public key.
pub const PUBLIC_KEY_LABEL: &str = "PUBLIC KEY";

/// `id-ecPublicKey` (RFC 5480).
const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// `secp256r1` / P-256 (RFC 5480).
const OID_SECP256R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");

/// Encodes `key` as a PKIX `PUBLIC KEY` PEM, as in `cosign.pub`.
pub fn public_key_pem(key: &VerifyingKey) -> Result<String, KeyError> {
    key.to_public_key_pem(pkcs8::LineEnding::LF)
        .map_err(|source| KeyError::EncodePublicKey { source })
}

/// Reads a PKIX `PUBLIC KEY` PEM holding an ECDSA P-256 key.
pub fn parse_public_key_pem(pem_text: &str) -> Result<VerifyingKey, KeyError> {
    let block = single_pem_block(pem_text)?;
    if block.tag() != PUBLIC_KEY_LABEL {
        return Err(KeyError::WrongPemLabel {
            found: block.tag().to_owned(),
            expected: PUBLIC_KEY_LABEL,
        });
    }
    let spki = SubjectPublicKeyInfoRef::try_from(block.contents())
        .map_err(|source| KeyError::InvalidPublicKey { source })?;
    ensure_p256(spki.algorithm.oid, spki.algorithm.parameters_oid().ok())?;
    VerifyingKey::from_public_key_der(block.contents())
        .map_err(|source| KeyError::InvalidPublicKey { source })
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

/// Lowercase hex SHA-256 of a SubjectPublicKeyInfo (DER), for telling signers apart. A
/// P-256 key is re-encoded first, so it has the same value as [`public_key_fingerprint`]
/// whatever encoding of the point the DER used (compressed or not); any other key is
/// hashed as given.
pub fn spki_fingerprint(der: &[u8]) -> String {
    match VerifyingKey::from_public_key_der(der) {
        Ok(key) => public_key_fingerprint(&key),
        Err(_) => hex::encode(Sha256::digest(der)),
    }
}

/// Parses exactly one PEM block, with only whitespace around it ([`super::pem_blocks`]):
/// a second block is refused because it would be ambiguous which key was meant, and
/// stray text because it may be a block that lost its END line.
pub(super) fn single_pem_block(pem_text: &str) -> Result<pem::Pem, KeyError> {
    let mut blocks = super::pem_blocks(pem_text)?;
    match blocks.len() {
        0 => Err(KeyError::NoPemBlock),
        1 => blocks.pop().ok_or(KeyError::NoPemBlock),
        count => Err(KeyError::MultiplePemBlocks { count }),
    }
}

/// PEM with 64-column lines and `\n` endings, as Go's `pem.Encode` writes.
pub(super) fn encode_pem(label: &str, contents: Vec<u8>) -> String {
    pem::encode_config(
        &pem::Pem::new(label, contents),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// Accepts only `id-ecPublicKey` on `secp256r1`; otherwise names what was found.
pub(super) fn ensure_p256(
    algorithm: ObjectIdentifier,
    curve: Option<ObjectIdentifier>,
) -> Result<(), KeyError> {
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
    Err(KeyError::UnsupportedKeyType { algorithm })
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
