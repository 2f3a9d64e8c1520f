//! The difference engine: field-by-field comparison with ignore patterns (diff), the
//! tolerated differences of ignore profiles (tolerance) and the GitOps tracking keys they
//! bind (gitops), and who set a field (managed_fields, read by the tolerances). Reads
//! documents; imports nothing of the YAML reader.

pub(super) mod diff;
pub(super) mod gitops;
pub(super) mod managed_fields;
pub(super) mod tolerance;
