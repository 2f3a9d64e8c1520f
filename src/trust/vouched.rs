//! Certificates a trust root has already vouched for, so a batch signed with one Fulcio
//! certificate pays for its chain and SCT once.
//!
//! A keyless signature set costs a Fulcio chain check (one P-384 or P-256 signature), an SCT
//! (one more), a SET and the artifact signature. The first two depend only on the
//! certificate, the trust root and — through the chain's validity — the time the
//! certificate is checked at. [`VouchedCertificates`] remembers, per trust root (it is a
//! field of [`TrustRoot`](super::TrustRoot), so another root never sees it):
//!
//! * **key**: SHA-256 of the leaf certificate's DER;
//! * **value**: the window in which every certificate of the verified path (leaf,
//!   intermediates and the root it ends in) is valid, the Fulcio authorities of the root
//!   that were valid at the time the chain was checked ([`FulcioAuthorities`]), and what
//!   the verifier read from the certificate ([`KeptFacts`]: its identity, issuer, claims
//!   and key), so a later set with the same certificate does not parse it again.
//!
//! A later set with the same certificate at time `t` may skip the chain and SCT only if
//! [`VouchedCertificate::covers`] `t`: every certificate of the path is valid at `t`
//! **and** the root's Fulcio authorities valid at `t` are exactly those of the first check.
//! Why that is enough: the chain is built from the leaf and the root's CA certificates
//! alone (intermediates are never taken from the annotation), the authorities' windows
//! decide which of them take part, and the path's validity (webpki's for the leaf and the
//! intermediates, mansign's own for the anchor, `verify::sigstore::fulcio_chain`) is the
//! only part of the check that depends on the time; so with the same authorities and the
//! whole path valid at `t`, the chain check at `t` has the result it had. The SCT is
//! checked against the CT log keys valid at the SCT's own timestamp, which is inside the
//! certificate.
//!
//! Everything else — the SET, the integrated time (not in the future, inside the leaf's
//! validity), the Rekor body, the signature over the message, the identity policy, the
//! maximum age — is checked for every set, hit or not. Only certificates whose chain and
//! SCT verified are remembered (a rejection is never cached), the size is bounded (oldest
//! first out), and a lock poisoned by a panic is still consistent (one insert or remove per
//! update).

use sha2::{Digest as _, Sha256};
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Default number of certificates remembered per trust root. A batch signing uses one
/// certificate; a cluster's GitOps repositories a handful per day of signing.
pub const DEFAULT_VOUCHED_CERTIFICATES: usize = 1024;

/// The digest identifying a leaf certificate (SHA-256 of its DER).
pub(crate) type CertificateKey = [u8; 32];

/// The positions, in the trust root, of the Fulcio authorities whose validity window
/// contains a given time: which anchors a chain check at that time may end in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FulcioAuthorities(pub(crate) Vec<usize>);

/// What the verifier read from a certificate (a function of its DER alone, judged by
/// nothing): kept with the entry and handed back on a hit. Opaque here, because trust/ sits
/// below verify/, which owns the type.
pub(crate) type KeptFacts = Arc<dyn Any + Send + Sync>;

/// What the first full check of a certificate established.
#[derive(Debug, Clone)]
pub(crate) struct VouchedCertificate {
    /// The window in which the leaf and every CA certificate of its verified path are
    /// valid (inclusive at both ends, as RFC 5280 and webpki read it).
    pub not_before: jiff::Timestamp,
    pub not_after: jiff::Timestamp,
    /// The authorities valid when the chain was checked.
    pub authorities: FulcioAuthorities,
    /// What the verifier read from this certificate.
    pub facts: KeptFacts,
}

impl VouchedCertificate {
    /// Whether the chain and SCT check of this certificate holds at `time`, given the
    /// authorities valid at `time` (see the module docs).
    pub(crate) fn covers(&self, time: jiff::Timestamp, authorities: &FulcioAuthorities) -> bool {
        self.not_before <= time && time <= self.not_after && *authorities == self.authorities
    }
}

/// Hit and miss counts of a trust root's certificate cache, for benchmarks and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VouchedStats {
    /// Chain and SCT checks skipped.
    pub hits: u64,
    /// Certificates checked in full.
    pub misses: u64,
    pub entries: usize,
}

/// A bounded, thread-safe map from certificate digest to what its first check established.
#[derive(Debug)]
pub(crate) struct VouchedCertificates {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<CertificateKey, VouchedCertificate>,
    order: VecDeque<CertificateKey>,
    hits: u64,
    misses: u64,
}

impl VouchedCertificates {
    pub(crate) fn new(capacity: usize) -> Self {
        VouchedCertificates {
            capacity,
            inner: Mutex::new(Entries::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn key(leaf_der: &[u8]) -> CertificateKey {
        Sha256::digest(leaf_der).into()
    }

    /// The facts of the certificate `key` if it was vouched for under conditions that
    /// still hold at `time` with `authorities` valid then. Counts a hit or a miss.
    pub(crate) fn covers(
        &self,
        key: &CertificateKey,
        time: jiff::Timestamp,
        authorities: &FulcioAuthorities,
    ) -> Option<KeptFacts> {
        let mut e = self.lock();
        let hit = e
            .map
            .get(key)
            .filter(|v| v.covers(time, authorities))
            .map(|v| v.facts.clone());
        if hit.is_some() {
            e.hits += 1;
        } else {
            e.misses += 1;
        }
        hit
    }

    /// Remembers a certificate whose chain and SCT verified.
    pub(crate) fn remember(&self, key: CertificateKey, vouched: VouchedCertificate) {
        if self.capacity == 0 {
            return;
        }
        let mut e = self.lock();
        if let Some(existing) = e.map.get_mut(&key) {
            // The same certificate checked under other authorities (a time on the other
            // side of an authority's window): keep the latest, still bounded.
            *existing = vouched;
            return;
        }
        while e.map.len() >= self.capacity {
            let Some(oldest) = e.order.pop_front() else {
                break;
            };
            e.map.remove(&oldest);
        }
        e.order.push_back(key);
        e.map.insert(key, vouched);
    }

    pub(crate) fn stats(&self) -> VouchedStats {
        let e = self.lock();
        VouchedStats {
            hits: e.hits,
            misses: e.misses,
            entries: e.map.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    fn vouched(authorities: Vec<usize>) -> VouchedCertificate {
        VouchedCertificate {
            not_before: t("2022-06-17T07:55:18Z"),
            not_after: t("2022-06-17T08:05:18Z"),
            authorities: FulcioAuthorities(authorities),
            facts: Arc::new(()),
        }
    }

    #[test]
    fn covers_a_time_inside_the_leaf_validity_with_the_same_authorities() {
        let v = vouched(vec![0, 1]);
        let same = FulcioAuthorities(vec![0, 1]);
        assert!(v.covers(t("2022-06-17T07:55:18Z"), &same));
        assert!(v.covers(t("2022-06-17T08:05:18Z"), &same));
    }

    #[test]
    fn does_not_cover_a_time_outside_the_leaf_validity() {
        let v = vouched(vec![0, 1]);
        let same = FulcioAuthorities(vec![0, 1]);
        assert!(!v.covers(t("2022-06-17T07:55:17Z"), &same));
        assert!(!v.covers(t("2022-06-17T08:05:19Z"), &same));
    }

    #[test]
    fn does_not_cover_a_time_when_other_authorities_are_valid() {
        let v = vouched(vec![0, 1]);
        assert!(!v.covers(t("2022-06-17T08:00:00Z"), &FulcioAuthorities(vec![0])));
        assert!(!v.covers(t("2022-06-17T08:00:00Z"), &FulcioAuthorities(vec![0, 1, 2])));
    }

    #[test]
    fn counts_hits_and_misses_and_stays_bounded() {
        let cache = VouchedCertificates::new(2);
        let keys: Vec<_> = (0..3u8).map(|i| VouchedCertificates::key(&[i])).collect();
        let time = t("2022-06-17T08:00:00Z");
        let a = FulcioAuthorities(vec![1]);
        assert!(cache.covers(&keys[0], time, &a).is_none());
        for k in &keys {
            cache.remember(*k, vouched(vec![1]));
        }
        assert!(
            cache.covers(&keys[0], time, &a).is_none(),
            "the oldest left first"
        );
        assert!(cache.covers(&keys[2], time, &a).is_some());
        assert_eq!(
            cache.stats(),
            VouchedStats {
                hits: 1,
                misses: 2,
                entries: 2
            }
        );
    }

    #[test]
    fn a_hit_hands_back_the_facts_kept_with_the_certificate() {
        let cache = VouchedCertificates::new(4);
        let key = VouchedCertificates::key(b"leaf");
        let time = t("2022-06-17T08:00:00Z");
        cache.remember(
            key,
            VouchedCertificate {
                facts: Arc::new("facts of leaf"),
                ..vouched(vec![1])
            },
        );
        let facts = cache
            .covers(&key, time, &FulcioAuthorities(vec![1]))
            .unwrap();
        assert_eq!(facts.downcast_ref::<&str>(), Some(&"facts of leaf"));
        // not at a time the check does not cover
        assert!(
            cache
                .covers(&key, time, &FulcioAuthorities(vec![0]))
                .is_none()
        );
    }

    #[test]
    fn a_zero_capacity_cache_remembers_nothing() {
        let cache = VouchedCertificates::new(0);
        let key = VouchedCertificates::key(b"leaf");
        cache.remember(key, vouched(vec![0]));
        assert_eq!(cache.stats().entries, 0);
    }
}
