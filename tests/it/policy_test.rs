//! `mansign policy test` (issue 25 §3): Kyverno CLI test suites (`kyverno-test.yaml`) for
//! manifest rules, built here from objects signed with mansign keys, run by mansign and by
//! the real Kyverno CLI (kubectl-kyverno v1.19.0 from scripts/peers.sh) with the same rows
//! (policy, rule, resource, result, reason), except where mansign is stricter
//! (docs/compatibility.md, "policy test"): each such case shows both. Bad suites are refused
//! naming file, document and field.

use crate::common;

use common::peers::{Run, run_peer};
use common::{fixture, key_pair, mansign, write};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  namespace: team-a\ndata:\n  mode: strict\n";

/// A key's PEM, indented.
fn pem(public: &Path, indent: usize) -> String {
    common::indented_pem(public, indent)
}

fn key_entry(public: &Path) -> String {
    format!(
        "          - keys:\n              publicKeys: |-\n{}              signatureAlgorithm: sha256\n",
        pem(public, 16)
    )
}

/// Two ClusterPolicies with `validate.manifests` rules for ConfigMaps: `signed-config`
/// (rule `by-release-key`: k1) and `two-of-three` (rule `two-signers`: 2 of k1, k2, k3).
fn policies(keys: &[PathBuf]) -> String {
    let head = |name: &str, rule: &str| {
        format!(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: {name}\nspec:\n  admission: true\n  background: false\n  rules:\n  - name: {rule}\n    match:\n      any:\n      - resources:\n          kinds:\n          - ConfigMap\n    validate:\n      failureAction: Enforce\n      manifests:\n        dryRun:\n          enable: false\n        attestors:\n"
        )
    };
    format!(
        "{}        - entries:\n{}---\n{}        - count: 2\n          entries:\n{}{}{}",
        head("signed-config", "by-release-key"),
        key_entry(&keys[0]),
        head("two-of-three", "two-signers"),
        key_entry(&keys[0]),
        key_entry(&keys[1]),
        key_entry(&keys[2]),
    )
}

/// The suite's directory: policies.yaml, resources.yaml (signed by mansign here), keys.
struct Suite {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

fn sign(input: &Path, out: &Path, key: &Path, append: bool) {
    let mut cmd = mansign();
    cmd.args(["sign", "-f"])
        .arg(input)
        .arg("-k")
        .arg(key)
        .arg("-o")
        .arg(out);
    if append {
        cmd.arg("--append");
    }
    cmd.assert().success();
}

/// Resources: `good` (k1), `other` (k2), `unsigned`, `tampered` (k1, then data changed),
/// `pair` (k1 and k3), and a Secret no rule applies to.
fn suite() -> Suite {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("suites");
    let work = dir.path().join("work");
    let home = dir.path().join("home");
    for d in [&root, &work, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let keys: Vec<_> = (1..=3).map(|i| key_pair(&work, &format!("k{i}"))).collect();
    let mut docs = Vec::new();
    let signed = |name: &str, signers: &[usize]| -> String {
        let mut cur = write(&work, &format!("{name}.yaml"), &CM.replace("NAME", name));
        for (n, &k) in signers.iter().enumerate() {
            let out = work.join(format!("{name}.{n}.yaml"));
            sign(&cur, &out, &keys[k].0, n > 0);
            cur = out;
        }
        std::fs::read_to_string(cur).unwrap()
    };
    docs.push(signed("good", &[0]));
    docs.push(signed("other", &[1]));
    docs.push(signed("unsigned", &[]));
    let tampered = signed("tampered", &[0]);
    assert!(tampered.contains("mode: strict"));
    docs.push(tampered.replacen("mode: strict", "mode: lax", 1));
    docs.push(signed("pair", &[0, 2]));
    docs.push(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: team-a\nstringData:\n  a: b\n"
            .into(),
    );
    let base = root.join("base");
    write(&base, "resources.yaml", &docs.join("---\n"));
    let publics: Vec<PathBuf> = keys.iter().map(|(_, p)| p.clone()).collect();
    write(&base, "policies.yaml", &policies(&publics));
    Suite {
        _dir: dir,
        root,
        home,
    }
}

impl Suite {
    /// A suite directory `name` with the base policies and resources and these results.
    fn with_results(&self, name: &str, results: &str) -> PathBuf {
        self.with_test(
            name,
            &format!(
                "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: {name}\npolicies:\n- policies.yaml\nresources:\n- resources.yaml\nresults:\n{results}"
            ),
        )
    }

    fn with_test(&self, name: &str, test: &str) -> PathBuf {
        let d = self.root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        for f in ["policies.yaml", "resources.yaml"] {
            std::fs::copy(self.root.join("base").join(f), d.join(f)).unwrap();
        }
        write(&d, "kyverno-test.yaml", test);
        d
    }

    fn kyverno(&self, dir: &Path) -> Run {
        run_peer(
            "kubectl-kyverno",
            &self.home,
            &[
                OsStr::new("test"),
                dir.as_os_str(),
                OsStr::new("-o"),
                OsStr::new("json"),
            ],
        )
    }
}

/// Expectations that hold: what both Kyverno and mansign decide for each resource.
const RIGHT: &str = "- policy: signed-config
  rule: by-release-key
  kind: ConfigMap
  resources: [good, team-a/pair]
  result: pass
- policy: signed-config
  rule: by-release-key
  kind: ConfigMap
  resources: [unsigned, tampered]
  result: fail
- policy: signed-config
  rule: by-release-key
  kind: ConfigMap
  resources: [other]
  result: error
- policy: two-of-three
  rule: two-signers
  kind: ConfigMap
  resources: [pair]
  result: pass
- policy: two-of-three
  kind: ConfigMap
  resources: [good, other]
  result: error
- policy: two-of-three
  rule: two-signers
  kind: ConfigMap
  resources: [unsigned]
  result: fail
- policy: signed-config
  rule: by-release-key
  kind: Secret
  resources: [token]
  result: pass
";

/// The rows of a report as (policy, rule, resource, result, reason), sorted (Kyverno's row
/// order follows Go map iteration where a result names no resource).
type Rows = Vec<(String, String, String, String, String)>;

fn mansign_rows(report: &Value) -> Rows {
    let mut rows: Rows = report["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["results"].as_array().unwrap().clone())
        .map(|r| {
            let result = match r["result"].as_str().unwrap() {
                "pass" => "Pass",
                "fail" => "Fail",
                other => panic!("result {other}"),
            };
            (
                r["policy"].as_str().unwrap().to_string(),
                r["rule"].as_str().unwrap().to_string(),
                r["resource"].as_str().unwrap().to_string(),
                result.to_string(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// The JSON arrays `kubectl-kyverno test -o json` prints (one per suite), as rows.
fn kyverno_rows(run: &Run) -> Rows {
    let mut rows = Rows::new();
    let mut lines = run.stdout.lines();
    while let Some(line) = lines.next() {
        let mut text = match line {
            "[]" => continue,
            "[" => String::from("[\n"),
            _ => continue,
        };
        for l in lines.by_ref() {
            text.push_str(l);
            text.push('\n');
            if l == "]" {
                break;
            }
        }
        let array: Vec<BTreeMap<String, Value>> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("kyverno JSON: {e}\n{text}"));
        for r in array {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            rows.push((
                s("POLICY"),
                s("RULE"),
                s("RESOURCE"),
                s("RESULT"),
                s("REASON"),
            ));
        }
    }
    rows.sort();
    rows
}

/// `mansign policy test DIR` must pass (exit 0), `passed` results passing.
fn mansign_passes(dir: &Path, passed: u64) {
    let (code, report, stderr) = run_mansign(dir);
    assert_eq!(code, Some(0), "{report:#}{stderr}");
    assert_eq!(report["passed"], passed, "{report:#}");
}

/// `mansign policy test DIR` must refuse the suite (exit 2), naming `needle` on stderr;
/// returns the stderr.
fn mansign_refuses(dir: &Path, needle: &str) -> String {
    let (code, _, stderr) = run_mansign(dir);
    assert_eq!(code, Some(2), "{needle}: {stderr}");
    assert!(stderr.contains(needle), "{needle}: {stderr}");
    stderr
}

fn run_mansign(dir: &Path) -> (Option<i32>, Value, String) {
    let out = mansign()
        .args(["policy", "test"])
        .arg(dir)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = if stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"))
    };
    (out.status.code(), report, stderr)
}

fn row(policy: &str, rule: &str, resource: &str, result: &str, reason: &str) -> Rows {
    vec![(
        policy.into(),
        rule.into(),
        format!("v1/{resource}"),
        result.into(),
        reason.into(),
    )]
}

#[test]
fn a_suite_of_signed_objects_gives_the_same_rows_under_mansign_and_kyverno() {
    let s = suite();
    let dir = s.with_results("right", RIGHT);
    let kyverno = s.kyverno(&dir);
    println!("kubectl-kyverno test:\n{}", kyverno.all());
    assert!(kyverno.success, "{kyverno:?}");
    let (code, report, stderr) = run_mansign(&dir);
    assert_eq!(code, Some(0), "{report:#}{stderr}");
    let ours = mansign_rows(&report);
    assert_eq!(ours, kyverno_rows(&kyverno));
    // 10 rows: 2 + 2 + 1 + 1 + 2 + 1 + the Secret, excluded (a pass).
    assert_eq!(ours.len(), 10, "{ours:#?}");
    assert!(ours.contains(
        &row(
            "signed-config",
            "by-release-key",
            "Secret/team-a/token",
            "Pass",
            "Excluded"
        )[0]
    ));
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(10), Some(0))
    );

    // The text report: a table per suite and Kyverno's summary line.
    let out = mansign()
        .args(["policy", "test"])
        .arg(&dir)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("ID  POLICY"), "{text}");
    assert!(
        text.contains("Test Summary: 10 tests passed and 0 tests failed"),
        "{text}"
    );
    assert!(
        kyverno
            .stdout
            .contains("Test Summary: 10 tests passed and 0 tests failed"),
        "{kyverno:?}"
    );
}

#[test]
fn a_wrong_expectation_fails_under_both_with_the_reason() {
    let s = suite();
    // tampered is refused (fail), other is refused with an error, good passes.
    let dir = s.with_results(
        "wrong",
        "- policy: signed-config
  rule: by-release-key
  kind: ConfigMap
  resources: [tampered]
  result: pass
- policy: signed-config
  rule: by-release-key
  kind: ConfigMap
  resources: [other]
  result: fail
- policy: signed-config
  rule: by-release-key
  kind: ConfigMap
  resources: [good]
  result: fail
- policy: no-such-policy
  rule: by-release-key
  kind: ConfigMap
  resources: [good]
  result: pass
- policy: two-of-three
  rule: two-signers
  kind: ConfigMap
  resources: [pair]
  result: skip
",
    );
    let kyverno = s.kyverno(&dir);
    println!("kubectl-kyverno test:\n{}", kyverno.all());
    assert_eq!(kyverno.code, Some(1), "{kyverno:?}");
    let (code, report, stderr) = run_mansign(&dir);
    assert_eq!(code, Some(1), "{report:#}{stderr}");
    let ours = mansign_rows(&report);
    assert_eq!(ours, kyverno_rows(&kyverno));
    let want: Rows = [
        row(
            "signed-config",
            "by-release-key",
            "ConfigMap/team-a/tampered",
            "Fail",
            "Want pass, got fail",
        ),
        row(
            "signed-config",
            "by-release-key",
            "ConfigMap/team-a/other",
            "Fail",
            "Want fail, got error",
        ),
        row(
            "signed-config",
            "by-release-key",
            "ConfigMap/team-a/good",
            "Fail",
            "Want fail, got pass",
        ),
        row(
            "no-such-policy",
            "by-release-key",
            "ConfigMap/team-a/good",
            "Fail",
            "Not found",
        ),
        row(
            "two-of-three",
            "two-signers",
            "ConfigMap/team-a/pair",
            "Fail",
            "Want skip, got pass",
        ),
    ]
    .concat();
    let mut want = want;
    want.sort();
    assert_eq!(ours, want);
    // mansign says why: the field that changed, the key that did not verify.
    let messages: Vec<&str> = report["suites"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0].contains("modified since signing") && messages[0].contains("data.mode"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("signature does not match the message and key"),
        "{messages:?}"
    );
    let out = mansign()
        .args(["policy", "test"])
        .arg(&dir)
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("Test Summary: 0 tests passed and 5 tests failed"),
        "{text}"
    );
    assert!(
        text.contains("  1: FAILED [diff] modified since signing"),
        "{text}"
    );
}

/// Several suites under one directory, found recursively; `--file-name` names another file.
#[test]
fn suites_are_found_recursively_and_by_file_name() {
    let s = suite();
    s.with_results(
        "nested/one",
        &RIGHT[..RIGHT.find("- policy: two-of-three").unwrap()],
    );
    s.with_results("nested/deeper/two", RIGHT);
    let nested = s.root.join("nested");
    let kyverno = s.kyverno(&nested);
    assert!(kyverno.success, "{kyverno:?}");
    let (code, report, stderr) = run_mansign(&nested);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["suites"].as_array().unwrap().len(), 2);
    assert_eq!(mansign_rows(&report), kyverno_rows(&kyverno));

    let other = s.root.join("nested/one/kyverno-test.yaml");
    std::fs::rename(&other, other.with_file_name("manifests-test.yaml")).unwrap();
    let out = mansign()
        .args(["policy", "test", "--file-name", "manifests-test.yaml"])
        .arg(&nested)
        .args(["-o", "json"])
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let suites = report["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 1);
    assert!(
        suites[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("one/manifests-test.yaml")
    );
    // Policies given as a directory.
    let as_dir = s.with_results("policy-dir", RIGHT);
    std::fs::create_dir_all(as_dir.join("policies")).unwrap();
    std::fs::rename(
        as_dir.join("policies.yaml"),
        as_dir.join("policies/all.yaml"),
    )
    .unwrap();
    let test = std::fs::read_to_string(as_dir.join("kyverno-test.yaml")).unwrap();
    write(
        &as_dir,
        "kyverno-test.yaml",
        &test.replace("- policies.yaml", "- policies"),
    );
    let kyverno = s.kyverno(&as_dir);
    assert!(kyverno.success, "{kyverno:?}");
    let (code, report, stderr) = run_mansign(&as_dir);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(mansign_rows(&report), kyverno_rows(&kyverno));

    // A suite file named directly.
    mansign()
        .args(["policy", "test"])
        .arg(s.root.join("nested/deeper/two/kyverno-test.yaml"))
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "Test Summary: 10 tests passed and 0 tests failed",
        ));
    // --file-name is a file name.
    mansign()
        .args(["policy", "test", "--file-name", "sub/kyverno-test.yaml"])
        .arg(&nested)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "a file name, without directories",
        ));
    // A directory without suites is an error, not an empty success.
    let empty = tempfile::tempdir().unwrap();
    mansign()
        .args(["policy", "test"])
        .arg(empty.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no kyverno-test.yaml under"));
}

/// Kyverno's own CLI suite for manifest verification (testdata/kyverno/
/// cli-verify-signature, copied from kyverno/kyverno) passes unchanged.
#[test]
fn kyverno_own_manifest_suite_passes_unchanged() {
    let suite = fixture("kyverno/cli-verify-signature");
    mansign_passes(&suite, 3);
}

/// The converted policy (`mansign policy convert`) in a suite: a ManifestPolicy is named
/// `<policy>-<rule>`, and its rule carries the same name.
#[test]
fn a_suite_runs_a_converted_manifest_policy_with_the_same_results() {
    let s = suite();
    let dir = s.with_results("converted", "");
    mansign()
        .args(["policy", "convert"])
        .arg(dir.join("policies.yaml"))
        .arg("-o")
        .arg(dir.join("converted.yaml"))
        .assert()
        .success();
    let results = RIGHT
        .replace(
            "policy: signed-config\n  rule: by-release-key",
            "policy: signed-config-by-release-key\n  rule: signed-config-by-release-key",
        )
        .replace(
            "policy: two-of-three\n  rule: two-signers",
            "policy: two-of-three-two-signers\n  rule: two-of-three-two-signers",
        )
        .replace(
            "policy: two-of-three\n",
            "policy: two-of-three-two-signers\n",
        );
    write(
        &dir,
        "kyverno-test.yaml",
        &format!(
            "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: converted\npolicies:\n- converted.yaml\nresources:\n- resources.yaml\nresults:\n{results}"
        ),
    );
    mansign_passes(&dir, 10);
}

/// Where mansign is stricter than `kyverno test`: each case shows what Kyverno does with
/// the same suite (docs/compatibility.md, "policy test").
#[test]
fn where_mansign_is_stricter_both_outcomes_are_shown() {
    let s = suite();
    // 1. A listed resource the suite does not have: Kyverno checks the result against
    //    every resource instead (and here passes the Secret as Excluded, fails the rest).
    let dir = s.with_results(
        "typo",
        "- policy: signed-config\n  rule: by-release-key\n  kind: ConfigMap\n  resources: [godo]\n  result: pass\n",
    );
    let kyverno = s.kyverno(&dir);
    let rows = kyverno_rows(&kyverno);
    assert_eq!(rows.len(), 6, "Kyverno checked every resource: {rows:#?}");
    mansign_refuses(
        &dir,
        "kyverno-test.yaml: document 1: results[0].resources[0]: \"godo\" names no resource of the suite",
    );

    // 2. A rule the policy does not have: Kyverno passes every resource as Excluded.
    let dir = s.with_results(
        "no-rule",
        "- policy: signed-config\n  rule: by-relaese-key\n  kind: ConfigMap\n  resources: [tampered]\n  result: pass\n",
    );
    let kyverno = s.kyverno(&dir);
    assert!(kyverno.success, "{kyverno:?}");
    assert_eq!(
        kyverno_rows(&kyverno),
        row(
            "signed-config",
            "by-relaese-key",
            "ConfigMap/team-a/tampered",
            "Pass",
            "Excluded"
        )
    );
    mansign_refuses(
        &dir,
        "results[0].rule: policy \"signed-config\" has no manifest verification rule \"by-relaese-key\"",
    );

    // 3. An unknown result value: Kyverno fails the row, mansign refuses the suite.
    let dir = s.with_results(
        "bad-result",
        "- policy: signed-config\n  rule: by-release-key\n  kind: ConfigMap\n  resources: [good]\n  result: passed\n",
    );
    let kyverno = s.kyverno(&dir);
    assert_eq!(kyverno.code, Some(1), "{kyverno:?}");
    assert_eq!(
        kyverno_rows(&kyverno),
        row(
            "signed-config",
            "by-release-key",
            "ConfigMap/team-a/good",
            "Fail",
            "Want passed, got pass"
        )
    );
    mansign_refuses(&dir, "results[0].result: \"passed\" is not a result");
}

/// Suites both tools refuse: the untyped format (Kyverno 1.19 calls it deprecated) and an
/// unknown field.
#[test]
fn suites_kyverno_refuses_are_refused() {
    let s = suite();
    for (name, test, ours) in [
        (
            "untyped",
            "name: untyped\npolicies: [policies.yaml]\nresources: [resources.yaml]\nresults:\n- policy: signed-config\n  rule: by-release-key\n  kind: ConfigMap\n  resources: [good]\n  result: pass\n",
            "the untyped suite format",
        ),
        (
            "unknown-field",
            "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: x\npolicies: [policies.yaml]\nresources: [resources.yaml]\nresult:\n- policy: signed-config\n",
            "document 1: result: unknown field `result`",
        ),
    ] {
        let dir = s.with_test(name, test);
        let kyverno = s.kyverno(&dir);
        assert!(!kyverno.success, "{name}: {kyverno:?}");
        let (code, report, stderr) = run_mansign(&dir);
        assert_eq!(code, Some(2), "{name}: {report}{stderr}");
        assert!(report.is_null(), "{name}: no partial output");
        assert!(stderr.contains(ours), "{name}: {stderr}");
        assert!(stderr.contains("kyverno-test.yaml"), "{name}: {stderr}");
    }
}

/// A Kyverno policy without manifest rules (a pattern rule mansign does not run).
const PATTERN_POLICY: &str = "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: require-labels\nspec:\n  rules:\n  - name: check\n    match:\n      any:\n      - resources:\n          kinds: [ConfigMap]\n    validate:\n      pattern:\n        metadata:\n          labels:\n            team: \"?*\"\n";

/// Every refusal names the file, the document and the field, exits 2 and prints nothing on
/// stdout.
#[test]
fn bad_suites_are_refused_naming_file_and_field() {
    let s = suite();
    let head = "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: bad\n";
    let good_result = "results:\n- policy: signed-config\n  rule: by-release-key\n  kind: ConfigMap\n  resources: [good]\n  result: pass\n";
    let std = "policies: [policies.yaml]\nresources: [resources.yaml]\n";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "exceptions",
            format!("{head}{std}exceptions: [exceptions.yaml]\n{good_result}"),
            "document 1: exceptions: not supported",
        ),
        (
            "variables",
            format!("{head}{std}variables: values.yaml\n{good_result}"),
            "document 1: variables: not supported",
        ),
        (
            "patched",
            format!("{head}{std}{good_result}  patchedResources: patched.yaml\n"),
            "results[0].patchedResources: not supported",
        ),
        (
            "delete",
            format!("{head}{std}{good_result}  operation: DELETE\n"),
            "results[0].operation: \"DELETE\" is not supported",
        ),
        (
            "no-policy-field",
            format!("{head}{std}results:\n- rule: x\n  result: pass\n  kind: ConfigMap\n"),
            "results[0].policy: required",
        ),
        (
            "no-result-field",
            format!("{head}{std}results:\n- policy: signed-config\n  kind: ConfigMap\n"),
            "results[0].result: required",
        ),
        (
            "wrong-kind",
            format!(
                "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\nmetadata:\n  name: x\n{std}{good_result}"
            ),
            "cli.kyverno.io/v1alpha1 Values is not a suite",
        ),
        (
            "missing-policy-file",
            format!("{head}policies: [nope.yaml]\nresources: [resources.yaml]\n{good_result}"),
            "nope.yaml: cannot read",
        ),
        (
            "missing-resource-file",
            format!("{head}policies: [policies.yaml]\nresources: [nope.yaml]\n{good_result}"),
            "document 1: resources: ",
        ),
        (
            "no-policies",
            format!("{head}resources: [resources.yaml]\n{good_result}"),
            "document 1: policies: no policy files listed",
        ),
        (
            "url",
            format!(
                "{head}policies: [https://example.com/p.yaml]\nresources: [resources.yaml]\n{good_result}"
            ),
            "policies[0]: \"https://example.com/p.yaml\": only local files are read",
        ),
        (
            "yaml",
            format!("{head}{std}results: [\n"),
            "kyverno-test.yaml: document 1:",
        ),
        (
            "resource-url",
            format!(
                "{head}policies: [policies.yaml]\nresources: [https://example.com/r.yaml]\n{good_result}"
            ),
            "resources[0]: \"https://example.com/r.yaml\": only local files are read",
        ),
        (
            "no-resources",
            format!("{head}policies: [policies.yaml]\n{good_result}"),
            "document 1: resources: no resource files listed",
        ),
        (
            "only-pattern-policies",
            format!("{head}policies: [pattern.yaml]\nresources: [resources.yaml]\n{good_result}"),
            "no manifest verification rules",
        ),
        (
            "not-a-list",
            format!("{head}policies: policies.yaml\nresources: [resources.yaml]\n"),
            "document 1: policies: invalid type",
        ),
    ];
    for (name, test, want) in cases {
        let dir = s.with_test(name, &test);
        write(&dir, "pattern.yaml", PATTERN_POLICY);
        let (code, report, stderr) = run_mansign(&dir);
        assert_eq!(code, Some(2), "{name}: {report}{stderr}");
        assert!(report.is_null(), "{name}: printed {report}");
        assert!(stderr.contains(want), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("{name}/")),
            "{name}: the file is named: {stderr}"
        );
    }

    // A policy file whose policies have no manifest rule, named by a result.
    let dir = s.with_test(
        "pattern-policy",
        &format!(
            "{head}policies: [policies.yaml, pattern.yaml]\nresources: [resources.yaml]\nresults:\n- policy: require-labels\n  rule: check\n  kind: ConfigMap\n  resources: [good]\n  result: fail\n"
        ),
    );
    write(&dir, "pattern.yaml", PATTERN_POLICY);
    mansign_refuses(
        &dir,
        "results[0].policy: \"require-labels\" has no manifest verification rule",
    );

    // A rule of another type in a policy that has a manifest rule too.
    let dir = s.with_test(
        "mixed-policy",
        &format!(
            "{head}policies: [mixed.yaml]\nresources: [resources.yaml]\nresults:\n- policy: require-labels\n  rule: check\n  kind: ConfigMap\n  resources: [good]\n  result: fail\n"
        ),
    );
    let base = std::fs::read_to_string(dir.join("policies.yaml")).unwrap();
    let manifest_rule = base
        .split("\n---\n")
        .next()
        .unwrap()
        .split("  rules:\n")
        .nth(1)
        .unwrap()
        .to_string();
    write(
        &dir,
        "mixed.yaml",
        &format!("{PATTERN_POLICY}{manifest_rule}\n"),
    );
    mansign_refuses(
        &dir,
        "results[0].rule: policy \"require-labels\" has no manifest verification rule \"check\" (it is a rule of another type",
    );

    // A policy directory with more files than the bound.
    let dir = s.with_test(
        "many-policies",
        &format!(
            "{head}policies: [policies.yaml, lots]\nresources: [resources.yaml]\n{good_result}"
        ),
    );
    for i in 0..=1000 {
        write(&dir.join("lots"), &format!("p{i:04}.yaml"), "");
    }
    mansign_refuses(&dir, "more than 1000 policy files");

    // Two resources with one identity.
    let dir = s.with_test("dup", &format!("{head}{std}{good_result}"));
    let text = std::fs::read_to_string(dir.join("resources.yaml")).unwrap();
    let first = text.split("---\n").next().unwrap().to_string();
    write(&dir, "resources.yaml", &format!("{text}---\n{first}"));
    mansign_refuses(&dir, "resources: ConfigMap team-a/good appears twice");

    // A suite file larger than the input limit is refused before it is parsed.
    let dir = s.root.join("large");
    std::fs::create_dir_all(&dir).unwrap();
    let big = std::fs::File::create(dir.join("kyverno-test.yaml")).unwrap();
    big.set_len(mansign::Limits::default().max_input_bytes as u64 + 1)
        .unwrap();
    mansign_refuses(&dir, "larger than");

    // A path that does not exist.
    mansign_refuses(&s.root.join("nowhere"), "nowhere: cannot read");
}

/// The bounds of docs/policy.md ("Test suites"): suite files, directory levels, resource
/// documents per suite, rows per run. Each is refused before the work it bounds.
#[test]
fn bounds_are_enforced() {
    let s = suite();
    let dir = tempfile::tempdir().unwrap();
    // 1001 suite files.
    let many = dir.path().join("many");
    for i in 0..=1000 {
        write(&many.join(format!("s{i:04}")), "kyverno-test.yaml", "");
    }
    mansign_refuses(&many, "suite files: more than 1000");
    // 34 directory levels.
    let mut deep = dir.path().join("deep");
    for i in 0..34 {
        deep = deep.join(format!("d{i}"));
    }
    write(&deep, "kyverno-test.yaml", "");
    mansign_refuses(&dir.path().join("deep"), "directory levels: more than 32");

    // 1200 resource documents in one suite (two files of 600).
    let unsigned: String = (0..600)
        .map(|i| CM.replace("NAME", &format!("cm-{i}")))
        .collect::<Vec<_>>()
        .join("---\n");
    let head = "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: big\npolicies: [policies.yaml]\n";
    let big = s.with_test(
        "big",
        &format!("{head}resources: [a.yaml, b.yaml]\nresults: []\n"),
    );
    write(&big, "a.yaml", &unsigned);
    write(&big, "b.yaml", &unsigned.replace("cm-", "other-"));
    mansign_refuses(&big, "document 1: resources: more than 1000");

    // 600 resources x 167 results naming none of them: 100,200 rows.
    let results =
        "- policy: signed-config\n  rule: by-release-key\n  kind: ConfigMap\n  result: fail\n"
            .repeat(167);
    let rows = s.with_test(
        "rows",
        &format!("{head}resources: [a.yaml]\nresults:\n{results}"),
    );
    write(&rows, "a.yaml", &unsigned);
    let stderr = mansign_refuses(&rows, "result rows");
    assert!(stderr.contains("more than 100000"), "{stderr}");
}
