//! Keyless signing (`mansign sign` without `--key`) against the loopback Sigstore stack
//! (`scripts/sigstore-stack/`): token sources, one certificate per run, Rekor entries,
//! retries, client-side token checks, and interoperability with sigstore-python.
//!
//! Each test starts its own stack (about 1 s), so counters and fault queues are its own.
//! A stack that cannot start fails the test (`scripts/test.sh` installs what it needs).
//!
//! Run: `cargo test --test it keyless_sign:: -- --test-threads=2`

use crate::common;
use crate::common::stack;
use crate::common::stub_server;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::write;
use mansign::annotations::{AnnotationDomain, extract};
use mansign::manifest::parse_documents;
use predicates::prelude::*;
use sha2::{Digest, Sha256};
use stack::{AMBIENT_VARS, Stack, http_full};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use stub_server::StubServer;

const THREE_DOCS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: one
  namespace: team-a
data:
  k: v1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
  namespace: team-a
data:
  k: v2
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: allow-debug
  namespace: team-a
spec:
  exceptions:
  - policyName: disallow-privileged
    ruleNames: [check]
  match:
    any:
    - resources:
        kinds: [Pod]
";

fn config_map(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: value-{name}\n"
    )
}

/// `mansign sign` with no ambient credentials and no service URLs.
fn bare_sign_cmd() -> assert_cmd::Command {
    let mut cmd = common::mansign();
    for v in AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.arg("sign");
    cmd
}

/// `mansign sign` pointed at the stack, with no ambient credentials.
fn sign_cmd(stack: &Stack) -> assert_cmd::Command {
    // Every new signature is verified before it is written, against this stack's root.
    stack.keyless_sign(common::mansign())
}

/// The same, as a plain process (for tests that talk to it while it runs).
fn sign_process(stack: &Stack) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("mansign"));
    for v in AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.args([
        "sign",
        "--fulcio-url",
        stack.fulcio_url(),
        "--rekor-url",
        stack.rekor_url(),
    ]);
    cmd.arg("--trusted-root").arg(stack.trusted_root());
    cmd
}

/// `mansign verify` with the stack's trust root and identity.
fn assert_verifies(stack: &Stack, path: &Path, identity: &str) {
    common::mansign()
        .args(["verify", "-f"])
        .arg(path)
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .args(["--certificate-identity", identity])
        .args(["--certificate-oidc-issuer", stack.issuer()])
        .assert()
        .success();
}

/// Every document of a signed file, with its decoded annotations.
fn signed_documents(path: &Path) -> Vec<mansign::annotations::SignedAnnotations> {
    let text = std::fs::read_to_string(path).unwrap();
    let docs = parse_documents(&text, &mansign::Limits::default()).unwrap();
    docs.iter()
        .map(|(_, d)| {
            extract(d, &AnnotationDomain::default(), &mansign::Limits::default()).unwrap()
        })
        .collect()
}

/// Checks one signed document without mansign's verifier: the annotations decode, the
/// signature verifies over M with the certificate's key (RustCrypto), and the Rekor
/// entry in the bundle logs SHA-256(M), this signature and this certificate.
fn check_independently(signed: &mansign::annotations::SignedAnnotations) -> String {
    use p256::ecdsa::signature::Verifier as _;
    use p256::pkcs8::DecodePublicKey as _;
    assert_eq!(signed.sets.len(), 1);
    let set = &signed.sets[0];
    let pem = set
        .certificate_pem
        .as_deref()
        .expect("certificate annotation");
    let der = sigstore_types::DerCertificate::from_pem(pem).expect("certificate PEM");
    let info = sigstore_crypto::parse_certificate_info(&der).expect("certificate");
    let key = p256::ecdsa::VerifyingKey::from_public_key_der(info.public_key.as_bytes())
        .expect("P-256 key in certificate");
    let sig = p256::ecdsa::DerSignature::from_bytes(&set.signature).expect("DER signature");
    key.verify(&signed.message, &sig)
        .expect("signature verifies over M with the certificate key");

    let bundle = set.bundle.as_ref().expect("bundle annotation");
    let body: serde_json::Value =
        serde_json::from_slice(&STANDARD.decode(&bundle.payload.body).unwrap()).unwrap();
    assert_eq!(body["kind"], "hashedrekord");
    assert_eq!(body["apiVersion"], "0.0.1");
    assert_eq!(
        body["spec"]["data"]["hash"]["value"],
        hex::encode(Sha256::digest(&signed.message))
    );
    assert_eq!(
        body["spec"]["signature"]["content"],
        STANDARD.encode(&set.signature)
    );
    let logged_pem = STANDARD
        .decode(
            body["spec"]["signature"]["publicKey"]["content"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(String::from_utf8(logged_pem).unwrap(), pem);
    assert!(!bundle.signed_entry_timestamp.is_empty());
    assert!(bundle.payload.integrated_time > 0);
    assert_eq!(bundle.payload.log_id.len(), 64);
    pem.to_string()
}

fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------
// One certificate per run, one Rekor entry per message.

#[test]
fn signs_a_multi_document_file_with_one_certificate_and_one_entry_per_document() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "app.yaml", THREE_DOCS);
    let output = dir.path().join("app.signed.yaml");
    stack.reset();

    sign_cmd(&stack)
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--identity-token")
        .arg(format!("@{}", stack.id_token_file().display()))
        .arg("-v")
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "identity token from --identity-token @{}",
            stack.id_token_file().display()
        )))
        .stderr(predicate::str::contains("verified 3 new signature(s)"));

    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 1);
    assert_eq!(stack.stat("rekor_entries_created"), 3);
    let signed = signed_documents(&output);
    assert_eq!(signed.len(), 3);
    let certs: Vec<String> = signed.iter().map(check_independently).collect();
    assert!(
        certs.windows(2).all(|w| w[0] == w[1]),
        "one certificate for the run"
    );
    assert_verifies(&stack, &output, stack.identity());
}

#[test]
fn signs_a_directory_of_twenty_files_with_a_single_certificate_request() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("unsigned");
    for i in 0..20 {
        write(
            &inputs,
            &format!("cm-{i:02}.yaml"),
            &config_map(&format!("cm-{i:02}")),
        );
    }
    let out = dir.path().join("signed");
    stack.reset();

    sign_cmd(&stack)
        .arg("-f")
        .arg(&inputs)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "signed 20 document(s) in 20 file(s) with 20 signature(s)",
        ));

    assert_eq!(
        stack.stat("fulcio_signing_cert_requests"),
        1,
        "the whole run uses one certificate"
    );
    assert!(stack.stat("rekor_entries_created") >= 20);
    let files = list_files(&out);
    assert_eq!(files.len(), 20);
    let mut certs = std::collections::BTreeSet::new();
    for f in &files {
        for s in signed_documents(f) {
            certs.insert(check_independently(&s));
        }
    }
    assert_eq!(certs.len(), 1, "every file carries the same certificate");
    assert_verifies(&stack, &out, stack.identity());
}

// ---------------------------------------------------------------------------------------
// Token sources.

#[test]
fn github_actions_ambient_token_is_requested_with_the_bearer_token_and_audience() {
    let stack = Stack::start();
    let token = stack.id_token();
    let github = {
        let token = token.clone();
        StubServer::start(move |req, _| {
            if req.method == "GET" && req.path() == "/_apis/token" {
                (
                    200,
                    serde_json::json!({"count": 1, "value": token}).to_string(),
                )
            } else {
                (404, "{}".to_string())
            }
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("gh"));
    let output = dir.path().join("cm.signed.yaml");

    sign_cmd(&stack)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/_apis/token?api-version=2.0", github.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token")
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("-v")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "identity token from GitHub Actions",
        ))
        .stderr(predicate::str::contains("runner-request-token").not())
        .stderr(predicate::str::contains(&token).not());

    let requests = github.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let r = &requests[0];
    assert_eq!(r.query("audience").as_deref(), Some("sigstore"));
    assert_eq!(r.query("api-version").as_deref(), Some("2.0"));
    assert_eq!(
        r.header("authorization"),
        Some("bearer runner-request-token")
    );
    assert_verifies(&stack, &output, stack.identity());
}

#[test]
fn github_actions_token_request_uses_the_configured_audience() {
    let stack = Stack::start();
    let token = stack.mint_token(&["aud=custom-aud"]);
    let github =
        StubServer::start(move |_, _| (200, serde_json::json!({"value": token}).to_string()));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("aud"));
    sign_cmd(&stack)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/t?api-version=2.0", github.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "x")
        .args(["--oidc-audience", "custom-aud", "-f"])
        .arg(&input)
        .assert()
        .success();
    assert_eq!(
        github.requests()[0].query("audience").as_deref(),
        Some("custom-aud")
    );
}

#[test]
fn sigstore_id_token_environment_variable_is_used_without_a_flag() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("env"));
    sign_cmd(&stack)
        .env("SIGSTORE_ID_TOKEN", stack.id_token())
        .arg("-f")
        .arg(&input)
        .arg("-v")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "identity token from SIGSTORE_ID_TOKEN",
        ));
    assert!(dir.path().join("cm.yaml.signed").is_file());
}

/// What a headless browser sign-in did.
struct BrowserRun {
    exit: std::process::ExitStatus,
    /// mansign's stderr.
    log: String,
    /// The authorization URL mansign printed.
    url: String,
    /// mansign's listener's answer to the redirect.
    callback_status: u16,
    output: PathBuf,
    _dir: tempfile::TempDir,
}

/// The browser flow, headless: `--no-browser` prints the authorization URL; the test plays
/// the browser — it opens the URL at the stack's issuer (with `mansign_test_fault=FAULT`,
/// the issuer's test hook, when given), which signs in automatically and redirects to
/// mansign's local listener.
fn browser_sign_in(stack: &Stack, fault: Option<&str>, extra: &[&str]) -> BrowserRun {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("browser"));
    let output = dir.path().join("out.yaml");
    let mut child = sign_process(stack)
        .args(["--oidc-issuer", stack.issuer(), "--no-browser", "-v"])
        .args(extra)
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            if line.starts_with("http") {
                let _ = tx.send(line);
            }
        }
        all
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("mansign printed the authorization URL");
    let visit = match fault {
        Some(f) => format!("{url}&mansign_test_fault={f}"),
        None => url.clone(),
    };
    let (status, location, _) = http_full("GET", &visit, None);
    assert_eq!(status, 302, "the mock issuer approves and redirects");
    let location = location.expect("redirect to the local listener");
    assert!(location.starts_with("http://localhost:"), "{location}");
    let (callback_status, _, _) = http_full("GET", &location, None);
    let exit = child.wait().unwrap();
    let log = reader.join().unwrap();
    BrowserRun {
        exit,
        log,
        url,
        callback_status,
        output,
        _dir: dir,
    }
}

#[test]
fn browser_flow_with_no_browser_prints_the_url_and_completes_on_redirect() {
    let stack = Stack::start();
    let run = browser_sign_in(&stack, None, &[]);
    assert!(run.exit.success(), "{}", run.log);
    assert_eq!(run.callback_status, 200);
    let url = &run.url;
    assert!(
        url.starts_with(&format!("{}/authorize?", stack.issuer())),
        "{url}"
    );
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("nonce="), "{url}");
    assert!(url.contains("state="), "{url}");
    assert!(
        run.log
            .contains(&format!("browser sign-in at {}", stack.issuer())),
        "{}",
        run.log
    );
    assert_verifies(&stack, &run.output, stack.identity());
}

/// Asserts a refused sign-in: exit 2, the reason in the log, nothing sent to Fulcio,
/// nothing written.
fn assert_sign_in_refused(stack: &Stack, run: &BrowserRun, reason: &str) {
    assert_eq!(run.exit.code(), Some(2), "{}", run.log);
    assert!(run.log.contains(reason), "{}", run.log);
    assert!(!run.log.contains("panicked"), "{}", run.log);
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
    assert!(!run.output.exists(), "nothing written");
}

/// A redirect whose `state` is not the one mansign sent (CSRF, or a stale tab) is answered
/// 400 and does not end the wait; with no real redirect, the sign-in times out.
#[test]
fn browser_sign_in_with_a_wrong_state_is_refused() {
    let stack = Stack::start();
    stack.reset();
    let run = browser_sign_in(&stack, Some("wrong_state"), &["--sign-in-timeout", "3"]);
    assert_eq!(
        run.callback_status, 400,
        "the listener refuses the redirect"
    );
    assert_sign_in_refused(&stack, &run, "no sign-in within 3 s");
}

#[test]
fn browser_sign_in_with_a_wrong_nonce_is_refused() {
    let stack = Stack::start();
    stack.reset();
    let run = browser_sign_in(&stack, Some("wrong_nonce"), &[]);
    assert_eq!(run.callback_status, 200, "the code itself was accepted");
    assert_sign_in_refused(&stack, &run, "failed verification (Invalid nonce");
}

#[test]
fn browser_sign_in_with_an_id_token_signed_by_a_key_not_in_the_jwks_is_refused() {
    let stack = Stack::start();
    stack.reset();
    let run = browser_sign_in(&stack, Some("foreign_key"), &[]);
    assert_sign_in_refused(
        &stack,
        &run,
        "failed verification (Signature verification failed",
    );
}

#[test]
fn browser_sign_in_with_an_expired_id_token_is_refused() {
    let stack = Stack::start();
    stack.reset();
    let run = browser_sign_in(&stack, Some("expired"), &[]);
    assert_sign_in_refused(&stack, &run, "failed verification (Expired");
}

/// An issuer (a stub) that offers the device flow: discovery with the stack issuer's JWKS,
/// a device authorization, and a token endpoint answered by `token(poll number)`. The ID
/// tokens it hands out are minted by the stack with `iss` = the stub's URL, so they verify.
fn device_issuer(
    stack: &Stack,
    interval: u64,
    token: impl Fn(usize, &str) -> (u16, String) + Send + Sync + 'static,
) -> (StubServer, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let polls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let jwks = format!("{}/jwks", stack.issuer());
    let stub = {
        let polls = polls.clone();
        StubServer::start(move |req, base| match (req.method.as_str(), req.path()) {
            ("GET", "/.well-known/openid-configuration") => (
                200,
                serde_json::json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "device_authorization_endpoint": format!("{base}/device"),
                    "jwks_uri": jwks,
                    "response_types_supported": ["code"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                })
                .to_string(),
            ),
            ("POST", "/device") => (
                200,
                serde_json::json!({
                    "device_code": "device-code-123",
                    "user_code": "WDJB-MJHT",
                    "verification_uri": format!("{base}/activate"),
                    "expires_in": 60,
                    "interval": interval,
                })
                .to_string(),
            ),
            ("POST", "/token") => {
                if req.form("grant_type").as_deref()
                    != Some("urn:ietf:params:oauth:grant-type:device_code")
                    || req.form("device_code").as_deref() != Some("device-code-123")
                {
                    return (400, r#"{"error":"invalid_grant"}"#.to_string());
                }
                token(
                    polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
                    base,
                )
            }
            _ => (404, "{}".to_string()),
        })
    };
    (stub, polls)
}

fn token_answer(id_token: &str) -> (u16, String) {
    (
        200,
        serde_json::json!({"id_token": id_token, "access_token": "a", "token_type": "Bearer"})
            .to_string(),
    )
}

/// RFC 8628 device flow: no terminal, and the issuer lists a device endpoint. The first
/// poll gets `authorization_pending`, the second an ID token, which is verified (JWKS,
/// issuer, audience, expiry) before Fulcio sees it.
#[test]
fn device_flow_is_used_without_a_terminal_and_polls_until_approved() {
    let stack = Stack::start();
    let minted = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (issuer, polls) = {
        let minted = minted.clone();
        device_issuer(&stack, 1, move |poll, _| {
            if poll == 0 {
                (400, r#"{"error":"authorization_pending"}"#.to_string())
            } else {
                token_answer(&minted.lock().unwrap())
            }
        })
    };
    *minted.lock().unwrap() = stack.mint_token(&[&format!("iss={}", issuer.url)]);
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("device"));
    let output = dir.path().join("out.yaml");
    sign_cmd(&stack)
        .args(["--oidc-issuer", &issuer.url, "-v", "-f"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .write_stdin("")
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .stderr(predicate::str::contains("enter the code WDJB-MJHT"))
        .stderr(predicate::str::contains(format!(
            "identity token from device sign-in at {}",
            issuer.url
        )));
    assert_eq!(polls.load(std::sync::atomic::Ordering::SeqCst), 2);
    let device = issuer
        .requests()
        .into_iter()
        .find(|r| r.path() == "/device")
        .expect("device authorization request");
    assert_eq!(device.form("client_id").as_deref(), Some("sigstore"));
    common::mansign()
        .args(["verify", "-f"])
        .arg(&output)
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .args(["--certificate-identity", stack.identity()])
        .args(["--certificate-oidc-issuer", &issuer.url])
        .assert()
        .success();
}

/// The device flow's ID token is verified too: one issued by another issuer (here the
/// stack's own token, `iss` = the stack) is refused and nothing is signed.
#[test]
fn device_flow_refuses_an_id_token_from_another_issuer() {
    let stack = Stack::start();
    let foreign = stack.id_token();
    let (issuer, _) = device_issuer(&stack, 1, move |_, _| token_answer(&foreign));
    stack.reset();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("device"));
    sign_cmd(&stack)
        .args(["--oidc-issuer", &issuer.url, "-f"])
        .arg(&input)
        .write_stdin("")
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "failed verification (Invalid issuer",
        ));
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
    assert!(!dir.path().join("cm.yaml.signed").exists());
}

/// The issuer's device answer is input too: an absurd polling interval ends the sign-in
/// with an error, not a panic or an endless sleep (exit 2, nothing written).
#[test]
fn device_flow_with_an_absurd_polling_interval_fails_cleanly() {
    let stack = Stack::start();
    let (issuer, polls) = device_issuer(&stack, u64::MAX, |_, _| {
        (400, r#"{"error":"slow_down"}"#.to_string())
    });
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("device"));
    bare_sign_cmd()
        .args(["--oidc-issuer", &issuer.url, "-f"])
        .arg(&input)
        .write_stdin("")
        .timeout(Duration::from_secs(30))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("panicked").not())
        .stderr(predicate::str::contains(format!(
            "asks to poll every {} s, longer than the 300 s sign-in timeout",
            u64::MAX
        )));
    assert_eq!(polls.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(!dir.path().join("cm.yaml.signed").exists());
}

#[test]
fn without_any_token_source_or_terminal_it_says_what_to_do() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("none"));
    sign_cmd(&stack)
        .args(["--oidc-issuer", stack.issuer(), "-f"])
        .arg(&input)
        .write_stdin("")
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "no --identity-token, SIGSTORE_ID_TOKEN or CI credentials found",
        ))
        .stderr(predicate::str::contains("offers no device flow"))
        .stderr(predicate::str::contains("--no-browser"));
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
    assert!(!dir.path().join("cm.yaml.signed").exists());
}

// ---------------------------------------------------------------------------------------
// Faults: clear error, non-zero exit, no output, input kept (even with --remove-input).

/// Runs `cmd` (a keyless sign) with `--remove-input`; it must fail. Returns its stderr.
fn assert_fails_cleanly(mut cmd: assert_cmd::Command, token: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("fault"));
    let output = dir.path().join("out.yaml");
    let bundles = dir.path().join("bundles");
    let assert = cmd
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--bundle-out")
        .arg(&bundles)
        .arg("--remove-input")
        .arg("--identity-token")
        .arg(token)
        .timeout(Duration::from_secs(120))
        .assert()
        .failure();
    assert!(!output.exists(), "no output file on error");
    assert!(!bundles.exists(), "no bundle on error");
    assert!(input.is_file(), "input kept on error");
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(!stderr.contains(token), "the token is never printed");
    let leftovers: Vec<_> = list_files(dir.path());
    assert_eq!(leftovers, vec![input], "no temporary files left");
    stderr
}

#[test]
fn unreachable_fulcio_fails_after_retries_without_output() {
    let stack = Stack::start();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{closed}");
    // The Fulcio URL through its environment variable (the flag's default source).
    let mut cmd = bare_sign_cmd();
    cmd.env("SIGSTORE_FULCIO_URL", &url)
        .args(["--rekor-url", stack.rekor_url()]);
    let stderr = assert_fails_cleanly(cmd, &stack.id_token());
    assert!(
        stderr.contains(&format!(
            "Fulcio at {url} is unreachable after 3 attempt(s)"
        )),
        "{stderr}"
    );
    assert_eq!(stack.stat("rekor_requests"), 0);
}

#[test]
fn fulcio_server_error_is_retried_and_still_one_certificate_is_issued() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(serde_json::json!({"service": "fulcio", "statuses": [503]}));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("fulcio-retry"));
    sign_cmd(&stack)
        .arg("-f")
        .arg(&input)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 2);
    assert_eq!(stack.stat("fulcio_certificates_issued"), 1);
    assert_verifies(&stack, &dir.path().join("cm.yaml.signed"), stack.identity());
}

#[test]
fn fulcio_client_error_is_not_retried() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(serde_json::json!({"service": "fulcio", "statuses": [400]}));
    let stderr = assert_fails_cleanly(sign_cmd(&stack), &stack.id_token());
    assert!(
        stderr.contains("refused the certificate request after 1 attempt(s): HTTP 400"),
        "{stderr}"
    );
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 1);
    assert_eq!(stack.stat("rekor_requests"), 0);
}

#[test]
fn rekor_server_errors_are_retried_three_times_then_fail() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(serde_json::json!({"service": "rekor", "statuses": [500, 500, 500]}));
    let stderr = assert_fails_cleanly(sign_cmd(&stack), &stack.id_token());
    assert!(stderr.contains("HTTP 500 after 3 attempt(s)"), "{stderr}");
    assert_eq!(stack.stat("rekor_requests"), 3);
    assert_eq!(stack.stat("rekor_entries_created"), 0);
}

#[test]
fn rekor_server_errors_are_retried_until_the_entry_is_created() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(serde_json::json!({"service": "rekor", "statuses": [503, 500]}));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("retry"));
    sign_cmd(&stack)
        .arg("-f")
        .arg(&input)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert_eq!(stack.stat("rekor_requests"), 3);
    assert_eq!(stack.stat("rekor_entries_created"), 1);
    assert_verifies(&stack, &dir.path().join("cm.yaml.signed"), stack.identity());
}

#[test]
fn a_rekor_request_that_times_out_is_retried() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(serde_json::json!({"service": "rekor", "delay_ms": 4000, "count": 1}));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("slow"));
    sign_cmd(&stack)
        .args(["--timeout", "1", "-f"])
        .arg(&input)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert_eq!(
        stack.stat("rekor_requests"),
        2,
        "the slow request, then the retry"
    );
    assert_verifies(&stack, &dir.path().join("cm.yaml.signed"), stack.identity());
}

/// The arrival times of the matching requests of one service, from the stack's counters.
fn request_times_ms(stack: &Stack, service: &str) -> Vec<u64> {
    stack.stats()["request_times_ms"][service]
        .as_array()
        .expect("request_times_ms")
        .iter()
        .map(|t| t.as_u64().expect("a time"))
        .collect()
}

/// Public-good Rekor answers 429 under load: the upload is retried, and not before the
/// `Retry-After` the log asked for (measured by the log itself: a lower bound, which a
/// slow machine can only make longer).
#[test]
fn rekor_too_many_requests_is_retried_after_the_retry_after_delay() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(
        serde_json::json!({"service": "rekor", "statuses": [429], "retry_after": "2"}),
    );
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("rate-limited"));
    sign_cmd(&stack)
        .arg("-f")
        .arg(&input)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert_eq!(stack.stat("rekor_requests"), 2);
    assert_eq!(stack.stat("rekor_entries_created"), 1);
    let times = request_times_ms(&stack, "rekor");
    assert!(
        times[1] - times[0] >= 2000,
        "retried {} ms after a 429 with Retry-After: 2",
        times[1] - times[0]
    );
    assert_verifies(&stack, &dir.path().join("cm.yaml.signed"), stack.identity());
}

/// `Retry-After` as an HTTP-date (RFC 9110 §10.2.3), on Fulcio.
#[test]
fn fulcio_too_many_requests_with_an_http_date_is_retried_after_that_date() {
    let stack = Stack::start();
    stack.reset();
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3);
    let date = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&at)
        .unwrap();
    stack.inject_faults(serde_json::json!({
        "service": "fulcio", "statuses": [429], "retry_after": date,
    }));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("rate-limited-date"));
    sign_cmd(&stack)
        .arg("-f")
        .arg(&input)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 2);
    assert_eq!(stack.stat("fulcio_certificates_issued"), 1);
    let times = request_times_ms(&stack, "fulcio");
    // The date has whole seconds: asked for 3 s from `now`, at least 2 s remained.
    assert!(
        times[1] - times[0] >= 2000,
        "retried {} ms after a 429 with Retry-After: {date}",
        times[1] - times[0]
    );
}

/// A server that asks for a wait longer than mansign's cap (60 s) ends the retries at
/// once: the run fails with the delay named, after one request, without sleeping.
#[test]
fn a_retry_after_beyond_the_cap_ends_the_retries_at_once() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(
        serde_json::json!({"service": "rekor", "statuses": [429], "retry_after": "3600"}),
    );
    let stderr = assert_fails_cleanly(sign_cmd(&stack), &stack.id_token());
    assert!(
        stderr.contains("HTTP 429 after 1 attempt(s) (the server asked to retry after 3600 s; mansign waits at most 60 s)"),
        "{stderr}"
    );
    assert_eq!(stack.stat("rekor_requests"), 1);
}

/// The GitHub Actions token endpoint is retried on 429 too, honouring `Retry-After`.
#[test]
fn github_actions_token_request_is_retried_after_too_many_requests() {
    let stack = Stack::start();
    let token = stack.id_token();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let github = {
        let calls = calls.clone();
        StubServer::start_with_headers(move |_, _| {
            if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                stub_server::Reply {
                    status: 429,
                    headers: vec![("Retry-After".into(), "1".into())],
                    body: "{}".into(),
                }
            } else {
                stub_server::Reply {
                    status: 200,
                    headers: Vec::new(),
                    body: serde_json::json!({"value": token}).to_string(),
                }
            }
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("gh-429"));
    sign_cmd(&stack)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/t?api-version=2.0", github.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "x")
        .arg("-f")
        .arg(&input)
        .assert()
        .success();
    let requests = github.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let waited = requests[1].received - requests[0].received;
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
}

#[test]
fn github_actions_token_client_error_is_not_retried() {
    let github = StubServer::start(|_, _| (403, r#"{"message":"forbidden"}"#.to_string()));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("gh-403"));
    bare_sign_cmd()
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/t?api-version=2.0", github.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "x")
        .arg("-f")
        .arg(&input)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "GitHub Actions token request failed after 1 attempt(s): HTTP 403",
        ));
    assert_eq!(github.requests().len(), 1);
    assert!(!dir.path().join("cm.yaml.signed").exists());
}

#[test]
fn rekor_client_error_is_not_retried() {
    let stack = Stack::start();
    stack.reset();
    stack.inject_faults(serde_json::json!({"service": "rekor", "statuses": [400]}));
    let stderr = assert_fails_cleanly(sign_cmd(&stack), &stack.id_token());
    assert!(stderr.contains("HTTP 400 after 1 attempt(s)"), "{stderr}");
    assert_eq!(stack.stat("rekor_requests"), 1);
}

#[test]
fn expired_token_is_refused_before_contacting_fulcio() {
    let stack = Stack::start();
    let expired = stack.mint_token(&["--ttl", "-60"]);
    stack.reset();
    let stderr = assert_fails_cleanly(sign_cmd(&stack), &expired);
    assert!(stderr.contains("expired at"), "{stderr}");
    assert!(stderr.contains("nothing was sent to Fulcio"), "{stderr}");
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
}

#[test]
fn token_for_another_audience_is_refused_before_contacting_fulcio() {
    let stack = Stack::start();
    let wrong = stack.mint_token(&["aud=not-sigstore"]);
    stack.reset();
    let stderr = assert_fails_cleanly(sign_cmd(&stack), &wrong);
    assert!(
        stderr.contains(r#"is for audience "not-sigstore", not "sigstore""#),
        "{stderr}"
    );
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
}

#[test]
fn remove_input_deletes_the_inputs_only_after_the_outputs_exist() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "in/a.yaml", &config_map("a"));
    let b = write(dir.path(), "in/b.yaml", &config_map("b"));
    let out = dir.path().join("out");
    sign_cmd(&stack)
        .arg("-f")
        .arg(dir.path().join("in"))
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .arg("--remove-input")
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert!(!a.exists() && !b.exists(), "inputs removed");
    assert!(out.join("a.yaml").is_file() && out.join("b.yaml").is_file());
    assert_verifies(&stack, &out, stack.identity());
}

#[test]
fn keyless_refuses_to_sign_without_the_transparency_log() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("notlog"));
    common::mansign()
        .args([
            "sign",
            "--tlog-upload=false",
            "--identity-token",
            "x.y.z",
            "-f",
        ])
        .arg(&input)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "keyless signing needs the transparency log",
        ));
    assert!(!dir.path().join("cm.yaml.signed").exists());
}

/// A syntactically valid, unsigned JWT (mansign only reads its claims; Fulcio would
/// check the signature).
fn unsigned_jwt(claims: serde_json::Value) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.c2ln",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

#[test]
fn the_token_is_never_sent_to_a_remote_plain_http_fulcio() {
    let token = unsigned_jwt(serde_json::json!({
        "iss": "https://issuer.example", "sub": "me", "aud": "sigstore", "exp": 4_000_000_000u64
    }));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("http"));
    bare_sign_cmd()
        .args([
            "--fulcio-url",
            "http://fulcio.invalid",
            "--rekor-url",
            "http://rekor.invalid",
        ])
        .arg("--identity-token")
        .arg(&token)
        .arg("-f")
        .arg(&input)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "refusing to send the identity token to http://fulcio.invalid",
        ))
        .stderr(predicate::str::contains(&token).not());
    assert!(!dir.path().join("cm.yaml.signed").exists());
}

/// Bundle files are named after the output file name, so two inputs with the same name
/// in different directories would get the same bundle path: one bundle would silently
/// replace the other. That is refused before any certificate is requested.
#[test]
fn bundle_out_refuses_two_signatures_for_the_same_bundle_file() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "in/team-a/exception.yaml", &config_map("a"));
    let b = write(dir.path(), "in/team-b/exception.yaml", &config_map("b"));
    let out = dir.path().join("out");
    let bundles = dir.path().join("bundles");
    stack.reset();
    sign_cmd(&stack)
        .arg("-f")
        .arg(dir.path().join("in"))
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .arg("--bundle-out")
        .arg(&bundles)
        .arg("--remove-input")
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--bundle-out"))
        .stderr(predicate::str::contains("exception.yaml.1.sigstore.json"));
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
    assert!(!out.exists() && !bundles.exists(), "nothing written");
    assert!(a.is_file() && b.is_file(), "inputs kept");
}

// ---------------------------------------------------------------------------------------
// Key-based signing with --tlog-upload.

#[test]
fn key_signing_with_tlog_upload_logs_the_public_key_and_writes_a_bundle() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let (key, _pub) = common::key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "cm.yaml", &config_map("keyed"));
    let output = dir.path().join("out.yaml");
    stack.reset();
    sign_cmd(&stack)
        .arg("-k")
        .arg(&key)
        .arg("--tlog-upload")
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("-v")
        .assert()
        .success()
        .stderr(predicate::str::contains("verified 1 new signature(s)"));
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
    assert_eq!(stack.stat("rekor_entries_created"), 1);
    let signed = signed_documents(&output);
    let set = &signed[0].sets[0];
    assert!(
        set.certificate_pem.is_none(),
        "no certificate for a key signature"
    );
    let bundle = set.bundle.as_ref().expect("bundle annotation");
    let body: serde_json::Value =
        serde_json::from_slice(&STANDARD.decode(&bundle.payload.body).unwrap()).unwrap();
    let logged = STANDARD
        .decode(
            body["spec"]["signature"]["publicKey"]["content"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    assert!(
        String::from_utf8(logged)
            .unwrap()
            .starts_with("-----BEGIN PUBLIC KEY-----")
    );
}

#[test]
fn key_signing_does_not_upload_by_default() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let (key, _pub) = common::key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "cm.yaml", &config_map("keyed"));
    stack.reset();
    sign_cmd(&stack)
        .arg("-k")
        .arg(&key)
        .arg("-f")
        .arg(&input)
        .assert()
        .success();
    assert_eq!(stack.stat("rekor_requests"), 0);
    let signed = signed_documents(&dir.path().join("cm.yaml.signed"));
    assert!(signed[0].sets[0].bundle.is_none());
}

// ---------------------------------------------------------------------------------------
// Signing as a library: each call returns what it produced.

/// A keyless signer of the stack's identity, as a Rust caller builds one.
fn library_signer(stack: &Stack) -> mansign::signing::KeylessSigner {
    use mansign::signing::token::{AcquiredToken, TokenSource};
    use mansign::signing::{KeylessOptions, KeylessSigner, RekorOptions};
    let token = AcquiredToken::new(
        &stack.id_token(),
        TokenSource::Argument,
        "sigstore",
        jiff::Timestamp::now(),
    )
    .unwrap();
    KeylessSigner::new(
        token,
        KeylessOptions::default()
            .with_fulcio_url(stack.fulcio_url().to_string())
            .with_rekor(RekorOptions::default().with_url(stack.rekor_url().to_string())),
    )
}

/// Holds that `batch` signed exactly `messages`: one signature each, whose log entry is the
/// set's Rekor bundle and whose Sigstore bundle verifies over that message as `signer`.
fn assert_batch_of(
    stack: &Stack,
    batch: &mansign::signing::SignedBatch,
    messages: &[Vec<u8>],
    signer: &mansign::conformance::ExpectedSigner,
) {
    use mansign::conformance::{BundleArtifact, BundleVerifier, SigstoreBundle};
    let trust = mansign::trust::TrustRoot::from_file(stack.trusted_root()).unwrap();
    assert_eq!(batch.signatures.len(), messages.len());
    for (signed, message) in batch.signatures.iter().zip(messages) {
        let entry = signed
            .log_entry
            .as_ref()
            .expect("a log entry per signature");
        let annotated = signed.set.bundle.as_ref().expect("the set's Rekor bundle");
        assert_eq!(entry.log_index, annotated.payload.log_index);
        let bundle = SigstoreBundle::from_json(&entry.bundle_json).unwrap();
        BundleVerifier::new(&trust)
            .verify(&bundle, BundleArtifact::Bytes(message), signer)
            .unwrap_or_else(|e| panic!("the bundle of {message:?}: {e}"));
    }
}

#[test]
fn a_keyless_batch_returns_its_certificate_and_log_entries_to_the_caller() {
    use mansign::conformance::ExpectedSigner;
    use mansign::signing::Signer as _;
    let stack = Stack::start();
    let signer = library_signer(&stack);
    stack.reset();
    let first_messages = vec![b"first: 1\n".to_vec(), b"first: 2\n".to_vec()];
    let second_messages = vec![b"second: 1\n".to_vec()];

    let first = signer.sign_messages(&first_messages).unwrap();
    let second = signer.sign_messages(&second_messages).unwrap();

    // The certificate comes with each call, the same one while it lasts.
    let certificate = first.certificate.clone().expect("the batch's certificate");
    assert_eq!(certificate.identity.as_deref(), Some(stack.identity()));
    assert_eq!(certificate.issuer.as_deref(), Some(stack.issuer()));
    assert_eq!(second.certificate.as_ref(), Some(&certificate));
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 1);
    for signed in first.signatures.iter().chain(&second.signatures) {
        assert_eq!(
            signed.set.certificate_pem.as_deref(),
            Some(certificate.pem.as_str())
        );
    }
    // Each call's entries are its own messages', not the other batch's.
    let identity = ExpectedSigner::identity(stack.identity(), stack.issuer());
    assert_batch_of(&stack, &first, &first_messages, &identity);
    assert_batch_of(&stack, &second, &second_messages, &identity);
    let indexes: std::collections::BTreeSet<i64> = first
        .log_entries()
        .chain(second.log_entries())
        .map(|e| e.log_index)
        .collect();
    assert_eq!(indexes.len(), 3, "three entries: {indexes:?}");
    assert_eq!(stack.stat("rekor_entries_created"), 3);
    // An empty batch asks nothing and returns nothing.
    let empty = signer.sign_messages(&[]).unwrap();
    assert_eq!(empty, mansign::signing::SignedBatch::default());
}

#[test]
fn two_batches_signed_at_once_on_one_signer_each_get_their_own_results() {
    use mansign::conformance::ExpectedSigner;
    use mansign::signing::Signer as _;
    let stack = Stack::start();
    let signer = library_signer(&stack);
    let batches: Vec<Vec<Vec<u8>>> = (0..2)
        .map(|b| {
            (0..3)
                .map(|m| format!("batch: {b}\nm: {m}\n").into_bytes())
                .collect()
        })
        .collect();
    let results: Vec<_> = std::thread::scope(|scope| {
        let running: Vec<_> = batches
            .iter()
            .map(|messages| scope.spawn(|| signer.sign_messages(messages).unwrap()))
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let identity = ExpectedSigner::identity(stack.identity(), stack.issuer());
    for (batch, messages) in results.iter().zip(&batches) {
        assert!(batch.certificate.is_some());
        assert_batch_of(&stack, batch, messages, &identity);
    }
}

#[test]
fn a_key_batch_logged_in_rekor_returns_its_log_entries_to_the_caller() {
    use mansign::conformance::{BundleKey, ExpectedSigner};
    use mansign::signing::{KeySigner, RekorOptions, Signer as _, TlogUploadingSigner};
    let stack = Stack::start();
    let pair = mansign::keys::generate_key_pair(b"").unwrap();
    let key = mansign::keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let signer = TlogUploadingSigner::new(
        KeySigner::new(key),
        pair.public_key_pem.clone(),
        RekorOptions::default().with_url(stack.rekor_url().to_string()),
    );
    let first_messages = vec![b"first: 1\n".to_vec(), b"first: 2\n".to_vec()];
    let second_messages = vec![b"second: 1\n".to_vec()];

    let first = signer.sign_messages(&first_messages).unwrap();
    let second = signer.sign_messages(&second_messages).unwrap();

    assert_eq!(first.certificate, None, "a key signs without a certificate");
    assert_eq!(second.certificate, None);
    let key = ExpectedSigner::Key(BundleKey::from_pem("key", &pair.public_key_pem).unwrap());
    assert_batch_of(&stack, &first, &first_messages, &key);
    assert_batch_of(&stack, &second, &second_messages, &key);
}

// ---------------------------------------------------------------------------------------
// Interoperability: sigstore-python verifies the --bundle-out bundles.

/// `--bundle-out` writes, per signature, the bundle and the message it is over; any
/// Sigstore client verifies the pair without reading annotations. This runs the command
/// docs/cli.md shows, with the local stack's trust config and identity:
///
/// ```text
/// sigstore --trust-config $SIGSTORE_TRUST_CONFIG verify identity --offline \
///   --bundle app.signed.yaml.1.sigstore.json \
///   --cert-identity $SIGSTORE_IDENTITY --cert-oidc-issuer $SIGSTORE_OIDC_ISSUER \
///   app.signed.yaml.1.message
/// ```
#[test]
fn sigstore_python_verifies_the_bundle_out_bundles() {
    let stack = Stack::start();
    let sigstore = stack.sigstore_python();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "app.yaml", THREE_DOCS);
    let output = dir.path().join("app.signed.yaml");
    let bundles = dir.path().join("bundles");
    sign_cmd(&stack)
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--bundle-out")
        .arg(&bundles)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    let signed = signed_documents(&output);
    // Numbered from 1, as documents are.
    let mut expected: Vec<PathBuf> = (1..=3)
        .flat_map(|i| {
            [
                bundles.join(format!("app.signed.yaml.{i}.message")),
                bundles.join(format!("app.signed.yaml.{i}.sigstore.json")),
            ]
        })
        .collect();
    expected.sort();
    assert_eq!(list_files(&bundles), expected);
    let verify = |bundle: &Path, message: &Path| {
        std::process::Command::new(&sigstore)
            .arg("--trust-config")
            .arg(stack.trust_config())
            .args(["verify", "identity", "--offline", "--bundle"])
            .arg(bundle)
            .args(["--cert-identity", stack.identity()])
            .args(["--cert-oidc-issuer", stack.issuer()])
            .arg(message)
            .output()
            .unwrap()
    };
    for (i, doc) in (1..).zip(&signed) {
        let bundle = bundles.join(format!("app.signed.yaml.{i}.sigstore.json"));
        let message = bundles.join(format!("app.signed.yaml.{i}.message"));
        // The message file is exactly the M the annotations carry.
        assert_eq!(std::fs::read(&message).unwrap(), doc.message);
        let out = verify(&bundle, &message);
        assert!(
            out.status.success(),
            "sigstore-python rejected {}: {}",
            bundle.display(),
            common::all_output(&out)
        );
    }
    // And a tampered message is rejected (the check is real), as is another document's.
    let message = bundles.join("app.signed.yaml.1.message");
    std::fs::write(
        &message,
        [signed[0].message.as_slice(), b"# tampered\n"].concat(),
    )
    .unwrap();
    let out = verify(&bundles.join("app.signed.yaml.1.sigstore.json"), &message);
    assert!(
        !out.status.success(),
        "sigstore-python accepted a tampered message"
    );
    let out = verify(
        &bundles.join("app.signed.yaml.1.sigstore.json"),
        &bundles.join("app.signed.yaml.2.message"),
    );
    assert!(
        !out.status.success(),
        "sigstore-python accepted another document's message"
    );
}

/// With `--scope file` there is one signature per file: one bundle, one message (all
/// documents, kubectl-sigstore's shape), no document number.
#[test]
fn bundle_out_with_file_scope_writes_one_bundle_and_message_per_file() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "app.yaml", THREE_DOCS);
    let output = dir.path().join("app.signed.yaml");
    let bundles = dir.path().join("bundles");
    sign_cmd(&stack)
        .args(["--scope", "file", "-f"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--bundle-out")
        .arg(&bundles)
        .arg("--identity-token")
        .arg(stack.id_token())
        .assert()
        .success();
    assert_eq!(
        list_files(&bundles),
        vec![
            bundles.join("app.signed.yaml.message"),
            bundles.join("app.signed.yaml.sigstore.json"),
        ]
    );
    let signed = signed_documents(&output);
    assert_eq!(
        std::fs::read(bundles.join("app.signed.yaml.message")).unwrap(),
        signed[0].message
    );
}
