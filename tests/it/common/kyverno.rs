//! Kyverno's admission controller beside a test [`Cluster`] (`scripts/kyverno.sh`, issue 36):
//! `github.com/kyverno/kyverno/cmd/kyverno` of the version the Kyverno CLI peer uses, built
//! from the Go module `tests/kyverno/` and run out of cluster against the test API server
//! (kubeconfig, `--serverIP` on loopback, its CRDs applied, PolicyExceptions on with
//! `--enablePolicyException` and one `--exceptionNamespace`).
//!
//! [`Kyverno::start`] returns once Kyverno answers its readiness probe and has registered its
//! policy and exception webhooks with the API server; [`Kyverno::wait_enforced`] then waits
//! until a given policy really decides (its resource webhook is registered: a probe is
//! denied). Dropping it stops exactly the process it started (`kyverno.sh stop`, which
//! signals only the PID recorded in its directory); one kept in a `static` is stopped when
//! the test process exits (`KYVERNO_OWNER_PID`).
//!
//! A Kyverno that cannot be built or started FAILS the test with the reason; it is never
//! skipped. The harness is meant to be shared: the CEL route (issue 37) starts Kyverno with
//! extra flags through [`Kyverno::start_with`] (`KYVERNO_ARGS`, e.g. `--httpAllowlist`).
#![allow(dead_code)]

use super::cluster::Cluster;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The namespace `kyverno.sh` gives `--exceptionNamespace` unless told otherwise.
pub const EXCEPTION_NAMESPACE: &str = "kyverno-exceptions";

/// `scripts/kyverno.sh`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kyverno.sh")
}

/// The built program (`kyverno.sh build` output).
#[derive(Debug)]
pub struct Tools {
    pub kyverno: PathBuf,
    /// Kyverno's reports controller (background scans, PolicyReports).
    pub reports_controller: PathBuf,
}

/// Builds Kyverno once per process; fails the test when the build fails.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        super::built_tools(
            "kyverno: admission controller",
            "kyverno.sh",
            &["build"],
            |get| Tools {
                kyverno: get("kyverno"),
                reports_controller: get("reports-controller"),
            },
        )
    })
}

/// A running Kyverno admission controller; stopped on drop.
pub struct Kyverno {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    settings: Vec<(String, String)>,
    url: String,
    exception_namespace: String,
    starts: usize,
}

impl Kyverno {
    /// Builds (once) and starts Kyverno against `cluster`; fails the test when it cannot.
    pub fn start(cluster: &Cluster) -> Kyverno {
        Self::start_with(cluster, &[])
    }

    /// [`Kyverno::start`] with settings for `kyverno.sh start` (`KYVERNO_EXCEPTION_NAMESPACE`,
    /// `KYVERNO_ARGS`, `KYVERNO_READY_TIMEOUT`).
    pub fn start_with(cluster: &Cluster, settings: &[(&str, &str)]) -> Kyverno {
        tools();
        let dir = tempfile::Builder::new()
            .prefix("mansign-kyverno-")
            .tempdir()
            .expect("temporary Kyverno directory");
        let exception_namespace = settings
            .iter()
            .find(|(k, _)| *k == "KYVERNO_EXCEPTION_NAMESPACE")
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| EXCEPTION_NAMESPACE.to_string());
        let mut kyverno = Kyverno {
            dir,
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            url: String::new(),
            exception_namespace,
            starts: 0,
        };
        kyverno.run_start();
        kyverno
    }

    fn run_start(&mut self) {
        let start = Instant::now();
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(self.dir.path())
            .arg(&self.kubeconfig)
            .env("KUBECTL", &super::cluster::tools().kubectl)
            .env("KYVERNO_OWNER_PID", std::process::id().to_string())
            .envs(self.settings.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/kyverno.sh start");
        assert!(
            out.status.success(),
            "Kyverno's admission controller did not start (scripts/kyverno.sh start): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        self.url = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("KYVERNO_URL="))
            .expect("kyverno.sh start prints KYVERNO_URL=")
            .to_string();
        self.starts += 1;
        eprintln!(
            "kyverno: {} ready in {:.1} s (start {}, exceptions from namespace {}, {})",
            self.url,
            start.elapsed().as_secs_f64(),
            self.starts,
            self.exception_namespace,
            self.dir.path().display()
        );
    }

    /// Stops the process (its webhook configurations stay registered, as they do when
    /// Kyverno's Pod is gone).
    pub fn stop(&self) {
        let out = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/kyverno.sh stop");
        assert!(
            out.status.success(),
            "scripts/kyverno.sh stop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts it again in the same directory (a new port; it updates its registrations).
    pub fn restart(&mut self) {
        self.stop();
        self.run_start();
    }

    /// Whether the recorded process is running.
    pub fn running(&self) -> bool {
        let Ok(pid) = std::fs::read_to_string(self.dir.path().join("kyverno.pid")) else {
            return false;
        };
        Path::new("/proc").join(pid.trim()).is_dir()
    }

    /// `https://127.0.0.1:PORT`, the webhook server.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The one namespace Kyverno reads PolicyExceptions from.
    pub fn exception_namespace(&self) -> &str {
        &self.exception_namespace
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last `lines` of its log (for failure messages).
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("kyverno.log")).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Waits until Kyverno enforces a policy: `probe` (a document `kubectl create
    /// --dry-run=server` is asked to create) is denied by one of Kyverno's webhooks, whose
    /// name `webhook` names (`vpol.validate.kyverno.svc-fail`, `validate.kyverno.svc-fail`).
    /// Fails the test, with Kyverno's log, after `limit`.
    pub fn wait_enforced(&self, cluster: &Cluster, probe: &str, webhook: &str, limit: Duration) {
        let start = Instant::now();
        loop {
            let out = cluster.kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], probe);
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            if denied_by(&out, webhook) {
                eprintln!(
                    "kyverno: enforcing after {:.1} s ({})",
                    start.elapsed().as_secs_f64(),
                    err.trim()
                );
                return;
            }
            assert!(
                start.elapsed() < limit,
                "Kyverno did not enforce within {limit:?} (the probe was {}: {err}{}); last lines of its log:\n{}",
                if out.status.success() {
                    "admitted"
                } else {
                    "refused otherwise"
                },
                String::from_utf8_lossy(&out.stdout),
                self.log_tail(40)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// Whether `out` (a kubectl write) was denied by the admission webhook named `webhook`.
pub fn denied_by(out: &Output, webhook: &str) -> bool {
    let err = String::from_utf8_lossy(&out.stderr);
    !out.status.success()
        && err.contains(&format!(
            "admission webhook \"{webhook}\" denied the request"
        ))
}

impl Drop for Kyverno {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .output();
    }
}
