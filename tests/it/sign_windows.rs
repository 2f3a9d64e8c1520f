//! `mansign sign` of a tree larger than one window (128 files): the first pass reads and
//! plans every file before anything is signed, the second signs window by window with one
//! signer (one Fulcio certificate for a keyless run), and nothing is written before the
//! last window was signed, verified and staged. These tests hold that a run of several
//! windows is the same run as one of a single window: same outputs, one signing time, one
//! certificate, one report; a failure in the last window leaves no output. (An input that
//! changes between the passes is refused: `sign_faults.rs`, edited-between-passes, edits one
//! at an exact point of the run through a fault proxy.)
//!
//! Run: `cargo test --test it sign_windows::`

use crate::common;
use crate::common::stack;

use common::{files_under, key_dir, with_key, write};
use mansign::annotations::{AnnotationDomain, extract};
use mansign::manifest::parse_documents;
use std::path::Path;

/// A ConfigMap named `name`.
fn config_map(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: team-a\ndata:\n  k: {name}\n"
    )
}

/// Writes `count` one-document files `team-N/cm-NNN.yaml` under `dir` (100 a folder).
fn tree(dir: &Path, count: usize) {
    for i in 0..count {
        write(
            dir,
            &format!("team-{}/cm-{i:03}.yaml", i / 100),
            &config_map(&format!("cm-{i}")),
        );
    }
}

/// Every document of every file under `dir`, file by file in path order.
fn documents_under(dir: &Path) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for name in files_under(dir) {
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        for (_, doc) in parse_documents(&text, &mansign::Limits::default()).unwrap() {
            out.push((name.clone(), doc));
        }
    }
    out
}

fn signed_at(doc: &serde_json::Value) -> &str {
    doc["metadata"]["annotations"]["mansign.dev/signed-at"]
        .as_str()
        .expect("signed-at annotation")
}

/// 300 files (three windows), a JSON file and a file of three documents among them: every
/// output is written, in the input's layout and format, every document verifies, all
/// carry one signing time, and the JSON report lists every file in input order.
#[test]
fn a_tree_of_several_windows_is_signed_as_one_run() {
    let keys = key_dir("cosign");
    let src = keys.path().join("unsigned");
    tree(&src, 300);
    write(&src, "team-0/many.yaml", common::MULTI_DOC);
    write(
        &src,
        "team-2/cm.json",
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json", "namespace": "team-a"}}"#,
    );
    let out = keys.path().join("signed");
    let run = with_key("sign", &["--format", "json"], &src, &keys.key)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&run.get_output().stdout).unwrap();

    let inputs = files_under(&src);
    assert_eq!(inputs.len(), 302);
    assert_eq!(
        files_under(&out),
        inputs,
        "one output per input, same layout"
    );
    let listed: Vec<String> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["source"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = inputs
        .iter()
        .map(|i| src.join(i).display().to_string())
        .collect();
    assert_eq!(
        listed, expected,
        "the report lists every file, in input order"
    );
    let documents = documents_under(&out);
    let multi = parse_documents(common::MULTI_DOC, &mansign::Limits::default())
        .unwrap()
        .len();
    assert_eq!(report["documents"], 301 + multi);
    assert_eq!(report["signatures"], 301 + multi);
    assert_eq!(documents.len(), 301 + multi);
    let first = signed_at(&documents[0].1).to_string();
    for (file, doc) in &documents {
        assert_eq!(
            signed_at(doc),
            first,
            "{file}: one signing time for the run"
        );
    }
    let json = std::fs::read_to_string(out.join("team-2/cm.json")).unwrap();
    assert!(
        json.trim_start().starts_with('{'),
        "a JSON input stays JSON: {json}"
    );

    common::verifies_all_with_key(&out, &keys.pubkey, 301 + multi);
}

/// The last file's output cannot be written (its directory's place holds a file): the run
/// fails after two windows were signed and staged, and leaves nothing behind: no output,
/// no temporary file, an earlier output in place untouched.
#[test]
fn a_failure_in_the_last_window_writes_nothing() {
    let keys = key_dir("cosign");
    let src = keys.path().join("unsigned");
    tree(&src, 300);
    write(&src, "zz/last.yaml", &config_map("last"));
    let out = keys.path().join("signed");
    write(&out, "zz", "a file where a directory is needed\n");
    write(&out, "team-0/cm-000.yaml", "old output\n");

    let failed = with_key("sign", &[], &src, &keys.key)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&failed.get_output().stderr).to_string();
    assert!(
        stderr.contains(&out.join("zz").display().to_string()),
        "the error names the directory it could not create: {stderr}"
    );
    assert_eq!(
        files_under(&out),
        vec!["team-0/cm-000.yaml".to_string(), "zz".to_string()],
        "no output and no temporary file was left"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("team-0/cm-000.yaml")).unwrap(),
        "old output\n",
        "an earlier output is untouched"
    );
}

/// Stdin, which cannot be read twice, is kept from the first pass and signed with the
/// files around it: first or last, with a tree of two windows or with one file (a run of
/// one window, where every file is kept and none is read twice).
#[test]
fn stdin_is_signed_with_the_files_around_it() {
    let keys = key_dir("cosign");
    let src = keys.path().join("unsigned");
    tree(&src, 150);
    let one = write(keys.path(), "one/single.yaml", &config_map("single"));
    let tree_arg = src.display().to_string();
    let one_arg = one.display().to_string();
    let cases: [(&str, &[&str], usize); 4] = [
        ("stdin before a tree", &["-", &tree_arg], 151),
        ("stdin after a tree", &[&tree_arg, "-"], 151),
        ("stdin before a file", &["-", &one_arg], 2),
        ("stdin after a file", &[&one_arg, "-"], 2),
    ];
    for (case, inputs, count) in cases {
        let out = keys
            .path()
            .join(format!("signed-{}", case.replace(' ', "-")));
        let mut cmd = common::mansign();
        cmd.arg("sign");
        for input in inputs {
            cmd.args(["-f", input]);
        }
        let run = cmd
            .arg("--key")
            .arg(&keys.key)
            .arg("-o")
            .arg(format!("{}/", out.display()))
            .write_stdin(config_map("from-stdin"))
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let documents = documents_under(&out);
        assert_eq!(documents.len(), count, "{case}: {:?}", files_under(&out));
        let from_stdin = documents
            .iter()
            .find(|(f, _)| f == "stdin.yaml")
            .unwrap_or_else(|| panic!("{case}: no output for stdin"));
        assert_eq!(from_stdin.1["metadata"]["name"], "from-stdin", "{case}");
        common::verifies_all_with_key(&out, &keys.pubkey, count);
    }
}

/// Windows are bounded in documents too: three files of 600 documents each are signed in
/// three signer calls (1,024 documents a window at most), every document verifies.
#[test]
fn files_of_many_documents_are_signed_in_windows_of_documents() {
    let keys = key_dir("cosign");
    let src = keys.path().join("unsigned");
    for f in 0..3 {
        let text: Vec<String> = (0..600)
            .map(|d| config_map(&format!("f{f}-d{d}")))
            .collect();
        write(&src, &format!("many-{f}.yaml"), &text.join("---\n"));
    }
    let out = keys.path().join("signed");
    with_key("sign", &[], &src, &keys.key)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .assert()
        .success();
    let documents = documents_under(&out);
    assert_eq!(documents.len(), 1800);
    for (i, (file, doc)) in documents.iter().enumerate() {
        let expected = format!("f{}-d{}", i / 600, i % 600);
        assert_eq!(
            doc["metadata"]["name"],
            expected.as_str(),
            "{file}: order kept"
        );
    }
    common::verifies_all_with_key(&out, &keys.pubkey, 1800);
}

/// A keyless run of two windows asks Fulcio once: every signature carries the same
/// certificate, each has its own Rekor entry, `--bundle-out` writes a bundle and a message
/// for each, and the whole tree verifies against the signer's identity.
#[test]
fn a_keyless_run_of_several_windows_uses_one_certificate() {
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("unsigned");
    tree(&src, 130);
    let out = dir.path().join("signed");
    let bundles = dir.path().join("bundles");
    stack.keyless_sign_to(
        common::mansign(),
        &["--bundle-out", &bundles.display().to_string()],
        &src,
        Path::new(&format!("{}/", out.display())),
        stack.id_token(),
    );
    assert_eq!(
        stack.stat("fulcio_signing_cert_requests"),
        1,
        "one certificate"
    );
    assert_eq!(
        stack.stat("rekor_entries_created"),
        130,
        "one entry a signature"
    );
    let documents = documents_under(&out);
    assert_eq!(documents.len(), 130);
    let limits = mansign::Limits::default();
    let certificate = |doc: &serde_json::Value| {
        extract(doc, &AnnotationDomain::default(), &limits)
            .unwrap()
            .sets[0]
            .certificate_pem
            .clone()
            .expect("certificate annotation")
    };
    let first = certificate(&documents[0].1);
    for (file, doc) in &documents {
        assert_eq!(certificate(doc), first, "{file}: the run's one certificate");
    }
    let written = files_under(&bundles);
    assert_eq!(written.len(), 260, "a bundle and a message a signature");
    assert!(written.contains(&"cm-129.yaml.1.sigstore.json".to_string()));
    assert!(written.contains(&"cm-129.yaml.1.message".to_string()));
    stack
        .keyless_verify(common::mansign(), &out)
        .args(["--certificate-identity", stack.identity()])
        .args(["--certificate-oidc-issuer", stack.issuer()])
        .assert()
        .success()
        .stdout(predicates::str::contains("130 of 130 document(s) verified"));
}

/// `--remove-input` on a tree of three windows whose output directory lies inside it and
/// is walked last (`sign -f t/ -o t/zz-signed/`, with a `t/zz-signed/` from an earlier
/// run): the second walk passes over the outputs the run staged there; every input is
/// removed except the one that is another file's output, which now holds that file's
/// signed text; every output verifies; `-v` names every removal.
#[test]
fn remove_input_keeps_an_input_that_is_another_files_output() {
    let keys = key_dir("cosign");
    let root = keys.path().join("t");
    tree(&root, 300);
    write(
        &root,
        "zz-signed/team-0/cm-000.yaml",
        &config_map("old-output"),
    );
    let out = root.join("zz-signed");
    let run = with_key("sign", &["--remove-input", "-v"], &root, &keys.key)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).to_string();
    assert_eq!(stderr.matches("\nremoved ").count(), 300, "{stderr}");
    let left = files_under(&root);
    // 301 outputs: 300 of the tree (one of them in the old output's place) and the old
    // output's own output.
    assert_eq!(left.len(), 301, "{:?}", &left[..3.min(left.len())]);
    assert!(
        left.iter().all(|f| f.starts_with("zz-signed/")),
        "an input was left"
    );
    assert!(left.contains(&"zz-signed/zz-signed/team-0/cm-000.yaml".to_string()));
    let kept = documents_under(&out.join("team-0"))
        .into_iter()
        .find(|(f, _)| f == "cm-000.yaml")
        .expect("the input that is an output is kept");
    assert_eq!(
        kept.1["metadata"]["name"], "cm-0",
        "it holds the new output"
    );
    common::verifies_all_with_key(&out, &keys.pubkey, 301);
}

/// Signing in place with `--remove-input` (`sign -f d/ -o d/`), where one input is a
/// symbolic link to a file outside the tree: the link is replaced by its signed output,
/// which is kept (it is an output), and the file it pointed to is untouched.
#[test]
fn remove_input_in_place_keeps_the_output_that_replaced_a_link() {
    let keys = key_dir("cosign");
    let shared = write(keys.path(), "shared/app.yaml", &config_map("app"));
    let dir = keys.path().join("d");
    tree(&dir, 130);
    std::os::unix::fs::symlink(&shared, dir.join("app.yaml")).unwrap();
    with_key("sign", &["--remove-input"], &dir, &keys.key)
        .arg("-o")
        .arg(format!("{}/", dir.display()))
        .assert()
        .success();
    let link = dir.join("app.yaml");
    assert!(
        !link.symlink_metadata().unwrap().file_type().is_symlink(),
        "the link was replaced by its output"
    );
    assert_eq!(
        files_under(&dir).len(),
        131,
        "every output in place is kept"
    );
    assert_eq!(
        std::fs::read_to_string(&shared).unwrap(),
        config_map("app"),
        "the file the link pointed to is untouched"
    );
    common::verifies_all_with_key(&dir, &keys.pubkey, 131);
}

/// A run stopped by SIGINT (Ctrl-C, a cancelled CI job) or SIGTERM while it stages its
/// outputs (3,000 files: the signal is sent once the first staged file is seen) exits with
/// 128 + the signal, says nothing was written, and leaves no output and no temporary file.
#[test]
fn an_interrupted_run_leaves_no_output_and_no_temporary_file() {
    let keys = key_dir("cosign");
    let src = keys.path().join("unsigned");
    tree(&src, 3000);
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let out = keys.path().join(format!("signed-{signal}"));
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mansign"))
            .env("COSIGN_PASSWORD", "test-password")
            .arg("sign")
            .arg("-f")
            .arg(&src)
            .arg("--key")
            .arg(&keys.key)
            .arg("-o")
            .arg(format!("{}/", out.display()))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("mansign");
        let started = std::time::Instant::now();
        let staging = loop {
            let staged = files_under(&out)
                .iter()
                .any(|f| f.rsplit('/').next().unwrap_or("").starts_with(".mansign-"));
            if staged || started.elapsed() > std::time::Duration::from_secs(120) {
                break staged;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("SIG{signal}: the run ended ({status}) before a staged file was seen");
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        assert!(staging, "SIG{signal}: no staged file seen");
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
        let done = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(code), "SIG{signal}: {stderr}");
        assert!(
            stderr.contains(&format!("SIG{signal}: stopped; nothing was written")),
            "SIG{signal}: {stderr}"
        );
        assert_eq!(
            files_under(&out),
            Vec::<String>::new(),
            "SIG{signal}: no output and no temporary file"
        );
    }
}
