//! HTTP to Sigstore services, CI token endpoints and OIDC issuers: one `reqwest` client
//! configuration (user agent, timeouts, no redirects), bounded response bodies, and the rule
//! for where secrets may be sent. Retries are in [`super::retry`].

use super::retry::{Transient, status_is_transient};
use std::future::Future;
use std::time::{Duration, SystemTime};

/// User agent of every request mansign makes.
pub(crate) const USER_AGENT: &str = concat!("mansign/", env!("CARGO_PKG_VERSION"));

/// Time allowed to open a connection. Short: an unreachable service should fail fast so
/// the retry (or the error) comes quickly.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP client with mansign's timeouts. `timeout` bounds one whole request.
///
/// Redirects are not followed: a `307`/`308` would re-send a request body holding an
/// identity token or an authorization code to wherever the answer points, and an OIDC
/// client that follows redirects can be steered at internal addresses (the `openidconnect`
/// crate asks for this setting). The one redirect-like answer mansign expects, Rekor's
/// `409` with `Location`, is followed by hand.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// Whether secrets (identity tokens, bearer credentials, authorization codes) may be
/// sent to `url`: only over HTTPS, or plain HTTP to this machine (test stacks, local
/// proxies). A remote `http://` URL would hand the token to anyone on the path.
pub(crate) fn may_carry_secrets(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

/// Reads a response body, refusing more than `limit` bytes (a hostile or broken server
/// must not make us buffer without bound).
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The error text of a Sigstore service's answer (Fulcio and Rekor send
/// `{"code":..,"message":..}`): its `message`, else the body as text; at most 300
/// characters of the first 64 KiB, `no message` when empty.
pub(crate) async fn error_message(response: reqwest::Response) -> String {
    let body = read_limited(response, MAX_ERROR_BYTES)
        .await
        .unwrap_or_default();
    let text = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v.get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
    let text = text.trim();
    if text.is_empty() {
        "no message".to_string()
    } else {
        text.chars().take(300).collect()
    }
}

/// The most of an error answer's body [`error_message`] reads.
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// Why a response body could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    #[error("reading the response failed")]
    Read(#[source] reqwest::Error),
    #[error("the response is larger than {limit} bytes")]
    TooLarge { limit: usize },
}

impl Transient for BodyError {
    /// A read broken off mid-answer can succeed on a second try; an answer over the limit
    /// will not.
    fn is_transient(&self) -> bool {
        matches!(self, BodyError::Read(_))
    }

    fn reason(&self) -> String {
        match self {
            BodyError::Read(e) if e.is_timeout() => "timed out reading the answer".to_string(),
            BodyError::Read(e) => format!("answer broken off: {}", innermost(e)),
            BodyError::TooLarge { .. } => self.to_string(),
        }
    }
}

/// A request that got no answer, in a few words: `timed out`, or the innermost cause
/// (`Connection refused (os error 111)`), which says more than reqwest's own wording.
pub(crate) fn request_failure(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".to_string();
    }
    let cause = innermost(e);
    if e.is_connect() {
        format!("cannot connect: {cause}")
    } else {
        cause
    }
}

/// The message of the last error in `e`'s chain of sources.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

/// One failed attempt at a request to a Sigstore service (Fulcio, Rekor), before retries
/// are accounted for: no answer, a refusal, or a failure `E` of reading or judging the
/// answer (retried when `E` says it is transient).
pub(crate) enum Attempt<E> {
    Connection(reqwest::Error),
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    Other(E),
}

impl<E: Transient> Transient for Attempt<E> {
    fn is_transient(&self) -> bool {
        match self {
            Attempt::Connection(_) => true,
            Attempt::Status { status, .. } => status_is_transient(*status),
            Attempt::Other(e) => e.is_transient(),
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
            Attempt::Connection(e) => request_failure(e),
            Attempt::Status { status, .. } => format!("HTTP {status}"),
            Attempt::Other(e) => e.reason(),
        }
    }
}

/// A refusal: its status, the service's message ([`error_message`]) and `Retry-After`.
pub(crate) async fn refused<E>(response: reqwest::Response) -> Attempt<E> {
    let status = response.status().as_u16();
    let retry_after = super::retry::retry_after(response.headers(), SystemTime::now());
    Attempt::Status {
        status,
        message: error_message(response).await,
        retry_after,
    }
}

/// Runs a future to completion on a private current-thread runtime, for the synchronous
/// entry points. Refuses to run inside another tokio runtime (blocking there would stall
/// it): async callers use the async functions instead.
pub(crate) fn block_on<F: Future>(future: F) -> std::io::Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(std::io::Error::other(
            "called from inside an async runtime; use the async function instead",
        ));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_go_only_over_https_or_to_this_machine() {
        for ok in [
            "https://fulcio.sigstore.dev",
            "http://127.0.0.1:4000",
            "http://[::1]:80/x",
            "http://localhost:8080",
        ] {
            assert!(may_carry_secrets(ok), "{ok}");
        }
        for bad in [
            "http://fulcio.example.com",
            "http://10.0.0.1",
            "ftp://localhost",
            "not a url",
        ] {
            assert!(!may_carry_secrets(bad), "{bad}");
        }
    }
}
