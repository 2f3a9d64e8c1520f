//! Which interactive flow runs: the browser flow on a terminal (or with `--no-browser`, the
//! URL then followed by someone or something else), the device flow without a terminal
//! when the issuer offers one, else a clear error.

use super::browser::browser_flow;
use super::device::device_flow;
use super::error::SignInError;
use super::oidc_http::OidcHttpClient;
use super::options::{SignInOptions, SignInPrompt};
use super::provider::discover;
use crate::signing::secret::Secret;
use crate::signing::token_source::TokenSource;
use std::time::Duration;

/// Bound of one request of the sign-in (discovery, JWKS, token, device authorization).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Signs in at `options.issuer` with the flow that fits; returns the ID token, verified
/// (see `id_token.rs`), and which flow produced it.
pub(crate) async fn sign_in(
    options: &SignInOptions,
    prompt: &dyn SignInPrompt,
) -> Result<(Secret, TokenSource), SignInError> {
    let http_client = OidcHttpClient::new(REQUEST_TIMEOUT).map_err(SignInError::HttpClient)?;
    let provider = discover(&http_client, options).await?;
    let issuer = options.issuer.clone();
    if !options.terminal {
        if let Some(endpoint) = provider.device_endpoint.clone() {
            let jwt = device_flow(&http_client, &provider, endpoint, options, prompt).await?;
            return Ok((jwt, TokenSource::Device { issuer }));
        }
        if options.open_browser {
            return Err(SignInError::NoInteractiveFlow { issuer });
        }
    }
    let jwt = browser_flow(&http_client, &provider, options, prompt).await?;
    Ok((jwt, TokenSource::Browser { issuer }))
}
