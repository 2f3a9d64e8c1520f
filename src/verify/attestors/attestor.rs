//! Attestors: who may sign. A signature set is accepted when one attestor verifies it.
//!
//! * [`Attestor::Key`]: a trusted public key. A set without a certificate is checked with
//!   the key; when it also carries a Rekor bundle, the bundle must verify against the
//!   key's trust root too (a bundle that is present is never ignored).
//! * [`Attestor::Keyless`]: a Fulcio certificate verified against a trust root
//!   ([`verify_certificate_set`](super::verify_certificate_set)), then judged by an
//!   [`IdentityPolicy`].
//!
//! * [`Attestor::Certificate`]: a pinned signing certificate and/or a CA chain from the
//!   policy's own PKI ([`CertificateAttestor`]), checked at the Rekor integrated time or,
//!   without a bundle, at the verifier's current time.
//!
//! A set of the other kind is refused with a reason, never passed: a key attestor does not
//! accept certificate sets, a keyless attestor does not accept sets without a certificate.

use super::failure::CheckFailure;
use super::identity::IdentityPolicy;
use crate::annotations::SignatureSet;
use crate::trust::TrustRoot;
use crate::verify::sigstore::adapter::verify_signature;
use crate::verify::sigstore::certificate::CertificateAttestor;
use crate::verify::sigstore::error::SigstoreError;
use crate::verify::sigstore::key_bundle::verify_key_set_with_bundle;
use crate::verify::sigstore::keyless::{leaf_issuer_name, verify_certificate_set};
use crate::verify::sigstore::signer::SignerInfo;
use p256::ecdsa::{DerSignature, VerifyingKey};
use p256::pkcs8::EncodePublicKey as _;
use std::sync::Arc;

/// A trusted public key.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// How the user named the key (usually its file path).
    pub name: String,
    pub key: VerifyingKey,
    /// Hex SHA-256 of the key's SPKI DER.
    pub fingerprint: String,
    /// Trust root that checks the Rekor bundle of key-signed sets that carry one.
    /// Without it such sets are refused (the bundle cannot be checked).
    pub trust_root: Option<Arc<TrustRoot>>,
}

impl TrustedKey {
    pub fn new(name: impl Into<String>, key: VerifyingKey) -> Self {
        let fingerprint = crate::keys::public_key_fingerprint(&key);
        TrustedKey {
            name: name.into(),
            key,
            fingerprint,
            trust_root: None,
        }
    }

    /// Loads a `cosign.pub`-style PEM public key.
    pub fn from_pem(name: impl Into<String>, pem: &str) -> Result<Self, crate::keys::KeyError> {
        let key = crate::keys::parse_public_key_pem(pem)?;
        Ok(Self::new(name, key))
    }

    /// Checks Rekor bundles on key-signed sets against `trust_root`.
    pub fn with_trust_root(mut self, trust_root: Arc<TrustRoot>) -> Self {
        self.trust_root = Some(trust_root);
        self
    }

    pub(super) fn check(
        &self,
        message: &[u8],
        set: &SignatureSet,
    ) -> Result<SignerInfo, CheckFailure> {
        if set.certificate_pem.is_some() {
            return Err(CheckFailure::KeylessSetForKey);
        }
        // Strict DER first, so a malformed signature is named as such.
        DerSignature::from_bytes(&set.signature).map_err(|_| CheckFailure::MalformedSignature)?;
        // The key as SubjectPublicKeyInfo, derived from `key` at each check (the field is
        // public: a cached copy could go stale).
        let spki = self
            .key
            .to_public_key_der()
            .map_err(|_| CheckFailure::KeyMismatch)?;
        // ECDSA P-256 / SHA-256 through the sigstore adapter (aws-lc-rs, about 4x faster
        // than the pure-Rust curve). High-S signatures are accepted: Go's crypto/ecdsa
        // (cosign, kubectl-sigstore) does not normalise S, so half of all upstream
        // signatures are high-S. Malleability cannot forge a fresher signature: `--max-age`
        // uses the signed signing time, not the log time of whatever entry a twin was
        // uploaded as (docs/design.md).
        verify_signature(spki.as_bytes(), message, &set.signature)
            .map_err(|_| CheckFailure::KeyMismatch)?;
        let transparency_log = match (&set.bundle, &self.trust_root) {
            (None, _) => None,
            (Some(_), None) => return Err(CheckFailure::BundleWithoutTrustRoot),
            (Some(_), Some(trust)) => Some(
                verify_key_set_with_bundle(trust, message, set, spki.as_bytes())
                    .map_err(CheckFailure::Sigstore)?,
            ),
        };
        Ok(SignerInfo::Key {
            name: self.name.clone(),
            fingerprint: self.fingerprint.clone(),
            transparency_log,
        })
    }
}

/// Keyless signers: certificates from the trust root's Fulcio, for identities the policy
/// allows.
#[derive(Debug, Clone)]
pub struct KeylessAttestor {
    pub trust: Arc<TrustRoot>,
    pub identity: IdentityPolicy,
}

impl KeylessAttestor {
    pub fn new(trust: Arc<TrustRoot>, identity: IdentityPolicy) -> Self {
        KeylessAttestor { trust, identity }
    }

    pub(super) fn check(
        &self,
        message: &[u8],
        set: &SignatureSet,
    ) -> Result<SignerInfo, CheckFailure> {
        let evidence = verify_certificate_set(&self.trust, message, set)
            .map_err(|e| CheckFailure::Sigstore(self.explain_policy_roots(e, set)))?;
        self.identity
            .matches(&evidence)
            .map_err(CheckFailure::Identity)?;
        Ok(SignerInfo::from_evidence(evidence))
    }
}

impl KeylessAttestor {
    /// A chain that does not reach a trust root narrowed by the policy's `keyless.roots`
    /// says which CA issued the certificate, which roots the entry names, and that Kyverno
    /// ignores the field (a policy copied from Kyverno with a pasted root "works" there).
    fn explain_policy_roots(&self, e: SigstoreError, set: &SignatureSet) -> SigstoreError {
        match (e, self.trust.policy_roots()) {
            (SigstoreError::UntrustedCertificate(detail), Some(named)) => {
                let issuer = leaf_issuer_name(set).unwrap_or_else(|| "an unreadable issuer".into());
                SigstoreError::UntrustedCertificate(format!(
                    "the certificate was issued by {issuer}, and this entry's keyless.roots \
                     narrows the trust root to {named}, which that CA does not chain to; \
                     Kyverno ignores keyless.roots for manifests \
                     (docs/compatibility.md#keyless-roots), so a policy that admits it there \
                     is refused here: name the root that issued the signer's chain, or leave \
                     roots out ({detail})"
                ))
            }
            (e, _) => e,
        }
    }
}

/// One acceptable signer.
#[derive(Debug, Clone)]
pub enum Attestor {
    Key(TrustedKey),
    Keyless(KeylessAttestor),
    Certificate(CertificateAttestor),
}

impl Attestor {
    pub fn describe(&self) -> String {
        match self {
            Attestor::Key(k) => format!("key {}", k.name),
            Attestor::Keyless(k) => format!("keyless identity [{}]", k.identity),
            Attestor::Certificate(c) => c.describe(),
        }
    }

    /// Checks one signature set over `message` now (the system clock); on success says who
    /// signed. See [`check_at`](Self::check_at).
    pub fn check(&self, message: &[u8], set: &SignatureSet) -> Result<SignerInfo, CheckFailure> {
        self.check_at(message, set, jiff::Timestamp::now())
    }

    /// Checks one signature set over `message`; `now` is the time certificate attestors
    /// check sets without a Rekor bundle at (the [`Verifier`](crate::verify::Verifier)'s clock).
    /// Keys need no time, keyless certificates are always checked at the integrated time.
    pub fn check_at(
        &self,
        message: &[u8],
        set: &SignatureSet,
        now: jiff::Timestamp,
    ) -> Result<SignerInfo, CheckFailure> {
        match self {
            Attestor::Key(k) => k.check(message, set),
            Attestor::Keyless(k) => k.check(message, set),
            Attestor::Certificate(c) => c
                .check_at(message, set, now)
                .map_err(CheckFailure::Certificate),
        }
    }
}
