//! The adapter over the sigstore crates for verification: the only file of `verify/` that
//! names `sigstore-verify`, `sigstore-crypto` or `sigstore-types`. It turns mansign's
//! inputs (DER certificates and keys, decoded Rekor entries) into the crates' types, runs
//! their checks, and maps every failure onto [`SigstoreError`] with **one** mapper
//! ([`map_verify_error`]), which the conformance front end uses too, so an expired
//! certificate has the same name on every path.

use super::error::SigstoreError;
use super::evidence::{CertificateSubject, WorkflowClaims};
use super::rekor_entry::RekorEntry;
use crate::trust::{FulcioAuthorities, TrustRoot};
use rustls_pki_types::{CertificateDer, SignatureVerificationAlgorithm, TrustAnchor, UnixTime};
use sigstore_types::bundle::{
    InclusionPromise, MessageDigest, MessageSignature, PublicKeyIdentifier, SignatureContent,
    TransparencyLogEntry, VerificationMaterial, VerificationMaterialContent, X509Certificate,
};
use sigstore_types::{
    Bundle, CanonicalizedBody, DerCertificate, DerPublicKey, DigestBytes, HashAlgorithm,
    KindVersion, LogId, LogIndex, LogKeyId, MediaType, SignatureBytes, SignedTimestamp,
};

/// What made a signature: a certificate (keyless) or a trusted public key, as DER.
#[derive(Debug, Clone, Copy)]
pub(super) enum SigningMaterial<'a> {
    /// The Fulcio leaf certificate, DER.
    Certificate(&'a [u8]),
    /// A trusted public key, SubjectPublicKeyInfo DER.
    PublicKey(&'a [u8]),
}

/// What a certificate states, read without judging it.
#[derive(Debug, Clone)]
pub(super) struct CertificateFacts {
    /// The SAN (email or URI), if there is one.
    pub subject: Option<CertificateSubject>,
    /// The OIDC issuer extension (`.1.8`, else `.1.1`).
    pub issuer: Option<String>,
    pub claims: WorkflowClaims,
    /// The subject public key, SubjectPublicKeyInfo DER.
    pub public_key_der: Vec<u8>,
    /// [`crate::keys::spki_fingerprint`] of `public_key_der`.
    pub key_fingerprint: String,
}

/// Reads subject, issuer, CI claims and public key of a certificate.
pub(super) fn certificate_facts(der: &[u8]) -> Result<CertificateFacts, SigstoreError> {
    let info = sigstore_crypto::parse_certificate_info(&DerCertificate::new(der.to_vec()))
        .map_err(|e| SigstoreError::MalformedCertificate(e.to_string()))?;
    let subject = match info.identity {
        Some(sigstore_crypto::SubjectAltName::Email(e)) => Some(CertificateSubject::Email(e)),
        Some(sigstore_crypto::SubjectAltName::Uri(u)) => Some(CertificateSubject::Uri(u)),
        _ => None,
    };
    let public_key_der = info.public_key.as_bytes().to_vec();
    Ok(CertificateFacts {
        subject,
        issuer: info.issuer,
        claims: workflow_claims(&info.ci_claims),
        key_fingerprint: crate::keys::spki_fingerprint(&public_key_der),
        public_key_der,
    })
}

fn workflow_claims(c: &sigstore_crypto::FulcioCiClaims) -> WorkflowClaims {
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
        source_repository_visibility_at_signing: c.source_repository_visibility_at_signing.clone(),
    }
}

/// A certificate whose chain and SCT sigstore-verify checked at exactly one time, the
/// integrated time: what the trust root may remember once the whole set verified
/// ([`crate::trust::VouchedCertificate`]).
#[derive(Debug)]
pub(super) struct ChainVerified {
    /// The window in which every certificate of the path (leaf, intermediates, root) is
    /// valid ([`super::fulcio_chain::ChainValidity`]).
    pub not_before: jiff::Timestamp,
    pub not_after: jiff::Timestamp,
    /// The root's Fulcio authorities valid at that time.
    pub authorities: FulcioAuthorities,
}

/// Verifies a `hashedrekord` 0.0.1 entry and the signature it logs through sigstore-verify:
/// the cosign triple becomes a Sigstore bundle v0.1 whose only time evidence is the
/// SET-backed integrated time. With a certificate every check runs (chain at the integrated
/// time, SCT, SET, body consistency, signature) and any identity is accepted (the identity
/// policy judges afterwards); with a public key the SET, body and signature are checked
/// against that key. For a certificate, says what the check established about its chain
/// ([`ChainVerified`], `None` if the chain was not checked at exactly one time).
pub(super) fn verify_hashedrekord(
    trust: &TrustRoot,
    message: &[u8],
    signature: &[u8],
    material: SigningMaterial<'_>,
    entry: &RekorEntry,
) -> Result<Option<ChainVerified>, SigstoreError> {
    let bundle = bundle_v01(entry, material, signature, message);
    // For a manifest signature the artifact is M itself, logged by its hash: a hash that
    // is not SHA-256(M) means the log entry is about another signature.
    let map = |e| match map_verify_error(e, trust, Some(entry.integrated_time)) {
        SigstoreError::ArtifactMismatch(d) => SigstoreError::EntryMismatch(d),
        other => other,
    };
    let verifier = trust.verifier();
    let (result, chain) = match material {
        SigningMaterial::Certificate(leaf) => {
            verify_certificate_bundle(trust, message, leaf, &bundle, entry, map)?
        }
        SigningMaterial::PublicKey(spki) => {
            let policy =
                sigstore_verify::PublicKeyVerificationPolicy::new(DerPublicKey::new(spki.to_vec()));
            (
                verifier.verify(message, &bundle, &policy).map_err(map)?,
                None,
            )
        }
    };
    // The SET must have been verified, and the integrated time be the one it covers: for a
    // key, by sigstore-verify's log pass; for a certificate (whose policy skips the second,
    // duplicate pass, see `verify_certificate_bundle`), by the verified times, which for
    // these bundles can come only from the SET-checked entry.
    let set_checked = match material {
        SigningMaterial::PublicKey(_) => {
            result.tlog_verified()
                && result.integrated_time().map(|t| t.as_second()) == Some(entry.integrated_time)
        }
        SigningMaterial::Certificate(_) => result
            .verified_timestamps()
            .iter()
            .map(|t| t.as_second())
            .eq([entry.integrated_time]),
    };
    if !set_checked {
        return Err(SigstoreError::SkippedCheck(
            "the transparency log entry's SET must be verified, at the integrated time it covers",
        ));
    }
    Ok(chain)
}

/// The certificate path of [`verify_hashedrekord`]: every check, and what it established
/// about the chain, for the trust root to remember ([`super::hashedrekord`]).
fn verify_certificate_bundle(
    trust: &TrustRoot,
    message: &[u8],
    leaf: &[u8],
    bundle: &Bundle,
    entry: &RekorEntry,
    map: impl Fn(sigstore_verify::Error) -> SigstoreError,
) -> Result<(sigstore_verify::VerificationResult, Option<ChainVerified>), SigstoreError> {
    // The only verified time of a cosign triple is the SET-backed integrated time (no
    // RFC 3161 timestamps): the chain is checked at it.
    let time = jiff::Timestamp::from_second(entry.integrated_time).ok();
    let authorities = time.map(|t| trust.fulcio_authorities_at(t));
    // sigstore-verify 0.15.1 checks a v1 entry's SET twice: once to establish the verified
    // times (`determine_validation_times`, with the not-in-the-future check), once in its
    // log pass (`verify_tlog_entries`). For the bundles built here (v0.1, one
    // `hashedrekord` entry with a SET, no inclusion proof, no RFC 3161 timestamp) that
    // pass adds only the second SET check and the integrated time inside the
    // certificate's validity, which the certificate check at that same verified time
    // already requires. So it is skipped; the caller requires the verified times to be
    // exactly the integrated time (the proof that the SET was checked).
    // That argument holds only for that shape (and for sigstore-verify =0.15.1, pinned in
    // Cargo.toml): a bundle of any other shape is refused here, never verified without
    // the log pass (an inclusion proof or a second entry would go unchecked).
    if !is_set_only_v01(bundle) {
        return Err(SigstoreError::SkippedCheck(
            "the certificate path verifies only a v0.1 bundle of one hashedrekord entry with \
             a SET and an integrated time, no inclusion proof and no RFC 3161 timestamp",
        ));
    }
    let policy = sigstore_verify::VerificationPolicy::any_identity().skip_tlog_unsafe();
    let result = trust
        .verifier()
        .verify(message, bundle, &policy)
        .map_err(map)?;
    // Belt and braces: the policy above asks for every check; refuse a result that says
    // one of them did not run.
    if !(result.certificate_verified() && result.sct_verified()) {
        return Err(SigstoreError::SkippedCheck(
            "certificate chain and SCT must be verified",
        ));
    }
    // sigstore-verify never checks the validity of the CA certificates it takes as anchors
    // (intermediates included): every certificate of the path, the root too, must be
    // valid at the integrated time ([`super::fulcio_chain`]).
    let Some(t) = time else {
        return Err(SigstoreError::SkippedCheck(
            "the certificate chain must be checked at the integrated time",
        ));
    };
    let validity = super::fulcio_chain::check(webpki_algorithms(), trust, leaf, &[], t)?;
    // The certificate may be remembered only when the chain was checked at exactly the one
    // time the authorities were computed for; it is vouched for only while the whole path
    // is valid.
    let chain = match (authorities, result.certificate()) {
        (Some(authorities), Some(_)) if result.verified_timestamps() == [t] => {
            Some(ChainVerified {
                not_before: validity.not_before,
                not_after: validity.not_after,
                authorities,
            })
        }
        _ => None,
    };
    Ok((result, chain))
}

/// Whether `bundle` has exactly the shape [`bundle_v01`] builds, the one for which
/// sigstore-verify's log pass repeats checks already made (see
/// [`verify_certificate_bundle`]): v0.1, one `hashedrekord` 0.0.1 entry with a SET and an
/// integrated time, no inclusion proof, no RFC 3161 timestamp.
fn is_set_only_v01(bundle: &Bundle) -> bool {
    let material = &bundle.verification_material;
    bundle.media_type == MediaType::Bundle0_1
        && material
            .timestamp_verification_data
            .rfc3161_timestamps
            .is_empty()
        && matches!(material.tlog_entries.as_slice(), [entry]
            if entry.kind_version == KindVersion::HashedRekordV001
                && entry.inclusion_promise.is_some()
                && entry.integrated_time.is_some()
                && entry.inclusion_proof.is_none())
}

/// Checks an ECDSA (or other sigstore-supported) signature over `message` with a public key
/// (SubjectPublicKeyInfo DER), in the key's default signing scheme.
pub(in crate::verify) fn verify_signature(
    public_key_der: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), SigstoreError> {
    verify_in_scheme(public_key_der, message, signature, |a| {
        Ok(a.default_signing_scheme())
    })
}

/// Checks the signature over `message` of a `hashedrekord` entry mansign checks itself
/// ([`super::hashedrekord`]) in the scheme sigstore-verify uses for the bundles
/// [`verify_hashedrekord`] builds: the key's algorithm with SHA-256, the message digest
/// those bundles carry (for a P-384 key that is ECDSA P-384 with SHA-256, not the key's
/// default SHA-384), so a set is judged the same on both paths.
pub(super) fn verify_message_signature_sha256(
    public_key_der: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), SigstoreError> {
    verify_in_scheme(public_key_der, message, signature, |a| {
        a.resolve_signing_scheme(HashAlgorithm::Sha2256)
    })
}

/// A signature over `message` by a SubjectPublicKeyInfo key, in the scheme `scheme` picks
/// for the key's algorithm.
fn verify_in_scheme(
    public_key_der: &[u8],
    message: &[u8],
    signature: &[u8],
    scheme: impl FnOnce(
        sigstore_crypto::KeyAlgorithm,
    ) -> Result<sigstore_crypto::SigningScheme, sigstore_crypto::Error>,
) -> Result<(), SigstoreError> {
    let key = DerPublicKey::new(public_key_der.to_vec());
    let scheme = sigstore_crypto::KeyAlgorithm::from_spki(&key)
        .and_then(scheme)
        .map_err(|e| SigstoreError::BadSignature(format!("unsupported key: {e}")))?;
    sigstore_crypto::verify_signature(
        &key,
        message,
        &SignatureBytes::new(signature.to_vec()),
        scheme,
    )
    .map_err(|_| {
        SigstoreError::BadSignature("the signature is not the signer's over this message".into())
    })
}

/// The signature algorithms certificate chains are checked with (rustls-webpki over
/// aws-lc-rs, the set sigstore-verify uses), for mansign's own chain checks.
pub(crate) fn webpki_algorithms() -> &'static [&'static dyn SignatureVerificationAlgorithm] {
    sigstore_crypto::WEBPKI_VERIFICATION_ALGS
}

/// Why [`verify_webpki_path`] refused a certificate, with rustls-webpki's error.
pub(super) enum WebpkiPathError {
    /// The leaf is not a certificate webpki reads.
    Malformed(webpki::Error),
    /// A certificate of the path was expired or not yet valid at the time.
    NotValidAt(webpki::Error),
    /// No path to an anchor holds (signature, name, usage, ...).
    Untrusted(webpki::Error),
}

/// mansign's own chain checks through rustls-webpki ([`webpki_algorithms`]): a path from
/// `leaf` (DER) through `intermediates` to one of `anchors`, every certificate valid at
/// `seconds` (Unix time), under the EKU rule `usage`. Each caller names the failures.
pub(super) fn verify_webpki_path(
    leaf: &[u8],
    anchors: &[TrustAnchor<'_>],
    intermediates: &[CertificateDer<'_>],
    seconds: u64,
    usage: webpki::KeyUsage,
) -> Result<(), WebpkiPathError> {
    let leaf_der = CertificateDer::from(leaf);
    let end_entity =
        webpki::EndEntityCert::try_from(&leaf_der).map_err(WebpkiPathError::Malformed)?;
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(seconds));
    end_entity
        .verify_for_usage(
            webpki_algorithms(),
            anchors,
            intermediates,
            time,
            usage,
            None,
            None,
        )
        .map(|_| ())
        .map_err(|e| match e {
            webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
                WebpkiPathError::NotValidAt(e)
            }
            other => WebpkiPathError::Untrusted(other),
        })
}

/// The cosign triple as a Sigstore bundle v0.1 (research `sigstore-rust-crates.md` §4.2):
/// one tlog entry with integrated time and inclusion promise (SET), no inclusion proof,
/// no RFC 3161 timestamp. The body is re-encoded from the decoded bytes, so the SET is
/// checked over exactly the body that is interpreted.
fn bundle_v01(
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
        SigningMaterial::Certificate(der) => VerificationMaterialContent::X509CertificateChain {
            certificates: vec![X509Certificate::new(DerCertificate::new(der.to_vec()))],
        },
        SigningMaterial::PublicKey(_) => {
            VerificationMaterialContent::PublicKey(PublicKeyIdentifier::new(""))
        }
    };
    let material = VerificationMaterial::new(content).with_tlog_entries(vec![tlog]);
    Bundle::new(
        MediaType::Bundle0_1,
        material,
        message_signature_content(signature, message),
    )
}

/// A bundle's message signature: the signature bytes and the SHA-256 digest of the signed
/// message. Also what signing writes into the bundles it hands out (`--bundle-out`).
pub(crate) fn message_signature_content(signature: &[u8], message: &[u8]) -> SignatureContent {
    let digest = sigstore_crypto::sha256(message);
    SignatureContent::MessageSignature(
        MessageSignature::new(SignatureBytes::new(signature.to_vec())).with_message_digest(
            MessageDigest::new(
                HashAlgorithm::Sha2256,
                DigestBytes::new(digest.as_slice().to_vec()),
            ),
        ),
    )
}

/// sigstore-verify's failure categories, mapped onto one [`SigstoreError`] variant per
/// reason. The only such mapper in mansign: the annotation paths and the conformance
/// bundle path both use it. `integrated_time` (Unix seconds), when the caller knows it,
/// names the time a certificate validity failure refers to.
pub(crate) fn map_verify_error(
    e: sigstore_verify::Error,
    trust: &TrustRoot,
    integrated_time: Option<i64>,
) -> SigstoreError {
    use sigstore_verify::{
        CertificateError as C, Error as E, TimestampError as Ts, TransparencyLogError as T,
    };
    let at = integrated_time.and_then(|t| jiff::Timestamp::from_second(t).ok());
    match e {
        // rustls-webpki reports a validity failure as a chain failure; name it.
        E::Certificate(C::ChainInvalid(d))
            if d.contains("CertExpired") || d.contains("CertNotValidYet") =>
        {
            SigstoreError::CertificateNotValidAt {
                time: at,
                detail: d,
            }
        }
        E::Certificate(C::ChainInvalid(d) | C::Malformed(d)) => {
            SigstoreError::UntrustedCertificate(d)
        }
        E::Certificate(C::NoValidAuthority { time }) => SigstoreError::UntrustedCertificate(
            format!("no trusted Fulcio authority was valid at {time}"),
        ),
        E::Certificate(C::NotYetValid { time, not_before }) => {
            SigstoreError::CertificateNotValidAt {
                time: Some(time),
                detail: format!("not valid before {not_before}"),
            }
        }
        E::Certificate(C::Expired { time, not_after }) => SigstoreError::CertificateNotValidAt {
            time: Some(time),
            detail: format!("expired at {not_after}"),
        },
        E::Certificate(C::Sct(d)) => SigstoreError::Sct(d),
        E::IdentityMismatch { expected, actual } => SigstoreError::IdentityMismatch {
            expected: expected.to_string(),
            found: actual.map_or_else(|| "(none)".into(), |a| a.as_str().to_string()),
        },
        E::IssuerMismatch { expected, actual } => SigstoreError::IssuerMismatch {
            expected,
            found: actual.unwrap_or_else(|| "(none)".into()),
        },
        E::TransparencyLog(T::UnknownLog { log_id }) => SigstoreError::UnknownLog {
            log_id: log_id_hex(&log_id),
            trust_root: trust.origin().to_string(),
        },
        E::TransparencyLog(T::InclusionPromise(d)) => SigstoreError::SignedEntryTimestamp(d),
        E::TransparencyLog(T::IntegratedTime(d)) => SigstoreError::IntegratedTime(d),
        E::TransparencyLog(T::InclusionProof(d)) => SigstoreError::InclusionProof(d),
        E::TransparencyLog(T::Checkpoint(d)) => SigstoreError::Checkpoint(d),
        E::TransparencyLog(T::EntryMismatch(d)) => SigstoreError::EntryMismatch(d),
        E::TransparencyLog(T::MalformedEntry(d)) => SigstoreError::MalformedEntry(d),
        E::ArtifactMismatch(d) => SigstoreError::ArtifactMismatch(d),
        E::SignatureInvalid(d) => SigstoreError::BadSignature(d),
        E::Timestamp(Ts::NoVerifiedTimestamp(d)) => SigstoreError::NoVerifiedTime(d),
        E::Timestamp(t) => SigstoreError::Timestamp(t.to_string()),
        E::InvalidBundle(d) => SigstoreError::InvalidBundle(d),
        E::Bundle(b) => SigstoreError::InvalidBundle(b.to_string()),
        E::UnsupportedBundle(d) | E::UnsupportedArtifact(d) => SigstoreError::UnsupportedBundle(d),
        other => SigstoreError::Other(other.to_string()),
    }
}

/// Log IDs are shown in hex everywhere (JSON `logId`, `trust show`, errors); bundles carry
/// them in base64, which is what sigstore-verify reports.
fn log_id_hex(id: &str) -> String {
    use base64::Engine as _;
    if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return id.to_ascii_lowercase();
    }
    match base64::engine::general_purpose::STANDARD.decode(id) {
        Ok(bytes) if bytes.len() == 32 => hex::encode(bytes),
        _ => id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{KindVersion, MediaType};
    use super::{SigningMaterial, bundle_v01, is_set_only_v01, log_id_hex};
    use crate::verify::sigstore::rekor_entry::RekorEntry;

    fn entry(integrated_time: i64) -> RekorEntry {
        RekorEntry {
            set: vec![1; 70],
            body: b"{}".to_vec(),
            kind: "hashedrekord".into(),
            api_version: "0.0.1".into(),
            integrated_time,
            log_index: 7,
            log_id: [3; 32],
        }
    }

    /// The certificate path skips sigstore-verify's log pass only for the shape
    /// `bundle_v01` builds: if that shape changes (an inclusion proof, a second entry, a
    /// TSA timestamp), the guard refuses instead of leaving a check out.
    #[test]
    fn only_the_bundles_built_here_skip_the_log_pass() {
        let material = SigningMaterial::Certificate(b"not read here");
        let built = bundle_v01(&entry(1_700_000_000), material, b"sig", b"message");
        assert!(is_set_only_v01(&built), "the shape bundle_v01 builds");

        let mut two = built.clone();
        let first = two.verification_material.tlog_entries[0].clone();
        two.verification_material.tlog_entries.push(first);
        assert!(!is_set_only_v01(&two), "two log entries");

        let mut none = built.clone();
        none.verification_material.tlog_entries.clear();
        assert!(!is_set_only_v01(&none), "no log entry");

        let mut no_promise = built.clone();
        no_promise.verification_material.tlog_entries[0].inclusion_promise = None;
        assert!(!is_set_only_v01(&no_promise), "no SET");

        let mut no_time = built.clone();
        no_time.verification_material.tlog_entries[0].integrated_time = None;
        assert!(!is_set_only_v01(&no_time), "no integrated time");
        // An integrated time jiff cannot represent is left out by bundle_v01: refused.
        let far = bundle_v01(&entry(i64::MAX), material, b"sig", b"message");
        assert!(!is_set_only_v01(&far), "an integrated time out of range");

        let mut other_kind = built.clone();
        other_kind.verification_material.tlog_entries[0].kind_version =
            KindVersion::HashedRekordV002;
        assert!(!is_set_only_v01(&other_kind), "another entry kind");

        let mut other_version = built.clone();
        other_version.media_type = MediaType::Bundle0_3;
        assert!(!is_set_only_v01(&other_version), "another bundle version");
    }

    #[test]
    fn log_ids_are_shown_in_hex_whatever_encoding_they_came_in() {
        let hex = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d";
        assert_eq!(
            log_id_hex("wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0="),
            hex
        );
        assert_eq!(log_id_hex(&hex.to_uppercase()), hex);
        // Neither: shown as given.
        assert_eq!(log_id_hex("not-an-id"), "not-an-id");
    }
}
