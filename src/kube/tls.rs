//! TLS to the API server: rustls with the aws-lc-rs provider (mansign's only provider; no
//! OpenSSL), trusting only the cluster's CA, with the client certificate when there is one.
//!
//! `tls-server-name` (kubeconfig cluster field; client-go sets it as `tls.Config.ServerName`)
//! changes only which name the server's certificate must be valid for: the chain is still
//! verified against the CA by rustls's WebPKI verifier, and the name checked is the
//! configured one instead of the URL's host. [`ServerNameVerifier`] is that substitution
//! and nothing else.

use super::KubeError;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

/// A WebPKI verifier that checks the certificate against a fixed name.
#[derive(Debug)]
struct ServerNameVerifier {
    inner: Arc<WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for ServerNameVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _url_host: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The rustls configuration for one API server: `ca_pem` the only roots, the certificate
/// checked against `server_name` when given (else the URL's host), `identity` (PEM chain
/// and key) presented when given. HTTP/1.1 only (see client.rs: one connection per
/// request).
pub(super) fn client_config(
    ca_pem: &[u8],
    server_name: Option<&str>,
    identity: Option<(&[u8], &[u8])>,
    origin: &str,
) -> Result<rustls::ClientConfig, KubeError> {
    let error =
        |what: &str, e: &dyn std::fmt::Display| KubeError::Config(format!("{origin}: {what}: {e}"));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|e| error("certificate authority", &e))?;
        roots
            .add(cert)
            .map_err(|e| error("certificate authority", &e))?;
    }
    if roots.is_empty() {
        return Err(KubeError::Config(format!(
            "{origin}: certificate authority: no PEM certificate"
        )));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| error("certificate authority", &e))?;
    let verifier: Arc<dyn ServerCertVerifier> = match server_name {
        None => webpki,
        Some(name) => {
            let name = ServerName::try_from(name.to_string())
                .map_err(|e| error(&format!("tls-server-name {name:?}"), &e))?;
            Arc::new(ServerNameVerifier {
                inner: webpki,
                name,
            })
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| error("TLS", &e))?
        // "dangerous" is rustls's name for any verifier of one's own; this one verifies
        // (WebPKI against the CA), only for another name.
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let chain = CertificateDer::pem_slice_iter(cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| error("client certificate", &e))?;
            if chain.is_empty() {
                return Err(KubeError::Config(format!(
                    "{origin}: client certificate: no PEM certificate"
                )));
            }
            let key =
                PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| error("client key", &e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| error("client certificate", &e))?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_ca_or_a_name() {
        let e = client_config(b"no pem", None, None, "kc").unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        let e = client_config(
            b"-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n",
            None,
            None,
            "kc",
        )
        .unwrap_err();
        assert!(e.to_string().contains("certificate authority"), "{e}");
    }
}
