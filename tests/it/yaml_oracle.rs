//! kubectl's reading of a manifest file as the oracle for mansign's reader (issue 22).
//!
//! `yamloracle` (tests/peers/yamloracle, built by scripts/peers.sh) runs the very code
//! `kubectl apply -f FILE` runs to read a file (cli-runtime's resource builder:
//! YAMLOrJSONDecoder, sigs.k8s.io/yaml, the unstructured decoder, list flattening) and prints
//! the objects kubectl would send, or kubectl's error. For every input here — each manifest
//! under testdata/, each fuzz seed, every entry of the reader fuzz target's corpus (`message`,
//! as scripts/fuzz.sh seeds it, plus a local fuzzing run's corpus when there is one: the
//! replay is how the oracle reaches the fuzzer, which takes no external oracle), and more
//! than 10,000 generated documents — mansign's
//! reading (`load_reader`, what `mansign sign` and `verify` read) must equal kubectl's, or
//! mansign must refuse the input. A file mansign accepts and reads differently from kubectl,
//! or accepts where kubectl refuses, fails the test.

use crate::common;

use base64::Engine as _;
use common::peers::{peer, run_bounded_for};
use mansign::Limits;
use mansign::manifest::{Source, load_reader};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// kubectl's answer for one input.
#[derive(Debug)]
enum Kubectl {
    Objects(Vec<Value>),
    Error(String),
}

/// Runs the oracle once over all `inputs` (batch mode: one process, one line each way).
fn kubectl_readings(inputs: &[Vec<u8>]) -> Vec<Kubectl> {
    let mut stdin = String::new();
    for input in inputs {
        stdin.push_str(&base64::engine::general_purpose::STANDARD.encode(input));
        stdin.push('\n');
    }
    let mut cmd = Command::new(peer("yamloracle"));
    cmd.arg("-batch");
    let run = run_bounded_for(cmd, Some(stdin.as_bytes()), Duration::from_secs(600));
    assert!(run.success, "yamloracle -batch failed: {}", run.stderr);
    let answers: Vec<Kubectl> = run
        .stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("oracle answers JSON");
            match (v.get("objects"), v.get("error")) {
                (Some(Value::Array(objects)), None) => Kubectl::Objects(objects.clone()),
                (None, Some(Value::String(e))) => Kubectl::Error(e.clone()),
                _ => panic!("unexpected oracle answer {line}"),
            }
        })
        .collect();
    assert_eq!(answers.len(), inputs.len(), "one answer per input");
    answers
}

/// mansign's reading of one file: the documents' values, or the refusal.
fn mansign_reading(input: &[u8]) -> Result<Vec<Value>, String> {
    load_reader(
        Source::Named("input.yaml".into()),
        PathBuf::from("input.yaml"),
        input,
        &Limits::default(),
    )
    .map(|file| file.documents.into_iter().map(|d| d.value).collect())
    .map_err(|e| mansign::error::chain(&e))
}

/// The same JSON value, numbers compared as kubectl holds them: an integer must be the same
/// integer (kubectl reads integers as int64, larger ones as float64, which is not the same
/// value), a float the same float.
fn same(m: &Value, k: &Value) -> bool {
    match (m, k) {
        (Value::Number(a), Value::Number(b)) => {
            if a.is_f64() || b.is_f64() {
                // Go prints a float64 holding an integer without a fraction ("1"), so
                // compare floats by value.
                a.as_f64() == b.as_f64() && !(a.is_u64() && a.as_i64().is_none())
            } else {
                a.as_i64().is_some() && a.as_i64() == b.as_i64()
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| same(x, y)))
        }
        _ => m == k,
    }
}

#[derive(Default)]
struct Tally {
    inputs: usize,
    documents: usize,
    same_reading: usize,
    both_refuse: usize,
    mansign_stricter: BTreeMap<String, usize>,
    failures: Vec<String>,
}

impl Tally {
    fn check(&mut self, name: &str, input: &[u8], kubectl: &Kubectl) {
        self.inputs += 1;
        let mansign = mansign_reading(input);
        match (&mansign, kubectl) {
            (Ok(m), Kubectl::Objects(k)) => {
                self.documents += m.len();
                if m.len() == k.len() && m.iter().zip(k).all(|(a, b)| same(a, b)) {
                    self.same_reading += 1;
                } else {
                    self.fail(
                        name,
                        input,
                        &format!("mansign read {m:?}\nkubectl read {k:?}"),
                    );
                }
            }
            // An input only kubectl refuses is a disagreement like any other (issue 22 closed
            // the last ones: kubectl's scanner errors).
            (Ok(m), Kubectl::Error(e)) => {
                self.fail(
                    name,
                    input,
                    &format!("mansign accepts ({m:?}), kubectl refuses: {e}"),
                );
            }
            (Err(_), Kubectl::Error(_)) => self.both_refuse += 1,
            (Err(e), Kubectl::Objects(k)) => {
                self.documents += k.len();
                *self.mansign_stricter.entry(reason(e)).or_default() += 1;
            }
        }
    }

    fn fail(&mut self, name: &str, input: &[u8], what: &str) {
        self.failures.push(format!(
            "{name}: {what}\ninput: {:?}",
            String::from_utf8_lossy(input)
        ));
    }

    fn report(&self, what: &str) {
        println!(
            "{what}: {} inputs, {} documents: {} read the same, {} refused by both, {} refused \
             only by mansign, {} disagreements",
            self.inputs,
            self.documents,
            self.same_reading,
            self.both_refuse,
            self.mansign_stricter.values().sum::<usize>(),
            self.failures.len()
        );
        for (reason, n) in &self.mansign_stricter {
            println!("  refused only by mansign: {n:5} {reason}");
        }
        for f in self.failures.iter().take(15) {
            println!("DISAGREEMENT {f}\n");
        }
        assert!(
            self.failures.is_empty(),
            "{} inputs mansign accepts and kubectl refuses or reads otherwise (first ones above)",
            self.failures.len()
        );
    }
}

/// A short class of a refusal, for the tally: the message without positions and values.
fn reason(e: &str) -> String {
    let e = e.split_once(": ").map_or(e, |(_, rest)| rest);
    let words: Vec<&str> = e
        .split_whitespace()
        .filter(|w| !w.chars().any(|c| c.is_ascii_digit()) && !w.contains('`'))
        .take(8)
        .collect();
    words.join(" ")
}

/// The files under `dir` (recursively) that `keep` accepts, appended to `out`; a missing
/// directory adds none.
fn files_where(dir: &Path, keep: fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_where(&p, keep, out);
        } else if keep(&p) {
            out.push(p);
        }
    }
}

/// The `.yaml`, `.yml` and `.json` files under `dir`.
fn files_with_extensions(dir: &Path, out: &mut Vec<PathBuf>) {
    files_where(
        dir,
        |p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
        },
        out,
    );
}

#[test]
fn kubectl_reads_every_testdata_manifest_and_fuzz_seed_as_mansign_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files_with_extensions(&root.join("testdata"), &mut paths);
    // Fuzz seeds are JSON streams of any shape; replayed here as manifest files.
    let mut seeds = Vec::new();
    collect_all(&root.join("fuzz/seeds"), &mut seeds);
    paths.extend(seeds);
    paths.sort();
    assert!(
        paths.len() > 200,
        "testdata/ has the manifests ({})",
        paths.len()
    );
    let inputs: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| std::fs::read(p).expect("read testdata file"))
        .collect();
    let answers = kubectl_readings(&inputs);
    let mut tally = Tally::default();
    for ((path, input), kubectl) in paths.iter().zip(&inputs).zip(&answers) {
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        tally.check(&name, input, kubectl);
    }
    tally.report("testdata/ and fuzz/seeds");
}

fn collect_all(dir: &Path, out: &mut Vec<PathBuf>) {
    files_where(dir, |_| true, out);
}

/// Named inputs: (name, bytes).
type Corpus = Vec<(String, Vec<u8>)>;

/// The corpus of the reader's fuzz target, `message` (`parse_message`: a signed message, a
/// YAML stream or a legacy tar.gz of YAML files), as scripts/fuzz.sh seeds it: the manifests
/// under testdata/unsigned and testdata/k8s-manifest-sigstore, and the decoded `message`
/// annotation of every signed fixture in testdata/; plus whatever a local fuzzing run left
/// in fuzz/corpus/message and fuzz/artifacts/message (not committed). A gzip entry is
/// replayed as the YAML files its tarball holds, which is what the reader reads of it.
/// Returns (name, bytes) pairs and the count of each source.
fn message_corpus(root: &Path) -> (Corpus, BTreeMap<&'static str, usize>) {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut entries: Corpus = Vec::new();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut push = |entries: &mut Corpus, source: &'static str, name: String, bytes: Vec<u8>| {
        *counts.entry(source).or_default() += 1;
        for (suffix, content) in expand(bytes) {
            if suffix.contains("(tar)") {
                *counts
                    .entry("files of legacy tarball messages")
                    .or_default() += 1;
            }
            entries.push((format!("{name}{suffix}"), content));
        }
    };
    let mut manifests = Vec::new();
    for dir in ["testdata/unsigned", "testdata/k8s-manifest-sigstore"] {
        files_with_extensions(&root.join(dir), &mut manifests);
    }
    manifests.retain(|p| p.extension().is_some_and(|x| x == "yaml"));
    let mut local = Vec::new();
    for dir in ["fuzz/corpus/message", "fuzz/artifacts/message"] {
        collect_all(&root.join(dir), &mut local);
    }
    // Files read whole, one source each.
    for (source, mut files) in [
        ("manifest seeds", manifests),
        ("local fuzzing corpus entries", local),
    ] {
        files.sort();
        for p in files {
            push(&mut entries, source, rel(&p), std::fs::read(&p).unwrap());
        }
    }
    let mut signed = Vec::new();
    files_with_extensions(&root.join("testdata"), &mut signed);
    signed.retain(|p| p.extension().is_some_and(|x| x == "yaml"));
    signed.sort();
    for p in signed {
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        if !text.contains("cosign.sigstore.dev/") {
            continue;
        }
        for (n, line) in text
            .lines()
            .filter(|l| l.contains("cosign.sigstore.dev/message:"))
            .enumerate()
        {
            let value = line
                .split_once("message:")
                .unwrap()
                .1
                .trim()
                .replace('"', "");
            // As scripts/fuzz.sh: a value that is not base64 seeds nothing.
            if let Ok(bytes) = b64.decode(value.trim()) {
                push(
                    &mut entries,
                    "decoded messages of signed fixtures",
                    format!("{} message {n}", rel(&p)),
                    bytes,
                );
            }
        }
    }
    (entries, counts)
}

/// What the reader reads of a corpus entry: a gzip'd entry (a kubectl-sigstore `message`
/// is base64 of gzip) decompressed, and a tarball (the legacy message format, a tar.gz
/// inside) as the files it holds; anything else as it is. (suffix for the name, bytes).
fn expand(bytes: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    let gunzip = |b: &[u8]| -> Option<Vec<u8>> {
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut raw).ok()?;
        Some(raw)
    };
    let mut current = bytes;
    let mut suffix = String::new();
    for _ in 0..2 {
        if !current.starts_with(&[0x1f, 0x8b]) {
            break;
        }
        match gunzip(&current) {
            Some(raw) => {
                current = raw;
                suffix.push_str(" (gzip)");
            }
            None => break,
        }
    }
    if suffix.contains("(gzip) (gzip)") || current.get(257..262) == Some(&b"ustar"[..]) {
        let mut files = Vec::new();
        let read = tar::Archive::new(&current[..]).entries().and_then(|list| {
            for file in list {
                let mut file = file?;
                if !file.header().entry_type().is_file() {
                    continue;
                }
                let path = file.path()?.display().to_string();
                let mut content = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut content)?;
                files.push((format!("{suffix} (tar) {path}"), content));
            }
            Ok(())
        });
        if read.is_ok() && !files.is_empty() {
            return files;
        }
    }
    vec![(suffix, current)]
}

/// The reader's fuzz corpus replayed through kubectl's reading (the fuzzer, libFuzzer via
/// cargo-fuzz, takes no external oracle, so the oracle checks its corpus): for every entry,
/// mansign's reading equals kubectl's or mansign refuses it, and where the fuzz target's
/// own function (`parse_message`) and the file reader both accept an entry they read the
/// same documents.
#[test]
fn kubectl_reads_every_fuzz_corpus_entry_of_the_reader_as_mansign_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (entries, counts) = message_corpus(root);
    for (source, n) in &counts {
        println!("fuzz corpus of `message`: {n} {source}");
    }
    assert!(
        counts.get("decoded messages of signed fixtures").copied() >= Some(30),
        "the signed fixtures' messages are in the corpus: {counts:?}"
    );
    assert!(
        counts.get("manifest seeds").copied() >= Some(30),
        "{counts:?}"
    );
    let inputs: Vec<Vec<u8>> = entries.iter().map(|(_, b)| b.clone()).collect();
    let answers = kubectl_readings(&inputs);
    let mut tally = Tally::default();
    let mut both_readers = 0;
    for ((name, input), kubectl) in entries.iter().zip(&answers) {
        tally.check(name, input, kubectl);
        let message = mansign::manifest::parse_message(input, &Limits::default());
        if let (Ok(m), Ok(r)) = (&message, mansign_reading(input)) {
            assert!(
                m.len() == r.len() && m.iter().zip(&r).all(|(a, b)| same(a, b)),
                "{name}: parse_message read {m:?}, the file reader {r:?}"
            );
            both_readers += 1;
        }
    }
    println!("{both_readers} entries read alike by parse_message and the file reader");
    tally.report("fuzz corpus of the reader (`message`)");
}

/// The known divergences of issue 22, one by one, so a failure names them.
#[test]
fn the_known_divergences_are_closed() {
    let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let cases: Vec<(&str, String)> = vec![
        ("escaped slash", format!("{head}data:\n  a: \"a\\/b\"\n")),
        (
            "escaped slash in a JSON document after a comment",
            "# a comment\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}, \"data\": {\"a\": \"a\\/b\"}}\n".to_string(),
        ),
        (
            "escaped slash in a JSON stream",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}, \"data\": {\"a\": \"a\\/b\"}}\n".to_string(),
        ),
        (
            "double-quoted scalar continued at the key's indentation",
            format!("{head}data:\n  a: \"one\n  two\"\n"),
        ),
        (
            "double-quoted scalar continued at the key's indentation, top level",
            format!("{head}note: \"one\ntwo\"\n"),
        ),
        (
            "double-quoted scalar continued at the key's indentation, escaped line break",
            format!("{head}data:\n  a: \"one\\\n  two\"\n"),
        ),
    ];
    let inputs: Vec<Vec<u8>> = cases.iter().map(|(_, t)| t.as_bytes().to_vec()).collect();
    let answers = kubectl_readings(&inputs);
    let mut tally = Tally::default();
    for ((name, text), kubectl) in cases.iter().zip(&answers) {
        println!(
            "{name}: kubectl {kubectl:?}; mansign {:?}",
            mansign_reading(text.as_bytes())
        );
        tally.check(name, text.as_bytes(), kubectl);
    }
    tally.report("known divergences");
}

/// The six inputs of the generated run that kubectl's scanner (go-yaml v2) refused and
/// mansign read until issue 22 closed them (and two found on the way): both must refuse
/// each, mansign naming the document and line.
#[test]
fn kubectl_scanner_refusals_are_refused_by_mansign_too() {
    let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "a tab as a whole plain value in a flow mapping, after `>` in it",
            format!("{head}data:\n  k1: {{k: >true, j: \t}}\n"),
            "line 6",
        ),
        (
            "a tab as a whole block sequence entry",
            format!("{head}data:\n  k3:\n    - \t\n"),
            "line 7",
        ),
        (
            "`|` inside a flow sequence",
            format!("{head}data:\n  k3: [|, x]\n"),
            "line 6",
        ),
        (
            "`?\"` inside a flow sequence",
            format!("{head}data:\n  k3: [a, ?\"]\n"),
            "line 6",
        ),
        (
            "an empty `?` key at the end of a flow sequence",
            format!("{head}data:\n  k3:\n    - [-.5\\, ?]\n"),
            "line 7",
        ),
        (
            "a block scalar after a multi-line quoted scalar, a tab on its first line",
            format!("{head}data:\n  k4: \"one\n  two  three\"\n  k3: >\n    \t|\n  k5: x\n"),
            "line 9",
        ),
        // Found while closing the six (not in the generated run).
        (
            "a tab in the indentation of a comment line after a plain scalar",
            format!("{head}data:\n  k: v\n\t# c\n"),
            "line 7",
        ),
        (
            "a tab on a blank line after a plain scalar",
            format!("{head}data:\n  k: v\n  \t\n"),
            "line 7",
        ),
    ];
    let inputs: Vec<Vec<u8>> = cases
        .iter()
        .map(|(_, t, _)| t.as_bytes().to_vec())
        .collect();
    let answers = kubectl_readings(&inputs);
    for ((name, text, line), kubectl) in cases.iter().zip(&answers) {
        let Kubectl::Error(k) = kubectl else {
            panic!("{name}: kubectl reads {kubectl:?}");
        };
        match mansign_reading(text.as_bytes()) {
            Ok(m) => panic!("{name}: mansign reads {m:?}, kubectl refuses: {k}"),
            Err(e) => {
                println!("{name}: kubectl: {k}\n  mansign: {e}");
                assert!(
                    e.contains(line) && e.contains("document 1") && e.contains("kubectl"),
                    "{name}: {e}"
                );
            }
        }
    }
}

/// Found by the fuzz corpus of the reader (`message`, 2026-12-03): go-yaml's reader refuses
/// any character outside YAML's printable set, anywhere in a YAML document ("control
/// characters are not allowed"); saphyr-parser took one inside a quoted scalar or a comment
/// as text. Both must refuse each, mansign naming the document, line and character; what
/// both accept (tab, a BOM, no-break space, astral characters, and control characters in a
/// JSON stream, which kubectl reads with a JSON decoder) both read alike.
#[test]
fn control_characters_are_refused_where_kubectl_refuses_them() {
    let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let refused: Vec<(&str, String, &str)> = vec![
        ("U+0002 in a double-quoted scalar", format!("{head}data:\n  a: \"x\u{2}y\"\n"), "U+0002"),
        ("U+0001 in a single-quoted scalar", format!("{head}data:\n  a: 'x\u{1}y'\n"), "U+0001"),
        ("U+001B in a comment", format!("{head}# a \u{1b}[2J comment\ndata: {{}}\n"), "U+001B"),
        ("DEL in a plain scalar", format!("{head}data:\n  a: x\u{7f}y\n"), "U+007F"),
        ("U+0080 (C1) in a plain scalar", format!("{head}data:\n  a: x\u{80}y\n"), "U+0080"),
        ("U+FFFE in a block scalar", format!("{head}data:\n  a: |\n    x\u{fffe}y\n"), "U+FFFE"),
        (
            "DEL in a JSON document of a YAML stream",
            "# JSON after a comment: a YAML stream\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}, \"data\": {\"a\": \"x\u{7f}y\"}}\n".to_string(),
            "U+007F",
        ),
        (
            "U+0002 in the second document",
            format!("{head}data: {{}}\n---\n{head}data:\n  a: \"x\u{2}y\"\n"),
            "document 2",
        ),
    ];
    let accepted: Vec<(&str, String)> = vec![
        ("a tab in a quoted scalar", format!("{head}data:\n  a: \"x\ty\"\n")),
        ("a byte order mark", format!("\u{feff}{head}data:\n  a: x\n")),
        ("no-break space and an emoji", format!("{head}data:\n  a: \"x\u{a0}y \u{1F600}\"\n")),
        (
            "DEL and U+0080 in a JSON stream",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}, \"data\": {\"a\": \"x\u{7f}\u{80}y\"}}\n".to_string(),
        ),
    ];
    let inputs: Vec<Vec<u8>> = refused
        .iter()
        .map(|(_, t, _)| t.as_bytes().to_vec())
        .chain(accepted.iter().map(|(_, t)| t.as_bytes().to_vec()))
        .collect();
    let answers = kubectl_readings(&inputs);
    for ((name, text, needle), kubectl) in refused.iter().zip(&answers) {
        let Kubectl::Error(k) = kubectl else {
            panic!("{name}: kubectl reads {kubectl:?}");
        };
        match mansign_reading(text.as_bytes()) {
            Ok(m) => panic!("{name}: mansign reads {m:?}, kubectl refuses: {k}"),
            Err(e) => {
                println!("{name}: kubectl: {k}\n  mansign: {e}");
                assert!(
                    e.contains(needle) && e.contains("line") && e.contains("kubectl"),
                    "{name}: {e}"
                );
            }
        }
    }
    let mut tally = Tally::default();
    for ((name, text), kubectl) in accepted.iter().zip(&answers[refused.len()..]) {
        assert!(
            matches!(kubectl, Kubectl::Objects(_)),
            "{name}: kubectl refuses: {kubectl:?}"
        );
        tally.check(name, text.as_bytes(), kubectl);
    }
    tally.report("characters both accept");
    assert!(
        tally.mansign_stricter.is_empty(),
        "mansign refuses what kubectl reads: {:?}",
        tally.mansign_stricter
    );
}

#[test]
fn kubectl_reads_ten_thousand_generated_documents_as_mansign_does() {
    let mut g = Gen::new(0x6d61_6e73_6967_6e22);
    let mut inputs = Vec::new();
    let mut documents = 0;
    while documents < 10_500 {
        let (bytes, docs) = g.file();
        documents += docs;
        inputs.push(bytes);
    }
    let answers = kubectl_readings(&inputs);
    let mut tally = Tally::default();
    for (i, (input, kubectl)) in inputs.iter().zip(&answers).enumerate() {
        tally.check(&format!("generated #{i}"), input, kubectl);
    }
    println!("generated {documents} documents in {} files", inputs.len());
    tally.report("generated");
}

/// A deterministic generator of manifest files (splitmix64).
struct Gen(u64);

const WORDS: &[&str] = &[
    "a",
    "web",
    "x y",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "null",
    "Null",
    "~",
    "",
    "0",
    "1",
    "-1",
    "+1",
    "007",
    "0755",
    "0x1F",
    "0o17",
    "0b11",
    "1_000",
    "1e3",
    "1E3",
    "1.5",
    ".5",
    "-.5",
    "1.",
    "6.02e23",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775809",
    ".inf",
    "-.Inf",
    ".nan",
    "NaN",
    "12:30",
    "1:20:30",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "=",
    "<<",
    "-",
    "--",
    "---",
    "...",
    "?",
    ":",
    "a:b",
    "a: b",
    "a #b",
    "a#b",
    "#",
    "@x",
    "`x",
    "%x",
    "!x",
    "&x",
    "*x",
    "|",
    ">",
    "[a]",
    "{a}",
    "a,b",
    "é",
    "日本",
    "😀",
    "\\",
    "\\n",
    "'",
    "\"",
    "a'b",
    "a\"b",
    " a",
    "a ",
    "\t",
    "a\tb",
    "0.0",
    "-0",
    "+0",
    "0e0",
    "1_0",
    "Y",
    "n",
    "NO",
    "True",
    "TRUE",
    "0X1F",
    "0O17",
    "+.inf",
    "1e",
    "e1",
    "0x",
    "_1",
    "1__0",
    "190:20:30",
    "1:2",
    "-1:20",
];

const ESCAPES: &[&str] = &[
    "\\n",
    "\\t",
    "\\\\",
    "\\\"",
    "\\/",
    "\\0",
    "\\a",
    "\\b",
    "\\e",
    "\\f",
    "\\r",
    "\\v",
    "\\N",
    "\\_",
    "\\L",
    "\\P",
    "\\x41",
    "\\xe9",
    "\\u00e9",
    "\\u263A",
    "\\U0001F600",
    "\\ ",
    "\\\t",
    "\\q",
    "\\x4",
    "\\uD800",
    "\\U00110000",
    "\\'",
    "\\%",
    "\\u0000",
    "\\x7f",
];

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn word(&mut self) -> String {
        let mut w = self.pick(WORDS).to_string();
        if self.chance(20) {
            w.push_str(self.pick(WORDS));
        }
        w
    }

    /// A scalar in some style, as written after `key: ` at indentation `indent`.
    fn scalar(&mut self, indent: usize) -> String {
        let pad = " ".repeat(indent);
        match self.below(12) {
            0..=3 => self.word(),
            4 | 5 => format!("'{}'", self.word().replace('\'', "''")),
            6 | 7 => {
                let mut s = String::from("\"");
                for _ in 0..self.below(4) + 1 {
                    if self.chance(50) {
                        s.push_str(self.pick(ESCAPES));
                    } else {
                        s.push_str(&self.word().replace('\\', "\\\\").replace('"', "\\\""));
                    }
                }
                s.push('"');
                s
            }
            8 => {
                // A multi-line quoted scalar; continuation lines at various indentations
                // (the key's own, deeper, none).
                let quote = if self.chance(60) { '"' } else { '\'' };
                let cont = match self.below(4) {
                    0 => pad.clone(),
                    1 => format!("{pad}  "),
                    2 => String::new(),
                    _ => format!("{pad} "),
                };
                let blank = if self.chance(30) { "\n" } else { "" };
                let esc = if quote == '"' && self.chance(30) {
                    "\\"
                } else {
                    ""
                };
                format!("{quote}one{esc}\n{blank}{cont}two  three{quote}")
            }
            9 | 10 => {
                let ind = self.pick(&["|", "|-", "|+", ">", ">-", ">+", "|2", "|1-", ">2+"]);
                let mut s = format!("{ind}\n");
                let body_pad = format!("{pad}  ");
                for _ in 0..self.below(4) + 1 {
                    match self.below(6) {
                        0 => s.push('\n'),
                        1 => s.push_str(&format!("{body_pad}  {}\n", self.word())),
                        2 => s.push_str(&format!("{body_pad}\t{}\n", self.word())),
                        _ => s.push_str(&format!("{body_pad}{}\n", self.word())),
                    }
                }
                if self.chance(30) {
                    s.push_str("\n\n");
                }
                s.trim_end_matches('\n').to_string()
            }
            _ => {
                // Flow collections.
                let a = self.word();
                let b = self.word();
                match self.below(3) {
                    0 => format!("[{a}, {b}]"),
                    1 => format!("{{k: {a}, j: {b}}}"),
                    _ => format!(
                        "[\"{}\", '{}']",
                        a.replace(['\\', '"'], ""),
                        b.replace('\'', "")
                    ),
                }
            }
        }
    }

    fn key(&mut self) -> String {
        match self.below(8) {
            0 => format!(
                "\"{}\"",
                self.pick(&["k", "a b", "\\/", "x\\ty", "y", "on"])
            ),
            1 => format!("'{}'", self.pick(&["k", "a b", "y", "#", "1"])),
            2 => self
                .pick(&["y", "on", "1", "1.5", "null", "~", "true", "k", "<<"])
                .to_string(),
            _ => format!("k{}", self.below(6)),
        }
    }

    /// A block mapping body at `indent`, `depth` levels deep.
    fn mapping(&mut self, indent: usize, depth: usize) -> String {
        let pad = " ".repeat(indent);
        let mut out = String::new();
        for _ in 0..self.below(4) + 1 {
            let key = self.key();
            if self.chance(8) {
                out.push_str(&format!("{pad}# {}\n", self.word()));
            }
            match self.below(10) {
                0 if depth < 3 => {
                    out.push_str(&format!("{pad}{key}:\n"));
                    out.push_str(&self.mapping(indent + 2, depth + 1));
                }
                1 if depth < 3 => {
                    out.push_str(&format!("{pad}{key}:\n"));
                    let seq_pad = if self.chance(50) {
                        pad.clone()
                    } else {
                        format!("{pad}  ")
                    };
                    for _ in 0..self.below(3) + 1 {
                        let v = self.scalar(seq_pad.len() + 2);
                        out.push_str(&format!("{seq_pad}- {v}\n"));
                    }
                }
                2 => {
                    let v = self.scalar(indent);
                    out.push_str(&format!("{pad}{key}: &a{} {v}\n", self.below(3)));
                    out.push_str(&format!("{pad}{key}x: *a{}\n", self.below(3)));
                }
                3 => {
                    let v = self.scalar(indent);
                    let c = self.pick(&[" # c", "  #c", "#c", ""]);
                    out.push_str(&format!("{pad}{key}: {v}{c}\n"));
                }
                _ => {
                    let v = self.scalar(indent);
                    out.push_str(&format!("{pad}{key}: {v}\n"));
                }
            }
        }
        out
    }

    fn yaml_document(&mut self, n: usize) -> String {
        let mut s = String::new();
        if self.chance(10) {
            s.push_str("# leading comment\n");
        }
        let kind = self.pick(&["ConfigMap", "ConfigMap", "Secret", "List"]);
        s.push_str(&format!(
            "apiVersion: v1\nkind: {kind}\nmetadata:\n  name: doc-{n}\n"
        ));
        if kind == "List" {
            s.push_str("items:\n");
            for i in 0..self.below(3) {
                s.push_str(&format!(
                    "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: item-{i}\n  data:\n"
                ));
                s.push_str(&self.mapping(4, 2));
            }
        } else {
            s.push_str(if self.chance(85) {
                "data:\n"
            } else {
                "spec:\n"
            });
            s.push_str(&self.mapping(2, 0));
        }
        s
    }

    fn json_document(&mut self, n: usize) -> String {
        let mut data = String::new();
        for i in 0..self.below(4) + 1 {
            if i > 0 {
                data.push_str(", ");
            }
            let mut v = String::new();
            for _ in 0..self.below(3) + 1 {
                if self.chance(40) {
                    v.push_str(self.pick(&[
                        "\\n",
                        "\\\"",
                        "\\\\",
                        "\\/",
                        "\\u00e9",
                        "\\ud83d\\ude00",
                        "\\t",
                        "\\b",
                    ]));
                } else {
                    v.push_str(&self.word().replace(['\\', '"', '\t'], ""));
                }
            }
            let value = match self.below(6) {
                0 => self
                    .pick(&[
                        "1",
                        "1.5",
                        "-0",
                        "1e3",
                        "true",
                        "null",
                        "9223372036854775808",
                    ])
                    .to_string(),
                _ => format!("\"{v}\""),
            };
            data.push_str(&format!("\"k{i}\": {value}"));
        }
        format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {{\"name\": \"j{n}\"}}, \"data\": {{{data}}}}}"
        )
    }

    /// One file and the number of documents in it.
    fn file(&mut self) -> (Vec<u8>, usize) {
        let docs = self.below(3) + 1;
        let mut text = String::new();
        if self.chance(15) {
            // A JSON stream, or JSON documents after a comment (read as YAML).
            if self.chance(30) {
                text.push_str("# comment\n");
            }
            for i in 0..docs {
                text.push_str(&self.json_document(i));
                text.push_str(self.pick(&["\n", "", " ", "\n\n"]));
            }
        } else {
            for i in 0..docs {
                if i > 0 || self.chance(15) {
                    text.push_str(self.pick(&["---\n", "--- \n", "---   # c\n", "...\n---\n"]));
                }
                if self.chance(5) {
                    text.push_str("---\n");
                }
                text.push_str(&self.yaml_document(i));
            }
            if self.chance(5) {
                text.push_str("...\n");
            }
        }
        if self.chance(8) {
            text = text.replace('\n', "\r\n");
        }
        let mut bytes = text.into_bytes();
        if self.chance(5) {
            let mut with_bom = "\u{feff}".as_bytes().to_vec();
            with_bom.extend(bytes);
            bytes = with_bom;
        }
        (bytes, docs)
    }
}
