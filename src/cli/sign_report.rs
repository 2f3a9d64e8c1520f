//! `mansign sign --format json`: what a run wrote and who signed, for CI that should not
//! parse the text summary. The schema is documented in docs/cli.md.

use super::output::Target;
use super::sign_plan::{BundleFiles, PlannedFile, show_target};
use crate::signing::keyless::SigningCertificate;
use serde_json::{Value, json};
use std::path::Path;

/// Everything the JSON report says about one successful run.
pub struct SignReport<'a> {
    pub files: &'a [PlannedFile],
    /// Where each file was written, in the order of `files`.
    pub targets: &'a [Target],
    pub documents: usize,
    pub signatures: usize,
    pub signer: Value,
    pub log_indexes: Vec<i64>,
    /// The `--bundle-out` files written (a bundle and a message per signature).
    pub bundles: &'a [BundleFiles],
}

impl SignReport<'_> {
    pub fn to_json(&self) -> Value {
        let files: Vec<Value> = self
            .files
            .iter()
            .zip(self.targets)
            .map(|(f, target)| {
                json!({
                    "source": f.source.to_string(),
                    "output": show_target(target),
                    "documents": f.documents,
                })
            })
            .collect();
        let bundle_files: Vec<String> = self
            .bundles
            .iter()
            .flat_map(|b| [&b.bundle, &b.message])
            .map(|p| p.display().to_string())
            .collect();
        json!({
            "files": files,
            "documents": self.documents,
            "signatures": self.signatures,
            "signer": self.signer,
            "logIndexes": self.log_indexes,
            "bundleFiles": bundle_files,
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
