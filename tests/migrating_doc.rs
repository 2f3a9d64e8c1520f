//! The worked examples of `docs/migrating.md` run as written: every ```` ```console ````
//! block holds one `$ mansign ARGS...` command (run from the repository root, arguments split
//! at spaces), the output lines it must print (stdout or stderr, in any order; `...` lines
//! are not checked) and its exit code as `[exit N]`.

mod common;

use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

struct Example {
    line: usize,
    args: Vec<String>,
    expected: Vec<String>,
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
    }
}
