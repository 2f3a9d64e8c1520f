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
//!
//! Each failed attempt that is retried is told to the caller's [`RetryObserver`] as a
//! [`RetryEvent`] (which service, which attempt, how long it took, why it failed, the wait):
//! three attempts that time out at 30 s are a minute and a half, and a person should see
//! them go by. The library never prints; the CLI's observer does.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

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
    /// Why the attempt failed, in a few words (`timed out`, `HTTP 503`), for a
    /// [`RetryEvent`].
    fn reason(&self) -> String;
}

/// The service a retried request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RemoteService {
    /// Fulcio's certificate request.
    Fulcio,
    /// A Rekor upload.
    Rekor,
    /// The GitHub Actions identity token endpoint (the OIDC token fetch).
    GitHubActionsToken,
}

impl std::fmt::Display for RemoteService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RemoteService::Fulcio => "fulcio",
            RemoteService::Rekor => "rekor",
            RemoteService::GitHubActionsToken => "github actions token",
        })
    }
}

/// One failed attempt of a request that is about to be tried again.
///
/// Its `Display` is the line a person reads:
/// `fulcio: attempt 1 of 3 failed after 30.0 s (timed out); retrying in 1.0 s`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryEvent {
    pub service: RemoteService,
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// Attempts the policy allows, the first one included.
    pub attempts: u32,
    /// How long the failed attempt took.
    pub elapsed: Duration,
    /// Why it failed (`timed out`, `HTTP 503`, `connection refused`).
    pub reason: String,
    /// The wait before the next attempt (backoff, plus any `Retry-After`).
    pub wait: Duration,
}

impl std::fmt::Display for RetryEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: attempt {} of {} failed after {:.1} s ({}); retrying in {:.1} s",
            self.service,
            self.attempt,
            self.attempts,
            self.elapsed.as_secs_f64(),
            self.reason,
            self.wait.as_secs_f64()
        )
    }
}

/// Who is told of each retry ([`RetryEvent`]); by default nobody. Called from the task
/// that made the request (Rekor uploads run concurrently: it must be `Send + Sync`).
#[derive(Clone, Default)]
pub struct RetryObserver(Option<Arc<OnRetry>>);

/// What a [`RetryObserver`] calls.
type OnRetry = dyn Fn(&RetryEvent) + Send + Sync;

impl RetryObserver {
    /// An observer that calls `on_retry` with each event.
    pub fn new(on_retry: impl Fn(&RetryEvent) + Send + Sync + 'static) -> Self {
        RetryObserver(Some(Arc::new(on_retry)))
    }

    fn notify(&self, event: &RetryEvent) {
        if let Some(on_retry) = &self.0 {
            on_retry(event);
        }
    }
}

impl std::fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "RetryObserver(..)"
        } else {
            "RetryObserver(none)"
        })
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

/// Where a retried request goes and who hears of its retries.
#[derive(Debug, Clone)]
pub(crate) struct Retrying<'a> {
    pub policy: RetryPolicy,
    pub service: RemoteService,
    pub observer: &'a RetryObserver,
}

/// Runs `attempt` until it succeeds, fails with a permanent error, the policy's attempts
/// are used up, or the server asks for a wait above [`MAX_RETRY_AFTER`]; each retry is told
/// to the observer first. On failure returns the last error and how the attempts went.
pub(crate) async fn retry<T, E, F, Fut>(how: Retrying<'_>, attempt: F) -> Result<T, (E, Attempts)>
where
    E: Transient,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    retry_with(how, None, backon::TokioSleeper, attempt).await
}

/// [`retry`] with an injected random seed and sleeper (tests record the waits instead of
/// sleeping).
pub(crate) async fn retry_with<T, E, F, Fut, S>(
    how: Retrying<'_>,
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
    let policy = how.policy;
    // Shared with the closures below; atomics and locks so the future stays `Send`
    // (uploads run on a multi-threaded runtime).
    let made = AtomicU32::new(0);
    let refused_wait = Mutex::new(None);
    let started = Mutex::new(Instant::now());
    let result = (|| {
        made.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut started) = started.lock() {
            *started = Instant::now();
        }
        attempt()
    })
    .retry(policy.backoff(seed))
    .sleep(sleeper)
    .when(|e: &E| e.is_transient())
    .adjust(|e: &E, backoff: Option<Duration>| {
        // `None` from the backoff: the attempts are used up.
        let backoff = backoff?;
        let wait = match e.retry_after() {
            None => backoff,
            Some(asked) if asked > MAX_RETRY_AFTER => {
                if let Ok(mut refused) = refused_wait.lock() {
                    *refused = Some(asked);
                }
                return None;
            }
            Some(asked) => asked.saturating_add(backoff),
        };
        how.observer.notify(&RetryEvent {
            service: how.service,
            attempt: made.load(Ordering::Relaxed),
            attempts: policy.attempts.max(1),
            elapsed: started.lock().map(|s| s.elapsed()).unwrap_or_default(),
            reason: e.reason(),
            wait,
        });
        Some(wait)
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
        fn reason(&self) -> String {
            format!("HTTP {}", self.status)
        }
    }

    /// Runs `answers` (one per attempt, then successes) through the retry loop with a
    /// sleeper that records each wait instead of sleeping.
    fn run(
        policy: RetryPolicy,
        answers: Vec<Answer>,
    ) -> (Result<u32, (Answer, Attempts)>, Vec<Duration>) {
        let (result, waits, _) = run_observed(policy, answers);
        (result, waits)
    }

    /// The outcome, the waits slept and the events told.
    type Observed = (
        Result<u32, (Answer, Attempts)>,
        Vec<Duration>,
        Vec<RetryEvent>,
    );

    /// [`run`], and the events the observer was told.
    fn run_observed(policy: RetryPolicy, answers: Vec<Answer>) -> Observed {
        let events = Arc::new(Mutex::new(Vec::new()));
        let observer = {
            let events = events.clone();
            RetryObserver::new(move |e| events.lock().unwrap().push(e.clone()))
        };
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
            .block_on(retry_with(
                Retrying {
                    policy,
                    service: RemoteService::Fulcio,
                    observer: &observer,
                },
                Some(7),
                sleeper,
                || {
                    calls.set(calls.get() + 1);
                    let next = answers.lock().unwrap().next();
                    let n = calls.get();
                    async move { next.map_or(Ok(n), Err) }
                },
            ));
        let waits = waits.lock().unwrap().clone();
        let events = events.lock().unwrap().clone();
        (result, waits, events)
    }

    // Issue 39 item 11: every retry is told, with its attempt, reason and wait; the last
    // failure (no retry follows) and a permanent one are not.
    #[test]
    fn every_retry_is_told_to_the_observer_with_its_attempt_reason_and_wait() {
        let (r, waits, events) = run_observed(
            RetryPolicy::DEFAULT,
            vec![status(503), too_many(2), status(500)],
        );
        assert_eq!(r.unwrap_err().1.made, 3);
        assert_eq!(events.len(), 2, "{events:?}");
        for (n, (event, wait)) in events.iter().zip(&waits).enumerate() {
            assert_eq!(
                (event.service, event.attempt, event.attempts),
                (RemoteService::Fulcio, n as u32 + 1, 3)
            );
            assert_eq!(event.wait, *wait, "the wait told is the wait slept");
        }
        assert_eq!(events[0].reason, "HTTP 503");
        assert!(
            events[1].wait >= Duration::from_secs(2),
            "Retry-After counted"
        );
        let line = events[0].to_string();
        assert!(
            line.starts_with("fulcio: attempt 1 of 3 failed after ")
                && line.contains(" s (HTTP 503); retrying in "),
            "{line}"
        );
        let (_, _, events) = run_observed(RetryPolicy::DEFAULT, vec![status(400)]);
        assert!(
            events.is_empty(),
            "a permanent error is not retried: {events:?}"
        );
        let (_, _, events) = run_observed(RetryPolicy::DEFAULT, vec![too_many(3600)]);
        assert!(
            events.is_empty(),
            "a refused wait is not retried: {events:?}"
        );
    }

    #[test]
    fn a_retry_event_reads_as_one_line_with_tenths_of_seconds() {
        let event = RetryEvent {
            service: RemoteService::Rekor,
            attempt: 2,
            attempts: 3,
            elapsed: Duration::from_millis(30_012),
            reason: "timed out".into(),
            wait: Duration::from_millis(1_460),
        };
        assert_eq!(
            event.to_string(),
            "rekor: attempt 2 of 3 failed after 30.0 s (timed out); retrying in 1.5 s"
        );
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
