//! The signed message M: what the signature covers.
//!
//! M is the YAML of the signed documents (signature annotations removed), joined with
//! `"\n---\n"` — the shape kubectl-sigstore's `--tarball=no` mode writes and that Kyverno and
//! kubectl-sigstore parse (docs/design.md, "The message M"). The signature covers M
//! itself, not its gzip or base64 form.
//!
//! Reading also accepts the deprecated kubectl-sigstore tarball messages, where M is a
//! `.tar.gz` of the signed files (§1.5).

use super::legacy_tar::{self, LegacyTarError};
use super::yaml::error::YamlError;
use super::yaml::read::parse_documents;
use super::yaml::write::to_yaml;
use crate::limits::Limits;
use serde_json::Value;

/// Why a signed message could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    #[error("signed message is not UTF-8 YAML")]
    NotText,
    #[error("signed message")]
    Yaml(#[from] YamlError),
    #[error("signed message (legacy tar.gz)")]
    LegacyTar(#[from] LegacyTarError),
    #[error("signed message holds no documents")]
    Empty,
}

/// Builds M from documents whose signature annotations are already removed.
pub fn build_message<'a>(documents: impl IntoIterator<Item = &'a Value>) -> Vec<u8> {
    let parts: Vec<String> = documents.into_iter().map(to_yaml).collect();
    parts.join("\n---\n").into_bytes()
}

/// Reads the documents out of M: YAML, or a legacy tar.gz of YAML files (told apart by the
/// gzip magic bytes, which no YAML text starts with).
pub fn parse_message(message: &[u8], limits: &Limits) -> Result<Vec<Value>, MessageError> {
    if message.starts_with(&[0x1f, 0x8b]) {
        let mut docs = Vec::new();
        for file in legacy_tar::read_yaml_files(message, limits)? {
            let text = std::str::from_utf8(&file.content).map_err(|_| MessageError::NotText)?;
            for (_, v) in parse_documents(text, limits)? {
                docs.push(v);
                if docs.len() > limits.max_documents {
                    return Err(YamlError::TooManyDocuments {
                        limit: limits.max_documents,
                    }
                    .into());
                }
            }
        }
        if docs.is_empty() {
            return Err(MessageError::Empty);
        }
        return Ok(docs);
    }
    let text = std::str::from_utf8(message).map_err(|_| MessageError::NotText)?;
    let docs: Vec<Value> = parse_documents(text, limits)?
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    if docs.is_empty() {
        return Err(MessageError::Empty);
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_joins_documents_with_separator() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
        let m = build_message([&a, &b]);
        let text = String::from_utf8(m.clone()).unwrap();
        assert_eq!(text.matches("\n---\n").count(), 1);
        assert!(!text.starts_with("---"));
        assert_eq!(parse_message(&m, &Limits::default()).unwrap(), vec![a, b]);
    }

    #[test]
    fn rejects_empty_message() {
        assert!(matches!(
            parse_message(b"", &Limits::default()),
            Err(MessageError::Empty)
        ));
    }
}
