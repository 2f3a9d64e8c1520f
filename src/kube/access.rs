//! Which API server a command or the webhook reads, chosen one way for all of them: the
//! CLI's `verify --policy` (`k8s://` key references) and the admission webhook's key
//! watches both name a [`ClusterAccess`] and read through [`KubeClient`](super::KubeClient).

use super::config::ImpersonationSpelling;
use super::{ClusterConfig, Impersonation, KubeError};
use crate::limits::Limits;
use std::path::PathBuf;

/// Where the API server is, in kubectl's order (client-go's deferred loading): `--kubeconfig`/
/// `--context`, else a kubeconfig that is there (`$KUBECONFIG`'s files, else
/// `~/.kube/config`), else the pod's service account, else the default kubeconfig's error;
/// and whom to act as.
#[derive(Debug, Clone, Default)]
pub struct ClusterAccess {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `--as`/`--as-group`: replaces the kubeconfig user's impersonation (as kubectl's
    /// flags do).
    pub impersonate: Option<Impersonation>,
}

impl ClusterAccess {
    /// The API server and credentials this access names, read now (a kubeconfig, the pod's
    /// service account), with the impersonation flags applied.
    pub fn config(&self, limits: &Limits) -> Result<ClusterConfig, KubeError> {
        let config = if self.kubeconfig.is_some() || self.context.is_some() {
            ClusterConfig::from_kubeconfig(
                self.kubeconfig.as_deref(),
                self.context.as_deref(),
                limits,
            )
        } else if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() && !kubeconfig_present() {
            ClusterConfig::in_cluster()
        } else {
            ClusterConfig::from_kubeconfig(None, None, limits)
        };
        let mut config = config?;
        if let Some(who) = &self.impersonate {
            who.check(&ImpersonationSpelling::FLAGS)
                .map_err(KubeError::Config)?;
            config.impersonation = who.clone();
        }
        Ok(config)
    }
}

/// Whether a kubeconfig file is there to be read without flags: one of `$KUBECONFIG`'s files,
/// else `~/.kube/config`. kubectl reads such a file before it falls back to the pod's
/// service account, so a job in a pod with `KUBECONFIG` set reads the cluster kubectl reads.
fn kubeconfig_present() -> bool {
    match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        Some(list) => {
            std::env::split_paths(&list).any(|p| !p.as_os_str().is_empty() && p.is_file())
        }
        None => std::env::var_os("HOME")
            .is_some_and(|home| PathBuf::from(home).join(".kube/config").is_file()),
    }
}
