//! Keyless signing: one OIDC token buys one short-lived Fulcio certificate for an
//! ephemeral P-256 key, which signs every batch of the signer; each signature is logged in
//! Rekor.
//!
//! One certificate per signer, not per message or per batch: a directory of 200 manifests
//! costs one Fulcio request (and one identity-token use), and every signature of the run
//! carries the same certificate, also when the CLI signs a large tree window by window (one
//! [`Signer::sign_messages`] call per window). The key and certificate are kept, in memory
//! only, while the certificate has at least [`CERTIFICATE_MARGIN`] left; a batch that
//! starts later gets a new key and certificate with the same token (public-good Fulcio
//! certificates live 10 minutes, so only a run longer than about 8 minutes asks twice). The Rekor uploads run concurrently (bounded). Every request is
//! retried on 429, 5xx, connection failures and answers broken off mid-body, honouring
//! `Retry-After`, with jittered backoff; another 4xx is never retried (see `retry.rs`).
//!
//! What each message gets ([`SignatureSet`]): the DER ECDSA signature over SHA-256(M),
//! the Fulcio leaf certificate (PEM), and the cosign RekorBundle made from Rekor's answer
//! (SET, body, integratedTime, logIndex, logID). A Sigstore bundle v0.3 with the full
//! entry (inclusion proof and checkpoint) is returned with it, for `--bundle-out`; each
//! call returns its own [`SignedBatch`], the signer keeps only the key and certificate.
//!
//! The signer does not verify what Fulcio and Rekor returned beyond the checks that need
//! no trust root, made as each answer arrives: the certificate is for our key and for the
//! token's identity and issuer (`certificate_identity.rs`), and valid now with more than
//! [`CERTIFICATE_MARGIN`] left; the entry is the one we uploaded. A
//! caller with a trust root verifies the results before writing them (the CLI does so
//! with `--trusted-root`).

use super::error::{KeylessError, SignError};
use super::fulcio::{DEFAULT_FULCIO_URL, FulcioRequest, request_certificate};
use super::http;
use super::rekor_upload::{EntryRequest, RekorOptions, RekorUploader};
use super::retry::{RetryObserver, RetryPolicy};
pub use super::signer::SigningCertificate;
use super::signer::{BatchSignature, LogEntry, SignedBatch, Signer};
use super::sigstore::{BundleMaterial, EphemeralKey, message_bundle_json};
use super::token::AcquiredToken;
use crate::annotations::SignatureSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where to get certificates and log signatures.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KeylessOptions {
    /// Fulcio base URL (`POST /api/v2/signingCert`).
    pub fulcio_url: String,
    pub rekor: RekorOptions,
    /// Retries of the certificate request.
    pub retry: RetryPolicy,
    /// Bound of the certificate request. Default 30 s.
    pub timeout: Duration,
    /// Told of each retried certificate request (Rekor's uploads tell `rekor.on_retry`).
    /// Default: nobody.
    pub on_retry: RetryObserver,
}

crate::setters::setters! {
    /// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
    /// so it is built from [`KeylessOptions::default()`] and these, never as a literal.
    KeylessOptions {
        /// Sets `fulcio_url`.
        with_fulcio_url => fulcio_url: String,
        /// Sets `rekor`.
        with_rekor => rekor: RekorOptions,
        /// Sets `retry`.
        with_retry => retry: RetryPolicy,
        /// Sets `timeout`.
        with_timeout => timeout: Duration,
        /// Sets `on_retry`.
        with_on_retry => on_retry: RetryObserver,
    }
}

impl Default for KeylessOptions {
    fn default() -> Self {
        KeylessOptions {
            fulcio_url: DEFAULT_FULCIO_URL.to_string(),
            rekor: RekorOptions::default(),
            retry: RetryPolicy::DEFAULT,
            timeout: Duration::from_secs(30),
            on_retry: RetryObserver::default(),
        }
    }
}

/// Signs batches keylessly with one token (see the module docs).
///
/// ```no_run
/// use mansign::signing::{AmbientEnvironment, KeylessOptions, KeylessSigner, Signer};
/// use mansign::signing::{SilentPrompt, TokenOptions};
/// use mansign::signing::token::acquire_token_blocking;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let token = acquire_token_blocking(
///     &TokenOptions::default(),
///     &AmbientEnvironment::from_process(),
///     &SilentPrompt,
/// )?;
/// let signer = KeylessSigner::new(token, KeylessOptions::default());
/// let batch = signer.sign_messages(&[b"apiVersion: v1\nkind: ConfigMap\n".to_vec()])?;
/// // The call returns what it produced: the certificate, and each signature's set and
/// // Rekor entry.
/// let certificate = batch.certificate.as_ref().expect("a keyless batch has a certificate");
/// println!("signed as {:?}, valid until {}", certificate.identity, certificate.not_after);
/// let signed = &batch.signatures[0];
/// assert!(signed.set.certificate_pem.is_some() && signed.set.bundle.is_some());
/// println!("logged at index {}", signed.log_entry.as_ref().map_or(-1, |e| e.log_index));
/// # Ok(())
/// # }
/// ```
pub struct KeylessSigner {
    token: AcquiredToken,
    options: KeylessOptions,
    /// The key and certificate of the batches so far, while the certificate lasts.
    current: Mutex<Option<Arc<Issued>>>,
}

/// An ephemeral key and the Fulcio certificate for it.
struct Issued {
    key: EphemeralKey,
    leaf_der: Vec<u8>,
    certificate: SigningCertificate,
}

/// A certificate is used for a new batch only while at least this much of it is left: the
/// batch's Rekor entries must be integrated before it expires (verifiers require the log
/// time inside the validity window), and uploads are retried for up to a few timeouts.
pub const CERTIFICATE_MARGIN: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// True while a certificate valid until `not_after` may sign a batch that starts at `now`.
fn still_usable(not_after: jiff::Timestamp, now: jiff::Timestamp) -> bool {
    now.checked_add(CERTIFICATE_MARGIN)
        .is_ok_and(|cutoff| cutoff < not_after)
}

impl std::fmt::Debug for KeylessSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeylessSigner")
            .field("token", &self.token)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl KeylessSigner {
    pub fn new(token: AcquiredToken, options: KeylessOptions) -> Self {
        KeylessSigner {
            token,
            options,
            current: Mutex::new(None),
        }
    }

    /// The key and certificate for a batch that starts now: the ones of the last batch
    /// while [`still_usable`], else a new key and a certificate for it.
    async fn issued(&self) -> Result<Arc<Issued>, KeylessError> {
        let kept = self.current.lock().ok().and_then(|c| c.clone());
        if let Some(kept) = kept
            && still_usable(kept.certificate.not_after, jiff::Timestamp::now())
        {
            return Ok(kept);
        }
        let key =
            EphemeralKey::generate().map_err(|e| KeylessError::KeyGeneration(e.to_string()))?;
        let issued = request_certificate(
            &FulcioRequest {
                url: &self.options.fulcio_url,
                timeout: self.options.timeout,
                retry: self.options.retry,
                on_retry: &self.options.on_retry,
            },
            &self.token.token,
            &key,
        )
        .await?;
        // Checked on arrival: a certificate already expired, about to, or not yet valid
        // (a clock off by hours) would sign a whole window before its log times showed it.
        let now = jiff::Timestamp::now();
        let not_yet_valid = now
            .checked_add(CERTIFICATE_MARGIN)
            .is_ok_and(|late| issued.facts.not_before > late);
        if !still_usable(issued.facts.not_after, now) || not_yet_valid {
            return Err(KeylessError::CertificateNotUsable {
                not_before: issued.facts.not_before,
                not_after: issued.facts.not_after,
                now,
            });
        }
        let fresh = Arc::new(Issued {
            certificate: SigningCertificate {
                pem: pem_lf("CERTIFICATE", &issued.leaf_der),
                identity: issued.facts.identity.clone(),
                issuer: issued.facts.issuer.clone(),
                not_after: issued.facts.not_after,
            },
            key,
            leaf_der: issued.leaf_der,
        });
        if let Ok(mut current) = self.current.lock() {
            *current = Some(Arc::clone(&fresh));
        }
        Ok(fresh)
    }

    /// Signs `messages`: one certificate (the signer's, see the module docs), one Rekor
    /// entry per message. Returns what it produced: the certificate and, per message, the
    /// signature set and its log entry (index and Sigstore bundle).
    pub async fn sign_batch(&self, messages: &[Vec<u8>]) -> Result<SignedBatch, KeylessError> {
        if messages.is_empty() {
            return Ok(SignedBatch::default());
        }
        let issued = self.issued().await?;
        let (key, certificate) = (&issued.key, &issued.certificate);

        let mut requests = Vec::with_capacity(messages.len());
        let mut signatures = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let sig = key.sign(m).map_err(|e| KeylessError::Signing {
                message: i,
                reason: e.to_string(),
            })?;
            requests.push(EntryRequest::new(m, sig.clone(), certificate.pem.clone()));
            signatures.push(sig);
        }
        let uploader = RekorUploader::new(self.options.rekor.clone())
            .map_err(|e| KeylessError::HttpClient(e.to_string()))?;
        let logged = uploader
            .upload_all(requests)
            .await
            .map_err(|(message, source)| KeylessError::Rekor { message, source })?;

        let mut out = Vec::with_capacity(messages.len());
        for (i, ((m, sig), entry)) in messages.iter().zip(signatures).zip(logged).enumerate() {
            // Fulcio certificates live minutes; verifiers require the log time inside the
            // validity window, so a signature logged too late is useless.
            if let Some(t) = entry.entry.integrated_time()
                && t > certificate.not_after
            {
                return Err(KeylessError::LoggedAfterCertificateExpired {
                    message: i,
                    integrated_time: t,
                    not_after: certificate.not_after,
                });
            }
            let bundle_json = message_bundle_json(
                BundleMaterial::Certificate(&issued.leaf_der),
                m,
                &sig,
                &entry.entry,
            )
            .map_err(|e| KeylessError::Bundle {
                message: i,
                reason: e.to_string(),
            })?;
            out.push(BatchSignature {
                log_entry: Some(LogEntry {
                    log_index: entry.rekor_bundle.payload.log_index,
                    bundle_json,
                }),
                set: SignatureSet {
                    index: 0,
                    signature: sig,
                    certificate_pem: Some(certificate.pem.clone()),
                    bundle: Some(entry.rekor_bundle),
                },
            });
        }
        Ok(SignedBatch {
            certificate: Some(certificate.clone()),
            signatures: out,
        })
    }
}

impl Signer for KeylessSigner {
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<SignedBatch, SignError> {
        Ok(http::block_on(self.sign_batch(messages)).map_err(KeylessError::Runtime)??)
    }
}

/// PEM with `\n` line ends (the `pem` crate defaults to `\r\n`), as cosign writes it.
fn pem_lf(tag: &str, der: &[u8]) -> String {
    pem::encode_config(
        &pem::Pem::new(tag, der),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_signs_new_batches_only_while_the_margin_is_left() {
        let now: jiff::Timestamp = "2026-11-27T03:00:00Z".parse().unwrap();
        let after = |secs: i64| now + jiff::SignedDuration::from_secs(secs);
        // A fresh 10-minute certificate, and one with more than the margin left: reused.
        assert!(still_usable(after(600), now));
        assert!(still_usable(after(121), now));
        // The margin or less left, expired, or at the end of time: a new certificate.
        assert!(!still_usable(after(120), now), "exactly the margin left");
        assert!(!still_usable(after(30), now), "less than the margin left");
        assert!(!still_usable(after(-1), now), "expired");
        assert!(!still_usable(jiff::Timestamp::MAX, jiff::Timestamp::MAX));
    }
}
