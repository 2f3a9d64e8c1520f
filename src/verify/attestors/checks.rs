//! The signature checks of one object, done at most once each and within a budget.
//!
//! Verifying an object means trying its signature sets against attestors: a policy may name
//! the same key in several entries, and a hostile object may carry the most signature sets
//! the codec allows. Each (signature set, attestor) pair is therefore checked once and
//! remembered, and the number of checks actually run is bounded by
//! [`Limits::max_signature_checks`](crate::Limits::max_signature_checks): past it the object
//! is refused (fail closed) rather than costing seconds of CPU.

use super::attestor::{Attestor, KeylessAttestor, TrustedKey};
use super::failure::CheckFailure;
use crate::annotations::SignatureSet;
use crate::verify::sigstore::certificate::CertificateAttestor;
use crate::verify::sigstore::signer::SignerInfo;
use std::collections::HashMap;

/// A leaf attestor, borrowed from a requirement for the duration of one verification.
#[derive(Debug, Clone, Copy)]
pub(in crate::verify) enum Leaf<'a> {
    Key(&'a TrustedKey),
    Keyless(&'a KeylessAttestor),
    Certificate(&'a CertificateAttestor),
}

impl<'a> Leaf<'a> {
    pub(in crate::verify) fn of(attestor: &'a Attestor) -> Self {
        match attestor {
            Attestor::Key(k) => Leaf::Key(k),
            Attestor::Keyless(k) => Leaf::Keyless(k),
            Attestor::Certificate(c) => Leaf::Certificate(c),
        }
    }

    /// Identifies the attestor for the memo: its address, stable while the requirement is
    /// borrowed.
    fn address(self) -> usize {
        match self {
            Leaf::Key(k) => k as *const TrustedKey as usize,
            Leaf::Keyless(k) => k as *const KeylessAttestor as usize,
            Leaf::Certificate(c) => c as *const CertificateAttestor as usize,
        }
    }

    pub(in crate::verify) fn describe(self) -> String {
        match self {
            Leaf::Key(k) => format!("key {}", k.name),
            Leaf::Keyless(k) => format!("keyless identity [{}]", k.identity),
            Leaf::Certificate(c) => c.describe(),
        }
    }

    fn check(self, message: &[u8], set: &SignatureSet, now: jiff::Timestamp) -> CheckResult {
        match self {
            Leaf::Key(k) => k.check(message, set),
            Leaf::Keyless(k) => k.check(message, set),
            Leaf::Certificate(c) => c
                .check_at(message, set, now)
                .map_err(CheckFailure::Certificate),
        }
    }
}

/// Who signed, or why the set was not accepted.
pub(in crate::verify) type CheckResult = Result<SignerInfo, CheckFailure>;

/// The checks budget of one object was used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::verify) struct BudgetExceeded {
    pub limit: usize,
}

/// The age rule applied to every accepted signer (`--max-age`): `Err` refuses it.
pub(in crate::verify) type Freshness<'f> = &'f dyn Fn(&SignerInfo) -> Result<(), CheckFailure>;

/// Memoised, budgeted signature checks over one message and its signature sets.
pub(in crate::verify) struct SignatureChecks<'m> {
    message: &'m [u8],
    sets: &'m [SignatureSet],
    now: jiff::Timestamp,
    fresh: Freshness<'m>,
    limit: usize,
    run: usize,
    done: HashMap<(usize, usize), CheckResult>,
}

impl<'m> SignatureChecks<'m> {
    pub(in crate::verify) fn new(
        message: &'m [u8],
        sets: &'m [SignatureSet],
        now: jiff::Timestamp,
        fresh: Freshness<'m>,
        limit: usize,
    ) -> Self {
        SignatureChecks {
            message,
            sets,
            now,
            fresh,
            limit,
            run: 0,
            done: HashMap::new(),
        }
    }

    pub(in crate::verify) fn sets(&self) -> &'m [SignatureSet] {
        self.sets
    }

    /// The result of checking signature set `position` (index into the sets) with `leaf`.
    pub(in crate::verify) fn check(
        &mut self,
        position: usize,
        leaf: Leaf<'_>,
    ) -> Result<CheckResult, BudgetExceeded> {
        let key = (position, leaf.address());
        if let Some(result) = self.done.get(&key) {
            return Ok(result.clone());
        }
        let Some(set) = self.sets.get(position) else {
            return Ok(Err(CheckFailure::MalformedSignature));
        };
        if self.run >= self.limit {
            return Err(BudgetExceeded { limit: self.limit });
        }
        self.run += 1;
        let result = leaf
            .check(self.message, set, self.now)
            .and_then(|signer| (self.fresh)(&signer).map(|()| signer));
        self.done.insert(key, result.clone());
        Ok(result)
    }
}
