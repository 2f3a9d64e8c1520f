//! What the format loaders (`mansign/`, `kyverno/`) build rules with: the load options and
//! errors, the state of one load ([`LoadContext`]), and the attestor-set, key and
//! certificate readers both formats share.

use crate::limits::Limits;
use crate::policy::key_ref::{KeyReference, ResolvedKeys};
use crate::policy::model::Location;
use crate::trust::{TrustRoot, TrustRootError};
use crate::verify::{
    AttestorEntry, AttestorPolicy, AttestorSet, Claim, IdentityPolicyBuilder, Verifier,
};
use serde_json::Value;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a policy file cannot be used. Every variant names the file, and where it applies the
/// document and the field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    #[error("{path}: cannot read policy")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// YAML syntax, a wrong type, or an unknown field (serde names the field path).
    #[error("{origin}: document {document}: {reason}")]
    Syntax {
        origin: String,
        document: usize,
        reason: String,
    },
    #[error(
        "{origin}: document {document}: {api_version} {kind} is not a policy mansign reads \
         (expected mansign.dev/v1alpha1 ManifestPolicy, or kyverno.io ClusterPolicy/Policy)"
    )]
    UnknownKind {
        origin: String,
        document: usize,
        api_version: String,
        kind: String,
    },
    #[error(
        "{at}: dry-run is enabled, but mansign verifies without a cluster and cannot dry-run \
         the signed manifest; refusing the policy (set dryRun.enable: false, and add the \
         fields the cluster changes to ignoreFields)"
    )]
    DryRun { at: Location },
    #[error(
        "{at}: OCI resource bundles (repository {reference:?}) are not supported; mansign \
         reads signatures from the object's annotations only"
    )]
    Repository { at: Location, reference: String },
    #[error("{at}: signature algorithm {algorithm:?} is not supported (only sha256)")]
    SignatureAlgorithm { at: Location, algorithm: String },
    #[error(
        "{at}: key reference {reference:?} is not supported (mansign reads Kubernetes \
         Secrets named k8s://NAMESPACE/NAME and ConfigMap context entries, not KMS keys, \
         environment variables or files named by Kyverno policies); put the PEM public key \
         in the policy, or reference a Secret"
    )]
    KeyReference { at: Location, reference: String },
    /// A field mansign cannot honour; the reason says why and what to do instead.
    #[error("{at}: {reason}")]
    Unsupported { at: Location, reason: String },
    /// A value that is wrong on its own (bad PEM, bad regex, count above entries...).
    #[error("{at}: {reason}")]
    Invalid { at: Location, reason: String },
    #[error("{at}")]
    TrustRoot {
        at: Location,
        #[source]
        source: TrustRootError,
    },
    #[error(
        "{origin}: no manifest verification rules (no ManifestPolicy and no Kyverno rule \
         with validate.manifests)"
    )]
    NoRules { origin: String },
}

/// The documents of a policy or suite file, read with the manifest reader (kubectl's stream
/// rules, both YAML readings, budgets); an error is the document it is in (1-based) and the
/// reason, without the `document N` it starts with.
pub(crate) fn read_documents(
    text: &str,
    limits: &Limits,
) -> Result<Vec<(usize, Value)>, (usize, String)> {
    crate::manifest::parse_documents(text, limits).map_err(|e| {
        let document = e.document().unwrap_or(1);
        (document, without_document(&e.to_string(), document))
    })
}

/// A reader error without the `document N` it starts with: [`PolicyError::Syntax`] names
/// the document itself (`document 1: document 1: not valid YAML` said it twice).
fn without_document(reason: &str, document: usize) -> String {
    let Some(rest) = reason.strip_prefix(&format!("document {document}")) else {
        return reason.to_string();
    };
    if let Some(r) = rest.strip_prefix(": ").or_else(|| rest.strip_prefix(", ")) {
        return r.to_string();
    }
    // ` (line 3, column 4): ...` and ` (from line 5): ...`
    if let Some(r) = rest.strip_prefix(" (")
        && let Some((inside, after)) = r.split_once(')')
    {
        return format!("{inside}{after}");
    }
    reason.to_string()
}

/// Settings for loading policies.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Trust root for keyless entries that name none, and for checking Rekor bundles on
    /// key-signed sets. `None`: the embedded public-good root (loaded on first use). The
    /// loader never reads process state; the CLI passes [`TrustRoot::from_env`].
    pub trust_root: Option<Arc<TrustRoot>>,
    /// Bounds for the verifiers built from the policy.
    pub limits: Limits,
    /// Accept keyless entries without an issuer constraint (`--insecure-any-issuer`): the
    /// subject is still required, every result such an entry accepts says "issuer not
    /// checked", and the loader adds one warning note per entry. A `ManifestPolicy` can
    /// opt in on its own with `spec.insecureAnyIssuer: true`.
    pub insecure_any_issuer: bool,
}

/// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
/// so it is built from [`LoadOptions::default()`] and these, never as a literal.
impl LoadOptions {
    /// Sets `trust_root` to `Some(value)`.
    pub fn with_trust_root(mut self, value: Arc<TrustRoot>) -> Self {
        self.trust_root = Some(value);
        self
    }
}

crate::setters::setters! {
    LoadOptions {
        /// Sets `limits`.
        with_limits => limits: Limits,
        /// Sets `insecure_any_issuer`.
        with_insecure_any_issuer => insecure_any_issuer: bool,
    }
}

/// State shared while loading one file.
pub(crate) struct LoadContext<'a> {
    pub(in crate::policy) options: &'a LoadOptions,
    pub(in crate::policy) base_dir: &'a Path,
    pub(in crate::policy) default_trust: Option<Arc<TrustRoot>>,
    /// The document being loaded opts in to any issuer (`spec.insecureAnyIssuer`).
    pub(in crate::policy) document_any_issuer: bool,
    /// Every file [`LoadContext::resolve`] named, in order.
    pub(in crate::policy) named_files: RefCell<Vec<PathBuf>>,
    /// The values of the key references, as the caller read them.
    pub(in crate::policy) keys: &'a ResolvedKeys,
    /// Every key reference named, in order.
    pub(in crate::policy) key_references: Vec<KeyReference>,
    /// The unresolved references of the rule being loaded (taken by its loader).
    pub(in crate::policy) unresolved: Vec<String>,
    /// The warning notes of the rule being loaded (taken by its loader).
    pub(in crate::policy) notes: Vec<String>,
    /// The `configMap` context entries of the Kyverno rule being loaded: entry name to
    /// (namespace, ConfigMap name).
    pub(in crate::policy) config_maps: std::collections::BTreeMap<String, (String, String)>,
}

impl LoadContext<'_> {
    /// True when keyless entries may leave the issuer unchecked (the load option).
    pub(in crate::policy) fn insecure_any_issuer(&self) -> bool {
        self.options.insecure_any_issuer || self.document_any_issuer
    }

    /// The trust root for entries that name none (loaded once, on first use).
    pub(in crate::policy) fn default_trust(
        &mut self,
        at: &Location,
    ) -> Result<Arc<TrustRoot>, PolicyError> {
        if let Some(t) = &self.default_trust {
            return Ok(t.clone());
        }
        let root = Arc::new(
            TrustRoot::public_good().map_err(|source| PolicyError::TrustRoot {
                at: at.clone(),
                source,
            })?,
        );
        self.default_trust = Some(root.clone());
        Ok(root)
    }

    pub(in crate::policy) fn limits(&self) -> Limits {
        self.options.limits
    }

    /// The public keys `reference` holds (each its own entry, as inline PEM), recorded as
    /// a reference of the policy set. When the value is missing or not usable, the reason
    /// (with `at`, the policy location) goes to the rule's unresolved list and one key
    /// nobody holds stands in for the entry, so the rule keeps its shape; its verifier
    /// then refuses every object (see
    /// [`PolicyRule::unresolved_keys`](crate::policy::PolicyRule::unresolved_keys)).
    pub(in crate::policy) fn referenced_keys(
        &mut self,
        reference: KeyReference,
        at: &Location,
        name: &str,
        trust: Arc<TrustRoot>,
    ) -> Vec<crate::verify::TrustedKey> {
        if !self.key_references.contains(&reference) {
            self.key_references.push(reference.clone());
        }
        let named = format!("{name} ({reference})");
        let keys = self
            .keys
            .get(&reference)
            .map_err(|e| format!("{at}: {}", crate::error::chain(&e)))
            .and_then(|text| {
                if !text.trim_start().starts_with("-----BEGIN") {
                    return Err(format!(
                        "{at}: the value of {reference} is not a PEM public key (it does not \
                         start with -----BEGIN)"
                    ));
                }
                parse_public_keys(text, at, &named, trust.clone())
                    .map_err(|e| format!("{e} (the value of {reference})"))
            });
        match keys {
            Ok(keys) => keys,
            Err(reason) => {
                self.unresolved.push(reason);
                // A fresh key whose private half is dropped here: it verifies nothing.
                let standin = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
                vec![
                    crate::verify::TrustedKey::new(
                        format!("{named}{UNRESOLVED_KEY}"),
                        *standin.verifying_key(),
                    )
                    .with_trust_root(trust),
                ]
            }
        }
    }

    /// The unresolved references of the rule just loaded, and its verifier refusing every
    /// object when there are any.
    pub(in crate::policy) fn finish_rule(&mut self, verifier: Verifier) -> (Verifier, Vec<String>) {
        let unresolved = std::mem::take(&mut self.unresolved);
        if unresolved.is_empty() {
            (verifier, unresolved)
        } else {
            (
                verifier.with_unresolved_keys(unresolved.join("; ")),
                unresolved,
            )
        }
    }

    /// The file a policy names, relative to the policy's directory; remembered as a file
    /// the policy set depends on
    /// ([`PolicySet::named_files`](crate::policy::PolicySet::named_files)).
    pub(in crate::policy) fn resolve(&self, path: &Path) -> PathBuf {
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.base_dir.join(path)
        };
        let mut named = self.named_files.borrow_mut();
        if !named.contains(&full) {
            named.push(full.clone());
        }
        full
    }
}

/// A string field's text, trimmed; `None` when absent or blank (both loaders read optional
/// fields this way).
pub(crate) fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// [`PolicyError::Unsupported`] at `at`.
pub(crate) fn unsupported(at: &Location, reason: impl Into<String>) -> PolicyError {
    PolicyError::Unsupported {
        at: at.clone(),
        reason: reason.into(),
    }
}

/// [`PolicyError::Invalid`] at `at`.
pub(crate) fn invalid(at: &Location, reason: impl Into<String>) -> PolicyError {
    PolicyError::Invalid {
        at: at.clone(),
        reason: reason.into(),
    }
}

/// The end of the name of the stand-in key of an unresolved key reference (see
/// `LoadContext::referenced_keys`): `policy explain` shows the reference, not the stand-in.
pub(crate) const UNRESOLVED_KEY: &str = ": not read";

/// Splits `publicKeys` into PEM public keys; anything that is not PEM is a key reference.
pub(crate) fn parse_public_keys(
    text: &str,
    at: &Location,
    name: &str,
    trust: Arc<TrustRoot>,
) -> Result<Vec<crate::verify::TrustedKey>, PolicyError> {
    let trimmed = text.trim();
    if !trimmed.starts_with("-----BEGIN") {
        return Err(PolicyError::KeyReference {
            at: at.clone(),
            reference: trimmed.chars().take(80).collect(),
        });
    }
    // Strict: a block that lost its END line is refused, not dropped (issue 35, item 8).
    let blocks = crate::keys::pem_blocks(trimmed).map_err(|e| PolicyError::Invalid {
        at: at.clone(),
        reason: format!("not valid PEM: {e}"),
    })?;
    if blocks.is_empty() {
        return Err(PolicyError::Invalid {
            at: at.clone(),
            reason: "no PEM public key found".into(),
        });
    }
    let count = blocks.len();
    blocks
        .iter()
        .enumerate()
        .map(|(i, block)| {
            if block.tag() != "PUBLIC KEY" {
                return Err(PolicyError::Unsupported {
                    at: at.clone(),
                    reason: format!(
                        "PEM block {:?} is not supported (only `PUBLIC KEY`: ECDSA P-256, as \
                         cosign writes it)",
                        block.tag()
                    ),
                });
            }
            let key_name = if count == 1 {
                name.to_string()
            } else {
                format!("{name}#{}", i + 1)
            };
            crate::verify::TrustedKey::from_pem(key_name, &pem::encode(block))
                .map(|k| k.with_trust_root(trust.clone()))
                .map_err(|e| PolicyError::Invalid {
                    at: at.clone(),
                    reason: format!("not a usable public key: {}", crate::error::chain(&e)),
                })
        })
        .collect()
}

/// A certificate attestor from PEM texts (`cert`, `certChain`), checking Rekor bundles
/// against `trust`. Errors are located at the entry and name the field.
pub(crate) fn certificate_attestor(
    name: &str,
    cert: Option<&str>,
    cert_chain: Option<&str>,
    at: &Location,
    trust: Arc<TrustRoot>,
) -> Result<crate::verify::CertificateAttestor, PolicyError> {
    crate::verify::CertificateAttestor::new(name, cert, cert_chain)
        .map(|c| c.with_trust_root(trust))
        .map_err(|e| PolicyError::Invalid {
            at: at.clone(),
            reason: e.to_string(),
        })
}

/// `each` on every item of the list field `field` below `at`, each located at `field[i]`;
/// the results in order, the first error returned.
pub(crate) fn at_each<T, R>(
    at: &Location,
    field: &str,
    items: &[T],
    mut each: impl FnMut(&T, &Location) -> Result<R, PolicyError>,
) -> Result<Vec<R>, PolicyError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| each(item, &at.at(format!("{field}[{i}]"))))
        .collect()
}

/// An attestor set of a policy format (an item of `attestors`, or an entry's nested
/// `attestor`), with what differs between the formats: what `count` means, the checks and
/// kinds of an entry (and the order the error names them in), how each kind is read.
/// [`attestor_set`] reads the sets of both formats with it.
pub(crate) trait AttestorFormat: Sized {
    /// An entry of the set.
    type Entry;
    /// The kinds of an entry, as the error for an entry of none or several names them.
    const KINDS: &'static str;
    /// The set's `count`, as the format reads it, and its entries.
    fn count_and_entries(&self) -> (Option<usize>, &[Self::Entry]);
    /// One entry (`at`: its `entries[j]`), checked: a nested set, or the attestor entries it
    /// stands for.
    fn entry<'e>(
        entry: &'e Self::Entry,
        at: &Location,
        ctx: &mut LoadContext<'_>,
    ) -> Result<FormatEntry<'e, Self>, PolicyError>;
}

/// An attestor entry as its format read it.
pub(crate) enum FormatEntry<'e, S> {
    /// `attestor`: a nested set, read by [`attestor_set`] at `attestor`.
    Nested(&'e S),
    /// Keys (an entry each), a keyless or a certificates entry.
    Read(Vec<AttestorEntry>),
    /// Not exactly one of the format's [`KINDS`](AttestorFormat::KINDS).
    NotOneKind,
}

/// The attestor policy of a rule's `attestors` (below `at`, the rule's spec), each set
/// read by [`attestor_set`] at `attestors[i]`; see [`attestor_policy`] (its notes go to
/// `ctx`).
pub(crate) fn attestor_requirement<F: AttestorFormat>(
    at: &Location,
    sets: &[F],
    ctx: &mut LoadContext<'_>,
) -> Result<AttestorPolicy, PolicyError> {
    let sets = at_each(at, "attestors", sets, |set, at| attestor_set(set, at, ctx))?;
    attestor_policy(sets, &at.at("attestors"), &mut ctx.notes)
}

/// An attestor set of either format: each entry at `entries[j]` (one entry of the policy may
/// stand for several, one per key), a nested set read the same way, then `count` checked
/// against the entries.
pub(crate) fn attestor_set<F: AttestorFormat>(
    set: &F,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<AttestorSet, PolicyError> {
    let (count, entries) = set.count_and_entries();
    let entries = at_each(at, "entries", entries, |entry, at| {
        match F::entry(entry, at, ctx)? {
            FormatEntry::NotOneKind => Err(invalid(
                at,
                format!("an entry needs exactly one of {}", F::KINDS),
            )),
            FormatEntry::Nested(nested) => Ok(vec![AttestorEntry::Nested(attestor_set(
                nested,
                &at.at("attestor"),
                ctx,
            )?)]),
            FormatEntry::Read(entries) => Ok(entries),
        }
    })?;
    AttestorSet::new(count, entries.concat()).map_err(|e| invalid(at, e.to_string()))
}

/// `builder` with the claims that are given: each `exact` value required as it is, each
/// `regex` as an anchored regex (each list in its order).
pub(crate) fn given_claims(
    mut builder: IdentityPolicyBuilder,
    exact: &[(Claim, &Option<String>)],
    regex: &[(Claim, &Option<String>)],
) -> IdentityPolicyBuilder {
    for (claim, value) in exact {
        if let Some(v) = value {
            builder = builder.exact(*claim, v);
        }
    }
    for (claim, pattern) in regex {
        if let Some(p) = pattern {
            builder = builder.regex(*claim, p);
        }
    }
    builder
}

/// Builds the attestor policy, mapping construction errors to the location.
/// The attestor policy of a rule; a warning note for every pair of entries of one set that
/// can never both count toward a `count` (every way to satisfy one needs a signer every way
/// to satisfy the other needs). A nested set that can take another signer is not warned
/// about: `[alice, {count: 1, entries: [alice, bob]}]` is satisfied by alice and bob.
fn attestor_policy(
    sets: Vec<AttestorSet>,
    at: &Location,
    notes: &mut Vec<String>,
) -> Result<AttestorPolicy, PolicyError> {
    let policy = AttestorPolicy::new(sets).map_err(|e| PolicyError::Invalid {
        at: at.clone(),
        reason: e.to_string(),
    })?;
    // Entry paths start with `attestors[..]`, the last segment of `at`.
    let prefix = at.field.strip_suffix("attestors").unwrap_or(&at.field);
    for (first, second) in policy.duplicate_entries() {
        notes.push(format!(
            "{}: document {}: {prefix}{second}: warning: names the same signer as \
             {prefix}{first}, and no choice of distinct signers satisfies both (each signer \
             counts once toward a count)",
            at.origin, at.document
        ));
    }
    Ok(policy)
}
