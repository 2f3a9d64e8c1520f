//! The browser flow: OAuth 2.0 authorization code (RFC 6749 §4.1) with PKCE S256 (RFC 7636),
//! a CSRF `state` and an OIDC `nonce`, all made and checked by `openidconnect` except the
//! `state` of the redirect, which the loopback listener compares (the crate leaves that to
//! the application). The redirect URI is `http://localhost:<port>/auth/callback`, the shape
//! cosign uses and Sigstore's Dex accepts for its public `sigstore` client.

use super::error::SignInError;
use super::id_token::{self, ExpectedNonce};
use super::oidc_http::OidcHttpClient;
use super::options::{SignInOptions, SignInPrompt};
use super::provider::Provider;
use super::redirect_listener::receive_code;
use crate::signing::secret::Secret;
use openidconnect::core::CoreAuthenticationFlow;
use openidconnect::{
    AuthorizationCode, CsrfToken, Nonce, PkceCodeChallenge, RedirectUrl, Scope, TokenResponse as _,
};
use tokio::net::TcpListener;

/// Signs in through a browser; returns the verified ID token.
pub(super) async fn browser_flow(
    http_client: &OidcHttpClient,
    provider: &Provider,
    options: &SignInOptions,
    prompt: &dyn SignInPrompt,
) -> Result<Secret, SignInError> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(SignInError::Listener)?;
    let port = listener.local_addr().map_err(SignInError::Listener)?.port();
    let redirect =
        RedirectUrl::new(format!("http://localhost:{port}/auth/callback")).map_err(|e| {
            SignInError::Endpoint {
                issuer: provider.issuer.clone(),
                reason: format!("redirect URI: {e}"),
            }
        })?;
    let client = provider.client.clone().set_redirect_uri(redirect);

    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    // `openid` is added by the crate; `email` makes Sigstore's Dex include the address
    // Fulcio binds.
    let (url, state, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".to_string()))
        .set_pkce_challenge(challenge)
        .url();
    let url = url.to_string();
    let opened = options.open_browser && open::that_detached(&url).is_ok();
    prompt.authorization_url(&url, opened);

    let code = tokio::time::timeout(options.timeout, receive_code(&listener, state.secret()))
        .await
        .map_err(|_| SignInError::TimedOut {
            seconds: options.timeout.as_secs(),
        })??;
    drop(listener);

    let token_error = |reason: String| SignInError::Token {
        issuer: provider.issuer.clone(),
        reason,
    };
    let response = client
        .exchange_code(AuthorizationCode::new(code.expose().to_string()))
        .map_err(|e| token_error(crate::error::chain(&e)))?
        .set_pkce_verifier(verifier)
        .request_async(http_client)
        .await
        .map_err(|e| token_error(crate::error::chain(&e)))?;
    // Only the ID token goes on (to Fulcio); the access token is not used.
    let id_token = response.id_token().ok_or_else(|| SignInError::NoIdToken {
        issuer: provider.issuer.clone(),
    })?;
    id_token::verify(provider, id_token, ExpectedNonce::Exactly(&nonce))
}
