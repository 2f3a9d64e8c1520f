//! kubeconfig `exec` credential plugins (`users[].user.exec`), run the way kubectl runs them
//! (client-go `plugin/pkg/client/auth/exec`, the `client.authentication.k8s.io` API): the
//! command with its arguments and extra environment, `KUBERNETES_EXEC_INFO` set to an
//! `ExecCredential` whose `spec` says the run is not interactive (and carries the cluster
//! when `provideClusterInfo` asks for it), the credential read from its stdout's `status`.
//!
//! mansign runs without a terminal for the plugin (stdin is `/dev/null`), so a plugin that
//! must be interactive (`interactiveMode: Always`) is refused when the kubeconfig is read.
//! Unlike client-go, the run is bounded: at most [`MAX_OUTPUT_BYTES`] of stdout, at most
//! [`MAX_STDERR_BYTES`] of stderr kept for the error message, and [`ExecConfig::timeout`]
//! (the plugin is killed then). A credential is kept for the process until its
//! `expirationTimestamp` (no expiry: for the process's lifetime), shared by every client
//! built from the same plugin configuration.

use super::KubeError;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// Largest ExecCredential a plugin may print.
pub const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// Most bytes of a plugin's stderr kept for an error message.
pub const MAX_STDERR_BYTES: u64 = 8 * 1024;
/// How long a plugin may run by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The two ExecCredential versions client-go still speaks (`v1alpha1` was removed in
/// Kubernetes 1.24).
const API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

/// One `exec` credential plugin, as a kubeconfig user names it.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `/v1beta1`.
    pub api_version: String,
    /// The program: a path (made absolute against the kubeconfig's directory when it
    /// contains a `/`) or a bare name looked up on `PATH`.
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Extra environment (`env: [{name, value}]`), on top of mansign's own.
    pub env: Vec<(String, String)>,
    /// `spec.cluster` of `KUBERNETES_EXEC_INFO` (`provideClusterInfo: true`).
    pub cluster: Option<Value>,
    /// `installHint`, shown when the program cannot be started.
    pub install_hint: Option<String>,
    /// How long the plugin may run before it is killed.
    pub timeout: Duration,
    /// `kubeconfig PATH, context NAME, user NAME` (for messages).
    pub origin: String,
}

impl std::fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The environment may carry secrets: names only.
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field(
                "env",
                &self.env.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("origin", &self.origin)
            .finish()
    }
}

/// What a plugin printed: a bearer token or a client certificate, and until when.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct ExecCredential {
    pub token: Option<String>,
    /// PEM certificate chain and key (`clientCertificateData`, `clientKeyData`).
    pub client_certificate: Option<(Vec<u8>, Vec<u8>)>,
    pub expires: Option<jiff::Timestamp>,
}

impl std::fmt::Debug for ExecCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecCredential")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field(
                "client_certificate",
                &self.client_certificate.as_ref().map(|_| ".."),
            )
            .field("expires", &self.expires)
            .finish()
    }
}

impl ExecCredential {
    fn expired(&self, now: jiff::Timestamp) -> bool {
        self.expires.is_some_and(|at| now >= at)
    }
}

/// The `exec` entry of a kubeconfig user, as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecEntry {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<Vec<EnvEntry>>,
    #[serde(default)]
    install_hint: Option<String>,
    #[serde(default)]
    provide_cluster_info: Option<bool>,
    #[serde(default)]
    interactive_mode: Option<String>,
}

#[derive(Debug, Deserialize)]
struct EnvEntry {
    name: String,
    value: String,
}

fn refused(origin: &str, reason: impl std::fmt::Display) -> KubeError {
    KubeError::Config(format!("{origin}: user exec: {reason}"))
}

impl ExecConfig {
    /// Reads `users[].user.exec` (`value`) of the user at `origin`; `base_dir` is the
    /// kubeconfig's directory; `cluster` the cluster's `KUBERNETES_EXEC_INFO` form.
    pub(super) fn parse(
        value: &Value,
        origin: &str,
        base_dir: &std::path::Path,
        cluster: impl FnOnce() -> Value,
    ) -> Result<ExecConfig, KubeError> {
        let entry: ExecEntry =
            serde_json::from_value(value.clone()).map_err(|e| refused(origin, e))?;
        let api_version = entry
            .api_version
            .ok_or_else(|| refused(origin, "apiVersion: missing"))?;
        if !API_VERSIONS.contains(&api_version.as_str()) {
            return Err(refused(
                origin,
                format!(
                    "apiVersion {api_version:?} is not supported (use {})",
                    API_VERSIONS.join(" or ")
                ),
            ));
        }
        let command = entry
            .command
            .filter(|c| !c.is_empty())
            .ok_or_else(|| refused(origin, "command: missing"))?;
        // client-go: a command with a path separator is relative to the kubeconfig's
        // directory; a bare name is looked up on PATH.
        let command = if command.contains('/') {
            // An absolute path stays as it is (`join` replaces the base then).
            base_dir.join(&command)
        } else {
            PathBuf::from(command)
        };
        // client-go requires interactiveMode from v1 on and defaults it to IfAvailable for
        // v1beta1.
        let mode = match (entry.interactive_mode.as_deref(), api_version.as_str()) {
            (None | Some(""), "client.authentication.k8s.io/v1") => {
                return Err(refused(
                    origin,
                    "interactiveMode: missing (required by client.authentication.k8s.io/v1: \
                     Never or IfAvailable)",
                ));
            }
            (None | Some(""), _) => "IfAvailable",
            (Some(mode), _) => mode,
        };
        match mode {
            "Never" | "IfAvailable" => {}
            "Always" => {
                return Err(refused(
                    origin,
                    "interactiveMode Always is not supported: mansign runs the plugin without \
                     a terminal (stdin is not a terminal); use a plugin mode that works \
                     non-interactively (Never or IfAvailable) or sign in first",
                ));
            }
            other => {
                return Err(refused(
                    origin,
                    format!("interactiveMode {other:?}: not Never, IfAvailable or Always"),
                ));
            }
        }
        Ok(ExecConfig {
            api_version,
            command,
            args: entry.args.unwrap_or_default(),
            env: entry
                .env
                .unwrap_or_default()
                .into_iter()
                .map(|e| (e.name, e.value))
                .collect(),
            cluster: entry.provide_cluster_info.unwrap_or(false).then(cluster),
            install_hint: entry.install_hint.filter(|h| !h.trim().is_empty()),
            timeout: DEFAULT_TIMEOUT,
            origin: origin.to_string(),
        })
    }

    /// `KUBERNETES_EXEC_INFO`: an ExecCredential with only its `spec`.
    fn exec_info(&self) -> String {
        let mut spec = json!({"interactive": false});
        if let Some(cluster) = &self.cluster {
            spec["cluster"] = cluster.clone();
        }
        json!({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}).to_string()
    }

    /// The key of the process-wide cache: everything that makes the plugin's answer.
    fn cache_key(&self) -> String {
        json!([
            self.api_version,
            self.command.to_string_lossy(),
            self.args,
            self.env,
            self.cluster
        ])
        .to_string()
    }

    fn error(&self, reason: impl std::fmt::Display) -> KubeError {
        KubeError::ExecPlugin {
            origin: self.origin.clone(),
            command: self.command.display().to_string(),
            reason: reason.to_string(),
        }
    }
}

type Cache = Mutex<HashMap<String, Arc<ExecCredential>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The plugin's credential: the cached one while it has not expired, else a new run.
/// Blocking (runs the plugin); the cache lock is held during the run, so concurrent
/// requests wait for one run rather than starting several.
pub(super) fn credential(config: &ExecConfig) -> Result<Arc<ExecCredential>, KubeError> {
    let key = config.cache_key();
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cached) = valid(&cache, &key) {
        return Ok(cached);
    }
    let fresh = Arc::new(run(config)?);
    cache.insert(key, fresh.clone());
    Ok(fresh)
}

/// The cached credential while it has not expired, without running the plugin (callers on
/// an async runtime look here before they move to a blocking thread for [`credential`]).
pub(super) fn cached(config: &ExecConfig) -> Option<Arc<ExecCredential>> {
    let cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    valid(&cache, &config.cache_key())
}

fn valid(cache: &HashMap<String, Arc<ExecCredential>>, key: &str) -> Option<Arc<ExecCredential>> {
    cache
        .get(key)
        .filter(|c| !c.expired(jiff::Timestamp::now()))
        .cloned()
}

/// Forgets `used` (the API server answered 401 to it), so the next
/// [`credential`] runs the plugin again; a newer credential already cached is kept.
pub(super) fn invalidate(config: &ExecConfig, used: &ExecCredential) {
    let key = config.cache_key();
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    if cache.get(&key).is_some_and(|c| **c == *used) {
        cache.remove(&key);
    }
}

/// Runs the plugin once and reads its ExecCredential.
fn run(config: &ExecConfig) -> Result<ExecCredential, KubeError> {
    let mut child = Command::new(&config.command)
        .args(&config.args)
        .envs(config.env.iter().map(|(n, v)| (n, v)))
        .env("KUBERNETES_EXEC_INFO", config.exec_info())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            let hint = config
                .install_hint
                .as_deref()
                .map(|h| format!("\n{}", h.trim()))
                .unwrap_or_default();
            config.error(format!("cannot start: {e}{hint}"))
        })?;
    let (out_tx, out_rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            // At most one byte past the limit; dropping the pipe then ends a plugin that
            // keeps writing.
            let read = stdout.take(MAX_OUTPUT_BYTES + 1).read_to_end(&mut bytes);
            let _ = out_tx.send(read.map(|_| bytes));
        });
    }
    let (err_tx, err_rx) = mpsc::channel();
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = (&mut stderr).take(MAX_STDERR_BYTES).read_to_end(&mut text);
            // Drain the rest so the plugin never blocks on a full pipe.
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            let _ = err_tx.send(text);
        });
    }
    let deadline = Instant::now() + config.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(config.error(format!(
                    "did not finish within {} s (killed)",
                    config.timeout.as_secs_f64()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(config.error(format!("cannot wait for it: {e}"))),
        }
    };
    // A child the plugin left running may hold the pipes open: wait no longer than the
    // deadline (and a moment) for them.
    let rest = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(100));
    let stderr = err_rx
        .recv_timeout(rest)
        .map(|t| String::from_utf8_lossy(&t).trim().to_string())
        .unwrap_or_default();
    let stdout = out_rx.recv_timeout(rest);
    // Past the limit first: the plugin then usually dies of the closed pipe (SIGPIPE), and
    // the size is the reason.
    if let Ok(Ok(bytes)) = &stdout
        && bytes.len() as u64 > MAX_OUTPUT_BYTES
    {
        return Err(config.error(format!(
            "printed more than {MAX_OUTPUT_BYTES} bytes (an ExecCredential is expected)"
        )));
    }
    if !status.success() {
        let stderr = if stderr.is_empty() {
            String::new()
        } else {
            format!(": {stderr}")
        };
        return Err(config.error(format!("failed ({status}){stderr}")));
    }
    let stdout = match stdout {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => return Err(config.error(format!("cannot read its output: {e}"))),
        Err(_) => {
            return Err(config.error(
                "exited, but its output did not end (a process it started holds stdout open)",
            ));
        }
    };
    parse_credential(&stdout, &config.api_version).map_err(|reason| config.error(reason))
}

/// Reads the ExecCredential a plugin printed; the reason it is not usable otherwise
/// (never quoting the output, which may hold a secret).
pub(super) fn parse_credential(bytes: &[u8], api_version: &str) -> Result<ExecCredential, String> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("printed something that is not an ExecCredential (JSON: {e})"))?;
    let field = |name: &str| value.get(name).and_then(Value::as_str);
    if field("kind") != Some("ExecCredential") {
        return Err(format!(
            "printed kind {:?}, not ExecCredential",
            field("kind").unwrap_or_default()
        ));
    }
    // client-go: the answer must be in the version asked for.
    if field("apiVersion") != Some(api_version) {
        return Err(format!(
            "printed apiVersion {:?}, but the kubeconfig asks for {api_version:?}",
            field("apiVersion").unwrap_or_default()
        ));
    }
    let Some(status) = value.get("status").filter(|s| s.is_object()) else {
        return Err("printed an ExecCredential without status".into());
    };
    let text = |name: &str| -> Result<Option<String>, String> {
        match status.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("status.{name}: not a string")),
        }
    };
    let token = text("token")?;
    let client_certificate = match (text("clientCertificateData")?, text("clientKeyData")?) {
        (Some(cert), Some(key)) => Some((cert.into_bytes(), key.into_bytes())),
        (None, None) => None,
        _ => {
            return Err(
                "status: clientCertificateData and clientKeyData come together (one is missing)"
                    .into(),
            );
        }
    };
    if token.is_none() && client_certificate.is_none() {
        return Err(
            "status has neither a token nor clientCertificateData and clientKeyData".into(),
        );
    }
    let expires = text("expirationTimestamp")?
        .map(|t| {
            t.parse::<jiff::Timestamp>()
                .map_err(|e| format!("status.expirationTimestamp {t:?}: not RFC 3339: {e}"))
        })
        .transpose()?;
    Ok(ExecCredential {
        token,
        client_certificate,
        expires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const V1: &str = "client.authentication.k8s.io/v1";

    fn parse(entry: Value) -> Result<ExecConfig, KubeError> {
        ExecConfig::parse(
            &entry,
            "kc, context \"c\", user \"u\"",
            Path::new("/kube"),
            || json!({"server": "https://h"}),
        )
    }

    #[test]
    fn a_token_with_an_expiry() {
        let c = parse_credential(
            br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
                 "status":{"token":"t0k","expirationTimestamp":"2030-01-02T03:04:05Z"}}"#,
            V1,
        )
        .unwrap();
        assert_eq!(c.token.as_deref(), Some("t0k"));
        assert_eq!(
            c.expires,
            Some("2030-01-02T03:04:05Z".parse::<jiff::Timestamp>().unwrap())
        );
        assert!(!c.expired("2030-01-02T03:04:04Z".parse().unwrap()));
        assert!(c.expired("2030-01-02T03:04:05Z".parse().unwrap()));
        assert!(!format!("{c:?}").contains("t0k"));
    }

    #[test]
    fn a_client_certificate_without_expiry_never_expires() {
        let c = parse_credential(
            br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
                 "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}}"#,
            "client.authentication.k8s.io/v1beta1",
        )
        .unwrap();
        assert_eq!(
            c.client_certificate,
            Some((b"CERT".to_vec(), b"KEY".to_vec()))
        );
        assert!(!c.expired(jiff::Timestamp::MAX));
    }

    #[test]
    fn unusable_credentials_are_refused_with_the_reason() {
        for (text, want) in [
            ("not json", "not an ExecCredential"),
            (r#"{"kind":"Secret"}"#, "not ExecCredential"),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"x"}}"#,
                "asks for",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"}"#,
                "without status",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}}"#,
                "neither a token",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientKeyData":"K"}}"#,
                "come together",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"x","expirationTimestamp":"tomorrow"}}"#,
                "not RFC 3339",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":7}}"#,
                "status.token: not a string",
            ),
        ] {
            let e = parse_credential(text.as_bytes(), V1).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    /// An ExecConfig running the shell script `body` in `dir`.
    fn script(dir: &Path, body: &str) -> ExecConfig {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("plugin.sh");
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho run >> '{}/runs'\n{body}", dir.display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c =
            parse(json!({"apiVersion": V1, "command": path, "interactiveMode": "Never"})).unwrap();
        c.timeout = Duration::from_secs(5);
        c
    }

    fn runs(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("runs"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    #[test]
    fn a_credential_is_cached_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let c = script(
            dir.path(),
            "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n",
        );
        let first = credential(&c).unwrap();
        let second = credential(&c).unwrap();
        assert_eq!(first, second);
        assert_eq!(runs(dir.path()), 1, "no expiry: reused");
        invalidate(&c, &first);
        credential(&c).unwrap();
        assert_eq!(runs(dir.path()), 2, "dropped after a 401: run again");
    }

    #[test]
    fn a_plugin_printing_too_much_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = script(dir.path(), "head -c 3000000 /dev/zero | tr '\\0' ' '\n");
        let e = run(&c).unwrap_err().to_string();
        assert!(e.contains("printed more than 1048576 bytes"), "{e}");
    }

    #[test]
    fn a_plugin_that_leaves_stdout_open_or_hangs_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = script(dir.path(), "exec sleep 30\n");
        c.timeout = Duration::from_millis(300);
        let start = Instant::now();
        let e = run(&c).unwrap_err().to_string();
        assert!(e.contains("did not finish within 0.3 s (killed)"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
        // Exits at once but leaves a child holding stdout.
        let mut c = script(dir.path(), "sleep 30 &\nexit 0\n");
        c.timeout = Duration::from_millis(500);
        let e = run(&c).unwrap_err().to_string();
        assert!(e.contains("output did not end"), "{e}");
    }

    #[test]
    fn the_command_is_relative_to_the_kubeconfig_only_with_a_slash() {
        let c = parse(
            json!({"apiVersion": V1, "command": "bin/plugin", "interactiveMode": "Never",
                             "env": [{"name": "A", "value": "b"}], "args": ["x"]}),
        )
        .unwrap();
        assert_eq!(c.command, Path::new("/kube/bin/plugin"));
        assert_eq!(c.env, [("A".to_string(), "b".to_string())]);
        assert_eq!(c.cluster, None);
        let c = parse(
            json!({"apiVersion": V1, "command": "gke-gcloud-auth-plugin",
                             "interactiveMode": "IfAvailable", "provideClusterInfo": true}),
        )
        .unwrap();
        assert_eq!(c.command, Path::new("gke-gcloud-auth-plugin"));
        let info: Value = serde_json::from_str(&c.exec_info()).unwrap();
        assert_eq!(info["spec"]["interactive"], false);
        assert_eq!(info["spec"]["cluster"]["server"], "https://h");
        assert_eq!(info["apiVersion"], V1);
        // Debug names the environment, never its values.
        let c = parse(
            json!({"apiVersion": V1, "command": "p", "interactiveMode": "Never",
                             "env": [{"name": "SECRET", "value": "hunter2"}]}),
        )
        .unwrap();
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn refusals_name_the_field() {
        for (entry, want) in [
            (
                json!({"apiVersion": V1, "command": "p", "interactiveMode": "Always"}),
                "interactiveMode Always is not supported",
            ),
            (
                json!({"apiVersion": V1, "command": "p"}),
                "interactiveMode: missing",
            ),
            (
                json!({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "p"}),
                "apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported",
            ),
            (
                json!({"command": "p", "interactiveMode": "Never"}),
                "apiVersion: missing",
            ),
            (
                json!({"apiVersion": V1, "interactiveMode": "Never"}),
                "command: missing",
            ),
            (
                json!({"apiVersion": V1, "command": "p", "interactiveMode": "Sometimes"}),
                "interactiveMode \"Sometimes\"",
            ),
        ] {
            let e = parse(entry.clone()).unwrap_err().to_string();
            assert!(e.contains(want), "{entry}: {e}");
            assert!(e.contains("user \"u\": user exec"), "{e}");
        }
        // v1beta1 defaults to IfAvailable.
        assert!(
            parse(json!({"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "p"}))
                .is_ok()
        );
    }
}
