//! The real kubectl-sigstore (k8s-manifest-sigstore v0.5.5-0.20251214123302-4152ec03ed3d,
//! the version Kyverno v1.19.0 links; built by scripts/peers.sh) against mansign, both ways
//! (issue 22): what mansign signs verifies in kubectl-sigstore, what kubectl-sigstore signs
//! verifies in mansign, tampered copies fail in both and both name the changed field. The
//! cases where cosign's behaviour shows run against the last tag, v0.5.4, too.
//!
//! Each case says its direction and whether the two answer alike or differ as
//! docs/compatibility.md lists; each test prints its tally.
//!
//! kubectl-sigstore prints `verified: true` and exits 0, or `verified: false, error: ...`
//! and exits 1 (cmd/kubectl-sigstore/cli/verify.go, log.Fatalf). Each check here needs
//! both the exit status and that line.

use crate::common;
use crate::common::stack;

use common::peers::{Run, run_bounded, run_bounded_for, run_peer};
use common::{MULTI_DOC, key_pair, mansign, write};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  mode: strict\n  level: \"3\"\n";

static CASES: AtomicUsize = AtomicUsize::new(0);

/// Which way a case goes: who signs, who verifies.
#[derive(Clone, Copy)]
enum Dir {
    /// mansign signs, kubectl-sigstore verifies (and mansign too).
    ToPeer,
    /// kubectl-sigstore signs, mansign verifies (and kubectl-sigstore too).
    FromPeer,
}

/// Whether the two give the same answer, or differ in a way docs/compatibility.md lists.
#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Same,
    Documented,
}
use Dir::*;
use Outcome::*;

thread_local! {
    /// This test's cases: [ToPeer same, ToPeer documented, FromPeer same, FromPeer documented].
    static TALLY: std::cell::Cell<[usize; 4]> = const { std::cell::Cell::new([0; 4]) };
}

fn case(dir: Dir, outcome: Outcome, what: &str) {
    let n = CASES.fetch_add(1, Ordering::SeqCst) + 1;
    let (arrow, slot) = match dir {
        ToPeer => ("mansign -> kubectl-sigstore", 0),
        FromPeer => ("kubectl-sigstore -> mansign", 2),
    };
    let slot = slot + usize::from(outcome == Documented);
    TALLY.with(|t| {
        let mut v = t.get();
        v[slot] += 1;
        t.set(v);
    });
    let how = if outcome == Same {
        "same answer"
    } else {
        "documented difference"
    };
    println!("case {n} [{arrow}, {how}]: {what}");
}

/// Prints this test's cases per direction (the test runs on its own thread).
fn tally(test: &str) {
    let v = TALLY.with(|t| t.get());
    println!(
        "{test}: mansign -> kubectl-sigstore {} cases ({} same answer, {} documented \
         differences); kubectl-sigstore -> mansign {} cases ({} same answer, {} documented \
         differences)",
        v[0] + v[1],
        v[0],
        v[1],
        v[2] + v[3],
        v[2],
        v[3]
    );
}

fn ks(home: &Path, args: &[&OsStr]) -> Run {
    run_peer("kubectl-sigstore", home, args)
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

/// kubectl-sigstore verify -f FILE -k KEY.
fn ks_verify(home: &Path, file: &Path, key: &Path) -> Run {
    ks(
        home,
        &[
            os("verify"),
            os("-f"),
            file.as_os_str(),
            os("-k"),
            key.as_os_str(),
        ],
    )
}

fn assert_ks_verified(run: &Run, what: &str) {
    assert!(
        run.success && run.all().contains("verified: true"),
        "kubectl-sigstore did not verify {what}: {run:?}"
    );
}

fn assert_ks_refused(run: &Run, what: &str) -> String {
    let all = run.all();
    assert!(
        !run.success && all.contains("verified: false"),
        "kubectl-sigstore did not refuse {what}: {run:?}"
    );
    all
}

fn mansign_verify(file: &Path, key: &Path) -> std::process::Output {
    common::with_key("verify", &[], file, key)
        .output()
        .expect("run mansign verify")
}

/// kubectl-sigstore sign -f IN -k KEY -o OUT --no-tlog-upload [extra...].
fn ks_sign(home: &Path, input: &Path, key: &Path, out: &Path, extra: &[&str]) {
    common::peers::kubectl_sigstore_sign(home, input, key, out, extra);
}

/// Replaces `from` by `to` once in the file, asserting it was there.
fn tamper(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{from:?} not in {text}");
    std::fs::write(file, text.replacen(from, to, 1)).unwrap();
}

/// The value of annotation `key` in a one-document YAML text (a plain scalar on one line).
fn annotation(text: &str, key: &str) -> String {
    let prefix = format!("{key}: ");
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .trim()
        .to_string()
}

/// base64 -> gzip -> text (the `message` annotation's encoding).
fn gunzip_b64(value: &str) -> String {
    use base64::Engine as _;
    use std::io::Read as _;
    let gz = base64::engine::general_purpose::STANDARD
        .decode(value)
        .expect("base64 message");
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_string(&mut text)
        .expect("gzip message");
    text
}

#[test]
fn what_mansign_signs_with_a_key_verifies_in_kubectl_sigstore() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (key, public) = key_pair(d, "cosign");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();

    // One document, both scopes.
    for scope in ["document", "file"] {
        case(ToPeer, Same, &format!("one document, --scope {scope}"));
        let input = write(d, &format!("one-{scope}.yaml"), CM);
        let out = d.join(format!("one-{scope}.signed.yaml"));
        common::sign_to(&input, &key, &out, &["--scope", scope]);
        assert_ks_verified(&ks_verify(&home, &out, &public), "one document");
    }

    // A multi-document file, both scopes.
    for scope in ["document", "file"] {
        case(
            ToPeer,
            Same,
            &format!("three documents in one file, --scope {scope}"),
        );
        let input = write(d, &format!("multi-{scope}.yaml"), MULTI_DOC);
        let out = d.join(format!("multi-{scope}.signed.yaml"));
        common::sign_to(&input, &key, &out, &["--scope", scope]);
        assert_ks_verified(&ks_verify(&home, &out, &public), "a multi-document file");
    }

    // A directory: mansign signs each file; kubectl-sigstore verifies each one.
    case(ToPeer, Same, "a directory of two files, each file verified");
    let tree = d.join("tree");
    write(&tree, "a.yaml", CM);
    write(&tree, "sub/b.yaml", MULTI_DOC);
    let signed = d.join("signed-tree");
    let signed_dir = format!("{}/", signed.display());
    common::sign_to(&tree, &key, Path::new(&signed_dir), &[]);
    for rel in ["a.yaml", "sub/b.yaml"] {
        assert_ks_verified(&ks_verify(&home, &signed.join(rel), &public), rel);
    }

    // The wrong key: both refuse.
    case(ToPeer, Same, "the wrong key");
    let (_, other_public) = key_pair(d, "other");
    let out = d.join("one-document.signed.yaml");
    assert_ks_refused(&ks_verify(&home, &out, &other_public), "the wrong key");
    assert_eq!(mansign_verify(&out, &other_public).status.code(), Some(1));
    tally("what_mansign_signs_with_a_key_verifies_in_kubectl_sigstore");
}

/// kubectl-sigstore `verify -f DIRECTORY` reads the path with os.ReadFile, prints the error
/// and exits 0 (cmd/kubectl-sigstore/cli/verify.go: `fmt.Fprintln(os.Stderr, err); return
/// nil`): it verifies nothing. Pinned so a change in the peer shows up; mansign verifies a
/// directory file by file, and docs/compatibility.md tells kubectl-sigstore users to pass
/// files.
#[test]
fn kubectl_sigstore_verify_of_a_directory_exits_zero_without_verifying() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, public) = key_pair(d, "cosign");
    let tree = d.join("tree");
    case(
        ToPeer,
        Documented,
        "kubectl-sigstore verify of a directory exits 0 having verified nothing",
    );
    // Unsigned: a verifier must refuse it.
    write(&tree, "a.yaml", CM);
    let run = ks_verify(d, &tree, &public);
    assert!(run.success, "{run:?}");
    assert!(!run.all().contains("verified: true"), "{run:?}");
    assert!(run.stderr.contains("is a directory"), "{run:?}");
    let out = mansign_verify(&tree, &public);
    assert_eq!(
        out.status.code(),
        Some(1),
        "mansign refuses the unsigned directory"
    );
    tally("kubectl_sigstore_verify_of_a_directory_exits_zero_without_verifying");
}

#[test]
fn several_signatures_and_appends_both_ways_verify_in_both() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (k1, p1) = key_pair(d, "one");
    let (k2, p2) = key_pair(d, "two");
    let (k3, p3) = key_pair(d, "three");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let input = write(d, "cm.yaml", CM);

    // mansign signs, mansign appends (signature_1): kubectl-sigstore verifies either key.
    case(ToPeer, Same, "mansign signs, mansign appends: signature_1");
    let s1 = d.join("s1.yaml");
    let s2 = d.join("s2.yaml");
    common::sign_to(&input, &k1, &s1, &["--scope", "file"]);
    common::sign_to(&s1, &k2, &s2, &["--scope", "file", "--append"]);
    let text = std::fs::read_to_string(&s2).unwrap();
    assert!(text.contains("cosign.sigstore.dev/signature_1"), "{text}");
    for p in [&p1, &p2] {
        assert_ks_verified(&ks_verify(&home, &s2, p), "mansign + mansign append");
        assert!(mansign_verify(&s2, p).status.success());
    }

    // mansign signs, kubectl-sigstore appends. Pinned peer behaviour: k8s-manifest-sigstore
    // keeps ONE `message` annotation for every signature set (pkg/k8smanifest/option.go,
    // GetAllSignatureSets: each set i reads the unsuffixed `message`; AnnotationKeyMap(i)
    // maps `message` to MessageAnnotationKey(), never `message_i`), and on append it
    // overwrites that message with its own rendering of the document (pkg/k8smanifest/
    // sign.go, BlobSigner.Sign -> makeMessageYAML, and generateSignedYAMLManifest lines
    // 415-423: the appended map carries `message` too). Its rendering goes through mapnode
    // ToYaml (keys sorted), so the bytes differ from mansign's message (the document as
    // written) and set 0, signed over mansign's bytes, no longer verifies in either tool;
    // only kubectl-sigstore's own set does (docs/compatibility.md). Version:
    // k8s-manifest-sigstore v0.5.5-0.20251214123302-4152ec03ed3d.
    case(
        ToPeer,
        Documented,
        "mansign signs, kubectl-sigstore appends: the shared message is rewritten",
    );
    let s3 = d.join("s3.yaml");
    ks_sign(&home, &s1, &k3, &s3, &["--append-signature"]);
    let before = std::fs::read_to_string(&s1).unwrap();
    let after = std::fs::read_to_string(&s3).unwrap();
    let msg_before = annotation(&before, "cosign.sigstore.dev/message");
    let msg_after = annotation(&after, "cosign.sigstore.dev/message");
    assert_eq!(
        annotation(&before, "cosign.sigstore.dev/signature"),
        annotation(&after, "cosign.sigstore.dev/signature"),
        "set 0's signature is kept as it was"
    );
    assert!(
        after.contains("cosign.sigstore.dev/signature_1:"),
        "{after}"
    );
    assert!(!after.contains("cosign.sigstore.dev/message_1"), "{after}");
    assert_ne!(
        msg_before, msg_after,
        "kubectl-sigstore rewrote the message"
    );
    let (text_before, text_after) = (gunzip_b64(&msg_before), gunzip_b64(&msg_after));
    assert_ne!(text_before, text_after);
    // Same document, other bytes: the peer's rendering sorts the keys.
    assert!(
        text_before.starts_with("apiVersion: v1\nkind: ConfigMap\n"),
        "{text_before}"
    );
    assert!(
        text_after.starts_with("apiVersion: v1\ndata:\n"),
        "{text_after}"
    );
    let mut lines_before: Vec<&str> = text_before.lines().collect();
    let mut lines_after: Vec<&str> = text_after.lines().collect();
    lines_before.sort_unstable();
    lines_after.sort_unstable();
    assert_eq!(lines_before, lines_after, "the same lines, reordered");
    // The appended set verifies in both; mansign's set 0 verifies in neither.
    assert_ks_verified(&ks_verify(&home, &s3, &p3), "the appended set");
    assert!(mansign_verify(&s3, &p3).status.success());
    let peer = assert_ks_refused(&ks_verify(&home, &s3, &p1), "set 0 after the rewrite");
    assert!(
        peer.contains("verification failed for 2 signature")
            && peer.contains("invalid signature when validating ASN.1 encoded signature"),
        "{peer}"
    );
    let ours = mansign_verify(&s3, &p1);
    assert_eq!(ours.status.code(), Some(1));
    let ours = String::from_utf8_lossy(&ours.stdout).into_owned();
    assert!(
        ours.contains("signature set 0 with key") && ours.contains("signature does not match"),
        "{ours}"
    );
    // The cause is the message alone: put mansign's message back and set 0 verifies in
    // both again, while the appended set (signed over the peer's bytes) no longer does.
    case(
        ToPeer,
        Same,
        "the same file with mansign's message restored",
    );
    let restored = d.join("s3-restored.yaml");
    std::fs::write(&restored, after.replacen(&msg_after, &msg_before, 1)).unwrap();
    assert_ks_verified(&ks_verify(&home, &restored, &p1), "set 0, message restored");
    assert!(mansign_verify(&restored, &p1).status.success());
    assert_ks_refused(&ks_verify(&home, &restored, &p3), "set 1, message restored");
    assert_eq!(mansign_verify(&restored, &p3).status.code(), Some(1));

    // kubectl-sigstore signs, mansign appends.
    case(FromPeer, Same, "kubectl-sigstore signs, mansign appends");
    let s4 = d.join("s4.yaml");
    let s5 = d.join("s5.yaml");
    ks_sign(&home, &input, &k1, &s4, &[]);
    common::sign_to(&s4, &k2, &s5, &["--scope", "file", "--append"]);
    for p in [&p1, &p2] {
        assert_ks_verified(
            &ks_verify(&home, &s5, p),
            "kubectl-sigstore + mansign append",
        );
        let out = mansign_verify(&s5, p);
        assert!(
            out.status.success(),
            "kubectl-sigstore + mansign append, key {}: {}{}",
            p.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A key that signed none of them: refused by both.
    case(
        FromPeer,
        Same,
        "appended file, a key that signed none of the sets",
    );
    assert_ks_refused(&ks_verify(&home, &s5, &p3), "a key of no set");
    assert_eq!(mansign_verify(&s5, &p3).status.code(), Some(1));
    tally("several_signatures_and_appends_both_ways_verify_in_both");
}

#[test]
fn what_kubectl_sigstore_signs_with_a_key_verifies_in_mansign() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (key, public) = key_pair(d, "cosign");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut n = 0;
    for (name, text) in [("one", CM), ("multi", MULTI_DOC)] {
        // Both message formats kubectl-sigstore writes: gzipped YAML (default) and the
        // deprecated gzipped tarball.
        for tarball in ["no", "yes"] {
            n += 1;
            case(
                FromPeer,
                Same,
                &format!("kubectl-sigstore signs {name}, --tarball {tarball}"),
            );
            let input = write(d, &format!("{name}-{tarball}.yaml"), text);
            let out = d.join(format!("{name}-{tarball}.signed.yaml"));
            ks_sign(&home, &input, &key, &out, &["--tarball", tarball]);
            assert_ks_verified(&ks_verify(&home, &out, &public), "its own signature");
            let verified = mansign_verify(&out, &public);
            assert!(
                verified.status.success(),
                "mansign refuses kubectl-sigstore's {name} --tarball {tarball}: {}{}",
                String::from_utf8_lossy(&verified.stdout),
                String::from_utf8_lossy(&verified.stderr)
            );
        }
    }
    println!("{n} kubectl-sigstore signatures verified by mansign");
    tally("what_kubectl_sigstore_signs_with_a_key_verifies_in_mansign");
}

/// A changed field: both refuse, and both name `data.mode`.
#[test]
fn a_tampered_copy_fails_in_both_and_both_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (key, public) = key_pair(d, "cosign");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let input = write(d, "cm.yaml", CM);

    for signer in ["mansign", "kubectl-sigstore"] {
        let dir = if signer == "mansign" {
            ToPeer
        } else {
            FromPeer
        };
        case(dir, Same, &format!("signed by {signer}, data.mode changed"));
        let out = d.join(format!("{signer}.signed.yaml"));
        if signer == "mansign" {
            common::sign_to(&input, &key, &out, &["--scope", "file"]);
        } else {
            ks_sign(&home, &input, &key, &out, &[]);
        }
        tamper(&out, "mode: strict", "mode: lax");
        let peer = assert_ks_refused(&ks_verify(&home, &out, &public), "a tampered copy");
        assert!(
            peer.contains("Diff found in ConfigMap settings") && peer.contains("data.mode"),
            "kubectl-sigstore names the field: {peer}"
        );
        let ours = mansign_verify(&out, &public);
        assert_eq!(ours.status.code(), Some(1));
        let text = common::all_output(&ours);
        assert!(
            text.contains("data.mode"),
            "mansign names the field: {text}"
        );
    }
    tally("a_tampered_copy_fails_in_both_and_both_name_the_field");
}

/// Keyless: mansign signs on the loopback stack; kubectl-sigstore verifies the bundle
/// offline, pointed at the stack through cosign's environment: SIGSTORE_ROOT_FILE (Fulcio
/// root), SIGSTORE_REKOR_PUBLIC_KEY. (It sets IgnoreSCT, so the CT log key is not read:
/// k8s-manifest-sigstore pkg/cosign/verify.go, createCosignCheckOpts.) The signer it
/// reports is the certificate's subject.
#[test]
fn what_mansign_signs_keylessly_on_the_stack_verifies_in_kubectl_sigstore() {
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (root_pem, rekor_pem) = stack_pems(&stack, d);
    let input = write(d, "cm.yaml", CM);
    let out = d.join("cm.signed.yaml");
    stack.keyless_sign_to(
        mansign(),
        &["--scope", "file"],
        &input,
        &out,
        stack.id_token_file(),
    );

    let verify = |file: &Path, issuer: &str| {
        let mut cmd = common::peers::peer_command("kubectl-sigstore", &home);
        cmd.env("SIGSTORE_ROOT_FILE", &root_pem)
            .env("SIGSTORE_REKOR_PUBLIC_KEY", &rekor_pem)
            // Any request to the public instance would go through this dead proxy.
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("REKOR_SERVER", stack.rekor_url())
            .args(["verify", "-f"])
            .arg(file)
            .args(["--rekor-url", stack.rekor_url(), "--oidc-issuer", issuer]);
        run_bounded(cmd, None)
    };
    case(
        ToPeer,
        Same,
        "keyless, mansign signs on the stack, kubectl-sigstore verifies",
    );
    let run = verify(&out, stack.issuer());
    assert_ks_verified(&run, "a keyless signature from the stack");
    assert!(
        run.all().contains(stack.identity()),
        "kubectl-sigstore names the signer {}: {run:?}",
        stack.identity()
    );
    // Pinned peer weakness: on the bundle path kubectl-sigstore does not check
    // `--oidc-issuer` (found here; docs/compatibility.md). mansign requires the issuer.
    case(
        ToPeer,
        Documented,
        "keyless, another issuer required: kubectl-sigstore still verifies",
    );
    assert_ks_verified(
        &verify(&out, "https://issuer.invalid"),
        "another issuer (pinned)",
    );
    let ours = stack
        .keyless_verify(mansign(), &out)
        .args(["--certificate-identity", stack.identity()])
        .args(["--certificate-oidc-issuer", "https://issuer.invalid"])
        .output()
        .unwrap();
    assert_eq!(
        ours.status.code(),
        Some(1),
        "mansign refuses another issuer"
    );
    case(ToPeer, Same, "keyless, tampered");
    tamper(&out, "mode: strict", "mode: lax");
    assert_ks_refused(&verify(&out, stack.issuer()), "a tampered keyless copy");

    // Pinned peer weakness: the certificate chain is not checked either. A signature made
    // on another stack (its own Fulcio CA and Rekor), kubectl-sigstore given this stack's
    // Fulcio root and the other stack's Rekor key: it verifies. mansign, given a trusted
    // root of this stack's CA and the other stack's logs, refuses it.
    case(
        ToPeer,
        Documented,
        "keyless, a certificate from an untrusted Fulcio CA: kubectl-sigstore still verifies",
    );
    let other = stack::Stack::start();
    let other_pems = other.trust_pems();
    assert_ne!(
        other_pems.fulcio,
        stack.trust_pems().fulcio,
        "two Fulcio CAs"
    );
    let foreign = d.join("foreign.signed.yaml");
    other.keyless_sign_to(mansign(), &[], &input, &foreign, other.id_token_file());
    let mut cmd = common::peers::peer_command("kubectl-sigstore", &home);
    cmd.env("SIGSTORE_ROOT_FILE", &root_pem)
        .env(
            "SIGSTORE_REKOR_PUBLIC_KEY",
            write(d, "other-rekor.pub", &other_pems.rekor),
        )
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .args(["verify", "-f"])
        .arg(&foreign)
        .args(["--rekor-url", other.rekor_url()]);
    assert_ks_verified(
        &run_bounded(cmd, None),
        "a certificate from another CA (pinned)",
    );
    let mut mixed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(stack.trusted_root()).unwrap()).unwrap();
    let theirs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(other.trusted_root()).unwrap()).unwrap();
    mixed["tlogs"] = theirs["tlogs"].clone();
    mixed["ctlogs"] = theirs["ctlogs"].clone();
    let ours = mansign()
        .args(["verify", "-f"])
        .arg(&foreign)
        .arg("--trusted-root")
        .arg(write(d, "mixed-root.json", &mixed.to_string()))
        .args(["--certificate-identity", other.identity()])
        .args(["--certificate-oidc-issuer", other.issuer()])
        .output()
        .unwrap();
    assert_eq!(ours.status.code(), Some(1), "{ours:?}");
    assert!(
        String::from_utf8_lossy(&ours.stdout)
            .contains("certificate does not chain to a trusted Fulcio root"),
        "{ours:?}"
    );
    tally("what_mansign_signs_keylessly_on_the_stack_verifies_in_kubectl_sigstore");
}

/// The stack's Fulcio root certificates and Rekor key as PEM files.
fn stack_pems(stack: &stack::Stack, dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let pems = stack.trust_pems();
    let root_pem = write(dir, "fulcio-root.pem", &pems.fulcio);
    let rekor_pem = write(dir, "rekor.pub", &pems.rekor);
    (root_pem, rekor_pem)
}

/// kubectl-sigstore's `sign` passes `--force` where the tlog switch goes and
/// `--no-tlog-upload` where `--force` goes (cmd/kubectl-sigstore/cli/sign.go: `sign(...,
/// allowInsecure, force, noTlogUpload, ...)` against `func sign(..., allowInsecure,
/// noTlogUpload, force bool, ...)`). Pinned on the stack's Rekor: `--no-tlog-upload` logs
/// the signature and writes a `bundle` annotation, `--force` does not. Both shapes verify in
/// mansign with the key (the logged one against the stack's Rekor key) and in kubectl-sigstore.
#[test]
fn kubectl_sigstore_key_signatures_with_and_without_the_log_verify_in_mansign() {
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (key, public) = key_pair(d, "cosign");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (root_pem, rekor_pem) = stack_pems(&stack, d);
    let input = write(d, "cm.yaml", CM);
    let sign = |out: &Path, flag: &str| {
        let mut cmd = common::peers::peer_command("kubectl-sigstore", &home);
        cmd.env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .args(["sign", "-f"])
            .arg(&input)
            .arg("-k")
            .arg(&key)
            .arg("-o")
            .arg(out)
            .args(["--rekor-url", stack.rekor_url(), flag]);
        run_bounded_for(cmd, None, std::time::Duration::from_secs(30))
    };
    stack.reset();
    // `--no-tlog-upload` turns into "upload, and skip the prompt" (the swap). The upload
    // path then crashes in the peer: cosign v3.1.2 SignBlobCmd -> sigstore-go v1.3.0
    // sign.(*Rekor).getRekorV1TLE -> rekor v1.5.3 pkg/tle.GenerateTransparencyLogEntry
    // dereferences a nil entry (Go exits 2 on a panic). Pinned: no signed file is written.
    case(
        FromPeer,
        Documented,
        "kubectl-sigstore sign -k --no-tlog-upload: uploads (the swap), then panics",
    );
    let logged = d.join("logged.yaml");
    let run = sign(&logged, "--no-tlog-upload");
    let all = run.all();
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        all.contains("panic: runtime error: invalid memory address or nil pointer dereference")
            && all.contains("tle.GenerateTransparencyLogEntry")
            && all.contains("getRekorV1TLE"),
        "{all}"
    );
    assert!(
        !all.contains("Are you sure you would like to continue"),
        "{all}"
    );
    assert!(!logged.exists(), "no signed file after the crash");
    // The entry reached the stack's Rekor before the crash: the signature is logged, but
    // the signed file is never written.
    let uploads = stack.stat("rekor_entries_created");
    assert_eq!(uploads, 1, "--no-tlog-upload uploads");

    case(
        FromPeer,
        Documented,
        "kubectl-sigstore sign -k --force: not logged (the swap)",
    );
    let unlogged = d.join("unlogged.yaml");
    let run = sign(&unlogged, "--force");
    assert!(run.success, "kubectl-sigstore sign --force: {run:?}");
    let text = std::fs::read_to_string(&unlogged).unwrap();
    assert_eq!(
        stack.stat("rekor_entries_created"),
        uploads,
        "--force does not log"
    );
    assert!(text.contains("cosign.sigstore.dev/signature:"), "{text}");
    assert!(!text.contains("cosign.sigstore.dev/bundle"), "{text}");

    // What kubectl-sigstore signs (unlogged) verifies in mansign and in kubectl-sigstore.
    let out = common::with_key("verify", &[], &unlogged, &public)
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mansign verify {}: {}{}",
        unlogged.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cmd = common::peers::peer_command("kubectl-sigstore", &home);
    cmd.env("SIGSTORE_ROOT_FILE", &root_pem)
        .env("SIGSTORE_REKOR_PUBLIC_KEY", &rekor_pem)
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .args(["verify", "-f"])
        .arg(&unlogged)
        .arg("-k")
        .arg(&public)
        .args(["--rekor-url", stack.rekor_url()]);
    assert_ks_verified(&run_bounded(cmd, None), "the unlogged signature");
    // And a tampered copy of it fails in mansign.
    tamper(&unlogged, "mode: strict", "mode: lax");
    assert_eq!(mansign_verify(&unlogged, &public).status.code(), Some(1));
    tally("kubectl_sigstore_key_signatures_with_and_without_the_log_verify_in_mansign");
}

/// kubectl-sigstore's keyless signing cannot be pointed at a private Sigstore: its Fulcio
/// URL is `fulcioapi.SigstorePublicServerURL`, fixed in code (k8s-manifest-sigstore
/// pkg/cosign/sign.go, SignBlob), with no flag or variable. Pinned: given the stack's token
/// (SIGSTORE_ID_TOKEN, which cosign reads), the stack's Rekor and `--no-tlog-upload` (which,
/// through the flag swap, skips cosign's terms-of-use prompt; without it the peer stops at
/// once with "user declined the prompt", stdin being empty), it asks the public Fulcio:
/// the only request is a CONNECT to fulcio.sigstore.dev:443 through HTTPS_PROXY, a loopback
/// listener here that records it and answers 403 (nothing leaves the machine), and the
/// peer fails naming `https://fulcio.sigstore.dev/api/v2/signingCert`. The stack's Fulcio
/// is never asked. So keyless signatures *by kubectl-sigstore* are checked in mansign only
/// through the recorded upstream fixtures (tests/it/interop_k8s_manifest_sigstore.rs).
#[test]
fn kubectl_sigstore_keyless_signing_goes_to_the_public_instance_only() {
    use std::io::{BufRead, BufReader, Write};
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = write(d, "cm.yaml", CM);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut line = String::new();
            let _ = BufReader::new(&conn).read_line(&mut line);
            let _ = (&conn).write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
            if tx.send(line.trim().to_string()).is_err() {
                return;
            }
        }
    });
    let sign = |extra: &[&str]| {
        let mut cmd = common::peers::peer_command("kubectl-sigstore", d);
        cmd.env("HTTPS_PROXY", &proxy)
            .env("HTTP_PROXY", &proxy)
            .env("NO_PROXY", "")
            .env("SIGSTORE_ID_TOKEN", stack.id_token())
            .env("REKOR_SERVER", stack.rekor_url())
            .args(["sign", "-f"])
            .arg(&input)
            .arg("-o")
            .arg(d.join("out.yaml"))
            .args(["--rekor-url", stack.rekor_url()])
            .args(extra);
        run_bounded_for(cmd, None, std::time::Duration::from_secs(30))
    };
    stack.reset();
    case(
        FromPeer,
        Documented,
        "keyless kubectl-sigstore sign, no flag: declines at the prompt, asks nobody",
    );
    let run = sign(&[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.all().contains("user declined the prompt"), "{run:?}");
    assert!(rx.try_recv().is_err(), "no request before the prompt");

    case(
        FromPeer,
        Documented,
        "keyless kubectl-sigstore sign --no-tlog-upload: the public Fulcio only",
    );
    let run = sign(&["--no-tlog-upload"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.all()
            .contains("https://fulcio.sigstore.dev/api/v2/signingCert")
            && run.all().contains("Forbidden"),
        "{run:?}"
    );
    let requests: Vec<String> = rx.try_iter().collect();
    println!("kubectl-sigstore keyless sign, requests through the proxy: {requests:?}");
    assert_eq!(requests, ["CONNECT fulcio.sigstore.dev:443 HTTP/1.1"]);
    assert!(!d.join("out.yaml").exists());
    assert_eq!(stack.stat("fulcio_signing_cert_requests"), 0);
    assert_eq!(stack.stat("rekor_entries_created"), 0);
    tally("kubectl_sigstore_keyless_signing_goes_to_the_public_instance_only");
}

/// kubectl-sigstore at its last tag, v0.5.4 (scripts/peers.sh builds it from the module
/// tests/peers/ks054). Its own code differs from the pinned pseudo-version only in a tar
/// path check and the cosign import (v2.2.1 there, v3 here: docs/compatibility.md lists the
/// commits compared), so the matrix cases where cosign's behaviour shows run against it
/// too: key signatures both ways, a tampered copy, keyless from the stack, the swapped
/// `--no-tlog-upload` and a directory. Two differences from the pinned version are pinned
/// here: cosign v2.2.1 loads the CT log keys to verify a key signature (from the public TUF
/// repository unless SIGSTORE_CT_LOG_PUBLIC_KEY_FILE names one), and the swapped
/// `--no-tlog-upload` fails after the upload with an error instead of a panic.
#[test]
fn kubectl_sigstore_v0_5_4_on_the_cases_where_cosign_shows() {
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (key, public) = key_pair(d, "cosign");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pems = stack.trust_pems();
    let root_pem = write(d, "fulcio-root.pem", &pems.fulcio);
    let rekor_pem = write(d, "rekor.pub", &pems.rekor);
    let ctlog_pem = write(d, "ctlog.pub", &pems.ctlog);
    let v054 = |env: &[(&str, &Path)], args: &[&OsStr]| -> Run {
        let mut cmd = common::peers::peer_command("kubectl-sigstore-v0.5.4", &home);
        // Any request to the public instance would go to this dead proxy.
        cmd.env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("REKOR_SERVER", stack.rekor_url());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(args);
        run_bounded_for(cmd, None, std::time::Duration::from_secs(60))
    };
    let offline: [(&str, &Path); 3] = [
        ("SIGSTORE_CT_LOG_PUBLIC_KEY_FILE", &ctlog_pem),
        ("SIGSTORE_REKOR_PUBLIC_KEY", &rekor_pem),
        ("SIGSTORE_ROOT_FILE", &root_pem),
    ];
    let verify_key = |env: &[(&str, &Path)], file: &Path| {
        v054(
            env,
            &[
                os("verify"),
                os("-f"),
                file.as_os_str(),
                os("-k"),
                public.as_os_str(),
            ],
        )
    };
    let version = v054(&[], &[os("version")]);
    assert!(
        version.stdout.contains("\"GitVersion\":\"v0.5.4\""),
        "{version:?}"
    );

    case(
        ToPeer,
        Documented,
        "v0.5.4: a key signature, no CT log key given: asks the public TUF repository",
    );
    let input = write(d, "cm.yaml", CM);
    let one = d.join("one.signed.yaml");
    common::sign_to(&input, &key, &one, &[]);
    let run = verify_key(&[], &one);
    assert_ks_refused(&run, "a key signature without a CT log key (v0.5.4)");
    assert!(
        run.all().contains("getting ctlog public keys")
            && run.all().contains("tuf-repo-cdn.sigstore.dev"),
        "{run:?}"
    );
    for (name, text) in [("one", CM), ("multi", MULTI_DOC)] {
        case(
            ToPeer,
            Same,
            &format!("v0.5.4: mansign signs {name} with a key"),
        );
        let input = write(d, &format!("{name}.yaml"), text);
        let out = d.join(format!("{name}.mansign.yaml"));
        common::sign_to(&input, &key, &out, &[]);
        assert_ks_verified(&verify_key(&offline, &out), "mansign's signature (v0.5.4)");
    }
    for tarball in ["no", "yes"] {
        case(
            FromPeer,
            Same,
            &format!("v0.5.4 signs with a key, --tarball {tarball}"),
        );
        let out = d.join(format!("v054-{tarball}.yaml"));
        let run = v054(
            &offline,
            &[
                os("sign"),
                os("-f"),
                input.as_os_str(),
                os("-k"),
                key.as_os_str(),
                os("-o"),
                out.as_os_str(),
                os("--force"),
                os("--tarball"),
                os(tarball),
            ],
        );
        assert!(run.success && out.is_file(), "v0.5.4 sign: {run:?}");
        assert_ks_verified(&verify_key(&offline, &out), "its own signature (v0.5.4)");
        let ours = mansign_verify(&out, &public);
        assert!(
            ours.status.success(),
            "mansign refuses v0.5.4's --tarball {tarball}: {}",
            String::from_utf8_lossy(&ours.stdout)
        );
    }
    for (dir, signer) in [(ToPeer, "mansign"), (FromPeer, "v0.5.4")] {
        case(
            dir,
            Same,
            &format!("v0.5.4: signed by {signer}, data.mode changed"),
        );
        let file = if signer == "mansign" {
            d.join("one.mansign.yaml")
        } else {
            d.join("v054-no.yaml")
        };
        tamper(&file, "mode: strict", "mode: lax");
        let run = verify_key(&offline, &file);
        assert!(
            assert_ks_refused(&run, "a tampered copy (v0.5.4)").contains("data.mode"),
            "{run:?}"
        );
        let ours = mansign_verify(&file, &public);
        assert_eq!(ours.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&ours.stdout).contains("data.mode"));
    }

    case(
        ToPeer,
        Same,
        "v0.5.4: mansign signs keylessly on the stack, v0.5.4 verifies",
    );
    let keyless = d.join("keyless.signed.yaml");
    stack.keyless_sign_to(mansign(), &[], &input, &keyless, stack.id_token_file());
    let verify_keyless = |issuer: &str| {
        v054(
            &offline,
            &[
                os("verify"),
                os("-f"),
                keyless.as_os_str(),
                os("--rekor-url"),
                os(stack.rekor_url()),
                os("--oidc-issuer"),
                os(issuer),
            ],
        )
    };
    let run = verify_keyless(stack.issuer());
    assert_ks_verified(&run, "a keyless signature from the stack (v0.5.4)");
    assert!(run.all().contains(stack.identity()), "{run:?}");
    case(
        ToPeer,
        Documented,
        "v0.5.4: keyless, another issuer required: still verifies",
    );
    assert_ks_verified(
        &verify_keyless("https://issuer.invalid"),
        "another issuer (v0.5.4, pinned)",
    );

    case(
        FromPeer,
        Documented,
        "v0.5.4 sign -k --no-tlog-upload: uploads (the swap), then fails",
    );
    stack.reset();
    let logged = d.join("v054-logged.yaml");
    let run = v054(
        &offline,
        &[
            os("sign"),
            os("-f"),
            input.as_os_str(),
            os("-k"),
            key.as_os_str(),
            os("-o"),
            logged.as_os_str(),
            os("--rekor-url"),
            os(stack.rekor_url()),
            os("--no-tlog-upload"),
        ],
    );
    assert_eq!(run.code, Some(1), "an error, not a panic: {run:?}");
    assert!(
        run.all().contains("failed to find tlog entry") && !run.all().contains("panic:"),
        "{run:?}"
    );
    assert!(!logged.exists(), "no signed file");
    assert_eq!(
        stack.stat("rekor_entries_created"),
        1,
        "--no-tlog-upload uploads"
    );

    case(
        ToPeer,
        Documented,
        "v0.5.4: verify of a directory exits 0 having verified nothing",
    );
    let tree = d.join("tree");
    write(&tree, "a.yaml", CM);
    let run = verify_key(&offline, &tree);
    assert!(
        run.success && run.all().contains("is a directory"),
        "{run:?}"
    );
    assert!(!run.all().contains("verified: true"), "{run:?}");
    tally("kubectl_sigstore_v0_5_4_on_the_cases_where_cosign_shows");
}
