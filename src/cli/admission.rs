//! `mansign admission serve` (the validating webhook) and `mansign admission review` (one
//! `AdmissionReview` answered offline, exactly as the server would answer it).

use super::Outcome;
use super::admission_policy::PolicyArgs;
use super::admission_serve::{self, ServeArgs};
use crate::admission::{ReviewOptions, Reviewer};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct AdmissionArgs {
    #[command(subcommand)]
    command: AdmissionCommand,
}

#[derive(Debug, Subcommand)]
enum AdmissionCommand {
    /// Run the validating admission webhook (HTTPS).
    Serve(ServeArgs),
    /// Answer one AdmissionReview offline and print the response JSON the server would send.
    Review(ReviewArgs),
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// The AdmissionReview request (JSON), or `-` for stdin.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub input: PathBuf,
}

pub fn run(args: AdmissionArgs) -> anyhow::Result<Outcome> {
    match args.command {
        AdmissionCommand::Serve(a) => admission_serve::run(a),
        AdmissionCommand::Review(a) => review(a),
    }
}

fn review(args: ReviewArgs) -> anyhow::Result<Outcome> {
    let reviewer = Reviewer::new(args.policy.load()?, ReviewOptions::default());
    let body = std::fs::read(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let reviewed = reviewer.review(&body);
    match reviewed.response {
        Ok(response) => {
            super::output::print_stdout(&String::from_utf8_lossy(&response))?;
            Ok(if reviewed.decision.outcome.is_allowed() {
                Outcome::Success
            } else {
                Outcome::VerificationFailed
            })
        }
        Err(bad) => Err(anyhow::anyhow!("{}: {bad}", args.input.display())),
    }
}
