//! The report of `mansign verify`, built while the inputs are read window by window
//! (`manifest::visit_inputs_with`): one line (text) or one JSON entry per document, a
//! count, and with `--print-verified` the verified documents. Nothing is printed before the
//! last document was verified, so an unreadable file after the first thousand still leaves
//! no partial output; what is kept until then is the report's text, not the documents, and
//! past `SPILL_AT` bytes (`signing/tree/spill.rs`) it waits in an anonymous temporary file, so that the memory of a
//! run does not grow with the number of files.

use super::args::ReportFormat;
use super::output::{copy_report, copy_stdout};
use super::spill::{JsonArray, SPILL_AT, Spill, Text};
use crate::manifest::{ManifestFile, to_yaml};
use anyhow::Context;
use serde_json::Value;
use std::io::{Read, Write};

/// What a run prints, gathered as its windows are verified.
pub struct StreamedReport {
    format: ReportFormat,
    print_verified: bool,
    /// The text lines.
    body: Spill,
    /// The JSON entries of `documents`.
    entries: JsonArray,
    /// With `--print-verified`, the YAML stream of the documents so far; dropped at the
    /// first failure (nothing is printed then).
    verified_documents: Option<Spill>,
    /// Documents written to `verified_documents`.
    documents: usize,
    total: usize,
    ok: usize,
}

impl StreamedReport {
    pub fn new(format: ReportFormat, print_verified: bool) -> Self {
        Self::with_spill_at(format, print_verified, SPILL_AT)
    }

    pub fn with_spill_at(format: ReportFormat, print_verified: bool, spill_at: usize) -> Self {
        StreamedReport {
            format,
            print_verified,
            body: Spill::new(spill_at),
            entries: JsonArray::with_spill_at(spill_at),
            verified_documents: print_verified.then(|| Spill::new(spill_at)),
            documents: 0,
            total: 0,
            ok: 0,
        }
    }

    /// Adds the verdicts of one window (in input order) and, for `--print-verified`, its
    /// documents. `verdicts` has one item per document of `files`.
    pub fn add<T>(
        &mut self,
        files: &[ManifestFile],
        verdicts: &[T],
        line: impl Fn(&T) -> String,
        verified: impl Fn(&T) -> bool,
        json: impl Fn(&T) -> Value,
    ) -> anyhow::Result<()> {
        let write_error = "cannot keep the report in a temporary file";
        let window_ok = verdicts.iter().all(&verified);
        for verdict in verdicts {
            match self.format {
                ReportFormat::Text => {
                    let mut text = line(verdict);
                    text.push('\n');
                    self.body.write_all(text.as_bytes()).context(write_error)?;
                }
                ReportFormat::Json => {
                    self.entries.push(&json(verdict)).context(write_error)?;
                }
            }
            self.total += 1;
            self.ok += usize::from(verified(verdict));
        }
        if !window_ok {
            self.verified_documents = None;
        }
        if let Some(stream) = &mut self.verified_documents {
            for doc in files.iter().flat_map(|f| &f.documents) {
                if self.documents > 0 {
                    stream.write_all(b"---\n").context(write_error)?;
                }
                self.documents += 1;
                stream
                    .write_all(to_yaml(&doc.value).as_bytes())
                    .context(write_error)?;
            }
        }
        Ok(())
    }

    /// True when there was at least one document and every one verified.
    pub fn verified(&self) -> bool {
        self.total > 0 && self.ok == self.total
    }

    /// Prints the report (stdout; stderr with `--print-verified`, the verified documents
    /// then on stdout when every one verified), as the whole-run report did.
    pub fn finish(self) -> anyhow::Result<bool> {
        let print_verified = self.print_verified;
        let (verified, report, documents) = self.into_parts()?;
        if print_verified {
            let mut err = std::io::stderr().lock();
            // As `eprint!` would, minus its panic on a closed stderr.
            let _ = std::io::copy(&mut { report }, &mut err);
            if let Some(documents) = documents {
                copy_stdout(documents)?;
            }
        } else {
            copy_report(report)?;
        }
        Ok(verified)
    }

    /// Whether the run verified, the report's text, and with `--print-verified` the
    /// documents to print (none when a document failed).
    fn into_parts(self) -> anyhow::Result<(bool, Text, Option<Text>)> {
        let verified = self.verified();
        let report: Text = match self.format {
            ReportFormat::Text => {
                let tail = format!("{} of {} document(s) verified\n", self.ok, self.total);
                Box::new(self.body.into_reader()?.chain(std::io::Cursor::new(tail)))
            }
            ReportFormat::Json => Box::new(
                std::io::Cursor::new(format!("{{\n  \"verified\": {verified},\n"))
                    .chain(self.entries.into_member("documents")?)
                    .chain(std::io::Cursor::new("\n}\n")),
            ),
        };
        let documents = match self.verified_documents {
            Some(stream) if verified => Some(stream.into_reader()?),
            _ => None,
        };
        Ok((verified, report, documents))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report of a run spilled to a file is the report kept in memory, in both formats.
    #[test]
    fn a_spilled_report_is_the_report_kept_in_memory() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";
        let file = crate::manifest::load_reader(
            crate::manifest::Source::Stdin,
            "x.yaml".into(),
            text.as_bytes(),
            &crate::limits::Limits::default(),
        )
        .unwrap();
        let files = [file];
        let verdicts = [("a", true), ("b \"quoted\"\nline", true)];
        let render = |format, spill_at| {
            let mut report = StreamedReport::with_spill_at(format, true, spill_at);
            for _ in 0..3 {
                report
                    .add(
                        &files,
                        &verdicts,
                        |v| v.0.to_string(),
                        |v| v.1,
                        |v| serde_json::json!({"name": v.0, "ok": v.1, "list": [1, 2]}),
                    )
                    .unwrap();
            }
            let (verified, mut report, documents) = report.into_parts().unwrap();
            let mut out = String::new();
            report.read_to_string(&mut out).unwrap();
            let mut docs = String::new();
            documents.unwrap().read_to_string(&mut docs).unwrap();
            (verified, out, docs)
        };
        for format in [ReportFormat::Text, ReportFormat::Json] {
            assert_eq!(render(format, 16), render(format, usize::MAX));
        }
        let (_, json, docs) = render(ReportFormat::Json, 16);
        let entry = serde_json::json!({"name": "a", "ok": true, "list": [1, 2]});
        let entry2 = serde_json::json!({"name": "b \"quoted\"\nline", "ok": true, "list": [1, 2]});
        let whole = serde_json::json!({
            "verified": true,
            "documents": [&entry, &entry2, &entry, &entry2, &entry, &entry2],
        });
        assert_eq!(json, serde_json::to_string_pretty(&whole).unwrap() + "\n");
        assert_eq!(docs.matches("name: a").count(), 3);
        assert_eq!(docs.matches("---\n").count(), 5);
        let (_, text, _) = render(ReportFormat::Text, 16);
        assert!(text.ends_with("6 of 6 document(s) verified\n"), "{text}");
    }

    #[test]
    fn an_empty_json_report_has_an_empty_list() {
        let (verified, mut report, _) = StreamedReport::new(ReportFormat::Json, false)
            .into_parts()
            .unwrap();
        let mut out = String::new();
        report.read_to_string(&mut out).unwrap();
        assert!(!verified);
        let whole = serde_json::json!({"verified": false, "documents": []});
        assert_eq!(out, serde_json::to_string_pretty(&whole).unwrap() + "\n");
    }
}
