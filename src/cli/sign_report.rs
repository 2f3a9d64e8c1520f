//! `mansign sign --format json`: what a run wrote and who signed, for CI that should not
//! parse the text summary. The schema is documented in docs/cli.md.

use crate::manifest::ManifestFile;
use crate::signing::SignSummary;
use crate::signing::keyless::SigningCertificate;
use serde_json::{Value, json};
use std::path::Path;

/// Everything the JSON report says about one successful run.
pub struct SignReport<'a> {
    pub files: &'a [ManifestFile],
    /// Where each file was written (`<stdout>` for stdout), in the order of `files`.
    pub written: &'a [String],
    pub summary: &'a SignSummary,
    pub signer: Value,
    pub log_indexes: Vec<i64>,
    /// The `--bundle-out` files written (bundles and messages).
    pub bundle_files: Vec<String>,
}

impl SignReport<'_> {
    pub fn to_json(&self) -> Value {
        let files: Vec<Value> = self
            .files
            .iter()
            .zip(self.written)
            .map(|(f, out)| {
                json!({
                    "source": f.source.to_string(),
                    "output": out,
                    "documents": f.documents.len(),
                })
            })
            .collect();
        json!({
            "files": files,
            "documents": self.summary.documents,
            "signatures": self.summary.signatures,
            "signer": self.signer,
            "logIndexes": self.log_indexes,
            "bundleFiles": self.bundle_files,
        })
    }

    pub fn to_json_text(&self) -> String {
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_else(|_| "{}".into()) + "\n"
    }
}

/// The signer as verify's JSON names it: `key` (the private key file) or `certificate`
/// (the Fulcio certificate's subject, issuer and expiry).
pub fn signer_json(key: Option<&Path>, certificate: Option<SigningCertificate>) -> Value {
    match (key, certificate) {
        (Some(path), _) => json!({"kind": "key", "name": path.display().to_string()}),
        (None, Some(cert)) => json!({
            "kind": "certificate",
            "subject": cert.identity,
            "issuer": cert.issuer,
            "notAfter": cert.not_after.to_string(),
        }),
        (None, None) => json!({"kind": "certificate"}),
    }
}
