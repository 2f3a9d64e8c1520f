//! Rekor v1 uploads: one `hashedrekord` v0.0.1 entry per signed message, and the cosign
//! `RekorBundle` (the `bundle` annotation) made from Rekor's answer.
//!
//! The entry is the one cosign writes (cosign v3 `pkg/cosign/tlog.go`, as
//! k8s-manifest-sigstore 4152ec03ed3d calls it; docs/design.md, "Signature annotations"):
//! `spec.data.hash` = SHA-256(M) in hex, `spec.signature.content` = base64(DER signature),
//! `spec.signature.publicKey.content` = base64(PEM) of the Fulcio leaf certificate
//! (keyless) or of the PKIX public key (`--key` with `--tlog-upload`).
//!
//! Rekor v1, not v2: a v2 entry has no SET and no integrated time, and the cosign
//! RekorBundle that kubectl-sigstore and Kyverno read is exactly a v1 SET + payload.
//!
//! The POST is made here rather than through `sigstore-rekor`'s client because a 409
//! (entry exists: a deterministic key signature of the same M) must be answered by fetching
//! the entry at the `Location` header, and a 429/503 by honouring `Retry-After`, and that
//! client drops the headers; and because keyed entries have no constructor there. Rekor's
//! answer is parsed by the crate, through the adapter (`signing/sigstore.rs`).

use super::http::{self, BodyError};
use super::retry::{
    Attempts, RemoteService, RetryObserver, RetryPolicy, Retrying, Transient, retry,
};
use super::sigstore::RekorLogEntry;
use crate::annotations::{RekorBundle, RekorPayload};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// The public-good Rekor v1 log.
pub const DEFAULT_REKOR_URL: &str = "https://rekor.sigstore.dev";
/// Largest Rekor answer read, in bytes (an entry with its proof is a few KiB).
const MAX_ENTRY_RESPONSE: usize = 1024 * 1024;

/// Where and how entries are uploaded.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RekorOptions {
    /// Rekor v1 base URL.
    pub url: String,
    /// Uploads in flight at once. Default 8.
    pub concurrency: usize,
    pub retry: RetryPolicy,
    /// Bound of one request. Default 30 s.
    pub timeout: Duration,
    /// Told of each retried upload. Default: nobody.
    pub on_retry: RetryObserver,
}

crate::setters::setters! {
    /// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
    /// so it is built from [`RekorOptions::default()`] and these, never as a literal.
    RekorOptions {
        /// Sets `url`.
        with_url => url: String,
        /// Sets `concurrency`.
        with_concurrency => concurrency: usize,
        /// Sets `retry`.
        with_retry => retry: RetryPolicy,
        /// Sets `timeout`.
        with_timeout => timeout: Duration,
        /// Sets `on_retry`.
        with_on_retry => on_retry: RetryObserver,
    }
}

impl Default for RekorOptions {
    fn default() -> Self {
        RekorOptions {
            url: DEFAULT_REKOR_URL.to_string(),
            concurrency: 8,
            retry: RetryPolicy::DEFAULT,
            timeout: Duration::from_secs(30),
            on_retry: RetryObserver::default(),
        }
    }
}

/// Why an entry could not be logged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RekorError {
    #[error("Rekor at {url} is unreachable after {attempts}")]
    Connection {
        url: String,
        attempts: Attempts,
        #[source]
        source: reqwest::Error,
    },
    #[error("Rekor at {url} answered HTTP {status} after {attempts}: {message}")]
    Status {
        url: String,
        status: u16,
        attempts: Attempts,
        message: String,
    },
    #[error("Rekor answer")]
    Body(#[source] BodyError),
    #[error("Rekor answer is not a log entry: {reason}")]
    Response { reason: String },
    #[error("Rekor answered 409 (entry exists) without a Location")]
    ConflictWithoutLocation,
    #[error("the entry Rekor returned does not match the one uploaded ({field} differs)")]
    EntryMismatch { field: &'static str },
    #[error("Rekor returned no signed entry timestamp (SET)")]
    MissingSet,
    #[error("Rekor returned no integrated time")]
    MissingIntegratedTime,
    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),
}

/// One request's failure, before retries are accounted for.
type Attempt = http::Attempt<RekorError>;

impl Transient for RekorError {
    /// An answer broken off while its body was read (a reset, or a body still arriving at
    /// the timeout) is asked for again, as a connection failure is: the entry may have
    /// been logged before the answer broke, and then the retry logs it again or Rekor
    /// answers 409 with the existing entry. A second entry for the same signature is
    /// harmless: each one is a valid record of it, and the run uses the one it was
    /// answered with. An answer that arrived whole is judged, not asked again for: a body
    /// too large, not a log entry, a 409 without `Location` is never retried.
    fn is_transient(&self) -> bool {
        matches!(self, RekorError::Body(body) if body.is_transient())
    }

    fn reason(&self) -> String {
        match self {
            RekorError::Body(body) => body.reason(),
            other => other.to_string(),
        }
    }
}

/// What to log for one message.
#[derive(Debug, Clone)]
pub(crate) struct EntryRequest {
    pub digest: [u8; 32],
    pub signature: Vec<u8>,
    /// PEM of the certificate or public key that verifies `signature`.
    pub verifier_pem: String,
}

impl EntryRequest {
    pub fn new(message: &[u8], signature: Vec<u8>, verifier_pem: String) -> Self {
        EntryRequest {
            digest: Sha256::digest(message).into(),
            signature,
            verifier_pem,
        }
    }

    fn body(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex::encode(self.digest)}},
                "signature": {
                    "content": STANDARD.encode(&self.signature),
                    "publicKey": {"content": STANDARD.encode(self.verifier_pem.as_bytes())},
                },
            },
        })
    }

    /// Rekor's canonical body must describe what was uploaded; a log that answers with
    /// another entry would otherwise hand out a bundle for someone else's signature.
    fn check_logged(&self, entry: &RekorLogEntry) -> Result<(), RekorError> {
        let body: serde_json::Value =
            serde_json::from_slice(entry.body()).map_err(|e| RekorError::Response {
                reason: format!("entry body is not JSON: {e}"),
            })?;
        let want = self.body();
        for (field, pointer) in [
            ("kind", "/kind"),
            ("apiVersion", "/apiVersion"),
            ("hash algorithm", "/spec/data/hash/algorithm"),
            ("hash", "/spec/data/hash/value"),
            ("signature", "/spec/signature/content"),
        ] {
            if body.pointer(pointer) != want.pointer(pointer) {
                return Err(RekorError::EntryMismatch { field });
            }
        }
        // Rekor stores its own PEM encoding of the key or certificate (Go's encoder), so
        // compare what the PEM holds, not its bytes.
        let logged = body
            .pointer("/spec/signature/publicKey/content")
            .and_then(|v| v.as_str())
            .and_then(|b64| STANDARD.decode(b64).ok())
            .and_then(|text| pem::parse(text).ok());
        match (logged, pem::parse(&self.verifier_pem)) {
            (Some(logged), Ok(ours))
                if logged.tag() == ours.tag() && logged.contents() == ours.contents() =>
            {
                Ok(())
            }
            _ => Err(RekorError::EntryMismatch {
                field: "public key",
            }),
        }
    }
}

/// A logged entry: Rekor's answer, checked against the request.
#[derive(Debug, Clone)]
pub(crate) struct LoggedEntry {
    pub entry: RekorLogEntry,
    pub rekor_bundle: RekorBundle,
}

/// Uploads entries to one Rekor v1 log.
#[derive(Debug, Clone)]
pub(crate) struct RekorUploader {
    http: reqwest::Client,
    url: Arc<str>,
    options: RekorOptions,
}

impl RekorUploader {
    pub fn new(options: RekorOptions) -> Result<Self, RekorError> {
        let http = http::client(options.timeout).map_err(RekorError::HttpClient)?;
        Ok(RekorUploader {
            http,
            url: Arc::from(options.url.trim_end_matches('/')),
            options,
        })
    }

    /// Logs one entry, retrying transient failures.
    pub async fn upload(&self, request: &EntryRequest) -> Result<LoggedEntry, RekorError> {
        let entries_url = format!("{}/api/v1/log/entries", self.url);
        let body = request.body();
        let how = Retrying {
            policy: self.options.retry,
            service: RemoteService::Rekor,
            observer: &self.options.on_retry,
        };
        let entry = retry(how, || self.post(&entries_url, &body))
            .await
            .map_err(|(e, attempts)| match e {
                Attempt::Connection(source) => RekorError::Connection {
                    url: self.url.to_string(),
                    attempts,
                    source: source.without_url(),
                },
                Attempt::Status {
                    status, message, ..
                } => RekorError::Status {
                    url: self.url.to_string(),
                    status,
                    attempts,
                    message,
                },
                Attempt::Other(e) => e,
            })?;
        request.check_logged(&entry)?;
        let rekor_bundle = rekor_bundle(&entry)?;
        Ok(LoggedEntry {
            entry,
            rekor_bundle,
        })
    }

    /// Logs every entry, at most `concurrency` at a time; answers come back in request
    /// order. The first failure cancels the uploads still running.
    pub async fn upload_all(
        &self,
        requests: Vec<EntryRequest>,
    ) -> Result<Vec<LoggedEntry>, (usize, RekorError)> {
        let limit = Arc::new(tokio::sync::Semaphore::new(self.options.concurrency.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        let total = requests.len();
        for (i, request) in requests.into_iter().enumerate() {
            let uploader = self.clone();
            let limit = limit.clone();
            tasks.spawn(async move {
                let _permit = limit.acquire_owned().await;
                (i, uploader.upload(&request).await)
            });
        }
        let mut done: Vec<Option<LoggedEntry>> = (0..total).map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((i, Ok(entry))) => done[i] = Some(entry),
                Ok((i, Err(e))) => return Err((i, e)),
                Err(join) => {
                    return Err((
                        0,
                        RekorError::Response {
                            reason: format!("upload task failed: {join}"),
                        },
                    ));
                }
            }
        }
        Ok(done.into_iter().flatten().collect())
    }

    async fn post(
        &self,
        entries_url: &str,
        body: &serde_json::Value,
    ) -> Result<RekorLogEntry, Attempt> {
        let response = self
            .http
            .post(entries_url)
            .json(body)
            .send()
            .await
            .map_err(Attempt::Connection)?;
        let status = response.status();
        if status == reqwest::StatusCode::CONFLICT {
            // Rekor v1: the same entry is already logged; Location points at it.
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
                .ok_or(Attempt::Other(RekorError::ConflictWithoutLocation))?;
            return self.get_existing(&location).await;
        }
        if !status.is_success() {
            return Err(http::refused(response).await);
        }
        parse_entry(response).await
    }

    async fn get_existing(&self, location: &str) -> Result<RekorLogEntry, Attempt> {
        let url = if location.starts_with("http://") || location.starts_with("https://") {
            location.to_string()
        } else {
            format!("{}/{}", self.url, location.trim_start_matches('/'))
        };
        let response = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(Attempt::Connection)?;
        if !response.status().is_success() {
            return Err(http::refused(response).await);
        }
        parse_entry(response).await
    }
}

/// Rekor v1 answers `{"<uuid>": entry}` with exactly one entry.
async fn parse_entry(response: reqwest::Response) -> Result<RekorLogEntry, Attempt> {
    let bytes = http::read_limited(response, MAX_ENTRY_RESPONSE)
        .await
        .map_err(|e| Attempt::Other(RekorError::Body(e)))?;
    RekorLogEntry::parse_answer(&bytes).map_err(|e| {
        Attempt::Other(RekorError::Response {
            reason: e.to_string(),
        })
    })
}

/// cosign's RekorBundle: the SET and the four fields it signs.
fn rekor_bundle(entry: &RekorLogEntry) -> Result<RekorBundle, RekorError> {
    let set = entry
        .signed_entry_timestamp_base64()
        .ok_or(RekorError::MissingSet)?;
    let integrated_time = entry
        .integrated_time()
        .ok_or(RekorError::MissingIntegratedTime)?;
    Ok(RekorBundle {
        signed_entry_timestamp: set,
        payload: RekorPayload {
            body: entry.body_base64(),
            integrated_time: integrated_time.as_second(),
            log_index: entry.log_index(),
            log_id: entry.log_id_hex().to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_PEM: &str = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2g==\n-----END PUBLIC KEY-----\n";

    fn logged(body: serde_json::Value, set: bool) -> RekorLogEntry {
        let mut v = serde_json::json!({
            "body": STANDARD.encode(body.to_string()),
            "integratedTime": 1_800_000_000,
            "logID": "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d",
            "logIndex": 42,
        });
        if set {
            v["verification"] =
                serde_json::json!({"signedEntryTimestamp": STANDARD.encode(b"set")});
        }
        RekorLogEntry::parse_entry(v.to_string().as_bytes()).unwrap()
    }

    fn request() -> EntryRequest {
        EntryRequest::new(b"M", vec![1, 2, 3], KEY_PEM.to_string())
    }

    #[test]
    fn the_entry_body_is_cosigns_hashedrekord() {
        let body = request().body();
        assert_eq!(body["kind"], "hashedrekord");
        assert_eq!(body["apiVersion"], "0.0.1");
        assert_eq!(body["spec"]["data"]["hash"]["algorithm"], "sha256");
        assert_eq!(
            body["spec"]["data"]["hash"]["value"],
            hex::encode(Sha256::digest(b"M"))
        );
        assert_eq!(body["spec"]["signature"]["content"], "AQID");
        assert_eq!(
            body["spec"]["signature"]["publicKey"]["content"],
            STANDARD.encode(KEY_PEM)
        );
    }

    #[test]
    fn accepts_the_same_key_in_another_pem_layout() {
        let mut body = request().body();
        body["spec"]["signature"]["publicKey"]["content"] =
            STANDARD.encode(KEY_PEM.replace('\n', "\r\n")).into();
        request().check_logged(&logged(body, true)).unwrap();
    }

    #[test]
    fn refuses_an_entry_for_another_message_signature_or_key() {
        for (pointer, value) in [
            ("/spec/data/hash/value", "00".repeat(32)),
            ("/spec/signature/content", "AAAA".to_string()),
            (
                "/spec/signature/publicKey/content",
                STANDARD.encode(KEY_PEM.replace("2g==", "2w==")),
            ),
        ] {
            let mut body = request().body();
            if let Some(slot) = body.pointer_mut(pointer) {
                *slot = value.into();
            }
            let err = request().check_logged(&logged(body, true)).unwrap_err();
            assert!(
                matches!(err, RekorError::EntryMismatch { .. }),
                "{pointer}: {err}"
            );
        }
    }

    #[test]
    fn the_rekor_bundle_carries_the_set_and_the_signed_fields() {
        let entry = logged(request().body(), true);
        let b = rekor_bundle(&entry).unwrap();
        assert_eq!(b.signed_entry_timestamp, STANDARD.encode(b"set"));
        assert_eq!(b.payload.integrated_time, 1_800_000_000);
        assert_eq!(b.payload.log_index, 42);
        assert_eq!(b.payload.log_id.len(), 64);
        assert_eq!(b.payload.body, entry.body_base64());
        assert!(matches!(
            rekor_bundle(&logged(request().body(), false)),
            Err(RekorError::MissingSet)
        ));
    }
}
