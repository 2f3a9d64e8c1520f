//! The programs the operations tests run (`scripts/ops-tools.sh`): helm, built from
//! `helm.sh/helm/v3`, and `rulecheck`, the checks of `promtool check rules` built from
//! `github.com/prometheus/prometheus/model/rulefmt` (tests/ops/rulecheck/main.go says which).
//!
//! They are built once per test process and cached across runs in `$MANSIGN_TOOLS_CACHE`
//! or `~/.cache/mansign-tools`. A missing `go` or a failed build FAILS the test with the
//! reason; it is never skipped.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

/// The built programs.
#[derive(Debug)]
pub struct OpsTools {
    pub helm: PathBuf,
    pub rulecheck: PathBuf,
}

/// Builds the programs once per process; fails the test when the build fails.
pub fn ops_tools() -> &'static OpsTools {
    static TOOLS: OnceLock<OpsTools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let start = Instant::now();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ops-tools.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/ops-tools.sh");
        assert!(
            out.status.success(),
            "helm and rulecheck cannot be built (scripts/ops-tools.sh): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: HashMap<String, PathBuf> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), PathBuf::from(v)))
            .collect();
        let get = |name: &str| {
            let p = lines
                .get(name)
                .unwrap_or_else(|| panic!("ops-tools.sh printed no {name}= line"))
                .clone();
            assert!(p.is_file(), "ops-tools.sh: {} is missing", p.display());
            p
        };
        let tools = OpsTools {
            helm: get("helm"),
            rulecheck: get("rulecheck"),
        };
        eprintln!(
            "ops tools ready in {:.1} s: {tools:?}",
            start.elapsed().as_secs_f64()
        );
        tools
    })
}
