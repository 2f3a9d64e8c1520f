//! Shared helpers for integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The `mansign` binary built for this test run.
pub fn mansign() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("mansign").expect("mansign binary");
    // Tests never prompt: an explicit (empty by default) password.
    cmd.env("COSIGN_PASSWORD", "test-password");
    cmd.env_remove("SIGSTORE_ID_TOKEN");
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

pub const MULTI_DOC: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: team-a
data:
  mode: "strict"
  enabled: "yes"
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: allow-host-path
  namespace: team-a
spec:
  exceptions:
  - policyName: disallow-host-path
    ruleNames:
    - host-path
  match:
    any:
    - resources:
        kinds:
        - Pod
        names:
        - backup-*
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
  namespace: team-a
data:
  a: "1"
"#;
