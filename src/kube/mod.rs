//! mansign's one way into a cluster, for every command and the webhook: where the server is
//! and how to authenticate ([`ClusterConfig`]: kubeconfig or in-cluster service account,
//! with what kubectl supports for reading objects: client certificates, tokens, `exec`
//! credential plugins, impersonation, `proxy-url` and the proxy environment,
//! `tls-server-name`), bounded reads and watches of named Secrets and ConfigMaps
//! ([`KubeClient`]), for the public keys policies name by reference, and reads of any kind
//! resolved by API discovery ([`ApiResource`], for `verify-resource`). No kube-rs client:
//! a reader of its own over the `reqwest`/rustls stack mansign already has (docs/design.md,
//! with the numbers).

mod access;
mod client;
mod config;
mod discovery;
mod exec;
mod proxy;
mod tls;

pub use access::ClusterAccess;
pub use client::{KubeClient, ObjectList, WatchEvent, WatchStream, resource_version};
pub use config::{ClusterConfig, Credentials, Impersonation, Kubeconfig, SERVICE_ACCOUNT_DIR};
pub use discovery::{ApiResource, Scope};
pub use exec::ExecConfig;

/// Why the API server could not be read.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum KubeError {
    /// The configuration (kubeconfig, service account) is missing or not usable.
    #[error("{0}")]
    Config(String),
    /// No answer (connection, TLS, timeout).
    #[error("cannot reach the API server {server}: {reason}")]
    Http { server: String, reason: String },
    /// An answer that is not a success (401, 403, 404, 410, ...).
    #[error("the API server answered {code}: {message}")]
    Status { code: u16, message: String },
    #[error("an answer larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("an answer mansign cannot read: {0}")]
    Malformed(String),
    /// A kubeconfig `exec` credential plugin did not give a usable credential. `origin`
    /// names the kubeconfig, context and user (the callers print it with every error of
    /// the client, so it is not repeated here).
    #[error("exec credential plugin {command}: {reason}")]
    ExecPlugin {
        origin: String,
        command: String,
        reason: String,
    },
    /// `KIND[/NAME]` names no resource the API server serves, or several.
    #[error("{0}")]
    Resource(String),
}
