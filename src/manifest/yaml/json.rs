//! JSON documents: the JSON streams kubectl sniffs (input starting with `{`) and the
//! documents of a YAML stream that are JSON as a whole.
//!
//! `serde_json` parses them through a `DeserializeSeed` that spends the node budget and
//! checks the depth as values arrive, so a hostile document fails before it is built. JSON
//! has no YAML 1.1/1.2 ambiguity; what remains to refuse is what kubectl would read
//! differently: duplicate keys (Go's `encoding/json` keeps the last silently) and integers
//! beyond 64 bits (kubectl's unstructured decoder turns them into rounded float64s).

use super::budget::{Budget, Exceeded, exact};
use super::error::{Step, YamlError, YamlLocation, render_path, shorten};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Why a JSON document was refused (other than by its syntax).
#[derive(Debug)]
enum Refusal {
    TooDeep,
    Budget(Exceeded),
    Duplicate(String),
    OutOfRange(u64),
}

/// A refusal and the path to it, innermost step first while unwinding.
#[derive(Debug)]
struct Failure {
    refusal: Refusal,
    path: Vec<OwnedStep>,
}

#[derive(Debug)]
enum OwnedStep {
    Key(String),
    Index(usize),
}

/// The outcome of parsing one JSON document.
pub(crate) enum Parsed {
    Value(Value),
    /// Not JSON (syntax): the caller may read it as YAML instead.
    NotJson(serde_json::Error),
}

/// Parses `text` as exactly one JSON value. `document` (1-based) and `first_line` place
/// errors in the stream.
pub(crate) fn parse_document(
    text: &str,
    document: usize,
    first_line: usize,
    budget: &mut Budget,
    max_depth: usize,
) -> Result<Parsed, YamlError> {
    let mut failure = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Seed {
        budget,
        depth: 1,
        max_depth,
        failure: &mut failure,
    };
    let result = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match (result, failure) {
        (Ok(v), _) => Ok(Parsed::Value(v)),
        (Err(e), Some(f)) => Err(refusal_error(
            f, &e, document, first_line, budget, max_depth,
        )),
        (Err(e), None) => Ok(Parsed::NotJson(e)),
    }
}

fn refusal_error(
    f: Failure,
    e: &serde_json::Error,
    document: usize,
    first_line: usize,
    budget: &Budget,
    max_depth: usize,
) -> YamlError {
    let steps: Vec<&OwnedStep> = f.path.iter().rev().collect();
    let at = Box::new(YamlLocation {
        document,
        path: render_path(steps.iter().map(|s| match s {
            OwnedStep::Key(k) => Step::Key(k),
            OwnedStep::Index(i) => Step::Index(*i),
        })),
        line: first_line + e.line().saturating_sub(1),
        column: e.column().max(1),
    });
    match f.refusal {
        Refusal::TooDeep => YamlError::TooDeep {
            at,
            limit: max_depth,
        },
        Refusal::Budget(Exceeded::Document) => YamlError::DocumentTooManyNodes {
            at,
            limit: budget.limit(Exceeded::Document),
        },
        Refusal::Budget(Exceeded::Stream) => YamlError::StreamTooManyNodes {
            at,
            limit: budget.limit(Exceeded::Stream),
        },
        Refusal::Duplicate(key) => YamlError::DuplicateKey {
            at,
            key: shorten(&key),
        },
        Refusal::OutOfRange(n) => YamlError::IntegerOutOfRange {
            at,
            text: n.to_string(),
        },
    }
}

struct Seed<'b> {
    budget: &'b mut Budget,
    depth: usize,
    max_depth: usize,
    failure: &'b mut Option<Failure>,
}

impl Seed<'_> {
    fn refuse<E: de::Error>(&mut self, refusal: Refusal) -> E {
        *self.failure = Some(Failure {
            refusal,
            path: Vec::new(),
        });
        E::custom("refused")
    }

    /// Spends one node at this depth.
    fn node<E: de::Error>(&mut self) -> Result<(), E> {
        if self.depth > self.max_depth {
            return Err(self.refuse(Refusal::TooDeep));
        }
        self.budget
            .charge(1)
            .map_err(|which| self.refuse(Refusal::Budget(which)))
    }

    fn child(&mut self) -> Seed<'_> {
        Seed {
            budget: self.budget,
            depth: self.depth + 1,
            max_depth: self.max_depth,
            failure: self.failure,
        }
    }

    fn note(&mut self, step: OwnedStep) {
        if let Some(f) = self.failure.as_mut() {
            f.path.push(step);
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(mut self) -> Result<Value, E> {
        self.node()?;
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(mut self, v: bool) -> Result<Value, E> {
        self.node()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(mut self, v: i64) -> Result<Value, E> {
        self.node()?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(mut self, v: u64) -> Result<Value, E> {
        self.node()?;
        match i64::try_from(v) {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => Err(self.refuse(Refusal::OutOfRange(v))),
        }
    }

    fn visit_f64<E: de::Error>(mut self, v: f64) -> Result<Value, E> {
        self.node()?;
        // serde_json never produces a non-finite float.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Value, E> {
        self.node()?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(mut self, v: String) -> Result<Value, E> {
        self.node()?;
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.node()?;
        let mut items = Vec::new();
        loop {
            let index = items.len();
            match seq.next_element_seed(self.child()) {
                Ok(Some(v)) => items.push(v),
                Ok(None) => break,
                Err(e) => {
                    self.note(OwnedStep::Index(index));
                    return Err(e);
                }
            }
        }
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut access: A) -> Result<Value, A::Error> {
        self.node()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if let Err(which) = self.budget.charge(1) {
                let e = self.refuse(Refusal::Budget(which));
                self.note(OwnedStep::Key(key));
                return Err(e);
            }
            if map.contains_key(&key) {
                let e = self.refuse(Refusal::Duplicate(key.clone()));
                self.note(OwnedStep::Key(key));
                return Err(e);
            }
            match access.next_value_seed(self.child()) {
                Ok(v) => {
                    map.insert(key, v);
                }
                Err(e) => {
                    self.note(OwnedStep::Key(key));
                    return Err(e);
                }
            }
        }
        Ok(Value::Object(exact(map)))
    }
}

/// One JSON value of a JSON stream.
pub(crate) struct JsonDocument<'a> {
    pub(crate) position: usize,
    pub(crate) first_line: usize,
    pub(crate) text: &'a str,
}

/// Cuts a JSON stream into its top-level values without parsing them: every value must be
/// an object (what kubectl applies); nesting and size are bounded here, before parsing.
pub(crate) struct JsonStream<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    position: usize,
    max_document_bytes: usize,
    max_depth: usize,
    failed: bool,
}

impl<'a> JsonStream<'a> {
    pub(crate) fn new(text: &'a str, max_document_bytes: usize, max_depth: usize) -> Self {
        JsonStream {
            text,
            pos: 0,
            line: 1,
            position: 0,
            max_document_bytes,
            max_depth,
            failed: false,
        }
    }

    fn column(&self, at: usize) -> usize {
        let start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        self.text[start..at].chars().count() + 1
    }
}

impl<'a> Iterator for JsonStream<'a> {
    type Item = Result<JsonDocument<'a>, YamlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let text: &'a str = self.text;
        let b = text.as_bytes();
        // encoding/json's whitespace between values.
        while let Some(&c) = b.get(self.pos) {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            self.pos += 1;
        }
        if self.pos >= b.len() {
            return None;
        }
        let (start, first_line, document) = (self.pos, self.line, self.position + 1);
        let at = |path: &str, line, column| {
            Box::new(YamlLocation {
                document,
                path: path.into(),
                line,
                column,
            })
        };
        if b[start] != b'{' {
            self.failed = true;
            return Some(Err(YamlError::NotAJsonStream {
                at: at("", first_line, self.column(start)),
                message: "expected `{`, the start of the next object".into(),
            }));
        }
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        let mut end = b.len();
        let mut i = start;
        while i < b.len() {
            let c = b[i];
            if i - start >= self.max_document_bytes {
                self.failed = true;
                return Some(Err(YamlError::DocumentTooLarge {
                    document,
                    line: first_line,
                    limit: self.max_document_bytes,
                }));
            }
            if c == b'\n' {
                self.line += 1;
            }
            if in_string {
                if escaped {
                    escaped = false;
                } else if c == b'\\' {
                    escaped = true;
                } else if c == b'"' {
                    in_string = false;
                }
            } else {
                match c {
                    b'"' => in_string = true,
                    b'{' | b'[' => {
                        depth += 1;
                        if depth > self.max_depth {
                            self.failed = true;
                            let column = self.column(i);
                            return Some(Err(YamlError::TooDeep {
                                at: at("", self.line, column),
                                limit: self.max_depth,
                            }));
                        }
                    }
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        self.pos = end;
        self.position += 1;
        Some(Ok(JsonDocument {
            position: document - 1,
            first_line,
            text: &text[start..end],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use serde_json::json;

    fn parse(text: &str, limits: &Limits) -> Result<Value, YamlError> {
        let mut budget = Budget::new(limits);
        match parse_document(text, 1, 1, &mut budget, limits.max_depth)? {
            Parsed::Value(v) => Ok(v),
            Parsed::NotJson(e) => panic!("not JSON: {e}"),
        }
    }

    #[test]
    fn json_documents_keep_order_and_exact_integers() {
        let v = parse(
            r#"{"b": 1, "a": [9007199254740993, -2, 1.5, null]}"#,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"b": 1, "a": [9007199254740993u64, -2, 1.5, null]})
        );
        assert_eq!(v.as_object().unwrap().keys().next().unwrap(), "b");
    }

    #[test]
    fn duplicate_keys_and_huge_integers_are_refused_with_their_path() {
        let err = parse(r#"{"a": {"x": 1, "x": 2}}"#, &Limits::default()).unwrap_err();
        assert!(
            matches!(&err, YamlError::DuplicateKey { at, key } if at.path == "a.x" && key == "x"),
            "{err}"
        );
        let err = parse(r#"{"a": [1, 18446744073709551615]}"#, &Limits::default()).unwrap_err();
        assert!(
            matches!(&err, YamlError::IntegerOutOfRange { at, .. } if at.path == "a[1]"),
            "{err}"
        );
    }

    #[test]
    fn the_node_budget_stops_a_large_document_while_it_is_read() {
        let limits = Limits {
            max_document_nodes: 10,
            ..Limits::default()
        };
        let err = parse(&format!("[{}1]", "1,".repeat(100)), &limits).unwrap_err();
        assert!(
            matches!(err, YamlError::DocumentTooManyNodes { limit: 10, .. }),
            "{err}"
        );
    }

    #[test]
    fn not_json_is_reported_as_such_for_the_yaml_fallback() {
        let mut budget = Budget::new(&Limits::default());
        assert!(matches!(
            parse_document("{a: 1}", 1, 1, &mut budget, 64).unwrap(),
            Parsed::NotJson(_)
        ));
    }

    #[test]
    fn a_json_stream_is_cut_into_objects_with_bounded_nesting() {
        let text = "{\"a\": \"}{\"}\n  {\"b\": [1]}{}";
        let docs: Vec<_> = JsonStream::new(text, 1 << 20, 64)
            .map(|d| d.map(|d| (d.position, d.first_line, d.text)))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            docs,
            vec![
                (0, 1, "{\"a\": \"}{\"}"),
                (1, 2, "{\"b\": [1]}"),
                (2, 2, "{}")
            ]
        );
        let deep = format!("{{\"a\":{}", "[".repeat(100_000));
        let err = JsonStream::new(&deep, 1 << 20, 64)
            .find_map(Result::err)
            .unwrap();
        assert!(matches!(err, YamlError::TooDeep { limit: 64, .. }), "{err}");
        let err = JsonStream::new("{} 5", 1 << 20, 64)
            .find_map(Result::err)
            .unwrap();
        assert!(matches!(err, YamlError::NotAJsonStream { .. }), "{err}");
    }
}
