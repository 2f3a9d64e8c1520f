//! Standard Sigstore bundles (protobuf-specs `Bundle`, media types v0.1, v0.2 and v0.3):
//! reading them, what they are checked against, and who must have signed them.

use super::digest::Sha256Digest;
use crate::limits::Limits;
use crate::verify::SigstoreError;
use sigstore_types::bundle::VerificationMaterialContent;
use sigstore_types::{Bundle, DerPublicKey};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a bundle is checked against. For a DSSE (in-toto) bundle this is a *subject* of
/// the statement, not the envelope payload.
#[derive(Debug, Clone, Copy)]
pub enum BundleArtifact<'a> {
    /// The artifact's bytes.
    Bytes(&'a [u8]),
    /// A file, streamed (constant memory) unless the signature scheme needs the whole
    /// message (Ed25519), in which case at most [`Limits::max_input_bytes`] are read.
    File(&'a Path),
    /// Only the artifact's SHA-256 digest.
    Digest(Sha256Digest),
}

/// A managed (non-Fulcio) public key that bundles can be verified with.
#[derive(Clone)]
pub struct BundleKey {
    origin: String,
    pub(super) spki_der: Vec<u8>,
}

impl fmt::Debug for BundleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BundleKey")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl BundleKey {
    /// Parses a PEM `PUBLIC KEY` (SubjectPublicKeyInfo); `origin` names it in messages.
    pub fn from_pem(origin: impl Into<String>, pem: &str) -> Result<Self, BundleError> {
        let origin = origin.into();
        // Exactly one complete block, nothing else: a second key that lost its END line
        // is refused, not silently dropped.
        let malformed = |reason: String| BundleError::MalformedKey {
            origin: origin.clone(),
            reason,
        };
        match crate::keys::pem_blocks(pem) {
            Ok(blocks) if blocks.len() == 1 => {}
            Ok(blocks) => {
                return Err(malformed(format!(
                    "expected one PEM block, found {}",
                    blocks.len()
                )));
            }
            Err(e) => return Err(malformed(e.to_string())),
        }
        let key = DerPublicKey::from_pem(pem).map_err(|e| BundleError::MalformedKey {
            origin: origin.clone(),
            reason: e.to_string(),
        })?;
        // The algorithm must be one sigstore can verify with; fail now, not mid-check.
        sigstore_crypto::KeyAlgorithm::from_spki(&key).map_err(|e| BundleError::MalformedKey {
            origin: origin.clone(),
            reason: e.to_string(),
        })?;
        Ok(BundleKey {
            origin,
            spki_der: key.as_bytes().to_vec(),
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// Who must have signed the bundle.
#[derive(Debug, Clone)]
pub enum ExpectedSigner {
    /// Keyless: a Fulcio certificate whose SAN (email or URI) equals `subject` and whose
    /// OIDC issuer extension equals `issuer`. Exact matches: the conformance protocol's
    /// `--certificate-identity` / `--certificate-oidc-issuer` have no pattern form.
    Identity { subject: String, issuer: String },
    /// Managed key: the bundle carries a public-key hint and is signed with this key.
    Key(BundleKey),
}

impl ExpectedSigner {
    pub fn identity(subject: impl Into<String>, issuer: impl Into<String>) -> Self {
        ExpectedSigner::Identity {
            subject: subject.into(),
            issuer: issuer.into(),
        }
    }
}

impl fmt::Display for ExpectedSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectedSigner::Identity { subject, issuer } => {
                write!(f, "identity {subject} (issuer {issuer})")
            }
            ExpectedSigner::Key(key) => write!(f, "public key {}", key.origin),
        }
    }
}

/// Why a bundle could not be read, or did not verify. One variant per reason; a failed
/// Sigstore check is a [`SigstoreError`], the same type (and machine code) as for signed
/// manifests.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    // -- input --
    #[error("cannot read {what} {path}", path = path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {path} is larger than the {limit}-byte limit", path = path.display())]
    TooLarge {
        what: &'static str,
        path: PathBuf,
        limit: usize,
    },
    #[error("not a Sigstore bundle: {0}")]
    MalformedBundle(String),
    #[error(
        "the bundle holds {count} {what}, more than the limit of {limit}; refused before any \
         of them is checked"
    )]
    TooManyEntries {
        /// `transparency log entries` or `RFC 3161 timestamps`.
        what: &'static str,
        count: usize,
        limit: usize,
    },
    #[error("{origin}: not a usable PEM public key: {reason}")]
    MalformedKey { origin: String, reason: String },

    // -- verification --
    #[error(
        "the bundle is signed with a managed key (it names a public key, not a certificate); \
         an identity cannot be checked: verify it with its public key"
    )]
    KeyBundleForIdentity,
    #[error("the bundle holds a signing certificate; it is not signed by the public key {key}")]
    CertificateBundleForKey { key: String },
    #[error(transparent)]
    Check(#[from] SigstoreError),
}

impl BundleError {
    /// True for input that could not be read or parsed (the CLI's usage/input exit code);
    /// false for a bundle that was read and did not verify.
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            BundleError::Read { .. }
                | BundleError::TooLarge { .. }
                | BundleError::MalformedBundle(_)
                | BundleError::TooManyEntries { .. }
                | BundleError::MalformedKey { .. }
        )
    }
}

/// A parsed Sigstore bundle (any supported version). Parsing checks the JSON shape only;
/// everything else is [`BundleVerifier::verify`](super::BundleVerifier::verify)'s job.
#[derive(Debug, Clone)]
pub struct SigstoreBundle {
    pub(super) inner: Bundle,
}

impl SigstoreBundle {
    pub fn from_json(json: &str) -> Result<Self, BundleError> {
        Bundle::from_json(json)
            .map(|inner| SigstoreBundle { inner })
            .map_err(|e| BundleError::MalformedBundle(e.to_string()))
    }

    /// Reads a bundle file of at most [`Limits::max_input_bytes`].
    pub fn from_file(path: impl AsRef<Path>, limits: &Limits) -> Result<Self, BundleError> {
        let path = path.as_ref();
        let bytes = read_bounded("bundle", path, limits.max_input_bytes)?;
        let named =
            |reason: String| BundleError::MalformedBundle(format!("{}: {reason}", path.display()));
        let json = String::from_utf8(bytes).map_err(|_| named("not UTF-8 JSON".into()))?;
        Bundle::from_json(&json)
            .map(|inner| SigstoreBundle { inner })
            .map_err(|e| named(e.to_string()))
    }

    /// The bundle's media type, e.g. `application/vnd.dev.sigstore.bundle.v0.3+json`.
    pub fn media_type(&self) -> String {
        self.inner.media_type.to_string()
    }

    /// Pretty JSON, the way Sigstore clients write `.sigstore.json` files.
    pub fn to_json_pretty(&self) -> Result<String, BundleError> {
        self.inner
            .to_json_pretty()
            .map_err(|e| BundleError::MalformedBundle(e.to_string()))
    }

    /// Refuses a bundle with more transparency-log entries or RFC 3161 timestamps than
    /// `limits` allow (sigstore-go GHSA-cq38-jh5f-37mq: thousands of entries cost seconds
    /// of CPU each). Counting only: nothing is verified.
    pub(super) fn check_counts(&self, limits: &Limits) -> Result<(), BundleError> {
        let material = &self.inner.verification_material;
        let counts = [
            (
                "transparency log entries",
                material.tlog_entries.len(),
                limits.max_bundle_tlog_entries,
            ),
            (
                "RFC 3161 timestamps",
                material
                    .timestamp_verification_data
                    .rfc3161_timestamps
                    .len(),
                limits.max_bundle_timestamps,
            ),
        ];
        match counts.into_iter().find(|(_, count, limit)| count > limit) {
            Some((what, count, limit)) => Err(BundleError::TooManyEntries { what, count, limit }),
            None => Ok(()),
        }
    }

    /// The signing certificate (DER) and the certificates shipped after it, for a
    /// certificate bundle; `None` for a key bundle.
    pub(super) fn certificate_chain(&self) -> Option<(&[u8], Vec<&[u8]>)> {
        match &self.inner.verification_material.content {
            VerificationMaterialContent::Certificate(c) => Some((c.raw_bytes.as_bytes(), vec![])),
            VerificationMaterialContent::X509CertificateChain { certificates } => {
                let (leaf, rest) = certificates.split_first()?;
                let rest = rest.iter().map(|c| c.raw_bytes.as_bytes()).collect();
                Some((leaf.raw_bytes.as_bytes(), rest))
            }
            _ => None,
        }
    }

    pub(super) fn names_public_key(&self) -> bool {
        matches!(
            self.inner.verification_material.content,
            VerificationMaterialContent::PublicKey(_)
        )
    }
}

pub(super) fn open(what: &'static str, path: &Path) -> Result<std::fs::File, BundleError> {
    std::fs::File::open(path).map_err(|source| BundleError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn read_bounded(
    what: &'static str,
    path: &Path,
    limit: usize,
) -> Result<Vec<u8>, BundleError> {
    let file = open(what, path)?;
    let mut bytes = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|source| BundleError::Read {
            what,
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() > limit {
        return Err(BundleError::TooLarge {
            what,
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}
