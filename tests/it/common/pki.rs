//! A throwaway CA for the HTTPS webhooks the tests start: serving certificates for
//! 127.0.0.1 and localhost, installed as `tls.crt`/`tls.key` the way the kubelet swaps a
//! Secret volume.

use std::path::Path;

pub struct Pki {
    pub ca_pem: String,
    pub issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Pki {
    pub fn new() -> Pki {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "mansign test CA");
        let ca = params.self_signed(&key).unwrap();
        Pki {
            ca_pem: ca.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// The CA as a webhook configuration's `caBundle` (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes())
    }

    /// A serving certificate for 127.0.0.1 and localhost (PEM) and its key (PEM), named `cn`.
    pub fn issue(&self, cn: &str) -> (String, String) {
        self.issue_until(cn, None)
    }

    /// The same, valid until `not_after` (UTC midnight) when given.
    pub fn issue_until(&self, cn: &str, not_after: Option<(i32, u8, u8)>) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()])
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        if let Some((y, m, d)) = not_after {
            params.not_after = rcgen::date_time_ymd(y, m, d);
        }
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// Writes a new certificate and key into `dir/tls.crt` and `dir/tls.key`, each replaced
    /// atomically (as the kubelet swaps a Secret volume); returns the certificate's DER.
    pub fn install(&self, dir: &Path, cn: &str) -> Vec<u8> {
        self.install_until(dir, cn, None)
    }

    /// [`Pki::install`] with a certificate valid until `not_after` (UTC midnight) when given.
    pub fn install_until(&self, dir: &Path, cn: &str, not_after: Option<(i32, u8, u8)>) -> Vec<u8> {
        use rustls_pki_types::pem::PemObject as _;
        let (cert, key) = self.issue_until(cn, not_after);
        for (name, text) in [("tls.key", &key), ("tls.crt", &cert)] {
            let tmp = dir.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, dir.join(name)).unwrap();
        }
        rustls_pki_types::CertificateDer::from_pem_slice(cert.as_bytes())
            .unwrap()
            .to_vec()
    }
}
