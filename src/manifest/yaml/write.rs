//! Writing documents back as YAML.
//!
//! Our own small emitter rather than a serializer crate, because the signed message is read
//! back by Go's YAML 1.1 parsers (yaml.v2 through ghodss/yaml in kubectl-sigstore and
//! Kyverno) as well as by YAML 1.2 ones (mansign). A string such as `yes`, `on`, `0755` or
//! `12:30` is plain text in YAML 1.2 but a boolean or number in YAML 1.1, so any string that
//! is not unmistakably a plain string in both is written double-quoted (JSON escaping, which
//! is valid YAML). Keys keep their input order.

use serde_json::{Map, Value};
use std::fmt::Write as _;

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
    use crate::limits::Limits;
    use crate::manifest::parse_documents;

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
    fn every_string_written_plain_reads_back_as_itself_in_both_readings() {
        for s in [
            "nginx",
            "kube-system",
            "a.b/c_d",
            "https://github.com/org/repo",
            "Yes please",
            "on-call",
            "x:y",
            "a b",
            "_x",
            "/path",
            "nullable",
            "trueish",
        ] {
            let text = to_yaml(&serde_json::json!({ "k": s, s: 1 }));
            let docs = parse_documents(&text, &Limits::default()).unwrap();
            assert_eq!(docs[0].1["k"], s, "{text}");
            assert_eq!(docs[0].1[s], 1, "{text}");
        }
    }
}
