//! Public keys named by reference (issue 25 §4), offline: Kyverno's `k8s://NS/NAME` and
//! `context` ConfigMap entries read as `{{ NAME.data.KEY }}`, and the ManifestPolicy's
//! `secretRef` / `configMapRef` / `k8s://`, parsed into typed references; the values come
//! from a `ResolvedKeys` (what the webhook's watch or the CLI's read found). A reference
//! without a usable value makes its rule refuse every object (fail closed, even under
//! Audit); every other context entry, variable or JMESPath is refused at load, naming it.

use crate::common::admission_fixture;

use admission_fixture::{Key, key, sign};
use mansign::manifest::Document;
use mansign::manifest::{DocumentOrigin, Source};
use mansign::policy::{
    FailureAction, KeyObject, KeyReference, KeyValueError, LoadOptions, PolicyError, PolicySet,
    RequestContext, ResolvedKeys, load_str_with_keys,
};
use mansign::verify::Rejection;
use serde_json::Value;

fn load(text: &str, keys: &ResolvedKeys) -> Result<PolicySet, PolicyError> {
    load_str_with_keys(
        "keys-policy.yaml",
        text,
        ".".as_ref(),
        &LoadOptions::default(),
        keys,
    )
}

fn kyverno(context: &str, public_keys: &str, action: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {{name: keys}}
spec:
  validationFailureAction: {action}
  rules:
  - name: signed
    match: {{any: [{{resources: {{kinds: [ConfigMap]}}}}]}}
{context}    validate:
      manifests:
        attestors:
        - entries:
          - keys:
              publicKeys: {public_keys}
"
    )
}

const CONTEXT: &str = "    context:
    - name: keys
      configMap: {name: signing-keys, namespace: platform}
";

fn secret_ref() -> KeyReference {
    KeyReference::new(KeyObject::Secret, "cosign-system", "release", "cosign.pub").unwrap()
}

fn config_map_ref() -> KeyReference {
    KeyReference::new(
        KeyObject::ConfigMap,
        "platform",
        "signing-keys",
        "production",
    )
    .unwrap()
}

fn signed(key: &Key) -> Document {
    let value: Value = sign(
        key,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {a: b}\n",
    )
    .remove(0);
    let origin = DocumentOrigin {
        source: Source::Named("signed".into()),
        index: 0,
        item: None,
    };
    Document::new(origin, value).unwrap()
}

fn verdict(set: &PolicySet, doc: &Document) -> (Result<(), Rejection>, FailureAction) {
    let object = set.verify_document(doc, &RequestContext::default());
    assert_eq!(object.rules.len(), 1, "{object}");
    let rule = &object.rules[0];
    (rule.verdict.result.clone().map(|_| ()), rule.action)
}

#[test]
fn a_k8s_secret_reference_is_read_from_the_resolved_values() {
    let release = key();
    let text = kyverno("", "k8s://cosign-system/release", "Enforce");
    let mut keys = ResolvedKeys::new();
    keys.insert(secret_ref(), Ok(release.public_key_pem.clone()));
    let set = load(&text, &keys).unwrap();
    assert_eq!(set.key_references, vec![secret_ref()]);
    assert!(set.unresolved_keys().is_empty());
    assert!(verdict(&set, &signed(&release)).0.is_ok());
    // Another key in the Secret: the document signed by the first fails on its signature.
    let mut rotated = ResolvedKeys::new();
    rotated.insert(secret_ref(), Ok(key().public_key_pem));
    let set = load(&text, &rotated).unwrap();
    let (result, _) = verdict(&set, &signed(&release));
    assert_eq!(result.unwrap_err().check(), "signature");
}

#[test]
fn an_unread_or_deleted_secret_denies_every_object_even_under_audit() {
    let release = key();
    let text = kyverno("", "k8s://cosign-system/release", "Audit");
    for (keys, want) in [
        (ResolvedKeys::new(), "not read"),
        (
            {
                let mut k = ResolvedKeys::new();
                k.insert(
                    secret_ref(),
                    Err(KeyValueError::Watch {
                        reference: secret_ref(),
                        reason: "not found (deleted?)".into(),
                    }),
                );
                k
            },
            "not found (deleted?)",
        ),
    ] {
        let set = load(&text, &keys).unwrap();
        let unresolved = set.unresolved_keys();
        assert_eq!(unresolved.len(), 1, "{unresolved:?}");
        assert!(unresolved[0].contains(want), "{unresolved:?}");
        assert!(
            unresolved[0].contains("attestors[0].entries[0].keys.publicKeys"),
            "{unresolved:?}"
        );
        let (result, action) = verdict(&set, &signed(&release));
        let rejection = result.unwrap_err();
        assert_eq!(rejection.code(), "key-unresolved");
        assert!(rejection.to_string().contains(want), "{rejection}");
        assert_eq!(action, FailureAction::Enforce);
    }
}

#[test]
fn a_config_map_context_entry_is_read_through_its_data_variable() {
    let release = key();
    let text = kyverno(CONTEXT, "\"{{ keys.data.production }}\"", "Enforce");
    let mut keys = ResolvedKeys::new();
    keys.insert(config_map_ref(), Ok(release.public_key_pem.clone()));
    let set = load(&text, &keys).unwrap();
    assert_eq!(set.key_references, vec![config_map_ref()]);
    assert!(verdict(&set, &signed(&release)).0.is_ok());
}

#[test]
fn a_config_map_value_that_is_not_a_public_key_is_refused_with_the_policy_path() {
    let release = key();
    let text = kyverno(CONTEXT, "\"{{ keys.data.production }}\"", "Enforce");
    for (value, want) in [
        ("not a key", "not a PEM public key"),
        (
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
            "not a usable public key",
        ),
        (
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "CERTIFICATE",
        ),
    ] {
        let mut keys = ResolvedKeys::new();
        keys.insert(config_map_ref(), Ok(value.into()));
        let set = load(&text, &keys).unwrap();
        let unresolved = set.unresolved_keys();
        assert_eq!(unresolved.len(), 1, "{value}: {unresolved:?}");
        let reason = &unresolved[0];
        for part in [
            "keys-policy.yaml: document 1: spec.rules[0].validate.manifests.attestors[0].entries[0].keys.publicKeys",
            want,
            "ConfigMap platform/signing-keys key \"production\"",
        ] {
            assert!(
                reason.contains(part),
                "{value}: missing {part:?} in {reason}"
            );
        }
        let (result, _) = verdict(&set, &signed(&release));
        assert_eq!(result.unwrap_err().code(), "key-unresolved");
    }
}

#[test]
fn other_context_entries_variables_and_jmespath_are_refused_at_load_naming_them() {
    let none = ResolvedKeys::new();
    let cases: &[(&str, &str, &str)] = &[
        (
            "    context:\n    - name: x\n      apiCall: {urlPath: /api/v1/namespaces}\n",
            "\"{{ x.data.k }}\"",
            "spec.rules[0].context[0].apiCall",
        ),
        (
            "    context:\n    - name: x\n      variable: {value: abc}\n",
            "\"{{ x.data.k }}\"",
            "spec.rules[0].context[0].variable",
        ),
        (
            "    context:\n    - name: x\n      imageRegistry: {reference: ghcr.io/x}\n",
            "\"{{ x.data.k }}\"",
            "spec.rules[0].context[0].imageRegistry",
        ),
        (
            "    context:\n    - name: x\n      globalReference: {name: g}\n",
            "\"{{ x.data.k }}\"",
            "spec.rules[0].context[0].globalReference",
        ),
        (
            CONTEXT,
            "\"{{ request.object.metadata.annotations.key }}\"",
            "keys.publicKeys",
        ),
        (
            CONTEXT,
            "\"{{ keys.data.production | base64_decode(@) }}\"",
            "keys.publicKeys",
        ),
        (
            CONTEXT,
            "\"prefix {{ keys.data.production }}\"",
            "keys.publicKeys",
        ),
        (
            CONTEXT,
            "\"{{ other.data.production }}\"",
            "keys.publicKeys",
        ),
        ("", "\"{{ keys.data.production }}\"", "keys.publicKeys"),
        (
            "    context:\n    - name: keys\n      configMap: {name: signing-keys}\n",
            "\"{{ keys.data.production }}\"",
            "context[0].configMap.namespace",
        ),
        (
            "    context:\n    - name: keys\n      configMap: {name: \"{{ request.namespace }}\", namespace: p}\n",
            "\"{{ keys.data.production }}\"",
            "context[0].configMap.name",
        ),
    ];
    for (context, public_keys, field) in cases {
        let text = kyverno(context, public_keys, "Enforce");
        let err = load(&text, &none).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("keys-policy.yaml: document 1: ") && msg.contains(field),
            "{public_keys} with {context}: {msg}"
        );
        assert!(
            msg.contains("not supported") || msg.contains("required") || msg.contains("only"),
            "{msg}"
        );
    }
    // Malformed k8s:// references are refused too.
    for bad in ["k8s://ns", "k8s://NS/name", "k8s://ns/name/key/extra"] {
        let err = load(&kyverno("", bad, "Enforce"), &none).unwrap_err();
        assert!(err.to_string().contains("keys.publicKeys"), "{bad}: {err}");
    }
}

fn manifest_policy(keys: &str) -> String {
    format!(
        "apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata: {{name: refs}}
spec:
  attestors:
  - entries:
    - keys: {keys}
"
    )
}

#[test]
fn a_manifest_policy_names_secrets_and_config_maps() {
    let release = key();
    let mut keys = ResolvedKeys::new();
    keys.insert(secret_ref(), Ok(release.public_key_pem.clone()));
    keys.insert(config_map_ref(), Ok(release.public_key_pem.clone()));
    let other =
        KeyReference::new(KeyObject::Secret, "cosign-system", "release", "other.pub").unwrap();
    keys.insert(other.clone(), Ok(release.public_key_pem.clone()));
    for (spec, reference) in [
        (
            "{publicKeys: \"k8s://cosign-system/release\"}",
            secret_ref(),
        ),
        (
            "{secretRef: {namespace: cosign-system, name: release}}",
            secret_ref(),
        ),
        (
            "{secretRef: {namespace: cosign-system, name: release, key: other.pub}}",
            other.clone(),
        ),
        (
            "{configMapRef: {namespace: platform, name: signing-keys, key: production}}",
            config_map_ref(),
        ),
    ] {
        let set = load(&manifest_policy(spec), &keys).unwrap();
        assert_eq!(set.key_references, vec![reference], "{spec}");
        assert!(verdict(&set, &signed(&release)).0.is_ok(), "{spec}");
        let unread = load(&manifest_policy(spec), &ResolvedKeys::new()).unwrap();
        assert_eq!(
            verdict(&unread, &signed(&release)).0.unwrap_err().code(),
            "key-unresolved",
            "{spec}"
        );
    }
    for (spec, want) in [
        (
            "{configMapRef: {namespace: platform, name: signing-keys}}",
            "configMapRef.key",
        ),
        ("{secretRef: {namespace: Bad, name: release}}", "secretRef"),
        (
            "{secretRef: {namespace: a, name: b}, publicKeys: \"k8s://a/b\"}",
            "exactly one of publicKeys, path, secretRef, configMapRef",
        ),
        ("{secretRef: {name: b}}", "namespace"),
    ] {
        let err = load(&manifest_policy(spec), &ResolvedKeys::new()).unwrap_err();
        assert!(err.to_string().contains(want), "{spec}: {err}");
    }
}

#[test]
fn policy_convert_carries_the_references_and_explain_names_them() {
    let text = kyverno(
        CONTEXT,
        "k8s://cosign-system/release\n          - keys:\n              publicKeys: \"{{ keys.data.production }}\"",
        "Enforce",
    );
    let conversion = mansign::policy::convert::convert_str(
        "keys-policy.yaml",
        &text,
        ".".as_ref(),
        &mansign::policy::convert::ConvertOptions::default(),
    )
    .unwrap();
    let yaml = conversion.to_yaml();
    assert!(
        yaml.contains("secretRef:") && yaml.contains("configMapRef:"),
        "{yaml}"
    );
    // The converted policy names the same objects, and verifies with the same values.
    let release = key();
    let mut keys = ResolvedKeys::new();
    keys.insert(secret_ref(), Ok(release.public_key_pem.clone()));
    keys.insert(config_map_ref(), Ok(release.public_key_pem.clone()));
    let original = load(&text, &keys).unwrap();
    let converted = load(&yaml, &keys).unwrap();
    assert_eq!(original.key_references, converted.key_references);
    assert_eq!(
        converted.key_references,
        vec![secret_ref(), config_map_ref()]
    );
    assert!(verdict(&converted, &signed(&release)).0.is_err()); // two entries, one signer
    // Explained offline: the references, no stand-in key fingerprint; the same every time.
    let unread = load(&text, &ResolvedKeys::new()).unwrap();
    let explained = mansign::policy::explain::explain_text(&unread);
    assert!(
        explained
            .contains("(Secret cosign-system/release key \"cosign.pub\"), read from the cluster")
            && explained.contains(
                "(ConfigMap platform/signing-keys key \"production\"), read from the cluster"
            )
            && !explained.contains("sha256:"),
        "{explained}"
    );
    assert_eq!(
        explained,
        mansign::policy::explain::explain_text(&load(&text, &ResolvedKeys::new()).unwrap())
    );
}

#[test]
fn variables_anywhere_else_in_a_manifests_rule_are_refused_naming_the_field() {
    let none = ResolvedKeys::new();
    let keyless = "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: vars}
spec:
  rules:
  - name: signed
    match: {any: [{resources: {kinds: [ConfigMap], names: [\"{{ request.object.metadata.name }}\"]}}]}
    validate:
      manifests:
        attestors:
        - entries:
          - keyless: {issuer: https://token.actions.githubusercontent.com, subject: \"{{ keys.data.subject }}\"}
";
    let err = load(keyless, &none).unwrap_err().to_string();
    assert!(
        err.contains("spec.rules[0].match.any[0].resources.names[0]")
            && err.contains("not supported"),
        "{err}"
    );
    let err = load(
        &keyless.replace(
            "names: [\"{{ request.object.metadata.name }}\"]",
            "names: [x]",
        ),
        &none,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("spec.rules[0].validate.manifests.attestors[0].entries[0].keyless.subject")
            && err.contains("not supported"),
        "{err}"
    );
    // A rule that is not a manifests rule is skipped, variables and all.
    let other = "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: other}
spec:
  rules:
  - name: labels
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: \"{{ request.object.metadata.name }} needs a label\"
      pattern: {metadata: {labels: {app: \"?*\"}}}
  - name: signed
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      manifests:
        attestors:
        - entries:
          - keys: {publicKeys: \"k8s://cosign-system/release\"}
";
    let set = load(other, &none).unwrap();
    assert_eq!(set.rules.len(), 1);
}

#[test]
fn the_webhooks_review_denies_an_unresolved_reference_even_under_audit() {
    use admission_fixture::decide;
    use mansign::admission::{Outcome, ReviewOptions, Reviewer};
    let release = key();
    let text = kyverno("", "k8s://cosign-system/release", "Audit");
    let object = signed(&release).value;
    // Resolved: the signed object is allowed.
    let mut keys = ResolvedKeys::new();
    keys.insert(secret_ref(), Ok(release.public_key_pem.clone()));
    let reviewer = Reviewer::new(load(&text, &keys).unwrap(), ReviewOptions::default());
    let (outcome, _, message) = decide(&reviewer, &object, "CREATE", None);
    assert_eq!(outcome, Outcome::Allowed, "{message}");
    // Deleted: denied (not an Audit warning), with the code and the reason; the cached
    // path answers the same.
    let mut gone = ResolvedKeys::new();
    gone.insert(
        secret_ref(),
        Err(KeyValueError::Missing {
            reference: secret_ref(),
            watched: false,
        }),
    );
    let reviewer = Reviewer::new(load(&text, &gone).unwrap(), ReviewOptions::default());
    let (outcome, code, message) = decide(&reviewer, &object, "CREATE", None);
    assert_eq!(outcome, Outcome::Denied, "{message}");
    assert_eq!(code.as_deref(), Some("key-unresolved"), "{message}");
    assert!(message.contains("does not exist"), "{message}");
    let body = admission_fixture::review_body(&object, "CREATE", None);
    let cached = reviewer
        .review_cached(&body)
        .expect("decided without a signature check");
    assert_eq!(cached.decision.outcome, Outcome::Denied);
}
