//! The webhook's view of the Secrets and ConfigMaps its policies read public keys from
//! ([`KeyReference`]): one list+watch per named object (`fieldSelector=metadata.name`,
//! resumed from the last `resourceVersion`, listed again after a 410 or a broken watch,
//! with backoff), and the values as a [`ResolvedKeys`] for the policy loader.
//!
//! Fail closed: an object that does not exist (deleted) or cannot be listed (no RBAC, API
//! server down at the relist) has no value, so the rules naming it deny with the reason;
//! a value is never kept after the watch reported the object gone. While a watch is only
//! reconnecting, the last listed value stays (nothing says it changed); the relist that
//! follows replaces or removes it. Each change wakes the reloader
//! ([`ReviewerSource::changed`](super::ReviewerSource::changed)), which loads the policies
//! again with the new values and swaps them in.

use super::{LogFormat, log_line, now_rfc3339};
use crate::kube::{ClusterConfig, KubeClient, WatchEvent, resource_version};
use crate::limits::Limits;
use crate::policy::{KeyObject, KeyReference, ResolvedKeys};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long one watch request runs before it is resumed.
const WATCH_TIMEOUT: Duration = Duration::from_secs(290);
/// First and longest wait before a list is retried.
const BACKOFF_START: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long a load waits for the first read of a newly named object.
const FIRST_READ_WAIT: Duration = Duration::from_secs(5);

/// One watched object.
type ObjectKey = (KeyObject, String, String);

/// What is known of one object: its `data` (`None`: it does not exist), or why it could
/// not be read.
type ObjectState = Result<Option<Value>, String>;

/// Where the API server is: `--kubeconfig`/`--context`, else the pod's service account,
/// else the default kubeconfig.
#[derive(Debug, Clone, Default)]
pub struct ClusterAccess {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

impl ClusterAccess {
    pub fn config(&self, limits: &Limits) -> Result<ClusterConfig, String> {
        let config = if self.kubeconfig.is_some() || self.context.is_some() {
            ClusterConfig::from_kubeconfig(
                self.kubeconfig.as_deref(),
                self.context.as_deref(),
                limits,
            )
        } else if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
            ClusterConfig::in_cluster()
        } else {
            ClusterConfig::from_kubeconfig(None, None, limits)
        };
        config.map_err(|e| e.to_string())
    }
}

struct Shared {
    objects: Mutex<BTreeMap<ObjectKey, ObjectState>>,
    changed: Arc<Notify>,
    log_format: LogFormat,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn set(&self, key: &ObjectKey, state: ObjectState) {
        let mut objects = lock(&self.objects);
        if objects.get(key) == Some(&state) {
            return;
        }
        let event = match &state {
            Ok(Some(_)) => json!({"state": "read"}),
            Ok(None) => json!({"state": "absent"}),
            Err(reason) => json!({"state": "unreadable", "error": reason}),
        };
        objects.insert(key.clone(), state);
        drop(objects);
        let mut line = json!({
            "ts": now_rfc3339(),
            "event": "key-reference",
            "kind": key.0.kind(),
            "namespace": key.1,
            "name": key.2,
        });
        if let (Some(line), Some(event)) = (line.as_object_mut(), event.as_object()) {
            line.extend(event.clone());
        }
        log_line(self.log_format, true, &line);
        self.changed.notify_one();
    }
}

/// The watches of the objects the live policies name.
pub struct KeyWatcher {
    shared: Arc<Shared>,
    access: ClusterAccess,
    limits: Limits,
    watches: Mutex<BTreeMap<ObjectKey, tokio::task::JoinHandle<()>>>,
    references: Mutex<Vec<KeyReference>>,
}

impl KeyWatcher {
    /// A watcher that wakes `changed` whenever an object's value changes.
    pub fn new(access: ClusterAccess, changed: Arc<Notify>, log_format: LogFormat) -> KeyWatcher {
        KeyWatcher {
            shared: Arc::new(Shared {
                objects: Mutex::new(BTreeMap::new()),
                changed,
                log_format,
            }),
            access,
            limits: Limits::default(),
            watches: Mutex::new(BTreeMap::new()),
            references: Mutex::new(Vec::new()),
        }
    }

    /// The values of every reference named so far (see [`KeyWatcher::watch`]).
    pub fn resolved(&self) -> ResolvedKeys {
        let objects = lock(&self.shared.objects);
        let mut out = ResolvedKeys::new();
        for reference in lock(&self.references).iter() {
            let key = object_key(reference);
            let value = match objects.get(&key) {
                None => Err(format!("{reference}: not read yet")),
                Some(Err(reason)) => Err(format!("{reference}: {reason}")),
                Some(Ok(None)) => Err(format!(
                    "{reference}: the {} {}/{} does not exist (deleted, or not created yet)",
                    reference.object.kind(),
                    reference.namespace,
                    reference.name
                )),
                Some(Ok(Some(object))) => reference.value_in(object),
            };
            out.insert(reference.clone(), value);
        }
        out
    }

    /// Watches exactly the objects `references` name (starting new watches, ending those
    /// no longer named). Called from the policy load (a blocking thread of the server's
    /// runtime). Returns true when a new object is watched.
    pub fn watch(&self, references: &[KeyReference]) -> bool {
        *lock(&self.references) = references.to_vec();
        let wanted: BTreeMap<ObjectKey, ()> =
            references.iter().map(|r| (object_key(r), ())).collect();
        let mut watches = lock(&self.watches);
        watches.retain(|key, task| {
            let keep = wanted.contains_key(key);
            if !keep {
                task.abort();
                lock(&self.shared.objects).remove(key);
            }
            keep
        });
        let new: Vec<ObjectKey> = wanted
            .keys()
            .filter(|k| !watches.contains_key(*k))
            .cloned()
            .collect();
        if new.is_empty() {
            return false;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            for key in &new {
                self.shared
                    .set(key, Err("no async runtime to watch it on".into()));
            }
            return false;
        };
        let client = self
            .access
            .config(&self.limits)
            .and_then(|c| KubeClient::new(&c, &self.limits).map_err(|e| e.to_string()));
        for key in new {
            match &client {
                Ok(client) => {
                    let task = runtime.spawn(watch_object(
                        client.clone(),
                        key.clone(),
                        self.shared.clone(),
                    ));
                    watches.insert(key, task);
                }
                Err(reason) => {
                    self.shared.set(
                        &key,
                        Err(format!("no access to the Kubernetes API: {reason}")),
                    );
                }
            }
        }
        true
    }

    /// Waits (blocking) until every watched object was read once or failed, at most a few
    /// seconds: a load right after start then sees the values.
    pub fn wait_first_read(&self) {
        let start = Instant::now();
        while start.elapsed() < FIRST_READ_WAIT {
            let pending = {
                let objects = lock(&self.shared.objects);
                lock(&self.references)
                    .iter()
                    .any(|r| !objects.contains_key(&object_key(r)))
            };
            if !pending {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for KeyWatcher {
    fn drop(&mut self) {
        for task in lock(&self.watches).values() {
            task.abort();
        }
    }
}

fn object_key(r: &KeyReference) -> ObjectKey {
    (r.object, r.namespace.clone(), r.name.clone())
}

/// Only the `data` of an object is kept (never its other fields).
fn data_of(object: &Value) -> Value {
    json!({"data": object.get("data").cloned().unwrap_or(Value::Null)})
}

/// List, then watch from the list's version, forever (the task is aborted when no policy
/// names the object any more).
async fn watch_object(client: KubeClient, key: ObjectKey, shared: Arc<Shared>) {
    let (object, namespace, name) = (key.0, key.1.clone(), key.2.clone());
    let what = format!("{} {namespace}/{name}", object.kind());
    let resource = object.resource();
    let mut backoff = BACKOFF_START;
    'list: loop {
        let mut version = match client.list(&namespace, resource, &name).await {
            Ok(list) => {
                shared.set(&key, Ok(list.items.first().map(data_of)));
                list.resource_version
            }
            Err(e) => {
                shared.set(&key, Err(format!("cannot read the {what}: {e}")));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue 'list;
            }
        };
        loop {
            let mut stream = match client
                .watch(&namespace, resource, &name, &version, WATCH_TIMEOUT)
                .await
            {
                Ok(stream) => stream,
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue 'list;
                }
            };
            loop {
                match stream.next().await {
                    Ok(Some(WatchEvent::Applied(o))) => {
                        version = resource_version(&o).unwrap_or(&version).to_string();
                        shared.set(&key, Ok(Some(data_of(&o))));
                        backoff = BACKOFF_START;
                    }
                    Ok(Some(WatchEvent::Deleted(o))) => {
                        version = resource_version(&o).unwrap_or(&version).to_string();
                        shared.set(&key, Ok(None));
                    }
                    Ok(Some(WatchEvent::Bookmark(v))) => {
                        if !v.is_empty() {
                            version = v;
                        }
                    }
                    // The version is too old: list again at once.
                    Ok(Some(WatchEvent::Error { code: 410, .. })) => continue 'list,
                    Ok(Some(WatchEvent::Error { .. })) | Err(_) => {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(BACKOFF_MAX);
                        continue 'list;
                    }
                    // The server ended the watch (its timeout): resume from `version`.
                    Ok(None) => break,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::Credentials;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A scripted API server on loopback (plain HTTP): answers list and watch requests in
    /// order, records every request line.
    async fn api_server(script: Vec<String>, seen: Arc<Mutex<Vec<String>>>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Mutex::new(script.into_iter()));
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let (script, seen) = (script.clone(), seen.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if conn.read(&mut byte).await.unwrap_or(0) == 0 {
                            // A connection closed without a request.
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let line = String::from_utf8_lossy(&head)
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let answer = {
                        lock(&seen).push(line);
                        lock(&script).next()
                    };
                    let _ = conn
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n",
                        )
                        .await;
                    match answer {
                        Some(body) => {
                            let _ = conn.write_all(body.as_bytes()).await;
                        }
                        // Past the script: a watch that stays open.
                        None => tokio::time::sleep(Duration::from_secs(600)).await,
                    }
                });
            }
        });
        format!("http://{addr}")
    }

    fn secret(version: &str, pem: &str) -> Value {
        use base64::Engine as _;
        json!({"metadata": {"name": "s", "namespace": "ns", "resourceVersion": version},
               "data": {"cosign.pub": base64::engine::general_purpose::STANDARD.encode(pem)}})
    }

    #[tokio::test]
    async fn a_watch_resumes_from_its_version_and_lists_again_after_410() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = vec![
            // list: the Secret at version 10
            json!({"metadata": {"resourceVersion": "10"}, "items": [secret("10", "A")]})
                .to_string(),
            // watch from 10: modified, a bookmark, then the server ends the watch
            format!(
                "{}\n{}\n",
                json!({"type": "MODIFIED", "object": secret("11", "B")}),
                json!({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}})
            ),
            // resumed from 12: the version is gone
            format!(
                "{}\n",
                json!({"type": "ERROR", "object": {"code": 410, "message": "too old"}})
            ),
            // listed again: deleted meanwhile
            json!({"metadata": {"resourceVersion": "20"}, "items": []}).to_string(),
        ];
        let server = api_server(script, seen.clone()).await;
        let config = ClusterConfig {
            server,
            ca_pem: None,
            credentials: Credentials::None,
            namespace: None,
            origin: "test".into(),
        };
        let client = KubeClient::new(&config, &Limits::default()).unwrap();
        let changed = Arc::new(Notify::new());
        let shared = Arc::new(Shared {
            objects: Mutex::new(BTreeMap::new()),
            changed: changed.clone(),
            log_format: LogFormat::Json,
        });
        let key: ObjectKey = (KeyObject::Secret, "ns".into(), "s".into());
        let task = tokio::spawn(watch_object(client, key.clone(), shared.clone()));
        let mut states = Vec::new();
        // Every change wakes `changed`; record the states until the deletion is seen (a
        // failing run ends at the test harness's limit, not at a timed assertion).
        loop {
            changed.notified().await;
            let state = lock(&shared.objects).get(&key).cloned();
            states.push(state.clone());
            if state == Some(Ok(None)) {
                break;
            }
        }
        let data = |pem: &str| Some(Ok(Some(json!({"data": secret("0", pem)["data"].clone()}))));
        assert_eq!(states, vec![data("A"), data("B"), Some(Ok(None))]);
        let requests = lock(&seen).clone();
        let want = [
            ("fieldSelector=metadata.name%3Ds", None),
            ("watch=1", Some("resourceVersion=10")),
            ("watch=1", Some("resourceVersion=12")),
            ("fieldSelector=metadata.name%3Ds", None),
        ];
        assert!(requests.len() >= want.len(), "{requests:?}");
        for (request, (part, version)) in requests.iter().zip(want) {
            assert!(
                request.starts_with("GET /api/v1/namespaces/ns/secrets?") && request.contains(part),
                "{request}"
            );
            match version {
                Some(v) => assert!(request.contains(v), "{request}"),
                None => assert!(!request.contains("watch=1"), "{request}"),
            }
        }
        // The next watch starts from the new list's version.
        let start = Instant::now();
        while lock(&seen).len() < 5 && start.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let fifth = lock(&seen).get(4).cloned().unwrap_or_default();
        task.abort();
        assert!(fifth.contains("resourceVersion=20"), "{:?}", lock(&seen));
    }
}
