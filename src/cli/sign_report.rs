//! What `mansign sign` reports: with `-v` every file and log index on stderr, with
//! `--format json` the JSON report on stdout (what a run wrote and who signed, for CI that
//! should not parse the text summary; the schema is documented in docs/cli.md), and the
//! summary line. It is gathered window by window as the run signs, and kept as text
//! ([`super::spill`]), so that a run of 100,000 files does not hold its listing in memory.

use super::output::{Target, copy_report};
use super::sign_plan::{BundleFiles, Written, show_target};
use super::spill::{JsonArray, SPILL_AT, Spill, Text};
use crate::manifest::Source;
use crate::signing::keyless::SigningCertificate;
use anyhow::Context;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;

const KEEP_ERROR: &str = "cannot keep the report in a temporary file";

/// The report of a run, gathered as it signs.
pub struct SignRecord {
    pub written: Written,
    /// `-v`: a line per file, and the log indexes (`, `-separated) with their count.
    verbose: Option<(Spill, Spill, usize)>,
    /// `--format json`: the `files`, `logIndexes` and `bundleFiles` arrays.
    json: Option<[JsonArray; 3]>,
}

impl SignRecord {
    pub fn new(verbose: bool, json: bool) -> Self {
        SignRecord {
            written: Written::default(),
            verbose: verbose.then(|| (Spill::new(SPILL_AT), Spill::new(SPILL_AT), 0)),
            json: json.then(|| [JsonArray::new(), JsonArray::new(), JsonArray::new()]),
        }
    }

    /// One signed file: its source, where it goes, how many documents it holds.
    pub fn file(
        &mut self,
        source: &Source,
        target: &Target,
        documents: usize,
    ) -> anyhow::Result<()> {
        self.written.add(target);
        if let Some((lines, _, _)) = &mut self.verbose {
            writeln!(
                lines,
                "signed {source} -> {} ({documents} document(s))",
                show_target(target)
            )
            .context(KEEP_ERROR)?;
        }
        if let Some([files, _, _]) = &mut self.json {
            files
                .push(&json!({
                    "source": source.to_string(),
                    "output": show_target(target),
                    "documents": documents,
                }))
                .context(KEEP_ERROR)?;
        }
        Ok(())
    }

    /// The Rekor log indexes of a window's signatures, in order.
    pub fn log_indexes(&mut self, indexes: &[i64]) -> anyhow::Result<()> {
        if let Some((_, list, count)) = &mut self.verbose {
            for index in indexes {
                if *count > 0 {
                    list.write_all(b", ").context(KEEP_ERROR)?;
                }
                write!(list, "{index}").context(KEEP_ERROR)?;
                *count += 1;
            }
        }
        if let Some([_, log, _]) = &mut self.json {
            for index in indexes {
                log.push(&json!(index)).context(KEEP_ERROR)?;
            }
        }
        Ok(())
    }

    /// The `--bundle-out` files of a signature.
    pub fn bundle(&mut self, files: &BundleFiles) -> anyhow::Result<()> {
        if let Some([_, _, bundles]) = &mut self.json {
            for path in [&files.bundle, &files.message] {
                bundles
                    .push(&json!(path.display().to_string()))
                    .context(KEEP_ERROR)?;
            }
        }
        Ok(())
    }

    /// Prints the `-v` listing on stderr: every file, every certificate, the log indexes
    /// (nothing without `-v`). Returns what remains for the JSON report.
    pub fn print_verbose(&mut self, certificates: &[SigningCertificate]) -> anyhow::Result<()> {
        let Some((lines, list, count)) = self.verbose.take() else {
            return Ok(());
        };
        let mut err = std::io::stderr().lock();
        // As `eprint!` would, minus its panic on a closed stderr.
        let _ = std::io::copy(&mut lines.into_reader().context(KEEP_ERROR)?, &mut err);
        for cert in certificates {
            let _ = writeln!(
                err,
                "certificate for {} from issuer {}, valid until {}",
                cert.identity.as_deref().unwrap_or("<no subject>"),
                cert.issuer.as_deref().unwrap_or("<no issuer>"),
                cert.not_after
            );
        }
        if count > 0 {
            let _ = err.write_all(b"Rekor log indexes: ");
            let _ = std::io::copy(&mut list.into_reader().context(KEEP_ERROR)?, &mut err);
            let _ = err.write_all(b"\n");
        }
        Ok(())
    }

    /// Prints the JSON report on stdout (nothing without `--format json`).
    pub fn print_json(
        self,
        documents: usize,
        signatures: usize,
        signer: Value,
    ) -> anyhow::Result<()> {
        match self.json_report(documents, signatures, signer)? {
            Some(report) => copy_report(report),
            None => Ok(()),
        }
    }

    /// The JSON report: the members in the order and layout `serde_json::to_string_pretty`
    /// gives the whole object.
    fn json_report(
        self,
        documents: usize,
        signatures: usize,
        signer: Value,
    ) -> anyhow::Result<Option<Text>> {
        let Some([files, log, bundles]) = self.json else {
            return Ok(None);
        };
        let signer = serde_json::to_string_pretty(&signer)?.replace('\n', "\n  ");
        let middle = format!(
            ",\n  \"documents\": {documents},\n  \"signatures\": {signatures},\n  \"signer\": {signer},\n"
        );
        let report = std::io::Cursor::new("{\n")
            .chain(files.into_member("files").context(KEEP_ERROR)?)
            .chain(std::io::Cursor::new(middle))
            .chain(log.into_member("logIndexes").context(KEEP_ERROR)?)
            .chain(std::io::Cursor::new(",\n"))
            .chain(bundles.into_member("bundleFiles").context(KEEP_ERROR)?)
            .chain(std::io::Cursor::new("\n}\n"));
        Ok(Some(Box::new(report)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The streamed JSON report is what serde_json prints for the whole object, with and
    /// without entries.
    #[test]
    fn the_json_report_is_the_whole_object_pretty_printed() {
        for files in [0, 1, 3] {
            let mut record = SignRecord::new(false, true);
            for i in 0..files {
                let source = Source::File(PathBuf::from(format!("in/{i}.yaml")));
                let target = Target::File(PathBuf::from(format!("out/{i}.yaml")));
                record.file(&source, &target, i + 1).unwrap();
                record.log_indexes(&[i as i64, 100 + i as i64]).unwrap();
                record
                    .bundle(&BundleFiles {
                        bundle: PathBuf::from(format!("b/{i}.yaml.1.sigstore.json")),
                        message: PathBuf::from(format!("b/{i}.yaml.1.message")),
                    })
                    .unwrap();
            }
            let signer = json!({"kind": "certificate", "subject": "a \"b\"", "issuer": null});
            let mut text = String::new();
            record
                .json_report(7, 9, signer.clone())
                .unwrap()
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            let whole = json!({
                "files": (0..files).map(|i| json!({
                    "source": format!("in/{i}.yaml"),
                    "output": format!("out/{i}.yaml"),
                    "documents": i + 1,
                })).collect::<Vec<_>>(),
                "documents": 7,
                "signatures": 9,
                "signer": signer,
                "logIndexes": (0..files).flat_map(|i| [i as i64, 100 + i as i64]).collect::<Vec<_>>(),
                "bundleFiles": (0..files).flat_map(|i| [
                    format!("b/{i}.yaml.1.sigstore.json"),
                    format!("b/{i}.yaml.1.message"),
                ]).collect::<Vec<_>>(),
            });
            assert_eq!(text, serde_json::to_string_pretty(&whole).unwrap() + "\n");
        }
    }
}
