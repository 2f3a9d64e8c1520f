//! Keyless verification of one signature set: the full Sigstore check, offline.
//!
//! A keyless set is the cosign triple kubectl-sigstore writes: a signature over M, the
//! short-lived Fulcio certificate (`certificate`) and cosign's `RekorBundle` (`bundle`:
//! the Rekor entry plus its Signed Entry Timestamp). [`verify_certificate_set`] proves, in
//! this order, and stops at the first failure:
//!
//! 1. the set has a certificate ([`SigstoreError::NoCertificate`]) and a bundle
//!    ([`SigstoreError::NoBundle`]); the certificate parses; the bundle is well formed and
//!    names a Rekor log the trust root lists ([`SigstoreError::UnknownLog`]);
//! 2. the SET verifies with that log's key, valid at the integrated time; the integrated
//!    time is not in the future;
//! 3. the certificate chains to a Fulcio CA of the trust root that was valid at the
//!    integrated time, has the code-signing EKU, and was itself valid at that time, and so
//!    was every CA certificate of the path, the root included
//!    ([`fulcio_chain`](super::fulcio_chain));
//! 4. the embedded SCT verifies against the trust root's CT logs (legacy `rekord` entries:
//!    see [`legacy_rekord`](super::legacy_rekord) for the one bounded exception);
//! 5. the signature verifies over M with the certificate's key;
//! 6. the Rekor entry body describes this signature: same signature bytes, same
//!    certificate, hash = SHA-256(M) (CVE-2022-36056).
//!
//! The body is read by mansign ([`LoggedSignature`](super::logged_entry::LoggedSignature))
//! on every path, so a body is judged the same whether or not its certificate was seen
//! before. `hashedrekord` 0.0.1 entries go through sigstore-verify ([`super::sigstore`]) too: the
//! triple becomes a Sigstore bundle v0.1 whose only time evidence is the SET-backed
//! integrated time (cosign annotations carry no inclusion proof; the SET is the log's
//! promise, as in cosign's own offline bundle check). Once the trust root vouched for a
//! certificate's chain and SCT (the whole set verified), later sets with it skip those two
//! checks and the certificate's parse, and the rest is run by
//! [`hashedrekord`](super::hashedrekord) (steps 2, 5 and 6, every time). Legacy `rekord` entries (2021
//! kubectl-sigstore signatures) are checked by [`legacy_rekord`](super::legacy_rekord),
//! which documents its differences.
//!
//! Who signed is returned as [`SigstoreEvidence`]; whether that signer is acceptable is
//! the [`IdentityPolicy`](super::IdentityPolicy)'s decision, not this module's.
//! Upstream kubectl-sigstore and Kyverno check only the SET and the body (research
//! `kyverno-manifests.md` §2.10 F1); mansign always runs every step above.

use super::adapter::{self as sigstore, ChainVerified, SigningMaterial};
use super::error::SigstoreError;
use super::evidence::SigstoreEvidence;
use super::hashedrekord;
use super::legacy_rekord;
use super::logged_entry::LoggedSignature;
use super::rekor_entry::RekorEntry;
use crate::annotations::SignatureSet;
use crate::trust::{TrustRoot, VouchedCertificate, VouchedCertificates};
use std::sync::Arc;

/// Full keyless verification of one signature set over `message` (see the module docs
/// for the checks and their order). Does not judge the identity.
pub fn verify_certificate_set(
    trust: &TrustRoot,
    message: &[u8],
    set: &SignatureSet,
) -> Result<SigstoreEvidence, SigstoreError> {
    let pem = set
        .certificate_pem
        .as_deref()
        .ok_or(SigstoreError::NoCertificate)?;
    let bundle = set.bundle.as_ref().ok_or(SigstoreError::NoBundle)?;
    let leaf = leaf_certificate(pem)?;
    let entry = match RekorEntry::parse(bundle).and_then(|e| e.require_known_log(trust).map(|()| e))
    {
        Ok(entry) => entry,
        Err(e) => {
            // The certificate's own fault is named first, as when it was read first.
            sigstore::certificate_facts(&leaf)?;
            return Err(e);
        }
    };
    let facts = match hashedrekord::vouched(trust, &leaf, &entry) {
        Some(vouched) => {
            hashedrekord::verify_vouched(trust, message, &set.signature, &vouched, &entry)?;
            vouched.facts
        }
        None => {
            let facts = Arc::new(sigstore::certificate_facts(&leaf)?);
            let material = SigningMaterial::Certificate(&leaf);
            let chain = verify_logged_signature(trust, message, set, material, &entry)?;
            // Every check passed: the root remembers the chain and SCT, with the facts.
            if let Some(chain) = chain {
                trust.vouched_certificates().remember(
                    VouchedCertificates::key(&leaf),
                    VouchedCertificate {
                        not_before: chain.not_before,
                        not_after: chain.not_after,
                        authorities: chain.authorities,
                        facts: facts.clone(),
                    },
                );
            }
            facts
        }
    };
    Ok(SigstoreEvidence {
        subject: facts.subject.clone().ok_or(SigstoreError::NoSubject)?,
        issuer: facts.issuer.clone(),
        claims: facts.claims.clone(),
        rekor: entry.evidence(),
        key_fingerprint: facts.key_fingerprint.clone(),
    })
}

/// Verifies the signature of `set` and the log entry that records it, by the entry's kind:
/// `hashedrekord` 0.0.1 through sigstore-verify, legacy `rekord` 0.0.1 by
/// [`legacy_rekord`]; any other kind is refused. Shared by keyless and key-bundle sets.
/// For a `hashedrekord` certificate, says what was established about its chain, for the
/// trust root to remember ([`ChainVerified`]).
pub(super) fn verify_logged_signature(
    trust: &TrustRoot,
    message: &[u8],
    set: &SignatureSet,
    material: SigningMaterial<'_>,
    entry: &RekorEntry,
) -> Result<Option<ChainVerified>, SigstoreError> {
    let signature = &set.signature;
    if entry.is("hashedrekord", "0.0.1") {
        // mansign's reading and consistency check of the body run on this path too, so the
        // first sight refuses every body the vouched path ([`hashedrekord`]) refuses:
        // sigstore-verify reads a body more loosely (any hash algorithm name, base64 of
        // either alphabet, padded or not; see [`LoggedSignature::read`]).
        let logged = LoggedSignature::read(entry)?;
        let chain = sigstore::verify_hashedrekord(trust, message, signature, material, entry)?;
        logged.describes(message, signature, material)?;
        Ok(chain)
    } else if entry.is("rekord", "0.0.1") {
        legacy_rekord::verify(trust, message, signature, material, entry).map(|()| None)
    } else {
        Err(entry.unsupported())
    }
}

/// The issuer name of the set's signing certificate (`CN=...,O=...`), when it can be read.
pub(crate) fn leaf_issuer_name(set: &SignatureSet) -> Option<String> {
    use x509_cert::der::Decode as _;
    let der = leaf_certificate(set.certificate_pem.as_deref()?).ok()?;
    let cert = x509_cert::Certificate::from_der(&der).ok()?;
    Some(cert.tbs_certificate.issuer.to_string())
}

/// The first certificate of the annotation's PEM, DER. Intermediates are never taken from
/// the annotation: the chain is built from the trust root only.
fn leaf_certificate(pem_text: &str) -> Result<Vec<u8>, SigstoreError> {
    super::pem::first_certificate_der(pem_text).map_err(SigstoreError::MalformedCertificate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::sigstore::test_set;

    #[test]
    fn set_without_certificate_is_not_keyless() {
        let trust = TrustRoot::public_good().unwrap();
        let set = test_set(None, None);
        assert_eq!(
            verify_certificate_set(&trust, b"m", &set),
            Err(SigstoreError::NoCertificate)
        );
    }

    #[test]
    fn certificate_without_bundle_is_refused() {
        let trust = TrustRoot::public_good().unwrap();
        let pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
        let set = test_set(Some(pem), None);
        assert_eq!(
            verify_certificate_set(&trust, b"m", &set),
            Err(SigstoreError::NoBundle)
        );
    }
}
