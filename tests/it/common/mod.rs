//! Shared helpers for integration tests.
#![allow(dead_code)]

pub mod actions_runner;
pub mod admission_fixture;
pub mod cluster;
pub mod connect_proxy;
pub mod dup_tests_a;
pub mod fault_proxy;
pub mod file_server;
pub mod fixtures;
pub mod kyverno;
pub mod ops_tools;
pub mod peers;
pub mod pki;
pub mod rekor_log;
pub mod stack;
pub mod stub_server;
pub mod tcp_fault_proxy;
pub mod test_instance;
pub mod webhook;

use std::path::{Path, PathBuf};

/// The `mansign` binary built for this test run.
pub fn mansign() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("mansign").expect("mansign binary");
    // Tests never prompt: an explicit (empty by default) password.
    cmd.env("COSIGN_PASSWORD", "test-password");
    cmd.env_remove("SIGSTORE_ID_TOKEN");
    // A trust root named by the environment would replace each test's own default.
    cmd.env_remove("SIGSTORE_TRUSTED_ROOT");
    cmd.env_remove("MANSIGN_TRUSTED_ROOT");
    cmd
}

/// `testdata/<rel>`: upstream fixture data kept in the repository (provenance in
/// `testdata/README.md`). A missing fixture fails the test; it never skips it.
pub fn fixture(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel);
    assert!(
        p.exists(),
        "fixture testdata/{rel} is missing (see testdata/README.md)"
    );
    p
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// A fresh key pair (`cosign.key`, `cosign.pub`) made by `mansign generate-key-pair`.
pub fn key_pair(dir: &Path, prefix: &str) -> (PathBuf, PathBuf) {
    mansign()
        .current_dir(dir)
        .args(["generate-key-pair", "--output-key-prefix", prefix])
        .assert()
        .success();
    (
        dir.join(format!("{prefix}.key")),
        dir.join(format!("{prefix}.pub")),
    )
}

/// A fresh temporary directory holding a key pair made by `mansign generate-key-pair`
/// (`PREFIX.key`, `PREFIX.pub`).
pub struct KeyDir {
    pub dir: tempfile::TempDir,
    pub key: PathBuf,
    pub pubkey: PathBuf,
}

/// A [`KeyDir`] with the key pair `PREFIX.key`, `PREFIX.pub`.
pub fn key_dir(prefix: &str) -> KeyDir {
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), prefix);
    KeyDir { dir, key, pubkey }
}

impl KeyDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `text` to `name` in the directory (see [`write`]).
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        write(self.path(), name, text)
    }

    /// `mansign sign FLAGS -f INPUT --key` with this key must fail with exit 2, its stderr
    /// naming each of `words` (see [`fails`]), and write no `INPUT.signed`.
    pub fn sign_fails(&self, flags: &[&str], input: &Path, words: &[&str]) {
        fails(&mut with_key("sign", flags, input, &self.key), 2, words);
        let mut signed = input.as_os_str().to_owned();
        signed.push(".signed");
        assert!(!Path::new(&signed).exists(), "{signed:?} written");
    }
}

/// `mansign VERB FLAGS -f INPUT --key KEY` (VERB `sign` or `verify`), not yet run: the
/// caller adds what else it needs and asserts the outcome.
pub fn with_key(
    verb: &str,
    flags: &[&str],
    input: impl AsRef<std::ffi::OsStr>,
    key: impl AsRef<std::ffi::OsStr>,
) -> assert_cmd::Command {
    let mut cmd = mansign();
    cmd.arg(verb)
        .args(flags)
        .arg("-f")
        .arg(input)
        .arg("--key")
        .arg(key);
    cmd
}

/// `mansign sign FLAGS -f INPUT --key KEY` (must succeed); returns the signed file it
/// writes, `INPUT.signed`.
pub fn sign_with(flags: &[&str], input: &Path, key: &Path) -> PathBuf {
    with_key("sign", flags, input, key).assert().success();
    let mut signed = input.as_os_str().to_owned();
    signed.push(".signed");
    PathBuf::from(signed)
}

/// `mansign sign -f INPUT --key KEY` (must succeed); returns the signed file it writes,
/// `INPUT.signed`.
pub fn sign_with_key(input: &Path, key: &Path) -> PathBuf {
    sign_with(&[], input, key)
}

/// `mansign sign -f INPUT --key KEY -o OUT EXTRA...` (must succeed).
pub fn sign_to(input: &Path, key: &Path, out: &Path, extra: &[&str]) {
    with_key("sign", &[], input, key)
        .arg("-o")
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

/// `mansign verify -f PATH --key KEY` must succeed and report every one of `count`
/// documents verified.
pub fn verifies_all_with_key(path: &Path, key: &Path, count: usize) {
    verify_with_key(path, key)
        .success()
        .stdout(predicates::str::contains(format!(
            "{count} of {count} document(s) verified"
        )));
}

/// `mansign verify -f PATH --key KEY`, run; the caller asserts the outcome.
pub fn verify_with_key(path: &Path, key: &Path) -> assert_cmd::assert::Assert {
    with_key("verify", &[], path, key).assert()
}

/// `mansign verify -f PATH --key KEY` must reject (exit 1) with `needle` in its report.
pub fn verify_fails_naming(path: &Path, pubkey: &Path, needle: &str) {
    verify_with_key(path, pubkey)
        .code(1)
        .stdout(predicates::str::contains(needle));
}

/// Some note of `notes` (a policy's or a conversion's) contains every one of `words`.
pub fn assert_noted(notes: &[String], words: &[&str]) {
    assert!(
        notes.iter().any(|n| words.iter().all(|w| n.contains(w))),
        "no note says {words:?}: {notes:?}"
    );
}

/// Runs `cmd` and asserts that it exits with `code` and that its stderr contains each of
/// `words`; returns the outcome for further checks.
pub fn fails(
    cmd: &mut assert_cmd::Command,
    code: i32,
    words: &[&str],
) -> assert_cmd::assert::Assert {
    let mut out = cmd.assert().code(code);
    for w in words {
        out = out.stderr(predicates::str::contains(*w));
    }
    out
}

/// Lists every file under `dir`, relative, sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    out.push(p.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Three documents many tests sign and verify: ConfigMaps `settings` and `other` around the
/// PolicyException `allow-host-path`, all in `team-a` (`testdata/common/multi-doc.yaml`).
pub const MULTI_DOC: &str = include_str!("../../../testdata/common/multi-doc.yaml");

/// Reads a CI file (a GitHub Actions workflow or `action.yml`, GitLab CI) as those services
/// read it: YAML 1.2 (`on:` is the key "on"), plain scalars resolved by the core schema for
/// booleans, nulls and integers, everything else a string. Not for Kubernetes manifests:
/// those go through `mansign::manifest::parse_documents`, which refuses what kubectl reads
/// otherwise.
pub fn ci_yaml(text: &str) -> serde_json::Value {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    use serde_json::{Map, Value};
    enum Frame {
        Seq(Vec<Value>, usize),
        Map(Map<String, Value>, Option<String>, usize),
    }
    fn scalar(text: &str, style: ScalarStyle) -> Value {
        if style != ScalarStyle::Plain {
            return Value::String(text.into());
        }
        match text {
            "" | "~" | "null" | "Null" | "NULL" => Value::Null,
            "true" | "True" | "TRUE" => Value::Bool(true),
            "false" | "False" | "FALSE" => Value::Bool(false),
            _ => text
                .parse::<i64>()
                .map_or_else(|_| Value::String(text.into()), Value::from),
        }
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors = std::collections::HashMap::new();
    let mut root = Value::Null;
    let mut parser = Parser::new_from_str(text);
    while let Some(event) = parser.next_event() {
        let (event, _) = event.expect("CI file is YAML");
        let (value, anchor) = match event {
            Event::MappingStart(anchor, _) => {
                stack.push(Frame::Map(Map::new(), None, anchor));
                continue;
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq(Vec::new(), anchor));
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => match stack.pop() {
                Some(Frame::Map(m, _, anchor)) => (Value::Object(m), anchor),
                Some(Frame::Seq(v, anchor)) => (Value::Array(v), anchor),
                None => continue,
            },
            Event::Scalar(text, style, anchor, _) => {
                if let Some(Frame::Map(_, key @ None, _)) = stack.last_mut() {
                    *key = Some(text.into_owned());
                    continue;
                }
                (scalar(&text, style), anchor)
            }
            Event::Alias(id) => (anchors.get(&id).cloned().unwrap_or(Value::Null), 0),
            _ => continue,
        };
        if anchor > 0 {
            anchors.insert(anchor, value.clone());
        }
        match stack.last_mut() {
            None => root = value,
            Some(Frame::Seq(items, _)) => items.push(value),
            Some(Frame::Map(map, key, _)) => {
                if let Some(k) = key.take() {
                    map.insert(k, value);
                }
            }
        }
    }
    root
}

/// Runs one of the scripts that build the Go-built test tools (`scripts/peers.sh`,
/// `scripts/cluster.sh build`, `scripts/ops-tools.sh`) and returns the `NAME=PATH` lines it
/// prints, each checked to be a file. A failed build FAILS the calling test with the
/// script's output: a missing tool is never a skip.
pub fn go_tools(script: &str, args: &[&str]) -> std::collections::HashMap<String, PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(script);
    let out = output_ok(
        std::process::Command::new("bash")
            .arg(&path)
            .args(args)
            .stdin(std::process::Stdio::null()),
        &format!(
            "building the test tools (scripts/{script} {})",
            args.join(" ")
        ),
    );
    let tools: std::collections::HashMap<String, PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), PathBuf::from(v)))
        .collect();
    for (name, p) in &tools {
        assert!(
            p.is_file(),
            "scripts/{script}: {name} ({}) is missing",
            p.display()
        );
    }
    tools
}

/// The path `go_tools` printed for `name`; a missing line fails the test.
pub fn go_tool(tools: &std::collections::HashMap<String, PathBuf>, name: &str) -> PathBuf {
    tools
        .get(name)
        .unwrap_or_else(|| panic!("the tool script printed no {name}= line"))
        .clone()
}

/// Builds the tools of `scripts/SCRIPT ARGS` (see [`go_tools`]) and makes a `T` of them with
/// `make`, which asks for each tool by name; logs the time the build took, as `WHAT ready in`.
pub fn built_tools<T: std::fmt::Debug>(
    what: &str,
    script: &str,
    args: &[&str],
    make: impl FnOnce(&dyn Fn(&str) -> PathBuf) -> T,
) -> T {
    let start = std::time::Instant::now();
    let lines = go_tools(script, args);
    let tools = make(&|name| go_tool(&lines, name));
    eprintln!(
        "{what} ready in {:.1} s: {tools:?}",
        start.elapsed().as_secs_f64()
    );
    tools
}

/// Runs `cmd` (a plain process: a build script, `kubectl`, ...) and fails the test, with its
/// output, unless it runs and succeeds; `what` names it in the failure.
pub fn output_ok(cmd: &mut std::process::Command, what: &str) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The objects of a YAML stream (empty documents dropped), read as mansign reads manifests.
pub fn parse_objects(text: &str) -> Vec<serde_json::Value> {
    mansign::manifest::parse_documents(text, &mansign::limits::Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
        .collect()
}

/// `kubectl kustomize DIR` (DIR relative to the repository; the real `kubectl`, which must be
/// on PATH: it is not optional), parsed into objects.
pub fn kustomize(dir: &str) -> Vec<serde_json::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let out = output_ok(
        std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&path),
        &format!("kubectl kustomize {dir}"),
    );
    parse_objects(&String::from_utf8(out.stdout).unwrap())
}

/// The strings of a JSON list; anything else fails the test.
pub fn strings(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// Kyverno's unit-test ClusterPolicy (the shape of upstream kyverno's
/// `validate_manifest_test.go`): policy `unit`, one rule `manifests` matching `kinds` (e.g.
/// `ConfigMap, Service`). `spec_extra` is spec fields before `rules:` (indented two spaces),
/// `rule_extra` rule fields after `match` (indented four), `validate_extra` validate fields
/// before `manifests:` (indented six); `attestors` follows `attestors:` as it is.
pub fn kyverno_unit_policy_with_attestors(
    spec_extra: &str,
    kinds: &str,
    rule_extra: &str,
    validate_extra: &str,
    attestors: &str,
) -> String {
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: unit
spec:
{spec_extra}  rules:
  - name: manifests
    match:
      any:
      - resources:
          kinds: [{kinds}]
{rule_extra}    validate:
{validate_extra}      manifests:
        attestors:
{attestors}"
    )
}

/// [`kyverno_unit_policy_with_attestors`] whose one attestor is the fixtures' first test key
/// (`testdata/kyverno/keys/ecdsa-pub-1.pem`, inline as `publicKeys`).
pub fn kyverno_unit_policy(
    spec_extra: &str,
    kinds: &str,
    rule_extra: &str,
    validate_extra: &str,
) -> String {
    let pem = std::fs::read_to_string(fixture("kyverno/keys/ecdsa-pub-1.pem")).unwrap();
    let key: String = pem
        .trim()
        .lines()
        .map(|l| format!("                  {l}\n"))
        .collect();
    let attestors =
        format!("        - entries:\n          - keys:\n              publicKeys: |-\n{key}");
    kyverno_unit_policy_with_attestors(spec_extra, kinds, rule_extra, validate_extra, &attestors)
}

/// A finished process's stdout then stderr, as text.
pub fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Embeds one signature set (index 0: `signature`, with `certificate_pem` and `bundle` when
/// given) over `message` in `value`'s annotations, replacing any there.
pub fn embed_one(
    value: &mut serde_json::Value,
    message: &[u8],
    signature: &[u8],
    certificate_pem: Option<String>,
    bundle: Option<mansign::annotations::RekorBundle>,
) {
    let set = mansign::annotations::SignatureSet {
        index: 0,
        signature: signature.to_vec(),
        certificate_pem,
        bundle,
    };
    mansign::annotations::embed(
        value,
        &mansign::annotations::AnnotationDomain::default(),
        message,
        &[set],
        mansign::annotations::EmbedMode::Replace,
        &mansign::Limits::default(),
    )
    .unwrap();
}

/// The AdmissionReview body an API server sends when user `mallory` (group
/// `system:authenticated`) creates `object`, a PolicyException of `group`/`version` named
/// `name` in `namespace`, under request id `uid`.
pub fn mallory_creates_exception(
    uid: &str,
    object: &serde_json::Value,
    (group, version): (&str, &str),
    name: &serde_json::Value,
    namespace: &serde_json::Value,
) -> Vec<u8> {
    let request = serde_json::json!({
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": "PolicyException"},
        "resource": {"group": group, "version": version, "resource": "policyexceptions"},
        "name": name,
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {"username": "mallory", "groups": ["system:authenticated"]},
        "object": object,
    });
    admission_review_body(request, None)
}

/// The `AdmissionReview` (admission.k8s.io/v1) the API server sends for `request`, with
/// `request.namespace` set when `namespace` is given; serialized.
pub fn admission_review_body(mut request: serde_json::Value, namespace: Option<&str>) -> Vec<u8> {
    if let Some(ns) = namespace {
        request["namespace"] = serde_json::json!(ns);
    }
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    }))
    .unwrap()
}

/// `text` read as one manifest file (`Source::Named(source)`, relative path `name`) with the
/// default limits; it must load.
pub fn load_text(source: &str, name: &str, text: &str) -> mansign::manifest::ManifestFile {
    mansign::manifest::load_reader(
        mansign::manifest::Source::Named(source.into()),
        name.into(),
        text.as_bytes(),
        &mansign::Limits::default(),
    )
    .unwrap()
}

/// The documents of the YAML file at `path`, as mansign reads them.
pub fn read_documents(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    mansign::manifest::parse_documents(&text, &mansign::Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

/// The documents of the YAML file at `path`, loaded as `mansign verify` loads its inputs.
pub fn load_documents(path: &Path) -> Vec<mansign::manifest::Document> {
    mansign::manifest::load_inputs(&[path.to_path_buf()], &mansign::Limits::default())
        .unwrap()
        .into_iter()
        .flat_map(|f| f.documents)
        .collect()
}

/// The PEM file at `path`, each line indented by `indent` spaces and ended by a newline (for
/// a policy's `publicKeys: |-` block).
pub fn indented_pem(path: &Path, indent: usize) -> String {
    let pad = " ".repeat(indent);
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect()
}

/// Copies the tree `from` to `to` (created).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The body of the Markdown fenced block whose opening fence `fence` must stand at
/// `lines[start]`, and the index after its closing fence. A missing or unclosed fence fails
/// the test, naming `file` and the line: a typo must not quietly turn an example off.
pub fn fenced_block(lines: &[&str], start: usize, fence: &str, file: &str) -> (String, usize) {
    assert_eq!(
        lines.get(start).map(|l| l.trim_end()),
        Some(fence),
        "{file}:{}: a marker must be followed by {fence}",
        start + 1
    );
    let mut body = String::new();
    let mut j = start + 1;
    while j < lines.len() && lines[j].trim_end() != "```" {
        body.push_str(lines[j]);
        body.push('\n');
        j += 1;
    }
    assert!(j < lines.len(), "{file}:{}: unclosed fence", start + 1);
    (body, j + 1)
}

/// `text` written to `app.yaml` in a fresh [`KeyDir`] (key pair `prefix`), signed through
/// the CLI into `app.signed.yaml`; returns the directory and the signed documents, in order.
pub fn signed_stream(prefix: &str, text: &str) -> (KeyDir, Vec<serde_json::Value>) {
    let kd = key_dir(prefix);
    let input = kd.write("app.yaml", text);
    let output = kd.path().join("app.signed.yaml");
    with_key("sign", &[], &input, &kd.key)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    let docs = read_documents(&output);
    (kd, docs)
}

/// `CMD admission review --policy POLICY -f REVIEW`, run (CMD: the `mansign` binary as the
/// caller set it up).
pub fn admission_review_run(
    mut cmd: assert_cmd::Command,
    policy: &Path,
    review: &Path,
) -> std::process::Output {
    cmd.args(["admission", "review", "--policy"])
        .arg(policy)
        .arg("-f")
        .arg(review)
        .output()
        .unwrap()
}

/// [`admission_review_run`] with a plain `mansign`, and its stdout read as the response
/// (stdout that is not JSON fails the test, showing stderr).
pub fn admission_review_json(
    policy: &Path,
    review: &Path,
) -> (std::process::Output, serde_json::Value) {
    let out = admission_review_run(mansign(), policy, review);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let response: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    (out, response)
}
pub mod json_schema;
