//! Bad input: a clear message naming the file, document and field, exit code 2, and no
//! partial output.

use crate::common;

use common::{MULTI_DOC, files_under, mansign, write};
use predicates::prelude::*;

#[test]
fn not_yaml_names_file_and_document_and_exits_2() {
    let kd = common::key_dir("cosign");
    let bad = kd.write(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkey: [unclosed\n",
    );
    kd.sign_fails(&[], &bad, &["bad.yaml: document 2: not valid YAML"]);
}

#[test]
fn document_that_is_not_a_kubernetes_object_names_the_missing_field() {
    let kd = common::key_dir("cosign");
    let bad = kd.write("bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n",
    );
    for (cmd, k) in [("sign", &kd.key), ("verify", &kd.pubkey)] {
        common::fails(
            &mut common::with_key(cmd, &[], &bad, k),
            2,
            &["bad.yaml: document 2: not a Kubernetes object: missing field `kind`"],
        );
    }
    let no_name = kd.write(
        "noname.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n",
    );
    kd.sign_fails(
        &[],
        &no_name,
        &["document 1: not a Kubernetes object: missing field `metadata.name`"],
    );
    assert_eq!(
        files_under(kd.path()),
        ["bad.yaml", "cosign.key", "cosign.pub", "noname.yaml"]
    );
}

#[test]
fn unreadable_input_names_the_file() {
    let kd = common::key_dir("cosign");
    kd.sign_fails(
        &[],
        &kd.path().join("missing.yaml"),
        &["missing.yaml: cannot read"],
    );
    let not_utf8 = kd.path().join("binary.yaml");
    std::fs::write(&not_utf8, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    kd.sign_fails(
        &[],
        &not_utf8,
        &["binary.yaml: document 1: not valid YAML: not UTF-8"],
    );
}

/// A new key directory with MULTI_DOC at each of `names` under `in/`.
fn key_dir_with_inputs(names: &[&str]) -> common::KeyDir {
    let kd = common::key_dir("cosign");
    for name in names {
        kd.write(&format!("in/{name}"), MULTI_DOC);
    }
    kd
}

/// `mansign sign FLAGS -f in --key KEY -o out/` in the key directory must fail with exit 2,
/// naming each of `words`.
fn sign_in_to_out_fails(kd: &common::KeyDir, flags: &[&str], words: &[&str]) {
    common::fails(
        common::with_key("sign", flags, kd.path().join("in"), &kd.key)
            .arg("-o")
            .arg(format!("{}/", kd.path().join("out").display())),
        2,
        words,
    );
}

#[test]
fn unwritable_output_directory_leaves_no_partial_output() {
    let kd = key_dir_with_inputs(&["a.yaml", "sub/b.yaml"]);
    let out = kd.path().join("out");
    // `out/sub` is a file, so `out/sub/b.yaml` cannot be written; `out/a.yaml` could be,
    // but must not be left behind.
    write(&out, "sub", "a file in the way");
    sign_in_to_out_fails(&kd, &[], &["out/sub"]);
    assert_eq!(files_under(&out), ["sub"]);
}

#[test]
fn output_path_taken_by_a_directory_leaves_no_partial_output() {
    let kd = key_dir_with_inputs(&["a.yaml", "b.yaml"]);
    let out = kd.path().join("out");
    // `out/b.yaml` is a directory: every temporary file can be written, but that one
    // cannot be renamed into place. `out/a.yaml` must not be left behind either.
    std::fs::create_dir_all(out.join("b.yaml")).unwrap();
    sign_in_to_out_fails(&kd, &["--remove-input"], &["b.yaml"]);
    assert_eq!(files_under(&out), Vec::<String>::new());
    assert!(kd.path().join("in/a.yaml").is_file(), "input kept");
}

#[test]
fn one_bad_file_in_a_batch_writes_nothing() {
    let kd = common::key_dir("cosign");
    let good = kd.write("good.yaml", MULTI_DOC);
    let bad = kd.write("zbad.yaml", "kind: [");
    common::with_key("sign", &[], &good, &kd.key)
        .arg("-f")
        .arg(&bad)
        .arg("-o")
        .arg(kd.path().join("out/"))
        .assert()
        .code(2);
    assert!(!kd.path().join("out").exists());
}

#[test]
fn wrong_key_password_exits_2_without_output() {
    let kd = common::key_dir("cosign");
    let input = kd.write("x.yaml", MULTI_DOC);
    common::fails(
        common::with_key("sign", &[], &input, &kd.key).env("COSIGN_PASSWORD", "not-the-password"),
        2,
        &["cosign.key: cannot load private key", "password"],
    );
    assert!(!kd.path().join("x.yaml.signed").exists());
}

#[test]
fn verify_with_an_unusable_key_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    let not_a_key = write(dir.path(), "k.pub", "hello");
    common::verify_with_key(&input, &not_a_key)
        .code(2)
        .stderr(predicate::str::contains("k.pub: not a usable public key"));
}

#[test]
fn output_file_with_several_inputs_is_a_usage_error() {
    let kd = common::key_dir("cosign");
    let a = kd.write("a.yaml", MULTI_DOC);
    let b = kd.write("b.yaml", MULTI_DOC);
    common::fails(
        common::with_key("sign", &[], &a, &kd.key)
            .arg("-f")
            .arg(&b)
            .args(["-o", "one.yaml"])
            .current_dir(kd.path()),
        2,
        &["use a directory"],
    );
    assert!(!kd.path().join("one.yaml").exists());
}

#[test]
fn unknown_flags_are_usage_errors_with_exit_2() {
    mansign().args(["verify", "--bogus"]).assert().code(2);
    mansign().args(["sign"]).assert().code(2);
}

#[test]
fn empty_directory_is_an_error() {
    let kd = common::key_dir("cosign");
    let empty = kd.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    kd.sign_fails(
        &["-o", "signed/"],
        &empty,
        &["no .yaml, .yml or .json files found"],
    );
}

#[test]
fn oversized_annotation_is_rejected_by_the_verifier() {
    let kd = common::key_dir("cosign");
    let huge = "A".repeat(300 * 1024);
    let doc = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    cosign.sigstore.dev/message: {huge}\n    cosign.sigstore.dev/signature: AAAA\n"
    );
    let f = kd.write("big.yaml", &doc);
    common::verify_fails_naming(
        &f,
        &kd.pubkey,
        "annotations total 307260 bytes, more than the 262144 bytes the Kubernetes API server accepts",
    );
}

#[test]
fn a_trusted_root_that_trusts_nothing_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let doc = write(dir.path(), "x.yaml", MULTI_DOC);
    let root = write(dir.path(), "root.json", "{}");
    let identity = [
        "--certificate-identity",
        "a@b",
        "--certificate-oidc-issuer",
        "https://i",
    ];
    common::fails(
        mansign()
            .args(["verify", "-f"])
            .arg(&doc)
            .args(identity)
            .arg("--trusted-root")
            .arg(&root),
        2,
        &["no certificate authority and no transparency log"],
    );
}

#[test]
fn an_expiry_date_is_accepted_and_a_wrong_one_names_the_forms() {
    let kd = common::key_dir("cosign");
    let doc = kd.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    common::with_key("sign", &["--expires", "2099-12-31"], &doc, &kd.key)
        .assert()
        .success();
    let signed = std::fs::read_to_string(kd.path().join("cm.yaml.signed")).unwrap();
    assert!(
        signed.contains("mansign.dev/expires: \"2100-01-01T00:00:00Z\""),
        "{signed}"
    );
    common::fails(
        &mut common::with_key("sign", &["--expires", "soon"], &doc, &kd.key),
        2,
        &["RFC 3339 time"],
    );
}

/// The 1,000-document limit names the file, says it is mansign's limit and what to do, and
/// docs/cli.md states it (issue 39, item 15).
#[test]
fn a_file_past_the_document_limit_is_refused_naming_the_limit() {
    let kd = common::key_dir("cosign");
    let many: String = (0..1001)
        .map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n---\n"))
        .collect();
    let bad = kd.write("many.yaml", &many);
    kd.sign_fails(
        &[],
        &bad,
        &[
            "many.yaml",
            "more than 1000 documents in one file (mansign's limit; split the file)",
        ],
    );
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md"),
    )
    .unwrap();
    assert!(doc.contains("At most 1,000 documents per file"));
    assert!(doc.contains("Comments are not kept."));
}

/// `sign` of a tree without `-o` would write `*.yaml.signed` files, which `kubectl apply -f
/// DIR` skips and mansign refuses (issue 39 item 8): refused before the key is read (the
/// key named here does not exist), exit 2, nothing written, saying what to write.
#[test]
fn a_tree_without_an_output_is_refused_before_the_key_is_read_saying_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "unsigned/a.yaml", MULTI_DOC);
    let b = write(dir.path(), "unsigned/team/b.yaml", MULTI_DOC);
    let before = files_under(dir.path());
    let cases: [(&str, Vec<std::ffi::OsString>, &str); 3] = [
        (
            "a directory",
            vec![dir.path().join("unsigned").into()],
            "a directory",
        ),
        ("two files", vec![a.into(), b.into()], "several inputs"),
        (
            "two glob patterns",
            vec![
                dir.path().join("unsigned/*.yaml").into(),
                dir.path().join("unsigned/team/*.yaml").into(),
            ],
            "several inputs",
        ),
    ];
    for (case, inputs, what) in cases {
        let out = mansign()
            .arg("sign")
            .args(&inputs)
            .arg("--key")
            .arg(dir.path().join("missing.key"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{case}: {err}");
        let needs = format!("sign of {what} needs -o: write -o signed/");
        for words in [
            needs.as_str(),
            "`kubectl apply -R -f signed/` and `mansign verify signed/` read",
            "or -o - for one stream",
        ] {
            assert!(err.contains(words), "{case}: {err}");
        }
        assert!(
            !err.contains("missing.key"),
            "{case}: the key was read: {err}"
        );
        assert_eq!(
            files_under(dir.path()),
            before,
            "{case}: something was written"
        );
    }
    // One pattern matching two files: found by the walk, still before the key.
    let out = mansign()
        .arg("sign")
        .arg(dir.path().join("unsigned/**/*.yaml"))
        .arg("--key")
        .arg(dir.path().join("missing.key"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sign of a glob pattern matching several files needs -o: write -o signed/"),
        "{err}"
    );
    assert!(!err.contains("missing.key"), "the key was read: {err}");
    assert_eq!(files_under(dir.path()), before);
}

/// What the refusal says to write works: `-o signed/` mirrors the tree, and `verify`
/// reads it; one file without `-o` keeps kubectl-sigstore's `FILE.signed`, the summary
/// names it, and `verify -f FILE.signed` reads the file it is named.
#[test]
fn the_outputs_the_refusal_names_and_a_single_file_signed_beside_itself_verify() {
    let kd = common::key_dir("cosign");
    kd.write("unsigned/a.yaml", MULTI_DOC);
    kd.write("unsigned/team/b.yaml", MULTI_DOC);
    mansign()
        .current_dir(kd.path())
        .args(["sign", "unsigned/", "--key", "cosign.key", "-o", "signed/"])
        .assert()
        .success();
    assert_eq!(
        files_under(&kd.path().join("signed")),
        ["a.yaml", "team/b.yaml"]
    );
    mansign()
        .current_dir(kd.path())
        .args(["verify", "signed/", "--key", "cosign.pub"])
        .assert()
        .success();
    let one = kd.write("x.yaml", MULTI_DOC);
    common::with_key("sign", &[], &one, &kd.key)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "-> {}.signed",
            one.display()
        )));
    common::with_key("verify", &[], kd.path().join("x.yaml.signed"), &kd.pubkey)
        .assert()
        .success();
}

/// A README.md, a `.signed` file and a YAML 1.1 scalar are three problems, named in one
/// run (issue 39 item 9), by `sign` (nothing written, before the key is read) and by
/// `verify` (no report, also with `-o json`), exit 2.
#[test]
fn every_input_problem_of_a_run_is_named_at_once() {
    let kd = common::key_dir("cosign");
    kd.write("unsigned/README.md", "# how to sign\n");
    kd.write("unsigned/a.yaml", MULTI_DOC);
    kd.write("unsigned/a.yaml.signed", MULTI_DOC);
    kd.write(
        "unsigned/team/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  enabled: on\n",
    );
    let problems = [
        "3 problems in the inputs:",
        "unsigned/README.md: not a manifest file",
        "unsigned/a.yaml.signed: not a manifest file",
        "unsigned/team/cm.yaml: document 1, data.enabled (line 6, column 12): plain scalar `on`",
    ];
    let before = files_under(kd.path());
    let out = mansign()
        .current_dir(kd.path())
        .args(["sign", "unsigned/", "-o", "signed/", "--key", "missing.key"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for p in problems {
        assert!(err.contains(p), "sign: {p:?} not in {err}");
    }
    assert!(!err.contains("missing.key"), "the key was read: {err}");
    assert_eq!(files_under(kd.path()), before, "something was written");
    for format in ["text", "json"] {
        let out = mansign()
            .current_dir(kd.path())
            .args(["verify", "unsigned/", "--key", "cosign.pub", "-o", format])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "verify -o {format}: {err}");
        for p in problems {
            assert!(err.contains(p), "verify -o {format}: {p:?} not in {err}");
        }
        assert!(out.stdout.is_empty(), "verify -o {format} printed a report");
    }
}
