//! `mansign completion SHELL`

use super::{Cli, Outcome};
use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// Shell to generate the completion script for.
    pub shell: Shell,
}

pub fn run(args: CompletionArgs) -> anyhow::Result<Outcome> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "mansign", &mut std::io::stdout());
    Ok(Outcome::Success)
}
