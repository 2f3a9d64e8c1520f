//! A list of PEM public keys whose second block lost its END line is refused, never read as
//! one key (issue 35, item 8): in an attestor set that requires every entry, one key fewer
//! is one signer fewer. A policy file's key list fails to load; a key value read from the
//! cluster (Secret or ConfigMap) leaves the reference unresolved (`key-unresolved`, fail
//! closed); a `--key` file fails to read. Kyverno (Go's `pem.Decode`) reads the first block
//! and drops the rest.

use crate::common;
use common::admission_fixture::{Key, decide, key, sign};
use mansign::admission::{Outcome, ReviewOptions, Reviewer};
use mansign::manifest::{Document, DocumentOrigin, Source};
use mansign::policy::{
    KeyObject, KeyReference, LoadOptions, PolicyError, PolicySet, RequestContext, ResolvedKeys,
    load_str_with_keys,
};
use serde_json::Value;

/// `second`'s PEM with its END line (and everything after it) lost.
fn truncated(pem: &str) -> String {
    let end = pem.find("-----END").unwrap();
    pem[..end].to_string()
}

/// Two keys as one text: `first` complete, then `second` as given.
fn key_list(first: &Key, second: &str) -> String {
    format!("{}{second}", first.public_key_pem)
}

fn indented(text: &str, by: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect()
}

/// A Kyverno policy whose one attestor set (no `count`: every entry) holds the keys of
/// `public_keys` (a block scalar, or a reference).
fn kyverno(public_keys: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {{name: keys}}
spec:
  validationFailureAction: Enforce
  rules:
  - name: signed
    match: {{any: [{{resources: {{kinds: [ConfigMap]}}}}]}}
    validate:
      manifests:
        attestors:
        - entries:
          - keys:
              publicKeys: {public_keys}"
    )
}

fn load(text: &str, keys: &ResolvedKeys) -> Result<PolicySet, PolicyError> {
    load_str_with_keys(
        "keys-policy.yaml",
        text,
        ".".as_ref(),
        &LoadOptions::default(),
        keys,
    )
}

fn signed_by(key: &Key) -> Value {
    sign(
        key,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {a: b}\n",
    )
    .remove(0)
}

fn verdict_code(set: &PolicySet, object: &Value) -> Option<String> {
    let origin = DocumentOrigin {
        source: Source::Named("signed".into()),
        index: 0,
        item: None,
    };
    let doc = Document::new(origin, object.clone()).unwrap();
    let verdict = set.verify_document(&doc, &RequestContext::default());
    verdict.rules[0]
        .verdict
        .result
        .as_ref()
        .err()
        .map(|r| r.code().to_string())
}

#[test]
fn a_policy_key_list_whose_second_key_lost_its_end_line_fails_to_load() {
    let (alice, bob) = (key(), key());
    // Control: two complete keys are two entries, so alice alone is not enough.
    let both = format!(
        "|\n{}",
        indented(&key_list(&alice, &bob.public_key_pem), 16)
    );
    let set = load(&kyverno(&both), &ResolvedKeys::new()).unwrap();
    assert!(
        verdict_code(&set, &signed_by(&alice)).is_some(),
        "alice alone verified"
    );
    // The second key truncated: refused at load, naming the field and the block.
    let cut = format!(
        "|\n{}",
        indented(&key_list(&alice, &truncated(&bob.public_key_pem)), 16)
    );
    let err = load(&kyverno(&cut), &ResolvedKeys::new()).expect_err("a truncated key list loaded");
    let text = err.to_string();
    for needle in ["publicKeys", "PEM block 2", "no END line"] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    // Trailing text after the last block is refused too.
    let trailing = format!(
        "|\n{}",
        indented(&format!("{}garbage\n", alice.public_key_pem), 16)
    );
    let err = load(&kyverno(&trailing), &ResolvedKeys::new()).expect_err("trailing text loaded");
    assert!(
        err.to_string().contains("text outside the PEM blocks"),
        "{err}"
    );
}

#[test]
fn a_cluster_key_value_whose_second_key_lost_its_end_line_is_key_unresolved() {
    let (alice, bob) = (key(), key());
    let reference =
        KeyReference::new(KeyObject::Secret, "cosign-system", "release", "cosign.pub").unwrap();
    let text = kyverno("k8s://cosign-system/release");
    let object = signed_by(&alice);
    let mut keys = ResolvedKeys::new();
    keys.insert(
        reference.clone(),
        Ok(key_list(&alice, &truncated(&bob.public_key_pem))),
    );
    let set = load(&text, &keys).unwrap();
    let unresolved = set.unresolved_keys();
    assert_eq!(unresolved.len(), 1, "{unresolved:?}");
    assert!(unresolved[0].contains("no END line"), "{unresolved:?}");
    assert_eq!(
        verdict_code(&set, &object).as_deref(),
        Some("key-unresolved")
    );
    // The webhook's answer: denied with the code.
    let reviewer = Reviewer::new(set, ReviewOptions::default());
    let (outcome, code, message) = decide(&reviewer, &object, "CREATE", None);
    assert_eq!(outcome, Outcome::Denied, "{message}");
    assert_eq!(code.as_deref(), Some("key-unresolved"), "{message}");
    // Control: the complete list resolves, and alice alone is still not enough.
    let mut complete = ResolvedKeys::new();
    complete.insert(reference, Ok(key_list(&alice, &bob.public_key_pem)));
    let set = load(&text, &complete).unwrap();
    assert!(set.unresolved_keys().is_empty());
    assert_ne!(
        verdict_code(&set, &object).as_deref(),
        Some("key-unresolved")
    );
    assert!(
        verdict_code(&set, &object).is_some(),
        "alice alone verified"
    );
}

#[test]
fn a_key_file_with_a_truncated_second_key_is_refused() {
    let (alice, bob) = (key(), key());
    let dir = tempfile::tempdir().unwrap();
    let object = signed_by(&alice);
    let manifest = common::write(
        dir.path(),
        "signed.yaml",
        &mansign::manifest::to_yaml(&object),
    );
    let pubkey = common::write(
        dir.path(),
        "cosign.pub",
        &key_list(&alice, &truncated(&bob.public_key_pem)),
    );
    common::mansign()
        .args(["verify", "-f"])
        .arg(&manifest)
        .arg("--key")
        .arg(&pubkey)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no END line"));
    let err =
        mansign::keys::parse_public_key_pem(&key_list(&alice, &truncated(&bob.public_key_pem)))
            .unwrap_err();
    assert!(
        matches!(
            err,
            mansign::keys::KeyError::UnterminatedPemBlock { block: 2, .. }
        ),
        "{err}"
    );
}
