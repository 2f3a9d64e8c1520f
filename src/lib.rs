//! mansign: sign Kubernetes YAML manifests with Sigstore and verify them.
//!
//! The crate is a library first; the `mansign` binary is a thin shell over it.
//! Data flow (see `docs/design.md`):
//!
//! * sign: files -> [`manifest::load`] -> message M -> [`signing::Signer`] ->
//!   [`annotations::SignatureSet`] -> [`annotations::embed`] -> write
//! * verify: object -> [`annotations::extract`] -> signature sets -> [`verify`] (crypto +
//!   identity) -> manifest diff (signed document vs object) -> [`verify::Verdict`]

pub mod annotations;
pub mod cli;
pub mod limits;
pub mod manifest;
pub mod signing;
pub mod trust;
pub mod verify;

pub use limits::Limits;
