//! Reads of named core objects (`secrets`, `configmaps`) over mansign's HTTP stack: one
//! object (`get`), a list narrowed to one name (`fieldSelector=metadata.name=NAME`) with its
//! `resourceVersion`, and a watch from that version, read event by event. Every body and
//! every watch event is bounded ([`Limits::max_document_bytes`], the API server's own
//! request limit); TLS trusts only the configured CA. Every read is bounded in time
//! ([`READ_TIMEOUT`]), and each request has a connection of its own (HTTP/1.1, no pool).

use super::KubeError;
use super::config::{ClusterConfig, Credentials, read_token};
use crate::limits::Limits;
use serde_json::Value;
use std::time::Duration;

/// Time to connect to the API server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a get or list.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for the next bytes of any answer: above the 30 s a watch of the
/// admission server's key watcher is asked to last (`timeoutSeconds`), so a healthy watch
/// never meets it, while a connection that went silent without a FIN is given up.
const READ_TIMEOUT: Duration = Duration::from_secs(40);

/// A client for one API server.
#[derive(Debug, Clone)]
pub struct KubeClient {
    http: reqwest::Client,
    server: String,
    credentials: Credentials,
    max_bytes: usize,
    origin: String,
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
fn segment(what: &str, text: &str) -> Result<(), KubeError> {
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

impl KubeClient {
    pub fn new(config: &ClusterConfig, limits: &Limits) -> Result<KubeClient, KubeError> {
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
            .redirect(reqwest::redirect::Policy::none());
        if let Some(ca) = &config.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(ca).map_err(|e| {
                KubeError::Config(format!("{}: certificate authority: {e}", config.origin))
            })?;
            if certs.is_empty() {
                return Err(KubeError::Config(format!(
                    "{}: certificate authority: no PEM certificate",
                    config.origin
                )));
            }
            builder = builder.tls_certs_only(certs);
        }
        if let Credentials::ClientCertificate { cert_pem, key_pem } = &config.credentials {
            let mut pem = cert_pem.clone();
            pem.push(b'\n');
            pem.extend_from_slice(key_pem);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                KubeError::Config(format!("{}: client certificate: {e}", config.origin))
            })?;
            builder = builder.identity(identity);
        }
        let http = builder
            .build()
            .map_err(|e| KubeError::Config(format!("{}: {e}", config.origin)))?;
        Ok(KubeClient {
            http,
            server: config.server.clone(),
            credentials: config.credentials.clone(),
            max_bytes: limits.max_document_bytes,
            origin: config.origin.clone(),
        })
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

    fn request(&self, url: &str) -> Result<reqwest::RequestBuilder, KubeError> {
        let req = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        Ok(match &self.credentials {
            Credentials::Token(token) => req.bearer_auth(token),
            Credentials::TokenFile(path) => req.bearer_auth(read_token(path)?),
            _ => req,
        })
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<reqwest::Response, KubeError> {
        let response = req.send().await.map_err(|e| KubeError::Http {
            server: self.server.clone(),
            reason: error_chain(&e),
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = self.body(response).await.unwrap_or_default();
        let message = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(300).collect());
        Err(KubeError::Status {
            code: status.as_u16(),
            message,
        })
    }

    /// The whole body, at most `max_bytes`.
    async fn body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, KubeError> {
        let mut out = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| KubeError::Http {
            server: self.server.clone(),
            reason: error_chain(&e),
        })? {
            if out.len() + chunk.len() > self.max_bytes {
                return Err(KubeError::TooLarge {
                    limit: self.max_bytes,
                });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    async fn json(&self, req: reqwest::RequestBuilder) -> Result<Value, KubeError> {
        let response = self.send(req).await?;
        let body = self.body(response).await?;
        serde_json::from_slice(&body).map_err(|e| KubeError::Malformed(e.to_string()))
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
        match self
            .json(self.request(&url)?.timeout(REQUEST_TIMEOUT))
            .await
        {
            Ok(v) => Ok(Some(v)),
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
        let req = self
            .request(&url)?
            .query(&[("fieldSelector", selector.as_str())])
            .timeout(REQUEST_TIMEOUT);
        let list = self.json(req).await?;
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
        let req = self
            .request(&url)?
            .query(&[
                ("watch", "1"),
                ("fieldSelector", selector.as_str()),
                ("resourceVersion", resource_version),
                ("allowWatchBookmarks", "true"),
                ("timeoutSeconds", seconds.as_str()),
            ])
            // The server ends the watch at timeoutSeconds; this is only a backstop.
            .timeout(timeout + REQUEST_TIMEOUT);
        let response = self.send(req).await?;
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
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
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
        let config = ClusterConfig {
            server: "https://127.0.0.1:1".into(),
            ca_pem: None,
            credentials: Credentials::None,
            namespace: None,
            origin: "test".into(),
        };
        let c = KubeClient::new(&config, &Limits::default()).unwrap();
        assert!(c.url("ns", "pods").is_err());
        assert!(c.url("a/b", "secrets").is_err());
        assert!(c.url("ns", "secrets").is_ok());
        assert!(segment("name", "x?watch=1").is_err());
        assert!(segment("name", "..").is_ok()); // a dot-only name is refused by the server
    }
}
