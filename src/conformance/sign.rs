//! Producing standard Sigstore bundles for a blob (the conformance `sign-bundle`
//! command): sigstore-sign with the Fulcio/Rekor/TSA of a signing config, then the new
//! bundle is verified with [`BundleVerifier`] before it is returned.

use super::bundle::{BundleArtifact, BundleError, SigstoreBundle};
use super::digest::Sha256Digest;
use super::verify::BundleVerifier;
use crate::trust::TrustRoot;
use sigstore_verify::VerificationPolicy;
use std::path::Path;

/// Why a blob could not be signed into a bundle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleSignError {
    #[error("identity token is not a JWT: {0}")]
    Token(String),
    #[error("{origin}: not a usable Sigstore signing config: {reason}")]
    SigningConfig { origin: String, reason: String },
    #[error("signing failed: {0}")]
    Signing(String),
    #[error("the bundle just signed does not verify against {trust_root}")]
    SelfCheck {
        trust_root: String,
        #[source]
        source: BundleError,
    },
}

/// Which Fulcio, Rekor and TSA a bundle is signed with.
#[derive(Debug, Clone)]
pub struct BundleServices {
    origin: String,
    services: sigstore_sign::SigningServices,
}

impl BundleServices {
    /// Sigstore public-good production, from the signing config embedded in
    /// sigstore-trust-root (no TUF round trip).
    pub fn public_good() -> Result<Self, BundleSignError> {
        Self::embedded(sigstore_sign::SigstoreInstance::PublicGood, "public-good")
    }

    /// Sigstore public-good staging (`sigstage.dev`), from the embedded signing config.
    pub fn staging() -> Result<Self, BundleSignError> {
        Self::embedded(sigstore_sign::SigstoreInstance::Staging, "staging")
    }

    fn embedded(
        instance: sigstore_sign::SigstoreInstance,
        name: &str,
    ) -> Result<Self, BundleSignError> {
        let origin = format!("embedded {name} signing config");
        let services = sigstore_sign::SigningServices::from_embedded(instance).map_err(|e| {
            BundleSignError::SigningConfig {
                origin: origin.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(BundleServices { origin, services })
    }

    /// A `SigningConfig` v0.2 file (protobuf-specs). The newest Rekor API version it lists
    /// is used, and it must list a TSA (Rekor v2 entries carry no integrated time).
    pub fn from_signing_config_file(path: impl AsRef<Path>) -> Result<Self, BundleSignError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let bad = |reason: String| BundleSignError::SigningConfig {
            origin: origin.clone(),
            reason,
        };
        let config =
            sigstore_trust_root::SigningConfig::from_file(path).map_err(|e| bad(e.to_string()))?;
        let services = sigstore_sign::SigningServices::from_signing_config(&config)
            .map_err(|e| bad(e.to_string()))?;
        Ok(BundleServices { origin, services })
    }

    /// Where the services came from and what they are, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{}: Fulcio {}, Rekor {} ({:?}), TSA {}",
            self.origin,
            self.services.fulcio_url(),
            self.services.rekor_url(),
            self.services.rekor_api_version(),
            self.services.tsa_url().unwrap_or("none")
        )
    }
}

/// What to sign.
#[derive(Debug, Clone, Copy)]
pub enum BundlePayload<'a> {
    /// Any bytes: a `messageSignature` bundle over them.
    Blob(&'a [u8]),
    /// A blob given by its SHA-256 digest (hashed by the caller, e.g. streamed from a file
    /// with [`Sha256Digest::of_reader`]): the same `messageSignature` bundle as
    /// [`BundlePayload::Blob`] of those bytes, for an artifact of any size.
    BlobDigest(Sha256Digest),
    /// An in-toto Statement (JSON), signed as-is in a DSSE envelope with payload type
    /// `application/vnd.in-toto+json`.
    InTotoStatement(&'a [u8]),
}

/// Signs `payload` keylessly with the raw OIDC `identity_token`, then verifies the new
/// bundle against `trust` before returning it. sigstore-sign does not check the Rekor
/// response or the TSA token it receives (research `sigstore-rust-crates.md` §2.4); the
/// check here is for the log and TSA answers, so it accepts whatever identity Fulcio put
/// in the certificate (Fulcio derived it from this very token).
///
/// The result is a v0.3 bundle with the leaf certificate only: no CA certificate is
/// embedded.
pub async fn sign_bundle(
    identity_token: &str,
    services: &BundleServices,
    payload: BundlePayload<'_>,
    trust: &TrustRoot,
) -> Result<SigstoreBundle, BundleSignError> {
    let token = sigstore_oidc::IdentityToken::from_jwt(identity_token.trim())
        .map_err(|e| BundleSignError::Token(e.to_string()))?;
    let signer = sigstore_sign::SigningContext::new(services.services.clone()).signer(token);
    let signed = match payload {
        BundlePayload::Blob(bytes) => signer.sign(bytes).await,
        BundlePayload::BlobDigest(digest) => {
            signer
                .sign(sigstore_types::Sha256Hash::new(*digest.as_bytes()))
                .await
        }
        BundlePayload::InTotoStatement(statement) => signer.sign_raw_statement(statement).await,
    };
    let bundle = SigstoreBundle {
        inner: signed.map_err(|e| BundleSignError::Signing(e.to_string()))?,
    };
    let artifact = match payload {
        BundlePayload::Blob(bytes) => BundleArtifact::Bytes(bytes),
        BundlePayload::BlobDigest(digest) => BundleArtifact::Digest(digest),
        BundlePayload::InTotoStatement(statement) => {
            BundleArtifact::Digest(first_subject_digest(statement).ok_or_else(|| {
                BundleSignError::Signing(
                    "the in-toto statement has no subject with a sha256 digest".into(),
                )
            })?)
        }
    };
    let self_check = |source| BundleSignError::SelfCheck {
        trust_root: trust.origin().to_string(),
        source,
    };
    let policy = VerificationPolicy::any_identity();
    BundleVerifier::new(trust)
        .run(&bundle, artifact, &policy)
        .map_err(self_check)?;
    Ok(bundle)
}

/// The sha256 digest of the statement's first subject that has one.
fn first_subject_digest(statement: &[u8]) -> Option<Sha256Digest> {
    let value: serde_json::Value = serde_json::from_slice(statement).ok()?;
    value
        .get("subject")?
        .as_array()?
        .iter()
        .filter_map(|s| s.get("digest")?.get("sha256")?.as_str())
        .find_map(|hex_digits| format!("sha256:{hex_digits}").parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::digest::tests::{A_TXT_SHA256, a_txt_digest};

    #[test]
    fn statement_subject_digest_is_found() {
        let statement = format!(
            r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"name":"a.txt","digest":{{"sha256":"{A_TXT_SHA256}"}}}}],"predicateType":"https://example.com/p","predicate":{{}}}}"#
        );
        assert_eq!(
            first_subject_digest(statement.as_bytes()),
            Some(a_txt_digest())
        );
    }
}
