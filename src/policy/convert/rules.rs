//! One Kyverno `validate.manifests` rule as `ManifestPolicy` documents: attestor sets,
//! keys, certificates, keyless identities (issuers pinned), annotation domain, ignore fields.

use super::conversion::{Conversion, refuse, text};
use super::ignore::ignore_fields;
use super::issuers::{Convert, pinned_issuer};
use super::selection::{exclude_selection, match_selections};
use crate::policy::kyverno::{
    AttestorSetSpec, AttestorSpec, CtlogSpec, KeylessSpec, KyvernoPolicyDocument, Manifests,
    RekorSpec,
};
use crate::policy::load::context::at_each;
use crate::policy::{FailureAction, KeyReference, Location, PolicyError, parse_data_variable};
use serde_json::{Map, Value, json};

pub(super) fn convert_document(
    doc: &KyvernoPolicyDocument,
    loc: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<(), PolicyError> {
    let namespace = (doc.kind == "Policy")
        .then(|| doc.metadata.namespace.clone())
        .flatten();
    for (i, rule) in doc.spec.rules.iter().enumerate() {
        let at = loc.at(format!("spec.rules[{i}]"));
        let Some(manifests) = rule.validate.as_ref().and_then(|v| v.manifests.as_ref()) else {
            out.notes.push(format!(
                "{at}: rule {:?} skipped: not a validate.manifests rule",
                rule.name
            ));
            continue;
        };
        let selections = match_selections(rule, &at, namespace.as_deref(), &mut out.notes)?;
        if let Some(ns) = &namespace {
            out.notes.push(format!(
                "{at}: the namespaced Policy's namespace {ns} became match.namespaces: a \
                 manifest without a namespace is no longer selected (reported as \
                 no-policy-rule, never allowed); bind it with namespaceBinding or add a \
                 namespace to the manifest"
            ));
        }
        out.config_maps =
            crate::policy::kyverno::config_map_context(&rule.context, &at.at("context"))?;
        let action = failure_action(doc, rule, &at, &mut out.notes)?;
        let exclude = exclude_selection(rule, &at, &mut out.notes)?;
        let spec = manifests_spec(manifests, &at.at("validate.manifests"), options, out)?;
        let count = selections.len();
        for (j, selection) in selections.into_iter().enumerate() {
            let name = if count == 1 {
                format!("{}-{}", doc.metadata.name, rule.name)
            } else {
                format!("{}-{}-{}", doc.metadata.name, rule.name, j + 1)
            };
            let mut spec_out = Map::new();
            spec_out.insert("match".into(), selection);
            spec_out.insert("failureAction".into(), json!(action.as_str()));
            if let Some(e) = &exclude {
                spec_out.insert("exclude".into(), e.clone());
            }
            spec_out.extend(spec.clone());
            out.documents.push(json!({
                "apiVersion": crate::policy::mansign::API_VERSION,
                "kind": crate::policy::mansign::KIND,
                "metadata": {"name": name},
                "spec": spec_out,
            }));
        }
    }
    Ok(())
}

/// The `spec` fields of the converted rule other than match/exclude.
pub(super) fn manifests_spec(
    m: &Manifests,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<Map<String, Value>, PolicyError> {
    let mut spec = Map::new();
    if let Some(d) = m.annotation_domain.as_deref().map(str::trim)
        && !d.is_empty()
    {
        spec.insert("annotationDomain".into(), json!(d));
    }
    // Kyverno's meaning, as the loader gives it: server-populated fields tolerated
    // (anchored), a document signed without a namespace accepted in any namespace.
    spec.insert("ignoreProfile".into(), json!("kubernetes"));
    spec.insert("namespaceBinding".into(), json!(["*"]));
    if !m.ignore_fields.is_empty() {
        spec.insert(
            "ignoreFields".into(),
            ignore_fields(&m.ignore_fields, &at.at("ignoreFields"))?,
        );
    }
    let sets = at_each(at, "attestors", &m.attestors, |set, at| {
        attestor_set(set, at, options, out)
    })?;
    spec.insert("attestors".into(), Value::Array(sets));
    Ok(spec)
}

pub(super) fn attestor_set(
    set: &AttestorSetSpec,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<Value, PolicyError> {
    let entries = at_each(at, "entries", &set.entries, |entry, at| {
        attestor_entries(entry, at, options, out)
    })?
    .concat();
    let mut m = Map::new();
    // Kyverno: count absent or 0 = every entry; mansign: absent = every entry.
    if let Some(count) = set.count.filter(|c| *c > 0) {
        m.insert("count".into(), json!(count));
    }
    m.insert("entries".into(), Value::Array(entries));
    Ok(Value::Object(m))
}

pub(super) fn attestor_entries(
    entry: &AttestorSpec,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<Vec<Value>, PolicyError> {
    if let Some(nested) = &entry.attestor {
        return Ok(vec![
            json!({"attestor": attestor_set(nested, &at.at("attestor"), options, out)?}),
        ]);
    }
    if let Some(keys) = &entry.keys {
        // A key read from the cluster stays a reference (the loader checked it).
        let raw = text(&keys.public_keys).unwrap_or_default();
        let field = at.at("keys.publicKeys");
        let invalid = |reason: String| PolicyError::Invalid {
            at: field.clone(),
            reason,
        };
        if let Some(parsed) = KeyReference::parse_k8s_uri(raw) {
            let r = parsed.map_err(|e| invalid(e.to_string()))?;
            note_logs(&keys.rekor, &keys.ctlog, at, out);
            return Ok(vec![json!({"keys": {"secretRef": {
                "namespace": r.namespace, "name": r.name, "key": r.key}}})]);
        }
        if let Some(parsed) = parse_data_variable(raw) {
            let (variable, key) = parsed.map_err(|e| invalid(e.to_string()))?;
            let Some((namespace, name)) = out.config_maps.get(&variable).cloned() else {
                return Err(invalid(format!(
                    "{variable:?} is not a configMap entry of this rule's context"
                )));
            };
            note_logs(&keys.rekor, &keys.ctlog, at, out);
            return Ok(vec![json!({"keys": {"configMapRef": {
                "namespace": namespace, "name": name, "key": key}}})]);
        }
        // One entry per key, as the loader expands them, so `count` keeps its meaning.
        let pem = raw;
        let blocks = crate::keys::pem_blocks(pem).map_err(|e| PolicyError::Invalid {
            at: at.at("keys.publicKeys"),
            reason: format!("not valid PEM: {e}"),
        })?;
        note_logs(&keys.rekor, &keys.ctlog, at, out);
        return Ok(blocks
            .iter()
            .map(|b| {
                let pem = pem::encode_config(
                    b,
                    pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
                );
                json!({"keys": {"publicKeys": pem}})
            })
            .collect());
    }
    if let Some(c) = &entry.certificates {
        let mut m = Map::new();
        if let Some(cert) = text(&c.cert) {
            m.insert("cert".into(), json!(cert));
        }
        if let Some(chain) = text(&c.cert_chain) {
            m.insert("certChain".into(), json!(chain));
        }
        note_logs(&c.rekor, &c.ctlog, at, out);
        return Ok(vec![json!({"certificates": m})]);
    }
    if let Some(k) = &entry.keyless {
        return Ok(vec![
            json!({"keyless": keyless(k, &at.at("keyless"), options, out)?}),
        ]);
    }
    Err(PolicyError::Invalid {
        at: at.clone(),
        reason: "empty entry".into(),
    })
}

/// Rekor and CT settings the loader accepted carry nothing a trust root does not.
pub(super) fn note_logs(
    rekor: &Option<RekorSpec>,
    ctlog: &Option<CtlogSpec>,
    at: &Location,
    out: &mut Conversion,
) {
    if rekor.is_some() || ctlog.is_some() {
        out.notes.push(format!(
            "{at}: rekor/ctlog dropped: mansign verifies offline against the trust root's \
             logs (--trusted-root); a log key given here was checked to be one of them"
        ));
    }
}

/// GitHub claims: Kyverno `additionalExtensions` key → mansign `github` key.
pub(super) const GITHUB: &[(&str, &str)] = &[
    ("githubWorkflowRepository", "repository"),
    ("githubWorkflowRef", "ref"),
    ("githubWorkflowTrigger", "trigger"),
    ("githubWorkflowSha", "sha"),
    ("githubWorkflowName", "name"),
];

pub(super) fn keyless(
    k: &KeylessSpec,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<Value, PolicyError> {
    let mut m = Map::new();
    match (text(&k.issuer), text(&k.issuer_reg_exp)) {
        (None, None) => {
            let issuer = pinned_issuer(k, at, options, out)?;
            m.insert("issuer".into(), json!(issuer));
        }
        (issuer, regex) => {
            if let Some(i) = issuer {
                m.insert("issuer".into(), json!(i));
            }
            if let Some(r) = regex {
                m.insert("issuerRegExp".into(), json!(r));
            }
        }
    }
    if let Some(s) = text(&k.subject) {
        m.insert("subject".into(), json!(s));
    }
    if let Some(s) = text(&k.subject_reg_exp) {
        m.insert("subjectRegExp".into(), json!(s));
    }
    let mut github = Map::new();
    for (name, value) in k.additional_extensions.iter().flatten() {
        // The loader refused every other key.
        if let Some((_, key)) = GITHUB.iter().find(|(n, _)| n == name) {
            github.insert((*key).into(), json!(value));
        }
    }
    if !github.is_empty() {
        m.insert("github".into(), Value::Object(github));
    }
    if let Some(roots) = text(&k.roots) {
        super::issuers::check_kept_roots(k, roots, &at.at("roots"), options, out);
        m.insert("roots".into(), json!(roots));
    }
    if k.rekor.is_some() || k.ctlog.is_some() {
        note_logs(&k.rekor, &k.ctlog, at, out);
    }
    Ok(Value::Object(m))
}

/// The rule's action in the cluster, carried over as `spec.failureAction`: the rule's
/// `validate.failureAction`, else the policy's `validationFailureAction`. Per-namespace
/// overrides have no `ManifestPolicy` form: refused (dropping them could turn an enforced
/// namespace into an audited one). No action at all: Kyverno would audit; the converted
/// rule enforces, and a note says so.
fn failure_action(
    doc: &KyvernoPolicyDocument,
    rule: &crate::policy::kyverno::Rule,
    at: &Location,
    notes: &mut Vec<String>,
) -> Result<FailureAction, PolicyError> {
    let validate = rule.validate.as_ref();
    if validate.is_some_and(|v| v.failure_action_overrides.is_some()) {
        return Err(refuse(
            &at.at("validate.failureActionOverrides"),
            "per-namespace actions have no ManifestPolicy form: split the rule by namespace \
             (match.namespaces) with one failureAction each",
        ));
    }
    if doc.spec.validation_failure_action_overrides.is_some() {
        return Err(refuse(
            &Location {
                field: "spec.validationFailureActionOverrides".into(),
                ..at.clone()
            },
            "per-namespace actions have no ManifestPolicy form: split the rule by namespace \
             (match.namespaces) with one failureAction each",
        ));
    }
    let (text, path) = match validate.and_then(|v| v.failure_action.as_deref()) {
        Some(a) => (Some(a), at.at("validate.failureAction")),
        None => (
            doc.spec.validation_failure_action.as_deref(),
            Location {
                field: "spec.validationFailureAction".into(),
                ..at.clone()
            },
        ),
    };
    match text {
        None => {
            notes.push(format!(
                "{at}: no failureAction (Kyverno's default is Audit, report only): the \
                 converted rule enforces"
            ));
            Ok(FailureAction::Enforce)
        }
        Some(t) => FailureAction::parse(t)
            .ok_or_else(|| refuse(&path, format!("{t:?} is not Enforce or Audit"))),
    }
}
