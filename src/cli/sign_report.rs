//! What `mansign sign` prints of a run's [`TreeReport`]: with `-v` the trust-root check,
//! every file and log index on stderr, the summary line, with `--format json` the JSON
//! report on stdout (what a run wrote and who signed, for CI that should not parse the
//! text summary; the schema is documented in docs/cli.md). The report's listings are read
//! back from the library's temporary storage, and the JSON arrays kept in a [`JsonArray`]
//! as they are built, so that a run of 100,000 files does not hold its listing in memory.

use super::output::copy_report;
use super::spill::{JsonArray, Text};
use crate::signing::keyless::SigningCertificate;
use crate::signing::tree::{Target, TreeReport};
use anyhow::Context;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const KEEP_ERROR: &str = "cannot keep the report in a temporary file";

/// Prints the text report on stderr: with `verbose`, the trust-root check, every file,
/// every certificate and the log indexes; always the summary line; with `verbose`, every
/// input removed.
pub(super) fn print(report: &mut TreeReport, verbose: bool) -> anyhow::Result<()> {
    let mut written = Written::default();
    for file in report.written()? {
        written.add(&file?.output);
    }
    if verbose {
        print_verbose(report)?;
    }
    eprintln!(
        "signed {} document(s) in {} file(s) with {} signature(s) -> {}",
        report.documents(),
        report.files(),
        report.signatures(),
        written.describe(verbose)
    );
    if verbose {
        for path in report.removed_inputs()? {
            eprintln!("removed {}", path?.display());
        }
    }
    Ok(())
}

/// The `-v` listing on stderr: the trust-root check, every file, every certificate, the
/// log indexes. Every file on its own line only when asked (`--format json` lists them
/// too): 300 files would otherwise be one 7 KB line.
fn print_verbose(report: &mut TreeReport) -> anyhow::Result<()> {
    if let Some(origin) = report.trust_root()
        && report.verified_documents() > 0
    {
        // With --scope file one signature covers every document of a file: count
        // signatures as the summary does, and the documents they were read back from.
        eprintln!(
            "verified {} new signature(s), read back from {} document(s), against {}",
            report.signatures(),
            report.verified_documents(),
            origin
        );
    }
    let mut err = std::io::stderr().lock();
    // As `eprint!` would, minus its panic on a closed stderr.
    for file in report.written()? {
        let file = file?;
        let _ = writeln!(
            err,
            "signed {} -> {} ({} document(s))",
            file.source,
            show_target(&file.output),
            file.documents
        );
    }
    for cert in report.certificates() {
        let _ = writeln!(
            err,
            "certificate for {} from issuer {}, valid until {}",
            cert.identity.as_deref().unwrap_or("<no subject>"),
            cert.issuer.as_deref().unwrap_or("<no issuer>"),
            cert.not_after
        );
    }
    let mut count = 0;
    for index in report.log_indexes()? {
        let index = index?;
        let _ = if count == 0 {
            write!(err, "Rekor log indexes: {index}")
        } else {
            write!(err, ", {index}")
        };
        count += 1;
    }
    if count > 0 {
        let _ = err.write_all(b"\n");
    }
    Ok(())
}

/// Prints the JSON report on stdout.
pub(super) fn print_json(report: &mut TreeReport, signer: Value) -> anyhow::Result<()> {
    copy_report(json_report(report, signer)?)
}

/// The JSON report: the members in the order and layout `serde_json::to_string_pretty`
/// gives the whole object.
fn json_report(report: &mut TreeReport, signer: Value) -> anyhow::Result<Text> {
    let mut files = JsonArray::new();
    for file in report.written()? {
        let file = file?;
        files
            .push(&json!({
                "source": file.source.to_string(),
                "output": show_target(&file.output),
                "documents": file.documents,
            }))
            .context(KEEP_ERROR)?;
    }
    let mut log = JsonArray::new();
    for index in report.log_indexes()? {
        log.push(&json!(index?)).context(KEEP_ERROR)?;
    }
    let mut bundles = JsonArray::new();
    for files in report.bundle_files()? {
        let files = files?;
        for path in [&files.bundle, &files.message] {
            bundles
                .push(&json!(path.display().to_string()))
                .context(KEEP_ERROR)?;
        }
    }
    let (documents, signatures) = (report.documents(), report.signatures());
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
    Ok(Box::new(report))
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

/// Outputs listed by name in the summary line at most; more are summarised as a count and
/// the directory they were written to.
const LISTED_OUTPUTS: usize = 3;

/// Where a run wrote, gathered output by output for the summary line: the outputs
/// themselves when there are few, else their count and the directory that holds them all
/// (`-v` and `--format json` list every one).
#[derive(Default)]
struct Written {
    count: usize,
    /// The first [`LISTED_OUTPUTS`] + 1 outputs, as the summary names them.
    first: Vec<String>,
    /// Whether every output is a file, and the deepest directory holding them all.
    stdout: bool,
    common: Option<PathBuf>,
}

impl Written {
    fn add(&mut self, target: &Target) {
        self.count += 1;
        if self.first.len() <= LISTED_OUTPUTS {
            self.first.push(show_target(target));
        }
        match target {
            Target::Stdout => self.stdout = true,
            Target::File(path) => {
                let parent = path.parent().unwrap_or(Path::new(""));
                self.common = Some(match self.common.take() {
                    None => parent.to_path_buf(),
                    Some(c) => c
                        .components()
                        .zip(parent.components())
                        .take_while(|(a, b)| a == b)
                        .map(|(a, _)| a)
                        .collect(),
                });
            }
        }
    }

    /// The summary line's account of the outputs.
    fn describe(&self, verbose: bool) -> String {
        if self.count <= LISTED_OUTPUTS {
            return self.first.join(", ");
        }
        let more = if verbose {
            "listed above"
        } else {
            "-v or --format json lists them"
        };
        if self.stdout {
            return format!("{} outputs, to files and stdout ({more})", self.count);
        }
        let dir = self.common.clone().unwrap_or_default();
        let dir = if dir.as_os_str().is_empty() {
            ".".to_string()
        } else {
            format!("{}/", dir.display())
        };
        format!("{} files in {dir} ({more})", self.count)
    }
}

/// How the summary and the report name an output.
fn show_target(t: &Target) -> String {
    match t {
        Target::Stdout => "<stdout>".to_string(),
        Target::File(p) => p.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Source;
    use crate::signing::tree::BundleFiles;

    /// The streamed JSON report is what serde_json prints for the whole object, with and
    /// without entries.
    #[test]
    fn the_json_report_is_the_whole_object_pretty_printed() {
        for files in [0, 1, 3] {
            let mut record = TreeReport::new();
            for i in 0..files {
                let source = Source::File(PathBuf::from(format!("in/{i}.yaml")));
                let target = Target::File(PathBuf::from(format!("out/{i}.yaml")));
                record.record_file(&source, &target, i + 1).unwrap();
                for index in [i as i64, 100 + i as i64] {
                    record.record_log_index(index).unwrap();
                }
                record
                    .record_bundle(&BundleFiles {
                        bundle: PathBuf::from(format!("b/{i}.yaml.1.sigstore.json")),
                        message: PathBuf::from(format!("b/{i}.yaml.1.message")),
                    })
                    .unwrap();
            }
            record.documents = 7;
            record.signatures = 9;
            let signer = json!({"kind": "certificate", "subject": "a \"b\"", "issuer": null});
            let mut text = String::new();
            json_report(&mut record, signer.clone())
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
