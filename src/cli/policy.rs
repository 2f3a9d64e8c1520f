//! `mansign policy`: convert Kyverno policies to mansign's format, and explain what a
//! policy file enforces.

use super::Outcome;
use super::output::{Target, print_stdout, write_all};
use super::verify::OutputFormat;
use crate::limits::Limits;
use crate::manifest::load_inputs;
use crate::policy::convert::{ConvertOptions, convert_str};
use crate::policy::explain::{explain_json, explain_text};
use crate::policy::{LoadOptions, load_file};
use crate::trust::TrustRoot;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Turn Kyverno `validate.manifests` policies (or a kubectl-sigstore config) into mansign
    /// `ManifestPolicy` documents, pinning the issuer of every keyless entry
    /// (docs/migrating.md).
    Convert(ConvertArgs),
    /// Say, rule by rule, what a policy file enforces and where mansign is stricter than
    /// Kyverno.
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
struct ConvertArgs {
    /// Policy file: Kyverno `ClusterPolicy`/`Policy` documents (ManifestPolicy documents are
    /// copied unchanged), or a kubectl-sigstore `verify -c` config.
    #[arg(value_name = "FILE")]
    policy: PathBuf,

    /// Issuer for every keyless entry that names none (e.g.
    /// https://token.actions.githubusercontent.com).
    #[arg(long, value_name = "URL", conflicts_with = "from_signed")]
    issuer: Option<String>,

    /// Signed manifests (files, directories, globs) to learn issuers from: for a keyless
    /// entry without an issuer, the one issuer its subject's verified signatures show.
    /// Refused when they show none or several. Repeatable.
    #[arg(long, value_name = "PATH")]
    from_signed: Vec<PathBuf>,

    /// Where to write the converted policy (`-`: stdout, the default). Written whole or
    /// not at all.
    #[arg(short = 'o', long, value_name = "OUT")]
    output: Option<PathBuf>,

    /// Sigstore `trusted_root.json` the input's keyless `roots` and the `--from-signed`
    /// signatures are checked against. Default: the cached root, else the embedded
    /// public-good root.
    #[arg(long, value_name = "FILE")]
    trusted_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ExplainArgs {
    /// Policy file (mansign and/or Kyverno documents).
    #[arg(value_name = "FILE")]
    policy: PathBuf,

    /// Output format.
    #[arg(long = "output", value_enum, default_value_t = OutputFormat::Text)]
    output: OutputFormat,

    /// Sigstore `trusted_root.json` for keyless entries that name none (as `verify`).
    #[arg(long, value_name = "FILE")]
    trusted_root: Option<PathBuf>,

    /// Load keyless entries without an issuer, as `verify --insecure-any-issuer` would
    /// (the explanation warns about each).
    #[arg(long)]
    insecure_any_issuer: bool,
}

fn trust_root(path: &Option<PathBuf>) -> anyhow::Result<Arc<TrustRoot>> {
    Ok(Arc::new(match path {
        Some(p) => {
            TrustRoot::from_file(p).with_context(|| format!("--trusted-root {}", p.display()))?
        }
        None => TrustRoot::from_env()?,
    }))
}

pub fn run(args: PolicyArgs) -> anyhow::Result<Outcome> {
    match args.command {
        PolicyCommand::Convert(a) => convert(a),
        PolicyCommand::Explain(a) => run_explain(a),
    }
}

fn convert(a: ConvertArgs) -> anyhow::Result<Outcome> {
    let limits = Limits::default();
    let text = std::fs::read_to_string(&a.policy)
        .with_context(|| format!("{}: cannot read policy", a.policy.display()))?;
    let from_signed = if a.from_signed.is_empty() {
        Vec::new()
    } else {
        load_inputs(&a.from_signed, &limits)?
            .into_iter()
            .flat_map(|f| f.documents)
            .collect()
    };
    let options = ConvertOptions {
        issuer: a.issuer,
        from_signed,
        load: LoadOptions {
            trust_root: Some(trust_root(&a.trusted_root)?),
            limits,
            insecure_any_issuer: false,
        },
    };
    let base = a.policy.parent().map(PathBuf::from).unwrap_or_default();
    let conversion = convert_str(&a.policy.display().to_string(), &text, &base, &options)?;
    for note in &conversion.notes {
        eprintln!("note: {note}");
    }
    let target = match a.output {
        None => Target::Stdout,
        Some(p) if p.as_os_str() == "-" => Target::Stdout,
        Some(p) => Target::File(p),
    };
    write_all(vec![(target, conversion.to_yaml())])?;
    Ok(Outcome::Success)
}

fn run_explain(a: ExplainArgs) -> anyhow::Result<Outcome> {
    let options = LoadOptions {
        trust_root: Some(trust_root(&a.trusted_root)?),
        limits: Limits::default(),
        insecure_any_issuer: a.insecure_any_issuer,
    };
    let set = load_file(&a.policy, &options)?;
    let text = match a.output {
        OutputFormat::Json => serde_json::to_string_pretty(&explain_json(&set))? + "\n",
        OutputFormat::Text => explain_text(&set),
    };
    print_stdout(&text)?;
    Ok(Outcome::Success)
}
