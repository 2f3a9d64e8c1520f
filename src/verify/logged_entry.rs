//! The Rekor checks mansign runs itself, shared by the paths that do not go through
//! sigstore-verify (legacy `rekord` entries, and `hashedrekord` entries whose certificate
//! this trust root already vouched for): the SET over an entry, and whether the entry's
//! body describes the signature being verified.

use super::rekor_entry::RekorEntry;
use super::sigstore::SigningMaterial;
use super::sigstore_error::SigstoreError;
use crate::trust::{RekorSetError, TrustRoot};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

/// The RFC 8785 canonical JSON the SET signs. Keys in code-unit order; the values are
/// base64, hex and integers, which need no escaping beyond what serde_json does. The body
/// is re-encoded from the decoded bytes, so the SET covers exactly what is interpreted.
fn set_payload(entry: &RekorEntry) -> String {
    format!(
        r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
        STANDARD.encode(&entry.body),
        entry.integrated_time,
        entry.log_id_hex(),
        entry.log_index
    )
}

/// The SET verifies: ECDSA by the trust root's Rekor key for the entry's `logID`, valid at
/// `time` (the integrated time), over [`set_payload`].
pub(super) fn verify_set(
    trust: &TrustRoot,
    entry: &RekorEntry,
    time: jiff::Timestamp,
) -> Result<(), SigstoreError> {
    trust
        .verify_rekor_set(
            &entry.log_id,
            time,
            set_payload(entry).as_bytes(),
            &entry.set,
        )
        .map_err(|e| {
            SigstoreError::SignedEntryTimestamp(match e {
                RekorSetError::KeyNotValidAt => format!(
                    "the key of Rekor log {} was not valid at {time}",
                    entry.log_id_hex()
                ),
                RekorSetError::BadSignature => {
                    format!("not signed by the key of Rekor log {}", entry.log_id_hex())
                }
            })
        })
}

/// What a `rekord` or `hashedrekord` body says was signed: its `spec.signature.content`
/// (base64 signature), `spec.signature.publicKey.content` (base64 PEM of the certificate
/// or key) and the SHA-256 in `spec.data.hash.value` (hex).
pub(super) struct LoggedSignature<'a> {
    pub signature_b64: &'a str,
    pub public_key_b64: &'a str,
    pub sha256_hex: &'a str,
}

impl LoggedSignature<'_> {
    /// The entry is about this signature: the same signature bytes, the same certificate
    /// DER (or public key), and SHA-256(M) (CVE-2022-36056).
    pub(super) fn describes(
        &self,
        message: &[u8],
        signature: &[u8],
        material: SigningMaterial<'_>,
    ) -> Result<(), SigstoreError> {
        let logged_signature = STANDARD.decode(self.signature_b64.trim()).map_err(|_| {
            SigstoreError::MalformedEntry("the logged signature is not base64".into())
        })?;
        if logged_signature != signature {
            return Err(SigstoreError::EntryMismatch(
                "the logged signature is not the annotation's signature".into(),
            ));
        }
        let logged_pem = STANDARD
            .decode(self.public_key_b64.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                SigstoreError::MalformedEntry("the logged publicKey is not base64 PEM".into())
            })?;
        let logged = pem::parse(&logged_pem)
            .map_err(|_| SigstoreError::MalformedEntry("the logged publicKey is not PEM".into()))?;
        let same_signer = match &material {
            SigningMaterial::Certificate(der) => {
                logged.tag() == "CERTIFICATE" && logged.contents() == *der
            }
            SigningMaterial::PublicKey(key) => {
                logged.tag() == "PUBLIC KEY" && logged.contents() == *key
            }
        };
        if !same_signer {
            return Err(SigstoreError::EntryMismatch(
                match material {
                    SigningMaterial::Certificate(_) => {
                        "the logged certificate is not the annotation's"
                    }
                    SigningMaterial::PublicKey(_) => "the logged public key is not the trusted key",
                }
                .into(),
            ));
        }
        let digest = hex::encode(Sha256::digest(message));
        if !self.sha256_hex.eq_ignore_ascii_case(&digest) {
            return Err(SigstoreError::EntryMismatch(format!(
                "the logged hash {} is not SHA-256 of the message ({digest})",
                self.sha256_hex
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_payload_is_canonical_json_with_sorted_keys() {
        let entry = RekorEntry {
            set: vec![],
            body: b"{}".to_vec(),
            kind: "rekord".into(),
            api_version: "0.0.1".into(),
            integrated_time: 1_631_694_290,
            log_index: 693_859,
            log_id: [0xab; 32],
        };
        assert_eq!(
            set_payload(&entry),
            format!(
                r#"{{"body":"e30=","integratedTime":1631694290,"logID":"{}","logIndex":693859}}"#,
                "ab".repeat(32)
            )
        );
    }

    fn logged<'a>(sig: &'a str, key: &'a str, hash: &'a str) -> LoggedSignature<'a> {
        LoggedSignature {
            signature_b64: sig,
            public_key_b64: key,
            sha256_hex: hash,
        }
    }

    #[test]
    fn an_entry_about_another_signature_key_or_message_does_not_describe_this_one() {
        let key_der = b"key-der";
        let pem_b64 = STANDARD.encode(pem::encode(&pem::Pem::new("PUBLIC KEY", key_der.to_vec())));
        let sig_b64 = STANDARD.encode(b"sig");
        let hash = hex::encode(Sha256::digest(b"m"));
        let material = SigningMaterial::PublicKey(key_der);
        logged(&sig_b64, &pem_b64, &hash)
            .describes(b"m", b"sig", material)
            .unwrap();
        let cases = [
            logged(&sig_b64, &pem_b64, &hash).describes(b"m", b"other", material),
            logged(&sig_b64, &pem_b64, &hash).describes(b"other", b"sig", material),
            logged(&sig_b64, &pem_b64, &hash).describes(
                b"m",
                b"sig",
                SigningMaterial::PublicKey(b"other-key"),
            ),
            // the same bytes as a certificate are not the trusted key
            logged(&sig_b64, &pem_b64, &hash).describes(
                b"m",
                b"sig",
                SigningMaterial::Certificate(key_der),
            ),
        ];
        for result in cases {
            assert!(
                matches!(result, Err(SigstoreError::EntryMismatch(_))),
                "{result:?}"
            );
        }
        for (sig, key) in [("not base64!", pem_b64.as_str()), (&sig_b64, "not base64!")] {
            let result = logged(sig, key, &hash).describes(b"m", b"sig", material);
            assert!(
                matches!(result, Err(SigstoreError::MalformedEntry(_))),
                "{result:?}"
            );
        }
    }
}
