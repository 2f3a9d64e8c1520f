//! Why a Sigstore check failed: one variant per check, shared by every path that proves a
//! signature with Sigstore evidence (keyless annotation sets, key-signed sets with a Rekor
//! bundle, legacy `rekord` entries and standard Sigstore bundles), so the same failure has
//! the same name and the same machine code wherever it happens.

use std::fmt;

/// The first Sigstore check that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigstoreError {
    // -- the signature set's shape --
    #[error("signature set has no certificate: it is not a keyless signature")]
    NoCertificate,
    #[error(
        "signature set has a certificate but no Rekor bundle: without transparency-log \
         evidence there is no trusted signing time to check the short-lived certificate against"
    )]
    NoBundle,
    #[error("certificate annotation is not a usable X.509 certificate: {0}")]
    MalformedCertificate(String),
    #[error("certificate has no email or URI subject alternative name")]
    NoSubject,
    #[error("Rekor bundle is malformed: {0}")]
    MalformedBundle(String),
    #[error(
        "Rekor entry kind {kind} {version} is not supported (expected hashedrekord 0.0.1 or \
         rekord 0.0.1)"
    )]
    UnsupportedEntry { kind: String, version: String },

    // -- transparency log --
    #[error(
        "transparency log {log_id} is not in the trust root ({trust_root}); signed against \
         another Sigstore instance? pass its trusted_root.json (--trusted-root)"
    )]
    UnknownLog { log_id: String, trust_root: String },
    #[error("signed entry timestamp does not verify: {0}")]
    SignedEntryTimestamp(String),
    #[error("integrated time is not acceptable: {0}")]
    IntegratedTime(String),
    #[error("inclusion proof does not verify: {0}")]
    InclusionProof(String),
    #[error("signed checkpoint does not verify: {0}")]
    Checkpoint(String),
    #[error("transparency log entry is malformed: {0}")]
    MalformedEntry(String),
    #[error("transparency log entry does not describe this signature: {0}")]
    EntryMismatch(String),

    // -- time evidence (bundles) --
    #[error("no verified signing time: {0}")]
    NoVerifiedTime(String),
    #[error("RFC 3161 timestamp does not verify: {0}")]
    Timestamp(String),

    // -- certificate --
    #[error("certificate does not chain to a trusted Fulcio root: {0}")]
    UntrustedCertificate(String),
    #[error("certificate not valid at {}: {detail}", SigningTimeText(.time))]
    CertificateNotValidAt {
        /// The verified signing time the certificate was checked at, when known.
        time: Option<jiff::Timestamp>,
        detail: String,
    },
    /// A CA certificate of the Fulcio chain (an intermediate, or the root the chain ends
    /// in) was not valid at the verified signing time.
    #[error(
        "Fulcio {role} certificate {subject} {} the {}",
        ValidityText::new(.not_before, .not_after, .time),
        SigningTimeText(&Some(*.time))
    )]
    ChainCertificateNotValidAt {
        /// `intermediate` or `root` (the anchor the chain ends in).
        role: &'static str,
        /// The certificate's subject (RFC 4514).
        subject: String,
        not_before: jiff::Timestamp,
        not_after: jiff::Timestamp,
        /// The verified signing time it was checked at.
        time: jiff::Timestamp,
    },
    #[error("signed certificate timestamp does not verify: {0}")]
    Sct(String),
    #[error("certificate subject {found} is not the expected identity {expected}")]
    IdentityMismatch { expected: String, found: String },
    #[error("certificate issuer {found} is not the expected issuer {expected}")]
    IssuerMismatch { expected: String, found: String },

    // -- signature and artifact --
    #[error("signature does not verify over the message: {0}")]
    BadSignature(String),
    #[error("the signature is not for this artifact: {0}")]
    ArtifactMismatch(String),

    // -- bundle documents --
    #[error("invalid bundle: {0}")]
    InvalidBundle(String),
    #[error("unsupported bundle: {0}")]
    UnsupportedBundle(String),

    /// The verification library reported success without running a check mansign
    /// requires; refused rather than trusted.
    #[error("verification did not run a required check: {0}")]
    SkippedCheck(&'static str),
    #[error("verification failed: {0}")]
    Other(String),
}

impl SigstoreError {
    /// Stable machine code of the failed check (metrics labels, JSON `code`).
    pub fn code(&self) -> &'static str {
        match self {
            SigstoreError::NoCertificate => "no-certificate",
            SigstoreError::NoBundle => "no-rekor-bundle",
            SigstoreError::MalformedCertificate(_) => "malformed-certificate",
            SigstoreError::NoSubject => "certificate-without-subject",
            SigstoreError::MalformedBundle(_) => "malformed-rekor-bundle",
            SigstoreError::UnsupportedEntry { .. } => "unsupported-log-entry",
            SigstoreError::UnknownLog { .. } => "unknown-log",
            SigstoreError::SignedEntryTimestamp(_) => "set-invalid",
            SigstoreError::IntegratedTime(_) => "integrated-time-invalid",
            SigstoreError::InclusionProof(_) => "inclusion-proof-invalid",
            SigstoreError::Checkpoint(_) => "checkpoint-invalid",
            SigstoreError::MalformedEntry(_) => "malformed-log-entry",
            SigstoreError::EntryMismatch(_) => "log-entry-mismatch",
            SigstoreError::NoVerifiedTime(_) => "no-verified-time",
            SigstoreError::Timestamp(_) => "timestamp-invalid",
            SigstoreError::UntrustedCertificate(_) => "untrusted-chain",
            SigstoreError::CertificateNotValidAt { .. } => "certificate-not-valid-at-signing-time",
            SigstoreError::ChainCertificateNotValidAt { .. } => {
                "chain-certificate-not-valid-at-signing-time"
            }
            SigstoreError::Sct(_) => "sct-invalid",
            SigstoreError::IdentityMismatch { .. } => "identity-mismatch",
            SigstoreError::IssuerMismatch { .. } => "issuer-mismatch",
            SigstoreError::BadSignature(_) => "bad-signature",
            SigstoreError::ArtifactMismatch(_) => "artifact-mismatch",
            SigstoreError::InvalidBundle(_) => "invalid-bundle",
            SigstoreError::UnsupportedBundle(_) => "unsupported-bundle",
            SigstoreError::SkippedCheck(_) => "check-skipped",
            SigstoreError::Other(_) => "sigstore-verification-failed",
        }
    }
}

/// "integrated time 2026-01-02T03:04:05Z", or "the signing time" when it is unknown.
struct SigningTimeText<'a>(&'a Option<jiff::Timestamp>);

impl fmt::Display for SigningTimeText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(t) => write!(f, "signing time {t}"),
            None => f.write_str("the verified signing time"),
        }
    }
}

/// "expired at N, before" or "not valid before N, after" (the signing time follows).
struct ValidityText<'a> {
    not_before: &'a jiff::Timestamp,
    not_after: &'a jiff::Timestamp,
    time: &'a jiff::Timestamp,
}

impl<'a> ValidityText<'a> {
    fn new(
        not_before: &'a jiff::Timestamp,
        not_after: &'a jiff::Timestamp,
        time: &'a jiff::Timestamp,
    ) -> Self {
        ValidityText {
            not_before,
            not_after,
            time,
        }
    }
}

impl fmt::Display for ValidityText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.time > self.not_after {
            write!(f, "expired at {}, before", self.not_after)
        } else if self.time < self.not_before {
            write!(f, "is not valid before {}, later than", self.not_before)
        } else {
            write!(
                f,
                "(valid {} to {}) is refused at",
                self.not_before, self.not_after
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_validity_failure_names_the_signing_time() {
        let e = SigstoreError::CertificateNotValidAt {
            time: Some("2026-01-02T03:04:05Z".parse().unwrap()),
            detail: "expired at 2026-01-02T03:00:00Z".into(),
        };
        assert_eq!(
            e.to_string(),
            "certificate not valid at signing time 2026-01-02T03:04:05Z: expired at \
             2026-01-02T03:00:00Z"
        );
        assert_eq!(e.code(), "certificate-not-valid-at-signing-time");
    }

    #[test]
    fn chain_certificate_validity_failure_names_the_certificate_and_both_times() {
        let e = SigstoreError::ChainCertificateNotValidAt {
            role: "intermediate",
            subject: "CN=test-intermediate".into(),
            not_before: "2020-01-01T00:00:00Z".parse().unwrap(),
            not_after: "2024-01-01T00:00:00Z".parse().unwrap(),
            time: "2025-01-02T03:04:05Z".parse().unwrap(),
        };
        assert_eq!(
            e.to_string(),
            "Fulcio intermediate certificate CN=test-intermediate expired at \
             2024-01-01T00:00:00Z, before the signing time 2025-01-02T03:04:05Z"
        );
        assert_eq!(e.code(), "chain-certificate-not-valid-at-signing-time");
    }
}
