//! `mansign sign` under faults and hostile services (issue 41): a fault-injecting proxy
//! (`common/fault_proxy.rs`) between `sign` and the loopback stack's Fulcio or Rekor
//! rewrites, breaks or stalls answers and acts on the world at an exact point of the run;
//! FIFOs, signals and unwritable directories do the rest. Each probe is a row of one table:
//! what is done to the run, what must come of it, and what came of it.
//!
//! The rule every row holds: a run never writes a wrong signature, never loses an edit, and
//! never leaves a staged file unnamed. A refusal names what it refused (both identities,
//! the file), exits 2, and writes nothing.
//!
//! Run (the table is printed): `cargo test --test it sign_faults:: -- --nocapture`.
//! `MANSIGN_PROBES=word` runs only the rows whose name contains `word` (while iterating).

use crate::common;
use crate::common::fault_proxy::{Answer, Fault, FaultProxy};
use crate::common::stack::{AMBIENT_VARS, Stack};

use common::{files_under, write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const FULCIO_PATH: &str = "/api/v2/signingCert";
const REKOR_PATH: &str = "/api/v1/log/entries";

/// A ConfigMap named `name`.
fn config_map(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: team-a\ndata:\n  k: {name}\n"
    )
}

/// `count` one-document files `team-N/cm-NNN.yaml` under `dir` (100 a folder). 130 files
/// are two windows: cm-000 … cm-127, then cm-128 and cm-129 (both in `team-1/`).
fn tree(dir: &Path, count: usize) {
    for i in 0..count {
        write(
            dir,
            &format!("team-{}/cm-{i:03}.yaml", i / 100),
            &config_map(&format!("cm-{i}")),
        );
    }
}

/// `mansign sign` keyless against `stack`, through the given service URLs.
fn sign_via(stack: &Stack, fulcio: &str, rekor: &str) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("mansign"));
    for v in AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.args(["sign", "--fulcio-url", fulcio, "--rekor-url", rekor])
        .arg("--trusted-root")
        .arg(stack.trusted_root())
        .arg("--identity-token")
        .arg(stack.id_token());
    cmd
}

/// `mansign sign --key` (no service).
fn sign_with_key(key: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("mansign"));
    for v in AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.env("COSIGN_PASSWORD", "test-password")
        .arg("sign")
        .arg("--key")
        .arg(key);
    cmd
}

/// Runs `cmd`, killed after `limit` (a run that hangs is a failed probe, not a hung test).
fn run_within(mut cmd: Command, limit: Duration) -> Result<Output, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start mansign: {e}"))?;
    let started = Instant::now();
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            return child.wait_with_output().map_err(|e| e.to_string());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            return Err(format!(
                "still running after {} s (killed); stderr: {}",
                limit.as_secs(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(cmd: Command) -> Result<Output, String> {
    run_within(cmd, Duration::from_secs(240))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The run exited with `code` and its stderr names each of `words`.
fn expect_exit(out: &Output, code: i32, words: &[&str]) -> Result<(), String> {
    let err = stderr(out);
    if out.status.code() != Some(code) {
        return Err(format!("exit {:?} (want {code}): {err}", out.status.code()));
    }
    for w in words {
        if !err.contains(w) {
            return Err(format!("stderr does not name {w:?}: {err}"));
        }
    }
    Ok(())
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what()) }
}

/// Files under `dir` whose name starts with `.mansign-` (staged files).
fn staged_under(dir: &Path) -> Vec<String> {
    files_under(dir)
        .into_iter()
        .filter(|f| f.rsplit('/').next().unwrap_or("").starts_with(".mansign-"))
        .collect()
}

/// A syntactically valid, unsigned JWT (the stack's Fulcio reads claims without checking
/// the signature, as a hostile Fulcio would not bother to either).
fn unsigned_jwt(claims: serde_json::Value) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.c2ln",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// A Fulcio that issues, from the stack's real CA, a certificate for our key but for the
/// identity of `claims`: the proxy swaps the identity token in the request.
fn fulcio_for_another_identity(stack: &Stack, claims: serde_json::Value) -> FaultProxy {
    let other = unsigned_jwt(claims);
    FaultProxy::start(stack.fulcio_url(), move |req, _| {
        if req.path() != FULCIO_PATH {
            return Fault::Pass;
        }
        let mut body: serde_json::Value = serde_json::from_str(&req.body).expect("JSON request");
        body["credentials"]["oidcIdentityToken"] = other.clone().into();
        Fault::RewriteRequest(body.to_string())
    })
}

// ---------------------------------------------------------------------------------------
// The probes.

type Probe = fn() -> Result<String, String>;

/// Item 1: a certificate for another SAN than the token's is refused before any upload,
/// naming both identities.
fn another_subject() -> Result<String, String> {
    refused_for_another_identity(
        |stack| {
            serde_json::json!({"iss": stack.issuer(), "sub": "mallory@evil.example",
                               "aud": "sigstore", "exp": 4_000_000_000u64})
        },
        |stack| {
            vec![
                "issued a certificate for mallory@evil.example".into(),
                stack.identity().to_string(),
                "refused before anything was signed or uploaded".into(),
            ]
        },
    )?;
    Ok("exit 2 naming both identities; no Rekor request, no output".into())
}

/// Item 1: the same for another issuer.
fn another_issuer() -> Result<String, String> {
    refused_for_another_identity(
        |stack| {
            serde_json::json!({"iss": "https://evil.example", "sub": stack.identity(),
                               "aud": "sigstore", "exp": 4_000_000_000u64})
        },
        |stack| {
            vec![
                "(issuer https://evil.example)".into(),
                format!("(issuer {})", stack.issuer()),
            ]
        },
    )?;
    Ok("exit 2 naming both issuers; no Rekor request, no output".into())
}

/// Item 1's run: Fulcio issues a real certificate for the token `claims` makes; `sign` must
/// exit 2 naming each of `words`, with no Rekor request and no output.
fn refused_for_another_identity(
    claims: impl Fn(&Stack) -> serde_json::Value,
    words: impl Fn(&Stack) -> Vec<String>,
) -> Result<(), String> {
    let stack = Stack::start();
    let fulcio = fulcio_for_another_identity(&stack, claims(&stack));
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("cm"));
    let out = dir.path().join("signed.yaml");
    let mut cmd = sign_via(&stack, &fulcio.url, stack.rekor_url());
    cmd.arg("-f").arg(&input).arg("-o").arg(&out);
    let done = run(cmd)?;
    let words = words(&stack);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    expect_exit(&done, 2, &words)?;
    check(stack.stat("rekor_requests") == 0, || {
        "a Rekor entry was uploaded".into()
    })?;
    check(!out.exists(), || "an output was written".into())
}

/// Item 2: Rekor answers whose inclusion proof or checkpoint is tampered with, or missing
/// (the SET is intact, so the annotations alone verify): `--bundle-out` refuses to write
/// bundles that `verify-bundle` would reject, and writes nothing at all.
fn tampered_proofs() -> Result<String, String> {
    type Tamper = fn(&mut serde_json::Value);
    let tampers: [(&str, Tamper); 3] = [
        ("root hash", |proof| {
            let root = proof["rootHash"].as_str().unwrap().to_string();
            let flipped = if root.starts_with('0') { "1" } else { "0" };
            proof["rootHash"] = format!("{flipped}{}", &root[1..]).into();
        }),
        ("checkpoint", |proof| {
            let text = proof["checkpoint"].as_str().unwrap().to_string();
            // The tree size line of the signed note, changed: its signature no longer holds.
            let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
            let size: u64 = lines[1].parse().unwrap();
            lines[1] = (size + 1).to_string();
            proof["checkpoint"] = lines.join("\n").into();
        }),
        ("no proof", |_| {}),
    ];
    let mut seen = Vec::new();
    for (what, tamper) in tampers {
        let stack = Stack::start();
        let rekor = FaultProxy::start(stack.rekor_url(), move |req, _| {
            if req.method != "POST" || req.path() != REKOR_PATH {
                return Fault::Pass;
            }
            Fault::RewriteAnswer(Box::new(move |mut answer: Answer| {
                let mut json = answer.body_json();
                let (_, entry) = json.as_object_mut().unwrap().iter_mut().next().unwrap();
                if what == "no proof" {
                    entry["verification"]
                        .as_object_mut()
                        .unwrap()
                        .remove("inclusionProof");
                } else {
                    tamper(&mut entry["verification"]["inclusionProof"]);
                }
                answer.body = json.to_string().into_bytes();
                answer
            }))
        });
        let dir = tempfile::tempdir().unwrap();
        let input = write(dir.path(), "cm.yaml", &config_map("cm"));
        let out = dir.path().join("signed.yaml");
        let bundles = dir.path().join("bundles");
        let mut cmd = sign_via(&stack, stack.fulcio_url(), &rekor.url);
        cmd.arg("-f")
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .arg("--bundle-out")
            .arg(&bundles);
        let done = run(cmd)?;
        expect_exit(
            &done,
            2,
            &["signed.yaml.1.sigstore.json: the Sigstore bundle does not verify"],
        )
        .map_err(|e| format!("{what}: {e}"))?;
        check(!out.exists() && files_under(&bundles).is_empty(), || {
            format!("{what}: something was written")
        })?;
        seen.push(what);
    }
    Ok(format!(
        "exit 2 naming the bundle, nothing written ({})",
        seen.join(", ")
    ))
}

/// Item 3: `--remove-input` over two windows; while the second is logged, a document is
/// appended to a file of the first (already signed). The run keeps every input, writes
/// nothing, and names the file.
fn remove_input_after_an_edit() -> Result<String, String> {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("unsigned");
    tree(&src, 130);
    let edited = src.join("team-0/cm-000.yaml");
    let appended = format!("{}---\n{}", config_map("cm-0"), config_map("appended"));
    let rekor = {
        let (edited, appended) = (edited.clone(), appended.clone());
        FaultProxy::start(stack.rekor_url(), move |req, n| {
            if req.method == "POST" && req.path() == REKOR_PATH && n == 129 {
                std::fs::write(&edited, &appended).unwrap();
            }
            Fault::Pass
        })
    };
    let out = dir.path().join("signed");
    let mut cmd = sign_via(&stack, stack.fulcio_url(), &rekor.url);
    cmd.arg("-f")
        .arg(&src)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .arg("--remove-input");
    let done = run(cmd)?;
    expect_exit(
        &done,
        2,
        &[
            &edited.display().to_string(),
            "changed after it was signed",
            "the input is kept",
        ],
    )?;
    check(files_under(&src).len() == 130, || {
        format!("inputs removed: {} left", files_under(&src).len())
    })?;
    check(
        std::fs::read_to_string(&edited).unwrap() == appended,
        || "the edit was lost".into(),
    )?;
    check(files_under(&out).is_empty(), || {
        format!("written: {:?}", &files_under(&out)[..1])
    })?;
    Ok("exit 2 naming the file; all 130 inputs kept, the edit kept, nothing written".into())
}

/// Item 4: `-o link/` where `link` is re-pointed to another directory while the second
/// window is logged, and that window then fails: the first window's staged files, created
/// through the link's first target, are removed from there.
fn repointed_output_link() -> Result<String, String> {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("unsigned");
    tree(&src, 130);
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let link = dir.path().join("out");
    std::os::unix::fs::symlink(&first, &link).unwrap();
    let rekor = {
        let (link, second) = (link.clone(), second.clone());
        FaultProxy::start(stack.rekor_url(), move |req, n| {
            if req.method == "POST" && req.path() == REKOR_PATH && n == 129 {
                let tmp = link.with_extension("new");
                std::os::unix::fs::symlink(&second, &tmp).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
                return Fault::Answer(Answer::json(
                    400,
                    &serde_json::json!({"code": 400, "message": "refused by the probe"}),
                ));
            }
            Fault::Pass
        })
    };
    let mut cmd = sign_via(&stack, stack.fulcio_url(), &rekor.url);
    cmd.arg("-f")
        .arg(&src)
        .arg("-o")
        .arg(format!("{}/", link.display()));
    let done = run(cmd)?;
    expect_exit(&done, 2, &["refused by the probe"])?;
    let left: Vec<String> = [&first, &second]
        .iter()
        .flat_map(|d| staged_under(d))
        .collect();
    check(left.is_empty(), || {
        format!(
            "{} staged file(s) left, e.g. {:?}",
            left.len(),
            left.first()
        )
    })?;
    check(
        files_under(&first).is_empty() && files_under(&second).is_empty(),
        || "an output was written".into(),
    )?;
    Ok("exit 2; no staged file left in either target, nothing written".into())
}

/// Makes `dir` unwritable, also for root (`chattr +i` where it works, else mode 0555);
/// returns how to undo it.
fn make_unwritable(dir: &Path) -> impl FnOnce() + Send + 'static {
    let immutable = Command::new("chattr")
        .arg("+i")
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !immutable {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let dir = dir.to_path_buf();
    move || {
        if immutable {
            let _ = Command::new("chattr").arg("-i").arg(&dir).status();
        } else {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
        }
    }
}

/// How to make a directory writable again.
type Restore = Box<dyn FnOnce() + Send>;

/// Item 4: an output directory that becomes unwritable mid-run (while the second window is
/// logged): its staged files cannot be removed, and the error says which are left.
fn unwritable_output_directory() -> Result<String, String> {
    let stack = Stack::start();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("unsigned");
    tree(&src, 130);
    let out = dir.path().join("signed");
    let team1 = out.join("team-1");
    let undo: std::sync::Arc<std::sync::Mutex<Option<Restore>>> = Default::default();
    let rekor = {
        let (team1, undo) = (team1.clone(), undo.clone());
        FaultProxy::start(stack.rekor_url(), move |req, n| {
            if req.method == "POST" && req.path() == REKOR_PATH && n == 129 {
                let restore: Restore = Box::new(make_unwritable(&team1));
                let mut slot = undo.lock().unwrap();
                *slot = Some(restore);
            }
            Fault::Pass
        })
    };
    let mut cmd = sign_via(&stack, stack.fulcio_url(), &rekor.url);
    cmd.arg("-f")
        .arg(&src)
        .arg("-o")
        .arg(format!("{}/", out.display()));
    let done = run(cmd);
    let left = staged_under(&team1);
    if let Some(undo) = undo.lock().unwrap().take() {
        undo();
    }
    let done = done?;
    // The 28 files of the first window in team-1/ (cm-100 … cm-127) are left behind.
    expect_exit(
        &done,
        2,
        &[
            "nothing was written, but 28 staged file(s) could not be removed and are left \
             behind",
            &team1.display().to_string(),
            "output directory is not writable",
        ],
    )?;
    check(left.len() == 28, || {
        format!("{} staged files left", left.len())
    })?;
    let err = stderr(&done);
    let named = left
        .iter()
        .filter(|f| err.contains(&team1.join(f).display().to_string()))
        .count();
    check(named == 10 && err.contains("and 18 more"), || {
        format!("{named} of the left files named: {err}")
    })?;
    check(staged_under(&out.join("team-0")).is_empty(), || {
        "team-0's staged files were not removed".into()
    })?;
    Ok("exit 2 naming the 28 files left in the unwritable directory; the others removed".into())
}

/// Item 4: SIGHUP (a closed terminal or SSH session) while a run stages its outputs: handled
/// as SIGTERM is, exit 129, "nothing was written", no staged file left.
fn hangup() -> Result<String, String> {
    let keys = common::key_dir("cosign");
    let src = keys.path().join("unsigned");
    tree(&src, 3000);
    let out = keys.path().join("signed");
    let mut cmd = sign_with_key(&keys.key);
    cmd.arg("-f")
        .arg(&src)
        .arg("-o")
        .arg(format!("{}/", out.display()))
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        if !staged_under(&out).is_empty() {
            break;
        }
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            return Err("the run ended before a staged file was seen".into());
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            return Err("no staged file seen in 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let sent = Command::new("kill")
        .arg("-HUP")
        .arg(child.id().to_string())
        .status()
        .map_err(|e| e.to_string())?;
    check(sent.success(), || "kill -HUP failed".into())?;
    let done = child.wait_with_output().map_err(|e| e.to_string())?;
    expect_exit(&done, 129, &["SIGHUP: stopped; nothing was written"])?;
    check(files_under(&out).is_empty(), || {
        format!("{} file(s) left", files_under(&out).len())
    })?;
    Ok("exit 129, \"nothing was written\", no file left".into())
}

/// Item 5: a FIFO named `*.yaml` in the input tree, a link to it, and one named on the
/// command line: refused at once (nobody ever writes to it), naming it.
fn fifo_inputs() -> Result<String, String> {
    let keys = common::key_dir("cosign");
    let src = keys.path().join("unsigned");
    tree(&src, 3);
    let fifo_dir = keys.path().join("pipes");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    let fifo = fifo_dir.join("pipe.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    check(made.success(), || "mkfifo failed".into())?;
    let in_tree = src.join("team-0/zz-pipe.yaml");
    std::os::unix::fs::symlink(&fifo, &in_tree).unwrap();
    let mut rows = Vec::new();
    for (what, arg, named) in [
        ("a link to a FIFO in a tree", src.clone(), in_tree.clone()),
        ("a FIFO in a tree", fifo_dir.clone(), fifo.clone()),
        ("a FIFO argument", fifo.clone(), fifo.clone()),
    ] {
        let out = keys.path().join("signed");
        let mut cmd = sign_with_key(&keys.key);
        cmd.arg("-f")
            .arg(&arg)
            .arg("-o")
            .arg(format!("{}/", out.display()));
        let done = run_within(cmd, Duration::from_secs(60)).map_err(|e| format!("{what}: {e}"))?;
        expect_exit(
            &done,
            2,
            &[
                &named.display().to_string(),
                "not a regular file (a named pipe (FIFO))",
            ],
        )
        .map_err(|e| format!("{what}: {e}"))?;
        check(files_under(&out).is_empty(), || {
            format!("{what}: something was written")
        })?;
        rows.push(what);
    }
    Ok(format!("exit 2 at once, naming it ({})", rows.join("; ")))
}

/// Item 6: Rekor's answer broken off mid-body (a reset), or still arriving at `--timeout`
/// (a body that never ends): retried, as the docs say, and the run succeeds.
fn rekor_broken_bodies() -> Result<String, String> {
    let mut rows = Vec::new();
    for what in ["reset mid-body", "endless body"] {
        let stack = Stack::start();
        let rekor = FaultProxy::start(stack.rekor_url(), move |req, n| {
            if req.method == "POST" && req.path() == REKOR_PATH && n == 1 {
                return if what == "reset mid-body" {
                    Fault::ResetMidBody
                } else {
                    Fault::EndlessBody
                };
            }
            Fault::Pass
        });
        let dir = tempfile::tempdir().unwrap();
        let input = write(dir.path(), "cm.yaml", &config_map("cm"));
        let out = dir.path().join("signed.yaml");
        let mut cmd = sign_via(&stack, stack.fulcio_url(), &rekor.url);
        cmd.arg("-f")
            .arg(&input)
            .arg("-o")
            .arg(&out)
            // Long enough for a loaded machine's normal answer, short against the endless one.
            .args(["--timeout", "5"]);
        let done = run(cmd)?;
        expect_exit(&done, 0, &[]).map_err(|e| format!("{what}: {e}"))?;
        // At least the broken upload and its retry (a loaded machine may retry once more).
        check(rekor.count("POST", REKOR_PATH) >= 2, || {
            format!("{what}: {} uploads", rekor.count("POST", REKOR_PATH))
        })?;
        let verified = Command::new(assert_cmd::cargo::cargo_bin("mansign"))
            .args(["verify", "-f"])
            .arg(&out)
            .arg("--trusted-root")
            .arg(stack.trusted_root())
            .args(["--certificate-identity", stack.identity()])
            .args(["--certificate-oidc-issuer", stack.issuer()])
            .output()
            .unwrap();
        check(verified.status.success(), || {
            format!("{what}: the output does not verify: {}", stderr(&verified))
        })?;
        rows.push(what);
    }
    Ok(format!(
        "retried, exit 0, the output verifies ({})",
        rows.join(", ")
    ))
}

/// Item 7: a value, only a comment, or a whole document changed in a file of the second
/// window between the two passes (while Fulcio is asked for the certificate): refused
/// before that window is signed, naming the window's files, nothing written.
fn edited_between_the_passes() -> Result<String, String> {
    let mut rows = Vec::new();
    for what in ["a value", "a comment", "a document"] {
        let stack = Stack::start();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("unsigned");
        tree(&src, 130);
        let edited = src.join("team-1/cm-129.yaml");
        let text = match what {
            "a value" => config_map("cm-129").replace("k: cm-129", "k: changed"),
            "a comment" => format!("{}# a comment added\n", config_map("cm-129")),
            _ => format!("{}---\n{}", config_map("cm-129"), config_map("added")),
        };
        let fulcio = {
            let edited = edited.clone();
            FaultProxy::start(stack.fulcio_url(), move |req, _| {
                if req.path() == FULCIO_PATH {
                    std::fs::write(&edited, &text).unwrap();
                }
                Fault::Pass
            })
        };
        let out = dir.path().join("signed");
        let mut cmd = sign_via(&stack, &fulcio.url, stack.rekor_url());
        cmd.arg("-f")
            .arg(&src)
            .arg("-o")
            .arg(format!("{}/", out.display()));
        let done = run(cmd)?;
        expect_exit(
            &done,
            2,
            &[
                "cm-128.yaml",
                "cm-129.yaml",
                "changed during the run",
                "nothing was written",
            ],
        )
        .map_err(|e| format!("{what}: {e}"))?;
        check(files_under(&out).is_empty(), || {
            format!("{what}: written: {:?}", files_under(&out).first())
        })?;
        rows.push(what);
    }
    Ok(format!(
        "exit 2 naming the window, nothing written ({})",
        rows.join(", ")
    ))
}

/// A certificate for `public_key_pem` with the stack's identity and issuer, from a CA of
/// the test's own, valid from `not_before` to `not_after` (UTC dates).
fn forged_certificate(
    public_key_pem: &str,
    identity: &str,
    issuer: &str,
    not_before: (i32, u8, u8),
    not_after: (i32, u8, u8),
) -> (String, String) {
    use p256::pkcs8::DecodePublicKey as _;
    let key = p256::PublicKey::from_public_key_pem(public_key_pem).expect("P-256 key");
    let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&key, false);
    struct Key(Vec<u8>);
    impl rcgen::PublicKeyData for Key {
        fn der_bytes(&self) -> &[u8] {
            &self.0
        }
        fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
            &rcgen::PKCS_ECDSA_P256_SHA256
        }
    }
    let ca = common::pki::Pki::new();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![rcgen::SanType::URI(identity.try_into().unwrap())];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
    let mut issuer_der = vec![0x0c, issuer.len() as u8];
    issuer_der.extend_from_slice(issuer.as_bytes());
    params.custom_extensions = vec![rcgen::CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        issuer_der,
    )];
    params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
    params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    let cert = params
        .signed_by(&Key(point.as_bytes().to_vec()), &ca.issuer)
        .unwrap();
    (cert.pem(), ca.ca_pem)
}

/// Item 8: Fulcio answers with a certificate for our key and identity that expired before
/// it arrived (or is not valid yet): refused on arrival, before anything is uploaded, with
/// no hint about signing fewer files.
fn unusable_certificates() -> Result<String, String> {
    let mut rows = Vec::new();
    for (what, from, until) in [
        ("expired", (2020, 1, 1), (2021, 1, 1)),
        ("not yet valid", (2090, 1, 1), (2091, 1, 1)),
    ] {
        let stack = Stack::start();
        let (identity, issuer) = (stack.identity().to_string(), stack.issuer().to_string());
        let fulcio = FaultProxy::start(stack.fulcio_url(), move |req, _| {
            if req.path() != FULCIO_PATH {
                return Fault::Pass;
            }
            let body: serde_json::Value = serde_json::from_str(&req.body).unwrap();
            let key = body["publicKeyRequest"]["publicKey"]["content"]
                .as_str()
                .unwrap()
                .to_string();
            let (leaf, ca) = forged_certificate(&key, &identity, &issuer, from, until);
            Fault::Answer(Answer::json(
                201,
                &serde_json::json!({"signedCertificateEmbeddedSct": {"chain": {"certificates": [leaf, ca]}}}),
            ))
        });
        let dir = tempfile::tempdir().unwrap();
        let input = write(dir.path(), "cm.yaml", &config_map("cm"));
        let out = dir.path().join("signed.yaml");
        let mut cmd = sign_via(&stack, &fulcio.url, stack.rekor_url());
        cmd.arg("-f").arg(&input).arg("-o").arg(&out);
        let done = run(cmd)?;
        expect_exit(
            &done,
            2,
            &[
                "Fulcio issued a certificate valid from",
                "which is not usable at",
                "refused before anything was signed or uploaded",
            ],
        )
        .map_err(|e| format!("{what}: {e}"))?;
        check(!stderr(&done).contains("sign fewer files"), || {
            format!("{what}: the wrong hint: {}", stderr(&done))
        })?;
        check(stack.stat("rekor_requests") == 0, || {
            format!("{what}: a Rekor entry was uploaded")
        })?;
        check(!out.exists(), || format!("{what}: an output was written"))?;
        rows.push(what);
    }
    Ok(format!(
        "exit 2 on arrival, no Rekor request, no output ({})",
        rows.join(", ")
    ))
}

/// One row of the table.
struct Row {
    item: u8,
    name: &'static str,
    fault: &'static str,
    expected: &'static str,
    probe: Probe,
}

const ROWS: &[Row] = &[
    Row {
        item: 1,
        name: "another-subject",
        fault: "Fulcio certifies our key for another SAN (token swapped in the request)",
        expected: "refused before any upload, naming both identities",
        probe: another_subject,
    },
    Row {
        item: 1,
        name: "another-issuer",
        fault: "Fulcio certifies our key for another OIDC issuer",
        expected: "refused before any upload, naming both issuers",
        probe: another_issuer,
    },
    Row {
        item: 2,
        name: "tampered-proof",
        fault: "Rekor's inclusion proof: root hash or checkpoint changed, or none (SET intact)",
        expected: "--bundle-out bundles verified before commit: exit 2, nothing written",
        probe: tampered_proofs,
    },
    Row {
        item: 3,
        name: "remove-input-edited",
        fault: "--remove-input; a signed input of window 1 edited while window 2 is logged",
        expected: "every input kept, nothing written, the file named",
        probe: remove_input_after_an_edit,
    },
    Row {
        item: 4,
        name: "repointed-link",
        fault: "-o link/; the link re-pointed mid-run, then the run fails",
        expected: "staged files removed through the directory they were created in",
        probe: repointed_output_link,
    },
    Row {
        item: 4,
        name: "unwritable-dir",
        fault: "an output directory made unwritable mid-run",
        expected: "exit 2; the staged files that cannot be removed are named",
        probe: unwritable_output_directory,
    },
    Row {
        item: 4,
        name: "sighup",
        fault: "SIGHUP while staging",
        expected: "exit 129, \"nothing was written\", no staged file",
        probe: hangup,
    },
    Row {
        item: 5,
        name: "fifo",
        fault: "a FIFO named *.yaml: in a tree, linked into it, as an argument",
        expected: "refused at once (no hang), naming it",
        probe: fifo_inputs,
    },
    Row {
        item: 6,
        name: "rekor-broken-body",
        fault: "Rekor's answer reset mid-body, or never ending past --timeout",
        expected: "retried (a duplicate entry is harmless); exit 0; the output verifies",
        probe: rekor_broken_bodies,
    },
    Row {
        item: 7,
        name: "edited-between-passes",
        fault: "a value, a comment or a document changed between the two passes",
        expected: "the window is refused before it is signed; nothing written",
        probe: edited_between_the_passes,
    },
    Row {
        item: 8,
        name: "unusable-certificate",
        fault: "Fulcio's certificate already expired, or not yet valid, on arrival",
        expected: "refused on arrival, before any upload; no \"sign fewer files\" hint",
        probe: unusable_certificates,
    },
];

/// Runs every probe of [`ROWS`] (each its own stack and directories), prints the table, and
/// fails if any row did not come out as expected.
#[test]
fn sign_holds_under_every_fault_of_the_probe_table() {
    let only = std::env::var("MANSIGN_PROBES").ok();
    let mut lines = vec![
        "| item | probe | fault | expected | observed |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    let mut failed = Vec::new();
    for row in ROWS {
        if let Some(only) = &only
            && !row.name.contains(only.as_str())
        {
            continue;
        }
        let outcome = std::panic::catch_unwind(row.probe).unwrap_or_else(|panic| {
            Err(panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".into()))
        });
        let observed = match outcome {
            Ok(text) => text,
            Err(e) => {
                failed.push(row.name);
                format!("FAILED: {}", e.replace('\n', " "))
            }
        };
        lines.push(format!(
            "| {} | {} | {} | {} | {} |",
            row.item, row.name, row.fault, row.expected, observed
        ));
    }
    println!("{}", lines.join("\n"));
    assert!(
        failed.is_empty(),
        "probes failed: {failed:?}\n{}",
        lines.join("\n")
    );
}

/// The table itself: every item of issue 41 that a run can be probed for has a row, and
/// names are unique (so `MANSIGN_PROBES` picks exactly what it names).
#[test]
fn the_probe_table_covers_items_one_to_eight() {
    let items: std::collections::BTreeSet<u8> = ROWS.iter().map(|r| r.item).collect();
    assert_eq!(items, (1..=8).collect());
    let names: std::collections::BTreeSet<&str> = ROWS.iter().map(|r| r.name).collect();
    assert_eq!(names.len(), ROWS.len());
}

/// The lines of `stderr` that tell a retry of `service` (`fulcio: attempt N of 3 failed
/// after ...`).
fn retry_lines<'a>(stderr: &'a str, service: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.starts_with(&format!("{service}: attempt ")))
        .collect()
}

/// Each retry line names its attempt, says it timed out and how long it waits, in order.
fn check_retry_lines(lines: &[&str], service: &str, verbose: bool) -> Result<(), String> {
    for (n, line) in lines.iter().enumerate() {
        let start = format!("{service}: attempt {} of 3 failed after ", n + 1);
        let ok = line.starts_with(&start)
            && line.contains(" s (timed out); retrying in ")
            && line.ends_with(if verbose {
                " s"
            } else {
                " s (-v shows every retry)"
            });
        check(ok, || format!("line {}: {line:?}", n + 1))?;
    }
    Ok(())
}

/// Runs `sign` (the command `command` makes, with `--timeout 1`) against a service that
/// never answers, with and without `-v`: each run fails naming the service as
/// `unreachable` says, exit 2, nothing written at `out`, after two retry lines with `-v`
/// and one without. The 120 s bound is only a guard against a hang.
fn assert_each_retry_is_said(
    mut command: impl FnMut() -> Command,
    service: &str,
    unreachable: &str,
    out: &Path,
) {
    for (verbose, retries) in [(true, 2), (false, 1)] {
        let mut cmd = command();
        cmd.args(["--timeout", "1"]);
        if verbose {
            cmd.arg("-v");
        }
        let done = run_within(cmd, Duration::from_secs(120)).unwrap();
        let err = stderr(&done);
        expect_exit(&done, 2, &[unreachable]).unwrap();
        let lines = retry_lines(&err, service);
        assert_eq!(lines.len(), retries, "-v {verbose}: {err}");
        check_retry_lines(&lines, service, verbose).unwrap_or_else(|e| panic!("{e}\n{err}"));
        assert!(!out.exists(), "something was written");
    }
}

/// Issue 39 item 11: a Fulcio that accepts the connection and never answers. With `-v`,
/// each of the two retries is a line naming its attempt, the timeout and the wait; without
/// it, the first retry is (the run is never silent for three timeouts); then the run fails
/// naming Fulcio and the three attempts, exit 2, nothing written. `--timeout 1` keeps the
/// run short.
#[test]
fn a_fulcio_that_never_answers_is_retried_and_each_retry_is_said() {
    let stack = Stack::start();
    let fulcio = FaultProxy::start(stack.fulcio_url(), |_, _| Fault::Stall);
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "cm.yaml", &config_map("cm"));
    let out = dir.path().join("signed");
    assert_each_retry_is_said(
        || {
            let mut cmd = sign_via(&stack, &fulcio.url, stack.rekor_url());
            cmd.arg("-f")
                .arg(&input)
                .arg("-o")
                .arg(format!("{}/", out.display()));
            cmd
        },
        "fulcio",
        &format!("Fulcio at {} is unreachable after 3 attempt(s)", fulcio.url),
        &out,
    );
    assert_eq!(fulcio.count("POST", FULCIO_PATH), 6, "3 attempts a run");
}

/// The same for a Rekor that never answers a `--key --tlog-upload` upload (no Fulcio, no
/// token: nothing upstream is ever asked).
#[test]
fn a_rekor_that_never_answers_is_retried_and_each_retry_is_said() {
    let rekor = FaultProxy::start("http://127.0.0.1:9", |_, _| Fault::Stall);
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = common::key_pair(dir.path(), "cosign");
    let input = write(dir.path(), "cm.yaml", &config_map("cm"));
    let out = dir.path().join("signed.yaml");
    assert_each_retry_is_said(
        || {
            let mut cmd = sign_with_key(&key);
            cmd.arg("-f").arg(&input).arg("-o").arg(&out).args([
                "--tlog-upload",
                "--rekor-url",
                &rekor.url,
            ]);
            cmd
        },
        "rekor",
        &format!("Rekor at {} is unreachable after 3 attempt(s)", rekor.url),
        &out,
    );
    assert_eq!(rekor.count("POST", REKOR_PATH), 6, "3 attempts a run");
}
