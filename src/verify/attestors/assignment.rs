//! Assigning distinct signers to the entries of an attestor set, across nesting levels.
//!
//! The question: given, for every leaf entry, the signers that satisfy it, can the set reach
//! its count when **every signer is used by at most one counted leaf anywhere in the set's
//! tree**? A leaf is satisfied by one signer; a nested set with count `k` by `k` of its own
//! entries, with distinct signers, so it consumes all the signers its counted entries use.
//!
//! This is not a plain bipartite matching (a nested set needs `k` signers at once), so the
//! answer is found in two parts:
//!
//! * a nested set is described by its **family**: every minimal set of signers with which it
//!   reaches its count (a depth-first search over its entries, remembering the states it has
//!   already explored, then keeping only the minimal sets). A parent can use a nested set
//!   with any one of these, and only with signers none of its other counted entries use;
//! * a set that is not itself nested in another (the top of the tree, or a nested set whose
//!   own failure is being explained) is evaluated by trying the choices of its nested
//!   entries (including "not counted"), and for each, matching its leaf entries to the
//!   remaining signers with a maximum bipartite matching (augmenting paths). The best total
//!   is the number of entries that distinct signers can satisfy.
//!
//! Signers are numbered `0..64` (a bit mask each); the caller groups the signers that are the
//! same signer first. Every step of the search costs one unit of a [`Budget`]
//! ([`MAX_STEPS`]): a hostile policy or object exhausts it and is refused (fail closed),
//! never answered with a partial search. Policies are bounded when loaded as well
//! ([`MAX_DEPTH`], [`MAX_TREE_ENTRIES`]).
//!
//! Background: the top-level count is a maximum matching in a bipartite graph (entries ×
//! signers, Kuhn's augmenting paths); nesting turns it into a search, bounded here because
//! real policies are a few entries deep and wide.

use std::collections::{HashMap, HashSet};

/// A set of signers, one bit each.
pub(super) type Mask = u64;

/// Most distinct signers an object may present to one attestor set (the bits of a [`Mask`]);
/// more is refused. The default [`Limits::max_signature_sets`](crate::Limits) is 32, and
/// signers of one signature set are one signer, so this is not reached by default.
pub(super) const MAX_SIGNERS: usize = Mask::BITS as usize;

/// Most search steps spent assigning signers to the entries of one attestor set.
pub(super) const MAX_STEPS: usize = 100_000;

/// Deepest nesting of attestor sets accepted when a policy is loaded (a top-level set and
/// up to three nested levels).
pub const MAX_DEPTH: usize = 4;

/// Most entries (leaves and nested sets, at every level) in one top-level attestor set.
pub const MAX_TREE_ENTRIES: usize = 64;

/// The search ran out of steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exhausted;

/// Steps left for one search.
#[derive(Debug)]
pub(super) struct Budget {
    left: usize,
}

impl Budget {
    pub(super) fn new(steps: usize) -> Self {
        Budget { left: steps }
    }

    fn step(&mut self) -> Result<(), Exhausted> {
        self.left = self.left.checked_sub(1).ok_or(Exhausted)?;
        Ok(())
    }
}

/// An entry of a set, reduced to what the search needs.
#[derive(Debug, Clone)]
pub(super) enum Node {
    /// A leaf entry (`id` chosen by the caller) and the signers that satisfy it.
    Leaf { id: usize, signers: Vec<usize> },
    /// A nested set: `required` of `children`.
    Set {
        required: usize,
        children: Vec<Node>,
    },
}

/// One way to satisfy an entry: the signers it uses and which leaf takes which signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Choice {
    pub mask: Mask,
    /// (leaf id, signer)
    pub picks: Vec<(usize, usize)>,
}

/// The most entries of a set that distinct signers satisfy, and how.
#[derive(Debug, Clone)]
pub(super) struct Best {
    /// Entries counted.
    pub total: usize,
    /// For each entry of the set, whether it is counted.
    pub counted: Vec<bool>,
    /// Every (leaf id, signer) used, nested leaves included.
    pub picks: Vec<(usize, usize)>,
    /// For each entry that is a nested set, its family (else empty).
    pub families: Vec<Vec<Choice>>,
}

fn bit(signer: usize) -> Mask {
    if signer < MAX_SIGNERS { 1 << signer } else { 0 }
}

/// Every minimal set of signers with which `required` of `children` are satisfied by
/// distinct signers (empty: the set cannot be satisfied).
pub(super) fn family(
    required: usize,
    children: &[Node],
    budget: &mut Budget,
) -> Result<Vec<Choice>, Exhausted> {
    let mut options: Vec<Vec<Choice>> = Vec::with_capacity(children.len());
    for child in children {
        options.push(ways(child, budget)?);
    }
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut picks = Vec::new();
    family_search(
        &options, required, 0, 0, 0, &mut picks, &mut seen, &mut found, budget,
    )?;
    minimal(found, budget)
}

/// The ways to satisfy one entry: its minimal signer sets.
pub(super) fn ways(node: &Node, budget: &mut Budget) -> Result<Vec<Choice>, Exhausted> {
    match node {
        Node::Leaf { id, signers } => {
            let mut out = Vec::new();
            for &s in signers {
                budget.step()?;
                if s < MAX_SIGNERS {
                    out.push(Choice {
                        mask: bit(s),
                        picks: vec![(*id, s)],
                    });
                }
            }
            Ok(out)
        }
        Node::Set { required, children } => family(*required, children, budget),
    }
}

#[allow(clippy::too_many_arguments)]
fn family_search(
    options: &[Vec<Choice>],
    required: usize,
    index: usize,
    count: usize,
    used: Mask,
    picks: &mut Vec<(usize, usize)>,
    seen: &mut HashSet<(usize, usize, Mask)>,
    found: &mut Vec<Choice>,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    budget.step()?;
    if count == required {
        found.push(Choice {
            mask: used,
            picks: picks.clone(),
        });
        return Ok(());
    }
    // Not enough entries left, or this state was explored already (same entries decided,
    // same count, same signers used: the same completions follow).
    if count + (options.len() - index) < required || !seen.insert((index, count, used)) {
        return Ok(());
    }
    for choice in &options[index] {
        if choice.mask & used != 0 {
            continue;
        }
        let before = picks.len();
        picks.extend_from_slice(&choice.picks);
        family_search(
            options,
            required,
            index + 1,
            count + 1,
            used | choice.mask,
            picks,
            seen,
            found,
            budget,
        )?;
        picks.truncate(before);
    }
    family_search(
        options,
        required,
        index + 1,
        count,
        used,
        picks,
        seen,
        found,
        budget,
    )
}

/// Keeps the choices whose signer set holds no other choice's (first of equal ones).
fn minimal(mut found: Vec<Choice>, budget: &mut Budget) -> Result<Vec<Choice>, Exhausted> {
    found.sort_by_key(|c| c.mask.count_ones());
    let mut kept: Vec<Choice> = Vec::new();
    for choice in found {
        let mut covered = false;
        for k in &kept {
            budget.step()?;
            if k.mask & !choice.mask == 0 {
                covered = true;
                break;
            }
        }
        if !covered {
            kept.push(choice);
        }
    }
    Ok(kept)
}

/// The most of `children` that distinct signers from `available` satisfy, and one way to
/// do it (the first found in entry order).
pub(super) fn best(
    children: &[Node],
    available: Mask,
    budget: &mut Budget,
) -> Result<Best, Exhausted> {
    let mut families = vec![Vec::new(); children.len()];
    let mut nested = Vec::new();
    let mut leaves = Vec::new();
    for (i, child) in children.iter().enumerate() {
        match child {
            Node::Set {
                required,
                children: inner,
            } => {
                families[i] = family(*required, inner, budget)?;
                nested.push(i);
            }
            Node::Leaf { id, signers } => {
                let usable: Vec<usize> = signers
                    .iter()
                    .copied()
                    .filter(|&s| bit(s) & available != 0)
                    .collect();
                leaves.push((i, *id, usable));
            }
        }
    }
    let usable: Vec<Vec<&Choice>> = nested
        .iter()
        .map(|&i| {
            families[i]
                .iter()
                .filter(|c| c.mask & !available == 0)
                .collect()
        })
        .collect();
    let mut search = BestSearch {
        usable: &usable,
        nested: &nested,
        leaves: &leaves,
        available,
        entries: children.len(),
        chosen: vec![None; nested.len()],
        seen: HashMap::new(),
        best: None,
    };
    search.run(0, 0, 0, budget)?;
    let mut result = search.best.unwrap_or(Best {
        total: 0,
        counted: vec![false; children.len()],
        picks: Vec::new(),
        families: Vec::new(),
    });
    result.families = families;
    Ok(result)
}

struct BestSearch<'a> {
    /// For each nested entry, its choices within the available signers.
    usable: &'a [Vec<&'a Choice>],
    /// Entry index of each nested entry.
    nested: &'a [usize],
    /// (entry index, leaf id, usable signers) of each leaf entry.
    leaves: &'a [(usize, usize, Vec<usize>)],
    available: Mask,
    entries: usize,
    /// The choice taken for each nested entry decided so far.
    chosen: Vec<Option<usize>>,
    /// Most nested entries counted on reaching (position, signers used).
    seen: HashMap<(usize, Mask), usize>,
    best: Option<Best>,
}

impl BestSearch<'_> {
    fn run(
        &mut self,
        position: usize,
        used: Mask,
        picked: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        budget.step()?;
        if let Some(best) = &self.best {
            let bound = picked + (self.nested.len() - position) + self.leaves.len();
            if best.total == self.entries || bound <= best.total {
                return Ok(());
            }
        }
        if self
            .seen
            .get(&(position, used))
            .is_some_and(|&before| before >= picked)
        {
            return Ok(());
        }
        self.seen.insert((position, used), picked);
        if position == self.nested.len() {
            return self.finish(used, picked, budget);
        }
        let usable = self.usable;
        for (index, choice) in usable[position].iter().enumerate() {
            if choice.mask & used != 0 {
                continue;
            }
            self.chosen[position] = Some(index);
            self.run(position + 1, used | choice.mask, picked + 1, budget)?;
        }
        self.chosen[position] = None;
        self.run(position + 1, used, picked, budget)
    }

    /// The nested entries are decided: match the leaves to the signers left.
    fn finish(&mut self, used: Mask, picked: usize, budget: &mut Budget) -> Result<(), Exhausted> {
        let free = self.available & !used;
        let signers: Vec<Vec<usize>> = self
            .leaves
            .iter()
            .map(|(_, _, s)| s.iter().copied().filter(|&s| bit(s) & free != 0).collect())
            .collect();
        let owner = match_leaves(&signers, budget)?;
        let matched = owner.iter().filter(|o| o.is_some()).count();
        let total = picked + matched;
        if self.best.as_ref().is_some_and(|b| b.total >= total) {
            return Ok(());
        }
        let mut counted = vec![false; self.entries];
        let mut picks = Vec::new();
        for (position, chosen) in self.chosen.iter().enumerate() {
            if let Some(index) = chosen {
                counted[self.nested[position]] = true;
                picks.extend_from_slice(&self.usable[position][*index].picks);
            }
        }
        for (signer, slot) in owner.iter().enumerate() {
            if let Some(slot) = slot {
                let (entry, id, _) = &self.leaves[*slot];
                counted[*entry] = true;
                picks.push((*id, signer));
            }
        }
        self.best = Some(Best {
            total,
            counted,
            picks,
            families: Vec::new(),
        });
        Ok(())
    }
}

/// Maximum matching of leaves (each with the signers it accepts) to distinct signers:
/// for each signer, the leaf that takes it (Kuhn's augmenting paths).
fn match_leaves(
    signers: &[Vec<usize>],
    budget: &mut Budget,
) -> Result<Vec<Option<usize>>, Exhausted> {
    fn augment(
        slot: usize,
        signers: &[Vec<usize>],
        owner: &mut [Option<usize>],
        visited: &mut Mask,
        budget: &mut Budget,
    ) -> Result<bool, Exhausted> {
        for &s in &signers[slot] {
            budget.step()?;
            if s >= MAX_SIGNERS || *visited & bit(s) != 0 {
                continue;
            }
            *visited |= bit(s);
            let free = match owner[s] {
                None => true,
                Some(other) => augment(other, signers, owner, visited, budget)?,
            };
            if free {
                owner[s] = Some(slot);
                return Ok(true);
            }
        }
        Ok(false)
    }
    let mut owner = vec![None; MAX_SIGNERS];
    for slot in 0..signers.len() {
        let mut visited = 0;
        augment(slot, signers, &mut owner, &mut visited, budget)?;
    }
    Ok(owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(id: usize, signers: &[usize]) -> Node {
        Node::Leaf {
            id,
            signers: signers.to_vec(),
        }
    }

    fn set(required: usize, children: Vec<Node>) -> Node {
        Node::Set { required, children }
    }

    fn best_of(children: &[Node]) -> Best {
        best(children, Mask::MAX, &mut Budget::new(MAX_STEPS)).unwrap()
    }

    const ALICE: usize = 0;
    const BOB: usize = 1;
    const CAROL: usize = 2;

    #[test]
    fn a_nested_set_takes_the_signer_its_parent_leaves_free() {
        // count 2 over [alice, {count 1: [alice, bob]}], signed by alice and bob: the
        // nested set must take bob (a greedy pick of alice denies).
        let entries = [
            leaf(0, &[ALICE]),
            set(1, vec![leaf(1, &[ALICE]), leaf(2, &[BOB])]),
        ];
        let b = best_of(&entries);
        assert_eq!(b.total, 2);
        let mut picks = b.picks.clone();
        picks.sort();
        assert_eq!(picks, [(0, ALICE), (2, BOB)]);
    }

    #[test]
    fn one_signer_satisfies_one_entry_at_any_level() {
        let entries = [
            leaf(0, &[ALICE]),
            set(1, vec![leaf(1, &[ALICE]), leaf(2, &[BOB])]),
        ];
        let only_alice = best(&entries, bit(ALICE), &mut Budget::new(MAX_STEPS)).unwrap();
        assert_eq!(only_alice.total, 1);
        let nested_all = [
            leaf(0, &[ALICE]),
            set(2, vec![leaf(1, &[ALICE]), leaf(2, &[ALICE])]),
        ];
        assert_eq!(best_of(&nested_all).total, 1);
    }

    #[test]
    fn family_keeps_only_minimal_signer_sets() {
        // 1 of [alice, {2 of [alice, bob, carol]}]
        let f = family(
            1,
            &[
                leaf(0, &[ALICE]),
                set(
                    2,
                    vec![leaf(1, &[ALICE]), leaf(2, &[BOB]), leaf(3, &[CAROL])],
                ),
            ],
            &mut Budget::new(MAX_STEPS),
        )
        .unwrap();
        let masks: Vec<Mask> = f.iter().map(|c| c.mask).collect();
        assert_eq!(masks, [bit(ALICE), bit(BOB) | bit(CAROL)]);
    }

    #[test]
    fn leaves_are_matched_not_picked_greedily() {
        // entry 0 takes alice or bob, entry 1 only alice
        let entries = [leaf(0, &[ALICE, BOB]), leaf(1, &[ALICE])];
        assert_eq!(best_of(&entries).total, 2);
        // pigeonhole: 8 leaves over the same 7 signers count 7, quickly
        let all: Vec<usize> = (0..7).collect();
        let entries: Vec<Node> = (0..8).map(|i| leaf(i, &all)).collect();
        assert_eq!(best_of(&entries).total, 7);
        let nested = [set(8, entries.clone())];
        assert!(
            family(8, &entries, &mut Budget::new(MAX_STEPS))
                .unwrap()
                .is_empty()
        );
        assert_eq!(best_of(&nested).total, 0);
    }

    #[test]
    fn the_budget_bounds_hostile_shapes_and_fails_closed() {
        // A nested set of 16 of 32 leaves each accepting any of 32 signers has C(32, 16)
        // minimal signer sets: the search stops at the budget.
        let all: Vec<usize> = (0..32).collect();
        let wide: Vec<Node> = (0..32).map(|i| leaf(i, &all)).collect();
        let entries = [set(16, wide)];
        assert_eq!(
            best(&entries, Mask::MAX, &mut Budget::new(MAX_STEPS)).unwrap_err(),
            Exhausted
        );
    }
}
