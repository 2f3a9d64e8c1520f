//! Published advisories of mansign's predecessors and peers, replayed against mansign's
//! formats: one row per advisory (or per class mansign found itself), naming the upstream,
//! the class, and the test of this repository that covers the class in depth. Each row
//! replays the attack offline (a Sigstore instance made by the test,
//! `tests/it/common/test_instance.rs`, or the real signed fixtures) and runs a control
//! (the same input without the attack) that must verify, so a row cannot pass by refusing
//! everything. `cargo test --test it advisories:: -- --nocapture` prints the table; the
//! test fails if any row's attack is accepted or its control refused.

use crate::common;
use common::rekor_log::TestLog;
use common::test_instance::{IDENTITY, ISSUER, Signed, TestInstance, Validity};
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, extract};
use mansign::conformance::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
use mansign::policy::{LoadOptions, RequestContext, ResolvedKeys, load_str_with_keys};
use mansign::trust::TrustRoot;
use mansign::verify::verify_certificate_set;
use serde_json::{Value, json};
use std::sync::Arc;

/// What a replay found: whether the attack was accepted, and whether the control verified.
struct Replay {
    attack_accepted: bool,
    control_verified: bool,
    /// Why the attack was refused (the first line of the error), for the table.
    refusal: String,
}

struct Row {
    id: &'static str,
    upstream: &'static str,
    class: &'static str,
    covered_by: &'static str,
    replay: fn() -> Replay,
}

fn replay<E: std::fmt::Display>(attack: Result<(), E>, control: Result<(), E>) -> Replay {
    Replay {
        attack_accepted: attack.is_ok(),
        control_verified: control.is_ok(),
        refusal: match attack {
            Ok(()) => "ACCEPTED".into(),
            Err(e) => e.to_string().chars().take(90).collect(),
        },
    }
}

fn cold(instance: &TestInstance, signed: &Signed) -> Result<(), String> {
    verify_certificate_set(&instance.trust_root(), &signed.message, &signed.set)
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", e.code()))
}

fn bundle(trust: &TrustRoot, bundle: &Value, message: &[u8]) -> Result<(), String> {
    let bundle = SigstoreBundle::from_json(&bundle.to_string()).map_err(|e| e.to_string())?;
    BundleVerifier::new(trust)
        .verify(
            &bundle,
            BundleArtifact::Bytes(message),
            &ExpectedSigner::identity(IDENTITY, ISSUER),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn expired_ca(validity: Validity) -> Replay {
    let (bad, good) = (
        TestInstance::new(validity),
        TestInstance::new(Validity::GOOD),
    );
    replay(
        cold(&bad, &bad.sign("hashedrekord", true)),
        cold(&good, &good.sign("hashedrekord", true)),
    )
}

fn expired_intermediate() -> Replay {
    expired_ca(Validity::EXPIRED_INTERMEDIATE)
}

fn expired_root() -> Replay {
    expired_ca(Validity::EXPIRED_ROOT)
}

fn thousands_of_tlog_entries() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    let mut many = signed.bundle_json();
    let entry = many["verificationMaterial"]["tlogEntries"][0].clone();
    many["verificationMaterial"]["tlogEntries"] = Value::Array(vec![entry; 2_000]);
    let trust = instance.trust_root();
    replay(
        bundle(&trust, &many, &signed.message),
        bundle(&trust, &signed.bundle_json(), &signed.message),
    )
}

fn thousands_of_timestamps() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    let mut many = signed.bundle_json();
    many["verificationMaterial"]["timestampVerificationData"] =
        json!({"rfc3161Timestamps": vec![json!({"signedTimestamp": "MAA="}); 2_000]});
    let trust = instance.trust_root();
    replay(
        bundle(&trust, &many, &signed.message),
        bundle(&trust, &signed.bundle_json(), &signed.message),
    )
}

/// The set of `signed` whose log entry is `other`'s (another signature, another
/// certificate, another artifact hash), with a valid SET over it.
fn with_entry_of(log: &TestLog, signed: &Signed, other: &Signed) -> Signed {
    let body = &other.set.bundle.as_ref().unwrap().payload.body;
    let mut set = signed.set.clone();
    set.bundle.as_mut().unwrap().payload.body = body.clone();
    log.sign_as_is(&mut set);
    Signed {
        message: signed.message.clone(),
        set,
        leaf_der: signed.leaf_der.clone(),
        leaf_key: signed.leaf_key.clone(),
    }
}

fn entry_of_another_signature_annotations() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    let (signed, other) = (
        instance.sign("hashedrekord", true),
        instance.sign("hashedrekord", true),
    );
    let forged = with_entry_of(&instance.log, &signed, &other);
    replay(cold(&instance, &forged), cold(&instance, &signed))
}

fn entry_of_another_signature_bundle() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    let (signed, other) = (
        instance.sign("hashedrekord", true),
        instance.sign("hashedrekord", true),
    );
    let forged = with_entry_of(&instance.log, &signed, &other);
    let trust = instance.trust_root();
    replay(
        bundle(&trust, &forged.bundle_json(), &signed.message),
        bundle(&trust, &signed.bundle_json(), &signed.message),
    )
}

fn subject_regexp_ignored() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    let verdict = |regexp: &str| -> Result<(), String> {
        let text = format!(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {{name: keyless}}\nspec:\n  \
             validationFailureAction: Enforce\n  rules:\n  - name: signed\n    match: {{any: \
             [{{resources: {{kinds: [ConfigMap]}}}}]}}\n    validate:\n      manifests:\n        \
             attestors:\n        - entries:\n          - keyless:\n              subjectRegExp: \
             '{regexp}'\n              issuer: {ISSUER}\n"
        );
        let options = LoadOptions::default().with_trust_root(Arc::new(instance.trust_root()));
        let set = load_str_with_keys(
            "p.yaml",
            &text,
            ".".as_ref(),
            &options,
            &ResolvedKeys::new(),
        )
        .map_err(|e| e.to_string())?;
        let doc = mansign::manifest::Document::new(
            mansign::manifest::DocumentOrigin {
                source: mansign::manifest::Source::Named("signed".into()),
                index: 0,
                item: None,
            },
            signed.object(),
        )
        .unwrap();
        let object = set.verify_document(&doc, &RequestContext::default());
        match object.rules[0].verdict.result.as_ref() {
            Ok(_) => Ok(()),
            Err(r) => Err(format!("{}: {r}", r.code())),
        }
    };
    replay(
        verdict(r"https://github\.com/evil/.*"),
        verdict(r"https://github\.com/acme/.*"),
    )
}

fn rekord_without_sct() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    replay(
        cold(&instance, &instance.sign("rekord", false)),
        cold(&instance, &instance.sign("hashedrekord", true)),
    )
}

fn truncated_key_list() -> Replay {
    let (alice, bob) = (
        common::admission_fixture::key(),
        common::admission_fixture::key(),
    );
    let load = |keys: &str| -> Result<(), String> {
        let indented: String = keys
            .lines()
            .map(|l| format!("                {l}\n"))
            .collect();
        let text = format!(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {{name: keys}}\nspec:\n  \
             rules:\n  - name: signed\n    match: {{any: [{{resources: {{kinds: [ConfigMap]}}}}]}}\n    \
             validate:\n      manifests:\n        attestors:\n        - entries:\n          - keys:\n              \
             publicKeys: |\n{indented}"
        );
        mansign::policy::load_str("p.yaml", &text, ".".as_ref(), &LoadOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let cut = &bob.public_key_pem[..bob.public_key_pem.find("-----END").unwrap()];
    replay(
        load(&format!("{}{cut}", alice.public_key_pem)),
        load(&format!("{}{}", alice.public_key_pem, bob.public_key_pem)),
    )
}

/// The annotations of `signed`'s object with `edit` applied, extracted with the defaults.
fn extracted(
    signed: &Signed,
    edit: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> Result<(), String> {
    let mut object = signed.object();
    edit(object["metadata"]["annotations"].as_object_mut().unwrap());
    extract(&object, &AnnotationDomain::default(), &Limits::default())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn many_signature_sets() -> Replay {
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    replay(
        extracted(&signed, |a| {
            let sig = a["cosign.sigstore.dev/signature"].clone();
            for i in 1..=40 {
                a.insert(format!("cosign.sigstore.dev/signature_{i}"), sig.clone());
            }
        }),
        extracted(&signed, |_| {}),
    )
}

fn decompression_bomb() -> Replay {
    use base64::Engine as _;
    use std::io::Write as _;
    let instance = TestInstance::new(Validity::GOOD);
    let signed = instance.sign("hashedrekord", true);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b'a'; 64 * 1024 * 1024]).unwrap();
    let bomb = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    replay(
        extracted(&signed, |a| {
            a.insert("cosign.sigstore.dev/message".into(), json!(bomb));
        }),
        extracted(&signed, |_| {}),
    )
}

const ROWS: &[Row] = &[
    Row {
        id: "GHSA-wfqv-66vq-46rm (CVE-2026-24122)",
        upstream: "cosign",
        class: "Fulcio intermediate expired before the signing time accepted",
        covered_by: "fulcio_chain_validity::an_intermediate_expired_before_the_signing_time_is_refused_on_every_path",
        replay: expired_intermediate,
    },
    Row {
        id: "GHSA-wfqv-66vq-46rm (CVE-2026-24122)",
        upstream: "cosign",
        class: "Fulcio root expired before the signing time accepted (validFor open)",
        covered_by: "fulcio_chain_validity::a_root_expired_before_the_signing_time_is_refused_while_the_window_is_open",
        replay: expired_root,
    },
    Row {
        id: "GHSA-cq38-jh5f-37mq",
        upstream: "sigstore-go",
        class: "bundle with thousands of transparency-log entries (CPU exhaustion)",
        covered_by: "bundle_bounds::verify_bundle_refuses_thousands_of_entries_naming_the_count",
        replay: thousands_of_tlog_entries,
    },
    Row {
        id: "GHSA-cq38-jh5f-37mq",
        upstream: "sigstore-go",
        class: "bundle with thousands of RFC 3161 timestamps (CPU exhaustion)",
        covered_by: "bundle_bounds::a_bundle_with_more_log_entries_or_timestamps_than_the_limit_is_refused_with_the_count",
        replay: thousands_of_timestamps,
    },
    Row {
        id: "GHSA-8gw7-4j42-w388 (CVE-2022-36056)",
        upstream: "cosign",
        class: "Rekor entry of another signature, valid SET, in annotations",
        covered_by: "keyless_verify::rejects_each_tampered_set",
        replay: entry_of_another_signature_annotations,
    },
    Row {
        id: "GHSA-whqx-f9j3-ch6m (CVE-2026-22703)",
        upstream: "cosign",
        class: "bundle whose Rekor entry does not reference its signature or artifact",
        covered_by: "conformance::every_offline_conformance_vector_gets_the_expected_verdict",
        replay: entry_of_another_signature_bundle,
    },
    Row {
        id: "GHSA-46mp-8w32-6g94 (CVE-2025-29778)",
        upstream: "Kyverno",
        class: "keyless subjectRegExp ignored: any subject of the issuer accepted",
        covered_by: "policy_kyverno::keyless_subject_regex_is_anchored",
        replay: subject_regexp_ignored,
    },
    Row {
        id: "GHSA-88jx-383q-w4qc (CVE-2024-29902)",
        upstream: "cosign",
        class: "unbounded number of attached signatures (DoS)",
        covered_by: "advisories (this row: AnnotationError::TooManySets, Limits::max_signature_sets)",
        replay: many_signature_sets,
    },
    Row {
        id: "GHSA-95pr-fxf5-86gv (CVE-2024-29903)",
        upstream: "cosign",
        class: "oversized / decompression-bomb signed payload (DoS)",
        covered_by: "annotations::codec unit test rejects_oversized_values_and_bombs",
        replay: decompression_bomb,
    },
    Row {
        id: "mansign issue 35 item 2",
        upstream: "(mansign review)",
        class: "no SCT accepted when the signer logs a legacy rekord entry",
        covered_by: "legacy_rekord_sct::a_certificate_without_an_sct_is_refused_whatever_the_entry_kind",
        replay: rekord_without_sct,
    },
    Row {
        id: "mansign issue 35 item 8",
        upstream: "Kyverno, kubectl-sigstore (Go pem.Decode)",
        class: "key list whose second block lost its END line read as one key",
        covered_by: "pem_key_lists::a_policy_key_list_whose_second_key_lost_its_end_line_fails_to_load",
        replay: truncated_key_list,
    },
];

#[test]
fn every_replayed_advisory_is_refused_and_its_control_verifies() {
    let mut wrong = Vec::new();
    println!("advisory | upstream | class | mansign test | attack | control");
    for row in ROWS {
        let r = (row.replay)();
        println!(
            "{} | {} | {} | {} | {} | {}",
            row.id,
            row.upstream,
            row.class,
            row.covered_by,
            if r.attack_accepted {
                "ACCEPTED"
            } else {
                "refused"
            },
            if r.control_verified {
                "verified"
            } else {
                "REFUSED"
            },
        );
        println!("    refusal: {}", r.refusal);
        if r.attack_accepted {
            wrong.push(format!("{}: {} was accepted", row.id, row.class));
        }
        if !r.control_verified {
            wrong.push(format!(
                "{}: the control of {} was refused",
                row.id, row.class
            ));
        }
    }
    let accepted = wrong.iter().filter(|w| w.ends_with("was accepted")).count();
    println!(
        "advisories: {} rows, {accepted} wrongly accepted",
        ROWS.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
