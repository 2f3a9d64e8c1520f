//! Producing signatures and embedding them into manifests.
//!
//! A [`Signer`] turns messages into [`SignatureSet`](crate::annotations::SignatureSet)s.
//! Signers work on batches so that a keyless signer can sign a whole run with one token
//! and one certificate. [`sign_files`] is the pipeline of one batch: strip old signatures,
//! build M per document (or per file with [`SignScope::File`]), sign the batch, embed.
//! [`tree`] signs files, directories and globs with it, window by window, and writes the
//! outputs all or nothing (`mansign sign` is a thin shell over it).
//!
//! Files, each importing only the ones listed before it (no two files import each other;
//! this file only declares and re-exports):
//!
//! | file | what |
//! |---|---|
//! | `http.rs` | the HTTP client settings, bounded bodies, where secrets may go |
//! | `retry.rs` | which failures are retried, backoff with jitter, `Retry-After` |
//! | `sigstore.rs` | the adapter: the only file naming the sigstore crates |
//! | `secret.rs`, `token_source.rs` | [`Secret`], [`TokenSource`] |
//! | `github_actions.rs` | the GitHub Actions token request |
//! | `sign_in/` | interactive sign-in at an OIDC issuer on `openidconnect` (browser, device) |
//! | `token.rs` | where a token comes from, in order, and its client-side checks |
//! | `certificate_identity.rs` | the identities a token can yield in a Fulcio certificate |
//! | `fulcio.rs`, `rekor_upload.rs` | the certificate request, the Rekor uploads |
//! | `error.rs`, `signer.rs` | [`SignError`], [`KeylessError`]; the [`Signer`] trait and what a call returns ([`SignedBatch`]) |
//! | `key.rs`, `keyless.rs`, `tlog_signer.rs` | the signers |
//! | `pipeline.rs` | [`sign_files`] |
//! | `tree/` | [`tree::SignTree`]: a tree of files signed all or nothing (what `mansign sign` runs) |

mod certificate_identity;
mod error;
mod fulcio;
mod github_actions;
mod http;
mod key;
pub mod keyless;
mod pipeline;
pub mod rekor_upload;
mod retry;
mod secret;
pub mod sign_in;
mod signer;
mod sigstore;
mod tlog_signer;
pub mod token;
mod token_source;
pub mod tree;

pub use error::{KeylessError, SignError};
pub use fulcio::{DEFAULT_FULCIO_URL, FulcioError};
pub use github_actions::{GitHubTokenError, GitHubTokenRequest};
pub use http::BodyError;
pub use key::KeySigner;
pub use keyless::{KeylessOptions, KeylessSigner};
pub use pipeline::{SignOptions, SignScope, SignSummary, sign_files};
pub use rekor_upload::{DEFAULT_REKOR_URL, RekorError, RekorOptions};
pub use retry::{Attempts, MAX_RETRY_AFTER, RemoteService, RetryEvent, RetryObserver, RetryPolicy};
pub use secret::Secret;
pub use sign_in::{SignInError, SignInOptions, SignInPrompt, SilentPrompt};
pub use signer::{BatchSignature, LogEntry, SignedBatch, Signer, SigningCertificate};
pub use tlog_signer::TlogUploadingSigner;
pub use token::{AcquiredToken, AmbientEnvironment, TokenError, TokenOptions};
pub use token_source::{CiProvider, TokenSource};
