//! The real `mansign admission serve` as a child process for the tests that let a real API
//! server call it (tests/it/apiserver_admission.rs, the chart install of tests/it/helm_chart.rs):
//! HTTPS on a loopback port with `DIR/tls.crt` and `DIR/tls.key`, its log in DIR.
//!
//! The process is killed on drop, and also once the test process exits (a webhook kept in a
//! `static` has no `Drop`): a watcher started with it signals exactly its PID.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Kills `pid` once this test process has exited; the watcher ends by itself when `pid`
/// is gone first.
pub fn kill_at_exit(pid: u32) {
    let _ = Command::new("bash")
        .arg("-c")
        .arg(
            "while kill -0 \"$1\" 2>/dev/null && kill -0 \"$2\" 2>/dev/null; do sleep 1; done; \
             kill \"$2\" 2>/dev/null",
        )
        .arg("reaper")
        .arg(std::process::id().to_string())
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// Waits until `child` (`what`, for the messages) logs its `listening` event to the file
/// `log` (JSON lines) and returns the port; fails the test if it exits first or takes 30 s.
pub fn wait_listening(child: &mut Child, log: &Path, what: &str) -> u16 {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(addr) = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "listening")
            .and_then(|e| e["address"].as_str().map(str::to_string))
        {
            return addr
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("listening address has a port");
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{what} exited with {status}: {text}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} did not listen within 30 s: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub struct Webhook {
    child: Child,
    pub port: u16,
    stderr: PathBuf,
}

impl Webhook {
    /// Starts the real binary on `127.0.0.1:port` (0: any) with `dir/tls.{crt,key}` and
    /// `policies`; returns once it listens (fails the test if it exits or takes 30 s).
    pub fn start(dir: &Path, policies: &[PathBuf], port: u16) -> Webhook {
        Webhook::start_with(dir, policies, port, &[])
    }

    /// [`Webhook::start`] with more `mansign admission serve` arguments (`--kubeconfig F`).
    pub fn start_with(
        dir: &Path,
        policies: &[PathBuf],
        port: u16,
        extra: &[&std::ffi::OsStr],
    ) -> Webhook {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::SeqCst);
        let stdout = dir.join(format!("webhook-{n}.stdout"));
        let stderr = dir.join(format!("webhook-{n}.stderr"));
        // MANSIGN_WEBHOOK_BIN: another build of the server (scripts/bench-routes.sh runs the
        // release build); the tests' own build otherwise.
        let program = std::env::var_os("MANSIGN_WEBHOOK_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("mansign"));
        let mut cmd = Command::new(program);
        cmd.args(["admission", "serve", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--tls-cert")
            .arg(dir.join("tls.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls.key"))
            .args(["--reload-interval", "1s", "--shutdown-grace", "1s"]);
        for p in policies {
            cmd.arg("--policy").arg(p);
        }
        cmd.args(extra);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start mansign admission serve");
        kill_at_exit(child.id());
        let mut webhook = Webhook {
            child,
            port: 0,
            stderr,
        };
        webhook.port = wait_listening(
            &mut webhook.child,
            &webhook.stderr,
            "mansign admission serve",
        );
        webhook
    }

    /// `https://127.0.0.1:PORT/validate`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/validate", self.port)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's log so far (JSON lines: start-up, reloads, decisions' errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.stop();
    }
}
