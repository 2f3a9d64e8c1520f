//! The policy loader on Kyverno `ClusterPolicy`/`Policy` documents (seeds:
//! the Kyverno policies of testdata/kyverno and examples/policy/). Relative paths resolve
//! under a directory that does not exist, so the target reads no files.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::policy::{LoadOptions, load_str};
use mansign::trust::TrustRoot;
use std::path::Path;
use std::sync::{Arc, OnceLock};

fn options() -> &'static LoadOptions {
    static OPTIONS: OnceLock<LoadOptions> = OnceLock::new();
    OPTIONS.get_or_init(|| {
        LoadOptions::default()
            .with_trust_root(Arc::new(TrustRoot::public_good().expect("embedded root")))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = load_str(
        "fuzz",
        text,
        Path::new("/nonexistent/mansign-fuzz"),
        options(),
    );
});
