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
//! 4. other CI systems through `sigstore-oidc`'s ambient detection (GitLab, Buildkite,
//!    CircleCI);
//! 5. an interactive sign-in at the OIDC issuer (see [`super::sign_in`]): the browser
//!    flow on a terminal (or with `--no-browser`), else the device flow when the issuer
//!    offers one.
//!
//! Whatever the source, the token is refused before Fulcio is contacted when it has
//! expired or its `aud` claim does not name the expected audience. The claims are read
//! without checking the token's signature: Fulcio does that, and a client cannot (it does
//! not know which issuers Fulcio trusts). The token itself is never logged or printed.

use super::github_actions::{
    ACTIONS_ID_TOKEN_REQUEST_TOKEN, ACTIONS_ID_TOKEN_REQUEST_URL, GitHubTokenError,
    GitHubTokenRequest, request_token,
};
use super::http;
use super::retry::{RetryObserver, RetryPolicy};
use super::sign_in::{self, SignInError, SignInOptions, SignInPrompt};
use super::sigstore::{IdentityToken, detect_ambient_ci_token};
use super::token_source::SIGSTORE_ID_TOKEN;
// Defined beside this file (so the sign-in can use them without importing this file);
// also reachable here, where they were before.
pub use super::secret::Secret;
pub use super::token_source::{CiProvider, TokenSource};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use zeroize::Zeroizing;

/// The audience Fulcio expects in tokens (public-good Fulcio uses it for every issuer).
pub const DEFAULT_AUDIENCE: &str = "sigstore";

/// Largest token file accepted, in bytes. Real ID tokens are a few KiB.
const MAX_TOKEN_BYTES: usize = 64 * 1024;

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
    /// Ask `sigstore-oidc`'s ambient detection (`ambient-id`) for GitLab, Buildkite and
    /// CircleCI tokens (it reads the process environment itself).
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

/// Options for [`acquire_token`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TokenOptions {
    /// `--identity-token`: the token itself, or `@FILE`.
    pub identity_token: Option<Secret>,
    /// The audience the token must be issued for (and the one requested from CI token
    /// endpoints). Default `sigstore`.
    pub audience: String,
    pub sign_in: SignInOptions,
    /// Retries of the GitHub Actions token request.
    pub retry: RetryPolicy,
    /// Bound of one request to a CI token endpoint. Default 30 s.
    pub timeout: Duration,
    /// Told of each retried GitHub Actions token request. Default: nobody.
    pub on_retry: RetryObserver,
}

crate::setters::setters! {
    /// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
    /// so it is built from [`TokenOptions::default()`] and these, never as a literal.
    TokenOptions {
        /// Sets `audience`.
        with_audience => audience: String,
        /// Sets `sign_in`.
        with_sign_in => sign_in: SignInOptions,
        /// Sets `retry`.
        with_retry => retry: RetryPolicy,
        /// Sets `timeout`.
        with_timeout => timeout: Duration,
        /// Sets `on_retry`.
        with_on_retry => on_retry: RetryObserver,
    }
}

impl TokenOptions {
    /// Sets `identity_token` to `Some(value)`.
    pub fn with_identity_token(mut self, value: Secret) -> Self {
        self.identity_token = Some(value);
        self
    }
}

impl Default for TokenOptions {
    fn default() -> Self {
        TokenOptions {
            identity_token: None,
            audience: DEFAULT_AUDIENCE.to_string(),
            sign_in: SignInOptions::default(),
            retry: RetryPolicy::DEFAULT,
            timeout: Duration::from_secs(30),
            on_retry: RetryObserver::default(),
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
    /// Parses a token and checks what Fulcio would refuse anyway: expired, or not issued
    /// for `audience`.
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
        let token = IdentityToken::parse(jwt).map_err(|e| TokenError::Malformed {
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
fn check_claims(
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
    if !token.audience_contains(audience) {
        return Err(TokenError::WrongAudience {
            from: source.clone(),
            expected: audience.to_string(),
            found: token.audience_text(),
        });
    }
    Ok(())
}

/// Why no usable identity token was obtained.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    #[error("cannot read the identity token file {}", path.display())]
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
    #[error(transparent)]
    GitHub(#[from] GitHubTokenError),
    #[error("{provider}: {reason}")]
    Ci {
        provider: CiProvider,
        reason: String,
    },
    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error(
        "no --identity-token, {SIGSTORE_ID_TOKEN} or CI credentials found, and the sign-in \
         at {issuer} failed"
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
    let http = http::client(options.timeout).map_err(TokenError::HttpClient)?;
    if let Some(gh) = &env.github_actions {
        let jwt = request_token(
            &http,
            gh,
            &options.audience,
            options.retry,
            &options.on_retry,
        )
        .await?;
        return Ok((jwt, TokenSource::GitHubActions));
    }
    if env.in_github_actions {
        return Err(TokenError::GitHubNoPermission);
    }
    if env.detect_other_ci {
        let provider = ci_provider_from_env();
        match detect_ambient_ci_token().await {
            Ok(Some(jwt)) => {
                return Ok((
                    Secret::new(jwt),
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
    sign_in::sign_in(&options.sign_in, prompt)
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

    /// A token of issuer `https://i` for subject `s`, with audience `aud`, expiring at `exp`.
    fn token_of_s(aud: serde_json::Value, exp: i64) -> String {
        jwt(serde_json::json!({"iss": "https://i", "sub": "s", "aud": aud, "exp": exp}))
    }

    /// [`token_of_s`] refused for audience `sigstore` from `source`: the token and why.
    fn refused(aud: serde_json::Value, exp: i64, source: TokenSource) -> (String, TokenError) {
        let t = token_of_s(aud, exp);
        let err = AcquiredToken::new(&t, source, "sigstore", now()).unwrap_err();
        (t, err)
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000).unwrap()
    }

    #[test]
    fn accepts_a_fresh_token_for_the_audience() {
        let t = token_of_s(serde_json::json!(["x", "sigstore"]), 1_800_000_100);
        let got = AcquiredToken::new(&t, TokenSource::Argument, "sigstore", now()).unwrap();
        assert_eq!(got.subject(), "s");
        assert_eq!(got.source(), &TokenSource::Argument);
        assert!(!format!("{got:?}").contains(&t));
    }

    #[test]
    fn refuses_an_expired_token() {
        let (t, err) = refused("sigstore".into(), 1_799_999_000, TokenSource::Environment);
        assert!(matches!(err, TokenError::Expired { .. }), "{err}");
        assert!(err.to_string().contains("expired at"), "{err}");
        assert!(!err.to_string().contains(&t));
    }

    #[test]
    fn refuses_a_token_for_another_audience() {
        let (_, err) = refused("other".into(), 1_800_000_100, TokenSource::Argument);
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
    fn secrets_in_the_environment_are_redacted_in_debug() {
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
        let err = acquire_token_blocking(&TokenOptions::default(), &env, &sign_in::SilentPrompt)
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
        let got = acquire_token_blocking(&options, &env, &sign_in::SilentPrompt).unwrap();
        assert_eq!(got.source(), &TokenSource::Argument);
        assert_eq!(got.subject(), "flag");
    }
}
