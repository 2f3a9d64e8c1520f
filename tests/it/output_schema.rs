//! `verify -o json` (with and without `--policy`) against its documented schema,
//! `docs/schema/verify-output.schema.json` (issue 39 item 4): real outputs of passes (key,
//! keyless, multi-document, List items), of each kind of failure, and of input errors
//! (no JSON at all). Every failure object carries `code`.

use crate::common;
use crate::common::json_schema;
use serde_json::{Value, json};
use std::path::Path;

/// The schema, as committed.
fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/verify-output.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every object in `v` that is a failure (`failure`, `attempts[]`, `failures[]`) and has no
/// string `code`, by path.
fn failures_without_code(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, field) in m {
                let here = format!("{path}.{k}");
                let failures: Vec<&Value> = match (k.as_str(), field) {
                    ("failure", f @ Value::Object(_)) => vec![f],
                    ("attempts" | "failures", Value::Array(a)) => a.iter().collect(),
                    _ => vec![],
                };
                for f in failures {
                    if !f.get("code").is_some_and(Value::is_string) {
                        out.push(format!("{here}: {f}"));
                    }
                }
                failures_without_code(field, &here, out);
            }
        }
        Value::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                failures_without_code(item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Runs `cmd` (a `verify ... -o json`), which must exit with `code`, and returns its JSON
/// after checking it against the schema and that every failure has a `code`.
fn checked(mut cmd: assert_cmd::Command, code: i32, what: &str) -> Value {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: {}",
        common::all_output(&out)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not JSON ({e}): {}",
            common::all_output(&out)
        )
    });
    json_schema::assert_valid(&schema(), &v, what);
    let mut missing = Vec::new();
    failures_without_code(&v, "$", &mut missing);
    assert!(
        missing.is_empty(),
        "{what}: failures without code: {missing:?}"
    );
    v
}

fn verify_json(path: &Path, pubkey: &Path) -> assert_cmd::Command {
    let mut cmd = common::with_key("verify", &["-o", "json"], path, pubkey);
    cmd.env_remove("SIGSTORE_TRUSTED_ROOT");
    cmd
}

fn policy_json(path: &Path, policy: &Path) -> assert_cmd::Command {
    let mut cmd = common::mansign();
    cmd.args(["verify", "-o", "json", "-f"])
        .arg(path)
        .arg("--policy")
        .arg(policy);
    cmd
}

/// A `ManifestPolicy` for ConfigMaps and PolicyExceptions requiring every key of `pubkeys`.
fn key_policy(dir: &Path, pubkeys: &[&Path]) -> std::path::PathBuf {
    let entries: String = pubkeys
        .iter()
        .map(|k| {
            format!(
                "    - keys:\n        publicKeys: |\n{}",
                common::indented_pem(k, 10)
            )
        })
        .collect();
    common::write(
        dir,
        "policy.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: p\n\
             spec:\n  match:\n    kinds: [ConfigMap, PolicyException]\n  attestors:\n  - entries:\n{entries}"
        ),
    )
}

const KEYLESS_CM: &str = "kyverno/k8s-manifest-sigstore/pkg-k8smanifest-testdata/sample-configmap-keyless-multi-signed.yaml";

/// A keyless `ManifestPolicy` for the upstream keyless fixture's first signer.
fn keyless_policy(dir: &Path, extra: &str) -> std::path::PathBuf {
    common::write(
        dir,
        "keyless.yaml",
        &format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {{name: keyless}}\nspec:\n{extra}  attestors:\n  - entries:\n    - keyless:\n        subject: hirokuni.kitahara1@ibm.com\n        issuer: https://github.com/login/oauth\n"
        ),
    )
}

#[test]
fn key_signed_verdicts_match_the_schema() {
    let kd = common::key_dir("schema");
    let input = kd.write("multi.yaml", common::MULTI_DOC);
    let signed = common::sign_with_key(&input, &kd.key);

    let pass = checked(verify_json(&signed, &kd.pubkey), 0, "key pass");
    assert_eq!(pass["documents"].as_array().unwrap().len(), 3);
    assert_eq!(pass["documents"][0]["signer"]["kind"], "key");

    // Edited after signing: check diff, code modified.
    let mut docs = common::read_documents(&signed);
    docs[0]["data"]["mode"] = json!("lax");
    let text: Vec<String> = docs.iter().map(mansign::manifest::to_yaml).collect();
    let edited_path = kd.write("edited.yaml", &text.join("---\n"));
    let v = checked(verify_json(&edited_path, &kd.pubkey), 1, "modified");
    assert_eq!(v["documents"][0]["failure"]["check"], "diff");
    assert_eq!(v["documents"][0]["failure"]["code"], "modified");
    assert!(v["documents"][0]["failure"]["diff"].is_array());

    // Unsigned.
    let v = checked(verify_json(&input, &kd.pubkey), 1, "unsigned");
    assert_eq!(v["documents"][0]["failure"]["check"], "not-signed");

    // Another key: check signature, with attempts.
    let other = common::key_dir("other");
    let v = checked(verify_json(&signed, &other.pubkey), 1, "wrong key");
    assert_eq!(v["documents"][0]["failure"]["check"], "signature");
    assert!(
        !v["documents"][0]["failure"]["attempts"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // The signed documents as items of one `kind: List`: `item` is numbered.
    let items = common::read_documents(&signed);
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items});
    let list_path = kd.write("list.json", &list.to_string());
    let v = checked(verify_json(&list_path, &kd.pubkey), 0, "List items");
    assert_eq!(v["documents"][2]["item"], 3);
}

#[test]
fn policy_verdicts_match_the_schema_and_no_policy_rule_has_a_code() {
    let kd = common::key_dir("schema");
    let input = kd.write("multi.yaml", common::MULTI_DOC);
    let signed = common::sign_with_key(&input, &kd.key);

    let one_key = key_policy(kd.path(), &[kd.pubkey.as_path()]);
    let v = checked(policy_json(&signed, &one_key), 0, "policy pass");
    assert_eq!(v["documents"][0]["rules"][0]["action"], "Enforce");

    // Two keys required, one signed: the attestor set is not satisfied.
    let other = common::key_dir("other");
    let dir = tempfile::tempdir().unwrap();
    let two_keys = key_policy(dir.path(), &[kd.pubkey.as_path(), other.pubkey.as_path()]);
    let v = checked(policy_json(&signed, &two_keys), 1, "attestor set");
    let failure = &v["documents"][0]["rules"][0]["failure"];
    assert_eq!(failure["check"], "signature");
    assert!(failure["attestorSet"]["failures"].is_array(), "{failure}");

    // No rule applies (the example policy covers PolicyExceptions only).
    let policy = common::fixture("../examples/policy/mansign-policy.yaml");
    let v = checked(policy_json(&signed, &policy), 1, "no-policy-rule");
    let cm = &v["documents"][0];
    assert_eq!(cm["rules"], json!([]));
    assert_eq!(cm["failure"]["check"], "no-policy-rule");
    assert_eq!(cm["failure"]["code"], "no-policy-rule");

    // The schema requires `code`: the output as it was before (no code) is refused.
    let mut old = v.clone();
    old["documents"][0]["failure"]
        .as_object_mut()
        .unwrap()
        .remove("code");
    let errors = json_schema::errors(&schema(), &old);
    assert!(
        errors.iter().any(|e| e.contains("`code` is missing")),
        "{errors:?}"
    );
    let mut missing = Vec::new();
    failures_without_code(&old, "$", &mut missing);
    assert_eq!(missing.len(), 1, "{missing:?}");
}

#[test]
fn keyless_verdicts_match_the_schema() {
    let file = common::fixture(KEYLESS_CM);
    let dir = tempfile::tempdir().unwrap();
    let v = checked(
        policy_json(&file, &keyless_policy(dir.path(), "")),
        0,
        "keyless pass",
    );
    assert_eq!(
        v["documents"][0]["rules"][0]["signer"]["kind"],
        "certificate"
    );
    // The 2022 signatures are older than 7 days: check max-age, with its code.
    let v = checked(
        policy_json(&file, &keyless_policy(dir.path(), "  maxAge: 7d\n")),
        1,
        "keyless max-age",
    );
    assert_eq!(v["documents"][0]["rules"][0]["failure"]["check"], "max-age");
}

#[test]
fn an_input_error_prints_no_json() {
    let kd = common::key_dir("schema");
    let bad = kd.write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n");
    let out = verify_json(&bad, &kd.pubkey).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::all_output(&out));
    assert!(out.stdout.is_empty(), "{}", common::all_output(&out));
}

#[test]
fn the_schema_refuses_what_it_does_not_describe() {
    // Not a test of mansign: a validator that accepts everything would make the tests
    // above pass whatever mansign prints.
    let s = schema();
    let good = json!({"verified": true, "documents": []});
    assert!(json_schema::errors(&s, &good).is_empty());
    for bad in [
        json!({"verified": "yes", "documents": []}),
        json!({"documents": []}),
        json!({"verified": false, "documents": [], "extra": 1}),
        json!({"verified": false, "documents": [{"source": "a", "document": 0,
            "object": {"group": "", "version": "v1", "kind": "ConfigMap", "name": "x"},
            "verified": false}]}),
        json!({"verified": false, "documents": [{"source": "a", "document": 1,
            "object": {"group": "", "version": "v1", "kind": "ConfigMap", "name": "x"},
            "verified": false, "failure": {"check": "made-up", "code": "x", "reason": "r"}}]}),
        json!({"verified": true, "documents": [{"source": "a", "document": 1,
            "object": {"group": "", "version": "v1", "kind": "ConfigMap", "name": "x"},
            "verified": true, "signatureSet": 0, "signer": {"kind": "key", "name": "k"}}]}),
    ] {
        assert!(!json_schema::errors(&s, &bad).is_empty(), "accepted {bad}");
    }
}
