//! The signing pipeline the CLI runs ([`sign_files`]): strip old signatures, build M per
//! document (or per file with [`SignScope::File`]), sign the whole batch with one
//! [`Signer`] call, embed the signature sets.

use super::error::SignError;
use super::signer::{LogEntry, Signer, SigningCertificate};
use crate::annotations::{
    AnnotationDomain, AnnotationError, EmbedMode, embed, extract, strip_signature_annotations,
};
use crate::limits::Limits;
use crate::manifest::{
    ManifestFile, TimeAnnotationError, build_message, parse_message, set_expiry, set_signed_at,
};

/// For `--append`: the message already on `documents` when every one of them carries the
/// same message and that message holds exactly the `wanted` documents (these documents with
/// their signature annotations removed), in order. Signature sets share the one `message` annotation
/// (k8s-manifest-sigstore pkg/k8smanifest/option.go, GetAllSignatureSets), so an appended
/// set must sign the bytes already there, not mansign's own rendering of the same
/// documents: another signer (kubectl-sigstore renders with sorted keys) writes other
/// bytes for the same objects. A message that differs in any value is not reused, and the
/// append is then refused as before (the document changed since it was signed).
fn existing_message_of(
    documents: &[crate::manifest::Document],
    wanted: &[serde_json::Value],
    options: &SignOptions,
) -> Option<Vec<u8>> {
    let mut found: Option<Vec<u8>> = None;
    for d in documents {
        let existing = extract(&d.value, &options.domain, &options.limits).ok()?;
        match &found {
            None => found = Some(existing.message),
            Some(m) if *m == existing.message => {}
            Some(_) => return None,
        }
    }
    let message = found?;
    let parsed = parse_message(&message, &options.limits).ok()?;
    (parsed == wanted).then_some(message)
}

/// What one signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SignScope {
    /// Each document gets its own message and signature: small annotations, and every
    /// object verifies on its own.
    #[default]
    Document,
    /// One message with all documents of the file, the same annotations on every
    /// document (kubectl-sigstore's shape).
    File,
}

impl SignScope {
    pub fn name(self) -> &'static str {
        match self {
            SignScope::Document => "document",
            SignScope::File => "file",
        }
    }
}

impl std::str::FromStr for SignScope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "document" => Ok(SignScope::Document),
            "file" => Ok(SignScope::File),
            other => Err(format!(
                "unknown scope {other:?} (expected document or file)"
            )),
        }
    }
}

impl std::fmt::Display for SignScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Options for [`sign_files`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SignOptions {
    pub scope: SignScope,
    /// Add a further signature set instead of replacing existing ones.
    pub append: bool,
    pub domain: AnnotationDomain,
    pub limits: Limits,
    /// Signed expiry written into every document (`mansign.dev/expires`) before signing.
    pub expires_at: Option<jiff::Timestamp>,
    /// The signing time written into every document (`mansign.dev/signed-at`) before
    /// signing, in whole seconds; `None`: now. Not written in append mode, where the message
    /// (and the signing time it holds) must stay as it is.
    pub signed_at: Option<jiff::Timestamp>,
}

crate::setters::setters! {
    /// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
    /// so it is built from [`SignOptions::default()`] and these, never as a literal.
    SignOptions {
        /// Sets `scope`.
        with_scope => scope: SignScope,
        /// Sets `append`.
        with_append => append: bool,
        /// Sets `domain`.
        with_domain => domain: AnnotationDomain,
        /// Sets `limits`.
        with_limits => limits: Limits,
    }
}

/// The setters of the optional times.
impl SignOptions {
    /// Sets `expires_at` to `Some(value)`.
    pub fn with_expires_at(mut self, value: jiff::Timestamp) -> Self {
        self.expires_at = Some(value);
        self
    }
    /// Sets `signed_at` to `Some(value)`.
    pub fn with_signed_at(mut self, value: jiff::Timestamp) -> Self {
        self.signed_at = Some(value);
        self
    }
}

/// What a signing run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignSummary {
    pub files: usize,
    pub documents: usize,
    pub signatures: usize,
    /// The signed messages M, one per signature, in signing order (file by file; per
    /// document, or one per file with [`SignScope::File`]): the artifacts the Sigstore
    /// bundles of the run are over.
    pub messages: Vec<Vec<u8>>,
    /// The certificate the signatures carry (keyless signing); `None` for a key.
    pub certificate: Option<SigningCertificate>,
    /// The signatures' transparency-log entries, one per message of `messages` and in its
    /// order, when the signer logs them (keyless, or a key with `--tlog-upload`); empty
    /// otherwise.
    pub log_entries: Vec<LogEntry>,
}

/// Signs every document of every file in place, and returns what the signer produced
/// besides the embedded sets (the messages, the certificate, the log entries). On error
/// nothing is guaranteed about `files`; callers write output only after this returns `Ok`.
pub fn sign_files(
    files: &mut [ManifestFile],
    signer: &dyn Signer,
    options: &SignOptions,
) -> Result<SignSummary, SignError> {
    // 1. Build every message first, so one signer call covers the whole batch.
    let mut messages: Vec<Vec<u8>> = Vec::new();
    // For each (file, document): index into `messages`.
    let mut message_of: Vec<Vec<usize>> = Vec::new();
    let signed_at = options.signed_at.unwrap_or_else(jiff::Timestamp::now);
    for file in files.iter_mut() {
        for doc in &mut file.documents {
            let annotation_error = |key: &str, e: TimeAnnotationError| SignError::Annotation {
                origin: doc.origin.clone(),
                source: AnnotationError::Malformed {
                    key: key.into(),
                    reason: crate::error::chain(&e),
                },
            };
            if let Some(at) = options.expires_at {
                set_expiry(&mut doc.value, at)
                    .map_err(|r| annotation_error(crate::manifest::EXPIRES_ANNOTATION, r))?;
            }
            if !options.append {
                set_signed_at(&mut doc.value, signed_at)
                    .map_err(|r| annotation_error(crate::manifest::SIGNED_AT_ANNOTATION, r))?;
            }
        }
    }
    for file in files.iter() {
        let stripped: Vec<serde_json::Value> = file
            .documents
            .iter()
            .map(|d| {
                let mut v = d.value.clone();
                strip_signature_annotations(&mut v, &options.domain);
                v
            })
            .collect();
        match options.scope {
            SignScope::Document => {
                let mut idx = Vec::new();
                for (d, v) in file.documents.iter().zip(&stripped) {
                    idx.push(messages.len());
                    let built = build_message([v]);
                    let reused = options.append.then(|| {
                        existing_message_of(
                            std::slice::from_ref(d),
                            std::slice::from_ref(v),
                            options,
                        )
                    });
                    messages.push(reused.flatten().unwrap_or(built));
                }
                message_of.push(idx);
            }
            SignScope::File => {
                let i = messages.len();
                let built = build_message(&stripped);
                let reused = options
                    .append
                    .then(|| existing_message_of(&file.documents, &stripped, options));
                messages.push(reused.flatten().unwrap_or(built));
                message_of.push(vec![i; stripped.len()]);
            }
        }
    }
    // 2. Sign.
    let batch = signer.sign_messages(&messages).map_err(|e| {
        // Name the file and document the failed message was built from.
        let origin = e.message_index().and_then(|m| {
            files
                .iter()
                .zip(&message_of)
                .flat_map(|(f, idx)| f.documents.iter().zip(idx))
                .find(|(_, i)| **i == m)
                .map(|(d, _)| d.origin.clone())
        });
        match origin {
            Some(origin) => SignError::AtDocument {
                origin,
                source: Box::new(e),
            },
            None => e,
        }
    })?;
    if batch.signatures.len() != messages.len() {
        return Err(SignError::BatchMismatch {
            expected: messages.len(),
            got: batch.signatures.len(),
        });
    }
    let log_entries = batch.log_entries().cloned().collect();
    let sets: Vec<_> = batch.signatures.into_iter().map(|s| s.set).collect();
    // 3. Embed.
    let mode = if options.append {
        EmbedMode::Append
    } else {
        EmbedMode::Replace
    };
    let mut summary = SignSummary {
        files: files.len(),
        documents: 0,
        signatures: sets.len(),
        messages: Vec::new(),
        certificate: batch.certificate,
        log_entries,
    };
    for (file, idx) in files.iter_mut().zip(&message_of) {
        for (doc, &m) in file.documents.iter_mut().zip(idx) {
            embed(
                &mut doc.value,
                &options.domain,
                &messages[m],
                std::slice::from_ref(&sets[m]),
                mode,
                &options.limits,
            )
            .map_err(|source| SignError::Annotation {
                origin: doc.origin.clone(),
                source,
            })?;
            summary.documents += 1;
        }
    }
    summary.messages = messages;
    Ok(summary)
}
