//! Attestor sets: who must have signed, as a tree (Kyverno's `attestors` semantics).
//!
//! An [`AttestorPolicy`] is a list of [`AttestorSet`]s that must **all** be satisfied (AND).
//! A set is satisfied when at least `count` of its entries are (N-of-M); without a count
//! every entry is required, as in Kyverno (`count` absent or 0 = all). An entry is a leaf
//! (trusted keys, a keyless identity, a certificate) or a nested set.
//!
//! **What satisfies an entry.** A leaf entry is satisfied when *some* signature set of the
//! object verifies under it (via [`Attestor::check`]); a nested set when its own count is
//! reached. Entries are counted, not signatures: one signature set may satisfy several
//! entries. This is what Kyverno does (each entry runs `k8smanifest.VerifyResource` over all
//! signature sets; upstream `Test_VerifyManifest_MustAll_ValidYAML` passes `count: 3` over
//! `[K1, K2, nested{K1}]` with only two signatures). The consequence, documented in
//! `docs/policy.md`: `count: 2` does not mean "two distinct signers" if the same key or
//! identity is listed twice; list distinct keys or identities for that.
//!
//! Evaluation stops as soon as a set reaches its count (Kyverno short-circuits the same
//! way), so the verdict names the entries that were needed, not every entry that would
//! also have verified.

use super::attestor::{Attestor, KeylessAttestor, TrustedKey};
use super::certificate::CertificateAttestor;
use super::signer::SignerInfo;
use crate::annotations::SignatureSet;
use serde::Serialize;
use std::fmt;

/// One entry of an attestor set.
#[derive(Debug, Clone)]
pub enum AttestorEntry {
    /// Any one of these keys. The policy loaders split a multi-key `publicKeys` into one
    /// entry per key before counting (Kyverno's `ExpandStaticKeys`), so from a policy file
    /// this holds one key.
    Keys(Vec<TrustedKey>),
    /// A Fulcio certificate for an allowed identity, verified against a trust root.
    Keyless(KeylessAttestor),
    /// A pinned signing certificate and/or a CA chain (Kyverno `certificates`).
    Certificate(CertificateAttestor),
    /// A nested set, satisfied when its own count is reached.
    Nested(AttestorSet),
}

/// Entries of which at least `count` must be satisfied (all when `count` is `None`).
#[derive(Debug, Clone)]
pub struct AttestorSet {
    count: Option<usize>,
    entries: Vec<AttestorEntry>,
}

/// All of these sets must be satisfied.
#[derive(Debug, Clone)]
pub struct AttestorPolicy {
    sets: Vec<AttestorSet>,
}

/// Why an attestor set cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttestorSetError {
    #[error("an attestor set needs at least one entry")]
    NoEntries,
    #[error("count must be at least 1 (leave it out to require every entry)")]
    ZeroCount,
    #[error("count {count} is larger than the number of entries ({entries})")]
    CountAboveEntries { count: usize, entries: usize },
    #[error("a keys entry needs at least one key")]
    NoKeys,
    #[error("an attestor policy needs at least one attestor set")]
    NoSets,
}

impl AttestorSet {
    /// A set requiring `count` of `entries` (`None`: all of them).
    pub fn new(
        count: Option<usize>,
        entries: Vec<AttestorEntry>,
    ) -> Result<Self, AttestorSetError> {
        if entries.is_empty() {
            return Err(AttestorSetError::NoEntries);
        }
        match count {
            Some(0) => return Err(AttestorSetError::ZeroCount),
            Some(n) if n > entries.len() => {
                return Err(AttestorSetError::CountAboveEntries {
                    count: n,
                    entries: entries.len(),
                });
            }
            _ => {}
        }
        if entries
            .iter()
            .any(|e| matches!(e, AttestorEntry::Keys(k) if k.is_empty()))
        {
            return Err(AttestorSetError::NoKeys);
        }
        Ok(AttestorSet { count, entries })
    }

    /// The count as written (`None`: all entries required).
    pub fn count(&self) -> Option<usize> {
        self.count
    }

    pub fn entries(&self) -> &[AttestorEntry] {
        &self.entries
    }

    /// How many entries must be satisfied.
    pub fn required(&self) -> usize {
        self.count.unwrap_or(self.entries.len())
    }

    fn evaluate(
        &self,
        path: &EntryPath,
        message: &[u8],
        sets: &[SignatureSet],
        now: jiff::Timestamp,
    ) -> Result<Vec<EntryMatch>, SetFailure> {
        let required = self.required();
        let mut matched = Vec::new();
        let mut verified = 0;
        let mut failures = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            let entry_path = path.entry(i);
            match entry.evaluate(&entry_path, message, sets, now) {
                Ok(m) => {
                    verified += 1;
                    matched.extend(m);
                    if verified >= required {
                        return Ok(matched);
                    }
                }
                Err(reason) => failures.push(EntryFailure {
                    entry: entry_path,
                    reason,
                }),
            }
        }
        Err(SetFailure {
            set: path.clone(),
            verified,
            required,
            failures,
        })
    }
}

impl AttestorEntry {
    /// What this entry accepts, for messages.
    pub fn describe(&self) -> String {
        match self {
            AttestorEntry::Keys(keys) => {
                let names: Vec<String> = keys.iter().map(|k| k.name.clone()).collect();
                format!("key {}", names.join(" or "))
            }
            AttestorEntry::Keyless(k) => Attestor::Keyless(k.clone()).describe(),
            AttestorEntry::Certificate(c) => c.describe(),
            AttestorEntry::Nested(set) => {
                format!("nested set ({} of {})", set.required(), set.entries.len())
            }
        }
    }

    fn evaluate(
        &self,
        path: &EntryPath,
        message: &[u8],
        sets: &[SignatureSet],
        now: jiff::Timestamp,
    ) -> Result<Vec<EntryMatch>, String> {
        let leaves: Vec<Attestor> = match self {
            AttestorEntry::Nested(set) => {
                return set
                    .evaluate(&path.nested(), message, sets, now)
                    .map_err(|f| format!("nested set: {}", f.summary()));
            }
            AttestorEntry::Keys(keys) => keys.iter().cloned().map(Attestor::Key).collect(),
            AttestorEntry::Keyless(k) => vec![Attestor::Keyless(k.clone())],
            AttestorEntry::Certificate(c) => vec![Attestor::Certificate(c.clone())],
        };
        if sets.is_empty() {
            return Err("no signature sets".into());
        }
        let mut attempts = Vec::new();
        for set in sets {
            for leaf in &leaves {
                match leaf.check_at(message, set, now) {
                    Ok(signer) => {
                        return Ok(vec![EntryMatch {
                            entry: path.clone(),
                            signature_set: set.index,
                            signer,
                        }]);
                    }
                    Err(reason) => attempts.push(format!(
                        "signature set {} with {}: {reason}",
                        set.index,
                        leaf.describe()
                    )),
                }
            }
        }
        Err(attempts.join("; "))
    }
}

impl AttestorPolicy {
    /// A policy requiring every one of `sets`.
    pub fn new(sets: Vec<AttestorSet>) -> Result<Self, AttestorSetError> {
        if sets.is_empty() {
            return Err(AttestorSetError::NoSets);
        }
        Ok(AttestorPolicy { sets })
    }

    pub fn sets(&self) -> &[AttestorSet] {
        &self.sets
    }

    /// Checks the signature sets over `message` against every attestor set. On success,
    /// the entries that were satisfied (in policy order) and which signature set and
    /// signer satisfied each; on failure, the first attestor set that was not satisfied
    /// and why each of its entries failed. Certificate entries check sets without a Rekor
    /// bundle at the system clock's time; see [`evaluate_at`](Self::evaluate_at).
    pub fn evaluate(
        &self,
        message: &[u8],
        sets: &[SignatureSet],
    ) -> Result<Vec<EntryMatch>, SetFailure> {
        self.evaluate_at(message, sets, jiff::Timestamp::now())
    }

    /// As [`evaluate`](Self::evaluate), with `now` as the time certificate entries check
    /// sets without a Rekor bundle at (the [`Verifier`](super::Verifier)'s clock).
    pub fn evaluate_at(
        &self,
        message: &[u8],
        sets: &[SignatureSet],
        now: jiff::Timestamp,
    ) -> Result<Vec<EntryMatch>, SetFailure> {
        let mut matched = Vec::new();
        for (i, set) in self.sets.iter().enumerate() {
            matched.extend(set.evaluate(&EntryPath::set(i), message, sets, now)?);
        }
        Ok(matched)
    }
}

/// Where an entry sits in the policy, printed Kyverno-style:
/// `attestors[0].entries[2].attestor.entries[0]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EntryPath {
    /// Index of the top-level attestor set.
    pub set: usize,
    /// Entry indices, one per nesting level.
    pub entries: Vec<usize>,
}

impl EntryPath {
    fn set(set: usize) -> Self {
        EntryPath {
            set,
            entries: Vec::new(),
        }
    }

    fn entry(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.entries.push(i);
        p
    }

    /// The nested set of this entry has the same path; its entries extend it.
    fn nested(&self) -> Self {
        self.clone()
    }
}

impl fmt::Display for EntryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attestors[{}]", self.set)?;
        for (level, i) in self.entries.iter().enumerate() {
            if level > 0 {
                f.write_str(".attestor")?;
            }
            write!(f, ".entries[{i}]")?;
        }
        Ok(())
    }
}

impl Serialize for EntryPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// An entry that was satisfied: by which signature set, and who signed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryMatch {
    pub entry: EntryPath,
    pub signature_set: usize,
    pub signer: SignerInfo,
}

impl fmt::Display for EntryMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: signature set {}, {}",
            self.entry, self.signature_set, self.signer
        )
    }
}

/// An entry that was not satisfied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryFailure {
    pub entry: EntryPath,
    pub reason: String,
}

/// An attestor set that did not reach its count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{set}: {}", self.summary())]
pub struct SetFailure {
    /// The set (its path is the entry holding it, for nested sets).
    pub set: EntryPath,
    pub verified: usize,
    pub required: usize,
    pub failures: Vec<EntryFailure>,
}

impl SetFailure {
    /// The failure without the set's path: counts, then each failed entry and why.
    pub fn summary(&self) -> String {
        let failures: Vec<String> = self
            .failures
            .iter()
            .map(|f| format!("{}: {}", f.entry, f.reason))
            .collect();
        format!(
            "{} of {} required entries verified: {}",
            self.verified,
            self.required,
            failures.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::{Signature, SigningKey, signature::Signer as _};

    const MESSAGE: &[u8] = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";

    struct Signer {
        key: SigningKey,
        name: &'static str,
    }

    impl Signer {
        fn new(name: &'static str) -> Self {
            Signer {
                key: SigningKey::random(&mut rand_core::OsRng),
                name,
            }
        }

        fn entry(&self) -> AttestorEntry {
            AttestorEntry::Keys(vec![TrustedKey::new(self.name, *self.key.verifying_key())])
        }

        fn set(&self, index: usize) -> SignatureSet {
            let sig: Signature = self.key.sign(MESSAGE);
            SignatureSet {
                index,
                signature: sig.to_der().as_bytes().to_vec(),
                certificate_pem: None,
                bundle: None,
            }
        }
    }

    fn set(count: Option<usize>, entries: Vec<AttestorEntry>) -> AttestorSet {
        AttestorSet::new(count, entries).unwrap()
    }

    fn policy(sets: Vec<AttestorSet>) -> AttestorPolicy {
        AttestorPolicy::new(sets).unwrap()
    }

    fn paths(m: &[EntryMatch]) -> Vec<String> {
        m.iter().map(|e| e.entry.to_string()).collect()
    }

    #[test]
    fn every_entry_is_required_without_a_count() {
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let p = policy(vec![set(None, vec![a.entry(), b.entry()])]);
        let err = p.evaluate(MESSAGE, &[a.set(0)]).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2));
        assert_eq!(err.failures[0].entry.to_string(), "attestors[0].entries[1]");
        let ok = p.evaluate(MESSAGE, &[a.set(0), b.set(1)]).unwrap();
        assert_eq!(
            paths(&ok),
            ["attestors[0].entries[0]", "attestors[0].entries[1]"]
        );
    }

    #[test]
    fn count_is_n_of_m() {
        let (a, b, c) = (Signer::new("a"), Signer::new("b"), Signer::new("c"));
        let p = policy(vec![set(Some(2), vec![a.entry(), b.entry(), c.entry()])]);
        assert!(p.evaluate(MESSAGE, &[c.set(0)]).is_err());
        let ok = p.evaluate(MESSAGE, &[c.set(0), a.set(1)]).unwrap();
        assert_eq!(
            paths(&ok),
            ["attestors[0].entries[0]", "attestors[0].entries[2]"]
        );
        assert_eq!(ok[0].signature_set, 1);
    }

    #[test]
    fn sets_are_anded() {
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let p = policy(vec![set(None, vec![a.entry()]), set(None, vec![b.entry()])]);
        let err = p.evaluate(MESSAGE, &[a.set(0)]).unwrap_err();
        assert_eq!(err.set.to_string(), "attestors[1]");
        assert!(p.evaluate(MESSAGE, &[b.set(0), a.set(1)]).is_ok());
    }

    #[test]
    fn one_signature_satisfies_every_entry_that_names_its_key() {
        // Entries are counted, not signatures (Kyverno semantics, documented).
        let a = Signer::new("a");
        let p = policy(vec![set(Some(2), vec![a.entry(), a.entry()])]);
        let ok = p.evaluate(MESSAGE, &[a.set(0)]).unwrap();
        assert_eq!(ok.len(), 2);
        assert!(ok.iter().all(|m| m.signature_set == 0));
    }

    #[test]
    fn nested_set_counts_as_one_entry() {
        let (a, b, c) = (Signer::new("a"), Signer::new("b"), Signer::new("c"));
        let nested = AttestorEntry::Nested(set(Some(1), vec![b.entry(), c.entry()]));
        let p = policy(vec![set(None, vec![a.entry(), nested])]);
        let ok = p.evaluate(MESSAGE, &[a.set(0), c.set(1)]).unwrap();
        assert_eq!(
            paths(&ok),
            [
                "attestors[0].entries[0]",
                "attestors[0].entries[1].attestor.entries[1]"
            ]
        );
        let err = p.evaluate(MESSAGE, &[a.set(0)]).unwrap_err();
        assert!(
            err.to_string().contains(
                "attestors[0].entries[1]: nested set: 0 of 1 required entries verified: \
                 attestors[0].entries[1].attestor.entries[0]: "
            ),
            "{err}"
        );
    }

    #[test]
    fn signature_over_another_message_satisfies_no_entry() {
        let a = Signer::new("a");
        let p = policy(vec![set(None, vec![a.entry()])]);
        let err = p.evaluate(b"other message", &[a.set(0)]).unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    #[test]
    fn without_signature_sets_no_entry_is_satisfied() {
        let a = Signer::new("a");
        let p = policy(vec![set(None, vec![a.entry()])]);
        let err = p.evaluate(MESSAGE, &[]).unwrap_err();
        assert_eq!(err.failures[0].reason, "no signature sets");
    }

    #[test]
    fn malformed_sets_and_policies_are_refused() {
        let a = Signer::new("a");
        assert_eq!(
            AttestorSet::new(None, vec![]).unwrap_err(),
            AttestorSetError::NoEntries
        );
        assert_eq!(
            AttestorSet::new(Some(0), vec![a.entry()]).unwrap_err(),
            AttestorSetError::ZeroCount
        );
        assert_eq!(
            AttestorSet::new(Some(2), vec![a.entry()]).unwrap_err(),
            AttestorSetError::CountAboveEntries {
                count: 2,
                entries: 1
            }
        );
        assert_eq!(
            AttestorSet::new(None, vec![AttestorEntry::Keys(vec![])]).unwrap_err(),
            AttestorSetError::NoKeys
        );
        assert_eq!(
            AttestorPolicy::new(vec![]).unwrap_err(),
            AttestorSetError::NoSets
        );
    }
}
