//! One `AdmissionReview` request in, one response out.

use super::decision::{Decision, Outcome};
use crate::policy::PolicySet;

/// Bounds and switches of the reviewer.
#[derive(Debug, Clone)]
pub struct ReviewOptions {
    /// Largest request body answered (the API server sends at most 3 MiB objects).
    pub max_body_bytes: usize,
}

/// The request limit of the Kubernetes API server for one object, plus the review envelope.
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

impl Default for ReviewOptions {
    fn default() -> Self {
        ReviewOptions {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// A body that is not an answerable `AdmissionReview` (the server answers HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadReview {
    /// Stable code for metrics (`malformed-json`, `wrong-api-version`, `missing-uid`, ...).
    pub code: &'static str,
    pub message: String,
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// The `AdmissionReview` response body (HTTP 200), or why the request cannot be answered.
    pub response: Result<Vec<u8>, BadReview>,
    pub decision: Decision,
}

/// Answers admission requests under a policy set. `Send + Sync`: share it behind an `Arc`.
#[derive(Debug)]
pub struct Reviewer {
    policies: PolicySet,
    options: ReviewOptions,
}

impl Reviewer {
    pub fn new(policies: PolicySet, options: ReviewOptions) -> Self {
        Reviewer { policies, options }
    }

    pub fn policies(&self) -> &PolicySet {
        &self.policies
    }

    pub fn options(&self) -> &ReviewOptions {
        &self.options
    }

    /// Answers one request body. Never panics on input.
    pub fn review(&self, body: &[u8]) -> Reviewed {
        // Placeholder until the review implementation lands.
        let _ = (&self.policies, body);
        let bad = BadReview {
            code: "not-implemented",
            message: "admission review is not implemented yet".into(),
        };
        Reviewed {
            decision: Decision {
                uid: String::new(),
                outcome: Outcome::Invalid,
                kind: String::new(),
                namespace: None,
                name: String::new(),
                operation: String::new(),
                user: String::new(),
                dry_run: false,
                signers: Vec::new(),
                reason_code: Some(bad.code.into()),
                message: bad.message.clone(),
            },
            response: Err(bad),
        }
    }
}
