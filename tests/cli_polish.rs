//! Issue 15, what a new user trips over: one test per behaviour change, named after it.
//! Key-signed fixtures are made here with a fresh key; keyless ones on the loopback stack.

mod common;
#[path = "common/stack.rs"]
mod stack;

use common::{MULTI_DOC, key_pair, mansign, write};
use predicates::prelude::*;
use serde_json::{Value, json};
use stack::Stack;
use std::path::{Path, PathBuf};

/// MULTI_DOC signed with a fresh key: (dir, signed file, public key).
fn signed_fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    mansign()
        .args(["sign", "-f"])
        .arg(&input)
        .arg("--key")
        .arg(&key)
        .assert()
        .success();
    (dir, dir_join(&input, "x.yaml.signed"), pubkey)
}

fn dir_join(sibling: &Path, name: &str) -> PathBuf {
    sibling.parent().unwrap().join(name)
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    mansign::manifest::parse_documents(&text, &mansign::Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

/// What `kubectl get -o yaml` adds to an applied object.
fn as_live_object(mut doc: Value) -> Value {
    let meta = doc["metadata"].as_object_mut().unwrap();
    meta.insert("uid".into(), json!("6a1f1f4e-2c55-4a4e-9a49-6f0e1c3f7d21"));
    meta.insert("resourceVersion".into(), json!("48213"));
    meta.insert("creationTimestamp".into(), json!("2026-11-20T10:00:00Z"));
    meta.insert(
        "managedFields".into(),
        json!([{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1"}]),
    );
    doc
}

fn write_json_documents(path: &Path, docs: &[Value]) {
    let text: Vec<String> = docs.iter().map(mansign::manifest::to_yaml).collect();
    std::fs::write(path, text.join("---\n")).unwrap();
}

// ---- 4. the identity error names what counts ----

#[test]
fn identity_error_names_the_repository_claim_as_the_only_workflow_identity() {
    let (_dir, signed, _) = signed_fixture();
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .args([
            "--certificate-oidc-issuer",
            "https://token.actions.githubusercontent.com",
        ])
        .args(["--certificate-github-workflow-ref", "refs/heads/main"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--certificate-identity-regexp or --certificate-github-workflow-repository",
        ))
        .stderr(predicate::str::contains("a --certificate-github-workflow-* flag").not());
}

// ---- 5. Kyverno loader errors name the real path ----

#[test]
fn kyverno_selector_error_names_the_any_block_it_sits_in() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "policy.yaml",
        r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [ConfigMap]
      - resources:
          kinds: [Secret]
          selector:
            matchLabels: {app: x}
    validate:
      manifests:
        attestors:
        - entries:
          - keys:
              publicKeys: "-----BEGIN PUBLIC KEY-----"
"#,
    );
    let (_d, signed, _) = signed_fixture();
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--policy")
        .arg(&policy)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("match.any[1].resources.selector"))
        .stderr(predicate::str::contains("match.resources.selector").not());
}

// ---- 6. conformance help ----

#[test]
fn verify_bundle_help_names_no_missing_file_and_the_hidden_form_has_exit_codes() {
    for args in [
        &["conformance", "verify-bundle", "--help"][..],
        &["verify-bundle", "--help"][..],
        &["sign-bundle", "--help"][..],
    ] {
        let out = mansign().args(args).assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(
            text.contains("Exit codes: 0 success, 1 the bundle did not verify"),
            "{args:?}: {text}"
        );
        assert!(
            text.contains(
                "https://github.com/sigstore/sigstore-conformance/blob/main/docs/cli_protocol.md"
            ),
            "{args:?}: {text}"
        );
        assert!(!text.contains("(docs/cli_protocol.md)"), "{args:?}: {text}");
    }
    mansign()
        .args(["verify-bundle", "--help"])
        .assert()
        .stdout(predicate::str::contains("Verify a Sigstore bundle"));
}

// ---- 8. `-o json` on verify ----

#[test]
fn verify_accepts_dash_o_json_as_kubectl_does() {
    let (_dir, signed, pubkey) = signed_fixture();
    for flag in ["-o", "--output", "--format"] {
        let out = mansign()
            .args(["verify", "-f"])
            .arg(&signed)
            .arg("--key")
            .arg(&pubkey)
            .args([flag, "json"])
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["verified"], true, "{flag}");
        assert_eq!(v["documents"].as_array().unwrap().len(), 3, "{flag}");
    }
}

#[test]
fn help_of_sign_and_verify_says_what_dash_o_is() {
    mansign()
        .args(["verify", "--help"])
        .assert()
        .stdout(predicate::str::contains(
            "sign's `-o` is where the signed manifests",
        ));
    mansign()
        .args(["sign", "--help"])
        .assert()
        .stdout(predicate::str::contains(
            "verify's `-o` is its report format",
        ));
}

// ---- 9. a live object verified without a profile ----

#[test]
fn live_object_without_profile_fails_with_a_hint_to_use_the_kubernetes_profile() {
    let (dir, signed, pubkey) = signed_fixture();
    let live: Vec<Value> = documents(&signed).into_iter().map(as_live_object).collect();
    let path = dir.path().join("live.yaml");
    write_json_documents(&path, &live);
    mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "this looks like a live object (`kubectl get -o yaml`); try `--ignore-profile kubernetes`",
        ));
    mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .args(["--ignore-profile", "kubernetes"])
        .assert()
        .success();
}

#[test]
fn a_real_change_gets_no_live_object_hint() {
    let (dir, signed, pubkey) = signed_fixture();
    let mut live: Vec<Value> = documents(&signed).into_iter().map(as_live_object).collect();
    live[2]["data"]["a"] = json!("2");
    let path = dir.path().join("live.yaml");
    write_json_documents(&path, &live);
    mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("looks like a live object").not());
}

// ---- 10. several paths after -f, positional paths ----

#[test]
fn verify_takes_several_paths_after_one_dash_f_and_positional_paths() {
    let (dir, signed, pubkey) = signed_fixture();
    let second = dir.path().join("y.yaml");
    std::fs::copy(&signed, &second).unwrap();
    // As the shell expands an unquoted `-f signed/*.yaml`.
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg(&second)
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .success()
        .stdout(predicate::str::contains("6 of 6 document(s) verified"));
    let only = dir.path().join("signed");
    std::fs::create_dir(&only).unwrap();
    std::fs::copy(&signed, only.join("x.yaml")).unwrap();
    mansign()
        .arg("verify")
        .arg(&only)
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .success()
        .stdout(predicate::str::contains("3 of 3 document(s) verified"));
}

#[test]
fn verify_without_any_input_is_a_usage_error() {
    let (_dir, _signed, pubkey) = signed_fixture();
    mansign()
        .arg("verify")
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing to verify"));
}

#[test]
fn sign_takes_positional_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), "cosign");
    write(dir.path(), "in/a.yaml", MULTI_DOC);
    let out = dir.path().join("out");
    mansign()
        .arg("sign")
        .arg(dir.path().join("in"))
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .arg("--key")
        .arg(&key)
        .assert()
        .success();
    mansign()
        .arg("verify")
        .arg(out.join("a.yaml"))
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .success();
}

// ---- 14. no --insecure-* flag in a tip ----

#[test]
fn an_unknown_cosign_flag_is_never_answered_with_an_insecure_flag() {
    let (_dir, signed, _) = signed_fixture();
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--insecure-ignore-tlog")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unexpected argument '--insecure-ignore-tlog'",
        ))
        .stderr(predicate::str::contains("--insecure-any-identity").not());
    // Other tips are kept.
    mansign()
        .args(["verify", "--certificate-identiy", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--certificate-identity"));
}

// ---- 15. k8s:// key references ----

#[test]
fn a_kubernetes_secret_key_reference_is_explained() {
    let (_dir, signed, _) = signed_fixture();
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .args(["--key", "k8s://cosign-system/signing-key"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "k8s:// key references are not read by the mansign CLI",
        ))
        .stderr(predicate::str::contains("No such file").not());
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    mansign()
        .args(["sign", "-f"])
        .arg(&input)
        .args(["--key", "k8s://cosign-system/signing-key"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("k8s:// key references"));
}

// ---- 17 and 21. one field syntax; Kyverno spelling refused where it matches nothing ----

#[test]
fn ignore_field_tolerates_that_field_only() {
    let (dir, signed, pubkey) = signed_fixture();
    let mut docs = documents(&signed);
    docs[0]["metadata"]["labels"] = json!({"argocd.argoproj.io/instance": "team-a"});
    let path = dir.path().join("labelled.yaml");
    write_json_documents(&path, &docs);
    mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .args([
            "--ignore-field",
            r#"metadata.labels["argocd.argoproj.io/instance"]"#,
        ])
        .assert()
        .success();
    // Another change is still one.
    docs[2]["data"]["a"] = json!("2");
    write_json_documents(&path, &docs);
    mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .args([
            "--ignore-field",
            r#"metadata.labels["argocd.argoproj.io/instance"]"#,
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("data.a changed"));
}

#[test]
fn ignore_field_written_kyverno_style_is_refused_with_the_right_spelling() {
    let (_dir, signed, pubkey) = signed_fixture();
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--key")
        .arg(&pubkey)
        .args([
            "--ignore-field",
            "metadata.labels.argocd.argoproj.io/instance",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            r#"write `metadata.labels["argocd.argoproj.io/instance"]`"#,
        ));
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--key")
        .arg(&pubkey)
        .args(["--ignore-field", "spec.ports.0.port"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("write `spec.ports[0].port`"));
}

fn manifest_policy(dir: &Path, pubkey: &Path, field: &str) -> PathBuf {
    let pem = std::fs::read_to_string(pubkey).unwrap();
    let indented: String = pem.lines().map(|l| format!("          {l}\n")).collect();
    write(
        dir,
        "policy.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: p\n\
             spec:\n  match:\n    kinds: [ConfigMap, PolicyException]\n  ignoreFields:\n  - fields:\n    - '{field}'\n\
             \x20 attestors:\n  - entries:\n    - keys:\n        publicKeys: |\n{indented}"
        ),
    )
}

#[test]
fn manifest_policy_refuses_a_kyverno_style_ignore_path_naming_the_right_spelling() {
    let (dir, signed, pubkey) = signed_fixture();
    let policy = manifest_policy(
        dir.path(),
        &pubkey,
        "metadata.labels.argocd.argoproj.io/instance",
    );
    mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--policy")
        .arg(&policy)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("ignoreFields[0].fields[0]"))
        .stderr(predicate::str::contains(
            r#"write `metadata.labels["argocd.argoproj.io/instance"]`"#,
        ));
    // The mansign spelling loads and tolerates the label.
    let policy = manifest_policy(
        dir.path(),
        &pubkey,
        r#"metadata.labels["argocd.argoproj.io/instance"]"#,
    );
    let mut docs = documents(&signed);
    docs[0]["metadata"]["labels"] = json!({"argocd.argoproj.io/instance": "team-a"});
    let path = dir.path().join("labelled.yaml");
    write_json_documents(&path, &docs);
    let out = mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--policy")
        .arg(&policy)
        .args(["-o", "json"])
        .assert()
        .success();
    // 19: the same top-level key as without a policy.
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["documents"].as_array().unwrap().len(), 3);
    assert!(v.get("objects").is_none());
}

// ---- 18. trust show lists each member ----

#[test]
fn trust_show_lists_each_authority_and_log_with_ids_in_hex_and_base64() {
    mansign()
        .args(["trust", "show", "--trusted-root"])
        .arg(common::fixture("sigstore-trust-roots/production/trusted_root.json"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "transparency log https://rekor.sigstore.dev, log ID \
             c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d \
             (base64 wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=), valid from 2021-01-12T11:53:27Z",
        ))
        .stdout(predicate::str::contains(
            "certificate authority O=sigstore.dev, CN=sigstore (https://fulcio.sigstore.dev), \
             valid from 2021-03-07T03:20:29Z until 2022-12-31T23:59:59.999Z",
        ))
        .stdout(predicate::str::contains("CT log https://ctfe.sigstore.dev/2022, log ID dd3d306a"));
}

// ---- 19. consistency ----

#[test]
fn list_items_are_numbered_in_text_and_json() {
    let (dir, signed, pubkey) = signed_fixture();
    let items: Vec<Value> = documents(&signed).into_iter().map(as_live_object).collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
    let path = dir.path().join("list.json");
    std::fs::write(&path, serde_json::to_string_pretty(&list).unwrap()).unwrap();
    mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .args(["--ignore-profile", "kubernetes"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "document 1, List item 1 (items[0]): ConfigMap",
        ))
        .stdout(predicate::str::contains(
            "document 1, List item 3 (items[2]): ConfigMap",
        ));
    let out = mansign()
        .args(["verify", "-f"])
        .arg(&path)
        .arg("--key")
        .arg(&pubkey)
        .args(["--ignore-profile", "kubernetes", "-o", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let numbered: Vec<(Value, Value)> = v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["document"].clone(), d["item"].clone()))
        .collect();
    assert_eq!(
        numbered,
        vec![
            (json!(1), json!(1)),
            (json!(1), json!(2)),
            (json!(1), json!(3))
        ]
    );
    // A document that is not in a List has no `item`.
    let out = mansign()
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--key")
        .arg(&pubkey)
        .args(["-o", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(v["documents"][0].get("item").is_none());
}

#[test]
fn a_rekor_failure_names_the_file_and_document() {
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    // A closed loopback port: every upload fails at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    mansign()
        .args(["sign", "-f"])
        .arg(&input)
        .arg("--key")
        .arg(&key)
        .args(["--tlog-upload", "--rekor-url", &url, "--timeout", "1"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::is_match(
                r"x\.yaml: document [1-3]: transparency log entry for message [1-3]: ",
            )
            .unwrap(),
        );
}

// ---- 20. sign --format json ----

#[test]
fn sign_format_json_reports_files_documents_and_signer() {
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    let output = dir.path().join("x.signed.yaml");
    let out = mansign()
        .args(["sign", "-f"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--key")
        .arg(&key)
        .args(["--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["documents"], 3);
    assert_eq!(v["signatures"], 3);
    assert_eq!(v["files"][0]["source"], input.display().to_string());
    assert_eq!(v["files"][0]["output"], output.display().to_string());
    assert_eq!(v["files"][0]["documents"], 3);
    assert_eq!(v["signer"]["kind"], "key");
    assert_eq!(v["logIndexes"], json!([]));
    assert!(output.is_file());
}

#[test]
fn sign_format_json_refuses_manifests_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    mansign()
        .args(["sign", "-f"])
        .arg(&input)
        .args(["-o", "-"])
        .arg("--key")
        .arg(&key)
        .args(["--format", "json"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "--format json prints the report on stdout",
        ));
}

// ---- keyless: 7, 11, 12, 20 on the loopback stack ----

fn keyless_sign(stack: &Stack) -> assert_cmd::Command {
    let mut cmd = mansign();
    for v in stack::AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.arg("sign")
        .args([
            "--fulcio-url",
            stack.fulcio_url(),
            "--rekor-url",
            stack.rekor_url(),
        ])
        .arg("--trusted-root")
        .arg(stack.trusted_root());
    cmd
}

#[test]
fn keyless_signing_on_the_stack_reports_consistently() {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    let token_file = write(dir.path(), "token", &stack.id_token());

    // 11: --identity-token takes a file path, as cosign does. 7: with --scope file, the
    // verbose count is the summary's count.
    let out = keyless_sign(&stack)
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("file-scope.yaml"))
        .arg("--identity-token")
        .arg(&token_file)
        .args(["--scope", "file", "-v"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("verified 1 new signature(s), read back from 3 document(s)"),
        "{stderr}"
    );
    assert!(stderr.contains("with 1 signature(s)"), "{stderr}");
    assert!(!stderr.contains("verified 3 new signature(s)"), "{stderr}");

    // 20: the JSON report of a keyless run names the certificate and the log entries.
    let signed = dir.path().join("x.signed.yaml");
    let out = keyless_sign(&stack)
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&signed)
        .arg("--identity-token")
        .arg(format!("@{}", token_file.display()))
        .args(["--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["signer"]["kind"], "certificate");
    assert_eq!(v["signer"]["subject"], stack.identity());
    assert_eq!(v["signer"]["issuer"], stack.issuer());
    assert_eq!(v["logIndexes"].as_array().unwrap().len(), 3);

    // 12: the trust root from the environment, and the hint when the root does not know
    // the log.
    let verify = |env: Option<(&str, &Path)>| {
        let mut cmd = mansign();
        for v in [
            "MANSIGN_TRUSTED_ROOT",
            "SIGSTORE_TRUSTED_ROOT",
            "MANSIGN_TRUST_DIR",
        ] {
            cmd.env_remove(v);
        }
        // No cached root: the embedded public-good one is the default.
        cmd.env("XDG_CACHE_HOME", dir.path().join("no-cache"));
        if let Some((name, path)) = env {
            cmd.env(name, path);
        }
        cmd.args(["verify", "-f"])
            .arg(&signed)
            .args(["--certificate-identity", stack.identity()])
            .args(["--certificate-oidc-issuer", stack.issuer()]);
        cmd
    };
    for name in ["MANSIGN_TRUSTED_ROOT", "SIGSTORE_TRUSTED_ROOT"] {
        verify(Some((name, &stack.trusted_root())))
            .assert()
            .success()
            .stdout(predicate::str::contains("3 of 3 document(s) verified"));
    }
    verify(None)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("is not in the trust root"))
        .stdout(predicate::str::contains(
            "signed against another Sigstore instance? pass its trusted_root.json (--trusted-root)",
        ));
    // A variable naming a missing file is an input error, named.
    verify(Some((
        "SIGSTORE_TRUSTED_ROOT",
        &dir.path().join("missing.json"),
    )))
    .assert()
    .code(2)
    .stderr(predicate::str::contains("(from $SIGSTORE_TRUSTED_ROOT)"));
}
