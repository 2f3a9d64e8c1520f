//! Why signing failed: [`SignError`] for every signer, [`KeylessError`] for keyless runs.
//! The errors of the services (Fulcio, Rekor) are defined with their clients; this file
//! only gathers them, so the signers and the pipeline above it share one error type.

use super::fulcio::FulcioError;
use super::rekor_upload::RekorError;
use crate::annotations::AnnotationError;
use crate::manifest::DocumentOrigin;

/// Why signing failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    #[error("{origin}")]
    Annotation {
        origin: DocumentOrigin,
        #[source]
        source: AnnotationError,
    },
    #[error("signer returned {got} signatures for {expected} messages")]
    BatchMismatch { expected: usize, got: usize },
    #[error("signing failed: {0}")]
    Signer(String),
    #[error(transparent)]
    Keyless(#[from] KeylessError),
    #[error("transparency log entry for message {}", .message + 1)]
    Tlog {
        message: usize,
        #[source]
        source: RekorError,
    },
    #[error("cannot build the Sigstore bundle for message {}: {reason}", .message + 1)]
    Bundle { message: usize, reason: String },
    #[error("cannot run the transparency log uploads")]
    Runtime(#[source] std::io::Error),
    /// A failure for one message, with the file and document it was signing (messages are
    /// numbered from 1 in order, one per document or per file with `--scope file`).
    #[error("{origin}")]
    AtDocument {
        origin: DocumentOrigin,
        #[source]
        source: Box<SignError>,
    },
}

impl SignError {
    /// The 0-based message a failure is about, when it is about one.
    pub fn message_index(&self) -> Option<usize> {
        match self {
            SignError::Tlog { message, .. } | SignError::Bundle { message, .. } => Some(*message),
            SignError::Keyless(
                KeylessError::Signing { message, .. }
                | KeylessError::Rekor { message, .. }
                | KeylessError::LoggedAfterCertificateExpired { message, .. }
                | KeylessError::Bundle { message, .. },
            ) => Some(*message),
            _ => None,
        }
    }
}

/// Why keyless signing failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeylessError {
    #[error("cannot make the ephemeral signing key: {0}")]
    KeyGeneration(String),
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
    #[error(transparent)]
    Fulcio(#[from] FulcioError),
    #[error("signing message {} failed: {reason}", .message + 1)]
    Signing { message: usize, reason: String },
    #[error("Rekor entry for message {}", .message + 1)]
    Rekor {
        message: usize,
        #[source]
        source: RekorError,
    },
    #[error(
        "Rekor logged message {} at {integrated_time}, after the certificate expired \
         at {not_after}; the signature would not verify (sign fewer files per run)",
        .message + 1
    )]
    LoggedAfterCertificateExpired {
        message: usize,
        integrated_time: jiff::Timestamp,
        not_after: jiff::Timestamp,
    },
    #[error("cannot build the Sigstore bundle for message {}: {reason}", .message + 1)]
    Bundle { message: usize, reason: String },
    /// See `keyless::CERTIFICATE_MARGIN`.
    #[error(
        "Fulcio issued a certificate valid from {not_before} until {not_after}, which is not \
         usable at {now} (a batch needs a certificate already valid with more than 2 minutes \
         left; check this machine's clock and Fulcio's); refused before anything was signed \
         or uploaded"
    )]
    CertificateNotUsable {
        not_before: jiff::Timestamp,
        not_after: jiff::Timestamp,
        now: jiff::Timestamp,
    },
    #[error("cannot run the signing requests")]
    Runtime(#[source] std::io::Error),
}
