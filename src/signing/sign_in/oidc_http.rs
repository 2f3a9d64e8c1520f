//! The `openidconnect` crate's HTTP client interface ([`AsyncHttpClient`]) over mansign's own
//! `reqwest` client, so the sign-in uses one HTTP stack with one configuration: mansign's
//! user agent, connect and request timeouts, no redirects (the crate's advice against
//! server-side request forgery), answers read up to a size bound, and requests only to
//! `https://` or to this machine (codes, PKCE verifiers and device codes travel in them).

use crate::signing::http::{self, BodyError};
use openidconnect::{AsyncHttpClient, HttpRequest, HttpResponse};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Largest answer read (discovery document, JWKS, token or device answer), in bytes.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Why one request of the sign-in failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OidcHttpError {
    #[error(
        "refusing to send a sign-in request to {url}: use https:// (plain http:// only to this machine)"
    )]
    Insecure { url: String },
    #[error(transparent)]
    Request(reqwest::Error),
    #[error(transparent)]
    Body(BodyError),
    #[error("cannot pass the answer on")]
    Answer(#[source] openidconnect::http::Error),
}

/// mansign's HTTP client, as the crate sees it.
#[derive(Debug, Clone)]
pub(crate) struct OidcHttpClient {
    client: reqwest::Client,
}

impl OidcHttpClient {
    /// A client whose requests each take at most `timeout`.
    pub fn new(timeout: Duration) -> Result<Self, reqwest::Error> {
        Ok(OidcHttpClient {
            client: http::client(timeout)?,
        })
    }

    async fn execute(&self, request: HttpRequest) -> Result<HttpResponse, OidcHttpError> {
        let url = request.uri().to_string();
        if !http::may_carry_secrets(&url) {
            return Err(OidcHttpError::Insecure { url });
        }
        let request = reqwest::Request::try_from(request).map_err(OidcHttpError::Request)?;
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| OidcHttpError::Request(e.without_url()))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = http::read_limited(response, MAX_RESPONSE_BYTES)
            .await
            .map_err(OidcHttpError::Body)?;
        let mut answer = openidconnect::http::Response::builder().status(status);
        if let Some(h) = answer.headers_mut() {
            *h = headers;
        }
        answer.body(body).map_err(OidcHttpError::Answer)
    }
}

impl<'c> AsyncHttpClient<'c> for OidcHttpClient {
    type Error = OidcHttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, OidcHttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(self.execute(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_sends_a_request_to_a_remote_plain_http_url() {
        let client = OidcHttpClient::new(Duration::from_secs(5)).unwrap();
        let request = openidconnect::http::Request::builder()
            .method("POST")
            .uri("http://issuer.invalid/token")
            .body(b"code=secret".to_vec())
            .unwrap();
        let err = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(client.call(request))
            .unwrap_err();
        assert!(matches!(err, OidcHttpError::Insecure { .. }), "{err}");
    }
}
