//! Writing outputs atomically (the library's staging: every output goes to a temporary
//! file beside its target first; targets are replaced only after every temporary file was
//! written, so a failed run leaves no partial output), and printing on stdout.

pub(crate) use crate::signing::tree::Target;
use crate::signing::tree::staging::{Staging, refuse_directory, stage};
pub(crate) use crate::signing::tree::staging::{parent_dir, set_readable};
use anyhow::{Context, bail};
use std::io::Write;
use std::path::Path;

/// Writes all outputs, all or nothing (as far as the file system allows: renames happen
/// last, one after the other).
pub fn write_all(outputs: Vec<(Target, String)>) -> anyhow::Result<()> {
    // A directory in a target's place would only fail at its rename, after the targets
    // before it were replaced.
    for (target, _) in &outputs {
        refuse_directory(target)?;
    }
    let mut staging = Staging::new();
    for (target, text) in outputs {
        staging.add(&target, &text)?;
    }
    Ok(staging.commit()?)
}

/// A failed write to stdout: a closed pipe says so, anything else is the error itself.
fn stdout_error(e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => {
            anyhow::anyhow!("stdout was closed before the output was written")
        }
        _ => anyhow::Error::new(e).context("cannot write to stdout"),
    }
}

/// Writes bytes to stdout as they are ([`copy_stdout`]).
pub fn print_stdout_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    copy_stdout(bytes)
}

/// Prints data on stdout (signed manifests, verified documents, a response body), copied
/// in pieces from `reader`: a closed stdout (`... | head -1`) is an error, so that nothing
/// after it (`sign --remove-input`) acts as if the data had been delivered. Never a panic,
/// as `println!` would be.
pub fn copy_stdout(mut reader: impl std::io::Read) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    std::io::copy(&mut reader, &mut out)
        .and_then(|_| out.flush())
        .map_err(stdout_error)
}

/// [`print_report`] of what `reader` yields, copied in pieces.
pub fn copy_report(mut reader: impl std::io::Read) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match std::io::copy(&mut reader, &mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map(|_| ()).context("cannot write to stdout"),
    }
}

/// Prints a report on stdout (a verdict, an explanation, a completion script, the
/// version). A reader that stopped reading (`mansign completion zsh | head -1`) is not an
/// error: the rest is dropped and the command ends with its own outcome (a failed
/// verification still exits 1).
pub fn print_report(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}

/// One file of [`write_new_files`]: path, contents, and whether it is a secret (mode 0600).
pub struct NewFile<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub secret: bool,
}

/// Writes new files (a key pair) all or nothing, as far as the file system allows: every
/// target is checked and every temporary file written (secrets with mode 0600) before
/// the first one is renamed into place. Refuses to overwrite unless `force`, and never
/// replaces a directory.
pub fn write_new_files(files: &[NewFile<'_>], force: bool) -> anyhow::Result<()> {
    for f in files {
        if f.path.is_dir() {
            bail!("{}: is a directory", f.path.display());
        }
        if f.path.exists() && !force {
            bail!(
                "{}: already exists (use --force to overwrite)",
                f.path.display()
            );
        }
    }
    let mut staged = Vec::new();
    for f in files {
        staged.push((stage(f.path, f.text, f.secret, ".mansign-")?, f.path));
    }
    for (tmp, path) in staged {
        tmp.persist(path)
            .with_context(|| format!("{}: cannot write", path.display()))?;
    }
    Ok(())
}
