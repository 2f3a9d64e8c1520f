//! `mansign completion SHELL`

use super::outcome::Outcome;
use clap::Args;
use clap_complete::Shell;

/// How to install the script, shown by `mansign completion --help` (docs/cli.md has the same).
pub const INSTALL: &str = "\
Install (then open a new shell):
  bash  mansign completion bash > ~/.local/share/bash-completion/completions/mansign
  zsh   mansign completion zsh > ~/.zfunc/_mansign   (with fpath+=(~/.zfunc) before compinit in ~/.zshrc)
  fish  mansign completion fish > ~/.config/fish/completions/mansign.fish
As the kubectl plugin, call it as kubectl-mansign: the script then completes that name.";

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// Shell to generate the completion script for.
    pub shell: Shell,
}

/// The script completes the name the binary was called by: `mansign`, or `kubectl-mansign`
/// when it is installed as the kubectl plugin (kubectl 1.26+ completes a plugin's
/// arguments through an executable `kubectl_complete-mansign`; the script completes the
/// plugin binary by its own name).
/// `cmd` is the whole command line (`Cli::command()`), `as_plugin` how the binary was called:
/// both given by the dispatch, so this file does not import it back.
pub fn run(
    args: CompletionArgs,
    mut cmd: clap::Command,
    as_plugin: bool,
) -> anyhow::Result<Outcome> {
    let name = if as_plugin {
        "kubectl-mansign"
    } else {
        "mansign"
    };
    // Written to memory first: clap_complete panics on a failed write, and a closed stdout
    // (`| head -1`) must not be a panic.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut script);
    super::output::print_report(&String::from_utf8_lossy(&script))?;
    Ok(Outcome::Success)
}
