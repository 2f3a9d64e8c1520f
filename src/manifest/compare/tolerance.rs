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
//!   `status` is user data the API server stores as written; defaults (Deployment
//!   `progressDeadlineSeconds: 600`, Service `type: ClusterIP`...) and values the API server
//!   computes for the object (a Service's allocated `clusterIP` and its families, a
//!   container's `imagePullPolicy` from its image's tag) are tolerated only when the signed
//!   document does not set them **and** the live value is exactly the one the API server
//!   sets for this object ([`Computed`]). A value the API server merely *might* set is not
//!   enough: `clusterIP: None` (headless) is a client's choice, never an allocation,
//!   `ipFamilyPolicy: RequireDualStack` is never the default of a Service with a selector,
//!   and `imagePullPolicy: IfNotPresent` is not the default of a `:latest` image. The list,
//!   with the defaulting rule each entry mirrors, is in docs/policy.md.
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
use super::gitops::{GitopsBindings, argocd_tolerates, flux_tolerates};
use super::managed_fields::{owners, places_holding, subresource};
use crate::manifest::document::ObjectIdentity;
use serde_json::{Value, json};
use std::sync::Arc;

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
    /// A field the signed document does not have, holding exactly this value.
    Default(FieldPattern, Value),
    /// A field the signed document does not have, holding exactly the value the API server
    /// computes for this object ([`Computed`]).
    Computed(FieldPattern, Computed),
    /// [`Rule::Default`], only where the defaulting function sets it ([`When`]).
    DefaultWhen(FieldPattern, Value, When),
}

/// Where a conditional default ([`Rule::DefaultWhen`]) is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// The live `spec.<strategy>.type` is `RollingUpdate` (the DaemonSet and StatefulSet
    /// defaulting functions fill the rolling-update parameters only for that type).
    RollingUpdate(&'static str),
    /// A StatefulSet's `partition: 0`: `SetDefaults_StatefulSet` creates `rollingUpdate`
    /// when it defaults the type itself (the signed document has no
    /// `spec.updateStrategy.type`), and fills `partition` of a `rollingUpdate` the signed
    /// document has; under the `RollingUpdate` type only.
    StatefulSetPartition,
    /// The signed document has no `spec.<field>` (`SetDefaults_Job`: `completions` is 1 only
    /// when neither it nor `parallelism` was set).
    SignedLacks(&'static str),
}

/// A value the API server derives from the rest of the object. Each one is checked
/// against the live object (which must itself match the signed document, field by field).
/// Sources: k8s.io/kubernetes v1.34.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Computed {
    /// Service `spec.clusterIP`: an address the allocator chose — a canonical IPv4 or IPv6
    /// address, never `None` (headless is the client's choice) nor empty, and none for an
    /// `ExternalName` Service (`pkg/registry/core/service/storage/alloc.go`,
    /// `allocateCreate`/`initIPFamilyFields` return early for `ExternalName`).
    ServiceClusterIp,
    /// Service `spec.clusterIPs`: the allocated `clusterIP` first, then one address per
    /// further family in `ipFamilies` (each of its family); `[None]` for a headless one.
    ServiceClusterIps,
    /// Service `spec.ipFamilyPolicy`: `RequireDualStack` for a headless Service without a
    /// selector, `SingleStack` for any other, none for `ExternalName`
    /// (`alloc.go` `initIPFamilyFields`, "If the user didn't specify ipFamilyPolicy").
    ServiceIpFamilyPolicy,
    /// Service `spec.ipFamilies`: the families of the allocated `clusterIPs`, in order; for
    /// a headless Service, one family under `SingleStack`, both (in either order: the
    /// cluster's default first) under a dual-stack policy (`alloc.go` `initIPFamilyFields`).
    ServiceIpFamilies,
    /// Service `spec.internalTrafficPolicy: Cluster`, only for the types
    /// `pkg/apis/core/v1/defaults.go` `SetDefaults_Service` defaults it for (`ClusterIP`,
    /// `NodePort`, `LoadBalancer`).
    ServiceInternalTrafficPolicy,
    /// A container's `imagePullPolicy`: `Always` for an image tagged `latest` or without
    /// tag and digest, `IfNotPresent` otherwise (`pkg/apis/core/v1/defaults.go`
    /// `SetDefaults_Container`, `pkg/util/parsers/parsers.go` `ParseImageName`). An image
    /// reference mansign cannot read exactly is given neither.
    ImagePullPolicy,
    /// Deployment `spec.strategy.rollingUpdate.maxSurge`/`maxUnavailable: 25%`, only under
    /// `strategy.type: RollingUpdate` (`pkg/apis/apps/v1/defaults.go`
    /// `SetDefaults_Deployment`).
    RollingUpdate25Percent,
    /// The object's own `metadata.name` (Namespace label `kubernetes.io/metadata.name`).
    OwnName,
    /// The deployment controller's revision counter, a positive decimal integer
    /// (`deployment.kubernetes.io/revision`).
    PositiveInteger,
    /// DaemonSet annotation `deprecated.daemonset.template.generation`, the apps/v1 form of
    /// `spec.templateGeneration` (`pkg/apis/apps/v1/conversion.go`). The DaemonSet
    /// controller labels pods with it and counts pods of another generation as out of date,
    /// so a client's value is not harmless. `pkg/registry/apps/daemonset/strategy.go`:
    /// `PrepareForCreate` keeps a client's value of 1 or more (and writes 1 otherwise), so
    /// on an admission `CREATE` only `1` is the server's; `PrepareForUpdate` ignores the
    /// client's and writes the stored one, plus one when the pod template changed, so on an
    /// `UPDATE` only those two values of `oldObject`'s are (the template compared as JSON:
    /// equal means unchanged, different may still be equal to the API server's
    /// `Semantic.DeepEqual`, which reads `1000m` as `1`). Read back (no request): a positive
    /// decimal integer, the history being unknown.
    TemplateGeneration,
    /// `spec.replicas` of a workload with a `scale` subresource (Deployment, StatefulSet,
    /// ReplicaSet) signed without it: a value an autoscaler or `kubectl scale` wrote through
    /// the `scale` subresource, that is, owned in `managedFields` only by entries of
    /// subresource `scale`; or, on an admission `UPDATE`, the value `oldObject` holds when no
    /// manager of the main resource owns it there or now. A client that writes `replicas`
    /// into the object itself owns it as a main-resource manager: refused. The default `1`
    /// is a plain default beside this rule.
    ScaledReplicas,
    /// Service `spec.ports[*].targetPort`: the port's own `port` (`pkg/apis/core/v1/
    /// defaults.go` `SetDefaults_Service`: a zero or empty target port becomes `port`).
    ServicePortTargetPort,
    /// The object's own `metadata.uid`: a Job's `batch.kubernetes.io/controller-uid` (and
    /// legacy `controller-uid`) template label and selector, which
    /// `pkg/registry/batch/job/strategy.go` `generateSelector` writes unless
    /// `spec.manualSelector` is true.
    JobOwnUid,
    /// The Job's own `metadata.name`: its `batch.kubernetes.io/job-name` (and legacy
    /// `job-name`) template labels, from the same `generateSelector`.
    JobOwnName,
    /// A Job's `metadata.labels[key]`: `SetDefaults_Job` gives a Job signed without labels
    /// its pod template's labels map (the same Go map, so the labels `generateSelector`
    /// adds to the template appear on the Job as well): the live template's value of that
    /// key, when the signed document has no Job labels and does have template labels.
    JobLabelFromTemplate,
    /// Job `spec.backoffLimit`: 6, or 2147483647 when `backoffLimitPerIndex` is set
    /// (`SetDefaults_Job`).
    JobBackoffLimit,
    /// Job `spec.podReplacementPolicy`: `Failed` when `podFailurePolicy` is set,
    /// `TerminatingOrFailed` otherwise (`SetDefaults_Job`, feature `JobPodReplacementPolicy`,
    /// GA and locked on in 1.34).
    JobPodReplacementPolicy,
}

/// What an admission request says beside its object: the tolerances that depend on the
/// object's history read it ([`Tolerances::admission`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AdmissionWrite {
    /// A `CREATE`: nothing was stored before.
    Create,
    /// An `UPDATE`, with the stored object it replaces (`request.oldObject`; `None` when
    /// the request carries none: then nothing that depends on it is tolerated).
    Update { old_object: Option<Arc<Value>> },
}

/// Text that is not `Kind` or `Kind.group` ([`GroupKind::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not a kind: expected Kind or Kind.group (e.g. Service, PolicyException.kyverno.io)"
)]
pub struct GroupKindError {
    /// The text refused.
    pub text: String,
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
    pub fn parse(text: &str) -> Result<Self, GroupKindError> {
        let (kind, group) = text.split_once('.').unwrap_or((text, ""));
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(GroupKindError { text: text.into() });
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
            | (
                "certificates.k8s.io",
                "CertificateSigningRequest" | "PodCertificateRequest"
            )
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
    /// The object is an admission request's (`None`: a file or an object read back). In a
    /// request an allocated value (a Service address) is tolerated only when
    /// `metadata.managedFields` shows no manager set it, and, on an `UPDATE`, no manager
    /// owned it in `oldObject` either (a plain `kubectl replace` drops a client's ownership
    /// while the registry copies its address back); an object without `managedFields` gets
    /// none tolerated. Read back (`kubectl get` strips `managedFields`) a field a manager
    /// owns is still refused, but an object without them is judged by its value alone
    /// (docs/policy.md). The DaemonSet template generation and a scaled `replicas` also read
    /// the operation and `oldObject` (docs/policy.md lists each rule).
    pub admission: Option<AdmissionWrite>,
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
    Namespace,
    Service,
    Deployment,
    DaemonSet,
    StatefulSet,
    ReplicaSet,
    Job,
    CronJob,
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
            ("", "Namespace") => KindRules::Namespace,
            ("", "Service") => KindRules::Service,
            ("apps", "Deployment") => KindRules::Deployment,
            ("apps", "DaemonSet") => KindRules::DaemonSet,
            ("apps", "StatefulSet") => KindRules::StatefulSet,
            ("apps", "ReplicaSet") => KindRules::ReplicaSet,
            ("batch", "Job") => KindRules::Job,
            ("batch", "CronJob") => KindRules::CronJob,
            _ => KindRules::None,
        };
        let restart_always = id.kind != "Job" && id.kind != "CronJob";
        RulesKey {
            kind,
            pod_spec: pod_spec_prefix(&id.kind).map(|prefix| (prefix, restart_always)),
        }
    }
}

/// The rules of every key, built once (immutable afterwards): 9 kinds x 5 pod-spec shapes.
fn kubernetes_rules(id: &ObjectIdentity) -> &'static [Rule] {
    static ALL: std::sync::LazyLock<Vec<(RulesKey, Vec<Rule>)>> = std::sync::LazyLock::new(|| {
        let kinds = [
            KindRules::None,
            KindRules::Namespace,
            KindRules::Service,
            KindRules::Deployment,
            KindRules::DaemonSet,
            KindRules::StatefulSet,
            KindRules::ReplicaSet,
            KindRules::Job,
            KindRules::CronJob,
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
        KindRules::Namespace => {
            // `pkg/apis/core/v1/defaults.go` `SetDefaults_Namespace` (the name label) and
            // `pkg/registry/core/namespace/strategy.go` `PrepareForCreate` (the
            // `kubernetes` finalizer, appended when missing).
            rules.extend([
                Rule::Computed(
                    p("metadata.labels[\"kubernetes.io/metadata.name\"]"),
                    Computed::OwnName,
                ),
                Rule::Default(p("spec.finalizers"), json!(["kubernetes"])),
                Rule::Default(p("spec.finalizers[*]"), json!("kubernetes")),
            ]);
        }
        KindRules::Service => {
            // `pkg/apis/core/v1/defaults.go` `SetDefaults_Service` (type, sessionAffinity,
            // ports' protocol) and `pkg/registry/core/service/storage/alloc.go` (addresses
            // and families); each value is the one the API server sets for this Service.
            rules.extend([
                Rule::Computed(p("spec.clusterIP"), Computed::ServiceClusterIp),
                Rule::Computed(p("spec.clusterIPs"), Computed::ServiceClusterIps),
                Rule::Computed(p("spec.ipFamilies"), Computed::ServiceIpFamilies),
                Rule::Computed(p("spec.ipFamilyPolicy"), Computed::ServiceIpFamilyPolicy),
                Rule::Default(p("spec.type"), json!("ClusterIP")),
                Rule::Default(p("spec.sessionAffinity"), json!("None")),
                Rule::Computed(
                    p("spec.internalTrafficPolicy"),
                    Computed::ServiceInternalTrafficPolicy,
                ),
                Rule::Default(p("spec.ports[*].protocol"), json!("TCP")),
                Rule::Computed(
                    p("spec.ports[*].targetPort"),
                    Computed::ServicePortTargetPort,
                ),
            ]);
        }
        KindRules::Deployment => {
            // `pkg/apis/apps/v1/defaults.go` `SetDefaults_Deployment`; the revision
            // annotation is the deployment controller's.
            rules.extend([
                Rule::Computed(
                    p("metadata.annotations[\"deployment.kubernetes.io/revision\"]"),
                    Computed::PositiveInteger,
                ),
                Rule::Default(p("spec.progressDeadlineSeconds"), json!(600)),
                Rule::Default(p("spec.revisionHistoryLimit"), json!(10)),
                Rule::Default(p("spec.replicas"), json!(1)),
                Rule::Computed(p("spec.replicas"), Computed::ScaledReplicas),
                Rule::Default(p("spec.strategy.type"), json!("RollingUpdate")),
                Rule::Computed(
                    p("spec.strategy.rollingUpdate.maxSurge"),
                    Computed::RollingUpdate25Percent,
                ),
                Rule::Computed(
                    p("spec.strategy.rollingUpdate.maxUnavailable"),
                    Computed::RollingUpdate25Percent,
                ),
            ]);
        }
        KindRules::DaemonSet => {
            // `spec.templateGeneration` written back by the apps/v1 conversion
            // (`pkg/apis/apps/v1/conversion.go`); `pkg/apis/apps/v1/defaults.go`
            // `SetDefaults_DaemonSet` for the rest.
            let rolling = When::RollingUpdate("updateStrategy");
            rules.extend([
                Rule::Computed(
                    p("metadata.annotations[\"deprecated.daemonset.template.generation\"]"),
                    Computed::TemplateGeneration,
                ),
                Rule::Default(p("spec.updateStrategy.type"), json!("RollingUpdate")),
                Rule::DefaultWhen(
                    p("spec.updateStrategy.rollingUpdate.maxUnavailable"),
                    json!(1),
                    rolling,
                ),
                Rule::DefaultWhen(
                    p("spec.updateStrategy.rollingUpdate.maxSurge"),
                    json!(0),
                    rolling,
                ),
                Rule::Default(p("spec.revisionHistoryLimit"), json!(10)),
            ]);
        }
        KindRules::StatefulSet => {
            // `pkg/apis/apps/v1/defaults.go` `SetDefaults_StatefulSet` (feature
            // `MaxUnavailableStatefulSet` is off in 1.34: no `maxUnavailable`;
            // `StatefulSetAutoDeletePVC` is GA: the retention policy).
            rules.extend([
                Rule::Default(p("spec.podManagementPolicy"), json!("OrderedReady")),
                Rule::Default(p("spec.updateStrategy.type"), json!("RollingUpdate")),
                Rule::DefaultWhen(
                    p("spec.updateStrategy.rollingUpdate.partition"),
                    json!(0),
                    When::StatefulSetPartition,
                ),
                Rule::Default(
                    p("spec.persistentVolumeClaimRetentionPolicy.whenDeleted"),
                    json!("Retain"),
                ),
                Rule::Default(
                    p("spec.persistentVolumeClaimRetentionPolicy.whenScaled"),
                    json!("Retain"),
                ),
                Rule::Default(p("spec.replicas"), json!(1)),
                Rule::Computed(p("spec.replicas"), Computed::ScaledReplicas),
                Rule::Default(p("spec.revisionHistoryLimit"), json!(10)),
            ]);
        }
        KindRules::ReplicaSet => {
            // `SetDefaults_ReplicaSet`.
            rules.extend([
                Rule::Default(p("spec.replicas"), json!(1)),
                Rule::Computed(p("spec.replicas"), Computed::ScaledReplicas),
            ]);
        }
        KindRules::Job => {
            // `pkg/apis/batch/v1/defaults.go` `SetDefaults_Job` and
            // `pkg/registry/batch/job/strategy.go` `generateSelector`.
            rules.extend([
                Rule::DefaultWhen(
                    p("spec.completions"),
                    json!(1),
                    When::SignedLacks("parallelism"),
                ),
                Rule::Default(p("spec.parallelism"), json!(1)),
                Rule::Computed(p("spec.backoffLimit"), Computed::JobBackoffLimit),
                Rule::Default(p("spec.completionMode"), json!("NonIndexed")),
                Rule::Default(p("spec.suspend"), json!(false)),
                Rule::Default(p("spec.manualSelector"), json!(false)),
                Rule::Computed(
                    p("spec.podReplacementPolicy"),
                    Computed::JobPodReplacementPolicy,
                ),
                Rule::Computed(p("metadata.labels.*"), Computed::JobLabelFromTemplate),
                Rule::Computed(
                    p("spec.selector.matchLabels[\"batch.kubernetes.io/controller-uid\"]"),
                    Computed::JobOwnUid,
                ),
                Rule::Computed(
                    p("spec.template.metadata.labels[\"batch.kubernetes.io/controller-uid\"]"),
                    Computed::JobOwnUid,
                ),
                Rule::Computed(
                    p("spec.template.metadata.labels[\"controller-uid\"]"),
                    Computed::JobOwnUid,
                ),
                Rule::Computed(
                    p("spec.template.metadata.labels[\"batch.kubernetes.io/job-name\"]"),
                    Computed::JobOwnName,
                ),
                Rule::Computed(
                    p("spec.template.metadata.labels[\"job-name\"]"),
                    Computed::JobOwnName,
                ),
                Rule::Default(
                    p("spec.podFailurePolicy.rules[*].onPodConditions[*].status"),
                    json!("True"),
                ),
            ]);
        }
        KindRules::CronJob => {
            // `pkg/apis/batch/v1/defaults.go` `SetDefaults_CronJob` (the Job template gets
            // no Job defaults: `SetDefaults_Job` is the Job's, not its spec's).
            rules.extend([
                Rule::Default(p("spec.concurrencyPolicy"), json!("Allow")),
                Rule::Default(p("spec.suspend"), json!(false)),
                Rule::Default(p("spec.successfulJobsHistoryLimit"), json!(3)),
                Rule::Default(p("spec.failedJobsHistoryLimit"), json!(1)),
            ]);
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
            // A CronJob's `jobTemplate.metadata` comes back as `{}` from the 1.34 API server
            // (nothing set: the same as absent), or with the `null` timestamp.
            rules.extend([
                Rule::Default(p("spec.jobTemplate.metadata"), json!({})),
                Rule::Default(
                    p("spec.jobTemplate.metadata.creationTimestamp"),
                    Value::Null,
                ),
            ]);
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
                Rule::Computed(
                    at(&format!("{containers}[*].imagePullPolicy")),
                    Computed::ImagePullPolicy,
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

/// A GitOps key the profiles do not tolerate because nothing binds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnboundGitopsKey {
    /// What is unbound, in words.
    pub what: &'static str,
    /// The CLI flag that binds it.
    pub flag: &'static str,
    /// The `ManifestPolicy` field that binds it.
    pub field: &'static str,
}

/// The keys `profiles` name but do not tolerate under `bindings`, because no value is bound
/// (for a one-time note: an object carrying them is denied until they are bound; see
/// `manifest::gitops`).
pub fn unbound_gitops_keys(
    profiles: IgnoreProfiles,
    bindings: &GitopsBindings,
) -> Vec<UnboundGitopsKey> {
    let mut keys = Vec::new();
    if profiles.contains(IgnoreProfile::Argocd) {
        if bindings.argocd_applications.is_empty() {
            keys.push(UnboundGitopsKey {
                what: "the Argo CD instance label (not tolerated on any kind without a bound \
                       application; the tracking-id annotation naming the object itself is)",
                flag: "--argocd-application NAME",
                field: "spec.gitops.argocd.applications",
            });
        }
        if bindings.argocd_installation_ids.is_empty() {
            keys.push(UnboundGitopsKey {
                what: "the Argo CD installation-id annotation (not tolerated without a bound id)",
                flag: "--argocd-installation-id ID",
                field: "spec.gitops.argocd.installationIDs",
            });
        }
    }
    if profiles.contains(IgnoreProfile::Flux) && bindings.flux_kustomizations.is_empty() {
        keys.push(UnboundGitopsKey {
            what: "the Flux kustomize.toolkit.fluxcd.io labels (not tolerated on any kind \
                   without a bound Kustomization)",
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
        (profiles.contains(IgnoreProfile::Kubernetes)
            && self.kubernetes_tolerates(id, signed, object, d))
            || (profiles.contains(IgnoreProfile::KyvernoCompat) && kyverno_tolerates(id, d))
            || (profiles.contains(IgnoreProfile::Argocd)
                && argocd_tolerates(id, signed, object, d, &self.gitops))
            || (profiles.contains(IgnoreProfile::Flux) && flux_tolerates(object, d, &self.gitops))
            || (self.digest_pinning && is_digest_pinning(d))
            || self.namespace_bound(signed, d)
    }

    fn kubernetes_tolerates(
        &self,
        id: &ObjectIdentity,
        signed: &Value,
        object: &Value,
        d: &Difference<'_>,
    ) -> bool {
        let judged = Judged {
            object,
            signed,
            admission: self.admission.as_ref(),
        };
        (self.ignores_status(id) && matches!(d.path.first(), Some(Step::Key("status"))))
            || kubernetes_rules(id)
                .iter()
                .any(|r| rule_tolerates(r, &judged, d))
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

/// What a rule looks at besides the difference: the live object, the signed document and
/// the admission request the object came in (if any).
struct Judged<'a> {
    object: &'a Value,
    signed: &'a Value,
    admission: Option<&'a AdmissionWrite>,
}

fn rule_tolerates(rule: &Rule, judged: &Judged<'_>, d: &Difference<'_>) -> bool {
    let added_at = |p: &FieldPattern| d.kind == DiffKind::Added && p.matches_steps_exactly(d.path);
    match rule {
        Rule::Ignore(p) => p.matches_steps(d.path),
        Rule::Default(p, value) => added_at(p) && d.actual == Some(value),
        Rule::DefaultWhen(p, value, when) => {
            added_at(p) && d.actual == Some(value) && when.holds(judged)
        }
        Rule::Computed(p, computed) => {
            added_at(p)
                && d.actual
                    .is_some_and(|actual| computed.accepts(judged, d.path, actual))
                && (!computed.is_allocated() || allocated_by_the_server(judged, d.path, d.actual))
        }
    }
}

/// Whether the value at `path` of the live object shows no sign of a client's choice: no
/// `managedFields` entry owns it (in an admission request, an object without
/// `managedFields` cannot show it), and, on an `UPDATE`, no entry of `oldObject` owned the
/// same value where the stored object held it. The Service registry copies an address or
/// node port the update left out back from the stored object
/// (`pkg/registry/core/service/storage/storage.go` `patchAllocatedValues`), while the
/// field manager gives the update's manager no ownership of it, so the new object alone
/// shows a client's old choice as "owned by no manager" (issue 35).
fn allocated_by_the_server(judged: &Judged<'_>, path: &[Step<'_>], actual: Option<&Value>) -> bool {
    let unowned_now = match owners(judged.object, path) {
        Some(owners) => owners.is_empty(),
        None => judged.admission.is_none(),
    };
    match judged.admission {
        Some(AdmissionWrite::Update { old_object }) => {
            let (Some(old), Some(actual)) = (old_object, actual) else {
                return false;
            };
            unowned_now
                && places_holding(old, path, actual)
                    .iter()
                    .all(|place| owners(old, place).is_some_and(|o| o.is_empty()))
        }
        _ => unowned_now,
    }
}

/// Whether `spec.replicas` at `path` was written through the `scale` subresource or kept
/// from the stored object, never by a client of the main resource ([`Computed::ScaledReplicas`]).
fn replicas_scaled(judged: &Judged<'_>, path: &[Step<'_>], actual: &Value) -> bool {
    let through_scale = |owners: &[&Value]| owners.iter().all(|e| subresource(e) == "scale");
    let now = owners(judged.object, path);
    if let Some(owners) = &now
        && !owners.is_empty()
    {
        return through_scale(owners);
    }
    // Nobody owns it now (or the request cleared `managedFields`): only a value kept from
    // the stored object, where the `scale` subresource owned it. A stored value that nobody
    // owned is not proof of a scale (it may predate the rule, or its managedFields were
    // cleared): fail closed, as for allocated addresses.
    match judged.admission {
        Some(AdmissionWrite::Update {
            old_object: Some(old),
        }) => {
            value_at(old, path) == Some(actual)
                && owners(old, path)
                    .is_some_and(|owners| !owners.is_empty() && through_scale(&owners))
        }
        _ => false,
    }
}

impl When {
    fn holds(self, judged: &Judged<'_>) -> bool {
        let spec = |v: &'_ Value| v.get("spec").cloned().unwrap_or(Value::Null);
        match self {
            When::RollingUpdate(strategy) => {
                spec(judged.object)
                    .get(strategy)
                    .and_then(|s| s.get("type"))
                    .and_then(Value::as_str)
                    == Some("RollingUpdate")
            }
            When::StatefulSetPartition => {
                let signed = spec(judged.signed);
                let strategy = signed.get("updateStrategy");
                let type_unset = strategy
                    .and_then(|s| s.get("type"))
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                let has_rolling = strategy
                    .and_then(|s| s.get("rollingUpdate"))
                    .is_some_and(Value::is_object);
                (type_unset || has_rolling) && When::RollingUpdate("updateStrategy").holds(judged)
            }
            When::SignedLacks(field) => spec(judged.signed).get(field).is_none(),
        }
    }
}

impl Computed {
    /// A value the API server allocates but a client may also send (a Service's addresses
    /// and, following them, its families): tolerated only when no manager owns the field.
    /// The other computed values are the same whoever writes them (a client sending the
    /// default gets the default's behaviour; the revision counters are the controllers').
    fn is_allocated(self) -> bool {
        matches!(
            self,
            Computed::ServiceClusterIp | Computed::ServiceClusterIps | Computed::ServiceIpFamilies
        )
    }

    /// True if `actual`, found at `path` of the live `object`, is what the API server
    /// computes there.
    fn accepts(self, judged: &Judged<'_>, path: &[Step<'_>], actual: &Value) -> bool {
        let object = judged.object;
        let spec = object.get("spec").unwrap_or(&NULL);
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match self {
            Computed::ServiceClusterIp => {
                !is_external_name(spec) && actual.as_str().is_some_and(|ip| ip_family(ip).is_some())
            }
            Computed::ServiceClusterIps => {
                let (Some(ips), Some(first)) = (actual.as_array(), text(spec, "clusterIP")) else {
                    return false;
                };
                if is_external_name(spec)
                    || ips.first().and_then(Value::as_str) != Some(first.as_str())
                {
                    return false;
                }
                if first == "None" {
                    return ips.len() == 1;
                }
                // One address per family, each of its family (the allocator's order); an
                // object without families (an API server before 1.20) has one address.
                let families = string_list(spec.get("ipFamilies"));
                if families.is_empty() {
                    return ips.len() == 1;
                }
                let single = text(spec, "ipFamilyPolicy").as_deref() == Some("SingleStack");
                ips.len() == families.len()
                    && !(single && ips.len() > 1)
                    && ips.iter().zip(&families).all(|(ip, family)| {
                        ip.as_str().and_then(ip_family) == Some(family.as_str())
                    })
            }
            Computed::ServiceIpFamilyPolicy => {
                let expected = if is_headless_without_selector(spec) {
                    "RequireDualStack"
                } else {
                    "SingleStack"
                };
                !is_external_name(spec) && actual.as_str() == Some(expected)
            }
            Computed::ServiceIpFamilies => {
                let Some(families) = actual.as_array() else {
                    return false;
                };
                let families: Vec<&str> = families.iter().filter_map(Value::as_str).collect();
                let known = families.iter().all(|f| matches!(*f, "IPv4" | "IPv6"));
                let distinct = families.first() != families.get(1);
                let policy = text(spec, "ipFamilyPolicy");
                if is_external_name(spec)
                    || !known
                    || !distinct
                    || families.is_empty()
                    || families.len() > 2
                {
                    return false;
                }
                if text(spec, "clusterIP").as_deref() == Some("None") {
                    return match policy.as_deref() {
                        Some("SingleStack") => families.len() == 1,
                        Some("RequireDualStack") => families.len() == 2,
                        Some("PreferDualStack") => families.len() <= 2,
                        _ => false,
                    };
                }
                let ips = string_list(spec.get("clusterIPs"));
                ips.len() == families.len()
                    && ips
                        .iter()
                        .zip(&families)
                        .all(|(ip, family)| ip_family(ip) == Some(*family))
            }
            Computed::ServiceInternalTrafficPolicy => {
                let service_type = text(spec, "type");
                matches!(
                    service_type.as_deref(),
                    Some("ClusterIP" | "NodePort" | "LoadBalancer")
                ) && actual.as_str() == Some("Cluster")
            }
            Computed::ImagePullPolicy => {
                let container = path
                    .split_last()
                    .and_then(|(_, container)| value_at(object, container));
                let expected = container
                    .and_then(|c| c.get("image"))
                    .and_then(Value::as_str)
                    .and_then(default_pull_policy);
                expected.is_some() && actual.as_str() == expected
            }
            Computed::RollingUpdate25Percent => {
                let strategy = spec.get("strategy").unwrap_or(&NULL);
                text(strategy, "type").as_deref() == Some("RollingUpdate")
                    && actual.as_str() == Some("25%")
            }
            Computed::OwnName => {
                let name = object.get("metadata").and_then(|m| m.get("name"));
                name.is_some_and(|name| name == actual)
            }
            Computed::PositiveInteger => actual.as_str().is_some_and(is_positive_integer),
            Computed::TemplateGeneration => {
                let Some(text) = actual.as_str().filter(|n| is_positive_integer(n)) else {
                    return false;
                };
                match judged.admission {
                    None => true,
                    Some(AdmissionWrite::Create) => text == "1",
                    Some(AdmissionWrite::Update { old_object }) => {
                        let Some(old) = old_object else {
                            return false;
                        };
                        let stored = old
                            .get("metadata")
                            .and_then(|m| m.get("annotations"))
                            .and_then(|a| a.get(TEMPLATE_GENERATION_ANNOTATION))
                            .and_then(Value::as_str)
                            .filter(|n| is_positive_integer(n))
                            .and_then(|n| n.parse::<u64>().ok());
                        let Some(stored) = stored else {
                            return false;
                        };
                        let changed = value_at(old, &[Step::Key("spec"), Step::Key("template")])
                            != value_at(object, &[Step::Key("spec"), Step::Key("template")]);
                        text == stored.to_string()
                            || (changed
                                && Some(text.to_string())
                                    == stored.checked_add(1).map(|n| n.to_string()))
                    }
                }
            }
            Computed::ScaledReplicas => {
                actual.as_u64().is_some() && replicas_scaled(judged, path, actual)
            }
            Computed::ServicePortTargetPort => {
                let port = path
                    .split_last()
                    .and_then(|(_, port)| value_at(object, port))
                    .and_then(|p| p.get("port"));
                port.is_some_and(|port| port == actual)
            }
            Computed::JobOwnUid | Computed::JobOwnName => {
                let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
                let own = object.get("metadata").and_then(|m| {
                    m.get(if self == Computed::JobOwnUid {
                        "uid"
                    } else {
                        "name"
                    })
                });
                !manual
                    && own.and_then(Value::as_str).is_some_and(|v| !v.is_empty())
                    && own == Some(actual)
            }
            Computed::JobLabelFromTemplate => {
                let Some(Step::Key(key)) = path.last() else {
                    return false;
                };
                let labels = |v: &Value| v.get("metadata").and_then(|m| m.get("labels")).cloned();
                let template_labels = |v: &Value| {
                    v.get("spec")
                        .and_then(|s| s.get("template"))
                        .and_then(|t| t.get("metadata"))
                        .and_then(|m| m.get("labels"))
                        .cloned()
                };
                let signed_unlabelled = match labels(judged.signed) {
                    None | Some(Value::Null) => true,
                    Some(Value::Object(m)) => m.is_empty(),
                    Some(_) => false,
                };
                let signed_template_labelled =
                    template_labels(judged.signed).is_some_and(|l| l.is_object());
                signed_unlabelled
                    && signed_template_labelled
                    && template_labels(object)
                        .and_then(|l| l.get(*key).cloned())
                        .as_ref()
                        == Some(actual)
            }
            Computed::JobBackoffLimit => {
                let per_index = spec
                    .get("backoffLimitPerIndex")
                    .is_some_and(|v| !v.is_null());
                actual.as_i64() == Some(if per_index { 2_147_483_647 } else { 6 })
            }
            Computed::JobPodReplacementPolicy => {
                let failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
                actual.as_str()
                    == Some(if failure_policy {
                        "Failed"
                    } else {
                        "TerminatingOrFailed"
                    })
            }
        }
    }
}

/// The DaemonSet annotation holding `spec.templateGeneration` in apps/v1.
const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// A positive decimal integer as Go's `strconv.FormatInt` writes one (no sign, no leading
/// zero), of at most 19 digits.
fn is_positive_integer(n: &str) -> bool {
    !n.is_empty() && n.len() <= 19 && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0')
}

/// The JSON `null` a missing field reads as.
static NULL: Value = Value::Null;

/// A Service of type `ExternalName` (no addresses, no families).
fn is_external_name(spec: &Value) -> bool {
    spec.get("type").and_then(Value::as_str) == Some("ExternalName")
}

/// `clusterIP: None` and no (or an empty) selector: the API server's special case.
fn is_headless_without_selector(spec: &Value) -> bool {
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let selectorless = match spec.get("selector") {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(_) => false,
    };
    headless && selectorless
}

/// The strings of a list (non-strings skipped: they then fail a length comparison).
fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `IPv4`/`IPv6` for an address written canonically, as the allocator writes it; `None`
/// for anything else (`None`, empty, a non-canonical spelling).
fn ip_family(text: &str) -> Option<&'static str> {
    let ip: std::net::IpAddr = text.parse().ok()?;
    if ip.to_string() != text {
        return None;
    }
    Some(if ip.is_ipv4() { "IPv4" } else { "IPv6" })
}

/// The value at `path` of `v`.
fn value_at<'v>(v: &'v Value, path: &[Step<'_>]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, step| match (step, v) {
        (Step::Key(k), Value::Object(m)) => m.get(*k),
        (Step::Index(i), Value::Array(a)) => a.get(*i),
        _ => None,
    })
}

/// The `imagePullPolicy` the API server gives a container with image `image`
/// (`SetDefaults_Container`): `Always` when `ParseImageName` yields the tag `latest` —
/// written, or implied by a reference with neither tag nor digest — and `IfNotPresent`
/// otherwise. `None` when the reference is not one mansign reads exactly as the
/// distribution/reference grammar does (the API server then defaults `IfNotPresent`, but
/// the kubelet cannot pull it either: nothing is tolerated).
pub(crate) fn default_pull_policy(image: &str) -> Option<&'static str> {
    let (named, digest) = match image.split_once('@') {
        Some((named, digest)) => (named, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest {
        // go-digest `Validate`: an available algorithm and its exact length of lowercase
        // hex (anything else fails the parse, and the API server then reads no tag).
        let (algorithm, hex) = digest.split_once(':')?;
        let length = match algorithm {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return None,
        };
        let hex_ok = hex.len() == length
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        if !hex_ok {
            return None;
        }
    }
    let last_slash = named.rfind('/');
    let (name, tag) = match named.rfind(':') {
        Some(colon) if last_slash.is_none_or(|slash| colon > slash) => {
            (&named[..colon], Some(&named[colon + 1..]))
        }
        _ => (named, None),
    };
    if let Some(tag) = tag {
        let tag_ok = (1..=128).contains(&tag.len())
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !tag_ok {
            return None;
        }
    }
    // distribution/reference `NameTotalLengthMax`.
    if name.len() > 255 || !is_repository_name(name) {
        return None;
    }
    match (tag, digest) {
        (Some("latest"), _) | (None, None) => Some("Always"),
        _ => Some("IfNotPresent"),
    }
}

/// A repository name as distribution/reference reads it: an optional domain (with `.` or
/// `:port`, or `localhost`) and lowercase path components joined by `.`, `_`, `__` or
/// dashes. A bare 64-hex-digit name is refused there (it reads as an image id).
fn is_repository_name(name: &str) -> bool {
    let components: Vec<&str> = name.split('/').collect();
    let path = match components.as_slice() {
        [] => return false,
        [first, rest @ ..]
            if !rest.is_empty()
                && (first.contains(['.', ':'])
                    || *first == "localhost"
                    || first.chars().any(|c| c.is_ascii_uppercase())) =>
        {
            let (host, port) = first.split_once(':').unwrap_or((*first, ""));
            let host_ok = !host.is_empty()
                && host.split('.').all(|label| {
                    !label.is_empty()
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            let port_ok = first
                .contains(':')
                .then_some(port)
                .is_none_or(|port| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()));
            if !host_ok || !port_ok {
                return false;
            }
            rest
        }
        all => all,
    };
    fn alnum(ch: char) -> bool {
        ch.is_ascii_lowercase() || ch.is_ascii_digit()
    }
    fn component_ok(c: &str) -> bool {
        !c.is_empty()
            && c.starts_with(alnum)
            && c.ends_with(alnum)
            && c.chars()
                .all(|ch| alnum(ch) || matches!(ch, '.' | '_' | '-'))
            && !["..", "._", "_.", "___", ".-", "-.", "_-", "-_"]
                .iter()
                .any(|bad| c.contains(bad))
    }
    let bare_id =
        components.len() == 1 && name.len() == 64 && name.chars().all(|c| c.is_ascii_hexdigit());
    !path.is_empty() && path.iter().all(|c| component_ok(c)) && !bare_id
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
    use crate::manifest::compare::diff::compare;

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
            .paths()
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
            gitops: GitopsBindings {
                argocd_applications: vec!["app".into()],
                argocd_installation_ids: vec!["one".into()],
                flux_kustomizations: vec!["flux-system/apps".parse().unwrap()],
            },
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
    fn unbound_gitops_profiles_tolerate_no_label_on_any_kind() {
        let t = Tolerances {
            profiles: "argocd,flux".parse().unwrap(),
            ..Tolerances::default()
        };
        for (group, kind) in [
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("", "ConfigMap"),
            ("apps", "Deployment"),
            ("kyverno.io", "PolicyException"),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            ("", "Node"),
        ] {
            let object_id = id(group, kind);
            let signed = json!({"metadata": {"name": "x", "namespace": "ns"}});
            let live = json!({"metadata": {"name": "x", "namespace": "ns",
                "labels": {"app.kubernetes.io/instance": "app",
                           "kustomize.toolkit.fluxcd.io/name": "apps",
                           "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
                "annotations": {"argocd.argoproj.io/installation-id": "one",
                                "argocd.argoproj.io/tracking-id":
                                    format!("app:{group}/{kind}:ns/x")}}});
            assert_eq!(
                remaining(&t, &object_id, signed, live),
                [
                    "metadata.annotations[\"argocd.argoproj.io/installation-id\"]",
                    "metadata.labels[\"app.kubernetes.io/instance\"]",
                    "metadata.labels[\"kustomize.toolkit.fluxcd.io/name\"]",
                    "metadata.labels[\"kustomize.toolkit.fluxcd.io/namespace\"]",
                ],
                "{kind}"
            );
        }
    }

    fn service(spec: Value) -> Value {
        json!({"metadata": {"name": "x"}, "spec": spec})
    }

    /// [`remaining`] for a core Service.
    fn service_remaining(t: &Tolerances, signed: Value, live: Value) -> Vec<String> {
        remaining(t, &id("", "Service"), signed, live)
    }

    #[test]
    fn a_headless_cluster_ip_is_never_a_server_value() {
        let signed = service(json!({"selector": {"app": "x"}, "ports": [{"port": 80}]}));
        let live = service(json!({"selector": {"app": "x"}, "ports": [{"port": 80}],
            "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack"}));
        // `clusterIPs`, families and policy follow the (refused) `None`.
        assert_eq!(service_remaining(&kube(), signed, live), ["spec.clusterIP"]);
    }

    #[test]
    fn dual_stack_policies_and_families_are_the_client_s_choice() {
        let signed = service(json!({"selector": {"app": "x"}}));
        let live = service(json!({"selector": {"app": "x"}, "clusterIP": "fd00::a",
            "clusterIPs": ["fd00::a", "10.96.0.10"], "ipFamilies": ["IPv6", "IPv4"],
            "ipFamilyPolicy": "RequireDualStack"}));
        // Addresses and families follow the (refused) dual-stack policy.
        assert_eq!(
            service_remaining(&kube(), signed.clone(), live),
            ["spec.ipFamilyPolicy"]
        );
        let live = service(json!({"selector": {"app": "x"}, "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "PreferDualStack"}));
        assert_eq!(
            service_remaining(&kube(), signed, live),
            ["spec.ipFamilyPolicy"]
        );
    }

    #[test]
    fn allocated_single_stack_addresses_are_tolerated() {
        let signed = service(json!({"selector": {"app": "x"}}));
        for (ip, family) in [("10.96.0.10", "IPv4"), ("fd00:10:96::a", "IPv6")] {
            let live = service(json!({"selector": {"app": "x"}, "clusterIP": ip,
                "clusterIPs": [ip], "ipFamilies": [family], "ipFamilyPolicy": "SingleStack",
                "type": "ClusterIP", "internalTrafficPolicy": "Cluster"}));
            assert!(service_remaining(&kube(), signed.clone(), live).is_empty());
        }
        // A family that is not the address's, a second address, a non-canonical spelling.
        let live = service(json!({"selector": {"app": "x"}, "clusterIP": "10.96.0.010",
            "clusterIPs": ["10.96.0.10", "10.96.0.11"], "ipFamilies": ["IPv6"]}));
        assert_eq!(
            service_remaining(&kube(), signed, live),
            [
                "spec.clusterIP",
                "spec.clusterIPs[0]",
                "spec.clusterIPs[1]",
                "spec.ipFamilies[0]"
            ]
        );
    }

    /// A Service read back with the addresses the allocator gave it, and `managedFields`
    /// entries whose `fieldsV1` are `owned` (none: no `managedFields` at all).
    fn allocated_service(owned: Option<Vec<Value>>) -> Value {
        let mut live = service(json!({"selector": {"app": "x"}, "clusterIP": "10.0.0.77",
            "clusterIPs": ["10.0.0.77"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}));
        if let Some(owned) = owned {
            let entries: Vec<Value> = owned
                .into_iter()
                .map(|fields| {
                    json!({"manager": "kubectl", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": fields})
                })
                .collect();
            live["metadata"]["managedFields"] = Value::Array(entries);
        }
        live
    }

    #[test]
    fn an_address_a_manager_owns_is_the_client_s_choice_not_an_allocation() {
        let signed = service(json!({"selector": {"app": "x"}}));
        let admission = Tolerances {
            admission: Some(AdmissionWrite::Create),
            ..kube()
        };
        let sent = json!({"f:spec": {"f:selector": {}, "f:ipFamilyPolicy": {}}});
        // Not owned: what the allocator wrote, in an admission request and read back.
        for t in [kube(), admission.clone()] {
            let live = allocated_service(Some(vec![sent.clone()]));
            assert!(service_remaining(&t, signed.clone(), live).is_empty());
        }
        // Owned by the client that sent it (in one entry of several): refused either way.
        let chose = json!({"f:spec": {"f:clusterIP": {}, "f:clusterIPs": {}, "f:ipFamilies": {}}});
        for t in [kube(), admission.clone()] {
            let live = allocated_service(Some(vec![sent.clone(), chose.clone()]));
            assert_eq!(
                service_remaining(&t, signed.clone(), live),
                ["spec.clusterIP", "spec.clusterIPs[0]", "spec.ipFamilies[0]"]
            );
        }
        let only_ip = json!({"f:spec": {"f:clusterIP": {}}});
        let live = allocated_service(Some(vec![only_ip]));
        assert_eq!(
            service_remaining(&admission, signed.clone(), live),
            ["spec.clusterIP"]
        );
        // No `managedFields` (or entries without `fieldsV1`): an admission request cannot
        // show the address allocated, so it is refused; a live read (`kubectl get` strips
        // them) is judged by the value.
        for live in [allocated_service(None), allocated_service(Some(vec![])), {
            let mut live = allocated_service(Some(vec![]));
            live["metadata"]["managedFields"] = json!([{"manager": "x"}]);
            live
        }] {
            assert_eq!(
                service_remaining(&admission, signed.clone(), live.clone()),
                ["spec.clusterIP", "spec.clusterIPs[0]", "spec.ipFamilies[0]"]
            );
            assert!(service_remaining(&kube(), signed.clone(), live).is_empty());
        }
        // The values that are the same whoever sends them stay tolerated without evidence.
        let live = service(
            json!({"selector": {"app": "x"}, "ipFamilyPolicy": "SingleStack",
            "type": "ClusterIP", "internalTrafficPolicy": "Cluster"}),
        );
        assert!(service_remaining(&admission, signed, live).is_empty());
    }

    /// [`kube`] for an admission request written by `write`.
    fn admitted(write: AdmissionWrite) -> Tolerances {
        Tolerances {
            admission: Some(write),
            ..kube()
        }
    }

    fn update_of(old: Value) -> Tolerances {
        admitted(AdmissionWrite::Update {
            old_object: Some(Arc::new(old)),
        })
    }

    #[test]
    fn an_update_tolerates_an_address_only_when_the_stored_object_did_not_own_it_either() {
        let signed = service(json!({"selector": {"app": "x"}}));
        let sent = json!({"f:spec": {"f:selector": {}}});
        let chose = json!({"f:spec": {"f:clusterIP": {}, "f:clusterIPs": {}}});
        // The request: `kubectl replace` of the signed document, its address copied back.
        let request = allocated_service(Some(vec![sent.clone()]));
        // The client chose the address when it created the Service: laundered, refused.
        let stored = allocated_service(Some(vec![sent.clone(), chose]));
        assert_eq!(
            service_remaining(&update_of(stored), signed.clone(), request.clone()),
            ["spec.clusterIP", "spec.clusterIPs[0]"]
        );
        // The allocator chose it: tolerated.
        let stored = allocated_service(Some(vec![sent.clone()]));
        assert!(service_remaining(&update_of(stored), signed.clone(), request.clone()).is_empty());
        // A stored object without managedFields, or no oldObject at all: cannot tell.
        let stored = allocated_service(None);
        assert_eq!(
            service_remaining(&update_of(stored), signed.clone(), request.clone()).len(),
            3
        );
        let no_old = admitted(AdmissionWrite::Update { old_object: None });
        assert_eq!(
            service_remaining(&no_old, signed.clone(), request.clone()).len(),
            3
        );
        // An address the stored object did not hold (a new allocation) needs no history.
        let mut stored = allocated_service(Some(vec![sent]));
        stored["spec"] = json!({"type": "ExternalName", "externalName": "db.example"});
        assert!(service_remaining(&update_of(stored), signed, request).is_empty());
    }

    fn daemon_set(generation: &str, image: &str) -> Value {
        json!({"metadata": {"name": "x", "annotations":
                {"deprecated.daemonset.template.generation": generation}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    #[test]
    fn the_template_generation_is_the_one_the_server_writes_for_the_operation() {
        let ds = id("apps", "DaemonSet");
        let signed = json!({"metadata": {"name": "x"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "a:1"}]}}}});
        let create = admitted(AdmissionWrite::Create);
        assert!(remaining(&create, &ds, signed.clone(), daemon_set("1", "a:1")).is_empty());
        let generation = ["metadata.annotations[\"deprecated.daemonset.template.generation\"]"];
        assert_eq!(
            remaining(&create, &ds, signed.clone(), daemon_set("5", "a:1")),
            generation
        );
        // An update keeps the stored generation, plus one when the template changed.
        let stored = update_of(daemon_set("3", "a:1"));
        assert!(remaining(&stored, &ds, signed.clone(), daemon_set("3", "a:1")).is_empty());
        assert_eq!(
            remaining(&stored, &ds, signed.clone(), daemon_set("4", "a:1")),
            generation
        );
        let signed_b = json!({"metadata": {"name": "x"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "b:1"}]}}}});
        for n in ["3", "4"] {
            assert!(remaining(&stored, &ds, signed_b.clone(), daemon_set(n, "b:1")).is_empty());
        }
        assert_eq!(
            remaining(&stored, &ds, signed_b, daemon_set("5", "b:1")),
            generation
        );
        let no_old = admitted(AdmissionWrite::Update { old_object: None });
        assert_eq!(
            remaining(&no_old, &ds, signed.clone(), daemon_set("1", "a:1")),
            generation
        );
        // Read back: the history is unknown, any positive integer.
        assert!(remaining(&kube(), &ds, signed.clone(), daemon_set("7", "a:1")).is_empty());
        assert_eq!(
            remaining(&kube(), &ds, signed, daemon_set("07", "a:1")),
            generation
        );
    }

    /// A workload with `spec.replicas: replicas` whose managers are `(manager, subresource,
    /// owns replicas)`.
    fn scaled(replicas: u64, managers: &[(&str, &str, bool)]) -> Value {
        let entries: Vec<Value> = managers
            .iter()
            .map(|(manager, sub, owns)| {
                let fields = if *owns {
                    json!({"f:spec": {"f:replicas": {}}})
                } else {
                    json!({"f:spec": {"f:template": {}}})
                };
                let mut e = json!({"manager": manager, "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": fields});
                if !sub.is_empty() {
                    e["subresource"] = json!(sub);
                }
                e
            })
            .collect();
        json!({"metadata": {"name": "x", "managedFields": entries}, "spec": {"replicas": replicas}})
    }

    #[test]
    fn replicas_written_through_the_scale_subresource_or_kept_are_tolerated() {
        let signed = json!({"metadata": {"name": "x"}, "spec": {}});
        let hpa = ("kube-controller-manager", "scale", true);
        let applier = ("kubectl-client-side-apply", "", false);
        let client = ("kubectl-edit", "", true);
        for kind in ["Deployment", "StatefulSet", "ReplicaSet"] {
            let workload = id("apps", kind);
            for t in [kube(), admitted(AdmissionWrite::Create)] {
                let live = scaled(3, &[applier, hpa]);
                assert!(
                    remaining(&t, &workload, signed.clone(), live).is_empty(),
                    "{kind}"
                );
                for managers in [&[applier, client][..], &[hpa, client], &[applier]] {
                    let live = scaled(3, managers);
                    assert_eq!(
                        remaining(&t, &workload, signed.clone(), live),
                        ["spec.replicas"],
                        "{kind} {managers:?}"
                    );
                }
            }
            // Read back without managedFields: only the default.
            let bare = json!({"metadata": {"name": "x"}, "spec": {"replicas": 3}});
            assert_eq!(
                remaining(&kube(), &workload, signed.clone(), bare.clone()),
                ["spec.replicas"]
            );
            let one = json!({"metadata": {"name": "x"}, "spec": {"replicas": 1}});
            assert!(remaining(&kube(), &workload, signed.clone(), one).is_empty());
            // Kept from the stored object, where the autoscaler owned it.
            let t = update_of(scaled(3, &[applier, hpa]));
            assert!(remaining(&t, &workload, signed.clone(), bare.clone()).is_empty());
            let changed = json!({"metadata": {"name": "x"}, "spec": {"replicas": 4}});
            assert_eq!(
                remaining(&t, &workload, signed.clone(), changed),
                ["spec.replicas"]
            );
            let t = update_of(scaled(3, &[client]));
            assert_eq!(
                remaining(&t, &workload, signed.clone(), bare),
                ["spec.replicas"]
            );
        }
    }

    #[test]
    fn a_service_port_s_target_port_defaults_to_its_port_only() {
        let signed = service(json!({"ports": [{"port": 80}, {"port": 443}]}));
        let live = service(
            json!({"ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"},
            {"port": 443, "targetPort": 8443, "protocol": "TCP"}]}),
        );
        assert_eq!(
            service_remaining(&kube(), signed, live),
            ["spec.ports[1].targetPort"]
        );
    }

    #[test]
    fn workload_defaults_are_tolerated_with_their_exact_values() {
        let pod = json!({"spec": {"containers": [{"name": "c", "image": "a:1"}]}});
        // StatefulSet.
        let signed =
            json!({"metadata": {"name": "x"}, "spec": {"serviceName": "x", "template": pod}});
        let live = json!({"metadata": {"name": "x"}, "spec": {"serviceName": "x", "template": pod,
            "podManagementPolicy": "OrderedReady", "replicas": 1, "revisionHistoryLimit": 10,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}}});
        let sts = id("apps", "StatefulSet");
        assert!(remaining(&kube(), &sts, signed.clone(), live).is_empty());
        let live = json!({"metadata": {"name": "x"}, "spec": {"serviceName": "x", "template": pod,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}});
        assert_eq!(
            remaining(&kube(), &sts, signed, live),
            [
                "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
                "spec.podManagementPolicy",
                "spec.updateStrategy.rollingUpdate.partition"
            ]
        );
        // A signed `RollingUpdate` type gets no `rollingUpdate` from the server.
        let signed = json!({"metadata": {"name": "x"}, "spec": {"updateStrategy": {"type": "RollingUpdate"}}});
        let live = json!({"metadata": {"name": "x"}, "spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}});
        assert_eq!(
            remaining(&kube(), &sts, signed, live),
            ["spec.updateStrategy.rollingUpdate.partition"]
        );
        // DaemonSet.
        let ds = id("apps", "DaemonSet");
        let signed = json!({"metadata": {"name": "x"}, "spec": {"template": pod}});
        let live = json!({"metadata": {"name": "x"}, "spec": {"template": pod, "revisionHistoryLimit": 10,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}});
        assert!(remaining(&kube(), &ds, signed.clone(), live).is_empty());
        let live = json!({"metadata": {"name": "x"}, "spec": {"template": pod,
            "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}});
        assert_eq!(
            remaining(&kube(), &ds, signed, live),
            [
                "spec.updateStrategy.rollingUpdate.maxSurge",
                "spec.updateStrategy.rollingUpdate.maxUnavailable",
                "spec.updateStrategy.type"
            ]
        );
        // CronJob.
        let cj = id("batch", "CronJob");
        let signed = json!({"metadata": {"name": "x"}, "spec": {"schedule": "* * * * *"}});
        let live = json!({"metadata": {"name": "x"}, "spec": {"schedule": "* * * * *",
            "concurrencyPolicy": "Allow", "suspend": false, "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1}});
        assert!(remaining(&kube(), &cj, signed.clone(), live).is_empty());
        let live = json!({"metadata": {"name": "x"}, "spec": {"schedule": "* * * * *",
            "concurrencyPolicy": "Forbid", "suspend": true}});
        assert_eq!(
            remaining(&kube(), &cj, signed, live),
            ["spec.concurrencyPolicy", "spec.suspend"]
        );
    }

    fn job(uid: &str, labels: Value, extra: Value) -> Value {
        let mut spec = json!({"template": {"metadata": {"labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "a:1"}]}}});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({"metadata": {"name": "x", "uid": uid}, "spec": spec})
    }

    #[test]
    fn a_job_gets_its_own_uid_and_name_in_its_selector_and_labels() {
        let uid = "0b7e2a5c-1111-4222-8333-444455556666";
        let generated = json!({"app": "x", "batch.kubernetes.io/controller-uid": uid,
            "controller-uid": uid, "batch.kubernetes.io/job-name": "x", "job-name": "x"});
        let signed = {
            let mut s = job(uid, json!({"app": "x"}), json!({}));
            s["metadata"].as_object_mut().unwrap().remove("uid");
            s
        };
        let mut live = job(
            uid,
            generated.clone(),
            json!({
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "suspend": false, "manualSelector": false, "podReplacementPolicy": "TerminatingOrFailed"}),
        );
        live["metadata"]["labels"] = generated.clone();
        let j = id("batch", "Job");
        assert!(remaining(&kube(), &j, signed.clone(), live.clone()).is_empty());
        // Another Job's uid, a client's selector, a changed default: refused.
        let other = "99999999-1111-4222-8333-444455556666";
        let mut wrong = live.clone();
        wrong["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] =
            json!(other);
        wrong["spec"]["template"]["metadata"]["labels"]["controller-uid"] = json!(other);
        wrong["metadata"]["labels"]["team"] = json!("a");
        wrong["spec"]["backoffLimit"] = json!(0);
        wrong["spec"]["podReplacementPolicy"] = json!("Failed");
        assert_eq!(
            remaining(&kube(), &j, signed.clone(), wrong),
            [
                // The Job's copy of the template label no longer equals the template's.
                "metadata.labels.controller-uid",
                "metadata.labels.team",
                "spec.backoffLimit",
                "spec.podReplacementPolicy",
                "spec.selector.matchLabels[\"batch.kubernetes.io/controller-uid\"]",
                "spec.template.metadata.labels.controller-uid"
            ]
        );
        // `completions: 1` is a default only when `parallelism` was not signed either.
        let mut with_parallelism = signed.clone();
        with_parallelism["spec"]["parallelism"] = json!(1);
        assert_eq!(
            remaining(&kube(), &j, with_parallelism, live.clone()),
            ["spec.completions"]
        );
        // A signed Job with labels of its own keeps them.
        let mut labelled = signed;
        labelled["metadata"]["labels"] = json!({"team": "a"});
        let mut live_labelled = live;
        live_labelled["metadata"]["labels"] = json!({"team": "a", "app": "x"});
        assert_eq!(
            remaining(&kube(), &j, labelled, live_labelled),
            ["metadata.labels.app"]
        );
    }

    #[test]
    fn a_signed_headless_service_gets_the_families_the_server_gives_it() {
        let with_selector = service(json!({"clusterIP": "None", "selector": {"app": "x"}}));
        let live = service(json!({"clusterIP": "None", "selector": {"app": "x"},
            "clusterIPs": ["None"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}));
        assert!(service_remaining(&kube(), with_selector.clone(), live).is_empty());
        let selectorless = service(json!({"clusterIP": "None"}));
        let live = service(json!({"clusterIP": "None", "clusterIPs": ["None"],
            "ipFamilies": ["IPv6", "IPv4"], "ipFamilyPolicy": "RequireDualStack"}));
        assert!(service_remaining(&kube(), selectorless.clone(), live).is_empty());
        // The other way round is the client's choice.
        let live = service(json!({"clusterIP": "None", "selector": {"app": "x"},
            "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "RequireDualStack"}));
        assert_eq!(
            service_remaining(&kube(), with_selector, live),
            ["spec.ipFamilyPolicy"]
        );
        let live = service(json!({"clusterIP": "None", "clusterIPs": ["None"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}));
        assert_eq!(
            service_remaining(&kube(), selectorless, live),
            ["spec.ipFamilyPolicy"]
        );
    }

    #[test]
    fn an_external_name_service_gets_no_address_family_or_traffic_policy() {
        let signed = service(json!({"type": "ExternalName", "externalName": "db.example"}));
        let live = service(json!({"type": "ExternalName", "externalName": "db.example",
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"}));
        assert_eq!(
            service_remaining(&kube(), signed, live),
            [
                "spec.clusterIP",
                "spec.clusterIPs[0]",
                "spec.internalTrafficPolicy",
                "spec.ipFamilies[0]",
                "spec.ipFamilyPolicy"
            ]
        );
    }

    #[test]
    fn image_pull_policy_is_the_one_the_image_reference_gets() {
        let registry_latest = "registry.example:5000/team/app:latest";
        let digest = "0123456789abcdef".repeat(4);
        let (pinned, latest_pinned) = (
            format!("nginx@sha256:{digest}"),
            format!("nginx:latest@sha256:{digest}"),
        );
        let cases = [
            ("nginx", "Always", true),
            ("nginx", "IfNotPresent", false),
            ("nginx:latest", "Always", true),
            ("nginx:latest", "IfNotPresent", false),
            (registry_latest, "IfNotPresent", false),
            ("nginx:1.25", "IfNotPresent", true),
            ("nginx:1.25", "Always", false),
            ("nginx:1.25", "Never", false),
            (&pinned, "IfNotPresent", true),
            (&latest_pinned, "IfNotPresent", false),
            ("localhost:5000/app", "Always", true),
            ("Nginx:1.25", "IfNotPresent", false),
            ("nginx:", "IfNotPresent", false),
        ];
        for (image, policy, tolerated) in cases {
            let signed = json!({"spec": {"containers": [{"name": "c", "image": image}]}});
            let live = json!({"spec": {"containers": [
                {"name": "c", "image": image, "imagePullPolicy": policy}]}});
            let left = remaining(&kube(), &id("", "Pod"), signed, live);
            assert_eq!(left.is_empty(), tolerated, "{image} {policy}: {left:?}");
        }
    }

    #[test]
    fn rolling_update_defaults_only_under_rolling_update_and_counters_are_integers() {
        let signed = json!({"metadata": {"name": "x"}, "spec": {"strategy": {"type": "Recreate"}}});
        let live = json!({"metadata": {"name": "x", "annotations":
                {"deployment.kubernetes.io/revision": "-1"}},
            "spec": {"strategy": {"type": "Recreate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}});
        assert_eq!(
            remaining(&kube(), &id("apps", "Deployment"), signed, live),
            [
                "metadata.annotations[\"deployment.kubernetes.io/revision\"]",
                "spec.strategy.rollingUpdate.maxSurge",
                "spec.strategy.rollingUpdate.maxUnavailable"
            ]
        );
        let signed = json!({"metadata": {"name": "x"}});
        let live = json!({"metadata": {"name": "x", "annotations":
            {"deprecated.daemonset.template.generation": "3"}}});
        assert!(remaining(&kube(), &id("apps", "DaemonSet"), signed, live).is_empty());
    }

    #[test]
    fn a_namespace_gets_its_name_label_and_the_kubernetes_finalizer_only() {
        let signed = json!({"metadata": {"name": "team-a"}});
        let live = json!({"metadata": {"name": "team-a",
                "labels": {"kubernetes.io/metadata.name": "team-a"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        assert!(remaining(&kube(), &id("", "Namespace"), signed.clone(), live).is_empty());
        let live = json!({"metadata": {"name": "team-a",
                "labels": {"kubernetes.io/metadata.name": "team-b"}},
            "spec": {"finalizers": ["example.com/hold"]}});
        assert_eq!(
            remaining(&kube(), &id("", "Namespace"), signed, live),
            [
                "metadata.labels[\"kubernetes.io/metadata.name\"]",
                "spec.finalizers[0]"
            ]
        );
        let signed = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": ["x.io/a"]}});
        let live = json!({"metadata": {"name": "team-a"},
            "spec": {"finalizers": ["x.io/a", "kubernetes"]}});
        assert!(remaining(&kube(), &id("", "Namespace"), signed, live).is_empty());
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
        assert!(service_remaining(&kube(), signed.clone(), ok).is_empty());
        let bad =
            json!({"spec": {"ports": [{"port": 80, "protocol": "UDP"}], "type": "LoadBalancer"}});
        assert_eq!(
            service_remaining(&kube(), signed, bad),
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
            service_remaining(&kube(), signed, actual),
            ["spec.clusterIP", "spec.type"]
        );
    }

    #[test]
    fn server_set_lists_signed_with_a_value_take_no_additions() {
        let signed = json!({"spec": {"clusterIPs": ["10.0.0.1"], "ipFamilies": ["IPv4"]}});
        let actual = json!({"spec": {"clusterIPs": ["10.0.0.1", "fd00::1"], "ipFamilies": ["IPv4", "IPv6"]}});
        assert_eq!(
            service_remaining(&kube(), signed, actual),
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
        let cm = id("", "ConfigMap");
        let in_namespace = |ns: &str| json!({"metadata": {"name": "x", "namespace": ns}});
        let signed = json!({"metadata": {"name": "x"}});
        assert!(remaining(&t, &cm, signed.clone(), in_namespace("team-a")).is_empty());
        assert_eq!(
            remaining(&t, &cm, signed, in_namespace("team-b")),
            ["metadata.namespace"]
        );
        // a signed namespace is never rebound
        assert_eq!(
            remaining(&t, &cm, in_namespace("team-b"), in_namespace("team-a")),
            ["metadata.namespace"]
        );
    }
}
