//! The sigstore-conformance suite's offline verification vectors, run the way the suite
//! runs them (`test_verify[{PATH,DIGEST}-<case>]`, research `conformance-runner.md` §3):
//!
//! for every directory `D` under `bundle-verify/`, with the fixture tree as working
//! directory, `mansign verify-bundle --bundle D/bundle.sigstore.json` then either
//! `--key D/key.pub` or `--certificate-identity` (`D/identity`, else the beacon workflow)
//! and `--certificate-oidc-issuer` (`D/issuer`, else GitHub Actions), then
//! `--trusted-root D/trusted_root.json` if present (else mansign's embedded production
//! root), then the artifact (`D/artifact`, else `bundle-verify/a.txt`) once as a path and
//! once as `sha256:<hex>`. A case whose name ends in `_fail` must exit non-zero, every
//! other case must exit 0. Only the exit status counts, as in the suite.
//!
//! The fixtures are `testdata/sigstore-conformance`, a verbatim copy of the suite's
//! `test/assets/` (provenance in testdata/README.md); without them the test fails.

use crate::common::stub_server;

use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sigstore-conformance");

/// The suite's default identity: the workflow of its public OIDC beacon.
const BEACON: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const GITHUB_ACTIONS: &str = "https://token.actions.githubusercontent.com";

/// Cases whose verdict may differ from the suite's expectation, each with the reason.
/// Keep it minimal: an entry that starts agreeing again fails the test until removed.
/// (Upstream's optional cases — `managed-key-happy-path`, `managed-key-and-trusted-root`,
/// `intoto-with-custom-trust-root`, `trust-root-tsa-validity-end-inclusive` — all pass, so
/// none of them is listed.)
const ALLOWED_TO_DIFFER: &[(&str, &str)] = &[];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Path,
    Digest,
}

impl Input {
    /// As in the suite's item names, `test_verify[PATH-happy-path-v0.1]`.
    fn label(self) -> &'static str {
        match self {
            Input::Path => "PATH",
            Input::Digest => "DIGEST",
        }
    }
}

struct Case {
    name: String,
    dir: PathBuf,
}

impl Case {
    fn expects_success(&self) -> bool {
        !self.name.ends_with("_fail")
    }

    /// The artifact as the suite passes it: relative to the fixture tree.
    fn artifact(&self) -> PathBuf {
        if self.dir.join("artifact").is_file() {
            Path::new("bundle-verify").join(&self.name).join("artifact")
        } else {
            PathBuf::from("bundle-verify/a.txt")
        }
    }

    fn file_or(&self, name: &str, default: &str) -> String {
        std::fs::read_to_string(self.dir.join(name))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| default.to_string())
    }

    /// `verify-bundle` arguments in the order the suite emits them.
    fn arguments(&self, input: Input) -> Vec<String> {
        let mut args = vec![
            "verify-bundle".to_string(),
            "--bundle".into(),
            path_arg(&self.dir.join("bundle.sigstore.json")),
        ];
        let key = self.dir.join("key.pub");
        if key.is_file() {
            args.extend(["--key".into(), path_arg(&key)]);
        } else {
            args.extend([
                "--certificate-identity".into(),
                self.file_or("identity", BEACON),
                "--certificate-oidc-issuer".into(),
                self.file_or("issuer", GITHUB_ACTIONS),
            ]);
        }
        let root = self.dir.join("trusted_root.json");
        if root.is_file() {
            args.extend(["--trusted-root".into(), path_arg(&root)]);
        }
        let artifact = self.artifact();
        args.push(match input {
            Input::Path => path_arg(&artifact),
            Input::Digest => {
                let bytes = std::fs::read(Path::new(FIXTURES).join(&artifact))
                    .unwrap_or_else(|e| panic!("{}: {e}", artifact.display()));
                format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
            }
        });
        args
    }
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn cases() -> Vec<Case> {
    let root = Path::new(FIXTURES).join("bundle-verify");
    let entries = std::fs::read_dir(&root).unwrap_or_else(|e| {
        panic!(
            "sigstore-conformance fixtures not found at {} ({e})",
            root.display()
        )
    });
    let mut cases: Vec<Case> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| Case {
            name: e.file_name().to_string_lossy().into_owned(),
            dir: e.path(),
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

#[test]
fn every_offline_conformance_vector_gets_the_expected_verdict() {
    let cases = cases();
    assert!(
        !cases.is_empty(),
        "no case directories under {FIXTURES}/bundle-verify"
    );
    let (mut passed, mut allowed) = (0usize, 0usize);
    let mut disagreements = Vec::new();
    let mut allowed_but_agreeing = Vec::new();
    for case in &cases {
        let allowance = ALLOWED_TO_DIFFER
            .iter()
            .find(|(name, _)| *name == case.name)
            .map(|(_, reason)| *reason);
        for input in [Input::Path, Input::Digest] {
            let item = format!("{}-{}", input.label(), case.name);
            let output = Command::new(env!("CARGO_BIN_EXE_mansign"))
                .args(case.arguments(input))
                .current_dir(FIXTURES)
                .output()
                .unwrap_or_else(|e| panic!("{item}: cannot run mansign: {e}"));
            let succeeded = output.status.success();
            let agrees = succeeded == case.expects_success();
            let stderr = String::from_utf8_lossy(&output.stderr);
            // mansign writes the reason on the first line of stderr.
            let reason = stderr.lines().next().unwrap_or("").trim();
            match (agrees, allowance) {
                (true, None) => {
                    passed += 1;
                    println!("ok      {item} ({})", verdict(succeeded, reason));
                }
                (false, Some(why)) => {
                    allowed += 1;
                    println!("allowed {item}: {}; {why}", verdict(succeeded, reason));
                }
                (false, None) => {
                    println!("FAILED  {item}: {}", verdict(succeeded, reason));
                    disagreements.push(format!(
                        "{item}: expected {}, got {} (exit {:?}) {reason}",
                        if case.expects_success() {
                            "success"
                        } else {
                            "failure"
                        },
                        if succeeded { "success" } else { "failure" },
                        output.status.code(),
                    ));
                }
                (true, Some(_)) => {
                    passed += 1;
                    allowed_but_agreeing.push(item.clone());
                    println!("ok      {item} (listed as allowed to differ, but agrees)");
                }
            }
        }
    }
    let failed = disagreements.len();
    println!(
        "{passed} passed, {failed} failed ({} cases x PATH/DIGEST; {allowed} allowed to differ)",
        cases.len()
    );
    assert!(
        disagreements.is_empty(),
        "{failed} conformance item(s) disagree with the expected verdict:\n{}",
        disagreements.join("\n")
    );
    assert!(
        allowed_but_agreeing.is_empty(),
        "these items are listed in ALLOWED_TO_DIFFER but now agree; remove them: {}",
        allowed_but_agreeing.join(", ")
    );
}

/// The same vectors through `mansign conformance verify-bundle` (the documented, visible
/// spelling) give the same verdict as the top-level protocol spelling.
#[test]
fn conformance_subcommand_accepts_the_protocol_arguments() {
    let cases = cases();
    for name in ["happy-path-v0.3", "wrong-material_fail"] {
        let case = cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("conformance case {name} is missing"));
        let output = Command::new(env!("CARGO_BIN_EXE_mansign"))
            .arg("conformance")
            .args(case.arguments(Input::Path))
            .current_dir(FIXTURES)
            .output()
            .unwrap();
        assert_eq!(
            output.status.success(),
            case.expects_success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn verdict(succeeded: bool, reason: &str) -> String {
    if succeeded {
        "verified".to_string()
    } else {
        format!("rejected: {reason}")
    }
}

/// `mansign sign-bundle --identity-token TOKEN --bundle a.txt.sigstore.json a.txt` in a
/// fresh directory holding `a.txt` (and the bundle file with `existing` in it, if given):
/// the directory, the bundle's path and the run.
fn sign_bundle_of_a(
    token: &str,
    existing: Option<&[u8]>,
) -> (tempfile::TempDir, PathBuf, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("a.txt");
    let bundle = dir.path().join("a.txt.sigstore.json");
    std::fs::write(&blob, b"a").unwrap();
    if let Some(bytes) = existing {
        std::fs::write(&bundle, bytes).unwrap();
    }
    let output = Command::new(env!("CARGO_BIN_EXE_mansign"))
        .args(["sign-bundle", "--identity-token", token, "--bundle"])
        .arg(&bundle)
        .arg(&blob)
        .output()
        .unwrap();
    (dir, bundle, output)
}

/// `sign-bundle` writes its bundle to a new file only: an existing file is never
/// overwritten (the suite checks that the bundle did not exist before).
#[test]
fn sign_bundle_refuses_to_overwrite_an_existing_bundle() {
    let (_dir, bundle, output) = sign_bundle_of_a("x.y.z", Some(b"keep me"));
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(std::fs::read(&bundle).unwrap(), b"keep me");
}

/// A token that is not a JWT fails before any service is contacted, and leaves no
/// bundle file behind.
#[test]
fn sign_bundle_with_malformed_token_fails_and_leaves_no_bundle() {
    let (_dir, bundle, output) = sign_bundle_of_a("not-a-jwt", None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("identity token is not a JWT"), "{stderr}");
    assert!(!bundle.exists());
}

/// The bundle appears only once it is complete: while `sign-bundle` waits on Fulcio there
/// is no file at `--bundle` (a killed or timed-out run must not leave an empty bundle for
/// the next attempt to trip over), and a failed run leaves no file, temporary or not.
#[test]
fn sign_bundle_creates_the_bundle_only_once_it_is_complete() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let contacted = Arc::new(AtomicBool::new(false));
    let server = {
        let contacted = contacted.clone();
        stub_server::StubServer::start(move |_req, _base| {
            contacted.store(true, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_secs(2));
            (400, r#"{"code":400,"message":"no"}"#.to_string())
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("a.txt");
    let bundle = dir.path().join("a.txt.sigstore.json");
    let config = dir.path().join("signing_config.json");
    std::fs::write(&blob, b"a").unwrap();
    let service = serde_json::json!([{
        "url": server.url, "majorApiVersion": 1,
        "validFor": {"start": "2020-01-01T00:00:00Z"}, "operator": "stub"
    }]);
    let signing_config = serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
        "caUrls": service, "oidcUrls": [], "rekorTlogUrls": service,
        "rekorTlogConfig": {"selector": "ANY"}, "tsaUrls": service,
        "tsaConfig": {"selector": "ANY"}
    });
    std::fs::write(&config, signing_config.to_string()).unwrap();
    let token = {
        use base64::Engine as _;
        let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let claims = serde_json::json!({
            "iss": "https://issuer.example", "sub": "me", "aud": "sigstore",
            "exp": 4_000_000_000u64, "email": "me@example.com"
        });
        format!(
            "{}.{}.c2ln",
            b64(br#"{"alg":"RS256"}"#),
            b64(claims.to_string().as_bytes())
        )
    };
    let child = Command::new(env!("CARGO_BIN_EXE_mansign"))
        .args([
            "sign-bundle",
            "--identity-token",
            &token,
            "--signing-config",
        ])
        .arg(&config)
        .arg("--bundle")
        .arg(&bundle)
        .arg(&blob)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !contacted.load(Ordering::SeqCst) {
        assert!(
            start.elapsed().as_secs() < 30,
            "sign-bundle never contacted the services"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        !bundle.exists(),
        "no bundle file while signing is under way"
    );
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["a.txt", "signing_config.json"], "{stderr}");
}
