//! The `cosign.sigstore.dev/*` annotation codec.
//!
//! Wire format (docs/design.md, "Signature annotations" and "The message M"), per object:
//!
//! | key | value |
//! |---|---|
//! | `<domain>/message` | base64(gzip(M)) |
//! | `<domain>/signature[_N]` | base64(DER signature over M) — not gzipped |
//! | `<domain>/certificate[_N]` | base64(gzip(PEM certificate)) |
//! | `<domain>/bundle[_N]` | base64(gzip(cosign RekorBundle JSON)) |
//!
//! Set 0 has no suffix; set N > 0 uses `_N`. The message is shared by all sets.
//! Decoding is bounded by [`Limits`](crate::Limits).

mod codec;
mod domain;
mod rekor_bundle;
mod set;

pub use codec::{CodecError, decode_base64, decode_maybe_gzip, encode_gzip_base64, gzip};
pub use domain::{AnnotationDomain, AnnotationDomainError};
pub use rekor_bundle::{RekorBundle, RekorPayload};
pub(crate) use set::without_signature_annotations;
pub use set::{
    AnnotationError, EmbedMode, SignatureSet, SignedAnnotations, embed, extract,
    strip_signature_annotations,
};
