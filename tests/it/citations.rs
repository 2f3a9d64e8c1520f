//! Every repository path a comment or a document cites exists.
//!
//! Comments in `src/`, `tests/`, `benches/`, `fuzz/` and `build.rs`, and the text of
//! `docs/*.md`, `README.md`, `BENCHMARKS.md` and `testdata/README.md`, name files such as
//! `docs/policy.md` or `src/verify/mod.rs` for the reader to open. A citation of a file that is
//! not in the repository (a note kept elsewhere, a file since moved) sends the reader
//! nowhere, so this test fails on it. A line that names an upstream repository
//! (`github.com/…`, "upstream") cites that repository's paths, not ours, and is skipped; so are
//! the paths that exist only on a machine that ran the tools (fuzz corpora, the stack's
//! installed packages).

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Top-level folders whose paths are checked.
const FOLDERS: &[&str] = &[
    "docs", "research", "src", "tests", "scripts", "deploy", "charts", "benches", "fuzz",
    "examples", "testdata",
];

/// Paths that are made by running the tools, never committed.
const MADE_BY_TOOLS: &[&str] = &[
    "fuzz/corpus",
    "fuzz/artifacts",
    "fuzz/target",
    "scripts/sigstore-stack/.venv",
    "scripts/sigstore-stack/node_modules",
];

/// The file extensions of a citation (a bare folder name is prose, often a glob's stem).
const EXTENSIONS: &[&str] = &[
    "md", "rs", "sh", "py", "yaml", "yml", "json", "toml", "lua", "jq", "txt", "pem", "pub",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == "target" || name == "corpus" || name == "artifacts" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The text checked in one file: comments of Rust files, all of a Markdown file.
fn checked_lines(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let rust = path.extension().is_some_and(|e| e == "rs");
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            if rust {
                line.find("//").map(|at| (n + 1, line[at..].to_string()))
            } else {
                Some((n + 1, line.to_string()))
            }
        })
        .collect()
}

/// Repository paths cited on one line: a known top-level folder, then path characters,
/// ending in a known extension, not part of a URL or a longer path.
fn citations(line: &str) -> Vec<String> {
    let bytes = line.as_bytes();
    let mut found = Vec::new();
    for folder in FOLDERS {
        let needle = format!("{folder}/");
        let mut from = 0;
        while let Some(at) = line[from..].find(&needle) {
            let start = from + at;
            from = start + needle.len();
            if start > 0 {
                let before = bytes[start - 1];
                if before.is_ascii_alphanumeric() || b"/._-:".contains(&before) {
                    continue;
                }
            }
            let end = line[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
                .map_or(line.len(), |e| start + e);
            let path = line[start..end].trim_end_matches('.');
            let Some((_, ext)) = path.rsplit_once('.') else {
                continue;
            };
            if EXTENSIONS.contains(&ext) && !path.chars().any(|c| c.is_ascii_uppercase()) {
                found.push(path.to_string());
            }
        }
    }
    found
}

fn upstream(line: &str) -> bool {
    line.contains("github.com/") || line.to_lowercase().contains("upstream")
}

#[test]
fn every_cited_repository_path_exists() {
    let root = Path::new(ROOT);
    let mut all = Vec::new();
    for dir in ["src", "tests", "benches", "fuzz/fuzz_targets", "docs"] {
        files(&root.join(dir), &mut all);
    }
    for file in [
        "build.rs",
        "README.md",
        "BENCHMARKS.md",
        "testdata/README.md",
    ] {
        all.push(root.join(file));
    }
    all.retain(|p| p.extension().is_some_and(|e| e == "rs" || e == "md"));
    assert!(all.len() > 100, "the walk found only {} files", all.len());

    let mut checked = 0;
    let mut missing = Vec::new();
    for path in &all {
        let relative = path.strip_prefix(root).unwrap();
        for (n, line) in checked_lines(path) {
            if upstream(&line) {
                continue;
            }
            for cited in citations(&line) {
                if MADE_BY_TOOLS.iter().any(|m| cited.starts_with(m)) {
                    continue;
                }
                checked += 1;
                let here = path.parent().unwrap().join(&cited);
                if !root.join(&cited).exists() && !here.exists() {
                    missing.push(format!("{}:{n}: {cited}", relative.display()));
                }
            }
        }
    }
    println!("{checked} citations of repository paths checked");
    assert!(
        checked > 200,
        "only {checked} citations found: is the scan broken?"
    );
    assert!(
        missing.is_empty(),
        "cited paths that are not in the repository:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_scan_finds_citations_and_skips_urls() {
    assert_eq!(
        citations("see docs/policy.md and (src/verify/mod.rs)."),
        ["docs/policy.md", "src/verify/mod.rs"]
    );
    assert!(citations("https://example.com/docs/policy.md").is_empty());
    assert!(citations("a/docs/policy.md").is_empty());
    assert!(citations("the docs/ folder and src/verify").is_empty());
    assert_eq!(citations("research/notes.md §2"), ["research/notes.md"]);
}
