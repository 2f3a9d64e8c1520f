//! What GitOps tools write onto the objects they apply: the `argocd` and `flux` profiles.
//!
//! Each key below is tolerated only when it is on the object and **not** in the signed
//! document (a signed key is compared as usual), and only at its exact place
//! (`metadata.labels[...]` / `metadata.annotations[...]`): nothing below it, nothing beside
//! it. These keys drive which tool owns an object (pruning, the UI); none changes what the
//! API server stores in the object's spec, so tolerating them cannot smuggle a change in.
//!
//! * `argocd` (Argo CD "Resource Tracking", user-guide/resource_tracking.md):
//!   - label `app.kubernetes.io/instance` (label tracking, the default before 3.0, and the
//!     informational label of `annotation+label` tracking);
//!   - annotation `argocd.argoproj.io/installation-id` (set when several Argo CD instances
//!     share a cluster);
//!   - annotation `argocd.argoproj.io/tracking-id` (annotation tracking, the default since
//!     3.0), only when its value `<app>:<group>/<kind>:<namespace>/<name>`
//!     (argo-cd `util/argo/resource_tracking.go`, `BuildAppInstanceValue`) names this very
//!     object. A tracking id copied from another object makes Argo CD treat the two as one
//!     (argo-cd `isSelfReferencedObj`), so it is a difference.
//! * `flux` (Flux kustomize-controller, "Kustomization" docs, garbage collection): labels
//!   `kustomize.toolkit.fluxcd.io/name` and `kustomize.toolkit.fluxcd.io/namespace`.

use super::diff::{DiffKind, Difference, Step};
use super::document::ObjectIdentity;
use serde_json::Value;

/// Argo CD's instance label (label tracking).
pub const ARGOCD_INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Argo CD's installation id, set when `installationID` is configured.
pub const ARGOCD_INSTALLATION_ID_ANNOTATION: &str = "argocd.argoproj.io/installation-id";
/// Argo CD's tracking id (annotation tracking).
pub const ARGOCD_TRACKING_ID_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";
/// Flux kustomize-controller's ownership labels.
pub const FLUX_LABELS: [&str; 2] = [
    "kustomize.toolkit.fluxcd.io/name",
    "kustomize.toolkit.fluxcd.io/namespace",
];

/// The metadata key an added difference sits at: `(labels|annotations, key)`, or `None`
/// when `d` is anything but a key added directly under `metadata.labels` or
/// `metadata.annotations`.
fn added_metadata_key<'a>(d: &Difference<'a>) -> Option<(&'a str, &'a str)> {
    if d.kind != DiffKind::Added {
        return None;
    }
    match d.path {
        [
            Step::Key("metadata"),
            Step::Key(map @ ("labels" | "annotations")),
            Step::Key(key),
        ] => Some((map, key)),
        _ => None,
    }
}

/// True if the `argocd` profile accepts difference `d` of object `id`.
pub(super) fn argocd_tolerates(id: &ObjectIdentity, d: &Difference<'_>) -> bool {
    match added_metadata_key(d) {
        Some(("labels", ARGOCD_INSTANCE_LABEL)) => true,
        Some(("annotations", ARGOCD_INSTALLATION_ID_ANNOTATION)) => true,
        Some(("annotations", ARGOCD_TRACKING_ID_ANNOTATION)) => d
            .actual
            .and_then(Value::as_str)
            .is_some_and(|value| tracking_id_names(value, id)),
        _ => false,
    }
}

/// True if the `flux` profile accepts difference `d`.
pub(super) fn flux_tolerates(d: &Difference<'_>) -> bool {
    matches!(added_metadata_key(d), Some(("labels", key)) if FLUX_LABELS.contains(&key))
}

/// True if `value` is `<app>:<group>/<kind>:<namespace>/<name>` for this object: any
/// non-empty application name without `:` (Argo CD splits at the first `:`), and exactly
/// the object's group (empty for the core group), kind, namespace and name.
///
/// A cluster-scoped object has no namespace; Argo CD writes the Application's destination
/// namespace there (empty when it has none) and ignores it when matching, because the kind
/// and name alone name a cluster-scoped object (argo-cd `UnstructuredToAppInstanceValue`,
/// `isSelfReferencedObj`). So for an object without a namespace the namespace part may be
/// empty or a namespace name (a DNS-1123 label), and nothing else.
pub fn tracking_id_names(value: &str, id: &ObjectIdentity) -> bool {
    let Some((app, rest)) = value.split_once(':') else {
        return false;
    };
    let Some((group_kind, namespace_name)) = rest.split_once(':') else {
        return false;
    };
    let Some((namespace, name)) = namespace_name.split_once('/') else {
        return false;
    };
    let namespace_ok = match &id.namespace {
        Some(ns) => namespace == ns,
        None => namespace.is_empty() || is_dns1123_label(namespace),
    };
    !app.is_empty()
        && group_kind == format!("{}/{}", id.group, id.kind)
        && namespace_ok
        && name == id.name
}

/// A namespace name: 1-63 of `[a-z0-9-]`, starting and ending alphanumeric.
fn is_dns1123_label(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.len() <= 63
        && s.starts_with(alnum)
        && s.ends_with(alnum)
        && s.chars().all(|c| alnum(c) || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> ObjectIdentity {
        ObjectIdentity {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: namespace.map(Into::into),
            name: name.into(),
        }
    }

    #[test]
    fn tracking_id_must_name_the_object_itself() {
        let deploy = id("apps", "Deployment", Some("team"), "web");
        assert!(tracking_id_names("app:apps/Deployment:team/web", &deploy));
        assert!(tracking_id_names(
            "team_app:apps/Deployment:team/web",
            &deploy
        ));
        for other in [
            "app:apps/Deployment:team/api",       // other name
            "app:apps/Deployment:other/web",      // other namespace
            "app:apps/StatefulSet:team/web",      // other kind
            "app:extensions/Deployment:team/web", // other group
            "app:/Deployment:team/web",           // core group instead of apps
            "app:apps/Deployment:/web",           // no namespace on a namespaced object
            ":apps/Deployment:team/web",          // no application
            "app:apps/Deployment:team/web/x",     // trailing path
            "app:apps/Deployment:team/web:x",     // trailing colon part
            "app:apps/Deployment/team/web",       // wrong separators
            "app:apps:Deployment:team/web",
            "app",
            "",
        ] {
            assert!(!tracking_id_names(other, &deploy), "{other}");
        }
    }

    #[test]
    fn core_group_is_empty_in_a_tracking_id() {
        let cm = id("", "ConfigMap", Some("team"), "cfg");
        assert!(tracking_id_names("app:/ConfigMap:team/cfg", &cm));
        assert!(!tracking_id_names("app:core/ConfigMap:team/cfg", &cm));
        assert!(!tracking_id_names("app:v1/ConfigMap:team/cfg", &cm));
    }

    #[test]
    fn cluster_scoped_objects_take_an_empty_or_destination_namespace() {
        let ns = id("", "Namespace", None, "team");
        assert!(tracking_id_names("app:/Namespace:/team", &ns));
        assert!(tracking_id_names("app:/Namespace:argocd-dest/team", &ns));
        for bad in [
            "app:/Namespace:Not_A_Namespace/team",
            "app:/Namespace:-x/team",
            "app:/Namespace:/other",
        ] {
            assert!(!tracking_id_names(bad, &ns), "{bad}");
        }
    }
}
