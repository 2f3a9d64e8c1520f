//! What was decided about one admission request: the structured log line and the labels of
//! the metrics.

use serde_json::{Value, json};

/// The verdict of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Every matching rule passed.
    Allowed,
    /// A matching `Enforce` rule failed, or a matched object is not signed.
    Denied,
    /// Only `Audit` rules failed: allowed, with a warning.
    AuditWarned,
    /// No rule matches the object: allowed without verification.
    NotMatched,
    /// An operation that is not verified (`DELETE`, `CONNECT`): allowed.
    Skipped,
    /// The body is not an `AdmissionReview` mansign can answer (HTTP 400).
    Invalid,
}

impl Outcome {
    /// Stable label for metrics and logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::AuditWarned => "audit-warned",
            Outcome::NotMatched => "not-matched",
            Outcome::Skipped => "skipped",
            Outcome::Invalid => "invalid",
        }
    }

    /// True when the request is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(
            self,
            Outcome::Allowed | Outcome::AuditWarned | Outcome::NotMatched | Outcome::Skipped
        )
    }
}

/// `request.kind` of a review: group (empty for the core group), version, kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// One decision: who asked for what, and the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub uid: String,
    pub outcome: Outcome,
    /// `group/version, Kind=Kind` of the request, as `request.kind` gives it (`Kind` only for
    /// the core group).
    pub kind: String,
    /// The same kind as separate group, version and kind (metrics labels, as
    /// kube-state-metrics writes them); empty for a request that could not be read.
    pub request_kind: RequestKind,
    pub namespace: Option<String>,
    pub name: String,
    pub operation: String,
    pub user: String,
    pub dry_run: bool,
    /// The signers that satisfied the rules (`subject (issuer)` or a key fingerprint).
    pub signers: Vec<String>,
    /// Machine code of the first failed check ([`crate::verify::Rejection::code`]), or of
    /// why the request is invalid.
    pub reason_code: Option<String>,
    /// The human message (`status.message` of a denial, the warning of an audit).
    pub message: String,
}

impl Decision {
    /// The structured log line (one JSON object per decision).
    pub fn log_json(&self) -> Value {
        json!({
            "uid": self.uid,
            "verdict": self.outcome.as_str(),
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "operation": self.operation,
            "user": self.user,
            "dryRun": self.dry_run,
            "signers": self.signers,
            "reason": self.reason_code,
            "message": self.message,
        })
    }
}
