//! Interoperability with kubectl-sigstore (k8s-manifest-sigstore): its key-signed fixtures
//! get the verdicts its README lists, and what mansign signs has the upstream shape.
//! Fixtures: testdata/k8s-manifest-sigstore (provenance in testdata/README.md).

use crate::common;

use base64::Engine as _;
use common::{MULTI_DOC, fixture, key_pair, mansign, write};
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, decode_base64, decode_maybe_gzip};
use mansign::manifest::{FieldPattern, IgnoreFields, load_inputs, parse_documents};
use mansign::verify::{Attestor, TrustedKey, Verifier};
use predicates::prelude::*;
use serde_json::{Value, json};

const K1: &str = "k8s-manifest-sigstore/derived/pkg/k8smanifest/testdata/testpub.pem";
const K2: &str = "k8s-manifest-sigstore/derived/pkg/cosign/testdata/testpub.pem";
const K3: &str = "k8s-manifest-sigstore/example/verify-resource/cosign.pub";

fn verify(file: &str, key: &str) -> assert_cmd::assert::Assert {
    let file = fixture(&format!("k8s-manifest-sigstore/{file}"));
    let key = fixture(key);
    common::verify_with_key(&file, &key)
}

#[test]
fn tarball_signed_configmap_verifies_with_k1() {
    verify("pkg/k8smanifest/testdata/sample-configmap-signed.yaml", K1)
        .success()
        .stdout(predicate::str::contains(
            "ConfigMap sample-cm-signed: verified (signature set 0",
        ));
    verify(
        "cmd/kubectl-sigstore/cli/testdata/sample-configmap-signed.yaml",
        K1,
    )
    .success();
}

#[test]
fn tarball_signed_configmap_fails_with_another_key() {
    verify("pkg/k8smanifest/testdata/sample-configmap-signed.yaml", K2)
        .code(1)
        .stdout(predicate::str::contains("[signature]"));
}

/// The multi-signed ConfigMap: K1 signed set 1, K3 set 0, K2 none of them.
#[test]
fn multi_signed_configmap_verifies_through_the_set_of_its_key_and_fails_with_k2() {
    let file = "pkg/k8smanifest/testdata/sample-configmap-multi-signed.yaml";
    verify(file, K1)
        .success()
        .stdout(predicate::str::contains("signature set 1"));
    verify(file, K3)
        .success()
        .stdout(predicate::str::contains("signature set 0"));
    verify(file, K2)
        .code(1)
        .stdout(predicate::str::contains("signature set 0 with key"))
        .stdout(predicate::str::contains("signature set 1 with key"));
}

#[test]
fn tarball_signed_deployment_verifies_with_k1() {
    verify("pkg/k8smanifest/testdata/sample-deployment-signed.yaml", K1).success();
}

#[test]
fn deployed_deployment_fails_on_server_populated_fields() {
    verify(
        "pkg/k8smanifest/testdata/sample-deployment-signed-deployed.yaml",
        K1,
    )
    .code(1)
    .stdout(predicate::str::contains("[diff]"))
    .stdout(predicate::str::contains(
        "spec.progressDeadlineSeconds added",
    ))
    .stdout(predicate::str::contains("status"));
}

#[test]
fn mutated_deployment_fails_strict_file_verification_naming_the_image() {
    // Upstream passes it only through dry-run inclusion matching against a cluster.
    verify(
        "pkg/k8smanifest/testdata/sample-deployment-signed-mutating-1.yaml",
        K1,
    )
    .code(1)
    .stdout(predicate::str::contains(
        "spec.template.spec.containers[0].image changed",
    ));
}

#[test]
fn example_configmap_fails_without_ignore_fields() {
    verify("example/verify-resource/sample-configmap.yaml.signed", K3)
        .code(1)
        .stdout(predicate::str::contains("data.changable changed"))
        .stdout(predicate::str::contains(
            "metadata.labels.autoEmbeddedLabel added",
        ));
}

#[test]
fn example_configmap_passes_with_its_ignore_fields() {
    let (file, key) = (
        fixture("k8s-manifest-sigstore/example/verify-resource/sample-configmap.yaml.signed"),
        fixture(K3),
    );
    let pem = std::fs::read_to_string(key).unwrap();
    let ignore = IgnoreFields(vec![
        FieldPattern::parse("metadata.labels.autoEmbeddedLabel").unwrap(),
        FieldPattern::parse("data.changable").unwrap(),
    ]);
    let verifier = Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("K3", &pem).unwrap(),
    )])
    .with_ignore_fields(ignore);
    let files = load_inputs(&[file], &Limits::default()).unwrap();
    let verdict = verifier.verify_documents(&files[0].documents);
    assert!(verdict.is_verified(), "{:?}", verdict.documents[0].result);
}

#[test]
fn unsigned_e2e_configmap_fails_as_not_signed() {
    verify("test/e2e/testdata/sample-configmap-without-sig.yaml", K1)
        .code(1)
        .stdout(predicate::str::contains("[not-signed]"));
}

#[test]
fn keyless_fixture_does_not_verify_with_a_key() {
    verify(
        "pkg/k8smanifest/testdata/sample-configmap-keyless-multi-signed.yaml",
        K1,
    )
    .code(1)
    .stdout(predicate::str::contains("[signature]"));
}

#[test]
fn non_gzipped_message_verifies_with_k2() {
    // pkg/cosign/testdata: testblob is base64 of a raw (not gzipped) YAML message.
    let (blob, sig, key) = (
        fixture("k8s-manifest-sigstore/pkg/cosign/testdata/testblob"),
        fixture("k8s-manifest-sigstore/pkg/cosign/testdata/testsig"),
        fixture(K2),
    );
    let blob_b64 = std::fs::read_to_string(blob).unwrap().trim().to_string();
    let sig_b64 = std::fs::read_to_string(sig).unwrap().trim().to_string();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&blob_b64)
        .unwrap();
    let mut object = parse_documents(std::str::from_utf8(&raw).unwrap(), &Limits::default())
        .unwrap()
        .remove(0)
        .1;
    object["metadata"]["annotations"] = json!({
        "cosign.sigstore.dev/message": blob_b64,
        "cosign.sigstore.dev/signature": sig_b64,
    });
    let pem = std::fs::read_to_string(key).unwrap();
    let verifier = Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("K2", &pem).unwrap(),
    )]);
    let verdict = verifier.verify_object(&object).unwrap();
    assert!(verdict.is_verified(), "{:?}", verdict.result);
    // and the same object with one changed value fails on the diff
    object["data"]["key1"] = json!("changed");
    let verdict = verifier.verify_object(&object).unwrap();
    assert_eq!(verdict.result.unwrap_err().check(), "diff");
}

#[test]
fn legacy_tarball_messages_decode_to_their_documents() {
    let file =
        fixture("k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-deployment-signed.yaml");
    let files = load_inputs(&[file], &Limits::default()).unwrap();
    let doc = &files[0].documents[0];
    let signed =
        mansign::annotations::extract(&doc.value, &AnnotationDomain::default(), &Limits::default())
            .unwrap();
    assert!(
        signed.message.starts_with(&[0x1f, 0x8b]),
        "tarball messages are tar.gz"
    );
    let docs = mansign::manifest::parse_message(&signed.message, &Limits::default()).unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["kind"], "Deployment");
    assert_eq!(docs[0]["metadata"]["name"], "sample-deployment");
}

/// YAML 1.1 (Go yaml.v2, used by kubectl-sigstore and Kyverno through ghodss/yaml) reads
/// these plain scalars as booleans, null, numbers or timestamps.
fn yaml11_non_string(plain: &str) -> bool {
    let re = regex::Regex::new(
        r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|~|null|Null|NULL|[-+]?(?:0b[01_]+|0[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])*|(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)|\.(?:inf|Inf|INF|nan|NaN|NAN)|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*)$",
    )
    .unwrap();
    re.is_match(plain)
}

#[test]
fn file_scope_message_has_the_shape_upstream_parses() {
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    common::with_key("sign", &["--scope", "file"], &input, &key)
        .assert()
        .success();
    let text = std::fs::read_to_string(dir.path().join("x.yaml.signed")).unwrap();
    let signed: Vec<Value> = parse_documents(&text, &Limits::default())
        .unwrap()
        .into_iter()
        .map(|d| d.1)
        .collect();
    let l = Limits::default();
    let b64 = signed[0]["metadata"]["annotations"]["cosign.sigstore.dev/message"]
        .as_str()
        .unwrap();
    let raw = decode_base64(b64, &l).unwrap();
    assert!(raw.starts_with(&[0x1f, 0x8b]), "message annotation is gzip");
    let m = String::from_utf8(decode_maybe_gzip(raw, &l).unwrap()).unwrap();
    // ConcatenateYAMLs shape: documents joined with "\n---\n", no leading separator.
    let parts: Vec<&str> = m.split("\n---\n").collect();
    assert_eq!(parts.len(), 3, "{m}");
    assert!(!m.starts_with("---"));
    let inputs: Vec<Value> = parse_documents(MULTI_DOC, &l)
        .unwrap()
        .into_iter()
        .map(|d| d.1)
        .collect();
    for (part, input) in parts.iter().zip(&inputs) {
        let docs = parse_documents(part, &l).unwrap();
        assert_eq!(docs.len(), 1);
        // The signed signing time is part of what is signed; apart from it, the message
        // holds the input document.
        let mut doc = docs[0].1.clone();
        let annotations = doc["metadata"]["annotations"].as_object_mut().unwrap();
        assert!(annotations.remove("mansign.dev/signed-at").is_some());
        if annotations.is_empty() {
            doc["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("annotations");
        }
        assert_eq!(
            &doc, input,
            "message document differs from the input document"
        );
        assert!(
            !part.contains("cosign.sigstore.dev/"),
            "signature annotations must not be in M"
        );
    }
    // Every plain (unquoted) scalar reads back as the same type under YAML 1.1.
    for line in m.lines() {
        let value = line.trim_start().trim_start_matches("- ");
        let value = value.split_once(": ").map(|(_, v)| v).unwrap_or(value);
        if value.starts_with('"') || value.ends_with(':') {
            continue;
        }
        assert!(
            !yaml11_non_string(value),
            "plain scalar {value:?} would be misread by yaml.v2: {line:?}"
        );
    }
    assert!(m.contains("enabled: \"yes\""), "{m}");
}

#[test]
fn signs_with_the_upstream_cosign_private_key_and_empty_password() {
    let (private, public) = (
        fixture(
            "k8s-manifest-sigstore/derived/pkg/k8smanifest/testdata/testkey.encrypted-cosign-key.pem",
        ),
        fixture(K1),
    );
    assert!(
        std::fs::read_to_string(&private)
            .unwrap()
            .contains("ENCRYPTED COSIGN PRIVATE KEY")
    );
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "x.yaml", MULTI_DOC);
    mansign()
        .env("COSIGN_PASSWORD", "")
        .args(["sign", "-f"])
        .arg(&input)
        .arg("--key")
        .arg(&private)
        .assert()
        .success();
    common::with_key("verify", &[], dir.path().join("x.yaml.signed"), &public)
        .assert()
        .success();
}
