//! One YAML document, built from saphyr-parser's events into a JSON value.
//!
//! Everything is checked as the events arrive, before anything larger is built: nesting depth
//! (`Limits::max_depth`), the node budget (every key, value and use of an alias; an alias
//! costs what it expands to, and strings it copies count one node per 16 bytes, so "billion
//! laughs" fails after a few thousand nodes), keys (strings in both readings, no duplicates,
//! no merge key `<<`), tags (core tags only) and every scalar's two readings
//! (`manifest::yaml::scalar`). Field paths for messages are built only when an error is reported,
//! from the stack of open collections.

use super::budget::{Budget, Exceeded, exact};
use super::elide::{self, Restore};
use super::error::{ScalarReadings, Step, YamlError, YamlLocation, render_path, shorten};
use super::scalar::{self, CoreTag, Refusal, Written};
use super::stream::Chunk;
use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;

/// Bytes of string an alias copies that cost one node.
const ALIAS_BYTES_PER_NODE: usize = 16;

/// Parses one document (a chunk between `---` lines, already pre-scanned). `None` when the
/// chunk holds no document (only comments or blank lines).
pub(crate) fn parse_document(
    chunk: &Chunk,
    budget: &mut Budget,
    max_depth: usize,
) -> Result<Option<Value>, YamlError> {
    parse_document_counted(chunk, budget, max_depth).0
}

/// [`parse_document`], and how many times the document was parsed again after a quoted
/// scalar was re-indented (for the tests that bound it).
fn parse_document_counted(
    chunk: &Chunk,
    budget: &mut Budget,
    max_depth: usize,
) -> (Result<Option<Value>, YamlError>, usize) {
    let (document, first_line) = (chunk.position + 1, chunk.first_line);
    // Long one-line values taken out first (`elide`): used only when that parse succeeds
    // and gives every value back; otherwise the document is parsed as written below.
    if let Some(elided) = elide::long_values(&chunk.text) {
        let before = budget.clone();
        let restore = Restore::new(&chunk.text, &elided);
        if let (Ok(value), _, true) = parse_once(
            &elided.text,
            Some(restore),
            document,
            first_line,
            budget,
            max_depth,
        ) {
            // Fuzz builds read every such document as written too, and stop at a
            // difference: the fuzz targets hold the two readings together.
            #[cfg(fuzzing)]
            {
                let mut written = before.clone();
                let (result, _) = parse_as_written(chunk, &mut written, max_depth);
                assert_eq!(result.as_ref().ok(), Some(&value), "{:?}", chunk.text);
                assert_eq!(format!("{written:?}"), format!("{budget:?}"));
            }
            return (Ok(value), 0);
        }
        *budget = before;
    }
    parse_as_written(chunk, budget, max_depth)
}

/// [`parse_document_counted`] of the text as written, nothing taken out.
fn parse_as_written(
    chunk: &Chunk,
    budget: &mut Budget,
    max_depth: usize,
) -> (Result<Option<Value>, YamlError>, usize) {
    let (document, first_line) = (chunk.position + 1, chunk.first_line);
    let mut text = Cow::Borrowed(chunk.text.as_str());
    let mut reindented = 0;
    // Where the last re-indented scalar starts, and the bytes parsed so far: each parse
    // again must be for a scalar after the last one (a scalar the parser still refuses
    // once re-indented is refused, never re-indented again, which grew the text and
    // repeated the parse up to MAX_REINDENTED times: 0.4 s of CPU for a 1.8 KB input, found
    // by fuzzing), and all of them together read at most MAX_REPARSED_BYTES.
    let mut last: Option<usize> = None;
    let mut parsed_bytes = 0usize;
    loop {
        let before = budget.clone();
        parsed_bytes = parsed_bytes.saturating_add(text.len());
        let (result, below_indent, _) =
            parse_once(&text, None, document, first_line, budget, max_depth);
        let fixed = match (&result, below_indent) {
            (Err(_), Some(index))
                if reindented < MAX_REINDENTED
                    && last.is_none_or(|l| index > l)
                    && parsed_bytes.saturating_add(text.len()) <= MAX_REPARSED_BYTES =>
            {
                last = Some(index);
                reindent_quoted(&text, index)
            }
            _ => None,
        };
        match fixed {
            Some(fixed) => {
                *budget = before;
                text = Cow::Owned(fixed);
                reindented += 1;
            }
            None => return (result, reindented),
        }
    }
}

/// How many quoted scalars continued below their block's indentation one document may hold
/// (each costs one more parse of the document); more are refused as the parser refuses them.
const MAX_REINDENTED: usize = 64;

/// The most bytes the parses of one document may read together, the re-indented ones
/// included (the largest input, `Limits::max_input_bytes`'s default): past it the parser's
/// refusal stands.
const MAX_REPARSED_BYTES: usize = 32 << 20;

/// A quoted scalar continued on lines indented less than its block (`a: "one\ntwo"` inside a
/// mapping, the continuation at the key's column or left of it) is an error for
/// saphyr-parser ("invalid indentation in quoted scalar") but text for kubectl: go-yaml v2
/// (go.yaml.in/yaml/v2 v2.4.4, scannerc.go, `yaml_parser_scan_flow_scalar`) checks no
/// indentation inside a quoted scalar. Both drop the leading blanks of every continuation
/// line when they fold it (YAML 1.2.2 §7.3.1 and §7.3.2, libyaml alike), so indenting those
/// lines further changes neither reading: the scalar starting at character `index` gets its
/// continuation lines indented past its own column, and the document is parsed again. A
/// continuation line that is a document marker (`---`, `...`) stays: both parsers refuse it.
fn reindent_quoted(text: &str, index: usize) -> Option<String> {
    let start = text.char_indices().nth(index)?.0;
    let quote = text[start..].chars().next()?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let pad = " ".repeat(text[line_start..start].chars().count() + 1);
    let rest = &text[start + 1..];
    let mut out = String::with_capacity(text.len() + 4 * pad.len());
    out.push_str(&text[..=start]);
    let mut end = rest.len();
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                out.push(c);
                // An escaped character is copied with its backslash; an escaped line break
                // is a line break like any other below.
                if let Some(&(_, next)) = chars.peek()
                    && next != '\n'
                {
                    out.push(next);
                    chars.next();
                }
            }
            '\'' if quote == '\'' && matches!(chars.peek(), Some(&(_, '\''))) => {
                out.push_str("''");
                chars.next();
            }
            c if c == quote => {
                out.push(c);
                end = i + c.len_utf8();
                break;
            }
            '\n' => {
                out.push('\n');
                let next = &rest[i + 1..];
                let marker = (next.starts_with("---") || next.starts_with("..."))
                    && matches!(
                        next[3..].chars().next(),
                        None | Some(' ' | '\t' | '\n' | '\r')
                    );
                if marker {
                    return None;
                }
                out.push_str(&pad);
            }
            _ => out.push(c),
        }
    }
    out.push_str(&rest[end..]);
    Some(out)
}

/// One parse of a document. Also returns, when the parser refused a quoted scalar continued
/// below its block's indentation, the character index where that scalar starts, and (with
/// `restore`) whether every value taken out came back.
fn parse_once<'t>(
    text: &'t str,
    restore: Option<Restore<'t>>,
    document: usize,
    first_line: usize,
    budget: &mut Budget,
    max_depth: usize,
) -> (Result<Option<Value>, YamlError>, Option<usize>, bool) {
    let mut builder = Builder {
        restore,
        document,
        first_line,
        max_depth,
        budget,
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        source: text,
        cursor: (0, 0),
        quoted_below_indent: None,
    };
    // saphyr-parser is fuzzed upstream, but a parser bug must not take a webhook down: a
    // panic while reading untrusted input becomes an error for that document.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        builder.run(&mut Parser::new_from_str(text))
    }));
    let below_indent = builder.quoted_below_indent;
    let restored = builder.restore.as_ref().is_none_or(Restore::complete);
    let result = match outcome {
        Ok(Ok(())) => Ok(builder.root),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(YamlError::Syntax {
            document,
            message: "the YAML parser failed on this document".into(),
        }),
    };
    (result, below_indent, restored)
}

/// A collection being built.
struct Frame {
    kind: Kind,
    anchor: usize,
    /// Nodes of the subtree so far (itself included).
    nodes: usize,
    /// String bytes of the subtree so far (keys and string values).
    bytes: usize,
    /// Height of the tallest child.
    height: usize,
}

enum Kind {
    Seq(Vec<Value>),
    /// The mapping and the key whose value comes next.
    Map(Map<String, Value>, Option<String>),
}

/// A node with an anchor, kept for its aliases.
struct Anchored {
    /// The node as a value (a scalar's value reading may be refused while its key reading
    /// was fine: the refusal is reported where the alias is used as a value).
    value: Result<Value, Refusal>,
    /// For a scalar: how it was written, to read it again as a key.
    scalar: Option<(String, Written, Option<CoreTag>)>,
    nodes: usize,
    bytes: usize,
    height: usize,
}

impl Anchored {
    /// What one more copy costs in nodes.
    fn cost(&self) -> usize {
        self.nodes
            .saturating_add(self.bytes.div_ceil(ALIAS_BYTES_PER_NODE))
    }
}

struct Builder<'b> {
    document: usize,
    first_line: usize,
    max_depth: usize,
    budget: &'b mut Budget,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    root: Option<Value>,
    /// The document's text, for what the events do not carry (how a scalar was escaped).
    source: &'b str,
    /// The last (character index, byte offset) pair found in `source`: events come in
    /// source order, so finding the next one starts here.
    cursor: (usize, usize),
    /// Where the quoted scalar the parser refused for its indentation starts (character
    /// index), see `reindent_quoted`.
    quoted_below_indent: Option<usize>,
    /// When `source` is an [`Elided`](elide::Elided) text: its values, put back as their events arrive.
    restore: Option<Restore<'b>>,
}

/// A core tag, on a scalar or a collection.
enum CoreKind {
    Scalar(CoreTag),
    Map,
    Seq,
}

impl Builder<'_> {
    fn run(
        &mut self,
        parser: &mut Parser<'_, saphyr_parser::StrInput<'_>>,
    ) -> Result<(), YamlError> {
        let mut documents = 0;
        while let Some(next) = parser.next_event() {
            let (event, span) = next.map_err(|e| {
                if e.info() == "invalid indentation in quoted scalar" {
                    self.quoted_below_indent = Some(e.marker().index());
                }
                YamlError::Syntax {
                    document: self.document,
                    message: format!(
                        "line {}, column {}: {}",
                        self.first_line + e.marker().line().saturating_sub(1),
                        e.marker().col() + 1,
                        e.info()
                    ),
                }
            })?;
            match event {
                Event::DocumentStart(_) => {
                    documents += 1;
                    if documents > 1 {
                        return Err(YamlError::ContentAfterDocumentEnd {
                            at: self.at(span, None),
                        });
                    }
                }
                Event::StreamEnd => return Ok(()),
                Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
                Event::Alias(id) => self.alias(id, span)?,
                Event::Scalar(text, style, anchor, tag) => {
                    let text = match &mut self.restore {
                        None => text,
                        Some(restore) => restore
                            .scalar(text, style == ScalarStyle::Plain, span.start.index())
                            .map_err(|_| YamlError::Syntax {
                                document: self.document,
                                message: "a value taken out did not come back".into(),
                            })?,
                    };
                    self.scalar(text, style, anchor, tag.as_deref(), span)?;
                }
                Event::SequenceStart(anchor, tag) => {
                    self.start(false, anchor, tag.as_deref(), span)?
                }
                Event::MappingStart(anchor, tag) => {
                    self.start(true, anchor, tag.as_deref(), span)?
                }
                Event::SequenceEnd | Event::MappingEnd => self.end(span)?,
            }
        }
        Ok(())
    }

    // ---- where we are

    fn at_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                kind: Kind::Map(_, None),
                ..
            })
        )
    }

    fn path(&self, extra: Option<&str>) -> String {
        let steps = self.stack.iter().filter_map(|f| match &f.kind {
            Kind::Seq(items) => Some(Step::Index(items.len())),
            Kind::Map(_, Some(k)) => Some(Step::Key(k)),
            Kind::Map(_, None) => None,
        });
        render_path(steps.chain(extra.map(Step::Key)))
    }

    fn at(&self, span: Span, key: Option<&str>) -> Box<YamlLocation> {
        Box::new(YamlLocation {
            document: self.document,
            path: self.path(key),
            line: self.first_line + span.start.line().saturating_sub(1),
            column: span.start.col() + 1,
        })
    }

    // ---- budgets

    fn charge(&mut self, nodes: usize, span: Span) -> Result<(), YamlError> {
        self.budget.charge(nodes).map_err(|which| {
            let limit = self.budget.limit(which);
            let at = self.at(span, None);
            match which {
                Exceeded::Document => YamlError::DocumentTooManyNodes { at, limit },
                Exceeded::Stream => YamlError::StreamTooManyNodes { at, limit },
            }
        })
    }

    fn check_depth(&self, height: usize, span: Span) -> Result<(), YamlError> {
        if self.stack.len() + height > self.max_depth {
            return Err(YamlError::TooDeep {
                at: self.at(span, None),
                limit: self.max_depth,
            });
        }
        Ok(())
    }

    // ---- tags

    fn core_tag(&self, tag: Option<&Tag>, span: Span) -> Result<Option<CoreKind>, YamlError> {
        let Some(tag) = tag else {
            return Ok(None);
        };
        let kind = if tag.is_yaml_core_schema() {
            match tag.suffix.as_str() {
                "str" => Some(CoreKind::Scalar(CoreTag::Str)),
                "int" => Some(CoreKind::Scalar(CoreTag::Int)),
                "float" => Some(CoreKind::Scalar(CoreTag::Float)),
                "bool" => Some(CoreKind::Scalar(CoreTag::Bool)),
                "null" => Some(CoreKind::Scalar(CoreTag::Null)),
                "map" => Some(CoreKind::Map),
                "seq" => Some(CoreKind::Seq),
                _ => None,
            }
        } else {
            None
        };
        kind.map(Some).ok_or_else(|| YamlError::UnsupportedTag {
            at: self.at(span, None),
            tag: shorten(&tag_text(tag)),
        })
    }

    // ---- events

    fn scalar(
        &mut self,
        text: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), YamlError> {
        let written = match style {
            ScalarStyle::Plain => Written::Plain,
            _ => Written::Quoted,
        };
        let core = match self.core_tag(tag, span)? {
            None => None,
            Some(CoreKind::Scalar(t)) => Some(t),
            Some(CoreKind::Map | CoreKind::Seq) => {
                return Err(YamlError::TagMismatch {
                    at: self.at(span, None),
                    tag: tag.map(tag_text).unwrap_or_default(),
                    text: shorten(&text),
                });
            }
        };
        if style == ScalarStyle::DoubleQuoted {
            self.check_escapes(span)?;
        }
        if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
            self.check_block_tabs(span)?;
        }
        let anchored = (anchor > 0).then(|| (text.to_string(), written, core));
        if self.at_key() {
            self.charge(1, span)?;
            if written == Written::Plain && core.is_none() && text == "<<" {
                return Err(YamlError::MergeKey {
                    at: self.at(span, None),
                });
            }
            let key = scalar::key(&text, written, core)
                .map_err(|r| self.refusal(r, &text, span, Some(&text)))?;
            if let Some((source, written, core)) = anchored {
                let value = scalar::value(&source, written, core);
                let source = Some((source, written, core));
                self.store_anchor(anchor, value, source, 1, key.len(), 1, span)?;
            }
            return self.set_key(key, span);
        }
        self.check_depth(1, span)?;
        self.charge(1, span)?;
        let reading = scalar::accepted(&text, written, core)
            .map_err(|r| self.refusal(r, &text, span, None))?;
        // A copy, not the parser's buffer: that one has room to spare (measured: 25% more
        // memory when kept).
        let value = scalar::into_value(reading, || text.to_string());
        let bytes = value.as_str().map_or(0, str::len);
        if let Some(source) = anchored {
            self.store_anchor(anchor, Ok(value.clone()), Some(source), 1, bytes, 1, span)?;
        }
        self.push(value, 1, bytes, 1);
        Ok(())
    }

    /// Refuses a double-quoted scalar (starting at `span`) with an escape kubectl's parser
    /// refuses (`scalar::escape_kubectl_refuses`).
    fn check_escapes(&mut self, span: Span) -> Result<(), YamlError> {
        // Fail closed: a scalar that cannot be found in the text is not read.
        let document = self.document;
        let not_found = || YamlError::Syntax {
            document,
            message: "cannot locate a double-quoted scalar in the text".into(),
        };
        let start = self.byte_offset(span.start.index()).ok_or_else(not_found)?;
        // The span may start at an anchor or tag written before the quote.
        let quote = self.source[start..].find('"').ok_or_else(not_found)?;
        match scalar::escape_kubectl_refuses(&self.source[start + quote..]) {
            None => Ok(()),
            Some(escape) => {
                let fix = match escape.as_str() {
                    "\\/" => "write `/` without the backslash".to_string(),
                    e if e.starts_with("\\u") || e.starts_with("\\U") => {
                        "write the character itself, or `\\U` and its code point (kubectl \
                         reads no surrogate pairs)"
                            .to_string()
                    }
                    _ => "remove the backslash or escape it as `\\\\`".to_string(),
                };
                Err(YamlError::UnknownEscape {
                    at: self.at(span, None),
                    escape,
                    fix,
                })
            }
        }
    }

    /// Refuses a block scalar without an indentation indicator whose first content line has
    /// a tab right after its leading spaces: go-yaml v2 (scannerc.go,
    /// `yaml_parser_scan_block_scalar_breaks`) fails there ("found a tab character where an
    /// indentation space is expected") while the indentation is not yet known, saphyr-parser
    /// reads the tab as text (found by tests/it/yaml_oracle.rs, issue 22).
    fn check_block_tabs(&mut self, span: Span) -> Result<(), YamlError> {
        let document = self.document;
        let start = self
            .byte_offset(span.start.index())
            .ok_or(YamlError::Syntax {
                document,
                message: "cannot locate a block scalar in the text".into(),
            })?;
        // The span starts at the indicator (or an anchor or tag before it), or at the first
        // content character, after the header's line: then the indicator is the last one
        // before that line (the content may hold `|` and `>` too).
        let line_start = self.source[..start].rfind('\n').map_or(0, |i| i + 1);
        let rest = &self.source[start..];
        let header_here = rest.starts_with(['|', '>']) && {
            let after = rest[1..]
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-')
                .trim_start_matches([' ', '\t']);
            after.is_empty() || after.starts_with(['\n', '\r', '#'])
        };
        let on_content_line = line_start > 0
            && self.source[line_start..start]
                .chars()
                .all(|c| c == ' ' || c == '\t')
            && !header_here;
        let search_end = if on_content_line {
            line_start
        } else {
            rest.find('\n').map_or(self.source.len(), |i| start + i)
        };
        let Some(indicator) = self.source[..search_end].rfind(['|', '>']) else {
            return Ok(());
        };
        let mut lines = self.source[indicator..].split('\n');
        let header = lines.next().unwrap_or_default();
        let header = header.split(" #").next().unwrap_or_default();
        if header.chars().any(|c| c.is_ascii_digit()) {
            return Ok(());
        }
        for (i, line) in lines.enumerate() {
            let content = line.trim_start_matches(' ');
            match content.chars().next() {
                None | Some('\r') => continue,
                Some('\t') => {
                    let header_line =
                        self.first_line + self.source[..indicator].matches('\n').count();
                    let line_no = header_line + 1 + i;
                    return Err(YamlError::Syntax {
                        document,
                        message: format!(
                            "line {line_no}: a tab right after the indentation of a block \
                             scalar's first line; kubectl refuses it (found a tab character \
                             where an indentation space is expected); indent with spaces"
                        ),
                    });
                }
                Some(_) => break,
            }
        }
        Ok(())
    }

    /// The byte offset of character `index` of the source.
    fn byte_offset(&mut self, index: usize) -> Option<usize> {
        let (mut chars, mut bytes) = self.cursor;
        if index < chars {
            (chars, bytes) = (0, 0);
        }
        // Where the next `index - chars` bytes are ASCII, each is one character: the walk
        // below would count them one by one to the same place.
        let ahead = index - chars;
        if self
            .source
            .as_bytes()
            .get(bytes..bytes.checked_add(ahead)?)
            .is_some_and(<[u8]>::is_ascii)
        {
            self.cursor = (index, bytes + ahead);
            return Some(bytes + ahead);
        }
        for c in self.source.get(bytes..)?.chars() {
            if chars == index {
                break;
            }
            chars += 1;
            bytes += c.len_utf8();
        }
        if chars != index {
            return None;
        }
        self.cursor = (chars, bytes);
        Some(bytes)
    }

    fn set_key(&mut self, key: String, span: Span) -> Result<(), YamlError> {
        let duplicate = matches!(
            self.stack.last(),
            Some(Frame { kind: Kind::Map(map, None), .. }) if map.contains_key(&key)
        );
        if duplicate {
            return Err(YamlError::DuplicateKey {
                at: self.at(span, Some(&key)),
                key: shorten(&key),
            });
        }
        if let Some(Frame {
            kind: Kind::Map(_, pending),
            nodes,
            bytes,
            ..
        }) = self.stack.last_mut()
        {
            *nodes += 1;
            *bytes += key.len();
            *pending = Some(key);
        }
        Ok(())
    }

    fn start(
        &mut self,
        mapping: bool,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), YamlError> {
        if self.at_key() {
            return Err(YamlError::KeyNotString {
                at: self.at(span, None),
                text: if mapping { "{...}" } else { "[...]" }.into(),
                reading: if mapping { "a mapping" } else { "a list" }.into(),
            });
        }
        match (self.core_tag(tag, span)?, mapping) {
            (None | Some(CoreKind::Map), true) | (None | Some(CoreKind::Seq), false) => {}
            _ => {
                return Err(YamlError::TagMismatch {
                    at: self.at(span, None),
                    tag: tag.map(tag_text).unwrap_or_default(),
                    text: if mapping { "a mapping" } else { "a list" }.into(),
                });
            }
        }
        self.check_depth(1, span)?;
        self.charge(1, span)?;
        self.stack.push(Frame {
            kind: if mapping {
                Kind::Map(Map::new(), None)
            } else {
                Kind::Seq(Vec::new())
            },
            anchor,
            nodes: 1,
            bytes: 0,
            height: 0,
        });
        Ok(())
    }

    fn end(&mut self, span: Span) -> Result<(), YamlError> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        // Growth leaves spare room (a one-item list holds four slots): give it back, so the
        // node budget bounds memory.
        let value = match frame.kind {
            Kind::Seq(mut items) => {
                items.shrink_to_fit();
                Value::Array(items)
            }
            Kind::Map(map, _) => Value::Object(exact(map)),
        };
        let height = frame.height + 1;
        if frame.anchor > 0 {
            self.store_anchor(
                frame.anchor,
                Ok(value.clone()),
                None,
                frame.nodes,
                frame.bytes,
                height,
                span,
            )?;
        }
        self.push(value, frame.nodes, frame.bytes, height);
        Ok(())
    }

    fn alias(&mut self, id: usize, span: Span) -> Result<(), YamlError> {
        let Some(a) = self.anchors.get(&id) else {
            // An alias inside the node it names (`&a [*a]`): go-yaml refuses it too.
            return Err(YamlError::Syntax {
                document: self.document,
                message: format!(
                    "line {}: an alias refers to the node that contains it",
                    self.first_line + span.start.line().saturating_sub(1)
                ),
            });
        };
        let (cost, nodes, bytes, height) = (a.cost(), a.nodes, a.bytes, a.height);
        let is_scalar = a.scalar.is_some();
        // Spend the budget first: only then copy.
        if self.at_key() {
            if !is_scalar {
                return Err(YamlError::KeyNotString {
                    at: self.at(span, None),
                    text: "*alias".into(),
                    reading: "a mapping or a list".into(),
                });
            }
            self.charge(cost, span)?;
            let Some((text, written, core)) = self.anchors.get(&id).and_then(|a| a.scalar.clone())
            else {
                return Ok(());
            };
            if written == Written::Plain && core.is_none() && text == "<<" {
                return Err(YamlError::MergeKey {
                    at: self.at(span, None),
                });
            }
            let key = scalar::key(&text, written, core)
                .map_err(|r| self.refusal(r, &text, span, Some(&text)))?;
            return self.set_key(key, span);
        }
        self.check_depth(height, span)?;
        self.charge(cost, span)?;
        let Some(a) = self.anchors.get(&id) else {
            return Ok(());
        };
        match &a.value {
            Ok(value) => {
                let value = value.clone();
                self.push(value, nodes, bytes, height);
                Ok(())
            }
            Err(r) => {
                let (r, text) = (r.clone(), a.scalar.as_ref().map(|s| s.0.clone()));
                Err(self.refusal(r, text.as_deref().unwrap_or_default(), span, None))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn store_anchor(
        &mut self,
        id: usize,
        value: Result<Value, Refusal>,
        scalar: Option<(String, Written, Option<CoreTag>)>,
        nodes: usize,
        bytes: usize,
        height: usize,
        span: Span,
    ) -> Result<(), YamlError> {
        let entry = Anchored {
            value,
            scalar,
            nodes,
            bytes,
            height,
        };
        // The copy kept for aliases costs what it holds.
        self.charge(entry.cost(), span)?;
        self.anchors.insert(id, entry);
        Ok(())
    }

    fn push(&mut self, value: Value, nodes: usize, bytes: usize, height: usize) {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(frame) => {
                frame.nodes += nodes;
                frame.bytes += bytes;
                frame.height = frame.height.max(height);
                match &mut frame.kind {
                    Kind::Seq(items) => items.push(value),
                    Kind::Map(map, pending) => {
                        if let Some(k) = pending.take() {
                            map.insert(k, value);
                        }
                    }
                }
            }
        }
    }

    fn refusal(&self, r: Refusal, text: &str, span: Span, key: Option<&str>) -> YamlError {
        let at = self.at(span, key);
        let text = shorten(text);
        match r {
            Refusal::Ambiguous {
                yaml12,
                kubectl,
                fix,
            } => YamlError::AmbiguousScalar {
                at,
                text,
                readings: Box::new(ScalarReadings {
                    yaml12,
                    kubectl,
                    fix,
                }),
            },
            Refusal::OutOfRange => YamlError::IntegerOutOfRange { at, text },
            Refusal::NotFinite => YamlError::NotFinite { at, text },
            Refusal::TagMismatch { tag } => YamlError::TagMismatch {
                at,
                tag: tag.into(),
                text,
            },
            Refusal::KeyNotString { reading } => YamlError::KeyNotString { at, text, reading },
        }
    }
}

/// A tag as written: `!!binary`, `!custom`, `!<tag:example.com,2000:x>`.
fn tag_text(tag: &Tag) -> String {
    if tag.is_yaml_core_schema() {
        format!("!!{}", tag.suffix)
    } else if tag.handle == "!" {
        format!("!{}", tag.suffix)
    } else if tag.handle.is_empty() {
        tag.suffix.clone()
    } else {
        format!("!<{}{}>", tag.handle, tag.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::manifest::yaml::stream::Chunks;

    fn parse_counted(text: &str) -> (Result<Option<Value>, YamlError>, usize) {
        let chunk = Chunk {
            position: 0,
            first_line: 1,
            text: text.to_string(),
        };
        let limits = Limits::default();
        parse_document_counted(&chunk, &mut Budget::new(&limits), limits.max_depth)
    }

    /// Both readings of `text`, document by document: with long values taken out first
    /// (what mansign does) and as written. Results and errors alike must be the same, and
    /// so must what the budget counted. Returns how many documents took the fast path.
    fn same_reading(text: &str) -> usize {
        let limits = Limits::default();
        let mut fast = 0;
        for chunk in Chunks::new(text, limits.max_document_bytes) {
            let Ok(chunk) = chunk else { return fast };
            fast += same_reading_of(&chunk);
        }
        fast
    }

    /// [`same_reading`] of one chunk: 1 when it took the fast path.
    fn same_reading_of(chunk: &Chunk) -> usize {
        let limits = Limits::default();
        let (mut b1, mut b2) = (Budget::new(&limits), Budget::new(&limits));
        let took_out = elide::long_values(&chunk.text).is_some();
        let with = parse_document_counted(chunk, &mut b1, limits.max_depth);
        let written = parse_as_written(chunk, &mut b2, limits.max_depth);
        assert_eq!(
            format!("{:?}", with.0),
            format!("{:?}", written.0),
            "{:?}",
            chunk.text
        );
        assert_eq!(format!("{b1:?}"), format!("{b2:?}"), "{:?}", chunk.text);
        // the fast path was taken when it parsed nothing again
        usize::from(took_out && with.1 == 0 && written.1 == 0 && with.0.is_ok())
    }

    #[test]
    fn every_yaml_file_of_testdata_reads_the_same_with_long_values_taken_out() {
        let (mut files, mut fast) = (0, 0);
        let mut stack = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata"
        ))];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml")
                    && let Ok(text) = std::fs::read_to_string(&path)
                {
                    fast += same_reading(&text);
                    files += 1;
                }
            }
        }
        // the signed fixtures take the fast path
        assert!(
            files > 100 && fast > 25,
            "{files} files, {fast} documents with values taken out"
        );
    }

    #[test]
    fn long_values_in_every_context_read_the_same_taken_out_or_not() {
        let long = "H4sIAAAAAAAA/01QwU7DMAy99yuiHpG8pRFDK+/=".repeat(3);
        let key = "cosign.sigstore.dev/bundle";
        let shapes = [
            // the fast path: a value, then the next key, the end, a comment, a list, a key
            // less indented
            "a:\n  {K}: {V}\n  b: c\n",
            "a:\n  {K}: {V}",
            "a:\n  {K}: {V}\n# c\n",
            "a:\n  {K}: {V}\nb:\n- c\n",
            "- {K}: {V}\n- x: y\n",
            "a:\n  {K}: {V}\n  {K}2: {V}\n",
            "ü: é\na:\n  {K}: {V}\n  b: \"ü\\u00e9\"\n",
            // continued on the next line (a longer plain scalar), or after a blank line
            "a:\n  {K}: {V}\n    more\n",
            "a:\n  {K}: {V}\n\n    more\n",
            "a:\n  {K}: {V}\n   \n    more\n",
            "a:\n  {K}: {V}\n\tmore\n",
            // inside a block scalar, a quoted scalar, a flow collection, a comment
            "a: |\n  {K}: {V}\n",
            "a: >-\n  {K}: {V}\n  b\n",
            "a: \"x\n  {K}: {V}\n  y\"\n",
            "a: 'x\n  {K}: {V}\n  y'\n",
            "a: {\n  {K}: {V}\n  }\n",
            "a: {\n  {K}: {V}\n  more }\n",
            "a: [\n  {K}: {V}\n  ]\n",
            "#a:\n  {K}: {V}\n",
            // refused: a duplicate key, bad indentation, a tab, a key after the value
            "a:\n  {K}: {V}\n  {K}: {V}\n",
            "a:\n  {K}: {V}\n   b: c\n",
            "a:\n  {K}: {V}\n\tb: c\n",
            "a:\n  {K}: {V}\n b: c\n",
            "a:\n  {K}: {V}: x\n",
            "{K}: {V}\n---\n{K}: {V}\n",
            "%YAML 1.2\n---\n{K}: {V}\n",
            "a: &x\n  {K}: {V}\nb: *x\n",
            "a:\n  {K}: !!str {V}\n",
            "a:\n  {K}: {V}\n...\n",
            // directives (saphyr counts their parameters in bytes: elide keeps the values)
            "%FOO éééééé\n--- [A,\n{K}: {V}\n]\n",
            "%YAML 1.2\n--- [A,\n{K}: {V}\n]\n",
        ];
        let values = [
            long.clone(),
            "1".repeat(70),
            format!("0x{}", "1".repeat(70)),
            "=".repeat(70),
            "true".repeat(20),
            format!("{long}="),
        ];
        let mut fast = 0;
        for shape in shapes {
            for value in &values {
                let text = shape.replace("{K}", key).replace("{V}", value);
                fast += same_reading(&text);
            }
        }
        // the first shapes take the fast path, the others fall back: both are covered
        assert!(fast >= 30, "{fast} documents read with values taken out");
        // The review's case, as one chunk (a stream splits it at `---`, and the pre-scan
        // refuses the directive): its non-ASCII parameters move saphyr's marks (it counts
        // them in bytes) onto a literal `A` before the placeholder.
        same_reading_of(&Chunk {
            position: 0,
            first_line: 1,
            text: format!("%FOO éééééé\n--- [A,\nk: {long}\n]\n"),
        });
    }

    #[test]
    fn byte_offsets_are_those_of_the_characters_forward_back_and_past_the_end() {
        let source = "a: b\n  é: \"ü€😀x\"\n  c: ascii again\n😀";
        let limits = Limits::default();
        let mut budget = Budget::new(&limits);
        let mut builder = Builder {
            document: 1,
            first_line: 1,
            max_depth: limits.max_depth,
            budget: &mut budget,
            stack: Vec::new(),
            anchors: HashMap::new(),
            root: None,
            source,
            cursor: (0, 0),
            quoted_below_indent: None,
            restore: None,
        };
        let chars = source.chars().count();
        let expected = |i: usize| {
            source
                .char_indices()
                .map(|(b, _)| b)
                .chain([source.len()])
                .nth(i)
        };
        // Forward one by one, then back and forth in jumps, from wherever the cursor is.
        let mut order: Vec<usize> = (0..=chars + 2).collect();
        order.extend((0..=chars + 2).rev());
        order.extend([5, 30, 2, chars, 0, chars + 1, 7, 8, 6]);
        for i in order {
            assert_eq!(builder.byte_offset(i), expected(i), "character {i}");
        }
    }

    #[test]
    fn a_quoted_scalar_still_refused_once_reindented_is_not_reindented_again() {
        // Found by fuzzing (the `message` target): a quoted scalar starting at column ~900
        // that the parser refuses however its continuation lines are indented. Each parse
        // again padded those lines by 900 more spaces, 64 times: 0.4 s of CPU in a release
        // build for 1.8 KB. Now one re-indentation, then the parser's refusal.
        let text = include_str!("../../../testdata/fuzz-regressions/message-reindent-loop");
        let (result, reparsed) = parse_counted(text);
        assert!(result.is_err(), "{result:?}");
        assert!(reparsed <= 1, "parsed {reparsed} times again");
    }

    #[test]
    fn each_quoted_scalar_continued_below_its_block_is_reindented_once() {
        // Three such scalars: three parses again, and the document reads.
        let text = "a:\n  b: \"one\n  two\"\n  c: 'three\n four'\n  d: \"five\nsix\"\n";
        let (result, reparsed) = parse_counted(text);
        assert_eq!(
            result.unwrap(),
            Some(serde_json::json!({"a": {"b": "one two", "c": "three four", "d": "five six"}}))
        );
        assert_eq!(reparsed, 3);
    }
}
