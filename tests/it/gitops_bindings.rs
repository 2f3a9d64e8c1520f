//! GitOps bindings (review findings G1, G2): the `argocd` and `flux` profiles accept their
//! tracking keys only with the bound values — Argo CD applications and installation ids,
//! Flux Kustomizations — through `mansign verify` flags and through a `ManifestPolicy`'s
//! `spec.gitops` with `mansign admission review`; and without a binding, never the labels
//! on a Pod or a Namespace (objects selected by their own labels).

use crate::common;

use common::{mansign, write};
use mansign::manifest::to_yaml;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const INSTANCE: &str = "app.kubernetes.io/instance";
const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
const INSTALLATION_ID: &str = "argocd.argoproj.io/installation-id";
const FLUX_NAME: &str = "kustomize.toolkit.fluxcd.io/name";
const FLUX_NAMESPACE: &str = "kustomize.toolkit.fluxcd.io/namespace";

const MANIFESTS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: team
data:
  a: "1"
---
apiVersion: v1
kind: Pod
metadata:
  name: debug
  namespace: team
spec:
  containers:
  - name: c
    image: busybox:1.36
---
apiVersion: v1
kind: Namespace
metadata:
  name: team
"#;

struct Signed {
    dir: common::KeyDir,
    pubkey: PathBuf,
    config_map: Value,
    pod: Value,
    namespace: Value,
}

fn sign() -> Signed {
    let (kd, docs) = common::signed_stream("release", MANIFESTS);
    let mut docs = docs.into_iter();
    Signed {
        config_map: docs.next().unwrap(),
        pod: docs.next().unwrap(),
        namespace: docs.next().unwrap(),
        pubkey: kd.pubkey.clone(),
        dir: kd,
    }
}

/// `signed` with `labels` and `annotations` added.
fn with(signed: &Value, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Value {
    let mut v = signed.clone();
    for (map, pairs) in [("labels", labels), ("annotations", annotations)] {
        for (k, val) in pairs {
            let m = v["metadata"]
                .as_object_mut()
                .unwrap()
                .entry(map)
                .or_insert_with(|| json!({}));
            m[*k] = json!(val);
        }
    }
    v
}

/// `signed` as Argo CD deploys it for application `shop` of installation `prod` (instance
/// label, tracking id and installation id).
fn bound_argo(signed: &Value) -> Value {
    with(
        signed,
        &[(INSTANCE, "shop")],
        &[
            (TRACKING_ID, &tracking("shop", signed)),
            (INSTALLATION_ID, "prod"),
        ],
    )
}

/// `<app>:/<kind>:<namespace>/<name>` for a core-group object.
fn tracking(app: &str, v: &Value) -> String {
    format!(
        "{app}:/{}:{}/{}",
        v["kind"].as_str().unwrap(),
        v["metadata"]["namespace"].as_str().unwrap_or(""),
        v["metadata"]["name"].as_str().unwrap()
    )
}

/// `mansign verify` of `object` with `args`: exit code, stdout, stderr.
fn verify(s: &Signed, object: &Value, args: &[&str]) -> (i32, String, String) {
    let file = write(s.dir.path(), "live.yaml", &to_yaml(object));
    let out = common::with_key("verify", &[], &file, &s.pubkey)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_verifies(s: &Signed, object: &Value, args: &[&str], what: &str) {
    let (code, out, err) = verify(s, object, args);
    assert_eq!(code, 0, "{what}: {out}{err}");
}

/// Exit 1 naming the key that differs.
fn assert_rejected(s: &Signed, object: &Value, args: &[&str], key: &str, what: &str) {
    let (code, out, err) = verify(s, object, args);
    assert_eq!(code, 1, "{what} was not rejected: {out}{err}");
    assert!(out.contains(key), "{what}: {key} not in {out}");
}

const ARGO: [&str; 6] = [
    "--ignore-profile",
    "argocd",
    "--argocd-application",
    "shop",
    "--argocd-installation-id",
    "prod",
];
const FLUX: [&str; 4] = [
    "--ignore-profile",
    "flux",
    "--flux-kustomization",
    "flux-system/apps",
];

#[test]
fn bound_argo_cd_values_are_accepted() {
    let s = sign();
    let cm = &s.config_map;
    let all = bound_argo(cm);
    assert_verifies(&s, &all, &ARGO, "label, tracking id and installation id");
    let label = with(cm, &[(INSTANCE, "shop")], &[]);
    assert_verifies(&s, &label, &ARGO, "label alone");
    let annotation = with(cm, &[], &[(TRACKING_ID, &tracking("shop", cm))]);
    assert_verifies(&s, &annotation, &ARGO, "tracking id alone");
    let mut two = ARGO.to_vec();
    two.extend(["--argocd-application", "other"]);
    let other = with(cm, &[(INSTANCE, "other")], &[]);
    assert_verifies(&s, &other, &two, "second listed application");
}

#[test]
fn a_wrong_application_in_the_instance_label_is_rejected() {
    let s = sign();
    let object = with(&s.config_map, &[(INSTANCE, "billing")], &[]);
    assert_rejected(&s, &object, &ARGO, INSTANCE, "unlisted app in the label");
}

#[test]
fn a_wrong_application_in_the_tracking_id_is_rejected() {
    let s = sign();
    let cm = &s.config_map;
    let object = with(cm, &[], &[(TRACKING_ID, &tracking("billing", cm))]);
    assert_rejected(
        &s,
        &object,
        &ARGO,
        TRACKING_ID,
        "unlisted app in tracking id",
    );
    // A prefix or glob-like spelling of a listed name is not that name.
    let object = with(cm, &[], &[(TRACKING_ID, &tracking("shop-2", cm))]);
    assert_rejected(&s, &object, &ARGO, TRACKING_ID, "prefix of a listed app");
}

#[test]
fn an_instance_label_and_tracking_id_naming_two_applications_are_rejected() {
    let s = sign();
    let cm = &s.config_map;
    let mut both = ARGO.to_vec();
    both.extend(["--argocd-application", "billing"]);
    let object = with(
        cm,
        &[(INSTANCE, "billing")],
        &[(TRACKING_ID, &tracking("shop", cm))],
    );
    let (code, out, err) = verify(&s, &object, &both);
    assert_eq!(code, 1, "two applications accepted: {out}{err}");
    assert!(out.contains(INSTANCE) && out.contains(TRACKING_ID), "{out}");
}

#[test]
fn a_wrong_installation_id_is_rejected() {
    let s = sign();
    let object = with(&s.config_map, &[], &[(INSTALLATION_ID, "staging")]);
    assert_rejected(&s, &object, &ARGO, INSTALLATION_ID, "unlisted installation");
}

#[test]
fn bound_flux_kustomization_is_accepted_only_with_both_labels() {
    let s = sign();
    let cm = &s.config_map;
    let both = with(
        cm,
        &[(FLUX_NAME, "apps"), (FLUX_NAMESPACE, "flux-system")],
        &[],
    );
    assert_verifies(&s, &both, &FLUX, "listed Kustomization");
    let name_only = with(cm, &[(FLUX_NAME, "apps")], &[]);
    assert_rejected(&s, &name_only, &FLUX, FLUX_NAME, "name without namespace");
    let namespace_only = with(cm, &[(FLUX_NAMESPACE, "flux-system")], &[]);
    assert_rejected(
        &s,
        &namespace_only,
        &FLUX,
        FLUX_NAMESPACE,
        "namespace alone",
    );
}

#[test]
fn a_wrong_flux_kustomization_is_rejected() {
    let s = sign();
    let cm = &s.config_map;
    for (name, namespace) in [("infra", "flux-system"), ("apps", "team")] {
        let object = with(cm, &[(FLUX_NAME, name), (FLUX_NAMESPACE, namespace)], &[]);
        assert_rejected(
            &s,
            &object,
            &FLUX,
            FLUX_NAME,
            &format!("{namespace}/{name}"),
        );
    }
}

#[test]
fn unbound_labels_and_installation_ids_are_refused_on_every_kind() {
    // A label is a selector input on far more kinds than Pods and Namespaces (ClusterRole
    // aggregation, Kyverno selectors, webhook objectSelectors...): unbound, none is
    // tolerated. The tracking id names the object itself and stays tolerated.
    let s = sign();
    for (kind, object) in [
        ("ConfigMap", &s.config_map),
        ("Pod", &s.pod),
        ("Namespace", &s.namespace),
    ] {
        let argo = with(object, &[(INSTANCE, "anything")], &[]);
        assert_rejected(&s, &argo, &["--ignore-profile", "argocd"], INSTANCE, kind);
        let bound = [
            "--ignore-profile",
            "argocd",
            "--argocd-application",
            "anything",
        ];
        assert_verifies(&s, &argo, &bound, &format!("{kind} bound"));
        let flux = with(
            object,
            &[(FLUX_NAME, "apps"), (FLUX_NAMESPACE, "flux-system")],
            &[],
        );
        assert_rejected(&s, &flux, &["--ignore-profile", "flux"], FLUX_NAME, kind);
        assert_verifies(
            &s,
            &flux,
            &FLUX,
            &format!("{kind} bound to its Kustomization"),
        );
        let installed = with(object, &[], &[(INSTALLATION_ID, "prod")]);
        assert_rejected(
            &s,
            &installed,
            &["--ignore-profile", "argocd"],
            INSTALLATION_ID,
            kind,
        );
        assert_verifies(&s, &installed, &ARGO, &format!("{kind} bound installation"));
        let annotated = with(object, &[], &[(TRACKING_ID, &tracking("any", object))]);
        assert_verifies(&s, &annotated, &["--ignore-profile", "argocd"], kind);
    }
    // The note says what to bind, once per key.
    let cm = with(&s.config_map, &[(INSTANCE, "anything")], &[]);
    let (code, out, err) = verify(&s, &cm, &["--ignore-profile", "argocd"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("--argocd-application NAME"), "{err}");
    assert_eq!(err.matches("--argocd-application").count(), 1, "{err}");
}

#[test]
fn bindings_need_their_profile_and_well_formed_values() {
    let s = sign();
    for args in [
        &["--argocd-application", "shop"][..],
        &[
            "--ignore-profile",
            "flux",
            "--argocd-installation-id",
            "prod",
        ],
        &["--ignore-profile", "argocd", "--flux-kustomization", "a/b"],
        &["--ignore-profile", "flux", "--flux-kustomization", "apps"],
        &["--ignore-profile", "argocd", "--argocd-application", "a:b"],
        &["--ignore-profile", "argocd", "--argocd-application", ""],
    ] {
        let (code, out, err) = verify(&s, &s.config_map, args);
        assert_eq!(code, 2, "{args:?} accepted: {out}{err}");
    }
}

// Through a ManifestPolicy and `mansign admission review`.

fn policy(s: &Signed, name: &str, spec: &str) -> PathBuf {
    write(
        s.dir.path(),
        name,
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: gitops}}\n\
             spec:\n{spec}  attestors:\n  - entries:\n    - keys: {{path: {}}}\n",
            s.pubkey.display()
        ),
    )
}

const BOUND_SPEC: &str = "  ignoreProfile: argocd,flux\n  gitops:\n    argocd:\n      \
     applications: [shop]\n      installationIDs: [prod]\n    flux:\n      \
     kustomizations: [flux-system/apps]\n";

/// A CREATE `AdmissionReview` of `object`: `response.allowed` and the status message.
fn review(s: &Signed, policy: &Path, object: &Value) -> (bool, String) {
    let kind = object["kind"].as_str().unwrap();
    let gvk = json!({"group": "", "version": "v1", "kind": kind});
    let gvr =
        json!({"group": "", "version": "v1", "resource": format!("{}s", kind.to_lowercase())});
    let mut request = json!({
        "uid": "1b2c", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": object["metadata"]["name"], "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:argocd:argocd-application-controller"},
        "object": object, "oldObject": null, "dryRun": false,
    });
    if let Some(ns) = object["metadata"].get("namespace") {
        request["namespace"] = ns.clone();
    }
    // The API server sends a Namespace's own name as request.namespace.
    if kind == "Namespace" {
        request["namespace"] = object["metadata"]["name"].clone();
    }
    let review =
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
    let file = write(s.dir.path(), "review.json", &review.to_string());
    let (out, response) = common::admission_review_json(policy, &file);
    let allowed = response["response"]["allowed"] == json!(true);
    assert_eq!(out.status.code(), Some(if allowed { 0 } else { 1 }));
    let message = response["response"]["status"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (allowed, message)
}

#[test]
fn admission_review_applies_the_policy_bindings() {
    let s = sign();
    let bound = policy(&s, "bound.yaml", BOUND_SPEC);
    let cm = &s.config_map;
    let good_argo = bound_argo(cm);
    let good_flux = with(
        cm,
        &[(FLUX_NAME, "apps"), (FLUX_NAMESPACE, "flux-system")],
        &[],
    );
    for (what, object) in [("argo", &good_argo), ("flux", &good_flux)] {
        let (allowed, message) = review(&s, &bound, object);
        assert!(allowed, "{what}: {message}");
    }
    let pod = with(&s.pod, &[(INSTANCE, "shop")], &[]);
    assert!(review(&s, &bound, &pod).0, "bound label on a Pod");
    let rejected = [
        (
            "wrong app in label",
            with(cm, &[(INSTANCE, "billing")], &[]),
            INSTANCE,
        ),
        (
            "wrong app in tracking id",
            with(cm, &[], &[(TRACKING_ID, &tracking("billing", cm))]),
            TRACKING_ID,
        ),
        (
            "label and tracking id disagree",
            with(
                cm,
                &[(INSTANCE, "shop")],
                &[(TRACKING_ID, &tracking("billing", cm))],
            ),
            TRACKING_ID,
        ),
        (
            "wrong installation",
            with(cm, &[], &[(INSTALLATION_ID, "dev")]),
            INSTALLATION_ID,
        ),
        (
            "flux name alone",
            with(cm, &[(FLUX_NAME, "apps")], &[]),
            FLUX_NAME,
        ),
        (
            "wrong Kustomization",
            with(
                cm,
                &[(FLUX_NAME, "infra"), (FLUX_NAMESPACE, "flux-system")],
                &[],
            ),
            FLUX_NAME,
        ),
    ];
    for (what, object, key) in &rejected {
        let (allowed, message) = review(&s, &bound, object);
        assert!(!allowed, "{what} allowed");
        assert!(message.contains(key), "{what}: {message}");
    }
    let unbound = policy(&s, "unbound.yaml", "  ignoreProfile: argocd,flux\n");
    for (kind, object) in [
        ("ConfigMap", cm),
        ("Pod", &s.pod),
        ("Namespace", &s.namespace),
    ] {
        let labelled = with(object, &[(INSTANCE, "shop")], &[]);
        let (allowed, message) = review(&s, &unbound, &labelled);
        assert!(!allowed, "unbound label on a {kind} allowed");
        assert!(message.contains(INSTANCE), "{kind}: {message}");
        let flux = with(
            object,
            &[(FLUX_NAME, "apps"), (FLUX_NAMESPACE, "flux-system")],
            &[],
        );
        assert!(
            !review(&s, &unbound, &flux).0,
            "unbound Flux labels on a {kind}"
        );
        let tracked = with(object, &[], &[(TRACKING_ID, &tracking("shop", object))]);
        let (allowed, message) = review(&s, &unbound, &tracked);
        assert!(allowed, "unbound tracking id on a {kind}: {message}");
    }
    assert!(
        !review(&s, &unbound, &good_argo).0,
        "unbound profile: instance label and installation id on a ConfigMap"
    );
}

/// `mansign policy explain POLICY`, run.
fn explain(policy: &Path) -> std::process::Output {
    mansign()
        .args(["policy", "explain"])
        .arg(policy)
        .output()
        .unwrap()
}

#[test]
fn policy_bindings_are_checked_when_loading() {
    let s = sign();
    for (spec, field) in [
        (
            "  ignoreProfile: argocd\n  gitops:\n    flux: {kustomizations: [a/b]}\n",
            "spec.gitops.flux",
        ),
        (
            "  ignoreProfile: flux\n  gitops:\n    argocd: {applications: [shop]}\n",
            "spec.gitops.argocd",
        ),
        (
            "  ignoreProfile: argocd\n  gitops:\n    argocd: {applications: []}\n",
            "spec.gitops.argocd.applications",
        ),
        (
            "  ignoreProfile: flux\n  gitops:\n    flux: {kustomizations: [apps]}\n",
            "spec.gitops.flux.kustomizations[0]",
        ),
        (
            "  ignoreProfile: argocd\n  gitops:\n    argocd: {applications: [\"a:b\"]}\n",
            "spec.gitops.argocd.applications[0]",
        ),
        (
            "  ignoreProfile: argocd\n  gitops:\n    argocd: {apps: [shop]}\n",
            "apps",
        ),
    ] {
        let file = policy(&s, "bad.yaml", spec);
        let out = explain(&file);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec} accepted: {err}");
        assert!(err.contains(field), "{spec}: {field} not in {err}");
    }
    // A bound policy explains its bindings; an unbound one notes what to add.
    let out = explain(&policy(&s, "bound.yaml", BOUND_SPEC));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("application \"shop\" only"), "{text}");
    assert!(
        text.contains("Kustomization \"flux-system/apps\" only"),
        "{text}"
    );
    let out = explain(&policy(&s, "unbound.yaml", "  ignoreProfile: argocd\n"));
    let all = common::all_output(&out);
    assert!(all.contains("spec.gitops.argocd.applications"), "{all}");
}
