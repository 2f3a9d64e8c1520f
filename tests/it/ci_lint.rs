//! actionlint and shellcheck over everything CI-shaped in the repository, plus the rules
//! its workflows keep (`scripts/install-lint-tools.sh` installs both tools into
//! `target/lint-venv`; `scripts/test.sh` runs it; without them these tests fail).
//!
//! What is checked, and how:
//! - `.github/workflows/*.yml`: actionlint (with shellcheck on every `run:`).
//! - `examples/github/*.yaml`: copied into a scratch repository's `.github/workflows/`, with
//!   `uses: mansign/mansign@<ref>` rewritten to `uses: ./` and this `action.yml` at its root,
//!   so actionlint also checks every `with:` input and `steps.<id>.outputs` use against the
//!   action's real metadata (a test proves it catches an unknown input).
//! - `action.yml`: actionlint does not lint action metadata, so its composite steps are
//!   turned into a `workflow_call` workflow whose inputs are the action's inputs; actionlint
//!   then checks every `${{ inputs.X }}` and `${{ github.X }}` expression and shellchecks every
//!   `run:`. `tests/it/github_action.rs` checks the rest structurally (inputs reach the scripts
//!   through `env:` only, outputs name outputs the scripts write).
//! - `scripts/action-*.sh`, `scripts/release-*.sh`, `scripts/install-lint-tools.sh`,
//!   `scripts/krew-manifest.sh`, `deploy/argocd-cmp/generate.sh` and the GitLab job's script:
//!   shellcheck.
//! - every workflow: third-party actions pinned by commit SHA, `permissions: {}` at the top
//!   and explicit per job, `persist-credentials: false` on checkout.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A lint tool from target/lint-venv (or `$ACTIONLINT` / `$SHELLCHECK`).
fn tool(name: &str, var: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/lint-venv/bin").join(name));
    assert!(
        p.is_file(),
        "{} is missing: run scripts/install-lint-tools.sh (scripts/test.sh does)",
        p.display()
    );
    p
}

fn actionlint() -> Command {
    let mut cmd = Command::new(tool("actionlint", "ACTIONLINT"));
    cmd.arg("-no-color")
        .arg("-shellcheck")
        .arg(tool("shellcheck", "SHELLCHECK"))
        .arg("-pyflakes=");
    cmd
}

fn log(out: &Output) -> String {
    common::all_output(out)
}

fn files_in(dir: &Path, ext: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| ext.contains(&e))
        })
        .collect();
    v.sort();
    v
}

fn repo_workflows() -> Vec<PathBuf> {
    files_in(&repo().join(".github/workflows"), &["yml", "yaml"])
}

fn example_workflows() -> Vec<PathBuf> {
    files_in(&repo().join("examples/github"), &["yml", "yaml"])
}

#[test]
fn repository_workflows_pass_actionlint() {
    let files = repo_workflows();
    assert!(files.len() >= 2, "ci.yml and release.yml: {files:?}");
    let out = actionlint()
        .current_dir(repo())
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", log(&out));
}

/// A scratch repository: this action.yml (and its scripts) at the root, `workflows` in
/// `.github/workflows/` with the mansign action rewritten to `uses: ./`.
fn scratch_repo(workflows: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // actionlint finds the project (and local actions) from the repository root.
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(git.status.success(), "{}", log(&git));
    std::fs::copy(repo().join("action.yml"), dir.path().join("action.yml")).unwrap();
    let wf_dir = dir.path().join(".github/workflows");
    std::fs::create_dir_all(&wf_dir).unwrap();
    for (name, text) in workflows {
        std::fs::write(wf_dir.join(name), text).unwrap();
    }
    dir
}

/// The example with `uses: mansign/mansign@<ref>` replaced by `uses: ./` (at least once).
fn with_local_action(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut n = 0;
    let out: Vec<String> = text
        .lines()
        .map(|l| match l.split_once("uses: mansign/mansign@") {
            Some((indent, _)) => {
                n += 1;
                format!("{indent}uses: ./")
            }
            None => l.to_string(),
        })
        .collect();
    assert!(n > 0, "{} does not use the mansign action", path.display());
    out.join("\n") + "\n"
}

#[test]
fn example_workflows_pass_actionlint_against_this_actions_inputs_and_outputs() {
    let examples = example_workflows();
    assert_eq!(examples.len(), 2, "{examples:?}");
    let workflows: Vec<(String, String)> = examples
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                with_local_action(p),
            )
        })
        .collect();
    let dir = scratch_repo(&workflows);
    let out = actionlint().current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", log(&out));
}

/// The example workflow with one `from` replaced by `to` (an input or output that
/// action.yml does not declare): actionlint must reject it, naming `named`.
fn actionlint_rejects(what: &str, from: &str, to: &str, named: &str) {
    let sign = with_local_action(&repo().join("examples/github/sign.yaml"));
    let broken = sign.replace(from, to);
    assert_ne!(broken, sign, "{what}: {from} is in the example");
    let dir = scratch_repo(&[("sign.yaml".into(), broken)]);
    let out = actionlint().current_dir(dir.path()).output().unwrap();
    assert!(
        !out.status.success(),
        "actionlint accepted an unknown {what}"
    );
    assert!(log(&out).contains(named), "{what}: {}", log(&out));
}

#[test]
fn actionlint_rejects_an_input_that_action_yml_does_not_declare() {
    actionlint_rejects(
        "input",
        "remove-input: true",
        "remove-inputs: true",
        "remove-inputs",
    );
}

#[test]
fn actionlint_rejects_an_output_that_action_yml_does_not_declare() {
    actionlint_rejects(
        "output",
        "steps.sign.outputs.files",
        "steps.sign.outputs.written",
        "written",
    );
}

/// action.yml's composite steps as a reusable workflow whose inputs are the action's.
fn action_as_workflow(action: &Value) -> Value {
    let mut inputs = serde_json::Map::new();
    for (name, spec) in action["inputs"].as_object().unwrap() {
        let mut input = serde_json::json!({"type": "string", "required": spec["required"].as_bool().unwrap_or(false)});
        if let Some(d) = spec.get("default") {
            input["default"] = Value::String(match d {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        inputs.insert(name.clone(), input);
    }
    serde_json::json!({
        "name": "action.yml steps",
        "on": {"workflow_call": {"inputs": inputs}},
        "permissions": {},
        "jobs": {"action": {
            "runs-on": "ubuntu-latest",
            "permissions": {"id-token": "write"},
            "steps": action["runs"]["steps"],
        }},
    })
}

#[test]
fn action_yml_steps_pass_actionlint_as_a_workflow_with_the_actions_inputs() {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let action: Value = common::ci_yaml(&text);
    let wf = action_as_workflow(&action);
    let dir = scratch_repo(&[("action-steps.yml".into(), mansign::manifest::to_yaml(&wf))]);
    let out = actionlint().current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", log(&out));

    // The check has teeth: a misspelt input in a step's env fails it.
    let mut broken = wf.clone();
    broken["jobs"]["action"]["steps"][1]["env"]["INPUT_FILES"] =
        Value::String("${{ inputs.file }}".into());
    let dir = scratch_repo(&[(
        "action-steps.yml".into(),
        mansign::manifest::to_yaml(&broken),
    )]);
    let out = actionlint().current_dir(dir.path()).output().unwrap();
    assert!(!out.status.success(), "actionlint accepted inputs.file");
}

#[test]
fn step_and_release_scripts_pass_shellcheck() {
    let mut scripts: Vec<PathBuf> = files_in(&repo().join("scripts"), &["sh"])
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("action-")
                || name.starts_with("release-")
                || name == "install-lint-tools.sh"
                || name == "krew-manifest.sh"
        })
        .collect();
    // The Argo CD plugin's generate command (POSIX sh: shellcheck reads its shebang).
    scripts.push(repo().join("deploy/argocd-cmp/generate.sh"));
    scripts.sort();
    assert!(scripts.len() >= 9, "{scripts:?}");
    let out = Command::new(tool("shellcheck", "SHELLCHECK"))
        .current_dir(repo())
        .args(["-x", "--severity=style"])
        .args(scripts.iter().map(|p| p.strip_prefix(repo()).unwrap()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", log(&out));
}

#[test]
fn gitlab_job_script_passes_shellcheck() {
    let text = std::fs::read_to_string(repo().join("examples/gitlab/.gitlab-ci.yml")).unwrap();
    let ci: Value = common::ci_yaml(&text);
    let job = &ci["sign-manifests"];
    let mut script = String::from("#!/bin/bash\nset -eo pipefail\n");
    for key in ["before_script", "script"] {
        for line in job[key].as_array().unwrap() {
            script.push_str(line.as_str().unwrap());
            script.push('\n');
        }
    }
    // Variables GitLab defines (job variables, predefined ones, the ID token, secrets).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.sh");
    std::fs::write(&file, &script).unwrap();
    let out = Command::new(tool("shellcheck", "SHELLCHECK"))
        .args(["--severity=style", "--exclude=SC2154"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{script}", log(&out));
}

fn all_workflows() -> Vec<(PathBuf, Value)> {
    repo_workflows()
        .into_iter()
        .chain(example_workflows())
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = common::ci_yaml(&text);
            (p, v)
        })
        .collect()
}

#[test]
fn workflows_pin_third_party_actions_by_commit_sha() {
    for (path, wf) in all_workflows() {
        for (job_name, job) in wf["jobs"].as_object().unwrap() {
            for step in job["steps"].as_array().unwrap() {
                let Some(uses) = step["uses"].as_str() else {
                    continue;
                };
                if uses.starts_with("./") || uses.starts_with("mansign/mansign@") {
                    continue;
                }
                let (_, reference) = uses.split_once('@').expect("uses: owner/repo@ref");
                assert!(
                    reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit()),
                    "{}: job {job_name}: {uses} is not pinned by commit SHA",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn workflows_grant_no_permissions_by_default_and_name_each_jobs() {
    for (path, wf) in all_workflows() {
        assert_eq!(
            wf["permissions"],
            serde_json::json!({}),
            "{}: top-level permissions must be {{}}",
            path.display()
        );
        for (job_name, job) in wf["jobs"].as_object().unwrap() {
            assert!(
                job["permissions"].is_object(),
                "{}: job {job_name} must state its permissions",
                path.display()
            );
        }
    }
}

#[test]
fn checkouts_do_not_persist_credentials() {
    for (path, wf) in all_workflows() {
        for (job_name, job) in wf["jobs"].as_object().unwrap() {
            for step in job["steps"].as_array().unwrap() {
                if step["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("actions/checkout@"))
                {
                    assert_eq!(
                        step["with"]["persist-credentials"],
                        Value::Bool(false),
                        "{}: job {job_name}",
                        path.display()
                    );
                }
            }
        }
    }
}

#[test]
fn only_signing_jobs_get_an_oidc_token() {
    let mut signing = Vec::new();
    for (path, wf) in all_workflows() {
        for (job_name, job) in wf["jobs"].as_object().unwrap() {
            if job["permissions"]["id-token"] == "write" {
                signing.push(format!(
                    "{}:{job_name}",
                    path.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    signing.sort();
    assert_eq!(signing, ["release.yml:sign", "sign.yaml:sign"]);
}
