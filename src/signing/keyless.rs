//! Keyless signing: one OIDC token buys one short-lived Fulcio certificate for an
//! ephemeral P-256 key, which signs the whole batch; each signature is logged in Rekor.
//!
//! One certificate per run, not per message: a directory of 200 manifests costs one
//! Fulcio request (and one identity-token use), and every signature of the run carries
//! the same certificate. The Rekor uploads run concurrently (bounded) and are retried on
//! transient failures; a 4xx is never retried.
//!
//! What each message gets ([`SignatureSet`]): the DER ECDSA signature over SHA-256(M),
//! the Fulcio leaf certificate (PEM), and the cosign RekorBundle made from Rekor's answer
//! (SET, body, integratedTime, logIndex, logID). A Sigstore bundle v0.3 with the full
//! entry (inclusion proof and checkpoint) is kept too, for `--bundle-out`.
//!
//! The signer does not verify what Fulcio and Rekor returned beyond the checks that need
//! no trust root (the certificate is for our key, the entry is the one we uploaded). A
//! caller with a trust root verifies the results before writing them (the CLI does so
//! with `--trusted-root`).

use super::http::{self, RetryPolicy, Transient, retry, status_is_transient};
use super::rekor_upload::{EntryRequest, LoggedEntry, RekorError, RekorOptions, RekorUploader};
use super::token::AcquiredToken;
use super::{SignError, Signer};
use crate::annotations::SignatureSet;
use sigstore_crypto::KeyPair;
use sigstore_fulcio::FulcioClient;
use sigstore_types::bundle::{
    CertificateContent, MessageDigest, MessageSignature, PublicKeyIdentifier, SignatureContent,
    VerificationMaterial, VerificationMaterialContent,
};
use sigstore_types::{
    Bundle, DerCertificate, DigestBytes, HashAlgorithm, KindVersion, MediaType, SignatureBytes,
};
use std::sync::Mutex;
use std::time::Duration;

/// The public-good Fulcio.
pub const DEFAULT_FULCIO_URL: &str = "https://fulcio.sigstore.dev";

/// Where to get certificates and log signatures.
#[derive(Debug, Clone)]
pub struct KeylessOptions {
    /// Fulcio base URL (`POST /api/v2/signingCert`).
    pub fulcio_url: String,
    pub rekor: RekorOptions,
    /// Retries of the certificate request.
    pub retry: RetryPolicy,
    /// Bound of the certificate request. Default 30 s.
    pub timeout: Duration,
}

impl Default for KeylessOptions {
    fn default() -> Self {
        KeylessOptions {
            fulcio_url: DEFAULT_FULCIO_URL.to_string(),
            rekor: RekorOptions::default(),
            retry: RetryPolicy::DEFAULT,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Why keyless signing failed.
#[derive(Debug, thiserror::Error)]
pub enum KeylessError {
    #[error("cannot make the ephemeral signing key: {0}")]
    KeyGeneration(String),
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
    #[error(
        "refusing to send the identity token to {url}: use https:// (plain http:// only to \
         this machine)"
    )]
    InsecureFulcioUrl { url: String },
    #[error("Fulcio at {url} is unreachable after {attempts} attempt(s): {reason}")]
    FulcioUnreachable {
        url: String,
        attempts: u32,
        reason: String,
    },
    #[error(
        "Fulcio at {url} refused the certificate request after {attempts} attempt(s): HTTP {status}: {message}"
    )]
    FulcioStatus {
        url: String,
        status: u16,
        attempts: u32,
        message: String,
    },
    #[error("Fulcio at {url} answered with something that is not a certificate: {reason}")]
    FulcioResponse { url: String, reason: String },
    #[error("Fulcio issued a certificate for another public key than ours")]
    CertificateForAnotherKey,
    #[error("signing message {message} failed: {reason}")]
    Signing { message: usize, reason: String },
    #[error("Rekor entry for message {message}: {source}")]
    Rekor {
        message: usize,
        #[source]
        source: RekorError,
    },
    #[error(
        "Rekor logged message {message} at {integrated_time}, after the certificate expired \
         at {not_after}; the signature would not verify (sign fewer files per run)"
    )]
    LoggedAfterCertificateExpired {
        message: usize,
        integrated_time: jiff::Timestamp,
        not_after: jiff::Timestamp,
    },
    #[error("cannot build the Sigstore bundle for message {message}: {reason}")]
    Bundle { message: usize, reason: String },
    #[error("cannot run the signing requests: {0}")]
    Runtime(#[source] std::io::Error),
}

impl Transient for sigstore_fulcio::Error {
    fn is_transient(&self) -> bool {
        match self {
            // The request could not be sent or the answer not read: connection refused,
            // reset, timeout.
            sigstore_fulcio::Error::Http(_) => true,
            sigstore_fulcio::Error::Status { status, .. } => status_is_transient(*status),
            _ => false,
        }
    }
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

/// One signed message.
#[derive(Debug, Clone)]
pub struct KeylessSignature {
    /// What goes into the annotations.
    pub set: SignatureSet,
    /// The Rekor entry's global log index.
    pub log_index: i64,
    /// Sigstore bundle v0.3 (JSON) with the full Rekor entry, inclusion proof included.
    pub bundle_json: String,
}

/// What one keyless run produced.
#[derive(Debug, Clone)]
pub struct KeylessBatch {
    /// `None` only for an empty batch (nothing was requested).
    pub certificate: Option<SigningCertificate>,
    pub signatures: Vec<KeylessSignature>,
}

/// Signs batches keylessly with one token (see the module docs).
///
/// ```no_run
/// use mansign::signing::{KeylessOptions, KeylessSigner, Signer, SilentPrompt};
/// use mansign::signing::token::{acquire_token_blocking, AmbientEnvironment, TokenOptions};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let token = acquire_token_blocking(
///     &TokenOptions::default(),
///     &AmbientEnvironment::from_process(),
///     &SilentPrompt,
/// )?;
/// let signer = KeylessSigner::new(token, KeylessOptions::default());
/// let sets = signer.sign_messages(&[b"apiVersion: v1\nkind: ConfigMap\n".to_vec()])?;
/// assert!(sets[0].certificate_pem.is_some() && sets[0].bundle.is_some());
/// # Ok(())
/// # }
/// ```
pub struct KeylessSigner {
    token: AcquiredToken,
    options: KeylessOptions,
    last: Mutex<Option<KeylessBatch>>,
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
            last: Mutex::new(None),
        }
    }

    /// The result of the last [`Signer::sign_messages`] call (certificate, log indexes,
    /// Sigstore bundles), if it succeeded.
    pub fn last_batch(&self) -> Option<KeylessBatch> {
        self.last.lock().ok().and_then(|l| l.clone())
    }

    /// Signs `messages`: one certificate, one Rekor entry per message.
    pub async fn sign_batch(&self, messages: &[Vec<u8>]) -> Result<KeylessBatch, KeylessError> {
        if messages.is_empty() {
            return Ok(KeylessBatch {
                certificate: None,
                signatures: Vec::new(),
            });
        }
        let key = KeyPair::generate_ecdsa_p256()
            .map_err(|e| KeylessError::KeyGeneration(e.to_string()))?;
        let (leaf, certificate) = self.request_certificate(&key).await?;

        let mut requests = Vec::with_capacity(messages.len());
        let mut signatures = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let sig = key.sign(m).map_err(|e| KeylessError::Signing {
                message: i,
                reason: e.to_string(),
            })?;
            let sig = sig.into_bytes();
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
            if let Some(t) = entry.entry.integrated_time
                && t > certificate.not_after
            {
                return Err(KeylessError::LoggedAfterCertificateExpired {
                    message: i,
                    integrated_time: t,
                    not_after: certificate.not_after,
                });
            }
            let bundle_json =
                sigstore_bundle_json(BundleMaterial::Certificate(&leaf), m, &sig, &entry)
                    .map_err(|reason| KeylessError::Bundle { message: i, reason })?;
            out.push(KeylessSignature {
                log_index: entry.rekor_bundle.payload.log_index,
                set: SignatureSet {
                    index: 0,
                    signature: sig,
                    certificate_pem: Some(certificate.pem.clone()),
                    bundle: Some(entry.rekor_bundle),
                },
                bundle_json,
            });
        }
        Ok(KeylessBatch {
            certificate: Some(certificate),
            signatures: out,
        })
    }

    /// One Fulcio request for the whole batch, retried on transient failures.
    async fn request_certificate(
        &self,
        key: &KeyPair,
    ) -> Result<(DerCertificate, SigningCertificate), KeylessError> {
        let url = self.options.fulcio_url.trim_end_matches('/').to_string();
        if !http::may_carry_secrets(&url) {
            return Err(KeylessError::InsecureFulcioUrl { url });
        }
        let http = http::client(self.options.timeout)
            .map_err(|e| KeylessError::HttpClient(e.to_string()))?;
        let fulcio = FulcioClient::builder(url.clone())
            .with_http_client(http)
            .build()
            .map_err(|e| KeylessError::HttpClient(e.to_string()))?;
        let response = retry(self.options.retry, || {
            fulcio.create_signing_certificate(&self.token.token, key)
        })
        .await
        .map_err(|(e, attempts)| match e {
            sigstore_fulcio::Error::Http(reason) => KeylessError::FulcioUnreachable {
                url: url.clone(),
                attempts,
                reason,
            },
            sigstore_fulcio::Error::Status { status, message } => KeylessError::FulcioStatus {
                url: url.clone(),
                status,
                attempts,
                message,
            },
            other => KeylessError::FulcioResponse {
                url: url.clone(),
                reason: other.to_string(),
            },
        })?;
        let leaf = response.leaf_certificate().clone();
        let info = sigstore_crypto::parse_certificate_info(&leaf).map_err(|e| {
            KeylessError::FulcioResponse {
                url: url.clone(),
                reason: e.to_string(),
            }
        })?;
        let ours = key
            .public_key_der()
            .map_err(|e| KeylessError::KeyGeneration(e.to_string()))?;
        if info.public_key != ours {
            return Err(KeylessError::CertificateForAnotherKey);
        }
        let certificate = SigningCertificate {
            pem: pem_lf("CERTIFICATE", leaf.as_bytes()),
            identity: info.identity.map(|san| san.as_str().to_string()),
            issuer: info.issuer,
            not_after: info.not_after,
        };
        Ok((leaf, certificate))
    }
}

impl Signer for KeylessSigner {
    fn sign_messages(&self, messages: &[Vec<u8>]) -> Result<Vec<SignatureSet>, SignError> {
        let batch = http::block_on(self.sign_batch(messages)).map_err(KeylessError::Runtime)??;
        let sets = batch.signatures.iter().map(|s| s.set.clone()).collect();
        if let Ok(mut last) = self.last.lock() {
            *last = Some(batch);
        }
        Ok(sets)
    }
}

/// PEM with `\n` line ends (the `pem` crate defaults to `\r\n`), as cosign writes it.
pub(crate) fn pem_lf(tag: &str, der: &[u8]) -> String {
    pem::encode_config(
        &pem::Pem::new(tag, der),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// The verification material of a Sigstore bundle.
pub(crate) enum BundleMaterial<'a> {
    /// Keyless: the Fulcio leaf (v0.3 carries the leaf alone).
    Certificate(&'a DerCertificate),
    /// Key-based: the key is supplied out of band; the hint stays empty, as cosign does.
    PublicKey,
}

/// A Sigstore bundle v0.3 (protobuf-specs JSON) for a message signature and its Rekor v1
/// entry, inclusion proof and checkpoint included — what sigstore-python and cosign
/// `verify-blob --bundle` read.
pub(crate) fn sigstore_bundle_json(
    material: BundleMaterial<'_>,
    message: &[u8],
    signature: &[u8],
    logged: &LoggedEntry,
) -> Result<String, String> {
    let tlog = logged
        .entry
        .to_bundle_entry(KindVersion::HashedRekordV001)
        .map_err(|e| e.to_string())?;
    let content = match material {
        BundleMaterial::Certificate(leaf) => {
            VerificationMaterialContent::Certificate(CertificateContent::new(leaf.clone()))
        }
        BundleMaterial::PublicKey => {
            VerificationMaterialContent::PublicKey(PublicKeyIdentifier::new(""))
        }
    };
    let digest = sigstore_crypto::sha256(message);
    let signature = SignatureContent::MessageSignature(
        MessageSignature::new(SignatureBytes::new(signature.to_vec())).with_message_digest(
            MessageDigest::new(
                HashAlgorithm::Sha2256,
                DigestBytes::new(digest.as_slice().to_vec()),
            ),
        ),
    );
    let bundle = Bundle::new(
        MediaType::Bundle0_3,
        VerificationMaterial::new(content).with_tlog_entries(vec![tlog]),
        signature,
    );
    bundle.to_json_pretty().map_err(|e| e.to_string())
}
