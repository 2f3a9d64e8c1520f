//! `mansign admission serve` (the validating webhook) and `mansign admission review` (one
//! `AdmissionReview` answered offline, exactly as the server would answer it).

use super::admission_policy::PolicyArgs;
use super::admission_serve::{self, ServeArgs};
use super::outcome::Outcome;
use crate::admission::{ReviewOptions, Reviewer};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::io::Read as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct AdmissionArgs {
    #[command(subcommand)]
    command: AdmissionCommand,
}

#[derive(Debug, Subcommand)]
enum AdmissionCommand {
    /// Run the validating admission webhook (HTTPS).
    Serve(Box<ServeArgs>),
    /// Answer one AdmissionReview offline and print the response JSON the server would send.
    Review(ReviewArgs),
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// The AdmissionReview request (JSON), or `-` for stdin. Prints the response body the
    /// server would send (stdout) and the decision (stderr); exit 0 allowed, 1 denied, 2
    /// not an answerable AdmissionReview.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub input: PathBuf,
}

pub fn run(args: AdmissionArgs) -> anyhow::Result<Outcome> {
    match args.command {
        AdmissionCommand::Serve(a) => admission_serve::run((*a).into()),
        AdmissionCommand::Review(a) => review(a),
    }
}

fn review(args: ReviewArgs) -> anyhow::Result<Outcome> {
    let reviewer = Reviewer::new(args.policy.load()?, ReviewOptions::default());
    let limit = reviewer.options().max_body_bytes;
    let (label, body) = read_bounded(&args.input, limit)?;
    let reviewed = reviewer.review(&body);
    match reviewed.response {
        Ok(response) => {
            let decision = &reviewed.decision;
            // stdout: the response body, byte for byte what the server sends, and a newline
            // (JSON readers ignore it; a shell prompt or `cat` of two answers needs it).
            super::output::print_stdout_bytes(&response)?;
            super::output::print_stdout_bytes(b"\n")?;
            // The code once: a message that already names it (`... [modified]: ...`) is not
            // prefixed with it again.
            let reason = decision
                .reason_code
                .as_deref()
                .filter(|c| !decision.message.contains(&format!("[{c}]")))
                .map(|c| format!(" [{c}]"))
                .unwrap_or_default();
            eprintln!(
                "{label}: {}{reason}: {}",
                decision.outcome.as_str(),
                decision.message
            );
            Ok(if decision.outcome.is_allowed() {
                Outcome::Success
            } else {
                Outcome::VerificationFailed
            })
        }
        Err(bad) => Err(anyhow::anyhow!(
            "{label}: not an AdmissionReview mansign can answer [{}]: {bad}",
            bad.code
        )),
    }
}

/// The request body from a file or stdin (`-`), at most `limit + 1` bytes (one more than
/// the limit, so that the reviewer reports the oversized body).
fn read_bounded(input: &Path, limit: usize) -> anyhow::Result<(String, Vec<u8>)> {
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut body = Vec::new();
    if input == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(cap)
            .read_to_end(&mut body)
            .context("cannot read stdin")?;
        // named as every other command names standard input (manifest::Source::Stdin)
        Ok(("<stdin>".into(), body))
    } else {
        let label = input.display().to_string();
        std::fs::File::open(input)
            .and_then(|f| f.take(cap).read_to_end(&mut body))
            .with_context(|| format!("cannot read {label}"))?;
        Ok((label, body))
    }
}
