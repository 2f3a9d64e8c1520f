//! Admission checker mode: answers Kubernetes `AdmissionReview` requests with the same policy
//! verifier as `mansign verify --policy`.
//!
//! * [`review`]: one `AdmissionReview` request body in, the response body out. Synchronous and
//!   CPU-bound, no I/O: the server runs it on a bounded blocking pool, `mansign admission
//!   review` runs it on a file, a library caller wherever it likes.
//! * [`request`]: reading the body (bounded; kube-core's admission types for the envelope,
//!   the object kept as sent); [`response`]: the response body and its wording rules.
//! * [`decision`]: what was decided about one request, for the log line and the metrics.
//! * [`status_write`]: what a write through the `status` subresource keeps from the
//!   request, per kind (the API server's status strategies).
//! * `server` (feature `server`, on by default): the HTTPS webhook around the reviewer.
//!
//! What is decided, and why, is in `docs/admission.md`.
//!
//! ```
//! use mansign::admission::{Outcome, ReviewOptions, Reviewer};
//! use mansign::policy::{LoadOptions, load_str};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // PolicyExceptions must be signed by the release key; every other kind is not checked.
//! let policy = load_str(
//!     "policy.yaml",
//!     r#"
//! apiVersion: mansign.dev/v1alpha1
//! kind: ManifestPolicy
//! metadata: {name: exceptions}
//! spec:
//!   match: {kinds: [PolicyException]}
//!   attestors:
//!   - entries:
//!     - keys:
//!         publicKeys: |
//!           -----BEGIN PUBLIC KEY-----
//!           MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyQfmL5YwHbn9xrrgG3vgbU0KJxMY
//!           BibYLJ5L4VSMvGxeMLnBGdM48w5IE//6idUPj3rscigFdHs7GDMH4LLAng==
//!           -----END PUBLIC KEY-----
//! "#,
//!     ".".as_ref(),
//!     &LoadOptions::default(),
//! )?;
//! // Shared by every request (`Send + Sync`; put it behind an `Arc` for a server).
//! let reviewer = Reviewer::new(policy, ReviewOptions::default());
//!
//! let body = br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
//!   "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
//!     "kind": {"group": "kyverno.io", "version": "v2", "kind": "PolicyException"},
//!     "resource": {"group": "kyverno.io", "version": "v2", "resource": "policyexceptions"},
//!     "name": "allow-debug", "namespace": "team-a", "operation": "CREATE",
//!     "userInfo": {"username": "alice"},
//!     "object": {"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
//!                "metadata": {"name": "allow-debug", "namespace": "team-a"},
//!                "spec": {"exceptions": []}}}}"#;
//! let reviewed = reviewer.review(body);
//!
//! // Not signed: denied, with the reason in status.message.
//! assert_eq!(reviewed.decision.outcome, Outcome::Denied);
//! assert_eq!(reviewed.decision.reason_code.as_deref(), Some("not-signed"));
//! let response: serde_json::Value = serde_json::from_slice(&reviewed.response?)?;
//! assert_eq!(response["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
//! assert_eq!(response["response"]["allowed"], false);
//! assert_eq!(response["response"]["status"]["code"], 403);
//! println!("{}", reviewed.decision.log_json());
//! # Ok(())
//! # }
//! ```
//!
//! A verification failure is a deny whatever the webhook's `failurePolicy`; only
//! infrastructure errors (a deadline passed, the server shutting down) are answered with an
//! HTTP error so that the API server applies the configured `failurePolicy`.

pub mod decision;
pub mod request;
pub mod response;
pub mod review;
#[cfg(feature = "server")]
pub mod server;
pub mod status_write;

pub use decision::{Decision, Outcome, RequestKind};
pub use review::{
    BadReview, CACHED_REVIEW_MAX_BYTES, CACHED_REVIEW_MAX_RULES, Look, PendingReview,
    ReviewOptions, Reviewed, Reviewer,
};
