//! The admission decision against what the API server really sends and stores (issue 21,
//! items 3 and 7), from the Kubernetes source (k8s.io/kubernetes v1.34.4, k8s.io/apiserver
//! v0.34.4; each test names the behaviour it mirrors):
//!
//! * a `Namespace` request carries the Namespace's own name as `request.namespace`, and
//!   the object, cluster-scoped, carries none; the API server adds the
//!   `kubernetes.io/metadata.name` label and the `kubernetes` finalizer;
//! * a write through `<resource>/status` keeps what its kind's status strategy keeps from
//!   the request (a Pod's labels, annotations and finalizers; a Deployment's annotations...)
//!   and `request.object` is the object as it will be stored.

use crate::common::admission_fixture;
use crate::common::dup_tests_a;
use crate::common::fixtures;

use admission_fixture::{Key, decide, key, reviewer, sign, with_server_metadata};
use mansign::admission::{Outcome, Reviewer};
use serde_json::{Value, json};

struct Fixture {
    key: Key,
    namespace: Value,
    cluster_role: Value,
    pod: Value,
    deployment: Value,
    flow_schema: Value,
    widget: Value,
}

/// The Deployment `web` in namespace `team-a`, labelled `app: web`.
fn deployment() -> String {
    fixtures::web_deployment(
        "team-a",
        "  labels:\n    app: web\n",
        "registry.example/web:2.0.1",
    )
}

fn fixture() -> Fixture {
    let key = key();
    // The Namespace, ClusterRole, Pod, FlowSchema and Widget, then the Deployment.
    let objects = dup_tests_a::data("api-server-objects.yaml");
    let mut docs = sign(&key, &format!("{objects}---\n{}", deployment())).into_iter();
    let mut next = || docs.next().unwrap();
    Fixture {
        namespace: next(),
        cluster_role: next(),
        pod: next(),
        flow_schema: next(),
        widget: next(),
        deployment: next(),
        key,
    }
}

const KUBERNETES: &str = "  ignoreProfile: kubernetes\n";

/// The signed fixture and a reviewer trusting its key with the `kubernetes` ignore profile.
fn fixture_and_reviewer() -> (Fixture, Reviewer) {
    let f = fixture();
    let r = reviewer(&f.key, KUBERNETES);
    (f, r)
}

/// Asserts that `r` allows `live` sent as `operation` (through `subresource`).
fn assert_allowed(r: &Reviewer, live: &Value, operation: &str, subresource: Option<&str>) {
    let (outcome, code, message) = decide(r, live, operation, subresource);
    assert_eq!(
        outcome,
        Outcome::Allowed,
        "{operation} {subresource:?}: {code:?}: {message}"
    );
}

/// Asserts that `r` denies `live` sent as `operation` (through `subresource`) with `code`;
/// `what` names the case in the failure.
fn assert_denied(
    r: &Reviewer,
    what: &str,
    live: &Value,
    (operation, subresource): (&str, Option<&str>),
    code: &str,
) {
    let (outcome, got, message) = decide(r, live, operation, subresource);
    assert_eq!(outcome, Outcome::Denied, "{what}: {message}");
    assert_eq!(got.as_deref(), Some(code), "{what}: {message}");
}

fn labels(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v["metadata"]
        .as_object_mut()
        .unwrap()
        .entry("labels")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .unwrap()
}

fn annotations(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v["metadata"]["annotations"].as_object_mut().unwrap()
}

/// The Namespace as validating admission sees it on CREATE: the API server's metadata,
/// the name label (`SetDefaults_Namespace`), the `kubernetes` finalizer and `Active` phase
/// (`pkg/registry/core/namespace/strategy.go` `PrepareForCreate`).
fn namespace_as_created(signed: &Value) -> Value {
    let mut v = with_server_metadata(signed, false);
    labels(&mut v).insert("kubernetes.io/metadata.name".into(), json!("team-a"));
    v["spec"] = json!({"finalizers": ["kubernetes"]});
    v["status"] = json!({"phase": "Active"});
    v
}

// ---------------------------------------------------------------------------------------
// Item 7: Namespaces.

#[test]
fn a_signed_namespace_create_as_the_api_server_sends_it_is_allowed() {
    let (f, r) = fixture_and_reviewer();
    let live = namespace_as_created(&f.namespace);
    assert!(live["metadata"].get("namespace").is_none());
    assert_allowed(&r, &live, "CREATE", None);
    assert_allowed(&r, &live, "UPDATE", None);
}

#[test]
fn a_namespace_object_claiming_a_namespace_is_denied() {
    // The API server clears metadata.namespace of a cluster-scoped object before
    // admission: an object that still names one is not a request it sends.
    let (f, r) = fixture_and_reviewer();
    let mut live = namespace_as_created(&f.namespace);
    live["metadata"]["namespace"] = json!("team-a");
    assert_denied(
        &r,
        "a Namespace naming team-a",
        &live,
        ("CREATE", None),
        "namespace-mismatch",
    );
}

#[test]
fn a_relabelled_or_re_finalized_namespace_is_denied() {
    let (f, r) = fixture_and_reviewer();
    let base = namespace_as_created(&f.namespace);
    let mut privileged = base.clone();
    labels(&mut privileged).insert(
        "pod-security.kubernetes.io/enforce".into(),
        json!("privileged"),
    );
    let mut other_name = base.clone();
    labels(&mut other_name).insert("kubernetes.io/metadata.name".into(), json!("kube-system"));
    let mut held = base.clone();
    held["spec"]["finalizers"] = json!(["kubernetes", "example.com/hold"]);
    for (what, live) in [
        ("privileged", privileged),
        ("name label", other_name),
        ("finalizer", held),
    ] {
        assert_denied(&r, what, &live, ("CREATE", None), "modified");
    }
}

#[test]
fn other_cluster_scoped_kinds_arrive_without_a_namespace_and_verify() {
    let (f, r) = fixture_and_reviewer();
    let live = with_server_metadata(&f.cluster_role, false);
    assert_allowed(&r, &live, "CREATE", None);
}

// ---------------------------------------------------------------------------------------
// Item 3: writes through the status subresource.

/// A Pod as a `pods/status` write stores it: the stored spec (with what the scheduler
/// and the API server set), a new status, and the request's metadata.
fn pod_status_write(signed: &Value) -> Value {
    let mut v = with_server_metadata(signed, true);
    v["spec"]["nodeName"] = json!("worker-1");
    v["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    v["status"] = json!({"phase": "Running", "podIP": "10.244.1.7"});
    v
}

#[test]
fn a_pod_status_write_that_keeps_the_signed_metadata_is_allowed() {
    let (f, r) = fixture_and_reviewer();
    assert_allowed(&r, &pod_status_write(&f.pod), "UPDATE", Some("status"));
}

#[test]
fn a_pod_status_write_that_relabels_a_signed_pod_is_denied() {
    // podStatusStrategy keeps labels, annotations and finalizers from the request: a new
    // label joins the Pod to other Services and NetworkPolicies.
    let (f, r) = fixture_and_reviewer();
    let mut relabelled = pod_status_write(&f.pod);
    labels(&mut relabelled).insert("app".into(), json!("payments"));
    let mut annotated = pod_status_write(&f.pod);
    annotations(&mut annotated).insert("sidecar.istio.io/inject".into(), json!("false"));
    let mut finalized = pod_status_write(&f.pod);
    finalized["metadata"]["finalizers"] = json!(["example.com/keep"]);
    for (what, live) in [
        ("label", relabelled),
        ("annotation", annotated),
        ("finalizer", finalized),
    ] {
        assert_denied(&r, what, &live, ("UPDATE", Some("status")), "modified");
    }
}

#[test]
fn a_status_write_of_an_unsigned_pod_is_denied() {
    let (f, r) = fixture_and_reviewer();
    let mut unsigned = pod_status_write(&f.pod);
    unsigned["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    assert_denied(
        &r,
        "an unsigned Pod",
        &unsigned,
        ("UPDATE", Some("status")),
        "not-signed",
    );
}

#[test]
fn a_deployment_status_write_verifies_annotations_but_not_the_stored_labels() {
    // deploymentStatusStrategy takes spec and labels from the stored Deployment and keeps
    // annotations, finalizers and owner references from the request.
    let (f, r) = fixture_and_reviewer();
    let mut stored = with_server_metadata(&f.deployment, true);
    stored["spec"]["replicas"] = json!(5);
    labels(&mut stored).insert("tier".into(), json!("edge"));
    stored["status"] = json!({"replicas": 5, "readyReplicas": 5});
    assert_allowed(&r, &stored, "UPDATE", Some("status"));
    let mut annotated = stored.clone();
    annotations(&mut annotated).insert("example.com/owner".into(), json!("mallory"));
    let (outcome, code, message) = decide(&r, &annotated, "UPDATE", Some("status"));
    assert_eq!(outcome, Outcome::Denied, "{message}");
    assert_eq!(code.as_deref(), Some("modified"));
    let mut owned = stored;
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "x", "uid": "0a1b2c3d"}]);
    let (outcome, _, message) = decide(&r, &owned, "UPDATE", Some("status"));
    assert_eq!(outcome, Outcome::Denied, "{message}");
}

#[test]
fn a_status_write_of_a_kind_whose_strategy_keeps_only_status_is_allowed_unverified() {
    // flowSchemaStatusStrategy takes all metadata and spec from the stored object.
    let (f, r) = fixture_and_reviewer();
    let mut stored = with_server_metadata(&f.flow_schema, true);
    labels(&mut stored).insert("anything".into(), json!("x"));
    stored["status"] = json!({"conditions": []});
    let (outcome, _, message) = decide(&r, &stored, "UPDATE", Some("status"));
    assert_eq!(outcome, Outcome::Skipped, "{message}");
    assert!(message.contains("flowschema/strategy.go"), "{message}");
}

#[test]
fn a_status_write_of_an_unknown_kind_verifies_everything_but_status() {
    let (f, r) = fixture_and_reviewer();
    let mut live = with_server_metadata(&f.widget, true);
    live["status"] = json!({"ready": true});
    assert_allowed(&r, &live, "UPDATE", Some("status"));
    for (what, path, value) in [
        ("spec", "spec", json!({"size": 30})),
        ("label", "labels", json!({"app": "w"})),
    ] {
        let mut changed = live.clone();
        if path == "spec" {
            changed["spec"] = value;
        } else {
            changed["metadata"][path] = value;
        }
        assert_denied(&r, what, &changed, ("UPDATE", Some("status")), "modified");
    }
}

#[test]
fn writes_through_other_subresources_are_still_denied() {
    let (f, r) = fixture_and_reviewer();
    let live = pod_status_write(&f.pod);
    assert_denied(
        &r,
        "pods/ephemeralcontainers",
        &live,
        ("UPDATE", Some("ephemeralcontainers")),
        "subresource",
    );
}
