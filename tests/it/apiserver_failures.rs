//! What happens when the webhook cannot answer, or cannot hear the API server, against a
//! real Kubernetes API server (`scripts/cluster.sh`: etcd and kube-apiserver v1.34, the real
//! `kubectl`, the real `mansign admission serve`); issue 35 items 4, 5 and 11.
//!
//! * **Requests mansign cannot answer are refused, whatever `failurePolicy` says.** The
//!   shipped ValidatingWebhookConfiguration (`deploy/base/`) is registered with
//!   `failurePolicy: Ignore` (what the chart allows only with an acknowledgement): an
//!   unsigned PolicyException nested deeper than mansign reads, or one whose review is
//!   larger than the webhook takes, must still be denied (before: HTTP 400 or 413, which
//!   the API server turned into an allow).
//! * **Every namespace is gated**, `kube-system` and `mansign-system` included, as the
//!   shipped configuration has no `namespaceSelector`; docs/admission.md says so.
//! * **A key read from a Secret stops verifying when the watch breaks**: the webhook reads
//!   the API server through a fault-injecting TCP proxy (tests/it/common/tcp_fault_proxy.rs)
//!   that drops or blackholes its connections. A key deleted or rotated meanwhile stops
//!   verifying within the stated bounds (`SILENCE_LIMIT`, `BACKOFF_MAX` of
//!   src/admission/server/keys.rs), signed objects are admitted again soon after the
//!   proxy recovers, and `/readyz` and `/metrics` show the stale watch.
//!
//! The time limits below are the bounds the webhook documents (docs/admission.md, "Bounds
//! when the watch breaks"), plus a margin for a loaded machine: a behaviour, not a
//! performance claim.

use crate::common;

use common::admission_fixture::{Key, key, sign};
use common::cluster::Cluster;
use common::pki::Pki;
use common::tcp_fault_proxy::{Fault, FaultProxy};
use common::webhook::Webhook;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// How long the tests wait for what has no bound of its own (the API server calling a
/// newly registered webhook, a healthy watch delivering a change).
const EVENTUALLY: Duration = Duration::from_secs(60);
/// src/admission/server/keys.rs: a value unconfirmed this long is dropped.
const SILENCE_LIMIT: Duration = Duration::from_secs(40);
/// src/admission/server/keys.rs: the longest wait before a failed list is retried.
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// src/kube/client.rs: time to connect (a blackholed connection attempt fails after it).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Room for the reload that follows a change, kubectl's own round trip, a busy machine.
const MARGIN: Duration = Duration::from_secs(8);

struct Env {
    cluster: Cluster,
    dir: tempfile::TempDir,
    ca_pem: String,
    ca_bundle: String,
    release: Key,
    /// `mansign admission serve` with the shipped policy (the test key), no cluster access.
    webhook: Webhook,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let cluster = Cluster::start();
        cluster.create_kyverno_crds();
        let dir = tempfile::Builder::new()
            .prefix("mansign-apiserver-failures-")
            .tempdir()
            .unwrap();
        let pki = Pki::new();
        pki.install(dir.path(), "mansign-webhook");
        let release = key();
        let policy = shipped_policy(dir.path(), &release.public_key_pem);
        let webhook = Webhook::start(dir.path(), &[policy], 0);
        let env = Env {
            cluster,
            dir,
            ca_pem: pki.ca_pem.clone(),
            ca_bundle: pki.ca_bundle(),
            release,
            webhook,
        };
        for ns in ["deep", "oversized", "mansign-system"] {
            env.cluster.kubectl_ok(&["create", "namespace", ns]);
        }
        // The shipped configuration, with only its client configuration pointed at the
        // test's webhook and `failurePolicy: Ignore`.
        let mut shipped = shipped_configuration();
        for hook in shipped["webhooks"].as_array_mut().unwrap() {
            hook["clientConfig"] = json!({"url": env.webhook.url(), "caBundle": env.ca_bundle});
            hook["failurePolicy"] = json!("Ignore");
        }
        apply_json(&env.cluster, &shipped);
        // Active once an unsigned exception is denied.
        let probe = unsigned_exception("probe", "deep", json!("x"));
        eventually(
            "the API server calls the webhook",
            EVENTUALLY,
            || match create(&env.cluster, &probe, &["--dry-run=server"]) {
                Err(e) if e.contains("denied the request") => Ok(()),
                other => Err(format!("{other:?}")),
            },
        );
        env
    })
}

/// The ManifestPolicy of deploy/base/policy-configmap.yaml, its key replaced by `pem`.
fn shipped_policy(dir: &Path, pem: &str) -> PathBuf {
    let text =
        std::fs::read_to_string(Path::new(REPO).join("deploy/base/policy-configmap.yaml")).unwrap();
    let configmap = yaml_docs(&text).remove(0);
    let mut policy = yaml_docs(configmap["data"]["policy.yaml"].as_str().unwrap()).remove(0);
    policy["spec"]["attestors"][0]["entries"][0]["keys"]["publicKeys"] = json!(pem);
    common::write(dir, "shipped-policy.json", &policy.to_string())
}

/// deploy/base/validatingwebhookconfiguration.yaml.
fn shipped_configuration() -> Value {
    let text = std::fs::read_to_string(
        Path::new(REPO).join("deploy/base/validatingwebhookconfiguration.yaml"),
    )
    .unwrap();
    yaml_docs(&text).remove(0)
}

fn yaml_docs(text: &str) -> Vec<Value> {
    mansign::manifest::parse_documents(text, &mansign::limits::Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

fn text(out: &Output) -> String {
    common::all_output(out)
}

fn apply_json(cluster: &Cluster, value: &Value) {
    let out = cluster.kubectl_stdin(&["apply", "-f", "-"], &value.to_string());
    assert!(
        out.status.success(),
        "kubectl apply {value}: {}",
        text(&out)
    );
}

/// `kubectl create ARGS -f -` of `object`: `Ok` when the API server admitted it.
fn create(cluster: &Cluster, object: &Value, args: &[&str]) -> Result<(), String> {
    let mut all = vec!["create"];
    all.extend(args);
    all.extend(["-f", "-"]);
    let out = cluster.kubectl_stdin(&all, &object.to_string());
    if out.status.success() {
        Ok(())
    } else {
        Err(text(&out))
    }
}

/// Repeats `check` until it returns `Ok` (every 250 ms); fails after `limit`. Returns the
/// time it took.
fn eventually(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Result<(), String>,
) -> Duration {
    let start = Instant::now();
    loop {
        match check() {
            Ok(()) => {
                let took = start.elapsed();
                eprintln!("  {what}: after {:.1} s", took.as_secs_f64());
                return took;
            }
            Err(e) if start.elapsed() > limit => panic!("{what}: not within {limit:?}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// An unsigned `kyverno.io/v2` PolicyException whose one condition has `value` (the CRD
/// keeps any JSON there: `x-kubernetes-preserve-unknown-fields`).
fn unsigned_exception(name: &str, namespace: &str, value: Value) -> Value {
    json!({
        "apiVersion": "kyverno.io/v2", "kind": "PolicyException",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "exceptions": [{"policyName": "disallow-host-path", "ruleNames": ["host-path"]}],
            "match": {"any": [{"resources": {"kinds": ["Pod"], "names": ["debug-*"]}}]},
            "conditions": {"all": [{"key": "{{ request.operation }}", "operator": "Equals",
                                    "value": value}]},
        },
    })
}

fn assert_denied_with(result: Result<(), String>, code: &str, what: &str) {
    match result {
        Ok(()) => panic!("{what}: ADMITTED\nwebhook log:\n{}", env().webhook.log()),
        Err(e) => {
            eprintln!("  {what}: {}", e.trim());
            assert!(
                e.contains("denied the request") && e.contains(&format!("[{code}]")),
                "{what}: not mansign's denial with [{code}]: {e}"
            );
        }
    }
}

fn stored(cluster: &Cluster, resource: &str, namespace: &str) -> bool {
    cluster
        .kubectl(&["get", resource, "-n", namespace])
        .status
        .success()
}

// ---------------------------------------------------------------------------------------
// Item 4: what mansign cannot answer is refused under failurePolicy: Ignore
// ---------------------------------------------------------------------------------------

#[test]
fn an_unsigned_exception_nested_too_deeply_is_denied_under_failure_policy_ignore() {
    let env = env();
    // 80 levels in the condition's value: deeper than the 64 mansign reads (+2 envelope).
    let mut value = json!("bottom");
    for _ in 0..80 {
        value = json!({ "a": value });
    }
    let exception = unsigned_exception("nested", "deep", value);
    let result = create(&env.cluster, &exception, &[]);
    assert_denied_with(result, "too-deeply-nested", "unsigned, nested 80 deep");
    assert!(
        !stored(&env.cluster, "policyexceptions.kyverno.io/nested", "deep"),
        "the nested exception is stored"
    );
    // The webhook answered 200 (a refusal), not an HTTP error.
    let log = env.webhook.log();
    assert!(!log.contains("\"status\":400"), "{log}");
}

#[test]
fn an_unsigned_exception_whose_review_is_too_large_is_denied_under_failure_policy_ignore() {
    let env = env();
    // 600 KiB of `<`, sent as is (kubectl create --raw): the API server escapes each one
    // as `\u003c` in the AdmissionReview it sends, which is then over the webhook's 3 MiB.
    // Server-side dry run: admission runs, and etcd's own size limit does not come first.
    let exception = unsigned_exception("oversized", "oversized", json!("<".repeat(600 * 1024)));
    let file = common::write(env.dir.path(), "oversized.json", &exception.to_string());
    let out = env.cluster.kubectl(&[
        "create",
        "--raw",
        "/apis/kyverno.io/v2/namespaces/oversized/policyexceptions?dryRun=All",
        "-f",
        file.to_str().unwrap(),
    ]);
    let result = if out.status.success() {
        Ok(())
    } else {
        Err(text(&out))
    };
    assert_denied_with(result, "body-too-large", "unsigned, its review over 3 MiB");
}

// ---------------------------------------------------------------------------------------
// Item 11: every namespace is gated, as shipped and as documented
// ---------------------------------------------------------------------------------------

#[test]
fn the_shipped_configuration_gates_kube_system_and_mansign_system() {
    let env = env();
    for ns in ["kube-system", "mansign-system"] {
        let unsigned = unsigned_exception("unsigned", ns, json!("x"));
        assert_denied_with(
            create(&env.cluster, &unsigned, &["--dry-run=server"]),
            "not-signed",
            &format!("unsigned exception in {ns}"),
        );
        let signed = sign(
            &env.release,
            &serde_yaml_like(&unsigned_exception("signed", ns, json!("x"))),
        )
        .remove(0);
        if let Err(e) = create(&env.cluster, &signed, &["--dry-run=server"]) {
            panic!("signed exception in {ns}: denied: {e}");
        }
        eprintln!("  signed exception in {ns}: admitted");
    }
}

/// A JSON object as a YAML document (JSON is YAML).
fn serde_yaml_like(value: &Value) -> String {
    format!("{value}\n")
}

#[test]
fn docs_admission_says_what_namespace_selector_deploy_ships() {
    let docs = std::fs::read_to_string(Path::new(REPO).join("docs/admission.md")).unwrap();
    let shipped = shipped_configuration();
    let hook = &shipped["webhooks"][0];
    // deploy/ has no selector: every namespace is sent to the webhook.
    for selector in ["namespaceSelector", "objectSelector", "matchConditions"] {
        assert!(
            hook[selector].is_null(),
            "deploy/ now has a {selector}: {hook}"
        );
    }
    // The reference installation's bullet lists the shipped settings as `key: value`:
    // each must be deploy/'s, and it must say there is no namespaceSelector.
    let bullet = docs
        .split("* **Webhook configuration**")
        .nth(1)
        .and_then(|rest| rest.split("\n* ").next())
        .expect("docs/admission.md: the reference installation's Webhook configuration bullet");
    let bullet = bullet.split_whitespace().collect::<Vec<_>>().join(" ");
    for (key, value) in [
        ("failurePolicy", hook["failurePolicy"].clone()),
        ("timeoutSeconds", hook["timeoutSeconds"].clone()),
        ("matchPolicy", hook["matchPolicy"].clone()),
    ] {
        let value = value.as_str().map_or(value.to_string(), str::to_string);
        assert!(
            bullet.contains(&format!("`{key}: {value}`")),
            "docs/admission.md does not say `{key}: {value}` as deploy/ has it: {bullet}"
        );
    }
    assert!(
        bullet.contains("no `namespaceSelector`"),
        "docs/admission.md does not say deploy/ has no namespaceSelector: {bullet}"
    );
    // No page describes a selector that excludes namespaces.
    for page in [
        "docs/admission.md",
        "docs/operations.md",
        "deploy/README.md",
        "charts/mansign/README.md",
    ] {
        let text = std::fs::read_to_string(Path::new(REPO).join(page)).unwrap_or_default();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for claim in [
            "excluding `mansign-system`",
            "excluding mansign-system",
            "but mansign-system and kube-system",
        ] {
            assert!(!flat.contains(claim), "{page} still says {claim:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Item 5: keys read from a Secret, through a proxy that breaks the watch
// ---------------------------------------------------------------------------------------

/// One key-watch case: namespaces NAME (gated ConfigMaps) and NAME-keys (the Secret and
/// the webhook's ServiceAccount), a webhook reading the API server through a proxy.
struct KeyCase {
    name: String,
    keys_ns: String,
    proxy: FaultProxy,
    webhook: Webhook,
}

/// The CA file the cluster's admin kubeconfig names.
fn cluster_ca(cluster: &Cluster) -> PathBuf {
    std::fs::read_to_string(cluster.kubeconfig())
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority: "))
        .map(PathBuf::from)
        .expect("certificate-authority in the cluster's kubeconfig")
}

impl KeyCase {
    fn start(name: &str) -> KeyCase {
        let env = env();
        let cluster = &env.cluster;
        let keys_ns = format!("{name}-keys");
        for ns in [name, keys_ns.as_str()] {
            cluster.kubectl_ok(&["create", "namespace", ns]);
        }
        cluster.kubectl_ok(&["create", "serviceaccount", "mansign", "-n", &keys_ns]);
        apply_json(
            cluster,
            &json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "mansign-keys", "namespace": keys_ns},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["release"],
                           "verbs": ["get", "list", "watch"]}],
            }),
        );
        apply_json(
            cluster,
            &json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "mansign-keys", "namespace": keys_ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mansign-keys"},
                "subjects": [{"kind": "ServiceAccount", "name": "mansign", "namespace": keys_ns}],
            }),
        );
        let case_dir = env.dir.path().join(name);
        std::fs::create_dir_all(&case_dir).unwrap();
        let token = cluster.kubectl_ok(&[
            "create",
            "token",
            "mansign",
            "-n",
            &keys_ns,
            "--duration=2h",
        ]);
        // The API server's address, reached through the proxy (its certificate is for
        // 127.0.0.1, so TLS passes through unchanged).
        let target = env
            .cluster
            .server()
            .strip_prefix("https://")
            .unwrap()
            .parse()
            .unwrap();
        let proxy = FaultProxy::start(target);
        let kubeconfig = common::write(
            &case_dir,
            "sa.kubeconfig",
            &format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: sa\nclusters:\n- name: c\n  cluster:\n    \
                 server: https://{}\n    certificate-authority: {}\nusers:\n- name: sa\n  user:\n    \
                 token: {}\ncontexts:\n- name: sa\n  context: {{cluster: c, user: sa}}\n",
                proxy.address(),
                cluster_ca(cluster).display(),
                token.trim()
            ),
        );
        let policy = common::write(
            &case_dir,
            "policy.yaml",
            &common::dup_tests_a::template(
                "kyverno-configmap-key-policy.yaml",
                &[
                    ("NAME", name),
                    ("    # CONTEXT\n", ""),
                    ("PUBLIC_KEYS", &format!("k8s://{keys_ns}/release")),
                ],
            ),
        );
        // The TLS files of the shared environment, this case's own log.
        for file in ["tls.crt", "tls.key"] {
            std::fs::copy(env.dir.path().join(file), case_dir.join(file)).unwrap();
        }
        let webhook = Webhook::start_with(
            &case_dir,
            &[policy],
            0,
            &[OsStr::new("--kubeconfig"), kubeconfig.as_os_str()],
        );
        apply_json(
            cluster,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": format!("failures-{name}")},
                "webhooks": [{
                    "name": format!("{name}.failures.test.mansign.dev"),
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 10,
                    "clientConfig": {"url": webhook.url(), "caBundle": env.ca_bundle},
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                    "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                               "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}],
                }],
            }),
        );
        let case = KeyCase {
            name: name.to_string(),
            keys_ns,
            proxy,
            webhook,
        };
        let probe = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "probe", "namespace": name}});
        eventually(
            "the API server calls the case's webhook",
            EVENTUALLY,
            || match case.admitted(&probe) {
                Err(e) if e.contains("denied the request") => Ok(()),
                other => Err(format!("{other:?}")),
            },
        );
        case
    }

    fn secret(&self, pem: &str) {
        apply_json(
            &env().cluster,
            &json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "release", "namespace": self.keys_ns},
                    "stringData": {"cosign.pub": pem}}),
        );
    }

    fn delete_secret(&self) {
        env()
            .cluster
            .kubectl_ok(&["delete", "secret", "release", "-n", &self.keys_ns]);
    }

    /// A ConfigMap of this case's namespace signed by `key`.
    fn signed(&self, key: &Key) -> Value {
        sign(
            key,
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: {}}}\n\
                 data: {{release: v1}}\n",
                self.name
            ),
        )
        .remove(0)
    }

    /// A server-side dry-run create (the webhook decides, nothing is stored).
    fn admitted(&self, object: &Value) -> Result<(), String> {
        create(&env().cluster, object, &["--dry-run=server"])
    }

    /// Fails unless `object` is admitted now.
    fn assert_admitted(&self, object: &Value, what: &str) {
        if let Err(e) = self.admitted(object) {
            panic!("{what}: denied: {e}\nwebhook log:\n{}", self.webhook.log());
        }
        eprintln!("  {what}: admitted");
    }

    /// `Ok` once `object` is denied by the webhook (not by anything else).
    fn denied(&self, object: &Value) -> Result<String, String> {
        match self.admitted(object) {
            Ok(()) => Err("admitted".into()),
            Err(e) if e.contains("denied the request") => Ok(e),
            Err(e) => Err(e),
        }
    }

    /// Repeats `check` until it holds, at most `limit`, naming the case's webhook log.
    fn within(
        &self,
        what: &str,
        limit: Duration,
        mut check: impl FnMut() -> Result<(), String>,
    ) -> Duration {
        let start = Instant::now();
        loop {
            match check() {
                Ok(()) => {
                    let took = start.elapsed();
                    eprintln!(
                        "  {what}: after {:.1} s (bound {:?})",
                        took.as_secs_f64(),
                        limit
                    );
                    return took;
                }
                Err(e) if start.elapsed() > limit => panic!(
                    "{what}: not within {limit:?}: {e}\nwebhook log:\n{}",
                    self.webhook.log()
                ),
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    fn get(&self, path: &str) -> String {
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
                .get(format!("https://127.0.0.1:{}{path}", self.webhook.port))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    }

    /// The state `/readyz` gives the watch of the Secret.
    fn watch_state(&self) -> String {
        let ready: Value = serde_json::from_str(&self.get("/readyz")).unwrap();
        let watches = &ready["policies"]["key_watches"];
        assert_eq!(watches.as_array().map(Vec::len), Some(1), "{ready}");
        assert_eq!(
            watches[0]["object"],
            format!("Secret {}/release", self.keys_ns),
            "{ready}"
        );
        watches[0]["state"].as_str().unwrap_or_default().to_string()
    }

    /// `mansign_key_watches{state="STATE"}` of `/metrics`.
    fn watches_in_state(&self, state: &str) -> u64 {
        let metrics = self.get("/metrics");
        let line = format!("mansign_key_watches{{state=\"{state}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&line))
            .unwrap_or_else(|| panic!("no {line} in /metrics:\n{metrics}"))
            .parse()
            .unwrap()
    }
}

#[test]
fn a_dropped_watch_recovers_within_the_backoff_and_a_later_drop_does_not_keep_a_deleted_key() {
    let release = &env().release;
    let case = KeyCase::start("dropped");
    case.secret(&release.public_key_pem);
    let by_release = case.signed(release);
    case.within("the Secret's key verifies", EVENTUALLY, || {
        case.admitted(&by_release)
    });
    assert_eq!(case.watch_state(), "current");
    assert_eq!(case.watches_in_state("current"), 1);

    // An outage long enough for any backoff to reach its longest wait (30 s before).
    case.proxy.set(Fault::Drop);
    case.within(
        "denied while the API server is unreachable",
        BACKOFF_MAX + MARGIN,
        || case.denied(&by_release).map(drop),
    );
    case.within(
        "/readyz says the watch is unreadable",
        BACKOFF_MAX + MARGIN,
        || match case.watch_state().as_str() {
            "unreadable" => Ok(()),
            other => Err(other.to_string()),
        },
    );
    assert_eq!(case.watches_in_state("unreadable"), 1);
    std::thread::sleep(Duration::from_secs(40));
    case.proxy.recover();
    // The next list comes at most BACKOFF_MAX later (before: up to 30 s).
    case.within(
        "admitted again after the API server is back",
        BACKOFF_MAX + MARGIN,
        || case.admitted(&by_release),
    );
    assert_eq!(case.watch_state(), "current");

    // A brief drop, during which the Secret is deleted: the watch's backoff started over
    // with the good list, so the deletion is seen as soon as the API server is reachable
    // (before: the old value was kept through a 30 s backoff).
    std::thread::sleep(Duration::from_secs(2));
    case.proxy.set(Fault::Drop);
    let deleted = Instant::now();
    case.delete_secret();
    std::thread::sleep(Duration::from_secs(1));
    case.proxy.recover();
    let limit = (BACKOFF_MAX + MARGIN).saturating_sub(deleted.elapsed());
    case.within("the deleted key stops verifying", limit, || {
        match case.denied(&by_release) {
            Ok(e) if e.contains("does not exist") => Ok(()),
            Ok(e) => Err(e),
            Err(e) => Err(e),
        }
    });
}

#[test]
fn a_silently_dead_watch_drops_the_key_within_the_silence_limit_and_recovers() {
    let (release, rotated) = (&env().release, key());
    let case = KeyCase::start("blackholed");
    case.secret(&release.public_key_pem);
    let (by_release, by_rotated) = (case.signed(release), case.signed(&rotated));
    case.within("the Secret's key verifies", EVENTUALLY, || {
        case.admitted(&by_release)
    });

    // The connection stops forwarding without closing (no FIN, no data); the Secret is
    // rotated meanwhile, which the webhook cannot hear.
    case.proxy.set(Fault::Blackhole);
    let silent = Instant::now();
    case.secret(&rotated.public_key_pem);
    case.within(
        "the old key stops verifying",
        SILENCE_LIMIT + MARGIN,
        || case.denied(&by_release).map(drop),
    );
    eprintln!(
        "  the old key verified for {:.1} s after the watch went silent (bound {SILENCE_LIMIT:?})",
        silent.elapsed().as_secs_f64()
    );
    let denied = case.denied(&by_release).unwrap();
    assert!(
        denied.contains("stale") || denied.contains("cannot read the Secret"),
        "{denied}"
    );
    assert_eq!(case.watch_state(), "stale");
    assert_eq!(case.watches_in_state("stale"), 1);
    assert!(
        case.denied(&by_rotated).is_ok(),
        "the rotated key verifies before the webhook could read it"
    );

    case.proxy.recover();
    // A connection attempt in flight fails at its connect timeout, the next list follows
    // within BACKOFF_MAX.
    case.within(
        "the rotated key verifies after the API server is reachable again",
        CONNECT_TIMEOUT + BACKOFF_MAX + MARGIN,
        || case.admitted(&by_rotated),
    );
    assert!(
        case.denied(&by_release).is_ok(),
        "the old key verifies again"
    );
    assert_eq!(case.watch_state(), "current");
    assert_eq!(case.watches_in_state("stale"), 0);
}

#[test]
fn a_healthy_watch_stops_a_deleted_key_within_seconds() {
    let release = &env().release;
    let case = KeyCase::start("healthy");
    case.secret(&release.public_key_pem);
    let by_release = case.signed(release);
    case.within("the Secret's key verifies", EVENTUALLY, || {
        case.admitted(&by_release)
    });
    // Longer than one watch (the server ends each after 30 s): the resumed watch still
    // delivers the deletion at once.
    std::thread::sleep(Duration::from_secs(35));
    case.assert_admitted(&by_release, "still verified after a watch was resumed");
    assert_eq!(case.watch_state(), "current");
    case.delete_secret();
    case.within("the deleted key stops verifying", MARGIN, || {
        match case.denied(&by_release) {
            Ok(e) if e.contains("does not exist") => Ok(()),
            Ok(e) => Err(e),
            Err(e) => Err(e),
        }
    });
    assert_eq!(case.watch_state(), "absent");
}
