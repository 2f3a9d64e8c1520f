//! Who signed a verified signature set: a trusted key, a Fulcio certificate (keyless) or a
//! certificate of the policy's own PKI, with the transparency-log entry when there is one.

use super::evidence::{RekorEvidence, SigstoreEvidence, WorkflowClaims};
use serde::Serialize;
use std::fmt;

/// Who signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SignerInfo {
    /// A trusted public key; with the Rekor entry when the set carried a bundle.
    #[serde(rename_all = "camelCase")]
    Key {
        name: String,
        fingerprint: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        transparency_log: Option<RekorEvidence>,
    },
    /// A Fulcio certificate (keyless), verified against a trust root.
    #[serde(rename_all = "camelCase")]
    Certificate {
        /// SAN: email or URI.
        subject: String,
        /// OIDC issuer (extension `.1.8`, else `.1.1`); absent on 2021 certificates.
        issuer: Option<String>,
        /// GitHub workflow and other CI claims stated by the certificate.
        #[serde(skip_serializing_if = "no_claims")]
        claims: Box<WorkflowClaims>,
        log_index: u64,
        log_id: String,
        /// RFC 3339 UTC.
        integrated_time: String,
        /// Hex SHA-256 of the certificate's public key (SubjectPublicKeyInfo DER).
        key_fingerprint: String,
    },
    /// An X.509 certificate of a certificate attestor (pinned, or chained to the policy's
    /// CA chain); with the Rekor entry when the set carried a bundle.
    #[serde(rename = "signing-certificate", rename_all = "camelCase")]
    SigningCertificate {
        /// Subject distinguished name (RFC 4514).
        subject: String,
        /// Hex SHA-256 of the certificate DER.
        fingerprint: String,
        /// Hex SHA-256 of the certificate's public key (SubjectPublicKeyInfo DER).
        key_fingerprint: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        transparency_log: Option<RekorEvidence>,
    },
}

/// Who a signer is, for counting distinct signers toward an attestor set's `count`: the
/// public key that made the signature ([`key`](Self::key)), and what names it
/// ([`name`](Self::name)).
///
/// Two signers are the **same signer** when they share the key (however its PEM is
/// wrapped, whether it is seen as a trusted key or inside a certificate, whatever the
/// certificate's subject), or share a keyless identity (issuer and subject: one workflow
/// that signed twice is one signer, whatever its certificates), or share a PKI certificate
/// subject. The attestor sets group signers by these rules, transitively
/// (`attestor_set.rs`); equality of this value alone is not the rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignerIdentity {
    /// Hex SHA-256 of the signing key's SubjectPublicKeyInfo DER (P-256 keys re-encoded).
    pub key: String,
    pub name: SignerName,
}

/// What names a signer besides its key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SignerName {
    /// A trusted key: the key is the whole identity.
    Key,
    /// A Fulcio certificate: issuer and subject.
    Keyless {
        issuer: Option<String>,
        subject: String,
    },
    /// A certificate of the policy's own PKI: its subject.
    Certificate { subject: String },
}

impl SignerIdentity {
    /// True when `self` and `other` are the same signer by one of the rules above (not
    /// transitively).
    pub fn same_signer(&self, other: &SignerIdentity) -> bool {
        self.key == other.key || (self.name != SignerName::Key && self.name == other.name)
    }
}

impl fmt::Display for SignerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key[..self.key.len().min(16)];
        match &self.name {
            SignerName::Key => write!(f, "key sha256:{key}"),
            SignerName::Keyless { issuer, subject } => match issuer {
                Some(issuer) => write!(f, "{subject} (issuer {issuer}, key sha256:{key})"),
                None => write!(f, "{subject} (key sha256:{key})"),
            },
            SignerName::Certificate { subject } => {
                write!(f, "certificate {subject} (key sha256:{key})")
            }
        }
    }
}

/// Why a signer has no credible signing time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::verify) enum Undated {
    /// No signed time, and the log time (if any) is not a signing time for this signer.
    NoSignedTime,
    /// The signed time is later than the log entry, beyond the tolerated skew.
    SignedAfterLogged {
        signed_at: jiff::Timestamp,
        logged_at: jiff::Timestamp,
    },
}

/// Tolerated clock skew between a signer's `mansign.dev/signed-at` and the log's integrated
/// time (the signature is made before it is logged; the signer's clock may run ahead).
const SIGNED_AT_SKEW: jiff::SignedDuration = jiff::SignedDuration::from_mins(5);

impl SignerInfo {
    /// When this signer signed, for the maximum age: the signed time of the document
    /// (`signed_at`), bounded by the transparency-log time (the earlier counts). Without a
    /// signed time, only a keyless signature is dated, by its log time (its certificate
    /// lived minutes and must be valid then); a key's log time is not a signing time.
    pub(in crate::verify) fn signing_time(
        &self,
        signed_at: Option<jiff::Timestamp>,
    ) -> Result<jiff::Timestamp, Undated> {
        match (self, signed_at, self.logged_at()) {
            (_, Some(signed), Some(logged)) => {
                if signed > logged.saturating_add(SIGNED_AT_SKEW).unwrap_or(logged) {
                    return Err(Undated::SignedAfterLogged {
                        signed_at: signed,
                        logged_at: logged,
                    });
                }
                Ok(signed.min(logged))
            }
            (_, Some(signed), None) => Ok(signed),
            (SignerInfo::Certificate { .. }, None, Some(logged)) => Ok(logged),
            (_, None, _) => Err(Undated::NoSignedTime),
        }
    }

    /// Who signed, for counting distinct signers.
    pub fn identity(&self) -> SignerIdentity {
        match self {
            SignerInfo::Key { fingerprint, .. } => SignerIdentity {
                key: fingerprint.clone(),
                name: SignerName::Key,
            },
            SignerInfo::Certificate {
                subject,
                issuer,
                key_fingerprint,
                ..
            } => SignerIdentity {
                key: key_fingerprint.clone(),
                name: SignerName::Keyless {
                    issuer: issuer.clone(),
                    subject: subject.clone(),
                },
            },
            SignerInfo::SigningCertificate {
                subject,
                key_fingerprint,
                ..
            } => SignerIdentity {
                key: key_fingerprint.clone(),
                name: SignerName::Certificate {
                    subject: subject.clone(),
                },
            },
        }
    }

    /// The signer of a verified keyless set.
    pub fn from_evidence(evidence: SigstoreEvidence) -> Self {
        SignerInfo::Certificate {
            subject: evidence.subject.as_str().to_string(),
            issuer: evidence.issuer,
            claims: Box::new(evidence.claims),
            log_index: evidence.rekor.log_index,
            integrated_time: evidence.rekor.integrated_time_rfc3339(),
            log_id: evidence.rekor.log_id,
            key_fingerprint: evidence.key_fingerprint,
        }
    }
}

impl SignerInfo {
    /// When the transparency log recorded the signature, if it did.
    pub fn logged_at(&self) -> Option<jiff::Timestamp> {
        match self {
            SignerInfo::Key {
                transparency_log, ..
            }
            | SignerInfo::SigningCertificate {
                transparency_log, ..
            } => transparency_log
                .as_ref()
                .and_then(|r| jiff::Timestamp::from_second(r.integrated_time).ok()),
            SignerInfo::Certificate {
                integrated_time, ..
            } => integrated_time.parse().ok(),
        }
    }
}

fn no_claims(claims: &WorkflowClaims) -> bool {
    claims.is_empty()
}

impl fmt::Display for SignerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignerInfo::Key {
                name,
                fingerprint,
                transparency_log,
            } => {
                write!(
                    f,
                    "key {name} (sha256:{})",
                    &fingerprint[..fingerprint.len().min(16)]
                )?;
                write_transparency_log(f, transparency_log)
            }
            SignerInfo::Certificate {
                subject,
                issuer,
                log_index,
                integrated_time,
                ..
            } => {
                write!(f, "subject {subject} ")?;
                match issuer {
                    Some(issuer) => write!(f, "(issuer {issuer})")?,
                    None => f.write_str("(no issuer extension)")?,
                }
                write!(f, ", rekor log index {log_index} at {integrated_time}")
            }
            SignerInfo::SigningCertificate {
                subject,
                fingerprint,
                transparency_log,
                ..
            } => {
                write!(
                    f,
                    "certificate {subject} (sha256:{})",
                    &fingerprint[..fingerprint.len().min(16)]
                )?;
                write_transparency_log(f, transparency_log)
            }
        }
    }
}

fn write_transparency_log(
    f: &mut fmt::Formatter<'_>,
    transparency_log: &Option<RekorEvidence>,
) -> fmt::Result {
    if let Some(rekor) = transparency_log {
        write!(
            f,
            ", rekor log index {} at {}",
            rekor.log_index,
            rekor.integrated_time_rfc3339()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn certificate(issuer: Option<&str>, claims: WorkflowClaims) -> SignerInfo {
        SignerInfo::Certificate {
            subject: "https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main"
                .into(),
            issuer: issuer.map(Into::into),
            claims: Box::new(claims),
            log_index: 123,
            log_id: "c0d2".into(),
            integrated_time: "2026-01-02T03:04:05Z".into(),
            key_fingerprint: "0011".into(),
        }
    }

    #[test]
    fn certificate_signer_displays_subject_issuer_and_log_entry() {
        let s = certificate(
            Some("https://token.actions.githubusercontent.com"),
            WorkflowClaims::default(),
        );
        assert_eq!(
            s.to_string(),
            "subject https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main \
             (issuer https://token.actions.githubusercontent.com), rekor log index 123 at \
             2026-01-02T03:04:05Z"
        );
    }

    #[test]
    fn certificate_signer_without_issuer_extension_says_so() {
        let s = certificate(None, WorkflowClaims::default());
        assert!(s.to_string().contains("(no issuer extension)"), "{s}");
    }

    #[test]
    fn certificate_signer_json_carries_workflow_claims_in_camel_case() {
        let claims = WorkflowClaims {
            github_workflow_repository: Some("org/repo".into()),
            ..WorkflowClaims::default()
        };
        let v = serde_json::to_value(certificate(Some("https://i"), claims)).unwrap();
        assert_eq!(v["kind"], "certificate");
        assert_eq!(v["logIndex"], 123);
        assert_eq!(v["claims"], json!({"githubWorkflowRepository": "org/repo"}));
    }

    fn signing_certificate(transparency_log: Option<RekorEvidence>) -> SignerInfo {
        SignerInfo::SigningCertificate {
            subject: "CN=release,O=Acme".into(),
            fingerprint: "0123456789abcdef0123".into(),
            key_fingerprint: "fedc".into(),
            transparency_log,
        }
    }

    #[test]
    fn signing_certificate_signer_displays_subject_and_fingerprint() {
        assert_eq!(
            signing_certificate(None).to_string(),
            "certificate CN=release,O=Acme (sha256:0123456789abcdef)"
        );
    }

    #[test]
    fn signing_certificate_signer_displays_its_log_entry() {
        let rekor = RekorEvidence {
            log_index: 7,
            log_id: "c0d2".into(),
            integrated_time: 1_767_323_045,
        };
        assert!(
            signing_certificate(Some(rekor))
                .to_string()
                .ends_with(", rekor log index 7 at 2026-01-02T03:04:05Z")
        );
    }

    #[test]
    fn signing_certificate_signer_json_has_kind_and_omits_absent_log() {
        assert_eq!(
            serde_json::to_value(signing_certificate(None)).unwrap(),
            json!({
                "kind": "signing-certificate",
                "subject": "CN=release,O=Acme",
                "fingerprint": "0123456789abcdef0123",
                "keyFingerprint": "fedc"
            })
        );
    }

    #[test]
    fn signing_certificate_signer_is_logged_at_its_integrated_time() {
        let rekor = RekorEvidence {
            log_index: 7,
            log_id: "c0d2".into(),
            integrated_time: 1_767_323_045,
        };
        assert_eq!(
            signing_certificate(Some(rekor)).logged_at(),
            Some(jiff::Timestamp::from_second(1_767_323_045).unwrap())
        );
        assert_eq!(signing_certificate(None).logged_at(), None);
    }

    #[test]
    fn one_key_is_one_signer_whatever_names_it() {
        let key = SignerInfo::Key {
            name: "k".into(),
            fingerprint: "fedc".into(),
            transparency_log: None,
        };
        // signing_certificate() holds the key "fedc" under the subject CN=release,O=Acme
        let pki = signing_certificate(None);
        assert!(key.identity().same_signer(&pki.identity()));
        let renamed = SignerInfo::SigningCertificate {
            subject: "CN=someone-else".into(),
            fingerprint: "99".into(),
            key_fingerprint: "fedc".into(),
            transparency_log: None,
        };
        assert!(pki.identity().same_signer(&renamed.identity()));
        // a keyless identity is one signer across its certificates' keys
        let keyless = certificate(Some("https://i"), WorkflowClaims::default());
        let mut other_key = keyless.clone();
        if let SignerInfo::Certificate {
            key_fingerprint, ..
        } = &mut other_key
        {
            *key_fingerprint = "1234".into();
        }
        assert!(keyless.identity().same_signer(&other_key.identity()));
        // different keys that only keys name are different signers
        let other = SignerInfo::Key {
            name: "k".into(),
            fingerprint: "abcd".into(),
            transparency_log: None,
        };
        assert!(!key.identity().same_signer(&other.identity()));
        assert!(!key.identity().same_signer(&keyless.identity()));
    }

    #[test]
    fn key_signer_json_omits_absent_transparency_log() {
        let s = SignerInfo::Key {
            name: "k".into(),
            fingerprint: "ab".into(),
            transparency_log: None,
        };
        assert_eq!(
            serde_json::to_value(s).unwrap(),
            json!({"kind": "key", "name": "k", "fingerprint": "ab"})
        );
    }
}
