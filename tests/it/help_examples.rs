//! Every command's `--help` has an `Examples:` section (issue 39 item 15), and the help
//! cannot show a broken command: each example is parsed by mansign's own command-line
//! parser, and those that need no network, cluster or browser are run, in order, in one
//! directory, and must succeed.

use crate::common;
use clap::Parser;
use mansign::cli::Cli;

/// The commands whose help has examples.
const COMMANDS: [&str; 7] = [
    "sign",
    "verify",
    "verify-resource",
    "generate-key-pair",
    "policy",
    "trust",
    "admission",
];

/// The examples of `mansign COMMAND --help` as the user sees them: the lines of its
/// `Examples:` section that start with `mansign `, with ` \` continuations joined.
fn examples(command: &str) -> Vec<String> {
    let out = common::mansign()
        .args([command, "--help"])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::all_output(&out));
    let help = String::from_utf8(out.stdout).unwrap();
    let section = help
        .split_once("\nExamples:\n")
        .unwrap_or_else(|| panic!("`mansign {command} --help` has no Examples: section:\n{help}"))
        .1;
    let mut found = Vec::new();
    let mut pending: Option<String> = None;
    for line in section.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("Exit codes:") {
            break;
        }
        let joined = match pending.take() {
            Some(start) => format!("{start} {line}"),
            None if line.starts_with("mansign ") => line.to_string(),
            None => continue, // a comment
        };
        match joined.strip_suffix(" \\") {
            Some(start) => pending = Some(start.to_string()),
            None => found.push(joined),
        }
    }
    assert!(
        pending.is_none(),
        "{command}: an example ends in a continuation"
    );
    assert!(
        !found.is_empty(),
        "`mansign {command} --help` shows no example"
    );
    found
}

#[test]
fn every_example_in_the_help_parses() {
    for command in COMMANDS {
        for example in examples(command) {
            let words: Vec<&str> = example.split_whitespace().collect();
            assert_eq!(words[1], command, "an example of {command}: {example}");
            if let Err(e) = Cli::try_parse_from(words.iter().copied()) {
                panic!("`mansign {command} --help` shows `{example}`, which does not parse: {e}");
            }
        }
    }
}

/// The examples that need no network, cluster or browser, in the order they are run: each
/// must be in the help as written here, and succeed.
const RUN: [&str; 7] = [
    "mansign generate-key-pair",
    "mansign generate-key-pair --output-key-prefix release",
    "mansign sign -f deploy.yaml --key cosign.key",
    "mansign sign unsigned/ --key cosign.key -o signed/",
    "mansign verify -f deploy.yaml.signed --key cosign.pub",
    "mansign policy explain policy.yaml",
    "mansign verify -f deploy.yaml.signed --policy policy.yaml -o json",
];

#[test]
fn the_examples_that_need_nothing_outside_run() {
    let all: Vec<String> = COMMANDS.into_iter().flat_map(examples).collect();
    let dir = tempfile::tempdir().unwrap();
    common::write(
        dir.path(),
        "deploy.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: strict\n",
    );
    common::write(
        dir.path(),
        "unsigned/team-a/owners.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owners\ndata:\n  team: a\n",
    );
    for example in RUN {
        assert!(
            all.iter().any(|e| e == example),
            "`{example}` is not in any help: {all:#?}"
        );
        if example.contains("policy.yaml") && !dir.path().join("policy.yaml").exists() {
            // The policy the examples name: cosign.pub for ConfigMaps.
            let pem = common::indented_pem(&dir.path().join("cosign.pub"), 10);
            common::write(
                dir.path(),
                "policy.yaml",
                &format!(
                    "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: p\n\
                     spec:\n  match:\n    kinds: [ConfigMap]\n  attestors:\n  - entries:\n    - keys:\n        publicKeys: |\n{pem}"
                ),
            );
        }
        let words: Vec<&str> = example.split_whitespace().skip(1).collect();
        let out = common::mansign()
            .current_dir(dir.path())
            .args(&words)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{example}` failed: {}",
            common::all_output(&out)
        );
    }
    for file in [
        "cosign.key",
        "cosign.pub",
        "release.key",
        "release.pub",
        "deploy.yaml.signed",
        "signed/team-a/owners.yaml",
    ] {
        assert!(dir.path().join(file).is_file(), "{file} not written");
    }
}
