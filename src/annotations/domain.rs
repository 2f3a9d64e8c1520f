//! Annotation key names under a configurable domain.

use std::fmt;

/// An annotation domain that is not a lowercase DNS subdomain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation domain {domain:?} is not a lowercase DNS subdomain")]
pub struct AnnotationDomainError {
    /// The domain refused.
    pub domain: String,
}

/// The annotation domain, `cosign.sigstore.dev` unless configured otherwise (Kyverno's
/// `annotationDomain`, kubectl-sigstore's `annotationKeyDomain`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AnnotationDomain(String);

impl Default for AnnotationDomain {
    fn default() -> Self {
        AnnotationDomain(Self::DEFAULT.to_string())
    }
}

impl fmt::Display for AnnotationDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AnnotationDomain {
    pub const DEFAULT: &'static str = "cosign.sigstore.dev";

    /// A domain must be a DNS subdomain (what Kubernetes allows as an annotation prefix).
    pub fn new(domain: &str) -> Result<Self, AnnotationDomainError> {
        let ok = !domain.is_empty()
            && domain.len() <= 253
            && domain.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if ok {
            Ok(AnnotationDomain(domain.to_string()))
        } else {
            Err(AnnotationDomainError {
                domain: domain.to_string(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn indexed(&self, base: &str, index: usize) -> String {
        if index == 0 {
            format!("{}/{}", self.0, base)
        } else {
            format!("{}/{}_{}", self.0, base, index)
        }
    }

    pub fn message_key(&self) -> String {
        format!("{}/message", self.0)
    }

    pub fn signature_key(&self, index: usize) -> String {
        self.indexed("signature", index)
    }

    pub fn certificate_key(&self, index: usize) -> String {
        self.indexed("certificate", index)
    }

    pub fn bundle_key(&self, index: usize) -> String {
        self.indexed("bundle", index)
    }

    /// True for the keys that carry signature material and so are left out of M and of
    /// the comparison: `message`, `resourceBundleRef`, and `signature`, `certificate`,
    /// `bundle` with an optional `_N` suffix. Exact names only; kubectl-sigstore masks
    /// every key starting with these names, which would let `…/bundle-extra` through
    /// unsigned.
    pub fn is_signature_key(&self, key: &str) -> bool {
        let Some(name) = key
            .strip_prefix(self.0.as_str())
            .and_then(|k| k.strip_prefix('/'))
        else {
            return false;
        };
        if name == "message" || name == "resourceBundleRef" {
            return true;
        }
        ["signature", "certificate", "bundle"].iter().any(|base| {
            name.strip_prefix(base).is_some_and(|suffix| {
                suffix.is_empty()
                    || suffix.strip_prefix('_').is_some_and(|n| {
                        !n.is_empty()
                            && n.chars().all(|c| c.is_ascii_digit())
                            && !n.starts_with('0')
                    })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_upstream_naming() {
        let d = AnnotationDomain::default();
        assert_eq!(d.message_key(), "cosign.sigstore.dev/message");
        assert_eq!(d.signature_key(0), "cosign.sigstore.dev/signature");
        assert_eq!(d.signature_key(2), "cosign.sigstore.dev/signature_2");
        assert_eq!(d.certificate_key(1), "cosign.sigstore.dev/certificate_1");
        assert_eq!(d.bundle_key(0), "cosign.sigstore.dev/bundle");
    }

    #[test]
    fn signature_keys_are_matched_exactly() {
        let d = AnnotationDomain::default();
        for k in [
            "message",
            "signature",
            "signature_1",
            "certificate_12",
            "bundle",
            "resourceBundleRef",
        ] {
            assert!(
                d.is_signature_key(&format!("cosign.sigstore.dev/{k}")),
                "{k}"
            );
        }
        for k in [
            "cosign.sigstore.dev/signatures",
            "cosign.sigstore.dev/bundle-extra",
            "cosign.sigstore.dev/signature_",
            "cosign.sigstore.dev/signature_01",
            "other.dev/signature",
            "cosign.sigstore.dev.evil/signature",
        ] {
            assert!(!d.is_signature_key(k), "{k}");
        }
    }

    #[test]
    fn rejects_invalid_domains() {
        assert!(AnnotationDomain::new("example.com").is_ok());
        for bad in ["", "Upper.com", "a/b", "-a.com", "a..b"] {
            assert!(AnnotationDomain::new(bad).is_err(), "{bad}");
        }
    }
}
