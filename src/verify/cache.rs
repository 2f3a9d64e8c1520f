//! Remembering accepted signatures, so a re-applied object costs only its comparison.
//!
//! GitOps tools re-apply the same signed objects again and again (every sync, every
//! controller reconcile), and each admission request would otherwise redo the signature
//! checks: a Fulcio chain, an SCT, a SET and a signature per set. A [`VerificationCache`]
//! keeps, per verifier requirement, the signature acceptance of recently seen signature
//! material:
//!
//! * **key**: SHA-256 over the signed message, every signature set (signature,
//!   certificate, Rekor bundle) and the maximum age; the requirement (keys, identities,
//!   trust roots) is the cache's owner, since clones of a verifier share its cache and a
//!   verifier with another requirement gets its own;
//! * **value**: who signed (the [`Verified`]) and until when that stays true: a
//!   maximum age makes an acceptance expire; an acceptance that depended on the clock
//!   (a certificate attestor's certificate checked at the current time, not at a log time)
//!   is not kept at all;
//! * only acceptances are kept, never rejections, so the cache can only save work, not
//!   change a verdict; the object is still compared with its signed document every time;
//! * the size is bounded (oldest entries leave first): hostile input can churn it but not
//!   grow it.

use super::signer::SignerInfo;
use super::verdict::Verified;
use crate::annotations::SignatureSet;
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Default number of remembered acceptances per verifier requirement.
pub const DEFAULT_CACHE_ENTRIES: usize = 4096;

/// The digest identifying the signature material of an object.
pub(super) type CacheKey = [u8; 32];

/// A bounded, thread-safe map from signature material to its acceptance.
#[derive(Debug)]
pub struct VerificationCache {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<CacheKey, Accepted>,
    order: VecDeque<CacheKey>,
    hits: u64,
    misses: u64,
}

#[derive(Debug, Clone)]
struct Accepted {
    verified: Verified,
    valid_until: Option<jiff::Timestamp>,
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
        VerificationCache {
            capacity,
            inner: Mutex::new(Entries::default()),
        }
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

    /// The acceptance remembered for `key`, if it is still valid at `now`.
    pub(super) fn get(&self, key: &CacheKey, now: jiff::Timestamp) -> Option<Verified> {
        let mut e = self.lock();
        let found = match e.map.get(key) {
            Some(a) if a.valid_until.is_none_or(|until| now < until) => Some(a.verified.clone()),
            _ => None,
        };
        if found.is_some() {
            e.hits += 1;
        } else {
            e.misses += 1;
        }
        found
    }

    /// Remembers an acceptance, unless it depended on the clock.
    pub(super) fn put(
        &self,
        key: CacheKey,
        verified: &Verified,
        max_age: Option<jiff::SignedDuration>,
        signed_at: Option<jiff::Timestamp>,
    ) {
        if self.capacity == 0 {
            return;
        }
        let signers: Vec<&SignerInfo> = if verified.entries.is_empty() {
            vec![&verified.signer]
        } else {
            verified.entries.iter().map(|e| &e.signer).collect()
        };
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
        let mut e = self.lock();
        if e.map.contains_key(&key) {
            return;
        }
        while e.map.len() >= self.capacity {
            let Some(oldest) = e.order.pop_front() else {
                break;
            };
            e.map.remove(&oldest);
        }
        e.order.push_back(key);
        e.map.insert(
            key,
            Accepted {
                verified: verified.clone(),
                valid_until,
            },
        );
    }
}

impl Default for VerificationCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_ENTRIES)
    }
}

/// The cache key of an object's signature material under a maximum age.
pub(super) fn cache_key(
    message: &[u8],
    sets: &[SignatureSet],
    max_age: Option<jiff::SignedDuration>,
) -> CacheKey {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        // Length-prefixed, so no two different inputs hash the same byte stream.
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"mansign verification cache v1");
    field(message);
    for set in sets {
        field(&(set.index as u64).to_be_bytes());
        field(&set.signature);
        field(set.certificate_pem.as_deref().unwrap_or("").as_bytes());
        match &set.bundle {
            Some(b) => field(&serde_json::to_vec(b).unwrap_or_default()),
            None => field(b""),
        }
    }
    match max_age {
        Some(d) => field(&d.as_secs().to_be_bytes()),
        None => field(b"no max age"),
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn remembers_an_acceptance_and_counts_hits_and_misses() {
        let cache = VerificationCache::new(8);
        let key = cache_key(b"m", &[], None);
        assert!(cache.get(&key, t("2026-01-01T00:00:00Z")).is_none());
        cache.put(key, &verified(None), None, None);
        assert!(cache.get(&key, t("2030-01-01T00:00:00Z")).is_some());
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
        let key = cache_key(b"m", &[], max_age);
        cache.put(
            key,
            &verified(None),
            max_age,
            Some(t("2026-01-01T00:00:00Z")),
        );
        assert!(cache.get(&key, t("2026-01-01T00:59:59Z")).is_some());
        assert!(cache.get(&key, t("2026-01-01T01:00:00Z")).is_none());
    }

    #[test]
    fn the_maximum_age_is_part_of_the_key() {
        let a = cache_key(b"m", &[], Some(jiff::SignedDuration::from_hours(1)));
        let b = cache_key(b"m", &[], Some(jiff::SignedDuration::from_hours(2)));
        assert_ne!(a, b);
        assert_ne!(a, cache_key(b"m", &[], None));
        assert_ne!(cache_key(b"m", &[], None), cache_key(b"n", &[], None));
    }

    #[test]
    fn the_oldest_entries_leave_first_and_the_size_stays_bounded() {
        let cache = VerificationCache::new(3);
        let keys: Vec<CacheKey> = (0..5u8).map(|i| cache_key(&[i], &[], None)).collect();
        for k in &keys {
            cache.put(*k, &verified(None), None, None);
        }
        let now = t("2026-01-01T00:00:00Z");
        assert_eq!(cache.stats().entries, 3);
        assert!(cache.get(&keys[0], now).is_none());
        assert!(cache.get(&keys[1], now).is_none());
        assert!(cache.get(&keys[4], now).is_some());
    }

    #[test]
    fn a_clock_dependent_acceptance_is_not_remembered() {
        let cache = VerificationCache::new(8);
        let key = cache_key(b"m", &[], None);
        let v = Verified {
            signature_set: 0,
            signer: SignerInfo::SigningCertificate {
                subject: "CN=x".into(),
                fingerprint: "ab".into(),
                transparency_log: None,
            },
            entries: Vec::new(),
        };
        cache.put(key, &v, None, None);
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn a_zero_capacity_cache_remembers_nothing() {
        let cache = VerificationCache::new(0);
        let key = cache_key(b"m", &[], None);
        cache.put(key, &verified(None), None, None);
        assert!(cache.get(&key, t("2026-01-01T00:00:00Z")).is_none());
    }
}
