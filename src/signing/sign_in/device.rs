//! The device flow (RFC 8628), for sign-ins without a terminal: the device authorization
//! request, the user code shown to the person, and the token endpoint polled by
//! `openidconnect` (`authorization_pending` keeps the interval, `slow_down` adds 5 s,
//! connection failures back off up to 10 s). mansign bounds it: the whole flow ends at the
//! sign-in timeout (or the device code's lifetime, if shorter), an issuer's interval longer
//! than that timeout is refused up front, and no single sleep outlasts the deadline.

use super::error::SignInError;
use super::id_token::{self, ExpectedNonce};
use super::oidc_http::OidcHttpClient;
use super::options::{SignInOptions, SignInPrompt};
use super::provider::Provider;
use crate::signing::secret::Secret;
use openidconnect::core::{CoreDeviceAuthorizationResponse, CoreTokenResponse};
use openidconnect::{
    DeviceAuthorizationUrl, DeviceCodeErrorResponseType, RequestTokenError, Scope,
    TokenResponse as _,
};
use std::time::Duration;

/// Signs in with a device code; returns the verified ID token.
pub(super) async fn device_flow(
    http_client: &OidcHttpClient,
    provider: &Provider,
    endpoint: DeviceAuthorizationUrl,
    options: &SignInOptions,
    prompt: &dyn SignInPrompt,
) -> Result<Secret, SignInError> {
    let device_error = |reason: String| SignInError::Device {
        issuer: provider.issuer.clone(),
        reason,
    };
    let client = provider
        .client
        .clone()
        .set_device_authorization_url(endpoint);
    let details: CoreDeviceAuthorizationResponse = client
        .exchange_device_code()
        .add_scope(Scope::new("openid".to_string()))
        .add_scope(Scope::new("email".to_string()))
        .request_async(http_client)
        .await
        .map_err(|e| device_error(crate::error::chain(&e)))?;
    // The issuer's numbers are input: bounded before they drive a sleep.
    let lifetime = details.expires_in().min(options.timeout);
    if details.interval() > options.timeout {
        return Err(SignInError::DeviceInterval {
            issuer: provider.issuer.clone(),
            interval_seconds: details.interval().as_secs(),
            timeout_seconds: options.timeout.as_secs(),
        });
    }
    prompt.device_code(
        details.verification_uri().as_str(),
        details.user_code().secret(),
        details
            .verification_uri_complete()
            .map(|c| c.secret().as_str()),
    );

    let deadline = tokio::time::Instant::now() + lifetime;
    // Never sleep past the deadline (a `slow_down` grows the interval by 5 s each time).
    let sleep = move |interval: Duration| {
        tokio::time::sleep_until(
            tokio::time::Instant::now()
                .checked_add(interval)
                .map_or(deadline, |at| at.min(deadline)),
        )
    };
    let polling = client
        .exchange_device_access_token(&details)
        .map_err(|e| device_error(crate::error::chain(&e)))?
        .request_async(http_client, sleep, Some(lifetime));
    let response: CoreTokenResponse = match tokio::time::timeout(lifetime, polling).await {
        Err(_) => return Err(SignInError::DeviceExpired),
        Ok(Ok(response)) => response,
        Ok(Err(RequestTokenError::ServerResponse(e))) => {
            return Err(match e.error() {
                DeviceCodeErrorResponseType::AccessDenied => SignInError::DeviceDenied,
                DeviceCodeErrorResponseType::ExpiredToken => SignInError::DeviceExpired,
                _ => SignInError::Token {
                    issuer: provider.issuer.clone(),
                    reason: crate::error::chain(&RequestTokenError::<
                        super::oidc_http::OidcHttpError,
                        _,
                    >::ServerResponse(e)),
                },
            });
        }
        Ok(Err(e)) => {
            return Err(SignInError::Token {
                issuer: provider.issuer.clone(),
                reason: crate::error::chain(&e),
            });
        }
    };
    let id_token = response.id_token().ok_or_else(|| SignInError::NoIdToken {
        issuer: provider.issuer.clone(),
    })?;
    id_token::verify(provider, id_token, ExpectedNonce::None)
}
