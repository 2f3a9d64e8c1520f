//! The real Kyverno CLI (kubectl-kyverno v1.19.0, built by scripts/peers.sh) against mansign
//! on `validate.manifests` policies (issue 22). For each case — keys, several signers with
//! `count`, nested attestor sets, several attestor sets, `ignoreFields`, `annotationDomain`,
//! `dryRun` off, and keyless entries on the loopback Sigstore stack — over objects mansign
//! signed (or tampered copies), Kyverno's verdict (`kubectl-kyverno apply POLICY --resource
//! FILE`) must equal mansign's, by three routes: `mansign verify --policy`, `mansign
//! admission review` of an AdmissionReview built from the same object, and `mansign verify
//! --policy` of what `mansign policy convert` made of the policy. Then each matrix runs
//! again as one `kubectl-kyverno test` suite (the key matrix's also under `mansign policy
//! test`).
//!
//! Where the two differ on purpose (mansign deliberately stricter: issuer required, the
//! issuer and the chain checked, distinct signers for `count`, anchored ignore fields; or a
//! Kyverno defect) the case asserts both verdicts and what mansign says, and
//! docs/compatibility.md lists it with the reason and this file's test name.

use crate::common;
use crate::common::stack;

use common::peers::{Run, kyverno_apply_counts, run_peer};
use common::{key_pair, mansign, write};
use serde_json::{Value, json};
use stack::AMBIENT_VARS;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  namespace: team-a\ndata:\n  mode: strict\n  level: \"3\"\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
    /// mansign refuses the policy itself (exit 2): something it will not enforce as written.
    Refused,
}

/// Kyverno's summary line read as one verdict; every rule must apply (no skip).
fn kyverno_verdict(run: &Run) -> Verdict {
    let (pass, fail, _, error, skip) = kyverno_apply_counts(run);
    assert_eq!(skip, 0, "the policy must apply to the resource: {run:?}");
    if pass >= 1 && fail == 0 && error == 0 {
        Verdict::Pass
    } else {
        assert!(fail + error >= 1, "{run:?}");
        Verdict::Fail
    }
}

fn exit_verdict(out: &std::process::Output, what: &str) -> Verdict {
    match out.status.code() {
        Some(0) => Verdict::Pass,
        Some(1) => Verdict::Fail,
        Some(2) => Verdict::Refused,
        other => panic!(
            "{what} exited {other:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A key's PEM, indented for a policy's `publicKeys: |-` block.
fn key_block(public: &Path, indent: usize) -> String {
    common::indented_pem(public, indent)
}

/// A key entry of an attestor set, at `indent` (the `- keys:` line).
fn key_entry(public: &Path, indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!(
        "{pad}- keys:\n{pad}    publicKeys: |-\n{}{pad}    signatureAlgorithm: sha256\n",
        key_block(public, indent + 6)
    )
}

/// A ClusterPolicy with one `validate.manifests` rule for ConfigMaps; `manifests` is the
/// body under `manifests:` (indented 8).
fn policy(name: &str, manifests: &str) -> String {
    format!(
        "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: {name}
spec:
  admission: true
  background: false
  rules:
  - name: manifests
    match:
      any:
      - resources:
          kinds:
          - ConfigMap
    validate:
      failureAction: Enforce
      manifests:
        dryRun:
          enable: false
{manifests}"
    )
}

struct Keys {
    k: Vec<(PathBuf, PathBuf)>,
}

struct Case {
    name: &'static str,
    policy: String,
    resource: PathBuf,
    /// mansign and Kyverno differ here on purpose, listed in docs/compatibility.md:
    /// (Kyverno's verdict, mansign's verdict, why, what mansign's output says).
    differs: Option<(Verdict, Verdict, &'static str, &'static str)>,
}

/// `mansign sign -f INPUT --key KEY -o OUT EXTRA...` (must succeed).
fn sign(input: &Path, out: &Path, key: &Path, extra: &[&str]) {
    common::sign_to(input, key, out, extra);
}

/// The resources and policies of the matrix.
fn cases(d: &Path, keys: &Keys) -> Vec<Case> {
    let [(k1, p1), (k2, p2), (k3, p3)] = [&keys.k[0], &keys.k[1], &keys.k[2]];
    let res =
        |name: &str| -> PathBuf { write(d, &format!("{name}.yaml"), &CM.replace("NAME", name)) };
    let signed = |name: &str, signers: &[&Path], extra: &[&str]| -> PathBuf {
        let mut cur = res(name);
        for (i, key) in signers.iter().enumerate() {
            let out = d.join(format!("{name}.signed{i}.yaml"));
            let mut args = extra.to_vec();
            if i > 0 {
                args.push("--append");
            }
            sign(&cur, &out, key, &args);
            cur = out;
        }
        cur
    };
    let tampered = |file: PathBuf, from: &str, to: &str| -> PathBuf {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(from), "{from} in {text}");
        let out = file.with_extension("tampered.yaml");
        std::fs::write(&out, text.replacen(from, to, 1)).unwrap();
        out
    };
    let one = |p: &Path| {
        format!(
            "        attestors:\n        - entries:\n{}",
            key_entry(p, 10)
        )
    };
    let count = |n: usize, ps: &[&Path]| {
        let entries: String = ps.iter().map(|p| key_entry(p, 10)).collect();
        format!("        attestors:\n        - count: {n}\n          entries:\n{entries}")
    };
    vec![
        Case {
            name: "one key, signed by it",
            policy: one(p1),
            resource: signed("k-one", &[k1], &[]),
            differs: None,
        },
        Case {
            name: "one key, signed by another",
            policy: one(p1),
            resource: signed("k-other", &[k2], &[]),
            differs: None,
        },
        Case {
            name: "one key, unsigned",
            policy: one(p1),
            resource: res("unsigned"),
            differs: None,
        },
        Case {
            name: "one key, a field changed after signing",
            policy: one(p1),
            resource: tampered(signed("k-tamper", &[k1], &[]), "mode: strict", "mode: lax"),
            differs: None,
        },
        Case {
            name: "one key, a field added after signing",
            policy: one(p1),
            resource: tampered(
                signed("k-added", &[k1], &[]),
                "  mode: strict",
                "  mode: strict\n  extra: x",
            ),
            differs: None,
        },
        Case {
            name: "count 2 of 3 keys, signed by two",
            policy: count(2, &[p1, p2, p3]),
            resource: signed("count-two", &[k1, k3], &[]),
            differs: None,
        },
        Case {
            name: "count 2 of 3 keys, signed by one",
            policy: count(2, &[p1, p2, p3]),
            resource: signed("count-one", &[k2], &[]),
            differs: None,
        },
        Case {
            name: "count 1 of 2 keys, signed by the second",
            policy: count(1, &[p1, p2]),
            resource: signed("count-second", &[k2], &[]),
            differs: None,
        },
        Case {
            name: "two attestor sets (both required), signed by both",
            policy: format!(
                "        attestors:\n        - entries:\n{}        - entries:\n{}",
                key_entry(p1, 10),
                key_entry(p2, 10)
            ),
            resource: signed("sets-both", &[k1, k2], &[]),
            differs: None,
        },
        Case {
            name: "two attestor sets (both required), signed by one",
            policy: format!(
                "        attestors:\n        - entries:\n{}        - entries:\n{}",
                key_entry(p1, 10),
                key_entry(p2, 10)
            ),
            resource: signed("sets-one", &[k1], &[]),
            differs: None,
        },
        Case {
            name: "nested attestor set and a key, count 2, signed by both",
            policy: format!(
                "        attestors:\n        - count: 2\n          entries:\n          - attestor:\n              entries:\n{}{}",
                key_entry(p1, 14),
                key_entry(p2, 10)
            ),
            resource: signed("nested-both", &[k1, k2], &[]),
            differs: None,
        },
        Case {
            name: "nested attestor set and a key, count 2, signed by the nested key only",
            policy: format!(
                "        attestors:\n        - count: 2\n          entries:\n          - attestor:\n              entries:\n{}{}",
                key_entry(p1, 14),
                key_entry(p2, 10)
            ),
            resource: signed("nested-one", &[k1], &[]),
            differs: None,
        },
        Case {
            name: "ignoreFields data.mode, data.mode changed",
            policy: format!(
                "{}        ignoreFields:\n        - objects:\n          - kind: ConfigMap\n          fields:\n          - data.mode\n",
                one(p1)
            ),
            resource: tampered(signed("ignored", &[k1], &[]), "mode: strict", "mode: lax"),
            differs: None,
        },
        Case {
            name: "ignoreFields data.mode, data.level changed",
            policy: format!(
                "{}        ignoreFields:\n        - objects:\n          - kind: ConfigMap\n          fields:\n          - data.mode\n",
                one(p1)
            ),
            resource: tampered(signed("not-ignored", &[k1], &[]), "\"3\"", "\"4\""),
            differs: None,
        },
        Case {
            name: "annotationDomain example.com, signed there",
            policy: format!("{}        annotationDomain: example.com\n", one(p1)),
            resource: signed("domain", &[k1], &["--annotation-domain", "example.com"]),
            differs: None,
        },
        Case {
            name: "annotationDomain example.com, signed under cosign.sigstore.dev",
            policy: format!("{}        annotationDomain: example.com\n", one(p1)),
            resource: signed("domain-default", &[k1], &[]),
            differs: None,
        },
        Case {
            name: "default domain, signed under example.com",
            policy: one(p1),
            resource: signed(
                "domain-other",
                &[k1],
                &["--annotation-domain", "example.com"],
            ),
            differs: None,
        },
        // mansign is deliberately stricter (docs/compatibility.md, "Disagreements").
        Case {
            name: "count 2 of key 1 listed twice, signed by key 1 only",
            policy: count(2, &[p1, p1]),
            resource: signed("count-same", &[k1], &[]),
            differs: Some((
                Verdict::Pass,
                Verdict::Fail,
                "distinct signers: Kyverno counts entries that verify, so one signature \
                 satisfies `count: 2` when two entries accept it; mansign assigns each \
                 counted entry its own signer",
                "already counted for another entry of this set (each signer counts once)",
            )),
        },
        Case {
            name: "ignoreFields data.mode, data.mode-override added",
            policy: format!(
                "{}        ignoreFields:\n        - objects:\n          - kind: ConfigMap\n          fields:\n          - data.mode\n",
                one(p1)
            ),
            resource: tampered(
                signed("ignored-prefix", &[k1], &[]),
                "  mode: strict",
                "  mode: strict\n  mode-override: lax",
            ),
            differs: Some((
                Verdict::Pass,
                Verdict::Fail,
                "anchored ignore fields: Kyverno (k8s-manifest-sigstore mapnode) matches \
                 `data.mode` as the unanchored regex `data.mode.*`, which also ignores \
                 `data.mode-override`; mansign ignores exactly `data.mode`",
                "modified since signing: data.mode-override added",
            )),
        },
        Case {
            name: "no ignoreFields, data.status added",
            policy: one(p1),
            resource: tampered(
                signed("status-added", &[k1], &[]),
                "  mode: strict",
                "  mode: strict\n  status: pwned",
            ),
            differs: Some((
                Verdict::Pass,
                Verdict::Fail,
                "anchored ignore fields: Kyverno's built-in ignore list holds `status`, \
                 matched unanchored, so any field path containing `status` (here \
                 `data.status`) is ignored; mansign's `kubernetes` profile ignores only the \
                 top-level `status` of kinds with a status subresource",
                "modified since signing: data.status added",
            )),
        },
    ]
}

/// An AdmissionReview (CREATE) carrying the object of `file`.
fn review_for(file: &Path) -> Value {
    let docs = mansign::manifest::parse_documents(
        &std::fs::read_to_string(file).unwrap(),
        &mansign::Limits::default(),
    )
    .unwrap();
    let object = docs[0].1.clone();
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "e911857d-c318-11e8-bbad-025000000001",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": object["metadata"]["name"],
            "namespace": "team-a",
            "operation": "CREATE",
            "userInfo": {"username": "someone"},
            "object": object,
            "dryRun": false,
        }
    })
}

/// How the peers are pointed at a Sigstore instance for one matrix.
#[derive(Default)]
struct Setting {
    /// Environment of every `kubectl-kyverno` run (cosign reads the trust material there).
    kyverno_env: Vec<(&'static str, PathBuf)>,
    /// The trust root of every mansign route (`--trusted-root`), if not the default.
    trusted_root: Option<PathBuf>,
}

/// A `kubectl-kyverno` process with the setting's environment; any request to a public
/// instance would go to a dead proxy (the test never reaches the network).
fn kyverno(home: &Path, setting: &Setting, args: &[&OsStr]) -> Run {
    let mut cmd = common::peers::peer_command("kubectl-kyverno", home);
    cmd.env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost");
    for (k, v) in &setting.kyverno_env {
        cmd.env(k, v);
    }
    cmd.args(args);
    common::peers::run_bounded(cmd, None)
}

/// A mansign command `sub` (the subcommand words) with the setting's trust root.
fn mansign_with(setting: &Setting, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = mansign();
    for v in AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.args(args);
    if let Some(root) = &setting.trusted_root {
        cmd.arg("--trusted-root").arg(root);
    }
    cmd
}

/// What one matrix counted.
struct Tally {
    cases: usize,
    agree: usize,
    differ: usize,
}

/// Runs every case through `kubectl-kyverno apply` and mansign's three routes (`verify
/// --policy`, `admission review` of an AdmissionReview of the object, `verify --policy` of
/// `policy convert`'s output), asserting the verdicts; then the whole matrix as one
/// `kubectl-kyverno test` suite. `tag` names the matrix in file names and output.
fn run_matrix(d: &Path, home: &Path, tag: &str, cases: &[Case], setting: &Setting) -> Tally {
    let (mut agree, mut differ) = (0, 0);
    let mut suite_results = String::new();
    let mut suite_files = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let policy_name = format!("{tag}-case-{i}");
        let policy_file = write(
            d,
            &format!("{tag}-policy-{i}.yaml"),
            &policy(&policy_name, &case.policy),
        );
        let os = |s: &Path| s.as_os_str().to_owned();
        let kyverno_run = kyverno(
            home,
            setting,
            &[
                OsStr::new("apply"),
                &os(&policy_file),
                OsStr::new("--resource"),
                &os(&case.resource),
            ],
        );
        let theirs = kyverno_verdict(&kyverno_run);

        let verify = |policy: &Path, what: &str| {
            let out = mansign_with(setting, &["verify"])
                .arg("--policy")
                .arg(policy)
                .arg("-f")
                .arg(&case.resource)
                .output()
                .unwrap();
            (exit_verdict(&out, what), out)
        };
        let (ours, ours_out) = verify(&policy_file, "mansign verify --policy");
        let review = write(
            d,
            &format!("{tag}-review-{i}.json"),
            &review_for(&case.resource).to_string(),
        );
        let admission = exit_verdict(
            &mansign_with(setting, &["admission", "review"])
                .arg("--policy")
                .arg(&policy_file)
                .arg("-f")
                .arg(&review)
                .output()
                .unwrap(),
            "mansign admission review",
        );
        let converted = d.join(format!("{tag}-converted-{i}.yaml"));
        let convert = mansign_with(setting, &["policy", "convert"])
            .arg(&policy_file)
            .arg("-o")
            .arg(&converted)
            .output()
            .unwrap();
        // A policy mansign refuses converts to nothing: the route's verdict is the refusal.
        let via_convert = match exit_verdict(&convert, "mansign policy convert") {
            Verdict::Pass => verify(&converted, "mansign verify --policy (converted)").0,
            other => other,
        };
        println!(
            "{tag} case {i} {}: kyverno {theirs:?}, mansign verify {ours:?}, admission review \
             {admission:?}, converted policy {via_convert:?}",
            case.name
        );
        assert_eq!(
            ours, admission,
            "{}: verify and admission review",
            case.name
        );
        assert_eq!(ours, via_convert, "{}: the converted policy", case.name);
        match case.differs {
            None => {
                assert_eq!(
                    ours,
                    theirs,
                    "{}: kyverno said {kyverno_run:?}\nmansign said {}",
                    case.name,
                    String::from_utf8_lossy(&ours_out.stdout)
                );
                agree += 1;
            }
            Some((k, m, why, says)) => {
                assert_eq!(
                    (theirs, ours),
                    (k, m),
                    "{}: {why}\nkyverno said {kyverno_run:?}\nmansign said {}{}",
                    case.name,
                    String::from_utf8_lossy(&ours_out.stdout),
                    String::from_utf8_lossy(&ours_out.stderr)
                );
                let text = common::all_output(&ours_out);
                assert!(
                    text.contains(says),
                    "{}: mansign says {says:?}: {text}",
                    case.name
                );
                println!("  differs on purpose: {why}\n  mansign: {text}");
                differ += 1;
            }
        }
        // Kyverno reports a refusal as `fail` or, when no signature set verifies with the
        // policy's keys, as `error`; both are a refusal, so the suite expects whichever
        // Kyverno's `apply` printed. The suite's expected verdict is mansign's, except where
        // the two differ on purpose (asserted above): there it is Kyverno's own.
        let expected = if case.differs.is_some() { theirs } else { ours };
        let errored = kyverno_run.all().contains(", fail: 0, warn: 0, error: 1");
        let result = match (expected, errored) {
            (Verdict::Pass, _) => "pass",
            (_, false) => "fail",
            (_, true) => "error",
        };
        let name = std::fs::read_to_string(&case.resource)
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("  name: ").map(str::to_string))
            .unwrap();
        suite_files.push((
            format!("{tag}-policy-{i}.yaml"),
            format!("resource-{i}.yaml"),
            case.resource.clone(),
        ));
        suite_results.push_str(&format!(
            "- policy: {policy_name}\n  rule: manifests\n  kind: ConfigMap\n  resources:\n  - team-a/{name}\n  result: {result}\n"
        ));
    }
    println!(
        "{tag}: {} cases: {agree} same verdict in Kyverno and mansign (verify, admission \
         review, converted policy), {differ} documented differences (both verdicts asserted)",
        cases.len()
    );

    // The same matrix as one `kubectl-kyverno test` suite.
    let suite = d.join(format!("{tag}-suite"));
    std::fs::create_dir_all(&suite).unwrap();
    for (policy, copy, original) in &suite_files {
        std::fs::copy(d.join(policy), suite.join(policy)).unwrap();
        std::fs::copy(original, suite.join(copy)).unwrap();
    }
    let policies: String = suite_files
        .iter()
        .map(|(p, _, _)| format!("- {p}\n"))
        .collect();
    let resources: String = suite_files
        .iter()
        .map(|(_, r, _)| format!("- {r}\n"))
        .collect();
    let test = format!(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: mansign-verdicts\npolicies:\n{policies}resources:\n{resources}results:\n{suite_results}"
    );
    write(&suite, "kyverno-test.yaml", &test);
    let run = kyverno(home, setting, &[OsStr::new("test"), suite.as_os_str()]);
    println!("kubectl-kyverno test of the {tag} matrix:\n{}", run.all());
    assert!(
        run.success,
        "kubectl-kyverno test disagrees with the expected verdicts: {run:?}"
    );
    let summary = format!(
        "Test Summary: {} tests passed and 0 tests failed",
        cases.len()
    );
    assert!(run.all().contains(&summary), "{summary}: {run:?}");
    Tally {
        cases: cases.len(),
        agree,
        differ,
    }
}

#[test]
fn kyverno_and_mansign_give_the_same_verdicts_on_validate_manifests_policies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let keys = Keys {
        k: (1..=3).map(|i| key_pair(d, &format!("k{i}"))).collect(),
    };
    let cases = cases(d, &keys);
    let t = run_matrix(d, &home, "keys", &cases, &Setting::default());
    println!(
        "key matrix: {} cases, {} agreements, {} documented differences",
        t.cases, t.agree, t.differ
    );
    assert_eq!((t.cases, t.agree, t.differ), (20, 17, 3));
    // The same suite under `mansign policy test`, Kyverno's `error`/`fail` split included:
    // its expectations are Kyverno's verdicts, so exactly the 3 documented differences fail.
    let suite = d.join("keys-suite");
    let out = mansign()
        .args(["policy", "test"])
        .arg(&suite)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("mansign policy test of the key matrix:\n{text}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Test Summary: 17 tests passed and 3 tests failed"),
        "{text}"
    );
}

/// Kyverno's own CLI test suite for manifest verification (testdata/kyverno/
/// cli-verify-signature, copied from kyverno/kyverno): `kubectl-kyverno test` passes it, and
/// mansign gives each resource the verdict the suite expects.
#[test]
fn kyverno_own_manifest_suite_passes_and_mansign_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let suite = common::fixture("kyverno/cli-verify-signature");
    let run = run_peer(
        "kubectl-kyverno",
        dir.path(),
        &[OsStr::new("test"), suite.as_os_str()],
    );
    println!("{}", run.all());
    assert!(run.success, "{run:?}");
    let test: Value =
        common::ci_yaml(&std::fs::read_to_string(suite.join("kyverno-test.yaml")).unwrap());
    let results = test["results"].as_array().unwrap();
    let resources = mansign::manifest::parse_documents(
        &std::fs::read_to_string(suite.join("resources.yaml")).unwrap(),
        &mansign::Limits::default(),
    )
    .unwrap();
    let mut checked = 0;
    for r in results {
        let name = r["resources"][0].as_str().unwrap();
        let want = r["result"].as_str().unwrap();
        let rule = r["rule"].as_str().unwrap();
        let object = resources
            .iter()
            .map(|(_, v)| v)
            .find(|v| v["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("resource {name}"));
        let file = write(
            dir.path(),
            &format!("{name}.yaml"),
            &mansign::manifest::to_yaml(object),
        );
        // Only the rule the result is about.
        let policies = std::fs::read_to_string(suite.join("policies.yaml")).unwrap();
        let one_rule = only_rule(&policies, rule);
        let policy = write(dir.path(), &format!("{name}-{rule}.yaml"), &one_rule);
        let out = mansign()
            .args(["verify", "--policy"])
            .arg(&policy)
            .arg("-f")
            .arg(&file)
            .output()
            .unwrap();
        let ours = exit_verdict(&out, "mansign verify --policy");
        let expected = if want == "pass" {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        println!("{name} / {rule}: kyverno suite expects {want}, mansign {ours:?}");
        assert_eq!(ours, expected, "{name} / {rule}");
        checked += 1;
    }
    println!("{checked} results of Kyverno's suite, mansign agrees with each");
}

/// The policy file with only rule `rule` kept (a rule is a `  - match:` item of `rules:`).
fn only_rule(policies: &str, rule: &str) -> String {
    let mut v = mansign::manifest::parse_documents(policies, &mansign::Limits::default())
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .next()
        .unwrap();
    let rules = v["spec"]["rules"].as_array_mut().unwrap();
    rules.retain(|r| r["name"] == rule);
    assert_eq!(rules.len(), 1, "rule {rule}");
    mansign::manifest::to_yaml(&v)
}

/// A `keyless` attestor entry at `indent` (the `- keyless:` line), carrying the instance's
/// trust material in Kyverno's own fields: `roots` (Fulcio certificates), `rekor.url` and
/// `rekor.pubkey`, `ctlog.pubkey`. `issuer` is left out when `None`.
fn keyless_entry(
    subject: &str,
    issuer: Option<&str>,
    pems: &stack::TrustPems,
    rekor_url: &str,
    indent: usize,
) -> String {
    let pad = " ".repeat(indent);
    let block = |text: &str, by: usize| -> String {
        let pad = " ".repeat(indent + by);
        text.trim().lines().map(|l| format!("{pad}{l}\n")).collect()
    };
    let issuer = issuer.map_or(String::new(), |i| format!("{pad}    issuer: {i}\n"));
    format!(
        "{pad}- keyless:\n{pad}    subject: {subject}\n{issuer}{pad}    roots: |-\n{}{pad}    rekor:\n{pad}      url: {rekor_url}\n{pad}      pubkey: |-\n{}{pad}    ctlog:\n{pad}      pubkey: |-\n{}",
        block(&pems.fulcio, 6),
        block(&pems.rekor, 8),
        block(&pems.ctlog, 8),
    )
}

/// mansign signs `input` keylessly on `stack` into `out`, appending to signatures already
/// there when `append`.
fn sign_keyless(stack: &stack::Stack, input: &Path, out: &Path, append: bool) {
    let flags: &[&str] = if append { &["--append"] } else { &[] };
    stack.keyless_sign_to(mansign(), flags, input, out, stack.id_token_file());
}

/// Keyless `validate.manifests` entries on the loopback Sigstore stack (mansign signs with
/// the stack's Fulcio and Rekor). Kyverno's manifest path reads the trust material from
/// cosign's environment only: the policy's `roots` is parsed and then not passed on
/// (k8s-manifest-sigstore `VerifyResource` hands cosign no root pool), and `rekor.pubkey` /
/// `ctlog.pubkey` are never read (kyverno v1.19.0 `buildVerifyResourceOptionsAndPath`), so
/// without `SIGSTORE_ROOT_FILE` and `SIGSTORE_REKOR_PUBLIC_KEY` it goes to the public TUF
/// repository for both (pinned first, through a dead proxy). With them, the matrix:
/// subject and issuer, another subject, a tampered and an unsigned object, a key
/// signature, keyless and key entries mixed, and where mansign is deliberately stricter
/// (issuer required, the issuer checked, distinct signers, the certificate chain checked).
#[test]
fn kyverno_and_mansign_on_keyless_entries_on_the_local_sigstore_stack() {
    let stack = stack::Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pems = stack.trust_pems();
    let fulcio_pem = write(d, "fulcio-roots.pem", &pems.fulcio);
    let rekor_pem = write(d, "rekor.pub", &pems.rekor);
    let (k1, p1) = key_pair(d, "k1");
    let (subject, issuer) = (stack.identity(), stack.issuer());
    let res = |name: &str| write(d, &format!("{name}.yaml"), &CM.replace("NAME", name));
    let keyless_signed = |name: &str| {
        let out = d.join(format!("{name}.signed.yaml"));
        sign_keyless(&stack, &res(name), &out, false);
        out
    };
    let entry = |subject: &str, issuer: Option<&str>, indent: usize| {
        keyless_entry(subject, issuer, &pems, stack.rekor_url(), indent)
    };
    let one = |subject: &str, issuer: Option<&str>| {
        format!(
            "        attestors:\n        - entries:\n{}",
            entry(subject, issuer, 10)
        )
    };

    // Pinned: the policy's own trust fields do not point Kyverno at the stack.
    let base = write(
        d,
        "fields-only.yaml",
        &policy("fields-only", &one(subject, Some(issuer))),
    );
    let signed = keyless_signed("kl-fields");
    let apply = |setting: &Setting| {
        kyverno(
            &home,
            setting,
            &[
                OsStr::new("apply"),
                base.as_os_str(),
                OsStr::new("--resource"),
                signed.as_os_str(),
                OsStr::new("-v"),
                OsStr::new("2"),
            ],
        )
    };
    let no_env = apply(&Setting::default());
    println!("keyless, policy fields only: {}", no_env.all());
    assert!(
        no_env.all().contains("pass: 0, fail: 0, warn: 0, error: 1")
            && no_env.all().contains("failed to get rekor pubkeys")
            && no_env.all().contains("tuf-repo-cdn.sigstore.dev"),
        "Kyverno ignores `rekor.pubkey` and asks the public TUF repository: {no_env:?}"
    );
    let rekor_only = apply(&Setting {
        kyverno_env: vec![("SIGSTORE_REKOR_PUBLIC_KEY", rekor_pem.clone())],
        trusted_root: None,
    });
    assert!(
        rekor_only
            .all()
            .contains("pass: 0, fail: 0, warn: 0, error: 1")
            && rekor_only.all().contains("failed to get fulcio root")
            && rekor_only.all().contains("tuf-repo-cdn.sigstore.dev"),
        "Kyverno ignores `roots` and asks the public TUF repository: {rekor_only:?}"
    );
    let ours = mansign_with(
        &Setting {
            kyverno_env: vec![],
            trusted_root: Some(stack.trusted_root()),
        },
        &["verify"],
    )
    .arg("--policy")
    .arg(&base)
    .arg("-f")
    .arg(&signed)
    .output()
    .unwrap();
    assert_eq!(
        exit_verdict(&ours, "mansign verify --policy"),
        Verdict::Pass,
        "mansign takes the stack's trust root: {ours:?}"
    );
    println!(
        "pinned: Kyverno reads neither roots nor rekor.pubkey (error, public TUF asked); \
         mansign verifies with the stack's trusted root"
    );

    let setting = Setting {
        kyverno_env: vec![
            ("SIGSTORE_ROOT_FILE", fulcio_pem.clone()),
            ("SIGSTORE_REKOR_PUBLIC_KEY", rekor_pem.clone()),
        ],
        trusted_root: Some(stack.trusted_root()),
    };
    let key_then_keyless = {
        let key_signed = d.join("mixed.key.yaml");
        sign(&res("mixed"), &key_signed, &k1, &[]);
        let out = d.join("mixed.signed.yaml");
        sign_keyless(&stack, &key_signed, &out, true);
        out
    };
    let tampered = {
        let file = keyless_signed("kl-tampered");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replacen("mode: strict", "mode: lax", 1)).unwrap();
        file
    };
    let cases = vec![
        Case {
            name: "keyless subject and issuer, signed on the stack",
            policy: one(subject, Some(issuer)),
            resource: keyless_signed("kl-one"),
            differs: None,
        },
        Case {
            name: "keyless, another subject",
            policy: one("someone-else@example.com", Some(issuer)),
            resource: keyless_signed("kl-other"),
            differs: None,
        },
        Case {
            name: "keyless, a field changed after signing",
            policy: one(subject, Some(issuer)),
            resource: tampered,
            differs: None,
        },
        Case {
            name: "keyless, unsigned",
            policy: one(subject, Some(issuer)),
            resource: res("kl-unsigned"),
            differs: None,
        },
        Case {
            name: "keyless entry, signed with a key only",
            policy: one(subject, Some(issuer)),
            resource: {
                let out = d.join("kl-key.signed.yaml");
                sign(&res("kl-key"), &out, &k1, &[]);
                out
            },
            differs: None,
        },
        Case {
            name: "count 1 of a keyless entry and a key, signed keylessly",
            policy: format!(
                "        attestors:\n        - count: 1\n          entries:\n{}{}",
                entry(subject, Some(issuer), 10),
                key_entry(&p1, 10)
            ),
            resource: keyless_signed("kl-either"),
            differs: None,
        },
        Case {
            name: "a keyless set and a key set, signed by both",
            policy: format!(
                "        attestors:\n        - entries:\n{}        - entries:\n{}",
                entry(subject, Some(issuer), 10),
                key_entry(&p1, 10)
            ),
            resource: key_then_keyless.clone(),
            differs: Some((
                Verdict::Fail,
                Verdict::Pass,
                "Kyverno's option state leaks across entries: the keyless entry leaves \
                 `Signers = [subject]` in the shared VerifyResourceOption, and the key \
                 entry after it then requires a key signature to be signed by that subject \
                 (kyverno v1.19.0 validate_manifest.go, one `vo` for every entry)",
                "1 of 1 document(s) verified",
            )),
        },
        // mansign is deliberately stricter (docs/compatibility.md, "Disagreements").
        Case {
            name: "keyless subject without an issuer",
            policy: one(subject, None),
            resource: keyless_signed("kl-no-issuer"),
            differs: Some((
                Verdict::Pass,
                Verdict::Refused,
                "issuer required: Kyverno checks only the subject; mansign refuses a keyless \
                 entry without an issuer (anyone whose identity provider issues that subject \
                 would pass) unless told --insecure-any-issuer, and `policy convert` asks \
                 for --issuer or --from-signed",
                "keyless needs issuer or issuerRegExp",
            )),
        },
        Case {
            name: "keyless subject with another issuer",
            policy: one(subject, Some("https://issuer.invalid")),
            resource: keyless_signed("kl-wrong-issuer"),
            differs: Some((
                Verdict::Pass,
                Verdict::Fail,
                "full keyless checks: on the bundle path Kyverno (cosign VerifyBundle) never \
                 compares the certificate's issuer with `issuer`; mansign does",
                "is not \"https://issuer.invalid\"",
            )),
        },
        Case {
            name: "count 2 of the same keyless identity twice, one signature",
            policy: format!(
                "        attestors:\n        - count: 2\n          entries:\n{}{}",
                entry(subject, Some(issuer), 10),
                entry(subject, Some(issuer), 10)
            ),
            resource: keyless_signed("kl-count-same"),
            differs: Some((
                Verdict::Pass,
                Verdict::Fail,
                "distinct signers: one keyless signature satisfies both entries in Kyverno; \
                 mansign assigns each counted entry its own signature",
                "already counted for another entry of this set (each signer counts once)",
            )),
        },
    ];
    let t = run_matrix(d, &home, "keyless", &cases, &setting);

    // The issuer-less entry in mansign: accepted with --insecure-any-issuer (saying so), and
    // `policy convert --from-signed` pins the issuer the signatures show, after which it
    // verifies.
    let no_issuer = d.join("keyless-policy-7.yaml");
    let signed = &cases[7].resource;
    let insecure = mansign_with(&setting, &["verify"])
        .args(["--insecure-any-issuer", "--policy"])
        .arg(&no_issuer)
        .arg("-f")
        .arg(signed)
        .output()
        .unwrap();
    assert_eq!(
        exit_verdict(&insecure, "--insecure-any-issuer"),
        Verdict::Pass
    );
    assert!(
        String::from_utf8_lossy(&insecure.stdout).contains("issuer not checked"),
        "{insecure:?}"
    );
    let pinned = d.join("keyless-learned.yaml");
    mansign_with(&setting, &["policy", "convert"])
        .arg("--from-signed")
        .arg(signed)
        .arg("-o")
        .arg(&pinned)
        .arg(&no_issuer)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&pinned).unwrap().contains(issuer));
    let learned = mansign_with(&setting, &["verify"])
        .arg("--policy")
        .arg(&pinned)
        .arg("-f")
        .arg(signed)
        .output()
        .unwrap();
    assert_eq!(
        exit_verdict(&learned, "converted with --from-signed"),
        Verdict::Pass
    );

    // Full keyless checks, the chain: a signature made on another stack (its own Fulcio CA,
    // Rekor and CT log), Kyverno given this stack's Fulcio root and the other stack's Rekor
    // key, mansign a trusted root of this stack's Fulcio CA and the other stack's logs.
    // Kyverno checks the bundle's SET and not the chain (cosign VerifyBundle), so it
    // accepts a certificate no trusted CA issued; mansign refuses it.
    let other = stack::Stack::start();
    let other_pems = other.trust_pems();
    assert_ne!(other_pems.fulcio, pems.fulcio, "two stacks, two Fulcio CAs");
    let foreign = {
        let out = d.join("kl-foreign.signed.yaml");
        sign_keyless(&other, &res("kl-foreign"), &out, false);
        out
    };
    let mut mixed_root: Value =
        serde_json::from_slice(&std::fs::read(stack.trusted_root()).unwrap()).unwrap();
    let other_root: Value =
        serde_json::from_slice(&std::fs::read(other.trusted_root()).unwrap()).unwrap();
    mixed_root["tlogs"] = other_root["tlogs"].clone();
    mixed_root["ctlogs"] = other_root["ctlogs"].clone();
    let mixed_root_file = write(d, "mixed-trusted-root.json", &mixed_root.to_string());
    let mixed_pems = stack::TrustPems {
        fulcio: pems.fulcio.clone(),
        rekor: other_pems.rekor.clone(),
        ctlog: other_pems.ctlog.clone(),
    };
    let chain_setting = Setting {
        kyverno_env: vec![
            ("SIGSTORE_ROOT_FILE", fulcio_pem.clone()),
            (
                "SIGSTORE_REKOR_PUBLIC_KEY",
                write(d, "other-rekor.pub", &other_pems.rekor),
            ),
        ],
        trusted_root: Some(mixed_root_file),
    };
    let chain_cases = vec![Case {
        name: "keyless, a certificate from a CA the policy does not trust",
        policy: format!(
            "        attestors:\n        - entries:\n{}",
            keyless_entry(
                other.identity(),
                Some(other.issuer()),
                &mixed_pems,
                other.rekor_url(),
                10
            )
        ),
        resource: foreign,
        differs: Some((
            Verdict::Pass,
            Verdict::Fail,
            "full keyless checks: Kyverno verifies the bundle's SET with the Rekor key and \
             reads the signer from the certificate without checking its chain to `roots` or \
             to SIGSTORE_ROOT_FILE; mansign checks the chain, the SCT and the log entry",
            "certificate does not chain to a trusted Fulcio root",
        )),
    }];
    let c = run_matrix(d, &home, "keyless-chain", &chain_cases, &chain_setting);
    println!(
        "keyless matrix: {} cases, {} agreements, {} documented differences \
         (+ the policy-fields pin above)",
        t.cases + c.cases,
        t.agree + c.agree,
        t.differ + c.differ
    );
    assert_eq!(
        (t.cases + c.cases, t.agree + c.agree, t.differ + c.differ),
        (11, 6, 5)
    );
}

/// Kyverno gave no result at all: the policy applied no rule to the resource.
const NO_RESULT: (u64, u64, u64, u64, u64) = (0, 0, 0, 0, 0);
/// Kyverno's `error` (a refusal, as `run_matrix` reads it).
const ERROR: (u64, u64, u64, u64, u64) = (0, 0, 0, 1, 0);
const PASS: (u64, u64, u64, u64, u64) = (1, 0, 0, 0, 0);

/// A ClusterPolicy like [`policy`] with the rule's `failureAction`, extra `match` lines under
/// the resources (indented 10) and the attestors' body.
fn policy_with(name: &str, action: &str, match_extra: &str, manifests: &str) -> String {
    policy(name, manifests)
        .replace(
            "failureAction: Enforce",
            &format!("failureAction: {action}"),
        )
        .replace(
            "          kinds:\n          - ConfigMap\n",
            &format!("          kinds:\n          - ConfigMap\n{match_extra}"),
        )
}

/// `mansign verify --policy POLICY -f RESOURCE`: its verdict and everything it printed.
fn mansign_verdict(policy: &Path, resource: &Path) -> (Verdict, String) {
    let out = mansign_with(&Setting::default(), &["verify"])
        .arg("--policy")
        .arg(policy)
        .arg("-f")
        .arg(resource)
        .output()
        .unwrap();
    (
        exit_verdict(&out, "mansign verify --policy"),
        common::all_output(&out),
    )
}

/// Issue 41, item 9 (docs/compatibility.md, "Disagreements"): two PEM keys in one
/// `publicKeys` value. Kyverno v1.19 splits the value but keeps the line break before the
/// second key, which it then reads as a file path: only the first key works, and a
/// signature that needs the second gives `error`. mansign reads both keys, as the author
/// meant, and `policy explain` says where the two differ.
#[test]
fn two_keys_in_one_public_keys_value_kyverno_reads_only_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (k1, p1) = key_pair(d, "k1");
    let (k2, p2) = key_pair(d, "k2");
    let both = format!(
        "{}{}",
        std::fs::read_to_string(&p1).unwrap(),
        std::fs::read_to_string(&p2).unwrap()
    );
    let both_file = write(d, "both.pub", &both);
    let entries = |count: &str| {
        format!(
            "        attestors:\n        - {count}entries:\n          - keys:\n              publicKeys: |-\n{}              signatureAlgorithm: sha256\n",
            key_block(&both_file, 16)
        )
    };
    let unsigned = write(d, "cm.yaml", &CM.replace("NAME", "cm"));
    let by_k1 = d.join("cm.k1.yaml");
    sign(&unsigned, &by_k1, &k1, &[]);
    let by_k2 = d.join("cm.k2.yaml");
    sign(&unsigned, &by_k2, &k2, &[]);
    let by_both = d.join("cm.k12.yaml");
    sign(&by_k1, &by_both, &k2, &["--append"]);
    let all = write(d, "all.yaml", &policy("two-keys-all", &entries("")));
    let one = write(
        d,
        "one.yaml",
        &policy("two-keys-one", &entries("count: 1\n          ")),
    );
    for (name, policy, resource, kyverno_says, mansign_says) in [
        (
            "every entry, signed by both keys",
            &all,
            &by_both,
            ERROR,
            Verdict::Pass,
        ),
        (
            "count 1, signed by the second key",
            &one,
            &by_k2,
            ERROR,
            Verdict::Pass,
        ),
        (
            "count 1, signed by the first key",
            &one,
            &by_k1,
            PASS,
            Verdict::Pass,
        ),
    ] {
        let os = |p: &Path| p.as_os_str().to_owned();
        let run = kyverno(
            &home,
            &Setting::default(),
            &[
                OsStr::new("apply"),
                &os(policy),
                OsStr::new("--resource"),
                &os(resource),
            ],
        );
        let (ours, text) = mansign_verdict(policy, resource);
        println!(
            "{name}: kyverno {:?}, mansign {ours:?}",
            kyverno_apply_counts(&run)
        );
        assert_eq!(kyverno_apply_counts(&run), kyverno_says, "{name}: {run:?}");
        assert_eq!(ours, mansign_says, "{name}: {text}");
        assert!(
            text.contains(
                "2 keys in one value, each read as its own entry; Kyverno v1.19 uses only the first"
            ),
            "{name}: the note: {text}"
        );
    }
    let explained = mansign()
        .args(["policy", "explain"])
        .arg(&all)
        .output()
        .unwrap();
    let text = common::all_output(&explained);
    assert!(explained.status.success(), "{text}");
    assert!(
        text.contains("publicKeys: 2 keys in one value")
            && text.contains("give each key its own entry to be read alike"),
        "policy explain notes it: {text}"
    );
}

/// Issue 41, items 10 and 11 (docs/compatibility.md, "Disagreements"): spellings the Kyverno
/// CLI applies no rule for (`count: 0`, a lower-case rule-level `validate.failureAction`;
/// Kyverno's CRD refuses both: `count` has `minimum: 1` and `failureAction` the enum
/// `Audit`/`Enforce`), and conditions offline `verify` cannot know (an operation, the
/// namespace of an object without one), which mansign takes as met. In each case Kyverno
/// gives no result; mansign applies the rule, so it can deny.
#[test]
fn spellings_kyverno_applies_no_rule_to_and_unknowns_offline_verify_takes_as_met() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (k1, p1) = key_pair(d, "k1");
    let (k2, p2) = key_pair(d, "k2");
    let two = |count: &str| {
        format!(
            "        attestors:\n        - {count}entries:\n{}{}",
            key_entry(&p1, 10),
            key_entry(&p2, 10)
        )
    };
    let unsigned = write(d, "cm.yaml", &CM.replace("NAME", "cm"));
    let by_k1 = d.join("cm.k1.yaml");
    sign(&unsigned, &by_k1, &k1, &[]);
    let by_both = d.join("cm.k12.yaml");
    sign(&by_k1, &by_both, &k2, &["--append"]);
    let no_namespace = write(
        d,
        "cm-no-namespace.yaml",
        &CM.replace("NAME", "cmn")
            .replace("  namespace: team-a\n", ""),
    );
    let cases: [(&str, String, &Path, Verdict, &str); 7] = [
        (
            "count 0, signed by one of two keys",
            policy_with("count-zero", "Enforce", "", &two("count: 0\n          ")),
            &by_k1,
            Verdict::Fail,
            "1 of 2 required entries verified",
        ),
        (
            "count 0, signed by both keys",
            policy_with("count-zero", "Enforce", "", &two("count: 0\n          ")),
            &by_both,
            Verdict::Pass,
            "verified",
        ),
        (
            "failureAction enforce, unsigned",
            policy_with("lower-enforce", "enforce", "", &two("")),
            &unsigned,
            Verdict::Fail,
            "FAILED [not-signed] (Enforce)",
        ),
        (
            "failureAction audit, signed by one of two keys",
            policy_with("lower-audit", "audit", "", &two("")),
            &by_k1,
            Verdict::Fail,
            "(Audit) attestor policy not satisfied",
        ),
        (
            "operations [DELETE], unsigned",
            policy_with(
                "delete-only",
                "Enforce",
                "          operations:\n          - DELETE\n",
                &two(""),
            ),
            &unsigned,
            Verdict::Fail,
            "FAILED [not-signed]",
        ),
        (
            "operations [DELETE], signed by both",
            policy_with(
                "delete-only",
                "Enforce",
                "          operations:\n          - DELETE\n",
                &two(""),
            ),
            &by_both,
            Verdict::Pass,
            "verified",
        ),
        (
            "namespaces [team-b], an object without a namespace, unsigned",
            policy_with(
                "team-b-only",
                "Enforce",
                "          namespaces:\n          - team-b\n",
                &two(""),
            ),
            &no_namespace,
            Verdict::Fail,
            "FAILED [not-signed]",
        ),
    ];
    for (i, (name, text, resource, mansign_says, says)) in cases.iter().enumerate() {
        let policy = write(d, &format!("policy-{i}.yaml"), text);
        let os = |p: &Path| p.as_os_str().to_owned();
        let run = kyverno(
            &home,
            &Setting::default(),
            &[
                OsStr::new("apply"),
                &os(&policy),
                OsStr::new("--resource"),
                &os(resource),
            ],
        );
        let (ours, out) = mansign_verdict(&policy, resource);
        println!(
            "{name}: kyverno {:?}, mansign {ours:?}",
            kyverno_apply_counts(&run)
        );
        assert_eq!(kyverno_apply_counts(&run), NO_RESULT, "{name}: {run:?}");
        assert_eq!(ours, *mansign_says, "{name}: {out}");
        assert!(out.contains(says), "{name}: mansign says {says:?}: {out}");
    }
}
