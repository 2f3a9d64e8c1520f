//! The cluster the way kubectl reaches it (issue 39 item 1), against a real API server
//! (`scripts/cluster.sh`: etcd and kube-apiserver with RBAC): `verify-resource` and
//! `verify --policy` with a `k8s://` key reference read the cluster through the same
//! client, so every kubeconfig that works for one works for the other: an `exec`
//! credential plugin (a shell script printing an ExecCredential, its runs counted), a
//! client certificate, a token and a token file, impersonation, a proxy by `proxy-url` and
//! by `HTTPS_PROXY` (a CONNECT proxy counting its tunnels, `common::connect_proxy`),
//! `tls-server-name`; and every refusal of a kubeconfig it cannot use.
//!
//! One API server per test process, shared by the tests (each writes its own kubeconfig
//! and plugin under its own name): the namespace `access-a` holds a signed ConfigMap
//! `app` and the Secret `release` with its public key, `access-b` the same; the service
//! account `access-a/reader` may read ConfigMaps and Secrets everywhere, the user `jane`
//! (impersonated) only in `access-a`.

use crate::common;
use crate::common::admission_fixture::{Key, key, sign};

use common::cluster::Cluster;
use common::connect_proxy::ConnectProxy;
use common::mansign;
use mansign::kube::{ClusterConfig, Credentials, KubeClient, KubeError};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Env {
    cluster: Cluster,
    dir: tempfile::TempDir,
    /// The public key file the ConfigMaps are signed for.
    pubkey: PathBuf,
    /// A Kyverno policy reading its key from `k8s://access-a/release`, and one from
    /// `access-b`.
    policy_a: PathBuf,
    policy_b: PathBuf,
    /// `access-a/app` as signed, for `verify --policy`.
    signed_a: PathBuf,
    signed_b: PathBuf,
    /// A token of the service account `access-a/reader` (1 h).
    token: String,
    ca_b64: String,
    admin_cert_b64: String,
    admin_key_b64: String,
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let cluster = Cluster::start();
        let dir = tempfile::Builder::new()
            .prefix("mansign-cluster-access-")
            .tempdir()
            .unwrap();
        let release: Key = key();
        let pubkey = dir.path().join("release.pub");
        std::fs::write(&pubkey, &release.public_key_pem).unwrap();
        let mut signed = Vec::new();
        for ns in ["access-a", "access-b"] {
            cluster.kubectl_ok(&["create", "namespace", ns]);
            let doc = sign(
                &release,
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: {ns}}}\n\
                     data: {{mode: strict}}\n"
                ),
            )
            .remove(0);
            let path = dir.path().join(format!("{ns}-app.json"));
            std::fs::write(&path, doc.to_string()).unwrap();
            cluster.kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
            let secret = json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "release", "namespace": ns},
                "stringData": {"cosign.pub": release.public_key_pem}});
            let out = cluster.kubectl_stdin(&["create", "-f", "-"], &secret.to_string());
            assert!(out.status.success(), "{}", common::all_output(&out));
            signed.push(path);
        }
        for doc in [
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "reader", "namespace": "access-a"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "access-reader"},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"],
                              "verbs": ["get", "list"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "access-reader"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "access-reader"},
                   "subjects": [{"kind": "ServiceAccount", "name": "reader",
                                 "namespace": "access-a"}]}),
            // jane may read in access-a only.
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "jane-reads", "namespace": "access-a"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "access-reader"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                 "name": "jane"}]}),
        ] {
            let out = cluster.kubectl_stdin(&["create", "-f", "-"], &doc.to_string());
            assert!(out.status.success(), "{}", common::all_output(&out));
        }
        let token = cluster
            .kubectl_ok(&[
                "create",
                "token",
                "reader",
                "-n",
                "access-a",
                "--duration=1h",
            ])
            .trim()
            .to_string();
        let policy = |ns: &str| {
            let text = common::dup_tests_a::template(
                "kyverno-configmap-key-policy.yaml",
                &[
                    ("NAME", ns),
                    ("    # CONTEXT\n", ""),
                    ("PUBLIC_KEYS", &format!("k8s://{ns}/release")),
                ],
            );
            let path = dir.path().join(format!("{ns}-policy.yaml"));
            std::fs::write(&path, text).unwrap();
            path
        };
        let pki = cluster.dir().join("pki");
        let read = |name: &str| b64(&std::fs::read(pki.join(name)).unwrap());
        Env {
            policy_a: policy("access-a"),
            policy_b: policy("access-b"),
            signed_a: signed[0].clone(),
            signed_b: signed[1].clone(),
            pubkey,
            token,
            ca_b64: read("ca.crt"),
            admin_cert_b64: read("admin.crt"),
            admin_key_b64: read("admin.key"),
            dir,
            cluster,
        }
    })
}

/// The API server's port.
fn port() -> u16 {
    env()
        .cluster
        .server()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Indents every line of `text` by `n` spaces.
fn indent(text: &str, n: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(n)))
        .collect()
}

/// A kubeconfig `name.kubeconfig` with one context: the cluster at `server` (default: the
/// API server's own URL) trusting the cluster CA plus `cluster_extra` fields, and the user
/// `user` (YAML fields of `users[].user`).
fn kubeconfig_at(name: &str, server: Option<&str>, cluster_extra: &str, user: &str) -> PathBuf {
    let server = server.map_or_else(|| env().cluster.server().to_string(), str::to_string);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    \
         certificate-authority-data: {ca}\n{extra}users:\n- name: {name}\n  user:\n{user}\
         contexts:\n- name: c\n  context: {{cluster: c, user: {name}}}\ncurrent-context: c\n",
        ca = env().ca_b64,
        extra = indent(cluster_extra, 4),
        user = indent(user, 4),
    );
    let path = env().dir.path().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

fn kubeconfig(name: &str, user: &str) -> PathBuf {
    kubeconfig_at(name, None, "", user)
}

fn admin_user() -> String {
    format!(
        "client-certificate-data: {}\nclient-key-data: {}\n",
        env().admin_cert_b64,
        env().admin_key_b64
    )
}

/// `mansign ARGS --kubeconfig KUBECONFIG`, with no proxy, kubectl or kubeconfig from the
/// test's own environment, and `envs` set.
fn run(args: &[&str], kubeconfig: &Path, envs: &[(&str, &str)]) -> Output {
    let mut cmd = mansign();
    cmd.args(args).arg("--kubeconfig").arg(kubeconfig);
    for name in [
        "KUBECONFIG",
        "MANSIGN_KUBECTL",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(name);
    }
    for (name, value) in envs {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    eprintln!(
        "  mansign {} ({}): {:?} {}",
        args.join(" "),
        kubeconfig.display(),
        out.status.code(),
        common::all_output(&out).trim()
    );
    out
}

/// `verify-resource configmap/app -n NS --key release.pub`.
fn verify_resource(ns: &str, kubeconfig: &Path, envs: &[(&str, &str)]) -> Output {
    let key = env().pubkey.to_str().unwrap();
    run(
        &["verify-resource", "configmap/app", "-n", ns, "--key", key],
        kubeconfig,
        envs,
    )
}

/// `verify --policy` (key from `k8s://NS/release`) of NS's signed ConfigMap.
fn verify_policy(ns: &str, kubeconfig: &Path, envs: &[(&str, &str)]) -> Output {
    let (policy, signed) = match ns {
        "access-a" => (&env().policy_a, &env().signed_a),
        _ => (&env().policy_b, &env().signed_b),
    };
    run(
        &[
            "verify",
            "--policy",
            policy.to_str().unwrap(),
            signed.to_str().unwrap(),
        ],
        kubeconfig,
        envs,
    )
}

fn assert_verified(out: &Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {}",
        common::all_output(out)
    );
}

/// Both commands verify in `access-a` with `kubeconfig` and `envs`.
fn both_verify(kubeconfig: &Path, envs: &[(&str, &str)]) {
    let out = verify_resource("access-a", kubeconfig, envs);
    assert_verified(&out, "verify-resource");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("/api/v1/namespaces/access-a/configmaps/app: document 1")
            && stdout.contains("1 of 1 document(s) verified"),
        "{stdout}"
    );
    assert_verified(
        &verify_policy("access-a", kubeconfig, envs),
        "verify --policy",
    );
}

/// Both commands fail as input errors (exit 2) naming every one of `words`.
fn both_refuse(kubeconfig: &Path, ns: &str, envs: &[(&str, &str)], words: &[&str]) {
    for (what, out) in [
        ("verify-resource", verify_resource(ns, kubeconfig, envs)),
        ("verify --policy", verify_policy(ns, kubeconfig, envs)),
    ] {
        let text = common::all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {text}");
        for w in words {
            assert!(text.contains(w), "{what}: no {w:?} in {text}");
        }
    }
}

// ---- users ----

#[test]
fn a_token_user_reads_for_both_commands() {
    both_verify(
        &kubeconfig("token", &format!("token: {}\n", env().token)),
        &[],
    );
}

#[test]
fn a_token_file_user_reads_for_both_commands() {
    let file = env().dir.path().join("reader.token");
    std::fs::write(&file, format!("{}\n", env().token)).unwrap();
    both_verify(
        &kubeconfig("token-file", &format!("tokenFile: {}\n", file.display())),
        &[],
    );
}

#[test]
fn a_client_certificate_user_reads_for_both_commands() {
    both_verify(&kubeconfig("client-cert", &admin_user()), &[]);
    // The cluster's own kubeconfig: the certificate and key as files.
    both_verify(env().cluster.kubeconfig(), &[]);
}

#[test]
fn a_wrong_token_is_refused_as_401() {
    both_refuse(
        &kubeconfig("bad-token", "token: not-a-token\n"),
        "access-a",
        &[],
        &["401"],
    );
}

// ---- exec credential plugins ----

/// An exec plugin `NAME.sh` beside the kubeconfigs: it appends a line to `NAME.runs`,
/// writes `KUBERNETES_EXEC_INFO` to `NAME.info` and then runs `body` (sh).
fn plugin(name: &str, body: &str) -> PathBuf {
    let dir = env().dir.path();
    let script = dir.join(format!("{name}.sh"));
    let text = format!(
        "#!/bin/sh\necho run >> '{runs}'\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" > '{info}'\n{body}",
        runs = dir.join(format!("{name}.runs")).display(),
        info = dir.join(format!("{name}.info")).display(),
    );
    std::fs::write(&script, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// How often plugin `name` ran since the last call (the counter is reset).
fn runs(name: &str) -> usize {
    let path = env().dir.path().join(format!("{name}.runs"));
    let n = std::fs::read_to_string(&path)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let _ = std::fs::remove_file(&path);
    n
}

/// A plugin printing `status` (JSON) as a v1 ExecCredential, and its kubeconfig.
fn exec_user(name: &str, status: &serde_json::Value, exec_extra: &str) -> PathBuf {
    let credential = json!({"apiVersion": "client.authentication.k8s.io/v1",
                            "kind": "ExecCredential", "status": status});
    let script = plugin(name, &format!("cat <<'EOF'\n{credential}\nEOF\n"));
    kubeconfig(
        name,
        &format!(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: {}\n  \
             interactiveMode: Never\n{}",
            script.display(),
            indent(exec_extra, 2)
        ),
    )
}

fn timestamp(from_now: i64) -> String {
    jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(from_now))
        .unwrap()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[test]
fn an_exec_plugin_token_is_fetched_once_per_process_while_valid() {
    let name = "exec-token";
    let config = exec_user(
        name,
        &json!({"token": env().token, "expirationTimestamp": timestamp(3600)}),
        "provideClusterInfo: true\n",
    );
    runs(name);
    // verify-resource makes a dozen requests (discovery, then the object): one run.
    let out = verify_resource("access-a", &config, &[]);
    assert_verified(&out, "verify-resource");
    assert_eq!(runs(name), 1, "one plugin run for the whole process");
    assert_verified(&verify_policy("access-a", &config, &[]), "verify --policy");
    assert_eq!(runs(name), 1);
    // The plugin was told it is not interactive, and (provideClusterInfo) the cluster.
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env().dir.path().join(format!("{name}.info"))).unwrap(),
    )
    .unwrap();
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["apiVersion"], "client.authentication.k8s.io/v1");
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], env().cluster.server());
    assert_eq!(
        info["spec"]["cluster"]["certificate-authority-data"],
        env().ca_b64
    );
}

#[test]
fn an_expired_exec_credential_is_fetched_again() {
    let name = "exec-expired";
    let config = exec_user(
        name,
        &json!({"token": env().token, "expirationTimestamp": timestamp(-60)}),
        "",
    );
    runs(name);
    assert_verified(
        &verify_resource("access-a", &config, &[]),
        "verify-resource",
    );
    let n = runs(name);
    assert!(
        n >= 3,
        "an expired credential is fetched for each request: {n} runs"
    );
    assert_verified(&verify_policy("access-a", &config, &[]), "verify --policy");
    assert!(runs(name) >= 1);
}

#[test]
fn an_exec_plugin_client_certificate_authenticates() {
    use base64::Engine as _;
    let decode = |s: &str| {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(s).unwrap()).unwrap()
    };
    let name = "exec-cert";
    let config = exec_user(
        name,
        &json!({"clientCertificateData": decode(&env().admin_cert_b64),
                "clientKeyData": decode(&env().admin_key_b64)}),
        "",
    );
    runs(name);
    both_verify(&config, &[]);
    // No expiry: one run per process.
    assert_eq!(runs(name), 2, "one run for each of the two processes");
}

#[test]
fn a_401_drops_the_exec_credential_and_fetches_a_new_one() {
    // The first run gives a token the server refuses, every later run a good one.
    let name = "exec-401";
    let dir = env().dir.path();
    let credential = |token: &str| {
        json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
               "status": {"token": token, "expirationTimestamp": timestamp(3600)}})
    };
    let script = plugin(
        name,
        &format!(
            "if [ \"$(wc -l < '{runs}')\" -le 1 ]; then\ncat <<'EOF'\n{bad}\nEOF\nelse\ncat <<'EOF'\n{good}\nEOF\nfi\n",
            runs = dir.join(format!("{name}.runs")).display(),
            bad = credential("revoked"),
            good = credential(&env().token),
        ),
    );
    let config = kubeconfig(
        name,
        &format!(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: {}\n  interactiveMode: IfAvailable\n",
            script.display()
        ),
    );
    runs(name);
    assert_verified(
        &verify_resource("access-a", &config, &[]),
        "verify-resource",
    );
    assert_eq!(runs(name), 2, "the refused credential, then a new one");
    assert_verified(&verify_policy("access-a", &config, &[]), "verify --policy");
    assert_eq!(runs(name), 2);
}

#[test]
fn an_exec_plugin_that_fails_is_an_error_with_its_stderr() {
    let name = "exec-fails";
    let script = plugin(
        name,
        "echo 'error: the SSO session has expired; run aws sso login' >&2\nexit 3\n",
    );
    let config = kubeconfig(
        name,
        &format!(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: {}\n  interactiveMode: Never\n",
            script.display()
        ),
    );
    both_refuse(
        &config,
        "access-a",
        &[],
        &[
            "exec credential plugin",
            "user \"exec-fails\"",
            "exit status: 3",
            "the SSO session has expired",
        ],
    );
}

#[test]
fn an_exec_plugin_that_prints_garbage_is_refused() {
    let name = "exec-garbage";
    let script = plugin(name, "echo 'Enter MFA code:'\n");
    let config = kubeconfig(
        name,
        &format!(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: {}\n  interactiveMode: Never\n",
            script.display()
        ),
    );
    both_refuse(
        &config,
        "access-a",
        &[],
        &["user \"exec-garbage\"", "not an ExecCredential"],
    );
    // A credential in another version than the kubeconfig asks for.
    let config = exec_user("exec-garbage-version", &json!({"token": "x"}), "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "client.authentication.k8s.io/v1\n",
        "client.authentication.k8s.io/v1beta1\n",
    );
    std::fs::write(&config, text).unwrap();
    both_refuse(&config, "access-a", &[], &["but the kubeconfig asks for"]);
}

#[test]
fn an_exec_plugin_that_hangs_is_killed_at_its_timeout() {
    let name = "exec-hangs";
    let script = plugin(name, "exec sleep 60\n");
    let path = kubeconfig(
        name,
        &format!(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: {}\n  interactiveMode: Never\n",
            script.display()
        ),
    );
    // Through the library, with a short timeout (the default is a minute).
    let mut config =
        ClusterConfig::from_kubeconfig(Some(&path), None, &mansign::Limits::default()).unwrap();
    if let Credentials::Exec(exec) = &mut config.credentials {
        exec.timeout = Duration::from_secs(1);
    } else {
        panic!("not an exec user: {:?}", config.credentials);
    }
    let client = KubeClient::new(&config, &mansign::Limits::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    let e = runtime
        .block_on(client.get("access-a", "secrets", "release"))
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(20), "{e}");
    assert!(
        matches!(&e, KubeError::ExecPlugin { reason, origin, .. }
            if reason.contains("did not finish within 1 s (killed)")
                && origin.contains("user \"exec-hangs\"")),
        "{e:?}"
    );
}

#[test]
fn kubeconfig_users_mansign_cannot_use_are_refused_with_the_field_named() {
    for (name, user, words) in [
        (
            "interactive",
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: aws\n  interactiveMode: Always\n",
            &[
                "user \"interactive\"",
                "interactiveMode Always is not supported",
            ][..],
        ),
        (
            "provider",
            "auth-provider:\n  name: gcp\n",
            &[
                "user \"provider\"",
                "auth-provider is not supported",
                "gke-gcloud-auth-plugin",
            ][..],
        ),
        (
            "basic",
            "username: admin\npassword: secret\n",
            &["username/password (basic auth) is not supported"][..],
        ),
        (
            "no-plugin",
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: mansign-no-such-plugin\n  interactiveMode: Never\n  installHint: install it from example.com\n",
            &["cannot start", "install it from example.com"][..],
        ),
    ] {
        both_refuse(&kubeconfig(name, user), "access-a", &[], words);
    }
    let socks = kubeconfig_at(
        "socks",
        None,
        "proxy-url: socks5://127.0.0.1:1080\n",
        &admin_user(),
    );
    both_refuse(
        &socks,
        "access-a",
        &[],
        &["a socks5 proxy is not supported"],
    );
    let insecure = kubeconfig_at(
        "insecure",
        None,
        "insecure-skip-tls-verify: true\n",
        &admin_user(),
    );
    both_refuse(
        &insecure,
        "access-a",
        &[],
        &["insecure-skip-tls-verify is not supported"],
    );
}

// ---- impersonation ----

#[test]
fn impersonation_is_sent_and_a_read_elsewhere_is_refused_with_403() {
    let config = kubeconfig("as-jane", &format!("{}as: jane\n", admin_user()));
    both_verify(&config, &[]);
    both_refuse(&config, "access-b", &[], &["403", "\"jane\""]);
    // --as on the command line does the same with the admin's own kubeconfig.
    let admin = env().cluster.kubeconfig();
    let key = env().pubkey.to_str().unwrap();
    let out = run(
        &[
            "verify-resource",
            "configmap/app",
            "-n",
            "access-b",
            "--key",
            key,
            "--as",
            "jane",
        ],
        admin,
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", common::all_output(&out));
    assert!(common::all_output(&out).contains("403"));
    let out = run(
        &[
            "verify",
            "--policy",
            env().policy_b.to_str().unwrap(),
            env().signed_b.to_str().unwrap(),
            "--as",
            "jane",
        ],
        admin,
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", common::all_output(&out));
    assert!(common::all_output(&out).contains("403"));
    // Without --as the admin reads access-b.
    assert_verified(&verify_policy("access-b", admin, &[]), "admin");
}

// ---- proxies ----

#[test]
fn proxy_url_sends_every_request_through_the_proxy() {
    let proxy = ConnectProxy::start();
    let config = kubeconfig_at(
        "proxy-url",
        None,
        &format!("proxy-url: {}\n", proxy.url()),
        &admin_user(),
    );
    let out = verify_resource("access-a", &config, &[]);
    assert_verified(&out, "verify-resource");
    let after_resource = proxy.tunnels();
    assert!(after_resource > 0, "no tunnel");
    assert_verified(&verify_policy("access-a", &config, &[]), "verify --policy");
    assert!(
        proxy.tunnels() > after_resource,
        "verify --policy: no tunnel"
    );
    assert!(
        proxy
            .targets()
            .iter()
            .all(|t| *t == format!("127.0.0.1:{}", port())),
        "{:?}",
        proxy.targets()
    );
}

#[test]
fn https_proxy_is_used_unless_no_proxy_names_the_server() {
    let proxy = ConnectProxy::start();
    // A name the server's certificate carries and nothing resolves but the proxy.
    let server = format!("https://kubernetes.default.svc:{}", port());
    let config = kubeconfig_at("https-proxy", Some(&server), "", &admin_user());
    let url = proxy.url();
    both_verify(&config, &[("HTTPS_PROXY", &url)]);
    let tunnels = proxy.tunnels();
    assert!(tunnels > 0, "no tunnel");
    assert!(
        proxy
            .targets()
            .iter()
            .all(|t| *t == format!("kubernetes.default.svc:{}", port())),
        "{:?}",
        proxy.targets()
    );
    // The lower-case name too.
    assert_verified(
        &verify_policy("access-a", &config, &[("https_proxy", &url)]),
        "https_proxy",
    );
    assert!(proxy.tunnels() > tunnels);
    let tunnels = proxy.tunnels();
    // NO_PROXY: the server is reached directly (and, with no DNS for the name, not at all).
    for (what, out) in [
        (
            "verify-resource",
            verify_resource(
                "access-a",
                &config,
                &[("HTTPS_PROXY", &url), ("NO_PROXY", ".svc")],
            ),
        ),
        (
            "verify --policy",
            verify_policy(
                "access-a",
                &config,
                &[
                    ("HTTPS_PROXY", &url),
                    ("NO_PROXY", "kubernetes.default.svc"),
                ],
            ),
        ),
    ] {
        let text = common::all_output(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {text}");
        assert!(
            text.contains("cannot reach the API server"),
            "{what}: {text}"
        );
    }
    assert_eq!(proxy.tunnels(), tunnels, "NO_PROXY went through the proxy");
    // A loopback server is never proxied from the environment (as kubectl).
    both_verify(
        &kubeconfig("https-proxy-loopback", &admin_user()),
        &[("HTTPS_PROXY", &url)],
    );
    assert_eq!(proxy.tunnels(), tunnels, "loopback went through the proxy");
}

// ---- tls-server-name ----

#[test]
fn tls_server_name_is_the_name_the_certificate_is_checked_against() {
    // Reached by a name the certificate does not carry (the proxy takes it to loopback):
    // refused, unless tls-server-name names one it does.
    let proxy = ConnectProxy::start();
    let server = format!("https://apiserver.example:{}", port());
    let through = format!("proxy-url: {}\n", proxy.url());
    let right = kubeconfig_at(
        "tls-name-right",
        Some(&server),
        &format!("{through}tls-server-name: kubernetes\n"),
        &admin_user(),
    );
    both_verify(&right, &[]);
    let none = kubeconfig_at("tls-name-none", Some(&server), &through, &admin_user());
    both_refuse(
        &none,
        "access-a",
        &[],
        &["cannot reach the API server", "certificate"],
    );
    let wrong = kubeconfig_at(
        "tls-name-wrong",
        Some(&server),
        &format!("{through}tls-server-name: wrong.example\n"),
        &admin_user(),
    );
    both_refuse(
        &wrong,
        "access-a",
        &[],
        &["cannot reach the API server", "certificate"],
    );
    // And on the server's own URL, a wrong name is refused too.
    let wrong_local = kubeconfig_at(
        "tls-name-wrong-local",
        None,
        "tls-server-name: wrong.example\n",
        &admin_user(),
    );
    both_refuse(&wrong_local, "access-a", &[], &["certificate"]);
}

// ---- verify-resource through discovery ----

#[test]
fn verify_resource_resolves_kinds_by_discovery_and_fills_list_items() {
    let admin = env().cluster.kubeconfig();
    let key = env().pubkey.to_str().unwrap();
    for kind in ["configmaps", "cm", "ConfigMap", "configmaps.v1."] {
        let out = run(
            &["verify-resource", kind, "-n", "access-a", "--key", key],
            admin,
            &[],
        );
        // A list: its items carry no apiVersion and kind; filled in, they verify.
        assert_verified(&out, kind);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("/api/v1/namespaces/access-a/configmaps: document 1, List item 1")
                && stdout.contains("1 of 1 document(s) verified"),
            "{kind}: {stdout}"
        );
    }
    let out = run(&["verify-resource", "widgets", "--key", key], admin, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::all_output(&out).contains("doesn't have a resource type \"widgets\""),
        "{}",
        common::all_output(&out)
    );
    let out = run(
        &[
            "verify-resource",
            "configmap/nope",
            "-n",
            "access-a",
            "--key",
            key,
        ],
        admin,
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::all_output(&out).contains("configmaps \"nope\" not found"),
        "{}",
        common::all_output(&out)
    );
}

#[test]
fn verify_resource_reads_every_namespace_and_cluster_scoped_kinds() {
    let admin = env().cluster.kubeconfig();
    let key = env().pubkey.to_str().unwrap();
    // -A: both signed ConfigMaps verify; the API server's own ConfigMaps in kube-system
    // are not signed, so the run as a whole fails.
    let out = run(
        &["verify-resource", "configmaps", "-A", "--key", key],
        admin,
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("/api/v1/configmaps: document 1, List item 1"),
        "{stdout}"
    );
    assert_eq!(stdout.matches(": verified (").count(), 2, "{stdout}");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // A cluster-scoped kind ignores -n; an unsigned Namespace fails verification (exit 1).
    let out = run(
        &[
            "verify-resource",
            "ns/access-a",
            "-n",
            "access-b",
            "--key",
            key,
        ],
        admin,
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("/api/v1/namespaces/access-a: document 1:"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
}

#[test]
fn as_group_without_as_is_refused() {
    let key = env().pubkey.to_str().unwrap();
    let out = run(
        &[
            "verify-resource",
            "configmaps",
            "--key",
            key,
            "--as-group",
            "dev",
        ],
        env().cluster.kubeconfig(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::all_output(&out).contains("--as-group without --as"),
        "{}",
        common::all_output(&out)
    );
}

#[test]
fn a_kind_two_groups_serve_is_refused_as_ambiguous_and_resolved_with_its_group() {
    // Kyverno's two PolicyException CRDs (kyverno.io and policies.kyverno.io): kubectl
    // would take the first by discovery order; mansign asks which.
    let cluster = &env().cluster;
    static CRDS: OnceLock<()> = OnceLock::new();
    CRDS.get_or_init(|| cluster.create_kyverno_crds());
    let key = env().pubkey.to_str().unwrap();
    let start = Instant::now();
    loop {
        let out = run(
            &[
                "verify-resource",
                "policyexceptions",
                "-n",
                "access-a",
                "--key",
                key,
            ],
            cluster.kubeconfig(),
            &[],
        );
        let text = common::all_output(&out);
        if text.contains("\"policyexceptions\" is ambiguous") {
            assert_eq!(out.status.code(), Some(2), "{text}");
            assert!(
                text.contains("policyexceptions.kyverno.io, policyexceptions.policies.kyverno.io"),
                "{text}"
            );
            break;
        }
        // Until both CRDs are in discovery.
        assert!(start.elapsed() < Duration::from_secs(60), "{text}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = run(
        &[
            "verify-resource",
            "policyexceptions.kyverno.io",
            "-n",
            "access-a",
            "--key",
            key,
        ],
        cluster.kubeconfig(),
        &[],
    );
    let text = common::all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("/apis/kyverno.io/")
            && text.contains("/namespaces/access-a/policyexceptions: no objects found"),
        "{text}"
    );
}

/// Without `--kubeconfig`, a kubeconfig that is there wins over the pod's service account,
/// as in kubectl: in a pod (`KUBERNETES_SERVICE_HOST` set, no service account mounted here)
/// with `KUBECONFIG` naming the test cluster, `verify --policy` reads its `k8s://` key from
/// that cluster. With no kubeconfig there, the service account is what it tries (and says so).
#[test]
fn a_kubeconfig_that_is_there_wins_over_the_pods_service_account_as_in_kubectl() {
    let home = tempfile::tempdir().unwrap();
    let in_pod = |kubeconfig: Option<&Path>| {
        let mut cmd = mansign();
        cmd.args([
            "verify",
            "--policy",
            env().policy_a.to_str().unwrap(),
            env().signed_a.to_str().unwrap(),
        ]);
        for name in [
            "KUBECONFIG",
            "MANSIGN_KUBECTL",
            "HTTPS_PROXY",
            "https_proxy",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd.env_remove(name);
        }
        cmd.env("HOME", home.path())
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", "9");
        if let Some(k) = kubeconfig {
            cmd.env("KUBECONFIG", k);
        }
        let out = cmd.output().unwrap();
        eprintln!(
            "  in a pod, KUBECONFIG={kubeconfig:?}: {:?} {}",
            out.status.code(),
            common::all_output(&out).trim()
        );
        out
    };
    assert_verified(
        &in_pod(Some(env().cluster.kubeconfig())),
        "KUBECONFIG set in a pod: the kubeconfig's cluster",
    );
    let out = in_pod(None);
    let text = common::all_output(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("service account token"),
        "no kubeconfig: the service account is tried: {text}"
    );
}
