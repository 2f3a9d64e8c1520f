//! The live configuration and its reloads: policies and trust root (one reviewer) and the
//! TLS certificate, each swapped in whole when its files change and load cleanly. The
//! reviewer's files are the policy files, `--trusted-root`, and every file the loaded
//! policies name ([`PolicySet::named_files`](crate::policy::PolicySet::named_files): key
//! files, `keyless.trustedRoot`, certificate files), so rotating a key or a trust root a
//! policy points to takes effect like an edit of the policy itself.
//!
//! Changes are found by polling a SHA-256 digest of each watched file's content: it works on
//! every file system, and a Kubernetes ConfigMap or Secret volume (files behind a `..data`
//! symlink that the kubelet swaps atomically) is read through the new link at once. A file
//! that is missing or does not load leaves the last good configuration in place; the error is
//! kept for `/readyz` and counted in `/metrics`, and the next change is tried again. After a
//! failed reload of the reviewer the load is retried at every poll (a repeat of the same
//! error is not counted again): a policy edit may name a file that appears only later,
//! which no watched file's change would announce. The Secrets and ConfigMaps the policies
//! read keys from are watched through the API server ([`super::keys`]); a change there
//! wakes the reload at once.

use super::metrics::{Metrics, Part, cache_stats, certificate_not_after};
use super::tls::{LiveTls, MAX_PEM_BYTES, certified_key};
use super::{LogFormat, log_line, now_rfc3339};
use crate::admission::Reviewer;
use crate::verify::CacheStats;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Largest policy or trust root file digested for change detection.
const MAX_WATCHED_BYTES: u64 = 64 * 1024 * 1024;

/// Why [`ReviewerSource::load`] could not build the reviewer: the caller's own error, shown
/// with its causes ([`crate::error::chain`]) in `/readyz` and the log.
pub type ReviewerLoadError = Box<dyn std::error::Error + Send + Sync>;

/// Where the reviewer comes from: the files to watch and how to build it from them.
#[derive(Clone)]
pub struct ReviewerSource {
    /// Files whose change triggers a reload (policy files, the trust root). The files the
    /// loaded policies name are watched too, without being listed here.
    pub files: Vec<PathBuf>,
    /// Builds the reviewer from the files; called at start and after every change. The
    /// error is shown with its causes in `/readyz` and the log.
    #[allow(clippy::type_complexity)]
    pub load: Arc<dyn Fn() -> Result<Reviewer, ReviewerLoadError> + Send + Sync>,
    /// Woken when something `load` reads that is not a file changed (the Secrets and
    /// ConfigMaps the policies name, [`KeyWatcher`](super::keys::KeyWatcher)): the
    /// reviewer is then loaded again at once, without waiting for the next poll.
    pub changed: Arc<tokio::sync::Notify>,
    /// The watches of those Secrets and ConfigMaps, when `load` reads any: `/readyz` and
    /// `/metrics` show whether each value is current ([`KeyWatcher::status`](super::keys::KeyWatcher::status)).
    pub key_watcher: Option<Arc<super::keys::KeyWatcher>>,
}

impl std::fmt::Debug for ReviewerSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReviewerSource")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// What `/readyz` says about one part of the configuration.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReloadStatus {
    /// When the configuration in use was loaded (RFC 3339).
    pub loaded_at: String,
    pub reloads_ok: u64,
    pub reloads_failed: u64,
    /// Why the latest reload failed, while no later one succeeded (the last good
    /// configuration is still in use).
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
}

/// The configuration requests are answered with.
pub(super) struct Live {
    reviewer: RwLock<Arc<Reviewer>>,
    pub(super) tls_config: LiveTls,
    policies: Mutex<ReloadStatus>,
    tls: Mutex<ReloadStatus>,
    /// Cache counts of reviewers that were replaced, so the exported counters never go down.
    retired_cache: Mutex<CacheStats>,
    draining: AtomicBool,
    pub(super) watched: Vec<PathBuf>,
    pub(super) tls_files: (PathBuf, PathBuf),
    pub(super) key_watcher: Option<Arc<super::keys::KeyWatcher>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every update below is a single assignment: a poisoned lock holds a complete value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Live {
    pub(super) fn new(
        reviewer: Reviewer,
        tls_config: LiveTls,
        watched: Vec<PathBuf>,
        tls_files: (PathBuf, PathBuf),
        key_watcher: Option<Arc<super::keys::KeyWatcher>>,
    ) -> Self {
        let fresh = ReloadStatus {
            loaded_at: now_rfc3339(),
            ..ReloadStatus::default()
        };
        Live {
            reviewer: RwLock::new(Arc::new(reviewer)),
            tls_config,
            policies: Mutex::new(fresh.clone()),
            tls: Mutex::new(fresh),
            retired_cache: Mutex::new(CacheStats::default()),
            draining: AtomicBool::new(false),
            watched,
            tls_files,
            key_watcher,
        }
    }

    /// What is known of each watched key object (empty without key references).
    pub(super) fn key_watches(&self) -> Vec<super::keys::WatchStatus> {
        self.key_watcher
            .as_ref()
            .map(|w| w.status())
            .unwrap_or_default()
    }

    /// The reviewer for a request that starts now.
    pub(super) fn reviewer(&self) -> Arc<Reviewer> {
        self.reviewer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn replace_reviewer(&self, reviewer: Reviewer) {
        let old = std::mem::replace(
            &mut *self.reviewer.write().unwrap_or_else(|p| p.into_inner()),
            Arc::new(reviewer),
        );
        let old_stats = cache_stats(&old);
        let mut retired = lock(&self.retired_cache);
        retired.hits += old_stats.hits;
        retired.misses += old_stats.misses;
    }

    /// Verification cache counts since the start, over every reviewer used.
    pub(super) fn cache_totals(&self) -> CacheStats {
        let current = cache_stats(&self.reviewer());
        let retired = *lock(&self.retired_cache);
        CacheStats {
            hits: retired.hits + current.hits,
            misses: retired.misses + current.misses,
            entries: current.entries,
        }
    }

    /// Whether the latest reload of the policies and of the TLS files failed.
    pub(super) fn failing(&self) -> (bool, bool) {
        (
            lock(&self.policies).last_error.is_some(),
            lock(&self.tls).last_error.is_some(),
        )
    }

    pub(super) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The `/readyz` body: ready unless shutting down. A failed reload does not make the
    /// server unready (it still answers with the last good configuration, and taking every
    /// replica out of the Service over one bad ConfigMap edit would be an outage), it is
    /// reported here.
    pub(super) fn readiness(&self) -> (bool, serde_json::Value) {
        let ready = !self.is_draining();
        let reviewer = self.reviewer();
        let policies = lock(&self.policies).clone();
        let tls = lock(&self.tls).clone();
        let body = json!({
            "ready": ready,
            "draining": self.is_draining(),
            "policies": {
                "files": self.watched,
                "named_files": reviewer.policies().named_files,
                "key_references": reviewer
                    .policies()
                    .key_references
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
                // Rules naming one of these deny every object (docs/admission.md).
                "unresolved_keys": reviewer.policies().unresolved_keys(),
                // Whether each watched Secret or ConfigMap is current; a `stale` one lost
                // its value for want of word from the API server. Not a reason to be
                // unready: the rules naming it deny with the reason, which an unready
                // webhook (every replica out of the Service) could not say.
                "key_watches": self.key_watches(),
                "rules": reviewer.policies().rules.len(),
                "status": policies,
            },
            "tls": {
                "certificate": self.tls_files.0,
                "key": self.tls_files.1,
                "status": tls,
            },
        });
        (ready, body)
    }
}

/// A digest of the files' contents (a missing or unreadable file digests as its error).
pub(super) fn fingerprint(files: &[&Path]) -> [u8; 32] {
    let mut h = Sha256::new();
    for path in files {
        h.update(path.as_os_str().as_encoded_bytes());
        h.update([0]);
        match read_bounded(path, MAX_WATCHED_BYTES) {
            Ok(bytes) => {
                h.update(b"ok");
                h.update((bytes.len() as u64).to_be_bytes());
                h.update(&bytes);
            }
            Err(e) => {
                h.update(b"error");
                h.update(e.as_bytes());
            }
        }
    }
    h.finalize().into()
}

/// Reads at most `max` bytes of a file; a longer file is an error.
pub(super) fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(format!("{}: larger than {max} bytes", path.display()));
    }
    Ok(bytes)
}

/// Reads and checks the TLS certificate and key.
pub(super) fn load_certified_key(
    cert: &Path,
    key: &Path,
) -> Result<rustls::sign::CertifiedKey, String> {
    let cert_pem = read_bounded(cert, MAX_PEM_BYTES as u64)?;
    let key_pem = read_bounded(key, MAX_PEM_BYTES as u64)?;
    certified_key(cert, &cert_pem, key, &key_pem)
}

/// Polls the watched files until `stop` turns true, reloading what changed.
pub(super) async fn watch(
    live: Arc<Live>,
    source: ReviewerSource,
    metrics: Arc<Metrics>,
    interval: std::time::Duration,
    log_format: LogFormat,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let (cert, key) = live.tls_files.clone();
    // The policy files and `--trusted-root`, then the files the live policies name.
    let reviewer_files = |live: &Live| {
        let mut files = source.files.clone();
        for file in &live.reviewer().policies().named_files {
            if !files.contains(file) {
                files.push(file.clone());
            }
        }
        files
    };
    let digest_files = |files: Vec<PathBuf>| {
        blocking(move || fingerprint(&files.iter().map(PathBuf::as_path).collect::<Vec<_>>()))
    };
    let digest_tls = {
        let (cert, key) = (cert.clone(), key.clone());
        move || fingerprint(&[cert.as_path(), key.as_path()])
    };
    let mut watched = reviewer_files(&live);
    let mut seen_policies = digest_files(watched.clone()).await;
    // The error of the latest reviewer reload, while no later one succeeded.
    let mut failed_with: Option<String> = None;
    let mut seen_tls = blocking(digest_tls.clone()).await;
    loop {
        let woken = tokio::select! {
            _ = tokio::time::sleep(interval) => false,
            _ = source.changed.notified() => true,
            _ = stop.changed() => return,
        };
        let now = digest_files(watched.clone()).await;
        let changed = woken || (now.is_some() && now != seen_policies);
        if changed || failed_with.is_some() {
            if now.is_some() {
                seen_policies = now;
            }
            let load = source.load.clone();
            let result = blocking(move || load().map_err(|e| crate::error::chain(&*e)))
                .await
                .unwrap_or_else(|| Err("the reload task failed".into()));
            match result {
                Ok(reviewer) => {
                    live.replace_reviewer(reviewer);
                    failed_with = None;
                    record(&live, &metrics, Part::Policies, Ok(()), log_format);
                    let files = reviewer_files(&live);
                    if files != watched {
                        watched = files;
                        seen_policies = digest_files(watched.clone()).await;
                    }
                }
                Err(error) => {
                    // A retry that fails the same way is not news.
                    if changed || failed_with.as_ref() != Some(&error) {
                        record(
                            &live,
                            &metrics,
                            Part::Policies,
                            Err(error.clone()),
                            log_format,
                        );
                    }
                    failed_with = Some(error);
                }
            }
        }
        if let Some(now) = blocking(digest_tls.clone()).await
            && Some(now) != seen_tls
        {
            seen_tls = Some(now);
            let (c, k) = (cert.clone(), key.clone());
            let result = blocking(move || load_certified_key(&c, &k))
                .await
                .unwrap_or_else(|| Err("the reload task failed".into()));
            let outcome = result.and_then(|certified| {
                let not_after = certificate_not_after(&certified);
                live.tls_config.replace(certified)?;
                metrics.serving_certificate(not_after);
                Ok(())
            });
            record(&live, &metrics, Part::Tls, outcome, log_format);
        }
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

fn record(
    live: &Live,
    metrics: &Metrics,
    part: Part,
    outcome: Result<(), String>,
    log_format: LogFormat,
) {
    let status = match part {
        Part::Policies => &live.policies,
        Part::Tls => &live.tls,
    };
    let mut status = lock(status);
    let now = now_rfc3339();
    match outcome {
        Ok(()) => {
            status.loaded_at = now.clone();
            status.reloads_ok += 1;
            status.last_error = None;
            status.last_error_at = None;
            metrics.reloaded(part, true);
            log_line(
                log_format,
                true,
                &json!({"ts": now, "event": "reloaded", "config": part.as_str()}),
            );
        }
        Err(error) => {
            status.reloads_failed += 1;
            status.last_error = Some(error.clone());
            status.last_error_at = Some(now.clone());
            metrics.reloaded(part, false);
            log_line(
                log_format,
                true,
                &json!({
                    "ts": now,
                    "event": "reload-failed",
                    "config": part.as_str(),
                    "error": error,
                    "note": "the last good configuration stays in use",
                }),
            );
        }
    }
}
