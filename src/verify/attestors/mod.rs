//! Who must have signed: attestors (a key, a certificate attestor, a keyless identity),
//! attestor sets (N-of-M over distinct signers, nested) and their assignment search, identity
//! policies, the (set, attestor) checks each run once within a budget, and why a check
//! failed. Uses `verify::sigstore` for the signature checks themselves; the pipeline
//! (`verify::verifier`) uses this.

pub(super) mod assignment;
pub(super) mod attestor;
pub(super) mod attestor_set;
pub(super) mod checks;
pub(super) mod failure;
pub(super) mod identity;
