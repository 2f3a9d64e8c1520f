//! Splitting a stream into documents the way kubectl does.
//!
//! `kubectl apply -f` reads a file with `YAMLOrJSONDecoder` of k8s.io/apimachinery
//! (`pkg/util/yaml/decoder.go`):
//!
//! * `GuessJSONStream` peeks at the first 4096 bytes: if the first non-whitespace character
//!   is `{`, the input is a stream of concatenated JSON values, decoded by `encoding/json`.
//!   (Newer releases fall back to YAML when that fails, older ones stop: mansign refuses such
//!   input rather than pick one behaviour.)
//! * Otherwise `YAMLReader` cuts the input into chunks at lines that start with `---`; the
//!   rest of such a line may only be whitespace or a `#` comment, anything else is the error
//!   "invalid Yaml document separator". Lines are read with `bufio.Reader.ReadLine`, so a
//!   `\r\n` ending becomes `\n`, and every line, the last one too, ends in `\n`. Each chunk is
//!   decoded as one YAML document.
//!
//! Splitting on lines (not on YAML tokens) is what kubectl does, so a `---` line inside a
//! block scalar splits there too: mansign sees the same documents kubectl does.

use super::error::YamlError;

/// How kubectl's decoder looks at the first bytes.
const JSON_SNIFF_BYTES: usize = 4096;

/// True when kubectl reads the input as a stream of JSON values.
pub(crate) fn is_json_stream(text: &str) -> bool {
    // kubectl looks at the first JSON_SNIFF_BYTES bytes, decoded (a character cut at the
    // window's end decodes as U+FFFD), for their first character that is not a space: Go's
    // unicode.IsSpace is Unicode White_Space, as Rust's char::is_whitespace. The text is
    // UTF-8 already, so that character is the text's own first non-space one, when it
    // ends inside the window (`{` is one byte: when it starts there).
    text.char_indices()
        .find(|&(_, c)| !c.is_whitespace())
        .is_some_and(|(at, c)| c == '{' && at < JSON_SNIFF_BYTES)
}

/// One document of a YAML stream, as kubectl's reader returns it.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// 0-based position of the document in the stream (empty documents count).
    pub(crate) position: usize,
    /// Line of the input where the chunk starts (1-based).
    pub(crate) first_line: usize,
    /// The chunk's lines, each ending in `\n` (`\r\n` normalised), as kubectl decodes them.
    pub(crate) text: String,
}

/// The chunks of a YAML stream, one at a time (only one is held in memory).
pub(crate) struct Chunks<'a> {
    rest: &'a str,
    /// Line number of the first line of `rest`.
    line: usize,
    /// Position of the document the next content line belongs to.
    position: usize,
    /// Whether a content line or a separator was seen (a first separator after only
    /// comments and blank lines does not start a second document).
    started: bool,
    max_document_bytes: usize,
    failed: bool,
}

impl<'a> Chunks<'a> {
    pub(crate) fn new(text: &'a str, max_document_bytes: usize) -> Self {
        Chunks {
            rest: text,
            line: 1,
            position: 0,
            started: false,
            max_document_bytes,
            failed: false,
        }
    }

    fn fail(&mut self, e: YamlError) -> Option<Result<Chunk, YamlError>> {
        self.failed = true;
        Some(Err(e))
    }
}

/// Splits off the first line: (line without its `\n`, rest after the `\n`).
fn split_line(s: &str) -> (&str, &str) {
    match s.find('\n') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

/// `Some(comment-or-empty)` when the line is a separator, `Err(text)` when it starts with
/// `---` but is not one, `None` otherwise.
fn separator(line: &str) -> Option<Result<(), &str>> {
    let rest = line.strip_prefix("---")?;
    let trimmed = rest.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        Some(Ok(()))
    } else {
        Some(Err(trimmed))
    }
}

fn is_content(line: &str) -> bool {
    let t = line.trim_start_matches([' ', '\t', '\r']);
    !(t.is_empty() || t.starts_with('#'))
}

impl Iterator for Chunks<'_> {
    type Item = Result<Chunk, YamlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if self.rest.is_empty() {
                return None;
            }
            // Separators before the chunk (kubectl skips them while its buffer is empty).
            let (line, after) = split_line(self.rest);
            match separator(line) {
                Some(Ok(())) => {
                    if self.started {
                        self.position += 1;
                    }
                    self.started = true;
                    self.rest = after;
                    self.line += 1;
                    continue;
                }
                Some(Err(text)) => {
                    let e = YamlError::InvalidSeparator {
                        line: self.line,
                        text: super::error::shorten(text),
                    };
                    return self.fail(e);
                }
                None => {}
            }
            // The chunk: every line up to the next separator (or the end).
            let first_line = self.line;
            let position = self.position;
            let mut len = 0;
            let mut lines = 0;
            let mut scan = self.rest;
            while !scan.is_empty() {
                let (line, after) = split_line(scan);
                if separator(line).is_some() {
                    break;
                }
                if is_content(line) {
                    self.started = true;
                }
                len += scan.len() - after.len();
                lines += 1;
                scan = after;
                if len > self.max_document_bytes {
                    let e = YamlError::DocumentTooLarge {
                        document: position + 1,
                        line: first_line,
                        limit: self.max_document_bytes,
                    };
                    return self.fail(e);
                }
            }
            let raw = &self.rest[..len];
            self.rest = scan;
            self.line += lines;
            let mut text = String::with_capacity(raw.len() + 1);
            let mut r = raw;
            while !r.is_empty() {
                let (line, after) = split_line(r);
                text.push_str(line.strip_suffix('\r').unwrap_or(line));
                text.push('\n');
                r = after;
            }
            return Some(Ok(Chunk {
                position,
                first_line,
                text,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How `is_json_stream` read the window before: all of it decoded, then trimmed.
    fn sniffed_as_before(text: &str) -> bool {
        let window = &text.as_bytes()[..text.len().min(JSON_SNIFF_BYTES)];
        String::from_utf8_lossy(window)
            .trim_start_matches(char::is_whitespace)
            .starts_with('{')
    }

    #[test]
    fn the_json_sniff_reads_the_window_as_kubectl_does() {
        // Spaces of one to three bytes up to, across and past the window's end, then `{`,
        // another character, or nothing.
        let mut cases = 0;
        for space in [" ", "\n", "\u{a0}", "\u{2003}", "\u{3000}"] {
            for n in [0, 1, 1364, 1365, 1366, 2047, 2048, 4094, 4095, 4096, 4097] {
                for after in ["{", "{\"a\": 1}", "a", "\u{feff}{", "\u{fffd}", ""] {
                    let text = format!("{}{after}", space.repeat(n));
                    assert_eq!(
                        is_json_stream(&text),
                        sniffed_as_before(&text),
                        "{n} × {space:?} then {after:?}"
                    );
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 5 * 11 * 6);
    }

    fn chunks(text: &str) -> Vec<(usize, usize, String)> {
        Chunks::new(text, 1 << 20)
            .map(|c| c.map(|c| (c.position, c.first_line, c.text)))
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn separators_with_comments_split_and_positions_count_empty_documents() {
        let got = chunks("# head\n---\na: 1\r\n--- # two\n---\nb: 2");
        assert_eq!(
            got,
            vec![
                (0, 1, "# head\n".into()),
                (0, 3, "a: 1\n".into()),
                (2, 6, "b: 2\n".into()),
            ]
        );
    }

    #[test]
    fn text_after_a_separator_is_refused_as_kubectl_does() {
        let err = Chunks::new("a: 1\n--- x\nb: 2\n", 1 << 20)
            .find_map(Result::err)
            .unwrap();
        assert_eq!(
            err,
            YamlError::InvalidSeparator {
                line: 2,
                text: "x".into()
            }
        );
        assert!(Chunks::new("----\n", 1 << 20).any(|c| c.is_err()));
    }

    #[test]
    fn json_streams_are_sniffed_by_their_first_character() {
        assert!(is_json_stream("  \n{\"a\": 1}"));
        assert!(!is_json_stream("a: {b: 1}"));
        assert!(!is_json_stream("[1]"));
        assert!(!is_json_stream(&format!("{}{{}}", " ".repeat(5000))));
    }

    #[test]
    fn a_chunk_larger_than_the_limit_is_refused_before_it_is_copied() {
        let text = format!("a: {}\n", "x".repeat(100));
        let err = Chunks::new(&text, 50).find_map(Result::err).unwrap();
        assert!(matches!(
            err,
            YamlError::DocumentTooLarge {
                document: 1,
                line: 1,
                limit: 50
            }
        ));
    }
}
