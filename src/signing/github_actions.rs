//! The GitHub Actions identity token: `GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=<aud>`
//! with `Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answered by
//! `{"count": n, "value": "<JWT>"}` (research/sigstore-protocol.md §3). The job needs
//! `permissions: id-token: write`; without it the two variables are not set.
//!
//! Written here rather than through `ambient-id` so the audience is ours, the request is
//! retried like every other (5xx, connection errors; never 4xx), and tests can point it at
//! a local endpoint.

use super::http::{self, BodyError, RetryPolicy, Transient, retry, status_is_transient};
use super::token::{GitHubTokenRequest, Secret, TokenError};

/// Largest token response accepted, in bytes. Real ID tokens are a few KiB.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

impl Transient for GitHubAttemptError {
    fn is_transient(&self) -> bool {
        match self {
            GitHubAttemptError::Connection(_) => true,
            GitHubAttemptError::Status(s) => status_is_transient(*s),
            GitHubAttemptError::Body(_) | GitHubAttemptError::NoValue => false,
        }
    }
}

enum GitHubAttemptError {
    Connection(reqwest::Error),
    Status(u16),
    Body(BodyError),
    NoValue,
}

/// `GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=<aud>` with the job's bearer token; the
/// answer is `{"count": n, "value": "<JWT>"}`. Written here rather than through
/// `ambient-id` so the audience is ours and the request can be retried and tested.
pub(crate) async fn request_token(
    http: &reqwest::Client,
    request: &GitHubTokenRequest,
    audience: &str,
    policy: RetryPolicy,
) -> Result<Secret, TokenError> {
    let mut url = reqwest::Url::parse(&request.url).map_err(|e| TokenError::GitHubUrl {
        reason: e.to_string(),
    })?;
    if !http::may_carry_secrets(url.as_str()) {
        return Err(TokenError::GitHubInsecureUrl);
    }
    url.query_pairs_mut().append_pair("audience", audience);
    let attempt = || async {
        let response = http
            .get(url.clone())
            .header(
                reqwest::header::AUTHORIZATION,
                format!("bearer {}", request.bearer.expose()),
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(GitHubAttemptError::Connection)?;
        let status = response.status();
        if !status.is_success() {
            return Err(GitHubAttemptError::Status(status.as_u16()));
        }
        let body = http::read_limited(response, MAX_RESPONSE_BYTES)
            .await
            .map_err(GitHubAttemptError::Body)?;
        #[derive(serde::Deserialize)]
        struct Answer {
            value: Option<Secret>,
        }
        let answer: Answer =
            serde_json::from_slice(&body).map_err(|_| GitHubAttemptError::NoValue)?;
        answer.value.ok_or(GitHubAttemptError::NoValue)
    };
    retry(policy, attempt)
        .await
        .map_err(|(e, attempts)| match e {
            GitHubAttemptError::Connection(source) => TokenError::GitHubConnection {
                attempts,
                source: source.without_url(),
            },
            GitHubAttemptError::Status(status) => TokenError::GitHubStatus { status, attempts },
            GitHubAttemptError::Body(b) => TokenError::GitHubBody(b),
            GitHubAttemptError::NoValue => TokenError::GitHubNoValue,
        })
}
