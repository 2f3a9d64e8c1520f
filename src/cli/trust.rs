//! `mansign trust`: inspect and refresh trust roots.

use super::Outcome;
use crate::trust::TrustRoot;
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
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Directory for TUF metadata between runs. Default: none (fetch everything).
    #[arg(long, value_name = "DIR")]
    tuf_cache: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// A trusted_root.json to describe instead of the default one.
    #[arg(long, value_name = "FILE")]
    trusted_root: Option<PathBuf>,
}

pub fn run(args: TrustArgs) -> anyhow::Result<Outcome> {
    match args.command {
        TrustCommand::Update(a) => {
            let output = match a.output {
                Some(p) => p,
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
            let root = match a.trusted_root {
                Some(p) => TrustRoot::from_file(p)?,
                None => TrustRoot::from_env()?,
            };
            let mut text = format!("{}: {}\n", root.origin(), root.summary());
            for member in root.members() {
                text.push_str(&format!("  {member}\n"));
            }
            super::output::print_stdout(&text)?;
        }
    }
    Ok(Outcome::Success)
}
