//! Key-based signing with a cosign key pair.

use super::error::SignError;
use super::signer::{SignedBatch, Signer};
use crate::annotations::SignatureSet;
use p256::ecdsa::{Signature, SigningKey, signature::Signer as _};

/// Signs with an ECDSA P-256 private key: DER signature over SHA-256(M), exactly what
/// `cosign sign-blob --key` produces, with S normalised to the low half of the group order
/// (so mansign never emits the malleable high-S twin of its own signature).
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
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<SignedBatch, SignError> {
        Ok(SignedBatch::from_sets(
            messages
                .iter()
                .map(|m| {
                    let sig: Signature = self.key.sign(m);
                    let sig = sig.normalize_s().unwrap_or(sig);
                    SignatureSet {
                        index: 0,
                        signature: sig.to_der().as_bytes().to_vec(),
                        certificate_pem: None,
                        bundle: None,
                    }
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::elliptic_curve::scalar::IsHigh as _;

    #[test]
    fn signatures_are_low_s() {
        let signer = KeySigner::new(SigningKey::random(&mut rand_core::OsRng));
        let messages: Vec<Vec<u8>> = (0..64u32).map(|i| i.to_be_bytes().to_vec()).collect();
        for signed in signer.sign_messages(&messages).unwrap().signatures {
            let sig = Signature::from_der(&signed.set.signature).unwrap();
            assert!(!bool::from(sig.s().is_high()), "high-S signature emitted");
        }
    }

    #[test]
    fn a_key_batch_returns_one_set_per_message_without_certificate_or_log_entries() {
        let signer = KeySigner::new(SigningKey::random(&mut rand_core::OsRng));
        let batch = signer
            .sign_messages(&[b"a".to_vec(), b"b".to_vec()])
            .unwrap();
        assert_eq!(batch.certificate, None);
        assert_eq!(batch.signatures.len(), 2);
        assert_eq!(batch.log_entries().count(), 0);
        assert!(batch.signatures.iter().all(|s| s.set.bundle.is_none()));
    }
}
