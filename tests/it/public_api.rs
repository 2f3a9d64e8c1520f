//! The public-API snapshot (`tests/golden/public-api.txt`, written by
//! `scripts/public-api.sh --update`) read as a specification of the library's errors.

use std::collections::BTreeSet;
use std::path::Path;

/// The error type of each `Result<T, E>` in `line`, as written (nested results included).
fn result_error_types(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("Result<") {
        let args = &rest[at + "Result<".len()..];
        let (mut depth, mut last_comma, mut end) = (0usize, None, None);
        for (i, c) in args.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' if depth == 0 => {
                    end = Some(i);
                    break;
                }
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => last_comma = Some(i),
                _ => {}
            }
        }
        if let (Some(comma), Some(end)) = (last_comma, end) {
            out.push(args[comma + 1..end].trim().to_string());
        }
        rest = args;
    }
    out
}

/// The public items whose signature has a `Result<_, String>`.
fn string_error_items() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/public-api.txt");
    let snapshot = std::fs::read_to_string(&path).expect("tests/golden/public-api.txt");
    snapshot
        .lines()
        .filter(|line| {
            result_error_types(line).iter().any(|e| {
                e == "String" || e == "alloc::string::String" || e == "std::string::String"
            })
        })
        .map(|line| line.split('(').next().unwrap_or(line).to_string())
        .collect()
}

/// No public signature returns or takes a `Result<_, String>`: every library error is a type
/// whose `Display` says its step and whose `source()` gives the cause (issue 38, item 2).
#[test]
fn no_public_signature_has_a_string_error() {
    let found = string_error_items();
    assert!(
        found.is_empty(),
        "public signatures with a `Result<_, String>`: give them an error type: {found:#?}"
    );
}

#[test]
fn result_error_types_reads_nested_results() {
    assert_eq!(
        result_error_types("pub fn f(x: &str) -> Option<Result<(String, String), String>>"),
        ["String"]
    );
    assert_eq!(
        result_error_types("pub fn f(v: Result<String, String>) -> Result<(), KeyError>"),
        ["String", "KeyError"]
    );
    assert!(
        result_error_types("pub fn f() -> Result<Self, BundleError>")
            .iter()
            .all(|e| e != "String")
    );
}
