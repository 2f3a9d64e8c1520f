//! `mansign verify`

use super::Outcome;
use crate::annotations::AnnotationDomain;
use crate::limits::Limits;
use crate::manifest::load_inputs;
use crate::verify::{Attestor, TrustedKey, Verifier};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One line per document.
    Text,
    /// One JSON object (schema in docs/cli.md).
    Json,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Signed manifest file, directory (recursive, *.yaml and *.yml) or `-` for stdin. Repeatable.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub inputs: Vec<PathBuf>,

    /// Trusted public key (PEM, `cosign.pub`). Repeatable, or comma-separated; a
    /// signature made by any one of them is accepted.
    #[arg(short = 'k', long = "key", value_name = "FILE", value_delimiter = ',')]
    pub keys: Vec<PathBuf>,

    /// Output format.
    #[arg(long = "output", value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// Annotation domain of the signature annotations.
    #[arg(long, default_value = AnnotationDomain::DEFAULT, value_name = "DOMAIN")]
    pub annotation_domain: String,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<Outcome> {
    let domain = AnnotationDomain::new(&args.annotation_domain).map_err(anyhow::Error::msg)?;
    let limits = Limits::default();
    if args.keys.is_empty() {
        bail!("--key is required (keyless verification is not available in this build)");
    }
    let mut attestors = Vec::new();
    for path in &args.keys {
        let pem = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read key", path.display()))?;
        let key = TrustedKey::from_pem(path.display().to_string(), &pem)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{}: not a usable public key", path.display()))?;
        attestors.push(Attestor::Key(key));
    }
    let files = load_inputs(&args.inputs, &limits)?;
    let verifier = Verifier::new(attestors)
        .with_domain(domain)
        .with_limits(limits);
    let verdict = verifier.verify_documents(files.iter().flat_map(|f| &f.documents));
    match args.output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&verdict.to_json())?),
        OutputFormat::Text => {
            for d in &verdict.documents {
                println!("{d}");
            }
            let ok = verdict.documents.iter().filter(|d| d.is_verified()).count();
            println!("{} of {} document(s) verified", ok, verdict.documents.len());
        }
    }
    Ok(if verdict.is_verified() {
        Outcome::Success
    } else {
        Outcome::VerificationFailed
    })
}
