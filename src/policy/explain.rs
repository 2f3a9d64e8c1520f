//! `mansign policy explain`: what a loaded policy enforces, rule by rule, in plain words.
//!
//! The explanation is read from the loaded [`PolicySet`] — what mansign will actually
//! check — not from the file's text: which objects a rule applies to, which signers it
//! requires (subject and issuer, `count`, nested sets), which fields may differ, the
//! maximum age, the action, and where mansign is stricter than Kyverno would be with the
//! same rule (issuer enforced, anchored regexes, anchored ignore fields, fail-closed).

use super::selector::{KindSelector, MatchResources, ResourceDescription, ResourceFilter, Subject};
use super::{FailureAction, NamespaceBinding, PolicyRule, PolicySet, RuleSource};
use crate::manifest::{GitopsBindings, IgnoreProfile};
use crate::verify::{
    AttestorEntry, AttestorSet, Claim, KeylessAttestor, Requirement, ValueMatcher,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt;

/// One rule, explained.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleExplanation {
    pub policy: String,
    pub rule: String,
    /// `file: document N: field path`.
    pub defined_at: String,
    /// `mansign ManifestPolicy` or `Kyverno rule`.
    pub format: String,
    /// Which objects the rule applies to.
    pub applies_to: String,
    /// The attestor sets, as structured data.
    pub signers: Vec<Value>,
    /// The same, one line per set and entry, indented by depth.
    #[serde(skip)]
    pub signer_lines: Vec<String>,
    /// Fields that may differ, per object selection.
    pub ignored_fields: Vec<String>,
    /// The ignore profile and the other tolerances.
    pub tolerances: Vec<String>,
    pub max_age: Option<String>,
    /// What happens when the rule fails.
    pub action: String,
    /// Where mansign is stricter than Kyverno with the same rule.
    pub stricter_than_kyverno: Vec<String>,
    /// Where the rule is weaker than mansign's default (e.g. an issuer not checked).
    pub warnings: Vec<String>,
}

/// Every rule of the set, in order.
///
/// ```no_run
/// use mansign::policy::{LoadOptions, explain::explain_text, load_file};
///
/// let set = load_file("policy.yaml".as_ref(), &LoadOptions::default())?;
/// print!("{}", explain_text(&set));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn explain(set: &PolicySet) -> Vec<RuleExplanation> {
    set.rules.iter().map(explain_rule).collect()
}

/// The JSON form of [`explain`]: `{"notes": [...], "rules": [...]}`.
pub fn explain_json(set: &PolicySet) -> Value {
    json!({"notes": set.notes, "rules": explain(set)})
}

/// The text form `mansign policy explain` prints: the loader's notes, then each rule.
pub fn explain_text(set: &PolicySet) -> String {
    let mut text = String::new();
    for note in &set.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    for rule in explain(set) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&rule.to_string());
    }
    text
}

fn list(items: &[String]) -> String {
    items.join(", ")
}

fn describe_resources(r: &ResourceDescription) -> String {
    let mut parts = Vec::new();
    let mut names = r.names.clone();
    names.extend(r.name.iter().cloned());
    if !r.kinds.is_empty() {
        // Each selector with the reading mansign (and Kyverno) gives it.
        let kinds: Vec<String> = r
            .kinds
            .iter()
            .map(|k| match KindSelector::parse(k) {
                Ok(reading) => format!("{k} [{reading}]"),
                Err(_) => k.clone(),
            })
            .collect();
        parts.push(format!("kind {}", kinds.join(" or ")));
    }
    if !names.is_empty() {
        parts.push(format!("name {}", list(&names)));
    }
    if !r.namespaces.is_empty() {
        parts.push(format!("namespace {}", list(&r.namespaces)));
    }
    if !r.operations.is_empty() {
        parts.push(format!(
            "operation {} (offline, where the operation is unknown, assumed to hold)",
            list(&r.operations)
        ));
    }
    if let Some(a) = &r.annotations {
        let keys: Vec<String> = a.keys().cloned().collect();
        parts.push(format!("annotations {}", list(&keys)));
    }
    any_object_or(&parts, " and ")
}

/// The parts joined with `separator`; no parts: any object.
fn any_object_or(parts: &[String], separator: &str) -> String {
    if parts.is_empty() {
        "any object".into()
    } else {
        parts.join(separator)
    }
}

/// The conditions of a filter on the requesting user, with what offline `verify` makes of
/// them.
fn describe_users(filter: &ResourceFilter, exclude: bool) -> Vec<String> {
    let (subjects, roles, cluster_roles) = (&filter.subjects, &filter.roles, &filter.cluster_roles);
    let mut parts = Vec::new();
    if !subjects.is_empty() {
        let names: Vec<String> = subjects.iter().map(Subject::describe).collect();
        parts.push(format!("requested by {}", names.join(" or ")));
    }
    if !roles.is_empty() {
        parts.push(format!("by a user with role {}", list(roles)));
    }
    if !cluster_roles.is_empty() {
        parts.push(format!(
            "by a user with cluster role {}",
            list(cluster_roles)
        ));
    }
    if !parts.is_empty() {
        parts.push(if exclude {
            "(the requesting user is known to the webhook only: offline `verify` has no \
             request and treats this exclusion as not met, so it checks these objects)"
                .to_string()
        } else {
            "(the requesting user is known to the webhook only: offline `verify` has no \
             request and treats this condition as met)"
                .to_string()
        });
    }
    if !roles.is_empty() || !cluster_roles.is_empty() {
        parts.push(
            "(mansign does not resolve roles: the webhook treats them as in `verify`)".to_string(),
        );
    }
    parts
}

fn describe_filter(f: &ResourceFilter, exclude: bool) -> String {
    let mut parts: Vec<String> = f.resources.iter().map(describe_resources).collect();
    parts.extend(describe_users(f, exclude));
    any_object_or(&parts, ", ")
}

fn describe_match(m: &MatchResources, exclude: bool) -> String {
    let bracketed = |filters: &[ResourceFilter]| -> Vec<String> {
        filters
            .iter()
            .map(|f| format!("({})", describe_filter(f, exclude)))
            .collect()
    };
    let mut parts = Vec::new();
    if !m.any.is_empty() {
        parts.push(if m.any.len() == 1 {
            describe_filter(&m.any[0], exclude)
        } else {
            format!("any of {}", bracketed(&m.any).join(" or "))
        });
    }
    if !m.all.is_empty() {
        parts.push(bracketed(&m.all).join(" and "));
    }
    if let Some(r) = &m.resources {
        parts.push(describe_resources(r));
    }
    parts.extend(describe_users(&m.legacy(), exclude));
    any_object_or(&parts, "; ")
}

fn applies_to(rule: &PolicyRule) -> String {
    let mut text = match &rule.selector.include {
        None => "every object".to_string(),
        Some(m) => format!("objects with {}", describe_match(m, false)),
    };
    if let Some(e) = &rule.selector.exclude {
        text.push_str(&format!(", except {}", describe_match(e, true)));
    }
    if let Some(ns) = &rule.namespace {
        text.push_str(&format!(
            ", in namespace {ns} (or applied without a namespace)"
        ));
    }
    text.push_str("; an object no rule applies to is not verified");
    text
}

fn matcher_text(m: &ValueMatcher) -> (String, Value) {
    match m {
        ValueMatcher::Exact(v) => (v.clone(), json!({"exact": v})),
        ValueMatcher::Regex(re) => (
            format!("matching regex ^(?:{})$", re.pattern()),
            json!({"regex": re.pattern(), "anchored": true}),
        ),
    }
}

fn keyless(k: &KeylessAttestor) -> (String, Value) {
    let mut words = Vec::new();
    let mut data = serde_json::Map::new();
    data.insert("kind".into(), json!("keyless"));
    for m in k.identity.matchers() {
        let (text, value) = matcher_text(&m.matcher);
        words.push(format!("{} {text}", m.claim));
        let key = match m.claim {
            Claim::Issuer => "issuer",
            Claim::Subject => "subject",
            Claim::GithubWorkflowRepository => "githubWorkflowRepository",
            Claim::GithubWorkflowRef => "githubWorkflowRef",
            Claim::GithubWorkflowTrigger => "githubWorkflowTrigger",
            Claim::GithubWorkflowSha => "githubWorkflowSha",
            Claim::GithubWorkflowName => "githubWorkflowName",
        };
        data.insert(key.into(), value);
    }
    if !k.identity.checks_issuer() {
        words.push("from ANY issuer (issuer not checked)".into());
        data.insert("issuer".into(), json!({"any": true}));
    }
    data.insert("trustRoot".into(), json!(k.trust.origin()));
    (
        format!(
            "a keyless signature: {}; certificate chaining to trust root {}",
            words.join(", "),
            k.trust.origin()
        ),
        Value::Object(data),
    )
}

/// Lines (indented by depth) and JSON for one set.
fn describe_set(set: &AttestorSet, path: &str, depth: usize, lines: &mut Vec<String>) -> Value {
    let n = set.entries().len();
    let head = match set.count() {
        None if n == 1 => "its one entry must be satisfied".to_string(),
        None => format!("all {n} entries must be satisfied"),
        Some(c) => format!("at least {c} of {n} entries, each by a different signer"),
    };
    lines.push(format!("{}{path}: {head}", "  ".repeat(depth)));
    let mut entries = Vec::new();
    for (i, entry) in set.entries().iter().enumerate() {
        let entry_path = format!("{path}.entries[{i}]");
        let indent = "  ".repeat(depth + 1);
        let value = match entry {
            AttestorEntry::Keys(keys) => {
                let names: Vec<String> = keys
                    .iter()
                    .map(
                        |k| match k.name.strip_suffix(super::load::context::UNRESOLVED_KEY) {
                            // A key the policy names in the cluster, not read here.
                            Some(name) => format!("{name}, read from the cluster when verifying"),
                            None => format!(
                                "{} (sha256:{})",
                                k.name,
                                &k.fingerprint[..k.fingerprint.len().min(16)]
                            ),
                        },
                    )
                    .collect();
                lines.push(format!(
                    "{indent}{entry_path}: a signature by key {}",
                    names.join(" or ")
                ));
                json!({"kind": "key", "keys": keys.iter().map(|k| match k.name.strip_suffix(super::load::context::UNRESOLVED_KEY) {
                    Some(name) => json!({"name": name, "fromCluster": true}),
                    None => json!({"name": k.name, "fingerprint": k.fingerprint}),
                }).collect::<Vec<_>>()})
            }
            AttestorEntry::Keyless(k) => {
                let (text, value) = keyless(k);
                lines.push(format!("{indent}{entry_path}: {text}"));
                value
            }
            AttestorEntry::Certificate(c) => {
                lines.push(format!(
                    "{indent}{entry_path}: a signature by {}",
                    c.describe()
                ));
                json!({"kind": "certificate", "describe": c.describe()})
            }
            AttestorEntry::Nested(nested) => {
                let inner =
                    describe_set(nested, &format!("{entry_path}.attestor"), depth + 1, lines);
                json!({"kind": "nested", "set": inner})
            }
        };
        entries.push(value);
    }
    json!({"path": path, "count": set.count(), "required": set.required(), "entries": entries})
}

fn keyless_entries<'a>(set: &'a AttestorSet, out: &mut Vec<&'a KeylessAttestor>) {
    for e in set.entries() {
        match e {
            AttestorEntry::Keyless(k) => out.push(k),
            AttestorEntry::Nested(n) => keyless_entries(n, out),
            _ => {}
        }
    }
}

fn explain_rule(rule: &PolicyRule) -> RuleExplanation {
    let mut signer_lines = Vec::new();
    let mut signers = Vec::new();
    let mut keyless = Vec::new();
    let mut has_count = false;
    match rule.verifier.requirement() {
        Requirement::Policy(p) => {
            let n = p.sets().len();
            signer_lines.push(if n == 1 {
                "one attestor set:".to_string()
            } else {
                format!("all {n} attestor sets (each on its own):")
            });
            for (i, set) in p.sets().iter().enumerate() {
                has_count |= set.count().is_some();
                signers.push(describe_set(
                    set,
                    &format!("attestors[{i}]"),
                    1,
                    &mut signer_lines,
                ));
                keyless_entries(set, &mut keyless);
            }
        }
        Requirement::AnyOf(attestors) => {
            signer_lines.push(format!("any one of {} attestor(s)", attestors.len()));
        }
    }
    let ignored_fields: Vec<String> = rule
        .ignore
        .iter()
        .map(|b| {
            let fields: Vec<String> = b.fields.iter().map(ToString::to_string).collect();
            let objects = if b.objects.is_empty() {
                "every object".to_string()
            } else {
                b.objects
                    .iter()
                    .map(|o| {
                        let parts: Vec<String> = [
                            ("group", &o.group),
                            ("version", &o.version),
                            ("kind", &o.kind),
                            ("name", &o.name),
                            ("namespace", &o.namespace),
                        ]
                        .iter()
                        .filter(|(_, v)| !v.is_empty())
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect();
                        parts.join(" ")
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            format!("{} (for {objects})", fields.join(", "))
        })
        .collect();
    let mut tolerances: Vec<String> = if rule.profiles.is_none() {
        vec!["ignore profile none: the object must equal the signed document".to_string()]
    } else {
        rule.profiles
            .iter()
            .map(|p| profile_text(p, &rule.gitops))
            .collect()
    };
    tolerances.push(match &rule.namespace_binding {
        NamespaceBinding::Strict => {
            "a document signed without a namespace is accepted only for an object without one"
                .to_string()
        }
        NamespaceBinding::AnyNamespace => {
            "a document signed without a namespace is accepted in any namespace".to_string()
        }
        NamespaceBinding::Listed(list) => format!(
            "a document signed without a namespace is accepted in namespace {}",
            list.join(", ")
        ),
    });
    if rule.digest_pinning {
        tolerances.push("an image signed by tag may be found pinned by digest".into());
    }
    let max_age = rule
        .verifier
        .max_age()
        .map(|d| format!("signatures made more than {d:#} ago (signed time, bounded by the log time) are rejected"));
    let action = action_text(rule);
    let mut stricter = Vec::new();
    let mut warnings = Vec::new();
    if keyless.iter().any(|k| k.identity.checks_issuer()) {
        stricter.push(
            "issuer enforced: Kyverno does not check the issuer of manifest signatures".to_string(),
        );
    }
    for k in keyless.iter().filter(|k| !k.identity.checks_issuer()) {
        warnings.push(format!(
            "issuer not checked for [{}] (--insecure-any-issuer / insecureAnyIssuer): any \
             issuer Fulcio trusts can vouch for that subject; `mansign policy convert` pins it",
            k.identity
        ));
    }
    if keyless.iter().any(|k| {
        k.identity
            .matchers()
            .iter()
            .any(|m| matches!(m.matcher, ValueMatcher::Regex(_)))
    }) {
        stricter.push(
            "regexes anchored (^(?:...)$): Kyverno ignores subjectRegExp and issuerRegExp of \
             manifest signatures and accepts any signer"
                .into(),
        );
    }
    if !keyless.is_empty() {
        stricter.push(
            "keyless signatures verified in full (Fulcio chain at the log time, SCT, Rekor \
             entry and signature); Kyverno checks the Rekor entry's timestamp only"
                .into(),
        );
    }
    if has_count {
        stricter.push(
            "each signer counts once toward count; Kyverno counts entries, so one signature \
             can satisfy several"
                .into(),
        );
    }
    if !rule.ignore.is_empty() || rule.profiles.contains(IgnoreProfile::Kubernetes) {
        stricter.push(
            "ignore fields anchored at the root and segment-aware (`status` does not hide \
             `data.status`); Kyverno matches each field as the unanchored regex field.*"
                .into(),
        );
    }
    stricter.push(
        "fail-closed: an unreadable annotation, an unknown log, a budget exceeded or any \
         other error fails the object"
            .into(),
    );
    let format = match &rule.source {
        RuleSource::Mansign => "mansign ManifestPolicy",
        RuleSource::Kyverno { .. } => "Kyverno validate.manifests rule",
    };
    RuleExplanation {
        policy: rule.policy.clone(),
        rule: rule.rule.clone(),
        defined_at: rule.location.to_string(),
        format: format.into(),
        applies_to: applies_to(rule),
        signers,
        signer_lines,
        ignored_fields,
        tolerances,
        max_age,
        action,
        stricter_than_kyverno: stricter,
        warnings,
    }
}

impl fmt::Display for RuleExplanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "policy {} rule {}", self.policy, self.rule)?;
        writeln!(f, "  defined at: {} ({})", self.defined_at, self.format)?;
        writeln!(f, "  applies to: {}", self.applies_to)?;
        writeln!(
            f,
            "  signers required: {}",
            self.signer_lines.first().map_or("", String::as_str)
        )?;
        for line in self.signer_lines.iter().skip(1) {
            writeln!(f, "  {line}")?;
        }
        if self.ignored_fields.is_empty() {
            writeln!(f, "  ignored fields: none")?;
        } else {
            writeln!(f, "  ignored fields:")?;
            for i in &self.ignored_fields {
                writeln!(f, "    {i}")?;
            }
        }
        writeln!(f, "  tolerated:")?;
        for t in &self.tolerances {
            writeln!(f, "    {t}")?;
        }
        writeln!(
            f,
            "  max age: {}",
            self.max_age.as_deref().unwrap_or("none")
        )?;
        writeln!(f, "  action: {}", self.action)?;
        writeln!(f, "  stricter than Kyverno:")?;
        for s in &self.stricter_than_kyverno {
            writeln!(f, "    - {s}")?;
        }
        for w in &self.warnings {
            writeln!(f, "  WARNING: {w}")?;
        }
        Ok(())
    }
}

/// What a failure of the rule does: offline, and in the webhook (per namespace).
fn action_text(rule: &PolicyRule) -> String {
    let actions = &rule.failure_action;
    let what = |a: FailureAction| match a {
        FailureAction::Enforce => "denies the request",
        FailureAction::Audit => "allows it with a warning (Audit)",
    };
    let mut text = format!(
        "a failure fails the object offline (exit code 1); the webhook {}",
        what(actions.default)
    );
    for o in &actions.overrides {
        text.push_str(&format!(
            ", in namespaces {}: {}",
            o.namespaces.join(", "),
            what(o.action)
        ));
    }
    if let RuleSource::Kyverno {
        failure_action: None,
    } = &rule.source
        && actions.overrides.is_empty()
        && actions.default == FailureAction::Enforce
    {
        text.push_str(
            " (no failureAction named: Kyverno would default to Audit, report only; \
             mansign enforces)",
        );
    }
    text
}

/// What one ignore profile tolerates, in a sentence, with the values it is bound to.
fn profile_text(profile: IgnoreProfile, gitops: &GitopsBindings) -> String {
    let quoted = |values: &[String]| {
        values
            .iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match profile {
        IgnoreProfile::None => {
            "ignore profile none: the object must equal the signed document".to_string()
        }
        IgnoreProfile::Kubernetes => "ignore profile kubernetes: server-populated metadata, the \
             status of kinds with a status subresource, server-assigned fields and exact \
             defaults may differ (anchored paths)"
            .to_string(),
        IgnoreProfile::KyvernoCompat => "ignore profile kyverno-compat: Kyverno's default ignore \
             list with its unanchored matching (migration only; hides more than its names say)"
            .to_string(),
        IgnoreProfile::Argocd => {
            let tracked = match gitops.argocd_applications.as_slice() {
                [] => "annotation argocd.argoproj.io/tracking-id naming the object itself may \
                       be added with any application; label app.kubernetes.io/instance is not \
                       tolerated (no application bound)"
                    .to_string(),
                apps => format!(
                    "label app.kubernetes.io/instance and annotation \
                     argocd.argoproj.io/tracking-id naming the object itself may be added \
                     with application {} only, the same in both",
                    quoted(apps)
                ),
            };
            let ids = match gitops.argocd_installation_ids.as_slice() {
                [] => "is not tolerated (no installation id bound)".to_string(),
                ids => format!("may be added with {} only", quoted(ids)),
            };
            format!(
                "ignore profile argocd: Argo CD's {tracked}; annotation \
                 argocd.argoproj.io/installation-id {ids}"
            )
        }
        IgnoreProfile::Flux => {
            let owners = match gitops.flux_kustomizations.as_slice() {
                [] => "no Kustomization (none bound: the labels are not tolerated)".to_string(),
                list => format!(
                    "Kustomization {} only, both labels together",
                    list.iter()
                        .map(|k| format!("{:?}", k.to_string()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!(
                "ignore profile flux: the labels kustomize.toolkit.fluxcd.io/name and \
                 kustomize.toolkit.fluxcd.io/namespace may be added naming {owners}"
            )
        }
    }
}
