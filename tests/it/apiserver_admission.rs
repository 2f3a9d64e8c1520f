//! The admission webhook called by a real Kubernetes API server (issue 23): etcd and
//! kube-apiserver v1.34 on loopback (`scripts/cluster.sh`, as envtest runs them), the real
//! `kubectl`, and the real `mansign admission serve`, registered with the
//! ValidatingWebhookConfiguration from `deploy/` (a URL client config on loopback and its
//! caBundle; everything else as shipped) next to a second configuration for the built-in
//! kinds of `testdata/cluster/signed-set/`.
//!
//! A third webhook, a recorder in this test (always allows, `failurePolicy: Ignore`), keeps
//! the AdmissionReview bodies the API server sends, so what the server really sends is
//! printed and checked (and recorded into `testdata/cluster/recorded/`, see its README).
//!
//! Every test prints what it applied and whether the cluster admitted or denied it. A
//! cluster that cannot be built or started fails the tests; nothing is skipped.

use crate::common;

use common::cluster::Cluster;
use common::dup_tests_a::data;
use common::pki::Pki;
use common::webhook::Webhook;
use common::{fixture, key_pair, mansign, write};
use serde_json::{Value, json};
use std::io::{BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Namespaces made before the webhooks are registered, labelled for the test webhook.
const NAMESPACES: &[&str] = &["pe", "stored", "status", "gitops", "recorded", "failclosed"];
/// A namespace only deploy/'s configuration covers (not labelled [`GATED`]).
const SHIPPED_ONLY: &str = "shipped";
/// The label the test configuration's `namespaceSelector` selects (the shipped one selects
/// every namespace but mansign-system and kube-system).
const GATED: &str = "mansign.dev/gated";

// ---------------------------------------------------------------------------------------
// The recorder: a second validating webhook that allows everything and keeps the bodies
// ---------------------------------------------------------------------------------------

struct Recorder {
    port: u16,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Recorder {
    /// HTTP/1.1 over TLS (no ALPN, so the API server's Go client speaks HTTP/1.1), on its
    /// own threads; answers every AdmissionReview `allowed: true`.
    fn start(cert_pem: &str, key_pem: &str) -> Recorder {
        use rustls_pki_types::pem::PemObject as _;
        let certs: Vec<rustls_pki_types::CertificateDer<'static>> =
            rustls_pki_types::CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap();
        let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let config = config.clone();
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut reader = BufReader::new(rustls::StreamOwned::new(conn, tcp));
                    while let Some(body) = read_request(&mut reader) {
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let answer = json!({
                            "apiVersion": "admission.k8s.io/v1",
                            "kind": "AdmissionReview",
                            "response": {"uid": review["request"]["uid"], "allowed": true},
                        })
                        .to_string();
                        kept.lock().unwrap().push(review);
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                            answer.len()
                        );
                        let out = reader.get_mut();
                        if out.write_all(head.as_bytes()).is_err()
                            || out.write_all(answer.as_bytes()).is_err()
                            || out.flush().is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        Recorder { port, bodies }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/record", self.port)
    }

    /// The whole recorded body (the AdmissionReview) of `request`, found by its uid.
    fn body_of(&self, request: &Value) -> Value {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .find(|b| b["request"]["uid"] == request["uid"])
            .cloned()
            .unwrap()
    }

    /// The recorded requests (`request` of each body) that `pick` selects, waiting up to
    /// 10 s for the first.
    fn find(&self, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let found: Vec<Value> = self
                .bodies
                .lock()
                .unwrap()
                .iter()
                .filter(|b| pick(&b["request"]))
                .map(|b| b["request"].clone())
                .collect();
            if !found.is_empty() || start.elapsed() > Duration::from_secs(10) {
                return found;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// One HTTP/1.1 request's body (Content-Length framed); `None` at end of stream or on error.
fn read_request(reader: &mut impl std::io::BufRead) -> Option<Vec<u8>> {
    let mut length = None;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            if first {
                continue;
            }
            break;
        }
        first = false;
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

// ---------------------------------------------------------------------------------------
// The environment: a cluster, the CRDs, keys, policies, the webhooks registered
// ---------------------------------------------------------------------------------------

struct Env {
    cluster: Cluster,
    dir: tempfile::TempDir,
    pki: Pki,
    key: PathBuf,
    pubkey: PathBuf,
    intruder_key: PathBuf,
    policies: Vec<PathBuf>,
    webhook: Mutex<Webhook>,
    recorder: Recorder,
}

/// The environment most tests share (one API server per test process).
fn shared() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(Env::new)
}

impl Env {
    fn new() -> Env {
        let cluster = Cluster::start();
        let dir = tempfile::Builder::new()
            .prefix("mansign-apiserver-")
            .tempdir()
            .unwrap();

        // Kyverno's two PolicyException CRDs, verbatim (testdata/README.md).
        cluster.create_kyverno_crds();

        // The test namespaces exist before any webhook is registered: a Namespace write
        // is itself gated once the configuration is in place.
        for ns in NAMESPACES {
            cluster.kubectl_ok(&["create", "namespace", ns]);
            cluster.kubectl_ok(&["label", "namespace", ns, &format!("{GATED}=true")]);
        }
        // Only the shipped configuration applies here.
        cluster.kubectl_ok(&["create", "namespace", SHIPPED_ONLY]);
        // No controller-manager runs: the ServiceAccount admission plugin needs the
        // namespace's `default` account for a Pod.
        cluster.kubectl_ok(&["create", "serviceaccount", "default", "-n", "recorded"]);

        let (key, pubkey) = key_pair(dir.path(), "release");
        let (intruder_key, _) = key_pair(dir.path(), "intruder");
        let policies = write_policies(dir.path(), &pubkey);

        let pki = Pki::new();
        pki.install(dir.path(), "mansign-webhook");
        let webhook = Webhook::start(dir.path(), &policies, 0);
        let (rec_cert, rec_key) = pki.issue("recorder");
        let recorder = Recorder::start(&rec_cert, &rec_key);

        let env = Env {
            cluster,
            dir,
            pki,
            key,
            pubkey,
            intruder_key,
            policies,
            webhook: Mutex::new(webhook),
            recorder,
        };
        env.register_webhooks();
        env
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn webhook_url(&self) -> String {
        self.webhook.lock().unwrap().url()
    }

    /// Applies the shipped configuration (URL and caBundle set), the test configuration
    /// for the signed set's kinds, and the recorder's; waits until the API server calls
    /// mansign (an unsigned PolicyException is denied under `--dry-run=server`).
    fn register_webhooks(&self) {
        let url = self.webhook_url();
        let ca = self.pki.ca_bundle();
        let shipped = shipped_webhook_configuration(&url, &ca);
        eprintln!("registering the shipped configuration: {shipped}");
        self.cluster
            .kubectl_stdin(&["apply", "-f", "-"], &shipped.to_string())
            .success_or_panic("apply the shipped ValidatingWebhookConfiguration");
        let test = test_webhook_configuration(&url, &ca);
        self.cluster
            .kubectl_stdin(&["apply", "-f", "-"], &test.to_string())
            .success_or_panic("apply the test ValidatingWebhookConfiguration");
        let recorder = recorder_configuration(&self.recorder.url(), &ca);
        self.cluster
            .kubectl_stdin(&["apply", "-f", "-"], &recorder.to_string())
            .success_or_panic("apply the recorder ValidatingWebhookConfiguration");

        let probe = pe_kyverno("probe", "pe", "probe-*");
        let start = Instant::now();
        retry_for(
            Duration::from_secs(60),
            Duration::from_millis(250),
            "the API server did not call the webhook within 60 s",
            || {
                let out = self
                    .cluster
                    .kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], &probe);
                let denied = !out.status.success() && stderr(&out).contains("denied the request");
                denied.then_some(()).ok_or_else(|| stderr(&out))
            },
        );
        eprintln!(
            "webhooks active after {:.1} s",
            start.elapsed().as_secs_f64()
        );
    }

    /// Signs `text` (one or more documents) with `key`; returns the signed YAML.
    fn sign_with(&self, text: &str, key: &Path, extra: &[&str]) -> String {
        let n = unique();
        let input = write(self.dir(), &format!("in-{n}.yaml"), text);
        let output = self.dir().join(format!("out-{n}.yaml"));
        common::with_key("sign", &[], &input, key)
            .arg("-o")
            .arg(&output)
            .args(extra)
            .assert()
            .success();
        std::fs::read_to_string(&output).unwrap()
    }

    fn sign(&self, text: &str) -> String {
        self.sign_with(text, &self.key, &[])
    }

    /// `kubectl ARGS -f -` with `doc`; prints the verdict.
    fn kubectl_doc(&self, what: &str, args: &[&str], doc: &str) -> Output {
        let mut all = args.to_vec();
        all.extend(["-f", "-"]);
        let out = self.cluster.kubectl_stdin(&all, doc);
        report(what, &all, &out);
        out
    }

    /// [`Env::kubectl_doc`]; fails unless mansign denies the write with `code`.
    fn denied_doc(&self, what: &str, args: &[&str], doc: &str, code: &str) -> Output {
        let out = self.kubectl_doc(what, args, doc);
        assert_denied(&out, code);
        out
    }

    /// [`Env::kubectl_doc`]; fails unless the write is admitted (`context` names it).
    fn admitted_doc(&self, what: &str, args: &[&str], doc: &str, context: &str) {
        assert_admitted(&self.kubectl_doc(what, args, doc), context);
    }

    /// Fails if the API server holds `object` (`resource/name`) in `ns`.
    fn assert_not_stored(&self, object: &str, ns: &str) {
        assert!(
            self.get(object, Some(ns)).is_none(),
            "{object} is stored in {ns}"
        );
    }

    /// `kubectl ARGS`; prints the verdict.
    fn kubectl(&self, what: &str, args: &[&str]) -> Output {
        let out = self.cluster.kubectl(args);
        report(what, args, &out);
        out
    }

    /// `mansign verify-resource RESOURCE -n NS --key release.pub` against the live server
    /// (read through mansign's own client, `managedFields` and all), with `extra` flags;
    /// the output, and whether it verified.
    fn verify_resource(&self, resource: &str, ns: Option<&str>, extra: &[&str]) -> (bool, String) {
        let mut cmd = mansign();
        cmd.args(["verify-resource", resource])
            .arg("--key")
            .arg(&self.pubkey)
            .args(extra)
            .env("KUBECONFIG", self.cluster.kubeconfig())
            .env_remove("MANSIGN_KUBECTL");
        if let Some(ns) = ns {
            cmd.args(["-n", ns]);
        }
        let out = cmd.output().unwrap();
        let text = format!("{}{}", stdout(&out), stderr(&out));
        eprintln!(
            "  verify-resource {resource}{}: {} {}",
            ns.map(|n| format!(" -n {n}")).unwrap_or_default(),
            if out.status.success() {
                "VERIFIED"
            } else {
                "NOT VERIFIED"
            },
            text.trim()
        );
        (out.status.success(), text)
    }

    /// The object as stored (`kubectl get -o json`).
    fn get(&self, resource: &str, ns: Option<&str>) -> Option<Value> {
        let mut args = vec!["get", resource, "-o", "json"];
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        let out = self.cluster.kubectl(&args);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    }
}

/// The ManifestPolicy files the webhook runs: the shipped one (deploy/'s ConfigMap, its
/// example key replaced by the test key), one for the signed set's built-in kinds and the
/// `policies.kyverno.io` PolicyException, and one for objects applied by Argo CD or Flux.
fn write_policies(dir: &Path, pubkey: &Path) -> Vec<PathBuf> {
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base/policy-configmap.yaml"),
    )
    .unwrap();
    let configmap = yaml_docs(&shipped).remove(0);
    let policy_text = configmap["data"]["policy.yaml"]
        .as_str()
        .expect("deploy/base/policy-configmap.yaml has data.policy.yaml");
    let mut policy = yaml_docs(policy_text).remove(0);
    let key_pem = std::fs::read_to_string(pubkey).unwrap();
    let keys = &mut policy["spec"]["attestors"][0]["entries"][0]["keys"];
    assert!(
        keys.get("publicKeys").is_some(),
        "the shipped policy's first entry has keys.publicKeys: {policy}"
    );
    keys["publicKeys"] = Value::String(key_pem);
    let shipped = write(dir, "shipped-policy.json", &policy.to_string());

    let builtins = write(
        dir,
        "builtins-policy.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: signed-set\nspec:\n  match:\n    kinds: [apps/v1/Deployment, v1/Service, v1/ConfigMap, v1/Namespace, networking.k8s.io/v1/NetworkPolicy, rbac.authorization.k8s.io/v1/Role, rbac.authorization.k8s.io/v1/RoleBinding, rbac.authorization.k8s.io/v1/ClusterRole, policies.kyverno.io/*/PolicyException]\n  exclude:\n    namespaces: [gitops]\n  ignoreProfile: kubernetes\n  attestors:\n  - entries:\n    - keys:\n        path: {}\n",
            pubkey.display()
        ),
    );
    let gitops = write(
        dir,
        "gitops-policy.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: gitops\nspec:\n  match:\n    kinds: [v1/ConfigMap, apps/v1/Deployment]\n    namespaces: [gitops]\n  ignoreProfile: kubernetes,argocd,flux\n  gitops:\n    argocd:\n      applications: [shop]\n    flux:\n      kustomizations: [flux-system/apps]\n  attestors:\n  - entries:\n    - keys:\n        path: {}\n",
            pubkey.display()
        ),
    );
    vec![shipped, builtins, gitops]
}

/// deploy/'s ValidatingWebhookConfiguration with a URL client config and its caBundle;
/// every other field as shipped.
fn shipped_webhook_configuration(url: &str, ca_bundle: &str) -> Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/base/validatingwebhookconfiguration.yaml"),
    )
    .unwrap();
    let mut config = yaml_docs(&text).remove(0);
    let hooks = config["webhooks"].as_array_mut().expect("webhooks");
    assert!(!hooks.is_empty());
    for hook in hooks {
        hook["clientConfig"] = json!({"url": url, "caBundle": ca_bundle});
    }
    config
}

/// The test's own configuration: the signed set's kinds (and their `status`
/// subresources) in the gated namespaces, the cluster-scoped ones everywhere.
fn test_webhook_configuration(url: &str, ca_bundle: &str) -> Value {
    let common = |name: &str| {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "matchPolicy": "Equivalent",
            "clientConfig": {"url": url, "caBundle": ca_bundle},
        })
    };
    let mut namespaced = common("namespaced.test.mansign.dev");
    namespaced["namespaceSelector"] = json!({"matchLabels": {GATED: "true"}});
    namespaced["rules"] = json!([{
        "apiGroups": ["", "apps", "networking.k8s.io", "rbac.authorization.k8s.io", "policies.kyverno.io"],
        "apiVersions": ["*"],
        "resources": ["configmaps", "services", "services/status", "deployments", "deployments/status",
                      "networkpolicies", "roles", "rolebindings", "policyexceptions"],
        "operations": ["CREATE", "UPDATE"],
        "scope": "Namespaced",
    }]);
    let mut cluster = common("cluster.test.mansign.dev");
    cluster["rules"] = json!([{
        "apiGroups": ["", "rbac.authorization.k8s.io"],
        "apiVersions": ["*"],
        "resources": ["namespaces", "namespaces/status", "clusterroles"],
        "operations": ["CREATE", "UPDATE"],
        "scope": "Cluster",
    }]);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "mansign-test-signed-set"},
        "webhooks": [namespaced, cluster],
    })
}

fn recorder_configuration(url: &str, ca_bundle: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "mansign-test-recorder"},
        "webhooks": [{
            "name": "recorder.test.mansign.dev",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 5,
            "clientConfig": {"url": url, "caBundle": ca_bundle},
            "rules": [{
                "apiGroups": ["", "apps", "kyverno.io", "policies.kyverno.io"],
                "apiVersions": ["*"],
                "resources": ["namespaces", "namespaces/status", "pods", "pods/status",
                              "services", "services/status", "deployments", "deployments/status",
                              "configmaps", "policyexceptions"],
                "operations": ["*"],
                "scope": "*",
            }],
        }],
    })
}

fn yaml_docs(text: &str) -> Vec<Value> {
    mansign::manifest::parse_documents(text, &mansign::limits::Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Calls `attempt` every `pause` until it succeeds; fails the test with `failure` and the
/// last attempt's error once `limit` has passed.
fn retry_for(
    limit: Duration,
    pause: Duration,
    failure: &str,
    mut attempt: impl FnMut() -> Result<(), String>,
) {
    let start = Instant::now();
    loop {
        let error = match attempt() {
            Ok(()) => return,
            Err(error) => error,
        };
        assert!(start.elapsed() < limit, "{failure}: {error}");
        std::thread::sleep(pause);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

trait Checked {
    fn success_or_panic(self, what: &str) -> Output;
}

impl Checked for Output {
    fn success_or_panic(self, what: &str) -> Output {
        assert!(
            self.status.success(),
            "{what}: {}{}",
            stdout(&self),
            stderr(&self)
        );
        self
    }
}

fn report(what: &str, args: &[&str], out: &Output) {
    let verdict = if out.status.success() {
        "ADMITTED"
    } else {
        "DENIED/FAILED"
    };
    let detail = if out.status.success() {
        stdout(out)
    } else {
        stderr(out)
    };
    eprintln!(
        "{what}: kubectl {} -> {verdict}: {}",
        args.join(" "),
        detail.trim()
    );
}

/// Fails unless `out` is a refusal by mansign carrying `code` (`[code]` in the message
/// kubectl prints: `admission webhook "..." denied the request: ... [code] (policy ...)`).
fn assert_denied(out: &Output, code: &str) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "expected a denial [{code}], the cluster admitted it: {}",
        stdout(out)
    );
    assert!(
        err.contains("denied the request") && err.contains(&format!("[{code}]")),
        "expected mansign's denial with [{code}], kubectl said: {err}"
    );
}

/// `kubectl apply --server-side` of `doc` as the controller named by `field_manager`.
fn apply_as(env: &Env, what: &str, field_manager: &str, doc: &str) -> Output {
    env.kubectl_doc(
        what,
        &[
            "apply",
            "--server-side",
            &format!("--field-manager={field_manager}"),
        ],
        doc,
    )
}

/// Fails unless a validating webhook refused the request, whatever its reason code.
fn assert_denied_by_webhook(out: &Output) {
    assert!(
        !out.status.success() && stderr(out).contains("denied the request"),
        "{}",
        stderr(out)
    );
}

fn assert_admitted(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: expected admitted, kubectl said: {}",
        stderr(out)
    );
}

/// A `kyverno.io/v2` PolicyException excepting Pods named `names`.
fn pe_kyverno(name: &str, ns: &str, names: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  exceptions:\n  - policyName: disallow-host-path\n    ruleNames:\n    - host-path\n  match:\n    any:\n    - resources:\n        kinds:\n        - Pod\n        names:\n        - \"{names}\"\n"
    )
}

/// A `policies.kyverno.io/v1beta1` PolicyException (the CEL policies' kind) for `policy`.
/// `reportResult: skip` is written out: the CRD defaults it, so a document without it is
/// stored (and reviewed) with a field it was not signed with.
fn pe_policies(name: &str, ns: &str, policy: &str) -> String {
    format!(
        "apiVersion: policies.kyverno.io/v1\nkind: PolicyException\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  policyRefs:\n  - name: \"{policy}\"\n    kind: ValidatingPolicy\n  reportResult: skip\n"
    )
}

/// The two PolicyException kinds: (label, kubectl resource, document maker).
type PeMaker = fn(&str, &str, &str) -> String;
const PE_KINDS: &[(&str, &str, PeMaker)] = &[
    ("kyverno.io/v2", "policyexceptions.kyverno.io", pe_kyverno),
    (
        "policies.kyverno.io/v1beta1",
        "policyexceptions.policies.kyverno.io",
        pe_policies,
    ),
];

// ---------------------------------------------------------------------------------------
// 1. deploy/ as shipped
// ---------------------------------------------------------------------------------------

#[test]
fn the_shipped_configuration_and_policy_gate_both_policy_exception_kinds() {
    let env = shared();
    let ns = SHIPPED_ONLY;
    for (i, &(label, resource, make)) in PE_KINDS.iter().enumerate() {
        let name = format!("shipped-{i}");
        env.denied_doc(
            &format!("{label} unsigned, shipped configuration only"),
            &["apply"],
            &make(&name, ns, "*"),
            "not-signed",
        );
        env.assert_not_stored(&format!("{resource}/{name}"), ns);
        let signed = env.sign(&make(&name, ns, "nightly-backup-*"));
        env.admitted_doc(
            &format!("{label} signed, shipped configuration only"),
            &["apply"],
            &signed,
            "a signed exception under the shipped configuration",
        );
        let request = env
            .recorder
            .find(|r| r["name"] == name.as_str() && r["operation"] == "CREATE");
        assert!(!request.is_empty());
    }
    // The CRD defaults `reportResult` of a policies.kyverno.io exception: one signed
    // without it arrives with a field it was not signed with and is refused (fail closed;
    // sign the default explicitly, as pe_policies does).
    let without_default = pe_policies("shipped-no-default", ns, "disallow-host-path")
        .replace("  reportResult: skip\n", "");
    let out = env.denied_doc(
        "policies.kyverno.io signed without the CRD default reportResult",
        &["apply"],
        &env.sign(&without_default),
        "modified",
    );
    assert!(stderr(&out).contains("reportResult"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------
// 2. PolicyExceptions: every kubectl write of a signed one is admitted
// ---------------------------------------------------------------------------------------

#[test]
fn signed_policy_exceptions_are_admitted_by_apply_server_side_apply_create_and_replace() {
    let env = shared();
    for (i, &(label, resource, make)) in PE_KINDS.iter().enumerate() {
        let ns = "pe";
        // client-side apply (and a second apply of the same file)
        let doc = env.sign(&make(&format!("csa-{i}"), ns, "nightly-backup-*"));
        env.admitted_doc(
            &format!("{label} signed"),
            &["apply"],
            &doc,
            "kubectl apply",
        );
        let stored = env.get(&format!("{resource}/csa-{i}"), Some(ns)).unwrap();
        assert!(
            stored["metadata"]["annotations"]
                .get("kubectl.kubernetes.io/last-applied-configuration")
                .is_some(),
            "client-side apply stores its last-applied annotation"
        );
        env.admitted_doc(
            &format!("{label} signed, again"),
            &["apply"],
            &doc,
            "kubectl apply (unchanged)",
        );
        // a new signed version of the same object, client-side applied over the first
        let doc2 = env.sign(&make(&format!("csa-{i}"), ns, "weekly-backup-*"));
        env.admitted_doc(
            &format!("{label} re-signed"),
            &["apply"],
            &doc2,
            "kubectl apply (new signed version)",
        );

        // server-side apply
        let doc = env.sign(&make(&format!("ssa-{i}"), ns, "nightly-backup-*"));
        env.admitted_doc(
            &format!("{label} signed"),
            &["apply", "--server-side"],
            &doc,
            "kubectl apply --server-side",
        );
        let doc2 = env.sign(&make(&format!("ssa-{i}"), ns, "weekly-backup-*"));
        env.admitted_doc(
            &format!("{label} re-signed"),
            &["apply", "--server-side"],
            &doc2,
            "kubectl apply --server-side (new signed version)",
        );

        // create, then replace with the same and with a new signed version
        let doc = env.sign(&make(&format!("create-{i}"), ns, "nightly-backup-*"));
        env.admitted_doc(
            &format!("{label} signed"),
            &["create"],
            &doc,
            "kubectl create",
        );
        env.admitted_doc(
            &format!("{label} signed"),
            &["replace"],
            &doc,
            "kubectl replace (same document)",
        );
        let doc2 = env.sign(&make(&format!("create-{i}"), ns, "weekly-backup-*"));
        env.admitted_doc(
            &format!("{label} re-signed"),
            &["replace"],
            &doc2,
            "kubectl replace (new signed version)",
        );

        // what the cluster holds verifies
        for name in ["csa", "ssa", "create"] {
            let (ok, text) = env.verify_resource(&format!("{resource}/{name}-{i}"), Some(ns), &[]);
            assert!(
                ok,
                "{resource}/{name}-{i} as stored does not verify: {text}"
            );
        }

        // delete is allowed
        for name in ["csa", "ssa", "create"] {
            let out = env.kubectl(
                &format!("{label} delete"),
                &["delete", resource, &format!("{name}-{i}"), "-n", ns],
            );
            assert_admitted(&out, "kubectl delete");
        }
    }
}

#[test]
fn unsigned_tampered_wrong_signer_and_expired_policy_exceptions_are_denied_with_mansigns_reason() {
    let env = shared();
    let ns = "pe";
    for (i, &(label, resource, make)) in PE_KINDS.iter().enumerate() {
        // unsigned
        let name = format!("unsigned-{i}");
        env.denied_doc(
            &format!("{label} unsigned"),
            &["apply"],
            &make(&name, ns, "nightly-backup-*"),
            "not-signed",
        );
        env.assert_not_stored(&format!("{resource}/{name}"), ns);

        // tampered after signing: the exception widened to every Pod / another policy
        let name = format!("tampered-{i}");
        let signed = env.sign(&make(&name, ns, "nightly-backup-*"));
        let tampered = signed
            .replace("nightly-backup-*", "*")
            .replace("disallow-host-path", "require-signed-images");
        assert_ne!(signed, tampered);
        env.denied_doc(
            &format!("{label} tampered"),
            &["apply"],
            &tampered,
            "modified",
        );
        env.denied_doc(
            &format!("{label} tampered"),
            &["apply", "--server-side"],
            &tampered,
            "modified",
        );
        env.denied_doc(
            &format!("{label} tampered"),
            &["create"],
            &tampered,
            "modified",
        );
        env.assert_not_stored(&format!("{resource}/{name}"), ns);

        // signed by a key the policy does not trust
        let name = format!("intruder-{i}");
        let signed = env.sign_with(&make(&name, ns, "nightly-backup-*"), &env.intruder_key, &[]);
        let out = env.kubectl_doc(&format!("{label} wrong signer"), &["apply"], &signed);
        assert!(!out.status.success(), "a wrong signer was admitted");
        let err = stderr(&out);
        assert!(
            err.contains("denied the request") && err.contains("(policy "),
            "expected mansign's denial, kubectl said: {err}"
        );
        env.assert_not_stored(&format!("{resource}/{name}"), ns);

        // expired (signed `mansign.dev/expires` in the past by the time it is applied)
        let name = format!("expired-{i}");
        let signed = env.sign_with(
            &make(&name, ns, "nightly-backup-*"),
            &env.key,
            &["--expires", "1s"],
        );
        std::thread::sleep(Duration::from_millis(2100));
        env.denied_doc(&format!("{label} expired"), &["apply"], &signed, "expired");
        env.assert_not_stored(&format!("{resource}/{name}"), ns);
    }
}

#[test]
fn edit_patch_label_and_annotate_of_an_admitted_exception_are_denied_and_delete_is_allowed() {
    let env = shared();
    let ns = "pe";
    for (i, &(label, resource, make)) in PE_KINDS.iter().enumerate() {
        let name = format!("edited-{i}");
        let doc = env.sign(&make(&name, ns, "nightly-backup-*"));
        env.admitted_doc(
            &format!("{label} signed"),
            &["apply"],
            &doc,
            "kubectl apply",
        );
        let before = env.get(&format!("{resource}/{name}"), Some(ns)).unwrap();

        let patch = if i == 0 {
            r#"{"spec":{"match":{"any":[{"resources":{"kinds":["Pod"],"names":["*"]}}]}}}"#
        } else {
            r#"{"spec":{"policyRefs":[{"name":"require-signed-images","kind":"ValidatingPolicy"}]}}"#
        };
        let out = env.kubectl(
            &format!("{label} patch spec"),
            &[
                "patch",
                resource,
                &name,
                "-n",
                ns,
                "--type=merge",
                "-p",
                patch,
            ],
        );
        assert_denied(&out, "modified");
        let out = env.kubectl(
            &format!("{label} label"),
            &["label", resource, &name, "-n", ns, "team=intruder"],
        );
        assert_denied(&out, "modified");
        let out = env.kubectl(
            &format!("{label} annotate"),
            &["annotate", resource, &name, "-n", ns, "note=changed"],
        );
        assert_denied(&out, "modified");
        // `kubectl edit` with an editor that widens the exception
        let script = write(
            env.dir(),
            &format!("editor-{i}.sh"),
            "#!/bin/sh\nsed -i -e 's/nightly-backup-\\*/\"*\"/' -e 's/disallow-host-path/require-signed-images/' \"$1\"\n",
        );
        let out = env
            .cluster
            .kubectl_cmd()
            .args(["edit", resource, name.as_str(), "-n", ns])
            .env("KUBE_EDITOR", format!("sh {}", script.display()))
            .output()
            .unwrap();
        report(&format!("{label} edit"), &["edit", resource, &name], &out);
        assert_denied(&out, "modified");

        let after = env.get(&format!("{resource}/{name}"), Some(ns)).unwrap();
        assert_eq!(
            before["spec"], after["spec"],
            "the stored spec is unchanged"
        );
        assert_eq!(
            before["metadata"]["resourceVersion"], after["metadata"]["resourceVersion"],
            "nothing was written"
        );
        let (ok, text) = env.verify_resource(&format!("{resource}/{name}"), Some(ns), &[]);
        assert!(ok, "{text}");

        assert_admitted(
            &env.kubectl(
                &format!("{label} delete"),
                &["delete", resource, &name, "-n", ns],
            ),
            "kubectl delete",
        );
    }
}

#[test]
fn dry_run_server_is_verified_like_a_real_request() {
    let env = shared();
    let ns = "pe";
    for (i, &(label, resource, make)) in PE_KINDS.iter().enumerate() {
        let name = format!("dryrun-{i}");
        let unsigned = make(&name, ns, "*");
        for args in [
            &["apply", "--dry-run=server"][..],
            &["apply", "--server-side", "--dry-run=server"],
            &["create", "--dry-run=server"],
        ] {
            env.denied_doc(&format!("{label} unsigned"), args, &unsigned, "not-signed");
            let signed = env.sign(&make(&name, ns, "nightly-backup-*"));
            env.admitted_doc(
                &format!("{label} signed"),
                args,
                &signed,
                "dry run of a signed exception",
            );
        }
        assert!(
            env.get(&format!("{resource}/{name}"), Some(ns)).is_none(),
            "a dry run stores nothing"
        );
        let dry = env.recorder.find(|r| {
            r["name"] == name.as_str() && r["dryRun"] == true && r["operation"] == "CREATE"
        });
        assert!(
            !dry.is_empty(),
            "the API server sends dry runs to validating webhooks with dryRun: true"
        );
    }
}

/// The signed documents `status` of a kind leaves out as the API server fills it.
const SIGNED_SET: &[(&str, &str, Option<&str>)] = &[
    ("deployment.yaml", "deployment.apps/web", Some("stored")),
    ("service.yaml", "service/web", Some("stored")),
    ("configmap.yaml", "configmap/web-settings", Some("stored")),
    (
        "networkpolicy.yaml",
        "networkpolicy.networking.k8s.io/web-ingress",
        Some("stored"),
    ),
    (
        "role.yaml",
        "role.rbac.authorization.k8s.io/web-reader",
        Some("stored"),
    ),
    (
        "rolebinding.yaml",
        "rolebinding.rbac.authorization.k8s.io/web-reader",
        Some("stored"),
    ),
    (
        "clusterrole.yaml",
        "clusterrole.rbac.authorization.k8s.io/mansign-test-exception-reader",
        None,
    ),
    (
        "policyexception-kyverno.yaml",
        "policyexceptions.kyverno.io/backup-host-path",
        Some("stored"),
    ),
    (
        "policyexception-policies.yaml",
        "policyexceptions.policies.kyverno.io/backup-host-path-cel",
        Some("stored"),
    ),
    ("namespace.yaml", "namespace/stored-ns", None),
];

// ---------------------------------------------------------------------------------------
// 3. Objects as the cluster stores them
// ---------------------------------------------------------------------------------------

#[test]
fn every_kind_of_the_signed_set_is_admitted_and_verifies_as_stored() {
    let env = shared();
    let mut failures = Vec::new();
    for (file, resource, ns) in SIGNED_SET {
        let text = std::fs::read_to_string(fixture(&format!("cluster/signed-set/{file}"))).unwrap();
        let signed = env.sign(&text);
        let out = env.kubectl_doc(&format!("signed-set/{file}"), &["apply"], &signed);
        if !out.status.success() {
            failures.push(format!(
                "{file}: kubectl apply denied: {}",
                stderr(&out).trim()
            ));
            continue;
        }
        let mut get = vec!["get", *resource, "-o", "yaml"];
        if let Some(ns) = ns {
            get.extend(["-n", *ns]);
        }
        let stored = env.cluster.kubectl_ok(&get);
        eprintln!("  stored {resource}:\n{stored}");
        let (ok, text) = env.verify_resource(resource, *ns, &[]);
        if !ok {
            failures.push(format!(
                "{file}: as stored it does not verify: {}",
                text.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "objects of the signed set the real API server does not round-trip:\n{}",
        failures.join("\n")
    );
}

/// Adds `value` at `path` (object keys and list indexes, separated by `.`) to the first
/// document of `signed` and returns it as JSON text for `kubectl -f -`.
fn with_field(signed: &str, path: &str, value: Value) -> String {
    let path: Vec<&str> = path.split('.').collect();
    let mut doc = yaml_docs(signed).remove(0);
    let mut at = &mut doc;
    for (i, key) in path.iter().enumerate() {
        if i + 1 == path.len() {
            at[*key] = value.clone();
        } else if let Ok(n) = key.parse::<usize>() {
            at = &mut at[n];
        } else {
            at = &mut at[*key];
        }
    }
    doc.to_string()
}

#[test]
fn tolerated_defaults_cannot_be_used_by_a_client_to_change_behaviour() {
    let env = shared();
    let service = env.sign(
        &std::fs::read_to_string(fixture("cluster/signed-set/service.yaml"))
            .unwrap()
            .replace("name: web\n", "name: web-tolerance\n"),
    );
    let deployment_text = std::fs::read_to_string(fixture("cluster/signed-set/deployment.yaml"))
        .unwrap()
        .replace("name: web\n", "name: web-tolerance\n")
        .replace("web:1.27.3", "web:latest");
    let deployment = env.sign(&deployment_text);

    let namespace = env.sign(
        &std::fs::read_to_string(fixture("cluster/signed-set/namespace.yaml"))
            .unwrap()
            .replace("name: stored-ns\n", "name: tolerance-ns\n"),
    );
    // (what, the signed object with the client's value), one a case of
    // testdata/dup-tests-a/tolerated-defaults.yaml.
    let cases: Vec<(String, String)> = yaml_docs(&data("tolerated-defaults.yaml"))
        .remove(0)
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            let what = case["what"].as_str().unwrap();
            let signed = match case["object"].as_str().unwrap() {
                "Service" => &service,
                "Deployment" => &deployment,
                "Namespace" => &namespace,
                other => panic!("{what}: no signed {other}"),
            };
            let path = case["path"].as_str().unwrap();
            let doc = with_field(signed, path, case["value"].clone());
            (what.to_string(), doc)
        })
        .collect();
    assert_eq!(cases.len(), 22, "the cases of tolerated-defaults.yaml");
    let mut admitted = Vec::new();
    for (what, doc) in &cases {
        let out = env.kubectl_doc(what, &["create", "--dry-run=server"], doc);
        if out.status.success() {
            admitted.push(what);
        } else {
            assert!(
                stderr(&out).contains("denied the request"),
                "{what}: refused, but not by mansign: {}",
                stderr(&out)
            );
        }
    }
    // The signed documents themselves are admitted (the control).
    env.admitted_doc(
        "signed Service",
        &["create", "--dry-run=server"],
        &service,
        "the signed Service",
    );
    env.admitted_doc(
        "signed Deployment",
        &["create", "--dry-run=server"],
        &deployment,
        "the signed Deployment",
    );
    env.admitted_doc(
        "signed Namespace",
        &["create", "--dry-run=server"],
        &namespace,
        "the signed Namespace",
    );
    assert!(
        admitted.is_empty(),
        "behaviour-changing values a client added to a signed object were admitted: {admitted:#?}"
    );
}

/// A Service's addresses are tolerated as the allocator's only when no `managedFields` entry
/// owns them: the API server's field manager attributes what the request sent before the
/// registry allocates, so a client's own `clusterIP` is owned by its manager and denied,
/// while the signed Service (no `clusterIP`) written by every kubectl path is admitted.
#[test]
fn a_client_chosen_cluster_ip_or_node_port_is_denied_and_allocated_ones_admitted() {
    let env = shared();
    let text = std::fs::read_to_string(fixture("cluster/signed-set/service.yaml")).unwrap();
    let signed = |name: &str| env.sign(&text.replace("name: web\n", &format!("name: {name}\n")));
    let service = signed("web-chosen");
    let at = |path: &str, value: Value| with_field(&service, path, value);
    let chosen = [
        (
            "clusterIP: 10.0.0.77 (a valid, free address of the cluster's range)",
            at("spec.clusterIP", json!("10.0.0.77")),
            "spec.clusterIP",
        ),
        (
            "clusterIP: 10.0.0.78 with clusterIPs: [10.0.0.78]",
            with_field(
                &at("spec.clusterIP", json!("10.0.0.78")),
                "spec.clusterIPs",
                json!(["10.0.0.78"]),
            ),
            "spec.clusterIPs",
        ),
        (
            "ipFamilies: [IPv4]",
            at("spec.ipFamilies", json!(["IPv4"])),
            "spec.ipFamilies",
        ),
        (
            "type: NodePort with nodePort: 30077",
            with_field(
                &at("spec.type", json!("NodePort")),
                "spec.ports.0.nodePort",
                json!(30077),
            ),
            "spec.ports[0].nodePort",
        ),
    ];
    for (what, doc, field) in &chosen {
        for args in [
            &["create", "--dry-run=server"][..],
            &["apply", "--server-side", "--dry-run=server"],
        ] {
            let out = env.denied_doc(what, args, doc, "modified");
            assert!(
                stderr(&out).contains(field),
                "{what} ({args:?}): the denial does not name {field}: {}",
                stderr(&out)
            );
        }
    }

    // The signed Service, written by each kubectl path, then applied again (an update).
    let ns = "stored";
    let paths: [(&str, &[&[&str]]); 4] = [
        ("web-alloc-apply", &[&["apply"]]),
        ("web-alloc-ssa", &[&["apply", "--server-side"]]),
        ("web-alloc-create", &[&["create"]]),
        ("web-alloc-replace", &[&["create"], &["replace"]]),
    ];
    for (name, writes) in paths {
        let doc = signed(name);
        for args in writes.iter().copied().chain([&["apply"][..]]) {
            assert_admitted(
                &env.kubectl_doc(&format!("signed Service {name}"), args, &doc),
                &format!("the signed Service {name} by kubectl {args:?}"),
            );
        }
        // The allocated address is what the object holds, owned by no manager.
        let out = env.kubectl(
            "read back",
            &[
                "get",
                "service",
                name,
                "-n",
                ns,
                "--show-managed-fields",
                "-o",
                "json",
            ],
        );
        let live: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            live["spec"]["clusterIP"]
                .as_str()
                .is_some_and(|ip| ip.starts_with("10.0.0.")),
            "{name}: {live}"
        );
        let managers = live["metadata"]["managedFields"].as_array().unwrap();
        assert!(!managers.is_empty(), "{name}: {live}");
        for entry in managers {
            assert!(
                entry["fieldsV1"]["f:spec"].get("f:clusterIP").is_none(),
                "{name}: a manager owns the allocated address: {entry}"
            );
        }
        env.kubectl("clean up", &["delete", "service", name, "-n", ns]);
    }
}

// ---------------------------------------------------------------------------------------
// 4. Status writes
// ---------------------------------------------------------------------------------------

#[test]
fn status_writes_cannot_change_what_was_signed() {
    let env = shared();
    let ns = "status";
    let objects = [
        (
            "deployment.yaml",
            "deployment.apps/web",
            r#"{"status":{"observedGeneration":1}}"#,
        ),
        (
            "service.yaml",
            "service/web",
            r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Test","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
        ),
    ];
    let mut problems = Vec::new();
    for (file, resource, status_only) in objects {
        let text = std::fs::read_to_string(fixture(&format!("cluster/signed-set/{file}")))
            .unwrap()
            .replace("namespace: stored", &format!("namespace: {ns}"));
        env.admitted_doc(
            &format!("signed {file}"),
            &["apply"],
            &env.sign(&text),
            "the signed object",
        );
        // A write of status alone is admitted.
        // `kubectl patch --subresource=status` of the object with the merge patch `patch`.
        let patch_status = |what: &str, patch: &str| {
            env.kubectl(
                what,
                &[
                    "patch",
                    resource,
                    "-n",
                    ns,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    patch,
                ],
            )
        };
        let out = patch_status(&format!("{resource} status only"), status_only);
        if !out.status.success() {
            problems.push(format!(
                "{resource}: a status-only write was denied: {}",
                stderr(&out).trim()
            ));
        }
        // Writes through /status that also change labels, annotations or finalizers.
        for (what, patch) in [
            ("label", r#"{"metadata":{"labels":{"app":"intruder"}}}"#),
            (
                "annotation",
                r#"{"metadata":{"annotations":{"prometheus.io/scrape":"true"}}}"#,
            ),
            (
                "finalizer",
                r#"{"metadata":{"finalizers":["example.com/block-delete"]}}"#,
            ),
        ] {
            let out = patch_status(&format!("{resource} status write changing a {what}"), patch);
            let (ok, text) = env.verify_resource(resource, Some(ns), &[]);
            if !ok {
                problems.push(format!(
                    "{resource}: a /status write changing a {what} was {} and the stored object no longer verifies: {}",
                    if out.status.success() { "admitted" } else { "refused" },
                    text.trim()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "status writes (webhook registered for */status):\n{}",
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// 6. GitOps as applied
// ---------------------------------------------------------------------------------------

#[test]
fn gitops_server_side_apply_with_argo_cd_and_flux_field_managers() {
    let env = shared();
    let ns = "gitops";
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  mode: production\n"
        )
    };
    let with_meta = |signed: &str, labels: Value, annotations: Value| {
        let mut doc = yaml_docs(signed).remove(0);
        for (k, v) in labels.as_object().unwrap() {
            doc["metadata"]["labels"][k] = v.clone();
        }
        for (k, v) in annotations.as_object().unwrap() {
            doc["metadata"]["annotations"][k] = v.clone();
        }
        doc.to_string()
    };
    // Server-side apply as argocd-controller of `signed` with Argo CD's annotation+label
    // tracking for application `app`, its tracking id naming the ConfigMap `tracked`.
    let argo = |what: &str, signed: &str, app: &str, tracked: &str| {
        let doc = with_meta(
            signed,
            json!({"app.kubernetes.io/instance": app}),
            json!({"argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:{ns}/{tracked}")}),
        );
        apply_as(env, what, "argocd-controller", &doc)
    };
    // Server-side apply as kustomize-controller of `signed` with Flux's labels for the
    // Kustomization `kustomization`.
    let flux = |what: &str, signed: &str, kustomization: &str| {
        let doc = with_meta(
            signed,
            json!({"kustomize.toolkit.fluxcd.io/name": kustomization, "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}),
            json!({}),
        );
        apply_as(env, what, "kustomize-controller", &doc)
    };
    let signed = env.sign(&cm("argo-app"));
    let out = argo("Argo CD tracking keys added", &signed, "shop", "argo-app");
    assert_admitted(&out, "Argo CD server-side apply");
    // kubectl hides managedFields unless asked
    let stored: Value = serde_json::from_str(&env.cluster.kubectl_ok(&[
        "get",
        "configmap/argo-app",
        "-n",
        ns,
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .unwrap();
    assert!(
        stored["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["manager"] == "argocd-controller"),
        "the field manager is recorded"
    );
    let (ok, text) = env.verify_resource(
        "configmap/argo-app",
        Some(ns),
        &[
            "--ignore-profile",
            "kubernetes,argocd",
            "--argocd-application",
            "shop",
        ],
    );
    assert!(ok, "{text}");

    // A tracking annotation naming another object: Argo CD would take it for that one.
    let signed = env.sign(&cm("argo-other"));
    let what = "Argo CD tracking id naming another object";
    assert_denied_by_webhook(&argo(what, &signed, "shop", "argo-app"));
    // An application the binding does not list.
    let what = "Argo CD tracking for an unlisted application";
    assert_denied_by_webhook(&argo(what, &signed, "other-app", "argo-other"));

    // Flux kustomize-controller.
    let signed = env.sign(&cm("flux-app"));
    let out = flux("Flux labels added", &signed, "apps");
    assert_admitted(&out, "Flux server-side apply");
    let what = "Flux labels of an unlisted Kustomization";
    assert_denied_by_webhook(&flux(what, &signed, "other"));
}

// ---------------------------------------------------------------------------------------
// What the real API server sends (recorded)
// ---------------------------------------------------------------------------------------

/// Writes `review` to `$MANSIGN_RECORD_DIR/name.json` when that is set (how
/// `testdata/cluster/recorded/` was made; its README has the command).
fn record(name: &str, review: &Value) {
    if let Ok(dir) = std::env::var("MANSIGN_RECORD_DIR") {
        std::fs::create_dir_all(&dir).unwrap();
        let path = Path::new(&dir).join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(review).unwrap() + "\n").unwrap();
        eprintln!("recorded {}", path.display());
    }
}

#[test]
fn a_namespace_create_is_sent_with_its_own_name_as_request_namespace_and_is_admitted() {
    let env = shared();
    let text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: recorded-ns\n  labels:\n    team: platform\n";
    let signed = env.sign(text);
    let out = env.kubectl_doc("signed Namespace", &["apply"], &signed);
    let reviews = env.recorder.find(|r| {
        r["kind"]["kind"] == "Namespace" && r["name"] == "recorded-ns" && r["operation"] == "CREATE"
    });
    assert!(!reviews.is_empty(), "the recorder saw the Namespace CREATE");
    let request = &reviews[0];
    eprintln!(
        "the API server sent: {}",
        serde_json::to_string_pretty(request).unwrap()
    );
    assert_eq!(
        request["namespace"], "recorded-ns",
        "kube-apiserver v1.34 sends a Namespace's own name as request.namespace"
    );
    let body = env.recorder.body_of(request);
    record("namespace-create", &body);
    if let Ok(dir) = std::env::var("MANSIGN_RECORD_DIR") {
        std::fs::copy(&env.pubkey, Path::new(&dir).join("namespace-create.pub")).unwrap();
    }
    assert_admitted(&out, "a signed Namespace");
    let (ok, text) = env.verify_resource("namespace/recorded-ns", None, &[]);
    assert!(ok, "{text}");
}

#[test]
fn status_updates_as_the_api_server_sends_them_are_recorded() {
    let env = shared();
    let ns = "recorded";
    // A Pod (no kubelet: it stays Pending); its status written as a kubelet would, with a
    // label changed in the same write.
    env.cluster.kubectl_ok(&[
        "run",
        "rec-pod",
        "-n",
        ns,
        "--image=registry.example/app:1.0",
        "--restart=Never",
    ]);
    env.kubectl(
        "pods/status write with a label",
        &[
            "patch",
            "pod",
            "rec-pod",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"added-by-status":"yes"}},"status":{"message":"recorded"}}"#,
        ],
    );
    let signed = env.sign(
        &std::fs::read_to_string(fixture("cluster/signed-set/service.yaml"))
            .unwrap()
            .replace("namespace: stored", &format!("namespace: {ns}")),
    );
    env.admitted_doc("signed Service", &["apply"], &signed, "signed Service");
    // A ClusterIP Service may not carry status.loadBalancer.ingress (the API server's
    // validation refuses it before any validating webhook is called), so the write sets a
    // condition.
    // The Service status strategy keeps the request's labels: mansign (registered for
    // services/status here) must deny the write, while the recorder sees it.
    let out = env.kubectl(
        "services/status write with a label",
        &["patch", "service", "web", "-n", ns, "--subresource=status", "--type=merge",
          "-p", r#"{"metadata":{"labels":{"added-by-status":"yes"}},"status":{"conditions":[{"type":"Recorded","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"Recorded","message":"recorded by the test"}]}}"#],
    );
    assert_denied(&out, "modified");
    if let Ok(dir) = std::env::var("MANSIGN_RECORD_DIR") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            &env.pubkey,
            Path::new(&dir).join("services-status-update.pub"),
        )
        .unwrap();
    }
    for (resource, name, file) in [
        ("pods", "rec-pod", "pods-status-update"),
        ("services", "web", "services-status-update"),
    ] {
        let reviews = env.recorder.find(|r| {
            r["resource"]["resource"] == resource
                && r["subResource"] == "status"
                && r["name"] == name
                && r["namespace"] == ns
        });
        assert!(
            !reviews.is_empty(),
            "the recorder saw the {resource}/status UPDATE"
        );
        let request = &reviews[0];
        eprintln!(
            "{resource}/status UPDATE as sent: operation {}, object labels {}, oldObject labels {}",
            request["operation"],
            request["object"]["metadata"]["labels"],
            request["oldObject"]["metadata"]["labels"]
        );
        assert_eq!(request["operation"], "UPDATE");
        assert!(request["object"].is_object() && request["oldObject"].is_object());
        let body = env.recorder.body_of(request);
        record(file, &body);
    }
}

// ---------------------------------------------------------------------------------------
// 5. Fail closed (its own cluster: it stops the webhook)
// ---------------------------------------------------------------------------------------

#[test]
fn fail_closed_when_the_webhook_is_down_and_no_failed_request_while_its_certificate_rotates() {
    let env = Env::new();
    let ns = "failclosed";
    let signed = env.sign(&pe_kyverno("before", ns, "nightly-backup-*"));
    env.admitted_doc("signed, webhook up", &["apply"], &signed, "webhook up");

    // Down: failurePolicy Fail refuses the request.
    let port = {
        let mut w = env.webhook.lock().unwrap();
        w.stop();
        w.port
    };
    let signed = env.sign(&pe_kyverno("while-down", ns, "nightly-backup-*"));
    let out = env.kubectl_doc("signed, webhook down", &["apply"], &signed);
    assert!(!out.status.success(), "admitted with the webhook down");
    assert!(
        stderr(&out).contains("failed calling webhook"),
        "kubectl: {}",
        stderr(&out)
    );
    assert!(
        env.get("policyexceptions.kyverno.io/while-down", Some(ns))
            .is_none()
    );
    let unsigned = pe_kyverno("unsigned-while-down", ns, "*");
    assert!(
        !env.kubectl_doc("unsigned, webhook down", &["apply"], &unsigned)
            .status
            .success()
    );

    // Restarted on the same port: admitted again.
    *env.webhook.lock().unwrap() = Webhook::start(env.dir(), &env.policies, port);
    retry_for(
        Duration::from_secs(30),
        Duration::from_millis(500),
        "not admitted after restart",
        || {
            let out = env.kubectl_doc("signed, webhook restarted", &["apply"], &signed);
            out.status
                .success()
                .then_some(())
                .ok_or_else(|| stderr(&out))
        },
    );
    env.denied_doc(
        "unsigned, webhook restarted",
        &["apply"],
        &unsigned,
        "not-signed",
    );

    // Rotation: a new serving certificate (same CA, as cert-manager renews it) while
    // requests run; every request is answered.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let runner = {
        let kubeconfig = env.cluster.kubeconfig().to_path_buf();
        let stop = stop.clone();
        let doc = env.sign(&pe_kyverno("rotation", ns, "nightly-backup-*"));
        std::thread::spawn(move || {
            let mut results = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) || results.len() < 10 {
                let mut child = Command::new(&common::cluster::tools().kubectl)
                    .env("KUBECONFIG", &kubeconfig)
                    .args(["create", "--dry-run=server", "-f", "-"])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(doc.as_bytes())
                    .unwrap();
                let out = child.wait_with_output().unwrap();
                results.push((out.status.success(), stderr(&out)));
            }
            results
        })
    };
    for round in 0..3 {
        std::thread::sleep(Duration::from_millis(1500));
        env.pki
            .install(env.dir(), &format!("mansign-webhook-rotated-{round}"));
    }
    std::thread::sleep(Duration::from_millis(2500));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let results = runner.join().unwrap();
    let failed: Vec<&String> = results
        .iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, e)| e)
        .collect();
    eprintln!(
        "certificate rotation: {} requests, {} failed",
        results.len(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "requests failed while the certificate rotated: {failed:#?}"
    );
}

// ---------------------------------------------------------------------------------------
// The recorded bodies, offline (no cluster)
// ---------------------------------------------------------------------------------------

/// The Namespace CREATE exactly as kube-apiserver v1.34.4 sent it
/// (`testdata/cluster/recorded/namespace-create.json`): `request.namespace` is the
/// Namespace's own name. `mansign admission review` must admit the signed Namespace.
/// The recording `name` (`testdata/cluster/recorded/<name>.json`): a key policy for
/// `resources` (`kind`, ignore profile kubernetes) trusting the key it was signed with,
/// written into `dir`; the review's path; its body.
fn recorded(dir: &Path, name: &str, resources: &str, kind: &str) -> (PathBuf, PathBuf, Value) {
    let pubkey = fixture(&format!("cluster/recorded/{name}.pub"));
    let policy =
        common::fixtures::key_policy(resources, kind, "  ignoreProfile: kubernetes\n", &pubkey);
    let policy = write(dir, "policy.yaml", &policy);
    let review = fixture(&format!("cluster/recorded/{name}.json"));
    let body = serde_json::from_str(&std::fs::read_to_string(&review).unwrap()).unwrap();
    (policy, review, body)
}

#[test]
fn the_recorded_namespace_create_is_admitted_offline() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, review, body) =
        recorded(dir.path(), "namespace-create", "namespaces", "v1/Namespace");
    assert_eq!(body["request"]["namespace"], body["request"]["name"]);
    let out = common::admission_review_run(mansign(), &policy, &review);
    eprintln!("{}{}", stdout(&out), stderr(&out));
    assert!(
        out.status.success(),
        "the recorded signed Namespace CREATE is denied: {}",
        stderr(&out)
    );
}

/// The services/status UPDATE exactly as kube-apiserver v1.34.4 sent it
/// (`testdata/cluster/recorded/services-status-update.json`): `kubectl patch
/// --subresource=status` of a signed Service, adding a label and a status condition. The
/// Service status strategy takes only `spec` from the stored object, so the server would
/// store the label: `mansign admission review` must deny the write as it was sent, and
/// admit the same write without the label (a status-only write).
#[test]
fn the_recorded_services_status_update_is_judged_by_the_service_status_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, recorded, body) = recorded(
        dir.path(),
        "services-status-update",
        "services",
        "v1/Service",
    );
    let request = &body["request"];
    assert_eq!(request["subResource"], "status");
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(
        request["object"]["metadata"]["labels"]["added-by-status"], "yes",
        "the API server sends the request's labels in object (the strategy keeps them)"
    );
    assert!(request["oldObject"]["metadata"]["labels"]["added-by-status"].is_null());
    assert_eq!(
        request["object"]["status"]["conditions"][0]["type"],
        "Recorded"
    );

    let review = |what: &str, file: &Path| {
        let out = mansign()
            .args(["admission", "review", "--policy"])
            .arg(&policy)
            .arg("-f")
            .arg(file)
            .output()
            .unwrap();
        eprintln!(
            "{what}: {} {}",
            if out.status.success() {
                "ADMITTED"
            } else {
                "DENIED"
            },
            stderr(&out).trim()
        );
        out
    };

    // As sent: the label would be stored, so it is denied, naming the label.
    let out = review("services/status UPDATE as recorded", &recorded);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    let message = answer["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("[modified]") && message.contains("added-by-status"),
        "{message}"
    );

    // The same write without the label: only status differs from the signed Service.
    let mut status_only = body.clone();
    let metadata = status_only["request"]["object"]["metadata"]
        .as_object_mut()
        .unwrap();
    match request["oldObject"]["metadata"].get("labels") {
        Some(labels) => metadata.insert("labels".into(), labels.clone()),
        None => metadata.remove("labels"),
    };
    let file = write(dir.path(), "status-only.json", &status_only.to_string());
    let out = review("the same write without the label", &file);
    assert!(out.status.success(), "{}", stderr(&out));
}
