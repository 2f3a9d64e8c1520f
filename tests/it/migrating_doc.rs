//! The worked examples of `docs/migrating.md` run as written: every ```` ```console ````
//! block holds one `$ mansign ARGS...` command (run from the repository root, arguments split
//! at spaces), the output lines it must print (stdout or stderr, in any order; `...` lines
//! are not checked) and its exit code as `[exit N]`.
//!
//! The "Kyverno 1.20" walkthrough's ```` ```sh ```` blocks marked `<!-- step -->` run in
//! order in one directory against a real API server (`tests/it/common/cluster.rs`), with the
//! webhook started for the block marked `<!-- step webhook -->` and the Kyverno CLI run on
//! the directory a `<!-- step kyverno=DIR -->` block tests.

use crate::common;

use common::cluster::{Cluster, tools};
use common::peers::run_peer;
use common::pki::Pki;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

struct Example {
    line: usize,
    args: Vec<String>,
    expected: Vec<String>,
    /// The block marks lines it leaves out with `...`.
    cut: bool,
    exit: i32,
}

fn examples() -> Vec<Example> {
    let text = std::fs::read_to_string(Path::new(REPO).join("docs/migrating.md")).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim() != "```console" {
            continue;
        }
        let mut block: Vec<&str> = Vec::new();
        for (_, l) in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            block.push(l);
        }
        let command = block
            .first()
            .and_then(|c| c.strip_prefix("$ mansign "))
            .unwrap_or_else(|| {
                panic!(
                    "docs/migrating.md:{}: a block starts with `$ mansign`",
                    n + 1
                )
            });
        let exit = block
            .last()
            .and_then(|l| l.strip_prefix("[exit "))
            .and_then(|l| l.strip_suffix(']'))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("docs/migrating.md:{}: a block ends with [exit N]", n + 1));
        out.push(Example {
            line: n + 1,
            args: command.split(' ').map(str::to_string).collect(),
            expected: block[1..block.len() - 1]
                .iter()
                .filter(|l| l.trim() != "...")
                .map(|l| l.to_string())
                .collect(),
            cut: block.iter().any(|l| l.trim() == "..."),
            exit,
        });
    }
    out
}

#[test]
fn every_worked_example_of_the_migration_guide_runs_as_written() {
    let examples = examples();
    assert!(examples.len() >= 8, "found {} examples", examples.len());
    let trust_dir = tempfile::tempdir().unwrap();
    for ex in &examples {
        let out = common::mansign()
            .current_dir(REPO)
            // The default trust root is the embedded one, not a developer's cached root.
            .env("MANSIGN_TRUST_DIR", trust_dir.path())
            .args(&ex.args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let printed: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
        assert_eq!(
            out.status.code(),
            Some(ex.exit),
            "docs/migrating.md:{}: exit code\n{stdout}{stderr}",
            ex.line
        );
        for want in &ex.expected {
            assert!(
                printed.contains(&want.as_str()),
                "docs/migrating.md:{}: not printed: {want}\n--- printed:\n{stdout}{stderr}",
                ex.line
            );
        }
        // A block that shows part of the output says so with `...` (issue 39, item 5).
        let unshown = printed
            .iter()
            .filter(|l| !l.trim().is_empty() && !ex.expected.iter().any(|w| w == *l))
            .count();
        assert!(
            ex.cut || unshown == 0,
            "docs/migrating.md:{}: {unshown} printed line(s) not shown and no `...` marks the cut\n--- printed:\n{stdout}{stderr}",
            ex.line
        );
    }
}

/// One `<!-- step ... -->` block of the walkthrough.
#[derive(Debug)]
struct Step {
    line: usize,
    script: String,
    exit: i32,
    /// Start the webhook before this block.
    webhook: bool,
    /// After the block, `kubectl-kyverno test DIR` must print the same summary.
    kyverno: Option<String>,
    output: Vec<String>,
}

/// The steps, in order. A marker not followed by a ```sh block (or an output marker not
/// followed by a ```text block) fails: a typo must not turn a step off.
fn steps(markdown: &str) -> Vec<Step> {
    let lines: Vec<&str> = markdown.lines().collect();
    let fenced =
        |start: usize, fence: &str| common::fenced_block(&lines, start, fence, "docs/migrating.md");
    let mut out: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(rest) = line
            .strip_prefix("<!-- step")
            .and_then(|r| r.strip_suffix("-->"))
        {
            let mut step = Step {
                line: i + 2,
                script: String::new(),
                exit: 0,
                webhook: false,
                kyverno: None,
                output: Vec::new(),
            };
            for word in rest.split_whitespace() {
                if word == "webhook" {
                    step.webhook = true;
                } else if let Some(n) = word.strip_prefix("exit=") {
                    step.exit = n.parse().expect("exit=N");
                } else if let Some(d) = word.strip_prefix("kyverno=") {
                    step.kyverno = Some(d.to_string());
                } else {
                    panic!("docs/migrating.md:{}: bad marker {line:?}", i + 1);
                }
            }
            let (script, next) = fenced(i + 1, "```sh");
            step.script = script;
            out.push(step);
            i = next;
            continue;
        }
        if line == "<!-- output -->" {
            let (body, next) = fenced(i + 1, "```text");
            out.last_mut()
                .expect("an output marker after a step")
                .output = body.lines().map(str::to_string).collect();
            i = next;
            continue;
        }
        i += 1;
    }
    out
}

/// `mansign admission serve` on loopback with the walkthrough's policy.
struct Webhook {
    child: Child,
    url: String,
}

impl Webhook {
    fn start(work: &Path, pki: &Pki) -> Webhook {
        let tls = work.join(".webhook-tls");
        std::fs::create_dir_all(&tls).unwrap();
        pki.install(&tls, "mansign-webhook");
        let stderr_path = tls.join("stderr");
        let mut child = Command::new(env!("CARGO_BIN_EXE_mansign"))
            .args(["admission", "serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(work.join("mansign-policy.yaml"))
            .arg("--tls-cert")
            .arg(tls.join("tls.crt"))
            .arg("--tls-key")
            .arg(tls.join("tls.key"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .expect("start mansign admission serve");
        let port =
            common::webhook::wait_listening(&mut child, &stderr_path, "mansign admission serve");
        Webhook {
            child,
            url: format!("https://127.0.0.1:{port}/validate"),
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn summary(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with("Test Summary: "))
}

#[test]
fn the_kyverno_1_20_walkthrough_runs_against_a_real_api_server() {
    let text = std::fs::read_to_string(Path::new(REPO).join("docs/migrating.md")).unwrap();
    let section = text
        .split("## Kyverno 1.20")
        .nth(1)
        .expect("docs/migrating.md: a Kyverno 1.20 section");
    let steps = steps(section);
    assert!(steps.len() >= 10, "found {} steps", steps.len());
    assert_eq!(steps.iter().filter(|s| s.webhook).count(), 1);
    assert!(steps.iter().any(|s| s.kyverno.is_some()));

    let cluster = Cluster::start();
    for crds in ["cluster/kyverno-crds", "cluster/kyverno-policy-crds"] {
        let dir = common::fixture(crds);
        cluster.kubectl_ok(&["create", "-f", dir.to_str().unwrap()]);
    }
    // `kubectl wait` fails at once on a CRD whose status has no conditions yet.
    let start = Instant::now();
    while !cluster
        .kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/policyexceptions.kyverno.io",
            "crd/policyexceptions.policies.kyverno.io",
            "crd/clusterpolicies.kyverno.io",
        ])
        .status
        .success()
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the CRDs are not established within 60 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    // A checkout's deploy/, as the webhook step names it.
    common::copy_dir(&Path::new(REPO).join("deploy"), &w.join("deploy"));
    let bin_dir = |p: &Path| p.parent().unwrap().display().to_string();
    let path = format!(
        "{}:{}:{}",
        bin_dir(Path::new(env!("CARGO_BIN_EXE_mansign"))),
        bin_dir(&tools().kubectl),
        std::env::var("PATH").unwrap_or_default()
    );
    let pki = Pki::new();
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), path),
        ("HOME".into(), w.display().to_string()),
        (
            "KUBECONFIG".into(),
            cluster.kubeconfig().display().to_string(),
        ),
    ];
    let mut webhook: Option<Webhook> = None;
    for step in &steps {
        if step.webhook {
            let started = Webhook::start(w, &pki);
            use base64::Engine as _;
            env.push(("MANSIGN_WEBHOOK_URL".into(), started.url.clone()));
            env.push((
                "MANSIGN_CA_BUNDLE".into(),
                base64::engine::general_purpose::STANDARD.encode(pki.ca_pem.as_bytes()),
            ));
            webhook = Some(started);
        }
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c", &step.script])
            .current_dir(w)
            .stdin(Stdio::null());
        for var in [
            "SIGSTORE_ID_TOKEN",
            "SIGSTORE_TRUSTED_ROOT",
            "MANSIGN_TRUSTED_ROOT",
            "COSIGN_PASSWORD",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("MANSIGN_TRUST_DIR", w.join(".trust"));
        cmd.env("COSIGN_PASSWORD", "walkthrough");
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run bash");
        let printed = common::all_output(&out);
        println!("docs/migrating.md:{}:\n{printed}", step.line);
        assert_eq!(
            out.status.code(),
            Some(step.exit),
            "docs/migrating.md:{}: exit code\n--- script\n{}--- output\n{printed}",
            step.line,
            step.script
        );
        for want in step.output.iter().filter(|l| !l.trim().is_empty()) {
            assert!(
                printed.lines().any(|l| l.contains(want.as_str())),
                "docs/migrating.md:{}: not printed: {want}\n{printed}",
                step.line
            );
        }
        if let Some(dir) = &step.kyverno {
            let run = run_peer(
                "kubectl-kyverno",
                w,
                &[std::ffi::OsStr::new("test"), w.join(dir).as_os_str()],
            );
            println!("kubectl-kyverno test {dir}:\n{}", run.all());
            assert!(run.success, "{run:?}");
            assert_eq!(
                summary(&run.stdout),
                summary(&printed),
                "kyverno test and mansign policy test on {dir}"
            );
        }
        if step.webhook {
            // The API server calls the webhook: an unsigned exception is denied.
            let probe = w.join("exception-cel.yaml");
            let start = Instant::now();
            loop {
                let out =
                    cluster.kubectl(&["create", "--dry-run=server", "-f", probe.to_str().unwrap()]);
                if !out.status.success()
                    && String::from_utf8_lossy(&out.stderr).contains("denied the request")
                {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "the API server did not call the webhook within 60 s: {out:?}"
                );
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
    drop(webhook);
}
