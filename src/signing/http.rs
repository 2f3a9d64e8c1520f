//! HTTP to Sigstore services and CI token endpoints: client settings and retries.
//!
//! Fulcio, Rekor and the CI token endpoints are remote services that fail transiently
//! (deploys, load shedding, flaky networks). A request is retried only when a second try
//! can succeed: a 5xx answer, a timeout or a connection error. A 4xx answer means the
//! request itself is wrong (bad token, malformed entry), so it is never retried — retrying
//! would only hide the real error and hammer the service.

use std::future::Future;
use std::time::Duration;

/// User agent of every request mansign makes.
pub(crate) const USER_AGENT: &str = concat!("mansign/", env!("CARGO_PKG_VERSION"));

/// Time allowed to open a connection. Short: an unreachable service should fail fast so
/// the retry (or the error) comes quickly.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP client with mansign's timeouts. `timeout` bounds one whole request.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(timeout)
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

/// Why a response body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("reading the response failed: {0}")]
    Read(#[source] reqwest::Error),
    #[error("the response is larger than {limit} bytes")]
    TooLarge { limit: usize },
}

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, the first one included. Default 3.
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one. Default 500 ms.
    pub initial_backoff: Duration,
    /// Upper bound of one wait. Default 8 s.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        attempts: 3,
        initial_backoff: Duration::from_millis(500),
        max_backoff: Duration::from_secs(8),
    };

    /// One attempt, no retry.
    pub const NONE: RetryPolicy = RetryPolicy {
        attempts: 1,
        initial_backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
    };

    fn backoff(&self, failed_attempts: u32) -> Duration {
        let factor = 2u32.saturating_pow(failed_attempts.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::DEFAULT
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

/// Whether a failed attempt is worth repeating.
pub(crate) trait Transient {
    fn is_transient(&self) -> bool;
}

/// Whether an HTTP status is worth retrying: only server errors.
pub(crate) fn status_is_transient(status: u16) -> bool {
    (500..=599).contains(&status)
}

/// Runs `attempt` until it succeeds, fails with a permanent error, or the policy's
/// attempts are used up. Returns the last error and the number of attempts made.
pub(crate) async fn retry<T, E, F, Fut>(policy: RetryPolicy, mut attempt: F) -> Result<T, (E, u32)>
where
    E: Transient,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let attempts = policy.attempts.max(1);
    let mut made = 0;
    loop {
        made += 1;
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if made < attempts && e.is_transient() => {
                tokio::time::sleep(policy.backoff(made)).await;
            }
            Err(e) => return Err((e, made)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[derive(Debug, PartialEq)]
    struct Status(u16);
    impl Transient for Status {
        fn is_transient(&self) -> bool {
            status_is_transient(self.0)
        }
    }

    const FAST: RetryPolicy = RetryPolicy {
        attempts: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
    };

    fn run<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn retries_server_errors_up_to_the_attempt_limit() {
        let calls = Cell::new(0);
        let r: Result<(), _> = run(retry(FAST, || {
            calls.set(calls.get() + 1);
            async { Err(Status(500)) }
        }));
        assert_eq!(r, Err((Status(500), 3)));
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn never_retries_client_errors() {
        let calls = Cell::new(0);
        let r: Result<(), _> = run(retry(FAST, || {
            calls.set(calls.get() + 1);
            async { Err(Status(400)) }
        }));
        assert_eq!(r, Err((Status(400), 1)));
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn stops_at_the_first_success() {
        let calls = Cell::new(0);
        let r = run(retry(FAST, || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { if n < 2 { Err(Status(503)) } else { Ok(n) } }
        }));
        assert_eq!(r, Ok(2));
    }

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

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy::DEFAULT;
        assert_eq!(p.backoff(1), Duration::from_millis(500));
        assert_eq!(p.backoff(2), Duration::from_secs(1));
        assert_eq!(p.backoff(10), Duration::from_secs(8));
    }
}
