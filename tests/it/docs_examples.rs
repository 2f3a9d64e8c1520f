//! The documentation's examples, executed: every ```sh block of README.md and docs/cli.md
//! marked `<!-- runnable -->` (or `<!-- runnable exit=N -->`) runs, in file order, in one
//! workspace per file with the built `mansign` first on PATH and the loopback Sigstore
//! stack standing in for GitHub Actions; its exit code must be the documented one, and the
//! lines of a ```text block marked `<!-- output -->` right after it must be printed. The
//! convention is documented in docs/cli.md, "Runnable examples".

use crate::common;
use crate::common::stack;

use stack::Stack;
use std::path::Path;
use std::process::Command;

/// The identity the examples show: the sign workflow of `acme/policies` on main.
const IDENTITY: &str =
    "https://github.com/acme/policies/.github/workflows/sign.yaml@refs/heads/main";
const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// One runnable block.
#[derive(Debug)]
struct Example {
    /// 1-based line of the opening fence, for messages.
    line: usize,
    script: String,
    exit_code: i32,
    output: Vec<String>,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The runnable blocks of a Markdown file, in order. A marker not followed by a ```sh
/// block, or an output marker not followed by a ```text block, fails: a typo must not
/// quietly turn an example off.
fn examples(markdown: &str) -> Vec<Example> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut out: Vec<Example> = Vec::new();
    let mut i = 0;
    // The block body after an opening fence at `start`; returns (body, index after close).
    let fenced =
        |start: usize, fence: &str| common::fenced_block(&lines, start, fence, "the Markdown");
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(rest) = line
            .strip_prefix("<!-- runnable")
            .and_then(|r| r.strip_suffix("-->"))
        {
            let exit_code = match rest.trim() {
                "" => 0,
                spec => spec
                    .strip_prefix("exit=")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("line {}: bad marker {line:?}", i + 1)),
            };
            let (script, next) = fenced(i + 1, "```sh");
            out.push(Example {
                line: i + 2,
                script,
                exit_code,
                output: Vec::new(),
            });
            i = next;
            continue;
        }
        if line == "<!-- output -->" {
            let (body, next) = fenced(i + 1, "```text");
            let last = out
                .last_mut()
                .unwrap_or_else(|| panic!("line {}: output marker before any example", i + 1));
            last.output = body.lines().map(str::to_string).collect();
            i = next;
            continue;
        }
        i += 1;
    }
    out
}

/// Log indexes and times differ from run to run.
fn normalized(text: &str) -> String {
    let re = regex::Regex::new(r"rekor log index \d+ at \S+?Z\)").unwrap();
    re.replace_all(text, "rekor log index N at T)").into_owned()
}

/// A workspace for one file's examples: `unsigned/`, and the environment the docs promise.
struct Workspace {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Workspace {
    fn new(stack: &Stack) -> Self {
        let dir = tempfile::tempdir().unwrap();
        common::copy_dir(
            &repo().join("testdata/unsigned"),
            &dir.path().join("unsigned"),
        );
        let token = stack.mint_token(&[
            &format!("iss={GITHUB_ISSUER}"),
            &format!("sub={IDENTITY}"),
            "repository=acme/policies",
            "ref=refs/heads/main",
            "event_name=push",
            "workflow=sign",
        ]);
        let bin_dir = assert_cmd::cargo::cargo_bin("mansign")
            .parent()
            .unwrap()
            .to_path_buf();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let env = vec![
            ("PATH".into(), path),
            ("SIGSTORE_ID_TOKEN".into(), token),
            ("SIGSTORE_FULCIO_URL".into(), stack.fulcio_url().into()),
            ("SIGSTORE_REKOR_URL".into(), stack.rekor_url().into()),
            (
                "SIGSTORE_TRUSTED_ROOT".into(),
                stack.trusted_root().display().to_string(),
            ),
            ("COSIGN_PASSWORD".into(), "docs-example".into()),
            (
                "XDG_CACHE_HOME".into(),
                dir.path().join(".cache").display().to_string(),
            ),
        ];
        Workspace { dir, env }
    }

    fn run(&self, example: &Example) -> (i32, String) {
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c", &example.script])
            .current_dir(self.dir.path());
        for v in stack::AMBIENT_VARS {
            cmd.env_remove(v);
        }
        cmd.env_remove("MANSIGN_TRUST_DIR");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run bash");
        let text = common::all_output(&out);
        (out.status.code().unwrap_or(-1), text)
    }
}

/// Runs every runnable example of `file` (relative to the repository); there must be at
/// least `at_least` of them.
fn run_examples_of(file: &str, at_least: usize) {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let examples = examples(&text);
    assert!(
        examples.len() >= at_least,
        "{file}: {} runnable examples, expected at least {at_least}",
        examples.len()
    );
    let stack = Stack::start();
    let workspace = Workspace::new(&stack);
    for example in &examples {
        let (code, output) = workspace.run(example);
        assert_eq!(
            code, example.exit_code,
            "{file}:{}: exit code {code}, documented {}\n--- script\n{}--- output\n{output}",
            example.line, example.exit_code, example.script
        );
        let printed = normalized(&output);
        for expected in example.output.iter().filter(|l| !l.trim().is_empty()) {
            let expected = normalized(expected);
            assert!(
                printed.lines().any(|l| l == expected),
                "{file}:{}: documented output line not printed:\n{expected}\n--- output\n{output}",
                example.line
            );
        }
    }
}

#[test]
fn readme_examples_run_as_documented() {
    run_examples_of("README.md", 3);
}

#[test]
fn cli_reference_examples_run_as_documented() {
    // 6: the last one shows `verify --policy`, `admission review` and `policy explain`
    // agreeing on the trust root of the environment (issue 27).
    run_examples_of("docs/cli.md", 6);
}

#[test]
fn the_runnable_marker_is_parsed_strictly() {
    let doc = "text\n<!-- runnable exit=1 -->\n```sh\nfalse\n```\n\n<!-- output -->\n```text\nline\n```\n<!-- runnable -->\n```sh\ntrue\n```\n";
    let found = examples(doc);
    assert_eq!(found.len(), 2);
    assert_eq!(
        (found[0].exit_code, found[0].script.as_str()),
        (1, "false\n")
    );
    assert_eq!(found[0].output, ["line"]);
    assert_eq!((found[1].exit_code, found[1].output.len()), (0, 0));
    // A marker on anything but a sh block is an error, not a skipped example.
    let bad = std::panic::catch_unwind(|| examples("<!-- runnable -->\n```bash\ntrue\n```\n"));
    assert!(bad.is_err());
    assert_eq!(
        normalized("x, rekor log index 12 at 2026-11-21T05:49:17Z)"),
        "x, rekor log index N at T)"
    );
}

/// Issue 27, item 4: `scripts/demo.sh`, the README's first command, shows cargo's progress,
/// says how long the first build takes before it starts, and signs as the CI identity the
/// README's quickstart verifies (the demo is too slow to run here; its text is checked).
#[test]
fn the_demo_shows_cargo_progress_and_uses_the_quickstart_identity() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let demo = std::fs::read_to_string(repo.join("scripts/demo.sh")).unwrap();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    // The identity and issuer the README's quickstart verifies with.
    let quickstart = readme
        .split("## Quickstart")
        .nth(1)
        .expect("README: a Quickstart section");
    let flag = |name: &str| -> String {
        let at = quickstart
            .find(&format!("--{name} "))
            .unwrap_or_else(|| panic!("README quickstart: no --{name}"));
        quickstart[at + name.len() + 3..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    assert!(
        demo.contains(&format!("IDENTITY={}\n", flag("certificate-identity"))),
        "the demo's CI identity is not the README's"
    );
    assert!(
        demo.contains(&format!("ISSUER={}\n", flag("certificate-oidc-issuer"))),
        "the demo's issuer is not the README's"
    );
    let build = demo
        .lines()
        .find(|l| l.trim_start().starts_with("cargo build"))
        .expect("the demo builds mansign");
    assert!(
        !build.contains("--quiet") && !build.contains("-q"),
        "{build}"
    );
    let announce = demo
        .find("minutes")
        .expect("the demo says how long the build takes");
    assert!(announce < demo.find(build).unwrap(), "said after the build");
}
