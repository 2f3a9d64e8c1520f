//! Command-line interface. Every flag is defined here or in the subcommand files with its
//! help text; the subcommands only translate flags into library calls and print results.
//!
//! Exit codes: 0 success, 1 verification failed, 2 usage or input error.

mod admission;
mod admission_policy;
mod admission_serve;
mod args;
mod completion;
mod conformance;
mod generate_key_pair;
mod outcome;
mod output;
mod password;
mod policy;
mod sign;
mod sign_report;
mod spill;
mod trust;
mod verify;
mod verify_hints;
mod verify_report;
mod verify_resource;
mod version;

pub use outcome::Outcome;

use outcome::render_error;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0  success (for verify: every document verified)
  1  verification failed (a signature, signer or document check failed)
  2  usage or input error (bad flags, unreadable or invalid input, bad key or password, signing failed)"
    };
}

const EXIT_CODES: &str = exit_codes!();

// The `Examples:` of each command's help: commands that work as shown (the
// `help_examples::` tests parse every one with this parser and run those that need no
// network or cluster). A line ending in ` \` continues on the next.
const SIGN_HELP: &str = concat!(
    "\
Examples:
  # with a key pair from `mansign generate-key-pair`: writes deploy.yaml.signed
  mansign sign -f deploy.yaml --key cosign.key
  # a directory needs -o: signed/ mirrors unsigned/
  mansign sign unsigned/ --key cosign.key -o signed/
  # keylessly (a browser sign-in, or the CI's identity token); kubectl apply -R -f signed/
  mansign sign -f manifests/ -o signed/

",
    exit_codes!()
);

const VERIFY_HELP: &str = concat!(
    "\
Examples:
  mansign verify -f deploy.yaml.signed --key cosign.pub
  mansign verify -f deploy.yaml.signed --policy policy.yaml -o json
  # keyless: who must have signed (cosign's flags)
  mansign verify -f signed/ --certificate-identity you@example.com \\
    --certificate-oidc-issuer https://github.com/login/oauth

",
    exit_codes!()
);

const VERIFY_RESOURCE_HELP: &str = concat!(
    "\
Examples:
  mansign verify-resource configmap/settings -n team-a --key cosign.pub
  mansign verify-resource deployments -A --policy policy.yaml

",
    exit_codes!()
);

const GENERATE_KEY_PAIR_HELP: &str = concat!(
    "\
Examples:
  # cosign.key (encrypted with $COSIGN_PASSWORD, else a password it asks for), cosign.pub
  mansign generate-key-pair
  mansign generate-key-pair --output-key-prefix release

",
    exit_codes!()
);

const POLICY_HELP: &str = concat!(
    "\
Examples:
  mansign policy explain policy.yaml
  mansign policy convert kyverno-policy.yaml --from-signed signed/ -o policy.yaml
  mansign policy test tests/

",
    exit_codes!()
);

const ADMISSION_HELP: &str = "\
Examples:
  mansign admission review --policy policy.yaml -f review.json
  mansign admission serve --policy policy.yaml --tls-cert tls.crt --tls-key tls.key";

const TRUST_HELP: &str = "\
Examples:
  mansign trust show
  mansign trust update";

/// Sign Kubernetes YAML manifests with Sigstore and verify them.
#[derive(Debug, Parser)]
#[command(name = "mansign", version = version::VERSION_LINE, about, after_help = EXIT_CODES,
          propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sign manifests: embed message, signature (and certificate, bundle) annotations.
    #[command(after_help = SIGN_HELP)]
    Sign(sign::SignArgs),
    /// Verify signed manifests: signature, signer and that each object equals what was signed.
    #[command(after_help = VERIFY_HELP)]
    Verify(verify::VerifyArgs),
    /// Verify live objects: read KIND[/NAME] from the cluster (kubeconfig, as kubectl reaches
    /// it), then `verify` with `--ignore-profile kubernetes` (by default; a `--policy` brings
    /// its own) and any other verify flag; one line per object.
    #[command(
        after_help = VERIFY_RESOURCE_HELP,
        mut_arg("ignore_profile", |a| a.default_value("kubernetes")),
        mut_arg("inputs", |a| a.hide(true)),
        mut_arg("paths", |a| a.hide(true)),
        mut_arg("exclude", |a| a.hide(true)),
        mut_arg("recursive", |a| a.hide(true)),
    )]
    VerifyResource(verify_resource::VerifyResourceArgs),
    /// Write a cosign-compatible key pair (encrypted private key and public key).
    #[command(after_help = GENERATE_KEY_PAIR_HELP)]
    GenerateKeyPair(generate_key_pair::GenerateKeyPairArgs),
    /// Admission checker: the validating webhook (`serve`) and offline answers (`review`).
    #[command(after_help = ADMISSION_HELP)]
    Admission(admission::AdmissionArgs),
    /// Policy files: convert Kyverno policies to mansign's format, explain what one enforces,
    /// run Kyverno CLI test suites (`test`).
    #[command(after_help = POLICY_HELP)]
    Policy(policy::PolicyArgs),
    /// Inspect or refresh trust roots (`trust update` fetches trusted_root.json over TUF).
    #[command(after_help = TRUST_HELP)]
    Trust(trust::TrustArgs),
    /// Print version information.
    Version(version::VersionArgs),
    /// Print a shell completion script.
    #[command(after_help = completion::INSTALL)]
    Completion(completion::CompletionArgs),
    /// sigstore-conformance client: sign and verify blobs as standard Sigstore bundles.
    Conformance(conformance::ConformanceArgs),
    /// `sign-bundle` / `verify-bundle` at the top level, as the suite calls them.
    #[command(flatten)]
    ConformanceProtocol(conformance::ProtocolCommand),
}

/// Entry point used by the binary.
pub fn main() -> ExitCode {
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(e) => {
            match without_insecure_suggestion(&e) {
                Some(text) => eprint!("{text}"),
                None => {
                    let _ = e.print();
                }
            }
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::VerificationFailed) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {}", render_error(&e));
            ExitCode::from(2)
        }
    }
}

/// Installed as `kubectl-mansign` (on PATH), the binary is the kubectl plugin
/// `kubectl mansign ...`: the same commands, with help and usage naming it that way.
fn parse_command_line() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = hide_env_values(Cli::command());
    if called_as_plugin() {
        command = command.bin_name("kubectl mansign");
    }
    let matches = command.try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// Help shows `[env: SIGSTORE_FULCIO_URL]`, not the variable's current value: an unset one
/// read as `[env: SIGSTORE_FULCIO_URL=]` (an empty setting), and a set one could be a secret
/// printed into a CI log.
fn hide_env_values(command: clap::Command) -> clap::Command {
    command
        .mut_args(|a| a.hide_env_values(true))
        .mut_subcommands(hide_env_values)
}

/// Whether the binary was called as `kubectl-mansign` (the kubectl plugin).
fn called_as_plugin() -> bool {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .is_some_and(|name| name == "kubectl-mansign")
}

/// clap suggests the closest flag to a mistyped one; a cosign habit such as
/// `--insecure-ignore-tlog` would be answered with `--insecure-any-identity`, which turns off
/// the signer check. No `--insecure-*` flag is ever suggested: the tip and the flag in the
/// usage line are removed.
fn without_insecure_suggestion(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let suggested = match e.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(v)) => v.iter().find(|s| s.contains("--insecure"))?.clone(),
        _ => return None,
    };
    if !suggested.contains("--insecure") {
        return None;
    }
    let mut out = String::new();
    let mut blank = false;
    for line in e.render().to_string().lines() {
        if line.contains("tip:") && line.contains(&suggested) {
            continue;
        }
        if line.trim().is_empty() {
            if blank {
                continue;
            }
            blank = true;
        } else {
            blank = false;
        }
        out.push_str(&line.replace(&format!(" {suggested}"), ""));
        out.push('\n');
    }
    Some(out)
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    use clap::CommandFactory;
    match cli.command {
        Command::Sign(a) => sign::run(a.try_into()?),
        Command::Verify(a) => verify::run(a.try_into()?),
        Command::VerifyResource(a) => verify_resource::run(a.try_into()?),
        Command::GenerateKeyPair(a) => generate_key_pair::run(a),
        Command::Admission(a) => admission::run(a),
        Command::Policy(a) => policy::run(a),
        Command::Trust(a) => trust::run(a),
        Command::Version(a) => version::run(a),
        Command::Completion(a) => completion::run(a, Cli::command(), called_as_plugin()),
        Command::Conformance(a) => conformance::run(a),
        Command::ConformanceProtocol(c) => conformance::run_protocol(c),
    }
}

#[cfg(test)]
mod tests {
    use super::render_error;

    #[test]
    fn render_error_prints_every_cause_once_even_when_an_earlier_message_holds_its_text() {
        // The innermost cause, `keys`, is a word of both earlier messages. The old printer
        // dropped every cause whose text was already in the output, so this one vanished
        // (`--key keys/cosign.pub: cannot read keys`).
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "keys");
        let e = anyhow::Error::new(io)
            .context("cannot read keys")
            .context("--key keys/cosign.pub");
        assert_eq!(
            render_error(&e),
            "--key keys/cosign.pub: cannot read keys: keys"
        );
    }
}
