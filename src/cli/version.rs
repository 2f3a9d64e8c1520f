//! `mansign version` (and `--version`): the version, and the commit, build date and target a
//! bug report needs (captured by build.rs).

use super::args::{ReportFormat, ReportFormatArg};
use super::outcome::Outcome;
use clap::Args;

/// What `--version` prints after the program name.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MANSIGN_BUILD_COMMIT"),
    ", built ",
    env!("MANSIGN_BUILD_DATE"),
    ", ",
    env!("MANSIGN_BUILD_TARGET"),
    ")"
);

#[derive(Debug, Args)]
pub struct VersionArgs {
    #[command(flatten)]
    pub format: ReportFormatArg,

    /// Same as `-o json` (kept for scripts written before `-o`).
    #[arg(long, hide = true)]
    pub json: bool,
}

pub fn run(args: VersionArgs) -> anyhow::Result<Outcome> {
    let info = serde_json::json!({
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("MANSIGN_BUILD_COMMIT"),
        "buildDate": env!("MANSIGN_BUILD_DATE"),
        "target": env!("MANSIGN_BUILD_TARGET"),
        "sigstoreCrates": "0.15.1",
        "annotationDomain": crate::annotations::AnnotationDomain::DEFAULT,
    });
    let text = if args.json || args.format.output == ReportFormat::Json {
        serde_json::to_string_pretty(&info)? + "\n"
    } else {
        format!("mansign {VERSION_LINE}\n")
    };
    super::output::print_report(&text)?;
    Ok(Outcome::Success)
}
