//! Why a manifest stream could not be read, and where.

use std::fmt;

/// A place in a stream: the document (1-based, as a person counts; empty documents count so
/// the number matches what an editor shows), the field path inside it (empty for the whole
/// document), and the line and column (1-based, counted in the whole stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlLocation {
    pub document: usize,
    pub path: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for YamlLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "document {}", self.document)?;
        if !self.path.is_empty() {
            write!(f, ", {}", self.path)?;
        }
        write!(f, " (line {}, column {})", self.line, self.column)
    }
}

/// Why a YAML (or JSON) stream could not be read. Every variant names where; the fix is
/// part of the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum YamlError {
    #[error("document {document}: not valid YAML: {message}")]
    Syntax { document: usize, message: String },
    #[error("more than {limit} documents in one file (mansign's limit; split the file)")]
    TooManyDocuments { limit: usize },
    #[error(
        "line {line}: invalid document separator `{text}`: only a comment may follow `---` on \
         its line (kubectl refuses it too)"
    )]
    InvalidSeparator { line: usize, text: String },
    #[error(
        "document {document} (from line {line}): larger than {limit} bytes, the limit for one \
         object (the Kubernetes API request limit)"
    )]
    DocumentTooLarge {
        document: usize,
        line: usize,
        limit: usize,
    },
    #[error(
        "{at}: a second YAML document without a `---` separator line (after `...`); kubectl \
         would apply only the first. Separate documents with `---`"
    )]
    ContentAfterDocumentEnd { at: Box<YamlLocation> },
    #[error(
        "{at}: YAML directive (`%`): not supported, because kubectl splits documents on `---` \
         lines and fails on directives; remove it"
    )]
    Directive { at: Box<YamlLocation> },
    #[error("{at}: {what}; kubectl refuses it ({kubectl}); {fix}")]
    KubectlScannerRefuses {
        at: Box<YamlLocation>,
        what: &'static str,
        kubectl: &'static str,
        fix: &'static str,
    },
    #[error(
        "{at}: character U+{:04X} is a line break for kubectl (YAML 1.1) but not in YAML 1.2, \
         so the two read different documents; remove it, or write it as \"\\u{:04x}\" inside a \
         double-quoted string",
        u32::from(*character),
        u32::from(*character)
    )]
    LineBreakCharacter {
        at: Box<YamlLocation>,
        character: char,
    },
    #[error(
        "{at}: control character U+{:04X} is not allowed in YAML (kubectl refuses the \
         document: \"control characters are not allowed\"); remove it, or write it as \
         \"\\u{:04x}\" inside a double-quoted string",
        u32::from(*character),
        u32::from(*character)
    )]
    ControlCharacter {
        at: Box<YamlLocation>,
        character: char,
    },
    #[error(
        "{at}: flow collection (`[...]` or `{{...}}`) larger than {limit} bytes; write it in \
         block style, or the whole document as JSON"
    )]
    FlowCollectionTooLarge { at: Box<YamlLocation>, limit: usize },
    #[error("{at}: nested deeper than {limit} levels")]
    TooDeep { at: Box<YamlLocation>, limit: usize },
    #[error(
        "{at}: more than {limit} nodes in one document (keys, values and every use of an \
         alias count)"
    )]
    DocumentTooManyNodes { at: Box<YamlLocation>, limit: usize },
    #[error(
        "{at}: more than {limit} nodes in the stream (keys, values and every use of an alias \
         count); split the file"
    )]
    StreamTooManyNodes { at: Box<YamlLocation>, limit: usize },
    #[error(
        "{at}: YAML merge key `<<`: not supported, because kubectl (YAML 1.1) merges it while \
         YAML 1.2 reads a literal key; write the merged fields out"
    )]
    MergeKey { at: Box<YamlLocation> },
    #[error(
        "{at}: duplicate key {key:?}: kubectl would keep the last one silently; a signed \
         manifest must not be ambiguous, remove one"
    )]
    DuplicateKey { at: Box<YamlLocation>, key: String },
    #[error("{at}: key `{text}` is {reading}, not a string; quote it")]
    KeyNotString {
        at: Box<YamlLocation>,
        text: String,
        reading: String,
    },
    #[error(
        "{at}: tag `{tag}` is not supported; only the core tags !!str, !!int, !!float, !!bool, \
         !!null, !!map and !!seq are"
    )]
    UnsupportedTag { at: Box<YamlLocation>, tag: String },
    #[error("{at}: tag `{tag}` does not fit `{text}` in both YAML 1.1 (kubectl) and YAML 1.2")]
    TagMismatch {
        at: Box<YamlLocation>,
        tag: String,
        text: String,
    },
    #[error(
        "{at}: plain scalar `{text}` is {} in YAML 1.2 but {} for kubectl (YAML 1.1); {}",
        readings.yaml12,
        readings.kubectl,
        readings.fix
    )]
    AmbiguousScalar {
        at: Box<YamlLocation>,
        text: String,
        readings: Box<ScalarReadings>,
    },
    #[error(
        "{at}: integer `{text}` does not fit 64 bits: kubectl would send a rounded \
         floating-point number; quote it"
    )]
    IntegerOutOfRange { at: Box<YamlLocation>, text: String },
    #[error("{at}: `{text}` is not a finite number (JSON has no infinity or NaN); quote it")]
    NotFinite { at: Box<YamlLocation>, text: String },
    #[error(
        "{at}: escape `{escape}` in a double-quoted string is not one kubectl reads (its YAML \
         parser, go-yaml v2, refuses it); {fix}"
    )]
    UnknownEscape {
        at: Box<YamlLocation>,
        escape: String,
        fix: String,
    },
    #[error(
        "{at}: the input starts with `{{`, so kubectl reads it as a stream of JSON objects, but \
         this is not JSON ({message}); write the whole file as JSON, or start it with a YAML \
         document"
    )]
    NotAJsonStream {
        at: Box<YamlLocation>,
        message: String,
    },
}

/// The two readings of an ambiguous scalar, as the message words them, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalarReadings {
    /// What YAML 1.2 (mansign) reads, e.g. `the string "on"`.
    pub yaml12: String,
    /// What kubectl (YAML 1.1) reads, e.g. `the boolean true`.
    pub kubectl: String,
    /// How to write what was meant, e.g. `quote it: "on", or write true`.
    pub fix: String,
}

impl YamlError {
    /// The document (1-based) the error is in, when it is about one document.
    pub fn document(&self) -> Option<usize> {
        match self {
            YamlError::Syntax { document, .. } | YamlError::DocumentTooLarge { document, .. } => {
                Some(*document)
            }
            YamlError::TooManyDocuments { .. } | YamlError::InvalidSeparator { .. } => None,
            YamlError::ContentAfterDocumentEnd { at }
            | YamlError::Directive { at }
            | YamlError::KubectlScannerRefuses { at, .. }
            | YamlError::LineBreakCharacter { at, .. }
            | YamlError::ControlCharacter { at, .. }
            | YamlError::FlowCollectionTooLarge { at, .. }
            | YamlError::TooDeep { at, .. }
            | YamlError::DocumentTooManyNodes { at, .. }
            | YamlError::StreamTooManyNodes { at, .. }
            | YamlError::MergeKey { at }
            | YamlError::DuplicateKey { at, .. }
            | YamlError::KeyNotString { at, .. }
            | YamlError::UnsupportedTag { at, .. }
            | YamlError::TagMismatch { at, .. }
            | YamlError::AmbiguousScalar { at, .. }
            | YamlError::IntegerOutOfRange { at, .. }
            | YamlError::NotFinite { at, .. }
            | YamlError::UnknownEscape { at, .. }
            | YamlError::NotAJsonStream { at, .. } => Some(at.document),
        }
    }
}

/// One step of a field path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Renders a path as `spec.template.metadata.labels["on"]`: a key that is a plain word in
/// both YAML readings is written after a dot, any other key quoted in brackets. Long keys are
/// shortened, so a message stays readable whatever the input.
pub(crate) fn render_path<'a>(steps: impl IntoIterator<Item = Step<'a>>) -> String {
    // A path as deep as the depth limit is shown by its first and last steps.
    const KEEP: usize = 8;
    let steps: Vec<Step<'a>> = steps.into_iter().collect();
    let mut out = String::new();
    for (i, step) in steps.iter().copied().enumerate() {
        if steps.len() > 3 * KEEP && i >= KEEP && i < steps.len() - KEEP {
            if i == KEEP {
                out.push('…');
            }
            continue;
        }
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) if is_word(k) && k.len() <= 64 => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Key(k) => {
                out.push('[');
                out.push_str(&serde_json::Value::String(shorten(k)).to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Shortens text shown in a message to 64 characters.
pub(crate) fn shorten(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        None => s.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &s[..end], s.len()),
    }
}

/// A key written after a dot: letters, digits, `_`, `-`, starting with a letter or `_`, and
/// not a word YAML 1.1 reads as something else (`on`, `yes`, `null`...).
fn is_word(k: &str) -> bool {
    const SPECIAL: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !SPECIAL.iter().any(|w| k.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_quote_keys_that_are_not_plain_words() {
        let p = render_path([
            Step::Key("spec"),
            Step::Key("containers"),
            Step::Index(0),
            Step::Key("app.kubernetes.io/name"),
        ]);
        assert_eq!(p, r#"spec.containers[0]["app.kubernetes.io/name"]"#);
        assert_eq!(
            render_path([Step::Key("labels"), Step::Key("on")]),
            r#"labels["on"]"#
        );
        assert!(render_path([Step::Key(&"k".repeat(1_000_000))]).len() < 200);
        let deep = render_path((0..64).map(|_| Step::Index(0)));
        assert_eq!(deep, format!("{}…{}", "[0]".repeat(8), "[0]".repeat(8)));
    }
}
