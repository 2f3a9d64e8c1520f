//! Differences that are not tampering: what the API server and well-known webhooks add to
//! an object after it was signed.
//!
//! A [`Tolerances`] value is applied to the diff of a live object against its signed
//! document. Three profiles ([`IgnoreProfile`]):
//!
//! * `none` — nothing tolerated (the default for `verify -f` on files).
//! * `kubernetes` — a safe, anchored list: server-populated metadata and `status` are
//!   ignored; server-assigned fields (Service `clusterIP`...) are tolerated only when the
//!   signed document does not set them; well-known defaults (Deployment
//!   `progressDeadlineSeconds: 600`, Service `type: ClusterIP`...) are tolerated only when
//!   the signed document does not set them **and** the live value is exactly the default.
//!   A default is never a licence for another value: `spec.type: LoadBalancer` on a
//!   Service signed without `type` is a diff.
//! * `kyverno-compat` — Kyverno's default ignore list with Kyverno's semantics (each field
//!   an unanchored regex over the dotted path), for migrating existing policies only. It
//!   over-matches (research kyverno-manifests §2.10 F3: `status` also hides
//!   `data.status`); callers should warn when it is used.
//!
//! Independently of the profile: optional image digest pinning (`x:tag` may become
//! `x:tag@sha256:<64 hex>`, and nothing else) and optional namespace binding (a signed
//! document without a namespace is accepted in the namespaces listed, and only there).

use super::diff::{DiffKind, FieldDiff, FieldPath, FieldPattern, Segment};
use super::document::ObjectIdentity;
use serde_json::{Value, json};

/// Which built-in list of tolerated differences applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum IgnoreProfile {
    /// Nothing tolerated: the object must equal the signed document.
    #[default]
    None,
    /// Server-populated metadata, status, server-assigned fields and exact defaults.
    Kubernetes,
    /// Kyverno's defaults with Kyverno's unanchored matching (migration only; unsafe).
    KyvernoCompat,
}

/// What a rule tolerates.
#[derive(Debug, Clone)]
enum Rule {
    /// Any difference at or below the pattern.
    Ignore(FieldPattern),
    /// A field the signed document does not have, whatever its value.
    ServerSet(FieldPattern),
    /// A field the signed document does not have, holding exactly this value.
    Default(FieldPattern, Value),
}

/// Differences tolerated for live objects.
#[derive(Debug, Clone, Default)]
pub struct Tolerances {
    pub profile: IgnoreProfile,
    /// Accept `image: x:tag` signed, `x:tag@sha256:<digest>` found.
    pub digest_pinning: bool,
    /// Namespaces in which a document signed without a namespace is accepted.
    pub namespace_binding: Vec<String>,
}

fn p(text: &str) -> FieldPattern {
    // The built-in patterns are constants; a typo is caught by the unit tests.
    FieldPattern::parse(text).unwrap_or_else(|e| panic!("built-in pattern: {e}"))
}

/// Where the pod template sits in workload kinds.
fn pod_spec_prefix(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("spec"),
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => Some("spec.template.spec"),
        "CronJob" => Some("spec.jobTemplate.spec.template.spec"),
        _ => None,
    }
}

/// The kind-specific part of the `kubernetes` profile an object gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum KindRules {
    None,
    Service,
    Deployment,
    DaemonSet,
}

/// What decides an object's `kubernetes` rules: a small, fixed key space, so the rules
/// are built once per key (the patterns are parsed once, not per verified object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RulesKey {
    kind: KindRules,
    /// Where the pod spec sits, and whether `restartPolicy: Always` is the default.
    pod_spec: Option<(&'static str, bool)>,
}

impl RulesKey {
    fn of(id: &ObjectIdentity) -> Self {
        let kind = match (id.group.as_str(), id.kind.as_str()) {
            ("", "Service") => KindRules::Service,
            ("apps", "Deployment") => KindRules::Deployment,
            ("apps", "DaemonSet") => KindRules::DaemonSet,
            _ => KindRules::None,
        };
        let restart_always = id.kind != "Job" && id.kind != "CronJob";
        RulesKey {
            kind,
            pod_spec: pod_spec_prefix(&id.kind).map(|prefix| (prefix, restart_always)),
        }
    }
}

fn kubernetes_rules(id: &ObjectIdentity) -> std::sync::Arc<[Rule]> {
    type Cache = std::sync::Mutex<std::collections::HashMap<RulesKey, std::sync::Arc<[Rule]>>>;
    static CACHE: std::sync::LazyLock<Cache> = std::sync::LazyLock::new(Default::default);
    let key = RulesKey::of(id);
    // The key space is fixed (4 kinds x 6 pod-spec shapes), so the cache stays small
    // whatever kinds an attacker sends.
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    cache
        .entry(key)
        .or_insert_with(|| build_kubernetes_rules(key).into())
        .clone()
}

fn build_kubernetes_rules(key: RulesKey) -> Vec<Rule> {
    let mut rules = vec![
        Rule::Ignore(p("metadata.managedFields")),
        Rule::Ignore(p("metadata.resourceVersion")),
        Rule::Ignore(p("metadata.uid")),
        Rule::Ignore(p("metadata.generation")),
        Rule::Ignore(p("metadata.creationTimestamp")),
        Rule::Ignore(p("metadata.selfLink")),
        Rule::Ignore(p("status")),
        Rule::Ignore(p(
            "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]",
        )),
    ];
    match key.kind {
        KindRules::Service => {
            rules.extend([
                Rule::ServerSet(p("spec.clusterIP")),
                Rule::ServerSet(p("spec.clusterIPs")),
                Rule::ServerSet(p("spec.ipFamilies")),
                Rule::ServerSet(p("spec.ipFamilyPolicy")),
                Rule::Default(p("spec.type"), json!("ClusterIP")),
                Rule::Default(p("spec.sessionAffinity"), json!("None")),
                Rule::Default(p("spec.internalTrafficPolicy"), json!("Cluster")),
                Rule::Default(p("spec.ports[*].protocol"), json!("TCP")),
            ]);
        }
        KindRules::Deployment => {
            rules.extend([
                Rule::ServerSet(p(
                    "metadata.annotations[\"deployment.kubernetes.io/revision\"]",
                )),
                Rule::Default(p("spec.progressDeadlineSeconds"), json!(600)),
                Rule::Default(p("spec.revisionHistoryLimit"), json!(10)),
                Rule::Default(p("spec.replicas"), json!(1)),
                Rule::Default(p("spec.strategy.type"), json!("RollingUpdate")),
                Rule::Default(p("spec.strategy.rollingUpdate.maxSurge"), json!("25%")),
                Rule::Default(
                    p("spec.strategy.rollingUpdate.maxUnavailable"),
                    json!("25%"),
                ),
            ]);
        }
        KindRules::DaemonSet => {
            rules.push(Rule::ServerSet(p(
                "metadata.annotations[\"deprecated.daemonset.template.generation\"]",
            )));
        }
        KindRules::None => {}
    }
    if let Some((prefix, restart_always)) = key.pod_spec {
        let at = |rest: &str| p(&format!("{prefix}.{rest}"));
        rules.extend([
            // The API server writes these empty maps back; empty means "nothing set", the
            // same as absent. Any setting inside them is still a diff.
            Rule::Default(at("securityContext"), json!({})),
            Rule::Default(at("dnsPolicy"), json!("ClusterFirst")),
            Rule::Default(at("schedulerName"), json!("default-scheduler")),
            Rule::Default(at("terminationGracePeriodSeconds"), json!(30)),
        ]);
        if restart_always {
            rules.push(Rule::Default(at("restartPolicy"), json!("Always")));
        }
        for containers in ["containers", "initContainers"] {
            rules.extend([
                Rule::Default(
                    at(&format!("{containers}[*].terminationMessagePath")),
                    json!("/dev/termination-log"),
                ),
                Rule::Default(
                    at(&format!("{containers}[*].terminationMessagePolicy")),
                    json!("File"),
                ),
                Rule::Default(
                    at(&format!("{containers}[*].imagePullPolicy")),
                    json!("IfNotPresent"),
                ),
                Rule::Default(
                    at(&format!("{containers}[*].imagePullPolicy")),
                    json!("Always"),
                ),
                Rule::Default(
                    at(&format!("{containers}[*].ports[*].protocol")),
                    json!("TCP"),
                ),
                Rule::Default(at(&format!("{containers}[*].resources")), json!({})),
            ]);
        }
    }
    rules
}

/// Kyverno's effective default list (k8s-manifest-sigstore's plus Kyverno's engine
/// defaults, research kyverno-manifests §2.7), as (kinds, fields); `*` = every kind.
const KYVERNO_DEFAULTS: &[(&[&str], &[&str])] = &[
    (
        &["*"],
        &[
            "metadata.namespace",
            "spec.containers.*.imagePullPolicy",
            "spec.containers.*.terminationMessagePath",
            "spec.containers.*.terminationMessagePolicy",
            "spec.dnsPolicy",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.terminationGracePeriodSeconds",
            "metadata.labels.app.kubernetes.io/instance",
            "metadata.managedFields.*",
            "metadata.resourceVersion",
            "metadata.selfLink",
            "metadata.annotations.control-plane.alpha.kubernetes.io/leader",
            "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
            "metadata.finalizers*",
            "metadata.annotations.namespace",
            "metadata.annotations.deprecated.daemonset.template.generation",
            "metadata.creationTimestamp",
            "metadata.uid",
            "metadata.generation",
            "status",
            "metadata.annotations.deployment.kubernetes.io/revision",
        ],
    ),
    (
        &["Pod"],
        &[
            "spec.volumes.*.name",
            "spec.volumes.*.projected.*",
            "spec.volumes.*.configMap.defaultMode",
            "spec.containers.*.volumeMounts.*",
            "spec.tolerations.*",
            "spec.enableServiceLinks",
            "spec.preemptionPolicy",
            "spec.priority",
            "spec.serviceAccount",
        ],
    ),
    (
        &["Deployment"],
        &[
            "spec.progressDeadlineSeconds",
            "spec.revisionHistoryLimit",
            "spec.strategy.*",
            "spec.template.metadata.creationTimestamp",
            "spec.containers.*.ports.*.protocol",
            "spec.containers.*.resources",
            "spec.securityContext",
        ],
    ),
    (
        &["CustomResourceDefinition"],
        &["spec.conversion.strategy", "spec.names.listKind"],
    ),
    (
        &["Service"],
        &[
            "spec.ports.*.nodePort",
            "spec.clusterIP",
            "spec.clusterIPs.0",
            "spec.sessionAffinity",
            "spec.type",
            "spec.ipFamilies.*",
            "spec.ipFamilyPolicy",
            "spec.internalTrafficPolicy",
        ],
    ),
    (
        &["ClusterPolicy", "Policy"],
        &[
            "metadata.annotations.pod-policies.kyverno.io/autogen-controllers",
            "spec.failurePolicy",
            "spec.background",
            "spec.validationFailureAction",
        ],
    ),
    (
        &["ServiceAccount"],
        &["secrets.*.name", "imagePullSecrets.*.name"],
    ),
];

/// A path in kubectl-sigstore's mapnode form: keys and indices joined with `.`, unescaped.
pub fn upstream_dotted(path: &FieldPath) -> String {
    path.0
        .iter()
        .map(|s| match s {
            Segment::Key(k) => k.clone(),
            Segment::Index(i) => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Kyverno/kubectl-sigstore field matching: `field + "*"`, each `*` → `.*`, unanchored
/// (and `.` is a regex wildcard). Compiled once.
fn kyverno_regexes() -> &'static [(&'static [&'static str], Vec<regex::Regex>)] {
    static COMPILED: std::sync::LazyLock<Vec<(&'static [&'static str], Vec<regex::Regex>)>> =
        std::sync::LazyLock::new(|| {
            KYVERNO_DEFAULTS
                .iter()
                .map(|(kinds, fields)| {
                    let res = fields
                        .iter()
                        .filter_map(|f| regex::Regex::new(&format!("{f}*").replace('*', ".*")).ok())
                        .collect();
                    (*kinds, res)
                })
                .collect()
        });
    &COMPILED
}

impl Tolerances {
    /// Drops the differences these tolerances allow for an object.
    pub fn apply(
        &self,
        id: &ObjectIdentity,
        signed: &Value,
        diffs: Vec<FieldDiff>,
    ) -> Vec<FieldDiff> {
        let rules = match self.profile {
            IgnoreProfile::Kubernetes => kubernetes_rules(id),
            _ => std::sync::Arc::from(Vec::new()),
        };
        let signed_namespace = signed
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        diffs
            .into_iter()
            .filter(|d| {
                let tolerated = rules.iter().any(|r| rule_tolerates(r, signed, d))
                    || (self.profile == IgnoreProfile::KyvernoCompat && kyverno_tolerates(id, d))
                    || (self.digest_pinning && is_digest_pinning(d))
                    || self.namespace_bound(signed_namespace, d);
                !tolerated
            })
            .collect()
    }

    fn namespace_bound(&self, signed_namespace: Option<&str>, d: &FieldDiff) -> bool {
        signed_namespace.is_none()
            && d.kind == DiffKind::Added
            && d.path.0
                == [
                    Segment::Key("metadata".into()),
                    Segment::Key("namespace".into()),
                ]
            && d.actual
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|ns| self.namespace_binding.iter().any(|b| b == ns))
    }
}

fn rule_tolerates(rule: &Rule, signed: &Value, d: &FieldDiff) -> bool {
    match rule {
        Rule::Ignore(p) => p.matches(&d.path),
        // The whole field must be unsigned, not just this leaf: a signed
        // `clusterIPs: [A]` does not take a second address.
        Rule::ServerSet(p) => {
            d.kind == DiffKind::Added
                && p.matches(&d.path)
                && !signed_has(signed, &d.path.0[..p.depth()])
        }
        Rule::Default(p, value) => {
            d.kind == DiffKind::Added
                && p.matches_exactly(&d.path)
                && d.actual.as_ref() == Some(value)
        }
    }
}

/// True if the signed document has a value other than `null`, `{}` or `[]` at `path`.
fn signed_has(signed: &Value, path: &[Segment]) -> bool {
    let mut v = signed;
    for seg in path {
        let next = match (seg, v) {
            (Segment::Key(k), Value::Object(m)) => m.get(k),
            (Segment::Index(i), Value::Array(a)) => a.get(*i),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        v = next;
    }
    match v {
        Value::Null => false,
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => true,
    }
}

fn kyverno_tolerates(id: &ObjectIdentity, d: &FieldDiff) -> bool {
    let dotted = upstream_dotted(&d.path);
    kyverno_regexes().iter().any(|(kinds, res)| {
        (kinds.contains(&"*") || kinds.contains(&id.kind.as_str()))
            && res.iter().any(|re| re.is_match(&dotted))
    })
}

/// `image` of a container: signed `x:tag` (or `x`), found `x:tag@sha256:<64 lowercase hex>`.
fn is_digest_pinning(d: &FieldDiff) -> bool {
    let is_container_image = matches!(d.path.0.last(), Some(Segment::Key(k)) if k == "image")
        && d.path.0.iter().any(|s| {
            matches!(s, Segment::Key(k) if k == "containers" || k == "initContainers" || k == "ephemeralContainers")
        });
    if d.kind != DiffKind::Changed || !is_container_image {
        return false;
    }
    let (Some(Value::String(signed)), Some(Value::String(actual))) = (&d.signed, &d.actual) else {
        return false;
    };
    if signed.contains('@') {
        return false;
    }
    actual
        .strip_prefix(signed.as_str())
        .and_then(|rest| rest.strip_prefix("@sha256:"))
        .is_some_and(|hex| {
            hex.len() == 64
                && hex
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{IgnoreFields, diff_documents};

    fn id(group: &str, kind: &str) -> ObjectIdentity {
        ObjectIdentity {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: Some("ns".into()),
            name: "x".into(),
        }
    }

    fn remaining(t: &Tolerances, id: &ObjectIdentity, signed: Value, actual: Value) -> Vec<String> {
        let d = diff_documents(&signed, &actual, &IgnoreFields::none());
        t.apply(id, &signed, d)
            .iter()
            .map(|d| d.path.to_string())
            .collect()
    }

    fn kube() -> Tolerances {
        Tolerances {
            profile: IgnoreProfile::Kubernetes,
            ..Tolerances::default()
        }
    }

    #[test]
    fn kyverno_defaults_all_compile() {
        let compiled: usize = kyverno_regexes().iter().map(|(_, r)| r.len()).sum();
        let listed: usize = KYVERNO_DEFAULTS.iter().map(|(_, f)| f.len()).sum();
        assert_eq!(compiled, listed);
    }

    #[test]
    fn builtin_patterns_parse() {
        for k in [
            ("", "Service"),
            ("apps", "Deployment"),
            ("apps", "DaemonSet"),
            ("", "Pod"),
            ("batch", "CronJob"),
        ] {
            let _ = kubernetes_rules(&id(k.0, k.1));
        }
    }

    #[test]
    fn kubernetes_profile_ignores_server_metadata_and_status() {
        let signed = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        let actual = json!({"metadata": {"name": "x", "uid": "u", "resourceVersion": "1", "generation": 2,
            "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{"manager": "kubectl"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "data": {"a": "1"}, "status": {"x": 1}});
        assert!(remaining(&kube(), &id("", "ConfigMap"), signed, actual).is_empty());
    }

    #[test]
    fn kubernetes_profile_keeps_look_alike_fields() {
        // research kyverno-manifests §2.10 F3 under the kubernetes profile: all detected.
        let signed = json!({"metadata": {"name": "x"}, "data": {}});
        let actual = json!({"metadata": {"name": "x", "labels": {"status": "x"}}, "data": {"status": "pwned", "my-status-flag": "1"}});
        assert_eq!(
            remaining(&kube(), &id("", "ConfigMap"), signed, actual),
            [
                "data.my-status-flag",
                "data.status",
                "metadata.labels.status"
            ]
        );
    }

    #[test]
    fn defaults_are_tolerated_only_with_the_default_value() {
        let signed = json!({"spec": {"ports": [{"port": 80}]}});
        let ok = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "type": "ClusterIP", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "sessionAffinity": "None"}});
        assert!(remaining(&kube(), &id("", "Service"), signed.clone(), ok).is_empty());
        let bad =
            json!({"spec": {"ports": [{"port": 80, "protocol": "UDP"}], "type": "LoadBalancer"}});
        assert_eq!(
            remaining(&kube(), &id("", "Service"), signed, bad),
            ["spec.ports[0].protocol", "spec.type"]
        );
    }

    #[test]
    fn empty_server_maps_are_defaults_but_their_contents_are_compared() {
        let signed = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
        let ok = json!({"spec": {"template": {"spec": {"securityContext": {}, "containers": [{"name": "a", "resources": {}}]}}}});
        assert!(remaining(&kube(), &id("apps", "Deployment"), signed.clone(), ok).is_empty());
        let bad = json!({"spec": {"template": {"spec": {"securityContext": {"runAsUser": 0}, "containers": [{"name": "a", "resources": {"limits": {"cpu": "64"}}}]}}}});
        assert_eq!(
            remaining(&kube(), &id("apps", "Deployment"), signed, bad),
            [
                "spec.template.spec.containers[0].resources.limits.cpu",
                "spec.template.spec.securityContext.runAsUser"
            ]
        );
    }

    #[test]
    fn signed_server_fields_are_still_compared() {
        let signed = json!({"spec": {"clusterIP": "10.0.0.1", "type": "NodePort"}});
        let actual = json!({"spec": {"clusterIP": "10.0.0.2", "type": "ClusterIP"}});
        assert_eq!(
            remaining(&kube(), &id("", "Service"), signed, actual),
            ["spec.clusterIP", "spec.type"]
        );
    }

    #[test]
    fn server_set_lists_signed_with_a_value_take_no_additions() {
        let signed = json!({"spec": {"clusterIPs": ["10.0.0.1"], "ipFamilies": ["IPv4"]}});
        let actual = json!({"spec": {"clusterIPs": ["10.0.0.1", "fd00::1"], "ipFamilies": ["IPv4", "IPv6"]}});
        assert_eq!(
            remaining(&kube(), &id("", "Service"), signed, actual),
            ["spec.clusterIPs[1]", "spec.ipFamilies[1]"]
        );
    }

    #[test]
    fn kyverno_compat_reproduces_upstream_over_matching() {
        let t = Tolerances {
            profile: IgnoreProfile::KyvernoCompat,
            ..Tolerances::default()
        };
        let signed = json!({"metadata": {"name": "x", "namespace": "a"}, "data": {}});
        let actual =
            json!({"metadata": {"name": "x", "namespace": "b"}, "data": {"status": "pwned"}});
        assert!(remaining(&t, &id("", "ConfigMap"), signed, actual).is_empty());
    }

    #[test]
    fn digest_pinning_accepts_only_an_added_digest() {
        let t = Tolerances {
            digest_pinning: true,
            ..Tolerances::default()
        };
        let digest = "a".repeat(64);
        let signed = json!({"spec": {"containers": [{"image": "nginx:1.25"}, {"image": "busybox:1"}, {"image": "redis:7"}]}});
        let actual = json!({"spec": {"containers": [
            {"image": format!("nginx:1.25@sha256:{digest}")},
            {"image": format!("busybox:2@sha256:{digest}")},
            {"image": "redis:7@sha256:short"},
        ]}});
        assert_eq!(
            remaining(&t, &id("", "Pod"), signed, actual),
            ["spec.containers[1].image", "spec.containers[2].image"]
        );
    }

    #[test]
    fn namespace_binding_admits_only_listed_namespaces() {
        let t = Tolerances {
            namespace_binding: vec!["team-a".into()],
            ..Tolerances::default()
        };
        let signed = json!({"metadata": {"name": "x"}});
        assert!(
            remaining(
                &t,
                &id("", "ConfigMap"),
                signed.clone(),
                json!({"metadata": {"name": "x", "namespace": "team-a"}})
            )
            .is_empty()
        );
        assert_eq!(
            remaining(
                &t,
                &id("", "ConfigMap"),
                signed,
                json!({"metadata": {"name": "x", "namespace": "team-b"}})
            ),
            ["metadata.namespace"]
        );
        // a signed namespace is never rebound
        let signed = json!({"metadata": {"name": "x", "namespace": "team-b"}});
        assert_eq!(
            remaining(
                &t,
                &id("", "ConfigMap"),
                signed,
                json!({"metadata": {"name": "x", "namespace": "team-a"}})
            ),
            ["metadata.namespace"]
        );
    }
}
