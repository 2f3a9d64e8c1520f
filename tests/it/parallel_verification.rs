//! Verifying many documents on several threads gives the verdicts of verifying them one by
//! one, in input order: a tampered document in the middle of a batch is refused in its
//! place, and the run fails; `verify -f DIR` of a tree read window by window reports what
//! one verification of every document reports.

use crate::common;

use mansign::Limits;
use mansign::keys;
use mansign::manifest::{Source, load_reader};
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::verify::{Attestor, TrustedKey, Verifier};
use serde_json::json;

fn configmaps(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: team-a\ndata:\n  index: \"{i}\"\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn parallel_verdicts_equal_sequential_verdicts_in_input_order() {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let text = configmaps(60);
    let mut files = vec![common::load_text("batch.yaml", "batch.yaml", &text)];
    sign_files(&mut files, &KeySigner::new(key), &SignOptions::default()).unwrap();
    let mut docs = files.remove(0).documents;
    for i in [7, 31, 59] {
        docs[i].value["data"]["index"] = json!("tampered");
    }
    let verifier = |threads| {
        Verifier::new(vec![Attestor::Key(
            TrustedKey::from_pem("k", &pair.public_key_pem).unwrap(),
        )])
        .with_parallelism(threads)
    };
    let one = verifier(1).verify_documents(&docs);
    let four = verifier(4).verify_documents(&docs);
    assert_eq!(one.to_json(), four.to_json());
    assert!(!four.is_verified());
    for (i, d) in four.documents.iter().enumerate() {
        assert_eq!(
            d.object.name,
            format!("cm-{i}"),
            "verdict {i} is out of order"
        );
        assert_eq!(d.is_verified(), ![7, 31, 59].contains(&i), "{d}");
    }
}

/// Signs `n` files (ConfigMaps, one or two documents each; every seventh file JSON) into
/// `dir` with a new key, and returns the public key's path.
fn signed_directory(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let mut files = Vec::new();
    for i in 0..n {
        let json = i % 7 == 3;
        let name = format!(
            "team-{}/cm-{i:04}.{}",
            i / 50,
            if json { "json" } else { "yaml" }
        );
        let text = if json {
            format!(
                r#"{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "cm-{i}", "namespace": "team-a"}}, "data": {{"index": "{i}"}}}}"#
            )
        } else {
            configmaps(1 + i % 2).replace("cm-", &format!("cm-{i}-"))
        };
        files.push(
            load_reader(
                Source::File(dir.join(&name)),
                name.into(),
                text.as_bytes(),
                &Limits::default(),
            )
            .unwrap(),
        );
    }
    sign_files(&mut files, &KeySigner::new(key), &SignOptions::default()).unwrap();
    for f in &files {
        let path = dir.join(&f.relative_path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = if f.is_json() {
            f.documents
                .iter()
                .map(|d| serde_json::to_string_pretty(&d.value).unwrap() + "\n")
                .collect::<String>()
        } else {
            f.documents
                .iter()
                .map(|d| mansign::manifest::to_yaml(&d.value))
                .collect::<Vec<_>>()
                .join("---\n")
        };
        std::fs::write(path, text).unwrap();
    }
    let public = dir.join("../cosign.pub");
    std::fs::write(&public, &pair.public_key_pem).unwrap();
    public
}

/// `verify -f DIR` reads a large tree a window of files at a time; its report must be the
/// one a single verification of every document gives (the library's verdict, printed as
/// the command always printed it), in text and JSON, over several windows, with failures
/// in later windows; `--print-verified` prints every document, in order.
#[test]
fn a_directory_of_many_files_verifies_with_the_report_of_one_whole_verification() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("signed");
    let public = signed_directory(&dir, 400);
    let pem = std::fs::read_to_string(&public).unwrap();
    let verifier = || {
        Verifier::new(vec![Attestor::Key(
            TrustedKey::from_pem(public.display().to_string(), &pem).unwrap(),
        )])
    };
    let expect = |dir: &std::path::Path| {
        let files =
            mansign::manifest::load_inputs(&[dir.to_path_buf()], &Limits::default()).unwrap();
        let verdict = verifier().verify_documents(files.iter().flat_map(|f| &f.documents));
        let mut text: String = verdict.documents.iter().map(|d| format!("{d}\n")).collect();
        let ok = verdict.documents.iter().filter(|d| d.is_verified()).count();
        text.push_str(&format!(
            "{ok} of {} document(s) verified\n",
            verdict.documents.len()
        ));
        let json = serde_json::to_string_pretty(&verdict.to_json()).unwrap() + "\n";
        let stream = files
            .iter()
            .flat_map(|f| &f.documents)
            .map(|d| mansign::manifest::to_yaml(&d.value))
            .collect::<Vec<_>>()
            .join("---\n");
        (text, json, stream, verdict.is_verified())
    };
    let run = |dir: &std::path::Path, extra: &[&str]| {
        common::mansign()
            .args(["verify", "-f"])
            .arg(dir)
            .arg("--key")
            .arg(&public)
            .args(extra)
            .output()
            .unwrap()
    };

    // The command's reports are the library's (text, JSON); `--print-verified` prints every
    // document, in order, or nothing once one failed, with the text report on stderr.
    let check = |code: i32, summary: &str| {
        let (text, json, stream, verified) = expect(&dir);
        assert_eq!(verified, code == 0, "{summary}");
        assert!(text.ends_with(summary), "{text}");
        let out = run(&dir, &[]);
        assert_eq!(out.status.code(), Some(code), "text report, {summary}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
        let out = run(&dir, &["-o", "json"]);
        assert_eq!(out.status.code(), Some(code), "JSON report, {summary}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), json);
        let out = run(&dir, &["--print-verified"]);
        assert_eq!(out.status.code(), Some(code), "--print-verified, {summary}");
        let printed = if verified { stream } else { String::new() };
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            printed,
            "--print-verified, {summary}"
        );
        assert_eq!(String::from_utf8(out.stderr).unwrap(), text);
    };
    check(0, "571 of 571 document(s) verified\n");

    // Tampered documents in the first, a middle and the last window.
    for (file, from, to) in [
        ("team-0/cm-0002.yaml", "index: \"0\"", "index: \"x\""),
        ("team-5/cm-0271.yaml", "index: \"1\"", "index: \"y\""),
        ("team-7/cm-0399.yaml", "index: \"0\"", "index: \"z\""),
    ] {
        let path = dir.join(file);
        let before = std::fs::read_to_string(&path).unwrap();
        assert!(before.contains(from), "{file}: {before}");
        std::fs::write(&path, before.replacen(from, to, 1)).unwrap();
    }
    check(1, "568 of 571 document(s) verified\n");

    // A file that cannot be read, in the last window: its error, and no report at all.
    std::fs::write(dir.join("team-7/cm-0398.yaml"), "kind: [unclosed\n").unwrap();
    let out = run(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no partial report");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("cm-0398.yaml"), "{err}");
}
