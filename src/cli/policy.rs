//! `mansign policy`: convert Kyverno policies to mansign's format, explain what a policy
//! file enforces, and run Kyverno CLI test suites for manifest rules.

use super::args::{ReportFormat, ReportFormatArg, TrustRootArg, output_path};
use super::outcome::Outcome;
use super::output::{Target, print_report, write_all};
use crate::limits::Limits;
use crate::manifest::load_inputs;
use crate::policy::convert::{ConvertOptions, convert_str};
use crate::policy::explain::{explain_json, explain_text};
use crate::policy::test_suite::{DEFAULT_FILE_NAME, SuiteOptions, run_suites};
use crate::policy::{LoadOptions, load_file};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
    /// Run Kyverno CLI test suites (`kyverno-test.yaml`, `cli.kyverno.io/v1alpha1` `Test`)
    /// for manifest rules, as `kyverno test DIR` runs them; exit 1 when an expectation is
    /// not met (docs/policy.md, "Test suites").
    Test(TestArgs),
}

#[derive(Debug, Args)]
struct TestArgs {
    /// Directories searched recursively for suite files (or suite files themselves).
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,

    /// The suite file name searched for in directories (as kyverno test's --file-name).
    #[arg(short = 'f', long, value_name = "NAME", default_value = DEFAULT_FILE_NAME)]
    file_name: String,

    #[command(flatten)]
    format: ReportFormatArg,

    #[command(flatten)]
    trust: TrustRootArg,
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
    /// not at all; always YAML.
    #[arg(short = 'o', long, value_name = "OUT",
          value_parser = output_path("the converted policy is always YAML"))]
    output: Option<String>,

    #[command(flatten)]
    trust: TrustRootArg,
}

#[derive(Debug, Args)]
struct ExplainArgs {
    /// Policy file (mansign and/or Kyverno documents).
    #[arg(value_name = "FILE")]
    policy: PathBuf,

    #[command(flatten)]
    format: ReportFormatArg,

    #[command(flatten)]
    trust: TrustRootArg,

    /// Load keyless entries without an issuer, as `verify --insecure-any-issuer` would
    /// (the explanation warns about each).
    #[arg(long)]
    insecure_any_issuer: bool,
}

pub fn run(args: PolicyArgs) -> anyhow::Result<Outcome> {
    match args.command {
        PolicyCommand::Convert(a) => convert(a),
        PolicyCommand::Explain(a) => run_explain(a),
        PolicyCommand::Test(a) => run_test(a),
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
            trust_root: Some(a.trust.load()?),
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
        Some(p) if p == "-" => Target::Stdout,
        Some(p) => Target::File(PathBuf::from(p)),
    };
    write_all(vec![(target, conversion.to_yaml())])?;
    Ok(Outcome::Success)
}

fn run_explain(a: ExplainArgs) -> anyhow::Result<Outcome> {
    let options = LoadOptions {
        trust_root: Some(a.trust.load()?),
        limits: Limits::default(),
        insecure_any_issuer: a.insecure_any_issuer,
    };
    let set = load_file(&a.policy, &options)?;
    let text = match a.format.output {
        ReportFormat::Json => serde_json::to_string_pretty(&explain_json(&set))? + "\n",
        ReportFormat::Text => explain_text(&set),
    };
    print_report(&text)?;
    Ok(Outcome::Success)
}

fn run_test(a: TestArgs) -> anyhow::Result<Outcome> {
    if a.file_name.is_empty() || a.file_name.contains('/') {
        anyhow::bail!(
            "--file-name {:?}: a file name, without directories",
            a.file_name
        );
    }
    let options = SuiteOptions {
        file_name: a.file_name,
        load: LoadOptions {
            trust_root: Some(a.trust.load()?),
            limits: Limits::default(),
            insecure_any_issuer: false,
        },
    };
    let report = run_suites(&a.dirs, &options)?;
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    let text = match a.format.output {
        ReportFormat::Json => serde_json::to_string_pretty(&report.to_json())? + "\n",
        ReportFormat::Text => report.to_text(),
    };
    print_report(&text)?;
    Ok(if report.is_success() {
        Outcome::Success
    } else {
        Outcome::VerificationFailed
    })
}
