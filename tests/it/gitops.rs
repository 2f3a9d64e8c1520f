//! The seed flow through GitOps (issue 14): a signed `PolicyException` and a signed
//! Deployment, built exactly as each Argo CD and Flux apply path submits them, verified by
//! `mansign verify` and, wrapped in an `AdmissionReview` (CREATE and UPDATE), by
//! `mansign admission review`: allowed under the matching profile list, denied without it,
//! and denied under it for every tampering the tracking keys could hide. Then the Argo CD
//! plugin's `generate`, run the way the repo-server runs it.
//!
//! What each apply path writes (Argo CD "Resource Tracking" and "Sync Options" docs,
//! argo-cd `util/argo/resource_tracking.go`; Flux kustomize-controller docs):
//!
//! | path | labels / annotations | last-applied | managedFields |
//! |---|---|---|---|
//! | Argo CD label tracking | `app.kubernetes.io/instance` | client-side apply only | `argocd-controller` |
//! | Argo CD annotation tracking | `argocd.argoproj.io/tracking-id` | client-side apply only | `argocd-controller` |
//! | Argo CD annotation+label (+ installation id) | all three | client-side apply only | `argocd-controller` |
//! | Flux | `kustomize.toolkit.fluxcd.io/{name,namespace}` | never (server-side apply) | `kustomize-controller` |
//!
//! Every live object also carries what the API server adds before validating admission
//! (`uid`, `creationTimestamp`, `generation`, `managedFields`, defaults) and, on UPDATE,
//! `resourceVersion` and `status`.

use crate::common;
use crate::common::stack;

use common::{mansign, write};
use mansign::Limits;
use mansign::manifest::{FieldPath, Segment, parse_documents, to_yaml};
use serde_json::{Map, Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const APP: &str = "guestbook";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
const INSTANCE: &str = "app.kubernetes.io/instance";

/// The Deployment `web` in namespace `team`.
fn deployment() -> String {
    common::fixtures::web_deployment("team", "", "nginx:1.25")
}

const EXCEPTION: &str = r#"apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: allow-debug
  namespace: team
spec:
  exceptions:
  - policyName: disallow-host-path
    ruleNames: [host-path]
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaces: [team]
"#;

/// A Deployment signed *with* the tracking keys already in it: the keys are then compared.
const TRACKED_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: tracked
  namespace: team
  labels:
    app.kubernetes.io/instance: guestbook
    kustomize.toolkit.fluxcd.io/name: apps
  annotations:
    argocd.argoproj.io/tracking-id: guestbook:apps/Deployment:team/tracked
spec:
  selector:
    matchLabels: {app: tracked}
  template:
    metadata:
      labels: {app: tracked}
    spec:
      containers:
      - name: tracked
        image: nginx:1.25
"#;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tracking {
    Label,
    Annotation,
    AnnotationAndLabel,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Apply {
    ClientSide,
    ServerSide,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ApplyPath {
    Argo(Tracking, Apply),
    /// kustomize-controller always applies server-side.
    Flux,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Operation {
    Create,
    Update,
}

/// Argo CD with its tracking annotation and label, applying client-side (kubectl apply).
const ARGO_CLIENT_SIDE: ApplyPath =
    ApplyPath::Argo(Tracking::AnnotationAndLabel, Apply::ClientSide);
/// Argo CD with its tracking annotation and label, applying server-side.
const ARGO_SERVER_SIDE: ApplyPath =
    ApplyPath::Argo(Tracking::AnnotationAndLabel, Apply::ServerSide);

const ARGO_PATHS: [ApplyPath; 6] = [
    ApplyPath::Argo(Tracking::Label, Apply::ClientSide),
    ApplyPath::Argo(Tracking::Label, Apply::ServerSide),
    ApplyPath::Argo(Tracking::Annotation, Apply::ClientSide),
    ApplyPath::Argo(Tracking::Annotation, Apply::ServerSide),
    ARGO_CLIENT_SIDE,
    ARGO_SERVER_SIDE,
];

/// Signed documents and the public key that verifies them.
struct Signed {
    keys: common::KeyDir,
    pubkey: PathBuf,
    deployment: Value,
    exception: Value,
    tracked: Value,
}

/// Signs the three documents with a fresh key pair through the CLI.
fn sign_with_key() -> Signed {
    let (kd, docs) = common::signed_stream(
        "release",
        &format!("{}---\n{EXCEPTION}---\n{TRACKED_DEPLOYMENT}", deployment()),
    );
    let mut docs = docs.into_iter();
    Signed {
        pubkey: kd.pubkey.clone(),
        deployment: docs.next().unwrap(),
        exception: docs.next().unwrap(),
        tracked: docs.next().unwrap(),
        keys: kd,
    }
}

impl Signed {
    /// The directory of the key pair and the signed stream, for a test's other files.
    fn dir(&self) -> &Path {
        self.keys.path()
    }

    /// [`policy_named`] `name` in [`Signed::dir`], trusting the signing key.
    fn policy(&self, name: &str, ignore_profile: &str) -> PathBuf {
        policy_named(self.dir(), name, &self.pubkey, ignore_profile)
    }
}

fn read_stream(text: &str) -> Vec<Value> {
    parse_documents(text, &Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

fn metadata(v: &mut Value) -> &mut Map<String, Value> {
    v["metadata"].as_object_mut().unwrap()
}

fn set_in(v: &mut Value, map: &str, key: &str, value: &str) {
    let m = metadata(v)
        .entry(map)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .unwrap();
    m.insert(key.into(), json!(value));
}

/// `<app>:<group>/<kind>:<namespace>/<name>` for `v` (argo-cd `BuildAppInstanceValue`).
fn tracking_id(v: &Value) -> String {
    let api = v["apiVersion"].as_str().unwrap();
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    format!(
        "{APP}:{group}/{}:{}/{}",
        v["kind"].as_str().unwrap(),
        v["metadata"]["namespace"].as_str().unwrap(),
        v["metadata"]["name"].as_str().unwrap()
    )
}

/// What the tool submits: the manifest from git plus its tracking metadata.
fn as_submitted(manifest: &Value, path: ApplyPath) -> Value {
    let mut v = manifest.clone();
    match path {
        ApplyPath::Argo(tracking, _) => {
            if tracking != Tracking::Annotation {
                set_in(&mut v, "labels", INSTANCE, APP);
            }
            if tracking != Tracking::Label {
                let id = tracking_id(&v);
                set_in(&mut v, "annotations", TRACKING_ID, &id);
            }
            if tracking == Tracking::AnnotationAndLabel {
                set_in(
                    &mut v,
                    "annotations",
                    "argocd.argoproj.io/installation-id",
                    "argocd-prod",
                );
            }
        }
        ApplyPath::Flux => {
            set_in(&mut v, "labels", "kustomize.toolkit.fluxcd.io/name", "apps");
            set_in(
                &mut v,
                "labels",
                "kustomize.toolkit.fluxcd.io/namespace",
                "flux-system",
            );
        }
    }
    v
}

/// JSON as Go's encoding/json writes a map: keys sorted, compact.
fn go_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(v)).unwrap()
}

/// The API server's defaults for a Deployment (what `kubectl get -o yaml` shows), set only
/// where the object has no value, as the API server does.
fn with_deployment_defaults(v: &mut Value) {
    fn default(map: &mut Value, key: &str, value: Value) {
        map.as_object_mut().unwrap().entry(key).or_insert(value);
    }
    let spec = &mut v["spec"];
    default(spec, "replicas", json!(1));
    default(spec, "progressDeadlineSeconds", json!(600));
    default(spec, "revisionHistoryLimit", json!(10));
    default(
        spec,
        "strategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
    );
    default(
        &mut spec["template"]["metadata"],
        "creationTimestamp",
        Value::Null,
    );
    let pod = &mut spec["template"]["spec"];
    for (k, d) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
        ("terminationGracePeriodSeconds", json!(30)),
    ] {
        default(pod, k, d);
    }
    for c in pod["containers"].as_array_mut().unwrap() {
        default(c, "imagePullPolicy", json!("IfNotPresent"));
        default(c, "resources", json!({}));
        default(c, "terminationMessagePath", json!("/dev/termination-log"));
        default(c, "terminationMessagePolicy", json!("File"));
    }
}

/// The object as validating admission sees it (and `kubectl get` returns it, for UPDATE):
/// what was submitted, the apply mechanism's own record, and the API server's fields.
fn live(manifest: &Value, path: ApplyPath, op: Operation) -> Value {
    let submitted = as_submitted(manifest, path);
    let mut v = submitted.clone();
    let (manager, operation) = match path {
        ApplyPath::Argo(_, Apply::ClientSide) => {
            // kubectl apply records what it applied, tracking metadata included, as compact
            // JSON with a trailing newline.
            set_in(
                &mut v,
                "annotations",
                LAST_APPLIED,
                &format!("{}\n", go_json(&submitted)),
            );
            ("argocd-controller", "Update")
        }
        ApplyPath::Argo(_, Apply::ServerSide) => ("argocd-controller", "Apply"),
        ApplyPath::Flux => ("kustomize-controller", "Apply"),
    };
    let is_deployment = v["kind"] == "Deployment";
    let meta = metadata(&mut v);
    meta.insert("uid".into(), json!("6f1b7d2e-5c1a-4a8e-9d0b-2f7e3c4b5a69"));
    meta.insert("creationTimestamp".into(), json!("2026-11-23T10:00:00Z"));
    meta.insert(
        "generation".into(),
        json!(if op == Operation::Update { 2 } else { 1 }),
    );
    meta.insert(
        "managedFields".into(),
        json!([{
            "manager": manager,
            "operation": operation,
            "apiVersion": submitted["apiVersion"],
            "time": "2026-11-23T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {}, "f:annotations": {}}, "f:spec": {}}
        }]),
    );
    if op == Operation::Update {
        meta.insert("resourceVersion".into(), json!("48151623"));
    }
    if is_deployment {
        with_deployment_defaults(&mut v);
        if op == Operation::Update {
            set_in(
                &mut v,
                "annotations",
                "deployment.kubernetes.io/revision",
                "2",
            );
            v["status"] = json!({"observedGeneration": 2, "replicas": 1});
        }
    }
    v
}

/// `mansign verify` of one live object with the key and `--ignore-profile profiles`;
/// returns the exit code and stdout.
fn verify(pubkey: &Path, object: &Value, profiles: &str) -> (i32, String) {
    verify_trusting(&["--key".as_ref(), pubkey.as_os_str()], object, profiles)
}

/// `mansign verify` of one live object with the `trust` flags (a key, or a trusted root
/// and identity) and `--ignore-profile profiles`; returns the exit code and stdout.
fn verify_trusting(trust: &[&OsStr], object: &Value, profiles: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "live.yaml", &to_yaml(object));
    let out = mansign()
        .args(["verify", "-f"])
        .arg(&file)
        .args(trust)
        .args(["--ignore-profile", profiles])
        .args(binding_flags(profiles))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The owners the apply paths write (application [`APP`], installation `argocd-prod`,
/// Kustomization `flux-system/apps`), bound for each GitOps profile in `profiles`: without
/// a binding no tracking label is tolerated (docs/gitops.md).
fn binding_flags(profiles: &str) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if profiles.contains("argocd") {
        flags.extend([
            "--argocd-application",
            APP,
            "--argocd-installation-id",
            "argocd-prod",
        ]);
    }
    if profiles.contains("flux") {
        flags.extend(["--flux-kustomization", "flux-system/apps"]);
    }
    flags
}

/// [`binding_flags`] as a `ManifestPolicy`'s `spec.gitops`, for a spec whose profile line
/// is `ignore_profile`.
fn binding_spec(ignore_profile: &str) -> String {
    let mut spec = String::new();
    if ignore_profile.contains("argocd") || ignore_profile.contains("flux") {
        spec.push_str("  gitops:\n");
    }
    if ignore_profile.contains("argocd") {
        spec.push_str(&format!(
            "    argocd:\n      applications: [{APP}]\n      installationIDs: [argocd-prod]\n"
        ));
    }
    if ignore_profile.contains("flux") {
        spec.push_str("    flux:\n      kustomizations: [flux-system/apps]\n");
    }
    spec
}

fn assert_allowed(pubkey: &Path, object: &Value, profiles: &str, what: &str) {
    let (code, out) = verify(pubkey, object, profiles);
    assert_eq!(code, 0, "{what} under {profiles}: {out}");
}

/// Denied (exit 1), with `reason` in the report.
fn assert_denied(pubkey: &Path, object: &Value, profiles: &str, reason: &str, what: &str) {
    let (code, out) = verify(pubkey, object, profiles);
    assert_eq!(code, 1, "{what} under {profiles} was not denied: {out}");
    assert!(
        out.contains(reason),
        "{what} under {profiles}: {reason:?} not in {out}"
    );
}

/// `metadata.<map>[<key>]` as a report prints it.
fn meta_path(map: &str, key: &str) -> String {
    FieldPath(
        ["metadata", map, key]
            .iter()
            .map(|k| Segment::Key(k.to_string()))
            .collect(),
    )
    .to_string()
}

fn signed_pairs(s: &Signed) -> [(&'static str, &Value); 2] {
    [
        ("Deployment", &s.deployment),
        ("PolicyException", &s.exception),
    ]
}

/// The first tracking key a path adds, as a denial names it.
fn tracking_key(path: ApplyPath) -> &'static str {
    match path {
        ApplyPath::Argo(Tracking::Label, _) => "metadata.labels[\"app.kubernetes.io/instance\"]",
        ApplyPath::Argo(_, _) => "metadata.annotations[\"argocd.argoproj.io/tracking-id\"]",
        ApplyPath::Flux => "metadata.labels[\"kustomize.toolkit.fluxcd.io/name\"]",
    }
}

#[test]
fn every_argo_cd_apply_path_is_allowed_under_kubernetes_argocd_and_denied_without() {
    let s = sign_with_key();
    for (kind, signed) in signed_pairs(&s) {
        for path in ARGO_PATHS {
            for op in [Operation::Create, Operation::Update] {
                let what = format!("{kind} {path:?} {op:?}");
                let object = live(signed, path, op);
                assert_allowed(&s.pubkey, &object, "kubernetes,argocd", &what);
                assert_allowed(&s.pubkey, &object, "argocd,kubernetes", &what);
                let key = tracking_key(path);
                assert_denied(&s.pubkey, &object, "kubernetes", key, &what);
                assert_denied(&s.pubkey, &object, "kubernetes,flux", key, &what);
                // The server's fields need the kubernetes profile: argocd alone adds no more.
                assert_denied(&s.pubkey, &object, "argocd", "metadata.uid", &what);
            }
        }
    }
}

#[test]
fn flux_server_side_apply_is_allowed_under_kubernetes_flux_and_denied_without() {
    let s = sign_with_key();
    for (kind, signed) in signed_pairs(&s) {
        for op in [Operation::Create, Operation::Update] {
            let what = format!("{kind} Flux {op:?}");
            let object = live(signed, ApplyPath::Flux, op);
            assert_eq!(
                object["metadata"]["managedFields"][0]["manager"],
                "kustomize-controller"
            );
            assert_allowed(&s.pubkey, &object, "kubernetes,flux", &what);
            let key = tracking_key(ApplyPath::Flux);
            assert_denied(&s.pubkey, &object, "kubernetes", key, &what);
            assert_denied(&s.pubkey, &object, "kubernetes,argocd", key, &what);
        }
    }
}

#[test]
fn a_changed_spec_is_denied_under_the_gitops_profiles() {
    let s = sign_with_key();
    let mut deployment = s.deployment.clone();
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:evil");
    let mut exception = s.exception.clone();
    exception["spec"]["exceptions"][0]["policyName"] = json!("disallow-privileged");
    for (tampered, field) in [
        (&deployment, "spec.template.spec.containers[0].image"),
        (&exception, "spec.exceptions[0].policyName"),
    ] {
        // The tampered manifest went through the tool: the object and its last-applied
        // both hold it.
        for path in [
            ARGO_CLIENT_SIDE,
            ApplyPath::Argo(Tracking::Annotation, Apply::ServerSide),
        ] {
            let object = live(tampered, path, Operation::Update);
            assert_denied(
                &s.pubkey,
                &object,
                "kubernetes,argocd",
                field,
                &format!("{path:?}"),
            );
        }
        let object = live(tampered, ApplyPath::Flux, Operation::Update);
        assert_denied(&s.pubkey, &object, "kubernetes,flux", field, "Flux");
    }
}

/// Edits the `last-applied-configuration` annotation of `object` with `edit`, written back
/// as kubectl writes it (Go's JSON and a newline).
fn edit_last_applied(object: &mut Value, edit: impl FnOnce(&mut Value)) {
    let mut applied: Value = serde_json::from_str(
        object["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    edit(&mut applied);
    set_in(
        object,
        "annotations",
        LAST_APPLIED,
        &format!("{}\n", go_json(&applied)),
    );
}

#[test]
fn a_tracking_id_naming_another_object_is_denied() {
    let s = sign_with_key();
    for (kind, signed) in signed_pairs(&s) {
        let group = signed["apiVersion"]
            .as_str()
            .unwrap()
            .split('/')
            .next()
            .unwrap();
        let name = signed["metadata"]["name"].as_str().unwrap();
        let others = [
            ("other name", format!("{APP}:{group}/{kind}:team/other")),
            (
                "other namespace",
                format!("{APP}:{group}/{kind}:prod/{name}"),
            ),
            (
                "other kind",
                format!("{APP}:{group}/StatefulSet:team/{name}"),
            ),
            (
                "other group",
                format!("{APP}:example.com/{kind}:team/{name}"),
            ),
            ("core group", format!("{APP}:/{kind}:team/{name}")),
        ];
        for (what, id) in others {
            for apply in [Apply::ServerSide, Apply::ClientSide] {
                let path = ApplyPath::Argo(Tracking::Annotation, apply);
                // As if Argo CD had written it: on the object and in its last-applied.
                let mut manifest = signed.clone();
                set_in(&mut manifest, "annotations", TRACKING_ID, &id);
                let mut object = live(&manifest, path, Operation::Create);
                set_in(&mut object, "annotations", TRACKING_ID, &id);
                if apply == Apply::ClientSide {
                    edit_last_applied(&mut object, |applied| {
                        set_in(applied, "annotations", TRACKING_ID, &id)
                    });
                }
                assert_denied(
                    &s.pubkey,
                    &object,
                    "kubernetes,argocd",
                    "metadata.annotations[\"argocd.argoproj.io/tracking-id\"]",
                    &format!("{kind} {what} {apply:?}: {id}"),
                );
            }
        }
    }
}

/// `signed`, updated through `path` with `key` of its metadata `map` (labels or
/// annotations) set to `value`, is denied under `profiles` naming that key; `what` names
/// the case.
fn assert_changed_key_denied(
    pubkey: &Path,
    signed: &Value,
    path: ApplyPath,
    (map, key, value): (&str, &str, &str),
    profiles: &str,
    what: &str,
) {
    let mut object = live(signed, path, Operation::Update);
    set_in(&mut object, map, key, value);
    assert_denied(pubkey, &object, profiles, &meta_path(map, key), what);
}

#[test]
fn labels_and_annotations_beyond_the_tolerated_keys_are_denied() {
    let s = sign_with_key();
    let extras = [
        ("labels", "app.kubernetes.io/managed-by", "argocd"),
        ("labels", "team", "evil"),
        (
            "annotations",
            "argocd.argoproj.io/sync-options",
            "Prune=false",
        ),
        (
            "annotations",
            "argocd.argoproj.io/compare-options",
            "IgnoreExtraneous",
        ),
        ("labels", "kustomize.toolkit.fluxcd.io/prune", "disabled"),
        ("annotations", "kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
    ];
    for (kind, signed) in signed_pairs(&s) {
        for (map, key, value) in extras {
            for (path, profiles) in [
                (ARGO_SERVER_SIDE, "kubernetes,argocd"),
                (ApplyPath::Flux, "kubernetes,flux"),
                (ApplyPath::Flux, "kubernetes,argocd,flux"),
            ] {
                let what = format!("{kind} {path:?} {key}");
                assert_changed_key_denied(
                    &s.pubkey,
                    signed,
                    path,
                    (map, key, value),
                    profiles,
                    &what,
                );
            }
        }
    }
}

/// An edit of a manifest.
type Edit = fn(&mut Value);

#[test]
fn a_last_applied_that_differs_in_a_non_tolerated_field_is_denied() {
    let s = sign_with_key();
    let path = ARGO_CLIENT_SIDE;
    let edits: [(&str, Edit); 4] = [
        ("an added field", |v| v["spec"]["extra"] = json!(true)),
        ("a dropped label", |v| {
            v["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove(INSTANCE);
            v["metadata"]["labels"]["x"] = json!("y");
        }),
        ("another namespace", |v| {
            v["metadata"]["namespace"] = json!("prod")
        }),
        ("an extra annotation", |v| {
            v["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] = json!("Prune=false")
        }),
    ];
    for (kind, signed) in signed_pairs(&s) {
        for (what, edit) in edits {
            let mut object = live(signed, path, Operation::Update);
            edit_last_applied(&mut object, edit);
            assert_denied(
                &s.pubkey,
                &object,
                "kubernetes,argocd",
                "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]",
                &format!("{kind}: last-applied with {what}"),
            );
        }
    }
}

#[test]
fn a_tolerated_key_in_the_signed_document_must_keep_its_signed_value() {
    let s = sign_with_key();
    // Submitted with the signed values: allowed.
    let ok = live(&s.tracked, ARGO_CLIENT_SIDE, Operation::Update);
    assert_allowed(
        &s.pubkey,
        &ok,
        "kubernetes,argocd",
        "signed tracking values",
    );
    for (map, key, value, profiles) in [
        ("labels", INSTANCE, "other-app", "kubernetes,argocd"),
        (
            "annotations",
            TRACKING_ID,
            "other-app:apps/Deployment:team/tracked",
            "kubernetes,argocd",
        ),
        (
            "labels",
            "kustomize.toolkit.fluxcd.io/name",
            "other",
            "kubernetes,flux",
        ),
    ] {
        let what = format!("signed {key} changed");
        let change = (map, key, value);
        assert_changed_key_denied(
            &s.pubkey,
            &s.tracked,
            ARGO_SERVER_SIDE,
            change,
            profiles,
            &what,
        );
        // Removed is as much a change as replaced.
        let mut object = live(&s.tracked, ApplyPath::Flux, Operation::Update);
        metadata(&mut object)[map]
            .as_object_mut()
            .unwrap()
            .remove(key);
        assert_denied(
            &s.pubkey,
            &object,
            profiles,
            &meta_path(map, key),
            &format!("signed {key} removed"),
        );
    }
}

#[test]
fn keyless_signed_manifests_follow_the_same_rules() {
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "app.yaml",
        &format!("{}---\n{EXCEPTION}", deployment()),
    );
    let output = dir.path().join("app.signed.yaml");
    stack.keyless_sign_to(
        mansign(),
        &[],
        &input,
        &output,
        format!("@{}", stack.id_token_file().display()),
    );
    let signed = read_stream(&std::fs::read_to_string(&output).unwrap());
    let trusted_root = stack.trusted_root();
    let trust = [
        "--trusted-root".as_ref(),
        trusted_root.as_os_str(),
        "--certificate-identity".as_ref(),
        stack.identity().as_ref(),
        "--certificate-oidc-issuer".as_ref(),
        stack.issuer().as_ref(),
    ];
    let run = |object: &Value, profiles: &str| verify_trusting(&trust, object, profiles);
    for manifest in &signed {
        for path in [
            ARGO_SERVER_SIDE,
            ApplyPath::Argo(Tracking::Annotation, Apply::ClientSide),
        ] {
            let object = live(manifest, path, Operation::Update);
            let (code, out) = run(&object, "kubernetes,argocd");
            assert_eq!(code, 0, "{path:?}: {out}");
            let (code, out) = run(&object, "kubernetes");
            assert_eq!(code, 1, "{path:?}: {out}");
            assert!(out.contains(tracking_key(path)), "{out}");
        }
        let object = live(manifest, ApplyPath::Flux, Operation::Create);
        assert_eq!(run(&object, "kubernetes,flux").0, 0);
        assert_eq!(run(&object, "kubernetes,argocd").0, 1);
        let mut tampered = object.clone();
        tampered["spec"]["tampered"] = json!(true);
        assert_eq!(run(&tampered, "kubernetes,flux").0, 1);
    }
}

/// A `ManifestPolicy` trusting `pubkey` with the given `ignoreProfile` line (and the
/// bindings of its GitOps profiles), in `dir/name`.
fn policy_named(dir: &Path, name: &str, pubkey: &Path, ignore_profile: &str) -> PathBuf {
    write(
        dir,
        name,
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: gitops}}\n\
             spec:\n{ignore_profile}{}  attestors:\n  - entries:\n    - keys: {{path: {}}}\n",
            binding_spec(ignore_profile),
            pubkey.display()
        ),
    )
}

#[test]
fn policy_files_take_the_same_profile_lists() {
    let s = sign_with_key();
    let argo = live(&s.exception, ARGO_CLIENT_SIDE, Operation::Update);
    let flux = live(&s.deployment, ApplyPath::Flux, Operation::Update);
    let argo_file = write(s.dir(), "argo.yaml", &to_yaml(&argo));
    let flux_file = write(s.dir(), "flux.yaml", &to_yaml(&flux));
    let run = |profile_line: &str, file: &Path| {
        let p = s.policy("policy.yaml", profile_line);
        mansign()
            .args(["verify", "--policy"])
            .arg(&p)
            .arg("-f")
            .arg(file)
            .output()
            .unwrap()
    };
    for (profile_line, file, expected) in [
        ("  ignoreProfile: kubernetes,argocd\n", &argo_file, 0),
        ("  ignoreProfile: kubernetes,argocd\n", &flux_file, 1),
        ("  ignoreProfile: [kubernetes, flux]\n", &flux_file, 0),
        ("  ignoreProfile: [kubernetes, flux]\n", &argo_file, 1),
        ("  ignoreProfile: kubernetes\n", &argo_file, 1),
        ("", &argo_file, 1),
    ] {
        assert_eq!(
            run(profile_line, file).status.code(),
            Some(expected),
            "{profile_line:?} {}",
            file.display()
        );
    }
    for bad in [
        "kubernetes,argo",
        "kubernetes,,argocd",
        "none,argocd",
        "argocd,argocd",
    ] {
        let out = run(&format!("  ignoreProfile: \"{bad}\"\n"), &argo_file);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("spec.ignoreProfile"), "{bad}: {err}");
    }
}

/// `docs` as one YAML stream.
fn stream(docs: &[&Value]) -> String {
    let texts: Vec<String> = docs.iter().map(|d| to_yaml(d)).collect();
    texts.join("---\n")
}

#[test]
fn print_verified_prints_the_documents_only_when_all_verified() {
    let s = sign_with_key();
    let good = write(
        s.dir(),
        "good.yaml",
        &stream(&[&s.deployment, &s.exception]),
    );
    let out = common::with_key("verify", &["--print-verified"], &good, &s.pubkey)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        read_stream(&String::from_utf8(out.stdout).unwrap()),
        [s.deployment.clone(), s.exception.clone()]
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 of 2 document(s) verified"));
    let mut tampered = s.exception.clone();
    tampered["spec"]["match"]["any"][0]["resources"]["namespaces"] = json!(["*"]);
    let bad = write(s.dir(), "bad.yaml", &stream(&[&s.deployment, &tampered]));
    let out = common::with_key(
        "verify",
        &["--print-verified", "--output", "json"],
        &bad,
        &s.pubkey,
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let report: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(report["verified"], false);
}

#[test]
fn cli_profile_lists_are_checked() {
    let s = sign_with_key();
    let object = live(&s.deployment, ApplyPath::Flux, Operation::Create);
    for bad in ["kubernetes,argo", "kubernetes,", "none,flux", "flux,flux"] {
        let (code, _) = verify(&s.pubkey, &object, bad);
        assert_eq!(code, 2, "{bad}");
    }
}

// The admission half: each apply path as the API server sends it to the webhook.

/// The `AdmissionReview` v1 request the API server sends for `object` on `path`
/// (server-side apply is a PATCH whose operation is CREATE or UPDATE; client-side apply
/// creates with POST and updates with a strategic-merge PATCH).
fn admission_review(manifest: &Value, path: ApplyPath, op: Operation) -> Value {
    let object = live(manifest, path, op);
    let api = object["apiVersion"].as_str().unwrap();
    let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
    let kind = object["kind"].as_str().unwrap();
    let resource = format!("{}s", kind.to_lowercase());
    let (manager, user) = match path {
        ApplyPath::Flux => (
            "kustomize-controller",
            "system:serviceaccount:flux-system:kustomize-controller",
        ),
        ApplyPath::Argo(..) => (
            "argocd-controller",
            "system:serviceaccount:argocd:argocd-application-controller",
        ),
    };
    let options_kind = match (path, op) {
        (ApplyPath::Argo(_, Apply::ClientSide), Operation::Create) => "CreateOptions",
        _ => "PatchOptions",
    };
    let old = match op {
        Operation::Create => Value::Null,
        // The stored object before this update: the same manifest, one generation earlier.
        Operation::Update => {
            let mut old = object.clone();
            old["metadata"]["generation"] = json!(1);
            old["metadata"]["resourceVersion"] = json!("48151600");
            old
        }
    };
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": if op == Operation::Create { "CREATE" } else { "UPDATE" },
            "userInfo": {"username": user, "uid": "9c2b", "groups": ["system:serviceaccounts", "system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind, "fieldManager": manager}
        }
    })
}

/// `mansign admission review --policy P -f review.json`: exit code and `response.allowed`.
fn review(dir: &Path, policy: &Path, request: &Value) -> (Option<i32>, Value) {
    let file = write(dir, "review.json", &serde_json::to_string(request).unwrap());
    let (out, response) = common::admission_review_json(policy, &file);
    assert_eq!(response["response"]["uid"], request["request"]["uid"]);
    (out.status.code(), response)
}

#[test]
fn admission_review_allows_each_apply_path_with_the_matching_profiles_and_denies_without() {
    let s = sign_with_key();
    let with_argocd = s.policy("argocd.yaml", "  ignoreProfile: kubernetes,argocd\n");
    let with_flux = s.policy("flux.yaml", "  ignoreProfile: [kubernetes, flux]\n");
    let kubernetes_only = s.policy("policy.yaml", "  ignoreProfile: kubernetes\n");
    let mut paths: Vec<(ApplyPath, &Path)> = ARGO_PATHS
        .iter()
        .map(|p| (*p, with_argocd.as_path()))
        .collect();
    paths.push((ApplyPath::Flux, with_flux.as_path()));
    for (kind, signed) in signed_pairs(&s) {
        for (path, matching) in &paths {
            for op in [Operation::Create, Operation::Update] {
                let what = format!("{kind} {path:?} {op:?}");
                let request = admission_review(signed, *path, op);
                let (code, response) = review(s.dir(), matching, &request);
                assert_eq!(response["response"]["allowed"], true, "{what}: {response}");
                assert_eq!(code, Some(0), "{what}");
                let (code, response) = review(s.dir(), &kubernetes_only, &request);
                assert_eq!(response["response"]["allowed"], false, "{what}: {response}");
                assert_eq!(code, Some(1), "{what}");
                let message = response["response"]["status"]["message"].as_str().unwrap();
                assert!(message.contains(tracking_key(*path)), "{what}: {message}");
                let other = if *path == ApplyPath::Flux {
                    &with_argocd
                } else {
                    &with_flux
                };
                let (_, response) = review(s.dir(), other, &request);
                assert_eq!(
                    response["response"]["allowed"], false,
                    "{what} under the other tool's profile: {response}"
                );
            }
        }
    }
}

#[test]
fn admission_review_denies_tampering_under_the_gitops_profiles() {
    let s = sign_with_key();
    let with_both = s.policy("policy.yaml", "  ignoreProfile: kubernetes,argocd,flux\n");
    let path = ARGO_CLIENT_SIDE;
    let mut changed = s.deployment.clone();
    changed["spec"]["replicas"] = json!(50);
    let mut cases = vec![(
        "changed spec",
        "spec.replicas",
        // Server-side: the message names the first difference, and there is no
        // last-applied before the spec.
        admission_review(&changed, ARGO_SERVER_SIDE, Operation::Update),
    )];
    let mut request = admission_review(
        &s.exception,
        ApplyPath::Argo(Tracking::Annotation, Apply::ServerSide),
        Operation::Create,
    );
    request["request"]["object"]["metadata"]["annotations"][TRACKING_ID] = json!(format!(
        "{APP}:kyverno.io/PolicyException:kyverno/allow-debug"
    ));
    cases.push((
        "tracking id of another namespace",
        "metadata.annotations[\"argocd.argoproj.io/tracking-id\"]",
        request,
    ));
    let mut request = admission_review(&s.deployment, ApplyPath::Flux, Operation::Update);
    request["request"]["object"]["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/prune"] =
        json!("disabled");
    cases.push((
        "extra label",
        "metadata.labels[\"kustomize.toolkit.fluxcd.io/prune\"]",
        request,
    ));
    let mut request = admission_review(&s.exception, path, Operation::Create);
    edit_last_applied(&mut request["request"]["object"], |applied| {
        applied["spec"]["exceptions"][0]["ruleNames"] = json!(["host-path", "all"])
    });
    cases.push((
        "last-applied differs",
        "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]",
        request,
    ));
    for (what, field, request) in cases {
        let (code, response) = review(s.dir(), &with_both, &request);
        assert_eq!(response["response"]["allowed"], false, "{what}: {response}");
        assert_eq!(code, Some(1), "{what}");
        let message = response["response"]["status"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{what}: {message}");
    }
}

// The Argo CD Config Management Plugin (deploy/argocd-cmp/).

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the plugin's `generate` the way argocd-cmp-server does: in the application's
/// source directory, with the build environment and the Application's plugin env
/// (prefixed `ARGOCD_ENV_`), and the sidecar's own settings.
fn generate(app_dir: &Path, policy: &Path, exclude: Option<&str>) -> std::process::Output {
    let plugin: Value = read_stream(
        &std::fs::read_to_string(repo().join("deploy/argocd-cmp/plugin.yaml")).unwrap(),
    )
    .remove(0);
    let command: Vec<String> = plugin["spec"]["generate"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    // The sidecar mounts generate.sh at the path plugin.yaml names; run the repository's copy.
    assert_eq!(command, ["/bin/sh", "/home/argocd/mansign/generate.sh"]);
    let bin = assert_cmd::cargo::cargo_bin("mansign");
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.arg(repo().join("deploy/argocd-cmp/generate.sh"))
        .current_dir(app_dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", app_dir)
        .env("MANSIGN", &bin)
        .env("MANSIGN_POLICY", policy)
        .env("ARGOCD_APP_NAME", APP)
        .env("ARGOCD_APP_NAMESPACE", "team")
        .env(
            "ARGOCD_APP_REVISION",
            "0123456789abcdef0123456789abcdef01234567",
        )
        .env("ARGOCD_APP_SOURCE_PATH", "signed")
        .env(
            "ARGOCD_APP_SOURCE_REPO_URL",
            "https://git.example/org/seed.git",
        )
        .env("ARGOCD_APP_SOURCE_TARGET_REVISION", "main")
        .env("KUBE_VERSION", "1.31.0")
        .env("KUBE_API_VERSIONS", "v1,apps/v1,kyverno.io/v2")
        .env("ARGOCD_APP_PARAMETERS", "[]");
    if let Some(globs) = exclude {
        cmd.env("ARGOCD_ENV_MANSIGN_EXCLUDE", globs);
    }
    cmd.output().unwrap()
}

/// An application path holding the signed manifests as git would (plus a README), and a
/// policy trusting the key.
fn app_tree(s: &Signed) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("signed");
    write(&app, "deployment.yaml", &to_yaml(&s.deployment));
    write(&app, "policies/exception.yaml", &to_yaml(&s.exception));
    write(&app, "README.md", "# signed manifests\n");
    let policy_dir = dir.path().join("policy");
    let pubkey = policy_dir.join("release.pub");
    std::fs::create_dir_all(&policy_dir).unwrap();
    std::fs::copy(&s.pubkey, &pubkey).unwrap();
    let p = write(
        &policy_dir,
        "policy.yaml",
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {name: seed}\n\
         spec:\n  attestors:\n  - entries:\n    - keys: {path: release.pub}\n",
    );
    (dir, app, p)
}

fn by_name(mut docs: Vec<Value>) -> Vec<Value> {
    docs.sort_by_key(|d| {
        d["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    docs
}

#[test]
fn plugin_generate_prints_exactly_the_verified_manifests() {
    let s = sign_with_key();
    let (_dir, app, policy) = app_tree(&s);
    let out = generate(&app, &policy, Some("README.md"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("2 of 2 document(s) verified"), "{stderr}");
    assert!(stderr.contains(APP), "{stderr}");
    let printed = read_stream(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(
        by_name(printed),
        by_name(vec![s.deployment.clone(), s.exception.clone()])
    );
}

#[test]
fn plugin_generate_fails_naming_the_tampered_file_and_prints_nothing() {
    let s = sign_with_key();
    let (_dir, app, policy) = app_tree(&s);
    let mut exception = s.exception.clone();
    exception["spec"]["exceptions"][0]["policyName"] = json!("disallow-privileged");
    write(&app, "policies/exception.yaml", &to_yaml(&exception));
    let out = generate(&app, &policy, Some("README.md"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("policies/exception.yaml"), "{stderr}");
    assert!(stderr.contains("spec.exceptions[0].policyName"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn plugin_generate_fails_on_an_unsigned_manifest_and_on_unexpected_files() {
    let s = sign_with_key();
    let (_dir, app, policy) = app_tree(&s);
    // Not excluded: the README is not a manifest, and mansign says so.
    let out = generate(&app, &policy, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("README.md"));
    assert!(out.stdout.is_empty());
    // An unsigned manifest beside the signed ones fails the whole sync.
    write(
        &app,
        "extra.yaml",
        EXCEPTION.replace("allow-debug", "extra").as_str(),
    );
    let out = generate(&app, &policy, Some("README.md"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("extra.yaml"), "{stderr}");
    assert!(out.stdout.is_empty());
    // Excluding everything is not an empty success (Argo CD would prune what it manages).
    let out = generate(&app, &policy, Some("*.yaml,*.md,policies"));
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    // Several comma-separated globs: each one is an --exclude, and what is excluded is
    // neither verified nor printed.
    let out = generate(&app, &policy, Some("README.md,extra.yaml"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        read_stream(&String::from_utf8(out.stdout).unwrap()).len(),
        2
    );
}

#[test]
fn plugin_manifests_agree_with_each_other_and_with_argo_cd_s_conventions() {
    let dir = repo().join("deploy/argocd-cmp");
    let read =
        |name: &str| read_stream(&std::fs::read_to_string(dir.join(name)).unwrap()).remove(0);
    let plugin = read("plugin.yaml");
    assert_eq!(plugin["apiVersion"], "argoproj.io/v1alpha1");
    assert_eq!(plugin["kind"], "ConfigManagementPlugin");
    let patch = read("repo-server-patch.yaml");
    assert_eq!(patch["kind"], "Deployment");
    assert_eq!(patch["metadata"]["name"], "argocd-repo-server");
    let container = &patch["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["command"],
        json!(["/var/run/argocd/argocd-cmp-server"])
    );
    assert_eq!(container["securityContext"]["runAsUser"], 999);
    let mounts = container["volumeMounts"].as_array().unwrap();
    let mount = |path: &str| {
        mounts
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("no mount at {path}"))
    };
    assert_eq!(mount("/var/run/argocd")["name"], "var-files");
    assert_eq!(mount("/home/argocd/cmp-server/plugins")["name"], "plugins");
    let config = mount("/home/argocd/cmp-server/config/plugin.yaml");
    assert_eq!(config["subPath"], "plugin.yaml");
    let script = mount("/home/argocd/mansign/generate.sh");
    assert_eq!(script["subPath"], "generate.sh");
    assert_eq!(script["name"], config["name"]);
    assert!(mount("/home/argocd/mansign/policy")["readOnly"] == true);
    assert!(
        mount("/tmp")["name"] != "tmp",
        "the repo-server's own /tmp must not be shared"
    );
    let kustomization = read("kustomization.yaml");
    assert_eq!(kustomization["kind"], "Component");
    let generated = &kustomization["configMapGenerator"][0];
    let volumes = patch["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let plugin_volume = volumes
        .iter()
        .find(|v| v["name"] == config["name"])
        .unwrap();
    assert_eq!(plugin_volume["configMap"]["name"], generated["name"]);
    assert_eq!(generated["files"], json!(["plugin.yaml", "generate.sh"]));
    assert_eq!(generated["options"]["disableNameSuffixHash"], true);
    // The policy path the script defaults to is inside the policy mount.
    let env = container["env"].as_array().unwrap();
    let policy = env.iter().find(|e| e["name"] == "MANSIGN_POLICY").unwrap();
    assert!(
        policy["value"]
            .as_str()
            .unwrap()
            .starts_with("/home/argocd/mansign/policy/")
    );
}
