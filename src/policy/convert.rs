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

use super::kyverno::{
    AttestorSetSpec, AttestorSpec, KeylessSpec, KyvernoPolicyDocument, Manifests, Rule,
};
use super::selector::{MatchResources, ObjectReference, ResourceDescription, ResourceFilter};
use super::{LoadOptions, Location, PolicyError, load_str, translate_upstream_field, typed};
use crate::annotations::{AnnotationDomain, extract};
use crate::limits::Limits;
use crate::manifest::{Document, parse_documents, to_yaml};
use crate::trust::TrustRoot;
use crate::verify::{AnchoredRegex, verify_certificate_set};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Signers seen in signed manifests: for each certificate subject, the issuers of the
/// keyless signatures that verified (chain, SCT, Rekor entry, signature over the message)
/// against the trust root. `None` is a certificate without an issuer extension (2021).
#[derive(Debug, Clone, Default)]
pub struct LearnedIssuers {
    by_subject: BTreeMap<String, BTreeMap<Option<String>, usize>>,
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

/// How keyless entries without an issuer get one.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// `--issuer`: the issuer of every keyless entry that names none.
    pub issuer: Option<String>,
    /// `--from-signed`: signed manifests to learn issuers from (their keyless signatures
    /// are verified against the trust root of `load`).
    pub from_signed: Vec<Document>,
    /// Trust root and limits for checking the input (as `verify --policy` loads it).
    pub load: LoadOptions,
}

/// How issuers are pinned while converting.
struct Convert {
    issuer: Option<String>,
    learned: LearnedIssuers,
}

/// A converted policy file.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// The output documents: `ManifestPolicy` for every Kyverno rule, other
    /// `ManifestPolicy` documents of the input unchanged.
    pub documents: Vec<Value>,
    /// What the user should know: issuers learned, fields dropped and why.
    pub notes: Vec<String>,
}

impl Conversion {
    /// The documents as one YAML stream.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for (i, doc) in self.documents.iter().enumerate() {
            if i > 0 {
                out.push_str("---\n");
            }
            out.push_str(&to_yaml(doc));
        }
        out
    }
}

fn refuse(at: &Location, reason: impl Into<String>) -> PolicyError {
    PolicyError::Unsupported {
        at: at.clone(),
        reason: format!("cannot be carried over: {}", reason.into()),
    }
}

/// Converts the policy documents in `text` (see the module docs). `base_dir` resolves the
/// relative paths of `ManifestPolicy` documents while the input is checked.
///
/// ```no_run
/// use mansign::policy::convert::{ConvertOptions, convert_str};
///
/// let text = std::fs::read_to_string("kyverno-policy.yaml")?;
/// let options = ConvertOptions {
///     issuer: Some("https://token.actions.githubusercontent.com".into()),
///     ..ConvertOptions::default()
/// };
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
    if let Some(config) = kubectl_sigstore_config(origin, text, options)? {
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
        if value.get("apiVersion").and_then(Value::as_str) == Some(super::mansign::API_VERSION) {
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
    let ctx = learn(origin, options, &domains)?;
    let mut out = Conversion::default();
    let mut kyverno = kyverno.into_iter().peekable();
    for (position, value) in documents {
        let loc = Location {
            origin: origin.into(),
            document: position + 1,
            field: String::new(),
        };
        if value.get("apiVersion").and_then(Value::as_str) == Some(super::mansign::API_VERSION) {
            out.documents.push(value);
            continue;
        }
        if let Some((_, doc)) = kyverno.next_if(|(p, _)| *p == position) {
            convert_document(&doc, &loc, &ctx, &mut out)?;
        }
    }
    Ok(out)
}

/// Keys of a k8s-manifest-sigstore `VerifyResourceOption` config (`kubectl sigstore verify
/// -c`, research k8s-manifest-sigstore §5.8).
const CONFIG_KEYS: &[&str] = &[
    "signers",
    "ignoreFields",
    "annotationKeyDomain",
    "skipObjects",
    "maxResourceManifestNum",
];

/// A kubectl-sigstore config file (one document, no `apiVersion`/`kind`, only its keys) as
/// one `ManifestPolicy`: `signers` → keyless entries of which one must verify (as upstream:
/// any one signer), each with its issuer pinned; `ignoreFields` translated like Kyverno's;
/// `annotationKeyDomain`; the k8s-manifest-sigstore defaults → the `kubernetes` profile.
/// `None` when the text is not such a config.
fn kubectl_sigstore_config(
    origin: &str,
    text: &str,
    options: &ConvertOptions,
) -> Result<Option<Conversion>, PolicyError> {
    let Ok(documents) = parse_documents(text, &options.load.limits) else {
        return Ok(None);
    };
    let [(_, Value::Object(config))] = documents.as_slice() else {
        return Ok(None);
    };
    if config.contains_key("apiVersion")
        || config.contains_key("kind")
        || !config.keys().any(|k| CONFIG_KEYS.contains(&k.as_str()))
    {
        return Ok(None);
    }
    let at = Location {
        origin: origin.into(),
        document: 1,
        field: String::new(),
    };
    if let Some(key) = config.keys().find(|k| !CONFIG_KEYS.contains(&k.as_str())) {
        return Err(refuse(
            &at.at(key),
            "not a field mansign reads from a kubectl-sigstore config",
        ));
    }
    let mut out = Conversion::default();
    let signers: Vec<String> = match config.get("signers") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| PolicyError::Invalid {
            at: at.at("signers"),
            reason: e.to_string(),
        })?,
    };
    if signers.is_empty() {
        return Err(refuse(
            &at.at("signers"),
            "without signers kubectl-sigstore accepts any keyless signer; mansign needs the \
             signers' subjects (or verify with --key)",
        ));
    }
    let ctx = learn(origin, options, &[AnnotationDomain::default()])?;
    let mut entries = Vec::new();
    for (i, signer) in signers.iter().enumerate() {
        let entry_at = at.at(format!("signers[{i}]"));
        let spec = KeylessSpec {
            subject: Some(signer.clone()),
            ..KeylessSpec::default()
        };
        let issuer = pinned_issuer(&spec, &entry_at, &ctx, &mut out)?;
        entries.push(json!({"keyless": {"issuer": issuer, "subject": signer}}));
    }
    let mut spec = Map::new();
    if let Some(domain) = config.get("annotationKeyDomain") {
        let d = domain.as_str().unwrap_or_default();
        AnnotationDomain::new(d).map_err(|reason| PolicyError::Invalid {
            at: at.at("annotationKeyDomain"),
            reason,
        })?;
        spec.insert("annotationDomain".into(), json!(d));
    }
    spec.insert("ignoreProfile".into(), json!("kubernetes"));
    spec.insert("namespaceBinding".into(), json!(["*"]));
    if let Some(v) = config.get("ignoreFields") {
        let bindings: Vec<super::kyverno::IgnoreFieldsSpec> =
            typed::from_value(v).map_err(|reason| PolicyError::Invalid {
                at: at.at("ignoreFields"),
                reason,
            })?;
        spec.insert(
            "ignoreFields".into(),
            ignore_fields(&bindings, &at.at("ignoreFields"))?,
        );
    }
    if config.contains_key("skipObjects") {
        out.notes.push(format!(
            "{}: dropped: mansign verifies those objects too (it has no out-of-scope objects)",
            at.at("skipObjects")
        ));
    }
    if config.contains_key("maxResourceManifestNum") {
        out.notes.push(format!(
            "{}: dropped: mansign matches an object to its signed document by identity",
            at.at("maxResourceManifestNum")
        ));
    }
    spec.insert(
        "attestors".into(),
        json!([{"count": 1, "entries": entries}]),
    );
    out.documents.push(json!({
        "apiVersion": super::mansign::API_VERSION,
        "kind": super::mansign::KIND,
        "metadata": {"name": "kubectl-sigstore-config"},
        "spec": spec,
    }));
    Ok(Some(out))
}

/// What `--issuer` and `--from-signed` give, learned with these annotation domains.
fn learn(
    origin: &str,
    options: &ConvertOptions,
    domains: &[AnnotationDomain],
) -> Result<Convert, PolicyError> {
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
        LearnedIssuers::learn(&options.from_signed, domains, &trust, &options.load.limits)
    };
    Ok(Convert {
        issuer: options.issuer.clone(),
        learned,
    })
}

fn convert_document(
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
        if let Some(action) = rule
            .validate
            .as_ref()
            .and_then(|v| v.failure_action.as_deref())
            .filter(|a| *a != "Enforce")
        {
            out.notes.push(format!(
                "{}: failureAction {action} dropped: mansign has no audit mode, a failed rule \
                 fails",
                at.at("validate.failureAction")
            ));
        }
        let exclude = exclude_selection(rule, &at)?;
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
            if let Some(e) = &exclude {
                spec_out.insert("exclude".into(), e.clone());
            }
            spec_out.extend(spec.clone());
            out.documents.push(json!({
                "apiVersion": super::mansign::API_VERSION,
                "kind": super::mansign::KIND,
                "metadata": {"name": name},
                "spec": spec_out,
            }));
        }
    }
    Ok(())
}

/// The resource filters of a match/exclude block, each with its field path.
fn filters<'m>(m: &'m MatchResources, at: &Location) -> Vec<(Location, &'m ResourceFilter)> {
    let mut out: Vec<(Location, &ResourceFilter)> = Vec::new();
    for (i, f) in m.any.iter().enumerate() {
        out.push((at.at(format!("any[{i}]")), f));
    }
    for (i, f) in m.all.iter().enumerate() {
        out.push((at.at(format!("all[{i}]")), f));
    }
    out
}

/// A resource description as a `ManifestPolicy` selection; `drop_operations` says whether
/// `operations` may be left out (in `match` it only makes the rule apply more often).
fn selection(
    r: &ResourceDescription,
    at: &Location,
    drop_operations: bool,
    notes: &mut Vec<String>,
) -> Result<Map<String, Value>, PolicyError> {
    if r.annotations.is_some() {
        return Err(refuse(
            &at.at("annotations"),
            "a ManifestPolicy selects by kinds, names and namespaces only",
        ));
    }
    if !r.operations.is_empty() {
        if !drop_operations {
            return Err(refuse(
                &at.at("operations"),
                "a ManifestPolicy cannot exclude by operation (dropping it would exclude more \
                 objects)",
            ));
        }
        notes.push(format!(
            "{}: dropped: the converted rule applies to every operation (it checks more, \
             never less)",
            at.at("operations")
        ));
    }
    let mut names = r.names.clone();
    names.extend(r.name.iter().cloned());
    let mut m = Map::new();
    for (key, list) in [
        ("kinds", &r.kinds),
        ("names", &names),
        ("namespaces", &r.namespaces),
    ] {
        if !list.is_empty() {
            m.insert(key.into(), json!(list));
        }
    }
    Ok(m)
}

fn no_user_conditions(
    subjects: bool,
    roles: bool,
    cluster_roles: bool,
    at: &Location,
) -> Result<(), PolicyError> {
    for (name, present) in [
        ("subjects", subjects),
        ("roles", roles),
        ("clusterRoles", cluster_roles),
    ] {
        if present {
            return Err(refuse(
                &at.at(name),
                "a ManifestPolicy has no conditions on the requesting user",
            ));
        }
    }
    Ok(())
}

/// `match` as one selection per alternative (`any` items are alternatives: each becomes
/// its own document with the same requirement, so an object any of them selects is checked).
fn match_selections(
    rule: &Rule,
    at: &Location,
    namespace: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Vec<Value>, PolicyError> {
    let at = at.at("match");
    let Some(m) = &rule.match_resources else {
        return Err(refuse(&at, "a rule needs match"));
    };
    no_user_conditions(
        !m.subjects.is_empty(),
        !m.roles.is_empty(),
        !m.cluster_roles.is_empty(),
        &at,
    )?;
    if m.all.len() > 1 {
        return Err(refuse(
            &at.at("all"),
            "several `all` filters must all hold; a ManifestPolicy has one selection",
        ));
    }
    if !m.all.is_empty() && !m.any.is_empty() {
        return Err(refuse(&at, "both `any` and `all`"));
    }
    let mut items: Vec<(Location, Option<&ResourceDescription>)> = filters(m, &at)
        .into_iter()
        .map(|(l, f)| {
            no_user_conditions(
                !f.subjects.is_empty(),
                !f.roles.is_empty(),
                !f.cluster_roles.is_empty(),
                &l,
            )
            .map(|()| (l.at("resources"), f.resources.as_ref()))
        })
        .collect::<Result<_, _>>()?;
    if let Some(r) = &m.resources {
        items.push((at.at("resources"), Some(r)));
    }
    let mut out = Vec::new();
    for (l, r) in items {
        let mut sel = match r {
            Some(r) => selection(r, &l, true, notes)?,
            None => Map::new(),
        };
        if let Some(ns) = namespace {
            // A namespaced Policy: its objects are in its namespace.
            match sel.get("namespaces") {
                None => {
                    sel.insert("namespaces".into(), json!([ns]));
                }
                Some(list) if list == &json!([ns]) => {}
                Some(_) => {
                    return Err(refuse(
                        &l.at("namespaces"),
                        "namespaces in a namespaced Policy; list only the policy's namespace",
                    ));
                }
            }
        }
        out.push(Value::Object(sel));
    }
    Ok(out)
}

/// `exclude` as one selection (an exclusion with several alternatives cannot be said).
fn exclude_selection(rule: &Rule, at: &Location) -> Result<Option<Value>, PolicyError> {
    let at = at.at("exclude");
    let Some(m) = &rule.exclude else {
        return Ok(None);
    };
    no_user_conditions(
        !m.subjects.is_empty(),
        !m.roles.is_empty(),
        !m.cluster_roles.is_empty(),
        &at,
    )?;
    let mut items: Vec<(Location, &ResourceDescription)> = Vec::new();
    for (l, f) in filters(m, &at) {
        no_user_conditions(
            !f.subjects.is_empty(),
            !f.roles.is_empty(),
            !f.cluster_roles.is_empty(),
            &l,
        )?;
        if let Some(r) = &f.resources {
            items.push((l.at("resources"), r));
        }
    }
    if let Some(r) = &m.resources {
        items.push((at.at("resources"), r));
    }
    match items.as_slice() {
        [] => Ok(None),
        [(l, r)] => Ok(Some(Value::Object(selection(
            r,
            l,
            false,
            &mut Vec::new(),
        )?))),
        _ => Err(refuse(
            &at,
            "several exclude filters; a ManifestPolicy has one exclude selection",
        )),
    }
}

fn object_reference(o: &ObjectReference) -> Value {
    let mut m = Map::new();
    for (key, value) in [
        ("group", &o.group),
        ("version", &o.version),
        ("kind", &o.kind),
        ("name", &o.name),
        ("namespace", &o.namespace),
    ] {
        if !value.is_empty() {
            m.insert(key.into(), json!(value));
        }
    }
    Value::Object(m)
}

/// The `spec` fields of the converted rule other than match/exclude.
fn manifests_spec(
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
    let mut sets = Vec::new();
    for (i, set) in m.attestors.iter().enumerate() {
        sets.push(attestor_set(
            set,
            &at.at(format!("attestors[{i}]")),
            options,
            out,
        )?);
    }
    spec.insert("attestors".into(), Value::Array(sets));
    Ok(spec)
}

/// Upstream ignore-field bindings as mansign's (anchored patterns, objects as they are).
fn ignore_fields(
    bindings: &[super::kyverno::IgnoreFieldsSpec],
    at: &Location,
) -> Result<Value, PolicyError> {
    let name = at.field.rsplit('.').next().unwrap_or_default().to_string();
    let parent = Location {
        field: at
            .field
            .strip_suffix(&name)
            .map(|p| p.trim_end_matches('.').to_string())
            .unwrap_or_default(),
        ..at.clone()
    };
    let mut ignore = Vec::new();
    for (i, binding) in bindings.iter().enumerate() {
        let mut fields = Vec::new();
        for (j, field) in binding.fields.iter().enumerate() {
            let field_at = parent.at(format!("{name}[{i}].fields[{j}]"));
            let patterns =
                translate_upstream_field(field).map_err(|reason| PolicyError::Invalid {
                    at: field_at,
                    reason,
                })?;
            fields.extend(patterns.iter().map(|p| json!(p.to_string())));
        }
        let mut b = Map::new();
        if !binding.objects.is_empty() {
            b.insert(
                "objects".into(),
                Value::Array(binding.objects.iter().map(object_reference).collect()),
            );
        }
        b.insert("fields".into(), Value::Array(fields));
        ignore.push(Value::Object(b));
    }
    Ok(Value::Array(ignore))
}

fn attestor_set(
    set: &AttestorSetSpec,
    at: &Location,
    options: &Convert,
    out: &mut Conversion,
) -> Result<Value, PolicyError> {
    let mut entries = Vec::new();
    for (j, entry) in set.entries.iter().enumerate() {
        entries.extend(attestor_entries(
            entry,
            &at.at(format!("entries[{j}]")),
            options,
            out,
        )?);
    }
    let mut m = Map::new();
    // Kyverno: count absent or 0 = every entry; mansign: absent = every entry.
    if let Some(count) = set.count.filter(|c| *c > 0) {
        m.insert("count".into(), json!(count));
    }
    m.insert("entries".into(), Value::Array(entries));
    Ok(Value::Object(m))
}

fn text(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn attestor_entries(
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
        // One entry per key, as the loader expands them, so `count` keeps its meaning.
        let pem = text(&keys.public_keys).unwrap_or_default();
        let blocks = pem::parse_many(pem).map_err(|e| PolicyError::Invalid {
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
fn note_logs(
    rekor: &Option<super::kyverno::RekorSpec>,
    ctlog: &Option<super::kyverno::CtlogSpec>,
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
const GITHUB: &[(&str, &str)] = &[
    ("githubWorkflowRepository", "repository"),
    ("githubWorkflowRef", "ref"),
    ("githubWorkflowTrigger", "trigger"),
    ("githubWorkflowSha", "sha"),
    ("githubWorkflowName", "name"),
];

fn keyless(
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
        m.insert("roots".into(), json!(roots));
    }
    if k.rekor.is_some() || k.ctlog.is_some() {
        note_logs(&k.rekor, &k.ctlog, at, out);
    }
    Ok(Value::Object(m))
}

/// The issuer for a keyless entry that names none: `--issuer`, or the one issuer that
/// signatures from the entry's subject show in `--from-signed`.
fn pinned_issuer(
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
