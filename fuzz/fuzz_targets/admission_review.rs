//! The admission handler: `Reviewer::review` on arbitrary request bodies, under a policy
//! with a keyless and a key rule (seeds: AdmissionReview requests wrapping the signed
//! fixtures of testdata/). It must answer every body, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::admission::{ReviewOptions, Reviewer};
use mansign::policy::{LoadOptions, load_str};
use mansign::trust::TrustRoot;
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

fn reviewer() -> &'static Reviewer {
    static REVIEWER: OnceLock<Reviewer> = OnceLock::new();
    REVIEWER.get_or_init(|| {
        let options = LoadOptions {
            trust_root: Some(Arc::new(TrustRoot::public_good().expect("embedded root"))),
            limits: mansign::Limits::default(),
            ..LoadOptions::default()
        };
        let policies = load_str("fuzz policy", POLICY, Path::new("/nonexistent"), &options)
            .expect("the fuzz policy loads");
        Reviewer::new(policies, ReviewOptions::default())
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = reviewer().review(data);
});
