//! `hashedrekord` 0.0.1 entries whose certificate this trust root already vouched for:
//! the per-set checks, run by mansign.
//!
//! A first certificate goes through sigstore-verify in full ([`super::sigstore`]): chain at
//! the integrated time, SCT, SET, body, signature. Once its chain and SCT verified, the
//! trust root remembers it ([`crate::trust::VouchedCertificates`]), and a later set with the
//! same certificate, integrated at a time the remembered check still covers (the leaf valid
//! then, the same Fulcio authorities), needs only what depends on the set. Those checks are
//! run here rather than by sigstore-verify, because sigstore-verify 0.15.1 verifies the SET
//! of a bundle twice (once in `Verifier::verify_prepared` for the time, once in
//! `verify_tlog_entries`), a third of the ECDSA work of a set from a batch. In order, the
//! first failure wins:
//!
//! 1. the body is `hashedrekord` 0.0.1 and reads as
//!    [`LoggedSignature::read`](super::logged_entry::LoggedSignature::read) requires
//!    (`sha256` spelled so, exact base64, no duplicate key) — the same reading the first
//!    sight runs before sigstore-verify, so both refuse the same bodies;
//! 2. the SET verifies with the trust root's key for the entry's log, valid at the
//!    integrated time ([`verify_set`]), over the body as decoded;
//! 3. the integrated time is not in the future;
//! 4. the signature verifies over M with the certificate's key, in the scheme the full path
//!    uses (the key's algorithm with SHA-256);
//! 5. the body holds the same signature, the same certificate and SHA-256(M)
//!    ([`LoggedSignature::describes`](super::logged_entry::LoggedSignature::describes)).
//!
//! The leaf's validity at the integrated time and its chain and SCT are what the trust
//! root vouched for; [`vouched`] is the only way in. The root also hands back what was read
//! from the certificate when it was first checked ([`CertificateFacts`]: identity, issuer,
//! claims, key), so a vouched certificate is not parsed again: its DER is the same bytes
//! (the entry is found by their SHA-256), so its facts are too.

use super::adapter::{self as sigstore, CertificateFacts, SigningMaterial};
use super::error::SigstoreError;
use super::logged_entry::read_with_set;
use super::rekor_entry::RekorEntry;
use crate::trust::{TrustRoot, VouchedCertificates};
use std::sync::Arc;

/// A set whose certificate `trust` vouched for at a time covering this entry: proof that
/// [`verify_vouched`] may skip the chain and the SCT, with the certificate's facts.
pub(super) struct Vouched<'a> {
    leaf: &'a [u8],
    pub facts: Arc<CertificateFacts>,
}

/// Whether `trust` already verified the chain and SCT of `leaf` under conditions that
/// still hold at the entry's integrated time (counted as a hit or a miss of the root's
/// certificate cache).
pub(super) fn vouched<'a>(
    trust: &TrustRoot,
    leaf: &'a [u8],
    entry: &RekorEntry,
) -> Option<Vouched<'a>> {
    if !entry.is("hashedrekord", "0.0.1") {
        return None;
    }
    let time = jiff::Timestamp::from_second(entry.integrated_time).ok()?;
    let authorities = trust.fulcio_authorities_at(time);
    let facts =
        trust
            .vouched_certificates()
            .covers(&VouchedCertificates::key(leaf), time, &authorities)?;
    // Only this module's callers remember certificates, always with these facts.
    let facts = facts.downcast::<CertificateFacts>().ok()?;
    Some(Vouched { leaf, facts })
}

/// The checks of the module docs for a vouched certificate.
pub(super) fn verify_vouched(
    trust: &TrustRoot,
    message: &[u8],
    signature: &[u8],
    vouched: &Vouched<'_>,
    entry: &RekorEntry,
) -> Result<(), SigstoreError> {
    // 1. body shape: the one reading of a logged body, as on the first sight;
    // 2. SET; 3. integrated time
    let (logged, _) = read_with_set(trust, entry)?;
    // 4. signature over M, in the scheme sigstore-verify would use
    sigstore::verify_message_signature_sha256(&vouched.facts.public_key_der, message, signature)?;
    // 5. the entry describes this signature
    logged.describes(
        message,
        signature,
        SigningMaterial::Certificate(vouched.leaf),
    )
}
