//! The tamper matrix: every single-step edit of signed manifests that changes what the
//! cluster would do must be rejected; every re-encoding that changes nothing must verify.
//!
//! Fixtures are signed in the test, with a key and keylessly (on the loopback Sigstore
//! stack), for the kinds where a "looks empty" value changes behaviour (NetworkPolicy,
//! PodDisruptionBudget, Service, ConfigMap) and common ones (Deployment, RBAC,
//! PolicyException). For each, the mutations are generated, not hand-picked:
//!
//! * **object edits** — at every field: change it, remove it, give it each empty-looking
//!   value (`null`, `{}`, `[]`, `""`); add a sibling key with each empty-looking value; for
//!   lists, append an empty item, drop the last, swap the first two;
//! * **annotation codec edits** — message, signature and (keyless) certificate and bundle
//!   annotations replaced, truncated, swapped with another document's, removed, or joined by
//!   look-alike keys that kubectl-sigstore would mask;
//! * **live-object edits under the `kubernetes` profile** — `status` on kinds without a
//!   status subresource, a tampered `last-applied-configuration`;
//! * **YAML 1.1 vs 1.2 readings** — a signed quoted scalar (key or value) that kubectl would
//!   read as a bool or a number (`"yes"`, `"on"`, `"0755"`, `"1_000"`...) written unquoted;
//! * **benign re-encodings** — key order, quoting style, flow vs block style, comments,
//!   indentation — which must still verify.
//!
//! The test prints the counts and fails on the first category with a wrong verdict, naming
//! the fixture and the mutation.

use crate::common;
use crate::common::stack;

use mansign::Limits;
use mansign::keys;
use mansign::manifest::{IgnoreProfile, Source, Tolerances, load_reader, to_yaml};
use mansign::signing::token::{AcquiredToken, TokenSource};
use mansign::signing::{
    KeySigner, KeylessOptions, KeylessSigner, RekorOptions, SignOptions, Signer, sign_files,
};
use mansign::trust::TrustRoot;
use mansign::verify::{Attestor, IdentityPolicy, KeylessAttestor, TrustedKey, Verifier};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The fixture manifests, one a file in `testdata/tamper-matrix/manifests/`, in name order.
fn manifests() -> Vec<String> {
    let dir = common::fixture("tamper-matrix/manifests");
    let texts: Vec<String> = common::files_under(&dir)
        .iter()
        .map(|name| std::fs::read_to_string(dir.join(name)).unwrap())
        .collect();
    assert_eq!(
        texts.len(),
        8,
        "testdata/tamper-matrix/manifests: {texts:?}"
    );
    texts
}

/// Signed objects and a verifier that accepts their signer.
struct Fixture {
    label: &'static str,
    objects: Vec<Value>,
    verifier: Verifier,
}

fn load(text: &str) -> mansign::manifest::ManifestFile {
    load_reader(
        Source::Named("fixture".into()),
        "fixture.yaml".into(),
        text.as_bytes(),
        &Limits::default(),
    )
    .unwrap()
}

fn sign_all(signer: &dyn Signer) -> Vec<Value> {
    let mut files: Vec<_> = manifests().iter().map(|m| load(m)).collect();
    sign_files(&mut files, signer, &SignOptions::default()).unwrap();
    files
        .into_iter()
        .flat_map(|f| f.documents)
        .map(|d| d.value)
        .collect()
}

fn key_fixture() -> Fixture {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let objects = sign_all(&KeySigner::new(key));
    let verifier = Verifier::new(vec![Attestor::Key(
        TrustedKey::from_pem("k", &pair.public_key_pem).unwrap(),
    )]);
    Fixture {
        label: "key",
        objects,
        verifier,
    }
}

fn keyless_fixture(stack: &stack::Stack) -> Fixture {
    let token = AcquiredToken::new(
        &stack.id_token(),
        TokenSource::Argument,
        "sigstore",
        jiff::Timestamp::now(),
    )
    .unwrap();
    let signer = KeylessSigner::new(
        token,
        KeylessOptions::default()
            .with_fulcio_url(stack.fulcio_url().to_string())
            .with_rekor(RekorOptions::default().with_url(stack.rekor_url().to_string())),
    );
    let objects = sign_all(&signer);
    let trust = Arc::new(TrustRoot::from_file(stack.trusted_root()).unwrap());
    let identity = IdentityPolicy::builder()
        .subject(stack.identity())
        .issuer(stack.issuer())
        .build()
        .unwrap();
    Fixture {
        label: "keyless",
        objects,
        verifier: Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(
            trust, identity,
        ))]),
    }
}

/// One generated case.
struct Case {
    what: String,
    object: Value,
}

/// Paths of every field and list item below `v`, excluding the signature annotations (their
/// edits are the codec category).
fn paths(v: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    if path.len() == 2
                        && path[0] == Step::Key("metadata".into())
                        && path[1] == Step::Key("annotations".into())
                    {
                        continue;
                    }
                    path.push(Step::Key(k.clone()));
                    out.push(path.clone());
                    walk(c, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    path.push(Step::Index(i));
                    out.push(path.clone());
                    walk(c, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

#[derive(Clone, PartialEq, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn show(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => format!(".{k}"),
            Step::Index(i) => format!("[{i}]"),
        })
        .collect()
}

fn get_mut<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    let mut v = v;
    for s in path {
        v = match s {
            Step::Key(k) => v.get_mut(k).unwrap(),
            Step::Index(i) => v.get_mut(*i).unwrap(),
        };
    }
    v
}

/// Values that look empty but that the API server keeps (an empty selector selects all).
const EMPTY_LOOKING: [fn() -> Value; 6] = [
    || Value::Null,
    || json!({}),
    || json!([]),
    || json!(""),
    || json!({"matchExpressions": []}),
    || json!({"matchLabels": null}),
];

/// Object edits that change what the cluster would do.
fn object_edits(object: &Value) -> Vec<Case> {
    let mut cases = Vec::new();
    for path in paths(object) {
        let at = show(&path);
        let current = get_mut(&mut object.clone(), &path).clone();
        // change it
        let changed = match &current {
            Value::String(s) => json!(format!("{s}-x")),
            Value::Number(n) => json!(n.as_i64().unwrap_or(0) + 1),
            Value::Bool(b) => json!(!b),
            Value::Null => json!("x"),
            Value::Array(_) | Value::Object(_) => json!("x"),
        };
        let mut o = object.clone();
        *get_mut(&mut o, &path) = changed;
        cases.push(Case {
            what: format!("change {at}"),
            object: o,
        });
        // remove it (the identity fields are covered by their own cases below)
        let (parent, last) = path.split_at(path.len() - 1);
        let mut o = object.clone();
        match (&last[0], get_mut(&mut o, parent)) {
            (Step::Key(k), Value::Object(m)) => {
                m.remove(k);
            }
            (Step::Index(i), Value::Array(a)) => {
                a.remove(*i);
            }
            _ => unreachable!(),
        }
        cases.push(Case {
            what: format!("remove {at}"),
            object: o,
        });
        // give it each empty-looking value
        for empty in EMPTY_LOOKING {
            let e = empty();
            if e == current {
                continue;
            }
            let mut o = object.clone();
            *get_mut(&mut o, &path) = e.clone();
            cases.push(Case {
                what: format!("set {at} to {e}"),
                object: o,
            });
        }
        match &current {
            // add a sibling key with each empty-looking value
            Value::Object(_) => {
                for empty in EMPTY_LOOKING {
                    let e = empty();
                    let mut o = object.clone();
                    if let Value::Object(m) = get_mut(&mut o, &path) {
                        m.insert("namespaceSelector".into(), e.clone());
                    }
                    cases.push(Case {
                        what: format!("add {at}.namespaceSelector = {e}"),
                        object: o,
                    });
                }
            }
            // list edits
            Value::Array(a) => {
                let mut o = object.clone();
                if let Value::Array(a) = get_mut(&mut o, &path) {
                    a.push(json!({}));
                }
                cases.push(Case {
                    what: format!("append {{}} to {at}"),
                    object: o,
                });
                if a.len() >= 2 && a[0] != a[1] {
                    let mut o = object.clone();
                    if let Value::Array(a) = get_mut(&mut o, &path) {
                        a.swap(0, 1);
                    }
                    cases.push(Case {
                        what: format!("swap the first two items of {at}"),
                        object: o,
                    });
                }
            }
            _ => {}
        }
    }
    // top-level additions
    for empty in EMPTY_LOOKING {
        let e = empty();
        let mut o = object.clone();
        o.as_object_mut().unwrap().insert("extra".into(), e.clone());
        cases.push(Case {
            what: format!("add .extra = {e}"),
            object: o,
        });
        let mut o = object.clone();
        o["metadata"]["labels"] = json!({"injected": e.clone()});
        if o != *object {
            cases.push(Case {
                what: format!("set .metadata.labels to {{injected: {e}}}"),
                object: o,
            });
        }
    }
    cases
}

fn annotations(o: &mut Value) -> &mut Map<String, Value> {
    o["metadata"]["annotations"].as_object_mut().unwrap()
}

/// Annotation codec edits: each must be rejected.
fn codec_edits(object: &Value, other: &Value) -> Vec<Case> {
    let mut cases = Vec::new();
    let keys: Vec<String> = annotations(&mut object.clone())
        .keys()
        .filter(|k| k.starts_with("cosign.sigstore.dev/"))
        .cloned()
        .collect();
    for key in &keys {
        let mut o = object.clone();
        annotations(&mut o).remove(key);
        // A missing certificate or bundle on a keyless set, or a missing message or
        // signature, each refuse; for a key set there is no certificate or bundle.
        cases.push(Case {
            what: format!("remove {key}"),
            object: o,
        });
        let original = annotations(&mut object.clone())[key]
            .as_str()
            .unwrap()
            .to_string();
        for (how, value) in [
            ("truncate", original[..original.len() / 2].to_string()),
            ("empty", String::new()),
            ("non-base64", "***".to_string()),
            ("flip one character of", flip(&original)),
        ] {
            let mut o = object.clone();
            annotations(&mut o).insert(key.clone(), json!(value));
            cases.push(Case {
                what: format!("{how} {key}"),
                object: o,
            });
        }
        // Another document's value.
        if let Some(v) = other["metadata"]["annotations"].get(key)
            && v != &annotations(&mut object.clone())[key]
        {
            let mut o = object.clone();
            annotations(&mut o).insert(key.clone(), v.clone());
            cases.push(Case {
                what: format!("{key} from another document"),
                object: o,
            });
        }
    }
    // Every signature annotation of another document: its signature is valid, for another
    // object.
    let mut o = object.clone();
    for key in &keys {
        annotations(&mut o).remove(key);
    }
    for (k, v) in other["metadata"]["annotations"].as_object().unwrap() {
        if k.starts_with("cosign.sigstore.dev/") {
            annotations(&mut o).insert(k.clone(), v.clone());
        }
    }
    cases.push(Case {
        what: "all signature annotations from another document".into(),
        object: o,
    });
    // Look-alike keys kubectl-sigstore masks (it masks every key that starts with a
    // signature key's name): for mansign they are data, and signed data changed.
    for lookalike in [
        "cosign.sigstore.dev/message-extra",
        "cosign.sigstore.dev/signature_01",
        "cosign.sigstore.dev/bundleX",
    ] {
        let mut o = object.clone();
        annotations(&mut o).insert(lookalike.into(), json!("x"));
        cases.push(Case {
            what: format!("add look-alike annotation {lookalike}"),
            object: o,
        });
    }
    // The signed times are signed.
    for key in ["mansign.dev/signed-at", "mansign.dev/expires"] {
        let mut o = object.clone();
        annotations(&mut o).insert(key.into(), json!("2099-01-01T00:00:00Z"));
        cases.push(Case {
            what: format!("set {key}"),
            object: o,
        });
    }
    cases
}

fn flip(s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    let i = chars.len() / 3;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// Re-encodings that change nothing: the same object written differently.
fn benign_texts(object: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    out.push(("as emitted".into(), to_yaml(object)));
    out.push(("as JSON".into(), serde_json::to_string(object).unwrap()));
    out.push((
        "as pretty JSON".into(),
        serde_json::to_string_pretty(object).unwrap(),
    ));
    out.push(("keys in reverse order".into(), to_yaml(&reversed(object))));
    out.push((
        "flow style for every collection below the top".into(),
        flow_below_top(object),
    ));
    out.push((
        "comments and blank lines".into(),
        to_yaml(object)
            .lines()
            .map(|l| format!("{l}  # note\n\n"))
            .collect(),
    ));
    out.push((
        "four-space indentation, sequences indented under their key".into(),
        block(object, 4, &|v| serde_json::to_string(v).unwrap()),
    ));
    out.push(("single-quoted strings".into(), single_quoted(object)));
    out
}

fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

fn flow_below_top(object: &Value) -> String {
    let mut out = String::new();
    for (k, v) in object.as_object().unwrap() {
        out.push_str(&format!(
            "{}: {}\n",
            json!(k),
            serde_json::to_string(v).unwrap()
        ));
    }
    out
}

/// Every string written single-quoted ('' escapes a quote), keys included.
fn single_quoted(object: &Value) -> String {
    block(object, 2, &|v| match v {
        Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        other => serde_json::to_string(other).unwrap(),
    })
}

/// Block style with `step` spaces of indentation, sequences indented below their key, every
/// scalar (keys included) written by `scalar`.
fn block(object: &Value, step: usize, scalar: &dyn Fn(&Value) -> String) -> String {
    fn emit(
        v: &Value,
        indent: usize,
        step: usize,
        scalar: &dyn Fn(&Value) -> String,
        out: &mut String,
    ) {
        let pad = " ".repeat(indent);
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, c) in m {
                    let key = scalar(&Value::String(k.clone()));
                    match c {
                        Value::Object(cm) if !cm.is_empty() => {
                            out.push_str(&format!("{pad}{key}:\n"));
                            emit(c, indent + step, step, scalar, out);
                        }
                        Value::Array(ca) if !ca.is_empty() => {
                            out.push_str(&format!("{pad}{key}:\n"));
                            emit(c, indent + step, step, scalar, out);
                        }
                        _ => out.push_str(&format!("{pad}{key}: {}\n", scalar(c))),
                    }
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for c in a {
                    match c {
                        Value::Object(m) if !m.is_empty() => {
                            // the item's mapping starts after "- ", its other keys align
                            let mut inner = String::new();
                            emit(c, indent + 2, step, scalar, &mut inner);
                            out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                        }
                        Value::Array(ia) if !ia.is_empty() => {
                            out.push_str(&format!("{pad}-\n"));
                            emit(c, indent + step, step, scalar, out);
                        }
                        _ => out.push_str(&format!("{pad}- {}\n", scalar(c))),
                    }
                }
            }
            other => out.push_str(&format!("{pad}{}\n", scalar(other))),
        }
    }
    let mut out = String::new();
    emit(object, 0, step, scalar, &mut out);
    out
}

/// The emitted YAML with one double-quoted scalar (key or value) unquoted at a time, for
/// every quoted scalar whose YAML 1.1 and 1.2 readings differ.
fn unquoted_texts(object: &Value) -> Vec<(String, String)> {
    const AMBIGUOUS: &[&str] = &[
        "yes", "no", "y", "n", "on", "off", "Yes", "NO", "On", "OFF", "0755", "010", "1_000",
        "0b101",
    ];
    let text = to_yaml(object);
    let mut out = Vec::new();
    for word in AMBIGUOUS {
        let quoted = format!("\"{word}\"");
        for (at, _) in text.match_indices(&quoted) {
            let variant = format!("{}{word}{}", &text[..at], &text[at + quoted.len()..]);
            out.push((format!("unquote {quoted} at byte {at}"), variant));
        }
    }
    out
}

fn verifies(verifier: &Verifier, object: &Value) -> bool {
    verifier
        .verify_object(object)
        .is_ok_and(|v| v.is_verified())
}

/// Parsing (as kubectl's input) then verifying; a parse refusal is a rejection.
fn text_verifies(verifier: &Verifier, text: &str) -> Result<bool, String> {
    let file = load_reader(
        Source::Named("variant".into()),
        "variant.yaml".into(),
        text.as_bytes(),
        &Limits::default(),
    )
    .map_err(|e| e.to_string())?;
    Ok(verifier.verify_documents(&file.documents).is_verified())
}

#[derive(Default)]
struct Tally {
    must_reject: usize,
    rejected: usize,
    benign: usize,
    passed: usize,
    wrong: Vec<String>,
}

impl Tally {
    fn reject(&mut self, fixture: &str, what: &str, accepted: bool) {
        self.must_reject += 1;
        if accepted {
            self.wrong.push(format!("{fixture}: ACCEPTED {what}"));
        } else {
            self.rejected += 1;
        }
    }

    fn benign(&mut self, fixture: &str, what: &str, result: Result<bool, String>) {
        self.benign += 1;
        match result {
            Ok(true) => self.passed += 1,
            Ok(false) => self
                .wrong
                .push(format!("{fixture}: benign {what} did not verify")),
            Err(e) => self
                .wrong
                .push(format!("{fixture}: benign {what} did not load: {e}")),
        }
    }
}

fn run(fixture: &Fixture, tally: &mut Tally) {
    let kube = fixture.verifier.clone().with_tolerances(Tolerances {
        profiles: IgnoreProfile::Kubernetes.into(),
        ..Tolerances::default()
    });
    for (i, object) in fixture.objects.iter().enumerate() {
        let name = format!(
            "{} {}/{}",
            fixture.label, object["kind"], object["metadata"]["name"]
        );
        assert!(
            verifies(&fixture.verifier, object),
            "{name} does not verify"
        );
        for case in object_edits(object) {
            // The object's identity may change with the edit (a renamed object is "not in
            // the message"): a rejection all the same. An edit that no longer yields a
            // Kubernetes object is refused before verification.
            let accepted =
                verifies(&fixture.verifier, &case.object) || verifies(&kube, &case.object);
            tally.reject(&name, &case.what, accepted);
        }
        let other = &fixture.objects[(i + 1) % fixture.objects.len()];
        for case in codec_edits(object, other) {
            tally.reject(&name, &case.what, verifies(&fixture.verifier, &case.object));
        }
        // live-object edits under the kubernetes profile
        let kind = object["kind"].as_str().unwrap();
        let mut o = object.clone();
        o["status"] = json!({"phase": "Approved"});
        let status_tolerated = matches!(kind, "Deployment" | "Service" | "PodDisruptionBudget");
        if status_tolerated {
            tally.benign(
                &name,
                "status of a kind with a status subresource",
                Ok(verifies(&kube, &o)),
            );
        } else {
            tally.reject(
                &name,
                "status on a kind without a status subresource",
                verifies(&kube, &o),
            );
        }
        // the object with `applied` as its last-applied-configuration
        let with_last_applied = |applied: &Value| {
            let mut o = object.clone();
            annotations(&mut o).insert(
                "kubectl.kubernetes.io/last-applied-configuration".into(),
                json!(applied.to_string()),
            );
            o
        };
        let mut applied = object.clone();
        applied["metadata"]["labels"]["sneaky"] = json!("x");
        tally.reject(
            &name,
            "last-applied-configuration that differs",
            verifies(&kube, &with_last_applied(&applied)),
        );
        tally.benign(
            &name,
            "last-applied-configuration of the signed manifest",
            Ok(verifies(&kube, &with_last_applied(object))),
        );
        let mut o = object.clone();
        o["metadata"]["uid"] = json!("0f1e2d3c");
        o["metadata"]["resourceVersion"] = json!("42");
        tally.benign(
            &name,
            "server metadata under the kubernetes profile",
            Ok(verifies(&kube, &o)),
        );
        // YAML 1.1 vs 1.2: unquoting a signed quoted scalar that kubectl would read as a
        // bool or a number must not verify (the reader refuses it, naming the field).
        for (what, text) in unquoted_texts(object) {
            let accepted = text_verifies(&fixture.verifier, &text).unwrap_or(false);
            tally.reject(&name, &what, accepted);
        }
        // re-encodings
        for (what, text) in benign_texts(object) {
            tally.benign(&name, &what, text_verifies(&fixture.verifier, &text));
        }
    }
}

#[test]
fn every_single_step_tampering_is_rejected_and_every_re_encoding_verifies() {
    let stack = stack::Stack::start();
    let fixtures = [key_fixture(), keyless_fixture(&stack)];
    let mut tally = Tally::default();
    for fixture in &fixtures {
        run(fixture, &mut tally);
    }
    println!(
        "tamper matrix: {} of {} must-reject edits rejected; {} of {} benign re-encodings verified",
        tally.rejected, tally.must_reject, tally.passed, tally.benign
    );
    assert!(tally.must_reject >= 300, "only {} cases", tally.must_reject);
    assert!(
        tally.wrong.is_empty(),
        "{} wrong verdicts:\n{}",
        tally.wrong.len(),
        tally.wrong.join("\n")
    );
}

/// Signer counting (issue 21, items 5 and 8), self-contained: key-signed objects with
/// several signature sets against attestor policies with `count` and nested sets.
///
/// * **one key counted twice** — one key seen bare and inside a certificate, inside two
///   certificates with different subjects, or one signature accepted by a key entry and by
///   an entry pinning a certificate of that key, must not reach `count: 2`; two different
///   keys must;
/// * **nested sets** — `count: 2` over `[alice, {count: 1, entries: [alice, bob]}]` must
///   admit alice and bob (either order) and deny alice alone or twice; a nested set with
///   `count: 2` consumes two signers.
mod signer_counting {
    use mansign::Limits;
    use mansign::annotations::{AnnotationDomain, EmbedMode, SignatureSet, embed};
    use mansign::manifest::{build_message, parse_documents};
    use mansign::verify::{
        AttestorEntry, AttestorPolicy, AttestorSet, CertificateAttestor, TrustedKey, Verifier,
    };
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::EncodePrivateKey as _;
    use serde_json::Value;

    const DOC: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: counted\n  namespace: team-a\ndata:\n  mode: strict\n";

    struct Key(p256::ecdsa::SigningKey);

    impl Key {
        fn new() -> Key {
            Key(p256::ecdsa::SigningKey::random(&mut rand_core::OsRng))
        }

        fn entry(&self, name: &str) -> AttestorEntry {
            AttestorEntry::Keys(vec![TrustedKey::new(name, *self.0.verifying_key())])
        }
    }

    struct Ca {
        params: rcgen::CertificateParams,
        key: rcgen::KeyPair,
        pem: String,
    }

    fn ca(name: &str) -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { params, key, pem }
    }

    /// A code-signing certificate named `cn` for `key`, issued by `issuer` (self-signed
    /// without one).
    fn certificate(key: &Key, cn: &str, issuer: Option<&Ca>) -> String {
        let pkcs8 = key.0.to_pkcs8_der().unwrap();
        let pair = rcgen::KeyPair::try_from(pkcs8.as_bytes()).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 1, 1);
        match issuer {
            None => params.self_signed(&pair).unwrap().pem(),
            Some(ca) => params
                .signed_by(&pair, &rcgen::Issuer::from_params(&ca.params, &ca.key))
                .unwrap()
                .pem(),
        }
    }

    fn chain(name: &str, ca: &Ca) -> AttestorEntry {
        AttestorEntry::Certificate(CertificateAttestor::new(name, None, Some(&ca.pem)).unwrap())
    }

    fn pinned(name: &str, pem: &str) -> AttestorEntry {
        AttestorEntry::Certificate(CertificateAttestor::new(name, Some(pem), None).unwrap())
    }

    fn nested(count: Option<usize>, entries: Vec<AttestorEntry>) -> AttestorEntry {
        AttestorEntry::Nested(AttestorSet::new(count, entries).unwrap())
    }

    fn policy(count: Option<usize>, entries: Vec<AttestorEntry>) -> AttestorPolicy {
        AttestorPolicy::new(vec![AttestorSet::new(count, entries).unwrap()]).unwrap()
    }

    /// DOC signed once per (key, certificate) in `signatures`, in that order.
    fn signed(signatures: &[(&Key, Option<&str>)]) -> Value {
        let mut value = parse_documents(DOC, &Limits::default())
            .unwrap()
            .remove(0)
            .1;
        let message = build_message([&value]);
        let sets: Vec<SignatureSet> = signatures
            .iter()
            .enumerate()
            .map(|(index, (key, certificate))| {
                let signature: p256::ecdsa::DerSignature = key.0.sign(&message);
                SignatureSet {
                    index,
                    signature: signature.as_bytes().to_vec(),
                    certificate_pem: certificate.map(str::to_string),
                    bundle: None,
                }
            })
            .collect();
        embed(
            &mut value,
            &AnnotationDomain::default(),
            &message,
            &sets,
            EmbedMode::Replace,
            &Limits::default(),
        )
        .unwrap();
        value
    }

    fn accepted(policy: AttestorPolicy, object: &Value) -> bool {
        Verifier::for_policy(policy)
            .verify_object(object)
            .is_ok_and(|v| v.is_verified())
    }

    /// (what, policy, object, must be admitted)
    type Case = (&'static str, AttestorPolicy, Value, bool);

    fn one_key_counted_twice() -> Vec<Case> {
        let (a, b) = (Key::new(), Key::new());
        let (team, other) = (ca("team CA"), ca("other CA"));
        let a_team = certificate(&a, "alice", Some(&team));
        let a_other = certificate(&a, "not-alice", Some(&other));
        let b_team = certificate(&b, "bob", Some(&team));
        let b_other = certificate(&b, "bob", Some(&other));
        let a_self = certificate(&a, "alice", None);
        let key_and_ca = || policy(Some(2), vec![a.entry("a"), chain("team", &team)]);
        let two_cas = || policy(Some(2), vec![chain("team", &team), chain("other", &other)]);
        vec![
            (
                "key bare (set 0) and in a certificate (set 1)",
                key_and_ca(),
                signed(&[(&a, None), (&a, Some(&a_team))]),
                false,
            ),
            (
                "key in a certificate (set 0) and bare (set 1)",
                key_and_ca(),
                signed(&[(&a, Some(&a_team)), (&a, None)]),
                false,
            ),
            (
                "key in two certificates with different subjects",
                two_cas(),
                signed(&[(&a, Some(&a_team)), (&a, Some(&a_other))]),
                false,
            ),
            (
                "one signature, a key entry and an entry pinning a certificate of that key",
                policy(Some(2), vec![a.entry("a"), pinned("alice", &a_self)]),
                signed(&[(&a, None)]),
                false,
            ),
            (
                "key bare and in two certificates, three entries",
                policy(
                    Some(2),
                    vec![a.entry("a"), chain("team", &team), chain("other", &other)],
                ),
                signed(&[(&a, None), (&a, Some(&a_team)), (&a, Some(&a_other))]),
                false,
            ),
            (
                "two keys, one bare and one in a certificate",
                key_and_ca(),
                signed(&[(&a, None), (&b, Some(&b_team))]),
                true,
            ),
            (
                "two keys in certificates of two CAs",
                two_cas(),
                signed(&[(&a, Some(&a_team)), (&b, Some(&b_other))]),
                true,
            ),
        ]
    }

    fn nested_sets() -> Vec<Case> {
        let (alice, bob, carol) = (Key::new(), Key::new(), Key::new());
        let issue = || {
            policy(
                Some(2),
                vec![
                    alice.entry("alice"),
                    nested(Some(1), vec![alice.entry("alice"), bob.entry("bob")]),
                ],
            )
        };
        let two_of_nested = || {
            policy(
                None,
                vec![
                    alice.entry("alice"),
                    nested(None, vec![bob.entry("bob"), carol.entry("carol")]),
                ],
            )
        };
        let siblings = || {
            policy(
                None,
                vec![
                    nested(Some(1), vec![alice.entry("alice"), bob.entry("bob")]),
                    nested(None, vec![alice.entry("alice")]),
                ],
            )
        };
        vec![
            (
                "alice and bob",
                issue(),
                signed(&[(&alice, None), (&bob, None)]),
                true,
            ),
            (
                "bob and alice",
                issue(),
                signed(&[(&bob, None), (&alice, None)]),
                true,
            ),
            ("alice only", issue(), signed(&[(&alice, None)]), false),
            (
                "alice twice",
                issue(),
                signed(&[(&alice, None), (&alice, None)]),
                false,
            ),
            ("bob only", issue(), signed(&[(&bob, None)]), false),
            (
                "nested 2-of-2 with one of its signers",
                two_of_nested(),
                signed(&[(&alice, None), (&bob, None)]),
                false,
            ),
            (
                "nested 2-of-2 with both of its signers",
                two_of_nested(),
                signed(&[(&alice, None), (&bob, None), (&carol, None)]),
                true,
            ),
            (
                "two nested sets, one signer for both",
                siblings(),
                signed(&[(&alice, None)]),
                false,
            ),
            (
                "two nested sets, the first must leave alice to the second",
                siblings(),
                signed(&[(&alice, None), (&bob, None)]),
                true,
            ),
        ]
    }

    #[test]
    fn signer_counting_categories_have_no_wrong_verdicts() {
        let mut wrong = Vec::new();
        for (category, cases) in [
            ("one key counted twice", one_key_counted_twice()),
            ("nested sets", nested_sets()),
        ] {
            let (mut must_reject, mut wrongly_accepted, mut must_admit, mut wrongly_denied) =
                (0, 0, 0, 0);
            for (what, policy, object, admit) in cases {
                let verdict = accepted(policy, &object);
                if admit {
                    must_admit += 1;
                    if !verdict {
                        wrongly_denied += 1;
                        wrong.push(format!("{category}: DENIED {what}"));
                    }
                } else {
                    must_reject += 1;
                    if verdict {
                        wrongly_accepted += 1;
                        wrong.push(format!("{category}: ACCEPTED {what}"));
                    }
                }
            }
            println!(
                "tamper matrix: {category}: {must_reject} must-reject cases, \
                 {wrongly_accepted} wrongly accepted; {must_admit} must-admit cases, \
                 {wrongly_denied} wrongly denied"
            );
        }
        assert!(
            wrong.is_empty(),
            "{} wrong verdicts:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

// ---- Category "kind selector forms" (issue 21 item 1) --------------------------------
//
// Every form of a Kyverno `kinds` entry that selects the object (Kind, Kind/*, Kind.*,
// version/Kind[/*], group/version/Kind[/*], wildcards in each part: kyverno/kyverno v1.19.0
// pkg/utils/kube/kind.go ParseKindSelector, pkg/utils/match/kind.go CheckKind) must apply
// the rule, so an unsigned PolicyException of each served group/version is denied by the
// webhook and fails offline, in a ManifestPolicy and in a Kyverno ClusterPolicy alike. Every
// form that selects only a subresource or nothing (Kind/status, */*/Kind, group/Kind,
// Kind.group.tld, five parts) must be refused when the policy loads: a selector that loads
// and matches nothing lets everything through. Self-contained: no stack, no signing.

mod kind_selector_forms {
    use mansign::admission::{Outcome, ReviewOptions, Reviewer};
    use mansign::policy::{LoadOptions, RequestContext, load_str};
    use serde_json::{Value, json};
    use std::path::Path;

    const SERVED: &[(&str, &str)] = &[
        ("kyverno.io", "v2"),
        ("kyverno.io", "v2beta1"),
        ("policies.kyverno.io", "v1"),
        ("policies.kyverno.io", "v1beta1"),
        ("policies.kyverno.io", "v1alpha1"),
    ];

    fn key() -> String {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/kyverno/keys/ecdsa-pub-1.pem");
        std::fs::read_to_string(path).unwrap()
    }

    fn indent(text: &str, by: usize) -> String {
        text.lines()
            .map(|l| format!("{}{l}\n", " ".repeat(by)))
            .collect()
    }

    fn manifest_policy(kind: &str) -> String {
        format!(
            "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: p\nspec:\n  match:\n    kinds: [{kind:?}]\n  attestors:\n  - entries:\n    - keys:\n        publicKeys: |\n{}",
            indent(&key(), 10)
        )
    }

    fn kyverno_policy(kind: &str) -> String {
        format!(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n  rules:\n  - name: r\n    match:\n      any:\n      - resources:\n          kinds: [{kind:?}]\n    validate:\n      failureAction: Enforce\n      manifests:\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |\n{}",
            indent(&key(), 16)
        )
    }

    fn exception(group: &str, version: &str) -> Value {
        json!({
            "apiVersion": format!("{group}/{version}"),
            "kind": "PolicyException",
            "metadata": {"name": "let-me-in", "namespace": "kube-system"},
            "spec": {"exceptions": [{"policyName": "*", "ruleNames": ["*"]}]},
        })
    }

    fn review(object: &Value, group: &str, version: &str) -> Vec<u8> {
        crate::common::mallory_creates_exception(
            "00000000-0000-4000-8000-000000000001",
            object,
            (group, version),
            &json!("let-me-in"),
            &json!("kube-system"),
        )
    }

    /// The selector forms that select a PolicyException of `group`/`version`.
    fn selecting(group: &str, version: &str) -> Vec<String> {
        let k = "PolicyException";
        let mut forms: Vec<String> = [
            k.to_string(),
            format!("{k}/*"),
            format!("{k}.*"),
            "*".into(),
            "*/*".into(),
            format!("*/{k}"),
            format!("*/{k}/*"),
            format!("*/{k}.*"),
            format!("{version}/{k}"),
            format!("{version}/{k}/*"),
            format!("{version}/{k}.*"),
            format!("{group}/{version}/{k}"),
            format!("{group}/*/{k}"),
            format!("{group}/{version}/{k}/*"),
            format!("{group}/*/{k}/*"),
            format!("{group}/*/{k}.*"),
            format!("*/*/{k}/*"),
            format!("{group}/*/*"),
            "Policy*".into(),
            "*Exception".into(),
            "?olicyException".into(),
            format!("{group}/v*/{k}"),
            format!("*.io/*/{k}/*"),
        ]
        .into();
        forms.dedup();
        forms
    }

    /// Forms Kyverno reads as a subresource only, or as nothing: refused when loaded.
    const REFUSED: &[&str] = &[
        "PolicyException/status",
        "PolicyException.status",
        "v2/PolicyException/status",
        "v2/PolicyException.status",
        "kyverno.io/v2/PolicyException/status",
        "kyverno.io/*/PolicyException/s*",
        "*/*/PolicyException",
        "*/v2/PolicyException",
        "kyverno.io/PolicyException",
        "PolicyException.kyverno.io",
        "PolicyException.policies.kyverno.io",
        "*/status",
        "*/scale",
        "a/b/c/d/e",
        "kyverno.io//PolicyException",
        "v10/PolicyException",
        "",
    ];

    #[test]
    fn kind_selector_forms_apply_the_rule_or_are_refused() {
        let mut cases = 0;
        let mut wrong = Vec::new();
        for (group, version) in SERVED {
            let object = exception(group, version);
            for form in selecting(group, version) {
                for (format, text) in [
                    ("ManifestPolicy", manifest_policy(&form)),
                    ("ClusterPolicy", kyverno_policy(&form)),
                ] {
                    cases += 1;
                    let set =
                        match load_str("p.yaml", &text, Path::new("."), &LoadOptions::default()) {
                            Ok(set) => set,
                            Err(e) => {
                                // Not a wrong accept, but a form Kyverno reads must load.
                                wrong.push(format!("{format} {form:?}: refused: {e}"));
                                continue;
                            }
                        };
                    let offline = set
                        .verify_object(&object, &RequestContext::default())
                        .unwrap();
                    if offline.rules.is_empty() || offline.is_verified() {
                        wrong.push(format!(
                            "{format} {form:?}: {group}/{version} offline ACCEPTED: {offline}"
                        ));
                    }
                    let reviewed = Reviewer::new(set, ReviewOptions::default())
                        .review(&review(&object, group, version));
                    if reviewed.decision.outcome != Outcome::Denied {
                        wrong.push(format!(
                            "{format} {form:?}: {group}/{version} webhook ACCEPTED: {:?} {}",
                            reviewed.decision.outcome, reviewed.decision.message
                        ));
                    }
                }
            }
        }
        for form in REFUSED {
            for (format, text) in [
                ("ManifestPolicy", manifest_policy(form)),
                ("ClusterPolicy", kyverno_policy(form)),
            ] {
                cases += 1;
                match load_str("p.yaml", &text, Path::new("."), &LoadOptions::default()) {
                    Err(e) => {
                        let e = e.to_string();
                        if !e.contains("kinds[0]") {
                            wrong.push(format!("{format} {form:?}: refusal names no field: {e}"));
                        }
                    }
                    Ok(_) => wrong.push(format!(
                        "{format} {form:?}: ACCEPTED at load (it selects no object)"
                    )),
                }
            }
        }
        println!(
            "tamper matrix: kind selector forms: {cases} cases, {} wrongly accepted",
            wrong.len()
        );
        assert!(cases >= 200, "only {cases} cases");
        assert!(
            wrong.is_empty(),
            "{} wrong:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Where mansign's model of the API server was wrong (issue 21, items 3, 4, 6, 7): each
// class a category with its own counts, every case an AdmissionReview shaped as the API
// server sends it (tests/it/common/admission_fixture.rs), answered by the Reviewer.

use crate::common::admission_fixture;

mod api_server_model {
    use super::admission_fixture::{Key, decide, key, reviewer, sign, with_server_metadata};
    use mansign::admission::{Outcome, Reviewer};
    use serde_json::{Value, json};

    /// Must-reject and benign counts of one category.
    #[derive(Default)]
    struct Category {
        must_reject: usize,
        wrongly_accepted: Vec<String>,
        benign: usize,
        wrongly_denied: Vec<String>,
    }

    impl Category {
        fn reject(&mut self, what: String, outcome: Outcome, message: &str) {
            self.must_reject += 1;
            if outcome.is_allowed() {
                self.wrongly_accepted
                    .push(format!("ACCEPTED {what} ({outcome:?}: {message})"));
            }
        }

        fn benign(&mut self, what: String, outcome: Outcome, message: &str) {
            self.benign += 1;
            if !outcome.is_allowed() {
                self.wrongly_denied
                    .push(format!("denied benign {what}: {message}"));
            }
        }
    }

    /// One object of each kind the API server model covers (workloads, a Service, a
    /// Namespace, a PVC, a PodDisruptionBudget, a custom resource).
    const WORKLOADS: &str = include_str!("../../testdata/tamper-matrix/workloads.yaml");

    const KUBERNETES: &str = "  ignoreProfile: kubernetes\n";

    /// One named edit of an object.
    type Edit = (&'static str, Box<dyn Fn(&mut Value)>);

    /// A category's name and the check that fills its counts.
    type Check<'a> = (&'static str, &'a dyn Fn(&mut Category));

    /// The edit that sets the label `key` to `value`.
    fn set_label(key: &'static str, value: &'static str) -> Box<dyn Fn(&mut Value)> {
        Box::new(move |v: &mut Value| {
            meta_map(v, "labels").insert(key.into(), json!(value));
        })
    }

    fn meta_map<'a>(v: &'a mut Value, map: &str) -> &'a mut serde_json::Map<String, Value> {
        v["metadata"]
            .as_object_mut()
            .unwrap()
            .entry(map)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .unwrap()
    }

    fn label(v: &Value) -> String {
        format!(
            "{}/{}",
            v["kind"].as_str().unwrap(),
            v["metadata"]["name"].as_str().unwrap()
        )
    }

    /// Status writes: every field the kind's status strategy keeps from the request, changed
    /// one at a time, must be denied; a write of status alone must be allowed.
    fn status_writes(r: &Reviewer, objects: &[Value], c: &mut Category) {
        // Which metadata each kind's status strategy takes from the stored object
        // (src/admission/status_write.rs): those edits cannot arrive, so are not cases.
        let from_stored = |kind: &str, field: &str| match kind {
            "Deployment" => field == "labels",
            "Pod" => field == "ownerReferences",
            _ => false,
        };
        for signed in objects {
            let kind = signed["kind"].as_str().unwrap();
            let mut stored = with_server_metadata(signed, true);
            stored["status"] = json!({"observedGeneration": 1, "phase": "Active"});
            let (outcome, _, message) = decide(r, &stored, "UPDATE", Some("status"));
            c.benign(format!("{} status only", label(signed)), outcome, &message);
            let edits: [Edit; 5] = [
                (
                    "labels",
                    Box::new(|v: &mut Value| {
                        meta_map(v, "labels").insert("app".into(), json!("payments"));
                    }),
                ),
                (
                    "labels",
                    Box::new(|v: &mut Value| {
                        meta_map(v, "labels").insert("team".into(), json!("platform"));
                    }),
                ),
                (
                    "annotations",
                    Box::new(|v: &mut Value| {
                        meta_map(v, "annotations").insert("example.com/owner".into(), json!("x"));
                    }),
                ),
                (
                    "finalizers",
                    Box::new(|v: &mut Value| {
                        v["metadata"]["finalizers"] = json!(["example.com/keep"]);
                    }),
                ),
                (
                    "ownerReferences",
                    Box::new(|v: &mut Value| {
                        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1",
                        "kind": "ConfigMap", "name": "x", "uid": "0a1b2c3d"}]);
                    }),
                ),
            ];
            for (field, edit) in &edits {
                if from_stored(kind, field) {
                    continue;
                }
                let mut v = stored.clone();
                edit(&mut v);
                let (outcome, _, message) = decide(r, &v, "UPDATE", Some("status"));
                c.reject(
                    format!("{} status write changing {field}", label(signed)),
                    outcome,
                    &message,
                );
            }
            if kind == "Widget" {
                // An unknown kind keeps everything the request sends: its spec too.
                let mut v = stored.clone();
                v["spec"] = json!({"size": 300});
                let (outcome, _, message) = decide(r, &v, "UPDATE", Some("status"));
                c.reject(
                    format!("{} status write changing spec", label(signed)),
                    outcome,
                    &message,
                );
            }
        }
    }

    fn find<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
        objects.iter().find(|o| o["kind"] == kind).unwrap()
    }

    /// Service and pod-template defaults: only the value the API server sets for this
    /// object is tolerated.
    fn defaults(r: &Reviewer, objects: &[Value], c: &mut Category) {
        let service = with_server_metadata(find(objects, "Service"), false);
        let allocated = |ip: &str, family: &str| {
            let mut v = service.clone();
            v["spec"]["clusterIP"] = json!(ip);
            v["spec"]["clusterIPs"] = json!([ip]);
            v["spec"]["ipFamilies"] = json!([family]);
            v["spec"]["ipFamilyPolicy"] = json!("SingleStack");
            v["spec"]["type"] = json!("ClusterIP");
            v["spec"]["sessionAffinity"] = json!("None");
            v["spec"]["internalTrafficPolicy"] = json!("Cluster");
            v["spec"]["ports"][0]["protocol"] = json!("TCP");
            v
        };
        for (ip, family) in [("10.96.0.10", "IPv4"), ("fd00:10:96::a", "IPv6")] {
            let (outcome, _, message) = decide(r, &allocated(ip, family), "CREATE", None);
            c.benign(format!("Service allocated {ip}"), outcome, &message);
        }
        let base = allocated("10.96.0.10", "IPv4");
        let service_edits: Vec<(&str, Value)> = vec![
            (
                "clusterIP None (headless)",
                json!({"clusterIP": "None", "clusterIPs": ["None"]}),
            ),
            (
                "clusterIP empty",
                json!({"clusterIP": "", "clusterIPs": [""]}),
            ),
            (
                "RequireDualStack",
                json!({"ipFamilyPolicy": "RequireDualStack",
                "ipFamilies": ["IPv4", "IPv6"], "clusterIPs": ["10.96.0.10", "fd00::a"]}),
            ),
            (
                "PreferDualStack",
                json!({"ipFamilyPolicy": "PreferDualStack"}),
            ),
            (
                "ipFamilies IPv6,IPv4",
                json!({"ipFamilyPolicy": "RequireDualStack",
                "clusterIP": "fd00::a", "ipFamilies": ["IPv6", "IPv4"],
                "clusterIPs": ["fd00::a", "10.96.0.10"]}),
            ),
            ("family not the address's", json!({"ipFamilies": ["IPv6"]})),
            (
                "second address",
                json!({"clusterIPs": ["10.96.0.10", "10.96.0.11"]}),
            ),
            (
                "clusterIPs not the clusterIP",
                json!({"clusterIPs": ["10.96.0.11"]}),
            ),
            ("type NodePort", json!({"type": "NodePort"})),
            ("type LoadBalancer", json!({"type": "LoadBalancer"})),
            (
                "sessionAffinity ClientIP",
                json!({"sessionAffinity": "ClientIP"}),
            ),
            (
                "internalTrafficPolicy Local",
                json!({"internalTrafficPolicy": "Local"}),
            ),
            (
                "type ExternalName",
                json!({"type": "ExternalName", "externalName": "evil.example"}),
            ),
        ];
        for (what, patch) in service_edits {
            let mut v = base.clone();
            for (k, val) in patch.as_object().unwrap() {
                v["spec"][k] = val.clone();
            }
            let (outcome, _, message) = decide(r, &v, "CREATE", None);
            c.reject(format!("Service {what}"), outcome, &message);
        }
        // A valid address the client chose: its manager owns the field (the API server's
        // field manager runs before the allocator), or the request has no managedFields
        // to show the address allocated.
        for (what, owned) in [
            ("clusterIP", json!({"f:spec": {"f:clusterIP": {}}})),
            ("clusterIPs", json!({"f:spec": {"f:clusterIPs": {}}})),
            ("ipFamilies", json!({"f:spec": {"f:ipFamilies": {}}})),
        ] {
            let mut v = base.clone();
            v["metadata"]["managedFields"][0]["fieldsV1"] = owned;
            let (outcome, _, message) = decide(r, &v, "CREATE", None);
            c.reject(
                format!("Service {what} 10.96.0.10 owned by the client's manager"),
                outcome,
                &message,
            );
        }
        let mut unattributed = base.clone();
        unattributed["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let (outcome, _, message) = decide(r, &unattributed, "CREATE", None);
        c.reject(
            "Service clusterIP without managedFields".into(),
            outcome,
            &message,
        );
        let mut udp = base.clone();
        udp["spec"]["ports"][0]["protocol"] = json!("UDP");
        let (outcome, _, message) = decide(r, &udp, "CREATE", None);
        c.reject("Service port protocol UDP".into(), outcome, &message);

        // Pull policies: the default follows the image reference (SetDefaults_Container).
        let key = key();
        for (image, right, wrong) in [
            ("registry.example/api:latest", "Always", "IfNotPresent"),
            ("registry.example/api", "Always", "IfNotPresent"),
            ("registry.example:5000/team/api", "Always", "IfNotPresent"),
            ("registry.example/api:1.4.2", "IfNotPresent", "Always"),
            ("registry.example/api:1.4.2", "IfNotPresent", "Never"),
            (
                "registry.example/api@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "IfNotPresent",
                "Never",
            ),
        ] {
            let manifests = format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: team-a}}\n\
                 spec:\n  containers: [{{name: c, image: \"{image}\"}}]\n---\n\
                 apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: team-a}}\n\
                 spec:\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    \
                 metadata: {{labels: {{app: d}}}}\n    spec:\n      \
                 containers: [{{name: c, image: \"{image}\"}}]\n"
            );
            let signed = sign(&key, &manifests);
            let pulls = reviewer(&key, KUBERNETES);
            for object in &signed {
                let containers = if object["kind"] == "Pod" {
                    "/spec/containers/0"
                } else {
                    "/spec/template/spec/containers/0"
                };
                for (policy, benign) in [(right, true), (wrong, false)] {
                    let mut v = with_server_metadata(object, false);
                    v.pointer_mut(containers).unwrap()["imagePullPolicy"] = json!(policy);
                    let (outcome, _, message) = decide(&pulls, &v, "CREATE", None);
                    let what = format!("{} {image} imagePullPolicy {policy}", label(object));
                    if benign {
                        c.benign(what, outcome, &message);
                    } else {
                        c.reject(what, outcome, &message);
                    }
                }
            }
        }
    }

    /// Namespace objects: the API server's create is allowed; every edit of what was
    /// signed, and a Namespace claiming a namespace, is denied.
    fn namespaces(r: &Reviewer, objects: &[Value], c: &mut Category) {
        let mut created = with_server_metadata(find(objects, "Namespace"), false);
        meta_map(&mut created, "labels")
            .insert("kubernetes.io/metadata.name".into(), json!("team-a"));
        created["spec"] = json!({"finalizers": ["kubernetes"]});
        created["status"] = json!({"phase": "Active"});
        for op in ["CREATE", "UPDATE"] {
            let (outcome, _, message) = decide(r, &created, op, None);
            c.benign(
                format!("Namespace {op} as the API server sends it"),
                outcome,
                &message,
            );
        }
        let edits: Vec<Edit> = vec![
            (
                "enforce privileged",
                set_label("pod-security.kubernetes.io/enforce", "privileged"),
            ),
            (
                "enforce baseline",
                set_label("pod-security.kubernetes.io/enforce", "baseline"),
            ),
            (
                "enforce-version pinned",
                set_label("pod-security.kubernetes.io/enforce-version", "v1.0"),
            ),
            (
                "istio injection label",
                set_label("istio-injection", "disabled"),
            ),
            (
                "enforce label removed",
                Box::new(|v: &mut Value| {
                    meta_map(v, "labels").remove("pod-security.kubernetes.io/enforce");
                }),
            ),
            (
                "name label of another namespace",
                set_label("kubernetes.io/metadata.name", "kube-system"),
            ),
            (
                "extra finalizer",
                Box::new(|v: &mut Value| {
                    v["spec"]["finalizers"] = json!(["kubernetes", "example.com/hold"]);
                }),
            ),
            (
                "annotation added",
                Box::new(|v: &mut Value| {
                    meta_map(v, "annotations").insert(
                        "scheduler.alpha.kubernetes.io/node-selector".into(),
                        json!("role=infra"),
                    );
                }),
            ),
            (
                "claims a namespace",
                Box::new(|v: &mut Value| {
                    v["metadata"]["namespace"] = json!("team-a");
                }),
            ),
            (
                "claims another namespace",
                Box::new(|v: &mut Value| {
                    v["metadata"]["namespace"] = json!("kube-system");
                }),
            ),
        ];
        for (what, edit) in &edits {
            let mut v = created.clone();
            edit(&mut v);
            let (outcome, _, message) = decide(r, &v, "CREATE", None);
            c.reject(format!("Namespace {what}"), outcome, &message);
        }
    }

    /// GitOps labels unbound: no added label on any kind, no installation id; the tracking
    /// id naming the object itself is still tolerated.
    fn gitops_unbound(key: &Key, objects: &[Value], c: &mut Category) {
        let r = reviewer(key, "  ignoreProfile: kubernetes,argocd,flux\n");
        let more = sign(
            key,
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n\
             metadata: {name: view-extra}\nrules: []\n---\n\
             apiVersion: kyverno.io/v2\nkind: PolicyException\n\
             metadata: {name: allow, namespace: team-a}\nspec: {exceptions: []}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: team-a}\n\
             data: {a: '1'}\n",
        );
        for signed in objects.iter().chain(&more) {
            let live = with_server_metadata(signed, false);
            let group = signed["apiVersion"]
                .as_str()
                .unwrap()
                .rsplit_once('/')
                .map_or("", |(g, _)| g);
            let tracking = format!(
                "shop:{group}/{}:{}/{}",
                signed["kind"].as_str().unwrap(),
                signed["metadata"]["namespace"].as_str().unwrap_or(""),
                signed["metadata"]["name"].as_str().unwrap()
            );
            let mut tracked = live.clone();
            meta_map(&mut tracked, "annotations")
                .insert("argocd.argoproj.io/tracking-id".into(), json!(tracking));
            let (outcome, _, message) = decide(&r, &tracked, "CREATE", None);
            c.benign(
                format!("{} tracking id unbound", label(signed)),
                outcome,
                &message,
            );
            for (map, key, value) in [
                ("labels", "app.kubernetes.io/instance", "shop"),
                ("labels", "kustomize.toolkit.fluxcd.io/name", "apps"),
                (
                    "labels",
                    "kustomize.toolkit.fluxcd.io/namespace",
                    "flux-system",
                ),
                ("annotations", "argocd.argoproj.io/installation-id", "prod"),
            ] {
                let mut v = tracked.clone();
                meta_map(&mut v, map).insert(key.into(), json!(value));
                let (outcome, _, message) = decide(&r, &v, "CREATE", None);
                c.reject(
                    format!("{} unbound {key}", label(signed)),
                    outcome,
                    &message,
                );
            }
        }
    }

    #[test]
    fn api_server_model_categories_have_no_wrong_verdict() {
        let key = key();
        let objects = sign(&key, WORKLOADS);
        let r = reviewer(&key, KUBERNETES);
        let checks: [Check; 4] = [
            ("status writes per kind", &|c| {
                status_writes(&r, &objects, c)
            }),
            ("Service and pod-template defaults", &|c| {
                defaults(&r, &objects, c)
            }),
            ("Namespace objects", &|c| namespaces(&r, &objects, c)),
            ("GitOps labels unbound", &|c| {
                gitops_unbound(&key, &objects, c)
            }),
        ];
        let categories: Vec<(&str, Category)> = checks
            .iter()
            .map(|(name, check)| {
                let mut c = Category::default();
                check(&mut c);
                (*name, c)
            })
            .collect();
        let mut wrong = Vec::new();
        for (name, c) in &categories {
            println!(
                "tamper matrix: {name}: {} of {} must-reject cases rejected, {} wrongly \
                 accepted; {} of {} benign cases allowed",
                c.must_reject - c.wrongly_accepted.len(),
                c.must_reject,
                c.wrongly_accepted.len(),
                c.benign - c.wrongly_denied.len(),
                c.benign
            );
            assert!(c.must_reject >= 10, "{name}: only {} cases", c.must_reject);
            wrong.extend(c.wrongly_accepted.iter().map(|w| format!("{name}: {w}")));
            wrong.extend(c.wrongly_denied.iter().map(|w| format!("{name}: {w}")));
        }
        assert!(
            wrong.is_empty(),
            "{} wrong verdicts:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------
// The crypto path (issue 35, items 1, 2, 3 and 8): keyless signatures made by a Sigstore
// instance of the test (tests/it/common/test_instance.rs), each case one fault, each
// category with benign controls that must verify. Self-contained: no stack.
mod crypto_path {
    use crate::common::admission_fixture::key;
    use crate::common::test_instance::{
        IDENTITY, ISSUER, SIGNING_TIME, Signed, TestInstance, Validity,
    };
    use mansign::conformance::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
    use mansign::policy::{KeyObject, KeyReference, LoadOptions, ResolvedKeys, load_str_with_keys};
    use mansign::trust::TrustRoot;
    use mansign::verify::verify_certificate_set;
    use serde_json::{Value, json};

    #[derive(Default)]
    struct Category {
        must_reject: usize,
        wrongly_accepted: Vec<String>,
        benign: usize,
        wrongly_denied: Vec<String>,
    }

    impl Category {
        fn reject(&mut self, what: String, accepted: bool) {
            self.must_reject += 1;
            if accepted {
                self.wrongly_accepted.push(format!("ACCEPTED {what}"));
            }
        }
        fn benign(&mut self, what: String, accepted: bool) {
            self.benign += 1;
            if !accepted {
                self.wrongly_denied.push(format!("DENIED {what}"));
            }
        }
    }

    fn cold(trust: &TrustRoot, s: &Signed) -> bool {
        verify_certificate_set(trust, &s.message, &s.set).is_ok()
    }

    fn bundle_ok(trust: &TrustRoot, bundle: &Value, message: &[u8]) -> bool {
        SigstoreBundle::from_json(&bundle.to_string()).is_ok_and(|b| {
            BundleVerifier::new(trust)
                .verify(
                    &b,
                    BundleArtifact::Bytes(message),
                    &ExpectedSigner::identity(IDENTITY, ISSUER),
                )
                .is_ok()
        })
    }

    fn closed(mut v: Validity) -> Validity {
        v.valid_for = ("2020-01-01T00:00:00Z", Some("2030-01-01T00:00:00Z"));
        v
    }

    const FUTURE_ROOT: Validity = Validity {
        root: ((2026, 1, 1), (2040, 1, 1)),
        ..Validity::GOOD
    };

    fn chain_validity(c: &mut Category) {
        let faults = [
            ("intermediate expired", Validity::EXPIRED_INTERMEDIATE),
            ("root expired, window open", Validity::EXPIRED_ROOT),
            ("intermediate not yet valid", Validity::FUTURE_INTERMEDIATE),
            ("root not yet valid", FUTURE_ROOT),
        ];
        for (name, validity) in faults.into_iter().chain([("good chain", Validity::GOOD)]) {
            let good = name == "good chain";
            let mut case = |what: &str, accepted: bool| {
                let what = format!("{name}: {what}");
                if good {
                    c.benign(what, accepted)
                } else {
                    c.reject(what, accepted)
                }
            };
            let instance = TestInstance::new(validity);
            let trust = instance.trust_root();
            let signed = instance.sign("hashedrekord", true);
            case("hashedrekord annotations, cold", cold(&trust, &signed));
            case(
                "hashedrekord annotations, second sight",
                cold(&trust, &signed),
            );
            case(
                "standard bundle v0.1",
                bundle_ok(&trust, &signed.bundle_json(), &signed.message),
            );
            let legacy = TestInstance::new(closed(validity));
            case(
                "legacy rekord, retired authority",
                cold(&legacy.trust_root(), &legacy.sign("rekord", false)),
            );
        }
        // The vouched path at a later time the intermediate no longer covers.
        let instance = TestInstance::new(Validity::INTERMEDIATE_EXPIRES_DURING_LEAF);
        let trust = instance.trust_root();
        let signed = instance.sign("hashedrekord", true);
        c.benign(
            "vouched: first sight before the intermediate expired".into(),
            cold(&trust, &signed),
        );
        let later = signed.with_set(instance.log.at(&signed.set, SIGNING_TIME + 86_400));
        c.reject(
            "vouched: the same certificate after the intermediate expired".into(),
            cold(&trust, &later),
        );
    }

    fn sct_by_kind(c: &mut Category) {
        let current = TestInstance::new(Validity::GOOD);
        let trust = current.trust_root();
        c.reject(
            "no SCT, hashedrekord, current authority".into(),
            cold(&trust, &current.sign("hashedrekord", false)),
        );
        c.reject(
            "no SCT, rekord, current authority".into(),
            cold(&trust, &current.sign("rekord", false)),
        );
        c.reject(
            "embedded SCT, rekord (unchecked there)".into(),
            cold(&trust, &current.sign("rekord", true)),
        );
        c.benign(
            "embedded SCT, hashedrekord".into(),
            cold(&trust, &current.sign("hashedrekord", true)),
        );
        let retired = TestInstance::new(closed(Validity::GOOD));
        let trust = retired.trust_root();
        c.reject(
            "no SCT, hashedrekord, retired authority".into(),
            cold(&trust, &retired.sign("hashedrekord", false)),
        );
        c.benign(
            "no SCT, rekord, retired authority, logged before it retired".into(),
            cold(&trust, &retired.sign("rekord", false)),
        );
        for start in ["2021-01-01T00:00:00Z", "2025-06-01T11:59:59Z"] {
            let mut root = retired.trusted_root_json();
            let mut successor =
                TestInstance::new(Validity::GOOD).trusted_root_json()["certificateAuthorities"][0]
                    .clone();
            successor["validFor"] = json!({"start": start});
            root["certificateAuthorities"]
                .as_array_mut()
                .unwrap()
                .push(successor);
            let trust = TrustRoot::from_json(&root.to_string()).unwrap();
            c.reject(
                format!("no SCT, rekord, logged after a successor authority started {start}"),
                cold(&trust, &retired.sign("rekord", false)),
            );
        }
    }

    fn bundle_counts(c: &mut Category) {
        let instance = TestInstance::new(Validity::GOOD);
        let trust = instance.trust_root();
        let signed = instance.sign("hashedrekord", true);
        let with = |entries: usize, timestamps: usize| {
            let mut b = signed.bundle_json();
            let entry = b["verificationMaterial"]["tlogEntries"][0].clone();
            b["verificationMaterial"]["tlogEntries"] = Value::Array(vec![entry; entries]);
            if timestamps > 0 {
                b["verificationMaterial"]["timestampVerificationData"] = json!({
                    "rfc3161Timestamps": vec![json!({"signedTimestamp": "MAA="}); timestamps]
                });
            }
            b
        };
        for entries in [33, 64, 1_000, 5_000] {
            c.reject(
                format!("{entries} log entries"),
                bundle_ok(&trust, &with(entries, 0), &signed.message),
            );
        }
        for timestamps in [33, 1_000] {
            c.reject(
                format!("{timestamps} RFC 3161 timestamps"),
                bundle_ok(&trust, &with(1, timestamps), &signed.message),
            );
        }
        c.benign(
            "one log entry".into(),
            bundle_ok(&trust, &with(1, 0), &signed.message),
        );
    }

    fn pem_key_lists(c: &mut Category) {
        let (a, b) = (key().public_key_pem, key().public_key_pem);
        let cut = |p: &str| p[..p.find("-----END").unwrap()].to_string();
        let begin_only = |p: &str| p.lines().next().unwrap().to_string() + "\n";
        let cases: Vec<(&str, String, bool)> = vec![
            (
                "second key lost its END line",
                format!("{a}{}", cut(&b)),
                false,
            ),
            (
                "first key lost its END line",
                format!("{}{b}", cut(&a)),
                false,
            ),
            (
                "a lone BEGIN line after the keys",
                format!("{a}{b}{}", begin_only(&b)),
                false,
            ),
            ("text after the keys", format!("{a}{b}trailing\n"), false),
            ("text between the keys", format!("{a}junk\n{b}"), false),
            ("text before the keys", format!("comment\n{a}{b}"), false),
            ("two complete keys", format!("{a}{b}"), true),
            (
                "two complete keys, blank lines between",
                format!("{a}\n\n{b}"),
                true,
            ),
        ];
        let reference =
            KeyReference::new(KeyObject::Secret, "cosign-system", "release", "cosign.pub").unwrap();
        for (what, keys, admit) in cases {
            let indented: String = keys
                .lines()
                .map(|l| format!("                {l}\n"))
                .collect();
            let policy = |public_keys: &str| {
                format!(
                    "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {{name: keys}}\n\
                     spec:\n  rules:\n  - name: signed\n    match: {{any: [{{resources: {{kinds: \
                     [ConfigMap]}}}}]}}\n    validate:\n      manifests:\n        attestors:\n        \
                     - entries:\n          - keys:\n              publicKeys: {public_keys}"
                )
            };
            let options = LoadOptions::default();
            let file = load_str_with_keys(
                "p.yaml",
                &policy(&format!("|\n{indented}")),
                ".".as_ref(),
                &options,
                &ResolvedKeys::new(),
            )
            .is_ok();
            let mut resolved = ResolvedKeys::new();
            resolved.insert(reference.clone(), Ok(keys.clone()));
            let cluster = load_str_with_keys(
                "p.yaml",
                &policy("k8s://cosign-system/release"),
                ".".as_ref(),
                &options,
                &resolved,
            )
            .is_ok_and(|set| set.unresolved_keys().is_empty());
            for (path, loaded) in [("policy file", file), ("cluster Secret", cluster)] {
                let what = format!("{what} ({path})");
                if admit {
                    c.benign(what, loaded)
                } else {
                    c.reject(what, loaded)
                }
            }
        }
    }

    #[test]
    fn crypto_path_categories_have_no_wrong_verdict() {
        type Check = (&'static str, fn(&mut Category));
        let checks: [Check; 4] = [
            ("Fulcio chain validity at the signing time", chain_validity),
            ("SCT whatever the log entry kind", sct_by_kind),
            ("bundle entry and timestamp counts", bundle_counts),
            ("truncated PEM key lists", pem_key_lists),
        ];
        let mut wrong = Vec::new();
        for (name, check) in checks {
            let mut c = Category::default();
            check(&mut c);
            println!(
                "tamper matrix: {name}: {} of {} must-reject cases rejected, {} wrongly \
                 accepted; {} of {} benign cases allowed",
                c.must_reject - c.wrongly_accepted.len(),
                c.must_reject,
                c.wrongly_accepted.len(),
                c.benign - c.wrongly_denied.len(),
                c.benign
            );
            assert!(c.must_reject >= 5 && c.benign >= 1, "{name}: too few cases");
            wrong.extend(c.wrongly_accepted.iter().map(|w| format!("{name}: {w}")));
            wrong.extend(c.wrongly_denied.iter().map(|w| format!("{name}: {w}")));
        }
        assert!(
            wrong.is_empty(),
            "{} wrong verdicts:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

// Requests the reviewer cannot answer (issue 35, item 4): a client can shape an object the
// API server forwards so that mansign cannot read it. Each such request whose uid can be
// read must be ANSWERED `allowed: false` (HTTP 200, the uid echoed): an HTTP error leaves
// it to the webhook's failurePolicy, which under `Ignore` admits it ("wrongly accepted"
// below). A body that is no AdmissionReview v1 at all keeps its HTTP error (not a case).

mod unanswerable_requests {
    use super::admission_fixture::{key, review_body, reviewer};
    use serde_json::{Value, json};

    const UID: &str = "3a7c1d2e-0b4f-4c5d-9e8f-1a2b3c4d5e6f";

    /// The review of an unsigned PolicyException whose condition value is `value`.
    fn exception_review(value: Value) -> Vec<u8> {
        review_body(
            &json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
                    "metadata": {"name": "x", "namespace": "team-a"},
                    "spec": {"conditions": {"all": [{"key": "k", "operator": "Equals",
                                                     "value": value}]}}}),
            "CREATE",
            None,
        )
    }

    /// The review with its condition value written as `value` (JSON text): a nesting too
    /// deep for a `Value` (or the stack) to hold.
    fn raw_exception_review(value: &str) -> Vec<u8> {
        let text = String::from_utf8(exception_review(json!("VALUE"))).unwrap();
        assert!(text.contains("\"VALUE\""));
        text.replace("\"VALUE\"", value).into_bytes()
    }

    fn nested(depth: usize) -> String {
        format!("{}\"bottom\"{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    /// The review with `edit` applied to its `request` (as JSON).
    fn edited_request(edit: impl Fn(&mut Value)) -> Vec<u8> {
        let mut review: Value = serde_json::from_slice(&exception_review(json!("x"))).unwrap();
        edit(&mut review["request"]);
        serde_json::to_vec(&review).unwrap()
    }

    #[test]
    fn every_unanswerable_request_with_a_uid_is_refused_not_left_to_the_failure_policy() {
        let r = reviewer(&key(), "  match: {kinds: [PolicyException]}\n");
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for depth in [70, 200, 10_000] {
            cases.push((
                format!("condition value nested {depth} deep"),
                raw_exception_review(&nested(depth)),
            ));
        }
        let deep_list = format!("{}{}", "[".repeat(100), "]".repeat(100));
        cases.push((
            "condition value lists nested 100 deep".into(),
            raw_exception_review(&deep_list),
        ));
        cases.push((
            "condition value nested 1,000,000 deep, unterminated".into(),
            raw_exception_review(&"[".repeat(1_000_000)),
        ));
        let text = String::from_utf8(exception_review(json!("x"))).unwrap();
        cases.push((
            "body cut short".into(),
            text.as_bytes()[..text.len() - 10].to_vec(),
        ));
        cases.push((
            "body larger than the limit".into(),
            exception_review(json!("<".repeat(3 * 1024 * 1024))),
        ));
        cases.push((
            "request without operation".into(),
            edited_request(|r| {
                r.as_object_mut().unwrap().remove("operation");
            }),
        ));
        cases.push((
            "request with an unknown operation".into(),
            edited_request(|r| r["operation"] = json!("PATCH")),
        ));
        cases.push((
            "request without userInfo".into(),
            edited_request(|r| {
                r.as_object_mut().unwrap().remove("userInfo");
            }),
        ));
        cases.push((
            "CREATE without object".into(),
            edited_request(|r| {
                r.as_object_mut().unwrap().remove("object");
            }),
        ));
        cases.push((
            "object null".into(),
            edited_request(|r| r["object"] = Value::Null),
        ));
        cases.push((
            "kind not an object".into(),
            edited_request(|r| r["kind"] = json!("PolicyException")),
        ));
        let (mut refused, mut wrong) = (0, Vec::new());
        for (what, body) in &cases {
            let reviewed = r.review(body);
            match &reviewed.response {
                Ok(answer) => {
                    let answer: Value = serde_json::from_slice(answer).unwrap();
                    let response = &answer["response"];
                    if response["uid"] == UID && response["allowed"] == false {
                        refused += 1;
                    } else {
                        wrong.push(format!("{what}: answered {response}"));
                    }
                }
                Err(bad) => wrong.push(format!(
                    "{what}: HTTP 400 [{}], left to failurePolicy",
                    bad.code
                )),
            }
        }
        println!(
            "tamper matrix: unanswerable requests: {refused} of {} refused by their uid, {} \
             wrongly accepted (left to failurePolicy: Ignore)",
            cases.len(),
            wrong.len()
        );
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
