//! The README's one command for a local Sigstore by hand (issue 39 item 12):
//! `eval "$(bash scripts/sigstore-stack/start.sh --env DIR)"` starts the stack and leaves
//! the shell pointed at it, so that keyless `mansign sign` and `mansign verify` with the
//! printed identity work as written; `stop.sh DIR` stops it.

use std::path::Path;
use std::process::Command;

/// Stops the stack of `STATE` when dropped, whatever the test did.
struct Stop(std::path::PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/sigstore-stack/stop.sh"))
            .arg(&self.0)
            .status();
    }
}

#[test]
fn start_env_prints_exports_that_sign_and_verify_keylessly() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("stack");
    let _stop = Stop(state.clone());
    crate::common::write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: strict\n",
    );
    let mansign = assert_cmd::cargo::cargo_bin("mansign");
    let bin = mansign.parent().unwrap();
    // As the README says it, in a shell where nothing Sigstore is set.
    let script = r#"set -euo pipefail
eval "$(bash "$REPO/scripts/sigstore-stack/start.sh" --env "$STATE")"
mansign sign -f cm.yaml -o signed.yaml
mansign verify -f signed.yaml --certificate-identity "$SIGSTORE_IDENTITY" \
  --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER"
"#;
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).current_dir(dir.path());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("SIGSTORE_")
            || name.starts_with("MANSIGN_")
            || name.starts_with("ACTIONS_ID_TOKEN")
        {
            cmd.env_remove(&name);
        }
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = cmd
        .env("PATH", path)
        .env("REPO", repo)
        .env("STATE", &state)
        .output()
        .unwrap();
    let all = crate::common::all_output(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("1 of 1 document(s) verified"), "{all}");
    // The stack was started by that command and is running until stop.sh.
    assert!(state.join("mock.pid").is_file(), "{all}");
    let stop = Command::new("bash")
        .arg(repo.join("scripts/sigstore-stack/stop.sh"))
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        stop.status.success(),
        "{}",
        crate::common::all_output(&stop)
    );
    assert!(
        !state.join("mock.pid").exists(),
        "stop.sh left the stack's pid file"
    );
}
