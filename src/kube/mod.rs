//! A small reader of the Kubernetes API: where the server is and how to authenticate
//! ([`ClusterConfig`]: kubeconfig or in-cluster service account) and bounded reads and
//! watches of named Secrets and ConfigMaps ([`KubeClient`]), for the public keys policies
//! name by reference. No kube-rs client: mansign reads two core kinds by name, which is a
//! few hundred lines over the `reqwest`/rustls stack it already has (docs/design.md).

mod access;
mod client;
mod config;

pub use access::ClusterAccess;
pub use client::{KubeClient, ObjectList, WatchEvent, WatchStream, resource_version};
pub use config::{ClusterConfig, Credentials, Kubeconfig, SERVICE_ACCOUNT_DIR};

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
}
