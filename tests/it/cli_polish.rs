//! Issue 15, what a new user trips over: one test per behaviour change, named after it.
//! Key-signed fixtures are made here with a fresh key; keyless ones on the loopback stack.

use crate::common;
use crate::common::stack;

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
    common::sign_with_key(&input, &key);
    (dir, dir_join(&input, "x.yaml.signed"), pubkey)
}

/// `mansign verify -f SIGNED FLAGS...` of a [`signed_fixture`] must fail with exit 2, naming
/// each of `words`.
fn verify_signed_fails(flags: &[&str], words: &[&str]) -> assert_cmd::assert::Assert {
    let (_dir, signed, _) = signed_fixture();
    common::fails(
        mansign().args(["verify", "-f"]).arg(&signed).args(flags),
        2,
        words,
    )
}

/// `mansign verify -f PATH --policy POLICY`, not yet run.
fn verify_with_policy(path: &Path, policy: &Path) -> assert_cmd::Command {
    let mut cmd = mansign();
    cmd.args(["verify", "-f"])
        .arg(path)
        .arg("--policy")
        .arg(policy);
    cmd
}

fn dir_join(sibling: &Path, name: &str) -> PathBuf {
    sibling.parent().unwrap().join(name)
}

fn documents(path: &Path) -> Vec<Value> {
    common::read_documents(path)
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
    verify_signed_fails(
        &[
            "--certificate-oidc-issuer",
            "https://token.actions.githubusercontent.com",
            "--certificate-github-workflow-ref",
            "refs/heads/main",
        ],
        &["--certificate-identity-regexp or --certificate-github-workflow-repository"],
    )
    .stderr(predicate::str::contains("a --certificate-github-workflow-* flag").not());
}

// ---- 5. Kyverno loader errors name the real path ----

#[test]
fn kyverno_selector_error_names_the_any_block_it_sits_in() {
    let policy = common::fixture("cli-polish/kyverno-selector-in-any.yaml");
    let (_d, signed, _) = signed_fixture();
    verify_with_policy(&signed, &policy)
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
        let out = common::with_key("verify", &[], &signed, &pubkey)
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
    common::verify_with_key(&path, &pubkey)
        .code(1)
        .stderr(predicate::str::contains(
            "this looks like a live object (`kubectl get -o yaml`); try `--ignore-profile kubernetes`",
        ));
    common::with_key("verify", &[], &path, &pubkey)
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
    common::verify_with_key(&path, &pubkey)
        .code(1)
        .stderr(predicate::str::contains("looks like a live object").not());
}

// ---- 10. several paths after -f, positional paths ----

#[test]
fn verify_takes_several_paths_after_one_dash_f_and_positional_paths() {
    let (dir, signed, pubkey) = signed_fixture();
    let second = dir.path().join("y.yaml");
    std::fs::copy(&signed, &second).unwrap();
    // `cmd --key PUBKEY` verifies all of `n` documents.
    let verifies_all = |cmd: &mut assert_cmd::Command, n: usize| {
        cmd.arg("--key")
            .arg(&pubkey)
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "{n} of {n} document(s) verified"
            )));
    };
    // As the shell expands an unquoted `-f signed/*.yaml`.
    verifies_all(
        mansign().args(["verify", "-f"]).arg(&signed).arg(&second),
        6,
    );
    let only = dir.path().join("signed");
    std::fs::create_dir(&only).unwrap();
    std::fs::copy(&signed, only.join("x.yaml")).unwrap();
    verifies_all(mansign().arg("verify").arg(&only), 3);
}

#[test]
fn verify_without_any_input_is_a_usage_error() {
    let kd = common::key_dir("cosign");
    common::fails(
        mansign().arg("verify").arg("--key").arg(&kd.pubkey),
        2,
        &["nothing to verify"],
    );
}

#[test]
fn sign_takes_positional_paths() {
    let kd = common::key_dir("cosign");
    kd.write("in/a.yaml", MULTI_DOC);
    let out = kd.path().join("out");
    mansign()
        .arg("sign")
        .arg(kd.path().join("in"))
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .arg("--key")
        .arg(&kd.key)
        .assert()
        .success();
    mansign()
        .arg("verify")
        .arg(out.join("a.yaml"))
        .arg("--key")
        .arg(&kd.pubkey)
        .assert()
        .success();
}

// ---- 14. no --insecure-* flag in a tip ----

#[test]
fn an_unknown_cosign_flag_is_never_answered_with_an_insecure_flag() {
    verify_signed_fails(
        &["--insecure-ignore-tlog"],
        &["unexpected argument '--insecure-ignore-tlog'"],
    )
    .stderr(predicate::str::contains("--insecure-any-identity").not());
    // Other tips are kept.
    common::fails(
        mansign().args(["verify", "--certificate-identiy", "x"]),
        2,
        &["--certificate-identity"],
    );
}

// ---- 15. k8s:// key references ----

#[test]
fn a_kubernetes_secret_key_reference_is_explained() {
    verify_signed_fails(
        &["--key", "k8s://cosign-system/signing-key"],
        &[
            "k8s:// key references are not read by --key",
            "verify --policy FILE --kubeconfig",
        ],
    )
    .stderr(predicate::str::contains("No such file").not());
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    common::fails(
        mansign()
            .args(["sign", "-f"])
            .arg(&input)
            .args(["--key", "k8s://cosign-system/signing-key"]),
        2,
        &[
            "sign --key reads a cosign private key file",
            "cosign.key",
            "keylessly",
        ],
    )
    // signing advice, not the verifying one (issue 39, item 6)
    .stderr(predicate::str::contains("verify --policy").not())
    .stderr(predicate::str::contains("cosign.pub").not());
    common::fails(
        mansign()
            .args(["sign", "-f"])
            .arg(&input)
            .args(["--key", "awskms://alias/release"]),
        2,
        &[
            "awskms:// keys (KMS, hardware) cannot sign here",
            "generate-key-pair",
        ],
    )
    .stderr(predicate::str::contains("verify --policy").not());
}

// ---- 17 and 21. one field syntax; Kyverno spelling refused where it matches nothing ----

#[test]
fn ignore_field_tolerates_that_field_only() {
    let (dir, signed, pubkey) = signed_fixture();
    let mut docs = documents(&signed);
    docs[0]["metadata"]["labels"] = json!({"argocd.argoproj.io/instance": "team-a"});
    let path = dir.path().join("labelled.yaml");
    let ignore = [
        "--ignore-field",
        r#"metadata.labels["argocd.argoproj.io/instance"]"#,
    ];
    write_json_documents(&path, &docs);
    common::with_key("verify", &ignore, &path, &pubkey)
        .assert()
        .success();
    // Another change is still one.
    docs[2]["data"]["a"] = json!("2");
    write_json_documents(&path, &docs);
    common::with_key("verify", &ignore, &path, &pubkey)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("data.a changed"));
}

#[test]
fn ignore_field_written_kyverno_style_is_refused_with_the_right_spelling() {
    let (_dir, signed, pubkey) = signed_fixture();
    common::fails(
        common::with_key("verify", &[], &signed, &pubkey).args([
            "--ignore-field",
            "metadata.labels.argocd.argoproj.io/instance",
        ]),
        2,
        &[r#"write `metadata.labels["argocd.argoproj.io/instance"]`"#],
    );
    common::fails(
        common::with_key("verify", &[], &signed, &pubkey)
            .args(["--ignore-field", "spec.ports.0.port"]),
        2,
        &["write `spec.ports[0].port`"],
    );
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
    verify_with_policy(&signed, &policy)
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
    let out = verify_with_policy(&path, &policy)
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
    common::with_key("verify", &[], &path, &pubkey)
        .args(["--ignore-profile", "kubernetes"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "document 1, List item 1 (items[0]): ConfigMap",
        ))
        .stdout(predicate::str::contains(
            "document 1, List item 3 (items[2]): ConfigMap",
        ));
    let out = common::with_key("verify", &[], &path, &pubkey)
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
    let out = common::with_key("verify", &[], &signed, &pubkey)
        .args(["-o", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(v["documents"][0].get("item").is_none());
}

#[test]
fn a_rekor_failure_names_the_file_and_document() {
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    // A closed loopback port: every upload fails at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    common::with_key("sign", &[], &input, &kd.key)
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
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    let output = kd.path().join("x.signed.yaml");
    let out = common::with_key("sign", &["--format", "json"], &input, &kd.key)
        .arg("-o")
        .arg(&output)
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
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    mansign()
        .args(["sign", "-f"])
        .arg(&input)
        .args(["-o", "-"])
        .arg("--key")
        .arg(&kd.key)
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
    stack.keyless_sign(mansign())
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

// ======== Issue 27: what a new user trips over, round 2 ========

/// A ManifestPolicy for ConfigMaps signed keylessly by `subject` of `issuer`.
fn keyless_policy(dir: &Path, subject: &str, issuer: &str) -> PathBuf {
    write(
        dir,
        "keyless-policy.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: p\n\
             spec:\n  match:\n    kinds: [ConfigMap]\n  attestors:\n  - entries:\n    - keyless:\n\
             \x20       issuer: {issuer}\n        subject: {subject}\n"
        ),
    )
}

/// A CREATE AdmissionReview of `object` (a ConfigMap).
fn configmap_review(dir: &Path, object: &Value) -> PathBuf {
    let gvk = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
    let gvr = json!({"group": "", "version": "v1", "resource": "configmaps"});
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "27", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "namespace": object["metadata"]["namespace"], "name": object["metadata"]["name"],
            "operation": "CREATE", "userInfo": {"username": "ci"},
            "object": object, "oldObject": null, "dryRun": false,
        },
    });
    write(dir, "review.json", &review.to_string())
}

/// `mansign` with no trust root from the environment and no cached root, then `vars`.
fn mansign_with_trust_env(dir: &Path, vars: &[(&str, &Path)]) -> assert_cmd::Command {
    let mut cmd = mansign();
    cmd.env_remove("MANSIGN_TRUST_DIR");
    cmd.env("XDG_CACHE_HOME", dir.join("no-cache"));
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd
}

/// MULTI_DOC signed keylessly on the loopback stack with its ID token, in a new temporary
/// directory: `(dir, signed file)`.
fn multi_doc_signed_keylessly(stack: &Stack) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    let token = write(dir.path(), "token", &stack.id_token());
    let signed = dir.path().join("x.signed.yaml");
    keyless_sign(stack)
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&signed)
        .arg("--identity-token")
        .arg(&token)
        .assert()
        .success();
    (dir, signed)
}

// ---- 1. one trust root everywhere ----

#[test]
fn verify_policy_admission_review_and_explain_use_the_trust_root_of_the_environment() {
    let stack = Stack::start();
    let (dir, signed) = multi_doc_signed_keylessly(&stack);
    let configmap = documents(&signed).remove(0);
    assert_eq!(configmap["kind"], "ConfigMap");
    let object = write(
        dir.path(),
        "configmap.yaml",
        &mansign::manifest::to_yaml(&configmap),
    );
    let review = configmap_review(dir.path(), &configmap);
    let policy = keyless_policy(dir.path(), stack.identity(), stack.issuer());
    let root = stack.trusted_root();

    for var in ["MANSIGN_TRUSTED_ROOT", "SIGSTORE_TRUSTED_ROOT"] {
        let env = [(var, root.as_path())];
        mansign_with_trust_env(dir.path(), &env)
            .args(["verify", "--policy"])
            .arg(&policy)
            .arg(&object)
            .assert()
            .success()
            .stdout(predicate::str::contains("1 of 1 document(s) verified"));
        let out = common::admission_review_run(
            mansign_with_trust_env(dir.path(), &env),
            &policy,
            &review,
        );
        let response: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (out.status.code(), &response["response"]["allowed"]),
            (Some(0), &json!(true)),
            "{var}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        mansign_with_trust_env(dir.path(), &env)
            .args(["policy", "explain"])
            .arg(&policy)
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "trust root {}",
                root.display()
            )));
    }
    // Without it, both deny (the embedded root does not know the local log): they still agree.
    mansign_with_trust_env(dir.path(), &[])
        .args(["verify", "--policy"])
        .arg(&policy)
        .arg(&object)
        .assert()
        .code(1);
    mansign_with_trust_env(dir.path(), &[])
        .args(["admission", "review", "--policy"])
        .arg(&policy)
        .arg("-f")
        .arg(&review)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("unknown-log"));
}

#[test]
fn trusted_root_help_names_the_environment_variables_on_every_command() {
    for args in [
        &["sign", "--help"][..],
        &["verify", "--help"][..],
        &["admission", "review", "--help"][..],
        &["admission", "serve", "--help"][..],
        &["policy", "explain", "--help"][..],
        &["policy", "test", "--help"][..],
        &["trust", "show", "--help"][..],
    ] {
        let out = mansign().args(args).assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).replace('\n', " ");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("$MANSIGN_TRUSTED_ROOT")
                && text.contains("$SIGSTORE_TRUSTED_ROOT")
                && text.contains("cached by `mansign trust update`"),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn trust_show_says_which_variable_named_the_root() {
    let stack_root = fixture_trusted_root();
    let dir = tempfile::tempdir().unwrap();
    mansign_with_trust_env(dir.path(), &[("SIGSTORE_TRUSTED_ROOT", &stack_root)])
        .args(["trust", "show"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(from $SIGSTORE_TRUSTED_ROOT)"));
}

fn fixture_trusted_root() -> PathBuf {
    common::fixture("kyverno/trust-root/sigstore-public-trusted_root.json")
}

// ---- 3. `-o` is one thing per command ----

#[test]
fn an_output_path_that_is_a_report_format_is_refused_with_a_pointer_to_format() {
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    for format in ["json", "text", "yaml"] {
        common::fails(
            common::with_key("sign", &["-o", format], &input, &kd.key).current_dir(kd.path()),
            2,
            &["--format json", &format!("./{format}")],
        );
        assert!(!kd.path().join(format).exists(), "{format} was written");
    }
    // `./json` is a file of that name.
    common::with_key("sign", &["-o", "./json"], &input, &kd.key)
        .current_dir(kd.path())
        .assert()
        .success();
    assert!(kd.path().join("json").is_file());
    common::fails(
        mansign()
            .current_dir(kd.path())
            .args(["policy", "convert", "p.yaml", "-o", "yaml"]),
        2,
        &["always YAML"],
    );
}

#[test]
fn every_report_takes_dash_o_json() {
    let (dir, signed, pubkey) = signed_fixture();
    let policy = manifest_policy(dir.path(), &pubkey, "data.mode");
    for flag in ["-o", "--output", "--format"] {
        let out = mansign()
            .args(["policy", "explain"])
            .arg(&policy)
            .args([flag, "json"])
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["rules"].as_array().unwrap().len(), 1, "{flag}");
        let out = mansign().args(["version", flag, "json"]).assert().success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{flag}");
    }
    let _ = signed;
    // The old spelling still works.
    let out = mansign().args(["version", "--json"]).assert().success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["name"], "mansign");
    // explain's help describes a report, not "one line per document".
    let out = mansign()
        .args(["policy", "explain", "--help"])
        .assert()
        .success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!help.contains("One line per document"), "{help}");
}

#[test]
fn the_cli_reference_has_one_output_flag_table_listing_every_report_command() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md")).unwrap();
    let table = text
        .split("### Output flags")
        .nth(1)
        .expect("docs/cli.md: an `Output flags` section");
    let table = table.split("\n### ").next().unwrap();
    for command in [
        "`sign`",
        "`verify`, `verify-resource`",
        "`policy explain`",
        "`policy convert`",
        "`policy test`",
        "`version`",
        "`trust show`",
        "`admission review`",
        "`completion SHELL`",
    ] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("| {command} |"))),
            "no row for {command}"
        );
    }
}

// ---- 5. a regex given as an exact identity ----

#[test]
fn an_exact_identity_that_looks_like_a_regex_names_the_regexp_flag() {
    let stack = Stack::start();
    let (_dir, signed) = multi_doc_signed_keylessly(&stack);
    // The stack's identity is a GitHub workflow URI; a cosign user writes a pattern for it.
    let pattern = "https://github.com/.*";
    stack
        .keyless_verify(mansign(), &signed)
        .args(["--certificate-identity", pattern])
        .args(["--certificate-oidc-issuer", stack.issuer()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("looks like a regular expression"))
        .stdout(predicate::str::contains("--certificate-identity-regexp"));
    stack
        .keyless_verify(mansign(), &signed)
        .args(["--certificate-identity-regexp", pattern])
        .args(["--certificate-oidc-issuer", stack.issuer()])
        .assert()
        .success();
}

#[test]
fn the_regexp_flag_help_says_patterns_are_anchored_unlike_cosign() {
    let out = mansign().args(["verify", "--help"]).assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for phrase in [
        "Anchored, unlike cosign's",
        "https://github.com/acme/.*/\\.github/workflows/sign\\.yaml@refs/heads/main",
    ] {
        assert!(flat.contains(phrase), "{phrase}: {help}");
    }
}

// ---- 6. TLS errors name the file at fault ----

#[test]
fn admission_serve_names_the_key_file_when_the_key_is_bad() {
    let (dir, _signed, pubkey) = signed_fixture();
    let policy = manifest_policy(dir.path(), &pubkey, "data.mode");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_file = write(dir.path(), "mycert.pem", &cert.cert.pem());
    let key_file = write(dir.path(), "mykey.pem", "not a key\n");
    let serve = |cert: &Path, key: &Path| {
        let out = mansign()
            .args(["admission", "serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(&policy)
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = serve(&cert_file, &key_file);
    assert!(stderr.contains("mykey.pem: key file"), "{stderr}");
    assert!(!stderr.contains("mycert.pem"), "{stderr}");
    // A bad certificate is named as the certificate file.
    let key_pem = write(dir.path(), "good.key", &cert.signing_key.serialize_pem());
    let bad_cert = write(dir.path(), "badcert.pem", "not a certificate\n");
    let stderr = serve(&bad_cert, &key_pem);
    assert!(stderr.contains("badcert.pem: certificate file"), "{stderr}");
}

// ---- 7. a closed stdout is never a panic ----

/// Runs mansign (as `program`) with a stdout whose reader is already gone.
fn run_with_closed_stdout(program: &Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env("COSIGN_PASSWORD", "test-password")
        .env_remove("SIGSTORE_TRUSTED_ROOT")
        .env_remove("MANSIGN_TRUSTED_ROOT")
        .stdout(writer)
        .stderr(std::process::Stdio::piped());
    cmd.output().unwrap()
}

/// `mansign ARGS` with a closed stdout exits with `code`, without a panic; returns its stderr.
fn closed_stdout_exits(args: &[&str], code: i32) -> String {
    let out = run_with_closed_stdout(&assert_cmd::cargo::cargo_bin("mansign"), args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

#[test]
fn a_closed_stdout_is_never_a_panic() {
    for args in [
        &["completion", "zsh"][..],
        &["completion", "bash"][..],
        &["version"][..],
        &["version", "-o", "json"][..],
        &["--help"][..],
        &["trust", "show"][..],
    ] {
        closed_stdout_exits(args, 0);
    }
    // verify: the report is dropped, the exit code is still the verdict.
    let (dir, signed, pubkey) = signed_fixture();
    let (_, other) = key_pair(dir.path(), "other");
    let signed = signed.to_str().unwrap();
    for (key, code) in [(&pubkey, 0), (&other, 1)] {
        closed_stdout_exits(
            &["verify", "-f", signed, "--key", key.to_str().unwrap()],
            code,
        );
    }
    // Manifests on a closed stdout are an error (exit 2), and the input is kept.
    let (key, _) = key_pair(dir.path(), "signer");
    let input = write(dir.path(), "keep.yaml", MULTI_DOC);
    let (input_arg, key_arg) = (input.to_str().unwrap(), key.to_str().unwrap());
    let stderr = closed_stdout_exits(
        &[
            "sign",
            "-f",
            input_arg,
            "--key",
            key_arg,
            "-o",
            "-",
            "--remove-input",
        ],
        2,
    );
    assert!(stderr.contains("stdout was closed"), "{stderr}");
    assert!(input.exists());
}

#[test]
fn completion_as_the_kubectl_plugin_completes_kubectl_mansign() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("kubectl-mansign");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mansign"), &plugin).unwrap();
    let out = std::process::Command::new(&plugin)
        .args(["completion", "bash"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("kubectl-mansign"), "{script}");
    let out = run_with_closed_stdout(&plugin, &["completion", "zsh"]);
    assert_eq!(out.status.code(), Some(0));
}

// ---- 8. a summary, not a 7 KB line ----

#[test]
fn signing_many_files_prints_a_count_and_the_directory() {
    let kd = common::key_dir("cosign");
    let unsigned = kd.path().join("unsigned");
    let configmap = MULTI_DOC.split("---\n").next().unwrap();
    for i in 0..30 {
        write(
            &unsigned,
            &format!("cm-{i:03}.yaml"),
            &configmap.replace("name: settings", &format!("name: settings-{i}")),
        );
    }
    let out_dir = kd.path().join("signed");
    let sign = |extra: &[&str]| {
        common::with_key("sign", &[], &unsigned, &kd.key)
            .arg("-o")
            .arg(format!("{}/", out_dir.display()))
            .args(extra)
            .assert()
            .success()
    };
    let out = sign(&[]);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let summary = stderr.lines().last().unwrap();
    assert!(
        summary.ends_with(&format!(
            "-> 30 files in {}/ (-v or --format json lists them)",
            out_dir.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("cm-007.yaml"), "{stderr}");
    // -v lists each one; so does the JSON report.
    let out = sign(&["-v"]);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_eq!(stderr.matches("cm-").count(), 60, "{stderr}");
    let out = sign(&["--format", "json"]);
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 30);
}

// ---- 9. verify-resource checks its flags before asking the cluster ----

#[test]
fn verify_resource_checks_its_flags_before_running_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("kubectl-ran");
    let kubectl = write(
        dir.path(),
        "kubectl",
        &format!("#!/bin/sh\ntouch {}\necho '{{}}'\n", marker.display()),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let verify_resource = || {
        let mut cmd = mansign();
        cmd.args(["verify-resource", "configmaps", "--kubectl"])
            .arg(&kubectl);
        cmd
    };
    common::fails(
        verify_resource().args([
            "--certificate-identity",
            "https://github.com/acme/policies/.github/workflows/sign.yaml@refs/heads/main",
        ]),
        2,
        &["--certificate-oidc-issuer"],
    );
    assert!(
        !marker.exists(),
        "kubectl ran before the flags were checked"
    );
    // A missing policy file too.
    common::fails(
        verify_resource()
            .arg("--policy")
            .arg(dir.path().join("missing.yaml")),
        2,
        &["missing.yaml"],
    );
    assert!(!marker.exists(), "kubectl ran before the policy was read");
}

// ---- 10. the small ones ----

#[test]
fn a_policy_syntax_error_names_the_document_once() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "bad.yaml", "kind: [unclosed\n");
    common::fails(
        mansign().args(["policy", "explain"]).arg(&policy),
        2,
        &["bad.yaml: document 1: "],
    )
    .stderr(predicate::str::contains("document 1: document 1").not());
}

#[test]
fn version_names_the_commit_build_date_and_target() {
    let re = regex::Regex::new(
        r"^mansign(-verify)? \d+\.\d+\.\d+\S* \(commit ([0-9a-f]{40}|unknown), built (\d{4}-\d\d-\d\d|unknown), [a-z0-9_]+-[a-z0-9_-]+\)\n$",
    )
    .unwrap();
    for args in [
        &["version"][..],
        &["--version"][..],
        &["verify", "--version"][..],
    ] {
        let out = mansign().args(args).assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(re.is_match(&text), "{args:?}: {text:?}");
    }
    let out = mansign().args(["version", "-o", "json"]).assert().success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    for field in ["commit", "buildDate", "target"] {
        assert!(
            v[field].as_str().is_some_and(|s| !s.is_empty()),
            "{field}: {v}"
        );
    }
    // In a git checkout, the commit is the checkout's.
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output();
    if let Ok(head) = head
        && head.status.success()
    {
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        assert_eq!(v["commit"], head.as_str());
    }
}

#[test]
fn the_summary_counts_documents_with_and_without_a_policy() {
    let (dir, signed, pubkey) = signed_fixture();
    let policy = manifest_policy(dir.path(), &pubkey, "data.mode");
    mansign()
        .args(["verify", "--policy"])
        .arg(&policy)
        .arg(&signed)
        .assert()
        .success()
        .stdout(predicate::str::contains("of 3 document(s) verified"))
        .stdout(predicate::str::contains("object(s)").not());
}

#[test]
fn top_level_help_lists_the_bundle_commands_the_readme_uses() {
    let out = mansign().arg("--help").assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for command in ["verify-bundle", "sign-bundle"] {
        if readme.contains(&format!("mansign {command}")) {
            assert!(
                help.lines().any(|l| l.trim_start().starts_with(command)),
                "{command} is in the README but not in --help:\n{help}"
            );
        }
    }
    assert!(
        help.lines()
            .any(|l| l.trim_start().starts_with("verify-bundle"))
    );
}

#[test]
fn explain_names_the_subjects_of_an_exclusion_and_what_offline_verify_does() {
    let (dir, _signed, pubkey) = signed_fixture();
    let pem = std::fs::read_to_string(&pubkey).unwrap();
    let indented: String = pem
        .lines()
        .map(|l| format!("                {l}\n"))
        .collect();
    let policy = write(
        dir.path(),
        "exclude-subjects.yaml",
        &format!(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n\
             \x20 rules:\n  - name: signed\n    match:\n      any:\n      - resources:\n\
             \x20         kinds: [ConfigMap]\n    exclude:\n      any:\n      - subjects:\n\
             \x20       - kind: ServiceAccount\n          namespace: kube-system\n\
             \x20         name: replicaset-controller\n    validate:\n      manifests:\n\
             \x20       attestors:\n        - entries:\n          - keys:\n\
             \x20             publicKeys: |-\n{indented}"
        ),
    );
    let out = mansign()
        .args(["policy", "explain"])
        .arg(&policy)
        .output()
        .unwrap();
    let text = common::all_output(&out);
    if out.status.code() == Some(0) {
        assert!(
            text.contains(
                "service account system:serviceaccount:kube-system:replicaset-controller"
            ),
            "{text}"
        );
        assert!(text.contains("offline `verify`"), "{text}");
        assert!(!text.contains("subject(s)"), "{text}");
    } else {
        panic!("a ManifestPolicy with exclude.subjects did not load: {text}");
    }
}

/// Issue 39, item 15: the small rough edges of the command line, each as a user meets it.
#[test]
fn help_shows_env_variables_without_values_and_names_every_policy_command() {
    let out = mansign()
        .env("SIGSTORE_REKOR_URL", "https://secret.example/rekor")
        .args(["sign", "--help"])
        .assert()
        .success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(help.contains("[env: SIGSTORE_FULCIO_URL]"), "{help}");
    assert!(!help.contains("SIGSTORE_FULCIO_URL="), "{help}");
    assert!(
        !help.contains("secret.example"),
        "a set value is not printed: {help}"
    );
    let out = mansign().arg("--help").assert().success();
    let top = String::from_utf8_lossy(&out.get_output().stdout).replace('\n', " ");
    let policy = top.split("  policy ").nth(1).unwrap_or_default();
    assert!(policy.contains("(`test`)"), "{top}");
}

#[test]
fn recursive_flag_of_kubectl_habit_is_accepted_and_changes_nothing() {
    let (dir, signed, pubkey) = signed_fixture();
    let tree = dir.path().join("tree/nested");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy(&signed, tree.join("x.yaml")).unwrap();
    for flag in ["-R", "--recursive"] {
        mansign()
            .args(["verify", flag, "--key"])
            .arg(&pubkey)
            .arg(dir.path().join("tree"))
            .assert()
            .success()
            .stdout(predicate::str::contains("verified"));
    }
}

#[test]
fn completion_help_says_how_to_install_and_profiles_do_not_complete_files() {
    mansign()
        .args(["completion", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "mansign completion bash > ~/.local/share/bash-completion/completions/mansign",
        ));
    let out = mansign().args(["completion", "zsh"]).assert().success();
    let script = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let profile = script
        .lines()
        .find(|l| l.starts_with("'--ignore-profile="))
        .expect("--ignore-profile in the zsh script");
    assert!(profile.ends_with(":PROFILE[,PROFILE]:' \\"), "{profile}");
}
