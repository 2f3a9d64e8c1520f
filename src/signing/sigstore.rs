//! The adapter over the sigstore crates for signing: the only file of `signing/` that names
//! `sigstore-crypto`, `sigstore-types`, `sigstore-rekor` or `sigstore-oidc`. The other files
//! speak bytes, strings and the small types below, so a version bump of those crates touches
//! this file (and `verify/sigstore.rs`, `trust/`, `conformance/`) only.
//!
//! What it provides, all without network access:
//!
//! * [`EphemeralKey`]: the P-256 key pair a keyless run signs with, and its Fulcio proof of
//!   possession;
//! * [`certificate_facts`]: the SAN, OIDC issuer, expiry and public key of a certificate;
//! * [`IdentityToken`]: the claims of an OIDC identity token (read, not verified) and the
//!   ambient CI detection of `sigstore-oidc`;
//! * [`RekorLogEntry`]: a Rekor v1 entry as Rekor returned it;
//! * [`message_bundle_json`]: a Sigstore bundle v0.3 for a message signature and its entry
//!   (what `--bundle-out` writes).
//!
//! The HTTP requests to Fulcio and Rekor are mansign's own (`fulcio.rs`, `rekor_upload.rs`):
//! the crates' clients drop the response headers (no `Retry-After`) and read bodies without
//! a bound.

use crate::verify::sigstore::adapter::message_signature_content;
use sigstore_crypto::KeyPair;
use sigstore_rekor::LogEntry;
use sigstore_types::bundle::{
    CertificateContent, PublicKeyIdentifier, VerificationMaterial, VerificationMaterialContent,
};
use sigstore_types::{Bundle, DerCertificate, EntryUuid, KindVersion, MediaType};
use std::collections::HashMap;

/// A failure inside the sigstore crates, with their explanation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SigstoreFailure(String);

fn failure(e: impl std::fmt::Display) -> SigstoreFailure {
    SigstoreFailure(e.to_string())
}

/// The ephemeral P-256 key of one keyless run. It lives in memory only.
pub(crate) struct EphemeralKey(KeyPair);

impl EphemeralKey {
    pub fn generate() -> Result<Self, SigstoreFailure> {
        KeyPair::generate_ecdsa_p256()
            .map(EphemeralKey)
            .map_err(failure)
    }

    /// ECDSA P-256 over SHA-256(`message`), DER.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SigstoreFailure> {
        let der = self
            .0
            .sign(message)
            .map(|s| s.into_bytes())
            .map_err(failure)?;
        Ok(low_s(der))
    }

    /// The public key, SubjectPublicKeyInfo DER.
    pub fn public_key_der(&self) -> Result<Vec<u8>, SigstoreFailure> {
        self.0
            .public_key_der()
            .map(|k| k.as_bytes().to_vec())
            .map_err(failure)
    }

    /// The public key, PEM (what Fulcio's `publicKeyRequest` carries).
    pub fn public_key_pem(&self) -> Result<String, SigstoreFailure> {
        self.0.public_key_der().map(|k| k.to_pem()).map_err(failure)
    }
}

impl std::fmt::Debug for EphemeralKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EphemeralKey(<P-256>)")
    }
}

/// What a (Fulcio) certificate states, read without judging it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertificateFacts {
    /// The SAN (email or URI), if any.
    pub identity: Option<String>,
    /// The OIDC issuer extension.
    pub issuer: Option<String>,
    pub not_before: jiff::Timestamp,
    pub not_after: jiff::Timestamp,
    /// SubjectPublicKeyInfo DER.
    pub public_key_der: Vec<u8>,
}

/// Reads the facts of a DER certificate.
pub(crate) fn certificate_facts(der: &[u8]) -> Result<CertificateFacts, SigstoreFailure> {
    let info = sigstore_crypto::parse_certificate_info(&DerCertificate::new(der.to_vec()))
        .map_err(failure)?;
    Ok(CertificateFacts {
        identity: info.identity.map(|san| san.as_str().to_string()),
        issuer: info.issuer,
        not_before: info.not_before,
        not_after: info.not_after,
        public_key_der: info.public_key.as_bytes().to_vec(),
    })
}

/// An OIDC identity token and its claims, read without checking its signature (Fulcio does
/// that). The token text is wiped on drop and never shown by `Debug`.
#[derive(Clone)]
pub(crate) struct IdentityToken(sigstore_oidc::IdentityToken);

impl IdentityToken {
    /// Parses a compact JWT. The error never repeats the token.
    pub fn parse(jwt: &str) -> Result<Self, SigstoreFailure> {
        sigstore_oidc::IdentityToken::from_jwt(jwt)
            .map(IdentityToken)
            .map_err(failure)
    }

    /// The token itself, for Fulcio.
    pub fn jwt(&self) -> &str {
        self.0.expose_secret()
    }

    pub fn issuer(&self) -> &str {
        self.0.issuer()
    }

    pub fn subject(&self) -> &str {
        self.0.subject()
    }

    pub fn email(&self) -> Option<&str> {
        self.0.email()
    }

    pub fn expiration(&self) -> jiff::Timestamp {
        self.0.expiration()
    }

    /// Every claim of the token (its JWT payload, read without checking the signature), for
    /// the claims the typed view does not name (CI claims, `federated_claims`); `Null` if the
    /// payload cannot be read again (it was read once by [`IdentityToken::parse`]).
    pub fn claims_json(&self) -> serde_json::Value {
        use base64::Engine as _;
        self.jwt()
            .split('.')
            .nth(1)
            .and_then(|payload| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(payload.trim_end_matches('='))
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(serde_json::Value::Null)
    }

    /// What Fulcio expects signed as proof of possession: the email claim if there is
    /// one, else the subject.
    pub fn proof_of_possession_subject(&self) -> &str {
        self.0.identity()
    }

    pub fn audience_contains(&self, audience: &str) -> bool {
        self.0.claims().aud.contains(audience)
    }

    /// The `aud` claim as JSON, for messages (`"x"`, `["x","y"]`, or `no audience`).
    pub fn audience_text(&self) -> String {
        match serde_json::to_value(&self.0.claims().aud) {
            Ok(serde_json::Value::Null) | Err(_) => "no audience".to_string(),
            Ok(v) => v.to_string(),
        }
    }
}

impl std::fmt::Debug for IdentityToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityToken")
            .field("iss", &self.issuer())
            .field("sub", &self.subject())
            .finish_non_exhaustive()
    }
}

/// A token from another CI system's ambient credentials (GitLab, Buildkite, CircleCI),
/// through `sigstore-oidc` (which reads the process environment itself). The JWT, if any.
pub(crate) async fn detect_ambient_ci_token() -> Result<Option<String>, SigstoreFailure> {
    match sigstore_oidc::IdentityToken::detect_ambient().await {
        Ok(Some(t)) => Ok(Some(t.expose_secret().to_string())),
        Ok(None) => Ok(None),
        Err(e) => Err(failure(e)),
    }
}

/// A Rekor v1 log entry as Rekor returned it.
#[derive(Debug, Clone)]
pub(crate) struct RekorLogEntry(LogEntry);

impl RekorLogEntry {
    /// Rekor v1's answer to an upload or a lookup: `{"<uuid>": entry}` with exactly one
    /// entry.
    pub fn parse_answer(json: &[u8]) -> Result<Self, SigstoreFailure> {
        let map: HashMap<String, LogEntry> = serde_json::from_slice(json).map_err(failure)?;
        if map.len() != 1 {
            return Err(SigstoreFailure(format!(
                "{} entries instead of one",
                map.len()
            )));
        }
        let Some((uuid, mut entry)) = map.into_iter().next() else {
            return Err(SigstoreFailure("no entry".to_string()));
        };
        entry.uuid = EntryUuid::new(uuid);
        Ok(RekorLogEntry(entry))
    }

    /// One entry object (without the uuid map), as in a test fixture.
    #[cfg(test)]
    pub fn parse_entry(json: &[u8]) -> Result<Self, SigstoreFailure> {
        serde_json::from_slice(json)
            .map(RekorLogEntry)
            .map_err(failure)
    }

    /// The canonicalized entry body (JSON bytes).
    pub fn body(&self) -> &[u8] {
        self.0.body.as_bytes()
    }

    pub fn body_base64(&self) -> String {
        self.0.body.to_base64()
    }

    pub fn integrated_time(&self) -> Option<jiff::Timestamp> {
        self.0.integrated_time
    }

    pub fn log_index(&self) -> i64 {
        self.0.log_index.as_i64()
    }

    /// Hex SHA-256 of the log's public key.
    pub fn log_id_hex(&self) -> &str {
        self.0.log_id.as_str()
    }

    /// The signed entry timestamp (SET), base64, if Rekor returned one.
    pub fn signed_entry_timestamp_base64(&self) -> Option<String> {
        self.0
            .verification
            .as_ref()
            .and_then(|v| v.signed_entry_timestamp.as_ref())
            .map(|set| set.to_base64())
    }
}

/// The verification material of a Sigstore bundle.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BundleMaterial<'a> {
    /// Keyless: the Fulcio leaf certificate, DER (v0.3 carries the leaf alone).
    Certificate(&'a [u8]),
    /// Key-based: the key is supplied out of band; the hint stays empty, as cosign does.
    PublicKey,
}

/// A Sigstore bundle v0.3 (protobuf-specs JSON) for a message signature and its Rekor v1
/// `hashedrekord` entry, inclusion proof and checkpoint included: what sigstore-python
/// `verify identity --bundle` and cosign `verify-blob --bundle` read, with the message as
/// the artifact.
pub(crate) fn message_bundle_json(
    material: BundleMaterial<'_>,
    message: &[u8],
    signature: &[u8],
    entry: &RekorLogEntry,
) -> Result<String, SigstoreFailure> {
    let tlog = entry
        .0
        .to_bundle_entry(KindVersion::HashedRekordV001)
        .map_err(failure)?;
    let content = match material {
        BundleMaterial::Certificate(leaf) => VerificationMaterialContent::Certificate(
            CertificateContent::new(DerCertificate::new(leaf.to_vec())),
        ),
        BundleMaterial::PublicKey => {
            VerificationMaterialContent::PublicKey(PublicKeyIdentifier::new(""))
        }
    };
    Bundle::new(
        MediaType::Bundle0_3,
        VerificationMaterial::new(content).with_tlog_entries(vec![tlog]),
        message_signature_content(signature, message),
    )
    .to_json_pretty()
    .map_err(failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    #[test]
    fn the_ephemeral_key_signs_verifiably_and_exports_its_public_key() {
        use p256::ecdsa::signature::Verifier as _;
        use p256::pkcs8::DecodePublicKey as _;
        let key = EphemeralKey::generate().unwrap();
        let sig = key.sign(b"M").unwrap();
        let public =
            p256::ecdsa::VerifyingKey::from_public_key_der(&key.public_key_der().unwrap()).unwrap();
        let sig = p256::ecdsa::DerSignature::from_bytes(&sig).unwrap();
        public.verify(b"M", &sig).unwrap();
        assert!(
            key.public_key_pem()
                .unwrap()
                .starts_with("-----BEGIN PUBLIC KEY-----")
        );
        assert!(!format!("{key:?}").contains("BEGIN"));
    }

    #[test]
    fn the_identity_token_reads_claims_and_hides_the_token() {
        let jwt = format!(
            "{}.{}.c2ln",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256"}"#),
            URL_SAFE_NO_PAD.encode(
                serde_json::json!({"iss":"https://i","sub":"s","aud":["a","sigstore"],"exp":4000000000u64})
                    .to_string()
            )
        );
        let t = IdentityToken::parse(&jwt).unwrap();
        assert_eq!(
            (t.issuer(), t.subject(), t.email()),
            ("https://i", "s", None)
        );
        assert_eq!(t.proof_of_possession_subject(), "s");
        assert!(t.audience_contains("sigstore") && !t.audience_contains("x"));
        assert_eq!(t.audience_text(), r#"["a","sigstore"]"#);
        assert_eq!(t.jwt(), jwt);
        assert!(!format!("{t:?}").contains(&jwt));
        let err = IdentityToken::parse("secret-not-a-jwt").unwrap_err();
        assert!(!err.to_string().contains("secret-not-a-jwt"), "{err}");
    }

    #[test]
    fn a_rekor_answer_holds_exactly_one_entry() {
        let entry = serde_json::json!({
            "body": STANDARD.encode("{}"),
            "integratedTime": 1_800_000_000,
            "logID": "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d",
            "logIndex": 42,
            "verification": {"signedEntryTimestamp": STANDARD.encode(b"set")},
        });
        let one = serde_json::json!({ "abc": entry }).to_string();
        let e = RekorLogEntry::parse_answer(one.as_bytes()).unwrap();
        assert_eq!(e.log_index(), 42);
        assert_eq!(e.body(), b"{}");
        assert_eq!(
            e.signed_entry_timestamp_base64(),
            Some(STANDARD.encode(b"set"))
        );
        assert_eq!(
            e.integrated_time().map(|t| t.as_second()),
            Some(1_800_000_000)
        );
        let two = serde_json::json!({ "a": entry, "b": entry }).to_string();
        assert!(RekorLogEntry::parse_answer(two.as_bytes()).is_err());
        assert!(RekorLogEntry::parse_answer(b"{}").is_err());
        assert!(RekorLogEntry::parse_answer(b"[]").is_err());
    }
}

/// The signature with S in the low half of the group order (aws-lc-rs does not normalise):
/// mansign never emits the malleable high-S twin of its own signatures. A DER it cannot read
/// (never, for a P-256 key) is returned unchanged.
fn low_s(der: Vec<u8>) -> Vec<u8> {
    match p256::ecdsa::Signature::from_der(&der) {
        Ok(sig) => match sig.normalize_s() {
            Some(low) => low.to_der().as_bytes().to_vec(),
            None => der,
        },
        Err(_) => der,
    }
}

#[cfg(test)]
mod low_s_tests {
    use super::*;
    use p256::elliptic_curve::scalar::IsHigh as _;

    #[test]
    fn ephemeral_signatures_are_low_s() {
        let key = EphemeralKey::generate().unwrap();
        for i in 0..64u32 {
            let der = key.sign(&i.to_be_bytes()).unwrap();
            let sig = p256::ecdsa::Signature::from_der(&der).unwrap();
            assert!(!bool::from(sig.s().is_high()));
        }
    }
}
