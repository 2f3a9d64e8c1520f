//! Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file (the
//! current or a selected context; client certificate and key, bearer token or token file;
//! the CA as data or file) or the in-cluster service account (token, CA and
//! `KUBERNETES_SERVICE_HOST`/`_PORT`, as client-go's `rest.InClusterConfig` reads them).
//!
//! What kubectl supports for reading objects: client certificates, tokens and token files,
//! `exec` credential plugins (exec.rs), impersonation (`as`, `as-uid`, `as-groups`,
//! `as-user-extra`), a cluster's `proxy-url` (proxy.rs) and `tls-server-name` (tls.rs).
//! `auth-provider` plugins, basic auth and `insecure-skip-tls-verify` are refused with the
//! field named, never silently skipped. Files are read with a size bound.

use super::KubeError;
use super::exec::ExecConfig;
use crate::limits::Limits;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The service account directory a pod's token is mounted at.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Largest kubeconfig, certificate, key or token file read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// How requests authenticate.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// A credential plugin run for a token or a client certificate (kept until it expires).
    Exec(Box<ExecConfig>),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret itself.
        f.write_str(match self {
            Credentials::None => "None",
            Credentials::Token(_) => "Token(..)",
            Credentials::TokenFile(_) => "TokenFile(..)",
            Credentials::ClientCertificate { .. } => "ClientCertificate(..)",
            Credentials::Exec(_) => "Exec(..)",
        })
    }
}

/// Who the requests act as (`Impersonate-*` headers), when not the authenticated user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Impersonation {
    /// `as` / `--as`: `Impersonate-User`.
    pub user: Option<String>,
    /// `as-uid`: `Impersonate-Uid`.
    pub uid: Option<String>,
    /// `as-groups` / `--as-group`: one `Impersonate-Group` each.
    pub groups: Vec<String>,
    /// `as-user-extra`: `Impersonate-Extra-KEY`, one per value.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Impersonation {
    /// Impersonating `user`, in `groups`.
    pub fn user(user: impl Into<String>, groups: Vec<String>) -> Impersonation {
        Impersonation {
            user: Some(user.into()),
            groups,
            ..Impersonation::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Impersonation::default()
    }
}

/// One API server and the credentials for it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// `https://HOST:PORT` (no trailing slash).
    pub server: String,
    /// The CA certificates (PEM) the server's certificate must chain to; `None`: the
    /// system's roots.
    pub ca_pem: Option<Vec<u8>>,
    pub credentials: Credentials,
    /// `tls-server-name`: the name the server's certificate must be valid for, instead of
    /// the URL's host.
    pub tls_server_name: Option<String>,
    /// `proxy-url`: every request goes through this proxy; `None`: the environment's
    /// proxy, as kubectl reads it (`HTTPS_PROXY`, `NO_PROXY`; docs/cli.md).
    pub proxy_url: Option<String>,
    pub impersonation: Impersonation,
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
    /// A configuration for `server` with `credentials`, trusting `ca_pem` (`None`: the
    /// system's roots), no proxy rule of its own, no impersonation.
    pub fn new(
        server: impl Into<String>,
        ca_pem: Option<Vec<u8>>,
        credentials: Credentials,
        origin: impl Into<String>,
    ) -> ClusterConfig {
        ClusterConfig {
            server: server.into(),
            ca_pem,
            credentials,
            tls_server_name: None,
            proxy_url: None,
            impersonation: Impersonation::default(),
            namespace: None,
            origin: origin.into(),
        }
    }

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
        let mut config = ClusterConfig::new(
            format!("https://{host}:{port}"),
            Some(ca),
            Credentials::TokenFile(token),
            "in-cluster service account",
        );
        config.namespace = namespace;
        Ok(config)
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
    #[serde(default, rename = "as-uid")]
    impersonate_uid: Option<String>,
    #[serde(default, rename = "as-groups")]
    impersonate_groups: Option<Vec<String>>,
    #[serde(default, rename = "as-user-extra")]
    impersonate_extra: Option<BTreeMap<String, Vec<String>>>,
    /// The directory of the kubeconfig that defined the user (an exec command with a `/`
    /// is relative to it).
    #[serde(skip)]
    dir: PathBuf,
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
            u.dir = base_dir.to_path_buf();
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
        let user_name = ctx.user.as_deref().unwrap_or_default();
        let user_at = format!("{at}, user {user_name:?}");
        if user.auth_provider.is_some() {
            return Err(config_error(
                &user_at,
                "user auth-provider is not supported (kubectl itself dropped its gcp and azure \
                 auth-providers): use the provider's exec credential plugin instead, e.g. \
                 gke-gcloud-auth-plugin (GKE), kubelogin (AKS, OIDC), `aws eks get-token` (EKS)",
            ));
        }
        if user.username.is_some() || user.password.is_some() {
            return Err(config_error(
                &user_at,
                "user username/password (basic auth) is not supported (the API server removed \
                 basic authentication in Kubernetes 1.19): use a client certificate, a token \
                 or an exec credential plugin",
            ));
        }
        let server = cluster.server.trim_end_matches('/').to_string();
        if !server.starts_with("https://") {
            return Err(config_error(
                &at,
                format!("server {server:?} is not https://"),
            ));
        }
        let server_url = url::Url::parse(&server)
            .map_err(|e| config_error(&at, format!("server {server:?}: {e}")))?;
        if server_url.host_str().is_none() {
            return Err(config_error(&at, format!("server {server:?}: no host")));
        }
        let tls_server_name = cluster.tls_server_name.clone().filter(|n| !n.is_empty());
        let proxy_url = cluster.proxy_url.clone().filter(|p| !p.is_empty());
        let ca_pem = match (
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
        ) {
            (Some(data), _) => Some(base64_data(&at, "certificate-authority-data", data)?),
            (None, Some(path)) => Some(read_file(path)?),
            (None, None) => None,
        };
        if tls_server_name.is_some() && ca_pem.is_none() {
            return Err(config_error(
                &at,
                "cluster tls-server-name needs certificate-authority or \
                 certificate-authority-data (mansign checks a renamed server only against the \
                 cluster's own CA)",
            ));
        }
        let pem = |data: &Option<String>, path: &Option<PathBuf>, field: &str| match (data, path) {
            (Some(d), _) => base64_data(&user_at, &format!("{field}-data"), d).map(Some),
            (None, Some(p)) => read_file(p).map(Some),
            (None, None) => Ok(None),
        };
        let cert = pem(
            &user.client_certificate_data,
            &user.client_certificate,
            "client-certificate",
        )?;
        let key = pem(&user.client_key_data, &user.client_key, "client-key")?;
        let token = user.token.clone().filter(|t| !t.is_empty());
        let mut credentials = match (cert, key, token, &user.token_file) {
            (Some(cert_pem), Some(key_pem), _, _) => {
                Credentials::ClientCertificate { cert_pem, key_pem }
            }
            (Some(_), None, _, _) | (None, Some(_), _, _) => {
                return Err(config_error(
                    &user_at,
                    "a client certificate needs its key (client-certificate and client-key)",
                ));
            }
            (None, None, Some(token), _) => Credentials::Token(token),
            (None, None, _, Some(file)) => Credentials::TokenFile(file.clone()),
            _ => Credentials::None,
        };
        if let Some(exec) = &user.exec {
            if credentials != Credentials::None {
                return Err(config_error(
                    &user_at,
                    "user exec and a client certificate or token together: which one \
                     authenticates is ambiguous; keep one",
                ));
            }
            // `spec.cluster` of KUBERNETES_EXEC_INFO, made only for provideClusterInfo.
            let info = || {
                use base64::Engine as _;
                let mut info = serde_json::json!({"server": server});
                if let Some(ca) = &ca_pem {
                    info["certificate-authority-data"] =
                        base64::engine::general_purpose::STANDARD.encode(ca).into();
                }
                if let Some(name) = &tls_server_name {
                    info["tls-server-name"] = name.clone().into();
                }
                if let Some(proxy) = &proxy_url {
                    info["proxy-url"] = proxy.clone().into();
                }
                info
            };
            credentials = Credentials::Exec(Box::new(ExecConfig::parse(
                exec, &user_at, &user.dir, info,
            )?));
        }
        let impersonation = Impersonation {
            user: user.impersonate.clone().filter(|u| !u.is_empty()),
            uid: user.impersonate_uid.clone().filter(|u| !u.is_empty()),
            groups: user.impersonate_groups.clone().unwrap_or_default(),
            extra: user.impersonate_extra.clone().unwrap_or_default(),
        };
        impersonation
            .check(&ImpersonationSpelling::KUBECONFIG)
            .map_err(|reason| config_error(&user_at, reason))?;
        let mut config = ClusterConfig::new(server, ca_pem, credentials, user_at);
        config.tls_server_name = tls_server_name;
        config.proxy_url = proxy_url;
        config.impersonation = impersonation;
        config.namespace = ctx.namespace.clone().filter(|n| !n.is_empty());
        Ok(config)
    }
}

/// How an impersonation was written, for [`Impersonation::check`]'s message: the name of
/// the user setting, and of the settings that need it.
pub(super) struct ImpersonationSpelling {
    pub user: &'static str,
    pub others: &'static str,
}

impl ImpersonationSpelling {
    /// A kubeconfig user's fields (also what a library caller's configuration is named by).
    pub const KUBECONFIG: ImpersonationSpelling = ImpersonationSpelling {
        user: "`as`",
        others: "as-uid, as-groups or as-user-extra",
    };
    /// The command line's flags.
    pub const FLAGS: ImpersonationSpelling = ImpersonationSpelling {
        user: "--as",
        others: "--as-group",
    };
}

impl Impersonation {
    /// client-go's rule: a uid, groups or extras only with a user to impersonate.
    pub(super) fn check(&self, spelled: &ImpersonationSpelling) -> Result<(), String> {
        if self.user.is_none()
            && (self.uid.is_some() || !self.groups.is_empty() || !self.extra.is_empty())
        {
            return Err(format!(
                "{} without {} (the user to impersonate)",
                spelled.others, spelled.user
            ));
        }
        Ok(())
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
            ("exec", "user \"exec\": user exec: interactiveMode: missing"),
            ("provider", "user auth-provider is not supported"),
            ("provider", "gke-gcloud-auth-plugin"),
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
    fn exec_impersonation_proxy_and_server_name_are_read() {
        let text = r#"
clusters:
- name: eks
  cluster:
    server: https://api.example.com
    certificate-authority-data: Q0E=
    tls-server-name: kubernetes
    proxy-url: http://proxy:3128
users:
- name: eks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [eks, get-token]
      interactiveMode: Never
      provideClusterInfo: true
    as: jane
    as-uid: "1000"
    as-groups: [dev, ops]
    as-user-extra: {scopes: [view]}
contexts:
- name: eks
  context: {cluster: eks, user: eks}
current-context: eks
"#;
        let c = Kubeconfig::parse(text, "kc", Path::new("/home/k"), &Limits::default())
            .unwrap()
            .select(None)
            .unwrap();
        assert_eq!(c.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(c.proxy_url.as_deref(), Some("http://proxy:3128"));
        assert_eq!(c.impersonation.user.as_deref(), Some("jane"));
        assert_eq!(c.impersonation.uid.as_deref(), Some("1000"));
        assert_eq!(c.impersonation.groups, ["dev", "ops"]);
        assert_eq!(c.impersonation.extra["scopes"], ["view"]);
        let Credentials::Exec(exec) = &c.credentials else {
            panic!("{:?}", c.credentials);
        };
        assert_eq!(exec.command, Path::new("/home/k/./bin/get-token"));
        assert_eq!(exec.args, ["eks", "get-token"]);
        let cluster = exec.cluster.as_ref().unwrap();
        assert_eq!(cluster["server"], "https://api.example.com");
        assert_eq!(cluster["certificate-authority-data"], "Q0E=");
        assert_eq!(cluster["tls-server-name"], "kubernetes");
        assert_eq!(format!("{:?}", c.credentials), "Exec(..)");
        for (from, to, want) in [
            (
                "    as: jane\n",
                "",
                "as-uid, as-groups or as-user-extra without `as`",
            ),
            (
                "    as: jane\n",
                "    as: jane\n    token: abc\n",
                "user exec and a client certificate or token together",
            ),
            (
                "    as: jane\n",
                "    as: jane\n    username: u\n    password: p\n",
                "username/password (basic auth) is not supported",
            ),
            (
                "    certificate-authority-data: Q0E=\n",
                "",
                "tls-server-name needs certificate-authority",
            ),
        ] {
            let e = Kubeconfig::parse(
                &text.replacen(from, to, 1),
                "kc",
                Path::new("/"),
                &Limits::default(),
            )
            .and_then(|k| k.select(None))
            .unwrap_err()
            .to_string();
            assert!(e.contains(want), "{to}: {e}");
            assert!(e.starts_with("kc, context \"eks\""), "{e}");
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
