//! Reading manifests from files, directories (recursively) and stdin.

use super::{Document, DocumentOrigin, ManifestError, Source, parse_documents};
use crate::limits::Limits;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The Kubernetes objects of one input file, in file order.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    pub source: Source,
    /// Path of the file relative to the input argument it was found under: the file name
    /// for a file argument, the path below the directory for a directory argument. Used to
    /// mirror inputs into an output directory.
    pub relative_path: PathBuf,
    pub documents: Vec<Document>,
}

/// Loads every input: `-` is stdin, a directory is walked recursively for `.yaml`/`.yml`
/// files in sorted order with hidden entries skipped, anything else is read as a file
/// whatever its extension (an explicit argument is never silently ignored).
pub fn load_inputs(
    inputs: &[PathBuf],
    limits: &Limits,
) -> Result<Vec<ManifestFile>, ManifestError> {
    let mut files = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            let stdin = std::io::stdin();
            files.push(load_reader(
                Source::Stdin,
                PathBuf::from("stdin.yaml"),
                stdin.lock(),
                limits,
            )?);
            continue;
        }
        if !input.exists() && is_glob(input) {
            for path in expand_glob(input)? {
                let relative = path
                    .file_name()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("manifest.yaml"));
                files.push(load_file(&path, relative, limits)?);
            }
            continue;
        }
        let meta = std::fs::metadata(input).map_err(|source| ManifestError::Read {
            path: input.clone(),
            source,
        })?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(input, input, &mut found)?;
            if found.is_empty() {
                return Err(ManifestError::EmptyDirectory {
                    path: input.clone(),
                });
            }
            for (path, relative) in found {
                files.push(load_file(&path, relative, limits)?);
            }
        } else {
            let relative = input
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("manifest.yaml"));
            files.push(load_file(input, relative, limits)?);
        }
    }
    Ok(files)
}

/// An argument with `*`, `?` or `[` that names no existing file is a glob pattern (for
/// shells that pass patterns through unexpanded, and for quoted patterns in CI files).
fn is_glob(path: &Path) -> bool {
    path.to_str().is_some_and(|s| s.contains(['*', '?', '[']))
}

/// The regular files a pattern matches, sorted; hidden files only if the pattern names
/// them. No match is an error: a pattern that signs nothing is almost always a mistake.
fn expand_glob(pattern: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let text = pattern.to_string_lossy();
    let bad = |reason: String| ManifestError::Read {
        path: pattern.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
    };
    let options = glob::MatchOptions {
        require_literal_leading_dot: true,
        ..glob::MatchOptions::new()
    };
    let mut paths = Vec::new();
    for entry in glob::glob_with(&text, options).map_err(|e| bad(format!("bad pattern: {e}")))? {
        let path = entry.map_err(|e| ManifestError::Read {
            path: e.path().to_path_buf(),
            source: std::io::Error::new(e.error().kind(), e.error().to_string()),
        })?;
        if path.is_file() {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(bad("pattern matches no files".into()));
    }
    paths.sort();
    Ok(paths)
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<(PathBuf, PathBuf)>) -> Result<(), ManifestError> {
    let read_err = |source| ManifestError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .collect::<Result<_, _>>()
        .map_err(read_err)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        // Follows symlinks on purpose: a directory of links is a common layout.
        let meta = std::fs::metadata(&path).map_err(|source| ManifestError::Read {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            walk(root, &path, found)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            found.push((path, relative));
        }
    }
    Ok(())
}

fn load_file(
    path: &Path,
    relative: PathBuf,
    limits: &Limits,
) -> Result<ManifestFile, ManifestError> {
    let file = std::fs::File::open(path).map_err(|source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    load_reader(Source::File(path.to_path_buf()), relative, file, limits)
}

/// Loads the documents of one stream. Every non-empty document must be a Kubernetes
/// object; the error names the source and the document.
pub fn load_reader(
    source: Source,
    relative_path: PathBuf,
    reader: impl Read,
    limits: &Limits,
) -> Result<ManifestFile, ManifestError> {
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
                };
                let doc = Document::new(origin, item)
                    .map_err(|reason| not_an_object(format!("items[{i}]: {reason}")))?;
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
        };
        let doc = Document::new(origin, value).map_err(not_an_object)?;
        documents.push(doc);
    }
    if documents.is_empty() {
        return Err(ManifestError::NoDocuments {
            source_name: source.to_string(),
        });
    }
    Ok(ManifestFile {
        source,
        relative_path,
        documents,
    })
}

/// A `v1 List` (what `kubectl get -o yaml` prints for several objects).
fn is_list(value: &Value) -> bool {
    value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_lists_are_expanded_into_their_items() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n";
        let f = load_reader(
            Source::Stdin,
            "x".into(),
            text.as_bytes(),
            &Limits::default(),
        )
        .unwrap();
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
        let err = load_reader(
            Source::Stdin,
            "x".into(),
            text.as_bytes(),
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "<stdin>: document 1: not a Kubernetes object: items[0]: missing field `kind`"
        );
    }
}
