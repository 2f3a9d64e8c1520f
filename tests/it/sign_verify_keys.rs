//! Key-based signing and verification through the CLI: round trip, tampering, scopes,
//! append and output placement.

use crate::common;

use common::{MULTI_DOC, files_under, key_pair, mansign, verify_fails_naming, write};
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

fn docs(path: &Path) -> Vec<Value> {
    common::read_documents(path)
}

fn write_docs(path: &Path, docs: &[Value]) {
    let text: Vec<String> = docs.iter().map(mansign::manifest::to_yaml).collect();
    std::fs::write(path, text.join("---\n")).unwrap();
}

/// Signs MULTI_DOC with a fresh key; returns (dir, signed path, pub key path).
fn signed_fixture() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    common::sign_with_key(&input, &key);
    let signed = dir.path().join("x.yaml.signed");
    assert!(signed.exists());
    (dir, signed, pubkey)
}

/// MULTI_DOC signed with a fresh key, its documents then changed by `edit`: verification
/// must fail naming `needle`.
fn tampered_fails_naming(edit: impl FnOnce(&mut Vec<Value>), needle: &str) {
    let (_dir, signed, pubkey) = signed_fixture();
    let mut d = docs(&signed);
    edit(&mut d);
    write_docs(&signed, &d);
    verify_fails_naming(&signed, &pubkey, needle);
}

#[test]
fn round_trip_of_a_multi_document_file_verifies() {
    let (_dir, signed, pubkey) = signed_fixture();
    common::verify_with_key(&signed, &pubkey)
        .success()
        .stdout(predicate::str::contains("3 of 3 document(s) verified"));
    // default scope: each document carries its own message with only itself in it
    let d = docs(&signed);
    let m0 = &d[0]["metadata"]["annotations"]["cosign.sigstore.dev/message"];
    let m1 = &d[1]["metadata"]["annotations"]["cosign.sigstore.dev/message"];
    assert_ne!(m0, m1);
}

/// `mansign verify ... | head -1`: a reader that goes away is an output error (exit 2,
/// a message), never a panic (exit 101 with a backtrace).
#[test]
fn verify_into_a_closed_pipe_fails_without_panicking() {
    let (dir, signed, pubkey) = signed_fixture();
    for i in 0..200 {
        std::fs::copy(&signed, dir.path().join(format!("copy-{i}.yaml"))).unwrap();
    }
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mansign"))
        .args(["verify", "-f"])
        .arg(dir.path())
        .arg("--key")
        .arg(&pubkey)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}

#[test]
fn changed_value_is_rejected_naming_the_field() {
    tampered_fails_naming(
        |d| {
            d[0]["data"]["mode"] = Value::String("permissive".into());
        },
        "data.mode changed",
    );
}

#[test]
fn added_field_is_rejected_naming_the_field() {
    tampered_fails_naming(
        |d| {
            d[1]["spec"]["exceptions"][0]["ruleNames"]
                .as_array_mut()
                .unwrap()
                .push(Value::String("everything".into()));
        },
        "spec.exceptions[0].ruleNames[1] added",
    );
}

#[test]
fn removed_field_is_rejected_naming_the_field() {
    tampered_fails_naming(
        |d| {
            d[1]["spec"]["match"]["any"][0]["resources"]
                .as_object_mut()
                .unwrap()
                .remove("names");
        },
        "spec.match.any[0].resources.names[0] removed",
    );
}

#[test]
fn document_moved_to_another_namespace_is_rejected() {
    tampered_fails_naming(
        |d| {
            d[1]["metadata"]["namespace"] = Value::String("kube-system".into());
        },
        "metadata.namespace changed",
    );
}

#[test]
fn all_signature_annotations_pasted_from_another_document_are_rejected() {
    tampered_fails_naming(
        |d| {
            // Give `other` the message and signature of `settings`: the signature is
            // valid, but the message it covers holds a different object.
            d[2]["metadata"]["annotations"] = d[0]["metadata"]["annotations"].clone();
        },
        "has no document for ConfigMap team-a/other",
    );
}

#[test]
fn signature_annotation_pasted_from_another_document_is_rejected() {
    tampered_fails_naming(
        |d| {
            // `other` keeps its own message but gets the signature of `settings`.
            d[2]["metadata"]["annotations"]["cosign.sigstore.dev/signature"] =
                d[0]["metadata"]["annotations"]["cosign.sigstore.dev/signature"].clone();
        },
        "signature does not match",
    );
}

#[test]
fn truncated_signature_is_rejected() {
    tampered_fails_naming(
        |d| {
            let sig = d[0]["metadata"]["annotations"]["cosign.sigstore.dev/signature"]
                .as_str()
                .unwrap()
                .to_string();
            d[0]["metadata"]["annotations"]["cosign.sigstore.dev/signature"] =
                Value::String(sig[..sig.len() - 8].to_string() + "AAAA");
        },
        "signature set 0 with key",
    );
}

#[test]
fn unsigned_document_is_rejected_as_not_signed() {
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    verify_fails_naming(&input, &kd.pubkey, "[not-signed]");
}

#[test]
fn signature_from_another_key_is_rejected() {
    let (dir, signed, _pubkey) = signed_fixture();
    let (_k2, other_pub) = key_pair(dir.path(), "other");
    verify_fails_naming(&signed, &other_pub, "signature does not match");
}

#[test]
fn json_output_names_check_and_fields() {
    let (_dir, signed, pubkey) = signed_fixture();
    let mut d = docs(&signed);
    d[0]["data"]["mode"] = Value::String("permissive".into());
    write_docs(&signed, &d);
    let out = common::with_key("verify", &["--output", "json"], &signed, &pubkey)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["verified"], false);
    assert_eq!(v["documents"][0]["failure"]["check"], "diff");
    assert_eq!(v["documents"][0]["failure"]["diff"][0]["path"], "data.mode");
    assert_eq!(v["documents"][1]["verified"], true);
    assert_eq!(v["documents"][1]["signer"]["kind"], "key");
}

#[test]
fn file_scope_puts_one_message_with_all_documents_on_every_document() {
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    common::with_key("sign", &["--scope", "file"], &input, &kd.key)
        .assert()
        .success();
    let signed = kd.path().join("x.yaml.signed");
    let d = docs(&signed);
    let ann: Vec<&Value> = d.iter().map(|x| &x["metadata"]["annotations"]).collect();
    assert_eq!(ann[0], ann[1]);
    assert_eq!(ann[1], ann[2]);
    common::verify_with_key(&signed, &kd.pubkey).success();
}

#[test]
fn append_adds_a_second_signature_set_that_verifies_alone() {
    let (dir, signed, pub1) = signed_fixture();
    let (key2, pub2) = key_pair(dir.path(), "second");
    let out = dir.path().join("twice.yaml");
    common::with_key("sign", &["--append"], &signed, &key2)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let d = docs(&out);
    let a = d[0]["metadata"]["annotations"].as_object().unwrap();
    assert!(a.contains_key("cosign.sigstore.dev/signature_1"));
    assert_eq!(
        a["cosign.sigstore.dev/message"],
        docs(&signed)[0]["metadata"]["annotations"]["cosign.sigstore.dev/message"]
    );
    for (k, set) in [(&pub1, "signature set 0"), (&pub2, "signature set 1")] {
        common::verify_with_key(&out, k)
            .success()
            .stdout(predicate::str::contains(set));
    }
}

/// Every signature set shares the one `message` annotation, so an appended set must sign the
/// bytes already there. A file signed by kubectl-sigstore carries kubectl-sigstore's
/// rendering (keys sorted), not mansign's: `--append` keeps and signs it (it was refused
/// before), and both sets verify. A copy whose document changed is still refused.
#[test]
fn append_to_a_kubectl_sigstore_signed_file_signs_its_message() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/kubectl-sigstore-signed");
    let signed = root.join("configmap.signed.yaml");
    let signer = root.join("signer.pub");
    let kd = common::key_dir("second");
    for scope in ["document", "file"] {
        let out = kd.path().join(format!("appended-{scope}.yaml"));
        mansign()
            .args(["sign", "--append", "--scope", scope, "-f"])
            .arg(&signed)
            .arg("--key")
            .arg(&kd.key)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let a = docs(&out)[0]["metadata"]["annotations"].clone();
        assert_eq!(
            a["cosign.sigstore.dev/message"],
            docs(&signed)[0]["metadata"]["annotations"]["cosign.sigstore.dev/message"],
            "the message is kept byte for byte"
        );
        assert!(a.get("cosign.sigstore.dev/signature_1").is_some(), "{a}");
        for (k, set) in [
            (&signer, "signature set 0"),
            (&kd.pubkey, "signature set 1"),
        ] {
            common::verify_with_key(&out, k)
                .success()
                .stdout(predicate::str::contains(set));
        }
    }
    // The document changed since kubectl-sigstore signed it: no append.
    let text = std::fs::read_to_string(&signed).unwrap();
    assert!(text.contains("mode: strict"));
    let changed = kd.write(
        "changed.yaml",
        &text.replacen("mode: strict", "mode: lax", 1),
    );
    common::fails(
        common::with_key("sign", &["--append"], &changed, &kd.key)
            .arg("-o")
            .arg(kd.path().join("changed.out.yaml")),
        2,
        &["cannot append"],
    );
}

#[test]
fn resigning_without_append_removes_stale_signature_keys() {
    let (dir, signed, _pub1) = signed_fixture();
    let mut d = docs(&signed);
    d[0]["metadata"]["annotations"]["cosign.sigstore.dev/signature_1"] =
        Value::String("c3RhbGU=".into());
    d[0]["metadata"]["annotations"]["cosign.sigstore.dev/bundle_3"] = Value::String("stale".into());
    write_docs(&signed, &d);
    let (key2, pub2) = key_pair(dir.path(), "second");
    let out = dir.path().join("resigned.yaml");
    common::with_key("sign", &[], &signed, &key2)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let d = docs(&out);
    let keys: Vec<&String> = d[0]["metadata"]["annotations"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        keys,
        [
            "mansign.dev/signed-at",
            "cosign.sigstore.dev/message",
            "cosign.sigstore.dev/signature"
        ]
    );
    common::verify_with_key(&out, &pub2).success();
}

#[test]
fn directory_input_is_mirrored_into_output_directory_in_order() {
    let kd = common::key_dir("cosign");
    let src = kd.path().join("unsigned");
    write(&src, "b.yaml", MULTI_DOC);
    write(&src, "nested/a.yml", MULTI_DOC);
    write(&src, ".hidden.yaml", CONFIGMAP_HIDDEN);
    write(&src, "c.json", CONFIGMAP_JSON);
    write(&src, "README.md", "not a manifest");
    let out = kd.path().join("signed");
    let sign = |extra: &[&str]| {
        let mut cmd = mansign();
        cmd.args(["sign", "-f"])
            .arg(&src)
            .arg("--key")
            .arg(&kd.key)
            .arg("-o")
            .arg(format!("{}/", out.display()))
            .args(extra);
        cmd.assert()
    };
    // A file kubectl would skip but another tool may read is never passed over silently.
    sign(&[])
        .code(2)
        .stderr(predicate::str::contains("README.md: not a manifest file"))
        .stderr(predicate::str::contains("--exclude \"README.md\""));
    assert!(!out.exists(), "nothing written on error");
    sign(&["--exclude", "README.md"]).success();
    assert_eq!(
        files_under(&out),
        [".hidden.yaml", "b.yaml", "c.json", "nested/a.yml"]
    );
    let names: Vec<String> = docs(&out.join("b.yaml"))
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["settings", "allow-host-path", "other"]);
    // A JSON manifest stays JSON.
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("c.json")).unwrap()).unwrap();
    assert!(json["metadata"]["annotations"]["cosign.sigstore.dev/signature"].is_string());
    common::verify_with_key(&out, &kd.pubkey)
        .success()
        .stdout(predicate::str::contains("8 of 8 document(s) verified"));
}

const CONFIGMAP_HIDDEN: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden\n  namespace: team-a\n";
const CONFIGMAP_JSON: &str = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-json", "namespace": "team-a"}, "data": {"k": "v"}}"#;

/// Signs `tree` into `out/` and returns the public key.
fn signed_tree(
    dir: &std::path::Path,
    tree: &std::path::Path,
    out: &std::path::Path,
) -> std::path::PathBuf {
    let (key, pubkey) = key_pair(dir, "cosign");
    common::with_key("sign", &[], tree, &key)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .assert()
        .success();
    pubkey
}

/// A new temporary DIR with `DIR/unsigned/ok.yaml` (MULTI_DOC): (DIR, `DIR/unsigned`).
fn unsigned_ok_tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("unsigned");
    write(&tree, "ok.yaml", MULTI_DOC);
    (dir, tree)
}

/// The [`unsigned_ok_tree`] signed into `DIR/signed/`: (DIR, the signed directory, the
/// public key).
fn signed_ok_tree() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let (dir, tree) = unsigned_ok_tree();
    let out = dir.path().join("signed");
    let pubkey = signed_tree(dir.path(), &tree, &out);
    (dir, out, pubkey)
}

#[test]
fn verify_reads_the_json_and_hidden_files_kubectl_would_apply() {
    for (name, text) in [
        ("evil.json", CONFIGMAP_JSON),
        (".evil.yaml", CONFIGMAP_HIDDEN),
        ("deep/.dir/evil.yml", CONFIGMAP_HIDDEN),
    ] {
        let (_dir, out, pubkey) = signed_ok_tree();
        // An unsigned manifest dropped beside the signed ones is verified, and fails.
        write(&out, name, text);
        common::verify_with_key(&out, &pubkey)
            .code(1)
            .stdout(predicate::str::contains(name))
            .stdout(predicate::str::contains("[not-signed]"));
    }
}

#[test]
fn verify_fails_on_a_file_that_is_not_a_manifest_unless_excluded() {
    let (_dir, out, pubkey) = signed_ok_tree();
    write(&out, "app.jsonnet", "{ kind: 'ConfigMap' }");
    let verify = |extra: &[&str]| {
        let mut cmd = mansign();
        cmd.args(["verify", "-f"])
            .arg(&out)
            .arg("--key")
            .arg(&pubkey)
            .args(extra);
        cmd.assert()
    };
    verify(&[])
        .code(2)
        .stderr(predicate::str::contains("app.jsonnet: not a manifest file"));
    verify(&["--exclude", "*.jsonnet"]).success();
}

#[test]
fn exclude_leaves_out_whole_directories() {
    let (_dir, out, pubkey) = signed_ok_tree();
    write(&out, "docs/notes.md", "x");
    write(&out, "docs/example.yaml", "not a manifest: [");
    common::with_key("verify", &["--exclude", "docs"], &out, &pubkey)
        .assert()
        .success();
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_is_refused_naming_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("unsigned");
    write(&tree, "a/ok.yaml", MULTI_DOC);
    // Two links back to ancestors: without loop detection the walk is exponential.
    std::os::unix::fs::symlink(&tree, tree.join("a/up")).unwrap();
    std::os::unix::fs::symlink(&tree, tree.join("a/up2")).unwrap();
    let (key, _) = key_pair(dir.path(), "cosign");
    common::fails(
        common::with_key("sign", &[], &tree, &key)
            .arg("-o")
            .arg(format!("{}/", dir.path().join("out").display())),
        2,
        &["symbolic link loop", "a/up"],
    );
    assert!(!dir.path().join("out").exists());
}

#[cfg(unix)]
#[test]
fn symlinked_files_and_directories_are_followed() {
    let (dir, tree) = unsigned_ok_tree();
    let real = dir.path().join("real");
    write(&real, "cm.yaml", CONFIGMAP_HIDDEN);
    std::os::unix::fs::symlink(&real, tree.join("linked")).unwrap();
    let out = dir.path().join("signed");
    signed_tree(dir.path(), &tree, &out);
    assert_eq!(files_under(&out), ["linked/cm.yaml", "ok.yaml"]);
}

/// `mansign sign -f ARGS... --key KEY` in the key's directory (a quoted pattern is expanded
/// by mansign, not by a shell); not yet run.
fn sign_in(kd: &common::KeyDir, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = mansign();
    cmd.current_dir(kd.path())
        .args(["sign", "-f"])
        .args(args)
        .arg("--key")
        .arg(&kd.key);
    cmd
}

#[test]
fn glob_inputs_keep_their_path_below_the_pattern_prefix() {
    let kd = common::key_dir("cosign");
    kd.write("unsigned/team-a/ex.yaml", MULTI_DOC);
    kd.write("unsigned/team-b/ex.yaml", MULTI_DOC);
    sign_in(&kd, &["unsigned/*/ex.yaml", "-o", "out/"])
        .assert()
        .success();
    assert_eq!(
        files_under(&kd.path().join("out")),
        ["team-a/ex.yaml", "team-b/ex.yaml"]
    );
}

#[test]
fn stdin_is_signed_to_stdout_and_verifies_from_stdin() {
    let kd = common::key_dir("cosign");
    let out = mansign()
        .args(["sign", "-f", "-", "--key"])
        .arg(&kd.key)
        .write_stdin(MULTI_DOC)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    mansign()
        .args(["verify", "-f", "-", "--key"])
        .arg(&kd.pubkey)
        .write_stdin(out)
        .assert()
        .success();
}

#[test]
fn several_files_signed_to_stdout_form_one_valid_stream() {
    let kd = common::key_dir("cosign");
    let a = kd.write("a.yaml", MULTI_DOC);
    let b = kd.write(
        "b.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: v\n",
    );
    let out = mansign()
        .args(["sign", "-o", "-", "--key"])
        .arg(&kd.key)
        .arg("-f")
        .arg(&a)
        .arg("-f")
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out.clone()).unwrap();
    let docs = mansign::manifest::parse_documents(&text, &mansign::Limits::default())
        .unwrap_or_else(|e| panic!("the stdout stream does not parse: {e}\n{text}"));
    assert_eq!(docs.len(), 4, "{text}");
    mansign()
        .args(["verify", "-f", "-", "--key"])
        .arg(&kd.pubkey)
        .write_stdin(out)
        .assert()
        .success()
        .stdout(predicate::str::contains("4 of 4 document(s) verified"));
}

#[test]
fn several_keys_accept_a_signature_by_any_of_them() {
    let (dir, signed, pubkey) = signed_fixture();
    let (_k2, other) = key_pair(dir.path(), "other");
    common::with_key(
        "verify",
        &[],
        &signed,
        format!("{},{}", other.display(), pubkey.display()),
    )
    .assert()
    .success();
}

#[test]
fn generate_key_pair_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    key_pair(dir.path(), "cosign");
    mansign()
        .current_dir(dir.path())
        .args(["generate-key-pair"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    let key = std::fs::read_to_string(dir.path().join("cosign.key")).unwrap();
    assert!(key.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"));
}

/// The key pair is written all or nothing: when `PREFIX.pub` cannot be written, the old
/// `PREFIX.key` is kept, so the pair on disk never mismatches, and no temporary file is
/// left (it would hold the encrypted private key).
#[test]
fn generate_key_pair_with_force_changes_nothing_when_the_public_key_cannot_be_written() {
    let kd = common::key_dir("cosign");
    let old_key = std::fs::read_to_string(&kd.key).unwrap();
    std::fs::remove_file(&kd.pubkey).unwrap();
    std::fs::create_dir(&kd.pubkey).unwrap();
    mansign()
        .current_dir(kd.path())
        .args(["generate-key-pair", "--force"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cosign.pub"));
    assert_eq!(std::fs::read_to_string(&kd.key).unwrap(), old_key);
    assert_eq!(files_under(kd.path()), vec!["cosign.key".to_string()]);
}

#[test]
fn quoted_glob_patterns_select_files_and_skip_hidden_ones() {
    let kd = common::key_dir("cosign");
    kd.write("in/a.yaml", MULTI_DOC);
    kd.write("in/b.yaml", MULTI_DOC);
    kd.write("in/.hidden.yaml", "not: [valid");
    kd.write("in/c.txt", "not yaml at all: [");
    let out = kd.path().join("out");
    sign_in(&kd, &["in/*.yaml", "-o", "out/"])
        .assert()
        .success();
    assert_eq!(files_under(&out), ["a.yaml", "b.yaml"]);
    common::verify_with_key(&out, &kd.pubkey).success();
}

#[test]
fn glob_pattern_matching_nothing_is_an_error() {
    let kd = common::key_dir("cosign");
    sign_in(&kd, &["nothing/*.yaml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "nothing/*.yaml: cannot read: pattern matches no files",
        ));
}

/// The outputs of a batch are staged as temporary files and renamed at the end; they must
/// not stay open until then: a tree of more files than the process may open at once
/// (here 300 under `ulimit -n 64`; 100,000 failed at 20,000 open files) is signed whole.
#[test]
fn a_batch_of_more_outputs_than_open_files_allowed_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), "cosign");
    let src = dir.path().join("unsigned");
    for i in 0..300 {
        write(
            &src,
            &format!("team-{}/cm-{i:03}.yaml", i / 100),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: team-a\n"
            ),
        );
    }
    let out = dir.path().join("signed");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(assert_cmd::cargo::cargo_bin("mansign"))
        .args(["sign", "-f"])
        .arg(&src)
        .arg("--key")
        .arg(&key)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .env("COSIGN_PASSWORD", "test-password")
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(files_under(&out).len(), 300);
    common::verifies_all_with_key(&out, &pubkey, 300);
}

/// `--exclude` reads patterns as `.gitignore` does: `*.md` leaves out a README.md at any
/// depth, `/x` only at the top, `dir/` only directories; the hint for a nested file names a
/// pattern that works (issue 39, item 10).
#[test]
fn exclude_patterns_match_as_gitignore_patterns_do() {
    let kd = common::key_dir("k");
    let src = kd.path().join("tree");
    write(&src, "a.yaml", MULTI_DOC);
    write(&src, "sub/b.yaml", MULTI_DOC);
    write(&src, "sub/README.md", "not a manifest");
    write(&src, "generated/c.yaml", MULTI_DOC);
    let out = kd.path().join("signed");
    let sign = |extra: &[&str]| {
        let mut cmd = mansign();
        cmd.args(["sign", "-f"])
            .arg(&src)
            .arg("--key")
            .arg(&kd.key)
            .arg("-o")
            .arg(format!("{}/", out.display()))
            .args(extra);
        cmd.assert()
    };
    // the nested README's hint is its name, which matches at any depth
    sign(&[])
        .code(2)
        .stderr(predicate::str::contains(
            "sub/README.md: not a manifest file",
        ))
        .stderr(predicate::str::contains("--exclude \"README.md\""));
    assert!(!out.exists(), "nothing written on error");
    // an anchored pattern does not reach the nested file
    sign(&["--exclude", "/README.md"])
        .code(2)
        .stderr(predicate::str::contains(
            "sub/README.md: not a manifest file",
        ));
    assert!(!out.exists(), "nothing written on error");
    // `generated/` leaves out the directory, `*.md` the nested README
    sign(&["--exclude", "*.md", "--exclude", "generated/"]).success();
    assert_eq!(files_under(&out), ["a.yaml", "sub/b.yaml"]);
}
