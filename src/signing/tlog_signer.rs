//! Key-based signing with `--tlog-upload`: a [`Signer`] that wraps another one and logs each
//! signature in Rekor, with the PEM public key in the entry (cosign's shape for keys).

use super::error::SignError;
use super::http;
use super::rekor_upload::{EntryRequest, RekorOptions, RekorUploader};
use super::signer::Signer;
use super::sigstore::{BundleMaterial, message_bundle_json};
use crate::annotations::SignatureSet;

/// Wraps a key-based signer so that each signature is also logged in Rekor
/// (`--key` with `--tlog-upload`): the entry carries the PEM public key, and each
/// [`SignatureSet`] gets the `bundle` (no certificate, as cosign does for keys).
pub struct TlogUploadingSigner<S> {
    inner: S,
    public_key_pem: String,
    options: RekorOptions,
    last: std::sync::Mutex<Vec<(i64, String)>>,
}

impl<S: Signer> TlogUploadingSigner<S> {
    pub fn new(inner: S, public_key_pem: String, options: RekorOptions) -> Self {
        TlogUploadingSigner {
            inner,
            public_key_pem,
            options,
            last: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The public key PEM the entries carry.
    pub fn public_key_pem(&self) -> &str {
        &self.public_key_pem
    }

    /// Log indexes of the entries made by the last [`Signer::sign_messages`] call, in
    /// message order.
    pub fn log_indexes(&self) -> Vec<i64> {
        self.last
            .lock()
            .map(|l| l.iter().map(|(i, _)| *i).collect())
            .unwrap_or_default()
    }

    /// Sigstore bundles (v0.3 JSON, public-key material) of the last batch, in message
    /// order.
    pub fn bundles(&self) -> Vec<String> {
        self.last
            .lock()
            .map(|l| l.iter().map(|(_, b)| b.clone()).collect())
            .unwrap_or_default()
    }
}

impl<S: Signer> Signer for TlogUploadingSigner<S> {
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<Vec<SignatureSet>, SignError> {
        let mut sets = self.inner.sign_messages(messages)?;
        if messages.is_empty() {
            return Ok(sets);
        }
        let uploader = RekorUploader::new(self.options.clone())
            .map_err(|source| SignError::Tlog { message: 0, source })?;
        let requests = messages
            .iter()
            .zip(&sets)
            .map(|(m, s)| EntryRequest::new(m, s.signature.clone(), self.public_key_pem.clone()))
            .collect();
        let logged = http::block_on(uploader.upload_all(requests))
            .map_err(SignError::Runtime)?
            .map_err(|(message, source)| SignError::Tlog { message, source })?;
        let mut last = Vec::with_capacity(logged.len());
        for (i, ((set, entry), m)) in sets.iter_mut().zip(&logged).zip(messages).enumerate() {
            let bundle =
                message_bundle_json(BundleMaterial::PublicKey, m, &set.signature, &entry.entry)
                    .map_err(|e| SignError::Bundle {
                        message: i,
                        reason: e.to_string(),
                    })?;
            last.push((entry.rekor_bundle.payload.log_index, bundle));
            set.bundle = Some(entry.rekor_bundle.clone());
        }
        if let Ok(mut l) = self.last.lock() {
            *l = last;
        }
        Ok(sets)
    }
}
