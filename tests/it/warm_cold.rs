//! One judgement of a Rekor entry, warm or cold (issue 28): a signature set is judged the
//! same by a verifier that sees its certificate for the first time (the full check through
//! sigstore-verify, `verify/sigstore/adapter.rs`) and by one whose trust root already vouched for
//! that certificate (mansign's own per-set checks, `verify/sigstore/hashedrekord.rs`). The cache
//! may save work, never change a verdict, so an admission answer never depends on which
//! objects the webhook saw before.
//!
//! Every case runs through a fresh (cold) trust root and through a second fresh root that
//! first verified a set with the same certificate (warm), and the two answers (accepted,
//! or the refusal's reason code) must be identical:
//!
//! - every set-tampering case of `tests/it/certificate_cache.rs` (time, SET, message,
//!   signature) and every body tampering a faulty or private log would sign (another
//!   signature, certificate or hash; another or no hash algorithm; duplicate keys; base64
//!   with whitespace, URL-safe or unpadded; other spellings), each logged with a valid SET
//!   by the test's own Rekor log (`tests/it/common/rekor_log.rs`);
//! - the sigstore-conformance vectors (testdata/sigstore-conformance, provenance in
//!   testdata/README.md) that a cosign triple can carry (a message signature, an X.509
//!   certificate, one `hashedrekord` 0.0.1 entry with an inclusion promise), as shipped and
//!   with their body re-logged by the test's log.

use crate::common::rekor_log;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
use mansign::annotations::{RekorBundle, RekorPayload, SignatureSet, SignedAnnotations};
use mansign::trust::TrustRoot;
use mansign::verify::verify_certificate_set;
use rekor_log::{NOT_BEFORE, TestLog, body_json, pgi_json, signed, with_body, with_raw_body};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::path::Path;

/// A verdict as an admission answer shows it: accepted, or the refusal's reason code.
type Judgement = Result<(), &'static str>;

fn judge(trust: &TrustRoot, message: &[u8], set: &SignatureSet) -> Judgement {
    verify_certificate_set(trust, message, set)
        .map(|_| ())
        .map_err(|e| e.code())
}

/// One case: its name, the message and the set judged.
struct Case {
    name: String,
    message: Vec<u8>,
    set: SignatureSet,
}

impl Case {
    fn new(name: impl Into<String>, message: &[u8], set: SignatureSet) -> Self {
        Case {
            name: name.into(),
            message: message.to_vec(),
            set,
        }
    }
}

/// The two answers for one case, and whether the warm one came from the certificate cache.
struct Answers {
    cold: Judgement,
    warm: Judgement,
    cache_hit: bool,
}

/// Judges `case` cold (a fresh root made from `root`) and warm (a fresh root that first
/// verified `prime`, which must verify and leave its certificate vouched for).
fn cold_and_warm(root: &str, prime: &Case, case: &Case) -> Answers {
    let cold_root = TrustRoot::from_json(root).unwrap();
    let cold = judge(&cold_root, &case.message, &case.set);
    let warm_root = TrustRoot::from_json(root).unwrap();
    assert_eq!(
        judge(&warm_root, &prime.message, &prime.set),
        Ok(()),
        "{}: the priming set {} does not verify",
        case.name,
        prime.name
    );
    assert_eq!(warm_root.certificate_cache_stats().entries, 1);
    let hits = warm_root.certificate_cache_stats().hits;
    let warm = judge(&warm_root, &case.message, &case.set);
    Answers {
        cold,
        warm,
        cache_hit: warm_root.certificate_cache_stats().hits > hits,
    }
}

/// Runs every case, returns the answers by name, and fails listing every case whose
/// answers differ.
fn differential(root: &str, prime: &Case, cases: &[Case]) -> Vec<(String, Answers)> {
    let answers: Vec<(String, Answers)> = cases
        .iter()
        .map(|c| (c.name.clone(), cold_and_warm(root, prime, c)))
        .collect();
    let differ: Vec<String> = answers
        .iter()
        .filter(|(_, a)| a.cold != a.warm)
        .map(|(n, a)| format!("{n}: cold {:?}, warm {:?}", a.cold, a.warm))
        .collect();
    assert!(
        differ.is_empty(),
        "a verdict depends on the certificate cache:\n{}",
        differ.join("\n")
    );
    answers
}

fn answer<'a>(answers: &'a [(String, Answers)], name: &str) -> &'a Answers {
    &answers
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no case {name}"))
        .1
}

/// The set-tampering cases of `tests/it/certificate_cache.rs` and the body tamperings.
fn fixture_cases(log: &TestLog, ann: &SignedAnnotations) -> Vec<Case> {
    let set0 = &ann.sets[0];
    let m = ann.message.as_slice();
    let sig_b64 = STANDARD.encode(&set0.signature);
    let pem_b64 = body_json(set0)["spec"]["signature"]["publicKey"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let pem = String::from_utf8(STANDARD.decode(&pem_b64).unwrap()).unwrap();
    let sha256 = hex::encode(Sha256::digest(m));
    let body =
        |name: &str, edit: &dyn Fn(&mut Value)| Case::new(name, m, with_body(log, set0, edit));
    let raw = |name: &str, edit: &dyn Fn(String) -> String| {
        Case::new(name, m, with_raw_body(log, set0, edit))
    };
    let mut tampered_set = set0.clone();
    tampered_set
        .bundle
        .as_mut()
        .unwrap()
        .payload
        .integrated_time += 1;
    let mut other_signature = set0.clone();
    other_signature.signature = ann.sets[1].signature.clone();
    let mut other_message = m.to_vec();
    other_message.extend_from_slice(b"  key5: injected\n");
    let other_pem = ann.sets[1].certificate_pem.clone().unwrap();
    let other_sig = STANDARD.encode(&ann.sets[1].signature);
    let url_safe = URL_SAFE.encode(&set0.signature);
    assert_ne!(url_safe, sig_b64, "the signature's base64 has + or /");
    vec![
        Case::new("as logged", m, set0.clone()),
        Case::new("re-logged a minute later", m, log.at(set0, NOT_BEFORE + 61)),
        Case::new(
            "after the certificate expired",
            m,
            log.at(set0, NOT_BEFORE + 601),
        ),
        Case::new(
            "before the certificate was issued",
            m,
            log.at(set0, NOT_BEFORE - 1),
        ),
        Case::new("a tampered SET", m, tampered_set),
        Case::new("another message", &other_message, set0.clone()),
        Case::new("another set's signature", m, other_signature),
        body("the body logs another signature", &|b| {
            b["spec"]["signature"]["content"] = json!(other_sig);
        }),
        body("the body logs another certificate", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] = json!(STANDARD.encode(&other_pem));
        }),
        body("the body logs another hash", &|b| {
            b["spec"]["data"]["hash"]["value"] = json!(hex::encode(Sha256::digest(b"x")));
        }),
        body("sha512 algorithm with SHA-256(M) as value", &|b| {
            b["spec"]["data"]["hash"]["algorithm"] = json!("sha512");
        }),
        body("sha384 algorithm with SHA-256(M) as value", &|b| {
            b["spec"]["data"]["hash"]["algorithm"] = json!("sha384");
        }),
        body("SHA256 spelled in capitals", &|b| {
            b["spec"]["data"]["hash"]["algorithm"] = json!("SHA256");
        }),
        body("sha-256 spelled with a hyphen", &|b| {
            b["spec"]["data"]["hash"]["algorithm"] = json!("sha-256");
        }),
        body("SHA2_256 spelled as in protobuf", &|b| {
            b["spec"]["data"]["hash"]["algorithm"] = json!("SHA2_256");
        }),
        body("no hash algorithm", &|b| {
            b["spec"]["data"]["hash"]
                .as_object_mut()
                .unwrap()
                .remove("algorithm");
        }),
        body("no hash", &|b| b["spec"]["data"] = json!({})),
        body("the hash in capital hex", &|b| {
            b["spec"]["data"]["hash"]["value"] = json!(sha256.to_uppercase());
        }),
        body("the hash with surrounding whitespace", &|b| {
            b["spec"]["data"]["hash"]["value"] = json!(format!(" {sha256}\n"));
        }),
        body("signature base64 with surrounding whitespace", &|b| {
            b["spec"]["signature"]["content"] = json!(format!(" {sig_b64}\n"));
        }),
        body("signature base64 wrapped over lines", &|b| {
            let (a, z) = sig_b64.split_at(40);
            b["spec"]["signature"]["content"] = json!(format!("{a}\n{z}"));
        }),
        body("signature base64 URL-safe", &|b| {
            b["spec"]["signature"]["content"] = json!(url_safe);
        }),
        body("signature base64 unpadded", &|b| {
            b["spec"]["signature"]["content"] = json!(STANDARD_NO_PAD.encode(&set0.signature));
        }),
        body("publicKey base64 with surrounding whitespace", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] = json!(format!("\t{pem_b64} "));
        }),
        body("publicKey base64 unpadded", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] =
                json!(STANDARD_NO_PAD.encode(pem.as_bytes()));
        }),
        body("publicKey base64 URL-safe", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] = json!(URL_SAFE.encode(pem.as_bytes()));
        }),
        body("publicKey PEM with text around it", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] =
                json!(STANDARD.encode(format!("junk\n{pem}\ntrailer")));
        }),
        body("publicKey PEM with two certificates", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] =
                json!(STANDARD.encode(format!("{pem}{other_pem}")));
        }),
        body("publicKey as a PUBLIC KEY block", &|b| {
            b["spec"]["signature"]["publicKey"]["content"] =
                json!(STANDARD.encode(pem.replace("CERTIFICATE", "PUBLIC KEY")));
        }),
        body("an unknown field in spec", &|b| {
            b["spec"]["extra"] = json!("x")
        }),
        body("signature format x509 in a hashedrekord", &|b| {
            b["spec"]["signature"]["format"] = json!("x509");
        }),
        body("the kind says rekord", &|b| b["kind"] = json!("rekord")),
        body("the version says 0.0.2", &|b| {
            b["apiVersion"] = json!("0.0.2")
        }),
        raw("a duplicate spec", &|b| {
            b.replacen(
                "\"spec\":",
                "\"spec\":{\"data\":{},\"signature\":{}},\"spec\":",
                1,
            )
        }),
        raw("a duplicate hash algorithm", &|b| {
            b.replacen(
                "\"algorithm\":",
                "\"algorithm\":\"sha512\",\"algorithm\":",
                1,
            )
        }),
        raw("a duplicate signature content", &|b| {
            b.replacen(
                "\"content\":",
                &format!("\"content\":\"{other_sig}\",\"content\":"),
                1,
            )
        }),
    ]
}

#[test]
fn every_tampering_of_a_keyless_set_is_judged_the_same_warm_and_cold() {
    let log = TestLog::new();
    let ann = signed();
    let root = log.added_to(pgi_json()).to_string();
    let prime = Case::new("set 0 as logged", &ann.message, ann.sets[0].clone());
    let cases = fixture_cases(&log, &ann);
    let answers = differential(&root, &prime, &cases);
    // The two readings of issue 28, refused both ways.
    for name in [
        "signature base64 with surrounding whitespace",
        "sha512 algorithm with SHA-256(M) as value",
    ] {
        let a = answer(&answers, name);
        assert_eq!(a.cold, Err("malformed-log-entry"), "{name}");
        assert!(a.cache_hit, "{name}: the warm root did not use its cache");
    }
    // Controls: the real set and a re-logged one are accepted, from the cache.
    for name in ["as logged", "re-logged a minute later"] {
        let a = answer(&answers, name);
        assert_eq!(a.cold, Ok(()), "{name}");
        assert!(a.cache_hit, "{name}: the warm root did not use its cache");
    }
    // Every body edited at the certificate's own time went through the warm checks.
    for (name, a) in &answers {
        let logged_now = cases
            .iter()
            .find(|c| &c.name == name)
            .and_then(|c| c.set.bundle.as_ref())
            .is_some_and(|b| b.payload.integrated_time == NOT_BEFORE + 1);
        let hashedrekord = !name.starts_with("the kind") && !name.starts_with("the version");
        let parses = !name.starts_with("a duplicate spec");
        if logged_now && hashedrekord && parses {
            assert!(a.cache_hit, "{name}: the warm root did not use its cache");
        }
    }
}

/// A sigstore-conformance vector as a cosign triple, when it is one: the artifact, the
/// set, the trust root (the vector's own, else production) and the time it was logged.
struct Vector {
    name: String,
    artifact: Vec<u8>,
    set: SignatureSet,
    root: Value,
}

fn vectors() -> Vec<Vector> {
    let dir = Path::new(rekor_log::FIXTURES).join("sigstore-conformance/bundle-verify");
    assert!(dir.is_dir(), "fixture {} is missing", dir.display());
    let production: Value = serde_json::from_str(
        &std::fs::read_to_string(rekor_log::fixture(
            "sigstore-trust-roots/production/trusted_root.json",
        ))
        .unwrap(),
    )
    .unwrap();
    let mut out = vec![];
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let d = e.path();
        let Ok(text) = std::fs::read_to_string(d.join("bundle.sigstore.json")) else {
            continue;
        };
        let Ok(bundle) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let root = match std::fs::read_to_string(d.join("trusted_root.json")) {
            Ok(t) => serde_json::from_str(&t).unwrap(),
            Err(_) => production.clone(),
        };
        let artifact = std::fs::read(d.join("artifact"))
            .or_else(|_| std::fs::read(dir.join("a.txt")))
            .unwrap();
        if let Some(set) = cosign_triple(&bundle) {
            out.push(Vector {
                name: e.file_name().to_string_lossy().into_owned(),
                artifact,
                set,
                root,
            });
        }
    }
    out
}

/// The bundle's message signature, leaf certificate and `hashedrekord` 0.0.1 entry with
/// its SET, as the annotations would carry them; `None` for any other bundle.
fn cosign_triple(b: &Value) -> Option<SignatureSet> {
    let material = &b["verificationMaterial"];
    let leaf = material["certificate"]["rawBytes"]
        .as_str()
        .or_else(|| material["x509CertificateChain"]["certificates"][0]["rawBytes"].as_str())?;
    let leaf = STANDARD.decode(leaf).ok()?;
    let entries = material["tlogEntries"].as_array()?;
    let [entry] = entries.as_slice() else {
        return None;
    };
    if entry["kindVersion"] != json!({"kind": "hashedrekord", "version": "0.0.1"}) {
        return None;
    }
    let set = entry["inclusionPromise"]["signedEntryTimestamp"].as_str()?;
    let signature = STANDARD
        .decode(b["messageSignature"]["signature"].as_str()?)
        .ok()?;
    let number = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<i64>().ok())
            .or_else(|| v.as_i64())
    };
    Some(SignatureSet {
        index: 0,
        signature,
        certificate_pem: Some(pem::encode(&pem::Pem::new("CERTIFICATE", leaf))),
        bundle: Some(RekorBundle {
            signed_entry_timestamp: set.to_string(),
            payload: RekorPayload {
                body: entry["canonicalizedBody"].as_str()?.to_string(),
                integrated_time: number(&entry["integratedTime"])?,
                log_index: number(&entry["logIndex"])?,
                log_id: hex::encode(STANDARD.decode(entry["logId"]["keyId"].as_str()?).ok()?),
            },
        }),
    })
}

/// The canonical body a log would hold for `set` over `artifact`.
fn canonical_body(set: &SignatureSet, artifact: &[u8]) -> Vec<u8> {
    json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(artifact))}},
            "signature": {
                "content": STANDARD.encode(&set.signature),
                "publicKey": {"content": STANDARD.encode(set.certificate_pem.as_ref().unwrap())}
            }
        }
    })
    .to_string()
    .into_bytes()
}

#[test]
fn the_conformance_vectors_are_judged_the_same_warm_and_cold() {
    let log = TestLog::new();
    let vectors = vectors();
    assert!(vectors.len() >= 20, "only {} vectors", vectors.len());
    let (mut primed, mut hits) = (vec![], 0);
    for v in &vectors {
        let root = log.added_to(v.root.clone()).to_string();
        let time = v.set.bundle.as_ref().unwrap().payload.integrated_time;
        // The vector's certificate and signature in a canonical entry of the test's log:
        // what makes the warm root vouch for the certificate.
        let prime = Case::new(
            format!("{} (canonical)", v.name),
            &v.artifact,
            log.logging(&v.set, &canonical_body(&v.set, &v.artifact), time),
        );
        if judge(
            &TrustRoot::from_json(&root).unwrap(),
            &prime.message,
            &prime.set,
        )
        .is_err()
        {
            // No set with this certificate verifies (an untrusted chain, a bad signature):
            // there is no warm root to compare with.
            continue;
        }
        primed.push(v.name.clone());
        let body = rekor_log::body_bytes(&v.set);
        let cases = [
            Case::new(v.name.clone(), &v.artifact, v.set.clone()),
            Case::new(
                format!("{} (re-logged)", v.name),
                &v.artifact,
                log.logging(&v.set, &body, time),
            ),
        ];
        for (_, a) in differential(&root, &prime, &cases) {
            hits += usize::from(a.cache_hit);
        }
    }
    for name in [
        "happy-path-v0.1",
        "happy-path-v0.3",
        "wrong-hashedrekord-artifact_fail",
        "wrong-hashedrekord-entry_fail",
        "set-invalid-signature_fail",
    ] {
        assert!(
            primed.contains(&name.to_string()),
            "{name} was not primed: {primed:?}"
        );
    }
    assert!(
        hits >= primed.len(),
        "the warm roots used their cache {hits} times"
    );
}
