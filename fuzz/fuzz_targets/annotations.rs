//! Annotation decoding: manifests (YAML or JSON) whose cosign annotations are read with
//! the default limits; every document that parses is handed to `extract`. Seeds: the
//! signed fixtures of testdata/.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::Limits;
use mansign::annotations::{AnnotationDomain, extract};
use mansign::manifest::parse_documents;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = Limits::default();
    let Ok(documents) = parse_documents(text, &limits) else {
        return;
    };
    let domain = AnnotationDomain::default();
    for (_, value) in documents {
        let _ = extract(&value, &domain, &limits);
    }
});
