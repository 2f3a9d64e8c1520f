//! Reads of named core objects (`secrets`, `configmaps`) over mansign's HTTP stack: one
//! object (`get`), a list narrowed to one name (`fieldSelector=metadata.name=NAME`) with its
//! `resourceVersion`, and a watch from that version, read event by event; and, for
//! `verify-resource`, reads of any resource API discovery names (discovery.rs). Every body
//! and every watch event is bounded ([`Limits::max_document_bytes`], the API server's own
//! request limit); TLS trusts only the configured CA (tls.rs). Every read is bounded in time
//! ([`READ_TIMEOUT`]), and each request has a connection of its own (HTTP/1.1, no pool).
//!
//! Each request authenticates as the configuration says (a token, a token file re-read, a
//! client certificate, or an `exec` plugin's credential, exec.rs), acts as the configured
//! impersonation (`Impersonate-*` headers) and goes through the proxy the one rule of
//! proxy.rs picks. A 401 to an `exec` credential drops it and the request is made once more
//! with a fresh one (client-go refreshes on a 401 too, for the next request).

use super::KubeError;
use super::config::{ClusterConfig, Credentials, Impersonation, ImpersonationSpelling, read_token};
use super::exec::{self, ExecCredential};
use crate::limits::Limits;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Time to connect to the API server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a get or list.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for the next bytes of any answer: above the 30 s a watch of the
/// admission server's key watcher is asked to last (`timeoutSeconds`), so a healthy watch
/// never meets it, while a connection that went silent without a FIN is given up.
const READ_TIMEOUT: Duration = Duration::from_secs(40);

/// How the client's connections are made (kept to make one for an exec plugin's client
/// certificate).
#[derive(Debug)]
struct Transport {
    ca_pem: Option<Vec<u8>>,
    tls_server_name: Option<String>,
    proxy: Option<url::Url>,
    origin: String,
}

impl Transport {
    /// An HTTP client presenting `identity` (PEM chain, PEM key) when given.
    fn http(&self, identity: Option<(&[u8], &[u8])>) -> Result<reqwest::Client, KubeError> {
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("mansign/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            // One connection per request, HTTP/1.1: a connection that died silently (no
            // FIN) then holds one request until its timeout, never the next one (a pooled
            // or HTTP/2 connection would carry every later list and watch into the same
            // silence).
            .http1_only()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            // reqwest's own reading of the proxy environment is not kubectl's: proxy.rs is
            // the only rule.
            .no_proxy();
        if let Some(proxy) = &self.proxy {
            let proxy = reqwest::Proxy::all(proxy.as_str())
                .map_err(|e| KubeError::Config(format!("{}: proxy: {e}", self.origin)))?;
            builder = builder.proxy(proxy);
        }
        match (&self.ca_pem, identity) {
            (Some(ca), identity) => {
                let tls = super::tls::client_config(
                    ca,
                    self.tls_server_name.as_deref(),
                    identity,
                    &self.origin,
                )?;
                builder = builder.tls_backend_preconfigured(tls);
            }
            (None, Some((cert_pem, key_pem))) => {
                let mut pem = cert_pem.to_vec();
                pem.push(b'\n');
                pem.extend_from_slice(key_pem);
                let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                    KubeError::Config(format!("{}: client certificate: {e}", self.origin))
                })?;
                builder = builder.identity(identity);
            }
            (None, None) => {}
        }
        builder
            .build()
            .map_err(|e| KubeError::Config(format!("{}: {}", self.origin, error_chain(&e))))
    }
}

/// A client for one API server.
#[derive(Clone)]
pub struct KubeClient {
    http: reqwest::Client,
    transport: Arc<Transport>,
    /// The HTTP client for an exec plugin's client certificate, and that certificate.
    exec_http: Arc<Mutex<Option<ExecHttp>>>,
    server: String,
    credentials: Credentials,
    impersonation: Impersonation,
    max_bytes: usize,
    origin: String,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never a credential: not the exec plugin's key held for its HTTP client.
        f.debug_struct("KubeClient")
            .field("server", &self.server)
            .field("credentials", &self.credentials)
            .field("impersonation", &self.impersonation)
            // The proxy's address only: its URL may carry a password.
            .field(
                "proxy",
                &self.transport.proxy.as_ref().map(|u| {
                    format!(
                        "{}://{}:{}",
                        u.scheme(),
                        u.host_str().unwrap_or_default(),
                        u.port_or_known_default().unwrap_or_default()
                    )
                }),
            )
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// An exec plugin's client certificate and key, and the HTTP client presenting them.
type ExecHttp = (Vec<u8>, Vec<u8>, reqwest::Client);

/// What one request authenticates with.
struct Auth {
    http: reqwest::Client,
    token: Option<String>,
    /// The exec credential used, to drop on a 401.
    exec: Option<Arc<ExecCredential>>,
}

/// A list's items and the version to watch from.
#[derive(Debug, Clone)]
pub struct ObjectList {
    pub items: Vec<Value>,
    pub resource_version: String,
}

/// One watch event (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`).
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// The object as it is now.
    Applied(Value),
    Deleted(Value),
    /// Only a new `resourceVersion`.
    Bookmark(String),
    /// A `Status`: its code (410: the version is gone, list again) and message.
    Error {
        code: u16,
        message: String,
    },
}

/// The `metadata.resourceVersion` of an object.
pub fn resource_version(object: &Value) -> Option<&str> {
    object
        .get("metadata")
        .and_then(|m| m.get("resourceVersion"))
        .and_then(Value::as_str)
}

/// A path segment checked to be a Kubernetes name (no `/`, `?`, `%`...).
pub(super) fn segment(what: &str, text: &str) -> Result<(), KubeError> {
    let ok = !text.is_empty()
        && text.len() <= 253
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(KubeError::Config(format!(
            "{what} {text:?} is not a Kubernetes name"
        )))
    }
}

/// An `Impersonate-Extra-` key as client-go writes it: bytes that are not HTTP token
/// characters, and `%`, percent-encoded (`%XX`), so any key survives as a header name.
fn extra_header_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl KubeClient {
    pub fn new(config: &ClusterConfig, limits: &Limits) -> Result<KubeClient, KubeError> {
        let server = url::Url::parse(&config.server).map_err(|e| {
            KubeError::Config(format!(
                "{}: server {:?}: {e}",
                config.origin, config.server
            ))
        })?;
        let proxy = super::proxy::choose(&server, config.proxy_url.as_deref(), |name| {
            std::env::var(name).ok()
        })
        .map_err(|reason| KubeError::Config(format!("{}: {reason}", config.origin)))?
        .map(|(url, _)| url);
        config
            .impersonation
            .check(&ImpersonationSpelling::KUBECONFIG)
            .map_err(|reason| KubeError::Config(format!("{}: {reason}", config.origin)))?;
        if config.tls_server_name.is_some() && config.ca_pem.is_none() {
            return Err(KubeError::Config(format!(
                "{}: tls-server-name needs the cluster's certificate authority",
                config.origin
            )));
        }
        let transport = Transport {
            ca_pem: config.ca_pem.clone(),
            tls_server_name: config.tls_server_name.clone(),
            proxy,
            origin: config.origin.clone(),
        };
        let http = match &config.credentials {
            Credentials::ClientCertificate { cert_pem, key_pem } => {
                transport.http(Some((cert_pem, key_pem)))?
            }
            _ => transport.http(None)?,
        };
        Ok(KubeClient {
            http,
            transport: Arc::new(transport),
            exec_http: Arc::default(),
            server: config.server.clone(),
            credentials: config.credentials.clone(),
            impersonation: config.impersonation.clone(),
            max_bytes: limits.max_document_bytes,
            origin: config.origin.clone(),
        })
    }

    /// The API server's URL (`https://HOST:PORT`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Where the configuration came from (for messages).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    fn url(&self, namespace: &str, resource: &str) -> Result<String, KubeError> {
        segment("namespace", namespace)?;
        if !matches!(resource, "secrets" | "configmaps") {
            return Err(KubeError::Config(format!(
                "{resource}: only secrets and configmaps are read"
            )));
        }
        Ok(format!(
            "{}/api/v1/namespaces/{namespace}/{resource}",
            self.server
        ))
    }

    /// The credential for the next request (an exec plugin runs when it has none valid).
    async fn auth(&self) -> Result<Auth, KubeError> {
        let plain = |token| Auth {
            http: self.http.clone(),
            token,
            exec: None,
        };
        match &self.credentials {
            Credentials::Token(token) => Ok(plain(Some(token.clone()))),
            Credentials::TokenFile(path) => Ok(plain(Some(read_token(path)?))),
            Credentials::Exec(config) => {
                // A valid cached credential needs no blocking thread; a plugin run does.
                let credential = match exec::cached(config) {
                    Some(cached) => cached,
                    None => {
                        let run = (**config).clone();
                        tokio::task::spawn_blocking(move || exec::credential(&run))
                            .await
                            .map_err(|e| KubeError::ExecPlugin {
                                origin: config.origin.clone(),
                                command: config.command.display().to_string(),
                                reason: e.to_string(),
                            })??
                    }
                };
                let http = match &credential.client_certificate {
                    None => self.http.clone(),
                    Some((cert, key)) => self.exec_http(cert, key)?,
                };
                Ok(Auth {
                    http,
                    token: credential.token.clone(),
                    exec: Some(credential),
                })
            }
            _ => Ok(plain(None)),
        }
    }

    /// The HTTP client presenting an exec plugin's client certificate (made once per
    /// certificate).
    fn exec_http(&self, cert: &[u8], key: &[u8]) -> Result<reqwest::Client, KubeError> {
        let mut cached = self.exec_http.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((held_cert, held_key, http)) = cached.as_ref()
            && held_cert == cert
            && held_key == key
        {
            return Ok(http.clone());
        }
        let http = self.transport.http(Some((cert, key)))?;
        *cached = Some((cert.to_vec(), key.to_vec(), http.clone()));
        Ok(http)
    }

    fn impersonate(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let who = &self.impersonation;
        if let Some(user) = &who.user {
            req = req.header("Impersonate-User", user);
        }
        if let Some(uid) = &who.uid {
            req = req.header("Impersonate-Uid", uid);
        }
        for group in &who.groups {
            req = req.header("Impersonate-Group", group);
        }
        for (key, values) in &who.extra {
            let name = format!("Impersonate-Extra-{}", extra_header_key(key));
            for value in values {
                req = req.header(name.as_str(), value);
            }
        }
        req
    }

    /// `GET url?query`, authenticated; a success, else the server's status as an error.
    async fn send(
        &self,
        url: &str,
        query: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<reqwest::Response, KubeError> {
        let mut retried = false;
        loop {
            let auth = self.auth().await?;
            let mut req = auth
                .http
                .get(url)
                .header(reqwest::header::ACCEPT, "application/json")
                .timeout(timeout);
            if !query.is_empty() {
                req = req.query(query);
            }
            if let Some(token) = &auth.token {
                req = req.bearer_auth(token);
            }
            let response = self
                .impersonate(req)
                .send()
                .await
                .map_err(|e| KubeError::Http {
                    server: self.server.clone(),
                    reason: error_chain(&e),
                })?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if status == reqwest::StatusCode::UNAUTHORIZED
                && !retried
                && let (Credentials::Exec(config), Some(used)) = (&self.credentials, &auth.exec)
            {
                exec::invalidate(config, used);
                retried = true;
                continue;
            }
            let body = self
                .body(response, self.max_bytes)
                .await
                .unwrap_or_default();
            let message = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(300).collect());
            return Err(KubeError::Status {
                code: status.as_u16(),
                message,
            });
        }
    }

    /// `GET server/path?query` as JSON, the body at most `max_bytes`; with the body's
    /// size (what a paged read counts against its limit).
    pub(super) async fn get_json(
        &self,
        path: &str,
        query: &[(&str, &str)],
        max_bytes: usize,
    ) -> Result<(Value, usize), KubeError> {
        self.json(&format!("{}{path}", self.server), query, max_bytes)
            .await
    }

    /// The whole body, at most `max_bytes`.
    async fn body(
        &self,
        mut response: reqwest::Response,
        max_bytes: usize,
    ) -> Result<Vec<u8>, KubeError> {
        let mut out = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| KubeError::Http {
            server: self.server.clone(),
            reason: error_chain(&e),
        })? {
            if out.len() + chunk.len() > max_bytes {
                return Err(KubeError::TooLarge { limit: max_bytes });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// `GET url?query` as JSON, the body at most `max_bytes`, and the body's size.
    async fn json(
        &self,
        url: &str,
        query: &[(&str, &str)],
        max_bytes: usize,
    ) -> Result<(Value, usize), KubeError> {
        let response = self.send(url, query, REQUEST_TIMEOUT).await?;
        let body = self.body(response, max_bytes).await?;
        let value =
            serde_json::from_slice(&body).map_err(|e| KubeError::Malformed(e.to_string()))?;
        Ok((value, body.len()))
    }

    /// One object; `None` when it does not exist.
    pub async fn get(
        &self,
        namespace: &str,
        resource: &str,
        name: &str,
    ) -> Result<Option<Value>, KubeError> {
        segment("name", name)?;
        let url = format!("{}/{name}", self.url(namespace, resource)?);
        match self.json(&url, &[], self.max_bytes).await {
            Ok((v, _)) => Ok(Some(v)),
            Err(KubeError::Status { code: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The objects named `name` (none or one) and the list's `resourceVersion`.
    pub async fn list(
        &self,
        namespace: &str,
        resource: &str,
        name: &str,
    ) -> Result<ObjectList, KubeError> {
        segment("name", name)?;
        let url = self.url(namespace, resource)?;
        let selector = format!("metadata.name={name}");
        let (list, _) = self
            .json(
                &url,
                &[("fieldSelector", selector.as_str())],
                self.max_bytes,
            )
            .await?;
        let items = list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let resource_version = resource_version(&list)
            .ok_or_else(|| KubeError::Malformed("list without metadata.resourceVersion".into()))?
            .to_string();
        Ok(ObjectList {
            items,
            resource_version,
        })
    }

    /// Watches the objects named `name` from `resource_version`, for at most `timeout`
    /// (the server ends the watch then; resume from the last version seen).
    pub async fn watch(
        &self,
        namespace: &str,
        resource: &str,
        name: &str,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<WatchStream, KubeError> {
        segment("name", name)?;
        let url = self.url(namespace, resource)?;
        let selector = format!("metadata.name={name}");
        let seconds = timeout.as_secs().max(1).to_string();
        let query = [
            ("watch", "1"),
            ("fieldSelector", selector.as_str()),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", seconds.as_str()),
        ];
        // The server ends the watch at timeoutSeconds; the timeout is only a backstop.
        let response = self.send(&url, &query, timeout + REQUEST_TIMEOUT).await?;
        Ok(WatchStream {
            response,
            buffer: Vec::new(),
            max_bytes: self.max_bytes,
            server: self.server.clone(),
        })
    }
}

/// The events of one watch request, newline-delimited JSON.
#[derive(Debug)]
pub struct WatchStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
    max_bytes: usize,
    server: String,
}

impl WatchStream {
    /// The next event; `None` when the server ended the watch.
    pub async fn next(&mut self) -> Result<Option<WatchEvent>, KubeError> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return parse_event(&line).map(Some);
            }
            if self.buffer.len() > self.max_bytes {
                return Err(KubeError::TooLarge {
                    limit: self.max_bytes,
                });
            }
            match self.response.chunk().await.map_err(|e| KubeError::Http {
                server: self.server.clone(),
                reason: error_chain(&e),
            })? {
                Some(chunk) => self.buffer.extend_from_slice(&chunk),
                None if self.buffer.iter().all(u8::is_ascii_whitespace) => return Ok(None),
                None => {
                    let line = std::mem::take(&mut self.buffer);
                    return parse_event(&line).map(Some);
                }
            }
        }
    }
}

fn parse_event(line: &[u8]) -> Result<WatchEvent, KubeError> {
    let event: Value = serde_json::from_slice(line)
        .map_err(|e| KubeError::Malformed(format!("watch event: {e}")))?;
    let object = event.get("object").cloned().unwrap_or(Value::Null);
    match event.get("type").and_then(Value::as_str) {
        Some("ADDED" | "MODIFIED") => Ok(WatchEvent::Applied(object)),
        Some("DELETED") => Ok(WatchEvent::Deleted(object)),
        Some("BOOKMARK") => Ok(WatchEvent::Bookmark(
            resource_version(&object).unwrap_or_default().to_string(),
        )),
        Some("ERROR") => Ok(WatchEvent::Error {
            code: object
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(0),
            message: object
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }),
        other => Err(KubeError::Malformed(format!("watch event type {other:?}"))),
    }
}

/// An error with its sources (reqwest's own message is only the outermost).
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    crate::error::chain(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events() {
        let e =
            parse_event(br#"{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"7"}}}"#)
                .unwrap();
        assert!(matches!(e, WatchEvent::Applied(o) if resource_version(&o) == Some("7")));
        let e =
            parse_event(br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#)
                .unwrap();
        assert!(matches!(e, WatchEvent::Bookmark(v) if v == "9"));
        let e =
            parse_event(br#"{"type":"ERROR","object":{"code":410,"message":"too old"}}"#).unwrap();
        assert!(matches!(e, WatchEvent::Error { code: 410, .. }));
        assert!(parse_event(b"{\"type\":\"X\"}").is_err());
        assert!(parse_event(b"not json").is_err());
    }

    #[test]
    fn only_named_secrets_and_configmaps() {
        let config = ClusterConfig::new("https://127.0.0.1:1", None, Credentials::None, "test");
        let c = KubeClient::new(&config, &Limits::default()).unwrap();
        assert!(c.url("ns", "pods").is_err());
        assert!(c.url("a/b", "secrets").is_err());
        assert!(c.url("ns", "secrets").is_ok());
        assert!(segment("name", "x?watch=1").is_err());
        assert!(segment("name", "..").is_ok()); // a dot-only name is refused by the server
    }

    #[test]
    fn debug_shows_no_secret() {
        let mut config = ClusterConfig::new(
            "https://10.0.0.1:6443",
            None,
            Credentials::Token("s3cret-token".into()),
            "test",
        );
        config.proxy_url = Some("http://user:s3cret-pass@proxy:3128".into());
        let c = KubeClient::new(&config, &Limits::default()).unwrap();
        let text = format!("{c:?}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("http://proxy:3128"), "{text}");
    }

    #[test]
    fn extra_keys_are_percent_encoded_as_client_go_does() {
        assert_eq!(extra_header_key("scopes"), "scopes");
        assert_eq!(
            extra_header_key("example.com/team a%"),
            "example.com%2Fteam%20a%25"
        );
    }
}
