//! Comparing an object with the document that was signed.
//!
//! **Equality** (docs/design.md, "What equality means"): the two trees are walked together.
//!
//! * A key present on one side only is a difference, whatever it holds: `null`, `{}`, `[]`
//!   and `""` are values. The API server decodes `namespaceSelector: {matchExpressions: []}`
//!   as an empty, non-nil selector ("every namespace"), and a custom resource keeps `x: null`
//!   and `x: []` as written, so "looks empty" is never "absent".
//! * Lists compare by position: a reordered `args` list is a real change (kubectl-sigstore
//!   tolerates re-ordering; mansign does not).
//! * Leaves compare by JSON value; numbers by value (`1` equals `1.0`: JSON from the API
//!   server vs YAML from a file), exactly, never through a rounding float.
//! * A map or list on one side and something else on the other is one changed field.
//!
//! What may differ is decided by a *judge* (ignore patterns, tolerance profiles), asked for
//! each difference with the whole value at that path, so a rule can accept a subtree at once
//! (`status`) or only an exact value (`securityContext: {}`); a subtree the judge does not
//! accept as a whole is judged field by field.
//!
//! **Cost.** The walk is linear in the size of both documents: paths are a stack of borrowed
//! keys while walking, and an owned [`FieldPath`] is built only for the differences that are
//! reported, at most [`MAX_REPORTED_DIFFS`] of them (the rest are counted). Long keys above
//! many fields cannot multiply into gigabytes.
//!
//! Ignore-field patterns are anchored at the root and match whole path segments: `status`
//! ignores `status` and everything below it, never `spec.template.metadata.labels.status`
//! (kubectl-sigstore and Kyverno use unanchored regexes, research kyverno-manifests §2.10 F3).

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt;

/// Differences reported in full per comparison; further ones are only counted. A verdict
/// needs one to deny; a hundred explain any real edit.
pub const MAX_REPORTED_DIFFS: usize = 100;

/// Deepest nesting the comparison follows. Parsed documents are far shallower
/// ([`Limits::max_depth`](crate::Limits::max_depth)); this bounds values handed in by library
/// callers.
pub const MAX_COMPARE_DEPTH: usize = 256;

/// Largest value (in tree nodes) copied into a reported difference; a bigger subtree is
/// summarised (`{… 120 entries}`), so a report stays small whatever was changed.
const MAX_SHOWN_NODES: usize = 64;

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// One step of a path while walking: borrowed, so walking allocates nothing per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl Segment {
    pub fn step(&self) -> Step<'_> {
        match self {
            Segment::Key(k) => Step::Key(k),
            Segment::Index(i) => Step::Index(*i),
        }
    }
}

impl From<Step<'_>> for Segment {
    fn from(s: Step<'_>) -> Self {
        match s {
            Step::Key(k) => Segment::Key(k.to_string()),
            Step::Index(i) => Segment::Index(i),
        }
    }
}

/// A path into a document, printed as `spec.containers[0].image` or
/// `metadata.labels["app.kubernetes.io/name"]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    pub fn from_steps(steps: &[Step<'_>]) -> Self {
        FieldPath(steps.iter().map(|s| Segment::from(*s)).collect())
    }

    pub fn steps(&self) -> Vec<Step<'_>> {
        self.0.iter().map(Segment::step).collect()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_path(f, self.0.iter().map(Segment::step))
    }
}

/// Writes a path in the documented notation.
pub fn write_path<'a>(
    f: &mut impl fmt::Write,
    steps: impl IntoIterator<Item = Step<'a>>,
) -> fmt::Result {
    for (i, seg) in steps.into_iter().enumerate() {
        match seg {
            Step::Index(n) => write!(f, "[{n}]")?,
            Step::Key(k) if is_simple_key(k) => {
                if i > 0 {
                    f.write_str(".")?;
                }
                f.write_str(k)?;
            }
            Step::Key(k) => write!(f, "[{}]", Value::String(k.to_string()))?,
        }
    }
    Ok(())
}

impl Serialize for FieldPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

fn is_simple_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/')
}

/// How a field differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffKind {
    /// Present in the object, not in the signed document.
    Added,
    /// Present in the signed document, not in the object.
    Removed,
    /// Present in both with different values.
    Changed,
}

/// A difference found while walking, before it is judged: the path as borrowed steps and
/// the whole value on each side at that path.
#[derive(Debug, Clone, Copy)]
pub struct Difference<'a> {
    pub path: &'a [Step<'a>],
    pub kind: DiffKind,
    pub signed: Option<&'a Value>,
    pub actual: Option<&'a Value>,
}

/// One differing field, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    pub path: FieldPath,
    pub kind: DiffKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
}

impl FieldDiff {
    fn report(d: &Difference<'_>) -> Self {
        FieldDiff {
            path: FieldPath::from_steps(d.path),
            kind: d.kind,
            signed: d.signed.map(shown),
            actual: d.actual.map(shown),
        }
    }
}

/// A value for a report: itself when small, else a summary.
fn shown(v: &Value) -> Value {
    if node_count_within(v, MAX_SHOWN_NODES) {
        return v.clone();
    }
    Value::String(match v {
        Value::Object(m) => format!("{{… {} entries}}", m.len()),
        Value::Array(a) => format!("[… {} items]", a.len()),
        _ => "…".into(),
    })
}

fn node_count_within(v: &Value, limit: usize) -> bool {
    let mut count = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        count += 1;
        if count > limit {
            return false;
        }
        match v {
            Value::Object(m) => stack.extend(m.values()),
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    true
}

impl fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<Value>| {
            let s = v.as_ref().map(Value::to_string).unwrap_or_default();
            if s.chars().count() > 60 {
                format!("{}…", s.chars().take(60).collect::<String>())
            } else {
                s
            }
        };
        match self.kind {
            DiffKind::Added => write!(f, "{} added ({})", self.path, show(&self.actual)),
            DiffKind::Removed => write!(f, "{} removed (signed {})", self.path, show(&self.signed)),
            DiffKind::Changed => write!(
                f,
                "{} changed (signed {}, found {})",
                self.path,
                show(&self.signed),
                show(&self.actual)
            ),
        }
    }
}

/// One segment of an ignore pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternSegment {
    Key(String),
    AnyKey,
    Index(usize),
    AnyIndex,
}

/// An anchored, segment-aware field pattern.
///
/// Syntax: keys separated by `.`; `*` matches any one key; `[N]` one list index, `[*]` or
/// `[]` any index; a key holding dots or other punctuation is written quoted in brackets:
/// `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`. A pattern
/// matches a path that it is a prefix of, segment by segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPattern {
    text: String,
    segments: Vec<PatternSegment>,
}

impl FieldPattern {
    /// Parses a pattern; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, FieldPatternError> {
        let pattern = || text.to_string();
        let mut segments = Vec::new();
        let mut rest = text;
        let mut expect_key = true;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let end = if let Some(quoted) = r.strip_prefix('"') {
                    // quoted key: find the closing `"]`
                    let close =
                        quoted
                            .find("\"]")
                            .ok_or_else(|| FieldPatternError::UnclosedQuotedKey {
                                pattern: pattern(),
                            })?;
                    segments.push(PatternSegment::Key(quoted[..close].to_string()));
                    close + 3
                } else {
                    let close = r
                        .find(']')
                        .ok_or_else(|| FieldPatternError::UnclosedBracket { pattern: pattern() })?;
                    let inner = &r[..close];
                    segments.push(match inner {
                        "" | "*" => PatternSegment::AnyIndex,
                        n => PatternSegment::Index(n.parse().map_err(|_| {
                            FieldPatternError::BadIndex {
                                pattern: pattern(),
                                index: n.to_string(),
                            }
                        })?),
                    });
                    close + 1
                };
                rest = &r[end..];
                expect_key = false;
                continue;
            }
            if !expect_key {
                rest =
                    rest.strip_prefix('.')
                        .ok_or_else(|| FieldPatternError::ExpectedSeparator {
                            pattern: pattern(),
                            at: rest.to_string(),
                        })?;
            }
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            if key.is_empty() {
                return Err(FieldPatternError::EmptyKey { pattern: pattern() });
            }
            segments.push(if key == "*" {
                PatternSegment::AnyKey
            } else {
                PatternSegment::Key(key.to_string())
            });
            rest = &rest[end..];
            expect_key = false;
        }
        if segments.is_empty() {
            return Err(FieldPatternError::Empty);
        }
        Ok(FieldPattern {
            text: text.to_string(),
            segments,
        })
    }

    /// True if `path` is exactly this field (not below it).
    pub fn matches_exactly(&self, path: &FieldPath) -> bool {
        self.matches_steps_exactly(&path.steps())
    }

    /// True if `path` is this field or below it.
    pub fn matches(&self, path: &FieldPath) -> bool {
        self.matches_steps(&path.steps())
    }

    /// [`matches`](Self::matches) for a borrowed path.
    pub fn matches_steps(&self, path: &[Step<'_>]) -> bool {
        if self.segments.len() > path.len() {
            return false;
        }
        self.segments.iter().zip(path).all(|(p, s)| match (p, s) {
            (PatternSegment::Key(k), Step::Key(s)) => k == s,
            (PatternSegment::AnyKey, Step::Key(_)) => true,
            (PatternSegment::Index(i), Step::Index(s)) => i == s,
            (PatternSegment::AnyIndex, Step::Index(_)) => true,
            _ => false,
        })
    }

    /// [`matches_exactly`](Self::matches_exactly) for a borrowed path.
    pub fn matches_steps_exactly(&self, path: &[Step<'_>]) -> bool {
        self.segments.len() == path.len() && self.matches_steps(path)
    }
}

impl fmt::Display for FieldPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A set of ignore patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoreFields(pub Vec<FieldPattern>);

impl IgnoreFields {
    pub fn none() -> Self {
        Self::default()
    }

    pub fn is_ignored(&self, path: &FieldPath) -> bool {
        self.0.iter().any(|p| p.matches(path))
    }

    /// [`is_ignored`](Self::is_ignored) for a borrowed path.
    pub fn ignores(&self, path: &[Step<'_>]) -> bool {
        self.0.iter().any(|p| p.matches_steps(path))
    }
}

/// Why a field pattern ([`FieldPattern::parse`]) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldPatternError {
    #[error("empty field pattern")]
    Empty,
    #[error("pattern {pattern:?}: unclosed quoted key")]
    UnclosedQuotedKey { pattern: String },
    #[error("pattern {pattern:?}: unclosed `[`")]
    UnclosedBracket { pattern: String },
    #[error("pattern {pattern:?}: bad list index {index:?}")]
    BadIndex { pattern: String, index: String },
    #[error("pattern {pattern:?}: expected `.` or `[` at {at:?}")]
    ExpectedSeparator { pattern: String, at: String },
    #[error("pattern {pattern:?}: empty key")]
    EmptyKey { pattern: String },
}

/// Why two documents could not be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    #[error("nested deeper than {limit} levels at {path}")]
    TooDeep { limit: usize, path: String },
}

/// The differences of one comparison that no rule accepted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// Reported differences, sorted by path (at most [`MAX_REPORTED_DIFFS`]).
    pub diffs: Vec<FieldDiff>,
    /// Further differences found but not reported.
    pub unreported: usize,
}

impl Comparison {
    pub fn is_equal(&self) -> bool {
        self.diffs.is_empty() && self.unreported == 0
    }

    /// The paths of the reported differences, as messages write them (what tests compare).
    #[cfg(test)]
    pub(crate) fn paths(&self) -> Vec<String> {
        self.diffs.iter().map(|d| d.path.to_string()).collect()
    }
}

/// Compares `signed` with `actual`; `tolerated` decides which differences do not count
/// (see the module docs).
pub fn compare(
    signed: &Value,
    actual: &Value,
    tolerated: &dyn Fn(&Difference<'_>) -> bool,
) -> Result<Comparison, CompareError> {
    let mut walk = Walk {
        tolerated,
        out: Comparison::default(),
    };
    let mut path = Vec::new();
    walk.both(&mut path, signed, actual)?;
    walk.out.diffs.sort_by(|x, y| x.path.cmp(&y.path));
    Ok(walk.out)
}

/// Differences between the signed document and the object with `ignore` applied, sorted by
/// path (the simple form of [`compare`]; at most [`MAX_REPORTED_DIFFS`]).
pub fn diff_documents(
    signed: &Value,
    actual: &Value,
    ignore: &IgnoreFields,
) -> Result<Vec<FieldDiff>, CompareError> {
    compare(signed, actual, &|d| ignore.ignores(d.path)).map(|c| c.diffs)
}

struct Walk<'t> {
    tolerated: &'t dyn Fn(&Difference<'_>) -> bool,
    out: Comparison,
}

impl Walk<'_> {
    fn found(&mut self, d: Difference<'_>) {
        if !(self.tolerated)(&d) {
            self.report(&d);
        }
    }

    /// Records a difference no rule accepted: in full for the first hundred, else counted.
    fn report(&mut self, d: &Difference<'_>) {
        if self.out.diffs.len() < MAX_REPORTED_DIFFS {
            self.out.diffs.push(FieldDiff::report(d));
        } else {
            self.out.unreported += 1;
        }
    }

    /// The values at one path on each side, either possibly absent.
    fn pair<'v>(
        &mut self,
        path: &mut Vec<Step<'v>>,
        signed: Option<&'v Value>,
        actual: Option<&'v Value>,
    ) -> Result<(), CompareError> {
        match (signed, actual) {
            (Some(s), Some(a)) => self.both(path, s, a),
            (Some(s), None) => self.one_side(path, DiffKind::Removed, s),
            (None, Some(a)) => self.one_side(path, DiffKind::Added, a),
            (None, None) => Ok(()),
        }
    }

    fn depth_check(path: &[Step<'_>]) -> Result<(), CompareError> {
        if path.len() > MAX_COMPARE_DEPTH {
            let mut shown = String::new();
            let _ = write_path(&mut shown, path.iter().take(8).copied());
            return Err(CompareError::TooDeep {
                limit: MAX_COMPARE_DEPTH,
                path: format!("{shown}…"),
            });
        }
        Ok(())
    }

    /// Both sides hold a value at `path`.
    fn both<'v>(
        &mut self,
        path: &mut Vec<Step<'v>>,
        signed: &'v Value,
        actual: &'v Value,
    ) -> Result<(), CompareError> {
        Self::depth_check(path)?;
        match (signed, actual) {
            (Value::Object(s), Value::Object(a)) => {
                let keys: BTreeSet<&'v str> =
                    s.keys().chain(a.keys()).map(String::as_str).collect();
                for k in keys {
                    path.push(Step::Key(k));
                    self.pair(path, s.get(k), a.get(k))?;
                    path.pop();
                }
            }
            (Value::Array(s), Value::Array(a)) => {
                for i in 0..s.len().max(a.len()) {
                    path.push(Step::Index(i));
                    self.pair(path, s.get(i), a.get(i))?;
                    path.pop();
                }
            }
            (s, a) if same_leaf(s, a) => {}
            (s, a) => self.found(Difference {
                path,
                kind: DiffKind::Changed,
                signed: Some(s),
                actual: Some(a),
            }),
        }
        Ok(())
    }

    /// Only one side holds a value at `path`: a difference, unless the judge accepts it
    /// whole; a filled map or list it does not accept is judged field by field.
    fn one_side<'v>(
        &mut self,
        path: &mut Vec<Step<'v>>,
        kind: DiffKind,
        value: &'v Value,
    ) -> Result<(), CompareError> {
        Self::depth_check(path)?;
        let (signed, actual) = match kind {
            DiffKind::Removed => (Some(value), None),
            _ => (None, Some(value)),
        };
        let whole = Difference {
            path,
            kind,
            signed,
            actual,
        };
        if (self.tolerated)(&whole) {
            return Ok(());
        }
        match value {
            Value::Object(m) if !m.is_empty() => {
                for (k, v) in m {
                    path.push(Step::Key(k));
                    self.one_side(path, kind, v)?;
                    path.pop();
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, v) in a.iter().enumerate() {
                    path.push(Step::Index(i));
                    self.one_side(path, kind, v)?;
                    path.pop();
                }
            }
            _ => self.report(&whole),
        }
        Ok(())
    }
}

/// Leaves are equal when their JSON values are equal; numbers compare by value so that
/// `1` and `1.0` (JSON from the API server vs YAML from a file) are the same.
fn same_leaf(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (integer(x), integer(y)) {
            (Some(x), Some(y)) => x == y,
            // At most one side is a whole number: a fraction never equals it.
            _ => x.is_f64() && y.is_f64() && x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

/// The exact value of a whole number, also when written as a float (`1.0`). Converting
/// the integer to a float instead would round above 2^53 and make different numbers equal.
fn integer(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    // Every f64 of magnitude below 2^127 with no fraction converts to i128 exactly.
    n.as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(127))
        .map(|f| f as i128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(d: &[FieldDiff]) -> Vec<String> {
        d.iter().map(|d| d.path.to_string()).collect()
    }

    fn none() -> IgnoreFields {
        IgnoreFields::none()
    }

    #[test]
    fn equal_documents_have_no_diff() {
        let v = json!({"a": {"b": [1, {"c": "d"}]}, "e": {}, "f": null, "g": []});
        assert!(diff_documents(&v, &v.clone(), &none()).unwrap().is_empty());
    }

    #[test]
    fn a_present_key_is_a_difference_whatever_it_holds() {
        // The API server keeps these as values: an empty selector selects everything.
        for empty in [json!(null), json!({}), json!([]), json!("")] {
            let signed = json!({"from": [{"podSelector": {"matchLabels": {"a": "b"}}}]});
            let mut actual = signed.clone();
            actual["from"][0]["namespaceSelector"] = empty.clone();
            let d = diff_documents(&signed, &actual, &none()).unwrap();
            assert_eq!(paths(&d), ["from[0].namespaceSelector"], "{empty}");
            assert_eq!(d[0].kind, DiffKind::Added);
            let d = diff_documents(&actual, &signed, &none()).unwrap();
            assert_eq!(paths(&d), ["from[0].namespaceSelector"], "{empty}");
            assert_eq!(d[0].kind, DiffKind::Removed);
        }
    }

    #[test]
    fn an_empty_looking_map_inside_a_selector_is_a_difference() {
        let signed = json!({"spec": {"selector": {}}});
        for inner in [
            json!({"matchExpressions": []}),
            json!({"matchLabels": null}),
            json!({"matchLabels": {}}),
        ] {
            let actual = json!({"spec": {"selector": inner}});
            assert_eq!(
                diff_documents(&signed, &actual, &none()).unwrap().len(),
                1,
                "{actual}"
            );
        }
    }

    #[test]
    fn null_and_empty_values_differ_from_each_other() {
        for (a, b) in [
            (json!(null), json!({})),
            (json!([]), json!({})),
            (json!(""), json!(null)),
        ] {
            let d = diff_documents(&json!({"x": a}), &json!({"x": b}), &none()).unwrap();
            assert_eq!(paths(&d), ["x"]);
            assert_eq!(d[0].kind, DiffKind::Changed);
        }
    }

    #[test]
    fn an_empty_map_filled_later_reports_the_new_fields_only() {
        let d =
            diff_documents(&json!({"data": {}}), &json!({"data": {"a": "1"}}), &none()).unwrap();
        assert_eq!(paths(&d), ["data.a"]);
        let d =
            diff_documents(&json!({"data": {"a": "1"}}), &json!({"data": {}}), &none()).unwrap();
        assert_eq!(paths(&d), ["data.a"]);
        let d = diff_documents(&json!({"data": {}}), &json!({"data": "x"}), &none()).unwrap();
        assert_eq!(paths(&d), ["data"]);
    }

    #[test]
    fn an_added_list_item_is_reported_whatever_it_holds() {
        let d =
            diff_documents(&json!({"ingress": []}), &json!({"ingress": [{}]}), &none()).unwrap();
        assert_eq!(paths(&d), ["ingress[0]"]);
        assert_eq!(d[0].kind, DiffKind::Added);
        let d = diff_documents(&json!({}), &json!({"ingress": [{"from": []}]}), &none()).unwrap();
        assert_eq!(paths(&d), ["ingress[0].from"]);
        let d = diff_documents(&json!({"a": [{}]}), &json!({"a": [{"b": [{}]}]}), &none()).unwrap();
        assert_eq!(paths(&d), ["a[0].b[0]"]);
    }

    #[test]
    fn list_items_of_different_shapes_differ() {
        let d = diff_documents(
            &json!({"a": [{}, null]}),
            &json!({"a": [null, {}]}),
            &none(),
        )
        .unwrap();
        assert_eq!(paths(&d), ["a[0]", "a[1]"]);
    }

    #[test]
    fn reports_changed_added_and_removed_fields_by_path() {
        let signed = json!({"data": {"a": "1", "b": "2"}, "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        let actual = json!({"data": {"a": "9", "c": "3"}, "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        let d = diff_documents(&signed, &actual, &none()).unwrap();
        assert_eq!(paths(&d), ["data.a", "data.b", "data.c"]);
        assert_eq!(d[0].kind, DiffKind::Changed);
        assert_eq!(d[1].kind, DiffKind::Removed);
        assert_eq!(d[2].kind, DiffKind::Added);
    }

    #[test]
    fn list_reordering_is_a_change() {
        let d = diff_documents(
            &json!({"args": ["a", "b"]}),
            &json!({"args": ["b", "a"]}),
            &none(),
        )
        .unwrap();
        assert_eq!(paths(&d), ["args[0]", "args[1]"]);
    }

    #[test]
    fn type_changes_are_changes_but_number_forms_are_equal() {
        assert_eq!(
            diff_documents(&json!({"a": "1"}), &json!({"a": 1}), &none())
                .unwrap()
                .len(),
            1
        );
        assert!(
            diff_documents(&json!({"a": 1}), &json!({"a": 1.0}), &none())
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            diff_documents(&json!({"a": [1]}), &json!({"a": {"0": 1}}), &none())
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn integers_above_2_pow_53_are_not_equal_to_a_nearby_float() {
        let signed = json!({"a": 9007199254740993u64});
        assert_eq!(
            diff_documents(&signed, &json!({"a": 9007199254740992.0}), &none())
                .unwrap()
                .len(),
            1
        );
        assert!(
            diff_documents(&signed, &json!({"a": 9007199254740993u64}), &none())
                .unwrap()
                .is_empty()
        );
        assert!(
            diff_documents(&json!({"a": -3}), &json!({"a": -3.0}), &none())
                .unwrap()
                .is_empty(),
            "whole floats still equal integers"
        );
        assert_eq!(
            diff_documents(&json!({"a": 1}), &json!({"a": 1.5}), &none())
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn paths_print_dotted_keys_quoted() {
        let d = diff_documents(
            &json!({}),
            &json!({"metadata": {"labels": {"app.kubernetes.io/name": "x"}}, "l": [{"k": 1}]}),
            &none(),
        )
        .unwrap();
        assert_eq!(
            paths(&d),
            ["l[0].k", "metadata.labels[\"app.kubernetes.io/name\"]"]
        );
    }

    #[test]
    fn ignore_patterns_are_anchored_and_segment_aware() {
        let ignore = IgnoreFields(vec![
            FieldPattern::parse("status").unwrap(),
            FieldPattern::parse("spec.clusterIP").unwrap(),
            FieldPattern::parse(
                "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]",
            )
            .unwrap(),
            FieldPattern::parse("spec.ports[*].nodePort").unwrap(),
        ]);
        let signed = json!({});
        let actual = json!({
            "status": {"x": 1},
            "spec": {"clusterIP": "1", "clusterIPs": ["1"], "ports": [{"nodePort": 3, "port": 80}],
                     "template": {"metadata": {"labels": {"status": "evil"}}}},
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "kubectl.kubernetes.io/last-applied-configurationX": "y"}},
        });
        let d = diff_documents(&signed, &actual, &ignore).unwrap();
        assert_eq!(
            paths(&d),
            [
                "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configurationX\"]",
                "spec.clusterIPs[0]",
                "spec.ports[0].port",
                "spec.template.metadata.labels.status",
            ]
        );
    }

    #[test]
    fn bad_patterns_are_refused() {
        for p in ["", "a..b", "a[x]", "a[\"unclosed", "a[1"] {
            assert!(FieldPattern::parse(p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn only_the_first_hundred_differences_are_reported_the_rest_counted() {
        let actual: serde_json::Map<String, Value> =
            (0..250).map(|i| (format!("k{i:03}"), json!(i))).collect();
        let c = compare(&json!({}), &Value::Object(actual), &|_| false).unwrap();
        assert_eq!(c.diffs.len(), MAX_REPORTED_DIFFS);
        assert_eq!(c.unreported, 150);
        assert!(!c.is_equal());
    }

    #[test]
    fn a_long_key_above_many_fields_costs_no_more_than_the_input() {
        // 1 MB key over 4,000 added leaves: the paths are built for the reported hundred only.
        let key = "k".repeat(1_000_000);
        let children: serde_json::Map<String, Value> =
            (0..4000).map(|i| (format!("c{i}"), json!("x"))).collect();
        let actual = json!({ key.clone(): Value::Object(children) });
        let c = compare(&json!({}), &actual, &|_| false).unwrap();
        assert_eq!(c.diffs.len() + c.unreported, 4000);
    }

    #[test]
    fn big_subtrees_are_summarised_in_reports() {
        let big: Vec<Value> = (0..500).map(|i| json!(i)).collect();
        let d = diff_documents(&json!({"a": 1}), &json!({"a": big}), &none()).unwrap();
        assert_eq!(d[0].actual, Some(json!("[… 500 items]")));
    }

    #[test]
    fn nesting_beyond_the_compare_depth_is_an_error_not_a_crash() {
        let mut deep = json!(1);
        for _ in 0..(MAX_COMPARE_DEPTH + 10) {
            deep = json!([deep]);
        }
        let err = compare(&deep, &deep.clone(), &|_| false).unwrap_err();
        assert!(matches!(err, CompareError::TooDeep { .. }), "{err}");
    }

    #[test]
    fn a_judge_can_accept_a_whole_subtree_or_only_an_exact_value() {
        let signed = json!({"spec": {}});
        let actual = json!({"spec": {"securityContext": {}, "x": {"a": 1, "b": 2}}});
        let c = compare(&signed, &actual, &|d| {
            matches!(d.path, [Step::Key("spec"), Step::Key("securityContext")])
                && d.actual == Some(&json!({}))
                || matches!(d.path, [Step::Key("spec"), Step::Key("x"), Step::Key("a")])
        })
        .unwrap();
        assert_eq!(paths(&c.diffs), ["spec.x.b"]);
    }
}
