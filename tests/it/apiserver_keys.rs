//! Public keys where Kyverno users keep them (issue 25 §4), against a real API server
//! (`scripts/cluster.sh`: etcd and kube-apiserver with RBAC, the real `kubectl`): policies
//! naming a Secret (`k8s://NAMESPACE/NAME`) or a ConfigMap (a Kyverno `context` entry read as
//! `{{ keys.data.production }}`), enforced by the real `mansign admission serve` registered as
//! a validating webhook. The webhook reads the cluster as a ServiceAccount whose Role grants
//! get/list/watch on exactly the named objects (resourceNames, as charts/mansign renders it
//! for `keyReferences`), with a bearer token from the TokenRequest API.
//!
//! Each test has its own namespaces, key sources, policy and webhook process, so they run in
//! parallel on one API server. Checks go through `kubectl create --dry-run=server` (the
//! webhook is called exactly as for a real create, nothing is stored). Where a change must
//! reach the webhook through its watch, the check is repeated until it holds (at most 60 s;
//! a limit for a failing run, not a timed assertion).

use crate::common;
use crate::common::admission_fixture;

use admission_fixture::{Key, key, sign};
use common::cluster::Cluster;
use common::mansign;
use common::pki::Pki;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a change may take to reach the webhook before the test fails.
const EVENTUALLY: Duration = Duration::from_secs(60);

struct Env {
    cluster: Cluster,
    dir: tempfile::TempDir,
    ca_pem: String,
    ca_bundle: String,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let cluster = Cluster::start();
        let dir = tempfile::Builder::new()
            .prefix("mansign-apiserver-keys-")
            .tempdir()
            .unwrap();
        let pki = Pki::new();
        pki.install(dir.path(), "mansign-webhook");
        use base64::Engine as _;
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(pki.ca_pem.as_bytes());
        Env {
            cluster,
            dir,
            ca_pem: pki.ca_pem.clone(),
            ca_bundle,
        }
    })
}

fn text(out: &Output) -> String {
    common::all_output(out)
}

/// The CA file the cluster's admin kubeconfig names.
fn cluster_ca(cluster: &Cluster) -> PathBuf {
    let kubeconfig = std::fs::read_to_string(cluster.kubeconfig()).unwrap();
    kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority: "))
        .map(PathBuf::from)
        .expect("certificate-authority in the cluster's kubeconfig")
}

/// `mansign admission serve` on a free loopback port.
struct Webhook {
    child: Child,
    port: u16,
    stderr: PathBuf,
}

/// `mansign admission serve` on a free loopback port with the serving certificate made for
/// the cluster, `--policy POLICY --kubeconfig KUBECONFIG`, stdin closed; not yet run.
fn serve_command(policy: &Path, kubeconfig: &Path) -> Command {
    let dir = env().dir.path();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mansign"));
    cmd.args(["admission", "serve", "--listen", "127.0.0.1:0"])
        .arg("--tls-cert")
        .arg(dir.join("tls.crt"))
        .arg("--tls-key")
        .arg(dir.join("tls.key"))
        .arg("--policy")
        .arg(policy)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null());
    cmd
}

impl Webhook {
    fn start(name: &str, policy: &Path, kubeconfig: &Path) -> Webhook {
        let dir = env().dir.path();
        let stderr = dir.join(format!("{name}-webhook.stderr"));
        let child = serve_command(policy, kubeconfig)
            .args(["--reload-interval", "1s", "--shutdown-grace", "1s"])
            .stdout(std::fs::File::create(dir.join(format!("{name}-webhook.stdout"))).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start mansign admission serve");
        common::webhook::kill_at_exit(child.id());
        let mut webhook = Webhook {
            child,
            port: 0,
            stderr,
        };
        webhook.port = common::webhook::wait_listening(
            &mut webhook.child,
            &webhook.stderr,
            "mansign admission serve",
        );
        webhook
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// `GET /readyz` (HTTPS, the test CA).
    fn readyz(&self) -> Value {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let ca = reqwest::Certificate::from_pem(env().ca_pem.as_bytes()).unwrap();
            let client = reqwest::Client::builder()
                .tls_certs_only([ca])
                .build()
                .unwrap();
            client
                .get(format!("https://127.0.0.1:{}/readyz", self.port))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        })
    }

    fn still_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One test's world: `NAME` (the gated namespace), `NAME-keys` (the key sources and the
/// webhook's ServiceAccount), the policy file, the webhook and its registration.
struct Case {
    name: String,
    keys_ns: String,
    policy: PathBuf,
    webhook: Webhook,
}

fn kubectl_ok(args: &[&str]) -> String {
    env().cluster.kubectl_ok(args)
}

fn apply_json(value: &Value) {
    let out = env()
        .cluster
        .kubectl_stdin(&["apply", "-f", "-"], &value.to_string());
    assert!(
        out.status.success(),
        "kubectl apply {value}: {}",
        text(&out)
    );
}

/// Namespaces `name` and `name-keys`; the ServiceAccount `mansign` in `name-keys` with a
/// Role granting get/list/watch on exactly `readable` (resource, object name) there.
fn namespaces_and_access(name: &str, readable: &[(&str, &str)]) -> PathBuf {
    let keys_ns = format!("{name}-keys");
    // Applied: a test may have made NAME-keys and its key sources before.
    for ns in [name, keys_ns.as_str()] {
        apply_json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    kubectl_ok(&["create", "serviceaccount", "mansign", "-n", &keys_ns]);
    let rules: Vec<Value> = readable
        .iter()
        .map(|(resource, object)| {
            json!({"apiGroups": [""], "resources": [resource], "resourceNames": [object],
                   "verbs": ["get", "list", "watch"]})
        })
        .collect();
    apply_json(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "mansign-keys", "namespace": keys_ns},
        "rules": rules,
    }));
    apply_json(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "mansign-keys", "namespace": keys_ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mansign-keys"},
        "subjects": [{"kind": "ServiceAccount", "name": "mansign", "namespace": keys_ns}],
    }));
    // A kubeconfig with the ServiceAccount's token (TokenRequest API), as a pod has it.
    let token = kubectl_ok(&[
        "create",
        "token",
        "mansign",
        "-n",
        &keys_ns,
        "--duration=2h",
    ]);
    let kubeconfig = env().dir.path().join(format!("{name}-sa.kubeconfig"));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: sa\nclusters:\n- name: c\n  cluster:\n    \
             server: {}\n    certificate-authority: {}\nusers:\n- name: sa\n  user:\n    \
             token: {}\ncontexts:\n- name: sa\n  context: {{cluster: c, user: sa}}\n",
            env().cluster.server(),
            cluster_ca(&env().cluster).display(),
            token.trim()
        ),
    )
    .unwrap();
    kubeconfig
}

/// A Kyverno ClusterPolicy for the ConfigMaps of namespace `name` whose one key is
/// `public_keys`, with `context` (indented for a rule) before `validate`.
fn kyverno_policy(name: &str, context: &str, public_keys: &str) -> String {
    common::dup_tests_a::template(
        "kyverno-configmap-key-policy.yaml",
        &[
            ("NAME", name),
            ("    # CONTEXT\n", context),
            ("PUBLIC_KEYS", public_keys),
        ],
    )
}

/// `mansign verify --policy POLICY --kubeconfig KUBECONFIG EXTRA... FILE`, run with
/// `KUBECONFIG` unset (the flag alone names the cluster).
fn verify_with_policy(policy: &Path, kubeconfig: &Path, extra: &[&str], file: &Path) -> Output {
    mansign()
        .args(["verify", "--policy"])
        .arg(policy)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(extra)
        .arg(file)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap()
}

impl Case {
    fn start(name: &str, policy_text: &str, readable: &[(&str, &str)]) -> Case {
        let kubeconfig = namespaces_and_access(name, readable);
        let policy = env().dir.path().join(format!("{name}-policy.yaml"));
        std::fs::write(&policy, policy_text).unwrap();
        let webhook = Webhook::start(name, &policy, &kubeconfig);
        let url = format!("https://127.0.0.1:{}/validate", webhook.port);
        apply_json(&json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": format!("keys-{name}")},
            "webhooks": [{
                "name": format!("{name}.keys.test.mansign.dev"),
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                "clientConfig": {"url": url, "caBundle": env().ca_bundle},
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                           "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}],
            }],
        }));
        let case = Case {
            name: name.to_string(),
            keys_ns: format!("{name}-keys"),
            policy,
            webhook,
        };
        // Active once an unsigned ConfigMap is denied by it.
        let start = Instant::now();
        loop {
            let out = case.dry_run_create(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "probe", "namespace": name}}));
            if !out.status.success() && text(&out).contains("denied the request") {
                break;
            }
            assert!(
                start.elapsed() < EVENTUALLY,
                "the API server did not call the webhook: {}",
                text(&out)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        case
    }

    /// A ConfigMap of this case's namespace signed by `key`.
    fn signed(&self, key: &Key, object: &str) -> Value {
        sign(
            key,
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {object}, namespace: {}}}\n\
                 data: {{release: v1}}\n",
                self.name
            ),
        )
        .remove(0)
    }

    fn dry_run_create(&self, object: &Value) -> Output {
        env().cluster.kubectl_stdin(
            &["create", "--dry-run=server", "-f", "-"],
            &object.to_string(),
        )
    }

    fn admitted(&self, object: &Value) -> Result<(), String> {
        let out = self.dry_run_create(object);
        if out.status.success() {
            Ok(())
        } else {
            Err(text(&out))
        }
    }

    fn assert_admitted(&self, object: &Value, what: &str) {
        if let Err(e) = self.admitted(object) {
            panic!("{what}: denied: {e}\nwebhook log:\n{}", self.webhook.log());
        }
        eprintln!("  {what}: admitted");
    }

    /// Denied by the webhook; the message.
    fn assert_denied(&self, object: &Value, what: &str) -> String {
        match self.admitted(object) {
            Ok(()) => panic!("{what}: admitted\nwebhook log:\n{}", self.webhook.log()),
            Err(e) => {
                assert!(e.contains("denied the request"), "{what}: {e}");
                eprintln!("  {what}: denied: {}", e.trim());
                e
            }
        }
    }

    /// Repeats `check` until it returns true; fails after [`EVENTUALLY`].
    fn eventually(&self, what: &str, mut check: impl FnMut() -> Result<(), String>) {
        let start = Instant::now();
        loop {
            match check() {
                Ok(()) => {
                    eprintln!("  {what}: after {:.1} s", start.elapsed().as_secs_f64());
                    return;
                }
                Err(e) if start.elapsed() > EVENTUALLY => {
                    panic!(
                        "{what}: not within {EVENTUALLY:?}: {e}\nwebhook log:\n{}",
                        self.webhook.log()
                    )
                }
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    fn secret(&self, name: &str, pem: &str) {
        apply_json(&json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": self.keys_ns},
            "stringData": {"cosign.pub": pem},
        }));
    }

    fn config_map(&self, name: &str, key: &str, value: &str) {
        apply_json(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.keys_ns},
            "data": {key: value},
        }));
    }
}

fn secret_case(name: &str, readable: &[(&str, &str)]) -> Case {
    Case::start(
        name,
        &kyverno_policy(name, "", &format!("k8s://{name}-keys/release")),
        readable,
    )
}

#[test]
fn a_key_rotated_by_editing_the_secret_takes_effect_without_a_restart() {
    let (release, rotated) = (key(), key());
    let name = "rotate";
    // The Secret exists before the webhook starts (the usual order).
    let keys_ns = format!("{name}-keys");
    apply_json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": keys_ns}}));
    apply_json(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "release", "namespace": keys_ns},
        "stringData": {"cosign.pub": release.public_key_pem}}));
    let mut case = secret_case(name, &[("secrets", "release")]);
    let by_release = case.signed(&release, "app");
    let by_rotated = case.signed(&rotated, "app");
    case.assert_admitted(&by_release, "signed with the Secret's key");
    let denied = case.assert_denied(&by_rotated, "signed with another key");
    assert!(!denied.contains("key-unresolved"), "{denied}");

    // Rotate: the Secret now holds the new key.
    case.secret("release", &rotated.public_key_pem);
    case.eventually("the rotated key is accepted", || case.admitted(&by_rotated));
    let denied = case.assert_denied(&by_release, "signed with the old key after the rotation");
    assert!(
        denied.contains("no signature set verified") || denied.contains("signature"),
        "{denied}"
    );
    assert!(
        case.webhook.still_running(),
        "the webhook was not restarted"
    );
    let log = case.webhook.log();
    assert!(
        log.contains("\"event\":\"key-reference\"") && log.contains("\"event\":\"reloaded\""),
        "{log}"
    );
}

#[test]
fn a_deleted_secret_denies_with_the_reason_and_no_stale_key_is_used() {
    let release = key();
    let case = secret_case("deleted", &[("secrets", "release")]);
    let by_release = case.signed(&release, "app");
    // Not created yet: denied, saying so.
    let denied = case.assert_denied(&by_release, "before the Secret exists");
    assert!(denied.contains("does not exist"), "{denied}");
    case.secret("release", &release.public_key_pem);
    case.eventually("the Secret's key is accepted", || {
        case.admitted(&by_release)
    });

    kubectl_ok(&["delete", "secret", "release", "-n", &case.keys_ns]);
    case.eventually("the deleted Secret denies", || {
        match case.admitted(&by_release) {
            Ok(()) => Err("still admitted".into()),
            Err(e) if e.contains("does not exist") && e.contains("Secret deleted-keys/release") => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    });
    let denied = case.assert_denied(&by_release, "after the deletion");
    // /readyz says which reference is unresolved, and why.
    let ready = case.webhook.readyz();
    assert_eq!(
        ready["policies"]["key_references"],
        json!(["Secret deleted-keys/release key \"cosign.pub\""]),
        "{ready}"
    );
    let unresolved = ready["policies"]["unresolved_keys"].to_string();
    assert!(unresolved.contains("does not exist"), "{ready}");
    for part in [
        "a public key the policy names is not available",
        "Secret deleted-keys/release",
        "cosign.pub",
        "deleted",
    ] {
        assert!(denied.contains(part), "missing {part:?}: {denied}");
    }
}

#[test]
fn a_secret_the_webhook_may_not_read_denies_with_the_reason() {
    let release = key();
    // The Role names another Secret: reading this one is forbidden.
    let case = secret_case("forbidden", &[("secrets", "another")]);
    case.secret("release", &release.public_key_pem);
    let by_release = case.signed(&release, "app");
    let denied = case.assert_denied(&by_release, "signed, but the Secret is unreadable");
    for part in ["cannot read the Secret forbidden-keys/release", "403"] {
        assert!(denied.contains(part), "missing {part:?}: {denied}");
    }
}

#[test]
fn a_config_map_value_that_is_not_a_public_key_is_refused_with_the_policy_path() {
    let release = key();
    let name = "cmkeys";
    let context = format!(
        "    context:\n    - name: keys\n      configMap: {{name: signing-keys, namespace: {name}-keys}}\n"
    );
    let case = Case::start(
        name,
        &kyverno_policy(name, &context, "\"{{ keys.data.production }}\""),
        &[("configmaps", "signing-keys")],
    );
    case.config_map("signing-keys", "production", "not a public key");
    let by_release = case.signed(&release, "app");
    case.eventually("the bad value is read", || {
        match case.admitted(&by_release) {
            Ok(()) => Err("admitted".into()),
            Err(e) if e.contains("not a PEM public key") => Ok(()),
            Err(e) => Err(e),
        }
    });
    let denied = case.assert_denied(&by_release, "the ConfigMap's value is not a key");
    for part in [
        case.policy.display().to_string().as_str(),
        "spec.rules[0].validate.manifests.attestors[0].entries[0].keys.publicKeys",
        "ConfigMap cmkeys-keys/signing-keys",
        "not a PEM public key",
    ] {
        assert!(denied.contains(part), "missing {part:?}: {denied}");
    }
    // A data key the ConfigMap lacks: denied, naming it.
    case.config_map("signing-keys", "staging", &release.public_key_pem);
    case.eventually("the missing data key is reported", || {
        match case.admitted(&by_release) {
            Ok(()) => Err("admitted".into()),
            Err(e) if e.contains("has no data key") => Ok(()),
            Err(e) => Err(e),
        }
    });
    // Fixed in place: accepted without a restart.
    case.config_map("signing-keys", "production", &release.public_key_pem);
    case.eventually("the fixed value is accepted", || case.admitted(&by_release));
}

#[test]
fn other_context_variables_are_refused_at_load_naming_what_is_not_supported() {
    let dir = env().dir.path();
    for (context, public_keys, field) in [
        (
            "    context:\n    - name: keys\n      apiCall: {urlPath: /api/v1/namespaces/x/configmaps/y}\n",
            "\"{{ keys.data.production }}\"",
            "spec.rules[0].context[0].apiCall",
        ),
        (
            "    context:\n    - name: keys\n      configMap: {name: k, namespace: ns}\n",
            "\"{{ request.object.metadata.annotations.key }}\"",
            "spec.rules[0].validate.manifests.attestors[0].entries[0].keys.publicKeys",
        ),
    ] {
        let policy = dir.join("unsupported-policy.yaml");
        std::fs::write(&policy, kyverno_policy("unsupported", context, public_keys)).unwrap();
        let out = serve_command(&policy, env().cluster.kubeconfig())
            .output()
            .unwrap();
        let message = text(&out);
        assert!(!out.status.success(), "{message}");
        assert!(
            message.contains(&policy.display().to_string())
                && message.contains(field)
                && message.contains("not supported"),
            "{message}"
        );
        let out = verify_with_policy(&policy, env().cluster.kubeconfig(), &[], &policy);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(field), "{}", text(&out));
    }
}

#[test]
fn the_cli_reads_the_referenced_keys_with_kubeconfig_and_context() {
    let (release, other) = (key(), key());
    let name = "cli";
    // No webhook: the CLI reads the Secret and the ConfigMap as the cluster's admin.
    kubectl_ok(&["create", "namespace", "cli-keys"]);
    apply_json(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "release", "namespace": "cli-keys"},
        "stringData": {"cosign.pub": release.public_key_pem}}));
    apply_json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "signing-keys", "namespace": "cli-keys"},
        "data": {"production": release.public_key_pem}}));
    let dir = env().dir.path();
    let signed = |key: &Key, file: &str| {
        let doc = sign(
            key,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: cli}\ndata: {a: b}\n",
        )
        .remove(0);
        let path = dir.join(file);
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    };
    let (good, bad) = (
        signed(&release, "cli-good.json"),
        signed(&other, "cli-bad.json"),
    );
    let context = "    context:\n    - name: keys\n      configMap: {name: signing-keys, namespace: cli-keys}\n";
    for (what, policy_text) in [
        ("Secret", kyverno_policy(name, "", "k8s://cli-keys/release")),
        (
            "ConfigMap",
            kyverno_policy(name, context, "\"{{ keys.data.production }}\""),
        ),
    ] {
        let policy = dir.join(format!("cli-{what}.yaml"));
        std::fs::write(&policy, policy_text).unwrap();
        let verify = |file: &Path, extra: &[&str]| {
            let out = verify_with_policy(&policy, env().cluster.kubeconfig(), extra, file);
            eprintln!(
                "  {what} {}: {:?} {}",
                file.display(),
                out.status.code(),
                text(&out).trim()
            );
            out
        };
        assert_eq!(verify(&good, &[]).status.code(), Some(0), "{what}");
        // The kubeconfig's one context, named.
        let context_name = std::fs::read_to_string(env().cluster.kubeconfig())
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("current-context: ")
                    .map(|s| s.trim().to_string())
            })
            .unwrap();
        assert_eq!(
            verify(&good, &["--context", &context_name]).status.code(),
            Some(0),
            "{what}"
        );
        assert_eq!(verify(&bad, &[]).status.code(), Some(1), "{what}");
        let out = verify(&good, &["--context", "nowhere"]);
        assert_eq!(out.status.code(), Some(2), "{what}");
        assert!(
            text(&out).contains("no context named \"nowhere\""),
            "{}",
            text(&out)
        );
        // Without cluster access: an error naming the reference.
        let out = verify_with_policy(&policy, &dir.join("no-such-kubeconfig"), &[], &good);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let message = text(&out);
        let reference = if what == "Secret" {
            "Secret cli-keys/release key \"cosign.pub\""
        } else {
            "ConfigMap cli-keys/signing-keys key \"production\""
        };
        assert!(
            message.contains(reference) && message.contains("no cluster access"),
            "{message}"
        );
    }
    // A reference to a Secret that does not exist: exit 2, naming it and the policy field.
    let policy = dir.join("cli-missing.yaml");
    std::fs::write(&policy, kyverno_policy(name, "", "k8s://cli-keys/missing")).unwrap();
    let out = verify_with_policy(&policy, env().cluster.kubeconfig(), &[], &good);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let message = text(&out);
    assert!(
        message.contains("Secret cli-keys/missing")
            && message.contains("does not exist")
            && message.contains("keys.publicKeys"),
        "{message}"
    );
}
