//! Attacks on keyless verification that need a real (loopback) Sigstore: each must be
//! rejected by mansign's verifier, because the mock services themselves check nothing.
//! Verification runs with the stack stopped, so it provably makes no network call.

use crate::common;
use crate::common::stack;

use common::{mansign, write};
use mansign::manifest::{build_message, parse_documents, to_yaml};
use p256::ecdsa::signature::Signer as _;
use predicates::prelude::*;
use stack::{AMBIENT_VARS, Stack};
use std::path::{Path, PathBuf};

const DOC: &str = "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: allow\n  namespace: team-a\nspec:\n  exceptions:\n  - policyName: p\n    ruleNames: [r]\n";

/// Signs DOC keylessly against `stack`; returns the signed file.
fn keyless_sign(stack: &Stack, dir: &Path) -> PathBuf {
    let input = write(dir, "x.yaml", DOC);
    stack
        .keyless_sign(mansign())
        .arg("-f")
        .arg(&input)
        .arg("--identity-token")
        .arg(format!("@{}", stack.id_token_file().display()))
        .assert()
        .success();
    dir.join("x.yaml.signed")
}

fn verify(
    path: &Path,
    trusted_root: &Path,
    identity: &str,
    issuer: &str,
) -> assert_cmd::assert::Assert {
    mansign()
        .args(["verify", "-f"])
        .arg(path)
        .arg("--trusted-root")
        .arg(trusted_root)
        .args([
            "--certificate-identity",
            identity,
            "--certificate-oidc-issuer",
            issuer,
        ])
        .assert()
}

/// Verification denied the document (exit 1), naming `reason`.
fn assert_denied(verification: assert_cmd::assert::Assert, reason: &str) {
    verification
        .code(1)
        .stdout(predicate::str::contains(reason));
}

/// Copies what verification needs out of the stack's state directory, which goes away
/// with the stack.
fn keep(stack: &Stack, dir: &Path) -> (PathBuf, String, String) {
    let root = dir.join("trusted_root.json");
    std::fs::copy(stack.trusted_root(), &root).unwrap();
    (
        root,
        stack.identity().to_string(),
        stack.issuer().to_string(),
    )
}

/// A document signed keylessly on a fresh stack, with what [`keep`] keeps, once the stack
/// is stopped (every service of it is gone).
fn signed_offline() -> (tempfile::TempDir, PathBuf, (PathBuf, String, String)) {
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::start();
    let signed = keyless_sign(&stack, dir.path());
    let kept = keep(&stack, dir.path());
    drop(stack);
    (dir, signed, kept)
}

#[test]
fn keyless_signature_verifies_offline_with_the_stack_stopped() {
    let (_dir, signed, (root, identity, issuer)) = signed_offline();
    verify(&signed, &root, &identity, &issuer)
        .success()
        .stdout(predicate::str::contains(format!("subject {identity}")));
}

#[test]
fn certificate_from_stack_a_is_rejected_against_stack_b_root() {
    let dir = tempfile::tempdir().unwrap();
    let a = Stack::start();
    let b = Stack::start();
    let signed = keyless_sign(&a, dir.path());
    let (_, identity, issuer) = keep(&a, dir.path());
    let b_root = dir.path().join("b_root.json");
    std::fs::copy(b.trusted_root(), &b_root).unwrap();
    drop(a);
    drop(b);
    // Same identity and issuer URL shape, but B's Fulcio and Rekor never vouched for it.
    assert_denied(verify(&signed, &b_root, &identity, &issuer), "[signature]");
}

#[test]
fn wrong_identity_or_issuer_is_rejected_for_a_stack_signature() {
    let (_dir, signed, (root, identity, issuer)) = signed_offline();
    verify(
        &signed,
        &root,
        "https://github.com/acme/other/.github/workflows/release.yml@refs/heads/main",
        &issuer,
    )
    .code(1);
    verify(
        &signed,
        &root,
        &identity,
        "https://token.actions.githubusercontent.com",
    )
    .code(1);
    verify(&signed, &root, &identity, &issuer).success();
}

/// DER UTF8String, the encoding Fulcio uses for extension 1.3.6.1.4.1.57264.1.8.
fn der_utf8(s: &str) -> Vec<u8> {
    assert!(s.len() < 128);
    let mut v = vec![0x0c, s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}

#[test]
fn self_signed_certificate_accepted_by_the_test_rekor_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::start();
    let (root, identity, issuer) = keep(&stack, dir.path());

    // The attacker's own "Fulcio" certificate: right SAN, right issuer extension.
    let key = p256::ecdsa::SigningKey::random(&mut rand_core::OsRng);
    let pkcs8 = {
        use p256::pkcs8::EncodePrivateKey as _;
        key.to_pkcs8_der().unwrap()
    };
    let key_pair = rcgen::KeyPair::try_from(pkcs8.as_bytes()).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![rcgen::SanType::URI(identity.as_str().try_into().unwrap())];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
    params.custom_extensions = vec![rcgen::CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        der_utf8(&issuer),
    )];
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let cert_pem = params.self_signed(&key_pair).unwrap().pem();

    // Sign M and log it: the mock Rekor accepts any certificate.
    let value = parse_documents(DOC, &mansign::Limits::default())
        .unwrap()
        .remove(0)
        .1;
    let message = build_message([&value]);
    let signature: p256::ecdsa::DerSignature = key.sign(&message);
    let bundle = stack.log_hashedrekord(&message, signature.as_bytes(), cert_pem.as_bytes());
    drop(stack);
    let mut forged = value.clone();
    common::embed_one(
        &mut forged,
        &message,
        signature.as_bytes(),
        Some(cert_pem),
        Some(bundle),
    );
    let path = write(dir.path(), "forged.yaml", &to_yaml(&forged));

    // The SET is genuine, the signature is valid, the identity matches: only the chain
    // to the trusted Fulcio CA is missing, and that alone must deny.
    assert_denied(
        verify(&path, &root, &identity, &issuer),
        "certificate does not chain to a trusted Fulcio root",
    );
}

#[test]
fn signing_against_another_instance_without_its_trust_root_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::start();
    let input = write(dir.path(), "x.yaml", DOC);
    let mut cmd = mansign();
    for v in AMBIENT_VARS {
        cmd.env_remove(v);
    }
    // No cached root either: the default is then the embedded public-good root.
    cmd.env("MANSIGN_TRUST_DIR", dir.path().join("no-cache"))
        .args(["sign", "-f"])
        .arg(&input)
        .args([
            "--fulcio-url",
            stack.fulcio_url(),
            "--rekor-url",
            stack.rekor_url(),
        ])
        .arg("--identity-token")
        .arg(format!("@{}", stack.id_token_file().display()))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("pass its --trusted-root"));
    assert!(!dir.path().join("x.yaml.signed").exists());
}

/// `sign --help` describes the check above as it is: without `--trusted-root` every new
/// logged signature is still verified, against the cached root or the embedded
/// public-good one (docs/cli.md says the same), whatever Fulcio and Rekor are used.
#[test]
fn sign_help_states_the_default_trust_root_of_the_self_check() {
    let help = mansign().args(["sign", "--help"]).assert().success();
    let text = String::from_utf8_lossy(&help.get_output().stdout).into_owned();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!text.contains("no check otherwise"), "{text}");
    // A failed self-check is a signing failure: exit 2, as README and docs/cli.md say.
    assert!(
        text.contains("bad key or password, signing failed)"),
        "{text}"
    );
    assert!(
        text.contains(
            "Default: the file $MANSIGN_TRUSTED_ROOT names, else $SIGSTORE_TRUSTED_ROOT, else \
             the root cached by `mansign trust update`, else the public-good root embedded in \
             mansign"
        ),
        "{text}"
    );
}
