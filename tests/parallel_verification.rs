//! Verifying many documents on several threads gives the verdicts of verifying them one by
//! one, in input order: a tampered document in the middle of a batch is refused in its
//! place, and the run fails.

mod common;

use mansign::keys;
use mansign::signing::{KeySigner, SignOptions, sign_files};
use mansign::verify::{Attestor, TrustedKey, Verifier};
use serde_json::json;

fn configmaps(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: team-a\ndata:\n  index: \"{i}\"\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn parallel_verdicts_equal_sequential_verdicts_in_input_order() {
    let pair = keys::generate_key_pair(b"").unwrap();
    let key = keys::decrypt_private_key(&pair.private_key_pem, b"").unwrap();
    let text = configmaps(60);
    let mut files = vec![common::load_text("batch.yaml", "batch.yaml", &text)];
    sign_files(&mut files, &KeySigner::new(key), &SignOptions::default()).unwrap();
    let mut docs = files.remove(0).documents;
    for i in [7, 31, 59] {
        docs[i].value["data"]["index"] = json!("tampered");
    }
    let verifier = |threads| {
        Verifier::new(vec![Attestor::Key(
            TrustedKey::from_pem("k", &pair.public_key_pem).unwrap(),
        )])
        .with_parallelism(threads)
    };
    let one = verifier(1).verify_documents(&docs);
    let four = verifier(4).verify_documents(&docs);
    assert_eq!(one.to_json(), four.to_json());
    assert!(!four.is_verified());
    for (i, d) in four.documents.iter().enumerate() {
        assert_eq!(
            d.object.name,
            format!("cm-{i}"),
            "verdict {i} is out of order"
        );
        assert_eq!(d.is_verified(), ![7, 31, 59].contains(&i), "{d}");
    }
}
