//! Long one-line values read without the general scanner (issue 40).
//!
//! A signed manifest is mostly its signature annotations: base64 of a few KiB in four plain
//! scalars (`message`, `signature`, `certificate`, `bundle`), which saphyr-parser's scanner
//! reads one character at a time, most of the cost of reading such a file. Before the parse
//! each such value is replaced by a one-character placeholder, and the value is put back
//! when the placeholder's scalar event arrives ([`Restore`]). A value is taken out only
//! where that is provably the same reading:
//!
//! * **The line** is `INDENT KEY: VALUE`: spaces, a key of `[A-Za-z0-9]` then
//!   `[A-Za-z0-9._/-]`, a colon and one space, then a value of at least [`MIN_BYTES`] bytes
//!   of the base64 alphabet (`[A-Za-z0-9+/=]`) that runs to the end of the line (`\n`, or
//!   the end of the text). Those characters can start a plain scalar and continue one in
//!   block and flow context alike (no indicator, blank, `: `, ` #`, flow character or line
//!   break among them), so the scanner reads the whole value as plain-scalar text and
//!   stops at the line's end, with the same state as after the placeholder: whether the
//!   scalar goes on (continuation lines), and every token after it, depend only on the
//!   text that follows, which is the same text.
//! * **The event**: the placeholder must come back as a plain scalar of exactly the
//!   placeholder, starting exactly where it was put, and every value taken out must come
//!   back so, in order. Anything else (the line was inside a block scalar, a quoted scalar
//!   or a comment's continuation, or the scalar continued on the next line) and the parse
//!   is not used.
//!
//! A document whose parse with placeholders fails, or does not give every value back, is
//! parsed again as written (`events::parse_document`): its error, and any document the
//! conditions above do not cover, is exactly what it was without this module. The unit
//! tests and the `message` fuzz target compare both readings.

use std::ops::Range;

/// The shortest value taken out: shorter ones cost the scanner little.
pub(crate) const MIN_BYTES: usize = 64;

/// What a value is replaced by.
pub(crate) const PLACEHOLDER: &str = "A";

/// A text with its long values taken out.
#[derive(Debug)]
pub(crate) struct Elided {
    /// The text with each value replaced by [`PLACEHOLDER`].
    pub(crate) text: String,
    /// In source order: where each placeholder is in `text` (its character index, as the
    /// parser's marks count) and the value's bytes in the original text.
    pub(crate) values: Vec<(usize, Range<usize>)>,
}

/// The text with its long one-line values taken out, or `None` when it has none.
///
/// Placeholders are found by the character index the parser's marks give, and
/// saphyr-parser 0.3.4 counts a directive's name and parameters in bytes, not characters
/// (`%FOO ééé` moves every later mark by three): a text with a line that may be a
/// directive keeps its values. The pre-scan refuses directives before this runs anyway
/// (`scan::prescan`); this does not rely on it. Found by review: a directive with non-ASCII
/// parameters and a literal `A` three positions before a placeholder put the value into
/// the wrong scalar (`elide::tests::a_directive_keeps_the_values`).
pub(crate) fn long_values(text: &str) -> Option<Elided> {
    if super::scan::may_hold_directive(text) {
        return None;
    }
    let bytes = text.as_bytes();
    // (value's byte range in `text`), found line by line
    let mut found: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| start + i);
        if end - start > MIN_BYTES
            && let Some(value) = value_of_line(&bytes[start..end])
        {
            found.push(start + value.start..start + value.end);
        }
        start = end + 1;
    }
    if found.is_empty() {
        return None;
    }
    let removed: usize = found.iter().map(|r| r.len() - PLACEHOLDER.len()).sum();
    let mut elided = String::with_capacity(text.len() - removed);
    let mut values = Vec::with_capacity(found.len());
    let (mut copied, mut chars) = (0, 0);
    for range in found {
        let before = &text[copied..range.start];
        chars += if before.is_ascii() {
            before.len()
        } else {
            before.chars().count()
        };
        elided.push_str(before);
        values.push((chars, range.clone()));
        elided.push_str(PLACEHOLDER);
        chars += PLACEHOLDER.len();
        copied = range.end;
    }
    elided.push_str(&text[copied..]);
    Some(Elided {
        text: elided,
        values,
    })
}

/// The value's bytes in `line` (without its `\n`) when the line is `INDENT KEY: VALUE` as
/// the module docs say.
fn value_of_line(line: &[u8]) -> Option<Range<usize>> {
    let indent = line.iter().take_while(|&&b| b == b' ').count();
    let rest = &line[indent..];
    if !rest.first()?.is_ascii_alphanumeric() {
        return None;
    }
    let key = rest
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'))
        .count();
    let value = rest[key..].strip_prefix(b": ")?;
    let is_base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if value.len() < MIN_BYTES || !value.iter().all(is_base64) {
        return None;
    }
    let at = indent + key + 2;
    Some(at..line.len())
}

/// Puts the values of an [`Elided`] text back as the parser's events arrive.
#[derive(Debug)]
pub(crate) struct Restore<'t> {
    original: &'t str,
    values: &'t [(usize, Range<usize>)],
    next: usize,
}

/// The parse with placeholders cannot be used: parse the text as written.
#[derive(Debug)]
pub(crate) struct NotTheSameReading;

impl<'t> Restore<'t> {
    pub(crate) fn new(original: &'t str, elided: &'t Elided) -> Self {
        Restore {
            original,
            values: &elided.values,
            next: 0,
        }
    }

    /// The text of a scalar event starting at character `start` of the elided text: its
    /// value when it is the next placeholder, as it came otherwise.
    pub(crate) fn scalar<'a>(
        &mut self,
        text: std::borrow::Cow<'a, str>,
        plain: bool,
        start: usize,
    ) -> Result<std::borrow::Cow<'a, str>, NotTheSameReading>
    where
        't: 'a,
    {
        let Some((at, range)) = self.values.get(self.next) else {
            return Ok(text);
        };
        if start < *at {
            return Ok(text);
        }
        // At the placeholder, it must be the placeholder alone; past it, it was skipped.
        if start == *at && plain && text == PLACEHOLDER {
            self.next += 1;
            return Ok(std::borrow::Cow::Borrowed(&self.original[range.clone()]));
        }
        Err(NotTheSameReading)
    }

    /// Every value came back.
    pub(crate) fn complete(&self) -> bool {
        self.next == self.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(n: usize) -> String {
        "QUJD+/=".chars().cycle().take(n).collect()
    }

    #[test]
    fn takes_out_long_base64_values_of_simple_keys_and_nothing_else() {
        let long = b64(80);
        let text = format!(
            "metadata:\n  annotations:\n    cosign.sigstore.dev/message: {long}\n    short: {}\n    \
             quoted: \"{long}\"\n    two-spaces:  {long}\n    trailing: {long} \n    crlf: {long}\r\n    \
             last: {long}",
            b64(63)
        );
        let elided = long_values(&text).unwrap();
        assert_eq!(elided.values.len(), 2, "{elided:?}");
        for (at, range) in &elided.values {
            assert_eq!(&text[range.clone()], long);
            assert_eq!(elided.text.chars().nth(*at), Some('A'));
        }
        assert!(elided.text.contains("cosign.sigstore.dev/message: A\n"));
        assert!(elided.text.ends_with("last: A"));
        assert_eq!(long_values("a: b\nc: d\n").map(|e| e.values.len()), None);
    }

    #[test]
    fn a_directive_keeps_the_values() {
        // The review's case: with the value taken out, the list read [VALUE, {k: A}].
        let text = format!("%FOO éééééé\n--- [A,\nk: {}\n]\n", b64(80));
        assert!(long_values(&text).is_none());
        for directive in [
            "%YAML 1.2\n",
            "\u{feff}%TAG ! x\n",
            "a: b\r%X\n",
            "a: b\n%X y\n",
        ] {
            assert!(
                long_values(&format!("{directive}k: {}\n", b64(80))).is_none(),
                "{directive:?}"
            );
        }
        // A `%` elsewhere is no directive.
        assert!(long_values(&format!("a: 50%\nk: {}\n", b64(80))).is_some());
    }

    #[test]
    fn placeholders_after_non_ascii_text_are_found_by_character() {
        let long = b64(70);
        let text = format!("ü: é😀\nk: {long}\n");
        let elided = long_values(&text).unwrap();
        assert_eq!(elided.values[0].0, "ü: é😀\nk: ".chars().count());
    }
}
