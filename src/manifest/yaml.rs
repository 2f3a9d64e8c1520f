//! Reading YAML streams and writing documents back as YAML.
//!
//! Parser: `serde_yaml_ng` (a maintained fork of the deprecated `serde_yaml`, same
//! `unsafe-libyaml` core). It reads multi-document streams, keeps integers up to 64 bits
//! exact (no float round trip, unlike kubectl-sigstore's ghodss/yaml path), and bounds
//! alias expansion ("billion laughs") and recursion on its own; mansign adds its own
//! document-count and nesting-depth limits on top. See `docs/design.md`.
//!
//! Writer: our own small emitter rather than the parser crate's serializer, because the
//! signed message is read back by Go's YAML 1.1 parsers (yaml.v2 through ghodss/yaml in
//! kubectl-sigstore and Kyverno). A string such as `yes`, `on`, `0755` or `12:30` is plain
//! text in YAML 1.2 but a boolean or number in YAML 1.1, so any string that is not
//! unmistakably a plain string in both is written double-quoted (JSON escaping, which is
//! valid YAML). Keys keep their input order.

use crate::limits::Limits;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Why a YAML stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    #[error("document {document}: not valid YAML: {message}")]
    Syntax { document: usize, message: String },
    #[error("more than {limit} documents")]
    TooManyDocuments { limit: usize },
    #[error("document {document}: nested deeper than {limit} levels")]
    TooDeep { document: usize, limit: usize },
    #[error(
        "document {document}: YAML merge key `<<` at {path}: not supported, because \
         kubectl (YAML 1.1) merges it while mansign would sign it as a literal key; \
         write the merged fields out"
    )]
    MergeKey { document: usize, path: String },
}

/// Parses a YAML stream into its non-empty documents. Each item is the 0-based position
/// of the document in the stream (empty documents count, so positions match what an
/// editor shows) and its value.
pub fn parse_documents(text: &str, limits: &Limits) -> Result<Vec<(usize, Value)>, YamlError> {
    let mut docs = Vec::new();
    for (position, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        if position >= limits.max_documents.saturating_mul(2) {
            // Empty documents are cheap but unbounded; count them too, loosely.
            return Err(YamlError::TooManyDocuments {
                limit: limits.max_documents,
            });
        }
        let value = Value::deserialize(de).map_err(|e| YamlError::Syntax {
            document: position + 1,
            message: e.to_string(),
        })?;
        if value.is_null() {
            continue;
        }
        if depth(&value) > limits.max_depth {
            return Err(YamlError::TooDeep {
                document: position + 1,
                limit: limits.max_depth,
            });
        }
        if let Some(path) = merge_key(&value) {
            return Err(YamlError::MergeKey {
                document: position + 1,
                path,
            });
        }
        docs.push((position, value));
        if docs.len() > limits.max_documents {
            return Err(YamlError::TooManyDocuments {
                limit: limits.max_documents,
            });
        }
    }
    Ok(docs)
}

/// The path of the first `<<` key, if any. serde_yaml_ng reads YAML 1.2, where `<<` is an
/// ordinary key; Go's yaml.v2 (kubectl) applies it as a merge. Signing either reading
/// would sign something other than what kubectl applies, so such input is refused.
fn merge_key(v: &Value) -> Option<String> {
    let mut stack = vec![(v, String::new())];
    while let Some((v, path)) = stack.pop() {
        match v {
            Value::Object(o) => {
                if o.contains_key("<<") {
                    return Some(if path.is_empty() {
                        "the top level".into()
                    } else {
                        path
                    });
                }
                for (k, c) in o {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    stack.push((c, p));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    stack.push((c, format!("{path}[{i}]")));
                }
            }
            _ => {}
        }
    }
    None
}

fn depth(v: &Value) -> usize {
    // Iterative, so a hostile tree cannot overflow the stack here.
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    max
}

/// Writes one document as block-style YAML ending in a newline.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => emit_mapping(&mut out, m, 0, false),
        Value::Array(a) if !a.is_empty() => emit_sequence(&mut out, a, 0, false),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// `inline`: the first entry continues a line already started by a sequence dash.
fn emit_mapping(out: &mut String, map: &Map<String, Value>, level: usize, inline: bool) {
    for (i, (k, v)) in map.iter().enumerate() {
        if !(inline && i == 0) {
            indent(out, level);
        }
        out.push_str(&string_scalar(k));
        out.push(':');
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                emit_mapping(out, m, level + 2, false);
            }
            Value::Array(a) if !a.is_empty() => {
                // Sequences under a key are not indented (kubectl and yaml.v2 style).
                out.push('\n');
                emit_sequence(out, a, level, false);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn emit_sequence(out: &mut String, seq: &[Value], level: usize, inline: bool) {
    for (i, v) in seq.iter().enumerate() {
        if !(inline && i == 0) {
            indent(out, level);
        }
        out.push_str("- ");
        match v {
            Value::Object(m) if !m.is_empty() => emit_mapping(out, m, level + 2, true),
            Value::Array(a) if !a.is_empty() => emit_sequence(out, a, level + 2, true),
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string_scalar(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string as a YAML scalar that every YAML 1.1 and 1.2 parser reads back as the same
/// string: plain when unmistakable, double-quoted otherwise.
fn string_scalar(s: &str) -> String {
    if is_safe_plain(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{feff}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            // YAML treats NEL, LS and PS as line breaks in some positions.
            '\u{85}' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Conservative: only strings that cannot be read as anything else, by any parser, stay
/// plain. A leading digit always quotes (numbers, versions, octals, sexagesimals, dates).
fn is_safe_plain(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '/' || first == '_') {
        return false;
    }
    if s.ends_with(' ') || s.ends_with(':') || s.contains(": ") || s.contains(" #") {
        return false;
    }
    if !s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(c, '-' | '_' | '.' | '/' | '@' | '+' | '=' | ':' | ' ')
    }) {
        return false;
    }
    const SPECIAL: &[&str] = &[
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
    ];
    !SPECIAL.iter().any(|w| s.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: &Value) -> Value {
        let text = to_yaml(v);
        let docs = parse_documents(&text, &Limits::default()).unwrap();
        assert_eq!(docs.len(), 1, "{text}");
        docs.into_iter().next().unwrap().1
    }

    #[test]
    fn strings_that_yaml_1_1_would_misread_are_quoted() {
        for s in [
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "true",
            "null",
            "~",
            "0755",
            "1.0",
            "12:30",
            "2021-01-01",
            "1e3",
            "-1",
            ".inf",
            "",
            " lead",
            "trail ",
            "a: b",
            "a #b",
            "*ref",
            "&anchor",
            "!tag",
            "{x}",
            "[x]",
            "%x",
            "@x",
            "`x`",
            "'x'",
            "\"x\"",
            "|",
            ">",
            "- x",
            "? x",
            "<<",
        ] {
            let y = string_scalar(s);
            assert!(y.starts_with('"'), "{s:?} was written plain as {y}");
        }
        for s in [
            "nginx",
            "sample-cm",
            "https://github.com/org/repo",
            "a.b/c_d",
            "kube-system",
        ] {
            assert_eq!(string_scalar(s), s);
        }
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
    fn integers_above_2_pow_53_stay_exact() {
        let docs = parse_documents(
            "a: 9007199254740993\nb: 18446744073709551615\n",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(docs[0].1["a"], json!(9007199254740993u64));
        assert_eq!(docs[0].1["b"], json!(u64::MAX));
    }

    #[test]
    fn empty_documents_are_skipped_but_counted_in_positions() {
        let docs = parse_documents(
            "---\n---\na: 1\n---\n# only a comment\n---\nb: 2\n",
            &Limits::default(),
        )
        .unwrap();
        let positions: Vec<usize> = docs.iter().map(|d| d.0).collect();
        assert_eq!(positions.len(), 2);
        assert!(positions[0] < positions[1]);
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
        let err = parse_documents(&text, &Limits::default()).unwrap_err();
        assert!(matches!(err, YamlError::Syntax { .. }), "{err}");
    }

    #[test]
    fn rejects_merge_keys_that_kubectl_would_merge() {
        let text = "base: &b {cpu: 1}\nspec:\n  resources:\n    <<: *b\n    memory: 2\n";
        let err = parse_documents(text, &Limits::default()).unwrap_err();
        assert!(
            matches!(&err, YamlError::MergeKey { document: 1, path } if path == "spec.resources"),
            "{err}"
        );
    }

    #[test]
    fn rejects_deep_nesting() {
        let text = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        assert!(parse_documents(&text, &Limits::default()).is_err());
        let limits = Limits {
            max_depth: 5,
            ..Limits::default()
        };
        let err = parse_documents("a: {b: {c: {d: {e: {f: 1}}}}}", &limits).unwrap_err();
        assert!(
            matches!(
                err,
                YamlError::TooDeep {
                    document: 1,
                    limit: 5
                }
            ),
            "{err}"
        );
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
    fn syntax_errors_name_the_document() {
        let err = parse_documents("a: 1\n---\nb: [unclosed\n", &Limits::default()).unwrap_err();
        match err {
            YamlError::Syntax { document, .. } => assert_eq!(document, 2),
            other => panic!("{other}"),
        }
    }
}
