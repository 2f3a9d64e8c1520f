//! Writing outputs atomically: every output goes to a temporary file beside its target
//! first; targets are replaced only after every temporary file was written, so a failed
//! run leaves no partial output.

use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where one output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

/// Writes all outputs, all or nothing (as far as the file system allows: renames happen
/// last, one after the other).
pub fn write_all(outputs: Vec<(Target, String)>) -> anyhow::Result<()> {
    let mut staged = Vec::new();
    let mut stdout_text = String::new();
    for (target, text) in outputs {
        match target {
            Target::Stdout => stdout_text.push_str(&text),
            Target::File(path) => {
                let dir = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                std::fs::create_dir_all(&dir).with_context(|| {
                    format!("{}: cannot create output directory", dir.display())
                })?;
                let mut tmp = tempfile::Builder::new()
                    .prefix(".mansign-")
                    .suffix(".tmp")
                    .tempfile_in(&dir)
                    .with_context(|| {
                        format!("{}: output directory is not writable", dir.display())
                    })?;
                tmp.write_all(text.as_bytes())
                    .and_then(|_| tmp.as_file().sync_all())
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                staged.push((tmp, path));
            }
        }
    }
    for (tmp, path) in staged {
        set_readable(tmp.path());
        tmp.persist(&path)
            .with_context(|| format!("{}: cannot write", path.display()))?;
    }
    if !stdout_text.is_empty() {
        let mut out = std::io::stdout().lock();
        out.write_all(stdout_text.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

/// tempfile creates files with mode 0600; signed manifests are not secrets.
fn set_readable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644));
    }
}

/// Writes a secret file (private key) atomically with mode 0600, refusing to overwrite
/// unless `force`.
pub fn write_new_file(path: &Path, text: &str, force: bool, secret: bool) -> anyhow::Result<()> {
    if path.exists() && !force {
        bail!(
            "{}: already exists (use --force to overwrite)",
            path.display()
        );
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".mansign-")
        .tempfile_in(&dir)
        .with_context(|| format!("{}: directory is not writable", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .with_context(|| format!("{}: cannot write", path.display()))?;
    if !secret {
        set_readable(tmp.path());
    }
    tmp.persist(path)
        .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
}
