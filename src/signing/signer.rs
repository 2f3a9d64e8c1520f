//! The [`Signer`] trait: what every signer (key, keyless, key with Rekor) does, and the
//! [`SignedBatch`] each call returns.
//!
//! A call returns everything it produced: the signature sets, the certificate they carry
//! and each signature's transparency-log entry. Nothing is kept in the signer to be asked
//! for afterwards, so two batches (or two threads) on one signer each get their own
//! results.

use super::error::SignError;
use crate::annotations::SignatureSet;

/// Something that signs messages (the bytes of M).
pub trait Signer {
    /// Signs every message; returns one [`BatchSignature`] per message, in order, and the
    /// certificate they carry.
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<SignedBatch, SignError>;
}

/// The certificate a batch was signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningCertificate {
    /// The Fulcio leaf, PEM.
    pub pem: String,
    /// The SAN Fulcio put in the certificate (email or URI).
    pub identity: Option<String>,
    /// The OIDC issuer extension.
    pub issuer: Option<String>,
    pub not_after: jiff::Timestamp,
}

/// A signature's entry in the transparency log (Rekor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The Rekor entry's global log index.
    pub log_index: i64,
    /// Sigstore bundle v0.3 (JSON) of the signature with the full Rekor entry, inclusion
    /// proof included (what `--bundle-out` writes).
    pub bundle_json: String,
}

/// One signed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSignature {
    /// What goes into the annotations.
    pub set: SignatureSet,
    /// The signature's log entry; `None` for a signer that does not log (a key without
    /// `--tlog-upload`).
    pub log_entry: Option<LogEntry>,
}

/// What one [`Signer::sign_messages`] call produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignedBatch {
    /// The certificate every signature of the batch carries; `None` for key signers and
    /// for an empty batch (nothing was requested).
    pub certificate: Option<SigningCertificate>,
    /// One per message, in message order.
    pub signatures: Vec<BatchSignature>,
}

impl SignedBatch {
    /// A batch of signature sets without certificate or log entries (a key signer's).
    pub fn from_sets(sets: Vec<SignatureSet>) -> Self {
        SignedBatch {
            certificate: None,
            signatures: sets
                .into_iter()
                .map(|set| BatchSignature {
                    set,
                    log_entry: None,
                })
                .collect(),
        }
    }

    /// The log entries, in message order: one per message when the signer logged them,
    /// none when it does not log.
    pub fn log_entries(&self) -> impl Iterator<Item = &LogEntry> {
        self.signatures.iter().filter_map(|s| s.log_entry.as_ref())
    }
}
