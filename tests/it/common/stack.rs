//! The loopback Sigstore stack (`scripts/sigstore-stack/`) for integration tests.
//!
//! Use from a test file with
//! `#[path = "common/stack.rs"] mod stack;` and `let stack = stack::Stack::start();`.
//!
//! Every [`Stack`] is a fresh stack in its own temporary state directory, on ports the OS
//! picks: its counters and fault queues belong to one test only, so tests can run in
//! parallel. Dropping it stops exactly the processes it started (`stop.sh`, which signals
//! only the PIDs recorded in the state directory).
//!
//! A stack that cannot start (no `node`, `scripts/sigstore-stack/install.sh` not run, a
//! start-up failure) fails the test with the reason: a test that needs the stack never
//! passes without it. `scripts/test.sh` installs everything the stack needs.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Environment variables that would make mansign pick another token source than the
/// one a test sets up (the CI that runs these tests is itself a GitHub Actions job).
pub const AMBIENT_VARS: &[&str] = &[
    "SIGSTORE_ID_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "CIRCLECI",
    "SIGSTORE_FULCIO_URL",
    "SIGSTORE_REKOR_URL",
    "SIGSTORE_TRUSTED_ROOT",
    "MANSIGN_TRUSTED_ROOT",
];

/// The stack's scripts.
pub fn stack_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/sigstore-stack")
}

/// Fails the test: the stack it needs cannot run here.
fn unavailable(why: &str) -> ! {
    panic!(
        "the loopback Sigstore test stack is unavailable: {why} \
         (run scripts/sigstore-stack/install.sh, or scripts/test.sh which does)"
    );
}

/// A running stack; stopped on drop.
pub struct Stack {
    state: tempfile::TempDir,
    env: HashMap<String, String>,
}

impl Stack {
    /// Starts a stack (about 1 s); fails the test when it cannot.
    pub fn start() -> Stack {
        Self::start_with(&[])
    }

    /// Starts a stack with extra settings for `start.sh` (e.g. `WITH_TUF=1`).
    pub fn start_with(settings: &[(&str, &str)]) -> Stack {
        let dir = stack_dir();
        if !dir.join("node_modules/@sigstore/mock").is_dir()
            || !dir.join("node_modules/oauth2-mock-server").is_dir()
        {
            unavailable("scripts/sigstore-stack/node_modules is missing");
        }
        if Command::new("node").arg("--version").output().is_err() {
            unavailable("`node` is not on PATH");
        }
        let state = tempfile::Builder::new()
            .prefix("mansign-stack-")
            .tempdir()
            .expect("temporary state directory");
        let out = Command::new(dir.join("start.sh"))
            .arg(state.path())
            .envs(settings.iter().copied())
            .output()
            .expect("run start.sh");
        if !out.status.success() {
            // start.sh stops whatever it started when it fails.
            unavailable(&format!(
                "start.sh failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = std::fs::read_to_string(state.path().join("env")).expect("STATE/env");
        let env = parse_env(&text);
        let stack = Stack { state, env };
        assert!(
            !stack.var("SIGSTORE_FULCIO_URL").is_empty(),
            "env has no Fulcio URL"
        );
        stack
    }

    /// Logs a hashedrekord entry (the SHA-256 of `message`, `signature` by `public_key_pem`,
    /// a key or certificate) in this stack's Rekor, which must answer 201; returns the logged
    /// entry as the bundle cosign writes.
    pub fn log_hashedrekord(
        &self,
        message: &[u8],
        signature: &[u8],
        public_key_pem: &[u8],
    ) -> mansign::annotations::RekorBundle {
        use base64::Engine as _;
        use base64::engine::general_purpose::STANDARD;
        use sha2::{Digest as _, Sha256};
        let entry = serde_json::json!({
            "apiVersion": "0.0.1", "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(message))}},
                "signature": {
                    "content": STANDARD.encode(signature),
                    "publicKey": {"content": STANDARD.encode(public_key_pem)},
                },
            }
        });
        let (status, body) = http(
            "POST",
            &format!("{}/api/v1/log/entries", self.rekor_url()),
            Some(&entry.to_string()),
        );
        assert_eq!(status, 201, "{body}");
        let response: serde_json::Value = serde_json::from_str(&body).unwrap();
        let (_, logged) = response.as_object().unwrap().iter().next().unwrap();
        let text = |v: &serde_json::Value| v.as_str().unwrap().to_string();
        mansign::annotations::RekorBundle {
            signed_entry_timestamp: text(&logged["verification"]["signedEntryTimestamp"]),
            payload: mansign::annotations::RekorPayload {
                body: text(&logged["body"]),
                integrated_time: logged["integratedTime"].as_i64().unwrap(),
                log_index: logged["logIndex"].as_i64().unwrap(),
                log_id: text(&logged["logID"]),
            },
        }
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// A variable from `STATE/env` (empty if absent).
    pub fn var(&self, name: &str) -> &str {
        self.env.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn fulcio_url(&self) -> &str {
        self.var("SIGSTORE_FULCIO_URL")
    }

    pub fn rekor_url(&self) -> &str {
        self.var("SIGSTORE_REKOR_URL")
    }

    pub fn issuer(&self) -> &str {
        self.var("SIGSTORE_OIDC_ISSUER")
    }

    /// The certificate SAN the default token yields.
    pub fn identity(&self) -> &str {
        self.var("SIGSTORE_IDENTITY")
    }

    pub fn id_token_file(&self) -> PathBuf {
        PathBuf::from(self.var("SIGSTORE_ID_TOKEN_FILE"))
    }

    /// The default token (valid 1 h, `aud: sigstore`).
    pub fn id_token(&self) -> String {
        std::fs::read_to_string(self.id_token_file())
            .expect("id_token file")
            .trim()
            .to_string()
    }

    /// `cmd` (the `mansign` binary) made a keyless `mansign sign` against this stack: the
    /// [`AMBIENT_VARS`] removed, then `sign --fulcio-url … --rekor-url … --trusted-root …`.
    /// The caller adds the input, the output and the identity token.
    pub fn keyless_sign(&self, mut cmd: assert_cmd::Command) -> assert_cmd::Command {
        for v in AMBIENT_VARS {
            cmd.env_remove(v);
        }
        cmd.args(["sign", "--fulcio-url", self.fulcio_url()])
            .args(["--rekor-url", self.rekor_url()])
            .arg("--trusted-root")
            .arg(self.trusted_root());
        cmd
    }

    /// `cmd` (the `mansign` binary) made `mansign verify -f PATH --trusted-root …` with this
    /// stack's trust root; the caller adds the identity flags.
    pub fn keyless_verify(&self, mut cmd: assert_cmd::Command, path: &Path) -> assert_cmd::Command {
        cmd.args(["verify", "-f"])
            .arg(path)
            .arg("--trusted-root")
            .arg(self.trusted_root());
        cmd
    }

    /// `mansign sign FLAGS -f INPUT -o OUT --identity-token TOKEN` made keyless against this
    /// stack (see [`Stack::keyless_sign`]) with `cmd` (the `mansign` binary); must succeed.
    pub fn keyless_sign_to(
        &self,
        cmd: assert_cmd::Command,
        flags: &[&str],
        input: &Path,
        out: &Path,
        token: impl AsRef<std::ffi::OsStr>,
    ) {
        self.keyless_sign(cmd)
            .args(flags)
            .arg("-f")
            .arg(input)
            .arg("-o")
            .arg(out)
            .arg("--identity-token")
            .arg(token)
            .assert()
            .success();
    }

    pub fn trusted_root(&self) -> PathBuf {
        PathBuf::from(self.var("SIGSTORE_TRUSTED_ROOT"))
    }

    pub fn trust_config(&self) -> PathBuf {
        PathBuf::from(self.var("SIGSTORE_TRUST_CONFIG"))
    }

    /// `mint-token.sh STATE ARGS...`: a fresh token signed by the stack's issuer.
    pub fn mint_token(&self, args: &[&str]) -> String {
        let out = Command::new(stack_dir().join("mint-token.sh"))
            .arg(self.state_dir())
            .args(args)
            .output()
            .expect("run mint-token.sh");
        assert!(
            out.status.success(),
            "mint-token.sh {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("token is text")
            .trim()
            .to_string()
    }

    /// The stack's trust material as PEM text, from its trusted_root.json: the Fulcio
    /// certificates (every chain, root last), the Rekor key and the CT log key. For peers
    /// that take PEM files or policy fields instead of a trusted root.
    pub fn trust_pems(&self) -> TrustPems {
        use base64::Engine as _;
        let root: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.trusted_root()).expect("trusted root"))
                .expect("trusted root JSON");
        let b64 = base64::engine::general_purpose::STANDARD;
        let pem = |label: &str, raw: &str| {
            let der = b64.decode(raw).expect("base64 DER");
            let body = b64.encode(der);
            let lines: Vec<&str> = body
                .as_bytes()
                .chunks(64)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect();
            format!(
                "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
                lines.join("\n")
            )
        };
        let mut fulcio = String::new();
        for ca in root["certificateAuthorities"].as_array().expect("CAs") {
            for c in ca["certChain"]["certificates"].as_array().expect("chain") {
                fulcio.push_str(&pem("CERTIFICATE", c["rawBytes"].as_str().unwrap()));
            }
        }
        let key = |log: &str| {
            pem(
                "PUBLIC KEY",
                root[log][0]["publicKey"]["rawBytes"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no {log} key in the trusted root")),
            )
        };
        TrustPems {
            fulcio,
            rekor: key("tlogs"),
            ctlog: key("ctlogs"),
        }
    }

    /// `GET /__stats`: the request counters.
    pub fn stats(&self) -> serde_json::Value {
        let (status, body) = http("GET", self.var("SIGSTORE_STATS_REKOR_URL"), None);
        assert_eq!(status, 200, "GET /__stats: {body}");
        serde_json::from_str(&body).expect("stats JSON")
    }

    /// One counter of `/__stats`.
    pub fn stat(&self, name: &str) -> u64 {
        self.stats()[name]
            .as_u64()
            .unwrap_or_else(|| panic!("no counter {name}"))
    }

    /// Zeroes the counters and drops queued faults.
    pub fn reset(&self) {
        let stats = self.var("SIGSTORE_STATS_REKOR_URL");
        let (status, body) = http("POST", &format!("{stats}/reset"), Some("{}"));
        assert_eq!(status, 200, "POST /__stats/reset: {body}");
        let (status, body) = http("DELETE", self.var("SIGSTORE_FAULTS_URL"), None);
        assert_eq!(status, 200, "DELETE /__faults: {body}");
    }

    /// Queues faults, e.g. `{"service":"rekor","statuses":[500,500,500]}`.
    pub fn inject_faults(&self, faults: serde_json::Value) {
        let (status, body) = http(
            "POST",
            self.var("SIGSTORE_FAULTS_URL"),
            Some(&faults.to_string()),
        );
        assert_eq!(status, 200, "POST /__faults {faults}: {body}");
    }

    /// sigstore-python's CLI (installed by `scripts/sigstore-stack/install.sh`).
    pub fn sigstore_python(&self) -> PathBuf {
        let p = stack_dir().join(".venv/bin/sigstore");
        if !p.is_file() {
            unavailable("scripts/sigstore-stack/.venv (sigstore-python) is missing");
        }
        p
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // stop.sh signals only the PIDs recorded in STATE/*.pid, and only while they still
        // run the program start.sh started there.
        let _ = Command::new(stack_dir().join("stop.sh"))
            .arg(self.state.path())
            .output();
    }
}

/// `export K=V` / `export K='V'` lines.
fn parse_env(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("export "))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .or_else(|| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
                .unwrap_or(v);
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// A stack's trust material as PEM text ([`Stack::trust_pems`]).
pub struct TrustPems {
    /// The Fulcio certificates, every chain, root last.
    pub fulcio: String,
    /// The Rekor log's public key.
    pub rekor: String,
    /// The CT log's public key.
    pub ctlog: String,
}

/// A blocking HTTP request: `(status, body)`. Redirects are not followed.
pub fn http(method: &str, url: &str, json_body: Option<&str>) -> (u16, String) {
    let (status, _, body) = http_full(method, url, json_body);
    (status, body)
}

/// A blocking HTTP request: `(status, Location header, body)`. Redirects are not followed.
pub fn http_full(
    method: &str,
    url: &str,
    json_body: Option<&str>,
) -> (u16, Option<String>, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = client.request(method, url);
        if let Some(b) = json_body {
            req = req
                .header("Content-Type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = resp.text().await.unwrap_or_default();
        (status, location, body)
    })
}
