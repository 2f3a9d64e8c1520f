//! Key-signed objects, a `ManifestPolicy` trusting the key, and `AdmissionReview` bodies
//! shaped as the API server sends them (k8s.io/apiserver v0.34.4: `request.namespace` of
//! a `namespaces` request is the Namespace's own name; a `status` write carries the object
//! as it will be stored). Shared by `tests/it/admission_api_server.rs` and the tamper matrix.
#![allow(dead_code)]

use mansign::Limits;
use mansign::admission::{Outcome, ReviewOptions, Reviewer};
use mansign::keys;
use mansign::manifest::{Source, load_reader};
use mansign::policy::{LoadOptions, load_str};
use mansign::signing::{KeySigner, SignOptions, sign_files};
use serde_json::{Value, json};

/// A fresh key: its signer and its public key PEM.
pub struct Key {
    pub signer: KeySigner,
    pub public_key_pem: String,
}

pub fn key() -> Key {
    let pair = keys::generate_key_pair(b"").unwrap();
    let private = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    Key {
        signer: KeySigner::new(private),
        public_key_pem: pair.public_key_pem,
    }
}

/// Signs every document of `manifests` (one YAML stream) with `key`.
pub fn sign(key: &Key, manifests: &str) -> Vec<Value> {
    let file = load_reader(
        Source::Named("fixture".into()),
        "fixture.yaml".into(),
        manifests.as_bytes(),
        &Limits::default(),
    )
    .unwrap();
    let mut files = [file];
    sign_files(&mut files, &key.signer, &SignOptions::default()).unwrap();
    let [file] = files;
    file.documents.into_iter().map(|d| d.value).collect()
}

/// A reviewer whose one rule matches every object and trusts `key`, with `spec_extra`
/// (indented two spaces, e.g. `"  ignoreProfile: kubernetes\n"`) in the spec.
pub fn reviewer(key: &Key, spec_extra: &str) -> Reviewer {
    let pem: String = key
        .public_key_pem
        .lines()
        .map(|l| format!("            {l}\n"))
        .collect();
    let text = format!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: all}}\n\
         spec:\n{spec_extra}  attestors:\n  - entries:\n    - keys:\n        publicKeys: |\n{pem}"
    );
    let policy = load_str("policy.yaml", &text, ".".as_ref(), &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    Reviewer::new(policy, ReviewOptions::default())
}

/// `(group, version)` of an object's `apiVersion`.
fn group_version(object: &Value) -> (String, String) {
    let api = object["apiVersion"].as_str().unwrap_or_default();
    match api.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api.to_string()),
    }
}

/// The plural resource name of the kinds the tests use.
pub fn resource_of(kind: &str) -> String {
    match kind {
        "Ingress" => "ingresses".into(),
        "NetworkPolicy" => "networkpolicies".into(),
        "PodDisruptionBudget" => "poddisruptionbudgets".into(),
        k => format!("{}s", k.to_lowercase()),
    }
}

/// The `AdmissionReview` the API server sends for `operation` on `object` (through
/// `subresource` when given). The request's namespace is the object's, or, for a
/// Namespace, its own name (handlers/create.go, requestinfo.go).
pub fn review_body(object: &Value, operation: &str, subresource: Option<&str>) -> Vec<u8> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = group_version(object);
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource_of(kind)});
    let name = object["metadata"]["name"].clone();
    let update = operation == "UPDATE";
    let old_object = if update { object.clone() } else { Value::Null };
    let options = if update {
        "UpdateOptions"
    } else {
        "CreateOptions"
    };
    let mut request = json!({
        "uid": "3a7c1d2e-0b4f-4c5d-9e8f-1a2b3c4d5e6f",
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": name, "operation": operation,
        "userInfo": {"username": "system:node:worker-1", "groups": ["system:nodes"]},
        "object": object, "oldObject": old_object, "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
    });
    if let Some(sub) = subresource {
        request["subResource"] = json!(sub);
        request["requestSubResource"] = json!(sub);
    }
    if kind == "Namespace" && group.is_empty() {
        request["namespace"] = name;
    } else if let Some(ns) = object["metadata"].get("namespace") {
        request["namespace"] = ns.clone();
    }
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}),
    )
    .unwrap()
}

/// The outcome, reason code and message of one review.
pub fn decide(
    reviewer: &Reviewer,
    object: &Value,
    operation: &str,
    subresource: Option<&str>,
) -> (Outcome, Option<String>, String) {
    let reviewed = reviewer.review(&review_body(object, operation, subresource));
    let d = reviewed.decision;
    (d.outcome, d.reason_code, d.message)
}

/// What the API server adds to every object before validating admission (`uid`,
/// `creationTimestamp`, `managedFields`; `resourceVersion` and `generation` on UPDATE).
pub fn with_server_metadata(object: &Value, update: bool) -> Value {
    let mut v = object.clone();
    let meta = v["metadata"].as_object_mut().unwrap();
    meta.insert("uid".into(), json!("6f1b7d2e-5c1a-4a8e-9d0b-2f7e3c4b5a69"));
    meta.insert("creationTimestamp".into(), json!("2026-11-23T10:00:00Z"));
    meta.insert(
        "managedFields".into(),
        json!([{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-23T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {}}]),
    );
    if update {
        meta.insert("resourceVersion".into(), json!("4711"));
        meta.insert("generation".into(), json!(1));
    }
    v
}
