//! Verification: is this object exactly what a trusted signer signed?
//!
//! [`Verifier::verify_document`] runs one pipeline per object and stops at the first
//! failing check:
//!
//! 1. read the signature annotations (message + signature sets), refusing more than the API
//!    server would store;
//! 2. read the signed documents out of the message and find the one for this object (group,
//!    kind, namespace, name); its signed signing time dates the signatures;
//! 3. check the signature sets against the [`Requirement`]: any one trusted attestor, or
//!    every attestor set of an [`AttestorPolicy`] (N-of-M over distinct signers, nested),
//!    with the maximum age applied to each accepted signer; every (set, attestor) check
//!    runs once, within the object's budget;
//! 4. compare the object with the signed document (signature annotations, ignored fields
//!    and tolerated differences left out);
//! 5. the signed expiry, if any.
//!
//! The result, a [`DocumentVerdict`], explains itself: which set and which attestor
//! verified, or which check failed and why ([`Rejection`], typed down to the check, with a
//! stable [`Rejection::code`]). The CLI and the webhook print it as is.
//!
//! Keyless signatures are checked in full ([`verify_certificate_set`]: Fulcio chain at the
//! Rekor integrated time, SCT, SET, Rekor body, signature over M), then the signer is
//! judged by an [`IdentityPolicy`]:
//!
//! ```no_run
//! use mansign::trust::TrustRoot;
//! use mansign::verify::{Attestor, IdentityPolicy, KeylessAttestor, Verifier};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let identity = IdentityPolicy::builder()
//!     .issuer("https://token.actions.githubusercontent.com")
//!     .subject("https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main")
//!     .build()?;
//! let trust = Arc::new(TrustRoot::public_good()?); // embedded, offline
//! let verifier = Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(trust, identity))]);
//! let object: serde_json::Value = serde_json::from_str(&std::fs::read_to_string("cm.json")?)?;
//! let verdict = verifier.verify_object(&object)?;
//! println!("{verdict}"); // ... verified (signature set 0, subject https://github.com/...)
//! # Ok(())
//! # }
//! ```

mod attestors;
mod blocking;
mod cache;
mod compare;
pub(crate) mod sigstore;
mod verdict;
mod verifier;

pub use crate::parallel::{MAX_VERIFICATION_THREADS, default_parallelism, map_in_order};
pub use attestors::assignment::{
    MAX_DEPTH as MAX_ATTESTOR_SET_DEPTH, MAX_TREE_ENTRIES as MAX_ATTESTOR_SET_ENTRIES,
};
pub use attestors::attestor::{Attestor, KeylessAttestor, TrustedKey};
pub use attestors::attestor_set::{
    AttestorEntry, AttestorPolicy, AttestorSet, AttestorSetError, EntryFailure, EntryFailureReason,
    EntryMatch, EntryPath, ISSUER_NOT_CHECKED, MatchingLimit, SetFailure,
};
pub use attestors::failure::{AgeFailure, Attempt, CheckFailure, best_attempt};
pub use attestors::identity::{
    AnchoredRegex, Claim, ClaimMatcher, IdentityMismatch, IdentityPolicy, IdentityPolicyBuilder,
    IdentityPolicyError, ValueMatcher,
};
pub use blocking::{BlockingError, BlockingVerifications};
pub use cache::{CacheStats, DEFAULT_CACHE_ENTRIES, VerificationCache};
pub use sigstore::certificate::{
    CertificateAttestor, CertificateAttestorError, CertificateCheckError, SigningTime,
};
pub use sigstore::error::SigstoreError;
pub use sigstore::evidence::{
    CertificateSubject, RekorEvidence, SigstoreEvidence, WorkflowClaims, format_unix_time,
};
pub use sigstore::key_bundle::verify_key_set_with_bundle;
pub(crate) use sigstore::keyless::leaf_issuer_name as sigstore_leaf_issuer_name;
pub use sigstore::keyless::verify_certificate_set;
pub use sigstore::signer::{SignerIdentity, SignerInfo, SignerName};
pub use verdict::{DocumentVerdict, MAX_LISTED_DOCUMENTS, Rejection, Verdict, Verified};
pub(crate) use verifier::VerifyMode;
pub use verifier::{Requirement, Verifier};

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn verifiers_and_policies_can_be_shared_across_threads() {
        assert_send_sync::<super::Verifier>();
        assert_send_sync::<super::AttestorPolicy>();
        assert_send_sync::<super::VerificationCache>();
        assert_send_sync::<super::BlockingVerifications>();
        assert_send_sync::<crate::trust::TrustRoot>();
        assert_send_sync::<super::DocumentVerdict>();
    }
}
