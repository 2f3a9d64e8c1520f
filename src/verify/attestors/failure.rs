//! Why a signature set was not accepted: one typed reason per check, each with a short
//! message and a stable machine code (for metrics, JSON output and the webhook's audit log).
//!
//! A [`CheckFailure`] is the outcome of one signature set against one attestor; an
//! [`Attempt`] says which pair it was. Verdicts keep every attempt, so a reader sees why
//! each set was refused, and [`best_attempt`] picks the one that got furthest (a signature
//! that verified but was made by the wrong identity says more than a set of another kind).

use super::identity::IdentityMismatch;
use crate::verify::sigstore::certificate::CertificateCheckError;
use crate::verify::sigstore::error::SigstoreError;
use serde::{Serialize, Serializer};
use std::fmt;

/// Why a signature's age could not be accepted (`--max-age`, policy `maxAge`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgeFailure {
    /// A key (or PKI certificate) signature carries no signed signing time: a
    /// transparency-log time is not one (anyone holding the signature can log it, or a
    /// malleated twin of it, at any time).
    #[error(
        "the signed document has no signed signing time (mansign.dev/signed-at) to check the \
         maximum age ({max_age:#}) against; a key signature's log time only says when it was \
         logged"
    )]
    NoSignedTime { max_age: jiff::SignedDuration },
    /// The signed signing time is later than the transparency log's entry (beyond the
    /// tolerated clock skew): the claim is false.
    #[error(
        "signed at {signed_at} (mansign.dev/signed-at) but logged at {logged_at}, earlier: \
         the signed time is not credible"
    )]
    SignedAfterLogged {
        signed_at: jiff::Timestamp,
        logged_at: jiff::Timestamp,
    },
    #[error("signed at {signed_at}, older than the maximum age {max_age:#}")]
    TooOld {
        signed_at: jiff::Timestamp,
        max_age: jiff::SignedDuration,
    },
    #[error("maximum age {max_age:#} cannot be applied at {now}")]
    OutOfRange {
        max_age: jiff::SignedDuration,
        now: jiff::Timestamp,
    },
}

impl AgeFailure {
    pub fn code(&self) -> &'static str {
        match self {
            AgeFailure::NoSignedTime { .. } => "no-signed-time",
            AgeFailure::SignedAfterLogged { .. } => "signed-time-after-log-time",
            AgeFailure::TooOld { .. } => "too-old",
            AgeFailure::OutOfRange { .. } => "max-age-out-of-range",
        }
    }
}

/// Why one signature set was not accepted by one attestor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckFailure {
    #[error(
        "the set carries a certificate (a keyless signature); a key attestor does not accept it"
    )]
    KeylessSetForKey,
    #[error("signature is not a DER ECDSA signature")]
    MalformedSignature,
    #[error("signature does not match the message and key")]
    KeyMismatch,
    #[error("the set carries a Rekor bundle but no trust root is configured to check it")]
    BundleWithoutTrustRoot,
    /// A Sigstore check failed (chain, SCT, SET, log entry, signature).
    #[error("{0}")]
    Sigstore(SigstoreError),
    /// The signature is valid but the signer is not allowed.
    #[error("signer not allowed: {0}")]
    Identity(IdentityMismatch),
    /// A certificate attestor (own PKI) refused the set.
    #[error("{0}")]
    Certificate(CertificateCheckError),
    /// The signature is valid and allowed, but too old (or its age cannot be proven).
    #[error("{0}")]
    Age(AgeFailure),
}

impl CheckFailure {
    /// Stable machine code of the failed check.
    pub fn code(&self) -> &'static str {
        match self {
            CheckFailure::KeylessSetForKey => "keyless-set-for-key",
            CheckFailure::MalformedSignature => "malformed-signature",
            CheckFailure::KeyMismatch => "bad-signature",
            CheckFailure::BundleWithoutTrustRoot => "bundle-without-trust-root",
            CheckFailure::Sigstore(e) => e.code(),
            CheckFailure::Identity(e) => e.code(),
            CheckFailure::Certificate(e) => e.code(),
            CheckFailure::Age(e) => e.code(),
        }
    }

    /// How far the check got: 0 the set is of another kind, 1 the cryptography failed,
    /// 2 the signature is valid but the signer is not allowed, 3 the signer is allowed but
    /// the signature too old.
    pub fn stage(&self) -> u8 {
        match self {
            CheckFailure::KeylessSetForKey => 0,
            CheckFailure::Sigstore(SigstoreError::NoCertificate) => 0,
            CheckFailure::Certificate(CertificateCheckError::NoCertificate) => 0,
            CheckFailure::Identity(_) => 2,
            CheckFailure::Age(_) => 3,
            _ => 1,
        }
    }

    pub fn is_age(&self) -> bool {
        matches!(self, CheckFailure::Age(_))
    }
}

/// One signature set tried with one attestor, and why it was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The set's index (0 = `signature`, N = `signature_N`).
    pub signature_set: usize,
    /// The attestor, as [`Attestor::describe`](crate::verify::Attestor::describe) writes it.
    pub attestor: String,
    pub failure: CheckFailure,
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "signature set {} with {}: {}",
            self.signature_set, self.attestor, self.failure
        )
    }
}

impl Serialize for Attempt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Attempt", 4)?;
        st.serialize_field("signatureSet", &self.signature_set)?;
        st.serialize_field("attestor", &self.attestor)?;
        st.serialize_field("code", self.failure.code())?;
        st.serialize_field("reason", &self.failure.to_string())?;
        st.end()
    }
}

/// The attempt that got furthest (the first of them), if any.
pub fn best_attempt(attempts: &[Attempt]) -> Option<&Attempt> {
    attempts
        .iter()
        .fold(None, |best: Option<&Attempt>, a| match best {
            Some(b) if b.failure.stage() >= a.failure.stage() => Some(b),
            _ => Some(a),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Claim;

    fn attempt(set: usize, failure: CheckFailure) -> Attempt {
        Attempt {
            signature_set: set,
            attestor: "key k".into(),
            failure,
        }
    }

    #[test]
    fn the_attempt_that_got_furthest_explains_the_rejection() {
        let attempts = [
            attempt(0, CheckFailure::KeylessSetForKey),
            attempt(
                1,
                CheckFailure::Identity(IdentityMismatch::NotEqual {
                    claim: Claim::Subject,
                    found: "a".into(),
                    expected: "b".into(),
                }),
            ),
            attempt(2, CheckFailure::KeyMismatch),
        ];
        let best = best_attempt(&attempts).unwrap();
        assert_eq!(best.signature_set, 1);
        assert_eq!(best.failure.code(), "subject-mismatch");
        assert!(best_attempt(&[]).is_none());
    }

    #[test]
    fn attempts_serialize_with_code_and_reason() {
        let v = serde_json::to_value(attempt(3, CheckFailure::KeyMismatch)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"signatureSet": 3, "attestor": "key k", "code": "bad-signature",
                               "reason": "signature does not match the message and key"})
        );
    }
}
