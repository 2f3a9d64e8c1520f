//! In-process benchmarks of the verification paths (`cargo bench --bench verify`; results
//! and targets in BENCHMARKS.md). Fixtures: testdata/ (provenance in testdata/README.md).
//!
//! * `keyless/*`: a 2022 kubectl-sigstore keyless ConfigMap (hashedrekord, Fulcio chain,
//!   SCT, SET) against the public-good root of the fixture, through `Verifier::verify_object`
//!   (annotations, message, signature checks, identity, diff): with a new trust root and an
//!   empty set cache each time (`fresh_certificate`), with the certificate already verified
//!   by the root (`cached_certificate`), and with the whole set remembered (`set_cache_hit`);
//! * `key/fresh`: a Deployment signed with a cosign key (one P-256 check, no log), through
//!   the verifier without its cache; `key/p256_signature_only`: that one check alone (the
//!   machine's ECDSA floor); `floor/p384_signature_only`: one P-384 ECDSA check through
//!   aws-lc-rs, the Fulcio intermediate's signature over the keyless fixture's leaf
//!   certificate (the chain check a fresh certificate needs once);
//! * `bundle/production_v0.3`: sigstore-conformance's happy-path v0.3 bundle, the one
//!   `scripts/bench.sh` verifies with sigstore-python and sigstore-js too;
//! * `message/build/N`, `message/parse/N`: the signed message of N Deployments;
//! * `diff/<profile>`: a signed Deployment against its live object (server-populated
//!   metadata, status, defaults) under each ignore profile, signatures from the cache;
//! * `annotations/extract`: decoding the keyless fixture's signature annotations;
//! * `trust/public_good`: loading the embedded public-good trust root (cold start).

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, extract};
use mansign::conformance::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
use mansign::keys;
use mansign::manifest::{
    Document, IgnoreProfile, IgnoreProfiles, Source, Tolerances, build_message, load_inputs,
    load_reader, parse_message,
};
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::trust::TrustRoot;
use mansign::verify::{
    Attestor, IdentityPolicy, KeylessAttestor, TrustedKey, VerificationCache, Verifier,
};
use serde_json::{Value, json};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

const PGI_ROOT: &str = "k8s-manifest-sigstore/_external/sigstore-cosign-v3.0.4/pkg/cosign/testdata/trusted_root_pgi.json";
const KEYLESS_MULTI: &str =
    "k8s-manifest-sigstore/pkg/k8smanifest/testdata/sample-configmap-keyless-multi-signed.yaml";
const BUNDLE_V03: &str = "sigstore-conformance/bundle-verify/happy-path-v0.3/bundle.sigstore.json";
const BUNDLE_ARTIFACT: &str = "sigstore-conformance/bundle-verify/a.txt";
const BEACON: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const GITHUB_ACTIONS: &str = "https://token.actions.githubusercontent.com";

fn testdata(rel: &str) -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata")).join(rel);
    assert!(p.exists(), "fixture testdata/{rel} is missing");
    p
}

fn keyless_object() -> Value {
    let files = load_inputs(&[testdata(KEYLESS_MULTI)], &Limits::default()).unwrap();
    files[0].documents[0].value.clone()
}

fn keyless_verifier(trust: Arc<TrustRoot>, cache_entries: usize) -> Verifier {
    let identity = IdentityPolicy::builder()
        .subject("hkitahar@redhat.com")
        .issuer("https://accounts.google.com")
        .build()
        .unwrap();
    Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(
        trust, identity,
    ))])
    .with_cache(Arc::new(VerificationCache::new(cache_entries)))
}

fn keyless(c: &mut Criterion) {
    let object = keyless_object();
    let root_json = std::fs::read_to_string(testdata(PGI_ROOT)).unwrap();
    let mut g = c.benchmark_group("keyless");
    g.bench_function("fresh_certificate", |b| {
        b.iter_batched(
            || keyless_verifier(Arc::new(TrustRoot::from_json(&root_json).unwrap()), 0),
            |v| assert!(v.verify_object(black_box(&object)).unwrap().is_verified()),
            BatchSize::PerIteration,
        )
    });
    let trust = Arc::new(TrustRoot::from_json(&root_json).unwrap());
    let uncached = keyless_verifier(trust.clone(), 0);
    // The first verification checks the certificate in full, the second uses the cache.
    for _ in 0..2 {
        assert!(uncached.verify_object(&object).unwrap().is_verified());
    }
    assert_eq!(trust.certificate_cache_stats().hits, 1);
    g.bench_function("cached_certificate", |b| {
        b.iter(|| {
            assert!(
                uncached
                    .verify_object(black_box(&object))
                    .unwrap()
                    .is_verified()
            )
        })
    });
    let cached = keyless_verifier(trust, 64);
    assert!(cached.verify_object(&object).unwrap().is_verified());
    g.bench_function("set_cache_hit", |b| {
        b.iter(|| {
            assert!(
                cached
                    .verify_object(black_box(&object))
                    .unwrap()
                    .is_verified()
            )
        })
    });
    g.finish();
}

fn deployment(i: usize) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: team-a
  labels: {{app: web-{i}, tier: frontend}}
spec:
  replicas: 3
  selector:
    matchLabels: {{app: web-{i}}}
  template:
    metadata:
      labels: {{app: web-{i}}}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.{i}
        ports:
        - containerPort: 8080
        resources:
          limits: {{cpu: 500m, memory: 256Mi}}
        env:
        - name: MODE
          value: production
"#
    )
}

fn deployments(n: usize) -> Vec<Document> {
    let text = (0..n).map(deployment).collect::<Vec<_>>().join("---\n");
    load_reader(
        Source::Named("bench.yaml".into()),
        "bench.yaml".into(),
        text.as_bytes(),
        &Limits::default(),
    )
    .unwrap()
    .documents
}

/// One Deployment signed with a fresh cosign key, and that key as an attestor.
fn key_signed() -> (Document, Attestor) {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let mut files = vec![
        load_reader(
            Source::Named("d.yaml".into()),
            "d.yaml".into(),
            deployment(0).as_bytes(),
            &Limits::default(),
        )
        .unwrap(),
    ];
    sign_files(&mut files, &KeySigner::new(key), &SignOptions::default()).unwrap();
    let attestor = Attestor::Key(TrustedKey::from_pem("k", &pair.public_key_pem).unwrap());
    (files.remove(0).documents.remove(0), attestor)
}

fn key(c: &mut Criterion) {
    let (doc, attestor) = key_signed();
    // The ECDSA floor of this machine: one P-256 signature check over M (what a keyless
    // set needs twice even with its certificate vouched for: the SET and the signature).
    let signed = extract(&doc.value, &AnnotationDomain::default(), &Limits::default()).unwrap();
    c.bench_function("key/p256_signature_only", |b| {
        b.iter(|| {
            attestor
                .check(black_box(&signed.message), &signed.sets[0])
                .unwrap()
        })
    });
    let v = Verifier::new(vec![attestor]).with_cache(Arc::new(VerificationCache::new(0)));
    c.bench_function("key/fresh", |b| {
        b.iter(|| assert!(v.verify_document(black_box(&doc)).is_verified()))
    });
}

/// The keyless fixture's leaf certificate (DER) and the Fulcio CA certificate of the
/// fixture's trust root that signed it: (to-be-signed bytes, signature, issuer key point).
fn leaf_and_issuer() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    use base64::Engine as _;
    use x509_cert::Certificate;
    use x509_cert::der::{Decode as _, Encode as _};
    let signed = extract(
        &keyless_object(),
        &AnnotationDomain::default(),
        &Limits::default(),
    )
    .unwrap();
    let leaf_pem = signed.sets[0].certificate_pem.as_deref().unwrap();
    let leaf = Certificate::from_der(pem::parse(leaf_pem).unwrap().contents()).unwrap();
    // ecdsa-with-SHA384 (RFC 5758): the sigstore-intermediate signs leaves with P-384.
    assert_eq!(
        leaf.signature_algorithm.oid.to_string(),
        "1.2.840.10045.4.3.3"
    );
    let tbs = leaf.tbs_certificate.to_der().unwrap();
    let signature = leaf.signature.raw_bytes().to_vec();
    let root: Value =
        serde_json::from_str(&std::fs::read_to_string(testdata(PGI_ROOT)).unwrap()).unwrap();
    let issuers: Vec<Vec<u8>> = root["certificateAuthorities"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|ca| ca["certChain"]["certificates"].as_array().unwrap())
        .map(|c| {
            let der = base64::engine::general_purpose::STANDARD
                .decode(c["rawBytes"].as_str().unwrap())
                .unwrap();
            let cert = Certificate::from_der(&der).unwrap();
            cert.tbs_certificate
                .subject_public_key_info
                .subject_public_key
                .raw_bytes()
                .to_vec()
        })
        .filter(|point| p384_verifies(point, &tbs, &signature))
        .collect();
    assert_eq!(issuers.len(), 1, "exactly one Fulcio CA signed the leaf");
    (tbs, signature, issuers.into_iter().next().unwrap())
}

fn p384_verifies(point: &[u8], message: &[u8], signature: &[u8]) -> bool {
    use aws_lc_rs::signature::{ECDSA_P384_SHA384_ASN1, UnparsedPublicKey};
    UnparsedPublicKey::new(&ECDSA_P384_SHA384_ASN1, point)
        .verify(message, signature)
        .is_ok()
}

fn floor(c: &mut Criterion) {
    // The other fixed point of a fresh keyless certificate: the chain check, one P-384
    // ECDSA signature (aws-lc-rs, as rustls-webpki runs it for sigstore-verify).
    let (tbs, signature, issuer) = leaf_and_issuer();
    c.bench_function("floor/p384_signature_only", |b| {
        b.iter(|| {
            assert!(p384_verifies(
                black_box(&issuer),
                black_box(&tbs),
                black_box(&signature)
            ))
        })
    });
}

fn bundle(c: &mut Criterion) {
    let trust = TrustRoot::public_good().unwrap();
    let limits = Limits::default();
    let bundle = SigstoreBundle::from_file(testdata(BUNDLE_V03), &limits).unwrap();
    let artifact = std::fs::read(testdata(BUNDLE_ARTIFACT)).unwrap();
    let signer = ExpectedSigner::identity(BEACON, GITHUB_ACTIONS);
    let verifier = BundleVerifier::new(&trust);
    c.bench_function("bundle/production_v0.3", |b| {
        b.iter(|| {
            verifier
                .verify(
                    &bundle,
                    BundleArtifact::Bytes(black_box(&artifact)),
                    &signer,
                )
                .unwrap()
        })
    });
}

fn message(c: &mut Criterion) {
    let mut g = c.benchmark_group("message");
    for n in [1, 100, 1000] {
        let docs = deployments(n);
        let values: Vec<&Value> = docs.iter().map(|d| &d.value).collect();
        g.bench_with_input(BenchmarkId::new("build", n), &values, |b, v| {
            b.iter(|| build_message(v.iter().copied()))
        });
        let m = build_message(values.iter().copied());
        g.bench_with_input(BenchmarkId::new("parse", n), &m, |b, m| {
            b.iter(|| parse_message(black_box(m), &Limits::default()).unwrap())
        });
    }
    g.finish();
}

/// The signed Deployment as the API server returns it.
fn live(signed: &Value) -> Value {
    let mut v = signed.clone();
    let meta = &mut v["metadata"];
    meta["uid"] = json!("2f0b8a8e-4c1e-4b8e-9d7a-0c1f2e3d4c5b");
    meta["resourceVersion"] = json!("123456");
    meta["generation"] = json!(4);
    meta["creationTimestamp"] = json!("2026-11-20T10:00:00Z");
    meta["managedFields"] = json!([{"manager": "kubectl", "operation": "Apply",
        "apiVersion": "apps/v1", "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    v["spec"]["revisionHistoryLimit"] = json!(10);
    v["spec"]["progressDeadlineSeconds"] = json!(600);
    v["status"] = json!({"replicas": 3, "readyReplicas": 3, "observedGeneration": 4});
    v
}

fn diff(c: &mut Criterion) {
    let (doc, attestor) = key_signed();
    let object = live(&doc.value);
    let mut g = c.benchmark_group("diff");
    for (name, profile) in [
        ("none", IgnoreProfile::None),
        ("kubernetes", IgnoreProfile::Kubernetes),
        ("kyverno-compat", IgnoreProfile::KyvernoCompat),
        ("kubernetes,argocd", IgnoreProfile::Argocd),
    ] {
        let profiles = if name == "kubernetes,argocd" {
            IgnoreProfiles::of(&[IgnoreProfile::Kubernetes, IgnoreProfile::Argocd])
        } else {
            profile.into()
        };
        let v = Verifier::new(vec![attestor.clone()]).with_tolerances(Tolerances {
            profiles,
            ..Tolerances::default()
        });
        // The signatures come from the set cache: what is measured is reading the
        // annotations and the message, and the comparison.
        let _ = v.verify_object(&object);
        g.bench_function(name, |b| b.iter(|| v.verify_object(black_box(&object))));
    }
    g.finish();
}

fn trust_root(c: &mut Criterion) {
    c.bench_function("trust/public_good", |b| {
        b.iter(|| TrustRoot::public_good().unwrap())
    });
}

fn annotations(c: &mut Criterion) {
    let object = keyless_object();
    let (domain, limits) = (AnnotationDomain::default(), Limits::default());
    c.bench_function("annotations/extract", |b| {
        b.iter(|| extract(black_box(&object), &domain, &limits).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = keyless, key, floor, bundle, message, diff, annotations, trust_root
}
criterion_main!(benches);
