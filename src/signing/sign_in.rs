//! Interactive sign-in at an OIDC issuer, for keyless signing by a person.
//!
//! The issuer's endpoints come from OIDC discovery (`<issuer>/.well-known/openid-configuration`,
//! OpenID Connect Discovery 1.0 §4), so any issuer works, not only Sigstore's Dex.
//!
//! * **Browser flow** (OAuth 2.0 authorization code, RFC 6749 §4.1, with PKCE S256,
//!   RFC 7636, plus `state` and an OIDC `nonce`): a listener on `127.0.0.1` with a random
//!   port receives the redirect; the authorization URL is opened in a browser, or only
//!   shown (`--no-browser`). The redirect URI is `http://localhost:<port>/auth/callback`,
//!   the shape cosign uses and Sigstore's Dex accepts for its public `sigstore` client.
//! * **Device flow** (RFC 8628): when no person is at a terminal but the issuer lists a
//!   `device_authorization_endpoint`, the user code and verification URL are shown and the
//!   token endpoint is polled (`authorization_pending`, `slow_down`).
//!
//! Written here rather than through `sigstore-oidc`'s `OAuthClient`, which has no discovery,
//! no device flow, no nonce, and cannot wait on the local redirect without opening a
//! browser itself.

use super::http::{self, BodyError};
use super::retry::status_is_transient;
use super::secret::Secret;
use super::token_source::TokenSource;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand_core::{OsRng, RngCore};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The public-good Sigstore OIDC issuer (Dex in front of GitHub, Google, Microsoft).
pub const DEFAULT_OIDC_ISSUER: &str = "https://oauth2.sigstore.dev/auth";
/// The public OAuth client registered at the Sigstore issuer.
pub const DEFAULT_OIDC_CLIENT_ID: &str = "sigstore";

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

/// Largest discovery document or token endpoint answer read, in bytes.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Largest HTTP request head accepted by the redirect listener.
const MAX_CALLBACK_HEAD: usize = 8 * 1024;
/// Time a browser gets to send its request once connected.
const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Scopes requested: `email` makes Sigstore's Dex include the address Fulcio binds.
const SCOPES: &str = "openid email";
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// RFC 8628 §3.2: the default polling interval.
const DEFAULT_DEVICE_INTERVAL: u64 = 5;
/// Transient failures (5xx, connection errors) tolerated in a row while polling.
const MAX_POLL_FAILURES: u32 = 3;

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

/// Why an interactive sign-in failed.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("refusing to sign in through {url}: use https:// (plain http:// only to this machine)")]
    InsecureEndpoint { url: String },
    #[error("OIDC discovery at {url} failed: {source}")]
    DiscoveryConnection {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("OIDC discovery at {url} failed: HTTP {status}")]
    DiscoveryStatus { url: String, status: u16 },
    #[error("OIDC discovery at {url}: not a discovery document: {reason}")]
    DiscoveryDocument { url: String, reason: String },
    #[error("OIDC discovery: the document is for issuer {found:?}, not {expected:?}")]
    IssuerMismatch { expected: String, found: String },
    #[error("OIDC issuer {issuer} has no authorization_endpoint (no browser sign-in)")]
    NoAuthorizationEndpoint { issuer: String },
    #[error(
        "no terminal for a browser sign-in, and {issuer} offers no device flow; pass \
         --identity-token, or --no-browser to sign in through a printed URL"
    )]
    NoInteractiveFlow { issuer: String },
    #[error("cannot listen for the sign-in redirect on 127.0.0.1: {0}")]
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
    #[error("token endpoint {url} failed: {source}")]
    TokenConnection {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("token endpoint {url} answered HTTP {status}{}", error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    TokenStatus {
        url: String,
        status: u16,
        error: Option<String>,
    },
    #[error("token endpoint {url}: {source}")]
    TokenBody {
        url: String,
        #[source]
        source: BodyError,
    },
    #[error("token endpoint {url} returned no id_token")]
    NoIdToken { url: String },
    #[error("the ID token's nonce does not match the sign-in request (replayed token?)")]
    NonceMismatch,
    #[error("device authorization at {url} failed: {source}")]
    DeviceConnection {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("device authorization at {url} answered HTTP {status}")]
    DeviceStatus { url: String, status: u16 },
    #[error("device authorization at {url}: unexpected answer: {reason}")]
    DeviceResponse { url: String, reason: String },
    #[error("the device sign-in was denied")]
    DeviceDenied,
    #[error("the device code expired before the sign-in was approved")]
    DeviceExpired,
}

/// The parts of a discovery document used here.
#[derive(Debug, Clone, Deserialize)]
struct Discovery {
    issuer: String,
    #[serde(default)]
    authorization_endpoint: Option<String>,
    token_endpoint: String,
    #[serde(default)]
    device_authorization_endpoint: Option<String>,
}

/// Signs in at `options.issuer` with the flow that fits (see the module docs).
pub(crate) async fn sign_in(
    http: &reqwest::Client,
    options: &SignInOptions,
    prompt: &dyn SignInPrompt,
) -> Result<(Secret, TokenSource), SignInError> {
    let discovery = discover(http, &options.issuer).await?;
    // Codes, verifiers and tokens travel to these endpoints.
    for endpoint in [
        Some(&discovery.token_endpoint),
        discovery.authorization_endpoint.as_ref(),
        discovery.device_authorization_endpoint.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        if !http::may_carry_secrets(endpoint) {
            return Err(SignInError::InsecureEndpoint {
                url: endpoint.clone(),
            });
        }
    }
    let issuer = options.issuer.clone();
    if !options.terminal {
        if let Some(device) = &discovery.device_authorization_endpoint {
            let jwt = device_flow(http, options, &discovery, device, prompt).await?;
            return Ok((jwt, TokenSource::Device { issuer }));
        }
        if options.open_browser {
            return Err(SignInError::NoInteractiveFlow { issuer });
        }
    }
    let jwt = browser_flow(http, options, &discovery, prompt).await?;
    Ok((jwt, TokenSource::Browser { issuer }))
}

async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Discovery, SignInError> {
    let base = issuer.trim_end_matches('/');
    if !http::may_carry_secrets(base) {
        return Err(SignInError::InsecureEndpoint {
            url: base.to_string(),
        });
    }
    let url = format!("{base}/.well-known/openid-configuration");
    let response = http
        .get(&url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|source| SignInError::DiscoveryConnection {
            url: url.clone(),
            source: source.without_url(),
        })?;
    if !response.status().is_success() {
        return Err(SignInError::DiscoveryStatus {
            url,
            status: response.status().as_u16(),
        });
    }
    let body = http::read_limited(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| SignInError::DiscoveryDocument {
            url: url.clone(),
            reason: e.to_string(),
        })?;
    let doc: Discovery =
        serde_json::from_slice(&body).map_err(|e| SignInError::DiscoveryDocument {
            url: url.clone(),
            reason: e.to_string(),
        })?;
    // Discovery §4.3: the document must name the issuer it was fetched for, or an
    // attacker-controlled document could redirect the flow to other endpoints.
    if doc.issuer.trim_end_matches('/') != base {
        return Err(SignInError::IssuerMismatch {
            expected: issuer.to_string(),
            found: doc.issuer,
        });
    }
    Ok(doc)
}

fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    OsRng.fill_bytes(&mut buf);
    URL_SAFE_NO_PAD.encode(buf)
}

async fn browser_flow(
    http: &reqwest::Client,
    options: &SignInOptions,
    discovery: &Discovery,
    prompt: &dyn SignInPrompt,
) -> Result<Secret, SignInError> {
    let auth_endpoint = discovery.authorization_endpoint.as_deref().ok_or_else(|| {
        SignInError::NoAuthorizationEndpoint {
            issuer: options.issuer.clone(),
        }
    })?;
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(SignInError::Listener)?;
    let port = listener.local_addr().map_err(SignInError::Listener)?.port();
    let redirect_uri = format!("http://localhost:{port}/auth/callback");

    let verifier = Secret::new(random_token(32));
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.expose().as_bytes()));
    let state = random_token(16);
    let nonce = random_token(16);

    let mut url =
        reqwest::Url::parse(auth_endpoint).map_err(|e| SignInError::DiscoveryDocument {
            url: options.issuer.clone(),
            reason: format!("authorization_endpoint is not a URL: {e}"),
        })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &options.client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("scope", SCOPES)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("nonce", &nonce);
    let url = url.to_string();
    let opened = options.open_browser && open::that_detached(&url).is_ok();
    prompt.authorization_url(&url, opened);

    let code = tokio::time::timeout(options.timeout, receive_code(&listener, &state))
        .await
        .map_err(|_| SignInError::TimedOut {
            seconds: options.timeout.as_secs(),
        })??;
    drop(listener);

    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.expose()),
        ("redirect_uri", redirect_uri.as_str()),
        ("client_id", options.client_id.as_str()),
        ("code_verifier", verifier.expose()),
    ];
    let jwt = match post_token(http, &discovery.token_endpoint, &form).await? {
        TokenAnswer::IdToken(t) => t,
        TokenAnswer::Error { status, error } => {
            return Err(SignInError::TokenStatus {
                url: discovery.token_endpoint.clone(),
                status,
                error: Some(error),
            });
        }
    };
    if token_nonce(jwt.expose()).as_deref() != Some(nonce.as_str()) {
        return Err(SignInError::NonceMismatch);
    }
    Ok(jwt)
}

/// Accepts connections until the redirect to `/auth/callback` arrives (browsers also
/// ask for `/favicon.ico` and the like; those get a 404).
async fn receive_code(listener: &TcpListener, state: &str) -> Result<Secret, SignInError> {
    loop {
        let (stream, _) = listener.accept().await.map_err(SignInError::Listener)?;
        let mut stream = BufReader::new(stream.take(MAX_CALLBACK_HEAD as u64 + 1));
        let head = match tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_head(&mut stream)).await {
            Ok(Some(head)) => head,
            _ => continue,
        };
        let target = head
            .lines()
            .next()
            .and_then(|line| {
                let mut parts = line.split_whitespace();
                (parts.next() == Some("GET"))
                    .then(|| parts.next())
                    .flatten()
            })
            .unwrap_or("");
        let Ok(url) = reqwest::Url::parse(&format!("http://localhost{target}")) else {
            respond(
                stream.get_mut().get_mut(),
                "400 Bad Request",
                "Bad request.",
            )
            .await;
            continue;
        };
        if url.path() != "/auth/callback" {
            respond(stream.get_mut().get_mut(), "404 Not Found", "Not found.").await;
            continue;
        }
        let query = |k: &str| {
            url.query_pairs()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.into_owned())
        };
        // The state first: an error redirect carries it too (RFC 6749 §4.1.2.1), and one
        // without it is not an answer to our request.
        let outcome = if query("state").as_deref() != Some(state) {
            Err(SignInError::StateMismatch)
        } else if let Some(error) = query("error") {
            Err(SignInError::Denied {
                error,
                description: query("error_description"),
            })
        } else {
            query("code")
                .map(Secret::new)
                .ok_or(SignInError::MissingCode)
        };
        let (status, text) = match &outcome {
            Ok(_) => ("200 OK", "Signed in to mansign. You can close this window."),
            Err(_) => (
                "400 Bad Request",
                "mansign sign-in failed; see the terminal.",
            ),
        };
        respond(stream.get_mut().get_mut(), status, text).await;
        // A forged request with a wrong state must not end the wait for the real one.
        match outcome {
            Err(SignInError::StateMismatch) => continue,
            other => return other,
        }
    }
}

async fn read_head<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    let mut head = Vec::new();
    loop {
        let n = reader.read_until(b'\n', &mut head).await.ok()?;
        if n == 0 || head.len() > MAX_CALLBACK_HEAD {
            return None;
        }
        if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            return String::from_utf8(head).ok();
        }
    }
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, text: &str) {
    let html = format!("<!doctype html><title>mansign</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
        html.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The `nonce` claim of a JWT (unverified; it only ties the answer to our request).
fn token_nonce(jwt: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("nonce")?.as_str().map(str::to_string)
}

enum TokenAnswer {
    IdToken(Secret),
    /// A 4xx answer with an OAuth `error` code (RFC 6749 §5.2).
    Error {
        status: u16,
        error: String,
    },
}

#[derive(Deserialize)]
struct TokenResponse {
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// POSTs an `application/x-www-form-urlencoded` body and asks for JSON (RFC 6749 §4.1.3,
/// RFC 8628 §3.1).
async fn post_form(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> Result<reqwest::Response, reqwest::Error> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    http.post(endpoint)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
}

async fn post_token(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> Result<TokenAnswer, SignInError> {
    let response =
        post_form(http, endpoint, form)
            .await
            .map_err(|source| SignInError::TokenConnection {
                url: endpoint.to_string(),
                source: source.without_url(),
            })?;
    let status = response.status();
    let bytes = http::read_limited(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(|source| SignInError::TokenBody {
            url: endpoint.to_string(),
            source,
        })?;
    let parsed: Option<TokenResponse> = serde_json::from_slice(&bytes).ok();
    if status.is_success() {
        return match parsed.and_then(|p| p.id_token) {
            Some(t) => Ok(TokenAnswer::IdToken(Secret::new(t))),
            None => Err(SignInError::NoIdToken {
                url: endpoint.to_string(),
            }),
        };
    }
    match parsed.and_then(|p| p.error) {
        Some(error) if status.is_client_error() => Ok(TokenAnswer::Error {
            status: status.as_u16(),
            error,
        }),
        error => Err(SignInError::TokenStatus {
            url: endpoint.to_string(),
            status: status.as_u16(),
            error,
        }),
    }
}

#[derive(Deserialize)]
struct DeviceAuthorization {
    device_code: String,
    user_code: String,
    /// RFC 8628 name; Google historically says `verification_url`.
    #[serde(alias = "verification_url")]
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    interval: Option<u64>,
}

async fn device_flow(
    http: &reqwest::Client,
    options: &SignInOptions,
    discovery: &Discovery,
    endpoint: &str,
    prompt: &dyn SignInPrompt,
) -> Result<Secret, SignInError> {
    let form = [("client_id", options.client_id.as_str()), ("scope", SCOPES)];
    let response =
        post_form(http, endpoint, &form)
            .await
            .map_err(|source| SignInError::DeviceConnection {
                url: endpoint.to_string(),
                source: source.without_url(),
            })?;
    if !response.status().is_success() {
        return Err(SignInError::DeviceStatus {
            url: endpoint.to_string(),
            status: response.status().as_u16(),
        });
    }
    let bytes = http::read_limited(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| SignInError::DeviceResponse {
            url: endpoint.to_string(),
            reason: e.to_string(),
        })?;
    let auth: DeviceAuthorization =
        serde_json::from_slice(&bytes).map_err(|e| SignInError::DeviceResponse {
            url: endpoint.to_string(),
            reason: e.to_string(),
        })?;
    let device_code = Secret::new(auth.device_code);
    prompt.device_code(
        &auth.verification_uri,
        &auth.user_code,
        auth.verification_uri_complete.as_deref(),
    );

    let lifetime = auth
        .expires_in
        .map(Duration::from_secs)
        .unwrap_or(options.timeout)
        .min(options.timeout);
    let deadline = tokio::time::Instant::now() + lifetime;
    let mut interval = Duration::from_secs(auth.interval.unwrap_or(DEFAULT_DEVICE_INTERVAL).max(1));
    let mut failures = 0;
    let form = [
        ("grant_type", DEVICE_GRANT),
        ("device_code", device_code.expose()),
        ("client_id", options.client_id.as_str()),
    ];
    loop {
        // `interval` comes from the issuer: checked, so an absurd value cannot overflow.
        match tokio::time::Instant::now().checked_add(interval) {
            Some(next) if next <= deadline => {}
            _ => return Err(SignInError::DeviceExpired),
        }
        tokio::time::sleep(interval).await;
        match post_token(http, &discovery.token_endpoint, &form).await {
            Ok(TokenAnswer::IdToken(jwt)) => return Ok(jwt),
            Ok(TokenAnswer::Error { status, error }) => match error.as_str() {
                "authorization_pending" => failures = 0,
                // RFC 8628 §3.5: add 5 seconds to the interval for this and all later polls.
                "slow_down" => interval = interval.saturating_add(Duration::from_secs(5)),
                "access_denied" => return Err(SignInError::DeviceDenied),
                "expired_token" => return Err(SignInError::DeviceExpired),
                _ => {
                    return Err(SignInError::TokenStatus {
                        url: discovery.token_endpoint.clone(),
                        status,
                        error: Some(error),
                    });
                }
            },
            Err(e @ (SignInError::TokenConnection { .. } | SignInError::TokenStatus { .. }))
                if is_transient(&e) && failures + 1 < MAX_POLL_FAILURES =>
            {
                failures += 1
            }
            Err(e) => return Err(e),
        }
    }
}

fn is_transient(e: &SignInError) -> bool {
    match e {
        SignInError::TokenConnection { .. } => true,
        SignInError::TokenStatus { status, .. } => status_is_transient(*status),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_nonce_claim() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"nonce":"abc","sub":"x"}"#);
        assert_eq!(
            token_nonce(&format!("h.{payload}.s")).as_deref(),
            Some("abc")
        );
        assert_eq!(token_nonce("garbage"), None);
    }

    async fn get(port: u16, target: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[test]
    fn the_listener_ignores_other_paths_and_forged_states_until_the_real_redirect() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let wait = tokio::spawn(async move { receive_code(&listener, "good").await });
            assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
            assert!(
                get(port, "/auth/callback?code=evil&state=bad")
                    .await
                    .starts_with("HTTP/1.1 400")
            );
            assert!(
                get(port, "/auth/callback?code=c0de&state=good")
                    .await
                    .starts_with("HTTP/1.1 200")
            );
            let code = wait.await.unwrap().unwrap();
            assert_eq!(code.expose(), "c0de");
        });
    }

    #[test]
    fn an_error_redirect_ends_the_sign_in() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let wait = tokio::spawn(async move { receive_code(&listener, "s").await });
            get(
                port,
                "/auth/callback?error=access_denied&error_description=no&state=s",
            )
            .await;
            let err = wait.await.unwrap().unwrap_err();
            assert!(matches!(err, SignInError::Denied { .. }), "{err}");
            assert_eq!(
                err.to_string(),
                "the issuer refused the sign-in: access_denied (no)"
            );
        });
    }

    /// RFC 6749 §4.1.2.1: an error redirect carries the request's `state` too. Without
    /// it, any web page or local process could abort the sign-in (and put its own text
    /// in the terminal) by guessing the port.
    #[test]
    fn an_error_redirect_with_a_wrong_state_does_not_end_the_sign_in() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let wait = tokio::spawn(async move { receive_code(&listener, "good").await });
            for forged in [
                "/auth/callback?error=access_denied&error_description=forged",
                "/auth/callback?error=access_denied&state=bad",
            ] {
                assert!(get(port, forged).await.starts_with("HTTP/1.1 400"));
            }
            assert!(
                get(port, "/auth/callback?code=c0de&state=good")
                    .await
                    .starts_with("HTTP/1.1 200")
            );
            let code = wait.await.unwrap().unwrap();
            assert_eq!(code.expose(), "c0de");
        });
    }

    #[test]
    fn random_tokens_differ() {
        assert_ne!(random_token(16), random_token(16));
        assert_eq!(random_token(32).len(), 43);
    }
}
