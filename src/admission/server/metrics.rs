//! The server's counters, exported at `GET /metrics` in the Prometheus text format (0.0.4).
//!
//! Every label set is bounded: the verdict and the reason are stable codes, the group,
//! version, kind and operation come from the API server but only for objects the webhook's
//! rules send, and past [`MAX_LABEL_SETS`] distinct sets further ones are counted under
//! `kind="other"`, so a hostile client cannot grow the server's memory through labels.
//!
//! The object's type is three labels, `group` (empty for the core group), `version` and
//! `kind`, as kube-state-metrics labels objects (`kube_customresource_*`), so that a query
//! can select a kind without parsing a `group/version, Kind=...` string.

use super::keys::WatchStatus;
use crate::admission::{Decision, RequestKind, Reviewer};
use crate::verify::CacheStats;
use rustls::sign::CertifiedKey;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Distinct (verdict, group, version, kind, operation, reason) sets kept at most.
pub const MAX_LABEL_SETS: usize = 1000;

/// Upper bounds of the latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RequestLabels {
    verdict: String,
    group: String,
    version: String,
    kind: String,
    operation: String,
    reason: String,
}

/// Counters of one server.
#[derive(Debug)]
pub struct Metrics {
    requests: Mutex<BTreeMap<RequestLabels, u64>>,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
    in_flight: AtomicI64,
    connections: AtomicI64,
    connections_total: AtomicU64,
    handshake_failures: AtomicU64,
    /// Reviews by where they ran: [`ReviewPath::Inline`], [`ReviewPath::Pool`].
    reviews_inline: AtomicU64,
    reviews_pool: AtomicU64,
    reloads: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// The serving certificate's notAfter, in Unix seconds; `i64::MIN` until one is known.
    tls_not_after: AtomicI64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Mutex::default(),
            latency_buckets: Default::default(),
            latency_count: AtomicU64::default(),
            latency_sum_micros: AtomicU64::default(),
            in_flight: AtomicI64::default(),
            connections: AtomicI64::default(),
            connections_total: AtomicU64::default(),
            handshake_failures: AtomicU64::default(),
            reviews_inline: AtomicU64::default(),
            reviews_pool: AtomicU64::default(),
            reloads: Mutex::default(),
            tls_not_after: AtomicI64::new(i64::MIN),
        }
    }
}

/// Where a review ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReviewPath {
    /// On the request's async thread: it needed no signature check.
    Inline,
    /// On the blocking pool.
    Pool,
}

/// Decrements the in-flight gauge when the request ends, however it ends (a client that
/// disconnects drops the request's future).
#[derive(Debug)]
pub(super) struct InFlight(Arc<Metrics>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts an open connection until dropped.
#[derive(Debug)]
pub(super) struct OpenConnection(Arc<Metrics>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Metrics {
    pub(super) fn request_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    pub(super) fn connection_opened(self: &Arc<Self>) -> OpenConnection {
        self.connections.fetch_add(1, Ordering::SeqCst);
        self.connections_total.fetch_add(1, Ordering::Relaxed);
        OpenConnection(self.clone())
    }

    pub(super) fn handshake_failed(&self) {
        self.handshake_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests answered now being handled (`POST /validate` only).
    pub fn in_flight(&self) -> i64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// A review started on `path` (on the pool: counted even if its answer comes too late).
    pub(super) fn reviewed(&self, path: ReviewPath) {
        let counter = match path {
            ReviewPath::Inline => &self.reviews_inline,
            ReviewPath::Pool => &self.reviews_pool,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A decision the reviewer made.
    pub(super) fn decided(&self, decision: &Decision, latency: Duration) {
        self.count(
            decision.outcome.as_str(),
            &decision.request_kind,
            &decision.operation,
            decision.reason_code.as_deref().unwrap_or(""),
        );
        self.observe(latency);
    }

    /// A request that could not be answered, before or instead of a decision: refused by
    /// its uid (HTTP 200, `allowed: false`) or, without one, answered with an HTTP error.
    pub(super) fn failed(&self, reason: &str, latency: Duration) {
        self.count("error", &RequestKind::default(), "", reason);
        self.observe(latency);
    }

    fn count(&self, verdict: &str, kind: &RequestKind, operation: &str, reason: &str) {
        let mut labels = RequestLabels {
            verdict: verdict.into(),
            group: kind.group.clone(),
            version: kind.version.clone(),
            kind: kind.kind.clone(),
            operation: operation.into(),
            reason: reason.into(),
        };
        let mut map = lock(&self.requests);
        if !map.contains_key(&labels) && map.len() >= MAX_LABEL_SETS {
            labels.group = "other".into();
            labels.version = "other".into();
            labels.kind = "other".into();
            labels.operation = "other".into();
        }
        *map.entry(labels).or_insert(0) += 1;
    }

    fn observe(&self, latency: Duration) {
        let secs = latency.as_secs_f64();
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros.fetch_add(
            u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    pub(super) fn reloaded(&self, part: Part, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        *lock(&self.reloads)
            .entry((part.as_str(), result))
            .or_insert(0) += 1;
    }

    /// The serving certificate now in use (at start-up and after each successful reload):
    /// its [`certificate_not_after`].
    pub(super) fn serving_certificate(&self, not_after: Option<i64>) {
        self.tls_not_after
            .store(not_after.unwrap_or(i64::MIN), Ordering::SeqCst);
    }

    /// The exposition text.
    /// `failing`: whether the latest reload of the policies and of the TLS files failed.
    pub(super) fn render(
        &self,
        cache: CacheStats,
        reviews_running: usize,
        failing: (bool, bool),
        key_watches: &[WatchStatus],
    ) -> String {
        let mut out = String::new();
        family(
            &mut out,
            "mansign_admission_requests_total",
            "counter",
            "Admission requests answered, by verdict, group, version, kind, operation and reason code.",
        );
        for (l, n) in lock(&self.requests).iter() {
            let _ = writeln!(
                out,
                "mansign_admission_requests_total{{verdict=\"{}\",group=\"{}\",version=\"{}\",kind=\"{}\",operation=\"{}\",reason=\"{}\"}} {n}",
                escape(&l.verdict),
                escape(&l.group),
                escape(&l.version),
                escape(&l.kind),
                escape(&l.operation),
                escape(&l.reason)
            );
        }
        let name = family(
            &mut out,
            "mansign_admission_request_duration_seconds",
            "histogram",
            "Time from a request's arrival to its answer.",
        );
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {count}");
        let gauges: [(&str, &str, &str, String); 6] = [
            (
                "mansign_admission_requests_in_flight",
                "gauge",
                "Admission requests being handled.",
                self.in_flight.load(Ordering::SeqCst).to_string(),
            ),
            (
                "mansign_admission_reviews_running",
                "gauge",
                "Reviews holding or waiting for a slot of the blocking pool.",
                reviews_running.to_string(),
            ),
            (
                "mansign_connections_open",
                "gauge",
                "Open client connections.",
                self.connections.load(Ordering::SeqCst).to_string(),
            ),
            (
                "mansign_connections_total",
                "counter",
                "Client connections accepted.",
                self.connections_total.load(Ordering::Relaxed).to_string(),
            ),
            (
                "mansign_tls_handshake_failures_total",
                "counter",
                "TLS handshakes that failed or timed out.",
                self.handshake_failures.load(Ordering::Relaxed).to_string(),
            ),
            (
                "mansign_verification_cache_entries",
                "gauge",
                "Signature acceptances remembered by the current policies' verifiers.",
                cache.entries.to_string(),
            ),
        ];
        for (name, kind, help, value) in gauges {
            family(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        }
        let name = family(
            &mut out,
            "mansign_verification_cache_lookups_total",
            "counter",
            "Verifications by whether the cache decided them (hit: the signature checks were skipped; miss: they ran).",
        );
        let _ = writeln!(out, "{name}{{result=\"hit\"}} {}", cache.hits);
        let _ = writeln!(out, "{name}{{result=\"miss\"}} {}", cache.misses);
        let name = family(
            &mut out,
            "mansign_admission_reviews_total",
            "counter",
            "Reviews by where they ran (inline: on the request's thread, no signature check needed; pool: on the blocking pool).",
        );
        for (path, counter) in [
            ("inline", &self.reviews_inline),
            ("pool", &self.reviews_pool),
        ] {
            let _ = writeln!(
                out,
                "{name}{{path=\"{path}\"}} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        let name = family(
            &mut out,
            "mansign_config_reloads_total",
            "counter",
            "Reloads of the policies (and trust root) and of the TLS certificate, by result.",
        );
        let reloads = lock(&self.reloads).clone();
        for part in [Part::Policies, Part::Tls] {
            for result in ["ok", "failed"] {
                let n = reloads.get(&(part.as_str(), result)).copied().unwrap_or(0);
                let _ = writeln!(
                    out,
                    "{name}{{config=\"{}\",result=\"{result}\"}} {n}",
                    part.as_str()
                );
            }
        }
        let name = family(
            &mut out,
            "mansign_config_last_reload_failed",
            "gauge",
            "1 while the latest reload of a configuration failed (the last good one is in use).",
        );
        let _ = writeln!(out, "{name}{{config=\"policies\"}} {}", u8::from(failing.0));
        let _ = writeln!(out, "{name}{{config=\"tls\"}} {}", u8::from(failing.1));
        // A timestamp rather than "seconds left": it does not change between scrapes, and an
        // alert says `... - time() < 14 * 86400`, as for cert-manager's
        // certmanager_certificate_expiration_timestamp_seconds. No sample while unknown.
        let name = family(
            &mut out,
            "mansign_tls_certificate_not_after_timestamp_seconds",
            "gauge",
            "notAfter of the serving certificate in use (end entity), in Unix seconds.",
        );
        let not_after = self.tls_not_after.load(Ordering::SeqCst);
        if not_after != i64::MIN {
            let _ = writeln!(out, "{name} {not_after}");
        }
        let name = family(
            &mut out,
            "mansign_key_watches",
            "gauge",
            "Secrets and ConfigMaps the policies read keys from, by the state of their watch (stale: the value was dropped, the API server did not confirm it in time).",
        );
        for state in ["current", "absent", "stale", "unreadable", "pending"] {
            let n = key_watches.iter().filter(|w| w.state == state).count();
            let _ = writeln!(out, "{name}{{state=\"{state}\"}} {n}");
        }
        let name = family(
            &mut out,
            "mansign_key_watch_oldest_confirmation_seconds",
            "gauge",
            "Seconds since the API server last confirmed the least recently confirmed watched key object (no sample without one).",
        );
        let oldest = key_watches
            .iter()
            .filter_map(|w| w.confirmed_seconds_ago)
            .fold(None::<f64>, |max, s| Some(max.map_or(s, |m| m.max(s))));
        if let Some(oldest) = oldest {
            let _ = writeln!(out, "{name} {oldest}");
        }
        out
    }
}

/// The end-entity certificate's notAfter in Unix seconds (`None` when it does not parse:
/// rustls already accepted the chain, so that is not expected).
pub(super) fn certificate_not_after(key: &CertifiedKey) -> Option<i64> {
    use x509_cert::der::Decode as _;
    let der = key.end_entity_cert().ok()?;
    let cert = x509_cert::Certificate::from_der(der.as_ref()).ok()?;
    let secs = cert
        .tbs_certificate
        .validity
        .not_after
        .to_unix_duration()
        .as_secs();
    i64::try_from(secs).ok()
}

/// Writes the HELP and TYPE lines of a metric family; returns its name.
fn family(out: &mut String, name: &str, kind: &str, help: &str) -> String {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    name.to_string()
}

/// A label value as the text format wants it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Which part of the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Policies,
    Tls,
}

impl Part {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Part::Policies => "policies",
            Part::Tls => "tls",
        }
    }
}

/// Verification cache counts over the distinct caches of a reviewer's rules (clones of a
/// verifier share one cache).
pub(super) fn cache_stats(reviewer: &Reviewer) -> CacheStats {
    let mut seen = HashSet::new();
    let mut total = CacheStats::default();
    for rule in &reviewer.policies().rules {
        let cache = rule.verifier.cache();
        if seen.insert(Arc::as_ptr(cache)) {
            let s = cache.stats();
            total.hits += s.hits;
            total.misses += s.misses;
            total.entries += s.entries;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_type_is_three_labels_as_kube_state_metrics_writes_them() {
        let m = Metrics::default();
        let kind = RequestKind {
            group: "kyverno.io".into(),
            version: "v2".into(),
            kind: "PolicyException".into(),
        };
        m.count("denied", &kind, "CREATE", "modified");
        let text = m.render(CacheStats::default(), 0, (false, false), &[]);
        assert!(
            text.contains(
                "mansign_admission_requests_total{verdict=\"denied\",group=\"kyverno.io\",\
                 version=\"v2\",kind=\"PolicyException\",operation=\"CREATE\",\
                 reason=\"modified\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("Kind="), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn label_sets_are_bounded() {
        let m = Metrics::default();
        for i in 0..MAX_LABEL_SETS + 50 {
            let kind = RequestKind {
                group: "example.com".into(),
                version: "v1".into(),
                kind: format!("Kind{i}"),
            };
            m.count("denied", &kind, "CREATE", "modified");
        }
        let map = lock(&m.requests);
        assert_eq!(map.len(), MAX_LABEL_SETS + 1);
        let other = RequestLabels {
            verdict: "denied".into(),
            group: "other".into(),
            version: "other".into(),
            kind: "other".into(),
            operation: "other".into(),
            reason: "modified".into(),
        };
        assert_eq!(map.get(&other), Some(&50));
    }

    #[test]
    fn the_histogram_is_cumulative() {
        let m = Metrics::default();
        m.observe(Duration::from_micros(300));
        m.observe(Duration::from_millis(3));
        m.observe(Duration::from_secs(60));
        let text = m.render(CacheStats::default(), 0, (false, true), &[]);
        assert!(text.contains("_bucket{le=\"0.0005\"} 1\n"), "{text}");
        assert!(text.contains("_bucket{le=\"0.005\"} 2\n"), "{text}");
        assert!(text.contains("_bucket{le=\"10\"} 2\n"), "{text}");
        assert!(text.contains("_bucket{le=\"+Inf\"} 3\n"), "{text}");
        assert!(text.contains("_count 3\n"), "{text}");
        assert!(text.contains("mansign_config_last_reload_failed{config=\"tls\"} 1\n"));
    }
}
