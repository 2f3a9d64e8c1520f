//! Differences that are not tampering: what the API server and well-known webhooks add to
//! an object after it was signed.
//!
//! A [`Tolerances`] value is applied to the diff of a live object against its signed
//! document. Profiles ([`IgnoreProfile`]) compose: a [`Tolerances`] holds a set of them
//! ([`IgnoreProfiles`], written `kubernetes,argocd`), and a difference is tolerated when any
//! profile in the set tolerates it; no profile widens another's rules.
//!
//! * `none` — nothing tolerated (the default for `verify -f` on files).
//! * `kubernetes` — a safe, anchored list: server-populated metadata is ignored; `status`
//!   is ignored only for kinds with a status subresource (the built-in ones in
//!   [`has_status_subresource`], and kinds the policy names), because for any other kind
//!   `status` is user data the API server stores as written; server-assigned fields
//!   (Service `clusterIP`...) are tolerated only when the signed document does not set them;
//!   well-known defaults (Deployment `progressDeadlineSeconds: 600`, Service
//!   `type: ClusterIP`...) are tolerated only when the signed document does not set them
//!   **and** the live value is exactly the default. A default is never a licence for
//!   another value: `spec.type: LoadBalancer` on a Service signed without `type` is a diff.
//!   `kubectl.kubernetes.io/last-applied-configuration` is not tolerated here: it drives the
//!   next `kubectl apply`'s deletions, so the verifier accepts it only when its content
//!   verifies against the signed document ([`Tolerances::tolerates_last_applied`]).
//! * `kyverno-compat` — Kyverno's default ignore list with Kyverno's semantics (each field
//!   an unanchored regex over the dotted path), for migrating existing policies only. It
//!   over-matches (research kyverno-manifests §2.10 F3: `status` also hides
//!   `data.status`); callers should warn when it is used.
//! * `argocd`, `flux` — the tracking metadata Argo CD and Flux write onto what they apply,
//!   each key anchored and only when the signed document does not have it (`manifest::gitops`).
//!
//! Independently of the profile: optional image digest pinning (`x:tag` may become
//! `x:tag@sha256:<64 hex>`, and nothing else) and optional namespace binding (a signed
//! document without a namespace is accepted in the namespaces listed, and only there).

use super::diff::{DiffKind, Difference, FieldPattern, Step};
use super::document::ObjectIdentity;
use super::gitops::{GitopsBindings, argocd_tolerates, flux_tolerates};
use serde_json::{Value, json};

/// One built-in list of tolerated differences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoreProfile {
    /// Nothing tolerated: the object must equal the signed document.
    None,
    /// Server-populated metadata, status, server-assigned fields and exact defaults.
    Kubernetes,
    /// Kyverno's defaults with Kyverno's unanchored matching (migration only; unsafe).
    KyvernoCompat,
    /// Argo CD's tracking metadata: the instance label, the installation-id annotation and a
    /// tracking-id annotation naming the object itself.
    Argocd,
    /// Flux kustomize-controller's two ownership labels.
    Flux,
}

impl IgnoreProfile {
    /// The profile's name as the CLI and policy files spell it.
    pub fn name(self) -> &'static str {
        match self {
            IgnoreProfile::None => "none",
            IgnoreProfile::Kubernetes => "kubernetes",
            IgnoreProfile::KyvernoCompat => "kyverno-compat",
            IgnoreProfile::Argocd => "argocd",
            IgnoreProfile::Flux => "flux",
        }
    }

    /// Every profile, for help texts and parsing.
    pub const ALL: &'static [IgnoreProfile] = &[
        IgnoreProfile::None,
        IgnoreProfile::Kubernetes,
        IgnoreProfile::KyvernoCompat,
        IgnoreProfile::Argocd,
        IgnoreProfile::Flux,
    ];

    fn bit(self) -> u8 {
        match self {
            IgnoreProfile::None => 0,
            IgnoreProfile::Kubernetes => 1,
            IgnoreProfile::KyvernoCompat => 1 << 1,
            IgnoreProfile::Argocd => 1 << 2,
            IgnoreProfile::Flux => 1 << 3,
        }
    }
}

impl std::str::FromStr for IgnoreProfile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        IgnoreProfile::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = IgnoreProfile::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown ignore profile {s:?} (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

impl std::fmt::Display for IgnoreProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The profiles that apply together, written `kubernetes,argocd`: each one adds its own
/// tolerated differences, none widens another's. Empty (`none`) tolerates nothing.
///
/// ```
/// use mansign::manifest::{IgnoreProfile, IgnoreProfiles, Tolerances};
///
/// let profiles: IgnoreProfiles = "kubernetes,argocd".parse()?;
/// assert!(profiles.contains(IgnoreProfile::Argocd));
/// assert!(!profiles.contains(IgnoreProfile::Flux));
/// assert_eq!(profiles.to_string(), "kubernetes,argocd");
/// let tolerances = Tolerances { profiles, ..Tolerances::default() };
/// # let _ = tolerances;
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IgnoreProfiles(u8);

impl IgnoreProfiles {
    /// No profile: nothing tolerated.
    pub const NONE: IgnoreProfiles = IgnoreProfiles(0);

    /// Exactly these profiles.
    pub fn of(profiles: &[IgnoreProfile]) -> Self {
        IgnoreProfiles(profiles.iter().fold(0, |bits, p| bits | p.bit()))
    }

    /// True if `profile` is one of these; `contains(None)` is true only for the empty set.
    pub fn contains(self, profile: IgnoreProfile) -> bool {
        match profile {
            IgnoreProfile::None => self.is_none(),
            p => self.0 & p.bit() != 0,
        }
    }

    /// True if no profile is set.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The profiles set, in [`IgnoreProfile::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = IgnoreProfile> {
        IgnoreProfile::ALL
            .iter()
            .copied()
            .filter(move |p| *p != IgnoreProfile::None && self.contains(*p))
    }
}

impl From<IgnoreProfile> for IgnoreProfiles {
    fn from(profile: IgnoreProfile) -> Self {
        IgnoreProfiles(profile.bit())
    }
}

impl std::str::FromStr for IgnoreProfiles {
    type Err = String;

    /// A comma-separated list of profile names (`kubernetes,argocd`); `none` alone is the
    /// empty set. An empty name, a repeated name or `none` among others is an error, so a
    /// typo never silently drops a profile.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut set = IgnoreProfiles::NONE;
        let names: Vec<&str> = s.split(',').map(str::trim).collect();
        for name in &names {
            let profile: IgnoreProfile = name.parse()?;
            if profile == IgnoreProfile::None && names.len() > 1 {
                return Err(format!(
                    "ignore profile list {s:?}: `none` cannot be combined with other profiles"
                ));
            }
            if set.contains(profile) && profile != IgnoreProfile::None {
                return Err(format!("ignore profile list {s:?} names {name} twice"));
            }
            set.0 |= profile.bit();
        }
        Ok(set)
    }
}

impl std::fmt::Display for IgnoreProfiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_none() {
            return f.write_str(IgnoreProfile::None.name());
        }
        let names: Vec<&str> = self.iter().map(IgnoreProfile::name).collect();
        f.write_str(&names.join(","))
    }
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

/// A kind named by API group and kind (`PolicyException.kyverno.io`; the core group is
/// empty: `Service`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    /// Parses `Kind` (core group) or `Kind.group`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, group) = text.split_once('.').unwrap_or((text, ""));
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!(
                "{text:?} is not a kind: expected Kind or Kind.group (e.g. Service, \
                 PolicyException.kyverno.io)"
            ));
        }
        Ok(GroupKind {
            group: group.to_string(),
            kind: kind.to_string(),
        })
    }

    fn is(&self, id: &ObjectIdentity) -> bool {
        self.group == id.group && self.kind == id.kind
    }
}

impl std::fmt::Display for GroupKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// Built-in kinds whose `status` is a subresource the API server owns: writes to the main
/// resource ignore it, so a live object's status says nothing about what was applied.
/// (Kubernetes API reference, "status" subresources; custom kinds are added by policy.)
pub fn has_status_subresource(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "",
            "Pod"
                | "Service"
                | "Node"
                | "Namespace"
                | "PersistentVolume"
                | "PersistentVolumeClaim"
                | "ReplicationController"
                | "ResourceQuota"
        ) | (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        ) | ("batch", "Job" | "CronJob")
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("policy", "PodDisruptionBudget")
            | ("networking.k8s.io", "Ingress" | "ServiceCIDR")
            | ("certificates.k8s.io", "CertificateSigningRequest")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("apiregistration.k8s.io", "APIService")
            | ("storage.k8s.io", "VolumeAttachment")
            | (
                "flowcontrol.apiserver.k8s.io",
                "FlowSchema" | "PriorityLevelConfiguration"
            )
            | ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
            | ("resource.k8s.io", "ResourceClaim")
            | ("storagemigration.k8s.io", "StorageVersionMigration")
            | ("internal.apiserver.k8s.io", "StorageVersion")
    )
}

/// Differences tolerated for live objects.
#[derive(Debug, Clone, Default)]
pub struct Tolerances {
    /// The profiles that apply (`kubernetes,argocd`); empty: none.
    pub profiles: IgnoreProfiles,
    /// Accept `image: x:tag` signed, `x:tag@sha256:<digest>` found.
    pub digest_pinning: bool,
    /// Namespaces in which a document signed without a namespace is accepted.
    pub namespace_binding: Vec<String>,
    /// Custom kinds whose `status` is a subresource (ignored under the `kubernetes`
    /// profile, like the built-in ones).
    pub status_kinds: Vec<GroupKind>,
    /// The values the `argocd` and `flux` profiles accept (empty: unbound; see
    /// `manifest::gitops`).
    pub gitops: GitopsBindings,
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

/// The rules of every key, built once (immutable afterwards): 4 kinds x 7 pod-spec shapes.
fn kubernetes_rules(id: &ObjectIdentity) -> &'static [Rule] {
    static ALL: std::sync::LazyLock<Vec<(RulesKey, Vec<Rule>)>> = std::sync::LazyLock::new(|| {
        let kinds = [
            KindRules::None,
            KindRules::Service,
            KindRules::Deployment,
            KindRules::DaemonSet,
        ];
        let mut pod_specs = vec![None];
        for kind in [
            "Pod",
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "ReplicaSet",
            "Job",
            "ReplicationController",
            "CronJob",
        ] {
            let shape = pod_spec_prefix(kind).map(|p| (p, kind != "Job" && kind != "CronJob"));
            if !pod_specs.contains(&shape) {
                pod_specs.push(shape);
            }
        }
        let mut all = Vec::new();
        for kind in kinds {
            for pod_spec in &pod_specs {
                let key = RulesKey {
                    kind,
                    pod_spec: *pod_spec,
                };
                all.push((key, build_kubernetes_rules(key)));
            }
        }
        all
    });
    let key = RulesKey::of(id);
    ALL.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, rules)| rules.as_slice())
        .unwrap_or(&[])
}

fn build_kubernetes_rules(key: RulesKey) -> Vec<Rule> {
    let mut rules = vec![
        Rule::Ignore(p("metadata.managedFields")),
        Rule::Ignore(p("metadata.resourceVersion")),
        Rule::Ignore(p("metadata.uid")),
        Rule::Ignore(p("metadata.generation")),
        Rule::Ignore(p("metadata.creationTimestamp")),
        Rule::Ignore(p("metadata.selfLink")),
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
        // Go marshals the zero `metav1.Time` of a pod template as `creationTimestamp: null`;
        // the API server returns it for every workload.
        if let Some(template) = prefix.strip_suffix(".spec") {
            rules.push(Rule::Default(
                p(&format!("{template}.metadata.creationTimestamp")),
                Value::Null,
            ));
        }
        if prefix == "spec.jobTemplate.spec.template.spec" {
            rules.push(Rule::Default(
                p("spec.jobTemplate.metadata.creationTimestamp"),
                Value::Null,
            ));
        }
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
pub fn upstream_dotted(path: &[Step<'_>]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => (*k).to_string(),
            Step::Index(i) => i.to_string(),
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

/// `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A GitOps key the profiles tolerate with any value because nothing binds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnboundGitopsKey {
    /// What is unbound, in words.
    pub what: &'static str,
    /// The CLI flag that binds it.
    pub flag: &'static str,
    /// The `ManifestPolicy` field that binds it.
    pub field: &'static str,
}

/// The keys `profiles` tolerate with any value under `bindings` (for a one-time note: in
/// production, bind them; see `manifest::gitops`).
pub fn unbound_gitops_keys(
    profiles: IgnoreProfiles,
    bindings: &GitopsBindings,
) -> Vec<UnboundGitopsKey> {
    let mut keys = Vec::new();
    if profiles.contains(IgnoreProfile::Argocd) {
        if bindings.argocd_applications.is_empty() {
            keys.push(UnboundGitopsKey {
                what: "the Argo CD application in the instance label and tracking-id (any \
                       application; the label is refused on Pods and Namespaces)",
                flag: "--argocd-application NAME",
                field: "spec.gitops.argocd.applications",
            });
        }
        if bindings.argocd_installation_ids.is_empty() {
            keys.push(UnboundGitopsKey {
                what: "the Argo CD installation-id annotation (any value)",
                flag: "--argocd-installation-id ID",
                field: "spec.gitops.argocd.installationIDs",
            });
        }
    }
    if profiles.contains(IgnoreProfile::Flux) && bindings.flux_kustomizations.is_empty() {
        keys.push(UnboundGitopsKey {
            what: "the Flux Kustomization in the kustomize.toolkit.fluxcd.io labels (any \
                   Kustomization; refused on Pods and Namespaces)",
            flag: "--flux-kustomization NS/NAME",
            field: "spec.gitops.flux.kustomizations",
        });
    }
    keys
}

impl Tolerances {
    /// True if these tolerances accept difference `d` of object `id` against its signed
    /// document `signed` (the whole document, for rules that look at what was signed);
    /// `object` is the whole compared object (the GitOps bindings read its other keys).
    /// `last-applied-configuration` is judged by the caller, which can verify its content
    /// ([`tolerates_last_applied`](Self::tolerates_last_applied)).
    pub fn tolerates(
        &self,
        id: &ObjectIdentity,
        signed: &Value,
        object: &Value,
        d: &Difference<'_>,
    ) -> bool {
        let profiles = self.profiles;
        (profiles.contains(IgnoreProfile::Kubernetes) && self.kubernetes_tolerates(id, signed, d))
            || (profiles.contains(IgnoreProfile::KyvernoCompat) && kyverno_tolerates(id, d))
            || (profiles.contains(IgnoreProfile::Argocd)
                && argocd_tolerates(id, signed, object, d, &self.gitops))
            || (profiles.contains(IgnoreProfile::Flux)
                && flux_tolerates(id, object, d, &self.gitops))
            || (self.digest_pinning && is_digest_pinning(d))
            || self.namespace_bound(signed, d)
    }

    fn kubernetes_tolerates(
        &self,
        id: &ObjectIdentity,
        signed: &Value,
        d: &Difference<'_>,
    ) -> bool {
        (self.ignores_status(id) && matches!(d.path.first(), Some(Step::Key("status"))))
            || kubernetes_rules(id)
                .iter()
                .any(|r| rule_tolerates(r, signed, d))
    }

    /// Whether `last-applied-configuration` may differ from the signed document when its
    /// content verifies against it: under the `kubernetes` profile (the annotation is how
    /// `kubectl apply`, and Argo CD's client-side apply, record what they applied). Under
    /// `kyverno-compat` the annotation is ignored as Kyverno does (migration only).
    pub fn tolerates_last_applied(&self) -> bool {
        self.profiles.contains(IgnoreProfile::Kubernetes)
    }

    fn ignores_status(&self, id: &ObjectIdentity) -> bool {
        has_status_subresource(&id.group, &id.kind) || self.status_kinds.iter().any(|k| k.is(id))
    }

    fn namespace_bound(&self, signed: &Value, d: &Difference<'_>) -> bool {
        let signed_namespace = signed
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        signed_namespace.is_none()
            && d.kind == DiffKind::Added
            && matches!(d.path, [Step::Key("metadata"), Step::Key("namespace")])
            && d.actual
                .and_then(Value::as_str)
                .is_some_and(|ns| self.namespace_binding.iter().any(|b| b == ns))
    }
}

fn rule_tolerates(rule: &Rule, signed: &Value, d: &Difference<'_>) -> bool {
    match rule {
        Rule::Ignore(p) => p.matches_steps(d.path),
        // The whole field must be unsigned, not just this leaf: a signed
        // `clusterIPs: [A]` does not take a second address.
        Rule::ServerSet(p) => {
            d.kind == DiffKind::Added
                && p.matches_steps(d.path)
                && !signed_has(signed, &d.path[..p.depth()])
        }
        Rule::Default(p, value) => {
            d.kind == DiffKind::Added && p.matches_steps_exactly(d.path) && d.actual == Some(value)
        }
    }
}

/// True if the signed document has a value at `path` (any value: `null`, `{}` and `[]`
/// are values).
fn signed_has(signed: &Value, path: &[Step<'_>]) -> bool {
    let mut v = signed;
    for seg in path {
        let next = match (seg, v) {
            (Step::Key(k), Value::Object(m)) => m.get(*k),
            (Step::Index(i), Value::Array(a)) => a.get(*i),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        v = next;
    }
    true
}

fn kyverno_tolerates(id: &ObjectIdentity, d: &Difference<'_>) -> bool {
    let dotted = upstream_dotted(d.path);
    kyverno_regexes().iter().any(|(kinds, res)| {
        (kinds.contains(&"*") || kinds.contains(&id.kind.as_str()))
            && res.iter().any(|re| re.is_match(&dotted))
    })
}

/// `image` of a container: signed `x:tag` (or `x`), found `x:tag@sha256:<64 lowercase hex>`.
fn is_digest_pinning(d: &Difference<'_>) -> bool {
    let is_container_image = matches!(d.path.last(), Some(Step::Key("image")))
        && d.path.iter().any(|s| {
            matches!(
                s,
                Step::Key("containers" | "initContainers" | "ephemeralContainers")
            )
        });
    if d.kind != DiffKind::Changed || !is_container_image {
        return false;
    }
    let (Some(Value::String(signed)), Some(Value::String(actual))) = (d.signed, d.actual) else {
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
    use crate::manifest::diff::compare;

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
        compare(&signed, &actual, &|d| t.tolerates(id, &signed, &actual, d))
            .unwrap()
            .diffs
            .iter()
            .map(|d| d.path.to_string())
            .collect()
    }

    fn kube() -> Tolerances {
        Tolerances {
            profiles: IgnoreProfile::Kubernetes.into(),
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
    fn kubernetes_profile_ignores_server_metadata() {
        let signed = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        let actual = json!({"metadata": {"name": "x", "uid": "u", "resourceVersion": "1", "generation": 2,
            "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{"manager": "kubectl"}]},
            "data": {"a": "1"}});
        assert!(remaining(&kube(), &id("", "ConfigMap"), signed, actual).is_empty());
    }

    #[test]
    fn status_is_ignored_only_for_kinds_with_a_status_subresource() {
        let signed = json!({"spec": {"a": 1}});
        let actual = json!({"spec": {"a": 1}, "status": {"replicas": 3}});
        assert!(
            remaining(
                &kube(),
                &id("apps", "Deployment"),
                signed.clone(),
                actual.clone()
            )
            .is_empty()
        );
        // A custom kind without a status subresource stores `status` as written.
        assert_eq!(
            remaining(
                &kube(),
                &id("kyverno.io", "PolicyException"),
                signed.clone(),
                actual.clone()
            ),
            ["status.replicas"]
        );
        // ... unless the policy names it.
        let named = Tolerances {
            status_kinds: vec![GroupKind::parse("PolicyException.kyverno.io").unwrap()],
            ..kube()
        };
        assert!(remaining(&named, &id("kyverno.io", "PolicyException"), signed, actual).is_empty());
    }

    #[test]
    fn last_applied_configuration_is_not_a_profile_rule() {
        // It is judged by the verifier against the signed document, never ignored blindly.
        let signed = json!({"metadata": {"name": "x"}});
        let actual =
            json!({"metadata": {"name": "x", "annotations": {LAST_APPLIED_ANNOTATION: "{}"}}});
        assert_eq!(
            remaining(&kube(), &id("", "ConfigMap"), signed, actual),
            ["metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]"]
        );
        assert!(kube().tolerates_last_applied());
        assert!(!Tolerances::default().tolerates_last_applied());
    }

    #[test]
    fn group_kinds_parse_with_and_without_a_group() {
        assert_eq!(GroupKind::parse("Service").unwrap().to_string(), "Service");
        let gk = GroupKind::parse("PolicyException.kyverno.io").unwrap();
        assert_eq!(
            (gk.kind.as_str(), gk.group.as_str()),
            ("PolicyException", "kyverno.io")
        );
        for bad in ["", ".kyverno.io", "Policy Exception", "a/b.c"] {
            assert!(GroupKind::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn profiles_parse_by_name() {
        for p in IgnoreProfile::ALL {
            assert_eq!(p.name().parse::<IgnoreProfile>().unwrap(), *p);
            assert_eq!(p.name().parse::<IgnoreProfiles>().unwrap(), (*p).into());
        }
        assert!("kubernetes,argo".parse::<IgnoreProfile>().is_err());
    }

    #[test]
    fn profile_lists_parse_and_print() {
        let set: IgnoreProfiles = "kubernetes,argocd".parse().unwrap();
        assert!(set.contains(IgnoreProfile::Kubernetes) && set.contains(IgnoreProfile::Argocd));
        assert!(!set.contains(IgnoreProfile::Flux));
        assert_eq!(set.to_string(), "kubernetes,argocd");
        assert_eq!(
            "flux, kubernetes"
                .parse::<IgnoreProfiles>()
                .unwrap()
                .to_string(),
            "kubernetes,flux"
        );
        assert_eq!(
            "none".parse::<IgnoreProfiles>().unwrap(),
            IgnoreProfiles::NONE
        );
        assert_eq!(IgnoreProfiles::NONE.to_string(), "none");
        assert!(IgnoreProfiles::NONE.contains(IgnoreProfile::None));
        assert!(!set.contains(IgnoreProfile::None));
        for bad in [
            "",
            "kubernetes,",
            "kubernetes,argo",
            "kubernetes,kubernetes",
            "none,argocd",
            "Kubernetes",
        ] {
            assert!(bad.parse::<IgnoreProfiles>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn gitops_profiles_tolerate_only_their_keys_and_only_when_unsigned() {
        let argocd: IgnoreProfiles = "argocd".parse().unwrap();
        let flux: IgnoreProfiles = "flux".parse().unwrap();
        let t = |profiles| Tolerances {
            profiles,
            ..Tolerances::default()
        };
        let deploy = id("apps", "Deployment");
        let signed = json!({"metadata": {"name": "x", "namespace": "ns"}});
        let argo_live = json!({"metadata": {"name": "x", "namespace": "ns",
            "labels": {"app.kubernetes.io/instance": "app"},
            "annotations": {"argocd.argoproj.io/tracking-id": "app:apps/Deployment:ns/x",
                            "argocd.argoproj.io/installation-id": "one"}}});
        assert!(remaining(&t(argocd), &deploy, signed.clone(), argo_live.clone()).is_empty());
        assert_eq!(
            remaining(&t(flux), &deploy, signed.clone(), argo_live).len(),
            3
        );
        let flux_live = json!({"metadata": {"name": "x", "namespace": "ns",
            "labels": {"kustomize.toolkit.fluxcd.io/name": "apps",
                       "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}});
        assert!(remaining(&t(flux), &deploy, signed.clone(), flux_live.clone()).is_empty());
        assert_eq!(remaining(&t(argocd), &deploy, signed, flux_live).len(), 2);
        // A signed key keeps its signed value.
        let signed = json!({"metadata": {"name": "x", "namespace": "ns",
            "labels": {"app.kubernetes.io/instance": "signed"}}});
        let live = json!({"metadata": {"name": "x", "namespace": "ns",
            "labels": {"app.kubernetes.io/instance": "other"}}});
        assert_eq!(
            remaining(&t(argocd), &deploy, signed, live),
            ["metadata.labels[\"app.kubernetes.io/instance\"]"]
        );
        // Nothing beside the keys: another argocd.argoproj.io annotation is a difference.
        let signed = json!({"metadata": {"name": "x", "namespace": "ns"}});
        let live = json!({"metadata": {"name": "x", "namespace": "ns",
            "annotations": {"argocd.argoproj.io/sync-options": "Prune=false"}}});
        assert_eq!(remaining(&t(argocd), &deploy, signed, live).len(), 1);
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
            profiles: IgnoreProfile::KyvernoCompat.into(),
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
