//! Identity policy: is the verified signer an acceptable one?
//!
//! Verification proves *who* signed ([`SigstoreEvidence`]); this module decides whether
//! that signer is allowed, with small matchers in the style of sigstore-python's
//! `verify/policy.py`: one [`ClaimMatcher`] per certificate claim, all of which must hold
//! (AllOf). Alternatives (AnyOf) are expressed as several keyless attestors.
//!
//! * Values are compared exactly, or with a regex that is always **anchored**: the pattern
//!   `https://github.com/org/.*` is compiled as `^(?:https://github.com/org/.*)$`, so it
//!   cannot match `https://github.com/org.evil/...` through a prefix or a suffix. Regexes
//!   are compiled once, when the policy is built.
//! * The issuer is the Fulcio extension `1.3.6.1.4.1.57264.1.8` (legacy `.1.1`), the
//!   subject the certificate's SAN. GitHub claims come from their own extensions (see
//!   [`Claim`]); nothing is parsed out of the SAN.
//! * A policy without an issuer constraint, or without any identity constraint (subject or
//!   GitHub workflow repository), is refused when it is built, unless the caller explicitly
//!   asks for [`IdentityPolicyBuilder::insecure_any_identity`] (cosign's rule: any Fulcio
//!   certificate for any account of any issuer would otherwise pass).

use crate::verify::sigstore::evidence::SigstoreEvidence;
use regex::{Regex, RegexBuilder};
use std::fmt;

/// Compiled-program size limit for policy regexes (they come from configuration, but a
/// typo should fail, not eat memory).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Why an identity policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityPolicyError {
    #[error(
        "keyless verification needs an OIDC issuer constraint (exact or regex); refusing to \
         accept certificates from any issuer without an explicit insecure-any-identity"
    )]
    MissingIssuer,
    #[error(
        "keyless verification needs an identity constraint (certificate subject or GitHub \
         workflow repository; ref, trigger, SHA and name alone match any repository); \
         refusing to accept any identity without an explicit insecure-any-identity"
    )]
    MissingIdentity,
    #[error("invalid {claim} regex {pattern:?}: {reason}")]
    InvalidRegex {
        claim: Claim,
        pattern: String,
        reason: String,
    },
}

/// A certificate claim a policy can constrain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Claim {
    /// OIDC issuer: extension `.1.8`, else legacy `.1.1`.
    Issuer,
    /// The SAN (email or URI).
    Subject,
    /// Repository `owner/name`: `.1.5`; if absent, `.1.12` with its
    /// `https://github.com/` prefix removed.
    GithubWorkflowRepository,
    /// Git ref: `.1.6`, else `.1.14`.
    GithubWorkflowRef,
    /// Triggering event: `.1.2`, else `.1.20`.
    GithubWorkflowTrigger,
    /// Commit SHA: `.1.3`, else `.1.13`.
    GithubWorkflowSha,
    /// Workflow display name: `.1.4` (no successor extension).
    GithubWorkflowName,
}

impl Claim {
    /// Claims that say who signed. Ref, trigger, SHA and workflow name are shared by every
    /// repository (and a fork has the same SHAs), so alone they would accept anyone.
    fn is_identity(self) -> bool {
        matches!(self, Claim::Subject | Claim::GithubWorkflowRepository)
    }

    /// The claim's value in verified evidence, if the certificate states it.
    fn value(self, e: &SigstoreEvidence) -> Option<String> {
        let c = &e.claims;
        match self {
            Claim::Issuer => e.issuer.clone(),
            Claim::Subject => Some(e.subject.as_str().to_string()),
            Claim::GithubWorkflowRepository => c.github_workflow_repository.clone().or_else(|| {
                c.source_repository_uri
                    .as_deref()
                    .and_then(|u| u.strip_prefix("https://github.com/"))
                    .map(str::to_string)
            }),
            Claim::GithubWorkflowRef => c
                .github_workflow_ref
                .clone()
                .or_else(|| c.source_repository_ref.clone()),
            Claim::GithubWorkflowTrigger => c
                .github_workflow_trigger
                .clone()
                .or_else(|| c.build_trigger.clone()),
            Claim::GithubWorkflowSha => c
                .github_workflow_sha
                .clone()
                .or_else(|| c.source_repository_digest.clone()),
            Claim::GithubWorkflowName => c.github_workflow_name.clone(),
        }
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Claim::Issuer => "issuer",
            Claim::Subject => "subject",
            Claim::GithubWorkflowRepository => "GitHub workflow repository",
            Claim::GithubWorkflowRef => "GitHub workflow ref",
            Claim::GithubWorkflowTrigger => "GitHub workflow trigger",
            Claim::GithubWorkflowSha => "GitHub workflow sha",
            Claim::GithubWorkflowName => "GitHub workflow name",
        })
    }
}

/// A regex that must match the whole value.
#[derive(Debug, Clone)]
pub struct AnchoredRegex {
    pattern: String,
    regex: Regex,
}

impl AnchoredRegex {
    /// Compiles `^(?:pattern)$`. The pattern must be a regex on its own first, so that
    /// an unbalanced one such as `x)|(.*` cannot close the group and escape the anchors.
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()?;
        let regex = RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(REGEX_SIZE_LIMIT)
            .build()?;
        Ok(AnchoredRegex {
            pattern: pattern.to_string(),
            regex,
        })
    }

    /// The pattern as given (without the anchors).
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    pub fn is_match(&self, value: &str) -> bool {
        self.regex.is_match(value)
    }
}

/// How one claim value is compared.
#[derive(Debug, Clone)]
pub enum ValueMatcher {
    Exact(String),
    Regex(AnchoredRegex),
}

/// One constraint: this claim must be present and match.
#[derive(Debug, Clone)]
pub struct ClaimMatcher {
    pub claim: Claim,
    pub matcher: ValueMatcher,
}

/// Why a verified signer is not one the identity policy allows: the first constraint that
/// does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityMismatch {
    #[error("certificate has no {claim} claim")]
    MissingClaim { claim: Claim },
    #[error("{claim} {found:?} is not {expected:?}{}", regex_hint(.claim, .expected))]
    NotEqual {
        claim: Claim,
        found: String,
        expected: String,
    },
    #[error("{claim} {found:?} does not match regex {pattern:?} (anchored)")]
    NoMatch {
        claim: Claim,
        found: String,
        pattern: String,
    },
}

/// When an exact value looks like a regular expression (`https://github.com/acme/.*`), the
/// user most likely meant a pattern: say so, and name the regex form of the same claim.
fn regex_hint(claim: &Claim, expected: &str) -> String {
    let (flag, field) = match claim {
        Claim::Subject => ("--certificate-identity-regexp", "subjectRegExp"),
        Claim::Issuer => ("--certificate-oidc-issuer-regexp", "issuerRegExp"),
        _ => return String::new(),
    };
    if !looks_like_regex(expected) {
        return String::new();
    }
    format!(
        " (that looks like a regular expression, but an exact value is compared as \
         written: for a pattern use {flag}, or {field} in a policy; patterns are anchored)"
    )
}

/// Regex syntax that never appears in an identity or issuer URL or an email address.
fn looks_like_regex(value: &str) -> bool {
    const MARKERS: [&str; 9] = [".*", ".+", "\\.", "\\d", "\\w", "\\S", "[^", "(?", ")|("];
    MARKERS.iter().any(|m| value.contains(m))
        || value.starts_with('^')
        || value.ends_with('$')
        || (value.contains('(') && value.contains('|') && value.contains(')'))
        || (value.contains('[') && value.contains(']') && value.contains('-'))
}

impl IdentityMismatch {
    /// The claim that did not hold.
    pub fn claim(&self) -> Claim {
        match self {
            IdentityMismatch::MissingClaim { claim }
            | IdentityMismatch::NotEqual { claim, .. }
            | IdentityMismatch::NoMatch { claim, .. } => *claim,
        }
    }

    /// Stable machine code (metrics, JSON).
    pub fn code(&self) -> &'static str {
        match (self, self.claim()) {
            (IdentityMismatch::MissingClaim { .. }, Claim::Issuer) => "issuer-missing",
            (IdentityMismatch::MissingClaim { .. }, _) => "claim-missing",
            (_, Claim::Issuer) => "issuer-mismatch",
            (_, Claim::Subject) => "subject-mismatch",
            _ => "claim-mismatch",
        }
    }
}

impl ClaimMatcher {
    /// `Ok` when the evidence satisfies this constraint, else why not.
    pub fn check(&self, evidence: &SigstoreEvidence) -> Result<(), IdentityMismatch> {
        let Some(actual) = self.claim.value(evidence) else {
            return Err(IdentityMismatch::MissingClaim { claim: self.claim });
        };
        match &self.matcher {
            ValueMatcher::Exact(expected) if actual == *expected => Ok(()),
            ValueMatcher::Exact(expected) => Err(IdentityMismatch::NotEqual {
                claim: self.claim,
                found: actual,
                expected: expected.clone(),
            }),
            ValueMatcher::Regex(re) if re.is_match(&actual) => Ok(()),
            ValueMatcher::Regex(re) => Err(IdentityMismatch::NoMatch {
                claim: self.claim,
                found: actual,
                pattern: re.pattern().to_string(),
            }),
        }
    }
}

impl fmt::Display for ClaimMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.matcher {
            ValueMatcher::Exact(v) => write!(f, "{} {v}", self.claim),
            ValueMatcher::Regex(re) => write!(f, "{} ~ /{}/", self.claim, re.pattern()),
        }
    }
}

/// Which signers a keyless attestor accepts. Build with [`IdentityPolicy::builder`].
#[derive(Debug, Clone)]
pub struct IdentityPolicy {
    matchers: Vec<ClaimMatcher>,
    any_identity: bool,
}

impl IdentityPolicy {
    pub fn builder() -> IdentityPolicyBuilder {
        IdentityPolicyBuilder::default()
    }

    /// `Ok` when every constraint holds; else the first one that does not, and why
    /// (`issuer "https://x" is not "https://y"`). Issuer first, then subject, then the
    /// GitHub claims.
    pub fn matches(&self, evidence: &SigstoreEvidence) -> Result<(), IdentityMismatch> {
        self.matchers.iter().try_for_each(|m| m.check(evidence))
    }

    /// The constraints, in checking order.
    pub fn matchers(&self) -> &[ClaimMatcher] {
        &self.matchers
    }

    /// True when built with `insecure_any_identity`.
    pub fn is_insecure_any_identity(&self) -> bool {
        self.any_identity
    }

    /// True when the issuer of a certificate is constrained (exact or regex). False for
    /// policies built with `insecure_any_issuer` or `insecure_any_identity` and no issuer:
    /// results they accept say "issuer not checked".
    pub fn checks_issuer(&self) -> bool {
        self.matchers.iter().any(|m| m.claim == Claim::Issuer)
    }
}

impl fmt::Display for IdentityPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.matchers.is_empty() {
            return f.write_str("any identity (insecure)");
        }
        let mut parts: Vec<String> = self.matchers.iter().map(ToString::to_string).collect();
        if !self.matchers.iter().any(|m| m.claim == Claim::Issuer) {
            parts.push("any issuer (insecure)".to_string());
        }
        f.write_str(&parts.join(", "))
    }
}

/// Collects constraints; [`IdentityPolicyBuilder::build`] compiles and checks them.
#[derive(Debug, Clone, Default)]
pub struct IdentityPolicyBuilder {
    exact: Vec<(Claim, String)>,
    regex: Vec<(Claim, String)>,
    any_identity: bool,
    any_issuer: bool,
}

impl IdentityPolicyBuilder {
    /// Require this claim to equal `value`.
    pub fn exact(mut self, claim: Claim, value: impl Into<String>) -> Self {
        self.exact.push((claim, value.into()));
        self
    }

    /// Require this claim to match the anchored regex `pattern`.
    pub fn regex(mut self, claim: Claim, pattern: impl Into<String>) -> Self {
        self.regex.push((claim, pattern.into()));
        self
    }

    pub fn issuer(self, issuer: impl Into<String>) -> Self {
        self.exact(Claim::Issuer, issuer)
    }

    pub fn issuer_regex(self, pattern: impl Into<String>) -> Self {
        self.regex(Claim::Issuer, pattern)
    }

    pub fn subject(self, subject: impl Into<String>) -> Self {
        self.exact(Claim::Subject, subject)
    }

    pub fn subject_regex(self, pattern: impl Into<String>) -> Self {
        self.regex(Claim::Subject, pattern)
    }

    /// Accept certificates without issuer or identity constraints. Every certificate
    /// Fulcio ever issued to anyone passes the identity step: only for testing or when
    /// another layer decides.
    pub fn insecure_any_identity(mut self) -> Self {
        self.any_identity = true;
        self
    }

    /// Accept certificates from any OIDC issuer, but still require an identity constraint
    /// (subject or GitHub workflow repository). Insecure: anyone who can get a certificate
    /// for that subject name from *any* issuer Fulcio trusts passes. For policies migrated
    /// from Kyverno, which never checked the issuer of manifest signatures
    /// (`--insecure-any-issuer`); results it accepts say "issuer not checked".
    pub fn insecure_any_issuer(mut self) -> Self {
        self.any_issuer = true;
        self
    }

    pub fn build(self) -> Result<IdentityPolicy, IdentityPolicyError> {
        let mut matchers = Vec::with_capacity(self.exact.len() + self.regex.len());
        for (claim, value) in self.exact {
            matchers.push(ClaimMatcher {
                claim,
                matcher: ValueMatcher::Exact(value),
            });
        }
        for (claim, pattern) in self.regex {
            let re =
                AnchoredRegex::new(&pattern).map_err(|e| IdentityPolicyError::InvalidRegex {
                    claim,
                    pattern: pattern.clone(),
                    reason: e.to_string(),
                })?;
            matchers.push(ClaimMatcher {
                claim,
                matcher: ValueMatcher::Regex(re),
            });
        }
        if !self.any_identity {
            if !self.any_issuer && !matchers.iter().any(|m| m.claim == Claim::Issuer) {
                return Err(IdentityPolicyError::MissingIssuer);
            }
            if !matchers.iter().any(|m| m.claim.is_identity()) {
                return Err(IdentityPolicyError::MissingIdentity);
            }
        }
        // Stable: issuer, subject, GitHub claims; exact before regex within a claim.
        matchers.sort_by_key(|m| m.claim);
        Ok(IdentityPolicy {
            matchers,
            any_identity: self.any_identity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::sigstore::evidence::{CertificateSubject, RekorEvidence, WorkflowClaims};

    const GHA: &str = "https://token.actions.githubusercontent.com";
    const WORKFLOW: &str =
        "https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main";

    #[test]
    fn an_exact_value_that_looks_like_a_regex_names_the_regexp_flag() {
        // What a policy requiring GitHub Actions and the exact subject `subject` says of
        // WORKFLOW's certificate.
        let mismatch = |subject: &str| {
            let policy = policy().subject(subject).build().unwrap();
            policy.matches(&evidence(WORKFLOW, Some(GHA))).unwrap_err()
        };
        for pattern in [
            "https://github.com/acme/.*",
            "^https://github.com/acme/",
            "https://github.com/acme/(a|b)/x",
            "https://github\\.com/acme/x",
        ] {
            let e = mismatch(pattern);
            let text = e.to_string();
            assert!(text.contains("looks like a regular expression"), "{text}");
            assert!(text.contains("--certificate-identity-regexp"), "{text}");
            assert_eq!(e.code(), "subject-mismatch");
        }
        // Identities and emails are not mistaken for patterns.
        for plain in [
            "https://github.com/org/other/.github/workflows/sign.yaml@refs/heads/main",
            "first.last@example.com",
        ] {
            let text = mismatch(plain).to_string();
            assert!(!text.contains("regular expression"), "{text}");
        }
    }

    fn evidence(subject: &str, issuer: Option<&str>) -> SigstoreEvidence {
        SigstoreEvidence {
            subject: CertificateSubject::Uri(subject.into()),
            issuer: issuer.map(Into::into),
            claims: WorkflowClaims {
                github_workflow_repository: Some("org/repo".into()),
                github_workflow_ref: Some("refs/heads/main".into()),
                github_workflow_trigger: Some("push".into()),
                github_workflow_sha: Some("abc123".into()),
                github_workflow_name: Some("Sign".into()),
                ..WorkflowClaims::default()
            },
            rekor: RekorEvidence {
                log_index: 1,
                log_id: "00".into(),
                integrated_time: 1,
            },
            key_fingerprint: "00".into(),
        }
    }

    fn policy() -> IdentityPolicyBuilder {
        IdentityPolicy::builder().issuer(GHA)
    }

    #[test]
    fn exact_issuer_and_subject_match() {
        let p = policy().subject(WORKFLOW).build().unwrap();
        assert_eq!(p.matches(&evidence(WORKFLOW, Some(GHA))), Ok(()));
    }

    #[test]
    fn wrong_issuer_is_reported_with_both_values() {
        let p = IdentityPolicy::builder()
            .issuer("https://y")
            .subject(WORKFLOW)
            .build()
            .unwrap();
        let err = p
            .matches(&evidence(WORKFLOW, Some("https://x")))
            .unwrap_err();
        assert_eq!(err.to_string(), r#"issuer "https://x" is not "https://y""#);
        assert_eq!(err.code(), "issuer-mismatch");
    }

    #[test]
    fn missing_issuer_extension_fails_an_issuer_constraint() {
        let p = policy().subject(WORKFLOW).build().unwrap();
        let err = p.matches(&evidence(WORKFLOW, None)).unwrap_err();
        assert_eq!(err.to_string(), "certificate has no issuer claim");
        assert_eq!(err.code(), "issuer-missing");
    }

    #[test]
    fn subject_regex_is_anchored_at_both_ends() {
        let p = policy()
            .subject_regex("https://github.com/org/.*")
            .build()
            .unwrap();
        assert!(p.matches(&evidence(WORKFLOW, Some(GHA))).is_ok());
        let evil = "https://github.com/org.evil/repo/.github/workflows/x@refs/heads/main";
        assert!(p.matches(&evidence(evil, Some(GHA))).is_err());
        let prefixed = format!("https://evil.example/?{WORKFLOW}");
        assert!(p.matches(&evidence(&prefixed, Some(GHA))).is_err());
    }

    #[test]
    fn regex_alternation_stays_inside_the_anchors() {
        let p = policy().subject_regex("a|b").build().unwrap();
        assert!(p.matches(&evidence("a", Some(GHA))).is_ok());
        assert!(p.matches(&evidence("xa", Some(GHA))).is_err());
        assert!(p.matches(&evidence("bx", Some(GHA))).is_err());
    }

    #[test]
    fn regex_cannot_close_the_anchoring_group() {
        let err = policy().subject_regex("x)|(.*").build().unwrap_err();
        assert!(matches!(err, IdentityPolicyError::InvalidRegex { .. }));
    }

    #[test]
    fn issuer_regex_is_anchored() {
        let p = IdentityPolicy::builder()
            .issuer_regex(r"https://token\.actions\.githubusercontent\.com")
            .subject(WORKFLOW)
            .build()
            .unwrap();
        assert!(p.matches(&evidence(WORKFLOW, Some(GHA))).is_ok());
        let longer = format!("{GHA}.evil.example");
        assert!(p.matches(&evidence(WORKFLOW, Some(&longer))).is_err());
    }

    #[test]
    fn github_claims_are_read_from_extensions() {
        let p = policy()
            .exact(Claim::GithubWorkflowRepository, "org/repo")
            .exact(Claim::GithubWorkflowRef, "refs/heads/main")
            .exact(Claim::GithubWorkflowTrigger, "push")
            .exact(Claim::GithubWorkflowSha, "abc123")
            .exact(Claim::GithubWorkflowName, "Sign")
            .build()
            .unwrap();
        assert_eq!(p.matches(&evidence(WORKFLOW, Some(GHA))), Ok(()));
    }

    /// GitHub Actions, WORKFLOW's subject, and `claim` exactly `value`.
    fn workflow_policy(claim: Claim, value: &str) -> IdentityPolicy {
        policy()
            .subject(WORKFLOW)
            .exact(claim, value)
            .build()
            .unwrap()
    }

    #[test]
    fn github_claim_is_not_taken_from_the_san() {
        let p = workflow_policy(Claim::GithubWorkflowRepository, "org/repo");
        let mut e = evidence(WORKFLOW, Some(GHA));
        e.claims = WorkflowClaims::default();
        assert_eq!(
            p.matches(&e).unwrap_err().to_string(),
            "certificate has no GitHub workflow repository claim"
        );
    }

    #[test]
    fn repository_falls_back_to_source_repository_uri() {
        let p = policy()
            .exact(Claim::GithubWorkflowRepository, "org/repo")
            .build()
            .unwrap();
        let mut e = evidence(WORKFLOW, Some(GHA));
        e.claims = WorkflowClaims {
            source_repository_uri: Some("https://github.com/org/repo".into()),
            ..WorkflowClaims::default()
        };
        assert_eq!(p.matches(&e), Ok(()));
    }

    #[test]
    fn wrong_github_ref_is_rejected() {
        let p = workflow_policy(Claim::GithubWorkflowRef, "refs/heads/release");
        let err = p.matches(&evidence(WORKFLOW, Some(GHA))).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"GitHub workflow ref "refs/heads/main" is not "refs/heads/release""#
        );
        assert_eq!(err.code(), "claim-mismatch");
    }

    #[test]
    fn policy_without_issuer_is_refused() {
        let err = IdentityPolicy::builder()
            .subject(WORKFLOW)
            .build()
            .unwrap_err();
        assert_eq!(err, IdentityPolicyError::MissingIssuer);
    }

    #[test]
    fn policy_without_identity_is_refused() {
        let err = policy().build().unwrap_err();
        assert_eq!(err, IdentityPolicyError::MissingIdentity);
    }

    #[test]
    fn claims_shared_by_every_repository_are_not_an_identity() {
        // Any GitHub repository can run a workflow named `Sign` on a push to main (and a
        // fork has the same commit SHAs): these claims do not say who signed.
        for claim in [
            Claim::GithubWorkflowRef,
            Claim::GithubWorkflowTrigger,
            Claim::GithubWorkflowSha,
            Claim::GithubWorkflowName,
        ] {
            let err = policy().exact(claim, "x").build().unwrap_err();
            assert_eq!(err, IdentityPolicyError::MissingIdentity, "{claim}");
        }
        assert!(
            policy()
                .exact(Claim::GithubWorkflowRepository, "org/repo")
                .build()
                .is_ok()
        );
    }

    #[test]
    fn insecure_any_identity_accepts_anyone() {
        let p = IdentityPolicy::builder()
            .insecure_any_identity()
            .build()
            .unwrap();
        assert!(p.is_insecure_any_identity());
        assert_eq!(p.matches(&evidence("whoever", None)), Ok(()));
    }

    #[test]
    fn invalid_regex_is_refused_at_build() {
        let err = policy().subject_regex("(").build().unwrap_err();
        assert!(matches!(
            err,
            IdentityPolicyError::InvalidRegex {
                claim: Claim::Subject,
                ..
            }
        ));
    }

    #[test]
    fn issuer_is_checked_before_subject() {
        let p = IdentityPolicy::builder()
            .subject("someone-else")
            .issuer("https://y")
            .build()
            .unwrap();
        let err = p
            .matches(&evidence(WORKFLOW, Some("https://x")))
            .unwrap_err();
        assert!(err.to_string().starts_with("issuer"), "{err}");
    }

    #[test]
    fn any_issuer_still_requires_an_identity() {
        let err = IdentityPolicy::builder()
            .insecure_any_issuer()
            .build()
            .unwrap_err();
        assert_eq!(err, IdentityPolicyError::MissingIdentity);
    }

    #[test]
    fn any_issuer_accepts_a_subject_from_any_issuer_and_says_it_does_not_check_it() {
        let p = IdentityPolicy::builder()
            .subject(WORKFLOW)
            .insecure_any_issuer()
            .build()
            .unwrap();
        assert!(!p.checks_issuer());
        assert_eq!(p.matches(&evidence(WORKFLOW, Some("https://x"))), Ok(()));
        assert_eq!(p.matches(&evidence(WORKFLOW, None)), Ok(()));
        assert!(p.matches(&evidence("someone-else", Some(GHA))).is_err());
        assert!(p.to_string().contains("any issuer (insecure)"), "{p}");
        assert!(policy().subject(WORKFLOW).build().unwrap().checks_issuer());
    }
}
