//! Key-signed sets that carry a Rekor bundle (`kubectl sigstore sign --tlog-upload`,
//! `mansign sign --key --tlog-upload`): the bundle is never ignored. [`verify_key_set_with_bundle`]
//! checks the SET with the trust root's Rekor key (selected by log ID, valid at the
//! integrated time), that the integrated time is not in the future, the signature over M
//! with the trusted key, and that the entry body holds this key, this signature and
//! SHA-256(M).

use super::adapter::SigningMaterial;
use super::error::SigstoreError;
use super::evidence::RekorEvidence;
use super::keyless::verify_logged_signature;
use super::rekor_entry::RekorEntry;
use crate::annotations::SignatureSet;
use crate::trust::TrustRoot;

/// Checks the Rekor bundle of a key-signed set against `public_key_der` (SPKI DER); see
/// the module docs. A set that carries a certificate is refused: the key path does not do
/// keyless checks.
pub fn verify_key_set_with_bundle(
    trust: &TrustRoot,
    message: &[u8],
    set: &SignatureSet,
    public_key_der: &[u8],
) -> Result<RekorEvidence, SigstoreError> {
    if set.certificate_pem.is_some() {
        return Err(SigstoreError::EntryMismatch(
            "the set carries a certificate; it is a keyless signature, not a key signature".into(),
        ));
    }
    let bundle = set.bundle.as_ref().ok_or(SigstoreError::NoBundle)?;
    let entry = RekorEntry::parse(bundle)?;
    entry.require_known_log(trust)?;
    let material = SigningMaterial::PublicKey(public_key_der);
    verify_logged_signature(trust, message, set, material, &entry)?;
    Ok(entry.evidence())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::{RekorBundle, RekorPayload};
    use crate::verify::sigstore::test_set;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn unsupported_entry_kind_is_named() {
        let trust = TrustRoot::public_good().unwrap();
        let bundle = RekorBundle {
            signed_entry_timestamp: STANDARD.encode(b"set"),
            payload: RekorPayload {
                body: STANDARD.encode(r#"{"apiVersion":"0.0.1","kind":"intoto","spec":{}}"#),
                integrated_time: 2,
                log_index: 1,
                log_id: "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d".into(),
            },
        };
        let set = test_set(None, Some(bundle));
        let err = verify_key_set_with_bundle(&trust, b"m", &set, &[]).unwrap_err();
        assert!(
            matches!(err, SigstoreError::UnsupportedEntry { ref kind, .. } if kind == "intoto"),
            "{err}"
        );
    }
}
