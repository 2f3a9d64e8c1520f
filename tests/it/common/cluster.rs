//! A real Kubernetes API server on loopback (`scripts/cluster.sh`): etcd and kube-apiserver
//! built from Go modules, as controller-runtime's envtest runs them (no kubelet, no
//! controller-manager), with a kubeconfig for an admin client certificate.
//!
//! The binaries are built once per test process (`scripts/cluster.sh build`, cached across
//! runs in `$MANSIGN_TOOLS_CACHE` or `~/.cache/mansign-tools`). [`Cluster::start`] starts a
//! fresh cluster in its own temporary directory; dropping it stops exactly the processes it
//! started (`cluster.sh stop`, which signals only the PIDs recorded there). A cluster kept in
//! a `static` is stopped when the test process exits: `cluster.sh` watches the PID it is
//! given in `CLUSTER_OWNER_PID`.
//!
//! A cluster that cannot be built or started (no `go`, a failed build, an API server that
//! does not become ready) FAILS the test with the reason; it is never skipped.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `scripts/cluster.sh`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh")
}

/// The built programs (`cluster.sh build` output).
#[derive(Debug)]
pub struct Tools {
    pub kube_apiserver: PathBuf,
    pub kubectl: PathBuf,
    pub etcd: PathBuf,
}

/// Builds the programs once per process; fails the test when the build fails.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        super::built_tools("cluster: tools", "cluster.sh", &["build"], |get| Tools {
            kube_apiserver: get("kube-apiserver"),
            kubectl: get("kubectl"),
            etcd: get("etcd"),
        })
    })
}

/// A running API server; stopped on drop.
pub struct Cluster {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    server: String,
}

impl Cluster {
    /// Builds (once) and starts a cluster; fails the test when it cannot.
    pub fn start() -> Cluster {
        tools();
        let dir = tempfile::Builder::new()
            .prefix("mansign-cluster-")
            .tempdir()
            .expect("temporary cluster directory");
        let start = Instant::now();
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(dir.path())
            .env("CLUSTER_OWNER_PID", std::process::id().to_string())
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/cluster.sh start");
        assert!(
            out.status.success(),
            "the test cluster did not start (scripts/cluster.sh start): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let env = std::fs::read_to_string(dir.path().join("env")).expect("cluster DIR/env");
        let server = env
            .lines()
            .filter_map(|l| l.strip_prefix("export CLUSTER_SERVER="))
            .map(|v| v.trim_matches('\'').to_string())
            .next()
            .expect("CLUSTER_SERVER in DIR/env");
        eprintln!(
            "cluster: {server} ready in {:.1} s ({})",
            start.elapsed().as_secs_f64(),
            dir.path().display()
        );
        Cluster {
            kubeconfig: dir.path().join("kubeconfig"),
            dir,
            server,
        }
    }

    /// One cluster shared by every test of the process (stopped at exit).
    pub fn shared() -> &'static Cluster {
        static SHARED: OnceLock<Cluster> = OnceLock::new();
        SHARED.get_or_init(Cluster::start)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The API server's log (for failure messages).
    pub fn apiserver_log_tail(&self, lines: usize) -> String {
        let text =
            std::fs::read_to_string(self.dir().join("kube-apiserver.log")).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// A `kubectl` command for this cluster (kubeconfig set, no other configuration read).
    pub fn kubectl_cmd(&self) -> Command {
        let mut cmd = Command::new(&tools().kubectl);
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `kubectl ARGS` (30 s request timeout is kubectl's own business).
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_cmd().args(args).output().expect("run kubectl")
    }

    /// Runs `kubectl ARGS` with `stdin` as its standard input (`-f -`).
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .kubectl_cmd()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write kubectl stdin");
        child.wait_with_output().expect("kubectl output")
    }

    /// Creates Kyverno's two PolicyException CRDs, verbatim (testdata/cluster/kyverno-crds,
    /// provenance in testdata/README.md), and waits until both are established.
    pub fn create_kyverno_crds(&self) {
        let crds = super::fixture("cluster/kyverno-crds");
        self.kubectl_ok(&["create", "-f", crds.to_str().unwrap()]);
        self.kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/policyexceptions.kyverno.io",
            "crd/policyexceptions.policies.kyverno.io",
        ]);
    }

    /// Runs `kubectl ARGS`, fails the test unless it succeeds; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Retries `kubectl ARGS` until it succeeds (at most `limit`), e.g. while a CRD's
    /// resource is being established; fails the test with the last error.
    pub fn kubectl_eventually(&self, args: &[&str], limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let out = self.kubectl(args);
            if out.status.success() {
                return String::from_utf8_lossy(&out.stdout).into_owned();
            }
            assert!(
                start.elapsed() < limit,
                "kubectl {} did not succeed within {limit:?}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `GET /metrics` of the API server.
    pub fn metrics(&self) -> String {
        self.kubectl_ok(&["get", "--raw", "/metrics"])
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .output();
    }
}
