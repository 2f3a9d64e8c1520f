//! Comparing an object with the document that was signed.
//!
//! Both sides are flattened to `path -> leaf`; a path is a list of map keys and list
//! indices. `null` and empty lists count as absent as field values (the API server treats
//! them the same way, and kubectl-sigstore's mapnode diff does too); an empty map is a
//! value (`namespaceSelector: {}` selects every namespace, unlike no selector), and a list
//! item is part of the list whatever it holds. Lists are compared by
//! position: a reordered `args` list is a real change, so unlike kubectl-sigstore no
//! re-ordering is tolerated.
//!
//! Ignore-field patterns are anchored at the root and match whole path segments: `status`
//! ignores `status` and everything below it, never `spec.template.metadata.labels.status`
//! (kubectl-sigstore and Kyverno use unanchored regexes, research kyverno-manifests §2.10 F3).

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// A path into a document, printed as `spec.containers[0].image` or
/// `metadata.labels["app.kubernetes.io/name"]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FieldPath(pub Vec<Segment>);

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(k) if is_simple_key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => write!(f, "[{}]", serde_json::Value::String(k.clone()))?,
            }
        }
        Ok(())
    }
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

/// One differing field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    pub path: FieldPath,
    pub kind: DiffKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
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
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut segments = Vec::new();
        let mut rest = text;
        let mut expect_key = true;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let end = if let Some(quoted) = r.strip_prefix('"') {
                    // quoted key: find the closing `"]`
                    let close = quoted
                        .find("\"]")
                        .ok_or_else(|| format!("pattern {text:?}: unclosed quoted key"))?;
                    segments.push(PatternSegment::Key(quoted[..close].to_string()));
                    close + 3
                } else {
                    let close = r
                        .find(']')
                        .ok_or_else(|| format!("pattern {text:?}: unclosed `[`"))?;
                    let inner = &r[..close];
                    segments.push(match inner {
                        "" | "*" => PatternSegment::AnyIndex,
                        n => PatternSegment::Index(
                            n.parse()
                                .map_err(|_| format!("pattern {text:?}: bad list index {n:?}"))?,
                        ),
                    });
                    close + 1
                };
                rest = &r[end..];
                expect_key = false;
                continue;
            }
            if !expect_key {
                rest = rest
                    .strip_prefix('.')
                    .ok_or_else(|| format!("pattern {text:?}: expected `.` or `[` at {rest:?}"))?;
            }
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            if key.is_empty() {
                return Err(format!("pattern {text:?}: empty key"));
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
            return Err("empty field pattern".into());
        }
        Ok(FieldPattern {
            text: text.to_string(),
            segments,
        })
    }

    /// How many path segments this pattern names.
    pub(crate) fn depth(&self) -> usize {
        self.segments.len()
    }

    /// True if `path` is exactly this field (not below it).
    pub fn matches_exactly(&self, path: &FieldPath) -> bool {
        self.segments.len() == path.0.len() && self.matches(path)
    }

    /// True if `path` is this field or below it.
    pub fn matches(&self, path: &FieldPath) -> bool {
        if self.segments.len() > path.0.len() {
            return false;
        }
        self.segments
            .iter()
            .zip(&path.0)
            .all(|(p, s)| match (p, s) {
                (PatternSegment::Key(k), Segment::Key(s)) => k == s,
                (PatternSegment::AnyKey, Segment::Key(_)) => true,
                (PatternSegment::Index(i), Segment::Index(s)) => i == s,
                (PatternSegment::AnyIndex, Segment::Index(_)) => true,
                _ => false,
            })
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
}

fn flatten(value: &Value) -> BTreeMap<FieldPath, &Value> {
    let mut out = BTreeMap::new();
    let mut items = Vec::new();
    let mut stack: Vec<(Vec<Segment>, &Value)> = vec![(Vec::new(), value)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::Null => {}
            // An empty map is a value, not an absence: `namespaceSelector: {}` selects
            // every namespace where no selector means "this namespace only", and
            // `podSelector: {}` selects every pod. Server-added empty maps
            // (`resources: {}`) are tolerated by the `kubernetes` profile as defaults.
            Value::Object(m) if m.is_empty() && !path.is_empty() => {
                out.insert(FieldPath(path), v);
            }
            Value::Object(m) => {
                for (k, c) in m {
                    let mut p = path.clone();
                    p.push(Segment::Key(k.clone()));
                    stack.push((p, c));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(Segment::Index(i));
                    items.push((FieldPath(p.clone()), c));
                    stack.push((p, c));
                }
            }
            leaf => {
                out.insert(FieldPath(path), leaf);
            }
        }
    }
    // A list item is never absent, whatever it holds: the absent rule is for fields, and
    // an item changes the list. `ingress: [{}]` allows all traffic where `ingress: []`
    // denies it; `clusterRoleSelectors: [{}]` aggregates every ClusterRole. An item without
    // leaves of its own is its own leaf. Deepest first, so an item holding such an item
    // already has a leaf.
    items.sort_by_key(|(path, _)| std::cmp::Reverse(path.0.len()));
    for (path, item) in items {
        let has_leaf = out
            .range(&path..)
            .next()
            .is_some_and(|(p, _)| p.0.starts_with(&path.0));
        if !has_leaf {
            out.insert(path, item);
        }
    }
    out
}

/// What one path step costs in [`path_bytes_within`], besides the bytes of its key.
const PATH_STEP_BYTES: usize = 32;

/// True if the field paths of `value` take at most `limit` bytes: for every map entry and
/// list item, the bytes of the keys on its path plus 32 per step.
/// [`diff_documents`] builds one path per field, so check this first on untrusted input
/// ([`Limits::max_compared_path_bytes`](crate::Limits::max_compared_path_bytes)).
/// Stops as soon as the limit is passed, without building any path.
pub fn path_bytes_within(value: &Value, limit: usize) -> bool {
    let mut total = 0usize;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, prefix)) = stack.pop() {
        total = total.saturating_add(prefix);
        if total > limit {
            return false;
        }
        match v {
            Value::Object(m) => stack.extend(
                m.iter()
                    .map(|(k, c)| (c, prefix.saturating_add(PATH_STEP_BYTES + k.len()))),
            ),
            Value::Array(a) => stack.extend(
                a.iter()
                    .map(|c| (c, prefix.saturating_add(PATH_STEP_BYTES))),
            ),
            _ => {}
        }
    }
    true
}

/// Differences between the signed document and the object, sorted by path, with ignored
/// fields left out.
pub fn diff_documents(signed: &Value, actual: &Value, ignore: &IgnoreFields) -> Vec<FieldDiff> {
    let a = flatten(signed);
    let b = flatten(actual);
    let mut diffs = Vec::new();
    for (path, sv) in &a {
        if ignore.is_ignored(path) {
            continue;
        }
        match b.get(path) {
            None if is_empty_map(sv) && has_descendant(&b, path) => {}
            None => diffs.push(FieldDiff {
                path: path.clone(),
                kind: DiffKind::Removed,
                signed: Some((*sv).clone()),
                actual: None,
            }),
            Some(av) if !same_leaf(sv, av) => diffs.push(FieldDiff {
                path: path.clone(),
                kind: DiffKind::Changed,
                signed: Some((*sv).clone()),
                actual: Some((*av).clone()),
            }),
            Some(_) => {}
        }
    }
    for (path, av) in &b {
        let covered_by_fields = is_empty_map(av) && has_descendant(&a, path);
        if !a.contains_key(path) && !ignore.is_ignored(path) && !covered_by_fields {
            diffs.push(FieldDiff {
                path: path.clone(),
                kind: DiffKind::Added,
                signed: None,
                actual: Some((*av).clone()),
            });
        }
    }
    diffs.sort_by(|x, y| x.path.cmp(&y.path));
    diffs
}

fn is_empty_map(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty())
}

/// True if `leaves` holds a path strictly below `path`. An empty map on one side and a
/// filled map on the other differ by the filled map's fields, which are reported
/// themselves (`data: {}` → `data: {a: "1"}` is `data.a added`).
fn has_descendant(leaves: &BTreeMap<FieldPath, &Value>, path: &FieldPath) -> bool {
    leaves
        .range(path..)
        .find(|(p, _)| *p != path)
        .is_some_and(|(p, _)| p.0.len() > path.0.len() && p.0.starts_with(&path.0))
}

/// Leaves are equal when their JSON values are equal; numbers compare by value so that
/// `1` and `1.0` (JSON from the API server vs YAML from a file) are the same.
fn same_leaf(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // Two list items without leaves (`{}`, `[]`, `null`, `{"a": {}}`): equally empty.
        (Value::Null | Value::Object(_) | Value::Array(_), _)
        | (_, Value::Null | Value::Object(_) | Value::Array(_)) => {
            matches!(a, Value::Null | Value::Object(_) | Value::Array(_))
                && matches!(b, Value::Null | Value::Object(_) | Value::Array(_))
        }
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

    #[test]
    fn equal_documents_have_no_diff() {
        let v = json!({"a": {"b": [1, {"c": "d"}]}, "e": {}, "f": null, "g": []});
        let w = json!({"a": {"b": [1, {"c": "d"}]}, "e": {}});
        assert!(diff_documents(&v, &w, &IgnoreFields::none()).is_empty());
    }

    #[test]
    fn an_empty_map_is_a_value_not_an_absence() {
        // `namespaceSelector: {}` selects every namespace; no selector means "this one".
        let none = IgnoreFields::none();
        let signed = json!({"from": [{"podSelector": {"matchLabels": {"a": "b"}}}]});
        let actual = json!({"from": [{"podSelector": {"matchLabels": {"a": "b"}}, "namespaceSelector": {}}]});
        let d = diff_documents(&signed, &actual, &none);
        assert_eq!(paths(&d), ["from[0].namespaceSelector"]);
        assert_eq!(d[0].kind, DiffKind::Added);
        let d = diff_documents(
            &json!({"spec": {"podSelector": {}}}),
            &json!({"spec": {}}),
            &none,
        );
        assert_eq!(paths(&d), ["spec.podSelector"]);
        assert_eq!(d[0].kind, DiffKind::Removed);
    }

    #[test]
    fn an_empty_map_filled_later_reports_the_new_fields_only() {
        let none = IgnoreFields::none();
        let d = diff_documents(&json!({"data": {}}), &json!({"data": {"a": "1"}}), &none);
        assert_eq!(paths(&d), ["data.a"]);
        let d = diff_documents(&json!({"data": {"a": "1"}}), &json!({"data": {}}), &none);
        assert_eq!(paths(&d), ["data.a"]);
        let d = diff_documents(&json!({"data": {}}), &json!({"data": "x"}), &none);
        assert_eq!(paths(&d), ["data"]);
    }

    #[test]
    fn path_bytes_count_every_key_on_every_path() {
        // a: 32 + 1; a.bb: 33 + 32 + 2; a.bb[0]: 67 + 32
        let v = json!({"a": {"bb": [1]}});
        assert!(path_bytes_within(&v, 33 + 67 + 99));
        assert!(!path_bytes_within(&v, 33 + 67 + 98));
    }

    #[test]
    fn an_empty_list_item_is_not_absent() {
        let none = IgnoreFields::none();
        let d = diff_documents(&json!({"ingress": []}), &json!({"ingress": [{}]}), &none);
        assert_eq!(paths(&d), ["ingress[0]"]);
        assert_eq!(d[0].kind, DiffKind::Added);
        let d = diff_documents(&json!({}), &json!({"ingress": [{"from": []}]}), &none);
        assert_eq!(paths(&d), ["ingress[0]"]);
        // The item was `{}` and now holds a list with an empty item: that item is the change.
        let d = diff_documents(&json!({"a": [{}]}), &json!({"a": [{"b": [{}]}]}), &none);
        assert_eq!(paths(&d), ["a[0].b[0]"]);
    }

    #[test]
    fn empty_list_items_of_any_shape_are_equal() {
        let signed = json!({"a": [{}, null, {}], "c": {"d": {}}});
        let actual = json!({"a": [null, [], {}], "c": {"d": {}}});
        assert!(diff_documents(&signed, &actual, &IgnoreFields::none()).is_empty());
    }

    #[test]
    fn reports_changed_added_and_removed_fields_by_path() {
        let signed = json!({"data": {"a": "1", "b": "2"}, "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        let actual = json!({"data": {"a": "9", "c": "3"}, "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        let d = diff_documents(&signed, &actual, &IgnoreFields::none());
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
            &IgnoreFields::none(),
        );
        assert_eq!(paths(&d), ["args[0]", "args[1]"]);
    }

    #[test]
    fn type_changes_are_changes_but_number_forms_are_equal() {
        assert_eq!(
            diff_documents(&json!({"a": "1"}), &json!({"a": 1}), &IgnoreFields::none()).len(),
            1
        );
        assert!(
            diff_documents(&json!({"a": 1}), &json!({"a": 1.0}), &IgnoreFields::none()).is_empty()
        );
    }

    #[test]
    fn integers_above_2_pow_53_are_not_equal_to_a_nearby_float() {
        let none = IgnoreFields::none();
        let signed = json!({"a": 9007199254740993u64});
        assert_eq!(
            diff_documents(&signed, &json!({"a": 9007199254740992.0}), &none).len(),
            1
        );
        assert!(diff_documents(&signed, &json!({"a": 9007199254740993u64}), &none).is_empty());
        assert!(
            diff_documents(&json!({"a": -3}), &json!({"a": -3.0}), &none).is_empty(),
            "whole floats still equal integers"
        );
        assert_eq!(
            diff_documents(&json!({"a": 1}), &json!({"a": 1.5}), &none).len(),
            1
        );
    }

    #[test]
    fn paths_print_dotted_keys_quoted() {
        let d = diff_documents(
            &json!({}),
            &json!({"metadata": {"labels": {"app.kubernetes.io/name": "x"}}, "l": [{"k": 1}]}),
            &IgnoreFields::none(),
        );
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
        let d = diff_documents(&signed, &actual, &ignore);
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
}
