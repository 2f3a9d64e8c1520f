//! The OIDC provider: its metadata by discovery (OpenID Connect Discovery 1.0 §4, through
//! `openidconnect`, which also fetches the JWKS the ID token is verified against), checked
//! endpoints, and the OAuth client of the sign-in.

use super::error::SignInError;
use super::oidc_http::OidcHttpClient;
use super::options::SignInOptions;
use crate::signing::http;
use openidconnect::core::{
    CoreAuthDisplay, CoreClaimName, CoreClaimType, CoreClient, CoreClientAuthMethod, CoreGrantType,
    CoreJsonWebKey, CoreJweContentEncryptionAlgorithm, CoreJweKeyManagementAlgorithm,
    CoreResponseMode, CoreResponseType, CoreSubjectIdentifierType,
};
use openidconnect::{
    AdditionalProviderMetadata, ClientId, DeviceAuthorizationUrl, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, ProviderMetadata,
};
use serde::{Deserialize, Serialize};

/// RFC 8628 §4: the device authorization endpoint, which core discovery does not model.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub(super) struct DeviceEndpoint {
    #[serde(default)]
    device_authorization_endpoint: Option<DeviceAuthorizationUrl>,
}

impl AdditionalProviderMetadata for DeviceEndpoint {}

type Metadata = ProviderMetadata<
    DeviceEndpoint,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

/// The OAuth client made from the provider metadata: authorization endpoint set, token
/// and user-info endpoints as discovered.
pub(super) type SignInClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// A discovered provider, ready for a flow.
pub(super) struct Provider {
    /// The issuer as given (also the `iss` every ID token must carry).
    pub issuer: String,
    pub client: SignInClient,
    /// RFC 8628 device authorization endpoint, if the issuer offers the device flow.
    pub device_endpoint: Option<DeviceAuthorizationUrl>,
}

/// Discovers `options.issuer`: metadata (the crate checks that it names the issuer it was
/// fetched for, or an attacker-controlled document could redirect the flow) and the JWKS.
/// Every endpoint that codes, verifiers or tokens travel to, and the JWKS, must be
/// `https://` (or on this machine).
pub(super) async fn discover(
    http_client: &OidcHttpClient,
    options: &SignInOptions,
) -> Result<Provider, SignInError> {
    let issuer = options.issuer.clone();
    if !http::may_carry_secrets(&issuer) {
        return Err(SignInError::InsecureEndpoint { url: issuer });
    }
    let issuer_url = IssuerUrl::new(issuer.clone()).map_err(|e| SignInError::IssuerUrl {
        issuer: issuer.clone(),
        reason: e.to_string(),
    })?;
    let metadata = Metadata::discover_async(issuer_url, http_client)
        .await
        .map_err(|e| SignInError::Discovery {
            issuer: issuer.clone(),
            reason: crate::error::chain(&e),
        })?;
    let device_endpoint = metadata
        .additional_metadata()
        .device_authorization_endpoint
        .clone();
    let endpoints = [
        Some(metadata.authorization_endpoint().url().as_str()),
        metadata.token_endpoint().map(|u| u.url().as_str()),
        Some(metadata.jwks_uri().url().as_str()),
        device_endpoint.as_ref().map(|u| u.url().as_str()),
    ];
    for endpoint in endpoints.into_iter().flatten() {
        if !http::may_carry_secrets(endpoint) {
            return Err(SignInError::InsecureEndpoint {
                url: endpoint.to_string(),
            });
        }
    }
    if metadata.token_endpoint().is_none() {
        return Err(SignInError::Endpoint {
            issuer,
            reason: "no token_endpoint".to_string(),
        });
    }
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(options.client_id.clone()),
        None,
    );
    Ok(Provider {
        issuer,
        client,
        device_endpoint,
    })
}
