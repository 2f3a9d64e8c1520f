//! Remembering accepted signatures, so a re-applied object costs only its comparison.
//!
//! GitOps tools re-apply the same signed objects again and again (every sync, every
//! controller reconcile), and each admission request would otherwise redo the signature
//! checks: a Fulcio chain, an SCT, a SET and a signature per set. A [`VerificationCache`]
//! keeps, per verifier requirement, the signature acceptance of recently seen signature
//! material:
//!
//! * **key**: SHA-256 over the raw text of the object's signature annotations (the message
//!   and every set's signature, certificate and Rekor bundle, in index order, each marked
//!   present or absent), the annotation domain, the decoding limits and the maximum age.
//!   Decoding depends on nothing else, so equal keys mean equal decoded signature material;
//!   the requirement (keys, identities, trust roots) is the cache's owner, since clones of a
//!   verifier share its cache and a verifier with another requirement gets its own;
//! * **value**: who signed (the [`Verified`]), the signed documents already decoded out of
//!   the message (each with its identity, kept as compact JSON text: a parsed document takes
//!   about ten times the memory of its text, and reading the one an object is compared with
//!   back takes microseconds), and until when the acceptance stays true: a maximum age makes it expire
//!   (and is checked again on every hit, against the signed time of the document the
//!   object is compared with); an acceptance that depended on the clock (a certificate
//!   attestor's certificate checked at the current time, not at a log time) is not kept;
//! * so a hit costs one hash of the annotations, reading one document's JSON and the
//!   comparison: no decoding, YAML parsing or signature check;
//! * only acceptances are kept, never rejections, so the cache can only save work, not
//!   change a verdict; the object is still compared with its signed document every time;
//! * the size is bounded, in entries and in the memory of the kept documents (oldest
//!   entries leave first): hostile input can churn it but not grow it.

use super::sigstore::signer::SignerInfo;
use super::verdict::Verified;
use crate::annotations::AnnotationDomain;
use crate::limits::Limits;
use crate::manifest::ObjectIdentity;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Default number of remembered acceptances per verifier requirement: enough for a GitOps
/// controller re-applying 5,000 objects every sync, first-in first-out, to find every one
/// of them on the next sync (with 4,096 it found none: BENCHMARKS.md, webhook churn).
pub const DEFAULT_CACHE_ENTRIES: usize = 16_384;

/// Default bound on the memory the cache's signed documents take (per verifier
/// requirement, as counted by [`weight_of`]); an acceptance whose documents alone are
/// larger is not remembered. A typical PolicyException takes about 600 bytes, so this bound
/// comes first past about 14,000 of them (before [`DEFAULT_CACHE_ENTRIES`]) and for large
/// signed messages: the memory a requirement's cache takes stays bounded either way.
pub const DEFAULT_CACHE_BYTES: usize = 8 << 20;

/// The digest identifying the signature material of an object.
pub(super) type CacheKey = [u8; 32];

/// A bounded, thread-safe map from signature material to its acceptance.
#[derive(Debug)]
pub struct VerificationCache {
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<CacheKey, Arc<Accepted>>,
    order: VecDeque<CacheKey>,
    /// Memory of the entries' kept documents ([`weight_of`]).
    bytes: usize,
    hits: u64,
    misses: u64,
}

/// A remembered acceptance.
#[derive(Debug)]
pub(super) struct Accepted {
    pub verified: Verified,
    /// The documents of the signed message that have an identity (the only ones an object
    /// can be compared with), in message order, as JSON text.
    pub signed_docs: Vec<(ObjectIdentity, Box<str>)>,
    /// The signed time of the document the acceptance was made for.
    pub signed_at: Option<jiff::Timestamp>,
    valid_until: Option<jiff::Timestamp>,
    /// The memory of `signed_docs`, what the entry counts against the byte bound.
    weight: usize,
}

/// Hit and miss counts, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub entries: usize,
}

impl VerificationCache {
    /// A cache of at most `capacity` entries (0: remembers nothing).
    pub fn new(capacity: usize) -> Self {
        Self::with_bounds(capacity, DEFAULT_CACHE_BYTES)
    }

    /// A cache of at most `capacity` entries whose kept documents take at most about
    /// `max_bytes` of memory in all.
    pub fn with_bounds(capacity: usize, max_bytes: usize) -> Self {
        VerificationCache {
            capacity,
            max_bytes,
            inner: Mutex::new(Entries::default()),
        }
    }

    /// Whether the cache can remember anything (a capacity of 0 cannot: its key is not
    /// worth computing).
    pub(super) fn remembers(&self) -> bool {
        self.capacity > 0
    }

    pub fn stats(&self) -> CacheStats {
        let e = self.lock();
        CacheStats {
            hits: e.hits,
            misses: e.misses,
            entries: e.map.len(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock cannot leave the map inconsistent (every update
        // is one insert or one remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The acceptance remembered for `key`, if it is still valid at `now`. Counts nothing:
    /// whether a hit saved the signature checks is known only once it decided the verdict
    /// ([`record`](Self::record)).
    pub(super) fn find(&self, key: &CacheKey, now: jiff::Timestamp) -> Option<Arc<Accepted>> {
        let e = self.lock();
        match e.map.get(key) {
            Some(a) if a.valid_until.is_none_or(|until| now < until) => Some(a.clone()),
            _ => None,
        }
    }

    /// Counts one verification: a hit (decided without signature checks) or a miss.
    pub(super) fn record(&self, hit: bool) {
        let mut e = self.lock();
        if hit {
            e.hits += 1;
        } else {
            e.misses += 1;
        }
    }

    /// Remembers an acceptance, unless it depended on the clock.
    pub(super) fn put(
        &self,
        key: CacheKey,
        verified: &Verified,
        signed_docs: &[(ObjectIdentity, &Value)],
        max_age: Option<jiff::SignedDuration>,
        signed_at: Option<jiff::Timestamp>,
    ) {
        if self.capacity == 0 {
            return;
        }
        let signers: Vec<&SignerInfo> = verified.signers().collect();
        // A certificate attestor's certificate without a log entry was checked at the
        // current time: the same material may be refused later. Not remembered.
        if signers.iter().any(|s| {
            matches!(
                s,
                SignerInfo::SigningCertificate {
                    transparency_log: None,
                    ..
                }
            )
        }) {
            return;
        }
        let valid_until = match max_age {
            None => None,
            Some(max_age) => {
                // The earliest moment one of the signers becomes too old.
                let mut until: Option<jiff::Timestamp> = None;
                for s in &signers {
                    let Ok(dated) = s.signing_time(signed_at) else {
                        return;
                    };
                    let Ok(t) = dated.checked_add(max_age) else {
                        return;
                    };
                    until = Some(until.map_or(t, |u| u.min(t)));
                }
                until
            }
        };
        // Serialized and measured last: only for an acceptance that is kept.
        let mut kept = Vec::with_capacity(signed_docs.len());
        for (identity, doc) in signed_docs {
            let Ok(text) = serde_json::to_string(doc) else {
                return;
            };
            kept.push((identity.clone(), text.into_boxed_str()));
        }
        let weight = weight_of(&kept);
        if weight > self.max_bytes {
            return;
        }
        let mut e = self.lock();
        // The same material again: an entry that expired or did not read back (else the
        // look-up would have answered), or a concurrent verification. Replaced.
        if let Some(old) = e.map.remove(&key) {
            e.bytes -= old.weight;
            e.order.retain(|k| k != &key);
        }
        while e.map.len() >= self.capacity || e.bytes + weight > self.max_bytes {
            let Some(oldest) = e.order.pop_front() else {
                break;
            };
            if let Some(gone) = e.map.remove(&oldest) {
                e.bytes -= gone.weight;
            }
        }
        e.order.push_back(key);
        e.bytes += weight;
        e.map.insert(
            key,
            Arc::new(Accepted {
                verified: verified.clone(),
                signed_docs: kept,
                signed_at,
                valid_until,
                weight,
            }),
        );
    }
}

impl Default for VerificationCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_ENTRIES)
    }
}

/// The memory kept documents take: each identity's and text's bytes, plus the allocator's
/// overhead for each of their heap blocks (at most seven, 16 bytes each).
pub(super) fn weight_of(docs: &[(ObjectIdentity, Box<str>)]) -> usize {
    const BLOCK: usize = 16;
    docs.iter()
        .map(|(id, text)| {
            std::mem::size_of::<(ObjectIdentity, Box<str>)>()
                + id.group.len()
                + id.version.len()
                + id.kind.len()
                + id.namespace.as_ref().map_or(0, String::len)
                + id.name.len()
                + text.len()
                + 7 * BLOCK
        })
        .sum()
}

/// The cache key of an object's signature material under a maximum age: a digest of the
/// raw annotation text that [`extract`](crate::annotations::extract) decodes, read the way
/// it reads it (message; then `signature`, `signature_1`, … up to the first missing one,
/// each with its certificate and bundle or their absence), plus everything else decoding
/// depends on (domain, limits). `None` when the annotations are not what extraction
/// accepts (not a mapping, a value that is not a string, over the size or set bounds): such
/// an object takes the uncached path, which names the problem.
pub(super) fn cache_key(
    object: &Value,
    domain: &AnnotationDomain,
    limits: &Limits,
    max_age: Option<jiff::SignedDuration>,
) -> Option<CacheKey> {
    let ann: &Map<String, Value> = match object.get("metadata")?.get("annotations")? {
        Value::Object(m) => m,
        _ => return None,
    };
    let size: usize = ann
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > limits.max_annotations_total_bytes {
        return None;
    }
    // A value that must be a string: `Some(Some(text))`; absent: `Some(None)`; anything
    // else: `None` (not cacheable).
    let text = |key: &str| -> Option<Option<&str>> {
        match ann.get(key) {
            None => Some(None),
            Some(Value::String(s)) => Some(Some(s.as_str())),
            Some(_) => None,
        }
    };
    // What extract reads, in its order: the message, then each set up to the first index
    // without a signature (there must be one at index 0; more than the set bound is refused).
    let message_key = domain.message_key();
    let mut parts: Vec<Option<&str>> = vec![Some(text(&message_key)??)];
    let mut index = 0;
    loop {
        let Some(signature) = text(&domain.signature_key(index))? else {
            if index == 0 {
                return None;
            }
            break;
        };
        if index >= limits.max_signature_sets {
            return None;
        }
        parts.push(Some(signature));
        parts.push(text(&domain.certificate_key(index))?);
        parts.push(text(&domain.bundle_key(index))?);
        index += 1;
    }
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        // Length-prefixed, so no two different inputs hash the same byte stream.
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"mansign verification cache v2");
    field(message_key.as_bytes());
    field(format!("{limits:?}").as_bytes());
    match max_age {
        Some(d) => field(&d.as_secs().to_be_bytes()),
        None => field(b"no max age"),
    }
    field(&(parts.len() as u64).to_be_bytes());
    for part in parts {
        match part {
            Some(s) => {
                field(b"present");
                field(s.as_bytes());
            }
            None => field(b"absent"),
        }
    }
    Some(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verified(logged: Option<i64>) -> Verified {
        Verified {
            signature_set: 0,
            signer: SignerInfo::Key {
                name: "k".into(),
                fingerprint: "ab".into(),
                transparency_log: logged.map(|t| super::super::RekorEvidence {
                    log_index: 1,
                    log_id: "c0".into(),
                    integrated_time: t,
                }),
            },
            entries: Vec::new(),
        }
    }

    fn t(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    fn object(annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "x", "annotations": annotations}})
    }

    fn signed_object(message: &str) -> Value {
        object(json!({"cosign.sigstore.dev/message": message,
                      "cosign.sigstore.dev/signature": "c2ln"}))
    }

    fn key_of(object: &Value) -> Option<CacheKey> {
        cache_key(
            object,
            &AnnotationDomain::default(),
            &Limits::default(),
            None,
        )
    }

    fn key(i: u8) -> CacheKey {
        key_of(&signed_object(&format!("m{i}"))).unwrap()
    }

    /// A signed ConfigMap whose data holds `bytes` bytes.
    fn doc_of(bytes: usize) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
               "data": {"d": "x".repeat(bytes)}})
    }

    fn with_identity(doc: &Value) -> [(ObjectIdentity, &Value); 1] {
        [(ObjectIdentity::of(doc).unwrap(), doc)]
    }

    fn put(cache: &VerificationCache, key: CacheKey, bytes: usize) {
        let doc = doc_of(bytes);
        cache.put(key, &verified(None), &with_identity(&doc), None, None);
    }

    #[test]
    fn remembers_an_acceptance_and_counts_hits_and_misses() {
        let cache = VerificationCache::new(8);
        assert!(cache.find(&key(0), t("2026-01-01T00:00:00Z")).is_none());
        cache.record(false);
        put(&cache, key(0), 10);
        let hit = cache.find(&key(0), t("2030-01-01T00:00:00Z")).unwrap();
        cache.record(true);
        assert_eq!(hit.signed_docs.len(), 1);
        assert_eq!(hit.signed_docs[0].0.name, "x");
        let back: Value = serde_json::from_str(&hit.signed_docs[0].1).unwrap();
        assert_eq!(back, doc_of(10));
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 1,
                misses: 1,
                entries: 1
            }
        );
    }

    #[test]
    fn an_acceptance_under_a_maximum_age_expires_with_it() {
        let cache = VerificationCache::new(8);
        let max_age = Some(jiff::SignedDuration::from_hours(1));
        cache.put(
            key(0),
            &verified(None),
            &with_identity(&doc_of(1)),
            max_age,
            Some(t("2026-01-01T00:00:00Z")),
        );
        assert!(cache.find(&key(0), t("2026-01-01T00:59:59Z")).is_some());
        assert!(cache.find(&key(0), t("2026-01-01T01:00:00Z")).is_none());
    }

    #[test]
    fn an_expired_acceptance_is_replaced_by_a_new_one_for_the_same_material() {
        let cache = VerificationCache::new(8);
        let max_age = Some(jiff::SignedDuration::from_hours(1));
        let doc = doc_of(1);
        let at = |s: &str| Some(t(s));
        cache.put(
            key(0),
            &verified(None),
            &with_identity(&doc),
            max_age,
            at("2026-01-01T00:00:00Z"),
        );
        put(&cache, key(1), 1);
        let later = t("2026-01-01T02:00:00Z");
        assert!(cache.find(&key(0), later).is_none(), "expired");
        cache.put(
            key(0),
            &verified(None),
            &with_identity(&doc),
            max_age,
            at("2026-01-01T01:30:00Z"),
        );
        let hit = cache.find(&key(0), later).expect("the new acceptance");
        assert_eq!(hit.signed_at, at("2026-01-01T01:30:00Z"));
        assert_eq!(cache.stats().entries, 2);
        // Replaced, not added: the weight is counted once (a bound of two entries holds).
        let bounded = VerificationCache::with_bounds(8, 2 * weight(1));
        for _ in 0..3 {
            put(&bounded, key(0), 1);
        }
        put(&bounded, key(1), 1);
        assert_eq!(bounded.stats().entries, 2);
        assert!(bounded.find(&key(0), later).is_some());
    }

    #[test]
    fn the_key_covers_the_maximum_age_the_domain_and_the_limits() {
        let o = signed_object("m");
        let d = AnnotationDomain::default();
        let l = Limits::default();
        let hour = Some(jiff::SignedDuration::from_hours(1));
        let base = cache_key(&o, &d, &l, None).unwrap();
        assert_ne!(cache_key(&o, &d, &l, hour), Some(base));
        assert_ne!(
            cache_key(&o, &d, &l, hour),
            cache_key(&o, &d, &l, Some(jiff::SignedDuration::from_hours(2)))
        );
        let smaller = Limits {
            max_message_bytes: 1024,
            ..l
        };
        assert_ne!(cache_key(&o, &d, &smaller, None), Some(base));
        // another domain reads other keys: these annotations are not signatures there
        let other = AnnotationDomain::new("example.com").unwrap();
        assert_eq!(cache_key(&o, &other, &l, None), None);
    }

    #[test]
    fn the_key_covers_every_annotation_extraction_reads_and_only_those() {
        let base = json!({
            "cosign.sigstore.dev/message": "m",
            "cosign.sigstore.dev/signature": "s0",
            "cosign.sigstore.dev/certificate": "c0",
            "cosign.sigstore.dev/bundle": "b0",
            "cosign.sigstore.dev/signature_1": "s1",
        });
        let k = key_of(&object(base.clone())).unwrap();
        let changed = |key: &str, value: Value| {
            let mut a = base.clone();
            if value.is_null() {
                a.as_object_mut().unwrap().remove(key);
            } else {
                a[key] = value;
            }
            key_of(&object(a))
        };
        for name in [
            "message",
            "signature",
            "certificate",
            "bundle",
            "signature_1",
        ] {
            let key = format!("cosign.sigstore.dev/{name}");
            assert_ne!(changed(&key, json!("other")), Some(k), "{name}");
        }
        // present but empty is not absent
        assert_ne!(
            changed("cosign.sigstore.dev/certificate", json!("")),
            Some(k)
        );
        assert_ne!(
            changed("cosign.sigstore.dev/certificate", Value::Null),
            Some(k)
        );
        // a set after the first missing index is not read by extraction, nor by the key
        assert_eq!(
            changed("cosign.sigstore.dev/signature_3", json!("s3")),
            Some(k)
        );
        assert_ne!(
            changed("cosign.sigstore.dev/signature_2", json!("s2")),
            Some(k)
        );
        // other annotations are compared with the signed document, not part of the key
        assert_eq!(changed("team", json!("a")), Some(k));
        // moving material between fields changes the key (length-prefixed fields)
        let mut moved = base.clone();
        moved["cosign.sigstore.dev/certificate"] = json!("c0b0");
        moved["cosign.sigstore.dev/bundle"] = json!("");
        assert_ne!(key_of(&object(moved)), Some(k));
    }

    #[test]
    fn annotations_extraction_would_refuse_have_no_key() {
        // no message, no signature, a non-string value, not a mapping
        assert_eq!(
            key_of(&object(json!({"cosign.sigstore.dev/signature": "s"}))),
            None
        );
        assert_eq!(
            key_of(&object(json!({"cosign.sigstore.dev/message": "m"}))),
            None
        );
        assert_eq!(
            key_of(&object(json!({"cosign.sigstore.dev/message": "m",
                                  "cosign.sigstore.dev/signature": 1}))),
            None
        );
        assert_eq!(key_of(&object(json!("not a map"))), None);
        assert_eq!(
            key_of(&json!({"kind": "ConfigMap", "metadata": {"name": "x"}})),
            None
        );
        // over the total size bound, over the set bound
        let limits = Limits::default();
        let big = "a".repeat(limits.max_annotations_total_bytes);
        assert_eq!(key_of(&signed_object(&big)), None);
        let mut many = serde_json::Map::new();
        many.insert("cosign.sigstore.dev/message".into(), json!("m"));
        for i in 0..=limits.max_signature_sets {
            let d = AnnotationDomain::default();
            many.insert(d.signature_key(i), json!("s"));
        }
        assert_eq!(key_of(&object(Value::Object(many))), None);
    }

    /// Whether `cache` holds `key(i)` for each `i`, at a time every entry [`put`] is valid.
    fn held<const N: usize>(cache: &VerificationCache, keys: [u8; N]) -> [bool; N] {
        let now = t("2026-01-01T00:00:00Z");
        keys.map(|i| cache.find(&key(i), now).is_some())
    }

    #[test]
    fn the_oldest_entries_leave_first_and_the_size_stays_bounded() {
        let cache = VerificationCache::new(3);
        for i in 0..5 {
            put(&cache, key(i), 1);
        }
        assert_eq!(cache.stats().entries, 3);
        assert_eq!(held(&cache, [0, 1, 4]), [false, false, true]);
    }

    /// The weight of one kept `doc_of(bytes)`.
    fn weight(bytes: usize) -> usize {
        let doc = doc_of(bytes);
        let id = ObjectIdentity::of(&doc).unwrap();
        weight_of(&[(id, serde_json::to_string(&doc).unwrap().into_boxed_str())])
    }

    #[test]
    fn the_memory_of_the_documents_held_stays_bounded() {
        let one = weight(300);
        assert!(one > 300 && one < 800, "{one}");
        let cache = VerificationCache::with_bounds(100, 2 * one + one / 2);
        for i in 0..4 {
            put(&cache, key(i), 300);
        }
        // two fit in the bound; the older ones left
        assert_eq!(cache.stats().entries, 2);
        assert_eq!(held(&cache, [1, 3]), [false, true]);
        // documents larger than the whole bound are not remembered, and evict nothing
        put(&cache, key(9), 3 * one);
        assert_eq!(held(&cache, [9]), [false]);
        assert_eq!(cache.stats().entries, 2);
    }

    #[test]
    fn the_weight_counts_every_byte_kept() {
        assert_eq!(weight(1000) - weight(10), 990);
        let doc = doc_of(10);
        let mut id = ObjectIdentity::of(&doc).unwrap();
        let text: Box<str> = serde_json::to_string(&doc).unwrap().into();
        let base = weight_of(&[(id.clone(), text.clone())]);
        id.namespace = Some("team-a".into());
        assert_eq!(weight_of(&[(id.clone(), text.clone())]), base + 6);
        assert_eq!(
            weight_of(&[(id.clone(), text.clone()), (id, text)]),
            2 * (base + 6)
        );
    }

    /// The documents come back from their text exactly as they were parsed: key order,
    /// integers at the edges of their ranges, floats to the last bit, escapes.
    #[test]
    fn kept_documents_read_back_equal() {
        let doc = json!({
            "kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x", "z": 1, "a": 2},
            "data": {"u": u64::MAX, "i": i64::MIN, "f": 0.1 + 0.2, "tiny": 5e-324,
                     "big": 1.7976931348623157e308, "neg": -0.0, "third": 1.0 / 3.0,
                     "s": "é\u{0}\"\\\n\u{1F600}", "n": null, "b": [true, false, {}, []]},
        });
        let cache = VerificationCache::new(8);
        cache.put(key(0), &verified(None), &with_identity(&doc), None, None);
        let hit = cache.find(&key(0), t("2026-01-01T00:00:00Z")).unwrap();
        let back: Value = serde_json::from_str(&hit.signed_docs[0].1).unwrap();
        assert_eq!(back, doc);
        let keys = |v: &Value| {
            let map = v["metadata"].as_object().unwrap();
            map.keys().cloned().collect::<Vec<_>>()
        };
        assert_eq!(keys(&back), ["name", "z", "a"]);
        for (name, value) in doc["data"].as_object().unwrap() {
            if let Some(f) = value.as_f64().filter(|_| value.is_f64()) {
                assert_eq!(
                    back["data"][name].as_f64().unwrap().to_bits(),
                    f.to_bits(),
                    "{name}"
                );
            }
        }
        // Any finite float, to the last bit (serde_json's `float_roundtrip`: its default
        // parser may be one unit in the last place off).
        let mut bits: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut floats = Vec::new();
        while floats.len() < 20_000 {
            bits ^= bits << 13;
            bits ^= bits >> 7;
            bits ^= bits << 17;
            // Mostly ordinary magnitudes (1e-8 to 1e8), every mantissa bit random.
            let f =
                f64::from_bits((bits & 0x800F_FFFF_FFFF_FFFF) | ((996 + (bits >> 52) % 54) << 52));
            if f.is_finite() {
                floats.push(f);
            }
        }
        let doc = json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "x"},
                         "items": floats});
        cache.put(key(1), &verified(None), &with_identity(&doc), None, None);
        let hit = cache.find(&key(1), t("2026-01-01T00:00:00Z")).unwrap();
        let back: Value = serde_json::from_str(&hit.signed_docs[0].1).unwrap();
        let back = back["items"].as_array().unwrap();
        for (f, b) in floats.iter().zip(back) {
            assert_eq!(b.as_f64().unwrap().to_bits(), f.to_bits(), "{f:e}");
        }
    }

    #[test]
    fn a_clock_dependent_acceptance_is_not_remembered() {
        let cache = VerificationCache::new(8);
        let v = Verified {
            signature_set: 0,
            signer: SignerInfo::SigningCertificate {
                subject: "CN=x".into(),
                fingerprint: "ab".into(),
                key_fingerprint: "cd".into(),
                transparency_log: None,
            },
            entries: Vec::new(),
        };
        cache.put(key(0), &v, &with_identity(&doc_of(1)), None, None);
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn a_zero_capacity_cache_remembers_nothing() {
        let cache = VerificationCache::new(0);
        put(&cache, key(0), 1);
        assert!(cache.find(&key(0), t("2026-01-01T00:00:00Z")).is_none());
    }
}
