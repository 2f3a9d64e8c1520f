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
//! 2. the bundle holds at most [`Limits::max_bundle_tlog_entries`] log entries and
//!    [`Limits::max_bundle_timestamps`] RFC 3161 timestamps, counted before any
//!    cryptography (sigstore-go's bound since GHSA-cq38-jh5f-37mq); it is well formed for
//!    its version (an inclusion proof is required from v0.2 on, an inclusion promise in
//!    v0.1) and has signing-time evidence;
//! 3. the verified times: RFC 3161 timestamps from a TSA of the root, valid within that
//!    TSA's window, and the SET-backed integrated time of Rekor v1 entries. Wall-clock
//!    "now" is never a signing time;
//! 4. keyless: the certificate chains to a Fulcio CA of the root valid at *every* verified
//!    time, has the code-signing EKU and was itself valid then, and so was every CA
//!    certificate of its path, the root included (`verify::sigstore::fulcio_chain`); the embedded SCT verifies
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
//! use mansign::conformance::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
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

use super::bundle::{
    BundleArtifact, BundleError, ExpectedSigner, SigstoreBundle, open, read_bounded,
};
use crate::limits::Limits;
use crate::trust::TrustRoot;
use crate::verify::SigstoreError;
use crate::verify::sigstore::adapter::{map_verify_error, webpki_algorithms};
use crate::verify::sigstore::fulcio_chain;
use sigstore_types::{DerPublicKey, Sha256Hash};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy, VerificationResult};
use std::fmt;

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
                    return Err(BundleError::Check(SigstoreError::SkippedCheck(
                        "certificate chain, SCT, transparency log and identity must all be verified",
                    )));
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
                        key: key.origin().to_string(),
                    });
                }
                let policy =
                    PublicKeyVerificationPolicy::new(DerPublicKey::new(key.spki_der.clone()));
                let result = self.run(bundle, artifact, &policy)?;
                if !result.tlog_verified() {
                    return Err(BundleError::Check(SigstoreError::SkippedCheck(
                        "transparency log inclusion must be verified",
                    )));
                }
                Ok(VerifiedBundle {
                    signer: BundleSigner::Key {
                        origin: key.origin().to_string(),
                    },
                    verified_times: result.verified_timestamps().to_vec(),
                    transparency_log_verified: result.tlog_verified(),
                })
            }
        }
    }

    pub(super) fn run(
        &self,
        bundle: &SigstoreBundle,
        artifact: BundleArtifact<'_>,
        policy: &(impl sigstore_verify::Policy + ?Sized),
    ) -> Result<VerificationResult, BundleError> {
        // Bounded before any cryptography.
        bundle.check_counts(&self.limits)?;
        let verifier = self.trust.verifier();
        let b = &bundle.inner;
        let result = match artifact {
            BundleArtifact::Bytes(bytes) => verifier.verify(bytes, b, policy),
            BundleArtifact::Digest(d) => verifier.verify(Sha256Hash::new(*d.as_bytes()), b, policy),
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
        let result =
            result.map_err(|e| BundleError::Check(map_verify_error(e, self.trust, None)))?;
        // sigstore-verify does not check the validity of the CA certificates it takes as
        // anchors: every certificate of the Fulcio path, the root included, must be valid at
        // every verified time.
        if let Some((leaf, intermediates)) = bundle.certificate_chain() {
            for time in result.verified_timestamps() {
                fulcio_chain::check(webpki_algorithms(), self.trust, leaf, &intermediates, *time)?;
            }
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{BundleKey, Sha256Digest};
    use std::path::{Path, PathBuf};

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

    /// [`verify_case`] of the conformance cases' artifact `a.txt`, by its digest.
    fn verify_a_txt(name: &str, signer: &ExpectedSigner) -> Result<VerifiedBundle, BundleError> {
        verify_case(name, BundleArtifact::Digest(a_txt_digest()), signer)
    }

    #[test]
    fn verifies_v03_bundle_by_digest_with_exact_identity() {
        let signer = ExpectedSigner::identity(BEACON, GHA);
        let result = verify_a_txt("happy-path-v0.3", &signer);
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
    fn rejects_bundle_signed_by_another_identity_or_issuer() {
        let evil = "https://github.com/evil/repo/x.yml@refs/heads/main";
        let err =
            verify_a_txt("happy-path-v0.3", &ExpectedSigner::identity(evil, GHA)).unwrap_err();
        assert!(
            matches!(err, BundleError::Check(SigstoreError::IdentityMismatch { ref found, .. }) if found == BEACON),
            "{err}"
        );
        let google = ExpectedSigner::identity(BEACON, "https://accounts.google.com");
        let err = verify_a_txt("happy-path-v0.3", &google).unwrap_err();
        assert!(
            matches!(err, BundleError::Check(SigstoreError::IssuerMismatch { ref found, .. }) if found == GHA),
            "{err}"
        );
    }

    #[test]
    fn identity_is_not_matched_as_a_prefix() {
        let prefix = &BEACON[..BEACON.len() - 4];
        let signer = ExpectedSigner::identity(prefix, GHA);
        let result = verify_a_txt("happy-path-v0.3", &signer);
        assert!(matches!(
            result,
            Err(BundleError::Check(SigstoreError::IdentityMismatch { .. }))
        ));
    }

    #[test]
    fn rejects_digest_of_another_artifact() {
        let signer = ExpectedSigner::identity(BEACON, GHA);
        let err = verify_case(
            "happy-path-v0.3",
            BundleArtifact::Digest(Sha256Digest::of(b"124\n")),
            &signer,
        )
        .unwrap_err();
        assert!(!err.is_input_error(), "{err}");
    }

    #[test]
    fn rejects_key_bundle_when_an_identity_is_expected() {
        let signer = ExpectedSigner::identity(BEACON, GHA);
        let result = verify_a_txt("managed-key-no-key_fail", &signer);
        assert!(matches!(result, Err(BundleError::KeyBundleForIdentity)));
    }

    #[test]
    fn verifies_managed_key_bundle_with_its_key() {
        let key = case_key("managed-key-happy-path");
        let signer = ExpectedSigner::Key(key);
        let result = verify_a_txt("managed-key-happy-path", &signer);
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
        let err = verify_a_txt("managed-key-happy-path", &signer).unwrap_err();
        assert!(
            matches!(err, BundleError::Check(SigstoreError::BadSignature(_))),
            "{err}"
        );
    }

    #[test]
    fn rejects_certificate_bundle_when_a_key_is_expected() {
        let signer = ExpectedSigner::Key(fresh_p256_key());
        let result = verify_a_txt("happy-path-v0.3", &signer);
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
        // One mapper for every path: an expired certificate is a validity failure at the
        // signing time, never an "untrusted chain".
        assert!(
            matches!(
                err,
                BundleError::Check(SigstoreError::CertificateNotValidAt { .. })
            ),
            "{err}"
        );
    }

    #[test]
    fn rekor_v2_bundle_without_timestamp_has_no_signing_time() {
        let err = verify_case(
            "rekor2-no-timestamp_fail",
            BundleArtifact::Digest(a_txt_digest()),
            &ExpectedSigner::identity(BEACON, GHA),
        )
        .unwrap_err();
        assert!(
            matches!(err, BundleError::Check(SigstoreError::NoVerifiedTime(_))),
            "{err}"
        );
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
        let err = verify_case(
            "happy-path-v0.3",
            BundleArtifact::File(Path::new("/nonexistent/a.txt")),
            &ExpectedSigner::identity(BEACON, GHA),
        )
        .unwrap_err();
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
