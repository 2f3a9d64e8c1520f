//! The HTTPS validating admission webhook: a thin shell around [`Reviewer::review`](crate::admission::Reviewer::review).
//!
//! What the server guarantees, in the order a request meets it:
//!
//! 1. **Connections** ([`serve`]): HTTPS only (rustls, aws-lc-rs), HTTP/1.1 and HTTP/2 by
//!    ALPN; at most [`ServeOptions::max_connections`] at once (further ones wait in the
//!    kernel's backlog); the TLS handshake, an HTTP/1 request head and a connection with no
//!    request in flight are each bounded in time, so a slow client (slowloris) only holds
//!    one connection slot for a bounded time.
//! 2. **Requests** ([`routes`]): `POST /validate` takes `application/json` only (415), at most
//!    [`ServeOptions::max_body_bytes`] (413) read within [`ServeOptions::body_timeout`]
//!    (408); the review runs on a bounded blocking pool
//!    ([`BlockingVerifications`](crate::verify::BlockingVerifications)) and must finish within
//!    [`ServeOptions::deadline`] of the request's arrival. A request that cannot be answered
//!    in time gets HTTP 503, never an "allowed": the API server then applies the webhook's
//!    `failurePolicy`. A verification failure is an HTTP 200 *deny*, whatever that policy.
//!    A body that is no `AdmissionReview` gets HTTP 400 with the reviewer's message.
//!    `POST /kyverno/v1/verify` (Kyverno's CEL `http` library) is answered by the same review
//!    under the same bounds, always as HTTP 200 JSON (`verify_call`).
//!    `GET /healthz`, `GET /readyz`, `GET /metrics` (Prometheus text format, [`metrics`]).
//! 3. **Reloads** ([`reload`]): the policy files, the trust root and the TLS certificate and
//!    key are polled (content digests) every [`ServeOptions::reload_interval`]; a change is
//!    loaded off the async threads and swapped in atomically. New requests use the new
//!    policies and new handshakes the new certificate; open connections are not touched. A
//!    failed reload keeps the last good configuration and is reported by `/readyz` and
//!    `/metrics`.
//! 4. **Shutdown**: on the shutdown signal the listener closes, `/readyz` answers 503,
//!    HTTP/2 connections get a graceful GOAWAY, HTTP/1 connections close after their
//!    current response, and in-flight requests are answered within
//!    [`ServeOptions::shutdown_grace`].
//!
//! Every decision is logged as one line on stdout ([`Decision::log_json`] plus `latency_ms`).

pub mod keys;
mod listener;
pub mod metrics;
pub mod reload;
pub mod routes;
mod tls;
mod verify_call;

pub use listener::{run, serve};
pub use reload::{ReloadStatus, ReviewerLoadError, ReviewerSource};

use super::Decision;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Everything the server is told on its command line, with production defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Where to listen (port 0: any free port; the bound address is logged).
    pub listen: SocketAddr,
    /// TLS certificate chain (PEM, leaf first).
    pub tls_cert: PathBuf,
    /// TLS private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub tls_key: PathBuf,
    /// Time from a request's arrival to its answer; keep it below the webhook's
    /// `timeoutSeconds` so the server, not the API server, says what happened.
    pub deadline: Duration,
    /// Time to receive a request body.
    pub body_timeout: Duration,
    /// Time to receive an HTTP/1 request head.
    pub header_timeout: Duration,
    /// Time to complete a TLS handshake.
    pub handshake_timeout: Duration,
    /// A connection with no request in flight for this long is closed (HTTP/2 included:
    /// this is what bounds a client that opens a stream and never finishes its headers).
    pub idle_timeout: Duration,
    /// Open connections at most.
    pub max_connections: usize,
    /// HTTP/2 streams at most per connection.
    pub max_streams_per_connection: u32,
    /// Reviews running at once (each is CPU work: one per core is right).
    pub max_concurrent_reviews: usize,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Time given to in-flight requests after the shutdown signal.
    pub shutdown_grace: Duration,
    /// How often the watched files are checked for changes.
    pub reload_interval: Duration,
    pub log_format: LogFormat,
}

crate::setters::setters! {
    /// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
    /// so it is built from [`ServeOptions::new`] and these, never as a literal.
    ServeOptions {
        /// Sets `listen`.
        with_listen => listen: SocketAddr,
        /// Sets `tls_cert`.
        with_tls_cert => tls_cert: PathBuf,
        /// Sets `tls_key`.
        with_tls_key => tls_key: PathBuf,
        /// Sets `deadline`.
        with_deadline => deadline: Duration,
        /// Sets `body_timeout`.
        with_body_timeout => body_timeout: Duration,
        /// Sets `header_timeout`.
        with_header_timeout => header_timeout: Duration,
        /// Sets `handshake_timeout`.
        with_handshake_timeout => handshake_timeout: Duration,
        /// Sets `idle_timeout`.
        with_idle_timeout => idle_timeout: Duration,
        /// Sets `max_connections`.
        with_max_connections => max_connections: usize,
        /// Sets `max_streams_per_connection`.
        with_max_streams_per_connection => max_streams_per_connection: u32,
        /// Sets `max_concurrent_reviews`.
        with_max_concurrent_reviews => max_concurrent_reviews: usize,
        /// Sets `max_body_bytes`.
        with_max_body_bytes => max_body_bytes: usize,
        /// Sets `shutdown_grace`.
        with_shutdown_grace => shutdown_grace: Duration,
        /// Sets `reload_interval`.
        with_reload_interval => reload_interval: Duration,
        /// Sets `log_format`.
        with_log_format => log_format: LogFormat,
    }
}

impl ServeOptions {
    /// The defaults for a webhook registered with `timeoutSeconds: 10`.
    pub fn new(listen: SocketAddr, tls_cert: PathBuf, tls_key: PathBuf) -> Self {
        ServeOptions {
            listen,
            tls_cert,
            tls_key,
            deadline: Duration::from_secs(8),
            body_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(90),
            max_connections: 1024,
            max_streams_per_connection: 256,
            max_concurrent_reviews: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_body_bytes: super::review::DEFAULT_MAX_BODY_BYTES,
            shutdown_grace: Duration::from_secs(20),
            reload_interval: Duration::from_secs(10),
            log_format: LogFormat::Json,
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// One JSON object per line (decisions on stdout, server events on stderr).
    Json,
    /// `key=value` pairs, for a person reading a terminal.
    Text,
}

/// Why the server could not start (once started it only stops on the shutdown signal).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("cannot listen on {address}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("policies: {0}")]
    Policies(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// Writes one log line: a decision (stdout) or a server event (stderr).
pub(crate) fn log_line(format: LogFormat, to_stderr: bool, value: &serde_json::Value) {
    use std::io::Write as _;
    let line = match format {
        LogFormat::Json => value.to_string(),
        LogFormat::Text => text_line(value),
    };
    // A closed stdout/stderr (the log collector went away) must not stop the webhook.
    if to_stderr {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    } else {
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

fn text_line(value: &serde_json::Value) -> String {
    let Some(map) = value.as_object() else {
        return value.to_string();
    };
    let mut out = String::new();
    for (k, v) in map {
        if v.is_null() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let text = match v {
            serde_json::Value::String(s) if !s.contains([' ', '"', '=']) && !s.is_empty() => {
                s.clone()
            }
            other => other.to_string(),
        };
        out.push_str(k);
        out.push('=');
        out.push_str(&text);
    }
    out
}

/// The log line of a decision: [`Decision::log_json`] with the time and the latency.
pub(crate) fn decision_line(decision: &Decision, latency: Duration) -> serde_json::Value {
    let mut value = decision.log_json();
    if let Some(map) = value.as_object_mut() {
        map.insert("ts".into(), now_rfc3339().into());
        map.insert(
            "latency_ms".into(),
            serde_json::json!((latency.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0),
        );
    }
    value
}

pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now().to_string()
}
