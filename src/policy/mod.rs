//! Policy files: which objects must be signed, by whom, and what may differ.
//!
//! Two formats load into the same [`PolicySet`] (format reference: `docs/policy.md`):
//!
//! * mansign's own `mansign.dev/v1alpha1` `ManifestPolicy` ([`mansign`]);
//! * Kyverno `ClusterPolicy` / `Policy` documents (`kyverno.io/v1`, `v2beta1`) whose rules
//!   have `validate.manifests` ([`kyverno`]), unchanged. What mansign cannot honour
//!   (dry-run, OCI bundles, key references, ...) is refused when the file is loaded, with
//!   the file, document and field named — never silently ignored.
//!
//! A policy set is a list of rules. Each rule selects objects (`match`/`exclude`), requires
//! an [`AttestorPolicy`] (attestor sets ANDed, `count` N-of-M, nesting) and says which
//! fields may differ. An object must pass **every** rule that applies to it; an object no
//! rule applies to is reported as not verified.
//!
//! ```no_run
//! use mansign::manifest::load_inputs;
//! use mansign::policy::{LoadOptions, RequestContext, load_file};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = load_file("policy.yaml".as_ref(), &LoadOptions::default())?;
//! let files = load_inputs(&["signed.yaml".into()], &mansign::Limits::default())?;
//! let verdict =
//!     policy.verify_documents(files.iter().flat_map(|f| &f.documents), &RequestContext::default());
//! for object in &verdict.objects {
//!     println!("{object}"); // per rule: the attestor entries that matched, or why not
//! }
//! # Ok(())
//! # }
//! ```

mod action;
pub mod convert;
mod evaluate;
pub mod explain;
mod fields;
mod key_ref;
pub mod kyverno;
pub mod mansign;
mod selector;
pub mod test_suite;
mod typed;
mod verdict;

pub use action::{ActionOverride, FailureAction, FailureActions};
pub use evaluate::{CacheMode, Evaluation, evaluate_rules};
pub use fields::{mansign_field_pattern, translate_upstream_field};
pub use key_ref::{COSIGN_PUB, KeyObject, KeyReference, ResolvedKeys, parse_data_variable};
pub use selector::{
    KindSelector, MatchResources, ObjectReference, RequestContext, ResourceDescription,
    ResourceFilter, RuleSelector, Subject, UserInfo, glob_match,
};
pub use verdict::{ObjectVerdict, PolicyVerdict, RuleVerdict};

use crate::limits::Limits;
use crate::manifest::{
    Document, DocumentOrigin, FieldPattern, GitopsBindings, GroupKind, IgnoreFields,
    IgnoreProfiles, ObjectIdentity, Source, Tolerances,
};
use crate::trust::{TrustRoot, TrustRootError};
use crate::verify::{
    AttestorEntry, AttestorPolicy, AttestorSet, Claim, IdentityPolicyBuilder, Verifier,
};
use serde_json::Value;
use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where in a policy file something is: file, document (1-based) and field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub origin: String,
    pub document: usize,
    pub field: String,
}

impl Location {
    fn at(&self, field: impl fmt::Display) -> Location {
        Location {
            origin: self.origin.clone(),
            document: self.document,
            field: if self.field.is_empty() {
                field.to_string()
            } else {
                format!("{}.{field}", self.field)
            },
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.origin, self.document)?;
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        Ok(())
    }
}

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

/// Where a document signed without a namespace is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceBinding {
    /// Nowhere but cluster scope: the object must have no namespace either.
    Strict,
    /// In whatever namespace the object is (Kyverno: `metadata.namespace` is ignored for
    /// documents signed without one; a document signed *with* a namespace still binds).
    AnyNamespace,
    /// Only in these namespaces.
    Listed(Vec<String>),
}

/// Fields that may differ for the objects a binding selects.
#[derive(Debug, Clone)]
pub struct IgnoreBinding {
    /// Empty: every object.
    pub objects: Vec<ObjectReference>,
    pub fields: Vec<FieldPattern>,
}

/// One rule: which objects, which signers, which differences.
#[derive(Debug, Clone)]
pub struct PolicyRule {
    /// `metadata.name` of the policy document.
    pub policy: String,
    pub rule: String,
    /// Where the rule was defined.
    pub location: Location,
    pub selector: RuleSelector,
    /// Objects must be in this namespace (a namespaced Kyverno `Policy`).
    pub namespace: Option<String>,
    /// Requirement, annotation domain and limits (ignore fields and tolerances are set per
    /// object).
    pub verifier: Verifier,
    pub ignore: Vec<IgnoreBinding>,
    /// The ignore profiles that apply (`kubernetes,argocd`).
    pub profiles: IgnoreProfiles,
    /// Custom kinds whose `status` is a subresource (see [`Tolerances::status_kinds`]).
    pub status_kinds: Vec<GroupKind>,
    /// The values the `argocd` and `flux` profiles accept (see [`Tolerances::gitops`]).
    pub gitops: GitopsBindings,
    pub digest_pinning: bool,
    pub namespace_binding: NamespaceBinding,
    /// What a failure of this rule does in the cluster (`Enforce` or `Audit`, per
    /// namespace). Offline every failure fails the run.
    pub failure_action: FailureActions,
    /// Which format the rule came from, and what it said about enforcement.
    pub source: RuleSource,
    /// The public keys this rule names by reference ([`KeyReference`]) whose value was not
    /// available or not usable when it was loaded, each with the reason and the policy
    /// location. Non-empty: the rule's verifier refuses every object
    /// ([`Rejection::KeyUnresolved`](crate::verify::Rejection::KeyUnresolved)), and the
    /// failure is enforced whatever the rule's failure action.
    pub unresolved_keys: Vec<String>,
}

/// The format a rule was written in (for `policy explain`: what differs from the source).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RuleSource {
    /// mansign's `ManifestPolicy`.
    #[default]
    Mansign,
    /// A Kyverno `ClusterPolicy`/`Policy` rule, with the action it names as written: its
    /// `validate.failureAction`, else the policy's `spec.validationFailureAction` (`Enforce`,
    /// `enforce`, `Audit`, `audit`); `None` when neither is set. The effective action is
    /// [`PolicyRule::failure_action`].
    Kyverno { failure_action: Option<String> },
}

impl PolicyRule {
    /// True if this rule applies to the object. An object without a namespace may be
    /// applied into any namespace, so a namespaced `Policy` applies to it too.
    pub fn applies_to(&self, object: &Value, id: &ObjectIdentity, ctx: &RequestContext) -> bool {
        match (&self.namespace, &id.namespace) {
            (Some(ns), Some(object_ns)) if ns != object_ns => return false,
            // A request's object without a namespace is cluster-scoped: a namespaced
            // `Policy` does not apply to it.
            (Some(_), None) if ctx.namespace_known => return false,
            _ => {}
        }
        self.selector.applies_to(object, id, ctx)
    }

    /// The verifier for one object: the rule's requirement with the ignore fields and
    /// tolerances that apply to this object.
    pub fn verifier_for(&self, id: &ObjectIdentity) -> Verifier {
        let fields = self
            .ignore
            .iter()
            .filter(|b| b.objects.is_empty() || b.objects.iter().any(|o| o.matches(id)))
            .flat_map(|b| b.fields.iter().cloned())
            .collect();
        let namespace_binding = match &self.namespace_binding {
            NamespaceBinding::Strict => Vec::new(),
            NamespaceBinding::AnyNamespace => id.namespace.iter().cloned().collect(),
            NamespaceBinding::Listed(list) => list.clone(),
        };
        self.verifier
            .clone()
            .with_ignore_fields(IgnoreFields(fields))
            .with_tolerances(Tolerances {
                profiles: self.profiles,
                digest_pinning: self.digest_pinning,
                namespace_binding,
                status_kinds: self.status_kinds.clone(),
                gitops: self.gitops.clone(),
                admission: None,
            })
    }
}

/// Rules loaded from one or more policy documents.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    pub rules: Vec<PolicyRule>,
    /// Things the loader wants the user to know (skipped non-manifest rules, fields that
    /// have no effect because mansign always checks them).
    pub notes: Vec<String>,
    /// The files the policies name and that were read to load them (`keys.path`,
    /// `keyless.trustedRoot`, `certificates.certPath`, `certificates.certChainPath`), as
    /// resolved: the admission server watches them with the policy files.
    pub named_files: Vec<PathBuf>,
    /// The Secrets and ConfigMaps the policies read public keys from, each once, in order.
    pub key_references: Vec<KeyReference>,
}

impl PolicySet {
    /// Adds the rules, notes and named files of another set.
    pub fn extend(&mut self, other: PolicySet) {
        self.rules.extend(other.rules);
        self.notes.extend(other.notes);
        for file in other.named_files {
            if !self.named_files.contains(&file) {
                self.named_files.push(file);
            }
        }
        for reference in other.key_references {
            if !self.key_references.contains(&reference) {
                self.key_references.push(reference);
            }
        }
    }

    /// Every rule's unresolved key references with their reasons (see
    /// [`PolicyRule::unresolved_keys`]).
    pub fn unresolved_keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for reason in self.rules.iter().flat_map(|r| &r.unresolved_keys) {
            if !out.contains(reason) {
                out.push(reason.clone());
            }
        }
        out
    }

    /// What offline verification (no admission request) makes of the rules' conditions on
    /// the requesting user, one note per rule that has any: a condition in `match` counts as
    /// met and one in `exclude` as not met, so the rule is checked wherever a request could
    /// make it apply (an exclusion that cannot be evaluated never lets an object skip a
    /// check). `mansign verify` prints them; the webhook evaluates the conditions.
    pub fn offline_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for rule in &self.rules {
            let in_match = rule
                .selector
                .include
                .as_ref()
                .is_some_and(MatchResources::has_user_conditions);
            let in_exclude = rule
                .selector
                .exclude
                .as_ref()
                .is_some_and(MatchResources::has_user_conditions);
            let what = match (in_match, in_exclude) {
                (false, false) => continue,
                (true, false) => "its match condition on the requesting user is taken as met",
                (false, true) => {
                    "its exclusion by requesting user is taken as not met (the objects are \
                     checked)"
                }
                (true, true) => {
                    "its match condition on the requesting user is taken as met and its \
                     exclusion by requesting user as not met (the objects are checked)"
                }
            };
            notes.push(format!(
                "{}: rule {:?}: no admission request offline: {what}; the webhook (admission \
                 serve/review) evaluates the request's user",
                rule.location, rule.rule
            ));
        }
        notes
    }

    /// Verifies every document; see [`ObjectVerdict`].
    pub fn verify_documents<'a>(
        &self,
        docs: impl IntoIterator<Item = &'a Document>,
        ctx: &RequestContext,
    ) -> PolicyVerdict {
        // Documents are independent: verified on every core, results in input order.
        let docs: Vec<&Document> = docs.into_iter().collect();
        PolicyVerdict {
            objects: crate::verify::map_in_order(
                &docs,
                crate::verify::default_parallelism(),
                |d| self.verify_document(d, ctx),
            ),
        }
    }

    /// Verifies an object that did not come from a file (library callers, the webhook).
    pub fn verify_object(
        &self,
        object: &Value,
        ctx: &RequestContext,
    ) -> Result<ObjectVerdict, String> {
        let origin = DocumentOrigin {
            source: Source::Named("object".into()),
            index: 0,
            item: None,
        };
        let doc = Document::new(origin, object.clone())?;
        let mut verdict = self.verify_document(&doc, ctx);
        verdict.origin = None;
        for r in &mut verdict.rules {
            r.verdict.origin = None;
        }
        Ok(verdict)
    }
}

/// Loads a policy file (several documents allowed, both formats may be mixed).
pub fn load_file(path: &Path, options: &LoadOptions) -> Result<PolicySet, PolicyError> {
    load_file_with_keys(path, options, &ResolvedKeys::default())
}

/// [`load_file`] with the values of the Kubernetes key references the policies name
/// ([`PolicySet::key_references`]): a reference `keys` holds no usable value for leaves
/// its rule unresolved ([`PolicyRule::unresolved_keys`]); the load itself succeeds.
pub fn load_file_with_keys(
    path: &Path,
    options: &LoadOptions,
    keys: &ResolvedKeys,
) -> Result<PolicySet, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_str_with_keys(&path.display().to_string(), &text, &base, options, keys)
}

/// Loads policy documents held in memory. `origin` names them in errors; relative paths in
/// mansign policies (`keys.path`, `keyless.trustedRoot`, `certificates.certPath`,
/// `certificates.certChainPath`) are read from `base_dir`.
pub fn load_str(
    origin: &str,
    text: &str,
    base_dir: &Path,
    options: &LoadOptions,
) -> Result<PolicySet, PolicyError> {
    load_str_with_keys(origin, text, base_dir, options, &ResolvedKeys::default())
}

/// [`load_str`] with the values of the policies' key references (see
/// [`load_file_with_keys`]).
pub fn load_str_with_keys(
    origin: &str,
    text: &str,
    base_dir: &Path,
    options: &LoadOptions,
    keys: &ResolvedKeys,
) -> Result<PolicySet, PolicyError> {
    let mut ctx = LoadContext {
        options,
        base_dir,
        default_trust: options.trust_root.clone(),
        document_any_issuer: false,
        named_files: RefCell::new(Vec::new()),
        keys,
        key_references: Vec::new(),
        unresolved: Vec::new(),
        notes: Vec::new(),
        config_maps: Default::default(),
    };
    let mut set = PolicySet::default();
    // The manifest reader: kubectl's stream rules, both YAML readings, budgets. A policy is
    // applied to the cluster with kubectl too, so it must read the same way.
    let documents = read_documents(text, &options.limits).map_err(|(document, reason)| {
        PolicyError::Syntax {
            origin: origin.into(),
            document,
            reason,
        }
    })?;
    for (position, value) in documents {
        let document = position + 1;
        let syntax = |reason: String| PolicyError::Syntax {
            origin: origin.into(),
            document,
            reason,
        };
        let field = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let loc = Location {
            origin: origin.into(),
            document,
            field: String::new(),
        };
        let loaded = match (api_version.as_str(), kind.as_str()) {
            (mansign::API_VERSION, mansign::KIND) => {
                let doc: mansign::ManifestPolicyDocument =
                    typed::from_value(&value).map_err(syntax)?;
                mansign::load(doc, &loc, &mut ctx)?
            }
            ("kyverno.io/v1" | "kyverno.io/v2beta1", "ClusterPolicy" | "Policy") => {
                kyverno::refuse_variables(&value, &loc)?;
                let doc: kyverno::KyvernoPolicyDocument =
                    typed::from_value(&value).map_err(syntax)?;
                kyverno::load(doc, &loc, &mut ctx)?
            }
            _ => {
                return Err(PolicyError::UnknownKind {
                    origin: origin.into(),
                    document,
                    api_version,
                    kind,
                });
            }
        };
        set.extend(loaded);
    }
    if set.rules.is_empty() {
        return Err(PolicyError::NoRules {
            origin: origin.into(),
        });
    }
    set.extend(PolicySet {
        named_files: ctx.named_files.into_inner(),
        key_references: ctx.key_references,
        ..PolicySet::default()
    });
    Ok(set)
}

/// State shared while loading one file.
pub(crate) struct LoadContext<'a> {
    options: &'a LoadOptions,
    base_dir: &'a Path,
    default_trust: Option<Arc<TrustRoot>>,
    /// The document being loaded opts in to any issuer (`spec.insecureAnyIssuer`).
    document_any_issuer: bool,
    /// Every file [`LoadContext::resolve`] named, in order.
    named_files: RefCell<Vec<PathBuf>>,
    /// The values of the key references, as the caller read them.
    keys: &'a ResolvedKeys,
    /// Every key reference named, in order.
    key_references: Vec<KeyReference>,
    /// The unresolved references of the rule being loaded (taken by its loader).
    unresolved: Vec<String>,
    /// The warning notes of the rule being loaded (taken by its loader).
    notes: Vec<String>,
    /// The `configMap` context entries of the Kyverno rule being loaded: entry name to
    /// (namespace, ConfigMap name).
    config_maps: std::collections::BTreeMap<String, (String, String)>,
}

impl LoadContext<'_> {
    /// True when keyless entries may leave the issuer unchecked (the load option).
    fn insecure_any_issuer(&self) -> bool {
        self.options.insecure_any_issuer || self.document_any_issuer
    }

    /// The trust root for entries that name none (loaded once, on first use).
    fn default_trust(&mut self, at: &Location) -> Result<Arc<TrustRoot>, PolicyError> {
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

    fn limits(&self) -> Limits {
        self.options.limits
    }

    /// The public keys `reference` holds (each its own entry, as inline PEM), recorded as
    /// a reference of the policy set. When the value is missing or not usable, the reason
    /// (with `at`, the policy location) goes to the rule's unresolved list and one key
    /// nobody holds stands in for the entry, so the rule keeps its shape; its verifier
    /// then refuses every object (see [`PolicyRule::unresolved_keys`]).
    fn referenced_keys(
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
            .map_err(|reason| format!("{at}: {reason}"))
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
    fn finish_rule(&mut self, verifier: Verifier) -> (Verifier, Vec<String>) {
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
    /// the policy set depends on ([`PolicySet::named_files`]).
    fn resolve(&self, path: &Path) -> PathBuf {
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
                .map_err(|reason| PolicyError::Invalid {
                    at: at.clone(),
                    reason: format!("not a usable public key: {reason}"),
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

#[cfg(test)]
mod tests {
    /// The webhook shares one policy set across its worker threads (and swaps it on reload).
    #[test]
    fn policy_sets_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync + 'static>(_: &T) {}
        shareable(&super::PolicySet::default());
        shareable(&super::LoadOptions::default());
    }

    const KYVERNO_RULE: &str = concat!(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n",
        "  rules:\n  - name: r\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n",
        "    validate:\n      manifests:\n        attestors:\n        - entries:\n",
    );
    const MANIFEST_POLICY: &str = concat!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {name: p}\n",
        "spec:\n  attestors:\n  - entries:\n",
    );

    /// `count: 0` is each format's own: every entry in Kyverno, refused in a
    /// `ManifestPolicy` (nested sets too).
    #[test]
    fn a_zero_count_means_every_entry_in_kyverno_and_is_refused_in_a_manifest_policy() {
        let keyless = "{keyless: {subject: a@example.com, issuer: https://issuer.example}}";
        let load = |text: String| {
            super::load_str(
                "p.yaml",
                &text,
                std::path::Path::new("."),
                &super::LoadOptions::default(),
            )
        };
        let kyverno = format!(
            "{}          - attestor: {{count: 0, entries: [{keyless}]}}\n",
            KYVERNO_RULE.replace("- entries:\n", "- count: 0\n          entries:\n")
        );
        let set = load(kyverno).unwrap();
        assert_eq!(set.rules.len(), 1);
        for (case, text, at) in [
            (
                "top level",
                format!("{MANIFEST_POLICY}    - {keyless}\n")
                    .replace("- entries:", "- count: 0\n    entries:"),
                "spec.attestors[0]: ",
            ),
            (
                "nested",
                format!("{MANIFEST_POLICY}    - attestor: {{count: 0, entries: [{keyless}]}}\n"),
                "spec.attestors[0].entries[0].attestor: ",
            ),
        ] {
            let err = load(text).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{at}count must be at least 1")),
                "{case}: {err}"
            );
        }
    }

    /// The shared attestor-set builder keeps each format's wording: an entry with no kind
    /// or two is refused where it is (nested sets too), naming the kinds in the format's
    /// order.
    #[test]
    fn an_entry_of_no_kind_or_two_kinds_is_refused_in_the_formats_wording() {
        let kyverno = "an entry needs exactly one of keys, certificates, keyless, attestor";
        let mansign = "an entry needs exactly one of keys, keyless, certificates, attestor";
        for (case, text, at, words) in [
            (
                "kyverno, no kind",
                format!("{KYVERNO_RULE}          - {{}}\n"),
                "spec.rules[0].validate.manifests.attestors[0].entries[0]: ",
                kyverno,
            ),
            (
                "kyverno, two kinds in a nested set",
                format!(
                    "{KYVERNO_RULE}          - attestor:\n              entries:\n{}",
                    "              - {keys: {publicKeys: x}, keyless: {issuer: https://issuer.example}}\n"
                ),
                "spec.rules[0].validate.manifests.attestors[0].entries[0].attestor.entries[0]: ",
                kyverno,
            ),
            (
                "ManifestPolicy, no kind",
                format!("{MANIFEST_POLICY}    - {{}}\n"),
                "spec.attestors[0].entries[0]: ",
                mansign,
            ),
            (
                "ManifestPolicy, two kinds in a nested set",
                format!(
                    "{MANIFEST_POLICY}    - attestor:\n        entries:\n{}",
                    "        - {keys: {path: a.pub}, certificates: {cert: x}}\n"
                ),
                "spec.attestors[0].entries[0].attestor.entries[0]: ",
                mansign,
            ),
        ] {
            let err = super::load_str(
                "p.yaml",
                &text,
                std::path::Path::new("."),
                &super::LoadOptions::default(),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(&format!("{at}{words}")), "{case}: {err}");
        }
    }
}
