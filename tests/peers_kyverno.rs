//! The real Kyverno CLI (kubectl-kyverno v1.19.0, built by scripts/peers.sh) against mansign
//! on `validate.manifests` policies (issue 22). For each case — keys, several signers with
//! `count`, nested attestor sets, several attestor sets, `ignoreFields`, `annotationDomain`,
//! `dryRun` off — over objects mansign signed (or tampered copies), Kyverno's verdict
//! (`kubectl-kyverno apply POLICY --resource FILE`) must equal mansign's, by three routes:
//! `mansign verify --policy`, `mansign admission review` of an AdmissionReview built from the
//! same object, and `mansign verify --policy` of what `mansign policy convert` made of the
//! policy. Then the whole matrix runs again as one `kubectl-kyverno test` suite whose
//! expected results are mansign's verdicts, and that suite passes under `mansign policy
//! test` too.
//!
//! Where mansign is deliberately stricter the case says so and asserts both verdicts
//! (docs/compatibility.md).

mod common;

use common::peers::{Run, run_peer};
use common::{key_pair, mansign, write};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  namespace: team-a\ndata:\n  mode: strict\n  level: \"3\"\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
}

/// Kyverno's summary line: `pass: N, fail: N, warn: N, error: N, skip: N`.
fn kyverno_verdict(run: &Run) -> Verdict {
    let all = run.all();
    let line = all
        .lines()
        .find(|l| l.trim_start().starts_with("pass: "))
        .unwrap_or_else(|| panic!("no summary in kubectl-kyverno output: {run:?}"));
    let count = |name: &str| -> u64 {
        line.split(',')
            .map(str::trim)
            .find_map(|part| part.strip_prefix(&format!("{name}: ")))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} count in {line:?}"))
    };
    let (pass, fail, error, skip) = (count("pass"), count("fail"), count("error"), count("skip"));
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
        other => panic!(
            "{what} exited {other:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A key's PEM, indented for a policy's `publicKeys: |-` block.
fn key_block(public: &Path, indent: usize) -> String {
    let pad = " ".repeat(indent);
    std::fs::read_to_string(public)
        .unwrap()
        .trim()
        .lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect()
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
    /// mansign is deliberately stricter here: (Kyverno's verdict, mansign's verdict, why).
    stricter: Option<(Verdict, Verdict, &'static str)>,
}

fn sign(input: &Path, out: &Path, key: &Path, extra: &[&str]) {
    mansign()
        .args(["sign", "-f"])
        .arg(input)
        .arg("-k")
        .arg(key)
        .arg("-o")
        .arg(out)
        .args(extra)
        .assert()
        .success();
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
            stricter: None,
        },
        Case {
            name: "one key, signed by another",
            policy: one(p1),
            resource: signed("k-other", &[k2], &[]),
            stricter: None,
        },
        Case {
            name: "one key, unsigned",
            policy: one(p1),
            resource: res("unsigned"),
            stricter: None,
        },
        Case {
            name: "one key, a field changed after signing",
            policy: one(p1),
            resource: tampered(signed("k-tamper", &[k1], &[]), "mode: strict", "mode: lax"),
            stricter: None,
        },
        Case {
            name: "one key, a field added after signing",
            policy: one(p1),
            resource: tampered(
                signed("k-added", &[k1], &[]),
                "  mode: strict",
                "  mode: strict\n  extra: x",
            ),
            stricter: None,
        },
        Case {
            name: "count 2 of 3 keys, signed by two",
            policy: count(2, &[p1, p2, p3]),
            resource: signed("count-two", &[k1, k3], &[]),
            stricter: None,
        },
        Case {
            name: "count 2 of 3 keys, signed by one",
            policy: count(2, &[p1, p2, p3]),
            resource: signed("count-one", &[k2], &[]),
            stricter: None,
        },
        Case {
            name: "count 1 of 2 keys, signed by the second",
            policy: count(1, &[p1, p2]),
            resource: signed("count-second", &[k2], &[]),
            stricter: None,
        },
        Case {
            name: "two attestor sets (both required), signed by both",
            policy: format!(
                "        attestors:\n        - entries:\n{}        - entries:\n{}",
                key_entry(p1, 10),
                key_entry(p2, 10)
            ),
            resource: signed("sets-both", &[k1, k2], &[]),
            stricter: None,
        },
        Case {
            name: "two attestor sets (both required), signed by one",
            policy: format!(
                "        attestors:\n        - entries:\n{}        - entries:\n{}",
                key_entry(p1, 10),
                key_entry(p2, 10)
            ),
            resource: signed("sets-one", &[k1], &[]),
            stricter: None,
        },
        Case {
            name: "nested attestor set and a key, count 2, signed by both",
            policy: format!(
                "        attestors:\n        - count: 2\n          entries:\n          - attestor:\n              entries:\n{}{}",
                key_entry(p1, 14),
                key_entry(p2, 10)
            ),
            resource: signed("nested-both", &[k1, k2], &[]),
            stricter: None,
        },
        Case {
            name: "nested attestor set and a key, count 2, signed by the nested key only",
            policy: format!(
                "        attestors:\n        - count: 2\n          entries:\n          - attestor:\n              entries:\n{}{}",
                key_entry(p1, 14),
                key_entry(p2, 10)
            ),
            resource: signed("nested-one", &[k1], &[]),
            stricter: None,
        },
        Case {
            name: "ignoreFields data.mode, data.mode changed",
            policy: format!(
                "{}        ignoreFields:\n        - objects:\n          - kind: ConfigMap\n          fields:\n          - data.mode\n",
                one(p1)
            ),
            resource: tampered(signed("ignored", &[k1], &[]), "mode: strict", "mode: lax"),
            stricter: None,
        },
        Case {
            name: "ignoreFields data.mode, data.level changed",
            policy: format!(
                "{}        ignoreFields:\n        - objects:\n          - kind: ConfigMap\n          fields:\n          - data.mode\n",
                one(p1)
            ),
            resource: tampered(signed("not-ignored", &[k1], &[]), "\"3\"", "\"4\""),
            stricter: None,
        },
        Case {
            name: "annotationDomain example.com, signed there",
            policy: format!("{}        annotationDomain: example.com\n", one(p1)),
            resource: signed("domain", &[k1], &["--annotation-domain", "example.com"]),
            stricter: None,
        },
        Case {
            name: "annotationDomain example.com, signed under cosign.sigstore.dev",
            policy: format!("{}        annotationDomain: example.com\n", one(p1)),
            resource: signed("domain-default", &[k1], &[]),
            stricter: None,
        },
        Case {
            name: "default domain, signed under example.com",
            policy: one(p1),
            resource: signed(
                "domain-other",
                &[k1],
                &["--annotation-domain", "example.com"],
            ),
            stricter: None,
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
    let (mut agree, mut stricter) = (0, 0);
    let mut suite_results = String::new();
    let mut suite_policies = Vec::new();
    let mut suite_resources = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let policy_name = format!("case-{i}");
        let policy_file = write(
            d,
            &format!("policy-{i}.yaml"),
            &policy(&policy_name, &case.policy),
        );
        let os = |s: &Path| s.as_os_str().to_owned();
        let kyverno = run_peer(
            "kubectl-kyverno",
            &home,
            &[
                OsStr::new("apply"),
                &os(&policy_file),
                OsStr::new("--resource"),
                &os(&case.resource),
            ],
        );
        let theirs = kyverno_verdict(&kyverno);

        let ours = exit_verdict(
            &mansign()
                .args(["verify", "--policy"])
                .arg(&policy_file)
                .arg("-f")
                .arg(&case.resource)
                .output()
                .unwrap(),
            "mansign verify --policy",
        );
        let review = write(
            d,
            &format!("review-{i}.json"),
            &review_for(&case.resource).to_string(),
        );
        let admission = exit_verdict(
            &mansign()
                .args(["admission", "review", "--policy"])
                .arg(&policy_file)
                .arg("-f")
                .arg(&review)
                .output()
                .unwrap(),
            "mansign admission review",
        );
        let converted = d.join(format!("converted-{i}.yaml"));
        mansign()
            .args(["policy", "convert"])
            .arg(&policy_file)
            .arg("-o")
            .arg(&converted)
            .assert()
            .success();
        let via_convert = exit_verdict(
            &mansign()
                .args(["verify", "--policy"])
                .arg(&converted)
                .arg("-f")
                .arg(&case.resource)
                .output()
                .unwrap(),
            "mansign verify --policy (converted)",
        );
        println!(
            "case {i} {}: kyverno {theirs:?}, mansign verify {ours:?}, admission review \
             {admission:?}, converted policy {via_convert:?}",
            case.name
        );
        assert_eq!(
            ours, admission,
            "{}: verify and admission review",
            case.name
        );
        assert_eq!(ours, via_convert, "{}: the converted policy", case.name);
        match case.stricter {
            None => {
                assert_eq!(ours, theirs, "{}: kyverno said {kyverno:?}", case.name);
                agree += 1;
            }
            Some((k, m, why)) => {
                assert_eq!((theirs, ours), (k, m), "{}: {why}", case.name);
                stricter += 1;
            }
        }
        // Kyverno reports a refusal as `fail` or, when no signature set verifies with the
        // policy's keys, as `error`; both are a refusal, so the suite expects whichever
        // Kyverno's `apply` printed for a case mansign refuses.
        let errored = kyverno.all().contains(", fail: 0, warn: 0, error: 1");
        let result = match (ours, errored) {
            (Verdict::Pass, _) => "pass",
            (Verdict::Fail, false) => "fail",
            (Verdict::Fail, true) => "error",
        };
        let name = std::fs::read_to_string(&case.resource)
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("  name: ").map(str::to_string))
            .unwrap();
        // One suite: every policy and resource, each result as mansign decided.
        let resource_copy = format!("resource-{i}.yaml");
        suite_policies.push(format!("policy-{i}.yaml"));
        suite_resources.push((resource_copy, case.resource.clone()));
        suite_results.push_str(&format!(
            "- policy: {policy_name}\n  rule: manifests\n  kind: ConfigMap\n  resources:\n  - team-a/{name}\n  result: {result}\n"
        ));
    }
    println!(
        "{} cases: {agree} same verdict in Kyverno and mansign (verify, admission review, \
         converted policy), {stricter} where mansign is deliberately stricter",
        cases.len()
    );

    // The same matrix as a `kubectl-kyverno test` suite whose expected results are
    // mansign's verdicts.
    let suite = d.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    for (i, p) in suite_policies.iter().enumerate() {
        std::fs::copy(d.join(p), suite.join(p)).unwrap();
        let (copy, original) = &suite_resources[i];
        std::fs::copy(original, suite.join(copy)).unwrap();
    }
    let list =
        |items: Vec<String>| -> String { items.iter().map(|i| format!("- {i}\n")).collect() };
    let test = format!(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: mansign-verdicts\npolicies:\n{}resources:\n{}results:\n{suite_results}",
        list(suite_policies.clone()),
        list(suite_resources.iter().map(|(c, _)| c.clone()).collect())
    );
    write(&suite, "kyverno-test.yaml", &test);
    let run = run_peer(
        "kubectl-kyverno",
        &home,
        &[OsStr::new("test"), suite.as_os_str()],
    );
    println!("kubectl-kyverno test of the matrix:\n{}", run.all());
    assert!(
        run.success,
        "kubectl-kyverno test disagrees with mansign: {run:?}"
    );
    assert!(
        run.all()
            .contains("Test Summary: 17 tests passed and 0 tests failed"),
        "{run:?}"
    );
    // The same suite under `mansign policy test`: Kyverno's `error`/`fail` split included.
    let out = mansign()
        .args(["policy", "test"])
        .arg(&suite)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("mansign policy test of the matrix:\n{text}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Test Summary: 17 tests passed and 0 tests failed"),
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
