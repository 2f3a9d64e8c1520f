//! Kyverno `ClusterPolicy` / `Policy` documents with `validate.manifests` rules.
//!
//! The schema is Kyverno's (`api/kyverno/v1`, research kyverno-manifests §1). What each
//! field does in mansign (see `docs/policy.md` for the full table):
//!
//! * `attestors`: sets ANDed, `count` N-of-M (absent or 0: all entries), nested `attestor`
//!   sets. A `publicKeys` holding several PEM keys becomes one entry per key before
//!   counting, as Kyverno's `ExpandStaticKeys` does.
//! * `keys.publicKeys`: PEM keys; `k8s://NAMESPACE/NAME` (a Secret's `cosign.pub`, cosign's
//!   convention; `k8s://NAMESPACE/NAME/KEY` for another data key); or exactly
//!   `"{{ NAME.data.KEY }}"` where NAME is a `configMap` entry of the rule's `context`.
//!   Both are [`KeyReference`]s, resolved by the caller
//!   (webhook: a watch; CLI: one read). Other key references (KMS URIs, `env://`, paths),
//!   other context entries (`apiCall`, `variable`, `imageRegistry`, `globalReference`) and
//!   every other variable or JMESPath expression are refused; so are `keys.kms` and
//!   `keys.secret` (Kyverno ignores them for manifests and then accepts any signer,
//!   research §2.10 F2).
//! * `keyless`: `issuer`/`subject` exact, `issuerRegExp`/`subjectRegExp` anchored regexes,
//!   `additionalExtensions` GitHub claims; verified in full against the trust root (chain,
//!   SCT, SET). An issuer constraint is required unless
//!   [`LoadOptions::insecure_any_issuer`](crate::policy::LoadOptions::insecure_any_issuer)
//!   (then every result says "issuer not checked", and each entry gets a warning note).
//!   `roots` is accepted only when every certificate is a CA certificate of the selected
//!   trust root, and narrows the chain check to those authorities; anything else is refused
//!   (a bare CA list is not a trust root: the Rekor and CT keys are missing). `rekor.url`
//!   is not contacted (the trust root decides which logs count); `rekor.pubkey` /
//!   `ctlog.pubkey` are accepted only when they are keys of the trust root's logs;
//!   `rekor.ignoreTlog`/`ctlog.ignoreSCT` have no effect — mansign always checks the log
//!   and the SCT of keyless signatures (stricter, never a wrong allow).
//! * `certificates`: `cert` (a pinned signing certificate) and/or `certChain` (CA
//!   certificates, root last), checked in full by a
//!   [`CertificateAttestor`](crate::verify::CertificateAttestor) (validity at the signing
//!   time, code-signing EKU, chain); `rekor.url` accepted, not contacted; `rekor.pubkey`,
//!   `ctlog.pubkey`, `ctlog.tsaCertChain` refused.
//! * entry `annotations`, `repository`, enabled `dryRun`, signature algorithms other than
//!   sha256: refused.
//! * `ignoreFields`: upstream dotted fields translated to anchored patterns
//!   ([`translate_upstream_field`]); Kyverno's built-in
//!   default list is replaced by mansign's anchored `kubernetes` profile (server-populated
//!   metadata and `status` ignored, server-assigned fields and exact defaults tolerated
//!   only when the signed document lacks them), and a document signed without a namespace
//!   is accepted in the object's namespace.
//! * `match`/`exclude`: kinds (every form Kyverno reads, [`KindSelector`]; one that selects
//!   no object is refused), names, namespaces, operations, annotations, subjects, roles;
//!   label selectors are refused, and so are blocks Kyverno reads differently from their
//!   text (inline next to `any`/`all`, `any` with `all`). A namespaced `Policy` applies to
//!   its namespace only.
//! * A rule without `validate.manifests` is skipped with a note; it is not mansign's to
//!   enforce.

mod schema;
mod trust;

pub(crate) use trust::roots_trust;
use trust::{check_ctlog, check_rekor};

pub use schema::{
    ActionOverrideSpec, AttestorSetSpec, AttestorSpec, CertificatesSpec, CtlogSpec, DryRun,
    IgnoreFieldsSpec, KeylessSpec, KeysSpec, KyvernoPolicyDocument, Manifests, Metadata, RekorSpec,
    Rule, Spec, Validate,
};

use super::action::{ActionOverride, FailureAction, FailureActions};
use super::load::context::{
    AttestorFormat, FormatEntry, LoadContext, PolicyError, attestor_requirement,
    certificate_attestor, invalid, non_empty, parse_public_keys, unsupported,
};
use super::selector::{KindSelector, MatchResources, RuleSelector};
use super::{
    IgnoreBinding, KeyObject, KeyReference, Location, NamespaceBinding, PolicyRule, PolicySet,
    RuleSource, parse_data_variable, translate_upstream_field,
};
use crate::annotations::AnnotationDomain;
use crate::manifest::IgnoreProfile;
use crate::trust::TrustRoot;
use crate::verify::{
    AttestorEntry, Claim, ISSUER_NOT_CHECKED, IdentityPolicy, IdentityPolicyError, KeylessAttestor,
    Verifier,
};
use std::sync::Arc;
/// Only sha256 (the default) is what mansign verifies.
pub(crate) fn check_algorithm(
    algorithm: &Option<String>,
    at: &Location,
) -> Result<(), PolicyError> {
    match non_empty(algorithm) {
        None | Some("sha256") => Ok(()),
        Some(other) => Err(PolicyError::SignatureAlgorithm {
            at: at.clone(),
            algorithm: other.to_string(),
        }),
    }
}

/// Loads the `validate.manifests` rules of one Kyverno policy document.
pub(crate) fn load(
    doc: KyvernoPolicyDocument,
    loc: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<PolicySet, PolicyError> {
    let mut set = PolicySet::default();
    if let Some(mode) = non_empty(&doc.spec.apply_rules)
        && mode != "All"
    {
        return Err(unsupported(
            &loc.at("spec.applyRules"),
            format!(
                "applyRules {mode:?} is not supported (mansign applies every matching rule; \
                 use All)"
            ),
        ));
    }
    let namespace = if doc.kind == "Policy" {
        match non_empty(&doc.metadata.namespace) {
            Some(ns) => Some(ns.to_string()),
            None => {
                return Err(invalid(
                    &loc.at("metadata.namespace"),
                    "a namespaced Policy needs metadata.namespace (it applies only to objects \
                     in its namespace)",
                ));
            }
        }
    } else {
        None
    };
    for (i, rule) in doc.spec.rules.into_iter().enumerate() {
        let rule_loc = loc.at(format!("spec.rules[{i}]"));
        let Some(validate) = &rule.validate else {
            set.notes.push(format!(
                "{rule_loc}: rule {:?} skipped: not a validate.manifests rule",
                rule.name
            ));
            continue;
        };
        let Some(manifests) = &validate.manifests else {
            set.notes.push(format!(
                "{rule_loc}: rule {:?} skipped: not a validate.manifests rule",
                rule.name
            ));
            continue;
        };
        if manifests.attestors.is_empty() {
            // Kyverno's HasVerifyManifests: no attestors, no manifest rule. mansign refuses
            // instead of skipping: a rule that verifies nothing cannot be meant.
            return Err(invalid(
                &rule_loc.at("validate.manifests.attestors"),
                "a manifests rule needs at least one attestor set",
            ));
        }
        let other_kinds = [
            ("pattern", &validate.pattern),
            ("anyPattern", &validate.any_pattern),
            ("deny", &validate.deny),
            ("foreach", &validate.foreach),
            ("podSecurity", &validate.pod_security),
            ("cel", &validate.cel),
            ("assert", &validate.assert),
        ];
        if let Some((name, _)) = other_kinds.iter().find(|(_, value)| value.is_some()) {
            return Err(unsupported(
                &rule_loc.at(format!("validate.{name}")),
                "cannot be combined with validate.manifests in a rule mansign loads",
            ));
        }
        ctx.config_maps = config_map_context(&rule.context, &rule_loc.at("context"))?;
        for (name, present) in [
            ("preconditions", rule.preconditions.is_some()),
            ("celPreconditions", rule.cel_preconditions.is_some()),
        ] {
            if present {
                return Err(unsupported(
                    &rule_loc.at(name),
                    "mansign does not evaluate Kyverno conditions or context; remove it or \
                     narrow the rule with match/exclude",
                ));
            }
        }
        let selector = selector(&rule, &rule_loc)?;
        let failure_action = failure_actions(
            &doc.spec.validation_failure_action,
            &doc.spec.validation_failure_action_overrides,
            validate,
            loc,
            &rule_loc,
        )?;
        let rule_out = load_manifests(
            &doc.metadata.name,
            &rule.name,
            manifests,
            &rule_loc.at("validate.manifests"),
            ctx,
        )?;
        set.notes.append(&mut ctx.notes);
        set.rules.push(PolicyRule {
            selector,
            namespace: namespace.clone(),
            location: rule_loc,
            failure_action,
            source: RuleSource::Kyverno {
                // The rule's own action, else the policy's `validationFailureAction`: either
                // one names the action (issue 27: only the rule's was looked at).
                failure_action: non_empty(&validate.failure_action)
                    .or_else(|| non_empty(&doc.spec.validation_failure_action))
                    .map(str::to_string),
            },
            ..rule_out
        });
    }
    if set.rules.is_empty() {
        set.notes.push(format!(
            "{loc}: {} {:?} has no validate.manifests rule",
            doc.kind, doc.metadata.name
        ));
    }
    Ok(set)
}

fn parse_action(
    text: &Option<String>,
    at: &Location,
) -> Result<Option<FailureAction>, PolicyError> {
    match non_empty(text) {
        None => Ok(None),
        Some(t) => FailureAction::parse(t).map(Some).ok_or_else(|| {
            invalid(
                at,
                format!("{t:?} is not a failure action (Enforce, enforce, Audit or audit)"),
            )
        }),
    }
}

fn parse_overrides(
    list: &Option<Vec<ActionOverrideSpec>>,
    at: &Location,
) -> Result<Vec<ActionOverride>, PolicyError> {
    let mut out = Vec::new();
    for (i, o) in list.iter().flatten().enumerate() {
        let item = Location {
            field: format!("{}[{i}]", at.field),
            ..at.clone()
        };
        if o.namespace_selector.is_some() {
            return Err(unsupported(
                &item.at("namespaceSelector"),
                "namespace label selectors need the cluster's namespaces, which mansign does \
                 not read; list the namespaces",
            ));
        }
        let Some(action) = parse_action(&o.action, &item.at("action"))? else {
            return Err(invalid(&item.at("action"), "an override needs an action"));
        };
        if o.namespaces.is_empty() {
            return Err(invalid(
                &item.at("namespaces"),
                "an override needs namespaces (it would apply nowhere)",
            ));
        }
        out.push(ActionOverride {
            action,
            namespaces: o.namespaces.clone(),
        });
    }
    Ok(out)
}

/// The rule's action: its own overrides and action first, then the policy's (Kyverno's
/// order), `Enforce` when none is named.
fn failure_actions(
    spec_action: &Option<String>,
    spec_overrides: &Option<Vec<ActionOverrideSpec>>,
    validate: &Validate,
    policy_loc: &Location,
    rule_loc: &Location,
) -> Result<FailureActions, PolicyError> {
    let rule_overrides = parse_overrides(
        &validate.failure_action_overrides,
        &rule_loc.at("validate.failureActionOverrides"),
    )?;
    let rule_action = parse_action(
        &validate.failure_action,
        &rule_loc.at("validate.failureAction"),
    )?;
    let policy_overrides = parse_overrides(
        spec_overrides,
        &policy_loc.at("spec.validationFailureActionOverrides"),
    )?;
    let policy_action = parse_action(spec_action, &policy_loc.at("spec.validationFailureAction"))?;
    let mut overrides = rule_overrides;
    // A rule's own action is consulted before the policy's overrides: with one, the
    // policy's overrides never apply to this rule.
    let default = match rule_action {
        Some(action) => action,
        None => {
            overrides.extend(policy_overrides);
            policy_action.unwrap_or(FailureAction::Enforce)
        }
    };
    Ok(FailureActions { overrides, default })
}

fn selector(rule: &Rule, at: &Location) -> Result<RuleSelector, PolicyError> {
    let Some(include) = &rule.match_resources else {
        return Err(invalid(&at.at("match"), "a rule needs match"));
    };
    if include.is_empty() {
        return Err(invalid(&at.at("match"), "match selects nothing"));
    }
    for (name, block) in [("match", Some(include)), ("exclude", rule.exclude.as_ref())] {
        for (path, description) in block.iter().flat_map(|b| b.descriptions_at()) {
            if let Some(field) = description.unsupported() {
                return Err(unsupported(
                    &at.at(format!("{name}.{path}.{field}")),
                    "label selectors are not supported (mansign cannot look up namespaces); \
                     select by kinds, names and namespaces",
                ));
            }
        }
    }
    for (name, block) in [("match", Some(include)), ("exclude", rule.exclude.as_ref())] {
        let Some(block) = block else { continue };
        let filters = !block.any.is_empty() || !block.all.is_empty();
        let inline = block.resources.is_some()
            || !block.subjects.is_empty()
            || !block.roles.is_empty()
            || !block.cluster_roles.is_empty();
        // Kyverno (pkg/engine/utils/match.go MatchesResourceDescription) reads `any`, else
        // `all`, else the inline form: it never combines them, and its policy validation
        // refuses inline resources next to `any`/`all`. mansign would AND them, and a match
        // read more narrowly than Kyverno reads it applies to fewer objects: refused.
        if filters && inline {
            return Err(unsupported(
                &at.at(name),
                "inline resources/subjects/roles next to any/all: Kyverno refuses inline \
                 resources there and ignores inline user conditions; move them into the \
                 any/all filters",
            ));
        }
        if !block.any.is_empty() && !block.all.is_empty() {
            return Err(unsupported(
                &at.at(name),
                "both any and all: Kyverno reads only `any` of a match and refuses both in an \
                 exclude; give one of them",
            ));
        }
        check_block(block, &at.at(name))?;
    }
    Ok(RuleSelector {
        include: Some(include.clone()),
        exclude: rule.exclude.clone(),
    })
}

/// The load-time checks of a match/exclude block shared by both policy formats: every
/// `kinds` entry is one mansign reads as Kyverno does, every subject one it can evaluate.
pub(crate) fn check_block(block: &MatchResources, at: &Location) -> Result<(), PolicyError> {
    for (path, description) in block.descriptions_at() {
        check_kinds(&description.kinds, &at.at(format!("{path}.kinds")))?;
    }
    for (path, subject) in block.subjects_with_paths() {
        check_subject(subject, &at.at(path))?;
    }
    Ok(())
}

/// Every entry of a `kinds` list ([`KindSelector::parse`]); `at` names the list.
pub(crate) fn check_kinds(kinds: &[String], at: &Location) -> Result<(), PolicyError> {
    for (i, kind) in kinds.iter().enumerate() {
        KindSelector::parse(kind).map_err(|e| {
            unsupported(
                &Location {
                    field: format!("{}[{i}]", at.field),
                    ..at.clone()
                },
                e.to_string(),
            )
        })?;
    }
    Ok(())
}

/// One subject ([`Subject::check`](crate::policy::Subject::check)); `at` names it.
pub(crate) fn check_subject(
    subject: &crate::policy::Subject,
    at: &Location,
) -> Result<(), PolicyError> {
    subject.check().map_err(|(field, reason)| {
        invalid(
            &Location {
                field: format!("{}{field}", at.field),
                ..at.clone()
            },
            reason,
        )
    })
}

/// Kyverno's attestor sets, read by [`attestor_set`](super::load::context::attestor_set).
impl AttestorFormat for AttestorSetSpec {
    type Entry = AttestorSpec;
    const KINDS: &'static str = "keys, certificates, keyless, attestor";

    fn count_and_entries(&self) -> (Option<usize>, &[AttestorSpec]) {
        // Kyverno: count nil or 0 = every entry (after key expansion).
        (self.count.filter(|c| *c > 0), &self.entries)
    }

    /// One Kyverno entry; several when `publicKeys` holds several keys.
    fn entry<'e>(
        spec: &'e AttestorSpec,
        at: &Location,
        ctx: &mut LoadContext<'_>,
    ) -> Result<FormatEntry<'e, Self>, PolicyError> {
        if spec.annotations.is_some() {
            return Err(unsupported(
                &at.at("annotations"),
                "attestor annotations compare the object's own (unsigned) annotations, which is \
                 not an attestation; not supported",
            ));
        }
        if let Some(reference) = non_empty(&spec.repository) {
            return Err(PolicyError::Repository {
                at: at.at("repository"),
                reference: reference.to_string(),
            });
        }
        check_algorithm(&spec.signature_algorithm, &at.at("signatureAlgorithm"))?;
        let kinds = (
            &spec.keys,
            &spec.certificates,
            &spec.keyless,
            &spec.attestor,
        );
        Ok(match kinds {
            (Some(keys), None, None, None) => {
                FormatEntry::Read(keys_entries(keys, &at.at("keys"), ctx)?)
            }
            (None, Some(certificates), None, None) => FormatEntry::Read(vec![certificates_entry(
                certificates,
                &at.at("certificates"),
                ctx,
            )?]),
            (None, None, Some(keyless), None) => FormatEntry::Read(vec![AttestorEntry::Keyless(
                keyless_attestor(keyless, &at.at("keyless"), ctx)?,
            )]),
            (None, None, None, Some(nested)) => FormatEntry::Nested(nested),
            _ => FormatEntry::NotOneKind,
        })
    }
}

fn load_manifests(
    policy: &str,
    rule: &str,
    m: &Manifests,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<PolicyRule, PolicyError> {
    if let Some(dry) = &m.dry_run
        && dry.enable == Some(true)
    {
        return Err(PolicyError::DryRun {
            at: at.at("dryRun.enable"),
        });
    }
    if let Some(reference) = non_empty(&m.repository) {
        return Err(PolicyError::Repository {
            at: at.at("repository"),
            reference: reference.to_string(),
        });
    }
    let domain = match non_empty(&m.annotation_domain) {
        None => AnnotationDomain::default(),
        Some(d) => AnnotationDomain::new(d)
            .map_err(|e| invalid(&at.at("annotationDomain"), e.to_string()))?,
    };
    let requirement = attestor_requirement(at, &m.attestors, ctx)?;
    let mut ignore = Vec::new();
    for (i, binding) in m.ignore_fields.iter().enumerate() {
        let mut fields = Vec::new();
        for (j, field) in binding.fields.iter().enumerate() {
            let field_at = at.at(format!("ignoreFields[{i}].fields[{j}]"));
            fields.extend(
                translate_upstream_field(field).map_err(|e| invalid(&field_at, e.to_string()))?,
            );
        }
        ignore.push(IgnoreBinding {
            objects: binding.objects.clone(),
            fields,
        });
    }
    let (verifier, unresolved_keys) = ctx.finish_rule(
        Verifier::for_policy(requirement)
            .with_domain(domain)
            .with_limits(ctx.limits()),
    );
    ctx.config_maps.clear();
    Ok(PolicyRule {
        policy: policy.to_string(),
        rule: rule.to_string(),
        location: at.clone(),
        selector: RuleSelector::default(),
        namespace: None,
        verifier,
        unresolved_keys,
        ignore,
        profiles: IgnoreProfile::Kubernetes.into(),
        status_kinds: Vec::new(),
        gitops: Default::default(),
        digest_pinning: false,
        namespace_binding: NamespaceBinding::AnyNamespace,
        failure_action: FailureActions::default(),
        source: RuleSource::Kyverno {
            failure_action: None,
        },
    })
}

/// The trust root of a keys or certificates entry, after its `rekor` and `ctlog` settings
/// are checked against it.
fn checked_trust(
    rekor: &Option<RekorSpec>,
    ctlog: &Option<CtlogSpec>,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<Arc<TrustRoot>, PolicyError> {
    let trust = ctx.default_trust(at)?;
    check_rekor(rekor, at, &trust)?;
    check_ctlog(ctlog, at, &trust)?;
    Ok(trust)
}

/// An entry named by its place in the rule (`attestors[0].entries[1].keys`), as verdicts
/// print it.
fn entry_name(at: &Location) -> String {
    at.field
        .rsplit_once("validate.manifests.")
        .map_or(at.field.as_str(), |(_, rest)| rest)
        .to_string()
}

fn keys_entries(
    keys: &KeysSpec,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<Vec<AttestorEntry>, PolicyError> {
    if non_empty(&keys.kms).is_some() {
        return Err(PolicyError::KeyReference {
            at: at.at("kms"),
            reference: keys.kms.clone().unwrap_or_default(),
        });
    }
    if keys.secret.is_some() {
        return Err(unsupported(
            &at.at("secret"),
            "keys from Kubernetes secrets are not supported; put the PEM public key in \
             publicKeys",
        ));
    }
    check_algorithm(&keys.signature_algorithm, &at.at("signatureAlgorithm"))?;
    let trust = checked_trust(&keys.rekor, &keys.ctlog, at, ctx)?;
    let Some(text) = non_empty(&keys.public_keys) else {
        return Err(invalid(&at.at("publicKeys"), "publicKeys is required"));
    };
    let name = entry_name(at);
    let field = at.at("publicKeys");
    let reference = match (KeyReference::parse_k8s_uri(text), parse_data_variable(text)) {
        (Some(parsed), _) => Some(parsed.map_err(|e| invalid(&field, e.to_string()))?),
        (None, Some(parsed)) => {
            let (variable, key) = parsed.map_err(|e| unsupported(&field, e.to_string()))?;
            let Some((namespace, config_map)) = ctx.config_maps.get(&variable) else {
                return Err(unsupported(
                    &field,
                    format!(
                        "{variable:?} is not a configMap entry of this rule's context (only \
                         configMap context entries are read, as \"{{{{ NAME.data.KEY }}}}\")"
                    ),
                ));
            };
            Some(
                KeyReference::new(KeyObject::ConfigMap, namespace, config_map, &key)
                    .map_err(|e| invalid(&field, e.to_string()))?,
            )
        }
        (None, None) => None,
    };
    let keys = match reference {
        Some(reference) => ctx.referenced_keys(reference, &field, &name, trust),
        None => parse_public_keys(text, &field, &name, trust)?,
    };
    if keys.len() > 1 {
        // Kyverno v1.19 splits the value into PEM blocks but keeps the line break before
        // each block after the first, which it then reads as a file path: only the first
        // key works there (docs/compatibility.md, "Disagreements").
        ctx.notes.push(format!(
            "{field}: {} keys in one value, each read as its own entry; Kyverno v1.19 uses \
             only the first (it reads the others as file paths and reports an error), so a \
             signature by another of them passes here and errors in Kyverno; give each key \
             its own entry to be read alike",
            keys.len()
        ));
    }
    Ok(keys
        .into_iter()
        .map(|k| AttestorEntry::Keys(vec![k]))
        .collect())
}

/// `certificates`: a pinned `cert` and/or a `certChain`. The Rekor and CT settings are
/// treated as for keys: the trust root decides which logs count.
fn certificates_entry(
    c: &CertificatesSpec,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<AttestorEntry, PolicyError> {
    let trust = checked_trust(&c.rekor, &c.ctlog, at, ctx)?;
    let (cert, chain) = (non_empty(&c.cert), non_empty(&c.cert_chain));
    if cert.is_none() && chain.is_none() {
        return Err(invalid(at, "certificates needs cert, certChain or both"));
    }
    let name = entry_name(at);
    Ok(AttestorEntry::Certificate(certificate_attestor(
        &name, cert, chain, at, trust,
    )?))
}

/// Kyverno `additionalExtensions` keys mansign checks, and the claim each one is.
const EXTENSIONS: &[(&str, Claim)] = &[
    ("githubWorkflowTrigger", Claim::GithubWorkflowTrigger),
    ("githubWorkflowSha", Claim::GithubWorkflowSha),
    ("githubWorkflowName", Claim::GithubWorkflowName),
    ("githubWorkflowRepository", Claim::GithubWorkflowRepository),
    ("githubWorkflowRef", Claim::GithubWorkflowRef),
];

fn keyless_attestor(
    k: &KeylessSpec,
    at: &Location,
    ctx: &mut LoadContext<'_>,
) -> Result<KeylessAttestor, PolicyError> {
    let selected = ctx.default_trust(at)?;
    let trust = match non_empty(&k.roots) {
        None => selected,
        Some(text) => Arc::new(roots_trust(text, &at.at("roots"), &selected)?),
    };
    check_rekor(&k.rekor, at, &trust)?;
    check_ctlog(&k.ctlog, at, &trust)?;
    if k.rekor.as_ref().and_then(|r| r.ignore_tlog) == Some(true) {
        ctx.notes.push(format!(
            "{at}: rekor.ignoreTlog has no effect: mansign always verifies the transparency \
             log entry of keyless signatures"
        ));
    }
    if k.ctlog.as_ref().and_then(|c| c.ignore_sct) == Some(true) {
        ctx.notes.push(format!(
            "{at}: ctlog.ignoreSCT has no effect: mansign always verifies the certificate's SCT"
        ));
    }
    let mut b = IdentityPolicy::builder();
    if let Some(v) = non_empty(&k.subject) {
        b = b.subject(v);
    }
    if let Some(v) = non_empty(&k.issuer) {
        b = b.issuer(v);
    }
    if let Some(v) = non_empty(&k.subject_reg_exp) {
        b = b.subject_regex(v);
    }
    if let Some(v) = non_empty(&k.issuer_reg_exp) {
        b = b.issuer_regex(v);
    }
    for (name, value) in k.additional_extensions.iter().flatten() {
        let Some((_, claim)) = EXTENSIONS.iter().find(|(n, _)| n == name) else {
            return Err(unsupported(
                &at.at(format!("additionalExtensions.{name}")),
                format!(
                    "extension {name:?} is not supported (supported: {})",
                    EXTENSIONS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        b = b.exact(*claim, value);
    }
    let no_issuer = non_empty(&k.issuer).is_none() && non_empty(&k.issuer_reg_exp).is_none();
    if no_issuer && ctx.insecure_any_issuer() {
        b = b.insecure_any_issuer();
    }
    let identity = b.build().map_err(|e| match e {
        IdentityPolicyError::MissingIssuer => invalid(at, MISSING_ISSUER),
        IdentityPolicyError::MissingIdentity => invalid(
            at,
            "keyless needs subject, subjectRegExp or a GitHub additionalExtensions claim",
        ),
        other => invalid(at, other.to_string()),
    })?;
    if !identity.checks_issuer() {
        ctx.notes.push(issuer_not_checked_warning(at, &identity));
    }
    Ok(KeylessAttestor::new(trust, identity))
}

/// Kyverno variables (`{{ ... }}`) anywhere in a `validate.manifests` rule but a key's
/// `publicKeys` (whose one accepted form [`parse_data_variable`] checks) and the `context`
/// itself: refused, naming the field. mansign substitutes no variables, and a value taken
/// literally would silently mean something else.
pub(crate) fn refuse_variables(
    document: &serde_json::Value,
    loc: &Location,
) -> Result<(), PolicyError> {
    fn walk(value: &serde_json::Value, path: &str, loc: &Location) -> Result<(), PolicyError> {
        match value {
            serde_json::Value::String(text) if text.contains("{{") => {
                if path.ends_with(".publicKeys") {
                    return Ok(());
                }
                Err(unsupported(
                    &loc.at(path),
                    format!(
                        "{:?}: Kyverno variables and JMESPath are not supported here (mansign \
                         substitutes none; only a key's publicKeys may read a configMap \
                         context entry as \"{{{{ NAME.data.KEY }}}}\")",
                        text.chars().take(80).collect::<String>()
                    ),
                ))
            }
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| walk(v, &format!("{path}[{i}]"), loc)),
            serde_json::Value::Object(map) => map
                .iter()
                .try_for_each(|(k, v)| walk(v, &format!("{path}.{k}"), loc)),
            _ => Ok(()),
        }
    }
    let rules = document
        .pointer("/spec/rules")
        .and_then(serde_json::Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let Some(fields) = rule.as_object() else {
            continue;
        };
        if rule.pointer("/validate/manifests").is_none() {
            continue; // skipped when loaded: not mansign's to read
        }
        for (key, value) in fields {
            if key != "context" {
                walk(value, &format!("spec.rules[{i}].{key}"), loc)?;
            }
        }
    }
    Ok(())
}

/// A rule's `context`: only `configMap` entries (`{name, configMap: {name, namespace}}`),
/// by entry name; any other entry type is refused naming it. The ConfigMaps are read only
/// through `publicKeys: "{{ NAME.data.KEY }}"`.
pub(crate) fn config_map_context(
    context: &Option<serde_json::Value>,
    at: &Location,
) -> Result<std::collections::BTreeMap<String, (String, String)>, PolicyError> {
    let mut out = std::collections::BTreeMap::new();
    let Some(context) = context else {
        return Ok(out);
    };
    let Some(entries) = context.as_array() else {
        return Err(invalid(at, "context must be a list of entries"));
    };
    for (i, entry) in entries.iter().enumerate() {
        let entry_at = Location {
            field: format!("{}[{i}]", at.field),
            ..at.clone()
        };
        let Some(fields) = entry.as_object() else {
            return Err(invalid(&entry_at, "a context entry must be a mapping"));
        };
        for key in fields.keys() {
            if key != "name" && key != "configMap" {
                return Err(unsupported(
                    &entry_at.at(key),
                    format!(
                        "context entries of type {key:?} are not supported: mansign reads only \
                         configMap entries, and only as public keys (publicKeys: \
                         \"{{{{ NAME.data.KEY }}}}\"); remove it or put the value in the policy"
                    ),
                ));
            }
        }
        let Some(name) = fields.get("name").and_then(|n| n.as_str()) else {
            return Err(invalid(
                &entry_at.at("name"),
                "a context entry needs a name",
            ));
        };
        let Some(config_map) = fields.get("configMap").and_then(|c| c.as_object()) else {
            return Err(unsupported(
                &entry_at,
                "only configMap context entries are supported",
            ));
        };
        let cm_at = entry_at.at("configMap");
        for key in config_map.keys() {
            if key != "name" && key != "namespace" {
                return Err(invalid(&cm_at.at(key), "unknown field (name, namespace)"));
            }
        }
        let field = |f: &str| -> Result<String, PolicyError> {
            let Some(text) = config_map.get(f).and_then(|v| v.as_str()) else {
                return Err(invalid(
                    &cm_at.at(f),
                    format!(
                        "configMap.{f} is required (mansign reads exactly the named ConfigMap)"
                    ),
                ));
            };
            if text.contains("{{") {
                return Err(unsupported(
                    &cm_at.at(f),
                    "variables are not supported here: name the ConfigMap",
                ));
            }
            Ok(text.to_string())
        };
        let (cm_name, namespace) = (field("name")?, field("namespace")?);
        // The names are checked when a key is read from it (KeyReference::new).
        if out.insert(name.to_string(), (namespace, cm_name)).is_some() {
            return Err(invalid(
                &entry_at.at("name"),
                format!("context entry {name:?} is defined twice"),
            ));
        }
    }
    Ok(out)
}

/// The refusal of a keyless entry without an issuer: what to do about it.
pub(crate) const MISSING_ISSUER: &str = "keyless needs issuer or issuerRegExp (Kyverno does not check the issuer of manifest \
     signatures; mansign requires it): add the issuer, convert the policy with `mansign \
     policy convert --issuer URL` (or `--from-signed` to learn it from signed manifests), \
     or accept any issuer with --insecure-any-issuer";

/// The load-time warning for one keyless entry that accepts its subject from any issuer.
pub(crate) fn issuer_not_checked_warning(
    at: &Location,
    identity: &crate::verify::IdentityPolicy,
) -> String {
    format!(
        "{at}: warning: {ISSUER_NOT_CHECKED}: this entry accepts [{identity}] from any OIDC \
         issuer Fulcio trusts (--insecure-any-issuer); pin the issuer with `mansign policy \
         convert`"
    )
}
