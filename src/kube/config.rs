//! Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file (the
//! current or a selected context; client certificate and key, bearer token or token file;
//! the CA as data or file) or the in-cluster service account (token, CA and
//! `KUBERNETES_SERVICE_HOST`/`_PORT`, as client-go's `rest.InClusterConfig` reads them).
//!
//! Only what mansign needs to read Secrets and ConfigMaps: `exec` and `auth-provider`
//! credential plugins, basic auth and `insecure-skip-tls-verify` are refused with the field
//! named, never silently skipped. Files are read with a size bound.

use super::KubeError;
use crate::limits::Limits;
use serde::Deserialize;
use serde_json::Value;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The service account directory a pod's token is mounted at.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Largest kubeconfig, certificate, key or token file read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// How requests authenticate.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// No credentials (an API server that allows anonymous reads; tests only).
    None,
    /// A bearer token.
    Token(String),
    /// A bearer token re-read from this file for every request (a projected service-account
    /// token is rotated by the kubelet).
    TokenFile(PathBuf),
    /// A client certificate chain and its private key (PEM).
    ClientCertificate { cert_pem: Vec<u8>, key_pem: Vec<u8> },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret itself.
        f.write_str(match self {
            Credentials::None => "None",
            Credentials::Token(_) => "Token(..)",
            Credentials::TokenFile(_) => "TokenFile(..)",
            Credentials::ClientCertificate { .. } => "ClientCertificate(..)",
        })
    }
}

/// One API server and the credentials for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// `https://HOST:PORT` (no trailing slash).
    pub server: String,
    /// The CA certificates (PEM) the server's certificate must chain to; `None`: the
    /// system's roots.
    pub ca_pem: Option<Vec<u8>>,
    pub credentials: Credentials,
    /// The context's namespace (kubeconfig), or the service account's.
    pub namespace: Option<String>,
    /// Where the configuration came from (for messages): `kubeconfig PATH, context NAME` or
    /// `in-cluster service account`.
    pub origin: String,
}

/// Reads at most [`MAX_CONFIG_BYTES`] of a file.
pub(super) fn read_file(path: &Path) -> Result<Vec<u8>, KubeError> {
    let file = std::fs::File::open(path)
        .map_err(|e| KubeError::Config(format!("cannot read {}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| KubeError::Config(format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(KubeError::Config(format!(
            "{}: larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

/// A service-account token file's content, trimmed.
pub(super) fn read_token(path: &Path) -> Result<String, KubeError> {
    let bytes = read_file(path)?;
    let token = String::from_utf8(bytes)
        .map_err(|_| KubeError::Config(format!("{}: token is not text", path.display())))?;
    let token = token.trim().to_string();
    if token.is_empty() {
        return Err(KubeError::Config(format!(
            "{}: empty token",
            path.display()
        )));
    }
    Ok(token)
}

impl ClusterConfig {
    /// The in-cluster configuration of a pod: `KUBERNETES_SERVICE_HOST` and
    /// `KUBERNETES_SERVICE_PORT`, and the service account's `token`, `ca.crt` and
    /// `namespace` in [`SERVICE_ACCOUNT_DIR`].
    pub fn in_cluster() -> Result<ClusterConfig, KubeError> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST").ok();
        let port = std::env::var("KUBERNETES_SERVICE_PORT").ok();
        Self::in_cluster_from(
            host.as_deref(),
            port.as_deref(),
            Path::new(SERVICE_ACCOUNT_DIR),
        )
    }

    /// [`ClusterConfig::in_cluster`] from the given values.
    pub fn in_cluster_from(
        host: Option<&str>,
        port: Option<&str>,
        dir: &Path,
    ) -> Result<ClusterConfig, KubeError> {
        let (Some(host), Some(port)) = (host.filter(|h| !h.is_empty()), port) else {
            return Err(KubeError::Config(
                "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT \
                 are not set"
                    .into(),
            ));
        };
        if port.parse::<u16>().is_err() {
            return Err(KubeError::Config(format!(
                "KUBERNETES_SERVICE_PORT {port:?} is not a port"
            )));
        }
        let token = dir.join("token");
        // Read once now so a missing mount is reported at start, not at the first request.
        read_token(&token).map_err(|e| {
            KubeError::Config(format!(
                "{e} (is the service account token mounted? the chart mounts it only when \
                 a policy names a Secret or ConfigMap)"
            ))
        })?;
        let ca = read_file(&dir.join("ca.crt"))?;
        let namespace = read_file(&dir.join("namespace"))
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        // An IPv6 address is bracketed in the URL.
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        Ok(ClusterConfig {
            server: format!("https://{host}:{port}"),
            ca_pem: Some(ca),
            credentials: Credentials::TokenFile(token),
            namespace,
            origin: "in-cluster service account".into(),
        })
    }

    /// The kubeconfig `path` (else `$KUBECONFIG`, whose files are merged as kubectl merges
    /// them: the first file to set a value wins; else `~/.kube/config`), with `context`
    /// (else the `current-context`).
    pub fn from_kubeconfig(
        path: Option<&Path>,
        context: Option<&str>,
        limits: &Limits,
    ) -> Result<ClusterConfig, KubeError> {
        let files: Vec<PathBuf> = match path {
            Some(p) => vec![p.to_path_buf()],
            None => match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
                Some(list) => std::env::split_paths(&list)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect(),
                None => match std::env::var_os("HOME") {
                    Some(home) => vec![PathBuf::from(home).join(".kube/config")],
                    None => {
                        return Err(KubeError::Config(
                            "no kubeconfig: pass --kubeconfig, or set KUBECONFIG or HOME".into(),
                        ));
                    }
                },
            },
        };
        let mut merged = Kubeconfig::default();
        let mut read_any = false;
        for file in &files {
            // KUBECONFIG may list files that do not exist (kubectl skips them); a file named
            // by --kubeconfig must exist.
            if path.is_none() && files.len() > 1 && !file.exists() {
                continue;
            }
            let bytes = read_file(file)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| KubeError::Config(format!("{}: not UTF-8 text", file.display())))?;
            let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
            merged.merge(Kubeconfig::parse(
                &text,
                &file.display().to_string(),
                &base,
                limits,
            )?);
            read_any = true;
        }
        if !read_any {
            return Err(KubeError::Config(format!(
                "no kubeconfig file found ({})",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        merged.select(context)
    }
}

/// A kubeconfig file (`clientcmd/api/v1`), as far as mansign reads it; paths are made
/// absolute against the file's directory when it is read.
#[derive(Debug, Default, Clone)]
pub struct Kubeconfig {
    pub current_context: Option<String>,
    clusters: Vec<(String, ClusterEntry)>,
    users: Vec<(String, UserEntry)>,
    contexts: Vec<(String, ContextEntry)>,
    origin: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterEntry {
    server: String,
    #[serde(default)]
    certificate_authority: Option<PathBuf>,
    #[serde(default)]
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: Option<bool>,
    #[serde(default)]
    proxy_url: Option<String>,
    #[serde(default)]
    tls_server_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct UserEntry {
    #[serde(default)]
    client_certificate: Option<PathBuf>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key: Option<PathBuf>,
    #[serde(default)]
    client_key_data: Option<String>,
    #[serde(default)]
    token: Option<String>,
    #[serde(default, rename = "tokenFile")]
    token_file: Option<PathBuf>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    exec: Option<Value>,
    #[serde(default, rename = "auth-provider")]
    auth_provider: Option<Value>,
    #[serde(default, rename = "as")]
    impersonate: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct ContextEntry {
    cluster: String,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

fn config_error(origin: &str, reason: impl std::fmt::Display) -> KubeError {
    KubeError::Config(format!("{origin}: {reason}"))
}

fn absolute(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

fn base64_data(origin: &str, field: &str, text: &str) -> Result<Vec<u8>, KubeError> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| config_error(origin, format!("{field}: not base64: {e}")))
}

impl Kubeconfig {
    /// Parses a kubeconfig (YAML or JSON, read by mansign's manifest reader with its
    /// bounds); relative paths are taken from `base_dir`.
    pub fn parse(
        text: &str,
        origin: &str,
        base_dir: &Path,
        limits: &Limits,
    ) -> Result<Kubeconfig, KubeError> {
        let docs =
            crate::manifest::parse_documents(text, limits).map_err(|e| config_error(origin, e))?;
        let [(_, doc)] = docs.as_slice() else {
            return Err(config_error(origin, "a kubeconfig is one YAML document"));
        };
        let mut out = Kubeconfig {
            origin: origin.to_string(),
            current_context: doc
                .get("current-context")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            ..Kubeconfig::default()
        };
        fn named<T: serde::de::DeserializeOwned>(
            doc: &Value,
            list: &str,
            item: &str,
            origin: &str,
        ) -> Result<Vec<(String, T)>, KubeError> {
            let mut out = Vec::new();
            let Some(entries) = doc.get(list) else {
                return Ok(out);
            };
            if entries.is_null() {
                return Ok(out);
            }
            let Some(entries) = entries.as_array() else {
                return Err(config_error(origin, format!("{list}: not a list")));
            };
            for (i, entry) in entries.iter().enumerate() {
                let Some(name) = entry.get("name").and_then(Value::as_str) else {
                    return Err(config_error(origin, format!("{list}[{i}].name: missing")));
                };
                let value = entry.get(item).cloned().unwrap_or(Value::Null);
                let parsed = serde_json::from_value(value)
                    .map_err(|e| config_error(origin, format!("{list}[{i}].{item}: {e}")))?;
                out.push((name.to_string(), parsed));
            }
            Ok(out)
        }
        out.clusters = named::<ClusterEntry>(doc, "clusters", "cluster", origin)?;
        for (_, c) in &mut out.clusters {
            if let Some(p) = &c.certificate_authority {
                c.certificate_authority = Some(absolute(base_dir, p));
            }
        }
        out.users = named::<Option<UserEntry>>(doc, "users", "user", origin)?
            .into_iter()
            .map(|(n, u)| (n, u.unwrap_or_default()))
            .collect();
        for (_, u) in &mut out.users {
            for p in [
                &mut u.client_certificate,
                &mut u.client_key,
                &mut u.token_file,
            ]
            .into_iter()
            .flatten()
            {
                *p = absolute(base_dir, p);
            }
        }
        out.contexts = named::<ContextEntry>(doc, "contexts", "context", origin)?;
        Ok(out)
    }

    /// Adds `other`'s entries; a name already present keeps its first definition, and the
    /// first `current-context` set wins (kubectl's merge of `$KUBECONFIG`).
    pub fn merge(&mut self, other: Kubeconfig) {
        if self.origin.is_empty() {
            self.origin = other.origin;
        } else {
            self.origin = format!("{}:{}", self.origin, other.origin);
        }
        if self.current_context.is_none() {
            self.current_context = other.current_context;
        }
        fn add<T>(into: &mut Vec<(String, T)>, from: Vec<(String, T)>) {
            for (name, v) in from {
                if !into.iter().any(|(n, _)| *n == name) {
                    into.push((name, v));
                }
            }
        }
        add(&mut self.clusters, other.clusters);
        add(&mut self.users, other.users);
        add(&mut self.contexts, other.contexts);
    }

    /// The configuration of `context` (else the current context).
    pub fn select(&self, context: Option<&str>) -> Result<ClusterConfig, KubeError> {
        let origin = &self.origin;
        let Some(name) = context.or(self.current_context.as_deref()) else {
            return Err(config_error(
                origin,
                "no current-context: pass --context NAME",
            ));
        };
        let Some((_, ctx)) = self.contexts.iter().find(|(n, _)| n == name) else {
            return Err(config_error(origin, format!("no context named {name:?}")));
        };
        let Some((_, cluster)) = self.clusters.iter().find(|(n, _)| *n == ctx.cluster) else {
            return Err(config_error(
                origin,
                format!("context {name:?}: no cluster named {:?}", ctx.cluster),
            ));
        };
        let user = match &ctx.user {
            None => UserEntry::default(),
            Some(u) => match self.users.iter().find(|(n, _)| n == u) {
                Some((_, user)) => user.clone(),
                None => {
                    return Err(config_error(
                        origin,
                        format!("context {name:?}: no user named {u:?}"),
                    ));
                }
            },
        };
        let at = format!("{origin}, context {name:?}");
        if cluster.insecure_skip_tls_verify == Some(true) {
            return Err(config_error(
                &at,
                "insecure-skip-tls-verify is not supported: mansign reads signing keys only \
                 from a server it can authenticate; give certificate-authority(-data)",
            ));
        }
        for (field, set) in [
            ("proxy-url", cluster.proxy_url.is_some()),
            ("tls-server-name", cluster.tls_server_name.is_some()),
        ] {
            if set {
                return Err(config_error(
                    &at,
                    format!("cluster {field} is not supported"),
                ));
            }
        }
        for (field, set) in [
            ("exec", user.exec.is_some()),
            ("auth-provider", user.auth_provider.is_some()),
            (
                "username/password",
                user.username.is_some() || user.password.is_some(),
            ),
            ("as (impersonation)", user.impersonate.is_some()),
        ] {
            if set {
                return Err(config_error(
                    &at,
                    format!(
                        "user {field} is not supported (mansign authenticates with a client \
                         certificate or a bearer token); use a kubeconfig with one of those"
                    ),
                ));
            }
        }
        let server = cluster.server.trim_end_matches('/').to_string();
        if !server.starts_with("https://") {
            return Err(config_error(
                &at,
                format!("server {server:?} is not https://"),
            ));
        }
        let ca_pem = match (
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
        ) {
            (Some(data), _) => Some(base64_data(&at, "certificate-authority-data", data)?),
            (None, Some(path)) => Some(read_file(path)?),
            (None, None) => None,
        };
        let pem = |data: &Option<String>, path: &Option<PathBuf>, field: &str| match (data, path) {
            (Some(d), _) => base64_data(&at, &format!("{field}-data"), d).map(Some),
            (None, Some(p)) => read_file(p).map(Some),
            (None, None) => Ok(None),
        };
        let cert = pem(
            &user.client_certificate_data,
            &user.client_certificate,
            "client-certificate",
        )?;
        let key = pem(&user.client_key_data, &user.client_key, "client-key")?;
        let credentials = match (cert, key, &user.token, &user.token_file) {
            (Some(cert_pem), Some(key_pem), _, _) => {
                Credentials::ClientCertificate { cert_pem, key_pem }
            }
            (Some(_), None, _, _) | (None, Some(_), _, _) => {
                return Err(config_error(
                    &at,
                    "a client certificate needs its key (client-certificate and client-key)",
                ));
            }
            (None, None, Some(token), _) if !token.is_empty() => Credentials::Token(token.clone()),
            (None, None, _, Some(file)) => Credentials::TokenFile(file.clone()),
            _ => Credentials::None,
        };
        Ok(ClusterConfig {
            server,
            ca_pem,
            credentials,
            namespace: ctx.namespace.clone().filter(|n| !n.is_empty()),
            origin: at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kubeconfig with a context for each way of naming the server and the credentials.
    const CONFIG: &str = include_str!("../../testdata/kube/kubeconfig.yaml");

    fn client_certificate(cert: &[u8], key: &[u8]) -> Credentials {
        Credentials::ClientCertificate {
            cert_pem: cert.to_vec(),
            key_pem: key.to_vec(),
        }
    }

    fn parsed() -> Kubeconfig {
        Kubeconfig::parse(CONFIG, "kc", Path::new("/base"), &Limits::default()).unwrap()
    }

    #[test]
    fn current_context_with_client_certificate_data() {
        let c = parsed().select(None).unwrap();
        assert_eq!(c.server, "https://127.0.0.1:6443");
        assert_eq!(c.ca_pem.as_deref(), Some(&b"CA"[..]));
        assert_eq!(c.credentials, client_certificate(b"CERT", b"KEY"));
        assert_eq!(c.namespace.as_deref(), Some("team"));
        assert!(c.origin.contains("context \"admin\""), "{}", c.origin);
    }

    #[test]
    fn selected_context_with_a_token() {
        let c = parsed().select(Some("robot")).unwrap();
        assert_eq!(c.credentials, Credentials::Token("abc".into()));
        assert_eq!(c.namespace, None);
        assert_eq!(format!("{:?}", c.credentials), "Token(..)");
    }

    #[test]
    fn relative_paths_are_read_from_the_kubeconfigs_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("certs")).unwrap();
        std::fs::write(dir.path().join("certs/admin.crt"), "C").unwrap();
        std::fs::write(dir.path().join("ca.crt"), "A").unwrap();
        let key = dir.path().join("admin.key");
        std::fs::write(&key, "K").unwrap();
        let text = CONFIG.replace("/abs/admin.key", key.to_str().unwrap());
        let kc = Kubeconfig::parse(&text, "kc", dir.path(), &Limits::default()).unwrap();
        let c = kc.select(Some("files")).unwrap();
        assert_eq!(c.ca_pem.as_deref(), Some(&b"A"[..]));
        assert_eq!(c.credentials, client_certificate(b"C", b"K"));
        // A missing file is an error naming it.
        std::fs::remove_file(dir.path().join("ca.crt")).unwrap();
        let e = kc.select(Some("files")).unwrap_err().to_string();
        assert!(e.contains("ca.crt"), "{e}");
    }

    #[test]
    fn refusals_name_what_is_not_supported() {
        let kc = parsed();
        for (context, want) in [
            ("exec", "user exec is not supported"),
            ("provider", "user auth-provider is not supported"),
            ("nocluster", "no cluster named \"missing\""),
            ("nouser", "no user named \"missing\""),
            ("absent", "no context named \"absent\""),
        ] {
            let e = kc.select(Some(context)).unwrap_err().to_string();
            assert!(e.contains(want), "{context}: {e}");
        }
        for (from, to, want) in [
            (
                "    certificate-authority-data: Q0E=\n",
                "    insecure-skip-tls-verify: true\n",
                "insecure-skip-tls-verify",
            ),
            (
                "https://127.0.0.1:6443/",
                "http://127.0.0.1:6443",
                "not https://",
            ),
            ("    client-key-data: S0VZ\n", "", "needs its key"),
            ("current-context: admin\n", "", "no current-context"),
            ("Q0VSVA==", "\"%%%\"", "client-certificate-data: not base64"),
        ] {
            let text = CONFIG.replacen(from, to, 1);
            let e = Kubeconfig::parse(&text, "kc", Path::new("/"), &Limits::default())
                .and_then(|k| k.select(None))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{to}: {e}");
        }
        for (text, want) in [
            ("clusters: {a: b}\n", "clusters: not a list"),
            (
                "clusters:\n- cluster: {server: https://x}\n",
                "clusters[0].name",
            ),
            ("a: 1\n---\nb: 2\n", "one YAML document"),
            ("users:\n- name: u\n  user: {token: [1]}\n", "users[0].user"),
        ] {
            let e = Kubeconfig::parse(text, "kc", Path::new("/"), &Limits::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn merged_files_keep_the_first_definition() {
        let mut first = Kubeconfig::parse(
            "current-context: robot\nusers:\n- name: robot\n  user: {token: first}\n",
            "one",
            Path::new("/"),
            &Limits::default(),
        )
        .unwrap();
        first.merge(parsed());
        let c = first.select(None).unwrap();
        assert_eq!(c.credentials, Credentials::Token("first".into()));
        assert_eq!(c.server, "https://127.0.0.1:6443");
    }

    #[test]
    fn in_cluster_reads_the_service_account() {
        let dir = tempfile::tempdir().unwrap();
        let e = ClusterConfig::in_cluster_from(None, Some("443"), dir.path()).unwrap_err();
        assert!(e.to_string().contains("KUBERNETES_SERVICE_HOST"), "{e}");
        let e =
            ClusterConfig::in_cluster_from(Some("10.0.0.1"), Some("443"), dir.path()).unwrap_err();
        assert!(e.to_string().contains("token"), "{e}");
        std::fs::write(dir.path().join("token"), "tok\n").unwrap();
        std::fs::write(dir.path().join("ca.crt"), "CA").unwrap();
        std::fs::write(dir.path().join("namespace"), "mansign-system").unwrap();
        let c = ClusterConfig::in_cluster_from(Some("fd00::1"), Some("443"), dir.path()).unwrap();
        assert_eq!(c.server, "https://[fd00::1]:443");
        assert_eq!(c.namespace.as_deref(), Some("mansign-system"));
        assert_eq!(
            c.credentials,
            Credentials::TokenFile(dir.path().join("token"))
        );
        let e = ClusterConfig::in_cluster_from(Some("h"), Some("x"), dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a port"), "{e}");
    }
}
