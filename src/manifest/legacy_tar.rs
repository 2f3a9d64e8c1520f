//! Legacy kubectl-sigstore tarball messages (`--tarball=yes`, deprecated upstream).
//!
//! M is a gzipped tar of the signed files. Nothing is written to disk; still, every entry
//! name is untrusted: `..` components and absolute names are refused, except the one shape
//! kubectl-sigstore itself writes (the absolute path of its temporary copy,
//! `<tmp>/compressing-tar-gz<digits>/<relative path>`, research §1.5; Kyverno's fixtures
//! have `compressing-tar-gz-<hex>`), which is reduced to
//! the relative part. Only regular files and directories are accepted (upstream errors on
//! other types too); sizes and entry counts are bounded, and so is the decompressed total,
//! so a gzip bomb stops at the limit.

use crate::limits::Limits;
use flate2::read::MultiGzDecoder;
use std::io::Read;

/// Why a legacy tar.gz message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LegacyTarError {
    #[error("not a valid tar.gz: {0}")]
    Corrupt(String),
    #[error("entry {name:?}: path escapes the archive (`..` component)")]
    ParentTraversal { name: String },
    #[error("entry {name:?}: absolute path")]
    AbsolutePath { name: String },
    #[error("entry {name:?}: {kind} entries are not allowed, only regular files and directories")]
    ForbiddenEntryType { name: String, kind: String },
    #[error("decompressed archive exceeds the limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("more than {limit} entries")]
    TooManyEntries { limit: usize },
}

/// A YAML file found in the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarFile {
    /// Entry name reduced to a relative path.
    pub name: String,
    pub content: Vec<u8>,
}

/// Returns the `.yaml`/`.yml` regular files of the archive, in archive order.
pub fn read_yaml_files(tar_gz: &[u8], limits: &Limits) -> Result<Vec<TarFile>, LegacyTarError> {
    // The whole decompressed stream is bounded, not just each entry: the tar reader
    // would otherwise happily skip over gigabytes of padding or ignored entries.
    let limit = limits.max_message_bytes;
    let decoder = MultiGzDecoder::new(tar_gz).take(limit as u64 + 1);
    let mut tar_bytes = Vec::new();
    let mut decoder = decoder;
    decoder
        .read_to_end(&mut tar_bytes)
        .map_err(|e| LegacyTarError::Corrupt(e.to_string()))?;
    if tar_bytes.len() > limit {
        return Err(LegacyTarError::TooLarge { limit });
    }
    let mut archive = tar::Archive::new(tar_bytes.as_slice());
    let entries = archive
        .entries()
        .map_err(|e| LegacyTarError::Corrupt(e.to_string()))?;
    let mut files = Vec::new();
    for (count, entry) in entries.enumerate() {
        if count >= limits.max_tar_entries {
            return Err(LegacyTarError::TooManyEntries {
                limit: limits.max_tar_entries,
            });
        }
        let mut entry = entry.map_err(|e| LegacyTarError::Corrupt(e.to_string()))?;
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let name = safe_name(&raw_name)?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(LegacyTarError::ForbiddenEntryType {
                name: raw_name,
                kind: entry_kind_name(kind),
            });
        }
        if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
            continue;
        }
        let mut content = Vec::new();
        entry
            .read_to_end(&mut content)
            .map_err(|e| LegacyTarError::Corrupt(e.to_string()))?;
        files.push(TarFile { name, content });
    }
    Ok(files)
}

fn entry_kind_name(kind: tar::EntryType) -> String {
    match kind {
        tar::EntryType::Symlink => "symlink".into(),
        tar::EntryType::Link => "hard link".into(),
        tar::EntryType::Char => "character device".into(),
        tar::EntryType::Block => "block device".into(),
        tar::EntryType::Fifo => "fifo".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// Reduces an entry name to a clean relative path or refuses it.
fn safe_name(raw: &str) -> Result<String, LegacyTarError> {
    let mut parts: Vec<&str> = raw
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(LegacyTarError::ParentTraversal { name: raw.into() });
    }
    if raw.starts_with('/') || raw.contains('\\') || raw.contains(':') {
        // kubectl-sigstore's own temp-copy prefix is the only absolute shape accepted.
        let marker = parts.iter().position(|p| {
            // Go's os.MkdirTemp suffix: digits (kubectl-sigstore), or `-` and hex digits
            // (the Kyverno conformance fixtures' signer).
            p.strip_prefix("compressing-tar-gz").is_some_and(|d| {
                d.chars().all(|c| c.is_ascii_digit())
                    || d.strip_prefix('-')
                        .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
            })
        });
        match marker {
            Some(i) if raw.starts_with('/') => parts.drain(..=i).for_each(drop),
            _ => return Err(LegacyTarError::AbsolutePath { name: raw.into() }),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    fn tar_gz(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        let tar = b.into_inner().unwrap();
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn file_header(name: &[u8], size: usize, kind: tar::EntryType) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        // Write the raw name so that hostile names survive (set_path refuses `..`).
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_size(size as u64);
        h.set_entry_type(kind);
        h.set_mode(0o644);
        h.set_cksum();
        h
    }

    /// A tar.gz of regular files (name, content).
    fn tar_of(files: &[(&[u8], &[u8])]) -> Vec<u8> {
        tar_gz(|b| {
            for (name, content) in files {
                let h = file_header(name, content.len(), tar::EntryType::Regular);
                b.append(&h, *content).unwrap();
            }
        })
    }

    /// Why reading `data` with the default limits fails.
    fn read_err(data: &[u8]) -> LegacyTarError {
        read_yaml_files(data, &Limits::default()).unwrap_err()
    }

    #[test]
    fn reads_regular_yaml_files_and_strips_upstream_temp_prefix() {
        let body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
        let data = tar_of(&[
            (
                b"/var/folders/x/T/compressing-tar-gz834304261/dir/a.yaml",
                body,
            ),
            (b"notes.txt", b"hi"),
        ]);
        let files = read_yaml_files(&data, &Limits::default()).unwrap();
        assert_eq!(
            files,
            vec![TarFile {
                name: "dir/a.yaml".into(),
                content: body.to_vec()
            }]
        );
    }

    #[test]
    fn strips_dash_hex_temp_prefix_of_kyverno_fixtures() {
        let body = b"apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n";
        let data = tar_of(&[(
            b"/var/folders/y5/T/compressing-tar-gz-e0e9325763d2/resource-sig-tmp.yaml",
            body,
        )]);
        let files = read_yaml_files(&data, &Limits::default()).unwrap();
        assert_eq!(files[0].name, "resource-sig-tmp.yaml");
    }

    #[test]
    fn rejects_temp_prefix_lookalikes() {
        for name in [
            &b"/tmp/compressing-tar-gz-/a.yaml"[..],
            b"/tmp/compressing-tar-gz-xyz/a.yaml",
            b"/tmp/compressing-tar-gz1x/a.yaml",
        ] {
            let err = read_err(&tar_of(&[(name, b"x")]));
            assert!(matches!(err, LegacyTarError::AbsolutePath { .. }), "{err}");
        }
    }

    #[test]
    fn rejects_parent_traversal() {
        let err = read_err(&tar_of(&[(b"../evil.yaml", b"x")]));
        assert!(
            matches!(err, LegacyTarError::ParentTraversal { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("../evil.yaml"));
    }

    #[test]
    fn rejects_absolute_names() {
        let err = read_err(&tar_of(&[(b"/etc/evil.yaml", b"x")]));
        assert!(matches!(err, LegacyTarError::AbsolutePath { .. }), "{err}");
    }

    #[test]
    fn rejects_symlink_entries() {
        let data = tar_gz(|b| {
            let mut h = file_header(b"link.yaml", 0, tar::EntryType::Symlink);
            h.set_link_name("/etc/passwd").unwrap();
            h.set_cksum();
            b.append(&h, &b""[..]).unwrap();
        });
        let err = read_err(&data);
        assert!(
            matches!(err, LegacyTarError::ForbiddenEntryType { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("symlink"), "{err}");
    }

    #[test]
    fn rejects_gzip_bomb_at_the_limit() {
        // 64 MiB of zeros compresses to ~64 KiB; the limit is 4 MiB.
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..64 {
            gz.write_all(&zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        let err = read_err(&bomb);
        assert!(
            matches!(err, LegacyTarError::TooLarge { limit } if limit == Limits::default().max_message_bytes),
            "{err}"
        );
    }

    #[test]
    fn rejects_too_many_entries() {
        let limits = Limits {
            max_tar_entries: 2,
            ..Limits::default()
        };
        let data = tar_of(&[(b"f0.yaml", b"x"), (b"f1.yaml", b"x"), (b"f2.yaml", b"x")]);
        let err = read_yaml_files(&data, &limits).unwrap_err();
        assert!(
            matches!(err, LegacyTarError::TooManyEntries { limit: 2 }),
            "{err}"
        );
    }
}
