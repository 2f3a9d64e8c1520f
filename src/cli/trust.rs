//! `mansign trust`: inspect and refresh trust roots.

use super::args::{TrustRootArg, TrustRootChoice, output_path};
use super::outcome::Outcome;
use crate::trust::update::{TufSource, default_cached_root, update};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TrustArgs {
    #[command(subcommand)]
    command: TrustCommand,
}

#[derive(Debug, Subcommand)]
enum TrustCommand {
    /// Refresh the cached trusted_root.json over TUF (verification never does this itself).
    Update(UpdateArgs),
    /// Print which trust root verification uses and what it holds: each certificate
    /// authority (subject, validity), each transparency and CT log (ID in hex and base64,
    /// URL, validity).
    Show(ShowArgs),
}

#[derive(Debug, Args)]
struct UpdateArgs {
    /// TUF repository URL. Default: Sigstore public-good.
    #[arg(long, value_name = "URL", requires = "tuf_root")]
    tuf_url: Option<String>,
    /// Bootstrap root.json for a custom TUF repository (trust starts here).
    #[arg(long, value_name = "FILE")]
    tuf_root: Option<PathBuf>,
    /// Where to write trusted_root.json. Default: the cache verification reads
    /// ($MANSIGN_TRUST_DIR, else $XDG_CACHE_HOME/mansign, else ~/.cache/mansign).
    #[arg(long, short = 'o', value_name = "FILE",
          value_parser = output_path("it is always trusted_root.json"))]
    output: Option<String>,
    /// Directory for TUF metadata between runs. Default: none (fetch everything).
    #[arg(long, value_name = "DIR")]
    tuf_cache: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ShowArgs {
    #[command(flatten)]
    trust: TrustRootArg,
}

pub fn run(args: TrustArgs) -> anyhow::Result<Outcome> {
    match args.command {
        TrustCommand::Update(a) => {
            let output = match a.output {
                Some(p) => PathBuf::from(p),
                None => default_cached_root()
                    .context("no cache directory: set MANSIGN_TRUST_DIR or pass --output")?,
            };
            let source = TufSource {
                url: a.tuf_url,
                root: a.tuf_root,
                cache_dir: a.tuf_cache,
            };
            let root = update(&source, &output)?;
            eprintln!("updated {}: {}", output.display(), root.summary());
        }
        TrustCommand::Show(a) => {
            let choice = a.trust.choice();
            let root = choice.load()?;
            let origin = match &choice {
                TrustRootChoice::Default(location) => location.to_string(),
                TrustRootChoice::Flag(_) => root.origin().to_string(),
            };
            let mut text = format!("{origin}: {}\n", root.summary());
            for member in root.members() {
                text.push_str(&format!("  {member}\n"));
            }
            super::output::print_report(&text)?;
        }
    }
    Ok(Outcome::Success)
}
