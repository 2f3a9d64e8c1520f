//! The kubectl plugin: `mansign verify-resource` with the deprecated `MANSIGN_KUBECTL`
//! reads live objects through `kubectl get -o json` (a stand-in `kubectl` prints recorded
//! objects and records its arguments), and the binary installed as `kubectl-mansign` is
//! `kubectl mansign`. Reading through mansign's own client, against a real API server, is
//! `cluster_access`.

use crate::common;

use common::{MULTI_DOC, key_pair, mansign, write};
use predicates::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A directory with a stand-in `kubectl`: it writes its arguments, one per line, to
/// `argv` beside it, prints `objects.json` (or fails as `fail` says) and exits.
struct FakeKubectl {
    dir: tempfile::TempDir,
}

impl FakeKubectl {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "#!/bin/sh\n\
             printf '%s\\n' \"$@\" > '{d}/argv'\n\
             if [ -f '{d}/fail' ]; then cat '{d}/fail' >&2; exit 1; fi\n\
             if [ -f '{d}/huge' ]; then head -c 40000000 /dev/zero | tr '\\0' ' '; exit 0; fi\n\
             cat '{d}/objects.json'\n",
            d = dir.path().display()
        );
        let path = write(dir.path(), "kubectl", &script);
        make_executable(&path);
        FakeKubectl { dir }
    }

    fn serve(&self, objects: &Value) {
        std::fs::write(
            self.dir.path().join("objects.json"),
            serde_json::to_string_pretty(objects).unwrap(),
        )
        .unwrap();
    }

    fn argv(&self) -> Option<Vec<String>> {
        std::fs::read_to_string(self.dir.path().join("argv"))
            .ok()
            .map(|t| t.lines().map(str::to_string).collect())
    }

    /// `mansign` with this kubectl first on PATH and named by the deprecated
    /// `MANSIGN_KUBECTL` (without it, verify-resource reads the cluster itself).
    fn mansign(&self) -> assert_cmd::Command {
        let mut cmd = mansign();
        cmd.env("PATH", self.path_var());
        cmd.env("MANSIGN_KUBECTL", self.dir.path().join("kubectl"));
        cmd
    }

    /// `mansign ARGS --key KEY` with this kubectl first on PATH, run.
    fn verify_with_key(
        &self,
        args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
        key: &Path,
    ) -> assert_cmd::assert::Assert {
        self.mansign().args(args).arg("--key").arg(key).assert()
    }

    fn path_var(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// MULTI_DOC signed with a fresh key, as the API server returns the objects.
fn live_objects() -> (tempfile::TempDir, Vec<Value>, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (key, pubkey) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    common::sign_with_key(&input, &key);
    let text = std::fs::read_to_string(dir.path().join("x.yaml.signed")).unwrap();
    let objects = mansign::manifest::parse_documents(&text, &mansign::Limits::default())
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, (_, mut v))| {
            let meta = v["metadata"].as_object_mut().unwrap();
            meta.insert(
                "uid".into(),
                json!(format!("0000000{i}-2c55-4a4e-9a49-6f0e1c3f7d21")),
            );
            meta.insert("resourceVersion".into(), json!("48213"));
            meta.insert("creationTimestamp".into(), json!("2026-11-20T10:00:00Z"));
            v
        })
        .collect();
    (dir, objects, pubkey)
}

/// A fake kubectl serving the live objects (as one List); the directory holding the key
/// they are signed with, and the public key.
fn kubectl_serving_live_objects() -> (FakeKubectl, tempfile::TempDir, PathBuf) {
    let kubectl = FakeKubectl::new();
    let (dir, objects, pubkey) = live_objects();
    kubectl.serve(&list(&objects));
    (kubectl, dir, pubkey)
}

fn list(items: &[Value]) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
}

#[test]
fn verify_resource_reads_objects_through_kubectl_and_prints_one_line_per_object() {
    let (kubectl, _dir, pubkey) = kubectl_serving_live_objects();
    let out = kubectl
        .verify_with_key(
            [
                "verify-resource",
                "configmaps",
                "-n",
                "team-a",
                "--context",
                "prod",
            ],
            &pubkey,
        )
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for (i, line) in lines[..3].iter().enumerate() {
        assert!(
            line.starts_with(&format!(
                "kubectl --context=prod get configmaps -o json --namespace=team-a: document 1, List item {}",
                i + 1
            )) && line.contains(": verified ("),
            "{line}"
        );
    }
    assert_eq!(lines[3], "3 of 3 document(s) verified");
    assert_eq!(
        kubectl.argv().unwrap(),
        [
            "--context=prod",
            "get",
            "configmaps",
            "-o",
            "json",
            "--namespace=team-a"
        ]
    );
}

#[test]
fn verify_resource_fails_with_exit_1_on_a_changed_live_object() {
    let kubectl = FakeKubectl::new();
    let (_dir, mut objects, pubkey) = live_objects();
    objects[2]["data"]["a"] = json!("2");
    kubectl.serve(&list(&objects));
    kubectl
        .verify_with_key(
            ["verify-resource", "configmaps", "-A", "-o", "json"],
            &pubkey,
        )
        .code(1)
        .stdout(predicate::str::contains(r#""check": "diff""#));
    assert_eq!(
        kubectl.argv().unwrap(),
        ["get", "configmaps", "-o", "json", "--all-namespaces"]
    );
}

#[test]
fn verify_resource_reads_a_single_named_object() {
    let kubectl = FakeKubectl::new();
    let (_dir, objects, pubkey) = live_objects();
    kubectl.serve(&objects[0]);
    kubectl
        .verify_with_key(
            ["verify-resource", "configmap/settings", "-n", "team-a"],
            &pubkey,
        )
        .success()
        .stdout(predicate::str::contains("1 of 1 document(s) verified"));
}

#[test]
fn verify_resource_without_the_profile_names_the_server_fields() {
    // The kubernetes profile is the default; `--ignore-profile none` really compares.
    let (kubectl, _dir, pubkey) = kubectl_serving_live_objects();
    kubectl
        .verify_with_key(
            ["verify-resource", "configmaps", "--ignore-profile", "none"],
            &pubkey,
        )
        .code(1)
        .stdout(predicate::str::contains("metadata.uid"));
}

/// What the fake kubectl does, the resource asked for, and the words of the input error
/// (exit 2) mansign must give.
struct InputError {
    name: &'static str,
    kubectl: fn(&FakeKubectl),
    resource: &'static str,
    words: &'static [&'static str],
}

const INPUT_ERRORS: &[InputError] = &[
    InputError {
        name: "kubectl fails: an input error with its message",
        kubectl: |k| {
            write(
                k.dir.path(),
                "fail",
                "Error from server (NotFound): configmaps \"nope\" not found\n",
            );
        },
        resource: "configmap/nope",
        words: &[
            "kubectl get configmap/nope -o json: failed",
            "configmaps \"nope\" not found",
        ],
    },
    InputError {
        name: "an empty list",
        kubectl: |k| k.serve(&list(&[])),
        resource: "configmaps",
        words: &["no objects found"],
    },
    InputError {
        name: "kubectl output is read up to the input limit only",
        kubectl: |k| {
            write(k.dir.path(), "huge", "");
        },
        resource: "configmaps",
        words: &["output larger than 33554432 bytes"],
    },
];

#[test]
fn kubectl_failures_and_empty_or_huge_output_are_input_errors() {
    for case in INPUT_ERRORS {
        let kubectl = FakeKubectl::new();
        let (_dir, _objects, pubkey) = live_objects();
        (case.kubectl)(&kubectl);
        let out = kubectl.verify_with_key(["verify-resource", case.resource], &pubkey);
        let out = out.get_output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", case.name);
        for w in case.words {
            assert!(stderr.contains(w), "{}: no {w:?} in {stderr}", case.name);
        }
    }
}

#[test]
fn arguments_that_kubectl_would_read_as_flags_are_refused_before_running_it() {
    let (kubectl, _dir, pubkey) = kubectl_serving_live_objects();
    for args in [
        &["verify-resource", "--", "--kubeconfig=/tmp/evil"][..],
        &["verify-resource", "configmaps", "-n", "--kubeconfig=/x"][..],
        &["verify-resource", "configmaps", "-n", "Team A"][..],
        &["verify-resource", "configmaps", "--context=-v9"][..],
        &["verify-resource", "configmaps/a/b"][..],
    ] {
        kubectl.verify_with_key(args, &pubkey).code(2);
        assert_eq!(kubectl.argv(), None, "{args:?} ran kubectl");
    }
}

#[test]
fn verify_resource_refuses_file_inputs() {
    let kubectl = FakeKubectl::new();
    let (dir, _objects, pubkey) = live_objects();
    common::fails(
        kubectl
            .mansign()
            .args(["verify-resource", "configmaps", "-f"])
            .arg(dir.path().join("x.yaml.signed"))
            .arg("--key")
            .arg(&pubkey),
        2,
        &["use `mansign verify` for files"],
    );
}

#[test]
fn installed_as_kubectl_mansign_the_binary_is_the_kubectl_plugin() {
    let (kubectl, _dir, pubkey) = kubectl_serving_live_objects();
    let plugin = kubectl.dir.path().join("kubectl-mansign");
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("mansign"), &plugin).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = assert_cmd::Command::new(&plugin);
        cmd.env("PATH", kubectl.path_var())
            .env("MANSIGN_KUBECTL", kubectl.dir.path().join("kubectl"))
            .env("COSIGN_PASSWORD", "test-password")
            .args(args);
        cmd
    };
    run(&["verify-resource", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Usage: kubectl mansign verify-resource",
        ));
    run(&[
        "verify-resource",
        "configmaps",
        "--key",
        pubkey.to_str().unwrap(),
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains("3 of 3 document(s) verified"));
}

/// The krew manifest, rendered by scripts/krew-manifest.sh from release binaries: one
/// archive per platform holding `kubectl-mansign`, named by URL and SHA-256.
#[test]
fn the_krew_manifest_installs_the_binary_as_kubectl_mansign() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dist = tempfile::tempdir().unwrap();
    let targets = [
        "aarch64-apple-darwin",
        "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin",
        "x86_64-unknown-linux-musl",
    ];
    for (i, t) in targets.iter().enumerate() {
        // Distinct contents, so a mixed-up checksum is caught.
        write(
            dist.path(),
            &format!("mansign-{t}"),
            &format!("binary {i}\n"),
        );
    }
    let status = std::process::Command::new("bash")
        .arg(repo.join("scripts/krew-manifest.sh"))
        .args(["v0.1.0"])
        .arg(dist.path())
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(dist.path().join("mansign.yaml")).unwrap();
    let manifest = common::ci_yaml(&text);
    assert_eq!(
        manifest["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(manifest["kind"], "Plugin");
    assert_eq!(manifest["metadata"]["name"], "mansign");
    assert_eq!(manifest["spec"]["version"], "v0.1.0");
    let platforms = manifest["spec"]["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), targets.len());
    for p in platforms {
        let uri = p["uri"].as_str().unwrap();
        let name = uri.rsplit('/').next().unwrap();
        assert_eq!(
            uri,
            format!("https://github.com/mansign/mansign/releases/download/v0.1.0/{name}")
        );
        let target = name
            .strip_prefix("kubectl-mansign-")
            .and_then(|n| n.strip_suffix(".tar.gz"))
            .unwrap();
        let archive = std::fs::read(dist.path().join(name)).unwrap();
        use sha2::Digest as _;
        assert_eq!(p["sha256"], hex::encode(sha2::Sha256::digest(&archive)));
        assert_eq!(p["bin"], "kubectl-mansign");
        assert_eq!(p["files"][0]["from"], "kubectl-mansign");
        // The archive holds exactly that binary.
        let listing = std::process::Command::new("tar")
            .args(["-xzOf"])
            .arg(dist.path().join(name))
            .arg("kubectl-mansign")
            .output()
            .unwrap();
        let i = targets.iter().position(|t| *t == target).unwrap();
        assert_eq!(listing.stdout, format!("binary {i}\n").as_bytes(), "{name}");
        let (os, arch) = (
            &p["selector"]["matchLabels"]["os"],
            &p["selector"]["matchLabels"]["arch"],
        );
        let expected = match target {
            "x86_64-unknown-linux-musl" => ("linux", "amd64"),
            "aarch64-unknown-linux-musl" => ("linux", "arm64"),
            "x86_64-apple-darwin" => ("darwin", "amd64"),
            "aarch64-apple-darwin" => ("darwin", "arm64"),
            other => panic!("unexpected target {other}"),
        };
        assert_eq!((os.as_str().unwrap(), arch.as_str().unwrap()), expected);
    }
    // A missing binary renders nothing.
    std::fs::remove_file(dist.path().join("mansign-x86_64-apple-darwin")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("bash")
        .arg(repo.join("scripts/krew-manifest.sh"))
        .args(["v0.1.0"])
        .arg(dist.path())
        .arg(out.path().join("m.yaml"))
        .status()
        .unwrap();
    assert!(!status.success());
    assert!(!out.path().join("m.yaml").exists());
}
