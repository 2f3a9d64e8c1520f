//! The TLS side: a rustls configuration that can be replaced while the server runs (cert-manager rotates the Secret in place; new handshakes must see the new
//! certificate, open connections keep theirs).

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::{Arc, RwLock};
use tokio_rustls::TlsAcceptor;

/// Largest certificate or key file read (a chain is a few kilobytes).
pub(super) const MAX_PEM_BYTES: usize = 1024 * 1024;

/// The TLS configuration handshakes start with; replaced whole when the certificate changes.
///
/// A rotation builds a new rustls configuration, so it also starts a new session cache: a
/// client cannot resume a session that was authenticated with the old certificate (a
/// resumed TLS session carries the old authentication, which a rotation, perhaps after a
/// key compromise, must end).
pub(super) struct LiveTls {
    current: RwLock<TlsAcceptor>,
}

impl LiveTls {
    pub(super) fn new(key: CertifiedKey) -> Result<Self, String> {
        Ok(LiveTls {
            current: RwLock::new(acceptor(key)?),
        })
    }

    /// The acceptor for a connection accepted now.
    pub(super) fn acceptor(&self) -> TlsAcceptor {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(super) fn replace(&self, key: CertifiedKey) -> Result<(), String> {
        let next = acceptor(key)?;
        // A poisoned lock still holds a complete acceptor: take it over.
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = next;
        Ok(())
    }
}

/// Always the one certificate of a configuration.
#[derive(Debug)]
struct OneCert(Arc<CertifiedKey>);

impl ResolvesServerCert for OneCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// The crypto provider of the whole project (reqwest uses the same).
pub(super) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A certificate chain and its private key, checked to belong together. Each error names
/// the file it is about (`cert` and `key` are the names to show).
pub(super) fn certified_key(
    cert: &Path,
    cert_pem: &[u8],
    key: &Path,
    key_pem: &[u8],
) -> Result<CertifiedKey, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            format!(
                "{}: certificate file: not a PEM certificate chain: {e}",
                cert.display()
            )
        })?;
    if chain.is_empty() {
        return Err(format!(
            "{}: certificate file: no CERTIFICATE block",
            cert.display()
        ));
    }
    let private_key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("{}: key file: not a PEM private key: {e}", key.display()))?;
    CertifiedKey::from_der(chain, private_key, &provider()).map_err(|e| {
        format!(
            "{} and {}: certificate and key do not belong together: {e}",
            cert.display(),
            key.display()
        )
    })
}

/// The server configuration: TLS 1.2 and 1.3, HTTP/2 preferred, HTTP/1.1 accepted.
fn acceptor(key: CertifiedKey) -> Result<TlsAcceptor, String> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(OneCert(Arc::new(key))));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
