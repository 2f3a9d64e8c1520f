//! Pinning the issuer of keyless entries that name none: `--issuer`, or the one issuer the
//! verified keyless signatures of the entry's subject show in `--from-signed` manifests.

use super::conversion::{Conversion, ConvertOptions, text};
use crate::annotations::{AnnotationDomain, extract};
use crate::limits::Limits;
use crate::manifest::Document;
use crate::policy::kyverno::KeylessSpec;
use crate::policy::{Location, PolicyError};
use crate::trust::TrustRoot;
use crate::verify::{AnchoredRegex, verify_certificate_set};
use std::collections::{BTreeMap, BTreeSet};

/// Signers seen in signed manifests: for each certificate subject, the issuers of the
/// keyless signatures that verified (chain, SCT, Rekor entry, signature over the message)
/// against the trust root. `None` is a certificate without an issuer extension (2021).
#[derive(Debug, Clone, Default)]
pub struct LearnedIssuers {
    by_subject: BTreeMap<String, BTreeMap<Option<String>, usize>>,
    /// Every keyless set that verified, to check a kept `keyless.roots` against.
    samples: Vec<Sample>,
}

/// One verified keyless signature of `--from-signed`.
#[derive(Debug, Clone)]
struct Sample {
    subject: String,
    /// `FILE: document N`.
    origin: String,
    message: Vec<u8>,
    set: crate::annotations::SignatureSet,
}

impl LearnedIssuers {
    /// Verifies every keyless signature set of every document (annotations of `domains`)
    /// against `trust`; sets that do not verify teach nothing.
    pub fn learn(
        documents: &[Document],
        domains: &[AnnotationDomain],
        trust: &TrustRoot,
        limits: &Limits,
    ) -> Self {
        let mut learned = LearnedIssuers::default();
        for doc in documents {
            for domain in domains {
                let Ok(signed) = extract(&doc.value, domain, limits) else {
                    continue;
                };
                for set in &signed.sets {
                    if let Ok(evidence) = verify_certificate_set(trust, &signed.message, set) {
                        learned.samples.push(Sample {
                            subject: evidence.subject.as_str().to_string(),
                            origin: doc.origin.to_string(),
                            message: signed.message.clone(),
                            set: set.clone(),
                        });
                        *learned
                            .by_subject
                            .entry(evidence.subject.as_str().to_string())
                            .or_default()
                            .entry(evidence.issuer)
                            .or_default() += 1;
                    }
                }
            }
        }
        learned
    }

    /// Issuers (with how many signatures showed each) for subjects the matcher accepts.
    fn issuers_for(&self, matches: impl Fn(&str) -> bool) -> BTreeMap<Option<String>, usize> {
        let mut out = BTreeMap::new();
        for (subject, issuers) in &self.by_subject {
            if matches(subject) {
                for (issuer, n) in issuers {
                    *out.entry(issuer.clone()).or_default() += n;
                }
            }
        }
        out
    }

    /// True when nothing was learned.
    pub fn is_empty(&self) -> bool {
        self.by_subject.is_empty()
    }
}

/// How issuers are pinned while converting.
pub(super) struct Convert {
    issuer: Option<String>,
    learned: LearnedIssuers,
    /// The trust root `--from-signed` was verified against (none without samples).
    trust: Option<std::sync::Arc<TrustRoot>>,
}

/// A kept `keyless.roots` (`roots`, at `at`) that does not chain the `--from-signed`
/// certificates of the entry's subject: mansign will refuse those signatures, though
/// Kyverno, which ignores the field, admits them. One warning per sample that fails.
pub(super) fn check_kept_roots(
    k: &KeylessSpec,
    roots: &str,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) {
    let Some(trust) = &options.trust else {
        return;
    };
    // A roots value the loader refuses is reported when the converted policy loads.
    let Ok(narrowed) = crate::policy::kyverno::roots_trust(roots, at, trust) else {
        return;
    };
    let regex = text(&k.subject_reg_exp).and_then(|re| AnchoredRegex::new(re).ok());
    let matches = |subject: &str| match (text(&k.subject), &regex) {
        (Some(s), _) => s == subject,
        (None, Some(re)) => re.is_match(subject),
        (None, None) => true,
    };
    for sample in options
        .learned
        .samples
        .iter()
        .filter(|s| matches(&s.subject))
    {
        if verify_certificate_set(&narrowed, &sample.message, &sample.set).is_err() {
            let issuer = crate::verify::sigstore_leaf_issuer_name(&sample.set)
                .unwrap_or_else(|| "an unreadable issuer".into());
            out.notes.push(format!(
                "{at}: warning: the roots kept here ({}) do not chain the certificate of \
                 {} in {} (issued by {issuer}), which verifies under the trust root: the \
                 converted policy refuses that signature, while Kyverno, which ignores \
                 keyless.roots for manifests (docs/compatibility.md#keyless-roots), admits \
                 it; name the root that issued it, or drop roots",
                narrowed.policy_roots().unwrap_or("?"),
                sample.subject,
                sample.origin,
            ));
        }
    }
}

/// What `--issuer` and `--from-signed` give, learned with these annotation domains.
pub(super) fn learn(
    origin: &str,
    options: &ConvertOptions,
    domains: &[AnnotationDomain],
) -> Result<Convert, PolicyError> {
    let mut used_trust = None;
    let learned = if options.from_signed.is_empty() {
        LearnedIssuers::default()
    } else {
        let trust = match &options.load.trust_root {
            Some(t) => t.clone(),
            None => std::sync::Arc::new(TrustRoot::public_good().map_err(|source| {
                PolicyError::TrustRoot {
                    at: Location {
                        origin: origin.into(),
                        document: 1,
                        field: String::new(),
                    },
                    source,
                }
            })?),
        };
        let learned =
            LearnedIssuers::learn(&options.from_signed, domains, &trust, &options.load.limits);
        used_trust = Some(trust);
        learned
    };
    Ok(Convert {
        issuer: options.issuer.clone(),
        learned,
        trust: used_trust,
    })
}

/// The issuer for a keyless entry that names none: `--issuer`, or the one issuer that
/// signatures from the entry's subject show in `--from-signed`.
pub(super) fn pinned_issuer(
    k: &KeylessSpec,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<String, PolicyError> {
    let invalid = |reason: String| PolicyError::Invalid {
        at: at.clone(),
        reason,
    };
    if let Some(issuer) = &options.issuer {
        out.notes
            .push(format!("{at}: issuer {issuer} (from --issuer)"));
        return Ok(issuer.clone());
    }
    let (what, issuers) = match (text(&k.subject), text(&k.subject_reg_exp)) {
        (Some(s), _) => (
            format!("subject {s}"),
            options.learned.issuers_for(|x| x == s),
        ),
        (None, Some(re)) => {
            let re = AnchoredRegex::new(re)
                .map_err(|e| invalid(format!("subjectRegExp {re:?}: {e}")))?;
            (
                format!("subjectRegExp {}", re.pattern()),
                options.learned.issuers_for(|x| re.is_match(x)),
            )
        }
        (None, None) => {
            return Err(invalid(
                "no issuer and no subject to learn it for; pass --issuer URL".into(),
            ));
        }
    };
    if options.learned.is_empty() && issuers.is_empty() {
        return Err(invalid(format!(
            "no issuer for {what}: pass --issuer URL, or --from-signed with manifests it \
             signed so mansign can learn it"
        )));
    }
    let listed: BTreeSet<String> = issuers
        .keys()
        .map(|i| i.clone().unwrap_or_else(|| "(no issuer extension)".into()))
        .collect();
    match issuers.iter().collect::<Vec<_>>().as_slice() {
        [] => Err(invalid(format!(
            "no signature in --from-signed verifies with {what}; cannot learn its issuer \
             (pass --issuer URL)"
        ))),
        [(None, _)] => Err(invalid(format!(
            "the signatures of {what} in --from-signed have certificates without an issuer \
             extension (2021 Fulcio); an issuer cannot be pinned for them"
        ))),
        [(Some(issuer), n)] => {
            out.notes.push(format!(
                "{at}: learned issuer {issuer} for {what} from {n} verified signature(s) in \
                 --from-signed"
            ));
            Ok(issuer.clone())
        }
        _ => Err(invalid(format!(
            "{what} signed with several issuers in --from-signed ({}); pick one with --issuer",
            listed.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
}
