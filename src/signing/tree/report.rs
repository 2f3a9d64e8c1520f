//! What a signing run produced ([`TreeReport`]): the counts, the certificates, and the
//! listings (every file written, every log index, every `--bundle-out` file, every input
//! removed). The listings are kept as the run goes in temporary storage (in memory up to a
//! bound, then in an anonymous temporary file), so that a run of 100,000 files does not
//! hold them in memory; they are read back, as often as needed, with [`Records`].

use super::error::TreeError;
use super::plan::BundleFiles;
use super::spill::{PathLog, PathRecords};
use super::staging::Target;
use crate::manifest::Source;
use crate::signing::SigningCertificate;
use std::path::{Path, PathBuf};

const KEEP_REPORT: &str = "cannot keep the report in a temporary file";
const READ_REPORT: &str = "cannot read back the report from its temporary file";

/// One file a run wrote: where it came from, where it went, how many documents it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WrittenFile {
    pub source: Source,
    pub output: Target,
    pub documents: usize,
}

/// What a signing run produced, returned once every output was written (and, with
/// [`SignTree::remove_inputs`](super::SignTree::remove_inputs), the inputs removed).
///
/// The counts and certificates are values; the listings are read back with
/// [`TreeReport::written`], [`TreeReport::log_indexes`], [`TreeReport::bundle_files`] and
/// [`TreeReport::removed_inputs`], each as often as needed.
pub struct TreeReport {
    pub(crate) files: usize,
    pub(crate) documents: usize,
    pub(crate) signatures: usize,
    pub(crate) verified: usize,
    pub(crate) certificates: Vec<SigningCertificate>,
    pub(crate) trust: Option<String>,
    /// Per file: source kind, source, target kind, target, documents.
    written: PathLog,
    log_indexes: PathLog,
    bundles: PathLog,
    removed: PathLog,
}

impl std::fmt::Debug for TreeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeReport")
            .field("files", &self.files)
            .field("documents", &self.documents)
            .field("signatures", &self.signatures)
            .field("verified", &self.verified)
            .field("certificates", &self.certificates)
            .field("trust", &self.trust)
            .finish_non_exhaustive()
    }
}

impl TreeReport {
    /// An empty report, to be filled as a run signs.
    pub(crate) fn new() -> Self {
        TreeReport {
            files: 0,
            documents: 0,
            signatures: 0,
            verified: 0,
            certificates: Vec::new(),
            trust: None,
            written: PathLog::new(5),
            log_indexes: PathLog::new(1),
            bundles: PathLog::new(2),
            removed: PathLog::new(1),
        }
    }

    /// Files signed and written.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Documents signed.
    pub fn documents(&self) -> usize {
        self.documents
    }

    /// Signatures made: one per document, or one per file with
    /// [`SignScope::File`](crate::signing::SignScope::File).
    pub fn signatures(&self) -> usize {
        self.signatures
    }

    /// Documents whose new signature was read back and verified against the trust root
    /// ([`SignTree::verify_against`](super::SignTree::verify_against)) before anything was
    /// written; 0 without one, or for a key signer that does not log.
    pub fn verified_documents(&self) -> usize {
        self.verified
    }

    /// The origin of the trust root the new signatures were verified against, if any.
    pub fn trust_root(&self) -> Option<&str> {
        self.trust.as_deref()
    }

    /// Every certificate the run signed with, in order: one for a keyless run (unless it
    /// outlived its certificate), none for a key.
    pub fn certificates(&self) -> &[SigningCertificate] {
        &self.certificates
    }

    /// Every file written, in the order signed.
    pub fn written(&mut self) -> Result<Records<'_, WrittenFile>, TreeError> {
        Records::of(&mut self.written, decode_written)
    }

    /// The transparency-log index of every signature, in signing order (none for a key
    /// signer that does not log).
    pub fn log_indexes(&mut self) -> Result<Records<'_, i64>, TreeError> {
        Records::of(&mut self.log_indexes, |record| {
            record.first()?.to_str()?.parse().ok()
        })
    }

    /// The `--bundle-out` files of every signature, in signing order.
    pub fn bundle_files(&mut self) -> Result<Records<'_, BundleFiles>, TreeError> {
        Records::of(&mut self.bundles, |record| match record.as_slice() {
            [bundle, message] => Some(BundleFiles {
                bundle: bundle.clone(),
                message: message.clone(),
            }),
            _ => None,
        })
    }

    /// The inputs removed once every output was written, in order.
    pub fn removed_inputs(&mut self) -> Result<Records<'_, PathBuf>, TreeError> {
        Records::of(&mut self.removed, |record| record.into_iter().next())
    }

    /// One signed file, as it is staged.
    pub(crate) fn record_file(
        &mut self,
        source: &Source,
        target: &Target,
        documents: usize,
    ) -> Result<(), TreeError> {
        let (source_kind, source) = match source {
            Source::File(path) => ("file", path.clone()),
            Source::Stdin => ("stdin", PathBuf::new()),
            Source::Named(name) => ("named", PathBuf::from(name)),
        };
        let (target_kind, target) = match target {
            Target::File(path) => ("file", path.clone()),
            Target::Stdout => ("stdout", PathBuf::new()),
        };
        let documents = PathBuf::from(documents.to_string());
        self.written
            .push(&[
                Path::new(source_kind),
                &source,
                Path::new(target_kind),
                &target,
                &documents,
            ])
            .map_err(TreeError::keep(KEEP_REPORT))
    }

    /// The log index of one signature.
    pub(crate) fn record_log_index(&mut self, index: i64) -> Result<(), TreeError> {
        self.log_indexes
            .push(&[Path::new(&index.to_string())])
            .map_err(TreeError::keep(KEEP_REPORT))
    }

    /// The `--bundle-out` files of one signature.
    pub(crate) fn record_bundle(&mut self, files: &BundleFiles) -> Result<(), TreeError> {
        self.bundles
            .push(&[&files.bundle, &files.message])
            .map_err(TreeError::keep(KEEP_REPORT))
    }

    /// The inputs the run removed.
    pub(crate) fn set_removed(&mut self, removed: PathLog) {
        self.removed = removed;
    }
}

fn decode_written(record: Vec<PathBuf>) -> Option<WrittenFile> {
    let [source_kind, source, target_kind, target, documents] = record.as_slice() else {
        return None;
    };
    let source = match source_kind.to_str()? {
        "file" => Source::File(source.clone()),
        "stdin" => Source::Stdin,
        "named" => Source::Named(source.to_str()?.to_string()),
        _ => return None,
    };
    let output = match target_kind.to_str()? {
        "file" => Target::File(target.clone()),
        "stdout" => Target::Stdout,
        _ => return None,
    };
    Some(WrittenFile {
        source,
        output,
        documents: documents.to_str()?.parse().ok()?,
    })
}

/// One listing of a [`TreeReport`], read back in order. An item is an error only when
/// the temporary storage cannot be read back.
pub struct Records<'a, T> {
    records: PathRecords,
    decode: fn(Vec<PathBuf>) -> Option<T>,
    /// The report is borrowed while its listing is read: a listing in a temporary file is
    /// read through a handle that shares the file's offset, so two readers of one report at
    /// once would read each other's records.
    _report: std::marker::PhantomData<&'a mut PathLog>,
}

impl<'a, T> Records<'a, T> {
    fn of(log: &'a mut PathLog, decode: fn(Vec<PathBuf>) -> Option<T>) -> Result<Self, TreeError> {
        Ok(Records {
            records: log.reread_records().map_err(TreeError::keep(READ_REPORT))?,
            decode,
            _report: std::marker::PhantomData,
        })
    }
}

impl<T> Iterator for Records<'_, T> {
    type Item = Result<T, TreeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let record = match self.records.next()? {
            Ok(record) => record,
            Err(e) => return Some(Err(TreeError::keep(READ_REPORT)(e))),
        };
        Some((self.decode)(record).ok_or(TreeError::Corrupt("the report's temporary file")))
    }
}
