//! Writes through the `status` subresource: what the API server keeps from such a request.
//!
//! A `status` write is not "status only". Each kind's status strategy (`PrepareForUpdate`
//! of its `*StatusStrategy`) copies some fields from the stored object and keeps the rest
//! of the request: a `pods/status` write keeps the request's labels, annotations and
//! finalizers, so a relabelled Pod joins other Services and NetworkPolicies; a
//! `deployments/status` write keeps annotations, finalizers and owner references. The
//! API server runs `PrepareForUpdate` before validating admission (k8s.io/apiserver
//! v0.34.4 `pkg/registry/generic/registry/store.go`, `Update`: `rest.BeforeUpdate` before
//! `updateValidation`), so `request.object` is the object as it will be stored: the fields
//! the strategy resets hold the stored values (admitted by an earlier write), and every
//! other field is the request's.
//!
//! [`STRATEGIES`] lists, per built-in kind, which fields come from the stored object. A
//! status write is then verified like any write, with those fields (and `status`, which
//! the request proves is a subresource of the kind) not compared; everything else the
//! request sends must still match the signed document. A kind not in the table keeps
//! everything the request sends (only `status` is a subresource): nothing is assumed.
//! Custom resources are such kinds: their status strategy keeps only `status`
//! (k8s.io/apiextensions-apiserver v0.34.4 `pkg/registry/customresource/status_strategy.go`),
//! but mansign cannot tell a custom resource from a kind an aggregated API server serves
//! with its own rules, so it verifies their metadata too.
//!
//! Sources: k8s.io/kubernetes v1.34.4 `pkg/registry/<group>/<kind>/strategy.go` (named per
//! entry), `metav1.ResetObjectMetaForStatus` (k8s.io/apimachinery v0.34.4
//! `pkg/apis/meta/v1/helpers.go`: labels, annotations, finalizers, owner references,
//! deletion timestamp, generation, selfLink from the stored object), and `rest.BeforeUpdate`
//! (k8s.io/apiserver v0.34.4 `pkg/registry/rest/update.go`: generation, uid,
//! creationTimestamp and deletion fields from the stored object for every update).

use crate::manifest::{FieldPattern, IgnoreFields};

/// What a kind's status strategy takes from the stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromStored {
    /// These fields (patterns, every difference at or below them); the rest is the
    /// request's.
    Fields(&'static [&'static str]),
    /// Everything but `status` (and server-owned metadata): the write changes no signed
    /// content.
    AllButStatus,
}

/// One built-in kind's status strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusStrategy {
    pub group: &'static str,
    pub kind: &'static str,
    pub from_stored: FromStored,
    /// The upstream file whose `PrepareForUpdate` this entry reads.
    pub source: &'static str,
}

const SPEC: FromStored = FromStored::Fields(&["spec"]);

/// `PrepareForUpdate` of the status strategies of k8s.io/kubernetes v1.34.4 (and of the
/// CRD and APIService registries it serves). `metav1.ResetObjectMetaForStatus` plus `Spec =
/// old.Spec` leaves the request nothing signed: [`FromStored::AllButStatus`].
pub const STRATEGIES: &[StatusStrategy] = &[
    StatusStrategy {
        group: "",
        kind: "Pod",
        // `Spec`, `OwnerReferences` (old kubelets corrupt them) and `DeletionTimestamp`
        // from the stored Pod; labels, annotations and finalizers from the request.
        from_stored: FromStored::Fields(&[
            "spec",
            "metadata.ownerReferences",
            "metadata.deletionTimestamp",
        ]),
        source: "pkg/registry/core/pod/strategy.go podStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "Service",
        from_stored: SPEC,
        source: "pkg/registry/core/service/strategy.go serviceStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "Namespace",
        from_stored: SPEC,
        source: "pkg/registry/core/namespace/strategy.go namespaceStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "Node",
        from_stored: SPEC,
        source: "pkg/registry/core/node/strategy.go nodeStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "PersistentVolume",
        from_stored: SPEC,
        source: "pkg/registry/core/persistentvolume/strategy.go persistentvolumeStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "PersistentVolumeClaim",
        from_stored: SPEC,
        source: "pkg/registry/core/persistentvolumeclaim/strategy.go \
                 persistentvolumeclaimStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "ReplicationController",
        from_stored: SPEC,
        source: "pkg/registry/core/replicationcontroller/strategy.go rcStatusStrategy",
    },
    StatusStrategy {
        group: "",
        kind: "ResourceQuota",
        from_stored: SPEC,
        source: "pkg/registry/core/resourcequota/strategy.go resourcequotaStatusStrategy",
    },
    StatusStrategy {
        group: "apps",
        kind: "Deployment",
        // `Spec` and `Labels` from the stored Deployment; annotations, finalizers and
        // owner references from the request.
        from_stored: FromStored::Fields(&["spec", "metadata.labels"]),
        source: "pkg/registry/apps/deployment/strategy.go deploymentStatusStrategy",
    },
    StatusStrategy {
        group: "apps",
        kind: "StatefulSet",
        from_stored: SPEC,
        source: "pkg/registry/apps/statefulset/strategy.go statefulSetStatusStrategy",
    },
    StatusStrategy {
        group: "apps",
        kind: "DaemonSet",
        from_stored: SPEC,
        source: "pkg/registry/apps/daemonset/strategy.go daemonSetStatusStrategy",
    },
    StatusStrategy {
        group: "apps",
        kind: "ReplicaSet",
        from_stored: SPEC,
        source: "pkg/registry/apps/replicaset/strategy.go rsStatusStrategy",
    },
    StatusStrategy {
        group: "batch",
        kind: "Job",
        from_stored: SPEC,
        source: "pkg/registry/batch/job/strategy.go jobStatusStrategy",
    },
    StatusStrategy {
        group: "batch",
        kind: "CronJob",
        from_stored: SPEC,
        source: "pkg/registry/batch/cronjob/strategy.go cronJobStatusStrategy",
    },
    StatusStrategy {
        group: "autoscaling",
        kind: "HorizontalPodAutoscaler",
        from_stored: SPEC,
        source: "pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go \
                 autoscalerStatusStrategy",
    },
    StatusStrategy {
        group: "policy",
        kind: "PodDisruptionBudget",
        from_stored: SPEC,
        source: "pkg/registry/policy/poddisruptionbudget/strategy.go \
                 podDisruptionBudgetStatusStrategy",
    },
    StatusStrategy {
        group: "networking.k8s.io",
        kind: "Ingress",
        from_stored: SPEC,
        source: "pkg/registry/networking/ingress/strategy.go ingressStatusStrategy",
    },
    StatusStrategy {
        group: "networking.k8s.io",
        kind: "ServiceCIDR",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/networking/servicecidr/strategy.go serviceCIDRStatusStrategy",
    },
    StatusStrategy {
        group: "certificates.k8s.io",
        kind: "CertificateSigningRequest",
        // `Spec` only (Approved/Denied conditions are status).
        from_stored: SPEC,
        source: "pkg/registry/certificates/certificates/strategy.go csrStatusStrategy",
    },
    StatusStrategy {
        group: "certificates.k8s.io",
        kind: "PodCertificateRequest",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/certificates/podcertificaterequest/strategy.go StatusStrategy",
    },
    StatusStrategy {
        group: "admissionregistration.k8s.io",
        kind: "ValidatingAdmissionPolicy",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go \
                 validatingAdmissionPolicyStatusStrategy",
    },
    StatusStrategy {
        group: "flowcontrol.apiserver.k8s.io",
        kind: "FlowSchema",
        // The whole `ObjectMeta` (but managedFields) and `Spec` from the stored object.
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/flowcontrol/flowschema/strategy.go flowSchemaStatusStrategy",
    },
    StatusStrategy {
        group: "flowcontrol.apiserver.k8s.io",
        kind: "PriorityLevelConfiguration",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go \
                 priorityLevelConfigurationStatusStrategy",
    },
    StatusStrategy {
        group: "storage.k8s.io",
        kind: "VolumeAttachment",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/storage/volumeattachment/strategy.go \
                 volumeAttachmentStatusStrategy",
    },
    StatusStrategy {
        group: "resource.k8s.io",
        kind: "ResourceClaim",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/resource/resourceclaim/strategy.go resourceclaimStatusStrategy",
    },
    StatusStrategy {
        group: "storagemigration.k8s.io",
        kind: "StorageVersionMigration",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/storagemigration/storagemigration/strategy.go statusStrategy",
    },
    StatusStrategy {
        group: "internal.apiserver.k8s.io",
        kind: "StorageVersion",
        from_stored: FromStored::AllButStatus,
        source: "pkg/registry/apiserverinternal/storageversion/strategy.go \
                 storageVersionStatusStrategy",
    },
    StatusStrategy {
        group: "apiextensions.k8s.io",
        kind: "CustomResourceDefinition",
        // `Spec` only: its `ResetObjectMetaForStatus(&newObj.ObjectMeta,
        // &newObj.ObjectMeta)` passes the new object twice, so the request's metadata is
        // kept.
        from_stored: SPEC,
        source: "k8s.io/apiextensions-apiserver v0.34.4 \
                 pkg/registry/customresourcedefinition/strategy.go statusStrategy",
    },
    StatusStrategy {
        group: "apiregistration.k8s.io",
        kind: "APIService",
        // Spec, labels, annotations, finalizers and owner references from the stored
        // object: nothing signed is the request's.
        from_stored: FromStored::AllButStatus,
        source: "k8s.io/kube-aggregator v0.34.4 pkg/registry/apiservice/strategy.go \
                 apiServerStatusStrategy",
    },
];

/// The status strategy of a built-in kind; `None` for any other kind (which then keeps
/// everything the request sends).
pub fn strategy_of(group: &str, kind: &str) -> Option<&'static StatusStrategy> {
    STRATEGIES
        .iter()
        .find(|s| s.group == group && s.kind == kind)
}

/// What a `status` write of kind `group`/`kind` leaves unverified: `None` when it changes
/// no signed content (the write is allowed unverified), otherwise the fields that are not
/// the request's plus `status` (the request proves it is a subresource of the kind).
pub fn unverified_fields(group: &str, kind: &str) -> Option<IgnoreFields> {
    let from_stored: &[&str] = match strategy_of(group, kind).map(|s| s.from_stored) {
        Some(FromStored::AllButStatus) => return None,
        Some(FromStored::Fields(fields)) => fields,
        None => &[],
    };
    let patterns = from_stored
        .iter()
        .chain(&["status"])
        .filter_map(|f| FieldPattern::parse(f).ok())
        .collect();
    Some(IgnoreFields(patterns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Step;

    #[test]
    fn every_pattern_parses_and_every_kind_is_listed_once() {
        for s in STRATEGIES {
            if let FromStored::Fields(fields) = s.from_stored {
                for f in fields {
                    assert!(FieldPattern::parse(f).is_ok(), "{f}");
                }
            }
            let same = STRATEGIES
                .iter()
                .filter(|o| o.group == s.group && o.kind == s.kind)
                .count();
            assert_eq!(same, 1, "{}/{}", s.group, s.kind);
        }
    }

    #[test]
    fn the_table_covers_every_builtin_status_subresource_kind() {
        // The kubernetes profile's list of kinds with a status subresource and this table
        // read the same API server.
        for s in STRATEGIES {
            assert!(
                crate::manifest::has_status_subresource(s.group, s.kind),
                "{}/{}",
                s.group,
                s.kind
            );
        }
    }

    #[test]
    fn pod_and_deployment_keep_their_metadata_from_the_request() {
        let pod = unverified_fields("", "Pod").unwrap();
        let ignored = |fields: &IgnoreFields, t: &str| {
            let steps: Vec<Step<'_>> = t.split('.').map(Step::Key).collect();
            fields.ignores(&steps)
        };
        assert!(ignored(&pod, "spec.containers"));
        assert!(ignored(&pod, "metadata.ownerReferences"));
        assert!(!ignored(&pod, "metadata.labels.app"));
        assert!(!ignored(&pod, "metadata.annotations.x"));
        assert!(!ignored(&pod, "metadata.finalizers"));
        let deployment = unverified_fields("apps", "Deployment").unwrap();
        assert!(ignored(&deployment, "metadata.labels.app"));
        assert!(!ignored(&deployment, "metadata.annotations.x"));
        assert!(!ignored(&deployment, "metadata.ownerReferences"));
        // Unknown kinds keep everything but status.
        let unknown = unverified_fields("example.com", "Widget").unwrap();
        assert!(ignored(&unknown, "status.phase"));
        assert!(!ignored(&unknown, "spec.size"));
        assert!(unverified_fields("flowcontrol.apiserver.k8s.io", "FlowSchema").is_none());
    }
}
