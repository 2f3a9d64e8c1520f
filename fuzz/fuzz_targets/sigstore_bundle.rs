//! The Sigstore bundle path: a `.sigstore.json` bundle parsed and verified offline against
//! the embedded public-good root, for the conformance suite's artifact and identity
//! (seeds: testdata/sigstore-conformance/bundle-verify/*/bundle.sigstore.json).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::conformance::{BundleArtifact, BundleVerifier, ExpectedSigner, SigstoreBundle};
use mansign::trust::TrustRoot;
use std::sync::OnceLock;

const ARTIFACT: &[u8] = include_bytes!("../../testdata/sigstore-conformance/bundle-verify/a.txt");
const BEACON: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";

fn trust() -> &'static TrustRoot {
    static ROOT: OnceLock<TrustRoot> = OnceLock::new();
    ROOT.get_or_init(|| TrustRoot::public_good().expect("embedded root"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(json) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(bundle) = SigstoreBundle::from_json(json) else {
        return;
    };
    let signer = ExpectedSigner::identity(BEACON, "https://token.actions.githubusercontent.com");
    let _ = BundleVerifier::new(trust()).verify(&bundle, BundleArtifact::Bytes(ARTIFACT), &signer);
});
