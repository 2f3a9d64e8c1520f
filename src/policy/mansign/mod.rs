//! mansign's own policy format, `mansign.dev/v1alpha1` `ManifestPolicy`.
//!
//! ```yaml
//! apiVersion: mansign.dev/v1alpha1
//! kind: ManifestPolicy
//! metadata:
//!   name: release
//! spec:
//!   match:                      # optional; absent = every object; a list = any of them
//!     kinds: [ConfigMap, apps/v1/Deployment]  # Kyverno's kind selectors
//!     namespaces: [prod-*]
//!   exclude:                    # optional; a list = any one of them excludes
//!   - kinds: [Pod]
//!     subjects:                 # the requesting user (webhook only; offline: not met)
//!     - {kind: ServiceAccount, namespace: kube-system, name: replicaset-controller}
//!   annotationDomain: cosign.sigstore.dev
//!   ignoreFields:               # anchored mansign patterns
//!   - objects: [{kind: Deployment}]
//!     fields: [spec.replicas]
//!   ignoreProfile: kubernetes,argocd  # a list: none (default) | kubernetes |
//!                               # kyverno-compat | argocd | flux (or a YAML sequence)
//!   statusSubresourceKinds: [Certificate.cert-manager.io]  # custom kinds whose status
//!                               # the kubernetes profile ignores (built-in kinds: known)
//!   gitops:                     # values the argocd / flux profiles accept (exact; each
//!                               # list optional, but only for a profile in ignoreProfile)
//!     argocd: {applications: [shop], installationIDs: [prod-argocd]}
//!     flux: {kustomizations: [flux-system/apps]}   # namespace/name
//!   namespaceBinding: [team-a]  # where a document signed without a namespace is accepted;
//!                               # ["*"]: any namespace (Kyverno's behaviour)
//!   insecureAnyIssuer: false    # keyless entries may omit the issuer (insecure: every
//!                               # result says "issuer not checked")
//!   attestors:                  # every set required; count = N-of-M (absent: all)
//!   - count: 1
//!     entries:
//!     - keys: {path: release.pub}
//!     - keys: {publicKeys: "k8s://cosign-system/release"}  # a Secret's cosign.pub
//!     - keys: {secretRef: {namespace: cosign-system, name: release, key: cosign.pub}}
//!     - keys: {configMapRef: {namespace: platform, name: keys, key: production}}
//!     - keyless:
//!         issuer: https://token.actions.githubusercontent.com
//!         subjectRegExp: https://github.com/org/repo/\.github/workflows/.*
//!         github: {repository: org/repo, ref: refs/heads/main}
//!         roots: "PEM"          # optional: CA certificates of the trust root; narrows the
//!                               # chain check to their authorities
//!     - certificates:           # pinned certificate and/or CA chain (root last)
//!         certPath: release.crt     # or cert: "PEM"
//!         certChainPath: ca.pem     # or certChain: "PEM"
//!     - attestor: {count: 2, entries: [...]}
//! ```
//!
//! Every object and field is strict: an unknown field is an error naming it.

use super::action::{FailureAction, FailureActions};
use super::load::context::{
    AttestorFormat, FormatEntry, LoadContext, PolicyError, attestor_requirement,
    certificate_attestor, given_claims, invalid, parse_public_keys,
};
use super::selector::{
    MatchResources, ObjectReference, ResourceDescription, ResourceFilter, RuleSelector, Subject,
};
use super::{
    IgnoreBinding, KeyObject, KeyReference, Location, NamespaceBinding, PolicyRule, PolicySet,
    RuleSource,
};
use crate::annotations::AnnotationDomain;
use crate::manifest::{
    FluxKustomization, GitopsBindings, GitopsNameError, GroupKind, IgnoreProfile, IgnoreProfiles,
    check_argocd_application, check_argocd_installation_id, unbound_gitops_keys,
};
use crate::trust::TrustRoot;
use crate::verify::{
    AttestorEntry, CertificateAttestor, Claim, IdentityPolicy, IdentityPolicyError,
    KeylessAttestor, TrustedKey, Verifier,
};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

pub const API_VERSION: &str = "mansign.dev/v1alpha1";
pub const KIND: &str = "ManifestPolicy";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestPolicyDocument {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: Spec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    #[serde(default, rename = "match")]
    pub match_objects: Option<Selections>,
    #[serde(default)]
    pub exclude: Option<Selections>,
    #[serde(default)]
    pub annotation_domain: Option<String>,
    #[serde(default)]
    pub ignore_fields: Vec<IgnoreFieldsSpec>,
    #[serde(default)]
    pub ignore_profile: Option<ProfileList>,
    /// Custom kinds (`Kind.group`) whose `status` is a subresource.
    #[serde(default)]
    pub status_subresource_kinds: Vec<String>,
    /// Accept `image: x:tag` signed, `x:tag@sha256:<digest>` found.
    #[serde(default)]
    pub digest_pinning: bool,
    /// Namespaces where a document signed without a namespace is accepted.
    #[serde(default)]
    pub namespace_binding: Vec<String>,
    /// Values the `argocd` and `flux` profiles accept.
    #[serde(default)]
    pub gitops: Option<GitopsSpec>,
    /// Oldest acceptable transparency-log time of a signature (`90s`, `30m`, `4h`, `7d`).
    #[serde(default)]
    pub max_age: Option<String>,
    /// What a failure does in the cluster: `Enforce` (default, deny) or `Audit` (allow
    /// with a warning).
    #[serde(default)]
    pub failure_action: Option<Action>,
    /// Keyless entries of this document may leave out the issuer (insecure; as
    /// `--insecure-any-issuer` for this document only).
    #[serde(default)]
    pub insecure_any_issuer: bool,
    pub attestors: Vec<AttestorSetSpec>,
}

/// `spec.failureAction` of a `ManifestPolicy`.
#[derive(Debug, Clone, Copy, Deserialize)]
pub enum Action {
    Enforce,
    Audit,
}

/// `ignoreProfile`: the CLI's comma-separated list (`kubernetes,argocd`) or a YAML
/// sequence of profile names.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ProfileList {
    Text(String),
    Names(Vec<String>),
}

impl ProfileList {
    fn parse(&self) -> Result<IgnoreProfiles, String> {
        match self {
            ProfileList::Text(text) => text.parse(),
            ProfileList::Names(names) => names.join(",").parse(),
        }
    }
}

/// `spec.gitops`: the values the GitOps profiles accept (`manifest::gitops`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitopsSpec {
    #[serde(default)]
    pub argocd: Option<ArgocdBindingSpec>,
    #[serde(default)]
    pub flux: Option<FluxBindingSpec>,
}

/// `spec.gitops.argocd`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgocdBindingSpec {
    #[serde(default)]
    pub applications: Option<Vec<String>>,
    #[serde(default, rename = "installationIDs")]
    pub installation_ids: Option<Vec<String>>,
}

/// `spec.gitops.flux`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluxBindingSpec {
    #[serde(default)]
    pub kustomizations: Option<Vec<String>>,
}

/// Objects by kind (Kyverno's kind selectors, [`KindSelector`](super::KindSelector)), name and namespace, each a
/// wildcard pattern, and by the requesting user (`subjects`, as Kyverno's: `User`, `Group`,
/// `ServiceAccount` with its namespace); lists are alternatives, fields are ANDed. Only the
/// webhook knows the requesting user: offline a condition on it is met in `match` and not
/// met in `exclude`, so `verify` checks every object a request could have to pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Selection {
    #[serde(default)]
    pub kinds: Vec<String>,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub subjects: Vec<Subject>,
    /// Refused when loaded: mansign does not resolve roles (see the loader in this module).
    #[serde(default)]
    pub roles: Vec<String>,
    /// Refused when loaded, as `roles`.
    #[serde(default)]
    pub cluster_roles: Vec<String>,
}

/// `spec.match` / `spec.exclude`: one selection, or a list of alternatives (any one of them
/// selects, as Kyverno's `any`).
#[derive(Debug)]
pub enum Selections {
    One(Selection),
    Any(Vec<Selection>),
}

/// A mapping is one selection, a sequence a list; read through the caller's deserializer
/// (not `untagged`), so an unknown field inside is reported with its path and name.
impl<'de> Deserialize<'de> for Selections {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OneOrMany;
        impl<'de> serde::de::Visitor<'de> for OneOrMany {
            type Value = Selections;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a selection (kinds, names, namespaces, subjects) or a list of them")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Selections, A::Error> {
                Selection::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Selections::One)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Selections, A::Error> {
                Vec::<Selection>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Selections::Any)
            }
        }
        d.deserialize_any(OneOrMany)
    }
}

impl Selections {
    fn items(&self) -> &[Selection] {
        match self {
            Selections::One(s) => std::slice::from_ref(s),
            Selections::Any(list) => list,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreFieldsSpec {
    /// Empty: every object.
    #[serde(default)]
    pub objects: Vec<ObjectReference>,
    pub fields: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttestorSetSpec {
    #[serde(default)]
    pub count: Option<usize>,
    pub entries: Vec<AttestorSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttestorSpec {
    #[serde(default)]
    pub keys: Option<KeysSpec>,
    #[serde(default)]
    pub keyless: Option<KeylessSpec>,
    #[serde(default)]
    pub certificates: Option<CertificatesSpec>,
    #[serde(default)]
    pub attestor: Option<AttestorSetSpec>,
}

/// A pinned signing certificate and/or the CA chain (root last) it must chain to, each as
/// PEM text or a file (relative to the policy file).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificatesSpec {
    #[serde(default)]
    pub cert: Option<String>,
    #[serde(default)]
    pub cert_path: Option<PathBuf>,
    #[serde(default)]
    pub cert_chain: Option<String>,
    #[serde(default)]
    pub cert_chain_path: Option<PathBuf>,
}

/// PEM text (one or more keys; each is its own entry; or `k8s://NAMESPACE/NAME[/KEY]`), a
/// file, or a Secret or ConfigMap data key read from the cluster (a
/// [`KeyReference`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeysSpec {
    #[serde(default)]
    pub public_keys: Option<String>,
    #[serde(default)]
    pub path: Option<PathBuf>,
    #[serde(default)]
    pub secret_ref: Option<DataKeyRef>,
    #[serde(default)]
    pub config_map_ref: Option<DataKeyRef>,
}

/// `secretRef` / `configMapRef`: one data key of one object (`key` defaults to `cosign.pub`
/// for a Secret and is required for a ConfigMap).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataKeyRef {
    pub namespace: String,
    pub name: String,
    #[serde(default)]
    pub key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeylessSpec {
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub issuer_reg_exp: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub subject_reg_exp: Option<String>,
    #[serde(default)]
    pub github: Option<GithubSpec>,
    /// A `trusted_root.json`; default: the loader's (the embedded public-good root).
    #[serde(default)]
    pub trusted_root: Option<PathBuf>,
    /// PEM CA certificates, each one a certificate authority of the trust root: the chain
    /// check is narrowed to those authorities (Kyverno's `keyless.roots`, converted).
    #[serde(default)]
    pub roots: Option<String>,
}

/// GitHub workflow claims of the certificate (Fulcio extensions), each exact.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubSpec {
    #[serde(default)]
    pub repository: Option<String>,
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    #[serde(default)]
    pub trigger: Option<String>,
    #[serde(default)]
    pub sha: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// `match` / `exclude` as the selector both formats share (one `any` filter per
/// alternative), checked as the Kyverno loader checks its blocks.
fn selections(s: &Selections, at: &Location, exclude: bool) -> Result<MatchResources, PolicyError> {
    let items = s.items();
    if items.is_empty() {
        return Err(invalid(
            at,
            "an empty list selects nothing; give at least one selection or remove the field",
        ));
    }
    let mut any = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let item_at = match s {
            Selections::One(_) => at.clone(),
            Selections::Any(_) => Location {
                field: format!("{}[{i}]", at.field),
                ..at.clone()
            },
        };
        for (field, list) in [
            ("roles", &item.roles),
            ("clusterRoles", &item.cluster_roles),
        ] {
            if !list.is_empty() {
                return Err(PolicyError::Unsupported {
                    at: item_at.at(field),
                    reason: "mansign does not resolve roles: an AdmissionReview names only the \
                             user and its groups, and Kyverno finds roles by reading the \
                             cluster's RoleBindings and ClusterRoleBindings; name the users, \
                             groups or service accounts in subjects instead"
                        .into(),
                });
            }
        }
        if exclude
            && item.kinds.is_empty()
            && item.names.is_empty()
            && item.namespaces.is_empty()
            && item.subjects.is_empty()
        {
            // Kyverno skips an empty exclude filter; an empty selection would exclude every
            // object.
            return Err(invalid(
                &item_at,
                "an empty exclude selection would exclude every object; name what it excludes",
            ));
        }
        super::kyverno::check_kinds(&item.kinds, &item_at.at("kinds"))?;
        for (j, subject) in item.subjects.iter().enumerate() {
            super::kyverno::check_subject(subject, &item_at.at(format!("subjects[{j}]")))?;
        }
        any.push(ResourceFilter {
            resources: Some(ResourceDescription {
                kinds: item.kinds.clone(),
                names: item.names.clone(),
                namespaces: item.namespaces.clone(),
                ..ResourceDescription::default()
            }),
            subjects: item.subjects.clone(),
            ..ResourceFilter::default()
        });
    }
    Ok(MatchResources {
        any,
        ..MatchResources::default()
    })
}

/// Loads one ManifestPolicy document as one rule.
pub(crate) fn load(
    doc: ManifestPolicyDocument,
    loc: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<PolicySet, PolicyError> {
    let spec = &doc.spec;
    let at = loc.at("spec");
    let domain = match spec.annotation_domain.as_deref() {
        None => AnnotationDomain::default(),
        Some(d) => AnnotationDomain::new(d)
            .map_err(|e| invalid(&at.at("annotationDomain"), e.to_string()))?,
    };
    ctx.document_any_issuer = spec.insecure_any_issuer;
    let requirement = attestor_requirement(&at, &spec.attestors, ctx);
    ctx.document_any_issuer = false;
    let requirement = requirement?;
    let mut notes = std::mem::take(&mut ctx.notes);
    let mut ignore = Vec::new();
    for (i, binding) in spec.ignore_fields.iter().enumerate() {
        let mut fields = Vec::new();
        for (j, field) in binding.fields.iter().enumerate() {
            let field_at = at.at(format!("ignoreFields[{i}].fields[{j}]"));
            fields.push(
                super::fields::mansign_field_pattern(field)
                    .map_err(|e| invalid(&field_at, e.to_string()))?,
            );
        }
        ignore.push(IgnoreBinding {
            objects: binding.objects.clone(),
            fields,
        });
    }
    let profiles = match &spec.ignore_profile {
        None => IgnoreProfiles::NONE,
        Some(list) => list
            .parse()
            .map_err(|e| invalid(&at.at("ignoreProfile"), e))?,
    };
    let mut status_kinds = Vec::new();
    for (i, text) in spec.status_subresource_kinds.iter().enumerate() {
        status_kinds.push(GroupKind::parse(text).map_err(|e| {
            invalid(
                &at.at(format!("statusSubresourceKinds[{i}]")),
                e.to_string(),
            )
        })?);
    }
    let gitops = gitops_bindings(spec.gitops.as_ref(), profiles, &at.at("gitops"))?;
    for key in unbound_gitops_keys(profiles, &gitops) {
        notes.push(format!(
            "{}: {} is not bound; add {} to accept yours",
            at.at("ignoreProfile"),
            key.what,
            key.field
        ));
    }
    if profiles.contains(IgnoreProfile::KyvernoCompat) {
        notes.push(format!(
            "{}: ignoreProfile kyverno-compat matches Kyverno's defaults as unanchored \
             regexes and hides more than their names say (e.g. `status` hides data.status); \
             use it for migration only",
            at.at("ignoreProfile")
        ));
    }
    let verifier = {
        let v = Verifier::for_policy(requirement)
            .with_domain(domain)
            .with_limits(ctx.limits());
        match &spec.max_age {
            Some(text) => v.with_max_age(
                crate::manifest::parse_duration(text)
                    .map_err(|e| invalid(&at.at("maxAge"), e.to_string()))?,
            ),
            None => v,
        }
    };
    let (verifier, unresolved_keys) = ctx.finish_rule(verifier);
    let rule = PolicyRule {
        policy: doc.metadata.name.clone(),
        rule: doc.metadata.name.clone(),
        location: loc.clone(),
        selector: RuleSelector {
            include: spec
                .match_objects
                .as_ref()
                .map(|m| selections(m, &at.at("match"), false))
                .transpose()?,
            exclude: spec
                .exclude
                .as_ref()
                .map(|m| selections(m, &at.at("exclude"), true))
                .transpose()?,
        },
        namespace: None,
        verifier,
        unresolved_keys,
        ignore,
        profiles,
        status_kinds,
        gitops,
        digest_pinning: spec.digest_pinning,
        // `*`: a document signed without a namespace is accepted in whatever namespace
        // the rule matched (a central signer for all namespaces, docs/admission.md).
        namespace_binding: namespace_binding(&spec.namespace_binding),
        failure_action: FailureActions::always(match spec.failure_action {
            None | Some(Action::Enforce) => FailureAction::Enforce,
            Some(Action::Audit) => FailureAction::Audit,
        }),
        source: RuleSource::Mansign,
    };
    Ok(PolicySet {
        rules: vec![rule],
        notes,
        ..PolicySet::default()
    })
}

/// `spec.gitops`: each list non-empty, each value well-formed, and only for a profile in
/// `ignoreProfile` (a binding for another profile would silently do nothing).
fn gitops_bindings(
    spec: Option<&GitopsSpec>,
    profiles: IgnoreProfiles,
    at: &Location,
) -> Result<GitopsBindings, PolicyError> {
    let mut bindings = GitopsBindings::default();
    let Some(spec) = spec else {
        return Ok(bindings);
    };
    let list = |values: &Option<Vec<String>>,
                field: &str,
                check: &dyn Fn(&str) -> Result<(), GitopsNameError>|
     -> Result<Vec<String>, PolicyError> {
        let Some(values) = values else {
            return Ok(Vec::new());
        };
        if values.is_empty() {
            return Err(invalid(
                &at.at(field),
                "an empty list binds nothing; list the accepted values or remove the field",
            ));
        }
        for (i, value) in values.iter().enumerate() {
            check(value).map_err(|e| invalid(&at.at(format!("{field}[{i}]")), e.to_string()))?;
        }
        Ok(values.clone())
    };
    if let Some(argocd) = &spec.argocd {
        if !profiles.contains(IgnoreProfile::Argocd) {
            return Err(invalid(
                &at.at("argocd"),
                "binds the argocd profile, which ignoreProfile does not list",
            ));
        }
        bindings.argocd_applications = list(
            &argocd.applications,
            "argocd.applications",
            &check_argocd_application,
        )?;
        bindings.argocd_installation_ids = list(
            &argocd.installation_ids,
            "argocd.installationIDs",
            &check_argocd_installation_id,
        )?;
    }
    if let Some(flux) = &spec.flux {
        if !profiles.contains(IgnoreProfile::Flux) {
            return Err(invalid(
                &at.at("flux"),
                "binds the flux profile, which ignoreProfile does not list",
            ));
        }
        let names = list(&flux.kustomizations, "flux.kustomizations", &|s| {
            FluxKustomization::parse(s).map(|_| ())
        })?;
        bindings.flux_kustomizations = names
            .iter()
            .filter_map(|s| FluxKustomization::parse(s).ok())
            .collect();
    }
    Ok(bindings)
}

/// `namespaceBinding`: empty = strict; `["*"]` = any namespace (Kyverno's behaviour for
/// documents signed without one; no namespace can be named `*`); else the listed ones.
fn namespace_binding(list: &[String]) -> NamespaceBinding {
    match list {
        [] => NamespaceBinding::Strict,
        [any] if any == "*" => NamespaceBinding::AnyNamespace,
        _ => NamespaceBinding::Listed(list.to_vec()),
    }
}

/// The attestor sets of a `ManifestPolicy`, read by [`attestor_set`](super::load::context::attestor_set).
impl AttestorFormat for AttestorSetSpec {
    type Entry = AttestorSpec;
    const KINDS: &'static str = "keys, keyless, certificates, attestor";

    /// `count` absent: every entry.
    fn count_and_entries(&self) -> (Option<usize>, &[AttestorSpec]) {
        (self.count, &self.entries)
    }

    fn entry<'e>(
        entry: &'e AttestorSpec,
        at: &Location,
        ctx: &mut LoadContext<'_>,
    ) -> Result<FormatEntry<'e, Self>, PolicyError> {
        let AttestorSpec {
            keys,
            keyless,
            certificates,
            attestor,
        } = entry;
        Ok(match (keys, keyless, certificates, attestor) {
            (Some(keys), None, None, None) => FormatEntry::Read(
                keys_entry(keys, &at.at("keys"), ctx)?
                    .into_iter()
                    .map(|key| AttestorEntry::Keys(vec![key]))
                    .collect(),
            ),
            (None, Some(keyless), None, None) => FormatEntry::Read(vec![AttestorEntry::Keyless(
                keyless_entry(keyless, &at.at("keyless"), ctx)?,
            )]),
            (None, None, Some(certificates), None) => {
                FormatEntry::Read(vec![AttestorEntry::Certificate(certificates_entry(
                    certificates,
                    &at.at("certificates"),
                    ctx,
                )?)])
            }
            (None, None, None, Some(nested)) => FormatEntry::Nested(nested),
            _ => FormatEntry::NotOneKind,
        })
    }
}

fn keys_entry(
    keys: &KeysSpec,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<Vec<TrustedKey>, PolicyError> {
    let trust = ctx.default_trust(at)?;
    let name = at
        .field
        .strip_prefix("spec.")
        .unwrap_or(&at.field)
        .to_string();
    let reference = |object: KeyObject, r: &DataKeyRef, field: &str| {
        let key = match (object, &r.key) {
            (_, Some(key)) => key.as_str(),
            (KeyObject::Secret, None) => super::COSIGN_PUB,
            (KeyObject::ConfigMap, None) => {
                return Err(invalid(
                    &at.at(format!("{field}.key")),
                    "a configMapRef needs the data key",
                ));
            }
        };
        KeyReference::new(object, &r.namespace, &r.name, key)
            .map_err(|e| invalid(&at.at(field), e.to_string()))
    };
    match (
        &keys.public_keys,
        &keys.path,
        &keys.secret_ref,
        &keys.config_map_ref,
    ) {
        (Some(pem), None, None, None) => {
            let field = at.at("publicKeys");
            match KeyReference::parse_k8s_uri(pem) {
                Some(parsed) => {
                    let r = parsed.map_err(|e| invalid(&field, e.to_string()))?;
                    Ok(ctx.referenced_keys(r, &field, &name, trust))
                }
                None => parse_public_keys(pem, &field, &name, trust),
            }
        }
        (None, Some(path), None, None) => {
            let full = ctx.resolve(path);
            let pem = std::fs::read_to_string(&full).map_err(|e| {
                invalid(
                    &at.at("path"),
                    format!("cannot read {}: {e}", full.display()),
                )
            })?;
            parse_public_keys(&pem, &at.at("path"), &path.display().to_string(), trust)
        }
        (None, None, Some(r), None) => {
            let r = reference(KeyObject::Secret, r, "secretRef")?;
            Ok(ctx.referenced_keys(r, &at.at("secretRef"), &name, trust))
        }
        (None, None, None, Some(r)) => {
            let r = reference(KeyObject::ConfigMap, r, "configMapRef")?;
            Ok(ctx.referenced_keys(r, &at.at("configMapRef"), &name, trust))
        }
        _ => Err(invalid(
            at,
            "keys needs exactly one of publicKeys, path, secretRef, configMapRef",
        )),
    }
}

/// PEM given inline (`inline`) or read from a file (`path`, relative to the policy); at most
/// one of them.
fn pem_text(
    inline: &Option<String>,
    path: &Option<PathBuf>,
    names: (&str, &str),
    at: &Location,
    ctx: &LoadContext<'_>,
) -> Result<Option<String>, PolicyError> {
    match (inline, path) {
        (None, None) => Ok(None),
        (Some(text), None) => Ok(Some(text.clone())),
        (None, Some(path)) => {
            let full = ctx.resolve(path);
            std::fs::read_to_string(&full).map(Some).map_err(|e| {
                invalid(
                    &at.at(names.1),
                    format!("cannot read {}: {e}", full.display()),
                )
            })
        }
        (Some(_), Some(_)) => Err(invalid(
            at,
            format!("{} and {} are alternatives; give one", names.0, names.1),
        )),
    }
}

fn certificates_entry(
    c: &CertificatesSpec,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<CertificateAttestor, PolicyError> {
    let cert = pem_text(&c.cert, &c.cert_path, ("cert", "certPath"), at, ctx)?;
    let chain = pem_text(
        &c.cert_chain,
        &c.cert_chain_path,
        ("certChain", "certChainPath"),
        at,
        ctx,
    )?;
    // Named by its file when it has one, else by its place in the policy.
    let name = match (&c.cert_path, &c.cert_chain_path) {
        (Some(p), _) | (None, Some(p)) => p.display().to_string(),
        (None, None) => at
            .field
            .strip_prefix("spec.")
            .unwrap_or(&at.field)
            .to_string(),
    };
    let trust = ctx.default_trust(at)?;
    certificate_attestor(&name, cert.as_deref(), chain.as_deref(), at, trust)
}

fn keyless_entry(
    k: &KeylessSpec,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<KeylessAttestor, PolicyError> {
    let mut exact = vec![(Claim::Issuer, &k.issuer), (Claim::Subject, &k.subject)];
    if let Some(g) = &k.github {
        exact.extend([
            (Claim::GithubWorkflowRepository, &g.repository),
            (Claim::GithubWorkflowRef, &g.git_ref),
            (Claim::GithubWorkflowTrigger, &g.trigger),
            (Claim::GithubWorkflowSha, &g.sha),
            (Claim::GithubWorkflowName, &g.name),
        ]);
    }
    let regex = [
        (Claim::Issuer, &k.issuer_reg_exp),
        (Claim::Subject, &k.subject_reg_exp),
    ];
    let mut b = given_claims(IdentityPolicy::builder(), &exact, &regex);
    if k.issuer.is_none() && k.issuer_reg_exp.is_none() && ctx.insecure_any_issuer() {
        b = b.insecure_any_issuer();
    }
    let identity = b.build().map_err(|e| match e {
        IdentityPolicyError::MissingIssuer => invalid(
            at,
            "keyless needs issuer or issuerRegExp; to accept the subject from any issuer \
             (insecure), set spec.insecureAnyIssuer: true or pass --insecure-any-issuer",
        ),
        other => invalid(at, other.to_string()),
    })?;
    if !identity.checks_issuer() {
        ctx.notes
            .push(super::kyverno::issuer_not_checked_warning(at, &identity));
    }
    let trust = match &k.trusted_root {
        Some(path) => {
            let full = ctx.resolve(path);
            Arc::new(
                TrustRoot::from_file(&full).map_err(|source| PolicyError::TrustRoot {
                    at: at.at("trustedRoot"),
                    source,
                })?,
            )
        }
        None => ctx.default_trust(at)?,
    };
    let trust = match &k.roots {
        Some(text) => Arc::new(super::kyverno::roots_trust(text, &at.at("roots"), &trust)?),
        None => trust,
    };
    Ok(KeylessAttestor::new(trust, identity))
}
