//! Why an interactive sign-in failed ([`SignInError`]).

/// Why an interactive sign-in failed. Whatever the reason, no token was handed on, so
/// nothing was sent to Fulcio.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    #[error("{issuer} is not an issuer URL: {reason}")]
    IssuerUrl { issuer: String, reason: String },
    #[error("refusing to sign in through {url}: use https:// (plain http:// only to this machine)")]
    InsecureEndpoint { url: String },
    #[error("OIDC discovery at {issuer} failed: {reason}")]
    Discovery { issuer: String, reason: String },
    #[error("OIDC issuer {issuer} lists an unusable endpoint: {reason}")]
    Endpoint { issuer: String, reason: String },
    #[error(
        "no terminal for a browser sign-in, and {issuer} offers no device flow; pass \
         --identity-token, or --no-browser to sign in through a printed URL"
    )]
    NoInteractiveFlow { issuer: String },
    #[error("cannot listen for the sign-in redirect on 127.0.0.1")]
    Listener(#[source] std::io::Error),
    #[error("no sign-in within {seconds} s")]
    TimedOut { seconds: u64 },
    #[error("the issuer refused the sign-in: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        error: String,
        description: Option<String>,
    },
    #[error("the sign-in redirect has a wrong `state` (not the request this client made)")]
    StateMismatch,
    #[error("the sign-in redirect has no authorization code")]
    MissingCode,
    #[error("token endpoint of {issuer}: {reason}")]
    Token { issuer: String, reason: String },
    #[error("token endpoint of {issuer} returned no id_token")]
    NoIdToken { issuer: String },
    #[error(
        "the ID token from {issuer} failed verification ({reason}); it was not used and \
         nothing was sent to Fulcio"
    )]
    IdToken { issuer: String, reason: String },
    #[error("device authorization at {issuer} failed: {reason}")]
    Device { issuer: String, reason: String },
    #[error(
        "device authorization at {issuer} asks to poll every {interval_seconds} s, longer than \
         the {timeout_seconds} s sign-in timeout"
    )]
    DeviceInterval {
        issuer: String,
        interval_seconds: u64,
        timeout_seconds: u64,
    },
    #[error("the device sign-in was denied")]
    DeviceDenied,
    #[error("the device code expired before the sign-in was approved")]
    DeviceExpired,
    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),
}
