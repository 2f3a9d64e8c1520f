//! Writing outputs all or nothing ([`Staging`]): every output goes to a temporary file
//! beside its target first; targets are replaced only after every temporary file was
//! written, so a failed run leaves no partial output.

use super::error::TreeError;
use super::interrupt::Interrupts;
use super::spill::{PathLog, SPILL_AT, Spill};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where one output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The process's standard output (`-o -`, or a stdin input written beside).
    Stdout,
    File(PathBuf),
}

/// An output target that is a directory: refused before anything is written.
pub(crate) fn refuse_directory(target: &Target) -> Result<(), TreeError> {
    if let Target::File(path) = target
        && path.is_dir()
    {
        return Err(TreeError::IsADirectory { path: path.clone() });
    }
    Ok(())
}

/// Outputs written so far, each to a closed temporary file beside its target (stdout's
/// text kept as a report is, in memory up to a bound and then in an anonymous temporary
/// file). [`Staging::commit`] renames them into place and prints stdout's text; dropped
/// without it, the temporary files are removed and no target is touched. A run that
/// writes window by window stages every window first, so a failure in the last one still
/// leaves no output.
pub(crate) struct Staging {
    /// (temporary file, where it is renamed to, the target as given) of every staged
    /// file, closed once written and kept as a [`PathLog`]: a batch of
    /// 100,000 outputs holds neither 100,000 open files nor their paths in memory. The
    /// first two are in the directory the file was created in, resolved when it was
    /// created (see [`Staging::add`]). `None` once committed or discarded; dropped before
    /// that, every temporary file is removed.
    files: Option<PathLog>,
    /// The name prefix of the temporary files.
    prefix: String,
    /// The run's watch for SIGINT and SIGTERM, if it has one.
    interrupts: Option<Arc<Interrupts>>,
    stdout: Spill,
    /// Whether stdout has text, and whether that text ends in a line break.
    stdout_used: bool,
    stdout_line_ended: bool,
}

impl Staging {
    /// Stages into temporary files named `.mansign-<random>.tmp` (the CLI's other writes).
    #[cfg(feature = "cli")]
    pub fn new() -> Self {
        Self::with_prefix(".mansign-".to_string())
    }

    /// Stages into temporary files named `<prefix><random>.tmp`: a run that walks its
    /// inputs again while it stages passes over its own by this prefix.
    pub fn with_prefix(prefix: String) -> Self {
        Staging {
            prefix,
            interrupts: None,
            files: Some(PathLog::new(3)),
            stdout: Spill::new(SPILL_AT),
            stdout_used: false,
            stdout_line_ended: true,
        }
    }

    /// Removes what was staged, and writes nothing, on SIGINT, SIGTERM or SIGHUP (see
    /// `interrupt.rs`; the staged files are found by this staging's prefix).
    pub fn watched(mut self) -> Self {
        self.interrupts = Some(Interrupts::watch(&self.prefix));
        self
    }

    /// Stages `text` for `target`: a synced temporary file beside a file target (its
    /// directory created), or more of stdout's text.
    ///
    /// The file is created in the target's directory as resolved now (links followed), and
    /// recorded by that path: removed, or renamed into place, through the directory it was
    /// created in, even if a link on the way was re-pointed since (`-o out/` with `out` a
    /// link that a deployment swaps). A path re-resolved at the end would miss it.
    pub fn add(&mut self, target: &Target, text: &str) -> Result<(), TreeError> {
        refuse_directory(target)?;
        match target {
            Target::Stdout => {
                // Several files on stdout are one YAML stream: without a separator the
                // last document of one file would merge with the first of the next.
                let mut piece = String::new();
                if self.stdout_used {
                    if !self.stdout_line_ended {
                        piece.push('\n');
                    }
                    piece.push_str("---\n");
                }
                piece.push_str(text);
                self.stdout
                    .write_all(piece.as_bytes())
                    .map_err(TreeError::keep("cannot keep the output for stdout"))?;
                if !piece.is_empty() {
                    self.stdout_used = true;
                    self.stdout_line_ended = piece.ends_with('\n');
                }
            }
            Target::File(path) => {
                let dir = parent_dir(path);
                // Held until the file is recorded: a signal's clean-up waits for it.
                let interrupts = self.interrupts.clone();
                let mut held = interrupts.as_deref().map(Interrupts::hold);
                if let Err(source) = std::fs::create_dir_all(&dir) {
                    return Err(TreeError::CreateDir { dir, source });
                }
                let real_dir = match std::fs::canonicalize(&dir) {
                    Ok(real) => real,
                    Err(source) => return Err(TreeError::ResolveDir { dir, source }),
                };
                let Some(name) = path.file_name() else {
                    return Err(TreeError::NotAFileName { path: path.clone() });
                };
                let renamed_to = real_dir.join(name);
                if let Some(held) = &mut held {
                    held.staging_in(&real_dir);
                }
                let tmp = stage_in(&real_dir, path, text, false, &self.prefix)?.into_temp_path();
                let Some(files) = &mut self.files else {
                    return Err(TreeError::StagedAfterCommit { path: path.clone() });
                };
                // Recorded before it is kept: a temporary file that could not be recorded
                // is still removed (by its TempPath) when this returns an error.
                files
                    .push(&[&tmp, &renamed_to, path])
                    .map_err(TreeError::keep("cannot keep the list of staged outputs"))?;
                // tempfile's PathPersistError prints its io::Error and returns it as its
                // source too: the io::Error alone is the cause.
                tmp.keep().map_err(|e| TreeError::KeepStaged {
                    path: path.clone(),
                    source: e.error,
                })?;
            }
        }
        Ok(())
    }

    /// Renames every staged file into place, in the order staged, then prints stdout's
    /// text. A rename that fails stops the run: the temporary files not yet renamed are
    /// removed.
    pub fn commit(mut self) -> Result<(), TreeError> {
        let Some(files) = self.files.take() else {
            return Ok(());
        };
        // A signal during the renames waits for their end: all outputs or none.
        let interrupts = self.interrupts.clone();
        let mut held = interrupts.as_deref().map(Interrupts::hold);
        let unreadable = || {
            TreeError::keep(format!(
                "cannot read back the list of staged outputs (temporary files {}*.tmp may be \
                 left beside the outputs)",
                self.prefix
            ))
        };
        let mut failed = None;
        let mut left = LeftBehind::default();
        for record in files.into_records().map_err(unreadable())? {
            let record = record.map_err(unreadable())?;
            let [tmp, renamed_to, path] = record.as_slice() else {
                return Err(TreeError::Corrupt("the list of staged outputs"));
            };
            if failed.is_some() {
                left.remove(tmp);
                continue;
            }
            if let Err(source) = std::fs::rename(tmp, renamed_to) {
                left.remove(tmp);
                failed = Some(TreeError::Write {
                    path: path.clone(),
                    source,
                });
            }
        }
        if let Some(e) = failed {
            return Err(left.note_on(e, &self.prefix, false));
        }
        if let Some(held) = &mut held {
            held.committed();
        }
        drop(held);
        if self.stdout_used {
            let stdout = std::mem::replace(&mut self.stdout, Spill::new(0));
            let text = stdout
                .into_reader()
                .map_err(TreeError::keep("cannot read back the output for stdout"))?;
            copy_stdout(text)?;
        }
        Ok(())
    }
}

impl Staging {
    /// Removes every staged file (the run failed) and returns `error`, with the files that
    /// could not be removed named on it: a directory that became unwritable keeps them, and
    /// the person must know what to clean up.
    pub fn discard(mut self, error: TreeError) -> TreeError {
        let left = self.remove_staged();
        left.note_on(error, &self.prefix, true)
    }

    /// Removes every staged file not yet renamed; what could not be removed.
    fn remove_staged(&mut self) -> LeftBehind {
        let mut left = LeftBehind::default();
        let Some(files) = self.files.take() else {
            return left;
        };
        match files.into_records() {
            Ok(records) => {
                for record in records {
                    match record {
                        Ok(record) => {
                            if let Some(tmp) = record.first() {
                                left.remove(tmp);
                            }
                        }
                        Err(_) => left.unlisted = true,
                    }
                }
            }
            Err(_) => left.unlisted = true,
        }
        left
    }
}

impl Drop for Staging {
    /// A run that failed before its commit leaves no temporary file behind; one that
    /// cannot be removed is named on stderr (a caller that can, uses
    /// [`Staging::discard`] to name it in its error instead).
    fn drop(&mut self) {
        let left = self.remove_staged();
        if !left.is_empty() {
            eprintln!("mansign: {}", left.describe(&self.prefix));
        }
    }
}

/// Staged files that could not be removed after a failure.
#[derive(Default)]
struct LeftBehind {
    /// Each one, with why (the first [`LISTED_LEFT`]), and how many in all.
    listed: Vec<String>,
    count: usize,
    /// The list of staged files itself could not be read back.
    unlisted: bool,
}

/// Files named one by one when staged files are left behind; the rest are counted.
const LISTED_LEFT: usize = 10;

impl LeftBehind {
    /// Removes one staged file; one already gone is not left behind.
    fn remove(&mut self, tmp: &Path) {
        match std::fs::remove_file(tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                self.count += 1;
                if self.listed.len() < LISTED_LEFT {
                    self.listed.push(format!("{} ({e})", tmp.display()));
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0 && !self.unlisted
    }

    fn describe(&self, prefix: &str) -> String {
        let mut text = format!(
            "{} staged file(s) could not be removed and are left behind: {}",
            self.count,
            self.listed.join(", ")
        );
        if self.count > self.listed.len() {
            text.push_str(&format!(", and {} more", self.count - self.listed.len()));
        }
        if self.unlisted {
            if self.count == 0 {
                text = "the list of staged files could not be read back".to_string();
            } else {
                text.push_str("; and the list of staged files could not be read back");
            }
        }
        text.push_str(&format!(" (all named {prefix}*.tmp)"));
        text
    }

    /// `error`, with the files left behind named first (and, before any rename, that
    /// nothing else was written).
    fn note_on(self, error: TreeError, prefix: &str, nothing_written: bool) -> TreeError {
        if self.is_empty() {
            return error;
        }
        let written = if nothing_written {
            "nothing was written, but "
        } else {
            ""
        };
        TreeError::LeftBehind {
            note: format!("{written}{}", self.describe(prefix)),
            source: Box::new(error),
        }
    }
}

/// The directory a file is written in (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `text` to a synced temporary file beside `path`, mode 0600 for a secret and
/// 0644 otherwise; the caller renames it into place once everything is staged.
#[cfg(feature = "cli")]
pub(crate) fn stage(
    path: &Path,
    text: &str,
    secret: bool,
    prefix: &str,
) -> Result<tempfile::NamedTempFile, TreeError> {
    stage_in(&parent_dir(path), path, text, secret, prefix)
}

/// [`stage`] into `dir` (the directory of `path`, maybe resolved).
fn stage_in(
    dir: &Path,
    path: &Path,
    text: &str,
    secret: bool,
    prefix: &str,
) -> Result<tempfile::NamedTempFile, TreeError> {
    let mut tmp = tempfile::Builder::new()
        .prefix(prefix)
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|source| TreeError::DirNotWritable {
            dir: dir.to_path_buf(),
            source,
        })?;
    tmp.write_all(text.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|source| TreeError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    if !secret {
        set_readable(tmp.path());
    }
    Ok(tmp)
}

/// Prints stdout's text, copied in pieces from `reader`: a closed stdout (`... | head -1`)
/// is an error, so that nothing after it (removing the inputs) acts as if the text had been
/// delivered. Never a panic, as `println!` would be.
fn copy_stdout(mut reader: impl std::io::Read) -> Result<(), TreeError> {
    let mut out = std::io::stdout().lock();
    std::io::copy(&mut reader, &mut out)
        .and_then(|_| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => TreeError::StdoutClosed,
            _ => TreeError::Stdout(e),
        })
}

/// tempfile creates files with mode 0600; signed manifests are not secrets.
pub(crate) fn set_readable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644));
    }
}
