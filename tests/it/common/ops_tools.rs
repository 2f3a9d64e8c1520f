//! The programs the operations tests run (`scripts/ops-tools.sh`): helm, built from
//! `helm.sh/helm/v3`, and `rulecheck`, the checks of `promtool check rules` built from
//! `github.com/prometheus/prometheus/model/rulefmt` (tests/ops/rulecheck/main.go says which).
//!
//! They are built once per test process and cached across runs in `$MANSIGN_TOOLS_CACHE`
//! or `~/.cache/mansign-tools`. A missing `go` or a failed build FAILS the test with the
//! reason; it is never skipped.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

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
        super::built_tools("ops tools", "ops-tools.sh", &[], |get| OpsTools {
            helm: get("helm"),
            rulecheck: get("rulecheck"),
        })
    })
}
