//! Signature evidence: the adapter over the sigstore crates (adapter, the only file of
//! `verify` that names them, and their errors as [`SigstoreError`](error::SigstoreError)),
//! Rekor entries (rekor_entry, logged_entry, hashedrekord, legacy_rekord), keyless and key
//! signature sets with their bundles (keyless, key_bundle), the Fulcio chain's validity at
//! the signing time (fulcio_chain), certificate attestors' own PKI (certificate, pem), and
//! what a verified signature proves (evidence, signer). Imports nothing else of `verify`.

pub(crate) mod adapter;
pub(super) mod certificate;
pub(super) mod error;
pub(super) mod evidence;
pub(crate) mod fulcio_chain;
pub(super) mod hashedrekord;
pub(super) mod key_bundle;
pub(super) mod keyless;
pub(super) mod legacy_rekord;
pub(super) mod logged_entry;
pub(super) mod pem;
pub(super) mod rekor_entry;
pub(super) mod signer;

/// A set at index 0 whose signature is the byte 1, with `certificate_pem` and `bundle`:
/// what the refusal tests of the set checks start from.
#[cfg(test)]
fn test_set(
    certificate_pem: Option<&str>,
    bundle: Option<crate::annotations::RekorBundle>,
) -> crate::annotations::SignatureSet {
    crate::annotations::SignatureSet {
        index: 0,
        signature: vec![1],
        certificate_pem: certificate_pem.map(str::to_string),
        bundle,
    }
}
