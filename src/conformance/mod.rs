//! The sigstore-conformance front end: standard Sigstore bundles over arbitrary blobs,
//! verified offline ([`BundleVerifier`]) and produced ([`sign_bundle`]). Off mansign's main
//! path (signed manifests use cosign annotations, see [`crate::verify`]); it exists so the
//! Sigstore project's own acceptance suite can run against mansign's verifier, and for any
//! Rust caller holding a `.sigstore.json` bundle.
//!
//! Like `trust/`, `verify/sigstore/adapter.rs` and `signing/sigstore.rs`, this module is an adapter
//! over the sigstore crates: bundles are their types. A failed check is a
//! [`SigstoreError`](crate::verify::SigstoreError), mapped by the same function as for
//! signed manifests.

mod bundle;
mod digest;
mod sign;
mod verify;

pub use bundle::{BundleArtifact, BundleError, BundleKey, ExpectedSigner, SigstoreBundle};
pub use digest::{DigestError, Sha256Digest};
pub use sign::{BundlePayload, BundleServices, BundleSignError, sign_bundle};
pub use verify::{BundleSigner, BundleVerifier, VerifiedBundle};
