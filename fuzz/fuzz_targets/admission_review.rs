//! The admission handler: `Reviewer::review` on arbitrary request bodies, under a policy
//! with a keyless and a key rule (seeds: AdmissionReview requests wrapping the signed
//! fixtures of testdata/). It must answer every body, never panic. And whenever
//! `Reviewer::review_cached` answers (the verification cache, warmed by earlier inputs,
//! holds the body's signatures), its answer must be exactly the one a reviewer without a
//! cache gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::admission::{ReviewOptions, Reviewer};
use mansign::policy::{LoadOptions, load_str};
use mansign::trust::TrustRoot;
use mansign::verify::VerificationCache;
use std::path::Path;
use std::sync::{Arc, OnceLock};

const POLICY: &str = r#"apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata:
  name: fuzz
spec:
  match:
    kinds: [ConfigMap, PolicyException]
  ignoreProfile: kubernetes
  attestors:
  - entries:
    - keyless:
        issuer: https://accounts.google.com
        subject: hkitahar@redhat.com
"#;

fn policies() -> mansign::policy::PolicySet {
    let options = LoadOptions {
        trust_root: Some(Arc::new(TrustRoot::public_good().expect("embedded root"))),
        limits: mansign::Limits::default(),
        ..LoadOptions::default()
    };
    load_str("fuzz policy", POLICY, Path::new("/nonexistent"), &options)
        .expect("the fuzz policy loads")
}

/// The reviewer under test: its caches stay warm across inputs.
fn reviewer() -> &'static Reviewer {
    static REVIEWER: OnceLock<Reviewer> = OnceLock::new();
    REVIEWER.get_or_init(|| Reviewer::new(policies(), ReviewOptions::default()))
}

/// The same policies with caches that remember nothing: every answer fully verified.
fn uncached() -> &'static Reviewer {
    static REVIEWER: OnceLock<Reviewer> = OnceLock::new();
    REVIEWER.get_or_init(|| {
        let mut set = policies();
        for rule in &mut set.rules {
            rule.verifier = rule
                .verifier
                .clone()
                .with_cache(Arc::new(VerificationCache::new(0)));
        }
        Reviewer::new(set, ReviewOptions::default())
    })
}

fuzz_target!(|data: &[u8]| {
    if let Some(cached) = reviewer().review_cached(data) {
        let full = uncached().review(data);
        assert_eq!(
            cached.response.as_ref().map_err(|b| b.code),
            full.response.as_ref().map_err(|b| b.code)
        );
        assert_eq!(format!("{:?}", cached.decision), format!("{:?}", full.decision));
    }
    let _ = reviewer().review(data);
});
