//! `mansign trust update`: trusted_root.json fetched over TUF from the loopback stack's
//! TUF repository, checked, written atomically; a wrong bootstrap root is refused.

use crate::common::stack;

use predicates::prelude::*;
use serde_json::Value;

fn mansign() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("mansign").unwrap()
}

fn log_ids(root: &Value) -> Vec<String> {
    let mut ids: Vec<String> = root["tlogs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["logId"]["keyId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// `mansign trust update` from `repository`'s TUF repository, bootstrapped with `root`'s
/// TUF root, into `target`.
fn trust_update(
    repository: &stack::Stack,
    root: &stack::Stack,
    target: &std::path::Path,
) -> assert_cmd::Command {
    let mut cmd = mansign();
    cmd.args([
        "trust",
        "update",
        "--tuf-url",
        repository.var("SIGSTORE_TUF_URL"),
    ])
    .args(["--tuf-root", root.var("SIGSTORE_TUF_ROOT"), "-o"])
    .arg(target);
    cmd
}

#[test]
fn update_fetches_the_stack_trusted_root_over_tuf() {
    let stack = stack::Stack::start_with(&[("WITH_TUF", "1")]);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("cache/trusted_root.json");
    trust_update(&stack, &stack, &target)
        .assert()
        .success()
        .stderr(predicate::str::contains("1 transparency log(s)"));
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(stack.trusted_root()).unwrap()).unwrap();
    assert_eq!(log_ids(&got), log_ids(&want));
    // Public data, read by whoever verifies (a webhook may run as another user).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "mode {mode:o}");
    }
    // the cached root is what verification uses by default
    mansign()
        .env("MANSIGN_TRUST_DIR", target.parent().unwrap())
        .args(["trust", "show"])
        .assert()
        .success()
        .stdout(predicate::str::contains(target.display().to_string()));
}

#[test]
fn update_refuses_a_repository_signed_by_another_root() {
    let a = stack::Stack::start_with(&[("WITH_TUF", "1")]);
    let b = stack::Stack::start_with(&[("WITH_TUF", "1")]);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("trusted_root.json");
    // Repository A, bootstrap root of B: A's metadata is not signed by B's keys.
    trust_update(&a, &b, &target)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("TUF update from"));
    assert!(!target.exists(), "nothing may be written on failure");
}

#[test]
fn custom_repository_needs_its_bootstrap_root() {
    mansign()
        .args(["trust", "update", "--tuf-url", "http://127.0.0.1:9/"])
        .assert()
        .code(2);
}
