//! Message parsing: the signed message M, YAML or a legacy tar.gz of YAML files (told apart
//! by the gzip magic). Seeds: decoded messages and manifests of testdata/.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mansign::Limits;
use mansign::manifest::parse_message;

fuzz_target!(|data: &[u8]| {
    let _ = parse_message(data, &Limits::default());
});
