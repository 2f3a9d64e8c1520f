//! Every file in `examples/` is exercised here (the workflows also pass actionlint in
//! `tests/it/ci_lint.rs`):
//!
//! - both policies (`examples/policy/`) load with `mansign verify --policy` and give the
//!   verdicts `examples/README.md` documents, on manifests signed on the loopback Sigstore
//!   stack with tokens shaped like GitHub's (issuer `https://token.actions.githubusercontent.com`,
//!   subject the sign workflow on main): the policies are tested with their real identity,
//!   only the trust root is the stack's;
//! - the sign-on-merge workflow (`examples/github/sign.yaml`) runs its job (the action, the
//!   commit back) against a local git remote; the pull-request workflow
//!   (`examples/github/verify-pr.yaml`) runs its job on passing and failing trees;
//! - the GitLab job (`examples/gitlab/.gitlab-ci.yml`) runs its script (install from a
//!   release served on loopback, sign, commit back);
//! - every manifest parses as Kubernetes objects; the Argo CD Application applies `signed/`
//!   with server-side apply.

use crate::common;
use crate::common::actions_runner;
use crate::common::file_server;
use crate::common::stack;
use crate::common::stub_server;

use actions_runner::{Map, Runner};
use common::dup_tests_a::assert_contains;
use serde_json::Value;
use stack::Stack;
use std::path::{Path, PathBuf};
use std::process::Command;
use stub_server::StubServer;

const WORKFLOW_IDENTITY: &str =
    "https://github.com/OWNER/REPO/.github/workflows/sign.yaml@refs/heads/main";
const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";
const POLICIES: [&str; 2] = [
    "examples/policy/mansign-policy.yaml",
    "examples/policy/kyverno-clusterpolicy.yaml",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn example(rel: &str) -> PathBuf {
    let p = repo().join("examples").join(rel);
    assert!(p.is_file(), "examples/{rel} is missing");
    p
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A token like GitHub Actions' for `subject`, with the workflow claims Fulcio copies into
/// the certificate. `overrides` replace claims (e.g. another issuer).
fn github_token(stack: &Stack, subject: &str, overrides: &[&str]) -> String {
    let mut claims = vec![
        format!("iss={GITHUB_ISSUER}"),
        format!("sub={subject}"),
        "repository=OWNER/REPO".to_string(),
        "ref=refs/heads/main".to_string(),
        "event_name=push".to_string(),
        "workflow=sign".to_string(),
    ];
    claims.extend(overrides.iter().map(|s| s.to_string()));
    let args: Vec<&str> = claims.iter().map(String::as_str).collect();
    stack.mint_token(&args)
}

/// Signs `manifest` (YAML text) keylessly on the stack with `token`; returns the signed YAML.
fn sign(stack: &Stack, subject: &str, overrides: &[&str], manifest: &str) -> String {
    let token = github_token(stack, subject, overrides);
    let dir = tempfile::tempdir().unwrap();
    let input = common::write(dir.path(), "in.yaml", manifest);
    let out = dir.path().join("out.yaml");
    stack.keyless_sign_to(common::mansign(), &[], &input, &out, &token);
    read(&out)
}

/// `mansign verify --policy POLICY --output json` of one file: (verified, failure checks).
fn verdict(stack: &Stack, policy: &str, manifest: &str) -> (bool, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = common::write(dir.path(), "object.yaml", manifest);
    let out = common::mansign()
        .arg("verify")
        .arg("-f")
        .arg(&file)
        .arg("--policy")
        .arg(repo().join(policy))
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .args(["--output", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{policy} did not load or run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let objects = json["documents"].as_array().unwrap();
    assert_eq!(objects.len(), 1);
    let o = &objects[0];
    let mut checks: Vec<String> = o["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["failure"]["check"].as_str().map(str::to_string))
        .collect();
    if let Some(c) = o["failure"]["check"].as_str() {
        checks.push(c.to_string());
    }
    assert_eq!(
        out.status.code() == Some(0),
        o["verified"].as_bool().unwrap(),
        "exit code and verdict disagree"
    );
    (o["verified"].as_bool().unwrap(), checks)
}

fn exception() -> String {
    read(&example("unsigned/allow-backup-host-path.yaml"))
}

/// Both policies give `expected` (`None` = verified, `Some(check)` = that failure).
fn assert_both_policies(stack: &Stack, manifest: &str, expected: Option<&str>) {
    assert_both_policies_of("the manifest", stack, manifest, expected);
}

/// [`assert_both_policies`], `what` naming the manifest in the failure.
fn assert_both_policies_of(what: &str, stack: &Stack, manifest: &str, expected: Option<&str>) {
    for policy in POLICIES {
        let (verified, checks) = verdict(stack, policy, manifest);
        match expected {
            None => assert!(verified, "{what}: {policy}: not verified: {checks:?}"),
            Some(check) => {
                assert!(!verified, "{what}: {policy}: verified, expected {check}");
                assert_eq!(checks, [check], "{what}: {policy}");
            }
        }
    }
}

/// The example PolicyException signed by the sign workflow on main.
fn signed_exception(stack: &Stack) -> String {
    sign(stack, WORKFLOW_IDENTITY, &[], &exception())
}

// ---- the policies' documented verdicts (examples/README.md) ------------------------------

#[test]
fn policies_admit_a_policy_exception_signed_by_the_sign_workflow_on_main() {
    let stack = Stack::start();
    let signed = signed_exception(&stack);
    assert_both_policies(&stack, &signed, None);
}

#[test]
fn policies_admit_the_live_object_argo_cd_applied_with_its_tracking_annotation() {
    let stack = Stack::start();
    let signed = signed_exception(&stack);
    let mut live = mansign::manifest::parse_documents(&signed, &mansign::Limits::default())
        .unwrap()
        .remove(0)
        .1;
    let meta = &mut live["metadata"];
    meta["annotations"]["argocd.argoproj.io/tracking-id"] =
        "signed-policy-exceptions:kyverno.io/PolicyException:backup/backup-host-path".into();
    meta["uid"] = "6f1c2a9e-3d0b-4a7e-9a51-0c7f5e2b8d11".into();
    meta["resourceVersion"] = "48213".into();
    meta["generation"] = 1.into();
    meta["creationTimestamp"] = "2026-11-23T10:00:00Z".into();
    meta["managedFields"] = serde_json::json!([{
        "manager": "argocd-controller", "operation": "Apply", "apiVersion": "kyverno.io/v2",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}},
    }]);
    let live = mansign::manifest::to_yaml(&live);
    assert_both_policies(&stack, &live, None);
}

#[test]
fn policies_deny_a_policy_exception_changed_after_signing() {
    let stack = Stack::start();
    let signed = signed_exception(&stack);
    let widened = signed.replace("nightly-backup-*", "'*'");
    assert_ne!(widened, signed);
    assert_both_policies(&stack, &widened, Some("diff"));
}

/// Only the sign workflow of OWNER/REPO on main, with GitHub's issuer, is trusted: a
/// signature by any other identity is denied.
#[test]
fn policies_deny_a_signature_by_another_workflow_branch_repository_or_issuer() {
    let stack = Stack::start();
    let other_issuer = format!("iss={}", stack.issuer());
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "another workflow of the repository",
            "https://github.com/OWNER/REPO/.github/workflows/release.yaml@refs/heads/main",
            &[],
        ),
        (
            "the sign workflow on another branch",
            "https://github.com/OWNER/REPO/.github/workflows/sign.yaml@refs/heads/feature",
            &["ref=refs/heads/feature"],
        ),
        (
            "the same workflow path in another repository",
            "https://github.com/EVIL/REPO/.github/workflows/sign.yaml@refs/heads/main",
            &["repository=EVIL/REPO"],
        ),
        (
            "the workflow subject from another issuer",
            WORKFLOW_IDENTITY,
            &[&other_issuer],
        ),
    ];
    for (what, subject, overrides) in cases {
        let signed = sign(&stack, subject, overrides, &exception());
        assert_both_policies_of(what, &stack, &signed, Some("signature"));
    }
}

#[test]
fn policies_deny_an_unsigned_policy_exception() {
    let stack = Stack::start();
    assert_both_policies(&stack, &exception(), Some("not-signed"));
}

#[test]
fn policies_cover_no_other_kind_even_when_signed_by_the_workflow() {
    let stack = Stack::start();
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: backup\ndata:\n  a: \"1\"\n";
    let signed = sign(&stack, WORKFLOW_IDENTITY, &[], configmap);
    assert_both_policies(&stack, &signed, Some("no-policy-rule"));
}

// ---- the GitHub workflows, run -----------------------------------------------------------

fn git(dir: &Path, args: &[&str]) -> String {
    let out = common::output_ok(
        Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
            ])
            .args(args),
        &format!("git {args:?}"),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A bare `origin` whose main holds `files`, and `workspace` as its checkout (what
/// actions/checkout leaves behind).
fn origin_with(root: &Path, workspace: &Path, files: &[(&str, &str)]) -> PathBuf {
    let seed = root.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q"]);
    for (name, text) in files {
        common::write(&seed, name, text);
    }
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "merge pull request"]);
    let origin = root.join("origin.git");
    git(
        root,
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    git(
        root,
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            workspace.to_str().unwrap(),
        ],
    );
    origin
}

fn github_job(github: &StubServer) -> Runner {
    let mut job = Runner::new();
    job.set_env(
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        format!("{}/_apis/token?api-version=2.0", github.url),
    );
    job.set_env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token");
    job.set_env("GIT_CONFIG_NOSYSTEM", "1");
    job
}

/// Inputs the tests add to the examples' `with:`: this run's mansign binary, and the
/// loopback stack instead of the public-good Sigstore.
fn loopback_inputs(stack: &Stack, signing: bool) -> Map {
    let mut m = Map::new();
    m.insert(
        "mansign".into(),
        assert_cmd::cargo::cargo_bin("mansign")
            .display()
            .to_string(),
    );
    m.insert(
        "trusted-root".into(),
        stack.trusted_root().display().to_string(),
    );
    if signing {
        m.insert("fulcio-url".into(), stack.fulcio_url().to_string());
        m.insert("rekor-url".into(), stack.rekor_url().to_string());
    }
    m
}

#[test]
fn sign_on_merge_example_signs_unsigned_into_signed_and_commits_back_to_main() {
    let stack = Stack::start();
    let github = StubServer::token_endpoint(github_token(&stack, WORKFLOW_IDENTITY, &[]));
    let mut job = github_job(&github);
    let origin = origin_with(
        job.root(),
        &job.workspace,
        &[("unsigned/allow-backup-host-path.yaml", &exception())],
    );

    let run = job.run_workflow_job(
        &example("github/sign.yaml"),
        "sign",
        repo(),
        &loopback_inputs(&stack, true),
    );
    assert!(run.success, "{}", run.log());
    assert_eq!(run.step("sign").outputs["documents"], "1");

    let show = git(
        &origin,
        &["show", "--name-status", "--format=%s%n%b", "main"],
    );
    assert!(show.starts_with("Sign manifests"), "{show}");
    assert_contains(&show, &format!("Signed by {WORKFLOW_IDENTITY}:"));
    assert_contains(&show, "A\tsigned/allow-backup-host-path.yaml");
    assert_contains(&show, "D\tunsigned/allow-backup-host-path.yaml");
    let signed = git(
        &origin,
        &["show", "main:signed/allow-backup-host-path.yaml"],
    );
    assert_both_policies(&stack, &signed, None);
    assert_eq!(github.requests().len(), 1);
}

/// A pull request's checkout: `signed/` signed by the workflow, `unsigned/` as given, and
/// the policy where the workflow expects it.
fn pull_request_job(stack: &Stack, unsigned: &[(&str, &str)]) -> (Runner, StubServer) {
    let github = StubServer::token_endpoint(String::new());
    let mut job = github_job(&github);
    job.github
        .insert("event_name".into(), "pull_request".into());
    let signed = signed_exception(stack);
    common::write(
        &job.workspace,
        "signed/allow-backup-host-path.yaml",
        &signed,
    );
    common::write(
        &job.workspace,
        "policy/mansign-policy.yaml",
        &read(&example("policy/mansign-policy.yaml")),
    );
    for (name, text) in unsigned {
        common::write(&job.workspace, name, text);
    }
    (job, github)
}

fn run_pull_request(stack: &Stack, job: &mut Runner) -> actions_runner::JobRun {
    job.run_workflow_job(
        &example("github/verify-pr.yaml"),
        "verify",
        repo(),
        &loopback_inputs(stack, false),
    )
}

const ANOTHER_EXCEPTION: &str = "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: debug-tools\n  namespace: team-a\nspec:\n  exceptions:\n  - policyName: disallow-privileged\n    ruleNames: [privileged]\n  match:\n    any:\n    - resources:\n        kinds: [Pod]\n        names: [debug-*]\n";

#[test]
fn pull_request_example_passes_a_verified_signed_tree_and_a_new_policy_exception() {
    let stack = Stack::start();
    let (mut job, github) =
        pull_request_job(&stack, &[("unsigned/debug-tools.yaml", ANOTHER_EXCEPTION)]);
    let run = run_pull_request(&stack, &mut job);
    assert!(run.success, "{}", run.log());
    assert_contains(
        &run.log(),
        "unsigned/: 1 PolicyException(s), each covered by policy/mansign-policy.yaml",
    );
    assert_contains(&job.summary, "✅ **1 of 1 document(s) verified**");
    assert!(
        github.requests().is_empty(),
        "verifying needs no OIDC token"
    );
}

#[test]
fn pull_request_example_fails_when_a_signed_manifest_was_edited() {
    let stack = Stack::start();
    let (mut job, _github) = pull_request_job(&stack, &[]);
    let path = job.workspace.join("signed/allow-backup-host-path.yaml");
    std::fs::write(&path, read(&path).replace("nightly-backup-*", "'*'")).unwrap();
    let run = run_pull_request(&stack, &mut job);
    assert!(!run.success);
    assert_eq!(
        run.steps.last().unwrap().id,
        "__step1",
        "stops at the verify step"
    );
    assert_contains(
        &run.log(),
        "::error file=signed/allow-backup-host-path.yaml",
    );
    assert_contains(&job.summary, "❌ FAILED");
}

#[test]
fn pull_request_example_fails_on_an_unsigned_manifest_of_another_kind() {
    let stack = Stack::start();
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sneaky\n  namespace: team-a\ndata:\n  a: \"1\"\n";
    let (mut job, _github) = pull_request_job(
        &stack,
        &[
            ("unsigned/debug-tools.yaml", ANOTHER_EXCEPTION),
            ("unsigned/sneaky.yaml", configmap),
        ],
    );
    let run = run_pull_request(&stack, &mut job);
    assert!(!run.success);
    let shape = run.steps.last().unwrap();
    assert_contains(
        &shape.log(),
        "::error file=unsigned/sneaky.yaml::document 1: ConfigMap team-a/sneaky is not an unsigned, namespaced PolicyException covered by policy/mansign-policy.yaml",
    );
    assert!(
        !shape.log().contains("debug-tools.yaml::"),
        "{}",
        shape.log()
    );
}

#[test]
fn pull_request_example_fails_on_a_policy_exception_without_namespace() {
    let stack = Stack::start();
    let no_ns = ANOTHER_EXCEPTION.replace("  namespace: team-a\n", "");
    let (mut job, _github) = pull_request_job(&stack, &[("unsigned/debug-tools.yaml", &no_ns)]);
    let run = run_pull_request(&stack, &mut job);
    assert!(!run.success);
    assert_contains(
        &run.log(),
        "::error file=unsigned/debug-tools.yaml::document 1: PolicyException /debug-tools is not",
    );
}

#[test]
fn pull_request_example_fails_on_an_unsigned_manifest_that_does_not_parse() {
    let stack = Stack::start();
    let (mut job, _github) = pull_request_job(
        &stack,
        &[(
            "unsigned/broken.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n",
        )],
    );
    let run = run_pull_request(&stack, &mut job);
    assert!(!run.success);
    let shape = run.steps.last().unwrap();
    assert_contains(&shape.log(), "unsigned/broken.yaml");
    assert_contains(&shape.log(), "::error::unsigned/ does not parse");
}

// ---- the GitLab job, run -----------------------------------------------------------------

#[test]
fn gitlab_job_installs_the_checksummed_release_signs_and_commits_back() {
    let stack = Stack::start();
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    let origin = origin_with(
        root.path(),
        &project,
        &[("unsigned/allow-backup-host-path.yaml", &exception())],
    );

    let ci: Value = common::ci_yaml(&read(&example("gitlab/.gitlab-ci.yml")));
    let job = &ci["sign-manifests"];
    assert_eq!(job["id_tokens"]["SIGSTORE_ID_TOKEN"]["aud"], "sigstore");
    let vars = job["variables"].as_object().unwrap();
    let version = vars["MANSIGN_VERSION"].as_str().unwrap();
    let asset = vars["MANSIGN_ASSET"].as_str().unwrap();

    // The release the job downloads: this run's mansign as the asset, a real SHA256SUMS.
    let release = root.path().join("releases");
    std::fs::create_dir_all(release.join(version)).unwrap();
    std::fs::copy(
        assert_cmd::cargo::cargo_bin("mansign"),
        release.join(version).join(asset),
    )
    .unwrap();
    let sums = Command::new("bash")
        .arg(repo().join("scripts/release-checksums.sh"))
        .arg(release.join(version))
        .output()
        .unwrap();
    assert!(sums.status.success());
    let server = file_server::FileServer::start(&release);

    // The job's shell: before_script then script, one bash -e session, as the GitLab
    // runner does; only the apt-get line (the image's package install) is left out.
    let mut lines = Vec::new();
    for key in ["before_script", "script"] {
        for l in job[key].as_array().unwrap() {
            let l = l.as_str().unwrap();
            if l.starts_with("apt-get ") {
                continue;
            }
            lines.push(l.to_string());
        }
    }
    assert_eq!(
        lines.len(),
        11,
        "the test runs every line but apt-get: {lines:?}"
    );
    let script = format!("set -eo pipefail\n{}\n", lines.join("\n"));
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // Pushes to the GitLab URL land in the local origin.
    let gitconfig = root.path().join("gitconfig");
    std::fs::write(
        &gitconfig,
        format!(
            "[url \"{}\"]\n\tinsteadOf = https://signer:glpat-test@gitlab.example/group/project.git\n",
            origin.display()
        ),
    )
    .unwrap();
    let token = github_token(
        &stack,
        "https://gitlab.example/group/project//.gitlab-ci.yml@refs/heads/main",
        &["iss=https://gitlab.example"],
    );
    let trust_dir = root.path().join("trust");
    std::fs::create_dir_all(&trust_dir).unwrap();
    std::fs::copy(stack.trusted_root(), trust_dir.join("trusted_root.json")).unwrap();

    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .current_dir(&project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("CI_PROJECT_DIR", &project)
        .env("CI_COMMIT_BRANCH", "main")
        .env("CI_DEFAULT_BRANCH", "main")
        .env("CI_SERVER_HOST", "gitlab.example")
        .env("CI_PROJECT_PATH", "group/project")
        .env("SIGNER_PUSH_TOKEN", "glpat-test")
        .env("SIGSTORE_ID_TOKEN", &token)
        // the loopback stack instead of the public-good instance
        .env("SIGSTORE_FULCIO_URL", stack.fulcio_url())
        .env("SIGSTORE_REKOR_URL", stack.rekor_url())
        .env("MANSIGN_TRUST_DIR", &trust_dir);
    for (k, v) in vars {
        cmd.env(k, v.as_str().unwrap());
    }
    cmd.env("MANSIGN_RELEASE_BASE_URL", &server.url);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server.requests(),
        [
            format!("/{version}/{asset}"),
            format!("/{version}/SHA256SUMS")
        ]
    );
    let show = git(&origin, &["show", "--name-status", "--format=%s", "main"]);
    assert_contains(&show, "A\tsigned/allow-backup-host-path.yaml");
    assert_contains(&show, "D\tunsigned/allow-backup-host-path.yaml");
    let signed = git(
        &origin,
        &["show", "main:signed/allow-backup-host-path.yaml"],
    );
    let dir = tempfile::tempdir().unwrap();
    let f = common::write(dir.path(), "s.yaml", &signed);
    common::mansign()
        .arg("verify")
        .arg("-f")
        .arg(&f)
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .args([
            "--certificate-identity",
            "https://gitlab.example/group/project//.gitlab-ci.yml@refs/heads/main",
            "--certificate-oidc-issuer",
            "https://gitlab.example",
        ])
        .assert()
        .success();
}

// ---- manifests --------------------------------------------------------------------------

#[test]
fn example_manifests_parse_as_kubernetes_objects() {
    for rel in [
        "argocd/application.yaml",
        "policy/mansign-policy.yaml",
        "policy/kyverno-clusterpolicy.yaml",
        "unsigned/allow-backup-host-path.yaml",
    ] {
        let files = mansign::manifest::load_inputs(&[example(rel)], &mansign::Limits::default())
            .unwrap_or_else(|e| panic!("examples/{rel}: {e}"));
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].documents.len(), 1, "examples/{rel}");
    }
}

#[test]
fn argo_cd_application_syncs_signed_with_server_side_apply() {
    let app: Value = common::ci_yaml(&read(&example("argocd/application.yaml")));
    assert_eq!(app["apiVersion"], "argoproj.io/v1alpha1");
    assert_eq!(app["kind"], "Application");
    assert_eq!(app["spec"]["source"]["path"], "signed");
    assert_eq!(app["spec"]["source"]["targetRevision"], "main");
    let options: Vec<&str> = app["spec"]["syncPolicy"]["syncOptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(options.contains(&"ServerSideApply=true"), "{options:?}");
}

#[test]
fn every_file_in_examples_is_exercised_by_a_test() {
    let tested = [
        "README.md",
        "argocd/application.yaml",
        "github/sign.yaml",
        "github/verify-pr.yaml",
        "gitlab/.gitlab-ci.yml",
        // tests/it/kyverno_cel_route.rs (the ValidatingPolicy asking mansign's endpoint)
        "kyverno/mansign-validatingpolicy.yaml",
        // tests/it/kyverno_in_the_loop.rs (guarding Kyverno's policies, with the real Kyverno)
        "policy/guard-kyverno-policies.yaml",
        "policy/kyverno-clusterpolicy.yaml",
        "policy/mansign-policy.yaml",
        // tests/it/admission_review.rs (per-namespace signers)
        "policy/per-namespace-signers.yaml",
        "unsigned/allow-backup-host-path.yaml",
    ];
    let mut found = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let root = repo().join("examples");
    walk(&root, &root, &mut found);
    found.sort();
    assert_eq!(found, tested, "a new example needs a test here");
}

#[test]
fn examples_readme_documents_the_verdicts_these_tests_check() {
    let readme = read(&example("README.md"));
    for verdict in [
        "verified",
        "diff",
        "signature",
        "not-signed",
        "no-policy-rule",
    ] {
        assert!(
            readme.contains(&format!("`{verdict}`")),
            "README lacks {verdict}"
        );
    }
}
