//! The Fulcio v2 certificate request (`POST /api/v2/signingCert`): the identity token and
//! the ephemeral public key go in, with a proof of possession (the token's email, else its
//! subject, signed by the key); a certificate chain comes out, leaf first.
//!
//! The request is made here rather than through `sigstore-fulcio`'s client because that
//! client drops the response headers (a `429` or `503` with `Retry-After` could not be
//! honoured, see [`super::retry`]) and reads the answer without a size bound. The body is
//! the one cosign and sigstore-rust send (Fulcio's `CreateSigningCertificateRequest`, proto
//! JSON).

use super::certificate_identity::TokenIdentities;
use super::http::{self, BodyError};
use super::retry::{Attempts, RemoteService, RetryObserver, RetryPolicy, Retrying, retry};
use super::sigstore::{CertificateFacts, EphemeralKey, IdentityToken, certificate_facts};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use std::time::Duration;

/// The public-good Fulcio.
pub const DEFAULT_FULCIO_URL: &str = "https://fulcio.sigstore.dev";
/// Largest Fulcio answer read, in bytes (a chain of three certificates is a few KiB).
const MAX_RESPONSE_BYTES: usize = 256 * 1024;

/// Why no certificate was issued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FulcioError {
    #[error(
        "refusing to send the identity token to {url}: use https:// (plain http:// only to \
         this machine)"
    )]
    InsecureUrl { url: String },
    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),
    #[error("cannot use the ephemeral signing key: {0}")]
    Key(String),
    #[error("Fulcio at {url} is unreachable after {attempts}")]
    Unreachable {
        url: String,
        attempts: Attempts,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "Fulcio at {url} refused the certificate request after {attempts}: HTTP {status}: {message}"
    )]
    Status {
        url: String,
        status: u16,
        attempts: Attempts,
        message: String,
    },
    #[error("Fulcio at {url} answered with something that is not a certificate: {reason}")]
    Response { url: String, reason: String },
    #[error("Fulcio issued a certificate for another public key than ours")]
    CertificateForAnotherKey,
    /// The certificate names another signer than the token: every signature would verify
    /// as that signer (see `certificate_identity.rs`).
    #[error(
        "Fulcio at {url} issued a certificate for {certificate_identity} (issuer \
         {certificate_issuer}), but the identity token is for {token_identity} (issuer \
         {token_issuer}); refused before anything was signed or uploaded"
    )]
    CertificateForAnotherIdentity {
        url: String,
        certificate_identity: String,
        certificate_issuer: String,
        token_identity: String,
        token_issuer: String,
    },
}

/// A certificate Fulcio issued for our key.
#[derive(Debug, Clone)]
pub(crate) struct IssuedCertificate {
    /// The leaf, DER.
    pub leaf_der: Vec<u8>,
    pub facts: CertificateFacts,
}

/// Where and how patiently to ask.
#[derive(Debug, Clone)]
pub(crate) struct FulcioRequest<'a> {
    pub url: &'a str,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub on_retry: &'a RetryObserver,
}

/// One attempt's failure, before retries are accounted for.
type Attempt = http::Attempt<BodyError>;

/// Asks Fulcio for a certificate for `key`, retrying transient failures, and checks that
/// the leaf certifies our key and the token's identity (`certificate_identity.rs`).
pub(crate) async fn request_certificate(
    request: &FulcioRequest<'_>,
    token: &IdentityToken,
    key: &EphemeralKey,
) -> Result<IssuedCertificate, FulcioError> {
    let url = request.url.trim_end_matches('/').to_string();
    if !http::may_carry_secrets(&url) {
        return Err(FulcioError::InsecureUrl { url });
    }
    let client = http::client(request.timeout).map_err(FulcioError::HttpClient)?;
    let key_error = |e: super::sigstore::SigstoreFailure| FulcioError::Key(e.to_string());
    let proof = key
        .sign(token.proof_of_possession_subject().as_bytes())
        .map_err(key_error)?;
    let body = serde_json::json!({
        "credentials": {"oidcIdentityToken": token.jwt()},
        "publicKeyRequest": {
            "publicKey": {"algorithm": "ECDSA", "content": key.public_key_pem().map_err(key_error)?},
            "proofOfPossession": STANDARD.encode(proof),
        },
    });
    let endpoint = format!("{url}/api/v2/signingCert");
    let how = Retrying {
        policy: request.retry,
        service: RemoteService::Fulcio,
        observer: request.on_retry,
    };
    let answer = retry(how, || post(&client, &endpoint, &body))
        .await
        .map_err(|(e, attempts)| match e {
            Attempt::Connection(source) => FulcioError::Unreachable {
                url: url.clone(),
                attempts,
                source: source.without_url(),
            },
            Attempt::Status {
                status, message, ..
            } => FulcioError::Status {
                url: url.clone(),
                status,
                attempts,
                message,
            },
            Attempt::Other(e) => FulcioError::Response {
                url: url.clone(),
                reason: crate::error::chain(&e),
            },
        })?;
    let leaf_der = leaf_of(&answer).map_err(|reason| FulcioError::Response {
        url: url.clone(),
        reason,
    })?;
    let facts = certificate_facts(&leaf_der).map_err(|e| FulcioError::Response {
        url: url.clone(),
        reason: e.to_string(),
    })?;
    if facts.public_key_der != key.public_key_der().map_err(key_error)? {
        return Err(FulcioError::CertificateForAnotherKey);
    }
    let token_identities = TokenIdentities::from_claims(&token.claims_json(), token.issuer());
    if !token_identities.admits(facts.identity.as_deref(), facts.issuer.as_deref()) {
        let none = || "no identity".to_string();
        return Err(FulcioError::CertificateForAnotherIdentity {
            url,
            certificate_identity: facts.identity.clone().unwrap_or_else(none),
            certificate_issuer: facts.issuer.clone().unwrap_or_else(none),
            token_identity: TokenIdentities::describe(&token_identities.subjects),
            token_issuer: TokenIdentities::describe(&token_identities.issuers),
        });
    }
    Ok(IssuedCertificate { leaf_der, facts })
}

async fn post(
    client: &reqwest::Client,
    endpoint: &str,
    body: &serde_json::Value,
) -> Result<Vec<u8>, Attempt> {
    let response = client
        .post(endpoint)
        .json(body)
        .send()
        .await
        .map_err(Attempt::Connection)?;
    if !response.status().is_success() {
        return Err(http::refused(response).await);
    }
    http::read_limited(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(Attempt::Other)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    #[serde(default)]
    signed_certificate_embedded_sct: Option<Chain>,
    #[serde(default)]
    signed_certificate_detached_sct: Option<Chain>,
}

#[derive(Deserialize)]
struct Chain {
    chain: Certificates,
}

#[derive(Deserialize)]
struct Certificates {
    certificates: Vec<String>,
}

/// The leaf (first certificate) of Fulcio's answer, DER.
fn leaf_of(answer: &[u8]) -> Result<Vec<u8>, String> {
    let answer: Answer = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
    let chain = match (
        answer.signed_certificate_embedded_sct,
        answer.signed_certificate_detached_sct,
    ) {
        (Some(c), None) | (None, Some(c)) => c.chain.certificates,
        (None, None) => return Err("no certificate chain".to_string()),
        (Some(_), Some(_)) => return Err("both an embedded and a detached SCT".to_string()),
    };
    let first = chain.first().ok_or("an empty certificate chain")?;
    let pem = pem::parse(first).map_err(|e| format!("leaf certificate PEM: {e}"))?;
    if pem.tag() != "CERTIFICATE" {
        return Err(format!("leaf is a {} PEM, not a CERTIFICATE", pem.tag()));
    }
    Ok(pem.into_contents())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n";

    #[test]
    fn reads_the_leaf_of_either_sct_form() {
        for key in [
            "signedCertificateEmbeddedSct",
            "signedCertificateDetachedSct",
        ] {
            let answer = serde_json::json!({ key: {"chain": {"certificates": [PEM, "root"]}} });
            assert_eq!(
                leaf_of(answer.to_string().as_bytes()).unwrap(),
                vec![1, 2, 3]
            );
        }
    }

    #[test]
    fn refuses_answers_without_one_leaf_certificate() {
        let chain =
            |certs: serde_json::Value| serde_json::json!({"chain": {"certificates": certs}});
        for answer in [
            serde_json::json!({}),
            serde_json::json!({"signedCertificateEmbeddedSct": chain(serde_json::json!([]))}),
            serde_json::json!({
                "signedCertificateEmbeddedSct": chain(serde_json::json!([PEM])),
                "signedCertificateDetachedSct": chain(serde_json::json!([PEM])),
            }),
            serde_json::json!({"signedCertificateEmbeddedSct": chain(serde_json::json!(["junk"]))}),
            serde_json::json!({"signedCertificateEmbeddedSct": chain(serde_json::json!([
                "-----BEGIN PUBLIC KEY-----\nAQID\n-----END PUBLIC KEY-----\n"
            ]))}),
        ] {
            assert!(leaf_of(answer.to_string().as_bytes()).is_err(), "{answer}");
        }
    }
}
