//! Attestor sets: who must have signed, as a tree (Kyverno's `attestors` semantics).
//!
//! An [`AttestorPolicy`] is a list of [`AttestorSet`]s that must **all** be satisfied (AND).
//! A set is satisfied when at least `count` of its entries are (N-of-M); without a count
//! every entry is required, as in Kyverno (`count` absent or 0 = all). An entry is a leaf
//! (trusted keys, a keyless identity, a certificate) or a nested set.
//!
//! **What satisfies an entry.** A leaf entry is satisfied when *some* signature set of the
//! object verifies under it; a nested set when its own count is reached.
//!
//! **Distinct signers.** Within one attestor set, each signer counts once: an entry is
//! counted only with a signer no other counted entry of the set used. The same key listed
//! twice (or re-wrapped PEM of it), or two identity entries that one certificate satisfies,
//! do not make `count: 2` out of one signature. Signers are compared by
//! [`SignerIdentity`] (key fingerprint; keyless issuer and subject; certificate subject).
//! Leaf entries are matched to signers with a maximum bipartite matching, so the count is
//! the largest number of entries that distinct signers can satisfy; a nested set draws its
//! signers first (from those not yet used), then the leaves are matched on the rest — this
//! can only under-count (deny), never over-count. Kyverno counts entries instead
//! (upstream `Test_VerifyManifest_MustAll_ValidYAML` passes `count: 3` over
//! `[K1, K2, nested{K1}]` with two signatures; mansign denies it): documented in
//! `docs/policy.md`. Different top-level attestor sets are independent (ANDed): one signer
//! may satisfy an entry of each.
//!
//! Every (signature set, attestor) check runs at most once per object and within the
//! object's checks budget ([`SignatureChecks`]).

use super::attestor::{KeylessAttestor, TrustedKey};
use super::certificate::CertificateAttestor;
use super::checks::{BudgetExceeded, Leaf, SignatureChecks};
use super::failure::{Attempt, best_attempt};
use super::signer::{SignerIdentity, SignerInfo};
use crate::annotations::SignatureSet;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
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

    fn collect_duplicates(&self, path: &EntryPath, out: &mut Vec<(EntryPath, EntryPath)>) {
        let signatures: Vec<Option<Vec<String>>> = self
            .entries
            .iter()
            .map(AttestorEntry::signer_signature)
            .collect();
        for (i, a) in signatures.iter().enumerate() {
            for (j, b) in signatures.iter().enumerate().skip(i + 1) {
                if let (Some(a), Some(b)) = (a, b)
                    && a.iter().any(|x| b.contains(x))
                {
                    out.push((path.entry(i), path.entry(j)));
                }
            }
            if let AttestorEntry::Nested(nested) = &self.entries[i] {
                nested.collect_duplicates(&path.entry(i), out);
            }
        }
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

    /// Evaluates the set with signers in `excluded` unavailable (used by the enclosing set).
    fn evaluate(
        &self,
        path: &EntryPath,
        checks: &mut SignatureChecks<'_>,
        excluded: &HashSet<SignerIdentity>,
    ) -> Result<Result<SetSuccess, SetFailure>, BudgetExceeded> {
        let required = self.required();
        let mut used = excluded.clone();
        let mut counted = 0usize;
        let mut matches = Vec::new();
        let mut failures = Vec::new();
        // 1. nested sets draw their signers first
        for (i, entry) in self.entries.iter().enumerate() {
            let AttestorEntry::Nested(nested) = entry else {
                continue;
            };
            let entry_path = path.entry(i);
            match nested.evaluate(&entry_path, checks, &used)? {
                Ok(success) => {
                    counted += 1;
                    used.extend(success.signers);
                    matches.extend(success.matches);
                }
                Err(failure) => failures.push(EntryFailure {
                    entry: entry_path,
                    reason: EntryFailureReason::Nested(Box::new(failure)),
                }),
            }
        }
        // 2. every leaf entry against every signature set
        let mut candidates: Vec<Candidate> = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            let leaves = entry.leaves();
            if leaves.is_empty() {
                continue;
            }
            let entry_path = path.entry(i);
            if checks.sets().is_empty() {
                failures.push(EntryFailure {
                    entry: entry_path,
                    reason: EntryFailureReason::NoSignatureSets,
                });
                continue;
            }
            let mut found = BTreeMap::new();
            let mut attempts = Vec::new();
            for position in 0..checks.sets().len() {
                let set_index = checks.sets()[position].index;
                for leaf in &leaves {
                    match checks.check(position, *leaf)? {
                        Ok(signer) => {
                            found
                                .entry(signer.identity())
                                .or_insert((set_index, signer));
                        }
                        Err(failure) => attempts.push(Attempt {
                            signature_set: set_index,
                            attestor: leaf.describe(),
                            failure,
                        }),
                    }
                }
            }
            let counted_elsewhere: Vec<SignerIdentity> = found
                .keys()
                .filter(|identity| used.contains(*identity))
                .cloned()
                .collect();
            found.retain(|identity, _| !used.contains(identity));
            if found.is_empty() {
                let reason = if counted_elsewhere.is_empty() {
                    EntryFailureReason::Attempts(attempts)
                } else {
                    EntryFailureReason::AlreadyCounted {
                        signers: counted_elsewhere,
                    }
                };
                failures.push(EntryFailure {
                    entry: entry_path,
                    reason,
                });
            } else {
                candidates.push((i, found));
            }
        }
        // 3. distinct signers for the leaves: maximum bipartite matching
        let assignment = match_distinct(&candidates);
        for (slot, (i, found)) in candidates.iter().enumerate() {
            let entry_path = path.entry(*i);
            match &assignment[slot] {
                Some(identity) => {
                    let (signature_set, signer) = found[identity].clone();
                    used.insert(identity.clone());
                    counted += 1;
                    matches.push(EntryMatch {
                        entry: entry_path,
                        signature_set,
                        signer,
                        warnings: self.entries[*i].warnings(),
                    });
                }
                None => failures.push(EntryFailure {
                    entry: entry_path,
                    reason: EntryFailureReason::AlreadyCounted {
                        signers: found.keys().cloned().collect(),
                    },
                }),
            }
        }
        matches.sort_by(|a, b| a.entry.entries.cmp(&b.entry.entries));
        failures.sort_by(|a, b| a.entry.entries.cmp(&b.entry.entries));
        if counted >= required {
            let signers = used.difference(excluded).cloned().collect();
            Ok(Ok(SetSuccess { matches, signers }))
        } else {
            Ok(Err(SetFailure {
                set: path.clone(),
                verified: counted,
                required,
                failures,
            }))
        }
    }
}

/// A leaf entry (its index in the set) and the signers that satisfy it, each with the
/// signature set (annotation index) that proved it.
type Candidate = (usize, BTreeMap<SignerIdentity, (usize, SignerInfo)>);

/// A satisfied set: the entries it counted and the signers they used.
struct SetSuccess {
    matches: Vec<EntryMatch>,
    signers: HashSet<SignerIdentity>,
}

/// For each candidate entry, the signer it is counted with (distinct across entries), as
/// many entries as possible (Kuhn's augmenting paths; sizes are a few entries by at most
/// [`Limits::max_signature_sets`](crate::Limits::max_signature_sets) signers).
fn match_distinct(candidates: &[Candidate]) -> Vec<Option<SignerIdentity>> {
    fn augment(
        slot: usize,
        candidates: &[Candidate],
        owner: &mut BTreeMap<SignerIdentity, usize>,
        visited: &mut HashSet<SignerIdentity>,
    ) -> bool {
        for identity in candidates[slot].1.keys() {
            if !visited.insert(identity.clone()) {
                continue;
            }
            let free = match owner.get(identity) {
                None => true,
                Some(&other) => augment(other, candidates, owner, visited),
            };
            if free {
                owner.insert(identity.clone(), slot);
                return true;
            }
        }
        false
    }
    let mut owner: BTreeMap<SignerIdentity, usize> = BTreeMap::new();
    for slot in 0..candidates.len() {
        augment(slot, candidates, &mut owner, &mut HashSet::new());
    }
    let mut assignment = vec![None; candidates.len()];
    for (identity, slot) in owner {
        assignment[slot] = Some(identity);
    }
    assignment
}

impl AttestorEntry {
    /// What this entry accepts, for messages.
    pub fn describe(&self) -> String {
        match self {
            AttestorEntry::Keys(keys) => {
                let names: Vec<String> = keys.iter().map(|k| k.name.clone()).collect();
                format!("key {}", names.join(" or "))
            }
            AttestorEntry::Keyless(k) => Leaf::Keyless(k).describe(),
            AttestorEntry::Certificate(c) => c.describe(),
            AttestorEntry::Nested(set) => {
                format!("nested set ({} of {})", set.required(), set.entries.len())
            }
        }
    }

    /// Warnings for a result this leaf entry accepted (see [`EntryMatch::warnings`]).
    fn warnings(&self) -> Vec<String> {
        match self {
            AttestorEntry::Keyless(k) if !k.identity.checks_issuer() => {
                vec![ISSUER_NOT_CHECKED.to_string()]
            }
            _ => Vec::new(),
        }
    }

    /// What identifies the signers this leaf entry accepts, for finding duplicates.
    fn signer_signature(&self) -> Option<Vec<String>> {
        match self {
            AttestorEntry::Keys(keys) => Some(
                keys.iter()
                    .map(|k| format!("key:{}", k.fingerprint))
                    .collect(),
            ),
            AttestorEntry::Keyless(k) => {
                Some(vec![format!("keyless:{}:{}", k.trust.origin(), k.identity)])
            }
            AttestorEntry::Certificate(c) => Some(vec![format!("certificate:{}", c.describe())]),
            // A nested set draws on every signer its entries name.
            AttestorEntry::Nested(set) => Some(
                set.entries
                    .iter()
                    .filter_map(AttestorEntry::signer_signature)
                    .flatten()
                    .collect(),
            ),
        }
    }

    /// The leaf attestors of a leaf entry (none for a nested set).
    fn leaves(&self) -> Vec<Leaf<'_>> {
        match self {
            AttestorEntry::Keys(keys) => keys.iter().map(Leaf::Key).collect(),
            AttestorEntry::Keyless(k) => vec![Leaf::Keyless(k)],
            AttestorEntry::Certificate(c) => vec![Leaf::Certificate(c)],
            AttestorEntry::Nested(_) => Vec::new(),
        }
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

    /// Pairs of entries of one set that name the same signer (the same key, however its PEM
    /// is wrapped; the same keyless identity constraints; the same certificate attestor; a
    /// nested set naming a signer of a sibling entry).
    /// With distinct-signer counting they can never both count, so a policy that lists them
    /// is almost certainly not what its author meant; the loaders warn.
    pub fn duplicate_entries(&self) -> Vec<(EntryPath, EntryPath)> {
        let mut out = Vec::new();
        for (i, set) in self.sets.iter().enumerate() {
            set.collect_duplicates(&EntryPath::set(i), &mut out);
        }
        out
    }

    /// Checks the signature sets over `message` against every attestor set. On success,
    /// the entries that were counted (in policy order) and which signature set and signer
    /// satisfied each; on failure, the first attestor set that was not satisfied and why
    /// each of its entries failed. Certificate entries check sets without a Rekor bundle at
    /// the system clock's time; see [`evaluate_at`](Self::evaluate_at).
    pub fn evaluate(
        &self,
        message: &[u8],
        sets: &[SignatureSet],
    ) -> Result<Vec<EntryMatch>, SetFailure> {
        self.evaluate_at(message, sets, jiff::Timestamp::now())
    }

    /// As [`evaluate`](Self::evaluate), with `now` as the time certificate entries check
    /// sets without a Rekor bundle at (the [`Verifier`](super::Verifier)'s clock), and the
    /// default checks budget. An exhausted budget is a failure of the set being evaluated.
    pub fn evaluate_at(
        &self,
        message: &[u8],
        sets: &[SignatureSet],
        now: jiff::Timestamp,
    ) -> Result<Vec<EntryMatch>, SetFailure> {
        let limit = crate::Limits::DEFAULT.max_signature_checks;
        let fresh = |_: &SignerInfo| Ok(());
        let mut checks = SignatureChecks::new(message, sets, now, &fresh, limit);
        match self.evaluate_with(&mut checks) {
            Ok(result) => result,
            Err(BudgetExceeded { limit }) => Err(SetFailure {
                set: EntryPath::set(0),
                verified: 0,
                required: 1,
                failures: vec![EntryFailure {
                    entry: EntryPath::set(0),
                    reason: EntryFailureReason::BudgetExceeded { limit },
                }],
            }),
        }
    }

    /// Evaluates every set with shared, budgeted checks.
    pub(super) fn evaluate_with(
        &self,
        checks: &mut SignatureChecks<'_>,
    ) -> Result<Result<Vec<EntryMatch>, SetFailure>, BudgetExceeded> {
        let mut matched = Vec::new();
        for (i, set) in self.sets.iter().enumerate() {
            match set.evaluate(&EntryPath::set(i), checks, &HashSet::new())? {
                Ok(success) => matched.extend(success.matches),
                Err(failure) => return Ok(Err(failure)),
            }
        }
        Ok(Ok(matched))
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
    /// What the entry did not check, so the result is weaker than it reads (`issuer not
    /// checked` for a keyless entry built with
    /// [`insecure_any_issuer`](super::IdentityPolicyBuilder::insecure_any_issuer)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The warning on every result a keyless entry without an issuer constraint accepted.
pub const ISSUER_NOT_CHECKED: &str = "issuer not checked";

impl fmt::Display for EntryMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: signature set {}, {}",
            self.entry, self.signature_set, self.signer
        )?;
        for w in &self.warnings {
            write!(f, " [{w}]")?;
        }
        Ok(())
    }
}

/// Why an entry was not counted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryFailureReason {
    /// The object has no signature sets at all.
    NoSignatureSets,
    /// No signature set was accepted: each attempt and why.
    Attempts(Vec<Attempt>),
    /// Accepted only by signers that other entries of the set already counted.
    AlreadyCounted { signers: Vec<SignerIdentity> },
    /// A nested set did not reach its count.
    Nested(Box<SetFailure>),
    /// The object's signature-checks budget ran out.
    BudgetExceeded { limit: usize },
}

impl EntryFailureReason {
    /// How far the entry got (see [`CheckFailure::stage`]); counted-elsewhere is furthest.
    fn stage(&self) -> u8 {
        match self {
            EntryFailureReason::NoSignatureSets => 0,
            EntryFailureReason::Attempts(a) => best_attempt(a).map_or(0, |a| a.failure.stage()),
            EntryFailureReason::AlreadyCounted { .. } => 4,
            EntryFailureReason::Nested(f) => f.best().map_or(0, |r| r.stage()),
            EntryFailureReason::BudgetExceeded { .. } => 5,
        }
    }

    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            EntryFailureReason::NoSignatureSets => "no-signature-sets",
            EntryFailureReason::Attempts(a) => {
                best_attempt(a).map_or("no-signature-sets", |a| a.failure.code())
            }
            EntryFailureReason::AlreadyCounted { .. } => "signer-already-counted",
            EntryFailureReason::Nested(f) => f.code(),
            EntryFailureReason::BudgetExceeded { .. } => "budget-exceeded",
        }
    }

    /// True if the furthest failure is about the signature's age.
    pub fn is_age(&self) -> bool {
        match self {
            EntryFailureReason::Attempts(a) => best_attempt(a).is_some_and(|a| a.failure.is_age()),
            EntryFailureReason::Nested(f) => f.is_age(),
            _ => false,
        }
    }
}

impl fmt::Display for EntryFailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryFailureReason::NoSignatureSets => f.write_str("no signature sets"),
            EntryFailureReason::Attempts(attempts) => {
                let texts: Vec<String> = attempts.iter().map(ToString::to_string).collect();
                f.write_str(&texts.join("; "))
            }
            EntryFailureReason::AlreadyCounted { signers } => {
                let names: Vec<String> = signers.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "verified only by {}, already counted for another entry of this set (each \
                     signer counts once)",
                    names.join(", ")
                )
            }
            EntryFailureReason::Nested(failure) => write!(f, "nested set: {}", failure.summary()),
            EntryFailureReason::BudgetExceeded { limit } => write!(
                f,
                "more than {limit} signature checks for one object; refused"
            ),
        }
    }
}

/// An entry that was not satisfied, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryFailure {
    pub entry: EntryPath,
    pub reason: EntryFailureReason,
}

impl Serialize for EntryFailure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("EntryFailure", 3)?;
        st.serialize_field("entry", &self.entry)?;
        st.serialize_field("code", self.reason.code())?;
        st.serialize_field("reason", &self.reason.to_string())?;
        st.end()
    }
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

    /// The entry failure that got furthest.
    fn best(&self) -> Option<&EntryFailureReason> {
        self.failures
            .iter()
            .map(|f| &f.reason)
            .fold(None, |best, r| match best {
                Some(b) if EntryFailureReason::stage(b) >= r.stage() => Some(b),
                _ => Some(r),
            })
    }

    /// Stable machine code: the code of the entry failure that got furthest.
    pub fn code(&self) -> &'static str {
        self.best()
            .map_or("attestor-set-not-satisfied", |r| r.code())
    }

    /// True if the furthest failure is about the signature's age.
    pub fn is_age(&self) -> bool {
        self.best().is_some_and(|r| r.is_age())
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
    fn one_signer_listed_twice_counts_once() {
        let a = Signer::new("a");
        let p = policy(vec![set(Some(2), vec![a.entry(), a.entry()])]);
        let err = p.evaluate(MESSAGE, &[a.set(0)]).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2));
        assert!(
            matches!(
                err.failures[0].reason,
                EntryFailureReason::AlreadyCounted { .. }
            ),
            "{err}"
        );
        assert_eq!(err.code(), "signer-already-counted");
        // Two signature sets by the same key are still one signer.
        assert!(p.evaluate(MESSAGE, &[a.set(0), a.set(1)]).is_err());
    }

    #[test]
    fn re_wrapped_pem_of_the_same_key_is_the_same_signer() {
        let a = Signer::new("a");
        let again = AttestorEntry::Keys(vec![TrustedKey::new("a-again", *a.key.verifying_key())]);
        let p = policy(vec![set(Some(2), vec![a.entry(), again])]);
        assert!(p.evaluate(MESSAGE, &[a.set(0)]).is_err());
    }

    #[test]
    fn distinct_signers_reach_the_count_whatever_the_entry_order() {
        // Entry 0 accepts a or b, entry 1 only a: a greedy pick of a for entry 0 would
        // leave entry 1 without a signer; the matching finds b for entry 0.
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let either = AttestorEntry::Keys(vec![
            TrustedKey::new("a", *a.key.verifying_key()),
            TrustedKey::new("b", *b.key.verifying_key()),
        ]);
        let p = policy(vec![set(Some(2), vec![either, a.entry()])]);
        let ok = p.evaluate(MESSAGE, &[a.set(0), b.set(1)]).unwrap();
        assert_eq!(ok.len(), 2);
        assert_ne!(ok[0].signer.identity(), ok[1].signer.identity());
    }

    #[test]
    fn a_nested_set_may_not_reuse_a_signer_of_its_parent() {
        // Kyverno's `count: 3` over [K1, K2, nested{K1}] with two signatures passes upstream;
        // with distinct signers it needs a third.
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let nested = AttestorEntry::Nested(set(None, vec![a.entry()]));
        let p = policy(vec![set(Some(3), vec![a.entry(), b.entry(), nested])]);
        let err = p.evaluate(MESSAGE, &[a.set(0), b.set(1)]).unwrap_err();
        assert_eq!((err.verified, err.required), (2, 3));
    }

    #[test]
    fn duplicate_entries_are_found_also_in_nested_sets() {
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let again = AttestorEntry::Keys(vec![TrustedKey::new("a-again", *a.key.verifying_key())]);
        let nested = AttestorEntry::Nested(set(None, vec![b.entry(), b.entry()]));
        let p = policy(vec![set(Some(1), vec![a.entry(), again, nested])]);
        let found: Vec<String> = p
            .duplicate_entries()
            .iter()
            .map(|(x, y)| format!("{x} {y}"))
            .collect();
        assert_eq!(
            found,
            [
                "attestors[0].entries[0] attestors[0].entries[1]",
                "attestors[0].entries[2].attestor.entries[0] attestors[0].entries[2].attestor.entries[1]"
            ]
        );
        let nested_a = AttestorEntry::Nested(set(None, vec![a.entry()]));
        let p = policy(vec![set(None, vec![a.entry(), nested_a])]);
        assert_eq!(p.duplicate_entries().len(), 1);
    }

    #[test]
    fn separate_attestor_sets_may_share_a_signer() {
        let a = Signer::new("a");
        let p = policy(vec![set(None, vec![a.entry()]), set(None, vec![a.entry()])]);
        assert!(p.evaluate(MESSAGE, &[a.set(0)]).is_ok());
    }

    #[test]
    fn checks_beyond_the_budget_fail_closed() {
        let signers: Vec<Signer> = (0..20).map(|_| Signer::new("x")).collect();
        let entries = signers.iter().map(Signer::entry).collect();
        let p = policy(vec![set(Some(1), entries)]);
        let sets: Vec<SignatureSet> = (0..32).map(|i| Signer::new("y").set(i)).collect();
        let fresh = |_: &SignerInfo| Ok(());
        let mut checks = SignatureChecks::new(MESSAGE, &sets, jiff::Timestamp::now(), &fresh, 100);
        assert_eq!(
            p.evaluate_with(&mut checks).unwrap_err(),
            BudgetExceeded { limit: 100 }
        );
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
        assert_eq!(err.failures[0].reason, EntryFailureReason::NoSignatureSets);
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
