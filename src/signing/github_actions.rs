//! The GitHub Actions identity token: `GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=<aud>`
//! with `Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answered by
//! `{"count": n, "value": "<JWT>"}` (GitHub's "About security hardening with OpenID
//! Connect"). The job needs `permissions: id-token: write`; without it the two variables are
//! not set.
//!
//! Written here rather than through `ambient-id` so the audience is ours, the request is
//! retried like every other (429 and 5xx honouring `Retry-After`, connection errors; never
//! another 4xx, see [`super::retry`]), and tests can point it at a local endpoint.

use super::http::{self, BodyError};
use super::retry::{
    Attempts, RemoteService, RetryObserver, RetryPolicy, Retrying, Transient, retry,
    status_is_transient,
};
use super::secret::Secret;
use std::time::{Duration, SystemTime};

/// GitHub Actions: URL of the job's token endpoint.
pub const ACTIONS_ID_TOKEN_REQUEST_URL: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
/// GitHub Actions: bearer token for that endpoint.
pub const ACTIONS_ID_TOKEN_REQUEST_TOKEN: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

/// Largest token response accepted, in bytes. Real ID tokens are a few KiB.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// The GitHub Actions token request (`ACTIONS_ID_TOKEN_REQUEST_*`).
#[derive(Debug, Clone)]
pub struct GitHubTokenRequest {
    /// `ACTIONS_ID_TOKEN_REQUEST_URL` (already carries a query, e.g. `?api-version=2.0`).
    pub url: String,
    /// `ACTIONS_ID_TOKEN_REQUEST_TOKEN`.
    pub bearer: Secret,
}

/// Why the GitHub Actions token endpoint gave no token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitHubTokenError {
    #[error(
        "refusing to send the GitHub Actions request token to {ACTIONS_ID_TOKEN_REQUEST_URL} \
         over plain http"
    )]
    InsecureUrl,
    #[error("GitHub Actions token request: {ACTIONS_ID_TOKEN_REQUEST_URL} is not a URL: {reason}")]
    Url { reason: String },
    #[error("GitHub Actions token request failed after {attempts}")]
    Connection {
        attempts: Attempts,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "GitHub Actions token request failed after {attempts}: HTTP {status} \
         (does the job have `permissions: id-token: write`?)"
    )]
    Status { status: u16, attempts: Attempts },
    #[error("GitHub Actions token response")]
    Body(#[source] BodyError),
    #[error("GitHub Actions token response has no string `value`")]
    NoValue,
}

enum Attempt {
    Connection(reqwest::Error),
    Status {
        status: u16,
        retry_after: Option<Duration>,
    },
    Body(BodyError),
    NoValue,
}

impl Transient for Attempt {
    fn is_transient(&self) -> bool {
        match self {
            Attempt::Connection(_) => true,
            Attempt::Status { status, .. } => status_is_transient(*status),
            Attempt::Body(_) | Attempt::NoValue => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Attempt::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    fn reason(&self) -> String {
        match self {
            Attempt::Connection(e) => http::request_failure(e),
            Attempt::Status { status, .. } => format!("HTTP {status}"),
            Attempt::Body(b) => b.reason(),
            Attempt::NoValue => "no token in the answer".to_string(),
        }
    }
}

/// `GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=<aud>` with the job's bearer token; the
/// answer is `{"count": n, "value": "<JWT>"}`.
pub(crate) async fn request_token(
    client: &reqwest::Client,
    request: &GitHubTokenRequest,
    audience: &str,
    policy: RetryPolicy,
    on_retry: &RetryObserver,
) -> Result<Secret, GitHubTokenError> {
    let mut url = reqwest::Url::parse(&request.url).map_err(|e| GitHubTokenError::Url {
        reason: e.to_string(),
    })?;
    if !http::may_carry_secrets(url.as_str()) {
        return Err(GitHubTokenError::InsecureUrl);
    }
    url.query_pairs_mut().append_pair("audience", audience);
    let attempt = || async {
        let response = client
            .get(url.clone())
            .header(
                reqwest::header::AUTHORIZATION,
                format!("bearer {}", request.bearer.expose()),
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(Attempt::Connection)?;
        let status = response.status();
        if !status.is_success() {
            return Err(Attempt::Status {
                status: status.as_u16(),
                retry_after: super::retry::retry_after(response.headers(), SystemTime::now()),
            });
        }
        let body = http::read_limited(response, MAX_RESPONSE_BYTES)
            .await
            .map_err(Attempt::Body)?;
        #[derive(serde::Deserialize)]
        struct Answer {
            value: Option<Secret>,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|_| Attempt::NoValue)?;
        answer.value.ok_or(Attempt::NoValue)
    };
    let how = Retrying {
        policy,
        service: RemoteService::GitHubActionsToken,
        observer: on_retry,
    };
    retry(how, attempt).await.map_err(|(e, attempts)| match e {
        Attempt::Connection(source) => GitHubTokenError::Connection {
            attempts,
            source: source.without_url(),
        },
        Attempt::Status { status, .. } => GitHubTokenError::Status { status, attempts },
        Attempt::Body(b) => GitHubTokenError::Body(b),
        Attempt::NoValue => GitHubTokenError::NoValue,
    })
}
