//! A key-only `verify` loads the trust root only when a signature needs it (issue 39 item
//! 15): `SIGSTORE_TRUSTED_ROOT=/missing` does not fail a `--key` run whose signatures carry
//! no Rekor bundle, still fails one whose signature carries a bundle (the bundle is checked
//! against the root), and still fails every keyless or `--policy` run at once.

use crate::common;
use crate::common::stack::Stack;
use predicates::prelude::*;

const MISSING: &str = "/nonexistent/trusted_root.json";

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n")
}

/// `mansign verify -f PATH --key PUB` with `$SIGSTORE_TRUSTED_ROOT` naming no file.
fn verify_with_missing_root(
    path: &std::path::Path,
    pubkey: &std::path::Path,
) -> assert_cmd::Command {
    let mut cmd = common::with_key("verify", &[], path, pubkey);
    cmd.env("SIGSTORE_TRUSTED_ROOT", MISSING);
    cmd
}

#[test]
fn a_key_only_verify_without_bundles_needs_no_trust_root() {
    let kd = common::key_dir("lazy");
    let input = kd.write("cm.yaml", &config_map("keyed"));
    let signed = common::sign_with_key(&input, &kd.key);
    verify_with_missing_root(&signed, &kd.pubkey)
        .assert()
        .success()
        .stdout(predicate::str::contains("1 of 1 document(s) verified"));
    // A wrong key still fails as a verification failure, not as a missing root.
    let other = common::key_dir("other");
    verify_with_missing_root(&signed, &other.pubkey)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(MISSING).not());
}

#[test]
fn keyless_and_policy_runs_still_refuse_a_missing_trust_root_at_once() {
    let kd = common::key_dir("lazy");
    let input = kd.write("cm.yaml", &config_map("keyed"));
    let signed = common::sign_with_key(&input, &kd.key);
    let mut keyless = common::mansign();
    keyless
        .args(["verify", "-f"])
        .arg(&signed)
        .args(["--certificate-identity", "a@example.com"])
        .args(["--certificate-oidc-issuer", "https://issuer.example"])
        .env("SIGSTORE_TRUSTED_ROOT", MISSING);
    keyless
        .assert()
        .code(2)
        .stderr(predicate::str::contains(MISSING))
        .stderr(predicate::str::contains("SIGSTORE_TRUSTED_ROOT"));
    let policy = common::fixture("../examples/policy/mansign-policy.yaml");
    let mut with_policy = common::mansign();
    with_policy
        .args(["verify", "-f"])
        .arg(&signed)
        .arg("--policy")
        .arg(&policy)
        .env("SIGSTORE_TRUSTED_ROOT", MISSING);
    with_policy
        .assert()
        .code(2)
        .stderr(predicate::str::contains(MISSING));
}

#[test]
fn a_key_signature_with_a_rekor_bundle_still_needs_the_trust_root() {
    let stack = Stack::start();
    let kd = common::key_dir("lazy");
    let input = kd.write("cm.yaml", &config_map("logged"));
    let output = kd.path().join("out.yaml");
    stack
        .keyless_sign(common::mansign())
        .arg("-k")
        .arg(&kd.key)
        .arg("--tlog-upload")
        .arg("-f")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    // With the stack's root the bundle is checked and the document verifies.
    common::with_key("verify", &[], &output, &kd.pubkey)
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .assert()
        .success();
    // Without a loadable root it is refused: exit 2, naming the document, the bundle and
    // the root that could not be read; nothing on stdout.
    let out = verify_with_missing_root(&output, &kd.pubkey)
        .output()
        .unwrap();
    let all = common::all_output(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(out.stdout.is_empty(), "{all}");
    for needle in [
        "Rekor bundle",
        MISSING,
        "SIGSTORE_TRUSTED_ROOT",
        "ConfigMap logged",
    ] {
        assert!(all.contains(needle), "no {needle:?} in: {all}");
    }
}
