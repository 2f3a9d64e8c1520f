//! Keyless verification of one signature set: the full Sigstore check, offline.
//!
//! A keyless set is the cosign triple kubectl-sigstore writes: a signature over M, the
//! short-lived Fulcio certificate (`certificate`) and cosign's `RekorBundle` (`bundle`:
//! the Rekor entry plus its Signed Entry Timestamp). [`verify_certificate_set`] proves, in
//! this order, and stops at the first failure:
//!
//! 1. the set has a certificate ([`KeylessError::NoCertificate`]) and a bundle
//!    ([`KeylessError::NoBundle`]); the certificate parses; the bundle is well formed and
//!    names a Rekor log the trust root lists ([`KeylessError::UnknownLog`]);
//! 2. the SET verifies with that log's key, valid at the integrated time; the integrated
//!    time is not in the future;
//! 3. the certificate chains to a Fulcio CA of the trust root that was valid at the
//!    integrated time, has the code-signing EKU, and was itself valid at that time;
//! 4. the embedded SCT verifies against the trust root's CT logs;
//! 5. the signature verifies over M with the certificate's key;
//! 6. the Rekor entry body describes this signature: same signature bytes, same
//!    certificate, hash = SHA-256(M) (CVE-2022-36056).
//!
//! `hashedrekord` 0.0.1 entries go through sigstore-verify: the triple becomes a Sigstore
//! bundle v0.1 whose only time evidence is the SET-backed integrated time (cosign
//! annotations carry no inclusion proof; the SET is the log's promise, as in cosign's own
//! offline bundle check). Legacy `rekord` entries (2021 kubectl-sigstore signatures) are
//! checked by [`legacy_rekord`](super::legacy_rekord), which documents its differences.
//!
//! Who signed is returned as [`SigstoreEvidence`]; whether that signer is acceptable is
//! the [`IdentityPolicy`](super::IdentityPolicy)'s decision, not this module's.
//! Upstream kubectl-sigstore and Kyverno check only the SET and the body (research
//! `kyverno-manifests.md` §2.10 F1); mansign always runs every step above.

use super::legacy_rekord;
use crate::annotations::{RekorBundle, SignatureSet};
use crate::trust::TrustRoot;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use sigstore_types::bundle::{
    InclusionPromise, MessageDigest, MessageSignature, PublicKeyIdentifier, SignatureContent,
    TransparencyLogEntry, VerificationMaterial, VerificationMaterialContent, X509Certificate,
};
use sigstore_types::{
    Bundle, CanonicalizedBody, DerCertificate, DerPublicKey, DigestBytes, HashAlgorithm,
    KindVersion, LogId, LogIndex, LogKeyId, MediaType, SignatureBytes, SignedTimestamp,
};
use std::fmt;

/// Why a keyless (or Rekor-backed keyed) signature set did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeylessError {
    #[error("signature set has no certificate: it is not a keyless signature")]
    NoCertificate,
    #[error(
        "signature set has a certificate but no Rekor bundle: without transparency-log \
         evidence there is no trusted signing time to check the short-lived certificate against"
    )]
    NoBundle,
    #[error("certificate annotation is not a usable X.509 certificate: {0}")]
    MalformedCertificate(String),
    #[error("certificate has no email or URI subject alternative name")]
    NoSubject,
    #[error("Rekor bundle is malformed: {0}")]
    MalformedBundle(String),
    #[error(
        "Rekor entry kind {kind} {version} is not supported (expected hashedrekord 0.0.1 or \
         rekord 0.0.1)"
    )]
    UnsupportedEntry { kind: String, version: String },
    #[error("Rekor log {log_id} is not in the trust root ({trust_root})")]
    UnknownLog { log_id: String, trust_root: String },
    #[error("signed entry timestamp does not verify: {0}")]
    SignedEntryTimestamp(String),
    #[error("integrated time is not acceptable: {0}")]
    IntegratedTime(String),
    #[error("certificate does not chain to a trusted Fulcio root: {0}")]
    UntrustedCertificate(String),
    #[error("certificate not valid at integrated time {time}: {detail}")]
    CertificateNotValidAtIntegratedTime { time: String, detail: String },
    #[error("signed certificate timestamp does not verify: {0}")]
    Sct(String),
    #[error("signature does not verify over the message: {0}")]
    BadSignature(String),
    #[error("Rekor entry does not describe this signature: {0}")]
    EntryMismatch(String),
    #[error("verification failed: {0}")]
    Other(String),
}

/// The SAN identity of a Fulcio certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum CertificateSubject {
    Email(String),
    Uri(String),
}

impl CertificateSubject {
    pub fn as_str(&self) -> &str {
        match self {
            CertificateSubject::Email(v) | CertificateSubject::Uri(v) => v,
        }
    }
}

impl fmt::Display for CertificateSubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Fulcio CI claims of a certificate (extensions under `1.3.6.1.4.1.57264.1`), each
/// as the certificate states it. Only set for certificates issued to CI workloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowClaims {
    /// `.1.2` (deprecated GitHub) event that triggered the workflow, e.g. `push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_trigger: Option<String>,
    /// `.1.3` (deprecated GitHub) commit SHA the workflow ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_sha: Option<String>,
    /// `.1.4` (deprecated GitHub, no successor) workflow display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_name: Option<String>,
    /// `.1.5` (deprecated GitHub) repository as `owner/name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_repository: Option<String>,
    /// `.1.6` (deprecated GitHub) ref, e.g. `refs/heads/main`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_workflow_ref: Option<String>,
    /// `.1.9` build signer URI (the workflow file at its ref).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_signer_uri: Option<String>,
    /// `.1.10` build signer digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_signer_digest: Option<String>,
    /// `.1.11` runner environment, e.g. `github-hosted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_environment: Option<String>,
    /// `.1.12` source repository URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_uri: Option<String>,
    /// `.1.13` source repository digest (commit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_digest: Option<String>,
    /// `.1.14` source repository ref.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_ref: Option<String>,
    /// `.1.15` source repository identifier (immutable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_identifier: Option<String>,
    /// `.1.16` source repository owner URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_owner_uri: Option<String>,
    /// `.1.17` source repository owner identifier (immutable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_owner_identifier: Option<String>,
    /// `.1.18` build config URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_config_uri: Option<String>,
    /// `.1.19` build config digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_config_digest: Option<String>,
    /// `.1.20` build trigger, e.g. `push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_trigger: Option<String>,
    /// `.1.21` run invocation URI (the CI run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_invocation_uri: Option<String>,
    /// `.1.22` source repository visibility at signing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repository_visibility_at_signing: Option<String>,
}

impl WorkflowClaims {
    pub fn is_empty(&self) -> bool {
        *self == WorkflowClaims::default()
    }

    fn from_fulcio(c: &sigstore_crypto::FulcioCiClaims) -> Self {
        let g = &c.deprecated_github;
        WorkflowClaims {
            github_workflow_trigger: g.workflow_trigger.clone(),
            github_workflow_sha: g.workflow_sha.clone(),
            github_workflow_name: g.workflow_name.clone(),
            github_workflow_repository: g.workflow_repository.clone(),
            github_workflow_ref: g.workflow_ref.clone(),
            build_signer_uri: c.build_signer_uri.clone(),
            build_signer_digest: c.build_signer_digest.clone(),
            runner_environment: c.runner_environment.clone(),
            source_repository_uri: c.source_repository_uri.clone(),
            source_repository_digest: c.source_repository_digest.clone(),
            source_repository_ref: c.source_repository_ref.clone(),
            source_repository_identifier: c.source_repository_identifier.clone(),
            source_repository_owner_uri: c.source_repository_owner_uri.clone(),
            source_repository_owner_identifier: c.source_repository_owner_identifier.clone(),
            build_config_uri: c.build_config_uri.clone(),
            build_config_digest: c.build_config_digest.clone(),
            build_trigger: c.build_trigger.clone(),
            run_invocation_uri: c.run_invocation_uri.clone(),
            source_repository_visibility_at_signing: c
                .source_repository_visibility_at_signing
                .clone(),
        }
    }
}

/// The transparency-log entry a signature was verified against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RekorEvidence {
    /// Global log index of the entry.
    pub log_index: u64,
    /// Hex SHA-256 of the log's key (the log ID).
    pub log_id: String,
    /// When the log integrated the entry (Unix seconds), authenticated by the SET.
    #[serde(serialize_with = "serialize_unix_time")]
    pub integrated_time: i64,
}

impl RekorEvidence {
    /// The integrated time as RFC 3339 UTC (`2026-01-02T03:04:05Z`).
    pub fn integrated_time_rfc3339(&self) -> String {
        format_unix_time(self.integrated_time)
    }
}

/// Unix seconds as RFC 3339 UTC; the raw number if out of range.
pub fn format_unix_time(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| format!("@{seconds}"))
}

fn serialize_unix_time<S: serde::Serializer>(seconds: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_unix_time(*seconds))
}

/// Who signed a keyless signature set, as proven by verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SigstoreEvidence {
    /// The certificate's SAN (email or URI).
    pub subject: CertificateSubject,
    /// The OIDC issuer from Fulcio extension `.1.8`, else legacy `.1.1`. Certificates
    /// from 2021 carry neither.
    pub issuer: Option<String>,
    pub claims: WorkflowClaims,
    pub rekor: RekorEvidence,
}

/// A `RekorBundle` checked for shape: everything the SET covers, decoded.
#[derive(Debug)]
pub(super) struct RekorEntry {
    pub set: Vec<u8>,
    pub body: Vec<u8>,
    pub kind: String,
    pub api_version: String,
    pub integrated_time: i64,
    pub log_index: u64,
    pub log_id: [u8; 32],
}

impl RekorEntry {
    pub(super) fn parse(bundle: &RekorBundle) -> Result<Self, KeylessError> {
        let bad = |what: &str| KeylessError::MalformedBundle(what.to_string());
        let set = STANDARD
            .decode(bundle.signed_entry_timestamp.trim())
            .map_err(|_| bad("SignedEntryTimestamp is not base64"))?;
        let p = &bundle.payload;
        let body = STANDARD
            .decode(p.body.trim())
            .map_err(|_| bad("Payload.body is not base64"))?;
        let mut log_id = [0u8; 32];
        hex::decode_to_slice(&p.log_id, &mut log_id)
            .map_err(|_| bad("Payload.logID is not 64 hex digits"))?;
        let log_index =
            u64::try_from(p.log_index).map_err(|_| bad("Payload.logIndex is negative"))?;
        if p.integrated_time <= 0 {
            return Err(bad("Payload.integratedTime is not a positive Unix time"));
        }
        #[derive(serde::Deserialize)]
        struct KindHeader {
            kind: String,
            #[serde(rename = "apiVersion")]
            api_version: String,
        }
        let header: KindHeader = serde_json::from_slice(&body)
            .map_err(|e| KeylessError::MalformedBundle(format!("Payload.body: {e}")))?;
        Ok(RekorEntry {
            set,
            body,
            kind: header.kind,
            api_version: header.api_version,
            integrated_time: p.integrated_time,
            log_index,
            log_id,
        })
    }

    pub(super) fn log_id_hex(&self) -> String {
        hex::encode(self.log_id)
    }

    pub(super) fn integrated_timestamp(&self) -> Result<jiff::Timestamp, KeylessError> {
        jiff::Timestamp::from_second(self.integrated_time)
            .map_err(|_| KeylessError::MalformedBundle("integratedTime out of range".into()))
    }

    pub(super) fn evidence(&self) -> RekorEvidence {
        RekorEvidence {
            log_index: self.log_index,
            log_id: self.log_id_hex(),
            integrated_time: self.integrated_time,
        }
    }

    fn require_known_log(&self, trust: &TrustRoot) -> Result<(), KeylessError> {
        if trust.knows_rekor_log(&self.log_id) {
            Ok(())
        } else {
            Err(KeylessError::UnknownLog {
                log_id: self.log_id_hex(),
                trust_root: trust.origin().to_string(),
            })
        }
    }

    fn is(&self, kind: &str, version: &str) -> bool {
        self.kind == kind && self.api_version == version
    }

    fn unsupported(&self) -> KeylessError {
        KeylessError::UnsupportedEntry {
            kind: self.kind.clone(),
            version: self.api_version.clone(),
        }
    }
}

/// What signed: the certificate (keyless) or a trusted public key (keyed + Rekor).
pub(super) enum SigningMaterial<'a> {
    Certificate(&'a DerCertificate),
    PublicKey(&'a DerPublicKey),
}

/// Full keyless verification of one signature set over `message` (see the module docs
/// for the checks and their order). Does not judge the identity.
pub fn verify_certificate_set(
    trust: &TrustRoot,
    message: &[u8],
    set: &SignatureSet,
) -> Result<SigstoreEvidence, KeylessError> {
    let pem = set
        .certificate_pem
        .as_deref()
        .ok_or(KeylessError::NoCertificate)?;
    let bundle = set.bundle.as_ref().ok_or(KeylessError::NoBundle)?;
    let leaf = leaf_certificate(pem)?;
    let info = sigstore_crypto::parse_certificate_info(&leaf)
        .map_err(|e| KeylessError::MalformedCertificate(e.to_string()))?;
    let entry = RekorEntry::parse(bundle)?;
    entry.require_known_log(trust)?;
    if entry.is("hashedrekord", "0.0.1") {
        let bundle = sigstore_bundle_v01(
            &entry,
            SigningMaterial::Certificate(&leaf),
            &set.signature,
            message,
        );
        let policy = sigstore_verify::VerificationPolicy::any_identity();
        let result = trust
            .verifier()
            .verify(message, &bundle, &policy)
            .map_err(|e| map_sigstore_error(e, entry.integrated_time))?;
        // Belt and braces: the policy above asks for every check; refuse a result that
        // says one of them did not run.
        if !(result.certificate_verified() && result.sct_verified() && result.tlog_verified())
            || result.integrated_time().map(|t| t.as_second()) != Some(entry.integrated_time)
        {
            return Err(KeylessError::Other(
                "sigstore-verify skipped a required check".into(),
            ));
        }
    } else if entry.is("rekord", "0.0.1") {
        legacy_rekord::verify(
            trust,
            message,
            &set.signature,
            SigningMaterial::Certificate(&leaf),
            &entry,
        )?;
    } else {
        return Err(entry.unsupported());
    }
    let subject = match info.identity {
        Some(sigstore_crypto::SubjectAltName::Email(e)) => CertificateSubject::Email(e),
        Some(sigstore_crypto::SubjectAltName::Uri(u)) => CertificateSubject::Uri(u),
        _ => return Err(KeylessError::NoSubject),
    };
    Ok(SigstoreEvidence {
        subject,
        issuer: info.issuer,
        claims: WorkflowClaims::from_fulcio(&info.ci_claims),
        rekor: entry.evidence(),
    })
}

/// Checks the Rekor bundle of a key-signed set: the SET with the trust root's Rekor key
/// (selected by log ID, valid at the integrated time), the integrated time not in the
/// future, the signature over `message` with `public_key_der` (SPKI DER), and that the
/// entry body holds this key, this signature and SHA-256(`message`).
///
/// A set that carries a certificate is refused: the key path does not do keyless checks.
pub fn verify_key_set_with_bundle(
    trust: &TrustRoot,
    message: &[u8],
    set: &SignatureSet,
    public_key_der: &[u8],
) -> Result<RekorEvidence, KeylessError> {
    if set.certificate_pem.is_some() {
        return Err(KeylessError::EntryMismatch(
            "the set carries a certificate; it is a keyless signature, not a key signature".into(),
        ));
    }
    let bundle = set.bundle.as_ref().ok_or(KeylessError::NoBundle)?;
    let entry = RekorEntry::parse(bundle)?;
    entry.require_known_log(trust)?;
    let key = DerPublicKey::new(public_key_der.to_vec());
    if entry.is("hashedrekord", "0.0.1") {
        let bundle = sigstore_bundle_v01(
            &entry,
            SigningMaterial::PublicKey(&key),
            &set.signature,
            message,
        );
        let policy = sigstore_verify::PublicKeyVerificationPolicy::new(key);
        let result = trust
            .verifier()
            .verify(message, &bundle, &policy)
            .map_err(|e| map_sigstore_error(e, entry.integrated_time))?;
        if !result.tlog_verified()
            || result.integrated_time().map(|t| t.as_second()) != Some(entry.integrated_time)
        {
            return Err(KeylessError::Other(
                "sigstore-verify skipped a required check".into(),
            ));
        }
    } else if entry.is("rekord", "0.0.1") {
        legacy_rekord::verify(
            trust,
            message,
            &set.signature,
            SigningMaterial::PublicKey(&key),
            &entry,
        )?;
    } else {
        return Err(entry.unsupported());
    }
    Ok(entry.evidence())
}

/// The first certificate of the annotation's PEM. Intermediates are never taken from the
/// annotation: the chain is built from the trust root only.
fn leaf_certificate(pem_text: &str) -> Result<DerCertificate, KeylessError> {
    super::first_certificate_der(pem_text)
        .map(DerCertificate::new)
        .map_err(KeylessError::MalformedCertificate)
}

/// The cosign triple as a Sigstore bundle v0.1 (research `sigstore-rust-crates.md` §4.2):
/// one tlog entry with integrated time and inclusion promise (SET), no inclusion proof,
/// no RFC 3161 timestamp. The body is re-encoded from the decoded bytes, so the SET is
/// checked over exactly the body that is interpreted.
fn sigstore_bundle_v01(
    entry: &RekorEntry,
    material: SigningMaterial<'_>,
    signature: &[u8],
    message: &[u8],
) -> Bundle {
    let mut tlog = TransparencyLogEntry::new(
        // RekorEntry::parse bounds the index to the non-negative i64 range.
        LogIndex::new(entry.log_index).unwrap_or_default(),
        LogId::new(LogKeyId::new(entry.log_id.to_vec())),
        KindVersion::HashedRekordV001,
        CanonicalizedBody::new(entry.body.clone()),
    )
    .with_inclusion_promise(InclusionPromise::new(SignedTimestamp::new(
        entry.set.clone(),
    )));
    if let Ok(t) = jiff::Timestamp::from_second(entry.integrated_time) {
        tlog = tlog.with_integrated_time(t);
    }
    let content = match material {
        SigningMaterial::Certificate(cert) => VerificationMaterialContent::X509CertificateChain {
            certificates: vec![X509Certificate::new(cert.clone())],
        },
        SigningMaterial::PublicKey(_) => {
            VerificationMaterialContent::PublicKey(PublicKeyIdentifier::new(""))
        }
    };
    let material = VerificationMaterial::new(content).with_tlog_entries(vec![tlog]);
    let digest = sigstore_crypto::sha256(message);
    let signature = SignatureContent::MessageSignature(
        MessageSignature::new(SignatureBytes::new(signature.to_vec())).with_message_digest(
            MessageDigest::new(
                HashAlgorithm::Sha2256,
                DigestBytes::new(digest.as_slice().to_vec()),
            ),
        ),
    );
    Bundle::new(MediaType::Bundle0_1, material, signature)
}

/// sigstore-verify's categories, mapped onto our one-variant-per-reason errors.
/// `integrated_time` (Unix seconds) names the time a validity failure refers to.
fn map_sigstore_error(e: sigstore_verify::Error, integrated_time: i64) -> KeylessError {
    use sigstore_verify::{CertificateError as C, Error as E, TransparencyLogError as T};
    match e {
        // rustls-webpki reports a validity failure as a chain failure; name it.
        E::Certificate(C::ChainInvalid(d))
            if d.contains("CertExpired") || d.contains("CertNotValidYet") =>
        {
            KeylessError::CertificateNotValidAtIntegratedTime {
                time: format_unix_time(integrated_time),
                detail: d,
            }
        }
        E::Certificate(C::ChainInvalid(d) | C::Malformed(d)) => {
            KeylessError::UntrustedCertificate(d)
        }
        E::Certificate(C::NoValidAuthority { time }) => KeylessError::UntrustedCertificate(
            format!("no trusted Fulcio authority was valid at {time}"),
        ),
        E::Certificate(C::NotYetValid { time, not_before }) => {
            KeylessError::CertificateNotValidAtIntegratedTime {
                time: time.to_string(),
                detail: format!("not valid before {not_before}"),
            }
        }
        E::Certificate(C::Expired { time, not_after }) => {
            KeylessError::CertificateNotValidAtIntegratedTime {
                time: time.to_string(),
                detail: format!("expired at {not_after}"),
            }
        }
        E::Certificate(C::Sct(d)) => KeylessError::Sct(d),
        E::TransparencyLog(T::UnknownLog { log_id }) => KeylessError::UnknownLog {
            log_id,
            trust_root: "trust root".into(),
        },
        E::TransparencyLog(T::InclusionPromise(d)) => KeylessError::SignedEntryTimestamp(d),
        E::TransparencyLog(T::IntegratedTime(d)) => KeylessError::IntegratedTime(d),
        E::TransparencyLog(T::EntryMismatch(d)) | E::ArtifactMismatch(d) => {
            KeylessError::EntryMismatch(d)
        }
        E::TransparencyLog(T::MalformedEntry(d)) => KeylessError::MalformedBundle(d),
        E::SignatureInvalid(d) => KeylessError::BadSignature(d),
        other => KeylessError::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::RekorPayload;

    fn bundle(body: &str, log_id: &str, index: i64, time: i64) -> RekorBundle {
        RekorBundle {
            signed_entry_timestamp: STANDARD.encode(b"set"),
            payload: RekorPayload {
                body: body.to_string(),
                integrated_time: time,
                log_index: index,
                log_id: log_id.to_string(),
            },
        }
    }

    fn body(kind: &str) -> String {
        STANDARD.encode(format!(
            r#"{{"apiVersion":"0.0.1","kind":"{kind}","spec":{{}}}}"#
        ))
    }

    const LOG_ID: &str = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d";

    #[test]
    fn entry_reads_kind_and_version_from_body() {
        let e = RekorEntry::parse(&bundle(&body("rekord"), LOG_ID, 1, 2)).unwrap();
        assert!(e.is("rekord", "0.0.1"));
        assert_eq!(e.log_id_hex(), LOG_ID);
    }

    #[test]
    fn entry_rejects_short_log_id() {
        let err = RekorEntry::parse(&bundle(&body("rekord"), "c0d2", 1, 2)).unwrap_err();
        assert!(matches!(err, KeylessError::MalformedBundle(_)), "{err}");
    }

    #[test]
    fn entry_rejects_negative_log_index() {
        let err = RekorEntry::parse(&bundle(&body("rekord"), LOG_ID, -1, 2)).unwrap_err();
        assert!(matches!(err, KeylessError::MalformedBundle(_)), "{err}");
    }

    #[test]
    fn entry_rejects_body_that_is_not_json() {
        let err = RekorEntry::parse(&bundle(&STANDARD.encode("x"), LOG_ID, 1, 2)).unwrap_err();
        assert!(matches!(err, KeylessError::MalformedBundle(_)), "{err}");
    }

    #[test]
    fn set_without_certificate_is_not_keyless() {
        let trust = TrustRoot::public_good().unwrap();
        let set = SignatureSet {
            index: 0,
            signature: vec![1],
            certificate_pem: None,
            bundle: None,
        };
        assert_eq!(
            verify_certificate_set(&trust, b"m", &set),
            Err(KeylessError::NoCertificate)
        );
    }

    #[test]
    fn unsupported_entry_kind_is_named() {
        let trust = TrustRoot::public_good().unwrap();
        let set = SignatureSet {
            index: 0,
            signature: vec![1],
            certificate_pem: None,
            bundle: Some(bundle(&body("intoto"), LOG_ID, 1, 2)),
        };
        let err = verify_key_set_with_bundle(&trust, b"m", &set, &[]).unwrap_err();
        assert!(
            matches!(err, KeylessError::UnsupportedEntry { ref kind, .. } if kind == "intoto"),
            "{err}"
        );
    }

    #[test]
    fn unix_time_formats_as_rfc3339_utc() {
        assert_eq!(format_unix_time(1_767_323_045), "2026-01-02T03:04:05Z");
    }
}
