//! Standard Sigstore bundles (protobuf-specs `Bundle`, media types v0.1, v0.2 and v0.3) over
//! arbitrary artifacts: verified offline against a [`TrustRoot`], and produced for blobs.
//!
//! mansign's product is signed manifests (cosign annotations, see `verify::keyless`). This
//! module serves the sigstore-conformance front-end (`mansign conformance verify-bundle` and
//! `sign-bundle`) and any Rust caller holding a `.sigstore.json` bundle. sigstore-verify does
//! the cryptography; this adapter decides what is asked of it and never relaxes a check.
//! [`BundleVerifier::verify`] proves, and stops at the first failure:
//!
//! 1. the bundle names the kind of signer the caller expects: a Fulcio certificate for
//!    [`ExpectedSigner::Identity`], a public-key hint for [`ExpectedSigner::Key`];
//! 2. the bundle is well formed for its version (an inclusion proof is required from v0.2
//!    on, an inclusion promise in v0.1) and has signing-time evidence;
//! 3. the verified times: RFC 3161 timestamps from a TSA of the root, valid within that
//!    TSA's window, and the SET-backed integrated time of Rekor v1 entries. Wall-clock
//!    "now" is never a signing time;
//! 4. keyless: the certificate chains to a Fulcio CA of the root valid at *every* verified
//!    time, has the code-signing EKU and was itself valid then; the embedded SCT verifies
//!    against the root's CT logs; the SAN equals the expected subject and the Fulcio issuer
//!    extension (`1.3.6.1.4.1.57264.1.8`, legacy `.1.1`) the expected issuer, exactly;
//! 5. the inclusion proof and its signed checkpoint (with the root's log key; unknown
//!    witness cosignatures are ignored) and/or the SET;
//! 6. the signature over the artifact (message signature) or the DSSE envelope, and for
//!    in-toto statements that the artifact is one of the statement's subjects;
//! 7. the log entry describes this signature, key or certificate and artifact
//!    (CVE-2022-36056).
//!
//! No network, ever: a bundle without its inclusion proof fails rather than fetching one.
//!
//! ```no_run
//! use mansign::trust::TrustRoot;
//! use mansign::verify::bundle::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let trust = TrustRoot::public_good()?;
//! let limits = mansign::Limits::default();
//! let bundle = SigstoreBundle::from_file("a.txt.sigstore.json", &limits)?;
//! let signer = ExpectedSigner::identity(
//!     "https://github.com/org/repo/.github/workflows/release.yml@refs/heads/main",
//!     "https://token.actions.githubusercontent.com",
//! );
//! let artifact = BundleArtifact::Digest("sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf".parse()?);
//! let verified = BundleVerifier::new(&trust).verify(&bundle, artifact, &signer)?;
//! println!("{verified}"); // who signed, and when the log or a TSA saw it
//! # Ok(())
//! # }
//! ```

use crate::limits::Limits;
use crate::trust::TrustRoot;
use sha2::{Digest as _, Sha256};
use sigstore_types::bundle::VerificationMaterialContent;
use sigstore_types::{Bundle, DerPublicKey, Sha256Hash};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy, VerificationResult};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Why a `sha256:<hex>` digest argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    #[error("a digest needs an algorithm prefix: expected sha256:<64 hex digits>")]
    MissingAlgorithm,
    #[error("digest algorithm {0:?} is not supported: expected sha256:<64 hex digits>")]
    UnsupportedAlgorithm(String),
    #[error("a sha256 digest has 64 hex digits, not {0}")]
    WrongLength(usize),
    #[error("a sha256 digest is hexadecimal; found a character that is not a hex digit")]
    NotHex,
}

/// A SHA-256 artifact digest, written `sha256:<64 hex digits>` (the form cosign, the
/// sigstore-conformance suite and OCI use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    pub const fn new(bytes: [u8; 32]) -> Self {
        Sha256Digest(bytes)
    }

    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Self {
        Sha256Digest(Sha256::digest(data).into())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl FromStr for Sha256Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Self, DigestError> {
        let Some((algorithm, hex_digits)) = s.split_once(':') else {
            return Err(DigestError::MissingAlgorithm);
        };
        if !algorithm.eq_ignore_ascii_case("sha256") {
            // Only the prefix is echoed, and only a short one: the rest may be anything.
            let shown: String = algorithm.chars().take(16).collect();
            return Err(DigestError::UnsupportedAlgorithm(shown));
        }
        if !hex_digits.is_ascii() {
            return Err(DigestError::NotHex);
        }
        if hex_digits.len() != 64 {
            return Err(DigestError::WrongLength(hex_digits.len()));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_digits, &mut bytes).map_err(|_| DigestError::NotHex)?;
        Ok(Sha256Digest(bytes))
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

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
    spki_der: Vec<u8>,
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

/// Why a bundle could not be read, or did not verify. One variant per reason; the
/// verification variants name the first check that failed.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    // -- input --
    #[error("cannot read {what} {path}: {source}", path = path.display())]
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
    #[error("invalid bundle: {0}")]
    InvalidBundle(String),
    #[error("unsupported bundle: {0}")]
    UnsupportedBundle(String),
    #[error("no verified signing time: {0}")]
    NoVerifiedTime(String),
    #[error("RFC 3161 timestamp does not verify: {0}")]
    Timestamp(String),
    #[error("certificate does not chain to a trusted Fulcio root: {0}")]
    UntrustedCertificate(String),
    #[error("certificate not valid at verified time {time}: {detail}")]
    CertificateNotValidAt { time: String, detail: String },
    #[error("signed certificate timestamp does not verify: {0}")]
    Sct(String),
    #[error("certificate subject {found} is not the expected identity {expected}")]
    IdentityMismatch { expected: String, found: String },
    #[error("certificate issuer {found} is not the expected issuer {expected}")]
    IssuerMismatch { expected: String, found: String },
    #[error("transparency log {log_id} is not in the trust root")]
    UnknownLog { log_id: String },
    #[error("inclusion proof does not verify: {0}")]
    InclusionProof(String),
    #[error("signed checkpoint does not verify: {0}")]
    Checkpoint(String),
    #[error("signed entry timestamp (inclusion promise) does not verify: {0}")]
    InclusionPromise(String),
    #[error("integrated time is not acceptable: {0}")]
    IntegratedTime(String),
    #[error("transparency log entry is malformed: {0}")]
    MalformedEntry(String),
    #[error("transparency log entry does not describe this bundle: {0}")]
    EntryMismatch(String),
    #[error("signature does not verify: {0}")]
    BadSignature(String),
    #[error("the bundle is not for this artifact: {0}")]
    ArtifactMismatch(String),
    #[error("verification did not run a required check: {0}")]
    SkippedCheck(&'static str),
    #[error("verification failed: {0}")]
    Other(String),
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
                | BundleError::MalformedKey { .. }
        )
    }
}

/// A parsed Sigstore bundle (any supported version). Parsing checks the JSON shape only;
/// everything else is [`BundleVerifier::verify`]'s job.
#[derive(Debug, Clone)]
pub struct SigstoreBundle {
    pub(crate) inner: Bundle,
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

    fn names_public_key(&self) -> bool {
        matches!(
            self.inner.verification_material.content,
            VerificationMaterialContent::PublicKey(_)
        )
    }
}

/// Who signed a verified bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleSigner {
    Certificate {
        subject: String,
        issuer: Option<String>,
    },
    Key {
        origin: String,
    },
}

/// A bundle that verified: who signed it, and the times the signature was proven to
/// exist at (RFC 3161 timestamps, Rekor v1 integrated time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedBundle {
    pub signer: BundleSigner,
    pub verified_times: Vec<jiff::Timestamp>,
    pub transparency_log_verified: bool,
}

impl fmt::Display for VerifiedBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.signer {
            BundleSigner::Certificate { subject, issuer } => write!(
                f,
                "signed by {subject} (issuer {})",
                issuer.as_deref().unwrap_or("none")
            )?,
            BundleSigner::Key { origin } => write!(f, "signed with public key {origin}")?,
        }
        if self.transparency_log_verified {
            f.write_str(", transparency log inclusion verified")?;
        }
        // A TSA time and a Rekor integrated time are often the same second; say it once.
        let mut times: Vec<String> = self.verified_times.iter().map(|t| t.to_string()).collect();
        times.dedup();
        if !times.is_empty() {
            write!(f, ", signing time {}", times.join(", "))?;
        }
        Ok(())
    }
}

/// Verifies bundles against one trust root. Cheap to build; holds no state between
/// verifications.
#[derive(Debug, Clone, Copy)]
pub struct BundleVerifier<'t> {
    trust: &'t TrustRoot,
    limits: Limits,
}

impl<'t> BundleVerifier<'t> {
    pub fn new(trust: &'t TrustRoot) -> Self {
        BundleVerifier {
            trust,
            limits: Limits::default(),
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs every check in the module docs; `Ok` only if all of them pass.
    pub fn verify(
        &self,
        bundle: &SigstoreBundle,
        artifact: BundleArtifact<'_>,
        signer: &ExpectedSigner,
    ) -> Result<VerifiedBundle, BundleError> {
        match signer {
            ExpectedSigner::Identity { subject, issuer } => {
                if bundle.names_public_key() {
                    return Err(BundleError::KeyBundleForIdentity);
                }
                // Every check on (sigstore-verify's policy has no `Default`, and nothing
                // here calls a `skip_*`); the identity is matched exactly by value.
                let policy = VerificationPolicy::new(subject.as_str(), issuer.as_str());
                let result = self.run(bundle, artifact, &policy)?;
                if !(result.certificate_verified()
                    && result.sct_verified()
                    && result.tlog_verified()
                    && result.identity_policy_checked())
                {
                    return Err(BundleError::SkippedCheck(
                        "certificate chain, SCT, transparency log and identity must all be verified",
                    ));
                }
                Ok(VerifiedBundle {
                    signer: BundleSigner::Certificate {
                        subject: result
                            .identity()
                            .map(|s| s.as_str().to_string())
                            .unwrap_or_default(),
                        issuer: result.issuer().map(str::to_string),
                    },
                    verified_times: result.verified_timestamps().to_vec(),
                    transparency_log_verified: result.tlog_verified(),
                })
            }
            ExpectedSigner::Key(key) => {
                if !bundle.names_public_key() {
                    return Err(BundleError::CertificateBundleForKey {
                        key: key.origin.clone(),
                    });
                }
                let policy =
                    PublicKeyVerificationPolicy::new(DerPublicKey::new(key.spki_der.clone()));
                let result = self.run(bundle, artifact, &policy)?;
                if !result.tlog_verified() {
                    return Err(BundleError::SkippedCheck(
                        "transparency log inclusion must be verified",
                    ));
                }
                Ok(VerifiedBundle {
                    signer: BundleSigner::Key {
                        origin: key.origin.clone(),
                    },
                    verified_times: result.verified_timestamps().to_vec(),
                    transparency_log_verified: result.tlog_verified(),
                })
            }
        }
    }

    pub(crate) fn run(
        &self,
        bundle: &SigstoreBundle,
        artifact: BundleArtifact<'_>,
        policy: &(impl sigstore_verify::Policy + ?Sized),
    ) -> Result<VerificationResult, BundleError> {
        let verifier = self.trust.verifier();
        let b = &bundle.inner;
        let result = match artifact {
            BundleArtifact::Bytes(bytes) => verifier.verify(bytes, b, policy),
            BundleArtifact::Digest(d) => verifier.verify(Sha256Hash::new(d.0), b, policy),
            BundleArtifact::File(path) => {
                let file = open("artifact", path)?;
                match verifier.verify_reader(file, b, policy) {
                    // Ed25519 signs the message itself, not a digest: it cannot be
                    // streamed. sigstore-verify refuses before reading anything.
                    Err(sigstore_verify::Error::UnsupportedArtifact(_)) => {
                        let bytes = read_bounded("artifact", path, self.limits.max_input_bytes)?;
                        verifier.verify(&bytes, b, policy)
                    }
                    Err(sigstore_verify::Error::ArtifactRead(source)) => {
                        return Err(BundleError::Read {
                            what: "artifact",
                            path: path.to_path_buf(),
                            source,
                        });
                    }
                    other => other,
                }
            }
        };
        result.map_err(map_sigstore_error)
    }
}

fn open(what: &'static str, path: &Path) -> Result<std::fs::File, BundleError> {
    std::fs::File::open(path).map_err(|source| BundleError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

fn read_bounded(what: &'static str, path: &Path, limit: usize) -> Result<Vec<u8>, BundleError> {
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

/// sigstore-verify's categories, mapped onto one variant per reason.
fn map_sigstore_error(e: sigstore_verify::Error) -> BundleError {
    use sigstore_verify::{
        CertificateError as C, Error as E, TimestampError as Ts, TransparencyLogError as T,
    };
    match e {
        E::IdentityMismatch { expected, actual } => BundleError::IdentityMismatch {
            expected: expected.to_string(),
            found: actual.map_or_else(|| "(none)".into(), |a| a.as_str().to_string()),
        },
        E::IssuerMismatch { expected, actual } => BundleError::IssuerMismatch {
            expected,
            found: actual.unwrap_or_else(|| "(none)".into()),
        },
        E::SignatureInvalid(d) => BundleError::BadSignature(d),
        E::ArtifactMismatch(d) => BundleError::ArtifactMismatch(d),
        E::Certificate(C::ChainInvalid(d) | C::Malformed(d)) => {
            BundleError::UntrustedCertificate(d)
        }
        E::Certificate(C::NoValidAuthority { time }) => BundleError::UntrustedCertificate(format!(
            "no trusted Fulcio authority was valid at {time}"
        )),
        E::Certificate(C::NotYetValid { time, not_before }) => BundleError::CertificateNotValidAt {
            time: time.to_string(),
            detail: format!("not valid before {not_before}"),
        },
        E::Certificate(C::Expired { time, not_after }) => BundleError::CertificateNotValidAt {
            time: time.to_string(),
            detail: format!("expired at {not_after}"),
        },
        E::Certificate(C::Sct(d)) => BundleError::Sct(d),
        E::TransparencyLog(T::UnknownLog { log_id }) => BundleError::UnknownLog { log_id },
        E::TransparencyLog(T::InclusionProof(d)) => BundleError::InclusionProof(d),
        E::TransparencyLog(T::Checkpoint(d)) => BundleError::Checkpoint(d),
        E::TransparencyLog(T::InclusionPromise(d)) => BundleError::InclusionPromise(d),
        E::TransparencyLog(T::IntegratedTime(d)) => BundleError::IntegratedTime(d),
        E::TransparencyLog(T::MalformedEntry(d)) => BundleError::MalformedEntry(d),
        E::TransparencyLog(T::EntryMismatch(d)) => BundleError::EntryMismatch(d),
        E::Timestamp(Ts::NoVerifiedTimestamp(d)) => BundleError::NoVerifiedTime(d),
        E::Timestamp(t) => BundleError::Timestamp(t.to_string()),
        E::InvalidBundle(d) => BundleError::InvalidBundle(d),
        E::Bundle(b) => BundleError::InvalidBundle(b.to_string()),
        E::UnsupportedBundle(d) | E::UnsupportedArtifact(d) => BundleError::UnsupportedBundle(d),
        other => BundleError::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A_TXT_SHA256: &str = "a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";
    const BEACON: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
    const GHA: &str = "https://token.actions.githubusercontent.com";

    fn case_dir(name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/sigstore-conformance/bundle-verify")
            .join(name);
        assert!(
            dir.is_dir(),
            "conformance fixture {} is missing",
            dir.display()
        );
        dir
    }

    /// The case's own trusted root if it has one, else the embedded production root (as
    /// the conformance suite does).
    fn case_trust_root(dir: &Path) -> TrustRoot {
        let custom = dir.join("trusted_root.json");
        if custom.is_file() {
            TrustRoot::from_file(custom).unwrap()
        } else {
            TrustRoot::public_good().unwrap()
        }
    }

    fn verify_case(
        name: &str,
        artifact: BundleArtifact<'_>,
        signer: &ExpectedSigner,
    ) -> Result<VerifiedBundle, BundleError> {
        let dir = case_dir(name);
        let bundle =
            SigstoreBundle::from_file(dir.join("bundle.sigstore.json"), &Limits::default())
                .unwrap();
        let trust = case_trust_root(&dir);
        BundleVerifier::new(&trust).verify(&bundle, artifact, signer)
    }

    fn case_key(name: &str) -> BundleKey {
        let path = case_dir(name).join("key.pub");
        let pem = std::fs::read_to_string(&path).unwrap();
        BundleKey::from_pem("key.pub", &pem).unwrap()
    }

    fn fresh_p256_key() -> BundleKey {
        use p256::pkcs8::{EncodePublicKey, LineEnding};
        let secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let pem = secret
            .public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        BundleKey::from_pem("fresh.pub", &pem).unwrap()
    }

    fn a_txt_digest() -> Sha256Digest {
        format!("sha256:{A_TXT_SHA256}").parse().unwrap()
    }

    #[test]
    fn digest_parses_sha256_prefix_and_hex() {
        let d = a_txt_digest();
        assert_eq!(hex::encode(d.as_bytes()), A_TXT_SHA256);
        assert_eq!(d.to_string(), format!("sha256:{A_TXT_SHA256}"));
    }

    #[test]
    fn digest_accepts_uppercase_hex() {
        let upper = format!("sha256:{}", A_TXT_SHA256.to_uppercase());
        assert_eq!(upper.parse::<Sha256Digest>().unwrap(), a_txt_digest());
    }

    #[test]
    fn digest_of_bytes_matches_parsed_form() {
        let empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(Sha256Digest::of(b""), empty.parse().unwrap());
    }

    #[test]
    fn digest_without_algorithm_is_refused() {
        assert_eq!(
            A_TXT_SHA256.parse::<Sha256Digest>(),
            Err(DigestError::MissingAlgorithm)
        );
    }

    #[test]
    fn digest_with_other_algorithm_is_refused() {
        assert_eq!(
            format!("sha512:{A_TXT_SHA256}").parse::<Sha256Digest>(),
            Err(DigestError::UnsupportedAlgorithm("sha512".into()))
        );
    }

    #[test]
    fn digest_of_wrong_length_is_refused() {
        assert_eq!(
            "sha256:abcd".parse::<Sha256Digest>(),
            Err(DigestError::WrongLength(4))
        );
    }

    #[test]
    fn digest_with_non_hex_digit_is_refused() {
        let bad = format!("sha256:{}g", &A_TXT_SHA256[..63]);
        assert_eq!(bad.parse::<Sha256Digest>(), Err(DigestError::NotHex));
    }

    #[test]
    fn digest_with_multibyte_characters_does_not_panic() {
        let bad = format!("sha256:{}é", &A_TXT_SHA256[..62]);
        assert!(bad.parse::<Sha256Digest>().is_err());
    }

    #[test]
    fn verifies_v03_bundle_by_digest_with_exact_identity() {
        let signer = ExpectedSigner::identity(BEACON, GHA);
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        let verified = result.unwrap();
        assert_eq!(
            verified.signer,
            BundleSigner::Certificate {
                subject: BEACON.into(),
                issuer: Some(GHA.into())
            }
        );
        assert!(verified.transparency_log_verified);
        assert!(!verified.verified_times.is_empty());
    }

    #[test]
    fn rejects_bundle_signed_by_another_identity() {
        let signer =
            ExpectedSigner::identity("https://github.com/evil/repo/x.yml@refs/heads/main", GHA);
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        let err = result.unwrap_err();
        assert!(
            matches!(err, BundleError::IdentityMismatch { ref found, .. } if found == BEACON),
            "{err}"
        );
    }

    #[test]
    fn rejects_bundle_from_another_issuer() {
        let signer = ExpectedSigner::identity(BEACON, "https://accounts.google.com");
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        let err = result.unwrap_err();
        assert!(
            matches!(err, BundleError::IssuerMismatch { ref found, .. } if found == GHA),
            "{err}"
        );
    }

    #[test]
    fn identity_is_not_matched_as_a_prefix() {
        let prefix = &BEACON[..BEACON.len() - 4];
        let signer = ExpectedSigner::identity(prefix, GHA);
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        assert!(matches!(result, Err(BundleError::IdentityMismatch { .. })));
    }

    #[test]
    fn rejects_digest_of_another_artifact() {
        let signer = ExpectedSigner::identity(BEACON, GHA);
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(Sha256Digest::of(b"124\n")),
            &signer,
        );
        let err = result.unwrap_err();
        assert!(!err.is_input_error(), "{err}");
    }

    #[test]
    fn rejects_key_bundle_when_an_identity_is_expected() {
        let signer = ExpectedSigner::identity(BEACON, GHA);
        let result = verify_case(
            "managed-key-no-key_fail",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        assert!(matches!(result, Err(BundleError::KeyBundleForIdentity)));
    }

    #[test]
    fn verifies_managed_key_bundle_with_its_key() {
        let key = case_key("managed-key-happy-path");
        let signer = ExpectedSigner::Key(key);
        let result = verify_case(
            "managed-key-happy-path",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        let verified = result.unwrap();
        assert_eq!(
            verified.signer,
            BundleSigner::Key {
                origin: "key.pub".into()
            }
        );
    }

    #[test]
    fn rejects_managed_key_bundle_with_another_key() {
        let signer = ExpectedSigner::Key(fresh_p256_key());
        let result = verify_case(
            "managed-key-happy-path",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        let err = result.unwrap_err();
        assert!(matches!(err, BundleError::BadSignature(_)), "{err}");
    }

    #[test]
    fn rejects_certificate_bundle_when_a_key_is_expected() {
        let signer = ExpectedSigner::Key(fresh_p256_key());
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(a_txt_digest()),
            &signer,
        );
        assert!(matches!(
            result,
            Err(BundleError::CertificateBundleForKey { .. })
        ));
    }

    #[test]
    fn rejects_timestamp_outside_the_certificate_lifetime() {
        // The conformance vector wraps the timestamp's base64 at 76 columns (`base64`
        // without `-w0`), which sigstore-types refuses as bad encoding; unwrapped, the
        // bundle must still be refused, for the reason the case is about.
        let dir = case_dir("rekor2-timestamp-with-incorrect-time_fail");
        let text = std::fs::read_to_string(dir.join("bundle.sigstore.json")).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let ts = &mut json["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"]
            [0]["signedTimestamp"];
        let unwrapped = ts.as_str().unwrap().replace('\n', "");
        *ts = serde_json::Value::String(unwrapped);
        let bundle = SigstoreBundle::from_json(&json.to_string()).unwrap();
        let trust = case_trust_root(&dir);
        let err = BundleVerifier::new(&trust)
            .verify(
                &bundle,
                BundleArtifact::Digest(a_txt_digest()),
                &ExpectedSigner::identity(BEACON, GHA),
            )
            .unwrap_err();
        assert!(
            matches!(
                err,
                BundleError::UntrustedCertificate(ref d) if d.contains("Expired")
            ) || matches!(err, BundleError::CertificateNotValidAt { .. }),
            "{err}"
        );
    }

    #[test]
    fn rekor_v2_bundle_without_timestamp_has_no_signing_time() {
        let result = verify_case(
            "rekor2-no-timestamp_fail",
            BundleArtifact::Digest(a_txt_digest()),
            &ExpectedSigner::identity(BEACON, GHA),
        );
        let err = result.unwrap_err();
        assert!(matches!(err, BundleError::NoVerifiedTime(_)), "{err}");
    }

    #[test]
    fn reads_artifact_file_by_streaming() {
        let dir = case_dir("happy-path-v0.3");
        let a_txt = dir.join("../a.txt");
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::File(&a_txt),
            &ExpectedSigner::identity(BEACON, GHA),
        );
        result.unwrap();
    }

    #[test]
    fn missing_artifact_file_is_an_input_error() {
        let result = verify_case(
            "happy-path-v0.3",
            BundleArtifact::File(Path::new("/nonexistent/a.txt")),
            &ExpectedSigner::identity(BEACON, GHA),
        );
        let err = result.unwrap_err();
        assert!(err.is_input_error(), "{err}");
    }

    #[test]
    fn malformed_bundle_json_is_an_input_error() {
        let err = SigstoreBundle::from_json("{").unwrap_err();
        assert!(err.is_input_error());
        assert!(matches!(err, BundleError::MalformedBundle(_)));
    }

    #[test]
    fn key_that_is_not_pem_is_refused() {
        let err = BundleKey::from_pem("key.pub", "not a key").unwrap_err();
        assert!(matches!(err, BundleError::MalformedKey { .. }), "{err}");
        assert!(err.to_string().starts_with("key.pub: "), "{err}");
    }
}
