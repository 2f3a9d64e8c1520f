//! The composite GitHub Action (`action.yml`): its sign step (`scripts/action-sign.sh`)
//! run the way the runner runs it — inputs as `INPUT_*`, the OIDC token from a local
//! endpoint playing `ACTIONS_ID_TOKEN_REQUEST_URL` — against the loopback Sigstore stack.

mod common;
#[path = "common/stack.rs"]
mod stack;
#[path = "common/stub_server.rs"]
mod stub_server;

use common::{files_under, write};
use stack::Stack;
use std::path::Path;
use std::process::Command;
use stub_server::StubServer;

fn github_token_endpoint(token: String) -> StubServer {
    StubServer::start(move |req, _| {
        if req.method == "GET" && req.path() == "/_apis/token" {
            (200, serde_json::json!({"value": token}).to_string())
        } else {
            (404, "{}".to_string())
        }
    })
}

fn action_step(stack: &Stack, github: &StubServer, workspace: &Path) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/action-sign.sh"))
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("MANSIGN", assert_cmd::cargo::cargo_bin("mansign"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", workspace.join("github_output"))
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/_apis/token?api-version=2.0", github.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token")
        .env("INPUT_FULCIO_URL", stack.fulcio_url())
        .env("INPUT_REKOR_URL", stack.rekor_url())
        .env("INPUT_TRUSTED_ROOT", stack.trusted_root())
        .env("INPUT_SCOPE", "document")
        .env("INPUT_EXPIRES", "");
    cmd
}

#[test]
fn action_signs_unsigned_into_signed_and_removes_inputs() {
    let stack = Stack::start();
    let github = github_token_endpoint(stack.id_token());
    let ws = tempfile::tempdir().unwrap();
    write(ws.path(), "unsigned/a.yaml", common::MULTI_DOC);
    write(ws.path(), "unsigned/team/b.yaml", common::MULTI_DOC);
    let out = action_step(&stack, &github, ws.path())
        .env("INPUT_FILES", "unsigned/\n")
        .env("INPUT_OUTPUT", "signed/")
        .env("INPUT_REMOVE_INPUT", "true")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        files_under(&ws.path().join("signed")),
        ["a.yaml", "team/b.yaml"]
    );
    assert!(files_under(&ws.path().join("unsigned")).is_empty());
    let outputs = std::fs::read_to_string(ws.path().join("github_output")).unwrap();
    assert_eq!(outputs.trim(), "signed=6");
    assert_eq!(github.requests().len(), 1);
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 1);
    common::mansign()
        .args(["verify", "-f"])
        .arg(ws.path().join("signed"))
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .args([
            "--certificate-identity",
            stack.identity(),
            "--certificate-oidc-issuer",
            stack.issuer(),
        ])
        .assert()
        .success();
}

#[test]
fn action_failure_fails_the_step_and_keeps_the_inputs() {
    let stack = Stack::start();
    let github = github_token_endpoint(stack.id_token());
    stack.inject_faults(serde_json::json!({"service": "rekor", "statuses": [400]}));
    let ws = tempfile::tempdir().unwrap();
    write(ws.path(), "unsigned/a.yaml", common::MULTI_DOC);
    let out = action_step(&stack, &github, ws.path())
        .env("INPUT_FILES", "unsigned/a.yaml")
        .env("INPUT_OUTPUT", "signed/")
        .env("INPUT_REMOVE_INPUT", "true")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("::error::mansign sign failed"));
    assert_eq!(files_under(&ws.path().join("unsigned")), ["a.yaml"]);
    assert!(!ws.path().join("signed").exists());
}

#[test]
fn action_refuses_a_bad_boolean_input() {
    let stack = Stack::start();
    let github = github_token_endpoint(stack.id_token());
    let ws = tempfile::tempdir().unwrap();
    write(ws.path(), "unsigned/a.yaml", common::MULTI_DOC);
    let out = action_step(&stack, &github, ws.path())
        .env("INPUT_FILES", "unsigned/a.yaml")
        .env("INPUT_OUTPUT", "signed/")
        .env("INPUT_REMOVE_INPUT", "yes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        github.requests().is_empty(),
        "no token may be requested for a bad input"
    );
}

#[test]
fn action_yml_passes_every_input_to_the_sign_step() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")).unwrap();
    let action: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let inputs = action["inputs"].as_object().unwrap();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let env = |id: &str| {
        steps
            .iter()
            .find(|s| s["id"] == id)
            .and_then(|s| s["env"].as_object())
            .cloned()
            .unwrap_or_default()
    };
    let (install, sign) = (env("install"), env("sign"));
    let script = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/action-sign.sh"),
    )
    .unwrap();
    for name in inputs.keys() {
        let var = format!("INPUT_{}", name.to_uppercase().replace('-', "_"));
        let wired = sign.get(&var).or_else(|| install.get(&var));
        assert_eq!(
            wired.and_then(|v| v.as_str()),
            Some(format!("${{{{ inputs.{name} }}}}").as_str()),
            "input {name} is not passed as {var}"
        );
        assert!(
            install.contains_key(&var) || script.contains(&var),
            "{var} is not used by the sign step"
        );
    }
    assert_eq!(action["runs"]["using"], "composite");
}
