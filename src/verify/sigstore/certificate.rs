//! Certificate attestors (Kyverno `certificates`): a pinned signing certificate, a CA chain
//! the signing certificate must chain to, or both.
//!
//! Unlike keyless signatures, these certificates come from the policy's own PKI: no Fulcio,
//! no SCT, no identity claims. What the attestor guarantees, checked in this order and
//! stopping at the first failure ([`CertificateAttestor::check_at`]):
//!
//! 1. **the signing certificate**: the pinned `cert`; when the set also carries a
//!    `certificate` annotation, its first certificate must be byte-identical (DER) to the
//!    pinned one. Without a pinned `cert`, the annotation's first certificate is the leaf
//!    and the set must carry one. Further certificates in the annotation are never used:
//!    intermediates come from `certChain` only;
//! 2. **the signature** over M verifies with that certificate's key (ECDSA P-256,
//!    SHA-256, DER signature);
//! 3. **the signing time**: the Rekor integrated time when the set carries a bundle, which
//!    must then verify against the attestor's trust root exactly as for key signatures
//!    ([`verify_key_set_with_bundle`]: SET, entry body naming this key, this signature and
//!    SHA-256(M)); a bundle that is present is never ignored. Without a bundle the signing
//!    time is the verifier's "now" (its clock), so an expired certificate cannot sign;
//! 4. **validity**: the certificate's notBefore..notAfter covers the signing time;
//! 5. **usage**: a key usage extension, if present, allows digital signatures; with a
//!    `certChain`, the certificate must carry the code-signing EKU; a pinned certificate
//!    without a chain must carry it if it has an EKU extension at all (a pinned certificate
//!    is trusted by itself, so "no EKU" is not a CA's omission);
//! 6. **chain** (with `certChain`): the certificate chains with rustls-webpki to the
//!    chain's last certificate (the root, the only trust anchor), through the others as
//!    intermediates, at the signing time; an intermediate with an EKU extension must allow
//!    code signing; the root itself is valid at that time too (webpki does not check an
//!    anchor's validity, cosign's Go `x509.Verify` does).
//!
//! Upstream, cosign's `--certificate`/`--certificate-chain` verification (what Kyverno
//! passes these fields to) checks the chain only when the set has no bundle; with a bundle
//! Kyverno accepts any signer the SET vouches for (research `kyverno-manifests.md` §2.5).
//! mansign always runs every step above.

use super::adapter::{WebpkiPathError, verify_webpki_path};
use super::error::SigstoreError;
use super::key_bundle::verify_key_set_with_bundle;
use super::signer::SignerInfo;
use crate::annotations::SignatureSet;
use crate::trust::TrustRoot;
use p256::ecdsa::{DerSignature, VerifyingKey, signature::Verifier as _};
use p256::pkcs8::DecodePublicKey as _;
use rustls_pki_types::CertificateDer;
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::sync::Arc;
use x509_cert::Certificate;
use x509_cert::der::{Decode as _, Encode as _};
use x509_cert::ext::pkix::{ExtendedKeyUsage, KeyUsage};

/// `id-kp-codeSigning` (1.3.6.1.5.5.7.3.3).
const CODE_SIGNING: x509_cert::der::oid::ObjectIdentifier =
    x509_cert::der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.3");
/// The same OID as DER value bytes, as rustls-webpki wants it.
const ID_KP_CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// Why a certificate attestor cannot be built from the given PEM.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateAttestorError {
    #[error("a certificate attestor needs a certificate (cert), a CA chain (certChain), or both")]
    Empty,
    #[error("{what}: not valid PEM: {reason}")]
    Pem { what: &'static str, reason: String },
    #[error("{what}: PEM block {tag:?} is not a CERTIFICATE")]
    NotACertificate { what: &'static str, tag: String },
    #[error("{what}: no certificate found")]
    NoCertificate { what: &'static str },
    #[error(
        "cert: holds {found} certificates; pin exactly one signing certificate and put CA \
         certificates in certChain"
    )]
    SeveralCertificates { found: usize },
    #[error("{what}: not a usable X.509 certificate: {reason}")]
    Malformed { what: &'static str, reason: String },
    #[error("cert: the certificate's key is not an ECDSA P-256 key ({reason})")]
    UnsupportedKey { reason: String },
}

/// Why a signature set did not verify under a certificate attestor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateCheckError {
    #[error(
        "signature set has no certificate annotation; a certChain attestor needs the signing \
         certificate"
    )]
    NoCertificate,
    #[error("certificate annotation is not a usable X.509 certificate: {0}")]
    MalformedCertificate(String),
    #[error(
        "the set's certificate (sha256:{found}) is not the pinned certificate (sha256:{pinned})"
    )]
    NotPinnedCertificate { found: String, pinned: String },
    #[error("the signing certificate's key is not an ECDSA P-256 key ({0})")]
    UnsupportedKey(String),
    #[error("signature is not a DER ECDSA signature")]
    MalformedSignature,
    #[error("signature does not match the message and the certificate's key")]
    BadSignature,
    #[error("the set carries a Rekor bundle but no trust root is configured to check it")]
    BundleWithoutTrustRoot,
    #[error("Rekor bundle does not verify: {0}")]
    Bundle(SigstoreError),
    #[error("signing time {0} cannot be checked (before 1970)")]
    TimeOutOfRange(String),
    #[error("certificate not valid at {time}: {detail}")]
    NotValidAt { time: SigningTime, detail: String },
    #[error("certificate key usage does not allow digital signatures")]
    NoDigitalSignatureUsage,
    #[error("certificate has no code-signing extended key usage{detail}")]
    NoCodeSigningUsage { detail: &'static str },
    #[error("certificate does not chain to the certChain root: {0}")]
    UntrustedChain(String),
    #[error("certChain root {subject} not valid at {time}: {detail}")]
    RootNotValidAt {
        subject: String,
        time: SigningTime,
        detail: String,
    },
}

impl CertificateCheckError {
    /// Stable machine code of the failed check.
    pub fn code(&self) -> &'static str {
        match self {
            CertificateCheckError::NoCertificate => "no-certificate",
            CertificateCheckError::MalformedCertificate(_) => "malformed-certificate",
            CertificateCheckError::NotPinnedCertificate { .. } => "certificate-not-pinned",
            CertificateCheckError::UnsupportedKey(_) => "unsupported-key",
            CertificateCheckError::MalformedSignature => "malformed-signature",
            CertificateCheckError::BadSignature => "bad-signature",
            CertificateCheckError::BundleWithoutTrustRoot => "bundle-without-trust-root",
            CertificateCheckError::Bundle(e) => e.code(),
            CertificateCheckError::TimeOutOfRange(_) => "signing-time-out-of-range",
            CertificateCheckError::NotValidAt { .. } => "certificate-not-valid-at-signing-time",
            CertificateCheckError::NoDigitalSignatureUsage => "certificate-usage",
            CertificateCheckError::NoCodeSigningUsage { .. } => "certificate-usage",
            CertificateCheckError::UntrustedChain(_) => "untrusted-chain",
            CertificateCheckError::RootNotValidAt { .. } => "root-not-valid-at-signing-time",
        }
    }
}

/// The time a certificate is checked at, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningTime {
    /// The Rekor integrated time of a verified bundle.
    Integrated(jiff::Timestamp),
    /// No bundle: the verifier's current time.
    Verification(jiff::Timestamp),
}

impl SigningTime {
    pub fn timestamp(self) -> jiff::Timestamp {
        match self {
            SigningTime::Integrated(t) | SigningTime::Verification(t) => t,
        }
    }
}

impl fmt::Display for SigningTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigningTime::Integrated(t) => write!(f, "integrated time {t}"),
            SigningTime::Verification(t) => write!(f, "verification time {t} (no Rekor bundle)"),
        }
    }
}

/// A parsed signing certificate with its P-256 key.
#[derive(Debug, Clone)]
struct SigningCertificate {
    der: Vec<u8>,
    cert: Certificate,
    key: VerifyingKey,
    subject: String,
    fingerprint: String,
    /// The certificate's public key ([`crate::keys::public_key_fingerprint`]).
    key_fingerprint: String,
}

impl SigningCertificate {
    fn parse(der: Vec<u8>) -> Result<Self, ParseError> {
        let cert = Certificate::from_der(&der).map_err(|e| ParseError::Malformed(e.to_string()))?;
        let spki = cert
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .map_err(|e| ParseError::Malformed(e.to_string()))?;
        let key = VerifyingKey::from_public_key_der(&spki)
            .map_err(|e| ParseError::UnsupportedKey(e.to_string()))?;
        Ok(SigningCertificate {
            subject: cert.tbs_certificate.subject.to_string(),
            fingerprint: hex::encode(Sha256::digest(&der)),
            key_fingerprint: crate::keys::public_key_fingerprint(&key),
            der,
            cert,
            key,
        })
    }
}

enum ParseError {
    Malformed(String),
    UnsupportedKey(String),
}

/// CA certificates from `certChain`: the last is the root (trust anchor), the others are
/// intermediates.
#[derive(Debug, Clone)]
struct CaChain {
    intermediates: Vec<Vec<u8>>,
    root: Vec<u8>,
    root_cert: Certificate,
}

/// A signer identified by an X.509 certificate from the policy's own PKI (see the module
/// docs for the checks).
///
/// ```no_run
/// use mansign::verify::{Attestor, CertificateAttestor, Verifier};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cert = std::fs::read_to_string("release.crt")?;
/// let chain = std::fs::read_to_string("ca.pem")?; // CA certificates, root last
/// let release = CertificateAttestor::new("release.crt", Some(&cert), Some(&chain))?;
/// let verifier = Verifier::new(vec![Attestor::Certificate(release)]);
/// let object: serde_json::Value = serde_json::from_str(&std::fs::read_to_string("cm.json")?)?;
/// println!("{}", verifier.verify_object(&object)?);
/// // ... verified (signature set 0, certificate CN=release (sha256:...))
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CertificateAttestor {
    /// How the user named the attestor (a file path, or its place in a policy).
    pub name: String,
    // Shared: attestors are cloned per evaluation, parsed certificates are large.
    pinned: Option<Arc<SigningCertificate>>,
    chain: Option<Arc<CaChain>>,
    /// Checks the Rekor bundle of sets that carry one; without it such sets are refused.
    trust_root: Option<Arc<TrustRoot>>,
}

impl CertificateAttestor {
    /// An attestor for a pinned certificate (`cert`, one PEM certificate with a P-256
    /// key), a CA chain (`cert_chain`, PEM, root last), or both.
    pub fn new(
        name: impl Into<String>,
        cert: Option<&str>,
        cert_chain: Option<&str>,
    ) -> Result<Self, CertificateAttestorError> {
        if cert.is_none() && cert_chain.is_none() {
            return Err(CertificateAttestorError::Empty);
        }
        let pinned = match cert {
            None => None,
            Some(pem) => {
                let mut ders = pem_certificates("cert", pem)?;
                if ders.len() != 1 {
                    return Err(CertificateAttestorError::SeveralCertificates {
                        found: ders.len(),
                    });
                }
                let der = ders.remove(0);
                Some(Arc::new(SigningCertificate::parse(der).map_err(
                    |e| match e {
                        ParseError::Malformed(reason) => CertificateAttestorError::Malformed {
                            what: "cert",
                            reason,
                        },
                        ParseError::UnsupportedKey(reason) => {
                            CertificateAttestorError::UnsupportedKey { reason }
                        }
                    },
                )?))
            }
        };
        let chain = match cert_chain {
            None => None,
            Some(pem) => {
                let mut ders = pem_certificates("certChain", pem)?;
                let malformed = |reason: String| CertificateAttestorError::Malformed {
                    what: "certChain",
                    reason,
                };
                for der in &ders {
                    Certificate::from_der(der).map_err(|e| malformed(e.to_string()))?;
                }
                let Some(root) = ders.pop() else {
                    return Err(CertificateAttestorError::NoCertificate { what: "certChain" });
                };
                webpki::anchor_from_trusted_cert(&CertificateDer::from(root.as_slice()))
                    .map_err(|e| malformed(format!("the root cannot be a trust anchor: {e:?}")))?;
                let root_cert =
                    Certificate::from_der(&root).map_err(|e| malformed(e.to_string()))?;
                Some(Arc::new(CaChain {
                    intermediates: ders,
                    root,
                    root_cert,
                }))
            }
        };
        Ok(CertificateAttestor {
            name: name.into(),
            pinned,
            chain,
            trust_root: None,
        })
    }

    /// Checks Rekor bundles on the sets against `trust_root`.
    pub fn with_trust_root(mut self, trust_root: Arc<TrustRoot>) -> Self {
        self.trust_root = Some(trust_root);
        self
    }

    /// The public key of the pinned certificate ([`crate::keys::public_key_fingerprint`]),
    /// if one is pinned: the signer this attestor accepts.
    pub fn pinned_key_fingerprint(&self) -> Option<&str> {
        self.pinned.as_ref().map(|c| c.key_fingerprint.as_str())
    }

    /// What this attestor accepts, for messages.
    pub fn describe(&self) -> String {
        match (&self.pinned, &self.chain) {
            (Some(c), None) => format!("certificate {} ({})", self.name, c.subject),
            (None, Some(ca)) => format!(
                "certificate chain {} (root {})",
                self.name, ca.root_cert.tbs_certificate.subject
            ),
            (Some(c), Some(ca)) => format!(
                "certificate {} ({}, root {})",
                self.name, c.subject, ca.root_cert.tbs_certificate.subject
            ),
            (None, None) => format!("certificate {}", self.name),
        }
    }

    /// Checks one signature set over `message` (see the module docs for the order); `now`
    /// is the signing time of sets without a Rekor bundle. On success says who signed.
    pub fn check_at(
        &self,
        message: &[u8],
        set: &SignatureSet,
        now: jiff::Timestamp,
    ) -> Result<SignerInfo, CertificateCheckError> {
        // 1. the signing certificate
        let leaf = self.signing_certificate(set)?;
        // 2. the signature over M
        let sig = DerSignature::from_bytes(&set.signature)
            .map_err(|_| CertificateCheckError::MalformedSignature)?;
        leaf.key
            .verify(message, &sig)
            .map_err(|_| CertificateCheckError::BadSignature)?;
        // 3. the signing time
        let (time, transparency_log) = match (&set.bundle, &self.trust_root) {
            (None, _) => (SigningTime::Verification(now), None),
            (Some(_), None) => return Err(CertificateCheckError::BundleWithoutTrustRoot),
            (Some(_), Some(trust)) => {
                // The certificate was matched above; the log entry must name its key.
                let key_set = SignatureSet {
                    certificate_pem: None,
                    ..set.clone()
                };
                let spki = leaf
                    .cert
                    .tbs_certificate
                    .subject_public_key_info
                    .to_der()
                    .map_err(|e| CertificateCheckError::MalformedCertificate(e.to_string()))?;
                let rekor = verify_key_set_with_bundle(trust, message, &key_set, &spki)
                    .map_err(CertificateCheckError::Bundle)?;
                let at = jiff::Timestamp::from_second(rekor.integrated_time).map_err(|_| {
                    CertificateCheckError::Bundle(SigstoreError::MalformedBundle(
                        "integratedTime out of range".into(),
                    ))
                })?;
                (SigningTime::Integrated(at), Some(rekor))
            }
        };
        // 4. validity at the signing time
        check_validity(&leaf.cert, time)
            .map_err(|detail| CertificateCheckError::NotValidAt { time, detail })?;
        // 5. usage
        check_digital_signature(&leaf.cert)?;
        check_code_signing(&leaf.cert, self.chain.is_some())?;
        // 6. the chain
        if let Some(chain) = &self.chain {
            verify_chain(chain, &leaf.der, time)?;
        }
        Ok(SignerInfo::SigningCertificate {
            subject: leaf.subject.clone(),
            fingerprint: leaf.fingerprint.clone(),
            key_fingerprint: leaf.key_fingerprint.clone(),
            transparency_log,
        })
    }

    /// The certificate that must have signed: the pinned one (which an annotation must
    /// repeat exactly), else the annotation's leaf.
    fn signing_certificate(
        &self,
        set: &SignatureSet,
    ) -> Result<Arc<SigningCertificate>, CertificateCheckError> {
        let annotated = match &set.certificate_pem {
            None => None,
            Some(pem) => Some(annotation_leaf(pem)?),
        };
        match (&self.pinned, annotated) {
            (Some(pinned), None) => Ok(pinned.clone()),
            (Some(pinned), Some(der)) if der == pinned.der => Ok(pinned.clone()),
            (Some(pinned), Some(der)) => Err(CertificateCheckError::NotPinnedCertificate {
                found: hex::encode(Sha256::digest(&der)),
                pinned: pinned.fingerprint.clone(),
            }),
            (None, None) => Err(CertificateCheckError::NoCertificate),
            (None, Some(der)) => {
                SigningCertificate::parse(der)
                    .map(Arc::new)
                    .map_err(|e| match e {
                        ParseError::Malformed(d) => CertificateCheckError::MalformedCertificate(d),
                        ParseError::UnsupportedKey(d) => CertificateCheckError::UnsupportedKey(d),
                    })
            }
        }
    }
}

/// Every PEM block of `text` as certificate DER; at least one.
fn pem_certificates(
    what: &'static str,
    text: &str,
) -> Result<Vec<Vec<u8>>, CertificateAttestorError> {
    let blocks = match crate::keys::pem_blocks(text.trim()) {
        Ok(blocks) => blocks,
        Err(crate::keys::KeyError::NoPemBlock) => {
            return Err(CertificateAttestorError::NoCertificate { what });
        }
        Err(e) => {
            return Err(CertificateAttestorError::Pem {
                what,
                reason: e.to_string(),
            });
        }
    };
    if blocks.is_empty() {
        return Err(CertificateAttestorError::NoCertificate { what });
    }
    blocks
        .into_iter()
        .map(|b| {
            if b.tag() == "CERTIFICATE" {
                Ok(b.into_contents())
            } else {
                Err(CertificateAttestorError::NotACertificate {
                    what,
                    tag: b.tag().to_string(),
                })
            }
        })
        .collect()
}

/// The first certificate of a `certificate` annotation.
fn annotation_leaf(pem_text: &str) -> Result<Vec<u8>, CertificateCheckError> {
    super::pem::first_certificate_der(pem_text).map_err(CertificateCheckError::MalformedCertificate)
}

/// notBefore <= time <= notAfter (RFC 5280 §4.1.2.5: both bounds inclusive).
fn check_validity(cert: &Certificate, time: SigningTime) -> Result<(), String> {
    let at = time.timestamp();
    let validity = &cert.tbs_certificate.validity;
    let bound = |t: x509_cert::time::Time| {
        i64::try_from(t.to_unix_duration().as_secs())
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
    };
    let (Some(not_before), Some(not_after)) =
        (bound(validity.not_before), bound(validity.not_after))
    else {
        return Err("validity period out of range".into());
    };
    if at < not_before {
        return Err(format!("not valid before {not_before}"));
    }
    if at > not_after {
        return Err(format!("expired at {not_after}"));
    }
    Ok(())
}

/// RFC 5280 §4.2.1.3: a key usage without digitalSignature forbids signing data (webpki
/// and Go's x509 do not check it for end entities; mansign does).
fn check_digital_signature(cert: &Certificate) -> Result<(), CertificateCheckError> {
    let usage = cert
        .tbs_certificate
        .get::<KeyUsage>()
        .map_err(|e| CertificateCheckError::MalformedCertificate(format!("key usage: {e}")))?;
    match usage {
        Some((_, usage)) if !usage.digital_signature() => {
            Err(CertificateCheckError::NoDigitalSignatureUsage)
        }
        _ => Ok(()),
    }
}

fn check_code_signing(cert: &Certificate, required: bool) -> Result<(), CertificateCheckError> {
    let eku = cert
        .tbs_certificate
        .get::<ExtendedKeyUsage>()
        .map_err(|e| {
            CertificateCheckError::MalformedCertificate(format!("extended key usage: {e}"))
        })?;
    match eku {
        Some((_, usages)) if usages.0.contains(&CODE_SIGNING) => Ok(()),
        Some(_) => Err(CertificateCheckError::NoCodeSigningUsage {
            detail: " (its extended key usages do not include it)",
        }),
        None if required => Err(CertificateCheckError::NoCodeSigningUsage {
            detail: " (no extended key usage extension; required for certificates issued by a certChain CA)",
        }),
        None => Ok(()),
    }
}

fn verify_chain(
    chain: &CaChain,
    leaf: &[u8],
    time: SigningTime,
) -> Result<(), CertificateCheckError> {
    let seconds = u64::try_from(time.timestamp().as_second())
        .map_err(|_| CertificateCheckError::TimeOutOfRange(time.to_string()))?;
    let root = CertificateDer::from(chain.root.as_slice());
    let anchor = webpki::anchor_from_trusted_cert(&root)
        .map_err(|e| CertificateCheckError::UntrustedChain(format!("root: {e:?}")))?;
    let intermediates: Vec<CertificateDer<'_>> = chain
        .intermediates
        .iter()
        .map(|d| CertificateDer::from(d.as_slice()))
        .collect();
    // webpki applies one EKU rule to every certificate of the path. The leaf's EKU was
    // required above (step 5); CAs commonly carry no EKU (Go's x509, which cosign uses,
    // treats that as unrestricted), but one that has an EKU must allow code signing.
    let usage = webpki::KeyUsage::required_if_present(ID_KP_CODE_SIGNING);
    verify_webpki_path(leaf, &[anchor], &intermediates, seconds, usage).map_err(|e| match e {
        WebpkiPathError::Malformed(e) => {
            CertificateCheckError::MalformedCertificate(format!("{e:?}"))
        }
        WebpkiPathError::NotValidAt(e) => CertificateCheckError::NotValidAt {
            time,
            detail: format!("a certificate of the chain: {e:?}"),
        },
        WebpkiPathError::Untrusted(e) => CertificateCheckError::UntrustedChain(format!("{e:?}")),
    })?;
    check_validity(&chain.root_cert, time).map_err(|detail| CertificateCheckError::RootNotValidAt {
        subject: chain.root_cert.tbs_certificate.subject.to_string(),
        time,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Certificate {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let der = params.self_signed(&key).unwrap().der().to_vec();
        Certificate::from_der(&der).unwrap()
    }

    fn at(text: &str) -> SigningTime {
        SigningTime::Verification(text.parse().unwrap())
    }

    #[test]
    fn validity_bounds_are_inclusive() {
        let cert = self_signed((2020, 1, 1), (2021, 1, 1));
        assert!(check_validity(&cert, at("2020-01-01T00:00:00Z")).is_ok());
        assert!(check_validity(&cert, at("2021-01-01T00:00:00Z")).is_ok());
    }

    #[test]
    fn validity_names_the_bound_that_was_crossed() {
        let cert = self_signed((2020, 1, 1), (2021, 1, 1));
        assert_eq!(
            check_validity(&cert, at("2019-12-31T23:59:59Z")).unwrap_err(),
            "not valid before 2020-01-01T00:00:00Z"
        );
        assert_eq!(
            check_validity(&cert, at("2021-01-01T00:00:01Z")).unwrap_err(),
            "expired at 2021-01-01T00:00:00Z"
        );
    }

    #[test]
    fn signing_time_says_where_it_came_from() {
        let t: jiff::Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
        assert_eq!(
            SigningTime::Integrated(t).to_string(),
            "integrated time 2026-01-02T03:04:05Z"
        );
        assert_eq!(
            SigningTime::Verification(t).to_string(),
            "verification time 2026-01-02T03:04:05Z (no Rekor bundle)"
        );
    }

    #[test]
    fn cert_chain_without_pem_block_is_refused() {
        assert_eq!(
            CertificateAttestor::new("x", None, Some("k8s://ns/secret")).unwrap_err(),
            CertificateAttestorError::NoCertificate { what: "certChain" }
        );
    }

    #[test]
    fn annotation_with_another_pem_block_is_not_a_certificate() {
        let pem = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
        assert!(matches!(
            annotation_leaf(pem),
            Err(CertificateCheckError::MalformedCertificate(d)) if d.contains("PUBLIC KEY")
        ));
    }

    #[test]
    fn malformed_der_in_cert_is_refused_not_panicked_on() {
        let pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            CertificateAttestor::new("x", Some(pem), None),
            Err(CertificateAttestorError::Malformed { what: "cert", .. })
        ));
    }
}
