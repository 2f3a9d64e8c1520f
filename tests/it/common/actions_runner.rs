//! A small GitHub Actions runner for tests: it runs the `run:` steps of a composite action
//! (`action.yml`) and of a workflow job the way the hosted runner does, so that the YAML and
//! the scripts it calls are tested together and cannot drift apart.
//!
//! What it does like the runner:
//! - each `run:` step is written to a file and run as `bash --noprofile --norc -eo pipefail
//!   FILE` (`shell: bash`) in `$GITHUB_WORKSPACE`, with only the job's environment, the runner
//!   variables (`GITHUB_*`, `RUNNER_*`) and the step's evaluated `env:`;
//! - every step gets fresh `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_PATH` and `GITHUB_ENV`
//!   files; outputs (`name=value` and `name<<DELIMITER` forms) become `steps.<id>.outputs`,
//!   `GITHUB_PATH` lines are prepended to `PATH` and `GITHUB_ENV` lines join the environment
//!   of later steps, summaries are appended to the job summary;
//! - composite steps also get `GITHUB_ACTION_PATH`; composite actions get **no** `INPUT_*`
//!   variables (only what `env:` passes), and their `outputs.*.value` are evaluated at the end;
//! - the first failing step stops the job.
//!
//! Expressions: `${{ inputs.X }}`, `${{ steps.S.outputs.Y }}` and `${{ github.X }}` are
//! substituted as text; any other expression, and any `if:`, fails the test (so an
//! `action.yml` or example using something this runner cannot evaluate is noticed).
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub type Map = BTreeMap<String, String>;

/// One step as run.
#[derive(Debug, Clone)]
pub struct StepRun {
    pub id: String,
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub outputs: Map,
    pub summary: String,
}

impl StepRun {
    /// stdout and stderr, for assertion messages and `::error::` checks.
    pub fn log(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// A composite action as run: its steps (up to the first failure) and its outputs.
#[derive(Debug, Clone)]
pub struct ActionRun {
    pub steps: Vec<StepRun>,
    pub outputs: Map,
    pub success: bool,
}

impl ActionRun {
    pub fn step(&self, id: &str) -> &StepRun {
        self.steps
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("step {id} did not run; ran: {:?}", self.ids()))
    }

    pub fn ids(&self) -> Vec<&str> {
        self.steps.iter().map(|s| s.id.as_str()).collect()
    }

    pub fn log(&self) -> String {
        self.steps.iter().map(StepRun::log).collect()
    }
}

/// The job's state: directories, environment, the outputs of its steps, its summary.
pub struct Runner {
    root: tempfile::TempDir,
    pub workspace: PathBuf,
    pub temp: PathBuf,
    pub tool_cache: PathBuf,
    pub home: PathBuf,
    pub os: String,
    pub arch: String,
    /// Extra job environment (e.g. `ACTIONS_ID_TOKEN_REQUEST_URL`).
    pub env: Map,
    /// The `github` context (`action_ref`, `token`, `repository`, ...).
    pub github: Map,
    /// Directories added through `GITHUB_PATH`, most recent first.
    pub path_additions: Vec<String>,
    /// `steps.<id>.outputs` of the job's steps.
    pub step_outputs: BTreeMap<String, Map>,
    /// The job summary: every step summary, in order.
    pub summary: String,
    counter: usize,
}

impl Runner {
    /// A fresh job on this machine's OS and architecture (`RUNNER_OS`/`RUNNER_ARCH`).
    pub fn new() -> Runner {
        let root = tempfile::Builder::new()
            .prefix("mansign-runner-")
            .tempdir()
            .expect("runner directory");
        let dir = |name: &str| {
            let p = root.path().join(name);
            std::fs::create_dir_all(&p).expect("runner subdirectory");
            p
        };
        let (workspace, temp, tool_cache, home) =
            (dir("work"), dir("temp"), dir("tool-cache"), dir("home"));
        let os = match std::env::consts::OS {
            "linux" => "Linux",
            "macos" => "macOS",
            "windows" => "Windows",
            other => other,
        }
        .to_string();
        let arch = match std::env::consts::ARCH {
            "x86_64" => "X64",
            "aarch64" => "ARM64",
            "x86" => "X86",
            "arm" => "ARM",
            other => other,
        }
        .to_string();
        let mut github = Map::new();
        for (k, v) in [
            ("server_url", "https://github.com"),
            ("repository", "OWNER/REPO"),
            ("repository_owner", "OWNER"),
            ("ref", "refs/heads/main"),
            ("ref_name", "main"),
            ("event_name", "push"),
            ("workflow", "sign"),
            ("token", "ghs_test-only-job-token"),
            ("action_ref", ""),
            ("sha", "0000000000000000000000000000000000000000"),
        ] {
            github.insert(k.to_string(), v.to_string());
        }
        Runner {
            root,
            workspace,
            temp,
            tool_cache,
            home,
            os,
            arch,
            env: Map::new(),
            github,
            path_additions: Vec::new(),
            step_outputs: BTreeMap::new(),
            summary: String::new(),
            counter: 0,
        }
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn set_env(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        self.env.insert(name.to_string(), value.into());
        self
    }

    /// The `PATH` a step sees: `GITHUB_PATH` additions, then the test process's PATH.
    pub fn path(&self) -> String {
        let mut parts = self.path_additions.clone();
        parts.push(std::env::var("PATH").unwrap_or_default());
        parts.join(":")
    }

    /// Runs the composite action in `action_dir` (its `action.yml`) with the given inputs.
    pub fn run_action(&mut self, action_dir: &Path, with: &Map) -> ActionRun {
        let text = std::fs::read_to_string(action_dir.join("action.yml")).expect("action.yml");
        let action: Value = crate::common::ci_yaml(&text);
        assert_eq!(
            action["runs"]["using"], "composite",
            "not a composite action"
        );
        let declared = action["inputs"].as_object().cloned().unwrap_or_default();
        for name in with.keys() {
            assert!(
                declared.contains_key(name),
                "input {name} is not declared in action.yml"
            );
        }
        let mut inputs = Map::new();
        for (name, spec) in &declared {
            let value = match with.get(name) {
                Some(v) => v.clone(),
                None => {
                    assert!(
                        spec["required"].as_bool() != Some(true),
                        "required input {name} not given"
                    );
                    let default = scalar(&spec["default"]);
                    self.eval(&default, &Map::new(), &BTreeMap::new())
                }
            };
            inputs.insert(name.clone(), value);
        }
        let mut steps = Vec::new();
        // Every step id gets outputs (empty until it runs: the runner evaluates the outputs
        // of a step that never ran to empty strings).
        let mut local: BTreeMap<String, Map> = action["runs"]["steps"]
            .as_array()
            .expect("runs.steps")
            .iter()
            .filter_map(|s| s["id"].as_str())
            .map(|id| (id.to_string(), Map::new()))
            .collect();
        let mut success = true;
        for (i, step) in action["runs"]["steps"]
            .as_array()
            .expect("runs.steps")
            .iter()
            .enumerate()
        {
            assert!(step.get("if").is_none(), "`if:` is not supported: {step}");
            assert!(
                step.get("uses").is_none(),
                "nested `uses:` is not supported"
            );
            assert_eq!(step["shell"], "bash", "step {i}: shell must be bash");
            let id = step["id"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("__step{i}"));
            let env = self.eval_env(&step["env"], &inputs, &local);
            let run = step["run"].as_str().expect("run:").to_string();
            assert!(
                !run.contains("${{"),
                "step {id}: an expression inside run: would be interpolated into the script"
            );
            let result = self.run_script(&id, &run, &env, Some(action_dir));
            local.insert(id.clone(), result.outputs.clone());
            let ok = result.success;
            steps.push(result);
            if !ok {
                success = false;
                break;
            }
        }
        let mut outputs = Map::new();
        if let Some(declared) = action["outputs"].as_object() {
            for (name, spec) in declared {
                let value = scalar(&spec["value"]);
                outputs.insert(name.clone(), self.eval(&value, &inputs, &local));
            }
        }
        ActionRun {
            steps,
            outputs,
            success,
        }
    }

    /// Runs one workflow `run:` step (its `env:` already evaluated by the caller, or by
    /// [`Runner::eval_env`]). `action_path` sets `GITHUB_ACTION_PATH` (composite steps).
    pub fn run_script(
        &mut self,
        id: &str,
        script: &str,
        step_env: &Map,
        action_path: Option<&Path>,
    ) -> StepRun {
        self.counter += 1;
        let dir = self
            .temp
            .join("_runner_file_commands")
            .join(format!("{}-{id}", self.counter));
        std::fs::create_dir_all(&dir).expect("file command directory");
        let files = ["output", "summary", "path", "env"].map(|f| dir.join(f));
        for f in &files {
            std::fs::write(f, "").expect("file command file");
        }
        let script_file = dir.join("script.sh");
        std::fs::write(&script_file, script).expect("script file");

        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script_file)
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", self.path())
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", &self.workspace)
            .env("GITHUB_OUTPUT", &files[0])
            .env("GITHUB_STEP_SUMMARY", &files[1])
            .env("GITHUB_PATH", &files[2])
            .env("GITHUB_ENV", &files[3])
            .env("RUNNER_TEMP", &self.temp)
            .env("RUNNER_TOOL_CACHE", &self.tool_cache)
            .env("RUNNER_OS", &self.os)
            .env("RUNNER_ARCH", &self.arch);
        for (k, v) in &self.github {
            let var = format!("GITHUB_{}", k.to_uppercase());
            if k != "token" && k != "action_ref" {
                cmd.env(var, v);
            }
        }
        if let Some(p) = action_path {
            cmd.env("GITHUB_ACTION_PATH", p);
        }
        cmd.envs(&self.env).envs(step_env);
        let out = cmd.output().expect("run bash");

        let outputs = parse_file_command(&std::fs::read_to_string(&files[0]).unwrap_or_default());
        let summary = std::fs::read_to_string(&files[1]).unwrap_or_default();
        self.summary.push_str(&summary);
        let path = std::fs::read_to_string(&files[2]).unwrap_or_default();
        for line in path.lines().filter(|l| !l.trim().is_empty()) {
            self.path_additions.insert(0, line.trim().to_string());
        }
        let env = parse_file_command(&std::fs::read_to_string(&files[3]).unwrap_or_default());
        self.env.extend(env);
        self.step_outputs.insert(id.to_string(), outputs.clone());
        StepRun {
            id: id.to_string(),
            success: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            outputs,
            summary,
        }
    }

    /// Evaluates a step's `env:` mapping.
    pub fn eval_env(&self, env: &Value, inputs: &Map, steps: &BTreeMap<String, Map>) -> Map {
        let mut out = Map::new();
        if let Some(map) = env.as_object() {
            for (k, v) in map {
                out.insert(k.clone(), self.eval(&scalar(v), inputs, steps));
            }
        }
        out
    }

    /// Substitutes `${{ inputs.X }}`, `${{ steps.S.outputs.Y }}` and `${{ github.X }}` in
    /// `text` (`steps`: the steps of the action being run, else the job's). Anything else
    /// fails the test.
    pub fn eval(&self, text: &str, inputs: &Map, steps: &BTreeMap<String, Map>) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 3..];
            let end = after
                .find("}}")
                .unwrap_or_else(|| panic!("unterminated expression in {text:?}"));
            let expr = after[..end].trim();
            out.push_str(&self.value_of(expr, inputs, steps));
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        out
    }

    fn value_of(&self, expr: &str, inputs: &Map, steps: &BTreeMap<String, Map>) -> String {
        let parts: Vec<&str> = expr.split('.').collect();
        match parts.as_slice() {
            ["inputs", name] => inputs
                .get(*name)
                .cloned()
                .unwrap_or_else(|| panic!("unknown input in ${{{{ {expr} }}}}")),
            ["steps", id, "outputs", name] => {
                let outputs = steps
                    .get(*id)
                    .or_else(|| self.step_outputs.get(*id))
                    .unwrap_or_else(|| panic!("step {id} has not run: ${{{{ {expr} }}}}"));
                outputs.get(*name).cloned().unwrap_or_default()
            }
            ["github", name] => self
                .github
                .get(*name)
                .cloned()
                .unwrap_or_else(|| panic!("github.{name} is not known to the test runner")),
            _ => panic!("the test runner cannot evaluate ${{{{ {expr} }}}}"),
        }
    }
}

/// A YAML scalar as the runner sees it (strings as is, numbers and booleans as text).
pub fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `GITHUB_OUTPUT`/`GITHUB_ENV` syntax: `name=value` lines and `name<<DELIMITER` blocks.
pub fn parse_file_command(text: &str) -> Map {
    let mut out = Map::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        if let Some((name, delim)) = line.split_once("<<") {
            let mut value = Vec::new();
            let mut closed = false;
            for l in lines.by_ref() {
                if l == delim {
                    closed = true;
                    break;
                }
                value.push(l);
            }
            assert!(
                closed,
                "file command {name}: delimiter {delim} never closes"
            );
            out.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_string(), value.to_string());
        } else {
            panic!("invalid file command line {line:?}");
        }
    }
    out
}

/// A workflow job as run: its steps, in order, up to the first failure.
#[derive(Debug, Clone)]
pub struct JobRun {
    pub steps: Vec<StepRun>,
    pub success: bool,
}

impl JobRun {
    pub fn log(&self) -> String {
        self.steps.iter().map(StepRun::log).collect()
    }

    pub fn step(&self, id: &str) -> &StepRun {
        self.steps
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("step {id} did not run"))
    }
}

impl Runner {
    /// Runs job `job` of a workflow file, for the steps this runner knows:
    /// - `actions/checkout@...`: skipped (the test prepared `$GITHUB_WORKSPACE` as the
    ///   checkout), after checking it is pinned by commit SHA and keeps no credentials
    ///   unless the step says why;
    /// - `mansign/mansign@...`: this repository's `action.yml` (`action_dir`), with the
    ///   step's `with:` plus `extra_inputs` (e.g. the loopback Sigstore URLs);
    /// - `run:` steps (bash), with their evaluated `env:`.
    ///
    /// Anything else fails the test.
    pub fn run_workflow_job(
        &mut self,
        workflow: &Path,
        job: &str,
        action_dir: &Path,
        extra_inputs: &Map,
    ) -> JobRun {
        let text = std::fs::read_to_string(workflow).expect("workflow file");
        let wf: Value = crate::common::ci_yaml(&text);
        let steps = wf["jobs"][job]["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no job {job}", workflow.display()))
            .clone();
        let mut runs = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            assert!(step.get("if").is_none(), "`if:` is not supported: {step}");
            let id = step["id"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("__step{i}"));
            let no_inputs = Map::new();
            let no_steps = BTreeMap::new();
            let result = if let Some(uses) = step["uses"].as_str() {
                let mut with = Map::new();
                if let Some(w) = step["with"].as_object() {
                    for (k, v) in w {
                        with.insert(k.clone(), self.eval(&scalar(v), &no_inputs, &no_steps));
                    }
                }
                if uses.starts_with("actions/checkout@") {
                    let sha = uses.trim_start_matches("actions/checkout@");
                    assert!(
                        sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                        "{uses}: pin third-party actions by commit SHA"
                    );
                    continue;
                }
                assert!(
                    uses.starts_with("mansign/mansign@"),
                    "the test runner cannot run {uses}"
                );
                with.extend(extra_inputs.clone());
                let run = self.run_action(action_dir, &with);
                let last = run.steps.last().cloned();
                self.step_outputs.insert(id.clone(), run.outputs.clone());
                let mut step_run = StepRun {
                    id: id.clone(),
                    success: run.success,
                    code: last.as_ref().and_then(|s| s.code),
                    stdout: run.steps.iter().map(|s| s.stdout.clone()).collect(),
                    stderr: run.steps.iter().map(|s| s.stderr.clone()).collect(),
                    outputs: run.outputs.clone(),
                    summary: run.steps.iter().map(|s| s.summary.clone()).collect(),
                };
                step_run.id = id.clone();
                step_run
            } else {
                let run = step["run"].as_str().expect("a step with uses: or run:");
                assert!(
                    !run.contains("${{"),
                    "step {id}: an expression inside run: would be interpolated into the script"
                );
                let env = self.eval_env(&step["env"], &no_inputs, &no_steps);
                self.run_script(&id, run, &env, None)
            };
            let ok = result.success;
            runs.push(result);
            if !ok {
                return JobRun {
                    steps: runs,
                    success: false,
                };
            }
        }
        JobRun {
            steps: runs,
            success: true,
        }
    }
}
