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
//!
//! **Bindings** ([`GitopsBindings`]) restrict the values. The keys say which application or
//! Kustomization owns the object: a free value lets another Argo CD application adopt (and
//! prune) it, hides it from its Argo CD instance, or lets it survive its removal from git
//! (Flux prunes by these labels); and a label is a selector input, so a relabelled Pod or
//! Namespace joins Services, NetworkPolicies and namespace selectors. With a binding list
//! set, an added key is tolerated only with a listed value (exact string equality), the
//! instance label and the tracking id's application must name the same application when
//! both are added, and the two Flux labels must together name one listed Kustomization.
//!
//! **Without a binding no added label is tolerated, on any kind**, and no installation id:
//! only the tracking id, which names the object itself. Labels are selector inputs on far
//! more kinds than Pods and Namespaces: ClusterRole aggregation (`aggregationRule`
//! selects ClusterRoles by label), Kyverno `selector`s in `match`/`exclude` and in
//! PolicyException `match`, webhook `objectSelector`s, `nodeSelector`s, Service and
//! NetworkPolicy selectors; an unbound label value is chosen by whoever applies the object.
//! The CLI flags `--argocd-application`, `--argocd-installation-id` and
//! `--flux-kustomization` (policy `spec.gitops`) bind them.

use super::diff::{DiffKind, Difference, Step};
use crate::manifest::document::ObjectIdentity;
use serde_json::Value;
use std::fmt;

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

/// The values the GitOps profiles accept, when bound (see the module docs). An empty list
/// leaves that key unbound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitopsBindings {
    /// Argo CD application names as Argo CD writes them in the instance label and the
    /// tracking id (`<namespace>_<name>` for applications outside Argo CD's namespace).
    pub argocd_applications: Vec<String>,
    /// Argo CD installation ids (`installationID` in `argocd-cm`).
    pub argocd_installation_ids: Vec<String>,
    /// Flux Kustomizations that may own the object.
    pub flux_kustomizations: Vec<FluxKustomization>,
}

impl GitopsBindings {
    /// True if no value is bound.
    pub fn is_empty(&self) -> bool {
        self.argocd_applications.is_empty()
            && self.argocd_installation_ids.is_empty()
            && self.flux_kustomizations.is_empty()
    }
}

/// A GitOps binding's name that cannot be one: a Flux Kustomization, an Argo CD application
/// or installation id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GitopsNameError {
    #[error("Flux Kustomization {text:?} must be written namespace/name")]
    FluxWithoutNamespace { text: String },
    #[error("Flux Kustomization {text:?}: namespace {namespace:?} is not a namespace name")]
    FluxNamespace { text: String, namespace: String },
    #[error("Flux Kustomization {text:?}: name {name:?} is not an object name")]
    FluxName { text: String, name: String },
    #[error("Argo CD application name {name:?} must be non-empty, without `:` or spaces")]
    ArgocdApplication { name: String },
    #[error("Argo CD installation id {id:?} must be non-empty, without spaces")]
    ArgocdInstallationId { id: String },
}

/// A Flux Kustomization, written `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FluxKustomization {
    pub namespace: String,
    pub name: String,
}

impl FluxKustomization {
    /// Parses `namespace/name`: a namespace name (DNS-1123 label) and a Kustomization
    /// name (DNS-1123 subdomain), which is what Flux writes into its two labels.
    pub fn parse(text: &str) -> Result<Self, GitopsNameError> {
        let Some((namespace, name)) = text.split_once('/') else {
            return Err(GitopsNameError::FluxWithoutNamespace { text: text.into() });
        };
        if !is_dns1123_label(namespace) {
            return Err(GitopsNameError::FluxNamespace {
                text: text.into(),
                namespace: namespace.into(),
            });
        }
        if !is_dns1123_subdomain(name) {
            return Err(GitopsNameError::FluxName {
                text: text.into(),
                name: name.into(),
            });
        }
        Ok(FluxKustomization {
            namespace: namespace.into(),
            name: name.into(),
        })
    }
}

impl std::str::FromStr for FluxKustomization {
    type Err = GitopsNameError;
    fn from_str(s: &str) -> Result<Self, GitopsNameError> {
        FluxKustomization::parse(s)
    }
}

impl fmt::Display for FluxKustomization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Checks an Argo CD application name for a binding: non-empty, no `:` (Argo CD splits the
/// tracking id at the first `:`), no whitespace.
pub fn check_argocd_application(name: &str) -> Result<(), GitopsNameError> {
    if name.is_empty() || name.contains(':') || name.chars().any(char::is_whitespace) {
        return Err(GitopsNameError::ArgocdApplication { name: name.into() });
    }
    Ok(())
}

/// Checks an Argo CD installation id for a binding: non-empty, no whitespace.
pub fn check_argocd_installation_id(id: &str) -> Result<(), GitopsNameError> {
    if id.is_empty() || id.chars().any(char::is_whitespace) {
        return Err(GitopsNameError::ArgocdInstallationId { id: id.into() });
    }
    Ok(())
}

/// The string value of a key the live object adds: on `object`, absent from `signed`.
fn added_value<'a>(signed: &Value, object: &'a Value, map: &str, key: &str) -> Option<&'a str> {
    let at = |v: &Value| v.get("metadata")?.get(map)?.get(key).cloned();
    if at(signed).is_some() {
        return None;
    }
    object.get("metadata")?.get(map)?.get(key)?.as_str()
}

/// The string value of a label on `object`.
fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.get("metadata")?.get("labels")?.get(key)?.as_str()
}

/// True if instance label value `label` names application `app`: the name itself, or, for
/// a name longer than a label value may be (63), its first 63 characters without trailing
/// `-`, `.`, `_` — what Argo CD writes in `annotation+label` tracking, where the label is
/// informational ("Resource Tracking": "the value is still truncated if longer than 63
/// characters").
fn label_names_app(label: &str, app: &str) -> bool {
    label == app
        || (app.len() > LABEL_VALUE_MAX
            && app
                .get(..LABEL_VALUE_MAX)
                .is_some_and(|cut| cut.trim_end_matches(['-', '.', '_']) == label))
}

/// The longest label value Kubernetes accepts.
const LABEL_VALUE_MAX: usize = 63;

/// The application a tracking id names (the part before the first `:`).
fn tracking_app(value: &str) -> Option<&str> {
    value.split_once(':').map(|(app, _)| app)
}

/// True if the `argocd` profile accepts difference `d` of object `id` (signed document
/// `signed`, live object `object`) under `bindings`.
pub(super) fn argocd_tolerates(
    id: &ObjectIdentity,
    signed: &Value,
    object: &Value,
    d: &Difference<'_>,
    bindings: &GitopsBindings,
) -> bool {
    let apps = &bindings.argocd_applications;
    let value = d.actual.and_then(Value::as_str);
    match added_metadata_key(d) {
        Some(("labels", ARGOCD_INSTANCE_LABEL)) => {
            // Unbound: a label whose value nobody chose (see the module docs).
            let Some(app) = value.filter(|_| !apps.is_empty()) else {
                return false;
            };
            // One object, one application: an added tracking id must name the same one.
            let tracking =
                added_value(signed, object, "annotations", ARGOCD_TRACKING_ID_ANNOTATION);
            apps.iter().any(|a| label_names_app(app, a))
                && tracking.is_none_or(|t| tracking_app(t).is_some_and(|t| label_names_app(app, t)))
        }
        Some(("annotations", ARGOCD_INSTALLATION_ID_ANNOTATION)) => {
            let ids = &bindings.argocd_installation_ids;
            value.is_some_and(|v| ids.iter().any(|i| i == v))
        }
        Some(("annotations", ARGOCD_TRACKING_ID_ANNOTATION)) => {
            let Some(value) = value.filter(|v| tracking_id_names(v, id)) else {
                return false;
            };
            if apps.is_empty() {
                return true;
            }
            let app = tracking_app(value);
            let instance = added_value(signed, object, "labels", ARGOCD_INSTANCE_LABEL);
            app.is_some_and(|app| apps.iter().any(|a| a == app))
                && instance.is_none_or(|i| app.is_some_and(|app| label_names_app(i, app)))
        }
        _ => false,
    }
}

/// True if the `flux` profile accepts difference `d` of live object `object` under
/// `bindings`.
pub(super) fn flux_tolerates(
    object: &Value,
    d: &Difference<'_>,
    bindings: &GitopsBindings,
) -> bool {
    if !matches!(added_metadata_key(d), Some(("labels", key)) if FLUX_LABELS.contains(&key)) {
        return false;
    }
    // Unbound: no Kustomization is listed, so none is accepted.
    let bound = &bindings.flux_kustomizations;
    // Flux writes both labels: together they name the owner, and one alone names none.
    let [name_label, namespace_label] = FLUX_LABELS;
    match (label(object, name_label), label(object, namespace_label)) {
        (Some(name), Some(namespace)) => bound
            .iter()
            .any(|k| k.name == name && k.namespace == namespace),
        _ => false,
    }
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

/// An object name: 1-253 of `[a-z0-9.-]`, starting and ending alphanumeric.
fn is_dns1123_subdomain(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.len() <= 253
        && s.starts_with(alnum)
        && s.ends_with(alnum)
        && s.chars().all(|c| alnum(c) || c == '-' || c == '.')
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
    fn flux_kustomizations_parse_as_namespace_slash_name() {
        let k = FluxKustomization::parse("flux-system/apps.prod").unwrap();
        assert_eq!(
            (k.namespace.as_str(), k.name.as_str()),
            ("flux-system", "apps.prod")
        );
        assert_eq!(k.to_string(), "flux-system/apps.prod");
        for bad in [
            "apps",
            "/apps",
            "flux-system/",
            "flux-system/apps/x",
            "Flux/apps",
            "flux-system/Apps",
            "flux_system/apps",
            "flux-system/*",
            " flux-system/apps",
        ] {
            assert!(FluxKustomization::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn argocd_binding_values_are_checked() {
        assert!(check_argocd_application("shop").is_ok());
        assert!(check_argocd_application("team_shop").is_ok());
        for bad in ["", "a:b", "a b", "shop\n"] {
            assert!(check_argocd_application(bad).is_err(), "{bad:?}");
        }
        assert!(check_argocd_installation_id("prod-argocd").is_ok());
        for bad in ["", "a b", "\t"] {
            assert!(check_argocd_installation_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_instance_label_names_an_application_or_its_63_character_cut() {
        let long = format!("{}-tail", "a".repeat(62));
        assert!(label_names_app("shop", "shop"));
        assert!(label_names_app(&"a".repeat(62), &long)); // cut at 63, trailing `-` dropped
        assert!(!label_names_app("shop", "shop-2"));
        assert!(!label_names_app("sho", "shop"));
        assert!(!label_names_app(&"a".repeat(10), &long));
        assert!(!label_names_app("x", &"é".repeat(40))); // no panic inside a character
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
