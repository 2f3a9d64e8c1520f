//! The Fulcio chain of a keyless certificate, every certificate of it valid at the signing
//! time — the anchor included.
//!
//! sigstore-verify 0.15.1 (and mansign's legacy `rekord` check) hand every CA certificate
//! of the trust root to rustls-webpki as a trust anchor, intermediates included, and
//! webpki never checks an anchor's own validity. So a leaf issued by an intermediate that
//! had expired before the signing time verified, and so did one whose root had expired, as
//! long as the authority's `validFor` window was open (the class of cosign
//! GHSA-wfqv-66vq-46rm, CVE-2026-24122; Go's `x509.Verify`, which cosign uses, checks every
//! certificate of the chain, roots included). [`check`] runs after those checks, on every
//! keyless path (cold and vouched annotation sets, legacy `rekord` entries, standard
//! bundles), and builds the path again as RFC 5280 reads it:
//!
//! * the anchors are the **self-issued** CA certificates of the authorities valid at the
//!   signing time (and the last certificate of a chain that stops below its root), every
//!   other CA certificate is an *intermediate*, so webpki checks its validity at the time;
//! * the anchor the path ends in is then checked by mansign: valid at the time too;
//! * the result is the window in which the whole path (leaf included) is valid, which is
//!   what the trust root may remember for the vouched path ([`crate::trust::VouchedCertificate`]):
//!   a later set integrated outside it is checked in full again.
//!
//! A failure names the certificate, its validity window and the signing time
//! ([`SigstoreError::ChainCertificateNotValidAt`], code
//! `chain-certificate-not-valid-at-signing-time`). The TSA chain check of standard bundles
//! (sigstore-tsa) and certificate attestors' chains (`super::certificate`) already checked
//! every certificate; this makes the Fulcio path agree with them.

use super::error::SigstoreError;
use crate::trust::TrustRoot;
use jiff::Timestamp;
use rustls_pki_types::{CertificateDer, SignatureVerificationAlgorithm, UnixTime};
use x509_cert::Certificate;
use x509_cert::der::Decode;

/// `id-kp-codeSigning` (1.3.6.1.5.5.7.3.3), DER value bytes as webpki wants them.
const ID_KP_CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// What [`check`] established: the path is valid at the signing time, and all of it in
/// `not_before..=not_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChainValidity {
    /// The latest notBefore of the path (leaf, intermediates, anchor).
    pub not_before: Timestamp,
    /// The earliest notAfter of the path.
    pub not_after: Timestamp,
    /// The position in the trust root of the authority whose chain holds the anchor.
    pub authority: usize,
}

/// One CA certificate of the trust root, read.
struct CaCertificate<'a> {
    der: &'a [u8],
    authority: usize,
    subject: String,
    not_before: Timestamp,
    not_after: Timestamp,
    self_issued: bool,
}

impl CaCertificate<'_> {
    fn valid_at(&self, time: Timestamp) -> bool {
        self.not_before <= time && time <= self.not_after
    }

    fn invalid_at(&self, role: &'static str, time: Timestamp) -> SigstoreError {
        SigstoreError::ChainCertificateNotValidAt {
            role,
            subject: self.subject.clone(),
            not_before: self.not_before,
            not_after: self.not_after,
            time,
        }
    }
}

/// The validity window of a certificate (inclusive at both ends, as RFC 5280 reads it).
fn validity(cert: &Certificate) -> Option<(Timestamp, Timestamp)> {
    let v = &cert.tbs_certificate.validity;
    let at = |t: x509_cert::time::Time| {
        i64::try_from(t.to_unix_duration().as_secs())
            .ok()
            .and_then(|s| Timestamp::from_second(s).ok())
    };
    Some((at(v.not_before)?, at(v.not_after)?))
}

/// Checks, with the signature `algorithms` of the other chain checks
/// (`adapter::webpki_algorithms`), that `leaf` (DER) chains, with the code-signing EKU, through CA certificates of
/// the authorities of `trust` valid at `time` (and `extra_intermediates`, certificates a
/// standard bundle ships, never trusted by themselves) to a trust anchor, and that every
/// certificate of that path, the anchor included, is valid at `time`. See the module docs.
pub(crate) fn check(
    algorithms: &[&dyn SignatureVerificationAlgorithm],
    trust: &TrustRoot,
    leaf: &[u8],
    extra_intermediates: &[&[u8]],
    time: Timestamp,
) -> Result<ChainValidity, SigstoreError> {
    let untrusted = |detail: String| SigstoreError::UntrustedCertificate(detail);
    let chains = trust.fulcio_chains_at(time);
    if chains.is_empty() {
        return Err(untrusted(format!(
            "no Fulcio authority of the trust root was valid at {time}"
        )));
    }
    let mut cas = Vec::new();
    let mut tops = Vec::new();
    for (authority, chain) in &chains {
        for (position, der) in chain.iter().enumerate() {
            let cert = Certificate::from_der(der).map_err(|e| {
                untrusted(format!("a Fulcio CA certificate of the trust root: {e}"))
            })?;
            let (not_before, not_after) = validity(&cert).ok_or_else(|| {
                untrusted("a Fulcio CA certificate's validity is out of range".into())
            })?;
            let tbs = &cert.tbs_certificate;
            if position + 1 == chain.len() {
                tops.push(cas.len());
            }
            cas.push(CaCertificate {
                der,
                authority: *authority,
                subject: tbs.subject.to_string(),
                not_before,
                not_after,
                self_issued: tbs.subject == tbs.issuer,
            });
        }
    }
    // Anchors: self-issued certificates, and the top of a chain that stops below its root.
    let is_anchor = |i: usize| cas[i].self_issued || tops.contains(&i);
    let anchor_index: Vec<usize> = (0..cas.len()).filter(|i| is_anchor(*i)).collect();
    let anchors = anchor_index
        .iter()
        .map(|&i| {
            webpki::anchor_from_trusted_cert(&CertificateDer::from(cas[i].der))
                .map(|a| a.to_owned())
                .map_err(|e| untrusted(format!("a Fulcio CA certificate as anchor: {e:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let intermediates: Vec<CertificateDer<'_>> = (0..cas.len())
        .filter(|i| !is_anchor(*i))
        .map(|i| CertificateDer::from(cas[i].der))
        .chain(extra_intermediates.iter().map(|d| CertificateDer::from(*d)))
        .collect();

    let leaf_cert = Certificate::from_der(leaf)
        .map_err(|e| SigstoreError::MalformedCertificate(e.to_string()))?;
    let (leaf_not_before, leaf_not_after) = validity(&leaf_cert)
        .ok_or_else(|| SigstoreError::MalformedCertificate("validity out of range".into()))?;
    let leaf_der = CertificateDer::from(leaf);
    let end_entity = webpki::EndEntityCert::try_from(&leaf_der)
        .map_err(|e| SigstoreError::MalformedCertificate(format!("{e:?}")))?;
    let seconds = u64::try_from(time.as_second())
        .map_err(|_| SigstoreError::IntegratedTime(format!("{time} is before 1970")))?;
    let path = end_entity.verify_for_usage(
        algorithms,
        &anchors,
        &intermediates,
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(seconds)),
        // The leaf's code-signing EKU was required by the check before this one; here an
        // intermediate without an EKU extension means any purpose (RFC 5280 §4.2.1.12, as
        // Go's x509 reads it), one with an EKU extension must list code signing.
        webpki::KeyUsage::required_if_present(ID_KP_CODE_SIGNING),
        None,
        None,
    );
    let path = match path {
        Ok(path) => path,
        Err(e @ (webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. })) => {
            if !(leaf_not_before <= time && time <= leaf_not_after) {
                return Err(SigstoreError::CertificateNotValidAt {
                    time: Some(time),
                    detail: format!("valid from {leaf_not_before} to {leaf_not_after}"),
                });
            }
            // Name the intermediate: one that could have issued the leaf first.
            let issuer = leaf_cert.tbs_certificate.issuer.to_string();
            let expired = (0..cas.len())
                .filter(|i| !is_anchor(*i) && !cas[*i].valid_at(time))
                .min_by_key(|i| cas[*i].subject != issuer);
            return Err(match expired {
                Some(i) => cas[i].invalid_at("intermediate", time),
                None => SigstoreError::CertificateNotValidAt {
                    time: Some(time),
                    detail: format!("a certificate of the chain: {e:?}"),
                },
            });
        }
        Err(e) => return Err(untrusted(format!("{e:?}"))),
    };
    // The anchor the path ends in: webpki did not check its dates.
    let anchor = path.anchor();
    let found = anchor_index.iter().zip(&anchors).find(|(_, a)| {
        a.subject.as_ref() == anchor.subject.as_ref()
            && a.subject_public_key_info.as_ref() == anchor.subject_public_key_info.as_ref()
    });
    let Some((&root, _)) = found else {
        return Err(untrusted(
            "the chain ends in an anchor that is not in the trust root".into(),
        ));
    };
    let root = &cas[root];
    if !root.valid_at(time) {
        return Err(root.invalid_at("root", time));
    }
    let mut window = ChainValidity {
        not_before: leaf_not_before.max(root.not_before),
        not_after: leaf_not_after.min(root.not_after),
        authority: root.authority,
    };
    for intermediate in path.intermediate_certificates() {
        let der = intermediate.der();
        let (not_before, not_after) = Certificate::from_der(der.as_ref())
            .ok()
            .as_ref()
            .and_then(validity)
            .ok_or_else(|| untrusted("an intermediate of the path does not parse".into()))?;
        window.not_before = window.not_before.max(not_before);
        window.not_after = window.not_after.min(not_after);
    }
    Ok(window)
}
