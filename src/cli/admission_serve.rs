//! `mansign admission serve`: the HTTPS validating webhook.

use super::Outcome;
use super::admission_policy::PolicyArgs;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// TLS certificate chain (PEM), reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: PathBuf,

    /// TLS private key (PEM), reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    pub tls_key: PathBuf,

    /// Address to listen on.
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8443")]
    pub listen: String,
}

pub fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    let _ = args;
    anyhow::bail!("admission serve is not implemented yet")
}
