//! Legacy `rekord` 0.0.1 entries: the Sigstore checks, done by mansign itself.
//!
//! kubectl-sigstore signatures made with 2021 cosign logged a `rekord` entry (research
//! `k8s-manifest-sigstore.md` §2) instead of today's `hashedrekord`. sigstore-verify does
//! not take that kind, so this module checks it, in the same order as the
//! `hashedrekord` path (no OpenSSL: aws-lc-rs through sigstore-crypto, rustls-webpki,
//! x509-cert):
//!
//! 1. the body is `rekord` 0.0.1 and reads as
//!    [`LoggedSignature::read`](super::logged_entry::LoggedSignature::read) requires
//!    (`spec.signature.format` `x509`, a `sha256` `spec.data.hash`, exact base64, no
//!    duplicate key; a failure is `malformed-log-entry`);
//! 2. the SET verifies: ECDSA by the trust root's Rekor key for `logID`, valid at
//!    `integratedTime`, over the RFC 8785 canonical JSON
//!    `{"body","integratedTime","logID","logIndex"}` (the body re-encoded from the decoded
//!    bytes, so the SET covers exactly what is interpreted below);
//! 3. `integratedTime` is not in the future;
//! 4. (certificate) the certificate chains, with rustls-webpki and the code-signing EKU, to
//!    a Fulcio CA of the trust root valid at `integratedTime`, and is itself valid then;
//!    every CA certificate of the path, the root included, is valid then too
//!    ([`fulcio_chain`]);
//!
//!    4a. (certificate) the SCT rule below;
//! 5. the signature verifies over M with the certificate's (or the trusted) key;
//! 6. the body holds the same signature bytes, the same certificate DER (or the same
//!    public key) and SHA-256(M).
//!
//! # Certificate transparency: where the line is
//!
//! Fulcio in 2021 returned the SCT detached, and cosign never stored it, so the certificates
//! of 2021 kubectl-sigstore signatures carry none, and this path cannot check one. But the
//! entry's kind is the signer's choice: if "no SCT" were accepted for every `rekord` entry,
//! a certificate a mis-issuing CA never sent to a CT log would verify by being logged as
//! `rekord` instead of `hashedrekord` (the `hashedrekord` path requires the SCT). So a
//! certificate without an embedded SCT is accepted here only when the trust root itself
//! says its CA has stopped issuing:
//!
//! * the Fulcio authority its chain ends in has a **closed** `validFor` window (a current
//!   authority, open-ended, never qualifies: its certificates need an SCT), and
//! * the entry's SET-backed integrated time is **before that authority retired**: the
//!   earlier of its window's end and the start of the next authority's window
//!   ([`TrustRoot::retired_at`]).
//!
//! For the public-good root that is the 2021 `sigstore` CA (`validFor` 2021-03-07 to
//! 2022-12-31) and entries integrated before 2022-04-13T20:06:15Z, when the
//! `sigstore-intermediate` authority (whose certificates embed SCTs) took over. An attacker
//! would need a Rekor SET dated inside that window: the log's key, not the CA's. The CT
//! logs' own `validFor` windows do not draw the line: the 2021 log (`ctfe.sigstore.dev/test`)
//! started on 2021-03-14, before the certificates it must let through. cosign has no such
//! exception: it refuses a certificate without an embedded SCT unless given a detached one
//! or `--insecure-ignore-sct` (`pkg/cosign/verify.go`, `ValidateAndUnpackCert`), so by
//! default it does not verify these signatures at all; docs/compatibility.md says the same.
//!
//! A certificate that *does* embed an SCT is refused here rather than accepted unchecked
//! (it would be a 2022+ certificate, which never needs this path).

use super::adapter::{self as sigstore, SigningMaterial, WebpkiPathError};
use super::error::SigstoreError;
use super::fulcio_chain;
use super::logged_entry::read_with_set;
use super::rekor_entry::RekorEntry;
use crate::trust::TrustRoot;
use rustls_pki_types::CertificateDer;
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::der::oid::ObjectIdentifier;

/// `id-kp-codeSigning` (1.3.6.1.5.5.7.3.3), DER value bytes as webpki wants them.
const ID_KP_CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// RFC 6962 embedded SCT list extension.
const SCT_LIST_OID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");

/// Runs the checks in the module docs; the caller has parsed the bundle and checked
/// that the entry is `rekord` 0.0.1 from a log the trust root knows.
pub(super) fn verify(
    trust: &TrustRoot,
    message: &[u8],
    signature: &[u8],
    material: SigningMaterial<'_>,
    entry: &RekorEntry,
) -> Result<(), SigstoreError> {
    // 1. body shape: the one reading of a logged body (`format` x509, `sha256`, exact
    // base64, no duplicate key); 2. SET; 3. integrated time
    let (logged, time) = read_with_set(trust, entry)?;
    // 4. certificate chain at the integrated time; 5. signature over M
    let public_key = match &material {
        SigningMaterial::Certificate(der) => {
            verify_chain(trust, der, time)?;
            sigstore::certificate_facts(der)?.public_key_der
        }
        SigningMaterial::PublicKey(key) => key.to_vec(),
    };
    sigstore::verify_signature(&public_key, message, signature)?;
    // 6. the entry describes this signature
    logged.describes(message, signature, material)
}

/// Steps 4 and 4a of the module docs: the chain at the integrated time, and the SCT rule.
fn verify_chain(
    trust: &TrustRoot,
    leaf: &[u8],
    time: jiff::Timestamp,
) -> Result<(), SigstoreError> {
    let parsed = Certificate::from_der(leaf)
        .map_err(|e| SigstoreError::MalformedCertificate(e.to_string()))?;
    let has_sct = parsed
        .tbs_certificate
        .extensions
        .iter()
        .flatten()
        .any(|e| e.extn_id == SCT_LIST_OID);
    if has_sct {
        return Err(SigstoreError::Sct(
            "the certificate embeds an SCT, which is not checked for legacy rekord entries; \
             such certificates must be logged as hashedrekord"
                .into(),
        ));
    }
    let anchors = trust
        .fulcio_certificates_at(time)
        .into_iter()
        .filter_map(|der| {
            webpki::anchor_from_trusted_cert(&CertificateDer::from(der))
                .ok()
                .map(|a| a.to_owned())
        })
        .collect::<Vec<_>>();
    if anchors.is_empty() {
        return Err(SigstoreError::UntrustedCertificate(format!(
            "no Fulcio authority of the trust root was valid at {time}"
        )));
    }
    let seconds = u64::try_from(time.as_second())
        .map_err(|_| SigstoreError::IntegratedTime(format!("{time} is before 1970")))?;
    let usage = webpki::KeyUsage::required(ID_KP_CODE_SIGNING);
    sigstore::verify_webpki_path(leaf, &anchors, &[], seconds, usage).map_err(|e| match e {
        WebpkiPathError::Malformed(e) => SigstoreError::MalformedCertificate(e.to_string()),
        WebpkiPathError::NotValidAt(e) => SigstoreError::CertificateNotValidAt {
            time: Some(time),
            detail: format!("{e:?}"),
        },
        WebpkiPathError::Untrusted(e) => SigstoreError::UntrustedCertificate(format!("{e:?}")),
    })?;
    // Every certificate of the path, the root included, valid at the integrated time.
    let validity = fulcio_chain::check(sigstore::webpki_algorithms(), trust, leaf, &[], time)?;
    // No embedded SCT (the certificate was refused above otherwise): accepted only from a
    // retired Fulcio authority, logged before it retired (the module docs say why).
    match trust.retired_at(validity.authority) {
        Some(retired) if time < retired => Ok(()),
        Some(retired) => Err(SigstoreError::Sct(format!(
            "the certificate has no embedded SCT, and its entry was integrated at {time}, \
             not before {retired}, when the Fulcio authority it chains to retired (the trust \
             root's validFor); only certificates issued before Fulcio embedded SCTs may \
             lack one"
        ))),
        None => Err(SigstoreError::Sct(
            "the certificate has no embedded SCT, and the Fulcio authority it chains to is \
             current (its validFor window in the trust root is open): certificate \
             transparency is required whatever the log entry's kind"
                .into(),
        )),
    }
}
