//! Hostile input never panics: deterministic random mutations of a signed manifest go
//! through loading and verification, and every outcome is an error or a verdict.

use mansign::Limits;
use mansign::annotations::{AnnotationDomain, strip_signature_annotations};
use mansign::keys;
use mansign::manifest::{Source, load_reader};
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::verify::{Attestor, TrustedKey, Verifier};
use std::path::PathBuf;

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const DOC: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n  list: \"x\"\n";

#[test]
fn mutated_signed_manifests_never_panic() {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let signer = KeySigner::new(key);
    let trusted = TrustedKey::from_pem("k", &pair.public_key_pem).unwrap();
    let verifier = Verifier::new(vec![Attestor::Key(trusted)]);
    let limits = Limits::default();
    let mut files =
        vec![load_reader(Source::Stdin, PathBuf::from("x"), DOC.as_bytes(), &limits).unwrap()];
    sign_files(&mut files, &signer, &SignOptions::default()).unwrap();
    let signed_text = mansign::manifest::to_yaml(&files[0].documents[0].value);
    let bytes = signed_text.as_bytes().to_vec();
    let domain = AnnotationDomain::default();
    let mut original = files[0].documents[0].value.clone();
    strip_signature_annotations(&mut original, &domain);
    let mut rng = XorShift(0x9e3779b97f4a7c15);
    let alphabet = b"AZaz09+/=:-\n {}[]&*!|>'\"#%@`\\\x00\xff";
    let mut verified = 0;
    for _ in 0..3000 {
        let mut m = bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(m.len());
            match rng.below(3) {
                0 => m[i] = alphabet[rng.below(alphabet.len())],
                1 => {
                    m.remove(i);
                }
                _ => m.insert(i, alphabet[rng.below(alphabet.len())]),
            }
        }
        if let Ok(file) = load_reader(Source::Stdin, PathBuf::from("x"), m.as_slice(), &limits) {
            for d in &file.documents {
                if verifier.verify_document(d).is_verified() {
                    // A mutation may only verify if it changed nothing that matters:
                    // the object without its signature annotations is the original.
                    let mut got = d.value.clone();
                    strip_signature_annotations(&mut got, &domain);
                    assert_eq!(
                        got,
                        original,
                        "a changed object verified:\n{}",
                        String::from_utf8_lossy(&m)
                    );
                    verified += 1;
                }
            }
        }
    }
    // Some mutations hit insignificant bytes (whitespace, base64 line breaks); most don't.
    assert!(verified < 3000 / 2, "{verified} mutated manifests verified");
}
