//! What the API server itself writes into a signed object, against the real kube-apiserver
//! (`scripts/cluster.sh`, as envtest runs it: no controller-manager) with the real `kubectl`
//! and the real `mansign admission serve` registered as a validating webhook (issue 35,
//! items 6, 7, 9, 10): the `kubernetes` profile tolerates exactly the server's values, and
//! a client that sends another value, or launders one through an update, is denied.
//!
//! One API server and one webhook for the module; each test uses its own namespace (made
//! gated by a label the webhook configuration selects), so the tests run in parallel.
//! Every write prints what was applied and whether the cluster admitted it.

use crate::common;

use common::cluster::Cluster;
use common::pki::Pki;
use common::webhook::Webhook;
use common::{key_pair, write};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The label the webhook configuration's `namespaceSelector` selects.
const GATED: &str = "mansign.dev/gated";

/// The resources the webhook is called for (its rules list no subresource: a `scale`
/// write is not sent to it, as with deploy/).
const RESOURCES: &[&str] = &[
    "services",
    "deployments",
    "statefulsets",
    "daemonsets",
    "replicasets",
    "jobs",
    "cronjobs",
];

struct Env {
    cluster: Cluster,
    dir: tempfile::TempDir,
    key: PathBuf,
    _webhook: Webhook,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(Env::new)
}

impl Env {
    fn new() -> Env {
        let cluster = Cluster::start();
        let dir = tempfile::Builder::new()
            .prefix("mansign-defaults-")
            .tempdir()
            .unwrap();
        let (key, pubkey) = key_pair(dir.path(), "release");
        let policy = write(
            dir.path(),
            "policy.yaml",
            &format!(
                "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: defaults\nspec:\n  match:\n    kinds: [v1/Service, apps/v1/Deployment, apps/v1/StatefulSet, apps/v1/DaemonSet, apps/v1/ReplicaSet, batch/v1/Job, batch/v1/CronJob]\n  ignoreProfile: kubernetes\n  attestors:\n  - entries:\n    - keys:\n        path: {}\n",
                pubkey.display()
            ),
        );
        let pki = Pki::new();
        pki.install(dir.path(), "mansign-webhook");
        let webhook = Webhook::start(dir.path(), &[policy], 0);
        let configuration = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "mansign-test-defaults"},
            "webhooks": [{
                "name": "defaults.test.mansign.dev",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                "matchPolicy": "Equivalent",
                "clientConfig": {"url": webhook.url(), "caBundle": pki.ca_bundle()},
                "namespaceSelector": {"matchLabels": {GATED: "true"}},
                "rules": [{
                    "apiGroups": ["", "apps", "batch"],
                    "apiVersions": ["*"],
                    "resources": RESOURCES,
                    "operations": ["CREATE", "UPDATE"],
                    "scope": "Namespaced",
                }],
            }],
        });
        let out = cluster.kubectl_stdin(&["apply", "-f", "-"], &configuration.to_string());
        assert!(
            out.status.success(),
            "register the webhook: {}",
            stderr(&out)
        );
        Env {
            cluster,
            dir,
            key,
            _webhook: webhook,
        }
    }

    /// A fresh namespace `name`, gated (`gated`) or not; returns once the API server calls
    /// the webhook for a gated one (an unsigned Service is denied under `--dry-run=server`).
    fn namespace(&self, name: &str, gated: bool) {
        self.cluster.kubectl_ok(&["create", "namespace", name]);
        if gated {
            self.gate(name);
        }
    }

    /// Labels namespace `ns` for the webhook and waits (at most 60 s) until its writes are
    /// reviewed.
    fn gate(&self, ns: &str) {
        self.cluster
            .kubectl_ok(&["label", "namespace", ns, &format!("{GATED}=true")]);
        let probe = format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: probe\n  namespace: {ns}\nspec:\n  ports:\n  - port: 80\n"
        );
        let start = Instant::now();
        loop {
            let out = self
                .cluster
                .kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], &probe);
            if !out.status.success() && stderr(&out).contains("denied the request") {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the webhook was not called for namespace {ns} within 60 s: {}",
                stderr(&out)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Signs `text` with the release key; returns the signed YAML.
    fn sign(&self, text: &str) -> String {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let input = write(self.dir.path(), &format!("in-{n}.yaml"), text);
        let output = self.dir.path().join(format!("out-{n}.yaml"));
        common::with_key("sign", &[], &input, &self.key)
            .arg("-o")
            .arg(&output)
            .assert()
            .success();
        std::fs::read_to_string(&output).unwrap()
    }

    /// `kubectl ARGS -f -` with `doc`; prints the verdict.
    fn kubectl_doc(&self, what: &str, args: &[&str], doc: &str) -> Output {
        let mut all = args.to_vec();
        all.extend(["-f", "-"]);
        let out = self.cluster.kubectl_stdin(&all, doc);
        report(what, &all, &out);
        out
    }

    /// `kubectl ARGS`; prints the verdict.
    fn kubectl(&self, what: &str, args: &[&str]) -> Output {
        let out = self.cluster.kubectl(args);
        report(what, args, &out);
        out
    }

    /// Fails unless `doc` written by `kubectl ARGS` is admitted.
    fn admitted(&self, what: &str, args: &[&str], doc: &str) {
        let out = self.kubectl_doc(what, args, doc);
        assert!(
            out.status.success(),
            "{what} (kubectl {args:?}): expected admitted, kubectl said: {}",
            stderr(&out)
        );
    }

    /// Fails unless `doc` written by `kubectl ARGS` is denied by mansign `[modified]`
    /// naming `field`.
    fn denied(&self, what: &str, args: &[&str], doc: &str, field: &str) {
        let out = self.kubectl_doc(what, args, doc);
        assert_denied(&out, what, field);
    }

    /// The object as stored, with its `managedFields`.
    fn get(&self, resource: &str, ns: &str) -> Value {
        let out = self.cluster.kubectl(&[
            "get",
            resource,
            "-n",
            ns,
            "--show-managed-fields",
            "-o",
            "json",
        ]);
        assert!(out.status.success(), "get {resource}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn report(what: &str, args: &[&str], out: &Output) {
    let (verdict, detail) = if out.status.success() {
        (
            "ADMITTED",
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    } else {
        ("DENIED/FAILED", stderr(out))
    };
    eprintln!(
        "{what}: kubectl {} -> {verdict}: {}",
        args.join(" "),
        detail.trim()
    );
}

/// Fails unless `out` is mansign's `[modified]` denial naming `field`.
fn assert_denied(out: &Output, what: &str, field: &str) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "{what}: expected a denial naming {field}, the cluster admitted it"
    );
    assert!(
        err.contains("denied the request") && err.contains("[modified]") && err.contains(field),
        "{what}: expected mansign's [modified] denial naming {field}, kubectl said: {err}"
    );
}

/// `doc` (one YAML document) with `value` at `path` (keys and list indexes joined by `.`).
fn with_field(doc: &str, path: &str, value: Value) -> String {
    let mut object = common::parse_objects(doc).remove(0);
    let keys: Vec<&str> = path.split('.').collect();
    let mut at = &mut object;
    for (i, key) in keys.iter().enumerate() {
        if i + 1 == keys.len() {
            at[*key] = value.clone();
        } else if let Ok(n) = key.parse::<usize>() {
            at = &mut at[n];
        } else {
            at = &mut at[*key];
        }
    }
    object.to_string()
}

/// Unsigned YAML of the kinds below, in namespace `ns`, named `name`.
fn service(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  selector:\n    app: {name}\n  ports:\n  - name: http\n    port: 80\n"
    )
}

fn pod_template(name: &str, restart: &str) -> String {
    format!(
        "    metadata:\n      labels:\n        app: {name}\n    spec:\n{restart}      containers:\n      - name: app\n        image: registry.example/app:1.2.3\n"
    )
}

fn workload(kind: &str, name: &str, ns: &str, extra: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{extra}  selector:\n    matchLabels:\n      app: {name}\n  template:\n{}",
        pod_template(name, "")
    )
}

fn job(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  template:\n{}",
        pod_template(name, "      restartPolicy: Never\n")
    )
}

fn cron_job(name: &str, ns: &str) -> String {
    let template: String = pod_template(name, "      restartPolicy: OnFailure\n")
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect();
    format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  schedule: \"*/5 * * * *\"\n  jobTemplate:\n    spec:\n      template:\n{template}"
    )
}

/// Writes the unsigned document of one kind: `(name, namespace)`.
type Maker = fn(&str, &str) -> String;

// ---------------------------------------------------------------------------------------
// Item 10: the server's defaults of each kind, and only those
// ---------------------------------------------------------------------------------------

/// Each kind signed the usual way (no defaults written out) is admitted by `kubectl create`
/// and by `kubectl apply --server-side`, then re-applied (client-side and server-side).
#[test]
fn signed_services_workloads_jobs_and_cron_jobs_are_admitted_with_the_server_s_defaults() {
    let env = env();
    let ns = "defaults-admitted";
    env.namespace(ns, true);
    let makers: &[(&str, &str, Maker)] = &[
        ("Service (a port without targetPort)", "service", service),
        ("StatefulSet", "statefulset", |n, ns| {
            workload("StatefulSet", n, ns, &format!("  serviceName: {n}\n"))
        }),
        ("DaemonSet", "daemonset", |n, ns| {
            workload("DaemonSet", n, ns, "")
        }),
        ("ReplicaSet", "replicaset", |n, ns| {
            workload("ReplicaSet", n, ns, "")
        }),
        ("Job", "job", job),
        ("CronJob", "cronjob", cron_job),
    ];
    for (what, resource, make) in makers {
        for (suffix, first) in [
            ("create", &["create"][..]),
            ("ssa", &["apply", "--server-side"][..]),
        ] {
            let name = format!("{resource}-{suffix}");
            let doc = env.sign(&make(&name, ns));
            env.admitted(&format!("signed {what} {name}"), first, &doc);
            for again in [&["apply", "--server-side"][..], &["apply"]] {
                env.admitted(&format!("signed {what} {name} again"), again, &doc);
            }
            let stored = env.get(&format!("{resource}/{name}"), ns);
            eprintln!("  stored {what}: {}", stored["spec"]);
        }
    }
}

/// A client that writes another value where the server would write its default is denied,
/// naming the field, on create and on server-side apply.
#[test]
fn values_other_than_the_server_s_defaults_are_denied() {
    let env = env();
    let ns = "defaults-denied";
    env.namespace(ns, true);
    let sts = env.sign(&workload("StatefulSet", "sts", ns, "  serviceName: sts\n"));
    let ds = env.sign(&workload("DaemonSet", "ds", ns, ""));
    let job = env.sign(&job("job", ns));
    let cron = env.sign(&cron_job("cron", ns));
    let svc = env.sign(&service("svc", ns));
    let cases = [
        (
            "Service targetPort: 8080 (not its port)",
            with_field(&svc, "spec.ports.0.targetPort", json!(8080)),
            "spec.ports[0].targetPort",
        ),
        (
            "StatefulSet podManagementPolicy: Parallel",
            with_field(&sts, "spec.podManagementPolicy", json!("Parallel")),
            "spec.podManagementPolicy",
        ),
        (
            "StatefulSet partition: 1",
            with_field(
                &sts,
                "spec.updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
            ),
            "spec.updateStrategy.rollingUpdate.partition",
        ),
        (
            "StatefulSet whenDeleted: Delete",
            with_field(
                &sts,
                "spec.persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Delete", "whenScaled": "Retain"}),
            ),
            "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
        ),
        (
            "DaemonSet maxUnavailable: 100%",
            with_field(
                &ds,
                "spec.updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}}),
            ),
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
        ),
        (
            "DaemonSet updateStrategy: OnDelete",
            with_field(&ds, "spec.updateStrategy", json!({"type": "OnDelete"})),
            "spec.updateStrategy.type",
        ),
        (
            "Job backoffLimit: 0",
            with_field(&job, "spec.backoffLimit", json!(0)),
            "spec.backoffLimit",
        ),
        (
            "Job completions: 3",
            with_field(&job, "spec.completions", json!(3)),
            "spec.completions",
        ),
        (
            "Job podReplacementPolicy: Failed",
            with_field(&job, "spec.podReplacementPolicy", json!("Failed")),
            "spec.podReplacementPolicy",
        ),
        // A Job's generated labels with another value are refused by the API server's own
        // validation (`must be 'job'`), before any webhook: no case here.
        (
            "Job labels of a client's (not the template's)",
            with_field(&job, "metadata.labels", json!({"team": "other"})),
            "metadata.labels.team",
        ),
        (
            "CronJob concurrencyPolicy: Forbid",
            with_field(&cron, "spec.concurrencyPolicy", json!("Forbid")),
            "spec.concurrencyPolicy",
        ),
        (
            "CronJob successfulJobsHistoryLimit: 0",
            with_field(&cron, "spec.successfulJobsHistoryLimit", json!(0)),
            "spec.successfulJobsHistoryLimit",
        ),
    ];
    for (what, doc, field) in &cases {
        for args in [
            &["create", "--dry-run=server"][..],
            &["apply", "--server-side", "--dry-run=server"],
        ] {
            let out = env.kubectl_doc(what, args, doc);
            assert_denied(&out, what, field);
        }
    }
    // The signed documents themselves are admitted (the control).
    for (what, doc) in [
        ("signed Service", &svc),
        ("signed StatefulSet", &sts),
        ("signed DaemonSet", &ds),
        ("signed Job", &job),
        ("signed CronJob", &cron),
    ] {
        env.admitted(what, &["create", "--dry-run=server"], doc);
    }
}

// ---------------------------------------------------------------------------------------
// Item 7: the DaemonSet template generation
// ---------------------------------------------------------------------------------------

/// `deprecated.daemonset.template.generation` is the server's only as `1` on create, and on
/// an update the stored generation (plus one when the template changed).
#[test]
fn a_daemon_set_template_generation_is_tolerated_only_as_the_server_writes_it() {
    let env = env();
    let ns = "defaults-generation";
    env.namespace(ns, true);
    // The other DaemonSet defaults written out, so that only the generation is judged.
    let text = workload(
        "DaemonSet",
        "agent",
        ns,
        "  revisionHistoryLimit: 10\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxUnavailable: 1\n      maxSurge: 0\n",
    );
    let doc = env.sign(&text);
    let annotation = "deprecated.daemonset.template.generation";
    let mut chosen = common::parse_objects(&doc).remove(0);
    chosen["metadata"]["annotations"][annotation] = json!("5");
    for args in [
        &["create", "--dry-run=server"][..],
        &["apply", "--server-side", "--dry-run=server"],
    ] {
        env.denied(
            "a client's template generation 5",
            args,
            &chosen.to_string(),
            annotation,
        );
    }
    env.admitted("signed DaemonSet", &["create"], &doc);
    env.admitted("signed DaemonSet again", &["apply"], &doc);
    env.admitted("signed DaemonSet again", &["apply", "--server-side"], &doc);
    // A new signed version with another pod template: the server counts 2.
    let v2 = env.sign(&text.replace("app:1.2.3", "app:1.2.4"));
    env.admitted("signed DaemonSet v2", &["apply"], &v2);
    let stored = env.get("daemonset/agent", ns);
    assert_eq!(
        stored["metadata"]["annotations"][annotation], "2",
        "{stored}"
    );
    env.admitted("signed DaemonSet v2 replaced", &["replace"], &v2);
}

// ---------------------------------------------------------------------------------------
// Item 9: replicas an autoscaler or `kubectl scale` set
// ---------------------------------------------------------------------------------------

/// A workload signed without `replicas` and scaled through the `scale` subresource is
/// admitted on its next signed version and on unchanged re-applies (client-side and
/// server-side); a client writing `replicas` into the object itself is denied.
#[test]
fn replicas_set_through_the_scale_subresource_are_tolerated_and_a_client_s_are_not() {
    let env = env();
    let ns = "defaults-scaled";
    env.namespace(ns, true);
    for (kind, extra) in [
        ("Deployment", String::new()),
        (
            "StatefulSet",
            "  serviceName: scaled-statefulset\n".to_string(),
        ),
        ("ReplicaSet", String::new()),
    ] {
        let resource = kind.to_lowercase();
        let name = format!("scaled-{resource}");
        let text = workload(kind, &name, ns, &extra);
        let doc = env.sign(&text);
        let object = format!("{resource}/{name}");
        env.admitted(&format!("signed {kind}"), &["apply"], &doc);
        let out = env.kubectl(
            &format!("scale the {kind}"),
            &["scale", &object, "-n", ns, "--replicas=3"],
        );
        assert!(out.status.success(), "kubectl scale: {}", stderr(&out));
        let stored = env.get(&object, ns);
        assert_eq!(stored["spec"]["replicas"], 3, "{stored}");
        let scale_owner = stored["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["fieldsV1"]["f:spec"].get("f:replicas").is_some())
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(scale_owner["subresource"], "scale", "{stored}");
        for args in [&["apply"][..], &["apply", "--server-side"]] {
            env.admitted(
                &format!("signed {kind} re-applied at 3 replicas"),
                args,
                &doc,
            );
        }
        let v2 = env.sign(&text.replace("app:1.2.3", "app:1.2.4"));
        env.admitted(&format!("signed {kind} v2 at 3 replicas"), &["apply"], &v2);
        assert_eq!(env.get(&object, ns)["spec"]["replicas"], 3);
        // A client that writes replicas into the object itself.
        let out = env.kubectl(
            &format!("a client patches the {kind}'s replicas"),
            &[
                "patch",
                &object,
                "-n",
                ns,
                "--type=merge",
                "-p",
                r#"{"spec":{"replicas":5}}"#,
            ],
        );
        assert_denied(&out, &format!("{kind} replicas patched"), "spec.replicas");
        let with_replicas = with_field(&v2, "spec.replicas", json!(5));
        env.denied(
            &format!("{kind} with a client's replicas (server-side apply)"),
            &["apply", "--server-side", "--force-conflicts"],
            &with_replicas,
            "spec.replicas",
        );
    }
}

// ---------------------------------------------------------------------------------------
// Item 6: an address a client chose, laundered by a plain replace or apply
// ---------------------------------------------------------------------------------------

/// A Service whose `clusterIP` a client chose exists from before the namespace was gated;
/// `kubectl replace` and `kubectl apply` of the signed document drop the field's ownership
/// while the registry copies the address back: denied, because `oldObject` shows the
/// address owned. The same writes of a Service whose address was allocated are admitted.
#[test]
fn a_client_chosen_address_is_not_laundered_by_replace_or_apply() {
    let env = env();
    let ns = "defaults-laundry";
    env.namespace(ns, false);
    // `targetPort` written out, so that only the addresses are judged.
    let signed = |name: &str| {
        env.sign(&service(name, ns).replace("    port: 80\n", "    port: 80\n    targetPort: 80\n"))
    };
    // Addresses of the static band (the lowest 16 of 10.0.0.0/24, which the allocator hands
    // out last: feature ServiceIPStaticSubrange), so no allocated Service holds them.
    let chosen = [
        (
            "laundered-replace",
            "10.0.0.11",
            &["create"][..],
            &["replace"][..],
        ),
        (
            "laundered-apply",
            "10.0.0.12",
            &["apply"][..],
            &["apply"][..],
        ),
    ];
    let mut docs = Vec::new();
    for (name, ip, first, _) in &chosen {
        let doc = signed(name);
        let with_ip = with_field(&doc, "spec.clusterIP", json!(ip));
        env.admitted(
            &format!("{name}: a client's clusterIP {ip}, before the gate"),
            first,
            &with_ip,
        );
        docs.push(doc);
    }
    let allocated = signed("allocated");
    env.admitted("allocated, before the gate", &["apply"], &allocated);
    env.gate(ns);
    for ((name, ip, _, then), doc) in chosen.iter().zip(&docs) {
        let out = env.kubectl_doc(
            &format!("{name}: the signed document over the client's {ip}"),
            then,
            doc,
        );
        assert_denied(&out, name, "spec.clusterIP");
        let stored = env.get(&format!("service/{name}"), ns);
        assert_eq!(stored["spec"]["clusterIP"], *ip);
    }
    for args in [&["replace"][..], &["apply"], &["apply", "--server-side"]] {
        env.admitted("allocated address, signed document again", args, &allocated);
    }
}
