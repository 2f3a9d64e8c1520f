//! Migrating real-world Kyverno policies (issue 9): wild-shaped `validate.manifests`
//! policies (`testdata/policies/wild/`) against the public-good keyless fixtures of
//! `testdata/kyverno/k8s-manifest-sigstore/`:
//!
//! - subject-only keyless entries load with `--insecure-any-issuer` (every result says
//!   "issuer not checked", one warning per entry) and are refused without it, naming the
//!   flag and `policy convert`;
//! - `roots` holding public-good Fulcio CAs narrow the chain check; a CA outside the trust
//!   root is refused; Rekor/CT keys of the trust root are accepted, others refused;
//! - `policy convert` round trip: the converted policy gives the original's verdicts, and
//!   with a learned issuer rejects a signature of the same subject from another issuer
//!   (signed on the loopback stack).

use crate::common;
use crate::common::stack;

use mansign::manifest::Document;
use mansign::policy::convert::{ConvertOptions, convert_str};
use mansign::policy::{LoadOptions, ObjectVerdict, PolicySet, RequestContext, load_str};
use mansign::trust::TrustRoot;
use serde_json::Value;
use stack::Stack;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const ROOT_JSON: &str = "testdata/kyverno/trust-root/sigstore-public-trusted_root.json";
/// Signed in 2022 by hkitahar@redhat.com (Google) and hirokuni.kitahara1@ibm.com (GitHub).
const MULTI: &str = "testdata/kyverno/k8s-manifest-sigstore/pkg-k8smanifest-testdata/sample-configmap-keyless-multi-signed.yaml";
/// Signed in 2021 by hirokuni.kitahara1@gmail.com, a certificate without an issuer.
const OLD: &str = "testdata/kyverno/k8s-manifest-sigstore/test-e2e-testdata/sample-configmap-with-keyless-sig.yaml";
const GOOGLE: &str = "https://accounts.google.com";
const GITHUB_OAUTH: &str = "https://github.com/login/oauth";

fn path(rel: &str) -> PathBuf {
    let p = Path::new(REPO).join(rel);
    assert!(p.exists(), "{rel} is missing");
    p
}

fn wild(name: &str) -> PathBuf {
    path(&format!("testdata/policies/wild/{name}"))
}

fn trust() -> Arc<TrustRoot> {
    Arc::new(TrustRoot::from_file(path(ROOT_JSON)).unwrap())
}

fn options(any_issuer: bool) -> LoadOptions {
    LoadOptions::default()
        .with_trust_root(trust())
        .with_insecure_any_issuer(any_issuer)
}

fn load_text(origin: &str, text: &str, any_issuer: bool) -> Result<PolicySet, String> {
    load_str(
        origin,
        text,
        &path("testdata/policies/wild"),
        &options(any_issuer),
    )
    .map_err(|e| e.to_string())
}

fn load(name: &str, any_issuer: bool) -> Result<PolicySet, String> {
    let text = std::fs::read_to_string(wild(name)).unwrap();
    load_text(name, &text, any_issuer)
}

fn documents(rel: &str) -> Vec<Document> {
    common::load_documents(&path(rel))
}

fn verdict(policy: &PolicySet, rel: &str) -> ObjectVerdict {
    let docs = documents(rel);
    assert_eq!(docs.len(), 1, "{rel}");
    policy.verify_document(&docs[0], &RequestContext::default())
}

/// `true` per fixture (MULTI, OLD) when the object verified.
fn verdicts(policy: &PolicySet) -> [bool; 2] {
    [
        verdict(policy, MULTI).is_verified(),
        verdict(policy, OLD).is_verified(),
    ]
}

fn warnings_of(notes: &[String]) -> usize {
    notes
        .iter()
        .filter(|n| n.contains("warning: issuer not checked"))
        .count()
}

// ---------------------------------------------------------------------------------------
// Wild shapes under --insecure-any-issuer

/// The wild policy `name` loaded with `--insecure-any-issuer`: it notes `warnings` entries
/// whose issuer is not checked, and verifies MULTI. (policy, verdict on MULTI)
fn verified_with_any_issuer(name: &str, warnings: usize) -> (PolicySet, ObjectVerdict) {
    let policy = load(name, true).unwrap();
    assert_eq!(
        warnings_of(&policy.notes),
        warnings,
        "{name}: {:?}",
        policy.notes
    );
    let v = verdict(&policy, MULTI);
    assert!(v.is_verified(), "{name}: {v}");
    (policy, v)
}

#[test]
fn subject_only_entry_verifies_its_subject_and_says_issuer_not_checked() {
    let (policy, v) = verified_with_any_issuer("subject-only.yaml", 1);
    let text = v.to_string();
    assert!(
        text.contains("subject hirokuni.kitahara1@ibm.com"),
        "{text}"
    );
    assert!(text.contains("[issuer not checked]"), "{text}");
    let json = v.to_json();
    assert_eq!(
        json["rules"][0]["attestors"][0]["warnings"],
        serde_json::json!(["issuer not checked"]),
        "{json}"
    );
    let old = verdict(&policy, OLD);
    assert!(!old.is_verified(), "{old}");
    assert!(
        old.to_string()
            .contains("is not \"hirokuni.kitahara1@ibm.com\""),
        "{old}"
    );
}

#[test]
fn multi_signer_count_needs_two_distinct_subjects_and_warns_once_per_entry() {
    let (policy, v) = verified_with_any_issuer("multi-signer-count.yaml", 3);
    let entries = &v.rules[0].verdict.result.as_ref().unwrap().entries;
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| e.warnings == ["issuer not checked"]));
    assert_eq!(verdicts(&policy), [true, false]);
}

#[test]
fn public_good_roots_are_accepted_and_narrow_the_chain_to_their_authority() {
    // roots = the 2022 chain: the 2022 signatures verify, the 2021 one no longer chains.
    let policy = load("public-good-roots.yaml", true).unwrap();
    assert_eq!(verdicts(&policy), [true, false]);
    let old = verdict(&load("subject-only.yaml", true).unwrap(), OLD).to_string();
    assert!(
        !old.contains("Fulcio"),
        "subject-only fails on the subject: {old}"
    );
    let reason = verdict(&policy, OLD).to_string();
    assert!(
        reason.contains("no Fulcio authority of the trust root was valid"),
        "{reason}"
    );
}

#[test]
fn roots_naming_only_the_2021_root_accept_2021_signatures_and_refuse_2022_ones() {
    let policy = load("roots-2021-only.yaml", true).unwrap();
    assert_eq!(verdicts(&policy), [false, true]);
    let v = verdict(&policy, MULTI).to_string();
    assert!(v.contains("does not chain to a trusted Fulcio root"), "{v}");
}

/// The trust roots a June 2022 public-good signature must verify under, all offline: the
/// root-signing snapshot Kyverno's fixtures use, sigstore-python's production root
/// (`testdata/sigstore-trust-roots/production/`), and the root mansign embeds.
fn public_good_roots() -> Vec<(&'static str, Arc<TrustRoot>)> {
    vec![
        ("root-signing snapshot", trust()),
        (
            "sigstore-python production",
            Arc::new(
                TrustRoot::from_file(path(
                    "testdata/sigstore-trust-roots/production/trusted_root.json",
                ))
                .unwrap(),
            ),
        ),
        ("embedded", Arc::new(TrustRoot::public_good().unwrap())),
        (
            "sigstore-python production, each CA certificate its own authority",
            Arc::new(split_authorities(
                "testdata/sigstore-trust-roots/production/trusted_root.json",
            )),
        ),
    ]
}

/// The trust root at `rel` with every CA certificate as its own authority (same window):
/// `sigstore-intermediate` is then not in the chain of its root's authority.
fn split_authorities(rel: &str) -> TrustRoot {
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(path(rel)).unwrap()).unwrap();
    let mut split = Vec::new();
    for ca in json["certificateAuthorities"].as_array().unwrap() {
        for cert in ca["certChain"]["certificates"].as_array().unwrap() {
            let mut one = ca.clone();
            one["certChain"]["certificates"] = serde_json::json!([cert]);
            split.push(one);
        }
    }
    json["certificateAuthorities"] = Value::Array(split);
    TrustRoot::from_json(&json.to_string()).unwrap()
}

fn load_under(name: &str, trust_root: Arc<TrustRoot>) -> PolicySet {
    let text = std::fs::read_to_string(wild(name)).unwrap();
    let options = LoadOptions::default()
        .with_trust_root(trust_root)
        .with_insecure_any_issuer(true);
    load_str(name, &text, &path("testdata/policies/wild"), &options).unwrap()
}

#[test]
fn roots_naming_only_the_public_good_root_keep_its_intermediate() {
    // Issue 21, item 9: `roots` = the public-good root (O=sigstore.dev, CN=sigstore) alone;
    // the June 2022 leaves were issued by `sigstore-intermediate`, which chains to it.
    for (label, root) in public_good_roots() {
        let policy = load_under("public-good-root-only.yaml", root);
        let v = verdict(&policy, MULTI);
        assert!(v.is_verified(), "{label}: {v}");
        assert!(
            v.to_string().contains("subject hirokuni.kitahara1@ibm.com"),
            "{label}: {v}"
        );
        // The 2021 signature chains to the other (2021) root: still refused.
        let old = verdict(&policy, OLD);
        assert!(!old.is_verified(), "{label}: {old}");
    }
}

#[test]
fn roots_naming_a_root_the_leaf_does_not_chain_to_still_refuse() {
    // The 2021 root alone: the 2022 leaves (issued by the 2022 intermediate of the other
    // root) are refused under every public-good trust root, the 2021 signature verifies.
    for (label, root) in public_good_roots() {
        let policy = load_under("roots-2021-only.yaml", root);
        let v = verdict(&policy, MULTI);
        assert!(!v.is_verified(), "{label}: {v}");
        let text = v.to_string();
        assert!(
            text.contains("does not chain to a trusted Fulcio root")
                || text.contains("no Fulcio authority of the trust root was valid"),
            "{label}: {text}"
        );
    }
}

#[test]
fn subject_regexp_without_issuer_is_anchored_and_loads_with_the_flag() {
    let policy = load("subject-regexp.yaml", true).unwrap();
    assert_eq!(verdicts(&policy), [true, false]);
}

#[test]
fn every_wild_shape_is_refused_without_the_flag_naming_it_and_policy_convert() {
    for name in [
        "subject-only.yaml",
        "multi-signer-count.yaml",
        "maintainers-count-2.yaml",
        "public-good-roots.yaml",
        "roots-2021-only.yaml",
        "subject-regexp.yaml",
    ] {
        let err = load(name, false).unwrap_err();
        assert!(err.contains("--insecure-any-issuer"), "{name}: {err}");
        assert!(err.contains("mansign policy convert"), "{name}: {err}");
        assert!(err.contains(".keyless"), "{name}: names the entry: {err}");
    }
}

#[test]
fn roots_naming_a_ca_outside_the_trust_root_are_refused_even_with_the_flag() {
    for any_issuer in [false, true] {
        let err = load("foreign-roots.yaml", any_issuer).unwrap_err();
        assert!(err.contains("keyless.roots"), "{err}");
        assert!(
            err.contains("is not a certificate authority of the trust root"),
            "{err}"
        );
        assert!(err.contains("--trusted-root"), "guidance: {err}");
    }
}

fn with_rekor_key(key_rel: &str) -> String {
    let key = std::fs::read_to_string(path(key_rel)).unwrap();
    let indented: String = key
        .lines()
        .map(|l| format!("                  {l}\n"))
        .collect();
    kyverno_keyless(
        "      any: [{resources: {kinds: [ConfigMap]}}]\n",
        &format!(
            "              issuer: https://github.com/login/oauth
              rekor:
                url: https://rekor.sigstore.dev
                pubkey: |-
{indented}"
        ),
    )
}

#[test]
fn rekor_pubkey_of_the_trust_root_is_accepted_and_any_other_is_refused() {
    let ok = load_text(
        "rekor.yaml",
        &with_rekor_key("testdata/k8s-manifest-sigstore/derived/rekor.sigstore.dev.pub.pem"),
        false,
    )
    .unwrap();
    assert_eq!(verdicts(&ok), [true, false]);
    let err = load_text(
        "rekor.yaml",
        &with_rekor_key("testdata/kyverno/keys/ecdsa-pub-1.pem"),
        false,
    )
    .unwrap_err();
    assert!(err.contains("keyless.rekor.pubkey"), "{err}");
    assert!(err.contains("not a log of the trust root"), "{err}");
}

#[test]
fn mansign_policy_opts_in_to_any_issuer_per_document() {
    let text = |opt: &str| {
        format!(
            "apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata: {{name: any-issuer}}
spec:
{opt}  attestors:
  - entries:
    - keyless:
        subject: hirokuni.kitahara1@ibm.com
"
        )
    };
    let err = load_text("m.yaml", &text(""), false).unwrap_err();
    assert!(
        err.contains("spec.attestors[0].entries[0].keyless"),
        "{err}"
    );
    assert!(err.contains("insecureAnyIssuer"), "{err}");
    let policy = load_text("m.yaml", &text("  insecureAnyIssuer: true\n"), false).unwrap();
    assert_eq!(warnings_of(&policy.notes), 1);
    let v = verdict(&policy, MULTI);
    assert!(v.is_verified(), "{v}");
    assert!(v.to_string().contains("[issuer not checked]"), "{v}");
}

// ---------------------------------------------------------------------------------------
// The CLI: verify --policy --insecure-any-issuer

fn verify_cli(policy: &str, files: &[&str], extra: &[&str]) -> (i32, String, String) {
    let mut cmd = common::mansign();
    cmd.current_dir(REPO)
        .args(["verify", "--policy"])
        .arg(wild(policy))
        .arg("--trusted-root")
        .arg(path(ROOT_JSON))
        .args(extra);
    for f in files {
        cmd.arg("-f").arg(path(f));
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_verify_with_the_flag_warns_once_per_entry_and_marks_every_result() {
    let (code, stdout, stderr) = verify_cli(
        "multi-signer-count.yaml",
        &[MULTI],
        &["--insecure-any-issuer", "--output", "json"],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        stderr.matches("warning: issuer not checked").count(),
        3,
        "{stderr}"
    );
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let attestors = json["documents"][0]["rules"][0]["attestors"]
        .as_array()
        .unwrap();
    assert_eq!(attestors.len(), 2);
    for a in attestors {
        assert_eq!(
            a["warnings"],
            serde_json::json!(["issuer not checked"]),
            "{a}"
        );
    }
    let (code, stdout, _) = verify_cli(
        "subject-only.yaml",
        &[MULTI, OLD],
        &["--insecure-any-issuer"],
    );
    assert_eq!(code, 1, "the 2021 ConfigMap fails: {stdout}");
    assert!(stdout.contains("[issuer not checked]"), "{stdout}");
    assert!(stdout.contains("1 of 2 document(s) verified"), "{stdout}");
}

#[test]
fn cli_verify_without_the_flag_refuses_the_policy_with_exit_2() {
    let (code, stdout, stderr) = verify_cli("subject-only.yaml", &[MULTI], &[]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("--insecure-any-issuer"), "{stderr}");
    assert!(stderr.contains("mansign policy convert"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn cli_insecure_any_issuer_needs_a_policy() {
    let out = common::mansign()
        .args(["verify", "--insecure-any-issuer", "--key"])
        .arg(path("testdata/kyverno/keys/ecdsa-pub-1.pem"))
        .arg("-f")
        .arg(path(MULTI))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// ---------------------------------------------------------------------------------------
// policy convert

fn convert(
    name: &str,
    issuer: Option<&str>,
    from_signed: &[&str],
) -> Result<mansign::policy::convert::Conversion, String> {
    let text = std::fs::read_to_string(wild(name)).unwrap();
    let mut options = ConvertOptions::default()
        .with_from_signed(from_signed.iter().flat_map(|f| documents(f)).collect())
        .with_load(options(false));
    options.issuer = issuer.map(str::to_string);
    convert_str(name, &text, &path("testdata/policies/wild"), &options).map_err(|e| e.to_string())
}

fn converted_policy(name: &str, from_signed: &[&str]) -> (PolicySet, String) {
    let conversion = convert(name, None, from_signed).unwrap();
    let yaml = conversion.to_yaml();
    let policy =
        load_text("converted.yaml", &yaml, false).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(warnings_of(&policy.notes), 0, "issuers are pinned");
    (policy, yaml)
}

#[test]
fn convert_round_trip_gives_the_original_verdicts_with_learned_issuers() {
    for name in [
        "subject-only.yaml",
        "maintainers-count-2.yaml",
        "public-good-roots.yaml",
    ] {
        let original = load(name, true).unwrap();
        let (converted, yaml) = converted_policy(name, &[MULTI, OLD]);
        assert_eq!(verdicts(&converted), verdicts(&original), "{name}\n{yaml}");
        assert!(verdicts(&converted)[0], "{name}: the fixture verifies");
    }
}

#[test]
fn convert_learns_each_subjects_issuer_and_says_so() {
    let conversion = convert("maintainers-count-2.yaml", None, &[MULTI]).unwrap();
    let yaml = conversion.to_yaml();
    assert!(yaml.contains(&format!("issuer: {GOOGLE}")), "{yaml}");
    assert!(yaml.contains(&format!("issuer: {GITHUB_OAUTH}")), "{yaml}");
    assert!(yaml.contains("count: 2"), "{yaml}");
    let learned: Vec<&String> = conversion
        .notes
        .iter()
        .filter(|n| n.contains("learned issuer"))
        .collect();
    assert_eq!(learned.len(), 2, "{:?}", conversion.notes);
    assert!(learned[0].contains("hkitahar@redhat.com") && learned[0].contains(GOOGLE));
    common::assert_noted(&conversion.notes, &["operations", "dropped"]);
}

#[test]
fn convert_carries_ignore_fields_as_anchored_patterns() {
    let conversion = convert("multi-signer-count.yaml", Some(GOOGLE), &[]).unwrap();
    let yaml = conversion.to_yaml();
    assert!(yaml.contains("metadata.labels.team"), "{yaml}");
    assert!(yaml.contains("kind: ConfigMap"), "{yaml}");
    assert!(yaml.contains("ignoreProfile: kubernetes"), "{yaml}");
    load_text("converted.yaml", &yaml, false).unwrap();
}

#[test]
fn convert_refuses_a_subject_no_signature_shows() {
    let err = convert("multi-signer-count.yaml", None, &[MULTI]).unwrap_err();
    assert!(err.contains("attestors[0].entries[2].keyless"), "{err}");
    assert!(
        err.contains("no signature in --from-signed verifies with subject release-bot@example.com"),
        "{err}"
    );
}

#[test]
fn convert_refuses_a_subject_signed_through_several_issuers() {
    let err = convert("subject-regexp.yaml", None, &[MULTI]).unwrap_err();
    assert!(err.contains("several issuers"), "{err}");
    assert!(err.contains(GOOGLE) && err.contains(GITHUB_OAUTH), "{err}");
}

#[test]
fn convert_refuses_a_subject_whose_certificates_have_no_issuer() {
    let err = convert("roots-2021-only.yaml", None, &[OLD, MULTI]).unwrap_err();
    assert!(err.contains("without an issuer extension"), "{err}");
}

#[test]
fn convert_without_issuer_or_signed_manifests_is_refused() {
    let err = convert("subject-only.yaml", None, &[]).unwrap_err();
    assert!(
        err.contains("--issuer") && err.contains("--from-signed"),
        "{err}"
    );
}

#[test]
fn convert_refuses_what_a_manifest_policy_cannot_say_naming_the_field() {
    let text = std::fs::read_to_string(wild("subject-only.yaml"))
        .unwrap()
        .replace(
            "    validate:\n",
            // Several `all` filters exclude only together; a ManifestPolicy's exclude
            // alternatives each exclude on their own (`any` converts, since issue 21).
            "    exclude:\n      all:\n      - resources: {names: [a]}\n      - resources: {names: [b]}\n    validate:\n",
        );
    let options = ConvertOptions::default()
        .with_issuer(GITHUB_OAUTH.into())
        .with_load(options(false));
    let err = convert_str("x.yaml", &text, Path::new(REPO), &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec.rules[0].exclude"), "{err}");
    assert!(err.contains("cannot be carried over"), "{err}");
    let err = convert("foreign-roots.yaml", Some(GITHUB_OAUTH), &[]).unwrap_err();
    assert!(
        err.contains("keyless.roots"),
        "the loader's refusals hold: {err}"
    );
}

/// `mansign policy convert NAME --trusted-root ROOT_JSON --from-signed MULTI -o OUT`, for the
/// wild policy `NAME`; not yet run.
fn cli_convert(name: &str, out: &Path) -> assert_cmd::Command {
    let mut cmd = common::mansign();
    cmd.args(["policy", "convert"])
        .arg(wild(name))
        .arg("--trusted-root")
        .arg(path(ROOT_JSON))
        .arg("--from-signed")
        .arg(path(MULTI))
        .arg("-o")
        .arg(out);
    cmd
}

#[test]
fn cli_convert_writes_the_file_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("converted.yaml");
    let run = cli_convert("multi-signer-count.yaml", &out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(!out.exists(), "no partial output");
    assert_eq!(common::files_under(dir.path()), Vec::<String>::new());
    let run = cli_convert("maintainers-count-2.yaml", &out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("learned issuer").count(), 2, "{stderr}");
    let (code, stdout, _) = {
        let o = common::mansign()
            .args(["verify", "--policy"])
            .arg(&out)
            .arg("--trusted-root")
            .arg(path(ROOT_JSON))
            .arg("-f")
            .arg(path(MULTI))
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            (),
        )
    };
    assert_eq!(code, Some(0), "{stdout}");
}

// ---------------------------------------------------------------------------------------
// A learned issuer rejects the same subject signed through another issuer

const SUBJECT: &str = "hirokuni.kitahara1@ibm.com";

fn sign_on_stack(stack: &Stack, dir: &Path) -> PathBuf {
    let token = stack.mint_token(&[&format!("sub={SUBJECT}"), &format!("email={SUBJECT}")]);
    let input = common::write(
        dir,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sample-cm\ndata:\n  key1: val1\n",
    );
    let out = dir.join("signed.yaml");
    stack.keyless_sign_to(common::mansign(), &[], &input, &out, token);
    out
}

#[test]
fn converted_policy_with_a_learned_issuer_rejects_the_subject_from_another_issuer() {
    let stack = Stack::start();
    assert_ne!(stack.issuer(), GITHUB_OAUTH);
    let dir = tempfile::tempdir().unwrap();
    let signed = sign_on_stack(&stack, dir.path());
    let converted = dir.path().join("converted.yaml");
    cli_convert("subject-only.yaml", &converted)
        .assert()
        .success();
    let verify = |policy: &Path, flag: bool| {
        let mut cmd = common::mansign();
        cmd.args(["verify", "--policy"])
            .arg(policy)
            .arg("--trusted-root")
            .arg(stack.trusted_root())
            .arg("-f")
            .arg(&signed);
        if flag {
            cmd.arg("--insecure-any-issuer");
        }
        let o = cmd.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    // The original, issuer unchecked: the stack's certificate for the subject passes.
    let (code, stdout) = verify(&wild("subject-only.yaml"), true);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("[issuer not checked]"), "{stdout}");
    // The converted policy pins GitHub's OAuth issuer, learned from the fixture.
    let (code, stdout) = verify(&converted, false);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("is not \"{GITHUB_OAUTH}\"")),
        "rejected on the issuer: {stdout}"
    );
}

fn kyverno_with_match(match_block: &str) -> String {
    kyverno_keyless(match_block, "")
}

/// A Kyverno ClusterPolicy `p`, one rule matching `match_block` (whole lines under `match:`)
/// and trusting one keyless entry for the subject hirokuni.kitahara1@ibm.com with
/// `keyless_extra` (whole lines) after it.
fn kyverno_keyless(match_block: &str, keyless_extra: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {{name: p}}
spec:
  rules:
  - name: r
    match:
{match_block}    validate:
      manifests:
        attestors:
        - entries:
          - keyless:
              subject: hirokuni.kitahara1@ibm.com
{keyless_extra}"
    )
}

fn convert_text(text: &str) -> Result<mansign::policy::convert::Conversion, String> {
    let options = ConvertOptions::default()
        .with_issuer(GITHUB_OAUTH.into())
        .with_load(options(false));
    convert_str("p.yaml", text, Path::new(REPO), &options).map_err(|e| e.to_string())
}

#[test]
fn convert_splits_match_any_alternatives_into_one_document_each_with_the_same_verdicts() {
    let text = kyverno_with_match(
        "      any:\n      - resources: {kinds: [Secret]}\n      - resources: {kinds: [ConfigMap], names: [sample-*]}\n",
    );
    let conversion = convert_text(&text).unwrap();
    assert_eq!(conversion.documents.len(), 2);
    assert_eq!(conversion.documents[0]["metadata"]["name"], "p-r-1");
    assert_eq!(
        conversion.documents[1]["spec"]["match"]["names"][0],
        "sample-*"
    );
    let converted = load_text("c.yaml", &conversion.to_yaml(), false).unwrap();
    let original = load_text("p.yaml", &text, true).unwrap();
    assert_eq!(verdicts(&converted), verdicts(&original));
    assert_eq!(verdicts(&converted), [true, false]);
}

#[test]
fn convert_carries_subjects_and_refuses_an_exclusion_by_role_naming_the_field() {
    // Issue 21 item 10: a ManifestPolicy has conditions on the requesting user now.
    let text = kyverno_with_match(
        "      any:\n      - resources: {kinds: [ConfigMap]}\n        subjects: [{kind: User, name: alice}]\n",
    );
    let conversion = convert_text(&text).unwrap();
    assert_eq!(
        conversion.documents[0]["spec"]["match"]["subjects"][0]["name"],
        "alice"
    );
    let text = kyverno_with_match("      any:\n      - resources: {kinds: [ConfigMap]}\n").replace(
        "    validate:\n",
        "    exclude:\n      any:\n      - roles: [default:admin]\n    validate:\n",
    );
    let err = convert_text(&text).unwrap_err();
    assert!(err.contains("spec.rules[0].exclude.any[0].roles"), "{err}");
    assert!(err.contains("cannot be carried over"), "{err}");
}

#[test]
fn convert_refuses_an_exclusion_by_operation() {
    let text = kyverno_with_match("      any:\n      - resources: {kinds: [ConfigMap]}\n").replace(
        "    validate:\n",
        "    exclude:\n      any:\n      - resources: {operations: [DELETE]}\n    validate:\n",
    );
    let err = convert_text(&text).unwrap_err();
    assert!(
        err.contains("spec.rules[0].exclude.any[0].resources.operations"),
        "{err}"
    );
}

#[test]
fn convert_round_trip_of_kyvernos_key_policies_gives_the_chainsaw_verdicts() {
    for dir in ["single-signature", "multi-signatures"] {
        let rel = format!("testdata/kyverno/chainsaw-verify-manifests/{dir}");
        let text = std::fs::read_to_string(path(&format!("{rel}/policy.yaml"))).unwrap();
        let options = ConvertOptions::default().with_load(options(false));
        let conversion = convert_str("policy.yaml", &text, &path(&rel), &options).unwrap();
        let yaml = conversion.to_yaml();
        assert!(!yaml.contains('\r'), "{yaml}");
        let converted = load_text("converted.yaml", &yaml, false).unwrap();
        let original = load_text("policy.yaml", &text, false).unwrap();
        for resource in [
            "resource-no-signature.yaml",
            "resource-one-signature.yaml",
            "resource-two-signatures.yaml",
            "resource-bad-signatures.yaml",
        ] {
            let file = format!("{rel}/{resource}");
            assert_eq!(
                verdict(&converted, &file).is_verified(),
                verdict(&original, &file).is_verified(),
                "{file}\n{yaml}"
            );
        }
        let two = verdict(&converted, &format!("{rel}/resource-two-signatures.yaml"));
        assert!(two.is_verified(), "{two}");
    }
}

// ---------------------------------------------------------------------------------------
// kubectl-sigstore `verify -c` configs

const E2E: &str = "testdata/kyverno/k8s-manifest-sigstore/test-e2e-testdata";

fn convert_config(
    text: &str,
    issuer: Option<&str>,
    from_signed: &[&str],
) -> Result<String, String> {
    let mut options = ConvertOptions::default()
        .with_from_signed(from_signed.iter().flat_map(|f| documents(f)).collect())
        .with_load(options(false));
    options.issuer = issuer.map(str::to_string);
    convert_str("config.yaml", text, Path::new(REPO), &options)
        .map(|c| c.to_yaml())
        .map_err(|e| e.to_string())
}

#[test]
fn kubectl_sigstore_config_signers_become_one_of_keyless_entries_with_pinned_issuers() {
    let config = "signers:\n- hkitahar@redhat.com\n- release-bot@example.com\nignoreFields:\n- objects:\n  - kind: ConfigMap\n  fields:\n  - data.key2\nskipObjects:\n- kind: ConfigMap\n  name: kube-root-ca.crt\n";
    // release-bot never signed: its issuer cannot be learned
    let err = convert_config(config, None, &[MULTI]).unwrap_err();
    assert!(err.contains("signers[1]"), "{err}");
    let yaml = convert_config(config, Some(GOOGLE), &[]).unwrap();
    assert!(yaml.contains("count: 1"), "{yaml}");
    assert!(yaml.contains("data.key2"), "{yaml}");
    let policy = load_text("converted.yaml", &yaml, false).unwrap();
    // any one signer, as upstream: the Google signature of hkitahar@redhat.com verifies
    assert_eq!(verdicts(&policy), [true, false]);
}

#[test]
fn kubectl_sigstore_config_sample_1_converts_and_denies_the_e2e_configmap_as_upstream() {
    let text = std::fs::read_to_string(path(&format!("{E2E}/config-sample-1.yaml"))).unwrap();
    let yaml = convert_config(&text, Some(GOOGLE), &[]).unwrap();
    assert!(yaml.contains("subject: test-signer@example.com"), "{yaml}");
    let policy = load_text("converted.yaml", &yaml, false).unwrap();
    let v = verdict(
        &policy,
        &format!("{E2E}/sample-configmap-with-keyless-sig.yaml"),
    );
    assert!(!v.is_verified(), "{v}");
}

#[test]
fn kubectl_sigstore_config_without_signers_is_refused() {
    let text = std::fs::read_to_string(path(&format!("{E2E}/config-sample-2.yaml"))).unwrap();
    let err = convert_config(&text, Some(GOOGLE), &[]).unwrap_err();
    assert!(err.contains("signers"), "{err}");
    assert!(err.contains("accepts any keyless signer"), "{err}");
    let err =
        convert_config("signers: [a@b.c]\nmessageBaseName: m\n", Some(GOOGLE), &[]).unwrap_err();
    assert!(err.contains("messageBaseName"), "{err}");
}

/// The first CT log key of the fixture root as PEM.
fn fixture_ctlog_key_pem() -> String {
    let root: Value =
        serde_json::from_str(&std::fs::read_to_string(path(ROOT_JSON)).unwrap()).unwrap();
    let b64 = root["ctlogs"][0]["publicKey"]["rawBytes"].as_str().unwrap();
    let body: Vec<String> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        body.join("\n")
    )
}

#[test]
fn ctlog_pubkey_of_the_trust_root_is_accepted_and_any_other_is_refused() {
    let with_ctlog = |pem: &str| {
        let indented: String = pem
            .lines()
            .map(|l| format!("                  {l}\n"))
            .collect();
        with_rekor_key("testdata/k8s-manifest-sigstore/derived/rekor.sigstore.dev.pub.pem")
            + &format!("              ctlog:\n                pubkey: |-\n{indented}")
    };
    let ok = load_text("ctlog.yaml", &with_ctlog(&fixture_ctlog_key_pem()), false).unwrap();
    assert_eq!(verdicts(&ok), [true, false]);
    let other = std::fs::read_to_string(path("testdata/kyverno/keys/ecdsa-pub-2.pem")).unwrap();
    let err = load_text("ctlog.yaml", &with_ctlog(&other), false).unwrap_err();
    assert!(err.contains("keyless.ctlog.pubkey"), "{err}");
    assert!(err.contains("not a CT log of the trust root"), "{err}");
}

/// A Kyverno policy with a subject-only keyless entry and the given action fields.
fn with_actions(policy_level: &str, rule_level: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: actions
spec:
{policy_level}  rules:
  - name: signed
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    validate:
{rule_level}      manifests:
        attestors:
        - entries:
          - keyless:
              subject: https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main
"
    )
}

#[test]
fn convert_carries_the_failure_action_and_refuses_per_namespace_overrides() {
    // The rule's action wins over the policy's; Audit is carried over, not dropped.
    let c = convert_text(&with_actions(
        "  validationFailureAction: Enforce\n",
        "      failureAction: Audit\n",
    ))
    .unwrap();
    assert_eq!(c.documents[0]["spec"]["failureAction"], "Audit");
    let c = convert_text(&with_actions("  validationFailureAction: audit\n", "")).unwrap();
    assert_eq!(c.documents[0]["spec"]["failureAction"], "Audit");
    // No action: Kyverno would audit; the converted rule enforces and a note says so.
    let c = convert_text(&with_actions("", "")).unwrap();
    assert_eq!(c.documents[0]["spec"]["failureAction"], "Enforce");
    common::assert_noted(&c.notes, &["the converted rule enforces"]);
    // Overrides have no ManifestPolicy form: refused with the field named.
    for (policy_level, rule_level, field) in [
        (
            "  validationFailureAction: Audit\n  validationFailureActionOverrides:\n  - action: Enforce\n    namespaces: [prod]\n",
            "",
            "spec.validationFailureActionOverrides",
        ),
        (
            "",
            "      failureAction: Audit\n      failureActionOverrides:\n      - action: Enforce\n        namespaces: [prod]\n",
            "spec.rules[0].validate.failureActionOverrides",
        ),
    ] {
        let err = convert_text(&with_actions(policy_level, rule_level)).unwrap_err();
        assert!(
            err.contains(field) && err.contains("split the rule"),
            "{err}"
        );
    }
    // A converted Audit rule loads as Audit.
    let c = convert_text(&with_actions("", "      failureAction: Audit\n")).unwrap();
    let policy = load_text("converted.yaml", &c.to_yaml(), false).unwrap();
    assert_eq!(
        policy.rules[0].failure_action.default,
        mansign::policy::FailureAction::Audit
    );
}

/// The `roots` block of a wild policy (its PEM, as YAML holds it).
fn roots_block(name: &str) -> String {
    let text = std::fs::read_to_string(wild(name)).unwrap();
    let start = text.find("              roots: |-\n").unwrap();
    let end = text[start..].find("-----END CERTIFICATE-----\n").unwrap()
        + start
        + "-----END CERTIFICATE-----\n".len();
    text[start..end].to_string()
}

/// What a chain that does not reach the policy's roots says (issue 39 item 7).
const ROOTS_2021: &str = "CN=sigstore,O=sigstore.dev (valid 2021-03-07 to 2031-02-23)";

#[test]
fn roots_that_do_not_chain_the_signer_say_which_root_which_ca_and_that_kyverno_ignores_them() {
    // The 2021 root only; the June 2022 signatures were issued by the 2022 intermediate.
    let policy = load("roots-2021-only.yaml", true).unwrap();
    let text = verdict(&policy, MULTI).to_string();
    for part in [
        "certificate does not chain to a trusted Fulcio root",
        "the certificate was issued by CN=sigstore-intermediate,O=sigstore.dev",
        &format!("this entry's keyless.roots narrows the trust root to {ROOTS_2021}"),
        "Kyverno ignores keyless.roots for manifests (docs/compatibility.md#keyless-roots)",
        "name the root that issued the signer's chain, or leave roots out",
    ] {
        assert!(text.contains(part), "{part:?} missing: {text}");
    }
    let compatibility = std::fs::read_to_string(path("docs/compatibility.md")).unwrap();
    assert!(
        compatibility.contains("<a id=\"keyless-roots\"></a>"),
        "the anchor the message names"
    );
    // The same failure without roots narrowing (another trust root entirely) says nothing
    // about keyless.roots.
    let staging = Arc::new(
        TrustRoot::from_file(path(
            "testdata/sigstore-trust-roots/staging/trusted_root.json",
        ))
        .unwrap(),
    );
    let plain = load_under("subject-only.yaml", staging);
    let text = verdict(&plain, MULTI).to_string();
    assert!(!text.contains("keyless.roots"), "{text}");
    // Through the command line, as a user meets it.
    let out = common::mansign()
        .args(["verify", "--insecure-any-issuer", "--policy"])
        .arg(wild("roots-2021-only.yaml"))
        .arg("-f")
        .arg(path(MULTI))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(ROOTS_2021) && stdout.contains("docs/compatibility.md#keyless-roots"),
        "{stdout}"
    );
}

#[test]
fn convert_warns_when_the_roots_it_keeps_do_not_chain_the_from_signed_sample() {
    // public-good-root-only.yaml with the 2021 root pasted in instead: the subject's June
    // 2022 signature in MULTI verifies under the trust root (its issuer is learned), but
    // not under the roots kept.
    let original = std::fs::read_to_string(wild("public-good-root-only.yaml")).unwrap();
    let text = original.replace(
        &roots_block("public-good-root-only.yaml"),
        &roots_block("roots-2021-only.yaml"),
    );
    assert_ne!(text, original);
    let convert_options = || {
        ConvertOptions::default()
            .with_from_signed(documents(MULTI))
            .with_load(options(false))
    };
    let conversion = convert_str(
        "pasted.yaml",
        &text,
        &path("testdata/policies/wild"),
        &convert_options(),
    )
    .unwrap();
    let warnings: Vec<&String> = conversion
        .notes
        .iter()
        .filter(|n| n.contains("warning: the roots kept here"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:#?}", conversion.notes);
    for part in [
        "keyless.roots: warning",
        ROOTS_2021,
        "do not chain the certificate of hirokuni.kitahara1@ibm.com in",
        "sample-configmap-keyless-multi-signed.yaml: document 1",
        "(issued by CN=sigstore-intermediate,O=sigstore.dev)",
        "docs/compatibility.md#keyless-roots",
    ] {
        assert!(
            warnings[0].contains(part),
            "{part:?} missing: {}",
            warnings[0]
        );
    }
    // The converted policy does refuse it, as the warning says.
    let converted = load_text("converted.yaml", &conversion.to_yaml(), false).unwrap();
    assert!(!verdict(&converted, MULTI).is_verified());
    // Roots that do chain the sample: no warning.
    let conversion = convert_str(
        "good.yaml",
        &original,
        &path("testdata/policies/wild"),
        &convert_options(),
    )
    .unwrap();
    assert!(
        !conversion
            .notes
            .iter()
            .any(|n| n.contains("roots kept here")),
        "{:#?}",
        conversion.notes
    );
}
