//! A pre-scan of each YAML document, before the parser sees it.
//!
//! The parser (saphyr-parser 0.3.4, like yaml-rust2 and libyaml before it) keeps every token
//! of a flow collection (`[...]`, `{...}`) in memory until it knows whether the collection is
//! a mapping key, and in flow context it never gives up on that question: a 29 MiB flow
//! sequence costs gigabytes before the first event. So the size of every flow collection is
//! measured here first, from the text, and a document holding one larger than
//! `Limits::max_flow_collection_bytes` is refused; flow nesting deeper than
//! `Limits::max_depth` is refused at the same time, in constant work.
//!
//! To know where flow collections start, the pre-scan follows the parser's own tokenizer for
//! block context: indentation levels, simple keys, plain scalars that continue on more
//! indented lines, quoted scalars and the content lines of block scalars, whose `[` and `{`
//! are text. It is a port of saphyr-parser's `Scanner` (`fetch_next_token`,
//! `scan_plain_scalar`, `scan_block_scalar`, `scan_flow_scalar`, `roll_indent` ...) for
//! what decides token boundaries; where the parser would stop with an error the pre-scan
//! goes on, which can only find more (never fewer) flow collections. An extent is measured
//! to the matching bracket, or to the end of the document when there is none.
//! `manifest::yaml::scan::tests::finds_every_flow_collection_the_parser_sees` holds the port to the
//! parser on generated documents.
//!
//! The same pass refuses YAML directives (`%YAML`, `%TAG`: kubectl fails on them) and the
//! characters U+0085, U+2028 and U+2029, which YAML 1.1 (kubectl) reads as line breaks and
//! YAML 1.2 as text: `a: b # c<U+2028>evil: true` is one comment for one and a second key for
//! the other. It also refuses text go-yaml v2's scanner (kubectl) stops on and saphyr-parser
//! reads (issue 22, held by tests/it/yaml_oracle.rs): a tab where a simple key may start in
//! block context, a tab in the indentation after a plain scalar, and `|`, `>` or `?` starting
//! a token in a flow collection where go-yaml fails or reads a key.

/// What the pre-scan refuses. Lines are 1-based in the document, columns 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding {
    Directive {
        line: usize,
        column: usize,
    },
    LineBreakCharacter {
        line: usize,
        column: usize,
        character: char,
    },
    /// A character outside YAML's printable set, which go-yaml's reader (kubectl) refuses
    /// anywhere in a document, comments and quoted scalars included.
    ControlCharacter {
        line: usize,
        column: usize,
        character: char,
    },
    FlowTooLarge {
        line: usize,
        column: usize,
    },
    TooDeep {
        line: usize,
        column: usize,
    },
    /// Text kubectl's scanner (go-yaml v2, scannerc.go) stops on and the parser reads.
    KubectlRefuses {
        line: usize,
        column: usize,
        what: &'static str,
        kubectl: &'static str,
        fix: &'static str,
    },
}

const CANNOT_START: &str = "found character that cannot start any token";

/// go-yaml v2's `yaml_parser_fetch_next_token` takes `?` as a key indicator anywhere in a
/// flow collection (YAML 1.2 starts a plain scalar when a non-blank follows), and its
/// parser, after an empty key in a flow sequence, consumes the `,` or `]` that follows
/// (`yaml_parser_parse_flow_sequence_entry_mapping_key`): such a `?` is refused.
fn flow_question_mark(c: &Cursor) -> Option<Finding> {
    let refuse = |kubectl| {
        Some(Finding::KubectlRefuses {
            line: c.line,
            column: c.col + 1,
            what: "a `?` inside a flow collection",
            kubectl,
            fix: "quote the text that starts with `?`",
        })
    };
    let nc = c.peek_at(1);
    if !is_blank_or_breakz(nc) {
        return refuse(
            "it starts a key there; found unexpected end of stream, or did not find expected ',' or ']'",
        );
    }
    let mut n = 1;
    while is_blank(c.peek_at(n)) || is_break(c.peek_at(n)) {
        n += 1;
    }
    if matches!(c.peek_at(n), ',' | ']' | '}' | '\0') {
        return refuse("an empty explicit key; did not find expected ',' or ']'");
    }
    None
}

/// Bounds the pre-scan applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanLimits {
    pub(crate) max_flow_bytes: usize,
    pub(crate) max_depth: usize,
}

/// Scans one document (a chunk between `---` lines). Returns the byte ranges of the
/// top-level flow collections it measured.
pub(crate) fn prescan(text: &str, limits: ScanLimits) -> Result<Vec<(usize, usize)>, Finding> {
    line_break_characters(text)?;
    // Nothing to look for without brackets or a line starting with `%`.
    // Bytes, not characters: in UTF-8 these bytes are only ever these characters, and
    // `[u8]::contains` is a memchr.
    let bytes = text.as_bytes();
    if !may_hold_directive(text) && ![b'[', b'{', b'\t'].iter().any(|b| bytes.contains(b)) {
        return Ok(Vec::new());
    }
    let mut lexer = Block {
        c: Cursor::new(text),
        indent: -1,
        indents: Vec::new(),
        key_allowed: true,
        key: None,
        limits,
        flows: Vec::new(),
    };
    lexer.run()?;
    Ok(lexer.flows)
}

/// Whether a line of `text` may be a directive: one starting with `%`, after a BOM or not.
pub(crate) fn may_hold_directive(text: &str) -> bool {
    text.as_bytes().contains(&b'%')
        && (["\n%", "\r%", "\u{feff}%"].iter().any(|p| text.contains(p)) || text.starts_with('%'))
}

/// The first character kubectl's YAML reader and mansign's would read differently, or that
/// kubectl refuses: a YAML 1.1 line break (U+0085, U+2028, U+2029), or a character outside
/// YAML's printable set (go-yaml v2 readerc.go, `yaml_parser_update_buffer`: tab, LF, CR,
/// U+0020-U+007E, U+0085, U+00A0-U+D7FF, U+E000-U+FFFD, U+10000 and above), which it refuses
/// with "control characters are not allowed" wherever it is, even in a comment or a quoted
/// scalar, where saphyr-parser takes it as text.
pub(crate) fn line_break_characters(text: &str) -> Result<(), Finding> {
    // Most of a signed manifest is printable ASCII (its long base64 annotations above all),
    // which both checks below accept: skip it byte by byte and look at characters only from
    // the first other byte on. That byte starts a character (the bytes before it are ASCII),
    // and from there the search is the same one, so the finding is too.
    let Some(first) = first_not_printable_ascii(text.as_bytes()) else {
        return Ok(());
    };
    let Some((at, character)) = text[first..]
        .char_indices()
        .map(|(i, c)| (first + i, c))
        .find(|&(_, c)| is_yaml_11_line_break(c) || !is_printable(c))
    else {
        return Ok(());
    };
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    Err(if is_yaml_11_line_break(character) {
        Finding::LineBreakCharacter {
            line,
            column,
            character,
        }
    } else {
        Finding::ControlCharacter {
            line,
            column,
            character,
        }
    })
}

/// The first byte that is not tab, LF, CR or U+0020-U+007E. Read eight bytes at a time: a
/// word with no byte of the high half, none below U+0020 and no DEL holds only printable
/// ones (the tests below can flag a printable byte, the tab and line breaks among them,
/// never miss another), and only a flagged word is looked at byte by byte.
fn first_not_printable_ascii(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let printable = |b: u8| matches!(b, b'\t' | b'\n' | b'\r' | b' '..=b'~');
    let mut chunks = bytes.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let del = {
            let x = w ^ (ONES * 0x7f);
            x.wrapping_sub(ONES) & !x & HIGH
        };
        if (w & HIGH) | below_space | del != 0
            && let Some(i) = chunk.iter().position(|&b| !printable(b))
        {
            return Some(base + i);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| !printable(b))
        .map(|i| base + i)
}

fn is_yaml_11_line_break(c: char) -> bool {
    matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// YAML's `c-printable` as go-yaml checks it (a Rust `char` is never a surrogate).
fn is_printable(c: char) -> bool {
    matches!(c,
        '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}'
        | '\u{10000}'..)
}

// Character classes of saphyr-parser's char_traits.rs.
fn is_break(c: char) -> bool {
    c == '\n' || c == '\r'
}
fn is_breakz(c: char) -> bool {
    is_break(c) || c == '\0'
}
fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}
fn is_blank_or_breakz(c: char) -> bool {
    is_blank(c) || is_breakz(c)
}
fn is_flow(c: char) -> bool {
    matches!(c, ',' | '[' | ']' | '{' | '}')
}
fn is_yaml_non_break(c: char) -> bool {
    !is_breakz(c) && c != '\u{FEFF}'
}
fn is_anchor_char(c: char) -> bool {
    is_yaml_non_break(c) && !is_blank(c) && !is_flow(c)
}
fn is_alpha(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}
fn is_uri_char(c: char) -> bool {
    (is_alpha(c) && c != '_') || "#;/?:@&=+$,_.!~*'()[]%".contains(c)
}
fn is_tag_char(c: char) -> bool {
    is_uri_char(c) && !is_flow(c) && c != '!'
}

/// A position in the document, counted as the parser counts (`Marker`).
#[derive(Clone)]
struct Cursor<'a> {
    s: &'a str,
    /// Byte offset.
    i: usize,
    /// 1-based line.
    line: usize,
    /// 0-based column, in characters.
    col: usize,
    /// Characters since the start.
    index: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor {
            s,
            i: 0,
            line: 1,
            col: 0,
            index: 0,
        }
    }

    /// The next character; `'\0'` at the end, as the parser's input reports it.
    fn peek(&self) -> char {
        match self.s.as_bytes().get(self.i) {
            Some(&b) if b.is_ascii() => char::from(b),
            Some(_) => self.s[self.i..].chars().next().unwrap_or('\0'),
            None => '\0',
        }
    }

    fn peek_at(&self, n: usize) -> char {
        let ahead = self.s.as_bytes().get(self.i..self.i + n + 1);
        match ahead {
            Some(bytes) if bytes.is_ascii() => char::from(bytes[n]),
            _ => self.s[self.i..].chars().nth(n).unwrap_or('\0'),
        }
    }

    /// End of input, or a NUL character (where the parser stops with an error).
    fn at_end(&self) -> bool {
        self.peek() == '\0'
    }

    fn bump(&mut self) {
        let len = match self.s.as_bytes().get(self.i) {
            None => return,
            Some(&b) if b.is_ascii() => 1,
            Some(_) => self.s[self.i..].chars().next().map_or(1, char::len_utf8),
        };
        self.i += len;
        self.col += 1;
        self.index += 1;
    }

    fn skip_break(&mut self) {
        if self.s[self.i..].starts_with("\r\n") {
            self.i += 2;
            self.index += 2;
        } else {
            self.i += 1;
            self.index += 1;
        }
        self.line += 1;
        self.col = 0;
    }

    fn doc_indicator(&self) -> bool {
        self.col == 0
            && (self.s[self.i..].starts_with("---") || self.s[self.i..].starts_with("..."))
            && is_blank_or_breakz(self.peek_at(3))
    }

    /// `skip_ws_to_eol`: blanks, then a comment up to the line break.
    fn skip_ws_to_eol(&mut self) {
        while is_blank(self.peek()) {
            self.bump();
        }
        if self.peek() == '#' {
            self.skip_comment();
        }
    }

    /// `skip_to_next_token` in flow context: blanks, line breaks and comments.
    fn skip_to_next_flow_token(&mut self) {
        loop {
            match self.peek() {
                ' ' | '\t' => self.bump(),
                '\n' | '\r' => self.skip_break(),
                '#' => self.skip_comment(),
                _ => break,
            }
        }
    }

    fn skip_comment(&mut self) {
        while is_yaml_non_break(self.peek()) {
            self.bump();
        }
    }

    /// A quoted scalar from its opening quote to after its closing one (or where the parser
    /// would fail: a document marker, the end).
    fn quoted(&mut self, quote: char) {
        self.bump();
        loop {
            if self.at_end() || self.doc_indicator() {
                return;
            }
            let c = self.peek();
            if c == quote {
                self.bump();
                if quote == '\'' && self.peek() == '\'' {
                    self.bump(); // '' is an escaped quote
                    continue;
                }
                return;
            }
            if quote == '"' && c == '\\' {
                self.bump();
                if is_break(self.peek()) {
                    self.skip_break();
                } else {
                    self.bump();
                }
                continue;
            }
            if is_break(c) {
                self.skip_break();
            } else {
                self.bump();
            }
        }
    }

    /// A tag: `!<verbatim>`, or a handle (`!`, `!!`, `!name!`) and its suffix.
    fn tag(&mut self) {
        self.bump();
        if self.peek() == '<' {
            self.bump();
            while is_uri_char(self.peek()) {
                self.bump();
            }
            if self.peek() == '>' {
                self.bump();
            }
            return;
        }
        while is_alpha(self.peek()) {
            self.bump();
        }
        if self.peek() == '!' {
            self.bump();
        }
        while is_tag_char(self.peek()) {
            self.bump();
        }
    }

    fn anchor(&mut self) {
        self.bump();
        while is_anchor_char(self.peek()) {
            self.bump();
        }
    }
}

/// A possible simple key: where it starts.
#[derive(Clone, Copy)]
struct Mark {
    line: usize,
    col: usize,
    index: usize,
}

/// The tokenizer in block context (flow level 0).
struct Block<'a> {
    c: Cursor<'a>,
    /// Current block indentation (-1 outside any block collection).
    indent: isize,
    /// Enclosing block indentations. (The parser's one-column indents, which start no
    /// block, only matter for its errors and are left out.)
    indents: Vec<isize>,
    key_allowed: bool,
    key: Option<Mark>,
    limits: ScanLimits,
    flows: Vec<(usize, usize)>,
}

impl Block<'_> {
    fn run(&mut self) -> Result<(), Finding> {
        loop {
            self.skip_to_next_token()?;
            self.stale_key();
            self.unroll(self.c.col as isize);
            if self.c.at_end() {
                return Ok(());
            }
            let start = self.c.i;
            let ch = self.c.peek();
            if ch == '\u{FEFF}' {
                // A byte order mark starts a new document at the start of a line; elsewhere
                // the parser fails. It takes no column.
                self.unroll(-1);
                self.key = None;
                self.key_allowed = true;
                self.c.i += ch.len_utf8();
                self.c.index += 1;
                continue;
            }
            if self.c.col == 0 {
                if ch == '%' {
                    return Err(Finding::Directive {
                        line: self.c.line,
                        column: 1,
                    });
                }
                if self.c.doc_indicator() {
                    self.unroll(-1);
                    self.key = None;
                    self.key_allowed = false;
                    for _ in 0..3 {
                        self.c.bump();
                    }
                    continue;
                }
            }
            let nc = self.c.peek_at(1);
            let col = self.c.col;
            match ch {
                '[' | '{' => {
                    self.save_key();
                    let from = self.c.i;
                    measure_flow(&mut self.c, self.indent, self.limits)?;
                    self.flows.push((from, self.c.i));
                    self.key_allowed = false;
                }
                ']' | '}' => {
                    self.c.bump();
                    self.key_allowed = false;
                }
                ',' => {
                    self.key = None;
                    self.key_allowed = true;
                    self.c.bump();
                }
                '-' | '?' if is_blank_or_breakz(nc) => {
                    self.roll(col);
                    self.key = None;
                    self.key_allowed = true;
                    self.c.bump();
                }
                ':' if is_blank_or_breakz(nc) => {
                    match self.key.take() {
                        Some(k) => {
                            self.roll(k.col);
                            self.key_allowed = false;
                        }
                        None => {
                            self.roll(col);
                            self.key_allowed = true;
                        }
                    }
                    self.c.bump();
                }
                '*' | '&' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.c.anchor();
                }
                '!' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.c.tag();
                }
                '|' | '>' => {
                    self.save_key();
                    self.key_allowed = true;
                    self.block_scalar();
                }
                '\'' | '"' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.c.quoted(ch);
                }
                _ => {
                    self.save_key();
                    self.key_allowed = false;
                    self.plain()?;
                }
            }
            if self.c.i == start {
                self.c.bump(); // never stall on input the parser would refuse
            }
        }
    }

    /// Blanks, line breaks (each allows a simple key again) and comments. A tab where a
    /// simple key may start (indentation, after `- `, `? `, or `: ` without a key) is where
    /// go-yaml v2 stops (`yaml_parser_scan_to_next_token` skips tabs in block context only
    /// when no simple key is allowed) and fails: no token starts with a tab.
    fn skip_to_next_token(&mut self) -> Result<(), Finding> {
        loop {
            match self.c.peek() {
                '\t' if self.key_allowed => {
                    return Err(Finding::KubectlRefuses {
                        line: self.c.line,
                        column: self.c.col + 1,
                        what: "a tab where indentation or a value starts",
                        kubectl: CANNOT_START,
                        fix: "use spaces, or quote a value that is a tab",
                    });
                }
                ' ' | '\t' => self.c.bump(),
                '\n' | '\r' => {
                    self.c.skip_break();
                    self.key_allowed = true;
                }
                '#' => self.c.skip_comment(),
                _ => return Ok(()),
            }
        }
    }
}

/// Simple keys and block indentation, as the parser's tokenizer keeps them.
impl Block<'_> {
    /// A simple key cannot span lines or more than 1024 characters in block context.
    fn stale_key(&mut self) {
        if let Some(k) = self.key
            && (k.line < self.c.line || k.index + 1024 < self.c.index)
        {
            self.key = None;
        }
    }

    fn save_key(&mut self) {
        if self.key_allowed {
            self.key = Some(Mark {
                line: self.c.line,
                col: self.c.col,
                index: self.c.index,
            });
        }
    }

    fn roll(&mut self, col: usize) {
        if self.indent < col as isize {
            self.indents.push(self.indent);
            self.indent = col as isize;
        }
    }

    fn unroll(&mut self, col: isize) {
        while self.indent > col {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }
}

/// Scalars in block context: where a plain or block scalar ends.
impl Block<'_> {
    /// `scan_plain_scalar` in block context: continues on lines indented more than the
    /// enclosing block, ends at `: `, at ` #`, or at a less indented line.
    fn plain(&mut self) -> Result<(), Finding> {
        let min = self.indent + 1;
        let mut after_break = false;
        loop {
            if self.c.doc_indicator() || self.c.peek() == '#' {
                break;
            }
            let plain_char = |c: &Cursor| {
                let (ch, nc) = (c.peek(), c.peek_at(1));
                !(is_blank_or_breakz(ch) || ch == ':' && is_blank_or_breakz(nc) || ch == '\u{FEFF}')
            };
            if plain_char(&self.c) {
                after_break = false;
                while plain_char(&self.c) {
                    self.c.bump();
                }
            }
            let ch = self.c.peek();
            if !(is_blank(ch) || is_break(ch)) {
                break;
            }
            while is_blank(self.c.peek()) || is_break(self.c.peek()) {
                let ch = self.c.peek();
                if is_break(ch) {
                    self.c.skip_break();
                    after_break = true;
                } else if after_break && ch == '\t' && (self.c.col as isize) < min {
                    // A tab in the indentation of a line after a plain scalar: go-yaml v2
                    // fails (`yaml_parser_scan_plain_scalar`), saphyr skips the line.
                    return Err(Finding::KubectlRefuses {
                        line: self.c.line,
                        column: self.c.col + 1,
                        what: "a tab in the indentation after a plain scalar",
                        kubectl: "found a tab character that violates indentation",
                        fix: "indent with spaces",
                    });
                } else {
                    self.c.bump();
                }
            }
            if (self.c.col as isize) < min {
                break;
            }
        }
        if after_break {
            self.key_allowed = true;
        }
        Ok(())
    }

    /// `scan_block_scalar`: the header, then every line that belongs to the scalar.
    fn block_scalar(&mut self) {
        let c = &mut self.c;
        c.bump();
        let mut increment = 0usize;
        let digit = |ch: char| ch.to_digit(10).map(|d| d as usize);
        match c.peek() {
            '+' | '-' => {
                c.bump();
                if let Some(d) = digit(c.peek()) {
                    increment = d;
                    c.bump();
                }
            }
            ch => {
                if let Some(d) = digit(ch) {
                    increment = d;
                    c.bump();
                    if matches!(c.peek(), '+' | '-') {
                        c.bump();
                    }
                }
            }
        }
        c.skip_ws_to_eol();
        if !is_breakz(c.peek()) {
            return; // the parser fails here; what follows is read as tokens
        }
        if is_break(c.peek()) {
            c.skip_break();
        }
        if c.peek() == '\t' {
            return;
        }
        let indent = if increment > 0 {
            let n = if self.indent >= 0 {
                self.indent as usize + increment
            } else {
                increment
            };
            skip_block_indent(c, n);
            n
        } else {
            let mut max = 0;
            loop {
                while c.peek() == ' ' {
                    c.bump();
                }
                max = max.max(c.col);
                if is_break(c.peek()) {
                    c.skip_break();
                } else {
                    break;
                }
            }
            let mut n = max.max((self.indent + 1) as usize);
            if self.indent > 0 {
                n = n.max(1);
            }
            n
        };
        while c.col == indent && is_yaml_non_break(c.peek()) {
            if indent == 0 && c.doc_indicator() {
                break;
            }
            while is_yaml_non_break(c.peek()) {
                c.bump();
            }
            if !is_break(c.peek()) {
                break;
            }
            c.skip_break();
            skip_block_indent(c, indent);
        }
    }
}

/// `skip_block_scalar_indent`: spaces up to the content indentation and empty lines.
fn skip_block_indent(c: &mut Cursor, indent: usize) {
    loop {
        while c.col < indent && c.peek() == ' ' {
            c.bump();
        }
        if is_break(c.peek()) {
            c.skip_break();
        } else {
            return;
        }
    }
}

/// Measures a flow collection from its opening bracket, following the parser's tokens in
/// flow context; leaves the cursor after the matching bracket (or at the end).
fn measure_flow(c: &mut Cursor, block_indent: isize, limits: ScanLimits) -> Result<(), Finding> {
    let (from, line, column) = (c.i, c.line, c.col + 1);
    let mut depth = 1usize;
    if depth > limits.max_depth {
        return Err(Finding::TooDeep { line, column });
    }
    c.bump();
    let mut adjacent_value_at = None;
    loop {
        if c.i - from > limits.max_flow_bytes {
            return Err(Finding::FlowTooLarge { line, column });
        }
        // skip_to_next_token (line breaks do not allow keys in flow context).
        c.skip_to_next_flow_token();
        if c.at_end() {
            return Ok(());
        }
        let start = c.i;
        let (ch, nc) = (c.peek(), c.peek_at(1));
        if c.col == 0 {
            if ch == '%' {
                return Err(Finding::Directive {
                    line: c.line,
                    column: 1,
                });
            }
            if c.doc_indicator() {
                for _ in 0..3 {
                    c.bump();
                }
                continue;
            }
        }
        match ch {
            '[' | '{' => {
                depth += 1;
                if depth > limits.max_depth {
                    return Err(Finding::TooDeep {
                        line: c.line,
                        column: c.col + 1,
                    });
                }
                c.bump();
            }
            ']' | '}' => {
                depth -= 1;
                c.bump();
                if depth == 0 {
                    return if c.i - from > limits.max_flow_bytes {
                        Err(Finding::FlowTooLarge { line, column })
                    } else {
                        Ok(())
                    };
                }
                c.skip_ws_to_eol();
                adjacent_value_at = Some(c.i);
            }
            ',' => c.bump(),
            '?' => {
                if let Some(finding) = flow_question_mark(c) {
                    return Err(finding);
                }
                c.bump();
            }
            // go-yaml v2 starts a block scalar only in block context, and no plain scalar
            // with `|` or `>` (`yaml_parser_fetch_next_token`).
            '|' | '>' => {
                return Err(Finding::KubectlRefuses {
                    line: c.line,
                    column: c.col + 1,
                    what: "a `|` or `>` starting a value inside a flow collection",
                    kubectl: CANNOT_START,
                    fix: "quote the value",
                });
            }
            '-' if is_blank_or_breakz(nc) => c.bump(),
            ':' if is_blank_or_breakz(nc) || is_flow(nc) || adjacent_value_at == Some(c.i) => {
                c.bump()
            }
            '*' | '&' => c.anchor(),
            '!' => c.tag(),
            '\'' | '"' => {
                c.quoted(ch);
                c.skip_ws_to_eol();
                c.skip_to_next_flow_token();
                adjacent_value_at = Some(c.i);
            }
            _ => plain_in_flow(c, block_indent),
        }
        if c.i == start {
            c.bump();
        }
    }
}

/// `scan_plain_scalar` in flow context: ends at flow indicators, `: `, ` #`; continues over
/// line breaks whatever the indentation.
fn plain_in_flow(c: &mut Cursor, block_indent: isize) {
    let min = block_indent + 1;
    let mut after_break = false;
    let plain_char = |c: &Cursor| {
        let (ch, nc) = (c.peek(), c.peek_at(1));
        !is_blank_or_breakz(ch)
            && !is_flow(ch)
            && !(ch == ':' && (is_blank_or_breakz(nc) || is_flow(nc)))
            && ch != '\u{FEFF}'
    };
    loop {
        if c.doc_indicator() || c.peek() == '#' {
            return;
        }
        if plain_char(c) {
            after_break = false;
            while plain_char(c) {
                c.bump();
            }
        }
        let ch = c.peek();
        if !(is_blank(ch) || is_break(ch)) {
            return;
        }
        while is_blank(c.peek()) || is_break(c.peek()) {
            let ch = c.peek();
            if is_break(ch) {
                c.skip_break();
                after_break = true;
            } else if after_break && ch == '\t' && (c.col as isize) < min {
                c.skip_ws_to_eol();
                if !is_breakz(c.peek()) {
                    return;
                }
            } else {
                c.bump();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: ScanLimits = ScanLimits {
        max_flow_bytes: 256 * 1024,
        max_depth: 64,
    };

    /// The reading `line_break_characters` had before its ASCII fast path: every character.
    fn first_refused_character(text: &str) -> Option<(usize, char)> {
        text.char_indices()
            .find(|&(_, c)| is_yaml_11_line_break(c) || !is_printable(c))
    }

    #[test]
    fn the_word_scan_finds_the_first_byte_a_byte_scan_finds() {
        // Every byte value at every position of 24 printable bytes, alone and after a tab
        // and a line break (the flagged-but-printable case).
        for at in 0..24 {
            for byte in 0..=255u8 {
                for filler in [b'a', b'\n', b'\t', b'~', b' '] {
                    let mut bytes = vec![filler; 24];
                    bytes[at] = byte;
                    let expected = bytes
                        .iter()
                        .position(|&b| !matches!(b, b'\t' | b'\n' | b'\r' | b' '..=b'~'));
                    assert_eq!(
                        first_not_printable_ascii(&bytes),
                        expected,
                        "{byte:#x} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_ascii_fast_path_finds_what_a_character_scan_finds() {
        // One character of each class (printable ASCII, the three allowed controls, refused
        // controls, DEL, NEL and the other YAML 1.1 breaks, printable and refused non-ASCII,
        // a BOM, four-byte UTF-8) at every position of an ASCII line, then after a first
        // non-ASCII printable one (the fast path's fallback starts there), then twice.
        let probes = [
            'a',
            '\t',
            '\n',
            '\r',
            '\0',
            '\u{1}',
            '\u{1b}',
            '\u{7f}',
            '\u{80}',
            '\u{85}',
            '\u{9f}',
            '\u{a0}',
            'é',
            '\u{2028}',
            '\u{2029}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{feff}',
            '\u{fffe}',
            '\u{ffff}',
            '\u{10000}',
            '😀',
        ];
        let base = "metadata:\n  annotations:\n    k: H4sIAAAAAAAA/01QwU7DMAy99y\n";
        let mut cases = 0;
        for prefix in ["", "ü", "x\u{a0}y\n"] {
            for at in 0..=base.len() {
                for &probe in &probes {
                    for second in [None, Some('\u{85}'), Some('\u{1}')] {
                        let mut text = format!("{prefix}{}{probe}{}", &base[..at], &base[at..]);
                        if let Some(c) = second {
                            text.push(c);
                        }
                        let found = line_break_characters(&text).err();
                        let expected = first_refused_character(&text).map(|(i, c)| {
                            let before = &text[..i];
                            let line = before.matches('\n').count() + 1;
                            let column = before[before.rfind('\n').map_or(0, |j| j + 1)..]
                                .chars()
                                .count()
                                + 1;
                            if is_yaml_11_line_break(c) {
                                Finding::LineBreakCharacter {
                                    line,
                                    column,
                                    character: c,
                                }
                            } else {
                                Finding::ControlCharacter {
                                    line,
                                    column,
                                    character: c,
                                }
                            }
                        });
                        assert_eq!(found, expected, "{text:?}");
                        cases += 1;
                    }
                }
            }
        }
        assert!(cases > 5_000, "{cases}");
    }

    fn flows(text: &str) -> Vec<&str> {
        prescan(text, LIMITS)
            .unwrap()
            .into_iter()
            .map(|(a, b)| &text[a..b])
            .collect()
    }

    #[test]
    fn flow_collections_in_block_context_are_found_with_their_extent() {
        assert_eq!(
            flows("a: [1, 2]\nb:\n- {x: \"]\", y: 'it''s [not'}\n- c\n"),
            vec!["[1, 2]", "{x: \"]\", y: 'it''s [not'}"]
        );
        // A flow collection that never closes runs to the end.
        assert_eq!(flows("a: [1,\n  2\n"), vec!["[1,\n  2\n"]);
    }

    #[test]
    fn brackets_inside_scalars_are_text() {
        assert!(flows("a: x [1]\nb: 'y [2'\nc: \"z {3\"\nd: e#[4]\n# [5]\n").is_empty());
        // A plain scalar continues on a more indented line: its quote is text.
        assert!(flows("a: x\n  \"q [ \nb: 'r'\n").is_empty());
        // A literal block: its content is text, however much JSON it holds.
        let json = format!("{{\"a\": [{}1]}}", "1, ".repeat(200_000));
        let doc = format!("data:\n  dash.json: |\n    {json}\n    {json}\nafter: [1]\n");
        assert_eq!(flows(&doc), vec!["[1]"]);
    }

    #[test]
    fn a_quote_inside_a_flow_plain_scalar_is_text() {
        // The plain scalar is `a "`; the `"` does not start a quoted scalar that would hide
        // the `[` after it.
        let doc = "k: [a \"[\", x] y\"]\n";
        assert_eq!(flows(doc), vec!["[a \"[\", x] y\"]\n"]);
    }

    #[test]
    fn large_and_deep_flow_collections_are_refused() {
        let doc = format!("k: [{}1]\n", "1,".repeat(200_000));
        assert_eq!(
            prescan(&doc, LIMITS),
            Err(Finding::FlowTooLarge { line: 1, column: 4 })
        );
        let doc = "[".repeat(500_000);
        assert_eq!(
            prescan(&doc, LIMITS),
            Err(Finding::TooDeep {
                line: 1,
                column: 65
            })
        );
    }

    #[test]
    fn directives_and_yaml_1_1_line_breaks_are_refused() {
        assert_eq!(
            prescan("%YAML 1.1\na: 1\n", LIMITS),
            Err(Finding::Directive { line: 1, column: 1 })
        );
        assert!(prescan("a: |\n  %not a directive\n", LIMITS).is_ok());
        assert_eq!(
            prescan("a: b # c\u{2028}evil: true\n", LIMITS),
            Err(Finding::LineBreakCharacter {
                line: 1,
                column: 9,
                character: '\u{2028}'
            })
        );
    }

    /// The top-level flow collections saphyr-parser reports (byte ranges), up to its first
    /// error.
    fn parser_flows(text: &str) -> Vec<(usize, usize)> {
        use saphyr_parser::{Event, Parser};
        let offsets: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let byte = |index: usize| offsets.get(index).copied().unwrap_or(text.len());
        let mut parser = Parser::new_from_str(text);
        let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
        while let Some(Ok((event, span))) = parser.next_event() {
            match event {
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    // A collection's event spans its properties (anchor, tag, with blanks,
                    // line breaks and comments between them), then a flow collection's
                    // bracket and what follows it on the line.
                    let from = byte(span.start.index());
                    let token = &text[from..byte(span.end.index())];
                    if depth > 0 {
                        depth += 1;
                    } else if let Some(i) = bracket_after_properties(token) {
                        depth = 1;
                        start = from + i;
                    }
                }
                Event::SequenceEnd | Event::MappingEnd if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        // (the closing token's span also takes blanks and a comment after
                        // the bracket)
                        out.push((start, byte(span.start.index()) + 1));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn bracket_after_properties(token: &str) -> Option<usize> {
        let mut chars = token.char_indices().peekable();
        while let Some(&(i, c)) = chars.peek() {
            match c {
                '&' | '!' => while chars.next_if(|&(_, c)| !c.is_whitespace()).is_some() {},
                '#' => while chars.next_if(|&(_, c)| c != '\n' && c != '\r').is_some() {},
                c if c.is_whitespace() || c == '\u{feff}' => {
                    chars.next();
                }
                '[' | '{' => return Some(i),
                _ => return None,
            }
        }
        None
    }

    const FRAGMENTS: &[&str] = &[
        "a",
        "b",
        "key",
        "- ",
        "? ",
        ": ",
        ":",
        "[",
        "]",
        "{",
        "}",
        ", ",
        ",",
        "\"",
        "'",
        "\"x\"",
        "'y'",
        "''",
        "\\\"",
        "\\",
        "|",
        ">",
        "|-",
        "|2",
        ">+",
        " #c",
        "#",
        "\n",
        "\n ",
        "\n  ",
        "\n   ",
        "\n    ",
        "\n\t",
        " ",
        "\t",
        "&x ",
        "*x",
        "!t ",
        "!!str ",
        "!<a> ",
        "x\"y",
        "it's",
        "1",
        "-1",
        "\n...",
        "\r",
        "%",
        "@",
        "-",
        "?",
        "a: ",
        "- [",
        "k: [",
        "k: {",
        "\"a\":",
        "x: |\n  [q\n",
        "- - ",
        "[a: b]",
        "{a: [1, 2]}",
        ":x",
        "-x",
        "a b",
        "\u{feff}",
        "é",
        "\n# [\n",
    ];

    const VALUES: &[&str] = &[
        "[1, 2]",
        "{a: b}",
        "[a, [b, {c: d}]]",
        "[\"x]\", 'y[']",
        "{\"k\":\"v\"}",
        "[a\n  , b]",
        "plain",
        "\"quoted [\"",
        "'it''s {'",
        "|\n    text [\n",
        "[a: b, c]",
        "{? x : y}",
        "[ # c ]\n ]",
        "&x [*x]",
        "!!map {}",
        "[\"a\":[]]",
        "[a \"[\", b]",
        "{a: [1,\n2]}",
        "x [y]",
        "'q'",
        "[]",
        "{}",
        "[ [ [ ] ] ]",
        "{a: 'b]'}",
    ];

    const ENTRIES: &[&str] = &[
        "",
        "- ",
        "key: ",
        "- key: ",
        "? ",
        ": ",
        "k: &a ",
        "k: !!seq ",
        "\"q\": ",
        "- - ",
        "k: |\n",
        "k: >-\n",
    ];

    /// A small deterministic generator (xorshift), so the test needs no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 as usize
        }
    }

    #[test]
    fn finds_every_flow_collection_the_parser_sees() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut checked, mut with_flows) = (0, 0);
        for round in 0..60_000 {
            let pick = |rng: &mut Rng, from: &[&'static str]| from[rng.next() % from.len()];
            let doc: String = if round % 2 == 0 {
                // Fragment soup: mostly invalid YAML, every token kind in every position.
                let n = 4 + rng.next() % 40;
                (0..n).map(|_| pick(&mut rng, FRAGMENTS)).collect()
            } else {
                // Lines shaped like manifests: indentation, an entry, a value.
                let n = 1 + rng.next() % 8;
                (0..n)
                    .map(|_| {
                        let indent = " ".repeat(rng.next() % 5);
                        let entry = pick(&mut rng, ENTRIES);
                        let value: String = (0..1 + rng.next() % 3)
                            .map(|i| {
                                if i == 0 || !rng.next().is_multiple_of(3) {
                                    pick(&mut rng, VALUES)
                                } else {
                                    pick(&mut rng, FRAGMENTS)
                                }
                            })
                            .collect();
                        format!("{indent}{entry}{value}\n")
                    })
                    .collect()
            };
            let found = match prescan(&doc, LIMITS) {
                Ok(found) => found,
                // Directives and what kubectl's scanner stops on are refused before parsing;
                // nothing to compare.
                Err(Finding::Directive { .. } | Finding::KubectlRefuses { .. }) => continue,
                Err(other) => panic!("{other:?} for {doc:?}"),
            };
            let expected = parser_flows(&doc);
            checked += 1;
            with_flows += usize::from(!expected.is_empty());
            for (start, end) in expected {
                assert!(
                    found.iter().any(|&(s, e)| s == start && e >= end),
                    "the parser reads a flow collection at {start}..{end} that the pre-scan \
                     misses or cuts short: {:?}\nin {doc:?}\npre-scan: {found:?}",
                    doc.get(start..end)
                );
            }
        }
        // About a quarter of the documents hold a tab kubectl's scanner stops on and are not
        // compared.
        assert!(
            checked > 40_000 && with_flows > 10_000,
            "{checked} {with_flows}"
        );
    }
}
