//! OIDC identity tokens for keyless signing: where a token comes from, and the checks it
//! must pass before it is sent to Fulcio.
//!
//! Sources, tried in this order; the first that yields a token wins (cosign's and
//! sigstore-python's precedence: explicit beats ambient beats interactive):
//!
//! 1. `--identity-token TOKEN` or `--identity-token @FILE` ([`TokenOptions::identity_token`]);
//! 2. the `SIGSTORE_ID_TOKEN` environment variable (how GitLab CI `id_tokens:` and most
//!    other systems hand a token over);
//! 3. GitHub Actions: `ACTIONS_ID_TOKEN_REQUEST_URL` + `ACTIONS_ID_TOKEN_REQUEST_TOKEN`
//!    (the job needs `permissions: id-token: write`);
//! 4. other CI systems through `sigstore_oidc::IdentityToken::detect_ambient` (GitLab,
//!    Buildkite, CircleCI);
//! 5. an interactive sign-in at the OIDC issuer (see [`super::sign_in`]): the browser
//!    flow on a terminal (or with `--no-browser`), else the device flow when the issuer
//!    offers one.
//!
//! Whatever the source, the token is refused before Fulcio is contacted when it has
//! expired or its `aud` claim does not name the expected audience. The claims are read
//! without checking the token's signature: Fulcio does that, and a client cannot (it does
//! not know which issuers Fulcio trusts). The token itself is never logged or printed.

use super::http::{self, BodyError, RetryPolicy};
use super::sign_in::{self, SignInError, SignInPrompt};
use sigstore_oidc::IdentityToken;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use zeroize::Zeroizing;

/// The audience Fulcio expects in tokens (public-good Fulcio uses it for every issuer).
pub const DEFAULT_AUDIENCE: &str = "sigstore";
/// The public-good Sigstore OIDC issuer (Dex in front of GitHub, Google, Microsoft).
pub const DEFAULT_OIDC_ISSUER: &str = "https://oauth2.sigstore.dev/auth";
/// The public OAuth client registered at the Sigstore issuer.
pub const DEFAULT_OIDC_CLIENT_ID: &str = "sigstore";

/// Environment variable holding a ready token.
pub const SIGSTORE_ID_TOKEN: &str = "SIGSTORE_ID_TOKEN";
/// GitHub Actions: URL of the job's token endpoint.
pub const ACTIONS_ID_TOKEN_REQUEST_URL: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
/// GitHub Actions: bearer token for that endpoint.
pub const ACTIONS_ID_TOKEN_REQUEST_TOKEN: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

/// Largest token or token response accepted, in bytes. Real ID tokens are a few KiB.
const MAX_TOKEN_BYTES: usize = 64 * 1024;

/// A secret string (a token or a bearer credential): wiped on drop, never shown by `Debug`.
#[derive(Clone, Default)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(Zeroizing::new(value.into()))
    }

    /// The secret value; every use is explicit.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A CI system found by ambient detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiProvider {
    GitLab,
    Buildkite,
    CircleCi,
    /// Detected by `ambient-id` but not recognised from the environment here.
    Other,
}

impl fmt::Display for CiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CiProvider::GitLab => "GitLab CI",
            CiProvider::Buildkite => "Buildkite",
            CiProvider::CircleCi => "CircleCI",
            CiProvider::Other => "ambient CI credentials",
        })
    }
}

/// Where the identity token came from (printed with `--verbose`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `--identity-token TOKEN`
    Argument,
    /// `--identity-token @FILE`
    File(PathBuf),
    /// The `SIGSTORE_ID_TOKEN` environment variable.
    Environment,
    /// The GitHub Actions token endpoint.
    GitHubActions,
    /// Another CI system's ambient credentials.
    Ci(CiProvider),
    /// Browser sign-in (authorization code + PKCE) at this issuer.
    Browser { issuer: String },
    /// Device sign-in (RFC 8628) at this issuer.
    Device { issuer: String },
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Argument => f.write_str("--identity-token"),
            TokenSource::File(p) => write!(f, "--identity-token @{}", p.display()),
            TokenSource::Environment => f.write_str(SIGSTORE_ID_TOKEN),
            TokenSource::GitHubActions => f.write_str("GitHub Actions"),
            TokenSource::Ci(p) => write!(f, "{p}"),
            TokenSource::Browser { issuer } => write!(f, "browser sign-in at {issuer}"),
            TokenSource::Device { issuer } => write!(f, "device sign-in at {issuer}"),
        }
    }
}

/// The GitHub Actions token request (`ACTIONS_ID_TOKEN_REQUEST_*`).
#[derive(Debug, Clone)]
pub struct GitHubTokenRequest {
    /// `ACTIONS_ID_TOKEN_REQUEST_URL` (already carries a query, e.g. `?api-version=2.0`).
    pub url: String,
    /// `ACTIONS_ID_TOKEN_REQUEST_TOKEN`.
    pub bearer: Secret,
}

/// What the environment offers, captured once so the library does not read process
/// state behind the caller's back (and tests can supply their own).
#[derive(Debug, Clone, Default)]
pub struct AmbientEnvironment {
    /// `SIGSTORE_ID_TOKEN`.
    pub sigstore_id_token: Option<Secret>,
    /// Both GitHub Actions variables, when both are set.
    pub github_actions: Option<GitHubTokenRequest>,
    /// Running in GitHub Actions (`GITHUB_ACTIONS=true`): without the two variables above
    /// that means the job lacks `permissions: id-token: write`.
    pub in_github_actions: bool,
    /// Ask `ambient-id` for GitLab, Buildkite and CircleCI tokens (it reads the process
    /// environment itself).
    pub detect_other_ci: bool,
}

impl AmbientEnvironment {
    /// Reads the process environment.
    pub fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let github_actions = match (
            var(ACTIONS_ID_TOKEN_REQUEST_URL),
            var(ACTIONS_ID_TOKEN_REQUEST_TOKEN),
        ) {
            (Some(url), Some(bearer)) => Some(GitHubTokenRequest {
                url,
                bearer: Secret::new(bearer),
            }),
            _ => None,
        };
        AmbientEnvironment {
            sigstore_id_token: var(SIGSTORE_ID_TOKEN).map(Secret::new),
            github_actions,
            in_github_actions: var("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
            detect_other_ci: true,
        }
    }

    /// Nothing ambient: only the explicit token or an interactive sign-in.
    pub fn none() -> Self {
        Self::default()
    }
}

/// How to sign in interactively when no other source has a token.
#[derive(Debug, Clone)]
pub struct SignInOptions {
    /// OIDC issuer; its endpoints come from `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
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

/// Options for [`acquire_token`].
#[derive(Debug, Clone)]
pub struct TokenOptions {
    /// `--identity-token`: the token itself, or `@FILE`.
    pub identity_token: Option<Secret>,
    /// The audience the token must be issued for (and the one requested from CI token
    /// endpoints). Default `sigstore`.
    pub audience: String,
    pub sign_in: SignInOptions,
    /// Retries of the GitHub Actions token request.
    pub retry: RetryPolicy,
}

impl Default for TokenOptions {
    fn default() -> Self {
        TokenOptions {
            identity_token: None,
            audience: DEFAULT_AUDIENCE.to_string(),
            sign_in: SignInOptions::default(),
            retry: RetryPolicy::DEFAULT,
        }
    }
}

/// A token that passed the client-side checks, with where it came from.
#[derive(Clone)]
pub struct AcquiredToken {
    pub(crate) token: IdentityToken,
    source: TokenSource,
}

impl fmt::Debug for AcquiredToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquiredToken")
            .field("source", &self.source)
            .field("issuer", &self.issuer())
            .field("subject", &self.subject())
            .finish_non_exhaustive()
    }
}

impl AcquiredToken {
    /// Parses and checks a token (see [`check_claims`]).
    pub fn new(
        jwt: &str,
        source: TokenSource,
        audience: &str,
        now: jiff::Timestamp,
    ) -> Result<Self, TokenError> {
        let jwt = jwt.trim();
        if jwt.is_empty() {
            return Err(TokenError::Empty { from: source });
        }
        let token = IdentityToken::from_jwt(jwt).map_err(|e| TokenError::Malformed {
            from: source.clone(),
            reason: e.to_string(),
        })?;
        check_claims(&token, &source, audience, now)?;
        Ok(AcquiredToken { token, source })
    }

    pub fn source(&self) -> &TokenSource {
        &self.source
    }

    /// The `iss` claim (unverified until Fulcio accepts the token).
    pub fn issuer(&self) -> &str {
        self.token.issuer()
    }

    /// The `sub` claim (unverified until Fulcio accepts the token).
    pub fn subject(&self) -> &str {
        self.token.subject()
    }

    /// The `email` claim, if any.
    pub fn email(&self) -> Option<&str> {
        self.token.email()
    }

    pub fn expiration(&self) -> jiff::Timestamp {
        self.token.expiration()
    }
}

/// Refuses a token that Fulcio would refuse anyway, with a clearer message and without a
/// network round trip: expired, or not issued for `audience`.
pub fn check_claims(
    token: &IdentityToken,
    source: &TokenSource,
    audience: &str,
    now: jiff::Timestamp,
) -> Result<(), TokenError> {
    if token.expiration() <= now {
        return Err(TokenError::Expired {
            from: source.clone(),
            expired_at: token.expiration(),
        });
    }
    let aud = &token.claims().aud;
    if !aud.contains(audience) {
        return Err(TokenError::WrongAudience {
            from: source.clone(),
            expected: audience.to_string(),
            found: audience_text(aud),
        });
    }
    Ok(())
}

fn audience_text(aud: &sigstore_oidc::Audience) -> String {
    match serde_json::to_value(aud) {
        Ok(serde_json::Value::Null) | Err(_) => "no audience".to_string(),
        Ok(v) => v.to_string(),
    }
}

/// Why no usable identity token was obtained.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the identity token file {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the identity token from {from} is empty")]
    Empty { from: TokenSource },
    #[error("the identity token from {from} is not a JWT: {reason}")]
    Malformed { from: TokenSource, reason: String },
    #[error(
        "the identity token from {from} expired at {expired_at}; get a fresh token \
         (nothing was sent to Fulcio)"
    )]
    Expired {
        from: TokenSource,
        expired_at: jiff::Timestamp,
    },
    #[error(
        "the identity token from {from} is for audience {found}, not {expected:?}; \
         request a token for {expected:?} (or set --oidc-audience); nothing was sent to Fulcio"
    )]
    WrongAudience {
        from: TokenSource,
        expected: String,
        found: String,
    },
    #[error(
        "running in GitHub Actions, but {ACTIONS_ID_TOKEN_REQUEST_URL} and \
         {ACTIONS_ID_TOKEN_REQUEST_TOKEN} are not set: give the job \
         `permissions: id-token: write` (or pass --identity-token)"
    )]
    GitHubNoPermission,
    #[error(
        "refusing to send the GitHub Actions request token to {ACTIONS_ID_TOKEN_REQUEST_URL} \
         over plain http"
    )]
    GitHubInsecureUrl,
    #[error("GitHub Actions token request: {ACTIONS_ID_TOKEN_REQUEST_URL} is not a URL: {reason}")]
    GitHubUrl { reason: String },
    #[error("GitHub Actions token request failed after {attempts} attempt(s): {source}")]
    GitHubConnection {
        attempts: u32,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "GitHub Actions token request failed after {attempts} attempt(s): HTTP {status} \
         (does the job have `permissions: id-token: write`?)"
    )]
    GitHubStatus { status: u16, attempts: u32 },
    #[error("GitHub Actions token response: {0}")]
    GitHubBody(#[source] BodyError),
    #[error("GitHub Actions token response has no string `value`")]
    GitHubNoValue,
    #[error("{provider}: {reason}")]
    Ci {
        provider: CiProvider,
        reason: String,
    },
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(
        "no --identity-token, {SIGSTORE_ID_TOKEN} or CI credentials found, and the sign-in \
         at {issuer} failed: {source}"
    )]
    SignIn {
        issuer: String,
        #[source]
        source: SignInError,
    },
}

/// Finds a token (see the module docs for the order), checks it and says where it came
/// from. `prompt` shows the sign-in URL or device code when an interactive flow runs.
pub async fn acquire_token(
    options: &TokenOptions,
    env: &AmbientEnvironment,
    prompt: &dyn SignInPrompt,
) -> Result<AcquiredToken, TokenError> {
    let (jwt, source) = find_token(options, env, prompt).await?;
    AcquiredToken::new(
        jwt.expose(),
        source,
        &options.audience,
        jiff::Timestamp::now(),
    )
}

/// [`acquire_token`] for synchronous callers: runs it on a private runtime (on a
/// separate thread when called from inside a tokio runtime).
pub fn acquire_token_blocking(
    options: &TokenOptions,
    env: &AmbientEnvironment,
    prompt: &dyn SignInPrompt,
) -> Result<AcquiredToken, TokenError> {
    http::block_on(acquire_token(options, env, prompt)).map_err(TokenError::Runtime)?
}

async fn find_token(
    options: &TokenOptions,
    env: &AmbientEnvironment,
    prompt: &dyn SignInPrompt,
) -> Result<(Secret, TokenSource), TokenError> {
    if let Some(given) = &options.identity_token {
        return match given.expose().strip_prefix('@') {
            Some(path) => {
                let path = PathBuf::from(path);
                let text = read_token_file(&path)?;
                Ok((text, TokenSource::File(path)))
            }
            None => Ok((given.clone(), TokenSource::Argument)),
        };
    }
    if let Some(t) = &env.sigstore_id_token {
        return Ok((t.clone(), TokenSource::Environment));
    }
    let http = http::client(Duration::from_secs(30)).map_err(TokenError::HttpClient)?;
    if let Some(gh) = &env.github_actions {
        let jwt = super::github_actions::request_token(&http, gh, &options.audience, options.retry)
            .await?;
        return Ok((jwt, TokenSource::GitHubActions));
    }
    if env.in_github_actions {
        return Err(TokenError::GitHubNoPermission);
    }
    if env.detect_other_ci {
        let provider = ci_provider_from_env();
        match IdentityToken::detect_ambient().await {
            Ok(Some(t)) => {
                return Ok((
                    Secret::new(t.expose_secret()),
                    TokenSource::Ci(provider.unwrap_or(CiProvider::Other)),
                ));
            }
            Ok(None) => {}
            Err(e) => {
                return Err(TokenError::Ci {
                    provider: provider.unwrap_or(CiProvider::Other),
                    reason: e.to_string(),
                });
            }
        }
    }
    sign_in::sign_in(&http, &options.sign_in, prompt)
        .await
        .map_err(|source| TokenError::SignIn {
            issuer: options.sign_in.issuer.clone(),
            source,
        })
}

fn read_token_file(path: &std::path::Path) -> Result<Secret, TokenError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|source| TokenError::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let mut text = Zeroizing::new(String::new());
    file.take(MAX_TOKEN_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|source| TokenError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
    if text.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::ReadFile {
            path: path.to_path_buf(),
            source: std::io::Error::other(format!("larger than {MAX_TOKEN_BYTES} bytes")),
        });
    }
    Ok(Secret::new(text.trim()))
}

/// Which CI `ambient-id` will look at, from the same variables it keys on.
fn ci_provider_from_env() -> Option<CiProvider> {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if set("GITLAB_CI") {
        Some(CiProvider::GitLab)
    } else if set("BUILDKITE") {
        Some(CiProvider::Buildkite)
    } else if set("CIRCLECI") {
        Some(CiProvider::CircleCi)
    } else {
        None
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn jwt(claims: serde_json::Value) -> String {
        format!(
            "{}.{}.sig",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256"}"#),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        )
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000).unwrap()
    }

    #[test]
    fn accepts_a_fresh_token_for_the_audience() {
        let t = jwt(
            serde_json::json!({"iss": "https://i", "sub": "s", "aud": ["x", "sigstore"], "exp": 1_800_000_100}),
        );
        let got = AcquiredToken::new(&t, TokenSource::Argument, "sigstore", now()).unwrap();
        assert_eq!(got.subject(), "s");
        assert_eq!(got.source(), &TokenSource::Argument);
        assert!(!format!("{got:?}").contains(&t));
    }

    #[test]
    fn refuses_an_expired_token() {
        let t = jwt(
            serde_json::json!({"iss": "https://i", "sub": "s", "aud": "sigstore", "exp": 1_799_999_000}),
        );
        let err = AcquiredToken::new(&t, TokenSource::Environment, "sigstore", now()).unwrap_err();
        assert!(matches!(err, TokenError::Expired { .. }), "{err}");
        assert!(err.to_string().contains("expired at"), "{err}");
        assert!(!err.to_string().contains(&t));
    }

    #[test]
    fn refuses_a_token_for_another_audience() {
        let t = jwt(
            serde_json::json!({"iss": "https://i", "sub": "s", "aud": "other", "exp": 1_800_000_100}),
        );
        let err = AcquiredToken::new(&t, TokenSource::Argument, "sigstore", now()).unwrap_err();
        assert!(matches!(err, TokenError::WrongAudience { .. }), "{err}");
        assert!(err.to_string().contains("\"other\""), "{err}");
    }

    #[test]
    fn refuses_a_token_without_audience() {
        let t = jwt(serde_json::json!({"iss": "https://i", "sub": "s", "exp": 1_800_000_100}));
        let err = AcquiredToken::new(&t, TokenSource::Argument, "sigstore", now()).unwrap_err();
        assert!(err.to_string().contains("no audience"), "{err}");
    }

    #[test]
    fn refuses_garbage_without_echoing_it() {
        let err = AcquiredToken::new("not-a-jwt-secret", TokenSource::Argument, "sigstore", now())
            .unwrap_err();
        assert!(matches!(err, TokenError::Malformed { .. }));
        assert!(!err.to_string().contains("not-a-jwt-secret"));
        assert!(matches!(
            AcquiredToken::new("  ", TokenSource::Argument, "sigstore", now()),
            Err(TokenError::Empty { .. })
        ));
    }

    #[test]
    fn secrets_are_redacted_in_debug() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        let env = AmbientEnvironment {
            sigstore_id_token: Some(Secret::new("tok")),
            github_actions: Some(GitHubTokenRequest {
                url: "https://x".into(),
                bearer: Secret::new("bearer-secret"),
            }),
            in_github_actions: true,
            detect_other_ci: false,
        };
        let dbg = format!("{env:?}");
        assert!(
            !dbg.contains("bearer-secret") && !dbg.contains("\"tok\""),
            "{dbg}"
        );
    }

    #[test]
    fn github_actions_without_id_token_permission_is_named() {
        let env = AmbientEnvironment {
            in_github_actions: true,
            ..AmbientEnvironment::none()
        };
        let err =
            acquire_token_blocking(&TokenOptions::default(), &env, &super::super::SilentPrompt)
                .unwrap_err();
        assert!(matches!(err, TokenError::GitHubNoPermission), "{err}");
        assert!(err.to_string().contains("id-token: write"), "{err}");
    }

    #[test]
    fn an_explicit_token_wins_over_the_environment() {
        let fresh = jwt(
            serde_json::json!({"iss": "https://i", "sub": "flag", "aud": "sigstore", "exp": 4_000_000_000u64}),
        );
        let options = TokenOptions {
            identity_token: Some(Secret::new(fresh)),
            ..TokenOptions::default()
        };
        let env = AmbientEnvironment {
            sigstore_id_token: Some(Secret::new("not-used")),
            in_github_actions: true,
            ..AmbientEnvironment::none()
        };
        let got = acquire_token_blocking(&options, &env, &super::super::SilentPrompt).unwrap();
        assert_eq!(got.source(), &TokenSource::Argument);
        assert_eq!(got.subject(), "flag");
    }
}
