//! Live objects: what the `kubernetes` ignore profile tolerates, and every ignore-field
//! abuse case of research kyverno-manifests §2.10 F3 rejected under it.

use crate::common;

use common::fixture;
use mansign::Limits;
use mansign::keys;
use mansign::manifest::{IgnoreProfile, Tolerances, load_inputs, parse_documents};
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::verify::{Attestor, Rejection, TrustedKey, Verifier};
use serde_json::{Value, json};

/// Signs `yaml` with a fresh key; returns the signed object and a verifier for `profile`.
fn signed(yaml: &str, profile: IgnoreProfile) -> (Value, Verifier) {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let mut files = vec![common::load_text("t", "t", yaml)];
    sign_files(&mut files, &KeySigner::new(key), &SignOptions::default()).unwrap();
    let verifier = Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("k", &pair.public_key_pem).unwrap(),
    )])
    .with_tolerances(Tolerances {
        profiles: profile.into(),
        ..Tolerances::default()
    });
    (files[0].documents[0].value.clone(), verifier)
}

/// The diff paths that made verification fail (panics if it passed).
fn rejected_paths(verifier: &Verifier, object: &Value) -> Vec<String> {
    match verifier.verify_object(object).unwrap().result {
        Ok(v) => panic!("tampered object verified: {v:?}"),
        Err(Rejection::Modified { diffs, .. }) => {
            diffs.iter().map(|d| d.path.to_string()).collect()
        }
        Err(other) => panic!("rejected for another reason: {other}"),
    }
}

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ns\ndata:\n  key: value\n";

/// The Deployment `web` in namespace `ns`.
fn deployment() -> String {
    common::fixtures::web_deployment("ns", "", "nginx:1.25")
}

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: ns
spec:
  serviceAccountName: web
  containers:
  - name: web
    image: nginx:1.25
"#;

/// What the API server adds to a stored object: metadata, and `status` for kinds that have
/// a status subresource (a ConfigMap has none; the server would not return one).
fn with_server_metadata(mut v: Value) -> Value {
    let has_status = v["kind"] != "ConfigMap";
    let meta = v["metadata"].as_object_mut().unwrap();
    meta.insert("uid".into(), json!("0f1e2d3c"));
    meta.insert("resourceVersion".into(), json!("4242"));
    meta.insert("generation".into(), json!(3));
    meta.insert("creationTimestamp".into(), json!("2026-11-21T00:00:00Z"));
    meta.insert(
        "managedFields".into(),
        json!([{"manager": "kubectl", "operation": "Apply"}]),
    );
    if has_status {
        v["status"] = json!({"observedGeneration": 3});
    }
    v
}

#[test]
fn kubernetes_profile_tolerates_server_metadata() {
    let (obj, verifier) = signed(CONFIGMAP, IgnoreProfile::Kubernetes);
    assert!(
        verifier
            .verify_object(&with_server_metadata(obj))
            .unwrap()
            .is_verified()
    );
}

#[test]
fn kubernetes_profile_tolerates_the_status_of_a_kind_with_a_status_subresource() {
    let (obj, verifier) = signed(&deployment(), IgnoreProfile::Kubernetes);
    let live = with_server_metadata(obj);
    assert!(live.get("status").is_some());
    let verdict = verifier.verify_object(&live).unwrap();
    assert!(verdict.is_verified(), "{verdict}");
}

#[test]
fn status_of_a_kind_without_a_status_subresource_is_compared() {
    // A ConfigMap (or a custom resource without the subresource) stores `status` as data.
    let (mut obj, verifier) = signed(CONFIGMAP, IgnoreProfile::Kubernetes);
    obj["status"] = json!({"phase": "approved"});
    assert_eq!(rejected_paths(&verifier, &obj), ["status.phase"]);
    let exception = "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: e\n  namespace: ns\nspec:\n  exceptions: []\n";
    let (mut obj, verifier) = signed(exception, IgnoreProfile::Kubernetes);
    obj["status"] = json!({"ready": true});
    assert_eq!(rejected_paths(&verifier, &obj), ["status.ready"]);
}

#[test]
fn none_profile_rejects_server_metadata() {
    let (obj, verifier) = signed(CONFIGMAP, IgnoreProfile::None);
    let paths = rejected_paths(&verifier, &with_server_metadata(obj));
    assert!(paths.contains(&"metadata.uid".to_string()), "{paths:?}");
}

#[test]
fn f3_pod_projected_secret_volume_and_mount_are_detected() {
    let (mut obj, verifier) = signed(POD, IgnoreProfile::Kubernetes);
    obj["spec"]["volumes"] =
        json!([{"name": "loot", "projected": {"sources": [{"secret": {"name": "admin-token"}}]}}]);
    obj["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "loot", "mountPath": "/loot"}]);
    let paths = rejected_paths(&verifier, &obj);
    assert!(
        paths.contains(&"spec.volumes[0].projected.sources[0].secret.name".to_string()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"spec.containers[0].volumeMounts[0].mountPath".to_string()),
        "{paths:?}"
    );
}

#[test]
fn kyverno_compat_profile_misses_the_f3_tampering_as_upstream_does() {
    // Documents why the profile is for migration only.
    let (mut obj, verifier) = signed(CONFIGMAP, IgnoreProfile::KyvernoCompat);
    obj["data"]["status"] = json!("pwned");
    assert!(verifier.verify_object(&obj).unwrap().is_verified());
}

#[test]
fn deployment_defaults_are_tolerated_only_with_default_values() {
    let (mut obj, verifier) = signed(&deployment(), IgnoreProfile::Kubernetes);
    obj["spec"]["progressDeadlineSeconds"] = json!(600);
    obj["spec"]["revisionHistoryLimit"] = json!(10);
    obj["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
    obj["spec"]["template"]["spec"]["dnsPolicy"] = json!("ClusterFirst");
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    assert!(verifier.verify_object(&obj).unwrap().is_verified());
    obj["spec"]["template"]["spec"]["dnsPolicy"] = json!("None");
    assert_eq!(
        rejected_paths(&verifier, &obj),
        ["spec.template.spec.dnsPolicy"]
    );
}

fn deployed_fixture() -> (Vec<mansign::manifest::Document>, Attestor) {
    let file = fixture(
        "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-deployment-signed-deployed.yaml",
    );
    let key = fixture("k8s-manifest-sigstore/derived/pkg/k8smanifest/testdata/testpub.pem");
    let pem = std::fs::read_to_string(key).unwrap();
    let docs = load_inputs(&[file], &Limits::default())
        .unwrap()
        .remove(0)
        .documents;
    (
        docs,
        Attestor::Key(TrustedKey::from_pem("K1", &pem).unwrap()),
    )
}

#[test]
fn deployed_fixture_verifies_under_kubernetes_profile_with_namespace_binding() {
    let (docs, attestor) = deployed_fixture();
    let t = Tolerances {
        profiles: IgnoreProfile::Kubernetes.into(),
        namespace_binding: vec!["default".into()],
        ..Tolerances::default()
    };
    let verdict = Verifier::new(vec![attestor])
        .with_tolerances(t)
        .verify_documents(&docs);
    assert!(verdict.is_verified(), "{}", verdict.documents[0]);
}

#[test]
fn deployed_fixture_without_namespace_binding_fails_on_the_namespace() {
    let (docs, attestor) = deployed_fixture();
    let t = Tolerances {
        profiles: IgnoreProfile::Kubernetes.into(),
        ..Tolerances::default()
    };
    let verdict = Verifier::new(vec![attestor])
        .with_tolerances(t)
        .verify_documents(&docs);
    match &verdict.documents[0].result {
        Err(Rejection::Modified { diffs, .. }) => {
            assert_eq!(
                diffs.iter().map(|d| d.path.to_string()).collect::<Vec<_>>(),
                ["metadata.namespace"]
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn digest_pinned_image_verifies_only_with_the_tolerance() {
    let (mut obj, verifier) = signed(&deployment(), IgnoreProfile::None);
    let pinned = format!("nginx:1.25@sha256:{}", "0123456789abcdef".repeat(4));
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = json!(pinned);
    assert_eq!(
        rejected_paths(&verifier, &obj),
        ["spec.template.spec.containers[0].image"]
    );
    let tolerant = verifier.with_tolerances(Tolerances {
        digest_pinning: true,
        ..Tolerances::default()
    });
    assert!(tolerant.verify_object(&obj).unwrap().is_verified());
    obj["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!(format!("evil:1.25@sha256:{}", "0".repeat(64)));
    assert_eq!(
        rejected_paths(&tolerant, &obj),
        ["spec.template.spec.containers[0].image"]
    );
}

#[test]
fn kubectl_get_list_output_verifies_item_by_item() {
    let (obj, verifier) = signed(CONFIGMAP, IgnoreProfile::Kubernetes);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [with_server_metadata(obj)]});
    let text = mansign::manifest::to_yaml(&list);
    assert_eq!(parse_documents(&text, &Limits::default()).unwrap().len(), 1);
    let file = common::load_text("kubectl get", "x", &text);
    let verdict = verifier.verify_documents(&file.documents);
    assert_eq!(verdict.documents.len(), 1);
    assert!(verdict.is_verified(), "{}", verdict.documents[0]);
}

#[test]
fn cli_verifies_kubectl_get_output_with_profile_and_namespace_binding() {
    use common::{key_pair, write};
    use predicates::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), "cosign");
    // Signed without a namespace: applied with `kubectl apply -n team-a`.
    let input = write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  key: value\n",
    );
    let signed_text = std::fs::read_to_string(common::sign_with_key(&input, &key)).unwrap();
    let mut live = parse_documents(&signed_text, &Limits::default())
        .unwrap()
        .remove(0)
        .1;
    live["metadata"]["namespace"] = json!("team-a");
    let live = with_server_metadata(live);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [live]});
    let got = write(dir.path(), "live.yaml", &mansign::manifest::to_yaml(&list));
    let verify = |extra: &[&str]| common::with_key("verify", extra, &got, &pubkey).assert();
    verify(&[])
        .code(1)
        .stdout(predicate::str::contains("metadata.uid added"));
    verify(&["--ignore-profile", "kubernetes"])
        .code(1)
        .stdout(predicate::str::contains("metadata.namespace added"));
    verify(&[
        "--ignore-profile",
        "kubernetes",
        "--bind-namespace",
        "team-b",
    ])
    .code(1);
    verify(&[
        "--ignore-profile",
        "kubernetes",
        "--bind-namespace",
        "team-a",
    ])
    .success();
    verify(&["--ignore-profile", "kyverno-compat"])
        .success()
        .stderr(predicate::str::contains(
            "warning: --ignore-profile kyverno-compat",
        ));
}

const NETWORK_POLICY: &str = r#"apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-frontend
  namespace: ns
spec:
  podSelector:
    matchLabels: {app: api}
  ingress:
  - from:
    - podSelector:
        matchLabels: {app: frontend}
"#;

/// An edit of a signed object that the `kubernetes` profile must reject, and the diff paths
/// the rejection names (exactly).
struct Detected {
    name: &'static str,
    manifest: fn() -> String,
    edit: fn(&mut Value),
    paths: &'static [&'static str],
}

/// Sets each of the `fields` (a JSON object) in the `spec` of `obj`.
fn set_spec(obj: &mut Value, fields: Value) {
    for (key, value) in fields.as_object().unwrap() {
        obj["spec"][key] = value.clone();
    }
}

/// The ignore-field abuse cases of research kyverno-manifests §2.10 F3 (but the projected
/// volume, below) and the NetworkPolicy selector edits.
const DETECTED: &[Detected] = &[
    Detected {
        name: "f3 ConfigMap data.status (with server metadata)",
        manifest: || CONFIGMAP.into(),
        edit: |obj| {
            obj["data"]["status"] = json!("pwned");
            *obj = with_server_metadata(obj.take());
        },
        paths: &["data.status"],
    },
    Detected {
        name: "f3 ConfigMap data.my-status-flag",
        manifest: || CONFIGMAP.into(),
        edit: |obj| obj["data"]["my-status-flag"] = json!("true"),
        paths: &["data.my-status-flag"],
    },
    Detected {
        name: "f3 Deployment pod securityContext runAsUser 0",
        manifest: deployment,
        edit: |obj| obj["spec"]["template"]["spec"]["securityContext"] = json!({"runAsUser": 0}),
        paths: &["spec.template.spec.securityContext.runAsUser"],
    },
    Detected {
        name: "f3 Deployment container resources",
        manifest: deployment,
        edit: |obj| {
            obj["spec"]["template"]["spec"]["containers"][0]["resources"] =
                json!({"limits": {"cpu": "64"}});
        },
        paths: &["spec.template.spec.containers[0].resources.limits.cpu"],
    },
    Detected {
        name: "f3 Pod serviceAccountName admin",
        manifest: || POD.into(),
        edit: |obj| {
            set_spec(
                obj,
                json!({"serviceAccountName": "admin", "serviceAccount": "admin"}),
            )
        },
        paths: &["spec.serviceAccount", "spec.serviceAccountName"],
    },
    Detected {
        name: "f3 Pod tolerating everything",
        manifest: || POD.into(),
        edit: |obj| obj["spec"]["tolerations"] = json!([{"operator": "Exists"}]),
        paths: &["spec.tolerations[0].operator"],
    },
    Detected {
        name: "f3 Pod priorityClassName system-node-critical",
        manifest: || POD.into(),
        edit: |obj| {
            set_spec(
                obj,
                json!({"priorityClassName": "system-node-critical", "priority": 2000001000}),
            )
        },
        paths: &["spec.priority", "spec.priorityClassName"],
    },
    // `namespaceSelector: {}` next to a podSelector admits that label from every namespace.
    Detected {
        name: "NetworkPolicy empty namespaceSelector added",
        manifest: || NETWORK_POLICY.into(),
        edit: |obj| obj["spec"]["ingress"][0]["from"][0]["namespaceSelector"] = json!({}),
        paths: &["spec.ingress[0].from[0].namespaceSelector"],
    },
    // `podSelector: {}` selects every pod of the namespace.
    Detected {
        name: "NetworkPolicy podSelector emptied",
        manifest: || NETWORK_POLICY.into(),
        edit: |obj| obj["spec"]["podSelector"] = json!({}),
        paths: &["spec.podSelector.matchLabels.app"],
    },
];

#[test]
fn f3_and_selector_tampering_is_detected_under_the_kubernetes_profile() {
    for case in DETECTED {
        let (mut obj, verifier) = signed(&(case.manifest)(), IgnoreProfile::Kubernetes);
        (case.edit)(&mut obj);
        assert_eq!(rejected_paths(&verifier, &obj), case.paths, "{}", case.name);
    }
}
