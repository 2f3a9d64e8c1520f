//! The first pass of `mansign sign`: every input is read and parsed once, window by window,
//! before an identity token is spent or anything is signed, and what the run will write is
//! decided from it: the output of each file, the `--bundle-out` files of each signature.
//! A bad file, a clash of outputs or a directory in an output's place fails here.
//!
//! Only what the run needs of each file is kept (its source, its path below its argument,
//! how many documents it holds), not the documents: a tree of 100,000 files is read again,
//! window by window, when it is signed ([`Plan::window`]). A run of one window keeps its
//! files and reads nothing twice; stdin, which cannot be read twice, is always kept.

use super::output::{Target, refuse_directory};
use crate::limits::Limits;
use crate::manifest::{INPUT_WINDOW, InputSelection, ManifestFile, Source, load_paths};
use crate::signing::SignScope;
use anyhow::bail;
use std::collections::VecDeque;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Documents signed in one window at most (one signer call: a Rekor entry each for a logged
/// signer), unless a single file holds more.
const WINDOW_DOCUMENTS: usize = 1024;

/// One input file as the first pass read it.
pub(super) struct PlannedFile {
    pub source: Source,
    /// Its path below its input argument (mirrored below an output directory).
    pub relative_path: PathBuf,
    /// How many documents it held.
    pub documents: usize,
}

/// What `--bundle-out` writes for one signature: the Sigstore bundle, and beside it the
/// signed message M (the bundle's artifact).
pub(super) struct BundleFiles {
    /// `<name>.sigstore.json`
    pub bundle: PathBuf,
    /// `<name>.message`
    pub message: PathBuf,
}

/// Every input of a run, where each goes, and the files kept from the first pass.
pub(super) struct Plan {
    pub files: Vec<PlannedFile>,
    /// The output of each file, in the order of `files`.
    pub targets: Vec<Target>,
    /// The `--bundle-out` files, one pair per signature, in signing order.
    pub bundles: Option<Vec<BundleFiles>>,
    /// Files read by the first pass and not to be read again, by their index in `files`.
    kept: VecDeque<(usize, ManifestFile)>,
}

impl Plan {
    /// Reads every input (see the module docs) and plans the outputs; `bundle_dir` is
    /// `--bundle-out`.
    pub fn read(
        inputs: &[PathBuf],
        selection: &InputSelection,
        limits: &Limits,
        output: Option<&str>,
        bundle_dir: Option<&Path>,
        scope: SignScope,
    ) -> anyhow::Result<Plan> {
        let mut files = Vec::new();
        let mut kept = VecDeque::new();
        // Files are kept until the run outgrows one window (in files or documents); stdin
        // always.
        let mut keep_all = true;
        let mut documents = 0;
        crate::manifest::visit_inputs_with(inputs, selection, limits, INPUT_WINDOW, |window| {
            for file in window {
                let index = files.len();
                documents += file.documents.len();
                files.push(PlannedFile {
                    source: file.source.clone(),
                    relative_path: file.relative_path.clone(),
                    documents: file.documents.len(),
                });
                if keep_all || !matches!(file.source, Source::File(_)) {
                    kept.push_back((index, file));
                }
            }
            if keep_all && (files.len() > INPUT_WINDOW || documents > WINDOW_DOCUMENTS) {
                keep_all = false;
                kept.retain(|(_, f)| !matches!(f.source, Source::File(_)));
            }
            Ok::<(), anyhow::Error>(())
        })?;
        let targets = plan_targets(&files, output)?;
        for target in &targets {
            refuse_directory(target)?;
        }
        let bundles = match bundle_dir {
            Some(dir) => Some(plan_bundles(dir, &files, &targets, scope)?),
            None => None,
        };
        Ok(Plan {
            files,
            targets,
            bundles,
            kept,
        })
    }

    /// How many documents the run signs.
    pub fn documents(&self) -> usize {
        self.files.iter().map(|f| f.documents).sum()
    }

    /// The windows of the second pass: ranges of `files`, at most [`INPUT_WINDOW`] files
    /// and, unless one file holds more, at most [`WINDOW_DOCUMENTS`] documents each (a file
    /// may hold up to `Limits::max_documents`: 128 such files would be one huge batch).
    pub fn windows(&self) -> Vec<Range<usize>> {
        let mut windows = Vec::new();
        let (mut start, mut documents) = (0, 0);
        for (index, file) in self.files.iter().enumerate() {
            let full =
                index - start == INPUT_WINDOW || documents + file.documents > WINDOW_DOCUMENTS;
            if index > start && full {
                windows.push(start..index);
                (start, documents) = (index, 0);
            }
            documents += file.documents;
        }
        if start < self.files.len() {
            windows.push(start..self.files.len());
        }
        windows
    }

    /// The files of one window (in order): the ones kept from the first pass, the others
    /// read again. A file that no longer holds the documents the first pass counted
    /// changed during the run, and is refused: its outputs were planned from that count.
    pub fn window(
        &mut self,
        range: Range<usize>,
        limits: &Limits,
    ) -> anyhow::Result<Vec<ManifestFile>> {
        // The kept files are in index order, and those of earlier windows are taken.
        let kept: Vec<usize> = self
            .kept
            .iter()
            .map(|(i, _)| *i)
            .take_while(|i| *i < range.end)
            .collect();
        let mut again = Vec::new();
        for index in range.clone() {
            if kept.binary_search(&index).is_ok() {
                continue;
            }
            match &self.files[index].source {
                Source::File(path) => {
                    again.push((path.clone(), self.files[index].relative_path.clone()))
                }
                other => bail!("{other}: cannot be read twice"),
            }
        }
        let mut read = load_paths(&again, limits)?.into_iter();
        let mut window = Vec::with_capacity(range.len());
        for index in range {
            let file = match self.kept.front() {
                Some((i, _)) if *i == index => self.kept.pop_front().map(|(_, f)| f),
                _ => read.next(),
            };
            let Some(file) = file else {
                bail!("{}: cannot be read again", self.files[index].source);
            };
            let planned = &self.files[index];
            if file.documents.len() != planned.documents {
                bail!(
                    "{}: changed during the run ({} document(s) when first read, {} now); \
                     nothing was written",
                    planned.source,
                    planned.documents,
                    file.documents.len()
                );
            }
            window.push(file);
        }
        Ok(window)
    }
}

/// Decides where each file goes before anything is signed, so a bad `-o` fails early.
fn plan_targets(files: &[PlannedFile], output: Option<&str>) -> anyhow::Result<Vec<Target>> {
    match output {
        None => Ok(files
            .iter()
            .map(|f| match &f.source {
                Source::File(p) => {
                    let mut s = p.clone().into_os_string();
                    s.push(".signed");
                    Target::File(PathBuf::from(s))
                }
                _ => Target::Stdout,
            })
            .collect()),
        Some("-") => Ok(vec![Target::Stdout; files.len()]),
        Some(o) if o.ends_with('/') || std::path::Path::new(o).is_dir() => {
            let dir = PathBuf::from(o);
            let mut seen = std::collections::HashSet::new();
            let mut targets = Vec::new();
            for f in files {
                let t = dir.join(&f.relative_path);
                if !seen.insert(t.clone()) {
                    bail!(
                        "two inputs would be written to {}: sign them in separate runs or pass their directory",
                        t.display()
                    );
                }
                targets.push(Target::File(t));
            }
            Ok(targets)
        }
        Some(o) => {
            if files.len() != 1 {
                bail!(
                    "-o {o}: {} input files but one output file; use a directory (`-o DIR/`)",
                    files.len()
                );
            }
            Ok(vec![Target::File(PathBuf::from(o))])
        }
    }
}

/// Bundle and message paths in `dir`, one pair per signed message, decided before anything
/// is signed. They are named after the output file name only, so inputs with the same name
/// in different directories would share a bundle file and one would silently replace the
/// other: that is refused here, before a token or certificate is spent.
fn plan_bundles(
    dir: &Path,
    files: &[PlannedFile],
    targets: &[Target],
    scope: SignScope,
) -> anyhow::Result<Vec<BundleFiles>> {
    let mut seen = std::collections::HashSet::new();
    let mut planned = Vec::new();
    for name in bundle_names(files, targets, scope) {
        let bundle = dir.join(format!("{name}.sigstore.json"));
        if !seen.insert(bundle.clone()) {
            bail!(
                "--bundle-out: two signatures would be written to {} (bundles are named after \
                 the output file name); sign files with the same name in separate runs",
                bundle.display()
            );
        }
        planned.push(BundleFiles {
            bundle,
            message: dir.join(format!("{name}.message")),
        });
    }
    Ok(planned)
}

/// The name stem of each signature's bundle and message, in the order `sign_files` builds
/// messages: `<output file name>.<document number, from 1>`, or `<output file name>` with
/// `--scope file`.
fn bundle_names(files: &[PlannedFile], targets: &[Target], scope: SignScope) -> Vec<String> {
    let mut names = Vec::new();
    for (file, target) in files.iter().zip(targets) {
        let base = match target {
            Target::File(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "output".to_string()),
            Target::Stdout => match &file.source {
                Source::File(p) => p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "stdout".to_string()),
                _ => "stdout".to_string(),
            },
        };
        match scope {
            SignScope::Document => {
                // Numbered from 1, as documents are everywhere else.
                for i in 1..=file.documents {
                    names.push(format!("{base}.{i}"));
                }
            }
            SignScope::File => names.push(base),
        }
    }
    names
}

/// Outputs listed by name in the summary line at most; more are summarised as a count and
/// the directory they were written to.
const LISTED_OUTPUTS: usize = 3;

/// Where a run wrote, for the summary line: the outputs themselves when there are few,
/// else their count and the directory that holds them all (`-v` and `--format json` list
/// every one).
pub(super) fn where_written(targets: &[Target], verbose: bool) -> String {
    if targets.len() <= LISTED_OUTPUTS {
        let shown: Vec<String> = targets.iter().map(show_target).collect();
        return shown.join(", ");
    }
    let files: Vec<&Path> = targets
        .iter()
        .filter_map(|t| match t {
            Target::File(p) => Some(p.as_path()),
            Target::Stdout => None,
        })
        .collect();
    let more = if verbose {
        "listed above"
    } else {
        "-v or --format json lists them"
    };
    if files.len() != targets.len() {
        return format!("{} outputs, to files and stdout ({more})", targets.len());
    }
    let dir = common_dir(&files);
    let dir = if dir.as_os_str().is_empty() {
        ".".to_string()
    } else {
        format!("{}/", dir.display())
    };
    format!("{} files in {dir} ({more})", files.len())
}

/// The deepest directory that holds every file (empty: the current directory).
fn common_dir(files: &[&Path]) -> PathBuf {
    let mut common: Option<PathBuf> = None;
    for file in files {
        let parent = file.parent().unwrap_or(Path::new(""));
        common = Some(match common {
            None => parent.to_path_buf(),
            Some(c) => c
                .components()
                .zip(parent.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common.unwrap_or_default()
}

/// How the summary and the report name an output.
pub(super) fn show_target(t: &Target) -> String {
    match t {
        Target::Stdout => "<stdout>".to_string(),
        Target::File(p) => p.display().to_string(),
    }
}

/// Deletes the input files (after every output was written). An input that is also an
/// output is kept.
pub(super) fn remove_inputs(plan: &Plan, verbose: bool) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let outputs: std::collections::HashSet<PathBuf> = plan
        .targets
        .iter()
        .filter_map(|t| match t {
            Target::File(p) => Some(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
            Target::Stdout => None,
        })
        .collect();
    for file in &plan.files {
        let Source::File(path) = &file.source else {
            continue;
        };
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if outputs.contains(&canonical) {
            continue;
        }
        std::fs::remove_file(path)
            .with_context(|| format!("{}: signed, but cannot remove the input", path.display()))?;
        if verbose {
            eprintln!("removed {}", path.display());
        }
    }
    Ok(())
}
