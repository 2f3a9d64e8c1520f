//! Attestors: who may sign. A signature set is accepted when one attestor verifies it.

use super::SignerInfo;
use crate::annotations::SignatureSet;
use p256::ecdsa::{DerSignature, VerifyingKey, signature::Verifier as _};

/// A trusted public key.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// How the user named the key (usually its file path).
    pub name: String,
    pub key: VerifyingKey,
    /// Hex SHA-256 of the key's SPKI DER.
    pub fingerprint: String,
}

impl TrustedKey {
    pub fn new(name: impl Into<String>, key: VerifyingKey) -> Self {
        let fingerprint = crate::signing::cosign_key::public_key_fingerprint(&key);
        TrustedKey {
            name: name.into(),
            key,
            fingerprint,
        }
    }

    /// Loads a `cosign.pub`-style PEM public key.
    pub fn from_pem(name: impl Into<String>, pem: &str) -> Result<Self, String> {
        let key =
            crate::signing::cosign_key::parse_public_key_pem(pem).map_err(|e| e.to_string())?;
        Ok(Self::new(name, key))
    }
}

/// One acceptable signer.
#[derive(Debug, Clone)]
pub enum Attestor {
    Key(TrustedKey),
}

impl Attestor {
    pub fn describe(&self) -> String {
        match self {
            Attestor::Key(k) => format!("key {}", k.name),
        }
    }

    /// Checks one signature set over `message`; on success says who signed.
    pub fn check(&self, message: &[u8], set: &SignatureSet) -> Result<SignerInfo, String> {
        match self {
            Attestor::Key(k) => {
                let sig = DerSignature::from_bytes(&set.signature)
                    .map_err(|_| "signature is not a DER ECDSA signature".to_string())?;
                k.key
                    .verify(message, &sig)
                    .map_err(|_| "signature does not match the message and key".to_string())?;
                Ok(SignerInfo::Key {
                    name: k.name.clone(),
                    fingerprint: k.fingerprint.clone(),
                })
            }
        }
    }
}
