//! Policy and trust flags shared by `admission serve` and `admission review`.

use crate::limits::Limits;
use crate::policy::{LoadOptions, PolicySet, load_file as load_policy_file};
use crate::trust::TrustRoot;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;

/// Policies and trust: the same files as `mansign verify --policy`.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Policy file (mansign `ManifestPolicy` and/or Kyverno `validate.manifests` policies,
    /// docs/policy.md). Repeatable; every rule of every file applies.
    #[arg(long = "policy", value_name = "FILE", required = true)]
    pub policies: Vec<PathBuf>,

    /// Sigstore `trusted_root.json` for keyless entries that name none. Default: the
    /// embedded public-good root.
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,

    /// Accept keyless policy entries without an issuer (Kyverno policies often have none):
    /// the subject is still required, each such entry is warned about once, and every result
    /// it accepts says "issuer not checked". Insecure; `mansign policy convert` pins issuers.
    #[arg(long)]
    pub insecure_any_issuer: bool,
}

impl PolicyArgs {
    /// Loads every policy file into one set, printing the loader's notes (skipped rules,
    /// entries whose issuer is not checked) on stderr, as `verify --policy` does.
    pub fn load(&self) -> anyhow::Result<PolicySet> {
        let trust_root = match &self.trusted_root {
            Some(path) => {
                Some(Arc::new(TrustRoot::from_file(path).with_context(|| {
                    format!("--trusted-root {}", path.display())
                })?))
            }
            None => None,
        };
        let options = LoadOptions {
            trust_root,
            limits: Limits::default(),
            insecure_any_issuer: self.insecure_any_issuer,
        };
        let mut set = PolicySet::default();
        for path in &self.policies {
            set.extend(load_policy_file(path, &options)?);
        }
        for note in &set.notes {
            eprintln!("note: {note}");
        }
        Ok(set)
    }
}
