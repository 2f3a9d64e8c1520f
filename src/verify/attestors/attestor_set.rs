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
//! **Distinct signers.** Within one top-level attestor set (nested sets included), each
//! signer counts once: an entry is counted only with a signer no other counted entry of the
//! set's tree used. A signer is the public key that signed (plus, for keyless, its
//! identity): signers found on the object are grouped, transitively, when they come from
//! the same signature set, have the same key (a trusted key, the same key in a
//! certificate, or in two certificates with different subjects), the same keyless issuer
//! and subject, or the same PKI certificate subject ([`SignerIdentity::same_signer`]). So
//! the same key listed twice (or re-wrapped PEM of it), two identity entries that one
//! certificate satisfies, or one key presented once bare and once in a certificate, do not
//! make `count: 2` out of one signer.
//!
//! **Assignment.** Entries are assigned distinct signers by a real search across nesting
//! levels ([`assignment`](super::assignment)): leaves by maximum bipartite matching, a
//! nested set by the minimal signer sets with which it reaches its own count, so
//! `count: 2` over `[alice, {count: 1, entries: [alice, bob]}]` is satisfied by alice and
//! bob. The search has a step budget (past it the object is refused) and policies are
//! bounded at load (nesting depth, entries per top-level set). Kyverno counts entries
//! instead (upstream `Test_VerifyManifest_MustAll_ValidYAML` passes `count: 3` over
//! `[K1, K2, nested{K1}]` with two signatures; mansign denies it): documented in
//! `docs/policy.md`. Different top-level attestor sets are independent (ANDed): one signer
//! may satisfy an entry of each.
//!
//! Every (signature set, attestor) check runs at most once per object and within the
//! object's checks budget ([`SignatureChecks`]).

use super::assignment::{
    self, Budget, Choice, Exhausted, MAX_DEPTH, MAX_SIGNERS, MAX_STEPS, MAX_TREE_ENTRIES, Mask,
    Node,
};
use super::attestor::{KeylessAttestor, TrustedKey};
use super::checks::{BudgetExceeded, Leaf, SignatureChecks};
use super::failure::{Attempt, best_attempt};
use crate::annotations::SignatureSet;
use crate::verify::sigstore::certificate::CertificateAttestor;
use crate::verify::sigstore::signer::{SignerIdentity, SignerInfo};
use serde::Serialize;
use std::collections::BTreeMap;
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
#[non_exhaustive]
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
    #[error("attestor sets nested {depth} deep; at most {limit} levels are accepted")]
    TooDeep { depth: usize, limit: usize },
    #[error(
        "{entries} entries in one attestor set (nested sets included); at most {limit} are \
         accepted"
    )]
    TooManyEntries { entries: usize, limit: usize },
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
        let set = AttestorSet { count, entries };
        // Assigning distinct signers searches nested sets: bounded here, and by a step
        // budget when an object is verified.
        let (depth, entries) = set.shape();
        if depth > MAX_DEPTH {
            return Err(AttestorSetError::TooDeep {
                depth,
                limit: MAX_DEPTH,
            });
        }
        if entries > MAX_TREE_ENTRIES {
            return Err(AttestorSetError::TooManyEntries {
                entries,
                limit: MAX_TREE_ENTRIES,
            });
        }
        Ok(set)
    }

    /// Pairs of entries of this set (and, recursively, of its nested sets) that no
    /// assignment of distinct signers satisfies together, judging signers by what the
    /// entries name ([`AttestorEntry::signer_signature`]).
    fn collect_duplicates(&self, path: &EntryPath, out: &mut Vec<(EntryPath, EntryPath)>) {
        let mut names = Vec::new();
        let nodes: Vec<Node> = self
            .entries
            .iter()
            .map(|e| e.symbolic(&mut names))
            .collect();
        // Advisory only: past the search's bounds no warning is given.
        if names.len() <= MAX_SIGNERS {
            let mut budget = Budget::new(MAX_STEPS);
            let families: Result<Vec<Vec<Choice>>, Exhausted> = nodes
                .iter()
                .map(|n| assignment::ways(n, &mut budget))
                .collect();
            if let Ok(families) = families {
                for (i, a) in families.iter().enumerate() {
                    for (j, b) in families.iter().enumerate().skip(i + 1) {
                        // An entry that cannot be satisfied at all is reported inside it.
                        let together = a.iter().any(|x| b.iter().any(|y| x.mask & y.mask == 0));
                        if !a.is_empty() && !b.is_empty() && !together {
                            out.push((path.entry(i), path.entry(j)));
                        }
                    }
                }
            }
        }
        for (i, entry) in self.entries.iter().enumerate() {
            if let AttestorEntry::Nested(nested) = entry {
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

    /// Evaluates the set as a top-level attestor set: every leaf entry against every
    /// signature set, the signers grouped (one signer however often it appears), then the
    /// entries assigned distinct signers ([`assignment`](super::assignment)).
    fn evaluate(
        &self,
        path: &EntryPath,
        checks: &mut SignatureChecks<'_>,
    ) -> Result<Result<Vec<EntryMatch>, SetFailure>, BudgetExceeded> {
        let mut gathered = Gathered::default();
        let tree = gathered.set(self, path, checks)?;
        let classes = gathered.classes();
        let count = classes.iter().copied().max().map_or(0, |c| c + 1);
        if count > MAX_SIGNERS {
            return Ok(Err(matching_refused(
                path,
                self.required(),
                MatchingLimit::Signers { limit: MAX_SIGNERS },
            )));
        }
        gathered.assign_classes(&classes);
        let mut budget = Budget::new(MAX_STEPS);
        match gathered.report(&tree, Mask::MAX, &mut budget) {
            Ok(Report::Satisfied(matches)) => Ok(Ok(matches)),
            Ok(Report::Failed(failure)) => Ok(Err(failure)),
            Err(Exhausted) => Ok(Err(matching_refused(
                path,
                self.required(),
                MatchingLimit::Steps { limit: MAX_STEPS },
            ))),
        }
    }

    /// Nesting depth (1: no nested set) and number of entries at every level.
    fn shape(&self) -> (usize, usize) {
        let mut depth = 1;
        let mut entries = self.entries.len();
        for entry in &self.entries {
            if let AttestorEntry::Nested(nested) = entry {
                let (d, e) = nested.shape();
                depth = depth.max(d + 1);
                entries = entries.saturating_add(e);
            }
        }
        (depth, entries)
    }
}

/// A set refused because assigning signers to its entries would cost too much.
fn matching_refused(path: &EntryPath, required: usize, limit: MatchingLimit) -> SetFailure {
    SetFailure {
        set: path.clone(),
        verified: 0,
        required,
        failures: vec![EntryFailure {
            entry: path.clone(),
            reason: EntryFailureReason::MatchingBudgetExceeded(limit),
        }],
    }
}

/// What an attestor set's signer assignment exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchingLimit {
    /// More search steps than the budget (the search in `verify::assignment`).
    Steps { limit: usize },
    /// More distinct signers than the search handles.
    Signers { limit: usize },
}

/// A leaf entry's checks: the signers that satisfied it, or why none did.
struct GatheredLeaf {
    path: EntryPath,
    warnings: Vec<String>,
    /// Indices into [`Gathered::signers`], in the order found.
    found: Vec<usize>,
    attempts: Vec<Attempt>,
    no_signature_sets: bool,
    /// Signer group -> the first signature set and signer of that group satisfying it.
    candidates: BTreeMap<usize, (usize, SignerInfo)>,
}

/// A set of the tree: its path and count, its entries as the search sees them, and for
/// each entry its nested set (if it is one).
struct GatheredSet {
    path: EntryPath,
    required: usize,
    /// Index in [`Gathered::leaves`] of the set's first leaf (its leaves, nested ones
    /// included, follow in entry order).
    first_leaf: usize,
    nested: Vec<Option<GatheredSet>>,
}

/// Every signer found on the object for one top-level set, and every leaf's checks.
#[derive(Default)]
struct Gathered {
    /// (signature set index, signer), each distinct pair once.
    signers: Vec<(usize, SignerInfo)>,
    leaves: Vec<GatheredLeaf>,
    /// Per signer group, the identity named in messages (the group's first signer).
    names: Vec<SignerIdentity>,
}

/// The outcome of one set: its counted entries, or why it fell short.
enum Report {
    Satisfied(Vec<EntryMatch>),
    Failed(SetFailure),
}

impl Gathered {
    /// Runs every leaf check of `set` (nested sets included).
    fn set(
        &mut self,
        set: &AttestorSet,
        path: &EntryPath,
        checks: &mut SignatureChecks<'_>,
    ) -> Result<GatheredSet, BudgetExceeded> {
        let first_leaf = self.leaves.len();
        let mut nested = Vec::with_capacity(set.entries.len());
        for (i, entry) in set.entries.iter().enumerate() {
            let entry_path = path.entry(i);
            if let AttestorEntry::Nested(inner) = entry {
                nested.push(Some(self.set(inner, &entry_path, checks)?));
                continue;
            }
            nested.push(None);
            let mut leaf = GatheredLeaf {
                path: entry_path,
                warnings: entry.warnings(),
                found: Vec::new(),
                attempts: Vec::new(),
                no_signature_sets: checks.sets().is_empty(),
                candidates: BTreeMap::new(),
            };
            for position in 0..checks.sets().len() {
                let set_index = checks.sets()[position].index;
                for attestor in entry.leaves() {
                    match checks.check(position, attestor)? {
                        Ok(signer) => {
                            let index = self.signer_index(set_index, signer);
                            if !leaf.found.contains(&index) {
                                leaf.found.push(index);
                            }
                        }
                        Err(failure) => leaf.attempts.push(Attempt {
                            signature_set: set_index,
                            attestor: attestor.describe(),
                            failure,
                        }),
                    }
                }
            }
            self.leaves.push(leaf);
        }
        Ok(GatheredSet {
            path: path.clone(),
            required: set.required(),
            first_leaf,
            nested,
        })
    }

    fn signer_index(&mut self, set_index: usize, signer: SignerInfo) -> usize {
        match self
            .signers
            .iter()
            .position(|(i, s)| *i == set_index && *s == signer)
        {
            Some(index) => index,
            None => {
                self.signers.push((set_index, signer));
                self.signers.len() - 1
            }
        }
    }
}

/// Signer groups: the gathered signers that count as one signer.
impl Gathered {
    /// Groups the signers that are one signer: the same signature set (one signature is
    /// one signer, whichever entries accepted it), or the same signer by
    /// [`SignerIdentity::same_signer`] (the same key, keyless identity or PKI subject),
    /// transitively. Returns each signer's group, numbered in order of appearance.
    fn classes(&self) -> Vec<usize> {
        let identities: Vec<SignerIdentity> =
            self.signers.iter().map(|(_, s)| s.identity()).collect();
        let mut parent: Vec<usize> = (0..self.signers.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        for i in 0..self.signers.len() {
            for j in (i + 1)..self.signers.len() {
                if self.signers[i].0 == self.signers[j].0
                    || identities[i].same_signer(&identities[j])
                {
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let mut numbers: BTreeMap<usize, usize> = BTreeMap::new();
        (0..self.signers.len())
            .map(|i| {
                let r = root(&mut parent, i);
                let next = numbers.len();
                *numbers.entry(r).or_insert(next)
            })
            .collect()
    }

    /// Records each leaf's candidates by signer group, and each group's name.
    fn assign_classes(&mut self, classes: &[usize]) {
        self.names = Vec::new();
        for (i, &class) in classes.iter().enumerate() {
            if class == self.names.len() {
                self.names.push(self.signers[i].1.identity());
            }
        }
        for leaf in &mut self.leaves {
            for &index in &leaf.found {
                let (set_index, signer) = &self.signers[index];
                leaf.candidates
                    .entry(classes[index])
                    .or_insert_with(|| (*set_index, signer.clone()));
            }
        }
    }
}

/// The assignment search over the gathered tree, and its report.
impl Gathered {
    /// The search's view of a set's entries (leaf ids are indices into `leaves`, which
    /// [`set`](Self::set) filled in the same order as this walk).
    fn nodes(&self, set: &GatheredSet, next_leaf: &mut usize) -> Vec<Node> {
        set.nested
            .iter()
            .map(|nested| match nested {
                Some(inner) => Node::Set {
                    required: inner.required,
                    children: self.nodes(inner, next_leaf),
                },
                None => {
                    let id = *next_leaf;
                    *next_leaf += 1;
                    Node::Leaf {
                        id,
                        signers: self
                            .leaves
                            .get(id)
                            .map(|l| l.candidates.keys().copied().collect())
                            .unwrap_or_default(),
                    }
                }
            })
            .collect()
    }

    /// Evaluates `set` with the signer groups in `available`: the most entries distinct
    /// signers satisfy, and why each other entry was not counted.
    fn report(
        &self,
        set: &GatheredSet,
        available: Mask,
        budget: &mut Budget,
    ) -> Result<Report, Exhausted> {
        let mut next_leaf = set.first_leaf;
        let children = self.nodes(set, &mut next_leaf);
        let best = assignment::best(&children, available, budget)?;
        if best.total >= set.required {
            let mut matches: Vec<EntryMatch> = Vec::new();
            for &(id, class) in &best.picks {
                let Some(leaf) = self.leaves.get(id) else {
                    continue;
                };
                let Some((signature_set, signer)) = leaf.candidates.get(&class) else {
                    continue;
                };
                matches.push(EntryMatch {
                    entry: leaf.path.clone(),
                    signature_set: *signature_set,
                    signer: signer.clone(),
                    warnings: leaf.warnings.clone(),
                });
            }
            matches.sort_by(|a, b| a.entry.entries.cmp(&b.entry.entries));
            return Ok(Report::Satisfied(matches));
        }
        let mut failures = Vec::new();
        for (i, child) in children.iter().enumerate() {
            if best.counted.get(i).copied().unwrap_or(false) {
                continue;
            }
            let entry = set.path.entry(i);
            let reason = match (child, set.nested.get(i)) {
                (Node::Leaf { id, signers }, _) => match self.leaves.get(*id) {
                    Some(leaf) if !signers.is_empty() => EntryFailureReason::AlreadyCounted {
                        signers: leaf
                            .candidates
                            .values()
                            .map(|(_, signer)| signer.identity())
                            .collect(),
                    },
                    Some(leaf) if leaf.no_signature_sets => EntryFailureReason::NoSignatureSets,
                    Some(leaf) => EntryFailureReason::Attempts(leaf.attempts.clone()),
                    None => EntryFailureReason::NoSignatureSets,
                },
                (Node::Set { .. }, Some(Some(inner))) => {
                    let family = best.families.get(i).map(Vec::as_slice).unwrap_or(&[]);
                    if family.is_empty() {
                        match self.report(inner, Mask::MAX, budget)? {
                            Report::Failed(failure) => {
                                EntryFailureReason::Nested(Box::new(failure))
                            }
                            // Unreachable in practice (an empty family means the nested
                            // set cannot reach its count); refused all the same.
                            Report::Satisfied(_) => EntryFailureReason::AlreadyCounted {
                                signers: Vec::new(),
                            },
                        }
                    } else {
                        let used = family.iter().fold(0, |m, c| m | c.mask);
                        EntryFailureReason::AlreadyCounted {
                            signers: self
                                .names
                                .iter()
                                .enumerate()
                                .filter(|(class, _)| {
                                    *class < MAX_SIGNERS && used & (1 << class) != 0
                                })
                                .map(|(_, name)| name.clone())
                                .collect(),
                        }
                    }
                }
                (Node::Set { .. }, _) => EntryFailureReason::NoSignatureSets,
            };
            failures.push(EntryFailure { entry, reason });
        }
        Ok(Report::Failed(SetFailure {
            set: set.path.clone(),
            verified: best.total,
            required: set.required,
            failures,
        }))
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

    /// What identifies the signers this leaf entry accepts, for finding duplicates: any one
    /// of these (several for a multi-key entry). A pinned certificate is named by its key,
    /// as the key it holds is the same signer.
    fn signer_signature(&self) -> Vec<String> {
        match self {
            AttestorEntry::Keys(keys) => keys
                .iter()
                .map(|k| format!("key:{}", k.fingerprint))
                .collect(),
            AttestorEntry::Keyless(k) => {
                vec![format!("keyless:{}:{}", k.trust.origin(), k.identity)]
            }
            AttestorEntry::Certificate(c) => match c.pinned_key_fingerprint() {
                Some(key) => vec![format!("key:{key}")],
                None => vec![format!("certificate:{}", c.describe())],
            },
            AttestorEntry::Nested(_) => Vec::new(),
        }
    }

    /// The entry for the search, with symbolic signers: each distinct signature in
    /// `names` is one signer.
    fn symbolic(&self, names: &mut Vec<String>) -> Node {
        match self {
            AttestorEntry::Nested(set) => Node::Set {
                required: set.required(),
                children: set.entries.iter().map(|e| e.symbolic(names)).collect(),
            },
            leaf => Node::Leaf {
                id: 0,
                signers: leaf
                    .signer_signature()
                    .into_iter()
                    .map(|name| match names.iter().position(|n| *n == name) {
                        Some(i) => i,
                        None => {
                            names.push(name);
                            names.len() - 1
                        }
                    })
                    .collect(),
            },
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

    /// Pairs of entries of one set that can never both count: every way to satisfy one
    /// needs a signer that every way to satisfy the other needs, judging signers by what
    /// the entries name (the same key, however its PEM is wrapped or in a pinned
    /// certificate; the same keyless identity constraints; the same certificate attestor).
    /// A nested set that can use another signer is not such a pair. With distinct-signer
    /// counting a policy that lists them is almost certainly not what its author meant;
    /// the loaders warn.
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
    /// sets without a Rekor bundle at (the [`Verifier`](crate::verify::Verifier)'s clock), and the
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
    pub(in crate::verify) fn evaluate_with(
        &self,
        checks: &mut SignatureChecks<'_>,
    ) -> Result<Result<Vec<EntryMatch>, SetFailure>, BudgetExceeded> {
        let mut matched = Vec::new();
        for (i, set) in self.sets.iter().enumerate() {
            match set.evaluate(&EntryPath::set(i), checks)? {
                Ok(matches) => matched.extend(matches),
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
    /// [`insecure_any_issuer`](crate::verify::IdentityPolicyBuilder::insecure_any_issuer)).
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
    /// Assigning distinct signers to the set's entries would cost more than its budget.
    MatchingBudgetExceeded(MatchingLimit),
}

impl EntryFailureReason {
    /// How far the entry got (see [`CheckFailure::stage`]); counted-elsewhere is furthest.
    fn stage(&self) -> u8 {
        match self {
            EntryFailureReason::NoSignatureSets => 0,
            EntryFailureReason::Attempts(a) => best_attempt(a).map_or(0, |a| a.failure.stage()),
            EntryFailureReason::AlreadyCounted { .. } => 4,
            EntryFailureReason::Nested(f) => f.best().map_or(0, |r| r.stage()),
            EntryFailureReason::BudgetExceeded { .. }
            | EntryFailureReason::MatchingBudgetExceeded(_) => 5,
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
            EntryFailureReason::MatchingBudgetExceeded(_) => "matching-budget-exceeded",
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
            EntryFailureReason::MatchingBudgetExceeded(MatchingLimit::Steps { limit }) => write!(
                f,
                "assigning distinct signers to the entries takes more than {limit} search \
                 steps; refused"
            ),
            EntryFailureReason::MatchingBudgetExceeded(MatchingLimit::Signers { limit }) => {
                write!(
                    f,
                    "more than {limit} distinct signers to assign to the entries; refused"
                )
            }
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

    /// One set: any two of `entries`.
    fn two_of(entries: Vec<AttestorEntry>) -> AttestorPolicy {
        policy(vec![set(Some(2), entries)])
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

    // --- one key is one signer (issue 21, item 5) ---

    /// A CA for certificate entries: its params, key and PEM.
    struct Ca {
        params: rcgen::CertificateParams,
        key: rcgen::KeyPair,
        pem: String,
    }

    fn ca(name: &str) -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { params, key, pem }
    }

    /// A code-signing certificate named `cn` for `signer`'s key, issued by `issuer`
    /// (self-signed without one).
    fn certificate(signer: &Signer, cn: &str, issuer: Option<&Ca>) -> String {
        use p256::pkcs8::EncodePrivateKey as _;
        let pkcs8 = signer.key.to_pkcs8_der().unwrap();
        let key_pair = rcgen::KeyPair::try_from(pkcs8.as_bytes()).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 1, 1);
        match issuer {
            None => params.self_signed(&key_pair).unwrap().pem(),
            Some(ca) => params
                .signed_by(&key_pair, &rcgen::Issuer::from_params(&ca.params, &ca.key))
                .unwrap()
                .pem(),
        }
    }

    /// `signer`'s signature with `certificate_pem` in the set.
    fn with_certificate(signer: &Signer, index: usize, certificate_pem: &str) -> SignatureSet {
        SignatureSet {
            certificate_pem: Some(certificate_pem.to_string()),
            ..signer.set(index)
        }
    }

    fn chain_entry(name: &str, ca: &Ca) -> AttestorEntry {
        AttestorEntry::Certificate(CertificateAttestor::new(name, None, Some(&ca.pem)).unwrap())
    }

    fn pinned_entry(name: &str, certificate_pem: &str) -> AttestorEntry {
        AttestorEntry::Certificate(
            CertificateAttestor::new(name, Some(certificate_pem), None).unwrap(),
        )
    }

    /// count 2 over [key `a`, certificates of `authority`], over `a`'s signature without a
    /// certificate (set 0) and `holder`'s signature with `cert` (set 1).
    fn key_and_certificate(
        a: &Signer,
        authority: &Ca,
        holder: &Signer,
        cert: &str,
    ) -> Result<Vec<EntryMatch>, SetFailure> {
        let p = two_of(vec![a.entry(), chain_entry("team", authority)]);
        p.evaluate(MESSAGE, &[a.set(0), with_certificate(holder, 1, cert)])
    }

    #[test]
    fn one_key_bare_and_in_a_certificate_is_one_signer() {
        // count 2 over [key a, certificates of CA]: set 0 is a's signature without a
        // certificate, set 1 the same signature with a certificate for a's key.
        let a = Signer::new("a");
        let authority = ca("team CA");
        let cert = certificate(&a, "alice", Some(&authority));
        let err = key_and_certificate(&a, &authority, &a, &cert).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        assert_eq!(err.code(), "signer-already-counted", "{err}");
        // Each entry alone is satisfied: the refusal is the counting, not the checks.
        assert!(
            policy(vec![set(None, vec![chain_entry("team", &authority)])])
                .evaluate(MESSAGE, &[with_certificate(&a, 1, &cert)])
                .is_ok()
        );
    }

    #[test]
    fn one_signature_accepted_by_a_key_and_its_pinned_certificate_is_one_signer() {
        // One signature set, no certificate annotation: the key entry and the entry pinning
        // a certificate of the same key both accept it.
        let a = Signer::new("a");
        let cert = certificate(&a, "alice", None);
        let p = two_of(vec![a.entry(), pinned_entry("alice", &cert)]);
        let err = p.evaluate(MESSAGE, &[a.set(0)]).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        // and the loaders warn: the pinned certificate names the same key
        assert_eq!(p.duplicate_entries().len(), 1);
    }

    #[test]
    fn one_key_in_two_certificates_with_different_subjects_is_one_signer() {
        let a = Signer::new("a");
        let (ca1, ca2) = (ca("CA one"), ca("CA two"));
        let (c1, c2) = (
            certificate(&a, "alice", Some(&ca1)),
            certificate(&a, "not-alice", Some(&ca2)),
        );
        let p = two_of(vec![chain_entry("one", &ca1), chain_entry("two", &ca2)]);
        let sets = [with_certificate(&a, 0, &c1), with_certificate(&a, 1, &c2)];
        let err = p.evaluate(MESSAGE, &sets).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        // also when the key entry joins: still one signer for all three entries
        let p = two_of(vec![
            a.entry(),
            chain_entry("one", &ca1),
            chain_entry("two", &ca2),
        ]);
        let sets = [
            a.set(0),
            with_certificate(&a, 1, &c1),
            with_certificate(&a, 2, &c2),
        ];
        assert!(p.evaluate(MESSAGE, &sets).is_err());
    }

    #[test]
    fn two_keys_bare_and_in_a_certificate_still_count_two() {
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let authority = ca("team CA");
        let cert_b = certificate(&b, "bob", Some(&authority));
        let ok = key_and_certificate(&a, &authority, &b, &cert_b).unwrap();
        assert_eq!(
            paths(&ok),
            ["attestors[0].entries[0]", "attestors[0].entries[1]"]
        );
        // two certificates with different keys under one CA, two entries
        let cert_a = certificate(&a, "alice", Some(&authority));
        let p = two_of(vec![
            pinned_entry("alice", &cert_a),
            chain_entry("team", &authority),
        ]);
        let sets = [
            with_certificate(&a, 0, &cert_a),
            with_certificate(&b, 1, &cert_b),
        ];
        assert_eq!(p.evaluate(MESSAGE, &sets).unwrap().len(), 2);
    }

    // --- nested sets: a real assignment (issue 21, item 8) ---

    #[test]
    fn a_nested_set_uses_the_signer_its_sibling_leaves_free() {
        // count 2 over [alice, {count 1: [alice, bob]}]: alice for entry 0, bob for the
        // nested set (a greedy nested set took alice and denied).
        let (alice, bob) = (Signer::new("alice"), Signer::new("bob"));
        let nested = AttestorEntry::Nested(set(Some(1), vec![alice.entry(), bob.entry()]));
        let p = policy(vec![set(Some(2), vec![alice.entry(), nested])]);
        let ok = p.evaluate(MESSAGE, &[alice.set(0), bob.set(1)]).unwrap();
        assert_eq!(
            paths(&ok),
            [
                "attestors[0].entries[0]",
                "attestors[0].entries[1].attestor.entries[1]"
            ]
        );
        assert_eq!(ok[1].signature_set, 1);
        // the same object in the other signature order
        assert!(p.evaluate(MESSAGE, &[bob.set(0), alice.set(1)]).is_ok());
        // and the loaders do not warn: the two entries can both be satisfied
        assert!(p.duplicate_entries().is_empty());
    }

    #[test]
    fn a_nested_set_still_needs_its_own_signer() {
        let (alice, bob) = (Signer::new("alice"), Signer::new("bob"));
        let nested = AttestorEntry::Nested(set(Some(1), vec![alice.entry(), bob.entry()]));
        let p = policy(vec![set(Some(2), vec![alice.entry(), nested])]);
        // only alice signed
        let err = p.evaluate(MESSAGE, &[alice.set(0)]).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        // alice signed twice
        let err = p
            .evaluate(MESSAGE, &[alice.set(0), alice.set(1)])
            .unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        assert_eq!(err.code(), "signer-already-counted", "{err}");
        // only bob signed: the nested set counts, alice's entry does not
        let err = p.evaluate(MESSAGE, &[bob.set(0)]).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        assert_eq!(err.failures[0].entry.to_string(), "attestors[0].entries[0]");
    }

    #[test]
    fn two_nested_sets_share_no_signer_and_are_assigned_together() {
        // [{1 of [a, b]}, {1 of [a]}]: the first must take b for the second to get a.
        let (a, b) = (Signer::new("a"), Signer::new("b"));
        let first = AttestorEntry::Nested(set(Some(1), vec![a.entry(), b.entry()]));
        let second = AttestorEntry::Nested(set(None, vec![a.entry()]));
        let p = policy(vec![set(None, vec![first, second])]);
        let ok = p.evaluate(MESSAGE, &[a.set(0), b.set(1)]).unwrap();
        assert_eq!(ok.len(), 2);
        assert_ne!(ok[0].signer.identity(), ok[1].signer.identity());
        assert!(p.evaluate(MESSAGE, &[a.set(0)]).is_err());
    }

    #[test]
    fn a_nested_set_counting_two_consumes_two_signers() {
        // 2 of [a, {2 of [b, c]}] signed by a and b: the nested set has one signer only
        let (a, b, c) = (Signer::new("a"), Signer::new("b"), Signer::new("c"));
        let nested = AttestorEntry::Nested(set(None, vec![b.entry(), c.entry()]));
        let p = policy(vec![set(None, vec![a.entry(), nested])]);
        let err = p.evaluate(MESSAGE, &[a.set(0), b.set(1)]).unwrap_err();
        assert_eq!((err.verified, err.required), (1, 2), "{err}");
        assert!(err.to_string().contains("nested set: 1 of 2"), "{err}");
        assert!(p.evaluate(MESSAGE, &[a.set(0), b.set(1), c.set(2)]).is_ok());
    }

    #[test]
    fn deep_and_wide_attestor_sets_are_refused_when_built() {
        let a = Signer::new("a");
        let mut inner = set(None, vec![a.entry()]);
        for _ in 1..MAX_DEPTH {
            inner = set(None, vec![AttestorEntry::Nested(inner)]);
        }
        assert_eq!(
            AttestorSet::new(None, vec![AttestorEntry::Nested(inner)]).unwrap_err(),
            AttestorSetError::TooDeep {
                depth: MAX_DEPTH + 1,
                limit: MAX_DEPTH
            }
        );
        let wide: Vec<AttestorEntry> = (0..MAX_TREE_ENTRIES + 1).map(|_| a.entry()).collect();
        assert_eq!(
            AttestorSet::new(Some(1), wide).unwrap_err(),
            AttestorSetError::TooManyEntries {
                entries: MAX_TREE_ENTRIES + 1,
                limit: MAX_TREE_ENTRIES
            }
        );
    }

    #[test]
    fn a_search_beyond_its_budget_is_refused() {
        // A nested set of 10 of 20 entries each accepting any of 20 signers has C(20, 10)
        // ways to be satisfied: refused, never answered by a partial search.
        let signers: Vec<Signer> = (0..20).map(|_| Signer::new("s")).collect();
        let any_of = || {
            AttestorEntry::Keys(
                signers
                    .iter()
                    .map(|s| TrustedKey::new("s", *s.key.verifying_key()))
                    .collect(),
            )
        };
        let nested = AttestorEntry::Nested(set(Some(10), (0..20).map(|_| any_of()).collect()));
        let p = policy(vec![set(None, vec![nested])]);
        let sets: Vec<SignatureSet> = signers.iter().enumerate().map(|(i, s)| s.set(i)).collect();
        let fresh = |_: &SignerInfo| Ok(());
        let mut checks =
            SignatureChecks::new(MESSAGE, &sets, jiff::Timestamp::now(), &fresh, 20 * 20 * 20);
        let err = p.evaluate_with(&mut checks).unwrap().unwrap_err();
        assert_eq!(err.code(), "matching-budget-exceeded", "{err}");
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
