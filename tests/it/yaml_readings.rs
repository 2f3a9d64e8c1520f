//! How the manifest reader reads a stream: kubectl's stream rules, and every plain scalar
//! read twice, as YAML 1.2 (what mansign signs) and as kubectl reads it (YAML 1.1). Where the
//! two differ the manifest is refused, at sign and at verify time, naming the document, the
//! field and the fix. (The port of kubectl's reading is held to what kubectl itself printed
//! by `manifest::scalar::tests::the_kubectl_reading_is_what_kubectl_printed`.)

use crate::common;

use mansign::Limits;
use mansign::manifest::{YamlError, parse_documents};
use predicates::prelude::*;
use serde_json::{Value, json};

fn parse(text: &str) -> Result<Vec<(usize, Value)>, YamlError> {
    parse_documents(text, &Limits::default())
}

fn one(text: &str) -> Value {
    let docs = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(docs.len(), 1, "{text:?}");
    docs.into_iter().next().unwrap().1
}

/// Plain scalars kubectl reads as a boolean or a number, YAML 1.2 as a string (or another
/// number).
const AMBIGUOUS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
    "OFF", "010", "0755", "-010", "+010", "-0755", "0X1F", "0O17", "0b101", "0B101", "-0b101",
    "+0x1F", "-0x1F", "1_000", "1__0", "1_0.5", ".5_0", "0x_1F", "0o1_7", "1_0e1",
];

#[test]
fn every_yaml_1_1_reading_is_refused_as_a_value() {
    for s in AMBIGUOUS {
        let err = parse(&format!("kind: X\nvalue: {s}\n")).unwrap_err();
        match &err {
            YamlError::AmbiguousScalar { at, text, .. } => {
                assert_eq!(
                    (at.document, at.path.as_str(), at.line),
                    (1, "value", 2),
                    "{s}"
                );
                assert_eq!(text, s);
            }
            other => panic!("{s}: {other}"),
        }
    }
}

#[test]
fn every_yaml_1_1_reading_is_refused_as_a_key() {
    for s in AMBIGUOUS {
        let err = parse(&format!("kind: X\nkeys:\n  {s}: x\n")).unwrap_err();
        match &err {
            YamlError::AmbiguousScalar { at, text, .. } => {
                assert_eq!(at.path, format!("keys[\"{s}\"]"), "{s}");
                assert_eq!((at.line, at.column), (3, 3), "{s}");
                assert_eq!(text, s);
            }
            other => panic!("{s}: {other}"),
        }
    }
}

#[test]
fn quoted_and_block_forms_are_the_string_in_both_readings() {
    for s in AMBIGUOUS {
        for written in [format!("\"{s}\""), format!("'{s}'"), format!("|-\n  {s}")] {
            let v = one(&format!("value: {written}\n"));
            assert_eq!(v["value"], json!(s), "{written}");
            let v = one(&format!("? {written}\n: x\n"));
            assert_eq!(v[s], json!("x"), "{written}");
        }
    }
}

#[test]
fn plain_scalars_both_readings_share_are_accepted() {
    let cases = [
        ("80", json!(80)),
        ("-1", json!(-1)),
        ("+1", json!(1)),
        ("0", json!(0)),
        ("007", json!(7)),
        ("08", json!(8)),
        ("1.5", json!(1.5)),
        ("-.5", json!(-0.5)),
        ("1e3", json!(1000.0)),
        ("1.0", json!(1.0)),
        ("0x1F", json!(31)),
        ("0o17", json!(15)),
        ("true", json!(true)),
        ("False", json!(false)),
        ("null", json!(null)),
        ("~", json!(null)),
        ("", json!(null)),
        ("9223372036854775807", json!(i64::MAX)),
        ("nginx", json!("nginx")),
        ("yes please", json!("yes please")),
        ("on-call", json!("on-call")),
        ("2001-12-14", json!("2001-12-14")),
        ("12:30", json!("12:30")),
        ("1.2.3", json!("1.2.3")),
        ("100Mi", json!("100Mi")),
        ("inf", json!("inf")),
        ("0o", json!("0o")),
        ("-0x1FFFFFFFFFFFFFFFF", json!("-0x1FFFFFFFFFFFFFFFF")),
    ];
    for (text, expected) in cases {
        assert_eq!(
            one(&format!("value: {text}\n"))["value"],
            expected,
            "{text}"
        );
    }
}

#[test]
fn plain_keys_become_the_strings_kubectl_sends() {
    let v = one("9000: tcp\n0x1F: hex\ntrue: yes-key\n-0: zero\n");
    assert_eq!(
        v,
        json!({"9000": "tcp", "31": "hex", "true": "yes-key", "0": "zero"})
    );
}

#[test]
fn keys_that_are_not_strings_are_refused() {
    for (text, reading) in [
        ("null", "null"),
        ("~", "null"),
        ("1.5", "the number 1.5"),
        ("1e3", "the number 1000.0"),
        ("{a: 1}", "a mapping"),
        ("[a]", "a list"),
    ] {
        let err = parse(&format!("? {text}\n: x\n")).unwrap_err();
        assert!(
            matches!(&err, YamlError::KeyNotString { reading: r, .. } if r == reading),
            "{text}: {err}"
        );
    }
    let err = parse("18446744073709551615: x\n").unwrap_err();
    assert!(matches!(err, YamlError::IntegerOutOfRange { .. }), "{err}");
}

#[test]
fn integers_beyond_64_bits_and_infinities_are_refused() {
    for s in [
        "9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "0x8000000000000000",
        "0X1FFFFFFFFFFFFFFFF",
        "123456789012345678901234567890",
    ] {
        let err = parse(&format!("value: {s}\n")).unwrap_err();
        assert!(
            matches!(&err, YamlError::IntegerOutOfRange { text, .. } if text == s),
            "{s}: {err}"
        );
    }
    for s in [".inf", "-.Inf", ".NaN", "1e400"] {
        let err = parse(&format!("value: {s}\n")).unwrap_err();
        assert!(matches!(err, YamlError::NotFinite { .. }), "{s}: {err}");
    }
    let err = parse("{\"value\": 18446744073709551615}").unwrap_err();
    assert!(matches!(err, YamlError::IntegerOutOfRange { .. }), "{err}");
}

#[test]
fn the_refusal_names_document_field_line_readings_and_fix() {
    let text = "kind: A\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    on: x\n";
    let err = parse(text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "document 2, metadata.labels[\"on\"] (line 7, column 5): plain scalar `on` is the key \
         \"on\" in YAML 1.2 but the key \"true\" for kubectl (YAML 1.1); quote it: \"on\", or \
         write true"
    );
    let err = parse("spec:\n  enabled: on\n").unwrap_err();
    assert!(
        err.to_string().ends_with(
            "plain scalar `on` is the string \"on\" in YAML 1.2 but the boolean true for kubectl \
             (YAML 1.1); quote it: \"on\", or write true"
        ),
        "{err}"
    );
    let err = parse("spec:\n  mode: 0755\n").unwrap_err();
    assert!(
        err.to_string().ends_with(
            "plain scalar `0755` is the integer 755 in YAML 1.2 but the integer 493 for kubectl \
             (YAML 1.1); quote it: \"0755\", or write 493"
        ),
        "{err}"
    );
}

#[test]
fn explicit_core_tags_keep_their_meaning_and_other_tags_are_refused() {
    assert_eq!(one("a: !!str 0755\n")["a"], json!("0755"));
    assert_eq!(one("a: !!int \"12\"\n")["a"], json!(12));
    assert_eq!(one("a: !!float 1\n")["a"], json!(1.0));
    assert_eq!(one("a: !!bool true\n")["a"], json!(true));
    assert_eq!(one("a: !!null ~\n")["a"], json!(null));
    assert_eq!(
        one("a: !!seq [1]\nb: !!map {c: 1}\n"),
        json!({"a": [1], "b": {"c": 1}})
    );
    // kubectl reads `!!int "0755"` as 493 (octal), YAML 1.2 as 755.
    assert!(matches!(
        parse("a: !!int \"0755\"\n").unwrap_err(),
        YamlError::AmbiguousScalar { .. }
    ));
    for (text, tag) in [
        ("a: !!binary aGk=\n", "!!binary"),
        ("a: !!timestamp 2001-12-14\n", "!!timestamp"),
        ("a: !custom x\n", "!custom"),
        ("a: !!set {x}\n", "!!set"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            matches!(&err, YamlError::UnsupportedTag { tag: t, at } if t == tag && at.path == "a"),
            "{text}: {err}"
        );
    }
    for text in [
        "a: !!int abc\n",
        "a: !!bool yes\n",
        "a: !!map [1]\n",
        "a: !!str {b: 1}\n",
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            matches!(err, YamlError::TagMismatch { .. }),
            "{text}: {err}"
        );
    }
}

#[test]
fn duplicate_keys_are_refused_even_when_they_only_read_alike() {
    let err = parse("a: 1\nb:\n  c: 1\n  c: 2\n").unwrap_err();
    assert!(
        matches!(&err, YamlError::DuplicateKey { at, key } if at.path == "b.c" && at.line == 4 && key == "c"),
        "{err}"
    );
    // kubectl sends both keys as "31".
    let err = parse("0x1F: a\n31: b\n").unwrap_err();
    assert!(matches!(err, YamlError::DuplicateKey { .. }), "{err}");
    let err = parse("{\"a\": 1, \"a\": 2}").unwrap_err();
    assert!(matches!(err, YamlError::DuplicateKey { .. }), "{err}");
}

#[test]
fn merge_keys_are_refused_and_a_quoted_one_is_a_plain_key() {
    let err = parse("base: &b {cpu: 1}\nres:\n  <<: *b\n").unwrap_err();
    assert!(
        matches!(&err, YamlError::MergeKey { at } if at.path == "res" && at.line == 3),
        "{err}"
    );
    assert_eq!(one("\"<<\": x\n"), json!({"<<": "x"}));
}

#[test]
fn aliases_expand_within_the_budget_and_bombs_fail_fast() {
    assert_eq!(
        one("a: &x {b: [1, 2]}\nc: *x\nd: &k key\n*k : v\n"),
        json!({"a": {"b": [1, 2]}, "c": {"b": [1, 2]}, "d": "key", "key": "v"})
    );
    let mut bomb = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..20 {
        let p = format!("*a{}", i - 1);
        bomb.push_str(&format!("a{i}: &a{i} [{}]\n", [p.as_str(); 10].join(", ")));
    }
    let err = parse(&bomb).unwrap_err();
    assert!(
        matches!(err, YamlError::DocumentTooManyNodes { .. }),
        "{err}"
    );
    // A long string copied by many aliases costs its bytes.
    let text = format!(
        "a: &s {}\nb: [{}]\n",
        "x".repeat(100_000),
        vec!["*s"; 100].join(", ")
    );
    assert!(matches!(
        parse(&text).unwrap_err(),
        YamlError::DocumentTooManyNodes { .. }
    ));
}

// ---- kubectl's stream rules

#[test]
fn a_stream_starting_with_a_brace_is_a_json_stream() {
    let docs =
        parse(" \n{\"kind\": \"A\", \"on\": \"yes\"}\n{\"kind\": \"B\"}{\"kind\": \"C\"}").unwrap();
    let kinds: Vec<&str> = docs.iter().map(|d| d.1["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["A", "B", "C"]);
    assert_eq!(docs.iter().map(|d| d.0).collect::<Vec<_>>(), [0, 1, 2]);
    // kubectl up to 1.32 stops there, newer releases read the rest as YAML: refused.
    let err = parse("{\"kind\": \"A\"}\n---\nkind: B\n").unwrap_err();
    assert!(
        matches!(&err, YamlError::NotAJsonStream { at, .. } if at.document == 2 && at.line == 2),
        "{err}"
    );
    let err = parse("{kind: A}\n").unwrap_err();
    assert!(matches!(err, YamlError::NotAJsonStream { .. }), "{err}");
}

#[test]
fn separator_lines_may_carry_a_comment_and_nothing_else() {
    let docs = parse("--- # first\nkind: A\n---\t\r\nkind: B\r\n---#c\nkind: C\n").unwrap();
    assert_eq!(docs.len(), 3);
    let err = parse("kind: A\n--- x\nkind: B\n").unwrap_err();
    assert_eq!(
        err,
        YamlError::InvalidSeparator {
            line: 2,
            text: "x".into()
        }
    );
    // `--- |` and `--- !tag` start a document in YAML; kubectl refuses them.
    assert!(matches!(
        parse("--- |\n  text\n").unwrap_err(),
        YamlError::InvalidSeparator { .. }
    ));
}

#[test]
fn a_document_that_is_json_is_read_as_json() {
    let docs = parse("kind: A\n---\n{\"kind\": \"B\", \"list\": [1, 2]}\n").unwrap();
    assert_eq!(docs[1].1, json!({"kind": "B", "list": [1, 2]}));
}

#[test]
fn content_after_a_document_end_marker_is_refused() {
    let err = parse("kind: A\n...\nkind: B\n").unwrap_err();
    assert!(
        matches!(&err, YamlError::ContentAfterDocumentEnd { at } if at.line == 3),
        "{err}"
    );
    assert_eq!(
        parse("kind: A\n...\n# trailing comment\n").unwrap().len(),
        1
    );
}

#[test]
fn directives_are_refused() {
    for text in [
        "%YAML 1.2\n---\nkind: A\n",
        "%TAG !e! tag:example.com,2000:\n---\na: 1\n",
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            matches!(&err, YamlError::Directive { at } if at.line == 1),
            "{text}: {err}"
        );
    }
}

#[test]
fn yaml_1_1_line_break_characters_are_refused() {
    // For kubectl, the comment ends at U+2028 and `evil: true` is a key.
    for c in ['\u{2028}', '\u{2029}', '\u{85}'] {
        let err = parse(&format!("a: b # note{c}  evil: true\n")).unwrap_err();
        assert!(
            matches!(&err, YamlError::LineBreakCharacter { at, character } if *character == c && at.line == 1 && at.column == 12),
            "{err}"
        );
    }
    // In a JSON stream (read by encoding/json) they are ordinary characters.
    assert_eq!(
        parse("{\"a\": \"x\u{2028}y\"}").unwrap()[0].1["a"],
        json!("x\u{2028}y")
    );
}

// ---- at sign and verify time

#[test]
fn sign_refuses_an_ambiguous_manifest_naming_file_document_and_field() {
    let kd = common::key_dir("k");
    let input = kd.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  enabled: on\n",
    );
    kd.sign_fails(
        &[],
        &input,
        &[
            "cm.yaml: document 1, data.enabled (line 6, column 12): plain scalar `on`",
            "quote it: \"on\", or write true",
        ],
    );
}

#[test]
fn verify_refuses_a_signed_string_that_was_unquoted() {
    let kd = common::key_dir("k");
    let input = kd.write("cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  enabled: \"on\"\n  mode: \"0755\"\n",
    );
    common::sign_with_key(&input, &kd.key);
    let signed = kd.path().join("cm.yaml.signed");
    common::verify_with_key(&signed, &kd.pubkey).success();
    for (quoted, plain, path) in [
        ("enabled: \"on\"", "enabled: on", "data.enabled"),
        ("mode: \"0755\"", "mode: 0755", "data.mode"),
    ] {
        let text = std::fs::read_to_string(&signed).unwrap();
        assert!(text.contains(quoted), "{text}");
        let tampered = kd.write("tampered.yaml", &text.replace(quoted, plain));
        common::verify_with_key(&tampered, &kd.pubkey)
            .code(2)
            .stderr(predicate::str::contains(format!(
                "tampered.yaml: document 1, {path}"
            )));
    }
}
