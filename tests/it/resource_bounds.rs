//! The hostile inputs of issue 7 (and legitimate large ones), generated in memory: each is
//! refused with the expected reason, or read, by the manifest reader and by `mansign verify`.
//! Time and memory are measured by `scripts/bounds.sh` into `BENCHMARKS.md`, never here.

use crate::common;

use common::{key_pair, write};
use mansign::Limits;
use mansign::manifest::{YamlError, parse_documents};
use predicates::prelude::*;
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;
const HEAD: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";

fn parse(text: &str) -> Result<Vec<(usize, Value)>, YamlError> {
    parse_documents(text, &Limits::default())
}

#[test]
fn a_million_character_key_above_four_thousand_children_is_read_in_one_pass() {
    let key = "k".repeat(1_000_000);
    let children: String = (0..4000).map(|i| format!("    c{i}: v\n")).collect();
    let yaml = format!("{HEAD}data:\n  ? {key}\n  :\n{children}");
    let docs = parse(&yaml).unwrap();
    assert_eq!(docs[0].1["data"][&key].as_object().unwrap().len(), 4000);
    let json = serde_json::to_string(&json!({
        "kind": "ConfigMap",
        "data": { &key: (0..4000).map(|i| (format!("c{i}"), json!("v"))).collect::<serde_json::Map<_, _>>() }
    }))
    .unwrap();
    let docs = parse(&json).unwrap();
    assert_eq!(docs[0].1["data"][&key].as_object().unwrap().len(), 4000);
    // An implicit key is limited to 1024 characters (kubectl's parser too).
    assert!(matches!(
        parse(&format!("{key}: v\n")).unwrap_err(),
        YamlError::Syntax { .. }
    ));
}

#[test]
fn flow_nesting_100_000_deep_is_refused_at_the_depth_limit() {
    for n in [100_000, 500_000] {
        let text = format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let err = parse(&text).unwrap_err();
        assert!(matches!(err, YamlError::TooDeep { limit: 64, .. }), "{err}");
        // Inside a block mapping the pre-scan refuses it before the parser runs.
        let text = format!("{HEAD}data: {}1{}\n", "[".repeat(n), "]".repeat(n));
        let err = parse(&text).unwrap_err();
        assert!(
            matches!(&err, YamlError::TooDeep { at, limit: 64 } if at.line == 5 && at.column == 71),
            "{err}"
        );
        let text = format!("{{\"a\": {}{}}}", "[".repeat(n), "]".repeat(n));
        assert!(matches!(
            parse(&text).unwrap_err(),
            YamlError::TooDeep { limit: 64, .. }
        ));
    }
}

fn flat_flow(size: usize) -> String {
    let mut text = format!("{HEAD}data: [");
    while text.len() < size - 3 {
        text.push_str("1, ");
    }
    text.push_str("1]\n");
    text
}

#[test]
fn a_29_6_mib_flat_flow_sequence_is_refused_by_the_document_limit() {
    let text = flat_flow(29 * MIB + 6 * MIB / 10);
    let err = parse(&text).unwrap_err();
    assert!(
        matches!(
            err,
            YamlError::DocumentTooLarge {
                document: 1,
                line: 1,
                limit
            } if limit == 3 * MIB
        ),
        "{err}"
    );
}

#[test]
fn a_flow_collection_over_256_kib_is_refused_before_parsing() {
    let text = flat_flow(2 * MIB + 9 * MIB / 10);
    let err = parse(&text).unwrap_err();
    assert!(
        matches!(&err, YamlError::FlowCollectionTooLarge { at, limit } if at.line == 5 && at.column == 7 && *limit == 256 * 1024),
        "{err}"
    );
    assert!(err.to_string().contains("write it in block style"), "{err}");
    // The same data as a JSON document is read.
    let items = vec![1; 200_000];
    let json = serde_json::to_string(&json!({"kind": "ConfigMap", "data": items})).unwrap();
    assert!(json.len() > 384 * 1024);
    assert_eq!(
        parse(&json).unwrap()[0].1["data"].as_array().unwrap().len(),
        200_000
    );
}

#[test]
fn a_literal_block_of_500_kib_of_json_is_text() {
    let panels: Vec<Value> = (0..1700)
        .map(|p| {
            json!({
                "id": p, "type": "timeseries", "title": format!("Panel {p} [rate]"),
                "targets": [{"expr": format!("sum(rate(http_requests_total{{job=\"app-{p}\"}}[5m])) by (code)")}],
                "gridPos": {"h": 8, "w": 12, "x": 0, "y": p * 8},
            })
        })
        .collect();
    let dashboard = serde_json::to_string_pretty(&json!({"panels": panels})).unwrap();
    assert!(dashboard.len() > 500 * 1024);
    let block: String = dashboard.lines().map(|l| format!("    {l}\n")).collect();
    let docs = parse(&format!("{HEAD}data:\n  big.json: |\n{block}")).unwrap();
    assert_eq!(
        docs[0].1["data"]["big.json"],
        json!(format!("{dashboard}\n"))
    );
}

#[test]
fn a_32_mib_file_of_many_documents_is_stopped_by_the_stream_node_budget() {
    let doc: String = format!(
        "{HEAD}data:\n{}",
        (0..2400)
            .map(|j| format!("  k{j}: v{j}\n"))
            .collect::<String>()
    );
    let count = 32 * MIB / (doc.len() + 4);
    let text = vec![doc; count].join("---\n");
    assert!(text.len() > 31 * MIB && count < 1000);
    let err = parse(&text).unwrap_err();
    assert!(
        matches!(&err, YamlError::StreamTooManyNodes { at, limit: 1_000_000 } if at.document > 100),
        "{err}"
    );
}

#[test]
fn a_document_of_3_mib_plus_one_byte_is_refused_and_3_mib_is_read() {
    let sized = |total: usize| {
        let prefix = format!("{HEAD}data:\n  blob: ");
        format!("{prefix}{}\n", "x".repeat(total - prefix.len() - 1))
    };
    let err = parse(&sized(3 * MIB + 1)).unwrap_err();
    assert!(
        matches!(err, YamlError::DocumentTooLarge { document: 1, .. }),
        "{err}"
    );
    assert_eq!(parse(&sized(3 * MIB)).unwrap().len(), 1);
    // Also in a JSON stream, and after other documents.
    let json = format!("{{\"blob\": \"{}\"}}", "x".repeat(3 * MIB));
    assert!(matches!(
        parse(&json).unwrap_err(),
        YamlError::DocumentTooLarge { .. }
    ));
    let err = parse(&format!("kind: A\n---\n{}", sized(3 * MIB + 1))).unwrap_err();
    assert!(
        matches!(
            err,
            YamlError::DocumentTooLarge {
                document: 2,
                line: 3,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn verify_refuses_each_hostile_input_as_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let (_, pubkey) = key_pair(dir.path(), "k");
    let cases = [
        (
            "nesting.yaml",
            format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
            "nested deeper than 64 levels",
        ),
        (
            "flat.yaml",
            flat_flow(29 * MIB + 6 * MIB / 10),
            "larger than 3145728 bytes",
        ),
        (
            "flow.yaml",
            flat_flow(MIB),
            "flow collection (`[...]` or `{...}`) larger than 262144 bytes",
        ),
    ];
    for (name, text, reason) in cases {
        let path = write(dir.path(), name, &text);
        common::verify_with_key(&path, &pubkey)
            .code(2)
            .stderr(predicate::str::contains(format!("{name}: document 1")))
            .stderr(predicate::str::contains(reason));
    }
}
