//! The composite GitHub Action (`action.yml`), run the way the runner runs it
//! (`tests/it/common/actions_runner.rs`: each step's `run:` with its evaluated `env:`, the
//! runner's variables and file commands): the install step against a release served on
//! loopback (the test's own mansign binary as the asset, a real `SHA256SUMS`), `sign` with
//! the OIDC token from a local endpoint playing `ACTIONS_ID_TOKEN_REQUEST_URL` (a
//! GitHub-workflow-shaped token minted by the loopback Sigstore stack), then `verify`, its
//! outputs and its job summary.

use crate::common;
use crate::common::actions_runner;
use crate::common::file_server;
use crate::common::stack;
use crate::common::stub_server;

use actions_runner::{ActionRun, Map, Runner};
use common::{files_under, write};
use file_server::FileServer;
use stack::Stack;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use stub_server::StubServer;

/// The release the tests install (the action's ref: `uses: mansign/mansign@v0.1.0`).
const VERSION: &str = "v0.1.0";
/// The signer the seed flow's workflow gets from Fulcio.
const WORKFLOW_IDENTITY: &str =
    "https://github.com/OWNER/REPO/.github/workflows/sign.yaml@refs/heads/main";
const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn mansign_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("mansign")
}

/// A token like GitHub's for the sign workflow on main (the mock Fulcio turns `sub` into
/// the certificate SAN and `iss`, `repository`, `ref`... into the Fulcio extensions).
fn workflow_token(stack: &Stack, audience: &str) -> String {
    stack.mint_token(&[
        &format!("iss={GITHUB_ISSUER}"),
        &format!("sub={WORKFLOW_IDENTITY}"),
        &format!("aud={audience}"),
        "repository=OWNER/REPO",
        "ref=refs/heads/main",
        "event_name=push",
        "workflow=sign",
    ])
}

/// The runner's token service: `GET /_apis/token?...&audience=A` answers the token minted
/// for audience `A`, 404 otherwise.
fn github_token_endpoint(tokens: BTreeMap<String, String>) -> StubServer {
    StubServer::start(move |req, _| {
        let token = req.query("audience").and_then(|a| tokens.get(&a).cloned());
        match (req.method.as_str(), req.path(), token) {
            ("GET", "/_apis/token", Some(t)) => (200, serde_json::json!({"value": t}).to_string()),
            _ => (404, "{}".to_string()),
        }
    })
}

/// The asset name the release workflow builds for this machine.
fn asset_name(runner: &Runner) -> String {
    let target = match (runner.os.as_str(), runner.arch.as_str()) {
        ("Linux", "X64") => "x86_64-unknown-linux-musl",
        ("Linux", "ARM64") => "aarch64-unknown-linux-musl",
        ("macOS", "X64") => "x86_64-apple-darwin",
        ("macOS", "ARM64") => "aarch64-apple-darwin",
        other => panic!("no release asset for {other:?}"),
    };
    format!("mansign-{target}")
}

/// A release as `.github/workflows/release.yml` publishes it, served on loopback:
/// `/<VERSION>/<asset>` (this test run's mansign binary) and `/<VERSION>/SHA256SUMS`
/// written by `scripts/release-checksums.sh`.
struct Release {
    dir: tempfile::TempDir,
    server: FileServer,
    asset: String,
}

impl Release {
    fn publish(runner: &Runner) -> Release {
        let dir = tempfile::tempdir().unwrap();
        let version_dir = dir.path().join(VERSION);
        std::fs::create_dir_all(&version_dir).unwrap();
        let asset = asset_name(runner);
        let target = version_dir.join(&asset);
        if std::fs::hard_link(mansign_bin(), &target).is_err() {
            std::fs::copy(mansign_bin(), &target).unwrap();
        }
        common::output_ok(
            std::process::Command::new("bash")
                .arg(repo().join("scripts/release-checksums.sh"))
                .arg(&version_dir),
            "scripts/release-checksums.sh",
        );
        let server = FileServer::start(dir.path());
        Release { dir, server, asset }
    }

    fn sha256sums(&self) -> PathBuf {
        self.dir.path().join(VERSION).join("SHA256SUMS")
    }

    fn asset_downloads(&self) -> usize {
        let path = format!("/{VERSION}/{}", self.asset);
        self.server
            .requests()
            .iter()
            .filter(|p| **p == path)
            .count()
    }
}

/// A job on a runner whose action ref is `VERSION`, with the token endpoint and the release.
fn runner(github: &StubServer, release: Option<&Release>) -> Runner {
    let mut r = Runner::new();
    r.github.insert("action_ref".into(), VERSION.into());
    r.set_env(
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        format!("{}/_apis/token?api-version=2.0", github.url),
    );
    r.set_env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token");
    if let Some(rel) = release {
        r.set_env("MANSIGN_RELEASE_BASE_URL", rel.server.url.clone());
    }
    r
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn inputs(pairs: &[(&str, &str)]) -> Map {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `sign` inputs that target the loopback stack.
fn sign_inputs(stack: &Stack, extra: &[(&str, &str)]) -> Map {
    let root = stack.trusted_root().display().to_string();
    let mut m = inputs(&[
        ("command", "sign"),
        ("files", "unsigned/\n"),
        ("output", "signed/"),
        ("fulcio-url", stack.fulcio_url()),
        ("rekor-url", stack.rekor_url()),
        ("trusted-root", &root),
    ]);
    m.extend(inputs(extra));
    m
}

/// `verify` inputs with the workflow identity and the stack's trust root.
fn verify_inputs(stack: &Stack, extra: &[(&str, &str)]) -> Map {
    let root = stack.trusted_root().display().to_string();
    let mut m = inputs(&[
        ("command", "verify"),
        ("files", "signed/"),
        ("certificate-identity", WORKFLOW_IDENTITY),
        ("certificate-oidc-issuer", GITHUB_ISSUER),
        ("trusted-root", &root),
    ]);
    m.extend(inputs(extra));
    m
}

fn with_local_binary(mut m: Map) -> Map {
    m.insert("mansign".into(), mansign_bin().display().to_string());
    m
}

fn seed_unsigned(ws: &Path) {
    let exception =
        std::fs::read_to_string(common::fixture("unsigned/policy-exception-backup.yaml")).unwrap();
    write(ws, "unsigned/policy-exception-backup.yaml", &exception);
    write(ws, "unsigned/team/multi.yaml", common::MULTI_DOC);
}

fn assert_ok(run: &ActionRun) {
    assert!(run.success, "the action failed:\n{}", run.log());
}

fn one_stack_token() -> (Stack, StubServer) {
    let stack = Stack::start();
    let tokens = BTreeMap::from([("sigstore".to_string(), workflow_token(&stack, "sigstore"))]);
    let github = github_token_endpoint(tokens);
    (stack, github)
}

// ---- the seed flow, end to end ----------------------------------------------------------

#[test]
fn action_installs_the_release_signs_unsigned_into_signed_then_verifies_the_workflow_identity() {
    let (stack, github) = one_stack_token();
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    seed_unsigned(&job.workspace);

    // sign: install from the release (the action's ref), sign unsigned/ into signed/.
    let sign = job.run_action(repo(), &sign_inputs(&stack, &[("remove-input", "true")]));
    assert_ok(&sign);
    assert_eq!(sign.ids(), ["install", "run"]);
    let install = sign.step("install");
    assert_eq!(install.outputs["source"], "release");
    assert_eq!(install.outputs["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        install.log().contains("matches SHA256SUMS"),
        "{}",
        install.log()
    );
    let arch = job.arch.to_lowercase();
    let cached = job
        .tool_cache
        .join("mansign")
        .join(VERSION.trim_start_matches('v'))
        .join(&arch);
    assert!(cached.join("mansign").is_file(), "not in the tool cache");
    assert!(
        PathBuf::from(format!("{}.complete", cached.display())).is_file(),
        "the tool cache entry is marked complete"
    );
    assert_eq!(
        install.outputs["bin"],
        cached.join("mansign").display().to_string()
    );
    assert_eq!(
        job.path_additions,
        [cached.display().to_string()],
        "mansign's directory is on PATH for later steps"
    );
    assert_eq!(release.asset_downloads(), 1);

    assert_eq!(
        files_under(&job.workspace.join("signed")),
        ["policy-exception-backup.yaml", "team/multi.yaml"]
    );
    assert!(files_under(&job.workspace.join("unsigned")).is_empty());
    assert_eq!(
        sign.outputs["files"],
        "signed/policy-exception-backup.yaml\nsigned/team/multi.yaml"
    );
    assert_eq!(sign.outputs["documents"], "4");
    assert_eq!(sign.outputs["signed"], "4");
    assert_eq!(sign.outputs["signer-identity"], WORKFLOW_IDENTITY);
    assert_eq!(sign.outputs["version"], env!("CARGO_PKG_VERSION"));
    assert!(job.summary.contains("### mansign sign"), "{}", job.summary);
    assert!(
        job.summary.contains("| signed/team/multi.yaml |"),
        "{}",
        job.summary
    );
    let token_requests = github.requests();
    assert_eq!(token_requests.len(), 1, "one token for the whole run");
    assert_eq!(
        token_requests[0].query("audience").as_deref(),
        Some("sigstore")
    );
    assert_eq!(
        token_requests[0]
            .header("authorization")
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("bearer runner-request-token")
    );

    // verify, later in the same job: mansign comes from the tool cache.
    let before = job.summary.len();
    let verify = job.run_action(repo(), &verify_inputs(&stack, &[]));
    assert_ok(&verify);
    assert_eq!(verify.step("install").outputs["source"], "cache");
    assert_eq!(release.asset_downloads(), 1, "the cached binary is reused");
    assert_eq!(
        verify.outputs["files"],
        "signed/policy-exception-backup.yaml\nsigned/team/multi.yaml"
    );
    assert_eq!(verify.outputs["documents"], "4");
    assert_eq!(verify.outputs["signer-identity"], WORKFLOW_IDENTITY);
    let summary = &job.summary[before..];
    assert!(summary.contains("### mansign verify"), "{summary}");
    assert!(
        summary.contains("✅ **4 of 4 document(s) verified**"),
        "{summary}"
    );
    assert!(
        summary.contains("| file | document | object | verdict | signer | reason |"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "| signed/policy\\-exception\\-backup.yaml | 1 | PolicyException.kyverno.io backup/backup\\-host\\-path | ✅ verified |"
        ) || summary.contains(
            "| signed/policy-exception-backup.yaml | 1 | PolicyException.kyverno.io backup/backup-host-path | ✅ verified |"
        ),
        "{summary}"
    );
    assert_eq!(summary.matches("✅ verified").count(), 4, "{summary}");
    assert!(summary.contains(WORKFLOW_IDENTITY), "{summary}");
}

// ---- install ----------------------------------------------------------------------------

#[test]
fn install_refuses_an_asset_whose_sha256_differs_from_sha256sums_and_installs_nothing() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let sums = std::fs::read_to_string(release.sha256sums()).unwrap();
    let wrong = format!("{}{}", "0".repeat(64), &sums[64..]);
    std::fs::write(release.sha256sums(), wrong).unwrap();
    let mut job = runner(&github, Some(&release));
    seed_unsigned(&job.workspace);

    let run = job.run_action(
        repo(),
        &inputs(&[("files", "unsigned/"), ("output", "signed/")]),
    );
    assert!(!run.success);
    assert_eq!(run.ids(), ["install"], "signing never starts");
    let install = run.step("install");
    assert_eq!(install.code, Some(1));
    assert!(
        install.stderr.contains("::error::checksum mismatch for ")
            && install.stderr.contains(&"0".repeat(64))
            && install.stderr.contains("nothing was installed"),
        "{}",
        install.stderr
    );
    assert!(!install.outputs.contains_key("bin"));
    assert!(
        files_under(&job.tool_cache).is_empty(),
        "the tool cache stays empty"
    );
    assert!(job.path_additions.is_empty());
    assert!(github.requests().is_empty(), "no token was requested");
    assert!(
        files_under(&job.temp)
            .iter()
            .all(|f| !f.contains("mansign-install"))
    );
}

#[test]
fn install_downloads_again_when_the_cached_binary_was_altered() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    let verify_nothing = inputs(&[
        ("command", "verify"),
        ("files", "missing/"),
        ("certificate-oidc-issuer", GITHUB_ISSUER),
    ]);
    let first = job.run_action(repo(), &verify_nothing);
    assert_eq!(first.step("install").outputs["source"], "release");
    let bin = PathBuf::from(&first.step("install").outputs["bin"]);
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes.extend_from_slice(b"tampered");
    std::fs::remove_file(&bin).unwrap();
    std::fs::write(&bin, bytes).unwrap();
    make_executable(&bin);

    let second = job.run_action(repo(), &verify_nothing);
    let install = second.step("install");
    assert!(install.success, "{}", install.log());
    assert_eq!(install.outputs["source"], "release");
    assert!(
        install.log().contains("::warning::the cached mansign"),
        "{}",
        install.log()
    );
    assert_eq!(release.asset_downloads(), 2);
}

/// A `cargo` on PATH that records its arguments and "builds" by copying this test run's
/// mansign into `--root`/bin: the install step's source fallback is observed, not run
/// (a real `cargo install` of this crate takes minutes).
fn fake_cargo(job: &mut Runner) -> PathBuf {
    let dir = job.root().join("fake-cargo");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls");
    let script = format!(
        r#"#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >> '{log}'
root=""
while [ $# -gt 0 ]; do case $1 in --root) root=$2; shift 2 ;; *) shift ;; esac; done
mkdir -p "$root/bin" && cp '{bin}' "$root/bin/mansign"
"#,
        log = log.display(),
        bin = mansign_bin().display()
    );
    let cargo = dir.join("cargo");
    std::fs::write(&cargo, script).unwrap();
    make_executable(&cargo);
    job.path_additions.insert(0, dir.display().to_string());
    log
}

fn run_install_only(job: &mut Runner, with: &[(&str, &str)]) -> ActionRun {
    let mut m = inputs(&[
        ("command", "verify"),
        ("files", "missing/"),
        ("certificate-oidc-issuer", GITHUB_ISSUER),
    ]);
    m.extend(inputs(with));
    job.run_action(repo(), &m)
}

#[test]
fn install_builds_the_action_source_with_cargo_when_the_ref_has_no_release() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    job.github.insert("action_ref".into(), "main".into());
    let calls = fake_cargo(&mut job);
    let run = run_install_only(&mut job, &[]);
    let install = run.step("install");
    assert!(install.success, "{}", install.log());
    assert_eq!(install.outputs["source"], "cargo");
    assert!(
        install.log().contains("release main has no SHA256SUMS"),
        "{}",
        install.log()
    );
    let calls = std::fs::read_to_string(calls).unwrap();
    assert_eq!(
        calls.trim(),
        format!(
            "install --locked --quiet --path {} --root {}",
            repo().display(),
            job.temp.join("mansign-cargo").display()
        )
    );
    assert_eq!(release.asset_downloads(), 0);
}

#[test]
fn install_builds_from_source_when_the_release_has_no_binary_for_the_platform() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    job.os = "Windows".into();
    let calls = fake_cargo(&mut job);
    let run = run_install_only(&mut job, &[]);
    let install = run.step("install");
    assert!(install.success, "{}", install.log());
    assert_eq!(install.outputs["source"], "cargo");
    assert!(
        install.log().contains("no binary for Windows/"),
        "{}",
        install.log()
    );
    assert!(
        std::fs::read_to_string(calls)
            .unwrap()
            .starts_with("install --locked ")
    );
    assert!(release.server.requests().is_empty(), "nothing to download");
}

#[test]
fn install_refuses_an_explicit_version_without_release_instead_of_building_another_one() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    let calls = fake_cargo(&mut job);
    let run = run_install_only(&mut job, &[("version", "v9.9.9")]);
    let install = run.step("install");
    assert!(!install.success);
    assert!(
        install
            .stderr
            .contains("::error::release v9.9.9 has no SHA256SUMS")
            && install.stderr.contains("cannot be built here"),
        "{}",
        install.stderr
    );
    assert!(!calls.exists(), "cargo must not build another version");
}

#[test]
fn install_refuses_a_plain_http_mirror() {
    let github = github_token_endpoint(BTreeMap::new());
    let mut job = runner(&github, None);
    job.set_env(
        "MANSIGN_RELEASE_BASE_URL",
        "http://mirror.example.invalid/mansign",
    );
    let run = run_install_only(&mut job, &[]);
    let install = run.step("install");
    assert_eq!(install.code, Some(2));
    assert!(
        install
            .stderr
            .contains("::error::MANSIGN_RELEASE_BASE_URL must be an https URL"),
        "{}",
        install.stderr
    );
}

#[test]
fn install_refuses_a_version_that_is_not_a_tag_name() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    let run = run_install_only(&mut job, &[("version", "../../evil")]);
    let install = run.step("install");
    assert_eq!(install.code, Some(2));
    assert!(
        install.stderr.contains("is not a release tag"),
        "{}",
        install.stderr
    );
    assert!(release.server.requests().is_empty());
}

#[test]
fn install_uses_the_mansign_input_as_is() {
    let github = github_token_endpoint(BTreeMap::new());
    let probe = Runner::new();
    let release = Release::publish(&probe);
    let mut job = runner(&github, Some(&release));
    let run = run_install_only(
        &mut job,
        &[("mansign", &mansign_bin().display().to_string())],
    );
    let install = run.step("install");
    assert!(install.success, "{}", install.log());
    assert_eq!(install.outputs["source"], "input");
    assert_eq!(install.outputs["bin"], mansign_bin().display().to_string());
    assert!(release.server.requests().is_empty());
}

// ---- sign -------------------------------------------------------------------------------

#[test]
fn sign_requests_the_token_for_the_oidc_audience_input() {
    let stack = Stack::start();
    let tokens = BTreeMap::from([(
        "private-fulcio".to_string(),
        workflow_token(&stack, "private-fulcio"),
    )]);
    let github = github_token_endpoint(tokens);
    let mut job = runner(&github, None);
    seed_unsigned(&job.workspace);
    let run = job.run_action(
        repo(),
        &with_local_binary(sign_inputs(&stack, &[("oidc-audience", "private-fulcio")])),
    );
    assert_ok(&run);
    let req = github.requests();
    assert_eq!(req.len(), 1);
    assert_eq!(req[0].query("audience").as_deref(), Some("private-fulcio"));
}

#[test]
fn sign_failure_fails_the_step_and_keeps_the_inputs() {
    let (stack, github) = one_stack_token();
    stack.inject_faults(serde_json::json!({"service": "rekor", "statuses": [400]}));
    let mut job = runner(&github, None);
    seed_unsigned(&job.workspace);
    let run = job.run_action(
        repo(),
        &with_local_binary(sign_inputs(&stack, &[("remove-input", "true")])),
    );
    assert!(!run.success);
    let step = run.step("run");
    assert!(
        step.stderr.contains("::error::mansign sign failed"),
        "{}",
        step.stderr
    );
    assert!(!step.outputs.contains_key("files"));
    assert_eq!(
        files_under(&job.workspace.join("unsigned")),
        ["policy-exception-backup.yaml", "team/multi.yaml"]
    );
    assert!(!job.workspace.join("signed").exists());
}

#[test]
fn sign_refuses_a_bad_boolean_input_before_any_token_request() {
    let (stack, github) = one_stack_token();
    let mut job = runner(&github, None);
    seed_unsigned(&job.workspace);
    let run = job.run_action(
        repo(),
        &with_local_binary(sign_inputs(&stack, &[("remove-input", "yes")])),
    );
    let step = run.step("run");
    assert_eq!(step.code, Some(2));
    assert!(
        step.stderr
            .contains("input remove-input must be true or false")
    );
    assert!(
        github.requests().is_empty(),
        "no token may be requested for a bad input"
    );
}

#[test]
fn sign_refuses_verify_only_inputs() {
    let (stack, github) = one_stack_token();
    let mut job = runner(&github, None);
    seed_unsigned(&job.workspace);
    let run = job.run_action(
        repo(),
        &with_local_binary(sign_inputs(&stack, &[("policy", "policy.yaml")])),
    );
    let step = run.step("run");
    assert_eq!(step.code, Some(2));
    assert!(
        step.stderr
            .contains("input policy does not apply to command 'sign'"),
        "{}",
        step.stderr
    );
    assert!(github.requests().is_empty());
}

#[test]
fn unknown_command_is_refused() {
    let github = github_token_endpoint(BTreeMap::new());
    let mut job = runner(&github, None);
    let run = job.run_action(
        repo(),
        &with_local_binary(inputs(&[("command", "attest"), ("files", "x")])),
    );
    let step = run.step("run");
    assert_eq!(step.code, Some(2));
    assert!(
        step.stderr
            .contains("input command must be sign or verify, not 'attest'")
    );
}

// ---- verify -----------------------------------------------------------------------------

/// A job whose workspace holds `signed/` as the sign step wrote it.
fn signed_workspace(stack: &Stack, github: &StubServer) -> Runner {
    let mut job = runner(github, None);
    seed_unsigned(&job.workspace);
    let run = job.run_action(repo(), &with_local_binary(sign_inputs(stack, &[])));
    assert_ok(&run);
    job.summary.clear();
    job
}

#[test]
fn verify_fails_the_step_and_lists_every_document_with_its_verdict_in_the_summary() {
    let (stack, github) = one_stack_token();
    let mut job = signed_workspace(&stack, &github);
    let signed = job.workspace.join("signed/policy-exception-backup.yaml");
    let text = std::fs::read_to_string(&signed).unwrap();
    std::fs::write(&signed, text.replace("nightly-backup-*", "*")).unwrap();

    let run = job.run_action(repo(), &with_local_binary(verify_inputs(&stack, &[])));
    assert!(!run.success);
    let step = run.step("run");
    assert_eq!(step.code, Some(1));
    assert!(
        step.log().contains("::error file=signed/policy-exception-backup.yaml,title=mansign verify::document 1: PolicyException.kyverno.io backup/backup-host-path: diff: modified since signing"),
        "{}",
        step.log()
    );
    assert!(
        step.stdout.contains("3 of 4 document(s) verified"),
        "{}",
        step.stdout
    );
    assert_eq!(run.outputs["documents"], "3");
    assert_eq!(run.outputs["signer-identity"], WORKFLOW_IDENTITY);
    let s = &job.summary;
    assert!(
        s.contains("❌ **1 of 4 document(s) failed verification**"),
        "{s}"
    );
    assert_eq!(s.matches("✅ verified").count(), 3, "{s}");
    let failed: Vec<&str> = s.lines().filter(|l| l.contains("❌ FAILED")).collect();
    assert_eq!(failed.len(), 1, "{s}");
    assert!(
        failed[0].contains(
            "diff: modified since signing: spec.match.any\\[0\\].resources.names\\[0\\] changed"
        ),
        "{}",
        failed[0]
    );
}

#[test]
fn verify_rejects_a_signer_other_than_the_required_workflow() {
    let (stack, github) = one_stack_token();
    let mut job = signed_workspace(&stack, &github);
    let other = "https://github.com/OWNER/REPO/.github/workflows/other.yaml@refs/heads/main";
    let run = job.run_action(
        repo(),
        &with_local_binary(verify_inputs(&stack, &[("certificate-identity", other)])),
    );
    let step = run.step("run");
    assert_eq!(step.code, Some(1));
    assert_eq!(run.outputs["documents"], "0");
    assert_eq!(run.outputs["signer-identity"], "");
    assert_eq!(
        job.summary.matches("❌ FAILED").count(),
        4,
        "{}",
        job.summary
    );
    assert!(job.summary.contains("| signature: "), "{}", job.summary);
}

#[test]
fn verify_accepts_a_policy_file_instead_of_identity_inputs() {
    let (stack, github) = one_stack_token();
    let mut job = signed_workspace(&stack, &github);
    std::fs::remove_file(job.workspace.join("signed/team/multi.yaml")).unwrap();
    let policy = repo().join("examples/policy/mansign-policy.yaml");
    let mut with = verify_inputs(&stack, &[("policy", &policy.display().to_string())]);
    with.remove("certificate-identity");
    with.remove("certificate-oidc-issuer");
    let run = job.run_action(repo(), &with_local_binary(with));
    assert_ok(&run);
    assert_eq!(run.outputs["documents"], "1");
    assert_eq!(run.outputs["signer-identity"], WORKFLOW_IDENTITY);
}

#[test]
fn verify_escapes_manifest_text_in_the_summary() {
    let (stack, github) = one_stack_token();
    let mut job = signed_workspace(&stack, &github);
    let signed = job.workspace.join("signed/policy-exception-backup.yaml");
    let text = std::fs::read_to_string(&signed).unwrap();
    let evil = "x | <img src=x onerror=alert(1)> [link](https://evil.example) `code`";
    std::fs::write(
        &signed,
        text.replace("nightly-backup-*", &format!("'{evil}'")),
    )
    .unwrap();
    let run = job.run_action(repo(), &with_local_binary(verify_inputs(&stack, &[])));
    assert!(!run.success);
    let row = job
        .summary
        .lines()
        .find(|l| l.contains("❌ FAILED"))
        .expect("a failed row");
    assert!(
        row.contains("x \\| \\<img src=x onerror=alert(1)\\> \\[link\\](https://evil.examp"),
        "{row}"
    );
    let unescaped = |c: char| row.replace(&format!("\\{c}"), "").contains(c);
    for c in ['<', '>', '[', ']', '`', '*'] {
        assert!(!unescaped(c), "unescaped {c} in {row}");
    }
    assert_eq!(
        row.replace("\\|", "").matches('|').count(),
        7,
        "six cells: {row}"
    );
}

#[test]
fn verify_without_an_identity_or_a_policy_is_a_usage_error() {
    let github = github_token_endpoint(BTreeMap::new());
    let mut job = runner(&github, None);
    let run = job.run_action(
        repo(),
        &with_local_binary(inputs(&[("command", "verify"), ("files", "signed/")])),
    );
    let step = run.step("run");
    assert_eq!(step.code, Some(2));
    assert!(
        step.stderr
            .contains("command verify needs input policy, or certificate-oidc-issuer")
    );
}

// ---- action.yml itself ------------------------------------------------------------------

fn action() -> serde_json::Value {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    common::ci_yaml(&text)
}

fn scripts_text() -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(repo().join("scripts")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("action-") {
            all.push_str(&std::fs::read_to_string(&p).unwrap());
        }
    }
    all
}

#[test]
fn action_yml_has_the_inputs_and_outputs_of_the_issue() {
    let action = action();
    let inputs: Vec<&String> = action["inputs"].as_object().unwrap().keys().collect();
    for name in [
        "command",
        "files",
        "output",
        "remove-input",
        "scope",
        "expires",
        "fulcio-url",
        "rekor-url",
        "trusted-root",
        "mansign",
        "version",
        "oidc-audience",
        "certificate-identity",
        "certificate-identity-regexp",
        "certificate-oidc-issuer",
        "certificate-oidc-issuer-regexp",
        "policy",
        "ignore-profile",
    ] {
        assert!(inputs.iter().any(|i| *i == name), "input {name} is missing");
    }
    assert_eq!(action["inputs"]["command"]["default"], "sign");
    let outputs = action["outputs"].as_object().unwrap();
    for name in ["files", "documents", "signer-identity", "signed"] {
        assert!(outputs.contains_key(name), "output {name} is missing");
    }
    assert_eq!(action["runs"]["using"], "composite");
}

#[test]
fn action_yml_passes_every_input_through_env_and_a_step_script_reads_it() {
    let action = action();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let scripts = scripts_text();
    for name in action["inputs"].as_object().unwrap().keys() {
        let var = format!("INPUT_{}", name.to_uppercase().replace('-', "_"));
        let wired = steps
            .iter()
            .filter_map(|s| s["env"].get(&var))
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>();
        assert_eq!(
            wired,
            [format!("${{{{ inputs.{name} }}}}").as_str()],
            "input {name} must reach exactly one step as env {var}"
        );
        assert!(scripts.contains(&var), "no step script reads {var}");
    }
}

#[test]
fn action_yml_never_puts_an_expression_into_a_run_script() {
    for step in action()["runs"]["steps"].as_array().unwrap() {
        let run = step["run"].as_str().unwrap();
        assert!(!run.contains("${{"), "expression in run: {run}");
        assert_eq!(step["shell"], "bash");
    }
}

#[test]
fn action_outputs_are_outputs_that_the_step_scripts_write() {
    let action = action();
    let scripts = scripts_text();
    let step_ids: Vec<&str> = action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    for (name, spec) in action["outputs"].as_object().unwrap() {
        let value = spec["value"].as_str().unwrap();
        let inner = value
            .strip_prefix("${{ steps.")
            .and_then(|v| v.strip_suffix(" }}"))
            .unwrap_or_else(|| panic!("output {name}: {value}"));
        let (step, output) = inner.split_once(".outputs.").unwrap();
        assert!(step_ids.contains(&step), "output {name}: no step {step}");
        assert!(
            scripts.contains(&format!("set_output {output} ")),
            "output {name}: no script writes {output}"
        );
    }
}
