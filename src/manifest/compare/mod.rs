//! The difference engine: field-by-field comparison with ignore patterns (diff), the
//! tolerated differences of ignore profiles (tolerance) and the GitOps tracking keys they
//! bind (gitops). Reads documents; imports nothing of the YAML reader.

pub(super) mod diff;
pub(super) mod gitops;
pub(super) mod tolerance;
