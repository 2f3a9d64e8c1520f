//! Key-based signing with `--tlog-upload`: a [`Signer`] that wraps another one and logs each
//! signature in Rekor, with the PEM public key in the entry (cosign's shape for keys).

use super::error::SignError;
use super::http;
use super::rekor_upload::{EntryRequest, RekorOptions, RekorUploader};
use super::signer::{LogEntry, SignedBatch, Signer};
use super::sigstore::{BundleMaterial, message_bundle_json};

/// Wraps a key-based signer so that each signature is also logged in Rekor
/// (`--key` with `--tlog-upload`): the entry carries the PEM public key, and each
/// signature set gets the `bundle` (no certificate, as cosign does for keys). Each
/// [`Signer::sign_messages`] call returns its entries
/// ([`BatchSignature::log_entry`](crate::signing::BatchSignature::log_entry)).
pub struct TlogUploadingSigner<S> {
    inner: S,
    public_key_pem: String,
    options: RekorOptions,
}

impl<S: Signer> TlogUploadingSigner<S> {
    pub fn new(inner: S, public_key_pem: String, options: RekorOptions) -> Self {
        TlogUploadingSigner {
            inner,
            public_key_pem,
            options,
        }
    }

    /// The public key PEM the entries carry.
    pub fn public_key_pem(&self) -> &str {
        &self.public_key_pem
    }
}

impl<S: Signer> Signer for TlogUploadingSigner<S> {
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<SignedBatch, SignError> {
        let mut batch = self.inner.sign_messages(messages)?;
        if messages.is_empty() {
            return Ok(batch);
        }
        let uploader = RekorUploader::new(self.options.clone())
            .map_err(|source| SignError::Tlog { message: 0, source })?;
        let requests = messages
            .iter()
            .zip(&batch.signatures)
            .map(|(m, s)| {
                EntryRequest::new(m, s.set.signature.clone(), self.public_key_pem.clone())
            })
            .collect();
        let logged = http::block_on(uploader.upload_all(requests))
            .map_err(SignError::Runtime)?
            .map_err(|(message, source)| SignError::Tlog { message, source })?;
        for (i, ((signed, entry), m)) in batch
            .signatures
            .iter_mut()
            .zip(logged)
            .zip(messages)
            .enumerate()
        {
            let bundle_json = message_bundle_json(
                BundleMaterial::PublicKey,
                m,
                &signed.set.signature,
                &entry.entry,
            )
            .map_err(|e| SignError::Bundle {
                message: i,
                reason: e.to_string(),
            })?;
            signed.log_entry = Some(LogEntry {
                log_index: entry.rekor_bundle.payload.log_index,
                bundle_json,
            });
            signed.set.bundle = Some(entry.rekor_bundle);
        }
        Ok(batch)
    }
}
