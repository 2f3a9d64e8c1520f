//! The first pass of a signing run: every input is read and parsed once, window by window,
//! before an identity token is spent or anything is signed, and what the run will write is
//! checked from it: a bad file, a clash of outputs or of `--bundle-out` files, or a
//! directory in an output's place fails here.
//!
//! Each input is parsed once per run when the run is small, and read again by its second
//! pass in every case but one:
//!
//! * **A run of one window** (at most 128 files) keeps its files and reads nothing twice.
//! * **A run whose files total at most [`KEPT_INPUT_BYTES`] (2 MiB) and
//!   [`KEPT_DOCUMENTS`] (8,192) documents** keeps its parsed files,
//!   window by window; the second pass walks the inputs again ([`Plan::windows`]) and
//!   reads each window's bytes again, only to hash them: a window that is not the one
//!   first read (a file added, removed, renamed, or changed by a byte) is refused before
//!   it is signed, and nothing is parsed twice.
//! * **A bigger run** keeps nothing of each file but a digest of each window of the walk
//!   (its files' paths, numbers of documents and the SHA-256 of their bytes): the second
//!   pass reads and parses each window again and refuses one that is not the one first
//!   read, to the byte. Its memory stays that of a window, whatever its size.
//!
//! The budget bounds what the kept documents cost. Parsed, a manifest takes several times
//! its bytes (maps, strings, each document's origin): measured on a debug build, 1,900
//! ConfigMaps of 4 KB (7.9 MB) kept took 23 MB more at the peak than read again (79 vs 57
//! MB), 20,000 ConfigMaps of 140 bytes (2.8 MB) 50 MB more (104 vs 55 MB); parsing once
//! saved a third of the CPU time of the first run and a ninth of the second's. Within 2
//! MiB and 8,192 documents the kept files cost some 20 MB at most, about what one window
//! of large files costs anyway; past either, the run reads again and its memory no longer
//! grows with its number of files. Stdin, which cannot be read twice, is always kept.
//!
//! The outputs of a file are derived from it when it is signed ([`Plan::target`],
//! [`Plan::bundle_files`]). So the memory of a run does not grow with its number of files,
//! but for the kept files (within the budget), 32 bytes per window of 128 files and three
//! exceptions that keep a 16-byte digest per output: a run whose outputs could clash
//! ([`Plan::read`]), `--bundle-out` (per signature) and `--remove-input` ([`Removals`],
//! which also keeps the digest of each input's signed bytes, on disk).

use super::error::TreeError;
use super::spill::{PathLog, PathRecords};
use super::staging::{Target, parent_dir, refuse_directory};
use crate::limits::Limits;
use crate::manifest::{
    Found, INPUT_WINDOW, InputSelection, ManifestFile, Source, digest_of_file, is_glob_input,
    load_found_digested, visit_found_windows, visit_loaded_windows,
};
use crate::signing::SignScope;
use sha2::{Digest, Sha256};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// Documents signed in one window at most (one signer call: a Rekor entry each for a logged
/// signer), unless a single file holds more.
const WINDOW_DOCUMENTS: usize = 1024;

/// The input bytes (files' sizes) and the documents up to which a run of several windows
/// keeps its parsed files for the second pass, which then only hashes the bytes again (see
/// the module docs).
pub(super) const KEPT_INPUT_BYTES: u64 = 2 << 20;
const KEPT_DOCUMENTS: usize = 8192;

/// The SHA-256 of the bytes a file was read from.
pub(super) type Digest32 = [u8; 32];

/// What `--bundle-out` ([`SignTree::bundle_out`](super::SignTree::bundle_out)) writes for
/// one signature: the Sigstore bundle, and beside it the signed message M (the bundle's
/// artifact).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFiles {
    /// `<name>.sigstore.json`
    pub bundle: PathBuf,
    /// `<name>.message`
    pub message: PathBuf,
}

/// Where the outputs of a run go (`-o`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TreeOutput {
    /// No `-o`: `<input>.signed` beside the one input file, stdout for stdin. A run that
    /// finds more than one file is refused ([`TreeError::NeedsOutput`]).
    #[default]
    Beside,
    /// `-o -`: one YAML stream on stdout, written once every signature exists.
    Stdout,
    /// `-o DIR/`: each file at its path below its argument (below the fixed part of a glob
    /// pattern; a file argument at its name).
    Dir(PathBuf),
    /// `-o FILE`: one input file only.
    File(PathBuf),
}

impl TreeOutput {
    /// What `mansign sign -o PATH` means by `PATH`: `-` is stdout, a path ending in `/` or
    /// naming an existing directory is a directory, anything else a file.
    pub fn from_flag(path: &str) -> TreeOutput {
        match path {
            "-" => TreeOutput::Stdout,
            o if o.ends_with('/') || Path::new(o).is_dir() => TreeOutput::Dir(o.into()),
            o => TreeOutput::File(o.into()),
        }
    }
}

/// Every input of a run, where each goes, and what the second pass checks it against.
pub(super) struct Plan<'a> {
    inputs: &'a [PathBuf],
    selection: &'a InputSelection,
    outputs: &'a TreeOutput,
    bundle_dir: Option<&'a Path>,
    scope: SignScope,
    /// Files and documents the first pass read.
    pub files: usize,
    pub documents: usize,
    /// The digest of each window of the first pass ([`window_digest`]), in order.
    digests: Vec<[u8; 32]>,
    /// Every file (and the digest of its bytes), window by window, while the run is one
    /// window or its files total at most `keep_bytes`: nothing is parsed twice.
    kept: Option<Vec<Vec<(ManifestFile, Digest32)>>>,
    /// The bytes and documents of the kept files, and the budget for the bytes.
    kept_bytes: u64,
    kept_documents: usize,
    keep_bytes: u64,
    /// What was read from stdin (it cannot be read twice), in order.
    stdin: VecDeque<(ManifestFile, Digest32)>,
    /// The name prefix of this run's staged files, which the second walk passes over.
    staged: String,
}

impl<'a> Plan<'a> {
    /// Reads every input (see the module docs) and checks the outputs; `outputs` is `-o`,
    /// `bundle_dir` is `--bundle-out`.
    ///
    /// Two inputs can be written to one `-o DIR/` file only when the run has several
    /// arguments or a glob pattern (the paths below one directory are distinct): only
    /// then is a digest of each output kept to find a clash. `--bundle-out` names bundles
    /// after output file names, which clash across directories: a digest of each bundle
    /// is kept.
    pub fn read(
        inputs: &'a [PathBuf],
        selection: &'a InputSelection,
        limits: &Limits,
        outputs: &'a TreeOutput,
        bundle_dir: Option<&'a Path>,
        scope: SignScope,
    ) -> Result<Plan<'a>, TreeError> {
        Plan::read_keeping(
            inputs,
            selection,
            limits,
            outputs,
            bundle_dir,
            scope,
            KEPT_INPUT_BYTES,
        )
    }

    /// [`Plan::read`], keeping the parsed files of a run of several windows while they
    /// total at most `keep_bytes` bytes (and [`KEPT_DOCUMENTS`] documents).
    pub fn read_keeping(
        inputs: &'a [PathBuf],
        selection: &'a InputSelection,
        limits: &Limits,
        outputs: &'a TreeOutput,
        bundle_dir: Option<&'a Path>,
        scope: SignScope,
        keep_bytes: u64,
    ) -> Result<Plan<'a>, TreeError> {
        let mut plan = Plan {
            inputs,
            selection,
            outputs,
            bundle_dir,
            scope,
            files: 0,
            documents: 0,
            digests: Vec::new(),
            kept: Some(Vec::new()),
            kept_bytes: 0,
            kept_documents: 0,
            keep_bytes,
            stdin: VecDeque::new(),
            staged: staged_prefix(),
        };
        let may_clash = matches!(plan.outputs, TreeOutput::Dir(_))
            && (inputs.len() > 1 || inputs.iter().any(|i| is_glob_input(i)));
        let mut targets: HashSet<[u8; 16]> = HashSet::new();
        let mut bundles: HashSet<[u8; 16]> = HashSet::new();
        // Every problem of the inputs at once (`visit_loaded_windows`); the checks of the
        // outputs below stop at the first.
        visit_loaded_windows(inputs, selection, limits, INPUT_WINDOW, |window| {
            plan.digests.push(window_digest(&window));
            for (file, _) in &window {
                plan.files += 1;
                plan.documents += file.documents.len();
                if matches!(plan.outputs, TreeOutput::Beside) && plan.files > 1 {
                    // One argument (a directory or several are refused before the walk):
                    // a glob pattern that matched several files.
                    return Err(needs_output(
                        "a glob pattern matching several files",
                        "the pattern's fixed directory",
                    ));
                }
                if let TreeOutput::File(o) = plan.outputs
                    && plan.files > 1
                {
                    return Err(TreeError::OneOutputFile { path: o.clone() });
                }
                let target = plan.target(file);
                refuse_directory(&target)?;
                if may_clash
                    && let Target::File(path) = &target
                    && !targets.insert(path_digest(path))
                {
                    return Err(TreeError::OutputClash { path: path.clone() });
                }
                for files in plan.bundle_files(file, &target) {
                    if !bundles.insert(path_digest(&files.bundle)) {
                        return Err(TreeError::BundleClash { path: files.bundle });
                    }
                }
            }
            // Files are kept while the run is one window or within its budget; stdin
            // always (from the kept windows too, once they are dropped).
            if plan.kept.is_some() {
                plan.kept_bytes = plan.kept_bytes.saturating_add(file_bytes(&window));
                plan.kept_documents += window.iter().map(|(f, _)| f.documents.len()).sum::<usize>();
                if plan.digests.len() >= 2
                    && (plan.keep_bytes == 0
                        || plan.kept_bytes > plan.keep_bytes
                        || plan.kept_documents > KEPT_DOCUMENTS)
                    && let Some(kept) = plan.kept.take()
                {
                    plan.stdin.extend(
                        kept.into_iter()
                            .flatten()
                            .filter(|(f, _)| !matches!(f.source, Source::File(_))),
                    );
                }
            }
            match &mut plan.kept {
                Some(kept) => kept.push(window),
                None => plan.stdin.extend(
                    window
                        .into_iter()
                        .filter(|(f, _)| !matches!(f.source, Source::File(_))),
                ),
            }
            Ok(())
        })?;
        Ok(plan)
    }

    /// The name prefix of this run's staged files (see `staging::Staging::with_prefix`).
    pub fn staged_prefix(&self) -> String {
        self.staged.clone()
    }

    /// Where a file of this run is written.
    pub fn target(&self, file: &ManifestFile) -> Target {
        match (self.outputs, &file.source) {
            (TreeOutput::Beside, Source::File(p)) => {
                let mut s = p.clone().into_os_string();
                s.push(".signed");
                Target::File(PathBuf::from(s))
            }
            (TreeOutput::Beside | TreeOutput::Stdout, _) => Target::Stdout,
            (TreeOutput::Dir(dir), _) => Target::File(dir.join(&file.relative_path)),
            (TreeOutput::File(path), _) => Target::File(path.clone()),
        }
    }

    /// Whether the run writes `--bundle-out` files.
    pub fn bundles(&self) -> bool {
        self.bundle_dir.is_some()
    }

    /// The `--bundle-out` files of a file's signatures (none without it), in the order
    /// `sign_files` builds its messages: `<output file name>.<document number, from 1>`,
    /// or `<output file name>` with `--scope file`.
    pub fn bundle_files(&self, file: &ManifestFile, target: &Target) -> Vec<BundleFiles> {
        let Some(dir) = self.bundle_dir else {
            return Vec::new();
        };
        let base = match (target, &file.source) {
            (Target::File(p), _) | (Target::Stdout, Source::File(p)) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "output".to_string()),
            (Target::Stdout, _) => "stdout".to_string(),
        };
        let names: Vec<String> = match self.scope {
            // Numbered from 1, as documents are everywhere else.
            SignScope::Document => (1..=file.documents.len())
                .map(|i| format!("{base}.{i}"))
                .collect(),
            SignScope::File => vec![base],
        };
        names
            .into_iter()
            .map(|name| BundleFiles {
                bundle: dir.join(format!("{name}.sigstore.json")),
                message: dir.join(format!("{name}.message")),
            })
            .collect()
    }

    /// The second pass: hands `sign` the files of the run in order, each with the digest of
    /// the bytes it was read from, in windows of at most [`INPUT_WINDOW`] files and, unless
    /// one file holds more, [`WINDOW_DOCUMENTS`] documents (a file may hold up to
    /// `Limits::max_documents`: 128 such files would be one huge batch). The files are the
    /// ones kept from the first pass, or read again; a window read again that is not the
    /// one first read (a file added, removed, renamed or edited) is refused before it is
    /// signed: the outputs were checked from the first, and what is signed must be what
    /// was checked. Kept files are not parsed again, but their bytes are read again and
    /// hashed, with the same check (a run of one window reads nothing twice).
    pub fn windows(
        &mut self,
        limits: &Limits,
        mut sign: impl FnMut(&Plan<'a>, Vec<ManifestFile>, Vec<Digest32>) -> Result<(), TreeError>,
    ) -> Result<(), TreeError> {
        let mut kept = match self.kept.take() {
            Some(kept) if kept.len() <= 1 => {
                return self.split(kept.into_iter().flatten().collect(), &mut sign);
            }
            Some(kept) => Some(kept.into_iter()),
            None => None,
        };
        let mut next = 0;
        let (inputs, selection) = (self.inputs, self.selection);
        let staged = self.staged.clone();
        visit_found_windows(inputs, selection, INPUT_WINDOW, Some(&staged), |found| {
            let window = if let Some(kept) = &mut kept {
                let window = kept.next().unwrap_or_default();
                if !same_files(&found, &window, limits)? {
                    return Err(TreeError::Changed {
                        names: found_names(&found),
                    });
                }
                window
            } else if found.as_slice() == [Found::Stdin] {
                let Some(read) = self.stdin.pop_front() else {
                    return Err(TreeError::StdinTwice);
                };
                vec![read]
            } else {
                load_found_digested(found, limits)?
            };
            if self.digests.get(next) != Some(&window_digest(&window)) {
                return Err(TreeError::Changed {
                    names: window_names(&window),
                });
            }
            next += 1;
            self.split(window, &mut sign)
        })?;
        if next != self.digests.len() {
            return Err(TreeError::FilesRemoved {
                inputs: self
                    .inputs
                    .iter()
                    .map(|i| i.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        Ok(())
    }

    /// Hands `sign` the files in windows of at most [`WINDOW_DOCUMENTS`] documents (a file
    /// holding more is a window of its own).
    fn split(
        &self,
        files: Vec<(ManifestFile, Digest32)>,
        sign: &mut impl FnMut(&Plan<'a>, Vec<ManifestFile>, Vec<Digest32>) -> Result<(), TreeError>,
    ) -> Result<(), TreeError> {
        let mut window = Vec::new();
        let mut digests = Vec::new();
        let mut documents = 0;
        for (file, digest) in files {
            if !window.is_empty() && documents + file.documents.len() > WINDOW_DOCUMENTS {
                sign(
                    self,
                    std::mem::take(&mut window),
                    std::mem::take(&mut digests),
                )?;
                documents = 0;
            }
            documents += file.documents.len();
            window.push(file);
            digests.push(digest);
        }
        if !window.is_empty() {
            sign(self, window, digests)?;
        }
        Ok(())
    }
}

/// Why `sign` of `what` (`a directory`, `several inputs`, ...) needs `-o`, and what to
/// write; `tree` names what `-o DIR/` mirrors.
pub(crate) fn needs_output(what: &str, tree: &str) -> TreeError {
    TreeError::NeedsOutput {
        what: what.to_string(),
        tree: tree.to_string(),
    }
}

/// A name prefix for one run's staged files that no other file has: the outputs of earlier
/// windows are staged beside their targets, and the second walk meets those inside the
/// input tree (`sign -f d/ -o d/signed/`).
fn staged_prefix() -> String {
    let mut random = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut random);
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!(".mansign-{hex}-")
}

/// What the two passes must agree on for one window: each file's source, its path below
/// its argument, its number of documents and the digest of its bytes, in order.
fn window_digest(files: &[(ManifestFile, Digest32)]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for (file, bytes) in files {
        let source = match &file.source {
            Source::File(path) => path.as_os_str().as_encoded_bytes().to_vec(),
            other => other.to_string().into_bytes(),
        };
        for part in [
            source.as_slice(),
            file.relative_path.as_os_str().as_encoded_bytes(),
        ] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        hash.update((file.documents.len() as u64).to_le_bytes());
        hash.update(bytes);
    }
    hash.finalize().into()
}

/// A 16-byte digest of a path, to find two outputs at one path without keeping the paths.
fn path_digest(path: &Path) -> [u8; 16] {
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    let mut short = [0u8; 16];
    short.copy_from_slice(&digest[..16]);
    short
}

/// The bytes of a window's files (as their sizes say; stdin counts nothing, it is always
/// kept).
fn file_bytes(files: &[(ManifestFile, Digest32)]) -> u64 {
    files
        .iter()
        .map(|(file, _)| match &file.source {
            Source::File(path) => std::fs::metadata(path).map_or(u64::MAX, |m| m.len()),
            _ => 0,
        })
        .fold(0, u64::saturating_add)
}

/// Whether the files the second walk found are the kept ones, to the byte: the same paths
/// below the same arguments, in the same order, each file's bytes hashing as they did
/// (read again, not parsed). A file that cannot be read again is its own error, as when the
/// second pass parses again (unreadable, too large, no longer a regular file).
fn same_files(
    found: &[Found],
    kept: &[(ManifestFile, Digest32)],
    limits: &Limits,
) -> Result<bool, TreeError> {
    if found.len() != kept.len() {
        return Ok(false);
    }
    for (found, (file, digest)) in found.iter().zip(kept) {
        let same = match found {
            Found::Stdin => file.source == Source::Stdin,
            Found::File { path, relative } => {
                matches!(&file.source, Source::File(p) if p == path)
                    && file.relative_path == *relative
                    && digest_of_file(path, limits)? == *digest
            }
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A window the second walk found, for an error: the only file, or the first and the last.
fn found_names(found: &[Found]) -> String {
    let name = |f: &Found| match f {
        Found::Stdin => Source::Stdin.to_string(),
        Found::File { path, .. } => path.display().to_string(),
    };
    match found {
        [] => "(no files)".to_string(),
        [one] => name(one),
        [first, .., last] => format!("{} … {}", name(first), name(last)),
    }
}

/// A window's files, for an error: the only one, or the first and the last.
fn window_names(files: &[(ManifestFile, Digest32)]) -> String {
    match files {
        [] => "(no files)".to_string(),
        [one] => one.0.source.to_string(),
        [first, .., last] => format!("{} … {}", first.0.source, last.0.source),
    }
}

/// `--remove-input`: the inputs of a run, to be removed once every output was written, and
/// a digest of each output's canonical path (an input that is also an output is kept).
/// The inputs wait in a [`PathLog`] with the digest of the bytes that were signed; the
/// output digests (16 bytes per output) are the one thing this flag keeps in memory per
/// file.
///
/// An input is removed only while its bytes are still the ones signed: a document
/// appended to a file after its window was signed is in neither the input nor the output
/// otherwise. [`Removals::check_unchanged`] runs before the outputs are written (a changed
/// input fails the run with nothing written), and [`Removals::remove`] checks each input
/// again just before removing it.
pub(super) struct Removals {
    /// The inputs as given, each with the hex SHA-256 of the bytes signed.
    inputs: PathLog,
    outputs: HashSet<[u8; 16]>,
    limits: Limits,
}

impl Removals {
    pub fn new(limits: Limits) -> Self {
        Removals {
            inputs: PathLog::new(2),
            outputs: HashSet::new(),
            limits,
        }
    }

    /// One signed file, once its output was staged (its directory exists); `signed` is the
    /// digest of the bytes it was signed from.
    pub fn add(
        &mut self,
        source: &Source,
        target: &Target,
        signed: &Digest32,
    ) -> Result<(), TreeError> {
        if let Target::File(path) = target {
            // The output does not exist yet: its directory's canonical path and its name
            // are where the rename will put it (a link in its place is replaced).
            let canonical = match path.file_name() {
                Some(name) => std::fs::canonicalize(parent_dir(path))
                    .map(|dir| dir.join(name))
                    .unwrap_or_else(|_| path.clone()),
                None => path.clone(),
            };
            self.outputs.insert(path_digest(&canonical));
        }
        if let Source::File(path) = source {
            let digest = PathBuf::from(hex::encode(signed));
            self.inputs
                .push(&[path, &digest])
                .map_err(TreeError::keep(KEEP_INPUTS))?;
        }
        Ok(())
    }

    /// Every input still holds the bytes it was signed from; else the run fails, naming
    /// the first input that changed, before anything is written. Reads every input once
    /// more (within the input size limit).
    pub fn check_unchanged(&mut self) -> Result<(), TreeError> {
        // Read back and written again as it is read: the log stays for `remove`.
        let records = self.drain()?;
        for record in records {
            let (path, signed) = read_record(record)?;
            self.unchanged(&path, &signed)?;
            self.inputs
                .push(&[&path, Path::new(&signed)])
                .map_err(TreeError::keep(KEEP_INPUTS))?;
        }
        Ok(())
    }

    /// The recorded inputs, taken out of the log.
    fn drain(&mut self) -> Result<PathRecords, TreeError> {
        std::mem::replace(&mut self.inputs, PathLog::new(2))
            .into_records()
            .map_err(TreeError::keep(READ_INPUTS))
    }

    /// `path` holds the bytes whose hex digest is `signed`.
    fn unchanged(&self, path: &Path, signed: &str) -> Result<(), TreeError> {
        let now = digest_of_file(path, &self.limits).map_err(|source| TreeError::ReadAgain {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        if hex::encode(now) != signed {
            return Err(TreeError::InputChanged {
                path: path.to_path_buf(),
            });
        }
        Ok(())
    }

    /// Deletes the input files (after every output was written) and returns the ones it
    /// removed, in order, and the first failure. An input that is also an output is kept,
    /// and so is one whose bytes changed since it was signed (a failure, naming it, after the
    /// others were removed); an input that cannot be removed ends the removals.
    pub fn remove(mut self) -> (PathLog, Option<TreeError>) {
        let mut removed = PathLog::new(1);
        let records = match self.drain() {
            Ok(records) => records,
            Err(e) => return (removed, Some(e)),
        };
        let failed = self.remove_each(records, &mut removed).err();
        (removed, failed)
    }

    fn remove_each(&self, records: PathRecords, removed: &mut PathLog) -> Result<(), TreeError> {
        let mut changed = None;
        for record in records {
            let (path, signed) = read_record(record)?;
            // Resolved now that every output is in place: an input signed in place, a
            // link replaced by its output, or a link to an output is an output.
            let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if self.outputs.contains(&path_digest(&canonical)) {
                continue;
            }
            if let Err(e) = self.unchanged(&path, &signed) {
                changed.get_or_insert(e);
                continue;
            }
            if let Err(source) = std::fs::remove_file(&path) {
                return Err(TreeError::RemoveInput { path, source });
            }
            removed
                .push(&[&path])
                .map_err(TreeError::keep("cannot keep the list of inputs removed"))?;
        }
        changed.map_or(Ok(()), Err)
    }
}

/// One record of [`Removals`]' log: an input and the hex digest of its signed bytes.
fn read_record(record: std::io::Result<Vec<PathBuf>>) -> Result<(PathBuf, String), TreeError> {
    let record = record.map_err(TreeError::keep(READ_INPUTS))?;
    match record.as_slice() {
        [path, digest] => Ok((path.clone(), digest.to_string_lossy().into_owned())),
        _ => Err(TreeError::Corrupt("the list of inputs to remove")),
    }
}

const KEEP_INPUTS: &str = "cannot keep the list of inputs to remove";
const READ_INPUTS: &str = "cannot read back the list of inputs to remove";

#[cfg(test)]
mod tests {
    use super::*;

    /// After the outputs are written, an input that no longer holds its signed bytes (here:
    /// a directory in its place) is kept and named in the failure; the others are removed,
    /// and the ones removed are listed for the report.
    #[test]
    fn removals_keep_a_changed_input_name_it_and_list_the_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut removals = Removals::new(Limits::default());
        let inputs: Vec<PathBuf> = (0..3)
            .map(|i| dir.path().join(format!("{i}.yaml")))
            .collect();
        for (i, path) in inputs.iter().enumerate() {
            let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n");
            std::fs::write(path, &text).unwrap();
            let signed: Digest32 = Sha256::digest(text.as_bytes()).into();
            let output = Target::File(dir.path().join(format!("out-{i}.yaml")));
            removals
                .add(&Source::File(path.clone()), &output, &signed)
                .unwrap();
        }
        removals.check_unchanged().unwrap();
        std::fs::remove_file(&inputs[1]).unwrap();
        std::fs::create_dir(&inputs[1]).unwrap();
        let (removed, failed) = removals.remove();
        let removed: Vec<PathBuf> = removed
            .into_records()
            .unwrap()
            .map(|r| r.unwrap().remove(0))
            .collect();
        assert_eq!(removed, [inputs[0].clone(), inputs[2].clone()]);
        assert!(!inputs[0].exists() && inputs[1].is_dir() && !inputs[2].exists());
        let failed = failed.expect("a failure");
        assert!(
            matches!(&failed, TreeError::ReadAgain { path, .. } if *path == inputs[1]),
            "{}",
            crate::error::chain(&failed)
        );
    }

    fn config_maps(names: &[String]) -> String {
        names
            .iter()
            .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n"))
            .collect::<Vec<_>>()
            .join("---\n")
    }

    /// A tree of `files` files below `team-N/` directories, one document each, and a last
    /// file of `last` documents.
    fn tree(root: &Path, files: usize, last: usize) {
        for i in 0..files {
            let dir = root.join(format!("team-{}", i / 50));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join(format!("cm-{i:04}.yaml")),
                config_maps(&[format!("cm-{i}")]),
            )
            .unwrap();
        }
        let names: Vec<String> = (0..last).map(|d| format!("last-{d}")).collect();
        std::fs::write(root.join("zz-last.yaml"), config_maps(&names)).unwrap();
    }

    /// The plan of `sign -f <inputs> -o out/` (`--bundle-out` when `bundles` is given).
    fn plan<'a>(
        inputs: &'a [PathBuf],
        selection: &'a InputSelection,
        bundles: Option<&'a Path>,
        scope: SignScope,
    ) -> Result<Plan<'a>, TreeError> {
        plan_keeping(inputs, selection, bundles, scope, 0)
    }

    /// [`plan`], keeping the parsed files of up to `keep_bytes` bytes (0: a run of
    /// several windows keeps none, and its second pass reads and parses again).
    fn plan_keeping<'a>(
        inputs: &'a [PathBuf],
        selection: &'a InputSelection,
        bundles: Option<&'a Path>,
        scope: SignScope,
        keep_bytes: u64,
    ) -> Result<Plan<'a>, TreeError> {
        static OUT: std::sync::LazyLock<TreeOutput> =
            std::sync::LazyLock::new(|| TreeOutput::Dir("out/".into()));
        Plan::read_keeping(
            inputs,
            selection,
            &Limits::default(),
            &OUT,
            bundles,
            scope,
            keep_bytes,
        )
    }

    /// The names of the documents each window of the second pass holds.
    fn second_pass(plan: &mut Plan<'_>) -> Result<Vec<Vec<String>>, TreeError> {
        let mut windows = Vec::new();
        plan.windows(&Limits::default(), |_, files, _| {
            windows.push(
                files
                    .iter()
                    .flat_map(|f| &f.documents)
                    .map(|d| d.value["metadata"]["name"].as_str().unwrap().to_string())
                    .collect(),
            );
            Ok(())
        })?;
        Ok(windows)
    }

    #[test]
    fn the_second_pass_reads_every_file_again_in_windows_of_files_and_documents() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 300, 1000);
        let inputs = [dir.path().to_path_buf()];
        let selection = InputSelection::default();
        let mut plan = plan(&inputs, &selection, None, SignScope::Document).unwrap();
        assert_eq!((plan.files, plan.documents), (301, 1300));
        // What the plan keeps: a digest per window of the walk, no file.
        assert_eq!(plan.digests.len(), 3);
        assert!(plan.kept.is_none() && plan.stdin.is_empty());
        let windows = second_pass(&mut plan).unwrap();
        let sizes: Vec<usize> = windows.iter().map(Vec::len).collect();
        // 128 + 128 files; then 44 files, and the file of 1,000 documents on its own.
        assert_eq!(sizes, [128, 128, 44, 1000]);
        let names: Vec<String> = windows.concat();
        assert_eq!(names[0], "cm-0");
        assert_eq!(names[299], "cm-299");
        assert_eq!(names[1299], "last-999");
    }

    #[test]
    fn a_tree_changed_between_the_passes_is_refused_before_its_window_is_signed() {
        refused_when_changed(0);
    }

    /// Kept parsed files are not parsed again, but a change between the passes is refused
    /// all the same: each window's files are found and hashed again.
    #[test]
    fn a_kept_tree_changed_between_the_passes_is_refused_before_its_window_is_signed() {
        refused_when_changed(u64::MAX);
    }

    /// Every kind of change of a tree of three windows between the passes fails the second
    /// pass before its last window, the plan keeping up to `keep_bytes` of parsed files.
    fn refused_when_changed(keep_bytes: u64) {
        type Change = fn(&Path);
        let changes: [(&str, Change); 6] = [
            ("a file added", |root| {
                std::fs::write(
                    root.join("team-1/cm-0060b.yaml"),
                    config_maps(&["new".into()]),
                )
                .unwrap()
            }),
            ("a file removed", |root| {
                std::fs::remove_file(root.join("team-5/cm-0260.yaml")).unwrap()
            }),
            ("a file renamed", |root| {
                std::fs::rename(
                    root.join("team-0/cm-0010.yaml"),
                    root.join("team-0/cm-0010x.yaml"),
                )
                .unwrap()
            }),
            ("a value changed", |root| {
                std::fs::write(
                    root.join("team-3/cm-0150.yaml"),
                    config_maps(&["changed".into()]),
                )
                .unwrap()
            }),
            ("a comment added", |root| {
                let path = root.join("team-4/cm-0200.yaml");
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, format!("{text}# reviewed\n")).unwrap()
            }),
            ("a document added", |root| {
                std::fs::write(
                    root.join("team-2/cm-0100.yaml"),
                    config_maps(&["a".into(), "b".into()]),
                )
                .unwrap()
            }),
        ];
        for (case, change) in changes {
            let dir = tempfile::tempdir().unwrap();
            tree(dir.path(), 300, 1);
            let inputs = [dir.path().to_path_buf()];
            let selection = InputSelection::default();
            let mut plan =
                plan_keeping(&inputs, &selection, None, SignScope::Document, keep_bytes).unwrap();
            assert_eq!(plan.kept.is_some(), keep_bytes > 0, "{case}");
            change(dir.path());
            let mut signed = 0;
            let err = plan
                .windows(&Limits::default(), |_, files, _| {
                    signed += files.len();
                    Ok(())
                })
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("changed during the run") && err.contains("nothing was written"),
                "{case}: {err}"
            );
            assert!(signed < 301, "{case}: refused before the last window");
        }
    }

    /// Within the budget, a run of several windows keeps its parsed files (and stdin with
    /// them), and hands the same windows to the second pass, which reads each file's
    /// bytes again without parsing them; past it, it keeps none.
    #[test]
    fn a_small_run_of_several_windows_is_parsed_once() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 300, 1000);
        let inputs = [dir.path().to_path_buf()];
        let selection = InputSelection::default();
        let mut plan =
            plan_keeping(&inputs, &selection, None, SignScope::Document, 1 << 20).unwrap();
        assert_eq!(plan.digests.len(), 3);
        let kept = plan.kept.as_ref().expect("kept within the budget");
        assert_eq!(
            kept.iter().map(Vec::len).collect::<Vec<_>>(),
            [128, 128, 45]
        );
        assert!(plan.stdin.is_empty());
        let windows = second_pass(&mut plan).unwrap();
        let sizes: Vec<usize> = windows.iter().map(Vec::len).collect();
        assert_eq!(sizes, [128, 128, 44, 1000]);
        let names: Vec<String> = windows.concat();
        assert_eq!(
            (names[0].as_str(), names[1299].as_str()),
            ("cm-0", "last-999")
        );
        // The tree is some 70 KB: a budget below it keeps nothing.
        let plan = plan_keeping(&inputs, &selection, None, SignScope::Document, 1 << 10).unwrap();
        assert!(plan.kept.is_none());
    }

    #[test]
    fn one_output_file_for_several_inputs_is_refused_in_the_first_pass() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 2, 1);
        let inputs = [dir.path().to_path_buf()];
        let selection = InputSelection::default();
        let output = TreeOutput::File("signed.yaml".into());
        let err = Plan::read(
            &inputs,
            &selection,
            &Limits::default(),
            &output,
            None,
            SignScope::Document,
        )
        .err()
        .expect("several inputs, one output file");
        assert!(
            err.to_string()
                .contains("-o signed.yaml: more than one input file but one output file"),
            "{err}"
        );
    }

    #[test]
    fn outputs_that_clash_across_arguments_are_refused_in_the_first_pass() {
        let dir = tempfile::tempdir().unwrap();
        for side in ["a", "b"] {
            tree(&dir.path().join(side), 200, 1);
        }
        let inputs = [dir.path().join("a"), dir.path().join("b")];
        let selection = InputSelection::default();
        let err = plan(&inputs, &selection, None, SignScope::Document)
            .err()
            .expect("a clash");
        assert!(
            err.to_string().contains("two inputs would be written to"),
            "{err}"
        );
        // One argument with --bundle-out: distinct output names give distinct bundles.
        let one = [dir.path().join("a")];
        let bundles = dir.path().join("bundles");
        let planned = plan(&one, &selection, Some(&bundles), SignScope::File);
        assert!(
            planned.is_ok(),
            "distinct output names give distinct bundles"
        );
    }
}
