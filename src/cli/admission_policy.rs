//! Policy and trust flags shared by `admission serve` and `admission review`.

use super::args::{TrustRootArg, TrustRootChoice};
use crate::limits::Limits;
use crate::policy::{LoadOptions, PolicySet, ResolvedKeys, load_file_with_keys};
use clap::Args;
use std::path::PathBuf;

/// Policies and trust: the same files as `mansign verify --policy`.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Policy file (mansign `ManifestPolicy` and/or Kyverno `validate.manifests` policies,
    /// docs/policy.md). Repeatable; every rule of every file applies.
    #[arg(long = "policy", value_name = "FILE", required = true)]
    pub policies: Vec<PathBuf>,

    #[command(flatten)]
    pub trust: TrustRootArg,

    /// Accept keyless policy entries without an issuer (Kyverno policies often have none):
    /// the subject is still required, each such entry is warned about once, and every result
    /// it accepts says "issuer not checked". Insecure; `mansign policy convert` pins issuers.
    #[arg(long)]
    pub insecure_any_issuer: bool,
}

impl PolicyArgs {
    /// Loads every policy file into one set with the trust root `verify --policy` would
    /// use, printing the loader's notes (skipped rules, entries whose issuer is not
    /// checked) on stderr, as `verify --policy` does.
    pub fn load(&self) -> anyhow::Result<PolicySet> {
        self.load_with(&self.trust.choice())
    }

    /// [`PolicyArgs::load`] with the trust root chosen once (the server chooses at start
    /// and re-reads that file when it changes).
    pub fn load_with(&self, trust: &TrustRootChoice) -> anyhow::Result<PolicySet> {
        self.load_with_keys(trust, &ResolvedKeys::default())
    }

    /// [`PolicyArgs::load_with`] with the values of the policies' Kubernetes key
    /// references (a reference without one leaves its rule denying).
    pub fn load_with_keys(
        &self,
        trust: &TrustRootChoice,
        keys: &ResolvedKeys,
    ) -> anyhow::Result<PolicySet> {
        let options = LoadOptions {
            trust_root: Some(trust.load()?),
            limits: Limits::default(),
            insecure_any_issuer: self.insecure_any_issuer,
        };
        let mut set = PolicySet::default();
        for path in &self.policies {
            set.extend(load_file_with_keys(path, &options, keys)?);
        }
        for note in &set.notes {
            eprintln!("note: {note}");
        }
        Ok(set)
    }
}
