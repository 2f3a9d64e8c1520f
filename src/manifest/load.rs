//! Reading manifests from files, directories (recursively) and stdin.
//!
//! **Which files.** What mansign verifies must be what `kubectl apply -f DIR -R` (or a
//! GitOps tool) would apply, or an unsigned file could ride along beside signed ones. kubectl
//! reads every `.yaml`, `.yml` and `.json` file of a tree, hidden ones included (its walk
//! skips nothing by name), so mansign reads exactly those — JSON manifests too — and treats
//! any other file in the tree as an error: a `README.md` is harmless to kubectl, but Argo CD
//! also reads other formats (`.jsonnet`), and a verification that silently skips files is
//! not one. Files and directories the user names with `--exclude GLOB` (matched against the
//! path below the directory argument) are left out, explicitly. Symbolic links are followed;
//! a link that leads back into its own ancestors is refused. `--exclude` patterns are matched
//! as `.gitignore` patterns are ([`InputSelection`]).

use super::{Document, DocumentOrigin, ManifestError, Source, parse_documents};
use crate::limits::Limits;
use crate::parallel::{default_parallelism, map_in_order};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// File extensions kubectl reads from a directory.
pub const MANIFEST_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// The Kubernetes objects of one input file, in file order.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    pub source: Source,
    /// Path of the file relative to the input argument it was found under: the file name
    /// for a file argument, the path below the directory for a directory argument (or below
    /// a glob pattern's fixed prefix). Used to mirror inputs into an output directory.
    pub relative_path: PathBuf,
    pub documents: Vec<Document>,
}

impl ManifestFile {
    /// True if the file was read as JSON (a `.json` file): signed output is written as JSON.
    pub fn is_json(&self) -> bool {
        self.relative_path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    }
}

/// Which files of a directory tree are left out (`--exclude`), matched as `.gitignore`
/// patterns are, against the path below the directory argument (or below a glob pattern's
/// fixed prefix):
///
/// * a pattern with no `/` but a trailing one (`README.md`, `*.md`, `docs/`) matches a file
///   or directory name at any depth (`*.md` leaves out `sub/README.md` too);
/// * a pattern with a `/` at its start or in its middle (`/kustomization.yaml`,
///   `docs/*.yaml`) matches from the directory argument down only;
/// * a trailing `/` matches directories only;
/// * `*` and `?` do not cross a `/`; `**` matches any number of directories.
///
/// A matching directory is not entered.
#[derive(Debug, Clone, Default)]
pub struct InputSelection {
    exclude: Vec<ExcludePattern>,
}

#[derive(Debug, Clone)]
struct ExcludePattern {
    /// The compiled glob, `**/`-prefixed for a pattern that matches at any depth.
    glob: glob::Pattern,
    directories_only: bool,
}

/// A bad `--exclude` pattern.
#[derive(Debug, Clone, thiserror::Error)]
#[error("--exclude {pattern:?}: {reason}")]
pub struct ExcludePatternError {
    pub pattern: String,
    pub reason: String,
}

impl InputSelection {
    /// Parses `--exclude` patterns (see [`InputSelection`]); the error names the bad one.
    pub fn with_excludes<S: AsRef<str>>(patterns: &[S]) -> Result<Self, ExcludePatternError> {
        let exclude = patterns
            .iter()
            .map(|p| ExcludePattern::parse(p.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(InputSelection { exclude })
    }

    /// True when nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.exclude.is_empty()
    }

    fn excludes(&self, relative: &Path, is_dir: bool) -> bool {
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        self.exclude
            .iter()
            .any(|p| (is_dir || !p.directories_only) && p.glob.matches_path_with(relative, options))
    }
}

impl ExcludePattern {
    fn parse(text: &str) -> Result<Self, ExcludePatternError> {
        let error = |reason: String| ExcludePatternError {
            pattern: text.to_string(),
            reason,
        };
        let (body, directories_only) = match text.strip_suffix('/') {
            Some(body) => (body, true),
            None => (text, false),
        };
        let (body, anchored) = match body.strip_prefix('/') {
            Some(body) => (body, true),
            None => (body, body.contains('/')),
        };
        if body.is_empty() || body.starts_with('/') || body.ends_with('/') {
            return Err(error(
                "an empty pattern, or one of only slashes, matches nothing".into(),
            ));
        }
        let glob_text = if anchored {
            body.to_string()
        } else {
            format!("**/{body}")
        };
        let glob = glob::Pattern::new(&glob_text).map_err(|e| error(e.to_string()))?;
        Ok(ExcludePattern {
            glob,
            directories_only,
        })
    }
}

/// Loads every input with nothing excluded; see [`load_inputs_with`].
pub fn load_inputs(
    inputs: &[PathBuf],
    limits: &Limits,
) -> Result<Vec<ManifestFile>, ManifestError> {
    load_inputs_with(inputs, &InputSelection::default(), limits)
}

/// Loads every input: `-` is stdin; a directory is walked recursively (see the module
/// docs for which files); a quoted glob pattern selects files; anything else is read as a
/// file whatever its extension (an explicit argument is never silently ignored).
pub fn load_inputs_with(
    inputs: &[PathBuf],
    selection: &InputSelection,
    limits: &Limits,
) -> Result<Vec<ManifestFile>, ManifestError> {
    let mut files = Vec::new();
    visit_found_windows(inputs, selection, usize::MAX, None, |found| {
        files.extend(load_found(found, limits)?);
        Ok::<(), ManifestError>(())
    })?;
    Ok(files)
}

/// Files read at once by a streaming caller of [`visit_inputs_with`]: enough to keep the
/// reading threads busy, few enough that memory does not grow with the size of a tree.
pub(crate) const INPUT_WINDOW: usize = 128;

/// One input the walk found: stdin, or a file with its path below its input argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    Stdin,
    File { path: PathBuf, relative: PathBuf },
}

/// The inputs of a run, one at a time and in the order they are read: `-` is stdin, a
/// directory is walked lazily (each directory's entries sorted by name, so that only the
/// directories being walked are in memory, never the list of a whole tree), a glob pattern
/// expands to its sorted matches, anything else is one file. An error (an unreadable path,
/// a file that is not a manifest, a symbolic link loop, an empty directory) is the last
/// item. Walking the same unchanged inputs twice yields the same items.
pub(crate) struct InputWalk<'a> {
    inputs: std::slice::Iter<'a, PathBuf>,
    selection: &'a InputSelection,
    current: Current<'a>,
    failed: bool,
    /// Files of walked directories whose names start with this are passed over: a signing
    /// run's own staged outputs, met by its second walk ([`visit_found_windows`]).
    staged: Option<&'a str>,
    /// Whether the walk goes on after an error (to report every problem of a run at once,
    /// [`visit_loaded_windows`]); else an error is its last item.
    keep_going: bool,
}

type DirWalk<'a> = Box<dyn Iterator<Item = walkdir::Result<walkdir::DirEntry>> + 'a>;

enum Current<'a> {
    Nothing,
    Dir {
        root: PathBuf,
        walker: DirWalk<'a>,
        found_any: bool,
    },
    Matches(std::vec::IntoIter<(PathBuf, PathBuf)>),
}

impl<'a> InputWalk<'a> {
    pub(crate) fn new(inputs: &'a [PathBuf], selection: &'a InputSelection) -> Self {
        InputWalk {
            inputs: inputs.iter(),
            selection,
            current: Current::Nothing,
            failed: false,
            staged: None,
            keep_going: false,
        }
    }

    /// The next item of the current directory or pattern; `None` once it is done.
    fn next_in_current(&mut self) -> Option<Result<Found, ManifestError>> {
        match &mut self.current {
            Current::Nothing => None,
            Current::Matches(matches) => matches
                .next()
                .map(|(path, relative)| Ok(Found::File { path, relative })),
            Current::Dir {
                root,
                walker,
                found_any,
            } => loop {
                let Some(entry) = walker.next() else {
                    if !*found_any {
                        // Reported once: a walk that goes on asks again.
                        *found_any = true;
                        return Some(Err(ManifestError::EmptyDirectory { path: root.clone() }));
                    }
                    return None;
                };
                match walk_entry(root, entry, self.staged) {
                    Ok(None) => continue,
                    Ok(Some(found)) => {
                        *found_any = true;
                        return Some(Ok(found));
                    }
                    Err(e) => {
                        // A directory with a problem is not reported as empty as well (a
                        // walk that goes on meets its end).
                        *found_any = true;
                        return Some(Err(e));
                    }
                }
            },
        }
    }

    /// Starts the next input argument: stdin or a file is its own item; a directory or a
    /// pattern becomes the current walk.
    fn start(&mut self, input: &'a Path) -> Result<Option<Found>, ManifestError> {
        if input.as_os_str() == "-" {
            return Ok(Some(Found::Stdin));
        }
        if is_glob_input(input) {
            let selection = self.selection;
            let found: Vec<_> = expand_glob(input)?
                .into_iter()
                .filter(|(_, relative)| !selection.excludes(relative, false))
                .collect();
            self.current = Current::Matches(found.into_iter());
            return Ok(None);
        }
        let meta = std::fs::metadata(input).map_err(|source| ManifestError::Read {
            path: input.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(ManifestError::NotARegularFile {
                path: input.to_path_buf(),
                kind: file_kind(&meta.file_type()),
            });
        }
        if meta.is_dir() {
            let selection = self.selection;
            let walker = walkdir::WalkDir::new(input)
                .follow_links(true)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(move |e| {
                    e.depth() == 0
                        || !selection
                            .excludes(&relative_to(input, e.path()), e.file_type().is_dir())
                });
            self.current = Current::Dir {
                root: input.to_path_buf(),
                walker: Box::new(walker),
                found_any: false,
            };
            return Ok(None);
        }
        let relative = input
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("manifest.yaml"));
        Ok(Some(Found::File {
            path: input.to_path_buf(),
            relative,
        }))
    }
}

impl Iterator for InputWalk<'_> {
    type Item = Result<Found, ManifestError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = loop {
            if let Some(item) = self.next_in_current() {
                break item;
            }
            self.current = Current::Nothing;
            let input = self.inputs.next()?;
            match self.start(input) {
                Ok(None) => continue,
                Ok(Some(found)) => break Ok(found),
                Err(e) => break Err(e),
            }
        };
        self.failed = item.is_err() && !self.keep_going;
        Some(item)
    }
}

/// A path below a walked directory, relative to it.
fn relative_to(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

/// One entry of a directory walk: a manifest file, nothing (a directory), or the error
/// that ends the walk (a file kubectl would read that is not a manifest, a link loop, an
/// unreadable entry).
fn walk_entry(
    root: &Path,
    entry: walkdir::Result<walkdir::DirEntry>,
    staged: Option<&str>,
) -> Result<Option<Found>, ManifestError> {
    let entry = entry.map_err(|e| {
        if let Some(ancestor) = e.loop_ancestor() {
            return ManifestError::SymlinkLoop {
                path: e.path().map(Path::to_path_buf).unwrap_or_default(),
                ancestor: ancestor.to_path_buf(),
            };
        }
        let path = e
            .path()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.to_path_buf());
        let source = e
            .into_io_error()
            .unwrap_or_else(|| std::io::Error::other("directory walk failed"));
        ManifestError::Read { path, source }
    })?;
    if entry.file_type().is_dir() {
        return Ok(None);
    }
    if let Some(prefix) = staged
        && entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(prefix.as_bytes())
    {
        return Ok(None);
    }
    let file_type = entry.file_type();
    let path = entry.into_path();
    let relative = relative_to(root, &path);
    // The walk follows links, so this is the type of what a link leads to.
    if !file_type.is_file() {
        return Err(ManifestError::NotARegularFile {
            path,
            kind: file_kind(&file_type),
        });
    }
    let is_manifest = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        MANIFEST_EXTENSIONS
            .iter()
            .any(|m| e.eq_ignore_ascii_case(m))
    });
    if !is_manifest {
        return Err(ManifestError::NotAManifestFile { path, relative });
    }
    Ok(Some(Found::File { path, relative }))
}

/// Walks the inputs ([`InputWalk`]) and hands what it finds to `visit` in windows: at most
/// `window` files each, stdin always a window of its own (the files found before it are
/// handed over first). Walking the same unchanged inputs twice gives the same windows. A
/// walk error ends it, after the files found before it were handed over, so the first
/// error in input order is the one a reader of the windows meets. `staged` is the name
/// prefix of the files a signing run staged since its first walk (passed over in walked
/// directories, where they would be files that are not manifests).
pub(crate) fn visit_found_windows<E: From<ManifestError>>(
    inputs: &[PathBuf],
    selection: &InputSelection,
    window: usize,
    staged: Option<&str>,
    mut visit: impl FnMut(Vec<Found>) -> Result<(), E>,
) -> Result<(), E> {
    let window = window.max(1);
    let mut part: Vec<Found> = Vec::new();
    let mut walk = InputWalk::new(inputs, selection);
    walk.staged = staged;
    for found in walk {
        match found {
            Ok(Found::Stdin) => {
                if !part.is_empty() {
                    visit(std::mem::take(&mut part))?;
                }
                visit(vec![Found::Stdin])?;
            }
            Ok(file) => {
                part.push(file);
                if part.len() == window {
                    visit(std::mem::take(&mut part))?;
                }
            }
            Err(e) => {
                if !part.is_empty() {
                    visit(part)?;
                }
                return Err(e.into());
            }
        }
    }
    if !part.is_empty() {
        visit(part)?;
    }
    Ok(())
}

/// Reads one window of [`visit_found_windows`]: its files in parallel and in order
/// (the first failed file's error), stdin from the process's standard input.
pub(crate) fn load_found(
    found: Vec<Found>,
    limits: &Limits,
) -> Result<Vec<ManifestFile>, ManifestError> {
    Ok(load_found_digested(found, limits)?
        .into_iter()
        .map(|(file, _)| file)
        .collect())
}

/// [`load_found`], each file with the SHA-256 of the bytes it was read from.
pub(crate) fn load_found_digested(
    found: Vec<Found>,
    limits: &Limits,
) -> Result<Vec<(ManifestFile, [u8; 32])>, ManifestError> {
    match window_files(found) {
        None => Ok(vec![load_stdin(limits)?]),
        Some(files) => load_files(&files, limits),
    }
}

/// The files of one window (path, path below its argument), or `None` for the window that
/// is stdin (stdin is always a window of its own).
fn window_files(found: Vec<Found>) -> Option<Vec<(PathBuf, PathBuf)>> {
    if found.as_slice() == [Found::Stdin] {
        return None;
    }
    Some(
        found
            .into_iter()
            .filter_map(|f| match f {
                Found::File { path, relative } => Some((path, relative)),
                Found::Stdin => None,
            })
            .collect(),
    )
}

/// The process's standard input, read as one manifest file.
fn load_stdin(limits: &Limits) -> Result<(ManifestFile, [u8; 32]), ManifestError> {
    load_digested(
        Source::Stdin,
        PathBuf::from("stdin.yaml"),
        std::io::stdin().lock(),
        limits,
    )
}

#[cfg(feature = "cli")]
/// Reads the inputs as [`load_inputs_with`] does, in the same order, but hands them to
/// `visit` at most `window` files at a time, drops each window once `visit` returned, and
/// fails with every problem of the inputs ([`visit_loaded_windows`]).
pub(crate) fn visit_inputs_with<E: From<InputProblems>>(
    inputs: &[PathBuf],
    selection: &InputSelection,
    limits: &Limits,
    window: usize,
    mut visit: impl FnMut(Vec<ManifestFile>) -> Result<(), E>,
) -> Result<(), E> {
    visit_loaded_windows(inputs, selection, limits, window, |files| {
        visit(files.into_iter().map(|(file, _)| file).collect())
    })
}

/// Input problems one run reports, each with its own message; more are counted.
pub(crate) const MAX_REPORTED_PROBLEMS: usize = 50;

/// Entries a walk still visits after [`MAX_REPORTED_PROBLEMS`] problems, only to count the
/// problems it meets (a hostile tree of millions of files is not walked to its end).
const MAX_COUNTED_ENTRIES: usize = 1_000_000;

/// Every problem of a run's inputs (files that are not manifests, unreadable files, FIFOs,
/// link loops, files that do not parse or are over a limit), in input order: the first
/// 50, and how many more. A tree with a `README.md`, a `.signed`
/// file and a YAML 1.1 scalar shows all three in one run, not in three.
///
/// After the cap no file is read any more, only walked (at most 1,000,000 more
/// entries): the walk's own problems are still counted exactly, but a
/// file left unread may have had one, so the count is then a lower bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub struct InputProblems {
    /// The first problems, in input order (at least one).
    pub problems: Vec<ManifestError>,
    /// Problems after the first 50.
    pub more: usize,
    /// Whether files were left unread after the cap (`more` is then a lower bound).
    pub more_unread: bool,
}

impl InputProblems {
    fn new() -> Self {
        InputProblems {
            problems: Vec::new(),
            more: 0,
            more_unread: false,
        }
    }

    fn add(&mut self, problem: ManifestError) {
        if self.problems.len() < MAX_REPORTED_PROBLEMS {
            self.problems.push(problem);
        } else {
            self.more += 1;
        }
    }

    /// Whether no more problems are reported, only counted.
    fn full(&self) -> bool {
        self.problems.len() >= MAX_REPORTED_PROBLEMS
    }
}

impl std::fmt::Display for InputProblems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let ([one], 0, false) = (self.problems.as_slice(), self.more, self.more_unread) {
            return write!(f, "{}", crate::error::Chain(one));
        }
        let total = self.problems.len() + self.more;
        let at_least = if self.more_unread { "at least " } else { "" };
        write!(f, "{at_least}{total} problems in the inputs:")?;
        for problem in &self.problems {
            write!(f, "\n  {}", crate::error::Chain(problem))?;
        }
        match (self.more, self.more_unread) {
            (0, false) => Ok(()),
            (more, true) => write!(
                f,
                "\n  ... and at least {more} more (files after the \
                 {MAX_REPORTED_PROBLEMS}th problem were not read)"
            ),
            (more, false) => write!(f, "\n  ... and {more} more"),
        }
    }
}

/// Walks and reads the inputs as [`visit_found_windows`] and [`load_found_digested`] do
/// (each file with the SHA-256 of its bytes), handing `visit` at most `window` files at a
/// time, but goes on after a problem so that the error names every problem of the inputs
/// ([`InputProblems`]). Once there is one, `visit` is not called again (nothing of the
/// run will be used); an error of `visit` itself ends the walk at once.
pub(crate) fn visit_loaded_windows<E: From<InputProblems>>(
    inputs: &[PathBuf],
    selection: &InputSelection,
    limits: &Limits,
    window: usize,
    mut visit: impl FnMut(Vec<(ManifestFile, [u8; 32])>) -> Result<(), E>,
) -> Result<(), E> {
    let window = window.max(1);
    let mut problems = InputProblems::new();
    let mut walk = InputWalk::new(inputs, selection);
    walk.keep_going = true;
    let mut part: Vec<Found> = Vec::new();
    // Reads a window and hands it on, or records its problems.
    let mut flush = |part: Vec<Found>, problems: &mut InputProblems| -> Result<(), E> {
        if part.is_empty() {
            return Ok(());
        }
        if problems.full() {
            problems.more_unread = true;
            return Ok(());
        }
        let mut files = Vec::with_capacity(part.len());
        for loaded in load_each(part, limits) {
            match loaded {
                Ok(file) => files.push(file),
                Err(e) => problems.add(e),
            }
        }
        if problems.problems.is_empty() {
            visit(files)?;
        }
        Ok(())
    };
    let mut counted = 0usize;
    for found in walk.by_ref() {
        if problems.full() {
            counted += 1;
            if counted > MAX_COUNTED_ENTRIES {
                problems.more_unread = true;
                break;
            }
        }
        match found {
            Ok(Found::Stdin) => {
                flush(std::mem::take(&mut part), &mut problems)?;
                flush(vec![Found::Stdin], &mut problems)?;
            }
            Ok(file) => {
                part.push(file);
                if part.len() == window {
                    flush(std::mem::take(&mut part), &mut problems)?;
                }
            }
            Err(e) => {
                // The files found before it come first, in input order.
                flush(std::mem::take(&mut part), &mut problems)?;
                problems.add(e);
            }
        }
    }
    flush(part, &mut problems)?;
    if problems.problems.is_empty() {
        Ok(())
    } else {
        Err(problems.into())
    }
}

/// Reads one window of found inputs, every file of it (in parallel, in order), each to its
/// own result: the files after a bad one are read too, for their own problems.
fn load_each(
    found: Vec<Found>,
    limits: &Limits,
) -> Vec<Result<(ManifestFile, [u8; 32]), ManifestError>> {
    let Some(files) = window_files(found) else {
        return vec![load_stdin(limits)];
    };
    map_in_order(
        &files,
        default_parallelism().min(MAX_LOADER_THREADS),
        |(path, relative)| load_file(path, relative.clone(), limits),
    )
}

/// An input argument that is read as a glob pattern: one with `*`, `?` or `[` that names
/// no existing file (for shells that pass patterns through unexpanded, and for quoted
/// patterns in CI files).
pub(crate) fn is_glob_input(input: &Path) -> bool {
    !input.exists() && is_glob(input)
}

/// Whether a path has `*`, `?` or `[` (see [`is_glob_input`]).
fn is_glob(path: &Path) -> bool {
    path.to_str().is_some_and(|s| s.contains(['*', '?', '[']))
}

/// The directories of a pattern before its first wildcard: `unsigned/team-a/*.yaml` →
/// `unsigned/team-a`. Matches keep their path below it, as files below a directory do.
fn fixed_prefix(pattern: &str) -> PathBuf {
    let mut prefix = PathBuf::new();
    for part in Path::new(pattern).components() {
        let text = part.as_os_str().to_string_lossy();
        if text.contains(['*', '?', '[']) {
            break;
        }
        prefix.push(part);
    }
    prefix
}

/// The regular files a pattern matches, sorted, each with its path below the pattern's
/// fixed prefix; hidden files only if the pattern names them. No match is an error: a
/// pattern that signs nothing is almost always a mistake.
fn expand_glob(pattern: &Path) -> Result<Vec<(PathBuf, PathBuf)>, ManifestError> {
    let text = pattern.to_string_lossy();
    let bad = |reason: String| ManifestError::Read {
        path: pattern.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
    };
    let options = glob::MatchOptions {
        require_literal_leading_dot: true,
        ..glob::MatchOptions::new()
    };
    let prefix = fixed_prefix(&text);
    let mut paths = Vec::new();
    for entry in glob::glob_with(&text, options).map_err(|e| bad(format!("bad pattern: {e}")))? {
        let path = entry.map_err(|e| ManifestError::Read {
            path: e.path().to_path_buf(),
            source: std::io::Error::new(e.error().kind(), e.error().to_string()),
        })?;
        if path.is_file() {
            let relative = path
                .strip_prefix(&prefix)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .or_else(|| path.file_name().map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("manifest.yaml"));
            paths.push((path, relative));
        }
    }
    if paths.is_empty() {
        return Err(bad("pattern matches no files".into()));
    }
    paths.sort();
    Ok(paths)
}

/// Most threads reading files at once: each file's parse is bounded (nodes, bytes), and
/// a few in flight keep a directory of hostile files within a few times that bound.
const MAX_LOADER_THREADS: usize = 4;

/// Reads and parses files on up to [`MAX_LOADER_THREADS`] cores (each file within its own
/// bounds); the files in the given order, or the error of the first one that failed, as a
/// sequential read would report it. Once a file failed, no file after it is started.
fn load_files(
    found: &[(PathBuf, PathBuf)],
    limits: &Limits,
) -> Result<Vec<(ManifestFile, [u8; 32])>, ManifestError> {
    let first_failed = AtomicUsize::new(usize::MAX);
    let numbered: Vec<(usize, &(PathBuf, PathBuf))> = found.iter().enumerate().collect();
    let results = map_in_order(
        &numbered,
        default_parallelism().min(MAX_LOADER_THREADS),
        |(i, (path, relative))| {
            if *i > first_failed.load(Ordering::Relaxed) {
                return None;
            }
            let loaded = load_file(path, relative.clone(), limits);
            if loaded.is_err() {
                first_failed.fetch_min(*i, Ordering::Relaxed);
            }
            Some(loaded)
        },
    );
    let mut files = Vec::with_capacity(results.len());
    // A file is skipped only after an earlier one failed: that error comes first.
    for result in results.into_iter().flatten() {
        files.push(result?);
    }
    Ok(files)
}

/// What a file that is not a regular file is, for [`ManifestError::NotARegularFile`].
fn file_kind(file_type: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_fifo() {
        "named pipe (FIFO)"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "device"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Opens a manifest file for reading without blocking: the walk checked its type, but the
/// path may have been replaced since, and opening a FIFO waits for a writer. With
/// `O_NONBLOCK` the open returns at once, and what it opened is checked before a byte is
/// read (the flag changes nothing for a regular file).
fn open_regular(path: &Path) -> Result<std::fs::File, ManifestError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let read_error = |source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(read_error)?;
    let file_type = file.metadata().map_err(read_error)?.file_type();
    if !file_type.is_file() {
        return Err(ManifestError::NotARegularFile {
            path: path.to_path_buf(),
            kind: file_kind(&file_type),
        });
    }
    Ok(file)
}

/// The SHA-256 of a manifest file's bytes as it is now (opened as the walk opens it, at most
/// `Limits::max_input_bytes` read): what `sign --remove-input` compares with the digest of
/// the bytes it signed.
pub(crate) fn digest_of_file(path: &Path, limits: &Limits) -> Result<[u8; 32], ManifestError> {
    let file = open_regular(path)?;
    let mut hash = Sha256::new();
    let limit = limits.max_input_bytes as u64;
    let read = std::io::copy(&mut file.take(limit + 1), &mut hash).map_err(|source| {
        ManifestError::Read {
            path: path.to_path_buf(),
            source,
        }
    })?;
    if read > limit {
        return Err(ManifestError::TooLarge {
            source_name: path.display().to_string(),
            limit: limits.max_input_bytes,
        });
    }
    Ok(hash.finalize().into())
}

/// `O_NONBLOCK` of Linux (and of the BSDs and macOS, where it is 4): the value
/// `open(2)` takes on the machines mansign is built for, without a dependency on `libc`.
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NONBLOCK: i32 = 4;

fn load_file(
    path: &Path,
    relative: PathBuf,
    limits: &Limits,
) -> Result<(ManifestFile, [u8; 32]), ManifestError> {
    let file = open_regular(path)?;
    load_digested(Source::File(path.to_path_buf()), relative, file, limits)
}

/// Loads the documents of one stream. Every non-empty document must be a Kubernetes
/// object; the error names the source and the document.
pub fn load_reader(
    source: Source,
    relative_path: PathBuf,
    reader: impl Read,
    limits: &Limits,
) -> Result<ManifestFile, ManifestError> {
    load_digested(source, relative_path, reader, limits).map(|(file, _)| file)
}

/// [`load_reader`], and the SHA-256 of the bytes read: what a signing run compares to know
/// that the bytes it signed are the bytes still there.
fn load_digested(
    source: Source,
    relative_path: PathBuf,
    reader: impl Read,
    limits: &Limits,
) -> Result<(ManifestFile, [u8; 32]), ManifestError> {
    let mut bytes = Vec::new();
    let limit = limits.max_input_bytes;
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ManifestError::Read {
            path: PathBuf::from(source.to_string()),
            source: e,
        })?;
    if bytes.len() > limit {
        return Err(ManifestError::TooLarge {
            source_name: source.to_string(),
            limit,
        });
    }
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    let text = String::from_utf8(bytes).map_err(|e| ManifestError::Yaml {
        source_name: source.to_string(),
        error: super::YamlError::Syntax {
            document: 1,
            message: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        },
    })?;
    let parsed = parse_documents(&text, limits).map_err(|error| ManifestError::Yaml {
        source_name: source.to_string(),
        error,
    })?;
    let mut documents = Vec::with_capacity(parsed.len());
    for (position, value) in parsed {
        let not_an_object = |reason| ManifestError::NotAnObject {
            source_name: source.to_string(),
            document: position + 1,
            reason,
        };
        // `kubectl get -o yaml` prints several objects as one `v1 List`: verify its items.
        if is_list(&value) {
            let items = match value.get("items") {
                Some(Value::Array(items)) => items.clone(),
                None | Some(Value::Null) => Vec::new(),
                Some(_) => {
                    return Err(not_an_object(
                        "field `items` of a List must be a list".into(),
                    ));
                }
            };
            for (i, item) in items.into_iter().enumerate() {
                let origin = DocumentOrigin {
                    source: source.clone(),
                    index: position,
                    item: Some(i),
                };
                if has_items(&item) {
                    return Err(not_an_object(format!("items[{i}]: {ITEMS_REASON}")));
                }
                let doc = Document::new(origin, item)
                    .map_err(|e| not_an_object(format!("items[{i}]: {e}")))?;
                documents.push(doc);
            }
            if documents.len() > limits.max_documents {
                return Err(ManifestError::Yaml {
                    source_name: source.to_string(),
                    error: super::YamlError::TooManyDocuments {
                        limit: limits.max_documents,
                    },
                });
            }
            continue;
        }
        let origin = DocumentOrigin {
            source: source.clone(),
            index: position,
            item: None,
        };
        if has_items(&value) {
            return Err(not_an_object(ITEMS_REASON.into()));
        }
        let doc = Document::new(origin, value).map_err(|e| not_an_object(e.to_string()))?;
        documents.push(doc);
    }
    if documents.is_empty() {
        return Err(ManifestError::NoDocuments {
            source_name: source.to_string(),
        });
    }
    Ok((
        ManifestFile {
            source,
            relative_path,
            documents,
        },
        digest,
    ))
}

/// kubectl decodes any object with a top-level `items` field as a list
/// (k8s.io/apimachinery v0.36.3, unstructured/helpers.go, `unstructuredJSONScheme.decode`)
/// and `kubectl apply` then applies its items, not the object (cli-runtime
/// `FlattenListVisitor`). Only a `v1 List` is read that way here too; any other object with
/// `items` is refused, since what was signed would not be what kubectl sends (issue 22).
fn has_items(value: &Value) -> bool {
    value.as_object().is_some_and(|o| o.contains_key("items"))
}

const ITEMS_REASON: &str = "has a top-level `items` field, so kubectl reads it as a list and \
     applies its items instead of this object; only `apiVersion: v1, kind: List` lists are \
     signed (one signature per item)";

/// A `v1 List` (what `kubectl get -o yaml` prints for several objects).
fn is_list(value: &Value) -> bool {
    value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excluded(patterns: &[&str], path: &str, is_dir: bool) -> bool {
        InputSelection::with_excludes(patterns)
            .unwrap()
            .excludes(Path::new(path), is_dir)
    }

    #[test]
    fn an_exclude_pattern_without_a_slash_matches_a_name_at_any_depth() {
        assert!(excluded(&["*.md"], "README.md", false));
        assert!(excluded(&["*.md"], "sub/README.md", false));
        assert!(excluded(&["*.md"], "a/b/c/NOTES.md", false));
        assert!(excluded(&["README.md"], "sub/README.md", false));
        assert!(excluded(&["docs"], "team/docs", true));
        assert!(!excluded(&["*.md"], "sub/README.md.yaml", false));
        assert!(!excluded(&["*.md"], "sub/md", false));
    }

    #[test]
    fn an_exclude_pattern_with_a_slash_is_anchored_at_the_directory_argument() {
        assert!(excluded(
            &["/kustomization.yaml"],
            "kustomization.yaml",
            false
        ));
        assert!(!excluded(
            &["/kustomization.yaml"],
            "base/kustomization.yaml",
            false
        ));
        assert!(excluded(&["docs/*.yaml"], "docs/a.yaml", false));
        assert!(!excluded(&["docs/*.yaml"], "team/docs/a.yaml", false));
        // `*` does not cross a `/`; `**` does
        assert!(!excluded(&["docs/*.yaml"], "docs/deep/a.yaml", false));
        assert!(excluded(&["docs/**/*.yaml"], "docs/deep/a.yaml", false));
    }

    #[test]
    fn an_exclude_pattern_with_a_trailing_slash_matches_directories_only() {
        assert!(excluded(&["generated/"], "generated", true));
        assert!(excluded(&["generated/"], "x/generated", true));
        assert!(!excluded(&["generated/"], "generated", false));
    }

    #[test]
    fn an_empty_or_malformed_exclude_pattern_is_refused_naming_it() {
        for bad in ["", "/", "//", "a/["] {
            let e = InputSelection::with_excludes(&[bad]).unwrap_err();
            assert_eq!(e.pattern, bad);
            assert!(
                e.to_string().starts_with(&format!("--exclude {bad:?}: ")),
                "{e}"
            );
        }
    }

    /// Loads `text` as standard input with the default limits.
    fn load(text: &str) -> Result<ManifestFile, ManifestError> {
        load_reader(
            Source::Stdin,
            "x".into(),
            text.as_bytes(),
            &Limits::default(),
        )
    }

    #[test]
    fn v1_lists_are_expanded_into_their_items() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n";
        let f = load(text).unwrap();
        let names: Vec<&str> = f
            .documents
            .iter()
            .map(|d| d.identity.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn list_items_that_are_not_objects_are_named() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata: {name: a}\n";
        let err = load(text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "<stdin>: document 1: not a Kubernetes object: items[0]: missing field `kind`"
        );
    }

    // kubectl applies the items of any object with `items`, not the object (issue 22).
    #[test]
    fn objects_kubectl_reads_as_lists_are_refused() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
        for text in [
            format!("{cm}items: []\n"),
            format!("{cm}items:\n- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: b}}}}\n"),
            format!("{cm}items: null\n"),
            "apiVersion: v1\nkind: ConfigMapList\nmetadata: {name: a}\nitems: []\n".into(),
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  metadata: {name: a}\n  items: []\n".into(),
        ] {
            let err = load(&text).unwrap_err().to_string();
            assert!(err.contains("kubectl reads it as a list"), "{text}: {err}");
        }
        assert!(load(&format!("{cm}data: {{items: x}}\n")).is_ok());
    }
}

#[cfg(test)]
mod parallel_tests {
    use super::*;

    fn config_map(i: usize) -> String {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n")
    }

    #[test]
    fn a_directory_read_on_several_threads_keeps_file_order() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..64 {
            std::fs::write(dir.path().join(format!("{i:03}.yaml")), config_map(i)).unwrap();
        }
        let files = load_inputs(&[dir.path().to_path_buf()], &Limits::default()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.relative_path.display().to_string())
            .collect();
        let expected: Vec<String> = (0..64).map(|i| format!("{i:03}.yaml")).collect();
        assert_eq!(names, expected);
        for (i, f) in files.iter().enumerate() {
            assert_eq!(f.documents[0].value["metadata"]["name"], format!("cm-{i}"));
        }
    }

    /// A FIFO is refused, in a tree, through a link and as an argument, without waiting for
    /// a writer (the loads run on a thread: a regression hangs there, and fails here).
    #[test]
    fn files_that_are_not_regular_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), config_map(0)).unwrap();
        let fifo = dir.path().join("pipe.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&fifo, linked.path().join("link.yaml")).unwrap();
        for (input, named) in [
            (dir.path().to_path_buf(), fifo.clone()),
            (linked.path().to_path_buf(), linked.path().join("link.yaml")),
            (fifo.clone(), fifo.clone()),
        ] {
            let (done, result) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = done.send(load_inputs(&[input], &Limits::default()).map(|_| ()));
            });
            let err = result
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("the load returned without waiting for a writer")
                .unwrap_err();
            assert!(
                matches!(&err, ManifestError::NotARegularFile { path, kind: "named pipe (FIFO)" } if *path == named),
                "{err}"
            );
        }
        // And a file replaced by a FIFO after the walk: opened without blocking, refused.
        let err = open_regular(&fifo).unwrap_err();
        assert!(
            matches!(err, ManifestError::NotARegularFile { .. }),
            "{err}"
        );
    }

    /// The problems of `visit_loaded_windows` over `root`, and the files it handed on.
    #[cfg(feature = "cli")]
    fn problems_of(root: &Path) -> (InputProblems, usize) {
        let mut visited = 0;
        let err = visit_loaded_windows(
            &[root.to_path_buf()],
            &InputSelection::default(),
            &Limits::default(),
            INPUT_WINDOW,
            |files| {
                visited += files.len();
                Ok::<(), InputProblems>(())
            },
        )
        .expect_err("the tree has problems");
        (err, visited)
    }

    // Issue 39 item 9: a README.md, a `.signed` file, a YAML 1.1 scalar and a duplicate key
    // are four problems, reported in one run, in input order, each with its own message.
    #[cfg(feature = "cli")]
    #[test]
    fn every_problem_of_a_tree_is_reported_at_once_in_input_order() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("README.md", "# notes\n");
        write("a.yaml", &config_map(1));
        write(
            "b.yaml",
            &format!("{}data:\n  enabled: on\n", config_map(2)),
        );
        write("c.yaml.signed", &config_map(3));
        write("team/d.yaml", &format!("{}  name: again\n", config_map(4)));
        write("team/e.yaml", &config_map(5));
        let (err, visited) = problems_of(dir.path());
        let messages: Vec<String> = err
            .problems
            .iter()
            .map(|e| crate::error::chain(e))
            .collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(
            messages[0].contains("README.md: not a manifest file"),
            "{messages:#?}"
        );
        assert!(
            messages[1].contains(
                "b.yaml: document 1, data.enabled (line 6, column 12): plain scalar `on`"
            ),
            "{messages:#?}"
        );
        assert!(
            messages[2].contains("c.yaml.signed: not a manifest file"),
            "{messages:#?}"
        );
        assert!(
            messages[3].contains("d.yaml") && messages[3].contains("duplicate key \"name\""),
            "{messages:#?}"
        );
        assert_eq!((err.more, err.more_unread), (0, false));
        let text = err.to_string();
        assert!(text.starts_with("4 problems in the inputs:\n  "), "{text}");
        assert!(!text.contains("more"), "{text}");
        assert_eq!(visited, 0, "nothing is handed on once there is a problem");
    }

    #[cfg(feature = "cli")]
    #[test]
    fn one_problem_reads_as_it_always_did() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), config_map(1)).unwrap();
        std::fs::write(dir.path().join("README.md"), "x").unwrap();
        let (err, _) = problems_of(dir.path());
        assert_eq!(err.problems.len(), 1);
        assert_eq!(err.to_string(), err.problems[0].to_string());
        // And an empty directory once, not again and again.
        let empty = tempfile::tempdir().unwrap();
        let (err, _) = problems_of(empty.path());
        assert_eq!(
            err.to_string(),
            format!(
                "{}: no .yaml, .yml or .json files found",
                empty.path().display()
            )
        );
    }

    // The cap: 50 problems named, the rest counted exactly when the walk found them all.
    #[cfg(feature = "cli")]
    #[test]
    fn problems_past_the_cap_are_counted_exactly_when_nothing_was_left_unread() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_REPORTED_PROBLEMS + 73) {
            std::fs::write(dir.path().join(format!("{i:03}.md")), "x").unwrap();
        }
        let (err, _) = problems_of(dir.path());
        assert_eq!(err.problems.len(), MAX_REPORTED_PROBLEMS);
        assert_eq!((err.more, err.more_unread), (73, false));
        let text = err.to_string();
        assert!(text.starts_with("123 problems in the inputs:\n"), "{text}");
        assert!(text.ends_with("\n  ... and 73 more"), "{text}");
        assert_eq!(
            text.lines().count(),
            1 + MAX_REPORTED_PROBLEMS + 1,
            "{text}"
        );
    }

    // A tree of bad files is not read to its end: past the cap, files are walked, not read,
    // and the count says it is a lower bound.
    #[cfg(feature = "cli")]
    #[test]
    fn files_past_the_cap_are_not_read_and_the_count_is_a_lower_bound() {
        let dir = tempfile::tempdir().unwrap();
        let files = 3 * INPUT_WINDOW;
        for i in 0..files {
            std::fs::write(dir.path().join(format!("{i:04}.yaml")), "kind: [unclosed\n").unwrap();
        }
        std::fs::write(dir.path().join("zz.md"), "x").unwrap();
        let (err, _) = problems_of(dir.path());
        assert_eq!(err.problems.len(), MAX_REPORTED_PROBLEMS);
        // The first window was read whole (its problems counted exactly), the other two
        // were not read; the walk's own problem after them is still counted.
        assert_eq!(err.more, INPUT_WINDOW - MAX_REPORTED_PROBLEMS + 1);
        assert!(err.more_unread);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "at least {} problems in the inputs:",
                INPUT_WINDOW + 1
            )),
            "{text}"
        );
        assert!(
            text.ends_with(&format!(
                "... and at least {} more (files after the 50th problem were not read)",
                INPUT_WINDOW - MAX_REPORTED_PROBLEMS + 1
            )),
            "{text}"
        );
    }

    #[test]
    fn the_first_bad_file_in_order_is_the_one_reported() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..64 {
            let text = if i == 10 || i == 30 || i == 63 {
                "kind: [unclosed\n".to_string()
            } else {
                config_map(i)
            };
            std::fs::write(dir.path().join(format!("{i:03}.yaml")), text).unwrap();
        }
        for _ in 0..5 {
            let err = load_inputs(&[dir.path().to_path_buf()], &Limits::default()).unwrap_err();
            assert!(err.to_string().contains("010.yaml"), "{err}");
        }
    }
}
