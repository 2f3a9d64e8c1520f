//! `mansign sign`

use super::Outcome;
use super::output::{Target, write_all};
use crate::annotations::AnnotationDomain;
use crate::limits::Limits;
use crate::manifest::{ManifestFile, Source, load_inputs, to_yaml};
use crate::signing::{KeySigner, SignOptions, SignScope, cosign_key, sign_files};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SignArgs {
    /// Manifest file, directory (recursive, *.yaml and *.yml) or `-` for stdin. Repeatable.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub inputs: Vec<PathBuf>,

    /// Output: a file, a directory (`DIR/`, created; inputs keep their relative paths) or
    /// `-` for stdout. Default: `<input>.signed` next to each input, stdout for stdin.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<String>,

    /// cosign private key file (`ENCRYPTED SIGSTORE/COSIGN PRIVATE KEY`). Password from
    /// COSIGN_PASSWORD, else a prompt on a terminal.
    #[arg(short = 'k', long = "key", value_name = "FILE")]
    pub key: Option<PathBuf>,

    /// What one signature covers: each document on its own, or the whole file
    /// (kubectl-sigstore's shape: one message, the same annotations on every document).
    #[arg(long, value_enum, default_value_t = SignScope::Document)]
    pub scope: SignScope,

    /// Add a further signature set (`signature_N`...) to already signed manifests instead
    /// of replacing existing signatures. The message must be unchanged.
    #[arg(short = 'A', long)]
    pub append: bool,

    /// Annotation domain of the signature annotations.
    #[arg(long, default_value = AnnotationDomain::DEFAULT, value_name = "DOMAIN")]
    pub annotation_domain: String,
}

pub fn run(args: SignArgs) -> anyhow::Result<Outcome> {
    let domain = AnnotationDomain::new(&args.annotation_domain).map_err(anyhow::Error::msg)?;
    let limits = Limits::default();
    let Some(key_path) = &args.key else {
        bail!("--key is required (keyless signing is not available in this build)");
    };
    let key_pem = std::fs::read_to_string(key_path)
        .with_context(|| format!("{}: cannot read key", key_path.display()))?;
    let password = super::password::read("Enter password for private key: ")?;
    let key = cosign_key::decrypt_private_key(&key_pem, password.as_bytes())
        .with_context(|| format!("{}: cannot load private key", key_path.display()))?;
    let signer = KeySigner::new(key);

    let mut files = load_inputs(&args.inputs, &limits)?;
    let targets = plan_targets(&files, args.output.as_deref())?;
    let options = SignOptions {
        scope: args.scope,
        append: args.append,
        domain,
        limits,
    };
    let summary = sign_files(&mut files, &signer, &options)?;
    let outputs: Vec<(Target, String)> = files
        .iter()
        .zip(targets)
        .map(|(f, t)| (t, render(f)))
        .collect();
    let shown: Vec<String> = outputs
        .iter()
        .map(|(t, _)| match t {
            Target::Stdout => "<stdout>".to_string(),
            Target::File(p) => p.display().to_string(),
        })
        .collect();
    write_all(outputs)?;
    eprintln!(
        "signed {} document(s) in {} file(s) with {} signature(s) -> {}",
        summary.documents,
        summary.files,
        summary.signatures,
        shown.join(", ")
    );
    Ok(Outcome::Success)
}

/// The output text of a file: its documents as YAML, separated by `---`.
pub fn render(file: &ManifestFile) -> String {
    file.documents
        .iter()
        .map(|d| to_yaml(&d.value))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Decides where each file goes before anything is signed, so a bad `-o` fails early.
fn plan_targets(files: &[ManifestFile], output: Option<&str>) -> anyhow::Result<Vec<Target>> {
    match output {
        None => Ok(files
            .iter()
            .map(|f| match &f.source {
                Source::File(p) => {
                    let mut s = p.clone().into_os_string();
                    s.push(".signed");
                    Target::File(PathBuf::from(s))
                }
                _ => Target::Stdout,
            })
            .collect()),
        Some("-") => Ok(vec![Target::Stdout; files.len()]),
        Some(o) if o.ends_with('/') || std::path::Path::new(o).is_dir() => {
            let dir = PathBuf::from(o);
            let mut seen = std::collections::HashSet::new();
            let mut targets = Vec::new();
            for f in files {
                let t = dir.join(&f.relative_path);
                if !seen.insert(t.clone()) {
                    bail!(
                        "two inputs would be written to {}: sign them in separate runs or pass their directory",
                        t.display()
                    );
                }
                targets.push(Target::File(t));
            }
            Ok(targets)
        }
        Some(o) => {
            if files.len() != 1 {
                bail!(
                    "-o {o}: {} input files but one output file; use a directory (`-o DIR/`)",
                    files.len()
                );
            }
            Ok(vec![Target::File(PathBuf::from(o))])
        }
    }
}
