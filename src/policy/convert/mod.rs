//! `mansign policy convert`: Kyverno `validate.manifests` rules (and kubectl-sigstore
//! configs) as mansign `ManifestPolicy` documents, one per rule (one per `match.any` item),
//! with every keyless entry's issuer pinned.
//!
//! The pipeline:
//!
//! 1. **Load the file as it is** (any issuer allowed): everything the loader refuses
//!    (`dryRun`, `repository`, key references, `roots` outside the trust root, ...) is
//!    refused here too, with its field path.
//! 2. **Carry over** match/exclude (kinds, names, namespaces), attestor sets with `count`,
//!    nested sets, keys, certificates, keyless identities and `roots`, `annotationDomain`
//!    and ignore fields (translated to mansign's anchored patterns, as the loader reads
//!    them). What a `ManifestPolicy` cannot say is refused with the field path; what only
//!    makes the converted rule check more (`match...operations`) is dropped with a note.
//! 3. **Pin the issuer** of keyless entries without one: `--issuer`, or the issuer that
//!    signatures in `--from-signed` manifests show for that subject ([`LearnedIssuers`]):
//!    refused when they show none, several, or a certificate without an issuer.
//!
//! A kubectl-sigstore `verify -c` config (one document of `signers`, `ignoreFields`,
//! `annotationKeyDomain`, ...) becomes one `ManifestPolicy` the same way.
//!
//! A converted rule keeps Kyverno's meaning where mansign's loader gives it one
//! (`ignoreProfile: kubernetes`, `namespaceBinding: ["*"]`), so the converted policy gives
//! the verdicts the original gives under `--insecure-any-issuer`, except where the issuer
//! now decides.

mod conversion;
mod ignore;
mod issuers;
mod kubectl_sigstore;
mod rules;
mod selection;

pub use conversion::{Conversion, ConvertOptions};
pub use issuers::LearnedIssuers;

use crate::annotations::AnnotationDomain;
use crate::manifest::parse_documents;
use crate::policy::kyverno::KyvernoPolicyDocument;
use crate::policy::{LoadOptions, Location, PolicyError, load_str, typed};
use serde_json::Value;
use std::path::Path;

/// Converts the policy documents in `text` (see the module docs). `base_dir` resolves the
/// relative paths of `ManifestPolicy` documents while the input is checked.
///
/// ```no_run
/// use mansign::policy::convert::{ConvertOptions, convert_str};
///
/// let text = std::fs::read_to_string("kyverno-policy.yaml")?;
/// let options =
///     ConvertOptions::default().with_issuer("https://token.actions.githubusercontent.com".into());
/// let conversion = convert_str("kyverno-policy.yaml", &text, ".".as_ref(), &options)?;
/// for note in &conversion.notes {
///     eprintln!("note: {note}");
/// }
/// print!("{}", conversion.to_yaml());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn convert_str(
    origin: &str,
    text: &str,
    base_dir: &Path,
    options: &ConvertOptions,
) -> Result<Conversion, PolicyError> {
    if let Some(config) = kubectl_sigstore::kubectl_sigstore_config(origin, text, options)? {
        return Ok(config);
    }
    // 1. the loader's refusals, with any issuer allowed (the issuer is pinned below)
    let check = LoadOptions {
        insecure_any_issuer: true,
        ..options.load.clone()
    };
    load_str(origin, text, base_dir, &check)?;
    let documents =
        parse_documents(text, &options.load.limits).map_err(|e| PolicyError::Syntax {
            origin: origin.into(),
            document: e.document().unwrap_or(1),
            reason: e.to_string(),
        })?;
    let mut kyverno = Vec::new();
    let mut domains = vec![AnnotationDomain::default()];
    for (position, value) in &documents {
        if value.get("apiVersion").and_then(Value::as_str)
            == Some(crate::policy::mansign::API_VERSION)
        {
            continue;
        }
        let doc: KyvernoPolicyDocument =
            typed::from_value(value).map_err(|reason| PolicyError::Syntax {
                origin: origin.into(),
                document: position + 1,
                reason,
            })?;
        for rule in &doc.spec.rules {
            if let Some(d) = rule
                .validate
                .as_ref()
                .and_then(|v| v.manifests.as_ref())
                .and_then(|m| m.annotation_domain.as_deref())
                .and_then(|d| AnnotationDomain::new(d.trim()).ok())
                && !domains.contains(&d)
            {
                domains.push(d);
            }
        }
        kyverno.push((*position, doc));
    }
    // 3. (prepared) what the signed manifests teach
    let ctx = issuers::learn(origin, options, &domains)?;
    let mut out = Conversion::default();
    let mut kyverno = kyverno.into_iter().peekable();
    for (position, value) in documents {
        let loc = Location {
            origin: origin.into(),
            document: position + 1,
            field: String::new(),
        };
        if value.get("apiVersion").and_then(Value::as_str)
            == Some(crate::policy::mansign::API_VERSION)
        {
            out.documents.push(value);
            continue;
        }
        if let Some((_, doc)) = kyverno.next_if(|(p, _)| *p == position) {
            rules::convert_document(&doc, &loc, &ctx, &mut out)?;
        }
    }
    Ok(out)
}
