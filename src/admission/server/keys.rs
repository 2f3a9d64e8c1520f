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
//!
//! Bounds (docs/admission.md, "Bounds when the watch breaks"):
//!
//! * **A value is trusted only while the API server keeps confirming it.** A successful
//!   list, every watch event (bookmarks included: watches ask for them) and the server's
//!   own end of a watch confirm it. Each watch asks the server to end it after
//!   [`WATCH_TIMEOUT`], so a healthy watch is never silent for longer; a value not
//!   confirmed for [`SILENCE_LIMIT`] (a connection that died without a FIN, a proxy that
//!   stopped forwarding, a stuck list) is dropped (`stale`: the rules naming it deny) and
//!   the object is listed again. So a deleted or rotated key stops verifying within
//!   seconds on a healthy path and within [`SILENCE_LIMIT`] on a silently broken one.
//! * **Retries are quick again after every success.** A failed list is retried after a
//!   backoff that starts at [`BACKOFF_START`], doubles up to [`BACKOFF_MAX`] and starts
//!   over after a good list; a failed watch has its own backoff, which starts over once a
//!   watch delivered something. After an outage, the first list that succeeds (at most
//!   [`BACKOFF_MAX`] after the API server answers again) restores the value.
//! * Every read has a read timeout ([`SILENCE_LIMIT`]); HTTP/1.1 only, one connection
//!   per watch, so a dead connection is only ever one watch's (an HTTP/2 connection
//!   would carry every list and watch, and a silent one would hold them all).
//!
//! [`KeyWatcher::status`] says, per object, whether its value is current and when it was
//! last confirmed: `/readyz` lists it and `/metrics` counts it.

use super::{LogFormat, log_line, now_rfc3339};
use crate::kube::{ClusterAccess, KubeClient, WatchEvent, resource_version};
use crate::limits::Limits;
use crate::policy::{KeyObject, KeyReference, KeyValueError, ResolvedKeys};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long one watch request runs before the server ends it (and it is resumed): the
/// longest a healthy watch is silent.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a value is trusted without word from the API server (see the module
/// documentation); also the read timeout of every request.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(40);
/// First and longest wait before a failed list or watch is retried.
pub const BACKOFF_START: Duration = Duration::from_millis(250);
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long a load waits for the first read of a newly named object.
const FIRST_READ_WAIT: Duration = Duration::from_secs(5);

/// One watched object.
type ObjectKey = (KeyObject, String, String);

/// What is known of one object: its `data` (`None`: it does not exist), or why it could
/// not be read.
type ObjectState = Result<Option<Value>, String>;

struct Shared {
    objects: Mutex<BTreeMap<ObjectKey, ObjectState>>,
    /// When each object's state was last confirmed by the API server, and whether its
    /// value was dropped for want of confirmation.
    confirmed: Mutex<BTreeMap<ObjectKey, (Instant, bool)>>,
    changed: Arc<Notify>,
    log_format: LogFormat,
}

/// What is known of one watched object, for `/readyz` and `/metrics`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct WatchStatus {
    /// `Secret NAMESPACE/NAME` or `ConfigMap NAMESPACE/NAME`.
    pub object: String,
    /// `current` (a value the API server confirmed within [`SILENCE_LIMIT`]), `absent`
    /// (it does not exist), `stale` (its value was dropped: no confirmation within
    /// [`SILENCE_LIMIT`]), `unreadable` (the last read failed) or `pending` (not read yet).
    pub state: &'static str,
    /// Seconds since the API server last confirmed the state (a list, an event, a
    /// bookmark or the server's end of a watch); `None` before the first.
    pub confirmed_seconds_ago: Option<f64>,
    /// Why the value is not available (`stale`, `unreadable`).
    pub error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// `state`, as the API server just said it.
    fn confirm(&self, key: &ObjectKey, state: ObjectState) {
        lock(&self.confirmed).insert(key.clone(), (Instant::now(), false));
        self.set(key, state);
    }

    /// Drops the value of `key`: the API server has not confirmed it for [`SILENCE_LIMIT`].
    fn stale(&self, key: &ObjectKey, what: &str) {
        if let Some(entry) = lock(&self.confirmed).get_mut(key) {
            entry.1 = true;
        }
        self.set(
            key,
            Err(format!(
                "stale: no word from the API server about the {what} for {} s (the watch is \
                 silent or broken), so its last value is no longer trusted; reading it again",
                SILENCE_LIMIT.as_secs()
            )),
        );
    }

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
                confirmed: Mutex::new(BTreeMap::new()),
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
                None => Err(KeyValueError::NotRead {
                    reference: reference.clone(),
                }),
                Some(Err(reason)) => Err(KeyValueError::Watch {
                    reference: reference.clone(),
                    reason: reason.clone(),
                }),
                Some(Ok(None)) => Err(KeyValueError::Missing {
                    reference: reference.clone(),
                    watched: true,
                }),
                Some(Ok(Some(object))) => reference.value_in(object),
            };
            out.insert(reference.clone(), value);
        }
        out
    }

    /// What is known of each watched object (in the order of the references).
    pub fn status(&self) -> Vec<WatchStatus> {
        let objects = lock(&self.shared.objects);
        let confirmed = lock(&self.shared.confirmed);
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for reference in lock(&self.references).iter() {
            let key = object_key(reference);
            if !seen.insert(key.clone()) {
                continue;
            }
            let (at, stale) = match confirmed.get(&key) {
                Some((at, stale)) => (Some(at.elapsed().as_secs_f64()), *stale),
                None => (None, false),
            };
            let (state, error) = match objects.get(&key) {
                None => ("pending", None),
                Some(Ok(Some(_))) => ("current", None),
                Some(Ok(None)) => ("absent", None),
                Some(Err(e)) if stale => ("stale", Some(e.clone())),
                Some(Err(e)) => ("unreadable", Some(e.clone())),
            };
            out.push(WatchStatus {
                object: format!("{} {}/{}", key.0.kind(), key.1, key.2),
                state,
                confirmed_seconds_ago: at.map(|s| (s * 10.0).round() / 10.0),
                error,
            });
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
                lock(&self.shared.confirmed).remove(key);
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
            .and_then(|c| KubeClient::new(&c, &self.limits))
            .map_err(|e| e.to_string());
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

/// The next wait after a failure: doubled, at most [`BACKOFF_MAX`].
fn next_backoff(backoff: Duration) -> Duration {
    (backoff * 2).min(BACKOFF_MAX)
}

/// The deadline of a value held: [`SILENCE_LIMIT`] after its last confirmation (`None`
/// while no value is held: an absent or unreadable object denies anyway).
fn deadline_of(state: &ObjectState) -> Option<tokio::time::Instant> {
    matches!(state, Ok(Some(_))).then(|| tokio::time::Instant::now() + SILENCE_LIMIT)
}

/// `work`, awaited to its end; if `deadline` passes first, the value held is dropped as
/// stale meanwhile (and `deadline` cleared).
async fn unless_silent<T>(
    shared: &Shared,
    key: &ObjectKey,
    what: &str,
    deadline: &mut Option<tokio::time::Instant>,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::pin!(work);
    if let Some(at) = *deadline {
        match tokio::time::timeout_at(at, &mut work).await {
            Ok(out) => return out,
            Err(_) => {
                shared.stale(key, what);
                *deadline = None;
            }
        }
    }
    work.await
}

/// List, then watch from the list's version, forever (the task is aborted when no policy
/// names the object any more). See the module documentation for the bounds.
async fn watch_object(client: KubeClient, key: ObjectKey, shared: Arc<Shared>) {
    let (object, namespace, name) = (key.0, key.1.clone(), key.2.clone());
    let what = format!("{} {namespace}/{name}", object.kind());
    let resource = object.resource();
    let mut list_backoff = BACKOFF_START;
    let mut watch_backoff = BACKOFF_START;
    // While a value is held: when it goes stale unless the API server confirms it.
    let mut deadline: Option<tokio::time::Instant> = None;
    'list: loop {
        let listed = unless_silent(
            &shared,
            &key,
            &what,
            &mut deadline,
            client.list(&namespace, resource, &name),
        )
        .await;
        let mut version = match listed {
            Ok(list) => {
                let state = Ok(list.items.first().map(data_of));
                deadline = deadline_of(&state);
                shared.confirm(&key, state);
                list_backoff = BACKOFF_START;
                list.resource_version
            }
            Err(e) => {
                shared.set(&key, Err(format!("cannot read the {what}: {e}")));
                deadline = None;
                tokio::time::sleep(list_backoff).await;
                list_backoff = next_backoff(list_backoff);
                continue 'list;
            }
        };
        loop {
            let watched = unless_silent(
                &shared,
                &key,
                &what,
                &mut deadline,
                client.watch(&namespace, resource, &name, &version, WATCH_TIMEOUT),
            )
            .await;
            let Ok(mut stream) = watched else {
                unless_silent(
                    &shared,
                    &key,
                    &what,
                    &mut deadline,
                    tokio::time::sleep(watch_backoff),
                )
                .await;
                watch_backoff = next_backoff(watch_backoff);
                continue 'list;
            };
            loop {
                // A value held is dropped once the watch is silent past its deadline; the
                // connection is given up then (it may be dead without a FIN) and the
                // object listed again.
                let event = match deadline {
                    Some(at) => match tokio::time::timeout_at(at, stream.next()).await {
                        Ok(event) => event,
                        Err(_) => {
                            shared.stale(&key, &what);
                            deadline = None;
                            continue 'list;
                        }
                    },
                    None => stream.next().await,
                };
                match event {
                    Ok(Some(WatchEvent::Applied(o))) => {
                        version = resource_version(&o).unwrap_or(&version).to_string();
                        let state = Ok(Some(data_of(&o)));
                        deadline = deadline_of(&state);
                        shared.confirm(&key, state);
                        watch_backoff = BACKOFF_START;
                    }
                    Ok(Some(WatchEvent::Deleted(o))) => {
                        version = resource_version(&o).unwrap_or(&version).to_string();
                        deadline = None;
                        shared.confirm(&key, Ok(None));
                        watch_backoff = BACKOFF_START;
                    }
                    Ok(Some(WatchEvent::Bookmark(v))) => {
                        if !v.is_empty() {
                            version = v;
                        }
                        let state = lock(&shared.objects).get(&key).cloned();
                        if let Some(state) = state {
                            deadline = deadline_of(&state);
                            shared.confirm(&key, state);
                        }
                        watch_backoff = BACKOFF_START;
                    }
                    // The version is too old: list again at once.
                    Ok(Some(WatchEvent::Error { code: 410, .. })) => continue 'list,
                    Ok(Some(WatchEvent::Error { .. })) | Err(_) => {
                        unless_silent(
                            &shared,
                            &key,
                            &what,
                            &mut deadline,
                            tokio::time::sleep(watch_backoff),
                        )
                        .await;
                        watch_backoff = next_backoff(watch_backoff);
                        continue 'list;
                    }
                    // The server ended the watch (its timeout): everything up to now was
                    // delivered, so the state is confirmed; resume from `version`.
                    Ok(None) => {
                        let state = lock(&shared.objects).get(&key).cloned();
                        if let Some(state) = state {
                            deadline = deadline_of(&state);
                            shared.confirm(&key, state);
                        }
                        watch_backoff = BACKOFF_START;
                        break;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::{ClusterConfig, Credentials};
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
        let config = ClusterConfig::new(server, None, Credentials::None, "test");
        let client = KubeClient::new(&config, &Limits::default()).unwrap();
        let changed = Arc::new(Notify::new());
        let shared = Arc::new(Shared {
            objects: Mutex::new(BTreeMap::new()),
            confirmed: Mutex::new(BTreeMap::new()),
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
