//! Key-based signing with a cosign key pair.

use super::{SignError, Signer};
use crate::annotations::SignatureSet;
use p256::ecdsa::{DerSignature, SigningKey, signature::Signer as _};

/// Signs with an ECDSA P-256 private key: DER signature over SHA-256(M), exactly what
/// `cosign sign-blob --key` produces.
pub struct KeySigner {
    key: SigningKey,
}

impl KeySigner {
    pub fn new(key: SigningKey) -> Self {
        KeySigner { key }
    }

    pub fn verifying_key(&self) -> &p256::ecdsa::VerifyingKey {
        self.key.verifying_key()
    }
}

impl Signer for KeySigner {
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<Vec<SignatureSet>, SignError> {
        Ok(messages
            .iter()
            .map(|m| {
                let sig: DerSignature = self.key.sign(m);
                SignatureSet {
                    index: 0,
                    signature: sig.as_bytes().to_vec(),
                    certificate_pem: None,
                    bundle: None,
                }
            })
            .collect())
    }
}
