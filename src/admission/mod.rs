//! Admission checker mode: answers Kubernetes `AdmissionReview` requests with the same policy
//! verifier as `mansign verify --policy`.
//!
//! * [`review`]: one `AdmissionReview` request body in, the response body out. Synchronous and
//!   CPU-bound, no I/O: the server runs it on a bounded blocking pool, `mansign admission
//!   review` runs it on a file, a library caller wherever it likes.
//! * [`decision`]: what was decided about one request, for the log line and the metrics.
//! * `server` (feature `server`, on by default): the HTTPS webhook around the reviewer.
//!
//! A verification failure is a deny whatever the webhook's `failurePolicy`; only
//! infrastructure errors (a deadline passed, the server shutting down) are answered with an
//! HTTP error so that the API server applies the configured `failurePolicy`.

pub mod decision;
pub mod review;
#[cfg(feature = "server")]
pub mod server;

pub use decision::{Decision, Outcome};
pub use review::{BadReview, ReviewOptions, Reviewed, Reviewer};
