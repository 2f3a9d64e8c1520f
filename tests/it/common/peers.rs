//! The real peers (issue 22): kubectl-sigstore, the Kyverno CLI and kubectl's YAML reading
//! (`yamloracle`), built from the pinned Go module in `tests/peers/` by `scripts/peers.sh`.
//!
//! The script runs once per test process; a missing Go toolchain or a failed build fails
//! every test that asks for a peer (with the script's output), it never skips one.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The longest any one peer invocation may take before the test fails.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(120);

fn built() -> &'static Result<HashMap<String, PathBuf>, String> {
    static PEERS: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();
    PEERS.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peers.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run bash {}: {e}", script.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!(
                "scripts/peers.sh failed ({}):\n{stderr}",
                out.status
            ));
        }
        let mut peers = HashMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Some((name, path)) = line.split_once('=') else {
                return Err(format!("scripts/peers.sh printed {line:?}\n{stderr}"));
            };
            peers.insert(name.to_string(), PathBuf::from(path));
        }
        Ok(peers)
    })
}

/// The absolute path of peer `name` (`kubectl-sigstore`, `kubectl-kyverno`, `yamloracle`).
/// Fails the test when the peers cannot be built.
pub fn peer(name: &str) -> PathBuf {
    match built() {
        Ok(peers) => match peers.get(name) {
            Some(p) if p.is_file() => p.clone(),
            Some(p) => panic!("peer {name} at {} is missing", p.display()),
            None => panic!("scripts/peers.sh printed no {name}= line"),
        },
        Err(e) => panic!("the peers cannot be built: {e}"),
    }
}

/// A finished peer process.
#[derive(Debug)]
pub struct Run {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout and stderr together (the peers log to either).
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `cmd` with `stdin` (if any), failing the test after [`PEER_TIMEOUT`].
pub fn run_bounded(cmd: Command, stdin: Option<&[u8]>) -> Run {
    run_bounded_for(cmd, stdin, PEER_TIMEOUT)
}

/// Runs `cmd` with `stdin` (if any), failing the test after `timeout`. The child is killed
/// (by its own id) on timeout.
pub fn run_bounded_for(mut cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Run {
    let what = format!("{cmd:?}");
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let writer = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = pipe.write_all(&bytes);
        })
    });
    let mut out_pipe = child.stdout.take().expect("stdout pipe");
    let mut err_pipe = child.stderr.take().expect("stderr pipe");
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for peer") {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} took longer than {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Run {
        success: status.success(),
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// A command for peer `name` with a clean environment for Sigstore: no ambient token or
/// instance URLs, HOME in `home` (kubectl-sigstore and cosign write caches there).
pub fn peer_command(name: &str, home: &Path) -> Command {
    let mut cmd = Command::new(peer(name));
    for var in [
        "SIGSTORE_ID_TOKEN",
        "SIGSTORE_ROOT_FILE",
        "SIGSTORE_CT_LOG_PUBLIC_KEY_FILE",
        "SIGSTORE_REKOR_PUBLIC_KEY",
        "SIGSTORE_TRUSTED_ROOT",
        "TUF_ROOT",
        "COSIGN_EXPERIMENTAL",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "GITHUB_ACTIONS",
        "KUBECONFIG",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home);
    cmd.env("COSIGN_PASSWORD", "test-password");
    cmd
}

/// Runs `peer args...` bounded by [`PEER_TIMEOUT`].
pub fn run_peer(name: &str, home: &Path, args: &[&std::ffi::OsStr]) -> Run {
    let mut cmd = peer_command(name, home);
    cmd.args(args);
    run_bounded(cmd, None)
}

/// Output of a finished std command, as a [`Run`].
pub fn to_run(out: Output) -> Run {
    Run {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `kubectl-sigstore sign -f INPUT -k KEY -o OUT --no-tlog-upload --force [extra...]`, asserting
/// it succeeded and wrote OUT. (The pinned peer swaps its two flags, docs/compatibility.md
/// "Disagreements": passing both writes OUT and uploads nothing.)
pub fn kubectl_sigstore_sign(home: &Path, input: &Path, key: &Path, out: &Path, extra: &[&str]) {
    let mut cmd = peer_command("kubectl-sigstore", home);
    cmd.arg("sign")
        .arg("-f")
        .arg(input)
        .arg("-k")
        .arg(key)
        .arg("-o")
        .arg(out)
        .args(["--no-tlog-upload", "--force"])
        .args(extra);
    let run = run_bounded(cmd, None);
    assert!(run.success, "kubectl-sigstore sign failed: {run:?}");
    assert!(out.is_file(), "kubectl-sigstore wrote no {}", out.display());
}

/// The counts of `kubectl-kyverno apply`'s summary line (`pass: N, fail: N, warn: N, error:
/// N, skip: N`): (pass, fail, warn, error, skip). Fails the test when there is no summary.
pub fn kyverno_apply_counts(run: &Run) -> (u64, u64, u64, u64, u64) {
    let all = run.all();
    let line = all
        .lines()
        .find(|l| l.trim_start().starts_with("pass: "))
        .unwrap_or_else(|| panic!("no summary in kubectl-kyverno output: {run:?}"));
    let count = |name: &str| -> u64 {
        line.split(',')
            .map(str::trim)
            .find_map(|part| part.strip_prefix(&format!("{name}: ")))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} count in {line:?}"))
    };
    (
        count("pass"),
        count("fail"),
        count("warn"),
        count("error"),
        count("skip"),
    )
}
