//! How an interactive sign-in is set up ([`SignInOptions`]) and how it talks to the person
//! ([`SignInPrompt`]).

use std::time::Duration;

/// The public-good Sigstore OIDC issuer (Dex in front of GitHub, Google, Microsoft).
pub const DEFAULT_OIDC_ISSUER: &str = "https://oauth2.sigstore.dev/auth";
/// The public OAuth client registered at the Sigstore issuer.
pub const DEFAULT_OIDC_CLIENT_ID: &str = "sigstore";

/// How to sign in interactively when no other source has a token.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SignInOptions {
    /// OIDC issuer; its endpoints come from `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The OAuth client; the ID token must be issued for it (its `aud`).
    pub client_id: String,
    /// Open the authorization URL in a browser (`false`: only print it).
    pub open_browser: bool,
    /// A person is at a terminal (stdin is a TTY). Without one, the device flow is used
    /// if the issuer offers it; the browser flow only when `open_browser` is off (the
    /// URL is then followed by someone or something else).
    pub terminal: bool,
    /// How long to wait for the person (browser redirect, device approval). Default 5 min.
    pub timeout: Duration,
}

crate::setters::setters! {
    /// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
    /// so it is built from [`SignInOptions::default()`] and these, never as a literal.
    SignInOptions {
        /// Sets `issuer`.
        with_issuer => issuer: String,
        /// Sets `client_id`.
        with_client_id => client_id: String,
        /// Sets `open_browser`.
        with_open_browser => open_browser: bool,
        /// Sets `terminal`.
        with_terminal => terminal: bool,
        /// Sets `timeout`.
        with_timeout => timeout: Duration,
    }
}

impl Default for SignInOptions {
    fn default() -> Self {
        SignInOptions {
            issuer: DEFAULT_OIDC_ISSUER.to_string(),
            client_id: DEFAULT_OIDC_CLIENT_ID.to_string(),
            open_browser: true,
            terminal: false,
            timeout: Duration::from_secs(300),
        }
    }
}

/// How an interactive sign-in talks to the person.
pub trait SignInPrompt: Send + Sync {
    /// The browser flow's authorization URL; `browser_opened` says whether a browser was
    /// started for it. Without one, the person (or a script) must open the URL.
    fn authorization_url(&self, url: &str, browser_opened: bool);

    /// The device flow's user code and where to enter it.
    fn device_code(
        &self,
        verification_uri: &str,
        user_code: &str,
        verification_uri_complete: Option<&str>,
    );
}

/// A prompt that shows nothing (for callers that never sign in interactively).
#[derive(Debug, Clone, Copy, Default)]
pub struct SilentPrompt;

impl SignInPrompt for SilentPrompt {
    fn authorization_url(&self, _url: &str, _browser_opened: bool) {}
    fn device_code(&self, _: &str, _: &str, _: Option<&str>) {}
}
