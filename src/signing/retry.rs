//! Retrying requests to remote services: which failures are retried and how long to wait.
//!
//! Fulcio, Rekor and the CI token endpoints fail transiently (deploys, load shedding, flaky
//! networks), and public-good Fulcio and Rekor answer `429 Too Many Requests` under load. A
//! request is retried only when a second try can succeed:
//!
//! * `429` and every `5xx` answer, a timeout or a connection error: retried;
//! * every other `4xx`: never. The request itself is wrong (bad token, malformed entry);
//!   retrying would only hide the real error and hammer the service.
//!
//! How long to wait before the next attempt:
//!
//! * **Backoff with jitter** (the `backon` crate's exponential backoff): the wait before
//!   retry *n* is drawn uniformly between `d` and `2d`, where `d` is
//!   [`RetryPolicy::initial_backoff`] doubled *n − 1* times and capped at
//!   [`RetryPolicy::max_backoff`]. Parallel Rekor uploads that failed together therefore
//!   do not come back together.
//! * **`Retry-After`** (RFC 9110 §10.2.3; delay-seconds or an HTTP-date in any of its
//!   three forms): the wait is the server's delay *plus* the jittered backoff, so a retry
//!   never comes earlier than asked, and many clients told the same delay still spread out.
//! * **Cap**: a `Retry-After` longer than [`MAX_RETRY_AFTER`] (60 s) ends the retries at
//!   once, with the error and the delay the server asked for. A hostile or confused server
//!   cannot park a signing run for hours (Fulcio certificates live ten minutes), and
//!   retrying earlier than asked would only earn another 429.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use backon::{ExponentialBuilder, Retryable as _, Sleeper};

/// The longest `Retry-After` mansign waits out; a longer one ends the retries.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, the first one included. Default 3.
    pub attempts: u32,
    /// Base of the wait before the second attempt (the wait is drawn between the base and
    /// twice the base); doubled before each further one. Default 500 ms.
    pub initial_backoff: Duration,
    /// Upper bound of the base of one wait (so one wait is at most twice this). Default 8 s.
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

    /// The backoff of one retried request: jittered, with a fresh random source each time
    /// (or a fixed seed, for tests).
    fn backoff(&self, seed: Option<u64>) -> ExponentialBuilder {
        let retries = self.attempts.max(1) - 1;
        let builder = ExponentialBuilder::new()
            .with_jitter()
            .with_factor(2.0)
            .with_min_delay(self.initial_backoff)
            .with_max_delay(self.max_backoff.max(self.initial_backoff))
            .with_max_times(retries as usize);
        match seed {
            Some(seed) => builder.with_jitter_seed(seed),
            None => builder,
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a failed attempt says about trying again.
pub(crate) trait Transient {
    /// Whether a second try can succeed (see the module docs).
    fn is_transient(&self) -> bool;
    /// The server's `Retry-After`, when the answer had one.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

/// Whether an HTTP status is worth retrying: 429 and server errors.
pub(crate) fn status_is_transient(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// How a retried request ended without success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Attempts made, the first one included.
    pub made: u32,
    /// Set when the retries ended because the server asked to wait longer than
    /// [`MAX_RETRY_AFTER`]: the delay it asked for.
    pub refused_wait: Option<Duration>,
}

impl std::fmt::Display for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} attempt(s)", self.made)?;
        if let Some(wait) = self.refused_wait {
            write!(
                f,
                " (the server asked to retry after {} s; mansign waits at most {} s)",
                wait.as_secs(),
                MAX_RETRY_AFTER.as_secs()
            )?;
        }
        Ok(())
    }
}

/// Runs `attempt` until it succeeds, fails with a permanent error, the policy's attempts
/// are used up, or the server asks for a wait above [`MAX_RETRY_AFTER`]. On failure returns
/// the last error and how the attempts went.
pub(crate) async fn retry<T, E, F, Fut>(policy: RetryPolicy, attempt: F) -> Result<T, (E, Attempts)>
where
    E: Transient,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    retry_with(policy, None, backon::TokioSleeper, attempt).await
}

/// [`retry`] with an injected random seed and sleeper (tests record the waits instead of
/// sleeping).
pub(crate) async fn retry_with<T, E, F, Fut, S>(
    policy: RetryPolicy,
    seed: Option<u64>,
    sleeper: S,
    mut attempt: F,
) -> Result<T, (E, Attempts)>
where
    E: Transient,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: Sleeper,
{
    // Shared with the closures below; atomics so the future stays `Send` (uploads run on
    // a multi-threaded runtime).
    let made = AtomicU32::new(0);
    let refused_wait = Mutex::new(None);
    let result = (|| {
        made.fetch_add(1, Ordering::Relaxed);
        attempt()
    })
    .retry(policy.backoff(seed))
    .sleep(sleeper)
    .when(|e: &E| e.is_transient())
    .adjust(|e: &E, backoff: Option<Duration>| {
        // `None` from the backoff: the attempts are used up.
        let backoff = backoff?;
        match e.retry_after() {
            None => Some(backoff),
            Some(asked) if asked > MAX_RETRY_AFTER => {
                if let Ok(mut refused) = refused_wait.lock() {
                    *refused = Some(asked);
                }
                None
            }
            Some(asked) => Some(asked.saturating_add(backoff)),
        }
    })
    .await;
    result.map_err(|e| {
        (
            e,
            Attempts {
                made: made.load(Ordering::Relaxed),
                refused_wait: refused_wait.lock().ok().and_then(|r| *r),
            },
        )
    })
}

/// The `Retry-After` of an answer, as a delay from `now`: delay-seconds, or an HTTP-date
/// (IMF-fixdate, RFC 850 or asctime, all three of which RFC 9110 §5.6.7 requires a
/// recipient to accept). A date in the past is a zero delay; anything unreadable is
/// ignored (the backoff applies).
pub(crate) fn retry_after(
    headers: &reqwest::header::HeaderMap,
    now: SystemTime,
) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, now)
}

fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Saturate absurd numbers: they are above the cap either way.
        return Some(Duration::from_secs(
            value.parse::<u64>().unwrap_or(u64::MAX),
        ));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use backon::BackoffBuilder as _;
    use std::cell::Cell;
    use std::sync::Arc;

    #[derive(Debug, PartialEq)]
    struct Answer {
        status: u16,
        retry_after: Option<Duration>,
    }

    fn status(status: u16) -> Answer {
        Answer {
            status,
            retry_after: None,
        }
    }

    fn too_many(secs: u64) -> Answer {
        Answer {
            status: 429,
            retry_after: Some(Duration::from_secs(secs)),
        }
    }

    impl Transient for Answer {
        fn is_transient(&self) -> bool {
            status_is_transient(self.status)
        }
        fn retry_after(&self) -> Option<Duration> {
            self.retry_after
        }
    }

    /// Runs `answers` (one per attempt, then successes) through the retry loop with a
    /// sleeper that records each wait instead of sleeping.
    fn run(
        policy: RetryPolicy,
        answers: Vec<Answer>,
    ) -> (Result<u32, (Answer, Attempts)>, Vec<Duration>) {
        let waits = Arc::new(Mutex::new(Vec::new()));
        let sleeper = {
            let waits = waits.clone();
            move |d: Duration| {
                waits.lock().unwrap().push(d);
                std::future::ready(())
            }
        };
        let answers = Mutex::new(answers.into_iter());
        let calls = Cell::new(0);
        let result = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(retry_with(policy, Some(7), sleeper, || {
                calls.set(calls.get() + 1);
                let next = answers.lock().unwrap().next();
                let n = calls.get();
                async move { next.map_or(Ok(n), Err) }
            }));
        let waits = waits.lock().unwrap().clone();
        (result, waits)
    }

    #[test]
    fn retries_server_errors_up_to_the_attempt_limit() {
        let (r, waits) = run(
            RetryPolicy::DEFAULT,
            vec![status(500), status(502), status(503)],
        );
        let (e, attempts) = r.unwrap_err();
        assert_eq!(e, status(503));
        assert_eq!(attempts.made, 3);
        assert_eq!(waits.len(), 2);
    }

    #[test]
    fn stops_at_the_first_success() {
        let (r, waits) = run(RetryPolicy::DEFAULT, vec![status(503)]);
        assert_eq!(r.unwrap(), 2);
        assert_eq!(waits.len(), 1);
    }

    #[test]
    fn retries_too_many_requests() {
        let (r, _) = run(RetryPolicy::DEFAULT, vec![status(429), status(429)]);
        assert_eq!(r.unwrap(), 3);
    }

    #[test]
    fn never_retries_a_client_error_other_than_429() {
        for s in [400, 401, 403, 404, 409, 413, 422] {
            let (r, waits) = run(RetryPolicy::DEFAULT, vec![status(s)]);
            let (e, attempts) = r.unwrap_err();
            assert_eq!((e.status, attempts.made), (s, 1), "HTTP {s}");
            assert!(waits.is_empty(), "HTTP {s}");
        }
    }

    #[test]
    fn waits_at_least_the_retry_after_delay() {
        let (r, waits) = run(RetryPolicy::DEFAULT, vec![too_many(7), too_many(2)]);
        assert_eq!(r.unwrap(), 3);
        assert_eq!(waits.len(), 2);
        // The server's delay plus the jittered backoff of that retry.
        assert!(
            waits[0] >= Duration::from_secs(7) && waits[0] < Duration::from_secs(8),
            "{waits:?}"
        );
        assert!(
            waits[1] >= Duration::from_secs(3) && waits[1] < Duration::from_secs(4),
            "{waits:?}"
        );
    }

    #[test]
    fn a_retry_after_above_the_cap_ends_the_retries() {
        let (r, waits) = run(RetryPolicy::DEFAULT, vec![too_many(3600)]);
        let (e, attempts) = r.unwrap_err();
        assert_eq!(e, too_many(3600));
        assert_eq!(
            attempts,
            Attempts {
                made: 1,
                refused_wait: Some(Duration::from_secs(3600))
            }
        );
        assert!(waits.is_empty(), "no wait at all: {waits:?}");
        assert!(
            attempts
                .to_string()
                .contains("retry after 3600 s; mansign waits at most 60 s"),
            "{attempts}"
        );
        // At the cap itself, the wait is honoured.
        let (r, waits) = run(RetryPolicy::DEFAULT, vec![too_many(60)]);
        assert_eq!(r.unwrap(), 2);
        assert!(waits[0] >= MAX_RETRY_AFTER, "{waits:?}");
    }

    #[test]
    fn jitter_stays_within_its_bounds() {
        let policy = RetryPolicy {
            attempts: 8,
            ..RetryPolicy::DEFAULT
        };
        let mut first_waits = std::collections::BTreeSet::new();
        for seed in 0..2000u64 {
            let waits: Vec<Duration> = policy.backoff(Some(seed)).build().collect();
            assert_eq!(waits.len(), 7, "one wait per retry");
            for (n, wait) in waits.iter().enumerate() {
                // Base: 500 ms doubled per retry, capped at 8 s; the wait is between base and 2 base.
                let base =
                    (Duration::from_millis(500) * 2u32.pow(n as u32)).min(policy.max_backoff);
                assert!(
                    *wait >= base && *wait <= base * 2,
                    "seed {seed}, retry {}: {wait:?} not in [{base:?}, {:?}]",
                    n + 1,
                    base * 2
                );
            }
            first_waits.insert(waits[0].as_millis());
        }
        // Spread, not lockstep: 2000 draws over a 500 ms window hit many distinct values.
        assert!(first_waits.len() > 300, "{}", first_waits.len());
    }

    #[test]
    fn one_attempt_means_no_retry() {
        let (r, waits) = run(RetryPolicy::NONE, vec![status(503)]);
        assert_eq!(r.unwrap_err().1.made, 1);
        assert!(waits.is_empty());
    }

    #[test]
    fn reads_retry_after_in_seconds_and_as_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        for date in [
            "Sun, 06 Nov 1994 08:51:37 GMT",  // IMF-fixdate
            "Sunday, 06-Nov-94 08:51:37 GMT", // obsolete RFC 850
            "Sun Nov  6 08:51:37 1994",       // obsolete asctime
        ] {
            assert_eq!(
                parse_retry_after(date, now),
                Some(Duration::from_secs(120)),
                "{date}"
            );
        }
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX)),
            "absurd numbers saturate (and are above the cap)"
        );
        for junk in ["", "-1", "1.5", "soon", "120 s"] {
            assert_eq!(parse_retry_after(junk, now), None, "{junk:?}");
        }
    }
}
