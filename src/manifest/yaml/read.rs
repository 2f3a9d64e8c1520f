//! Reading manifest streams (YAML or JSON) into documents, as kubectl reads them.
//!
//! The pipeline, each step bounded before the next one spends memory:
//!
//! 1. **Stream** (`stream`): a JSON stream when the input starts with `{`, otherwise
//!    YAML cut into documents at `---` lines, exactly as kubectl's `YAMLOrJSONDecoder` does.
//!    A document larger than `Limits::max_document_bytes` is refused before it is read.
//! 2. **JSON documents** (`json`): parsed by `serde_json` through a budgeted seed. A
//!    YAML document that is JSON as a whole is read this way too.
//! 3. **YAML documents**: pre-scanned (`scan`: flow collection size, flow nesting,
//!    directives, YAML 1.1 line-break characters), then parsed by saphyr-parser and built
//!    from its events (`events`), every scalar read in both YAML 1.2 and kubectl's
//!    YAML 1.1 (`scalar`), refused where they differ.
//!
//! Documents that are empty or `null` are skipped (kubectl skips them too); positions still
//! count them.

use super::budget::Budget;
use super::error::{YamlError, YamlLocation};
use super::events;
use super::json::{self, JsonStream, Parsed};
use super::scalar;
use super::scan::{self, Finding, ScanLimits};
use super::stream::{Chunk, Chunks, is_json_stream};
use crate::limits::Limits;
use serde_json::Value;

/// Parses a manifest stream into its non-empty documents. Each item is the 0-based position
/// of the document in the stream (empty documents count, so positions match what an editor
/// shows) and its value.
pub fn parse_documents(text: &str, limits: &Limits) -> Result<Vec<(usize, Value)>, YamlError> {
    let mut budget = Budget::new(limits);
    let mut docs = Vec::new();
    let mut keep = |position: usize, value: Option<Value>| {
        if position >= limits.max_documents.saturating_mul(2) {
            // Empty documents are cheap but unbounded; count them too, loosely.
            return Err(YamlError::TooManyDocuments {
                limit: limits.max_documents,
            });
        }
        match value {
            None | Some(Value::Null) => {}
            Some(v) => docs.push((position, v)),
        }
        if docs.len() > limits.max_documents {
            return Err(YamlError::TooManyDocuments {
                limit: limits.max_documents,
            });
        }
        Ok(())
    };
    if is_json_stream(text) {
        for doc in JsonStream::new(text, limits.max_document_bytes, limits.max_depth) {
            let doc = doc?;
            budget.start_document();
            let document = doc.position + 1;
            let value = match json::parse_document(
                doc.text,
                document,
                doc.first_line,
                &mut budget,
                limits.max_depth,
            )? {
                Parsed::Value(v) => v,
                Parsed::NotJson(e) => {
                    return Err(YamlError::NotAJsonStream {
                        at: Box::new(YamlLocation {
                            document,
                            path: String::new(),
                            line: doc.first_line + e.line().saturating_sub(1),
                            column: e.column().max(1),
                        }),
                        message: e.to_string(),
                    });
                }
            };
            keep(doc.position, Some(value))?;
        }
    } else {
        for chunk in Chunks::new(text, limits.max_document_bytes) {
            let chunk = chunk?;
            budget.start_document();
            let value = read_chunk(&chunk, &mut budget, limits)?;
            keep(chunk.position, value)?;
        }
    }
    Ok(docs)
}

/// One YAML document: JSON when it is JSON as a whole, YAML otherwise.
fn read_chunk(
    chunk: &Chunk,
    budget: &mut Budget,
    limits: &Limits,
) -> Result<Option<Value>, YamlError> {
    let document = chunk.position + 1;
    let scan_limits = ScanLimits {
        max_flow_bytes: limits.max_flow_collection_bytes,
        max_depth: limits.max_depth,
    };
    let finding = |f: Finding| finding_error(f, chunk, limits);
    // go-yaml refuses a document end marker with no document before it ("did not find
    // expected node content"); saphyr-parser reads nothing there (issue 22, yaml_oracle).
    let first = chunk
        .text
        .lines()
        .map(str::trim_end)
        .map(|l| l.trim_start_matches('\u{feff}'))
        .position(|l| !l.is_empty() && !l.trim_start().starts_with('#'));
    if let Some(i) = first {
        let line = chunk.text.lines().nth(i).unwrap_or_default();
        let line = line.trim_start_matches('\u{feff}').trim_end();
        if line == "..." || line.starts_with("... ") || line.starts_with("...\t") {
            return Err(YamlError::Syntax {
                document,
                message: format!(
                    "line {}: a document end marker `...` with no document before it; kubectl \
                     refuses it, remove the line",
                    chunk.first_line + i
                ),
            });
        }
    }
    let body = chunk.text.trim_start_matches([' ', '\t', '\n', '\r']);
    if body.starts_with(['{', '[']) {
        // kubectl reads this chunk as YAML 1.1, where these characters break lines.
        scan::line_break_characters(&chunk.text).map_err(finding)?;
        let before = budget.clone();
        match json::parse_document(
            &chunk.text,
            document,
            chunk.first_line,
            budget,
            limits.max_depth,
        )? {
            Parsed::Value(v) => {
                // ... and its strings as YAML double-quoted scalars, where `\/` and
                // surrogate escapes are errors.
                json_escapes_kubectl_reads(chunk)?;
                return Ok(Some(v));
            }
            Parsed::NotJson(_) => *budget = before,
        }
    }
    scan::prescan(&chunk.text, scan_limits).map_err(finding)?;
    events::parse_document(chunk, budget, limits.max_depth)
}

/// Refuses a JSON document of a YAML stream with a string escape kubectl's YAML parser
/// refuses (`scalar::escape_kubectl_refuses`): kubectl reads such a document as YAML, so
/// `"a\/b"` is an error for it, not `a/b` (issue 22).
fn json_escapes_kubectl_reads(chunk: &Chunk) -> Result<(), YamlError> {
    let text = &chunk.text;
    let mut in_string = false;
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' if !in_string => {
                in_string = true;
                if let Some(escape) = scalar::escape_kubectl_refuses(&text[at..]) {
                    let line = text[..at].matches('\n').count() + 1;
                    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                    let fix = if escape == "\\/" {
                        "write `/` without the backslash"
                    } else {
                        "write the character itself (kubectl reads no surrogate pairs)"
                    };
                    return Err(YamlError::UnknownEscape {
                        at: Box::new(YamlLocation {
                            document: chunk.position + 1,
                            path: String::new(),
                            line: chunk.first_line + line - 1,
                            column: text[line_start..at].chars().count() + 1,
                        }),
                        escape,
                        fix: fix.into(),
                    });
                }
            }
            '"' => in_string = false,
            '\\' if in_string => {
                chars.next();
            }
            _ => {}
        }
    }
    Ok(())
}

fn finding_error(f: Finding, chunk: &Chunk, limits: &Limits) -> YamlError {
    let at = |line: usize, column: usize| {
        Box::new(YamlLocation {
            document: chunk.position + 1,
            path: String::new(),
            line: chunk.first_line + line - 1,
            column,
        })
    };
    match f {
        Finding::Directive { line, column } => YamlError::Directive {
            at: at(line, column),
        },
        Finding::LineBreakCharacter {
            line,
            column,
            character,
        } => YamlError::LineBreakCharacter {
            at: at(line, column),
            character,
        },
        Finding::ControlCharacter {
            line,
            column,
            character,
        } => YamlError::ControlCharacter {
            at: at(line, column),
            character,
        },
        Finding::FlowTooLarge { line, column } => YamlError::FlowCollectionTooLarge {
            at: at(line, column),
            limit: limits.max_flow_collection_bytes,
        },
        Finding::KubectlRefuses {
            line,
            column,
            what,
            kubectl,
            fix,
        } => YamlError::KubectlScannerRefuses {
            at: at(line, column),
            what,
            kubectl,
            fix,
        },
        Finding::TooDeep { line, column } => YamlError::TooDeep {
            at: at(line, column),
            limit: limits.max_depth,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::to_yaml;
    use serde_json::json;

    /// Issue 22: what go-yaml v2's scanner (kubectl) refuses and saphyr-parser reads; each
    /// refusal names the document and line.
    #[test]
    fn text_kubectl_scanner_refuses_is_refused() {
        let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
        let cases = [
            ("data:\n  k: {k: >true, j: \t}\n", 6, "`|` or `>`"),
            ("data:\n  k:\n    - \t\n", 7, "a tab where"),
            ("data:\n  k: [|, x]\n", 6, "`|` or `>`"),
            ("data:\n  k: [a, ?\"]\n", 6, "a `?`"),
            ("data:\n  k:\n    - [-.5\\, ?]\n", 7, "a `?`"),
            (
                "data:\n  k4: \"one\n  two\"\n  k3: >\n    \t|\n",
                9,
                "a tab right after the indentation",
            ),
            (
                "data:\n  k3: >\n    \t|\n",
                7,
                "a tab right after the indentation",
            ),
            ("data:\n  k: [?x]\n", 6, "a `?`"),
            ("data:\n  k: {? , a: b}\n", 6, "a `?`"),
            ("data:\n\t\n  k: v\n", 6, "a tab where"),
        ];
        for (body, line, what) in cases {
            let text = format!("{head}{body}");
            let e = parse(&text).expect_err(&text).to_string();
            assert!(e.contains(what), "{text:?}: {e}");
            assert!(e.contains(&format!("line {line}")), "{text:?}: {e}");
            assert!(e.contains("document 1"), "{text:?}: {e}");
        }
        // A tab on a line after a plain scalar: kubectl's scalar scan fails ("found a tab
        // character that violates indentation").
        for body in ["data:\n  k: v\n\t# c\n", "data:\n  k: v\n  \t\n"] {
            let text = format!("{head}{body}");
            assert!(parse(&text).is_err(), "{text:?}");
        }
        // What kubectl reads stays read: tabs after a key's `:`, inside flow collections, in
        // comments and inside scalars; `? ` keys with content in flow mappings; `|` and `>`
        // inside flow plain scalars.
        for body in [
            "data:\n  k: \tv\n",
            "data:\n  k: v\t# c\n",
            "data:\n  k: [a,\tb]\n",
            "data:\n  k: {? a : b}\n",
            "data:\n  k: [a|b, c>d]\n",
            "data:\n  k: |\n    a\tb\n",
        ] {
            let text = format!("{head}{body}");
            parse(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        }
    }

    fn parse(text: &str) -> Result<Vec<(usize, Value)>, YamlError> {
        parse_documents(text, &Limits::default())
    }

    fn round_trip(v: &Value) -> Value {
        let text = to_yaml(v);
        let docs = parse(&text).unwrap();
        assert_eq!(docs.len(), 1, "{text}");
        docs.into_iter().next().unwrap().1
    }

    #[test]
    fn documents_round_trip_exactly() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "y"}, "annotations": {}},
            "data": {"a": "line1\nline2\n", "b": "yes", "c": "0755", "quote": "say \"hi\"\t\\", "u": "\u{1}\u{2028}é"},
            "n": [1, -2, 9007199254740993u64, 1.5, true, null, [], {}],
            "nested": [[1, [2]], {"k": [{"a": 1, "b": [3]}]}],
        });
        assert_eq!(round_trip(&v), v);
    }

    #[test]
    fn integers_up_to_64_bits_signed_stay_exact() {
        let docs = parse("a: 9007199254740993\nb: 9223372036854775807\nc: -9223372036854775808\n")
            .unwrap();
        assert_eq!(docs[0].1["a"], json!(9007199254740993u64));
        assert_eq!(docs[0].1["b"], json!(i64::MAX));
        assert_eq!(docs[0].1["c"], json!(i64::MIN));
    }

    #[test]
    fn integers_beyond_64_bits_signed_are_refused() {
        // kubectl's unstructured decoder keeps int64 or falls back to a rounded float64.
        let err = parse("a: 1\nb: 18446744073709551615\n").unwrap_err();
        assert!(
            matches!(&err, YamlError::IntegerOutOfRange { at, text } if at.path == "b" && text == "18446744073709551615"),
            "{err}"
        );
    }

    #[test]
    fn empty_documents_are_skipped_but_counted_in_positions() {
        let docs = parse("---\n---\na: 1\n---\n# only a comment\n---\nb: 2\n").unwrap();
        let positions: Vec<usize> = docs.iter().map(|d| d.0).collect();
        assert_eq!(positions, [1, 3]);
    }

    #[test]
    fn rejects_alias_bombs() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let err = parse(&text).unwrap_err();
        assert!(
            matches!(err, YamlError::DocumentTooManyNodes { .. }),
            "{err}"
        );
    }

    #[test]
    fn rejects_merge_keys_that_kubectl_would_merge() {
        let text = "base: &b {cpu: 1}\nspec:\n  resources:\n    <<: *b\n    memory: 2\n";
        let err = parse(text).unwrap_err();
        assert!(
            matches!(&err, YamlError::MergeKey { at } if at.document == 1 && at.path == "spec.resources" && at.line == 4),
            "{err}"
        );
    }

    #[test]
    fn rejects_deep_nesting() {
        let text = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        assert!(matches!(
            parse(&text).unwrap_err(),
            YamlError::TooDeep { limit: 64, .. }
        ));
        let limits = Limits {
            max_depth: 5,
            ..Limits::default()
        };
        let err = parse_documents("a:\n  b:\n    c:\n      d:\n        e: {f: 1}\n", &limits)
            .unwrap_err();
        assert!(
            matches!(&err, YamlError::TooDeep { at, limit: 5 } if at.path == "a.b.c.d.e"),
            "{err}"
        );
        assert!(parse_documents("a: {b: {c: {d: 1}}}", &limits).is_ok());
    }

    #[test]
    fn rejects_too_many_documents() {
        let limits = Limits {
            max_documents: 3,
            ..Limits::default()
        };
        let err = parse_documents("a: 1\n---\na: 2\n---\na: 3\n---\na: 4\n", &limits).unwrap_err();
        assert!(
            matches!(err, YamlError::TooManyDocuments { limit: 3 }),
            "{err}"
        );
    }

    #[test]
    fn syntax_errors_name_the_document_and_the_line() {
        let err = parse("a: 1\n---\nb: [unclosed\n").unwrap_err();
        match err {
            YamlError::Syntax { document, message } => {
                assert_eq!(document, 2);
                assert!(message.starts_with("line 4"), "{message}");
            }
            other => panic!("{other}"),
        }
    }

    fn escape_of(text: &str) -> (String, YamlLocation) {
        match parse(text) {
            Err(YamlError::UnknownEscape { at, escape, .. }) => (escape, *at),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    // Issue 22: kubectl (go-yaml v2) refuses `\/` in a double-quoted scalar; YAML 1.2 reads
    // `/`. mansign refuses it, wherever kubectl reads the text as YAML.
    #[test]
    fn escapes_kubectl_refuses_are_refused() {
        let (escape, at) = escape_of("kind: X\ndata:\n  a: \"a\\/b\"\n");
        assert_eq!(escape, "\\/");
        assert_eq!((at.path.as_str(), at.line, at.column), ("data.a", 3, 6));
        // As a key, after an anchor, in a flow collection.
        assert_eq!(escape_of("\"k\\/\": 1\n").0, "\\/");
        assert_eq!(escape_of("a: &x \"a\\/b\"\n").0, "\\/");
        assert_eq!(escape_of("a: [\"x\", \"a\\/b\"]\n").0, "\\/");
        // A JSON document kubectl reads as YAML: after a comment, or after `---`.
        let json = "{\"kind\": \"X\", \"a\": \"a\\/b\"}\n";
        assert_eq!(escape_of(&format!("# c\n{json}")).0, "\\/");
        let (escape, at) = escape_of(&format!("kind: Z\n---\n{json}"));
        assert_eq!(escape, "\\/");
        assert_eq!((at.document, at.line, at.column), (2, 3, 20));
        // Surrogates, as JSON writes characters beyond U+FFFF, and out-of-range code points.
        let pair = "---\n{\"a\": \"\\ud83d\\ude00\"}\n";
        assert_eq!(escape_of(pair).0, "\\ud83d");
        // (saphyr-parser refuses these two itself.)
        assert!(parse("a: \"\\uD800\"\n").is_err());
        assert!(parse("a: \"\\U00110000\"\n").is_err());
        // A JSON stream is read by Go's encoding/json, which reads both.
        let docs = parse("{\"a\": \"a\\/b\", \"b\": \"\\ud83d\\ude00\"}\n").unwrap();
        assert_eq!(docs[0].1, json!({"a": "a/b", "b": "\u{1F600}"}));
    }

    #[test]
    fn escapes_kubectl_reads_are_read() {
        let docs = parse(
            "a: \"\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\e\\0\\ \\t\\\t\\\"\\\\\"\nb: 'a\\/b'\nc: a\\/b\n",
        )
        .unwrap();
        assert_eq!(
            docs[0].1,
            json!({
                "a": "A\u{e9}\u{1F600}\u{85}\u{a0}\u{2028}\u{2029}\u{1b}\u{0} \t\t\"\\",
                "b": "a\\/b",
                "c": "a\\/b",
            })
        );
        // An escaped `"` or `\` does not end the scan early.
        assert_eq!(escape_of("a: \"\\\"\\\\\\/\"\n").0, "\\/");
    }

    // Issue 22: a quoted scalar continued at (or left of) its key's column is text for
    // kubectl (go-yaml checks no indentation there); mansign reads it the same way.
    #[test]
    fn quoted_scalars_continued_below_the_indentation_read_as_kubectl_reads_them() {
        let cases = [
            (
                "data:\n  a: \"one\n  two\"\n",
                json!({"data": {"a": "one two"}}),
            ),
            (
                "data:\n  a: \"one\ntwo\"\n  b: x\n",
                json!({"data": {"a": "one two", "b": "x"}}),
            ),
            (
                "data:\n  a: 'one\n  two'\n",
                json!({"data": {"a": "one two"}}),
            ),
            (
                "data:\n  a: 'it''s\n  two'\n",
                json!({"data": {"a": "it's two"}}),
            ),
            (
                "data:\n  a: \"one\\\n  two\"\n",
                json!({"data": {"a": "onetwo"}}),
            ),
            (
                "data:\n  a: \"one\n\n  two\"\n",
                json!({"data": {"a": "one\ntwo"}}),
            ),
            (
                "data:\n  a: \"x\\\" y\n  z\"\n",
                json!({"data": {"a": "x\" y z"}}),
            ),
            (
                "data:\n  a: \"one\n  two\"\n  b: \"three\n  four\"\n",
                json!({"data": {"a": "one two", "b": "three four"}}),
            ),
            ("s:\n- \"one\n  two\"\n", json!({"s": ["one two"]})),
            // `...` followed by a quote is no document marker (for either parser).
            (
                "data:\n  a: \"one\n...\"\n",
                json!({"data": {"a": "one ..."}}),
            ),
        ];
        for (text, want) in cases {
            let docs = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(docs[0].1, want, "{text:?}");
        }
    }

    #[test]
    fn quoted_scalars_continued_on_a_document_marker_stay_refused() {
        for text in [
            "data:\n  a: \"one\n... x\"\n",
            "data:\n  a: \"one\n...\n  b\"\n",
        ] {
            assert!(
                matches!(parse(text), Err(YamlError::Syntax { .. })),
                "{text:?}: {:?}",
                parse(text)
            );
        }
        // A bounded number of re-reads per document.
        let many: String = (0..70).map(|i| format!("  k{i}: \"a\nb\"\n")).collect();
        assert!(parse(&format!("data:\n{many}")).is_err());
        let some: String = (0..60).map(|i| format!("  k{i}: \"a\nb\"\n")).collect();
        assert_eq!(
            parse(&format!("data:\n{some}")).unwrap()[0].1["data"]["k59"],
            "a b"
        );
    }
}
