//! `mansign policy explain` for every shipped example policy (`examples/policy/`) and every
//! wild-shaped policy of `testdata/policies/wild/`, checked against golden files in
//! `tests/golden/explain/` (`NAME.txt`: the text output, `NAME.json`: `--output json`).
//!
//! After an intended change, regenerate them with
//! `MANSIGN_BLESS=1 cargo test --test it policy_explain::` and review the diff.

use crate::common;

use mansign::policy::explain::{explain_json, explain_text};
use mansign::policy::{LoadOptions, load_str};
use mansign::trust::TrustRoot;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn golden_dir() -> PathBuf {
    Path::new(REPO).join("tests/golden/explain")
}

/// Compares `actual` with the golden file, or writes it under `MANSIGN_BLESS=1`.
fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("MANSIGN_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "tests/golden/explain/{name}: {e} (MANSIGN_BLESS=1 cargo test --test it policy_explain:: \
             writes it)"
        )
    });
    assert_eq!(
        actual, expected,
        "tests/golden/explain/{name} differs (MANSIGN_BLESS=1 regenerates it)"
    );
}

/// The `.yaml` files of a repository folder, sorted.
fn policies(dir: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(Path::new(REPO).join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    out.sort();
    out
}

fn explain_file(rel_dir: &str, path: &Path, options: &LoadOptions, prefix: &str) -> Option<()> {
    let name = path.file_stem()?.to_str()?.to_string();
    let origin = format!("{rel_dir}/{}", path.file_name()?.to_str()?);
    let text = std::fs::read_to_string(path).unwrap();
    let set = match load_str(&origin, &text, path.parent()?, options) {
        Ok(set) => set,
        // A policy the loader refuses has nothing to explain; its refusal is tested where
        // it is documented.
        Err(_) => return None,
    };
    check_golden(&format!("{prefix}{name}.txt"), &explain_text(&set));
    let json = serde_json::to_string_pretty(&explain_json(&set)).unwrap() + "\n";
    check_golden(&format!("{prefix}{name}.json"), &json);
    Some(())
}

#[test]
fn every_example_policy_is_explained_as_its_golden_file_says() {
    let files = policies("examples/policy");
    assert!(
        files.len() >= 2,
        "examples/policy holds the shipped policies"
    );
    // The examples name no trust root: the embedded public-good root explains them.
    for path in &files {
        assert!(
            explain_file("examples/policy", path, &LoadOptions::default(), "").is_some(),
            "{} must load",
            path.display()
        );
    }
}

#[test]
fn every_wild_policy_that_loads_is_explained_as_its_golden_file_says() {
    let root = std::fs::read_to_string(
        Path::new(REPO).join("testdata/kyverno/trust-root/sigstore-public-trusted_root.json"),
    )
    .unwrap();
    let options = LoadOptions::default()
        .with_trust_root(Arc::new(TrustRoot::from_json(&root).unwrap()))
        .with_insecure_any_issuer(true);
    let explained = policies("testdata/policies/wild")
        .iter()
        .filter_map(|p| explain_file("testdata/policies/wild", p, &options, "wild-"))
        .count();
    assert_eq!(
        explained, 7,
        "every wild policy but foreign-roots.yaml loads"
    );
}

#[test]
fn every_golden_file_belongs_to_a_policy() {
    let mut names: Vec<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
        let source = match stem.strip_prefix("wild-") {
            Some(wild) => format!("testdata/policies/wild/{wild}.yaml"),
            None => format!("examples/policy/{stem}.yaml"),
        };
        assert!(
            Path::new(REPO).join(&source).is_file(),
            "tests/golden/explain/{name} has no policy {source}"
        );
    }
}

#[test]
fn cli_explain_prints_the_golden_text_and_json() {
    let policy = "examples/policy/kyverno-clusterpolicy.yaml";
    let out = common::mansign()
        .current_dir(REPO)
        .args(["policy", "explain", policy])
        .env("MANSIGN_TRUST_DIR", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let expected = std::fs::read_to_string(golden_dir().join("kyverno-clusterpolicy.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    let out = common::mansign()
        .current_dir(REPO)
        .args(["policy", "explain", policy, "--output", "json"])
        .env("MANSIGN_TRUST_DIR", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let expected =
        std::fs::read_to_string(golden_dir().join("kyverno-clusterpolicy.json")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn cli_explain_of_a_subject_only_policy_needs_the_flag() {
    let out = common::mansign()
        .current_dir(REPO)
        .args([
            "policy",
            "explain",
            "testdata/policies/wild/subject-only.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--insecure-any-issuer"));
}

#[test]
fn explain_names_max_age_anchored_regexes_and_exclusions() {
    let text = "apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata: {name: age}
spec:
  maxAge: 7d
  match: {kinds: [ConfigMap], namespaces: [prod-*]}
  exclude: {names: [scratch-*]}
  attestors:
  - entries:
    - keyless:
        subjectRegExp: https://github.com/org/.*
        issuer: https://token.actions.githubusercontent.com
";
    let set = load_str("age.yaml", text, Path::new(REPO), &LoadOptions::default()).unwrap();
    let out = explain_text(&set);
    assert!(
        out.contains("max age: signatures made more than 168h ago"),
        "{out}"
    );
    assert!(
        out.contains("matching regex ^(?:https://github.com/org/.*)$"),
        "{out}"
    );
    assert!(out.contains("except name scratch-*"), "{out}");
    assert!(out.contains("regexes anchored"), "{out}");
    assert!(!out.contains("WARNING"), "{out}");
}
