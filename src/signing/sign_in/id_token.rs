//! Verifying the ID token the issuer returned, with `openidconnect`, before it goes
//! anywhere: signature against the issuer's JWKS (only the algorithms the issuer
//! advertises; never `none`, never HMAC for a public client), `iss` = the issuer, `aud` =
//! the client id (another audience only with an `azp` naming us), `exp` in the future, and
//! the `nonce` of the browser flow's request.

use super::error::SignInError;
use super::provider::Provider;
use crate::signing::secret::Secret;
use openidconnect::Nonce;
use openidconnect::core::CoreIdToken;

/// Which nonce the ID token must carry.
pub(super) enum ExpectedNonce<'a> {
    /// The browser flow's: the token must carry exactly this one.
    Exactly(&'a Nonce),
    /// The device flow sends no nonce (RFC 8628 has none); a token may carry none.
    None,
}

/// Verifies `id_token` and returns it, compact-serialized.
pub(super) fn verify(
    provider: &Provider,
    id_token: &CoreIdToken,
    nonce: ExpectedNonce<'_>,
) -> Result<Secret, SignInError> {
    let verifier = provider.client.id_token_verifier();
    let verified = match nonce {
        ExpectedNonce::Exactly(nonce) => id_token.claims(&verifier, nonce).map(|_| ()),
        ExpectedNonce::None => id_token
            .claims(&verifier, |_: Option<&Nonce>| Ok(()))
            .map(|_| ()),
    };
    verified.map_err(|e| SignInError::IdToken {
        issuer: provider.issuer.clone(),
        reason: crate::error::chain(&e),
    })?;
    Ok(Secret::new(id_token.to_string()))
}
