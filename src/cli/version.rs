//! `mansign version`

use super::Outcome;
use clap::Args;

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: VersionArgs) -> anyhow::Result<Outcome> {
    let info = serde_json::json!({
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "sigstoreCrates": "0.15.1",
        "annotationDomain": crate::annotations::AnnotationDomain::DEFAULT,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        println!("mansign {}", env!("CARGO_PKG_VERSION"));
    }
    Ok(Outcome::Success)
}
