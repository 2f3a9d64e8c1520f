//! `mansign admission serve`, the real binary over real HTTPS: a CA and server certificates
//! made with rcgen, reqwest clients (HTTP/2 and HTTP/1.1) and raw TLS sockets that trust
//! that CA, manifests signed in the test with a fresh key.
//!
//! Each test starts its own server on a free loopback port and reads the bound address
//! from the server's `listening` log line.

use crate::common;

use common::pki::Pki;
use common::{key_pair, write};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

// ---------------------------------------------------------------------------------------
// Certificates
// ---------------------------------------------------------------------------------------

/// A test CA that issues server certificates for 127.0.0.1.
impl Pki {
    fn reqwest_ca(&self) -> reqwest::Certificate {
        reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).unwrap()
    }

    fn rustls_client(&self, alpn: &[&[u8]]) -> tokio_rustls::TlsConnector {
        use rustls_pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls_pki_types::CertificateDer::from_pem_slice(self.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

fn pem_der(pem: &str) -> Vec<u8> {
    use rustls_pki_types::pem::PemObject as _;
    rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

// ---------------------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------------------

struct Webhook {
    child: Child,
    address: SocketAddr,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Webhook {
    /// Starts `mansign admission serve` with `dir/tls.crt`, `dir/tls.key` and the given
    /// policies; waits for its `listening` line.
    fn start(dir: &Path, policies: &[&Path], extra: &[&str]) -> Webhook {
        let stdout = dir.join(format!("stdout-{}.log", unique()));
        let stderr = dir.join(format!("stderr-{}.log", unique()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mansign"));
        cmd.args(["admission", "serve", "--listen", "127.0.0.1:0"])
            .arg("--tls-cert")
            .arg(dir.join("tls.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls.key"));
        for p in policies {
            cmd.arg("--policy").arg(p);
        }
        cmd.args(extra)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        let child = cmd.spawn().unwrap();
        let mut webhook = Webhook {
            child,
            address: "127.0.0.1:0".parse().unwrap(),
            stdout,
            stderr,
        };
        let start = Instant::now();
        loop {
            if let Some(line) = webhook
                .events()
                .into_iter()
                .find(|e| e["event"] == "listening")
            {
                webhook.address = line["address"].as_str().unwrap().parse().unwrap();
                return webhook;
            }
            if let Some(status) = webhook.child.try_wait().unwrap() {
                panic!(
                    "the server exited with {status} before listening: {}",
                    std::fs::read_to_string(&webhook.stderr).unwrap()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the server did not start listening within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.address.port())
    }

    /// Server events (stderr JSON lines).
    fn events(&self) -> Vec<Value> {
        json_lines(&self.stderr)
    }

    /// Decision lines (stdout JSON lines).
    fn decisions(&self) -> Vec<Value> {
        json_lines(&self.stdout)
    }

    fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit (at most `limit`).
    fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < limit,
                "the server did not exit in {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn json_lines(path: &Path) -> Vec<Value> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect()
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// An HTTP/2 client (ALPN) trusting the test CA.
fn client(pki: &Pki) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_certs_only([pki.reqwest_ca()])
        .tls_info(true)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// An HTTP/1.1 client; `fresh`: a new connection (and TLS handshake) for every request.
fn http1_client(pki: &Pki, fresh: bool) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .tls_certs_only([pki.reqwest_ca()])
        .tls_info(true)
        .http1_only()
        .timeout(Duration::from_secs(60));
    if fresh {
        builder = builder.pool_max_idle_per_host(0);
    }
    builder.build().unwrap()
}

// ---------------------------------------------------------------------------------------
// Policies, signed objects and reviews
// ---------------------------------------------------------------------------------------

/// A directory with TLS files, a key pair, and an Enforce policy for ConfigMaps signed by
/// that key.
struct Setup {
    dir: tempfile::TempDir,
    pki: Pki,
    key: PathBuf,
    policy: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    pki.install(dir.path(), "webhook-1");
    let (key, pubkey) = key_pair(dir.path(), "release");
    let policy = write(
        dir.path(),
        "policy.yaml",
        &policy_text("configmaps", &pubkey, "[ConfigMap]"),
    );
    Setup {
        dir,
        pki,
        key,
        policy,
    }
}

fn policy_text(name: &str, pubkey: &Path, kinds: &str) -> String {
    format!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: {name}\nspec:\n  match:\n    kinds: {kinds}\n  attestors:\n  - entries:\n    - keys:\n        path: {}\n",
        pubkey.display()
    )
}

impl Setup {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A ConfigMap signed with the setup's key, as a JSON object.
    fn signed_configmap(&self, name: &str, data: &str) -> Value {
        self.signed_configmap_with(name, data, &self.key)
    }

    /// A team-a ConfigMap signed through the CLI with `key`.
    fn signed_configmap_with(&self, name: &str, data: &str, key: &Path) -> Value {
        let input = write(
            self.path(),
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: team-a\ndata:\n  value: \"{data}\"\n"
            ),
        );
        common::sign_with_key(&input, key);
        let text =
            std::fs::read_to_string(self.path().join(format!("{name}.yaml.signed"))).unwrap();
        yaml_to_json(&text)
    }

    fn start(&self, extra: &[&str]) -> Webhook {
        Webhook::start(self.path(), &[&self.policy], extra)
    }
}

fn yaml_to_json(text: &str) -> Value {
    let docs =
        mansign::manifest::parse_documents(text, &mansign::limits::Limits::default()).unwrap();
    docs.into_iter().next().unwrap().1
}

/// An AdmissionReview v1 request for `object`.
fn review(uid: &str, operation: &str, object: &Value) -> Value {
    let kind = object["kind"].as_str().unwrap_or("ConfigMap");
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "requestKind": {"group": "", "version": "v1", "kind": kind},
            "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    })
}

async fn post(client: &reqwest::Client, webhook: &Webhook, body: &Value) -> reqwest::Response {
    client
        .post(webhook.url("/validate"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// Posts a review and returns the AdmissionReview response (HTTP 200 required).
async fn decide(client: &reqwest::Client, webhook: &Webhook, body: &Value) -> Value {
    let response = post(client, webhook, body).await;
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The `/metrics` text (HTTP 200 required).
async fn metrics(client: &reqwest::Client, webhook: &Webhook) -> String {
    let response = client.get(webhook.url("/metrics")).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "/metrics: {text}");
    text
}

/// The value of one metric line (`name{labels}` exactly as rendered).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The server still answers: `/healthz` is 200 and a signed object is allowed.
async fn still_answers(setup: &Setup, webhook: &mut Webhook, object: &Value) {
    assert!(webhook.is_running(), "the server process died");
    let c = client(&setup.pki);
    let health = c.get(webhook.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let answer = decide(&c, webhook, &review("still-1", "CREATE", object)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
}

// ---------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_routes_answer() {
    let setup = setup();
    let webhook = setup.start(&[]);
    let c = client(&setup.pki);

    let health = c.get(webhook.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.version(), reqwest::Version::HTTP_2, "ALPN offers h2");

    let ready = c.get(webhook.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["ready"], true);
    assert_eq!(ready["policies"]["rules"], 1);
    assert_eq!(ready["policies"]["status"]["last_error"], Value::Null);
    assert_eq!(ready["tls"]["status"]["last_error"], Value::Null);

    let text = metrics(&c, &webhook).await;
    for family in [
        "# TYPE mansign_admission_requests_total counter",
        "# TYPE mansign_admission_request_duration_seconds histogram",
        "# TYPE mansign_admission_requests_in_flight gauge",
        "# TYPE mansign_verification_cache_lookups_total counter",
        "# TYPE mansign_config_reloads_total counter",
    ] {
        assert!(text.contains(family), "{family} missing from:\n{text}");
    }

    let h1 = http1_client(&setup.pki, false);
    let health = h1.get(webhook.url("/healthz")).send().await.unwrap();
    assert_eq!(health.version(), reqwest::Version::HTTP_11);
    assert_eq!(health.status(), 200);

    assert_eq!(
        c.get(webhook.url("/nope")).send().await.unwrap().status(),
        404
    );
    assert_eq!(
        c.get(webhook.url("/validate"))
            .send()
            .await
            .unwrap()
            .status(),
        405
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_a_body_that_is_not_json_with_415() {
    let setup = setup();
    let mut webhook = setup.start(&[]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    for content_type in [None, Some("text/plain"), Some("application/yaml")] {
        let mut request = c
            .post(webhook.url("/validate"))
            .body(review("u", "CREATE", &object).to_string());
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 415, "{content_type:?}");
    }
    // Parameters and case do not matter.
    let response = c
        .post(webhook.url("/validate"))
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(review("u", "CREATE", &object).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_a_body_over_3_mib_with_413_declared_or_streamed() {
    let setup = setup();
    let mut webhook = setup.start(&[]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    let big = "x".repeat(3 * 1024 * 1024 + 1);

    // Declared by Content-Length, over HTTP/2 ...
    let response = c
        .post(webhook.url("/validate"))
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    // ... and over HTTP/1.1, answered from the head alone: no body byte is sent. (A client
    // that writes the body anyway may see the connection close under it, as with any
    // server that refuses early.)
    let mut tls = raw_tls(&setup.pki, &webhook, b"http/1.1").await;
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        big.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let answer = read_some(&mut tls, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    drop(tls);
    // Streamed without a length (chunked): cut off at the limit.
    let mut tls = raw_tls(&setup.pki, &webhook, b"http/1.1").await;
    let head = "POST /validate HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    let _ = tls.write_all(head.as_bytes()).await;
    let chunk = vec![b' '; 1024 * 1024];
    for _ in 0..4 {
        // The server may answer and close before the last chunk: write errors are expected.
        if tls
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .is_err()
            || tls.write_all(&chunk).await.is_err()
            || tls.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let answer = read_some(&mut tls, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    let m = metrics(&c, &webhook).await;
    assert_eq!(
        metric(
            &m,
            "mansign_admission_requests_total{verdict=\"error\",group=\"\",version=\"\",kind=\"\",operation=\"\",reason=\"body-too-large\"}"
        ),
        Some(3.0),
        "{m}"
    );
    still_answers(&setup, &mut webhook, &object).await;
}

/// A TLS connection to the webhook offering the given ALPN protocol.
async fn raw_tls(
    pki: &Pki,
    webhook: &Webhook,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(webhook.address)
        .await
        .unwrap();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    pki.rustls_client(&[alpn]).connect(name, tcp).await.unwrap()
}

/// Reads what arrives until the peer closes or `limit` passes (lossy UTF-8).
async fn read_some(stream: &mut (impl tokio::io::AsyncRead + Unpin), limit: Duration) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------------------
// Hostile and broken clients
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_are_not_answerable_reviews_get_400_and_the_server_keeps_answering() {
    let setup = setup();
    let mut webhook = setup.start(&[]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    let mut wrong_version = review("u-1", "CREATE", &object);
    wrong_version["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let mut missing_uid = review("u-2", "CREATE", &object);
    missing_uid["request"]
        .as_object_mut()
        .unwrap()
        .remove("uid");
    let cases: [(&str, String); 5] = [
        (
            "malformed JSON",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\":".into(),
        ),
        ("not JSON at all", "\u{0}\u{1}binary".into()),
        ("empty body", String::new()),
        ("wrong API version", wrong_version.to_string()),
        ("missing uid", missing_uid.to_string()),
    ];
    for (what, body) in &cases {
        let response = c
            .post(webhook.url("/validate"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, 400, "{what}: {text}");
        assert!(!text.trim().is_empty(), "{what}: the 400 says why");
        assert!(!text.contains("allowed"), "{what}: {text}");
    }
    // Each one is logged and counted as invalid, with the reviewer's reason code.
    let invalid: Vec<Value> = webhook
        .decisions()
        .into_iter()
        .filter(|d| d["verdict"] == "invalid")
        .collect();
    assert_eq!(invalid.len(), cases.len(), "{invalid:?}");
    assert!(
        invalid
            .iter()
            .all(|d| d["reason"].is_string() && d["latency_ms"].is_number())
    );
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_request_head_is_cut_off() {
    let setup = setup();
    let mut webhook = setup.start(&["--header-timeout", "1s"]);
    let object = setup.signed_configmap("app", "1");
    let mut tls = raw_tls(&setup.pki, &webhook, b"http/1.1").await;
    tls.write_all(b"POST /validate HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    // One header byte every 200 ms: never a complete head.
    let mut closed = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if tls.write_all(b"x").await.is_err() || tls.flush().await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 1024];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), tls.read(&mut buf)).await
        {
            // A 408 or an EOF: the server gave up on this client.
            let _ = n;
            closed = true;
            break;
        }
    }
    assert!(
        closed,
        "the connection was still open after 8 s of trickling"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_body_gets_408() {
    let setup = setup();
    let mut webhook = setup.start(&["--body-timeout", "1s"]);
    let object = setup.signed_configmap("app", "1");
    let body = review("slow", "CREATE", &object).to_string();
    let mut tls = raw_tls(&setup.pki, &webhook, b"http/1.1").await;
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let trickle = async {
        for b in body.as_bytes().iter().take(50) {
            if tls.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    trickle.await;
    let answer = read_some(&mut tls, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10));
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_the_tls_handshake_is_cut_off() {
    let setup = setup();
    let mut webhook = setup.start(&["--handshake-timeout", "1s"]);
    let object = setup.signed_configmap("app", "1");
    let mut tcp = tokio::net::TcpStream::connect(webhook.address)
        .await
        .unwrap();
    // Half a ClientHello record header, then nothing.
    tcp.write_all(&[0x16, 0x03]).await.unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the server kept a silent client: {read:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    let m = metrics(&client(&setup.pki), &webhook).await;
    assert!(
        metric(&m, "mansign_tls_handshake_failures_total").unwrap() >= 1.0,
        "{m}"
    );
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_with_an_unfinished_stream_is_closed() {
    let setup = setup();
    let mut webhook = setup.start(&["--idle-timeout", "1s"]);
    let object = setup.signed_configmap("app", "1");
    let mut tls = raw_tls(&setup.pki, &webhook, b"h2").await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    // The preface and an empty SETTINGS frame, then a HEADERS frame without END_HEADERS:
    // a stream whose head never completes (the HTTP/2 form of slowloris).
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    tls.write_all(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]).await.unwrap();
    tls.write_all(&[0, 0, 1, 0x1, 0x0, 0, 0, 0, 1, 0x83])
        .await
        .unwrap();
    let started = Instant::now();
    let rest = read_some(&mut tls, Duration::from_secs(6)).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the connection stayed open: {rest:?}"
    );
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abrupt_disconnects_do_not_disturb_the_server() {
    let setup = setup();
    let mut webhook = setup.start(&[]);
    let object = setup.signed_configmap("app", "1");
    // 1. A TCP connection closed in the middle of the handshake.
    let mut tcp = tokio::net::TcpStream::connect(webhook.address)
        .await
        .unwrap();
    tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .unwrap();
    drop(tcp);
    // 2. A request whose body stops halfway, then the socket goes away.
    let body = review("gone", "CREATE", &object).to_string();
    let mut tls = raw_tls(&setup.pki, &webhook, b"http/1.1").await;
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(&body.as_bytes()[..body.len() / 2])
        .await
        .unwrap();
    drop(tls);
    // 3. A complete request whose client leaves before the answer.
    let mut tls = raw_tls(&setup.pki, &webhook, b"http/1.1").await;
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(body.as_bytes()).await.unwrap();
    drop(tls);
    // 4. An HTTP/2 client that sends garbage frames.
    let mut tls = raw_tls(&setup.pki, &webhook, b"h2").await;
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff\xff")
        .await
        .unwrap();
    let _ = read_some(&mut tls, Duration::from_secs(2)).await;
    drop(tls);

    still_answers(&setup, &mut webhook, &object).await;
    let m = metrics(&client(&setup.pki), &webhook).await;
    assert_eq!(
        metric(&m, "mansign_admission_requests_in_flight"),
        Some(0.0),
        "{m}"
    );
}

// ---------------------------------------------------------------------------------------
// Load, certificate rotation, shutdown, reloads
// ---------------------------------------------------------------------------------------

/// Sends `count` reviews of `object` at once to `url` over `client`; returns how many were
/// answered 200 with their own uid and `allowed: true`, and the failures.
async fn burst(
    client: &reqwest::Client,
    url: &str,
    object: &Value,
    prefix: &str,
    count: usize,
) -> (usize, Vec<String>) {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let uid = format!("{prefix}-{i}");
        let body = review(&uid, "CREATE", object).to_string();
        let request = client
            .post(url)
            .header("content-type", "application/json")
            .body(body);
        tasks.spawn(async move {
            let response = request.send().await.map_err(|e| format!("{uid}: {e:?}"))?;
            let status = response.status();
            let answer: Value = response
                .json()
                .await
                .map_err(|e| format!("{uid}: {status}: {e}"))?;
            if status != 200
                || answer["response"]["uid"] != uid.as_str()
                || answer["response"]["allowed"] != true
            {
                return Err(format!("{uid}: {status}: {answer}"));
            }
            Ok(())
        });
    }
    let mut ok = 0;
    let mut failures = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done.unwrap() {
            Ok(()) => ok += 1,
            Err(e) => failures.push(e),
        }
    }
    (ok, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests_all_get_their_answer() {
    let setup = setup();
    let webhook = setup.start(&[]);
    let object = setup.signed_configmap("app", "1");
    let h2 = client(&setup.pki);
    let h1 = http1_client(&setup.pki, false);
    // 500 streams over one HTTP/2 connection and 500 HTTP/1.1 connections, all at once.
    let url = webhook.url("/validate");
    let (a, b) = tokio::join!(
        burst(&h2, &url, &object, "h2", 500),
        burst(&h1, &url, &object, "h1", 500)
    );
    assert!(a.1.is_empty() && b.1.is_empty(), "{:?} {:?}", a.1, b.1);
    assert_eq!(a.0 + b.0, 1000);
    let m = metrics(&h2, &webhook).await;
    assert_eq!(
        metric(&m, "mansign_admission_request_duration_seconds_count"),
        Some(1000.0),
        "{m}"
    );
    // The signature checks ran once; every other request was a cache hit.
    assert!(
        metric(
            &m,
            "mansign_verification_cache_lookups_total{result=\"hit\"}"
        )
        .unwrap()
            >= 990.0,
        "{m}"
    );
    assert_eq!(
        webhook
            .decisions()
            .iter()
            .filter(|d| d["verdict"] == "allowed")
            .count(),
        1000
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_replaced_during_load_is_served_to_new_handshakes() {
    let setup = setup();
    let old_der = pem_der(&std::fs::read_to_string(setup.path().join("tls.crt")).unwrap());
    let webhook = setup.start(&["--reload-interval", "200ms"]);
    let object = setup.signed_configmap("app", "1");
    // An HTTP/2 connection opened before the rotation.
    let kept = client(&setup.pki);
    decide(&kept, &webhook, &review("kept-0", "CREATE", &object)).await;

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..8 {
        let (stop, object) = (stop.clone(), object.clone());
        // A new connection and handshake for every request.
        let c = http1_client(&setup.pki, true);
        let url = webhook.url("/validate");
        workers.spawn(async move {
            let (mut seen, mut failures) = (Vec::new(), Vec::new());
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let uid = format!("w{w}-{i}");
                i += 1;
                let sent = c
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(review(&uid, "CREATE", &object).to_string())
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status() == 200 => {
                        let der = r
                            .extensions()
                            .get::<reqwest::tls::TlsInfo>()
                            .and_then(|t| t.peer_certificate())
                            .map(<[u8]>::to_vec);
                        seen.push(der);
                    }
                    Ok(r) => failures.push(format!("{uid}: {}", r.status())),
                    Err(e) => failures.push(format!("{uid}: {e:?}")),
                }
            }
            (seen, failures)
        });
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let new_der = setup.pki.install(setup.path(), "webhook-2");
    // New handshakes see the new certificate within a few reload intervals.
    let started = Instant::now();
    loop {
        let r = http1_client(&setup.pki, true)
            .get(webhook.url("/healthz"))
            .send()
            .await
            .unwrap();
        let der = r
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|t| t.peer_certificate())
            .map(<[u8]>::to_vec);
        if der.as_deref() == Some(&new_der[..]) {
            break;
        }
        assert_eq!(der.as_deref(), Some(&old_der[..]));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not rotated in 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut old_seen, mut new_seen, mut failures) = (0, 0, Vec::new());
    while let Some(done) = workers.join_next().await {
        let (seen, f) = done.unwrap();
        failures.extend(f);
        for der in seen {
            match der {
                Some(d) if d == old_der => old_seen += 1,
                Some(d) if d == new_der => new_seen += 1,
                other => failures.push(format!("unexpected certificate {other:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    assert!(
        old_seen > 0 && new_seen > 0,
        "old {old_seen}, new {new_seen}"
    );
    // The connection opened before the rotation still works.
    decide(&kept, &webhook, &review("kept-1", "CREATE", &object)).await;
    let ready: Value = kept
        .get(webhook.url("/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        ready["tls"]["status"]["reloads_ok"].as_u64().unwrap() >= 1,
        "{ready}"
    );
    assert_eq!(ready["tls"]["status"]["last_error"], Value::Null, "{ready}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_load_answers_every_request_already_received_then_exits_0() {
    let setup = setup();
    let mut webhook = setup.start(&["--max-concurrent-reviews", "1", "--shutdown-grace", "30s"]);
    let object = setup.signed_configmap("app", "1");
    let h2 = client(&setup.pki);
    let watcher = client(&setup.pki);
    decide(&h2, &webhook, &review("warm", "CREATE", &object)).await;

    // 200 streams (below the 256 streams per connection) on one connection. Each carries
    // a padded old object (a 2 MiB review, under the 3 MiB body bound; 512 KiB was answered
    // too fast on an idle machine to leave any in flight) and there is one review slot, so the server
    // has a queue to work through when the signal comes.
    let mut load = tokio::task::JoinSet::new();
    for i in 0..200 {
        let uid = format!("term-{i}");
        let mut body = review(&uid, "UPDATE", &object);
        body["request"]["oldObject"] = json!({"padding": "x".repeat(2 * 1024 * 1024)});
        let request = h2
            .post(webhook.url("/validate"))
            .header("content-type", "application/json")
            .body(body.to_string());
        load.spawn(async move {
            let response = request.send().await.map_err(|e| format!("{uid}: {e:?}"))?;
            let status = response.status();
            let answer: Value = response
                .json()
                .await
                .map_err(|e| format!("{uid}: {status}: {e}"))?;
            if status != 200 || answer["response"]["uid"] != uid.as_str() {
                return Err(format!("{uid}: {status}: {answer}"));
            }
            Ok(())
        });
    }
    // Every request has reached the server (answered or in flight): now the signal.
    let started = Instant::now();
    let in_flight = loop {
        let m = metrics(&watcher, &webhook).await;
        let in_flight = metric(&m, "mansign_admission_requests_in_flight").unwrap();
        let answered = metric(&m, "mansign_admission_request_duration_seconds_count").unwrap();
        if in_flight + answered - 1.0 >= 200.0 {
            break in_flight;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the requests did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    eprintln!("signal with {in_flight} requests in flight");
    webhook.signal("TERM");
    let mut failures = Vec::new();
    while let Some(done) = load.join_next().await {
        if let Err(e) = done.unwrap() {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    let status = webhook.wait(Duration::from_secs(30));
    assert!(status.success(), "{status}");
    let events = webhook.events();
    let draining = events.iter().find(|e| e["event"] == "draining").unwrap();
    assert!(draining["in_flight"].as_i64().unwrap() > 0, "{draining}");
    let stopped = events.iter().find(|e| e["event"] == "stopped").unwrap();
    assert_eq!(stopped["drained"], true);
    // No longer listening.
    assert!(
        tokio::net::TcpStream::connect(webhook.address)
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_policy_reload_keeps_the_last_good_policy_and_is_reported() {
    let setup = setup();
    let webhook = setup.start(&["--reload-interval", "200ms"]);
    let c = client(&setup.pki);
    let signed = setup.signed_configmap("app", "1");
    let unsigned = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "plain", "namespace": "team-a"}, "data": {"a": "b"}
    });
    let answer = decide(&c, &webhook, &review("before", "CREATE", &unsigned)).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");

    // A broken edit of the policy file.
    std::fs::write(
        &setup.policy,
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nspec: [",
    )
    .unwrap();
    let started = Instant::now();
    let ready = loop {
        let response = c.get(webhook.url("/readyz")).send().await.unwrap();
        assert_eq!(
            response.status(),
            200,
            "a failed reload keeps the server ready"
        );
        let ready: Value = response.json().await.unwrap();
        if ready["policies"]["status"]["last_error"].is_string() {
            break ready;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no reload error: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let error = ready["policies"]["status"]["last_error"].as_str().unwrap();
    assert!(
        error.contains("policy.yaml"),
        "the error names the file: {error}"
    );
    assert_eq!(ready["policies"]["rules"], 1);
    let m = metrics(&c, &webhook).await;
    assert_eq!(
        metric(
            &m,
            "mansign_config_reloads_total{config=\"policies\",result=\"failed\"}"
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        metric(&m, "mansign_config_last_reload_failed{config=\"policies\"}"),
        Some(1.0)
    );
    // The old policy still decides: unsigned denied, signed allowed.
    let answer = decide(&c, &webhook, &review("during-1", "CREATE", &unsigned)).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let answer = decide(&c, &webhook, &review("during-2", "CREATE", &signed)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(
        webhook
            .events()
            .iter()
            .any(|e| e["event"] == "reload-failed" && e["config"] == "policies")
    );

    // A good policy that only covers Secrets: now the unsigned ConfigMap is not matched.
    let pubkey = setup.path().join("release.pub");
    std::fs::write(&setup.policy, policy_text("secrets", &pubkey, "[Secret]")).unwrap();
    let started = Instant::now();
    loop {
        let ready: Value = c
            .get(webhook.url("/readyz"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready["policies"]["status"]["last_error"].is_null() {
            assert_eq!(ready["policies"]["status"]["reloads_ok"], 1);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no reload: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answer = decide(&c, &webhook, &review("after", "CREATE", &unsigned)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let m = metrics(&c, &webhook).await;
    assert_eq!(
        metric(&m, "mansign_config_last_reload_failed{config=\"policies\"}"),
        Some(0.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_refuses_to_start_on_a_broken_policy_or_certificate() {
    let setup = setup();
    let broken = write(setup.path(), "broken.yaml", "kind: Nope\n");
    let out = Command::new(env!("CARGO_BIN_EXE_mansign"))
        .args(["admission", "serve", "--listen", "127.0.0.1:0", "--policy"])
        .arg(&broken)
        .arg("--tls-cert")
        .arg(setup.path().join("tls.crt"))
        .arg("--tls-key")
        .arg(setup.path().join("tls.key"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.yaml"));

    // A key that does not belong to the certificate.
    let (_, other_key) = setup.pki.issue("other");
    let key = write(setup.path(), "other.key", &other_key);
    let out = Command::new(env!("CARGO_BIN_EXE_mansign"))
        .args(["admission", "serve", "--listen", "127.0.0.1:0", "--policy"])
        .arg(&setup.policy)
        .arg("--tls-cert")
        .arg(setup.path().join("tls.crt"))
        .arg("--tls-key")
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TLS") && stderr.contains("tls.crt"),
        "{stderr}"
    );
}

/// A review over 3 MiB (the API server escapes `<` as six bytes, so a client can make one
/// from a 600 KiB object) is refused by its uid: a 413 would leave it
/// to the webhook's failurePolicy, which under `Ignore` admits it (issue 35, item 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_over_3_mib_is_refused_by_its_uid_not_left_to_the_failure_policy() {
    let setup = setup();
    let mut webhook = setup.start(&[]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    let mut body = review("too-large-1", "UPDATE", &object);
    body["request"]["oldObject"] = json!({"padding": "x".repeat(3 * 1024 * 1024)});
    let body = body.to_string();
    assert!(body.len() > 3 * 1024 * 1024);
    let check = |text: &str| {
        let answer: Value = serde_json::from_str(text).unwrap();
        assert_eq!(answer["response"]["uid"], "too-large-1", "{answer}");
        assert_eq!(answer["response"]["allowed"], false, "{answer}");
        let message = answer["response"]["status"]["message"].as_str().unwrap();
        assert!(message.ends_with("[body-too-large]"), "{message}");
    };
    // Declared by Content-Length.
    let response = c
        .post(webhook.url("/validate"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    check(&response.text().await.unwrap());
    still_answers(&setup, &mut webhook, &object).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_deadline_is_refused_never_allowed() {
    let setup = setup();
    let webhook = setup.start(&["--deadline", "1ms", "--max-concurrent-reviews", "1"]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    // Large bodies (the old object padded to 2 MiB) take longer than 1 ms to receive and
    // review, and queue behind each other for the one review slot.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..10 {
        let mut body = review(&format!("late-{i}"), "UPDATE", &object);
        body["request"]["oldObject"] = json!({"padding": "x".repeat(2 * 1024 * 1024)});
        let request = c
            .post(webhook.url("/validate"))
            .header("content-type", "application/json")
            .body(body.to_string());
        tasks.spawn(async move {
            let r = request.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        });
    }
    let mut late = 0;
    while let Some(done) = tasks.join_next().await {
        let (status, text) = done.unwrap();
        // A late request is refused by its uid (HTTP 200, allowed: false), not answered
        // with a 503 that the API server would hand to failurePolicy (Ignore: an allow).
        assert_eq!(status, 200, "{text}");
        if text.contains("\"allowed\":false") {
            assert!(text.contains("[deadline-exceeded]"), "{text}");
            late += 1;
        }
    }
    assert!(late > 0, "no request passed a 1 ms deadline");
    let m = metrics(&c, &webhook).await;
    assert_eq!(
        metric(
            &m,
            "mansign_admission_requests_total{verdict=\"error\",group=\"\",version=\"\",kind=\"\",operation=\"\",reason=\"deadline-exceeded\"}"
        ),
        Some(late as f64),
        "{m}"
    );
}

// ---------------------------------------------------------------------------------------
// Verdicts end to end
// ---------------------------------------------------------------------------------------

fn kyverno(rel: &str) -> PathBuf {
    common::fixture(&format!("kyverno/{rel}"))
}

/// Kyverno's unit-test policy (ConfigMaps and Services signed by its first test key), with
/// `action` (e.g. `validationFailureAction: Audit`), and the public-good trust root of the
/// fixtures (given the `mediaType` field its copy predates, see tests/it/policy_kyverno.rs).
fn kyverno_policy(dir: &Path, name: &str, action: &str) -> (PathBuf, PathBuf) {
    let policy = write(
        dir,
        name,
        &common::kyverno_unit_policy(action, "ConfigMap, Service", "", ""),
    );
    let mut root: Value = serde_json::from_str(
        &std::fs::read_to_string(kyverno("trust-root/sigstore-public-trusted_root.json")).unwrap(),
    )
    .unwrap();
    if root.get("mediaType").is_none() {
        root["mediaType"] = "application/vnd.dev.sigstore.trustedroot+json;version=0.1".into();
    }
    let root_path = write(dir, "trusted_root.json", &root.to_string());
    (policy, root_path)
}

fn kyverno_review(name: &str) -> Value {
    let path = kyverno(&format!(
        "unit-validate-manifest/admissionreview-wrapped/{name}-admissionreview.json"
    ));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn assert_denied(answer: &Value, code: &str, in_message: &str) {
    let response = &answer["response"];
    assert_eq!(response["allowed"], false, "{answer}");
    assert_eq!(response["status"]["code"], 403, "{answer}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("[{code}]")), "{message}");
    assert!(message.contains(in_message), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kyverno_fixture_reviews_are_allowed_or_denied_with_the_reason() {
    let setup = setup();
    let (policy, root) = kyverno_policy(setup.path(), "kyverno.yaml", "");
    let root_arg = format!("--trusted-root={}", root.display());
    let webhook = Webhook::start(setup.path(), &[&policy], &[&root_arg]);
    let c = client(&setup.pki);

    let signed = kyverno_review("signed");
    let answer = decide(&c, &webhook, &signed).await;
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(
        answer["response"]["uid"], signed["request"]["uid"],
        "{answer}"
    );
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    let answer = decide(&c, &webhook, &kyverno_review("unsigned")).await;
    assert_denied(&answer, "not-signed", "policy unit, rule manifests");
    let answer = decide(&c, &webhook, &kyverno_review("invalid")).await;
    assert_denied(&answer, "modified", "data.key3");
    let answer = decide(&c, &webhook, &kyverno_review("multi-sig")).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    // One log line per decision, with the verdict, the reason and the latency.
    let decisions = webhook.decisions();
    let verdicts: Vec<(&str, &str)> = decisions
        .iter()
        .map(|d| {
            (
                d["verdict"].as_str().unwrap(),
                d["reason"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("allowed", "-"),
            ("denied", "not-signed"),
            ("denied", "modified"),
            ("allowed", "-")
        ]
    );
    assert!(decisions.iter().all(|d| d["latency_ms"].is_number()
        && d["name"].is_string()
        && d["user"] == "kubernetes-admin"));
    assert!(
        decisions[0]["signers"][0]
            .as_str()
            .unwrap()
            .starts_with("key ")
    );
    // And counted by verdict, kind, operation and reason.
    let m = metrics(&c, &webhook).await;
    assert_eq!(
        metric(
            &m,
            "mansign_admission_requests_total{verdict=\"denied\",group=\"\",version=\"v1\",kind=\"ConfigMap\",operation=\"CREATE\",reason=\"modified\"}"
        ),
        Some(1.0),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_policy_allows_with_a_warning_over_https() {
    let setup = setup();
    let (policy, root) = kyverno_policy(
        setup.path(),
        "audit.yaml",
        "  validationFailureAction: Audit\n",
    );
    let root_arg = format!("--trusted-root={}", root.display());
    let webhook = Webhook::start(setup.path(), &[&policy], &[&root_arg]);
    let answer = decide(&client(&setup.pki), &webhook, &kyverno_review("invalid")).await;
    let response = &answer["response"];
    assert_eq!(response["allowed"], true, "{answer}");
    let warnings = strings_of(&response["warnings"]);
    assert_eq!(warnings.len(), 1, "{answer}");
    assert!(warnings[0].contains("[modified]"), "{warnings:?}");
    let logged = webhook.decisions();
    assert_eq!(logged[0]["verdict"], "audit-warned");
    assert_eq!(logged[0]["reason"], "modified");
}

fn strings_of(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_signed_in_the_test_are_allowed_and_tampered_ones_denied() {
    let setup = setup();
    let webhook = setup.start(&[]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    let answer = decide(&c, &webhook, &review("ok", "CREATE", &object)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    // Dry-run requests are answered like real ones.
    let mut dry = review("dry", "CREATE", &object);
    dry["request"]["dryRun"] = json!(true);
    let answer = decide(&c, &webhook, &dry).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    tampered_is_denied_and_delete_allowed(&c, &webhook, &object).await;
}

/// An UPDATE of `object` with changed data (uid `bad`) is denied naming the field; a DELETE
/// of it (uid `del`) is allowed without verification.
async fn tampered_is_denied_and_delete_allowed(
    c: &reqwest::Client,
    webhook: &Webhook,
    object: &Value,
) {
    let mut tampered = object.clone();
    tampered["data"]["value"] = json!("2");
    let answer = decide(c, webhook, &review("bad", "UPDATE", &tampered)).await;
    assert_denied(&answer, "modified", "data.value");
    let answer = decide(c, webhook, &review("del", "DELETE", &tampered)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_needing_no_signature_check_skip_the_blocking_pool_with_the_same_answers() {
    let setup = setup();
    let webhook = setup.start(&[]);
    let c = client(&setup.pki);
    let object = setup.signed_configmap("app", "1");
    let paths = |m: &str| {
        (
            metric(m, "mansign_admission_reviews_total{path=\"inline\"}"),
            metric(m, "mansign_admission_reviews_total{path=\"pool\"}"),
        )
    };
    assert_eq!(paths(&metrics(&c, &webhook).await), (Some(0.0), Some(0.0)));

    // First sight: the signatures are checked on the pool.
    let answer = decide(&c, &webhook, &review("first", "CREATE", &object)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(paths(&metrics(&c, &webhook).await), (Some(0.0), Some(1.0)));

    // Re-applied: answered inline from the cache, with its own uid.
    let answer = decide(&c, &webhook, &review("again", "UPDATE", &object)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(answer["response"]["uid"], "again");
    // Same signatures, changed content: still compared, denied inline; a DELETE (not
    // verified at all): inline.
    tampered_is_denied_and_delete_allowed(&c, &webhook, &object).await;
    let m = metrics(&c, &webhook).await;
    assert_eq!(paths(&m), (Some(3.0), Some(1.0)), "{m}");
    assert_eq!(
        metric(
            &m,
            "mansign_verification_cache_lookups_total{result=\"hit\"}"
        ),
        Some(2.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "mansign_verification_cache_lookups_total{result=\"miss\"}"
        ),
        Some(1.0),
        "the inline attempt of the first request is not a second miss: {m}"
    );

    // A large body goes to the pool even when its signatures are cached.
    let mut large = review("large", "UPDATE", &object);
    large["request"]["oldObject"] = json!({"padding": "x".repeat(100 * 1024)});
    let answer = decide(&c, &webhook, &large).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(paths(&metrics(&c, &webhook).await), (Some(3.0), Some(2.0)));

    // Inline answers are logged like the others.
    let uids: Vec<String> = webhook
        .decisions()
        .iter()
        .map(|d| d["uid"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(uids, ["first", "again", "bad", "del", "large"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_namespace_signers_over_https() {
    let setup = setup();
    let (team_key, team_pub) = key_pair(setup.path(), "team-a");
    let (central_key, central_pub) = key_pair(setup.path(), "central");
    // team-a's exceptions: signed by team-a or the central key; elsewhere: central only.
    let policy = write(
        setup.path(),
        "namespaces.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: team-a\nspec:\n  match:\n    kinds: [ConfigMap]\n    namespaces: [team-a]\n  attestors:\n  - count: 1\n    entries:\n    - keys:\n        path: {}\n    - keys:\n        path: {}\n---\napiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: central\nspec:\n  match:\n    kinds: [ConfigMap]\n  exclude:\n    namespaces: [team-a]\n  attestors:\n  - entries:\n    - keys:\n        path: {}\n",
            team_pub.display(),
            central_pub.display(),
            central_pub.display()
        ),
    );
    let webhook = Webhook::start(setup.path(), &[&policy], &[]);
    let c = client(&setup.pki);
    let sign = |name: &str, namespace: &str, key: &Path| {
        let input = write(
            setup.path(),
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  a: b\n"
            ),
        );
        common::sign_with_key(&input, key);
        yaml_to_json(
            &std::fs::read_to_string(setup.path().join(format!("{name}.yaml.signed"))).unwrap(),
        )
    };
    let team_in_a = sign("team-in-a", "team-a", &team_key);
    let team_in_b = sign("team-in-b", "team-b", &team_key);
    let central_in_b = sign("central-in-b", "team-b", &central_key);
    let central_in_a = sign("central-in-a", "team-a", &central_key);

    for (object, allowed) in [
        (&team_in_a, true),
        (&central_in_a, true),
        (&central_in_b, true),
        (&team_in_b, false),
    ] {
        let answer = decide(&c, &webhook, &review("ns", "CREATE", object)).await;
        assert_eq!(answer["response"]["allowed"], allowed, "{answer}");
        if !allowed {
            let message = answer["response"]["status"]["message"].as_str().unwrap();
            assert!(message.contains("policy central"), "{message}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Files a policy names are reloaded too (issue 28)
// ---------------------------------------------------------------------------------------

/// Polls `/readyz` until `reloads_ok` reaches `count` (at most 10 s), and returns it.
async fn wait_for_reloads(c: &reqwest::Client, webhook: &Webhook, count: u64) -> Value {
    let started = Instant::now();
    loop {
        let ready: Value = c
            .get(webhook.url("/readyz"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready["policies"]["status"]["reloads_ok"].as_u64() >= Some(count) {
            return ready;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no reload: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// k8s-manifest-sigstore's 2022 keyless ConfigMap (set 0: hkitahar@redhat.com via Google),
/// as an AdmissionReview request.
fn keyless_configmap_review(uid: &str) -> Value {
    let path = common::fixture(
        "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-keyless-multi-signed.yaml",
    );
    review(
        uid,
        "CREATE",
        &yaml_to_json(&std::fs::read_to_string(path).unwrap()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_root_a_policy_names_is_reloaded_when_it_changes() {
    let setup = setup();
    let pgi = std::fs::read_to_string(common::fixture(
        "k8s-manifest-sigstore/_external/sigstore-cosign-v3.0.4/pkg/cosign/testdata/trusted_root_pgi.json",
    ))
    .unwrap();
    let staging = std::fs::read_to_string(common::fixture(
        "sigstore-trust-roots/staging/trusted_root.json",
    ))
    .unwrap();
    // The policy names its trust root by a relative path; at first it is the staging root,
    // which never issued the fixture's certificate nor logged its entry.
    let root = write(setup.path(), "roots/trusted_root.json", &staging);
    let policy = write(
        setup.path(),
        "keyless.yaml",
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: keyless\nspec:\n  match:\n    kinds: [ConfigMap]\n  attestors:\n  - entries:\n    - keyless:\n        issuer: https://accounts.google.com\n        subject: hkitahar@redhat.com\n        trustedRoot: roots/trusted_root.json\n",
    );
    let webhook = Webhook::start(setup.path(), &[&policy], &["--reload-interval", "200ms"]);
    let c = client(&setup.pki);
    let answer = decide(&c, &webhook, &keyless_configmap_review("staging-1")).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");

    // The named file now holds the root that vouches for the certificate: admitted.
    std::fs::write(&root, &pgi).unwrap();
    wait_for_reloads(&c, &webhook, 1).await;
    let answer = decide(&c, &webhook, &keyless_configmap_review("pgi-1")).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let ready = wait_for_reloads(&c, &webhook, 1).await;
    assert_eq!(
        ready["policies"]["named_files"],
        json!([root]),
        "readyz lists the named trust root: {ready}"
    );

    // And back: the same object is denied again, the answer not kept from before.
    std::fs::write(&root, &staging).unwrap();
    wait_for_reloads(&c, &webhook, 2).await;
    let answer = decide(&c, &webhook, &keyless_configmap_review("staging-2")).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    assert!(
        webhook
            .events()
            .iter()
            .filter(|e| e["event"] == "reloaded" && e["config"] == "policies")
            .count()
            >= 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_file_a_policy_names_is_reloaded_when_it_is_rotated() {
    let setup = setup();
    let webhook = setup.start(&["--reload-interval", "200ms"]);
    let c = client(&setup.pki);
    let old_signed = setup.signed_configmap("app", "1");
    let answer = decide(&c, &webhook, &review("old-1", "CREATE", &old_signed)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    // A new key pair; its public key is written over the file the policy names.
    let (new_key, new_pub) = key_pair(setup.path(), "rotated");
    let new_signed = setup.signed_configmap_with("new", "2", &new_key);
    let answer = decide(&c, &webhook, &review("new-1", "CREATE", &new_signed)).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");

    std::fs::copy(&new_pub, setup.path().join("release.pub")).unwrap();
    wait_for_reloads(&c, &webhook, 1).await;
    let answer = decide(&c, &webhook, &review("new-2", "CREATE", &new_signed)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let answer = decide(&c, &webhook, &review("old-2", "CREATE", &old_signed)).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_naming_a_missing_key_file_loads_once_the_file_appears() {
    let setup = setup();
    let webhook = setup.start(&["--reload-interval", "200ms"]);
    let c = client(&setup.pki);
    // The policy now names a key file that does not exist yet: the reload fails.
    let later = setup.path().join("later.pub");
    std::fs::write(
        &setup.policy,
        policy_text("configmaps", &later, "[ConfigMap]"),
    )
    .unwrap();
    let started = Instant::now();
    loop {
        let ready: Value = c
            .get(webhook.url("/readyz"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready["policies"]["status"]["last_error"].is_string() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{ready}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Signed with a key the policy will name; denied while the old policy is in use.
    let (key, pubkey) = key_pair(setup.path(), "later-pair");
    let signed = setup.signed_configmap_with("later", "3", &key);
    let answer = decide(&c, &webhook, &review("later-1", "CREATE", &signed)).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    // The file appears, no watched file changed: the retry loads it.
    std::fs::copy(&pubkey, &later).unwrap();
    let ready = wait_for_reloads(&c, &webhook, 1).await;
    assert!(
        ready["policies"]["status"]["last_error"].is_null(),
        "{ready}"
    );
    let answer = decide(&c, &webhook, &review("later-2", "CREATE", &signed)).await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    // The repeated failure while waiting was counted once.
    let m = metrics(&c, &webhook).await;
    assert_eq!(
        metric(
            &m,
            "mansign_config_reloads_total{config=\"policies\",result=\"failed\"}"
        ),
        Some(1.0),
        "{m}"
    );
}

// ---------------------------------------------------------------------------------------
// Serving-certificate expiry
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_certificates_not_after_is_exported_and_follows_a_rotation() {
    const SERIES: &str = "mansign_tls_certificate_not_after_timestamp_seconds";
    let setup = setup();
    // 2031-05-06T00:00:00Z and 2029-02-03T00:00:00Z in Unix seconds (`date -u -d ... +%s`).
    setup
        .pki
        .install_until(setup.path(), "webhook-1", Some((2031, 5, 6)));
    let webhook = setup.start(&["--reload-interval", "100ms"]);
    let c = client(&setup.pki);
    let text = metrics(&c, &webhook).await;
    assert!(text.contains(&format!("# TYPE {SERIES} gauge\n")), "{text}");
    assert_eq!(metric(&text, SERIES), Some(1_935_792_000.0), "{text}");

    // A renewed certificate (here: an earlier notAfter, so the change is visible) is
    // reported once it serves.
    setup
        .pki
        .install_until(setup.path(), "webhook-2", Some((2029, 2, 3)));
    let started = Instant::now();
    loop {
        let text = metrics(&c, &webhook).await;
        if metric(&text, SERIES) == Some(1_864_771_200.0) {
            break;
        }
        assert_eq!(metric(&text, SERIES), Some(1_935_792_000.0), "{text}");
        assert!(started.elapsed() < Duration::from_secs(10), "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A broken replacement is refused: the certificate still served stays reported.
    std::fs::write(setup.path().join("tls.crt"), "not a certificate\n").unwrap();
    let started = Instant::now();
    loop {
        let text = metrics(&c, &webhook).await;
        if metric(&text, "mansign_config_last_reload_failed{config=\"tls\"}") == Some(1.0) {
            assert_eq!(metric(&text, SERIES), Some(1_864_771_200.0), "{text}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
