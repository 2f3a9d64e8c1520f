//! Interactive sign-in at an OIDC issuer, for keyless signing by a person, on the
//! `openidconnect` crate (4.x): discovery and JWKS, PKCE S256, CSRF `state` and `nonce`,
//! the device grant with its polling, and the verification of the ID token (signature,
//! issuer, audience = client id, expiry, nonce) before it is handed on to Fulcio.
//!
//! What mansign adds around the crate: its own HTTP client plugged into the crate's
//! interface (`oidc_http.rs`: one `reqwest`, mansign's timeouts, no redirects, bounded
//! answers, secrets only over https or to this machine), the bounded loopback redirect
//! listener (`redirect_listener.rs`), the choice of flow (`flow.rs`: device flow without a
//! terminal, `--no-browser` printing the URL), and bounds on the device flow's timing
//! (`device.rs`). docs/design.md says what was weighed.
//!
//! Files, each importing only the ones before it: `options.rs`, `error.rs`, `oidc_http.rs`,
//! `provider.rs`, `id_token.rs`, `redirect_listener.rs`, `browser.rs`, `device.rs`,
//! `flow.rs`; this file only declares and re-exports.

mod browser;
mod device;
mod error;
mod flow;
mod id_token;
mod oidc_http;
mod options;
mod provider;
mod redirect_listener;

pub use error::SignInError;
pub(crate) use flow::sign_in;
pub use options::{
    DEFAULT_OIDC_CLIENT_ID, DEFAULT_OIDC_ISSUER, SignInOptions, SignInPrompt, SilentPrompt,
};
