//! The [`Signer`] trait: what every signer (key, keyless, key with Rekor) does.

use super::error::SignError;
use crate::annotations::SignatureSet;

/// Something that signs messages (the bytes of M).
pub trait Signer {
    /// Signs every message; returns one set per message, in order.
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<Vec<SignatureSet>, SignError>;
}
