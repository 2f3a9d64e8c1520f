//! Kyverno / kubectl-sigstore ignore fields, translated to mansign's anchored patterns.
//!
//! Upstream a field such as `metadata.annotations.kubectl.kubernetes.io/last-applied-configuration`
//! is a flat dotted key matched as the unanchored regex `field + ".*"` (research
//! kyverno-manifests §2.5, §2.10 F3): `status` also hides `data.status`, `spec.clusterIP`
//! also hides `spec.clusterIPs`. mansign reads the same text as a path instead:
//!
//! * segments are split at `.`; a segment of digits is a list index (`ports.0.port` →
//!   `ports[0].port`);
//! * after a segment that holds a string map — `annotations`, `labels`, `matchLabels`,
//!   `nodeSelector`, or top-level `data`, `stringData`, `binaryData` — the rest of the text
//!   is **one key**, dots included (`metadata.labels.app.kubernetes.io/instance` →
//!   `metadata.labels["app.kubernetes.io/instance"]`);
//! * a `*` segment matches one map key or one list index (upstream data does not say which
//!   one it is, so both are tried); trailing `*`s are dropped, because a mansign pattern
//!   already covers everything below the path (`metadata.managedFields.*` →
//!   `metadata.managedFields`, `metadata.finalizers*` → `metadata.finalizers`);
//! * a `*` inside a segment (`app*`) has no anchored meaning and is refused, as are empty
//!   segments;
//! * a field written with brackets or quotes is read as a mansign pattern as is.
//!
//! The translation never ignores more than the path the text names: when it guesses the
//! structure wrong, the pattern matches nothing and the difference is reported (a deny,
//! never a wrong allow).

use crate::manifest::{FieldPattern, FieldPatternError};

/// Why an ignore field was refused: not a path mansign can read, or (in mansign's own syntax)
/// written the Kyverno way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// Not a field pattern.
    #[error(transparent)]
    Pattern(#[from] FieldPatternError),
    #[error("field {field:?} would ignore the whole object; name a path")]
    WholeObject { field: String },
    #[error("field {field:?} has an empty segment")]
    EmptySegment { field: String },
    #[error("field {field:?}: a wildcard inside a key ({key:?}) has no anchored meaning")]
    WildcardInKey { field: String, key: String },
    #[error("field {field:?}: quote characters in a key")]
    QuoteInKey { field: String },
    #[error("field {field:?} has more than {limit} `*` segments")]
    TooManyWildcards { field: String, limit: usize },
    #[error("field {field:?}: a wildcard inside a segment ({segment:?}) has no anchored meaning")]
    WildcardInSegment { field: String, segment: String },
    #[error("field {field:?}: list index {segment:?} is too large")]
    IndexTooLarge { field: String, segment: String },
    /// A mansign path that reads differently the Kyverno way; `spelled` is how mansign
    /// writes what Kyverno would have meant.
    #[error(
        "field {field:?} is written Kyverno-style and would match nothing here (keys with \
         `.` or `/` are quoted in brackets, list items are `[N]` or `[*]`); write {}",
        .spelled.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" or ")
    )]
    KyvernoStyle { field: String, spelled: Vec<String> },
}

/// Map names whose keys are free-form strings that may contain dots.
const STRING_MAPS: &[&str] = &["annotations", "labels", "matchLabels", "nodeSelector"];
/// Top-level fields of the same kind (ConfigMap, Secret).
const TOP_LEVEL_STRING_MAPS: &[&str] = &["data", "stringData", "binaryData"];
/// Most `*` segments in one field (each doubles the patterns).
const MAX_WILDCARDS: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Key(String),
    Index(usize),
    AnyKeyOrIndex,
    AnyKey,
}

/// Translates one upstream field into the patterns that together match what it names.
pub fn translate_upstream_field(field: &str) -> Result<Vec<FieldPattern>, FieldError> {
    if field.contains('[') || field.contains('"') {
        return Ok(vec![FieldPattern::parse(field)?]);
    }
    let trimmed = field.trim_end_matches('*').trim_end_matches('.');
    if trimmed.is_empty() {
        return Err(FieldError::WholeObject {
            field: field.into(),
        });
    }
    let segments: Vec<&str> = trimmed.split('.').collect();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let seg = segments[i];
        if seg.is_empty() {
            return Err(FieldError::EmptySegment {
                field: field.into(),
            });
        }
        let rest_is_one_key = i + 1 < segments.len()
            && (STRING_MAPS.contains(&seg) || (i == 0 && TOP_LEVEL_STRING_MAPS.contains(&seg)));
        parts.push(segment(field, seg)?);
        if rest_is_one_key {
            let rest = segments[i + 1..].join(".");
            if rest == "*" {
                parts.push(Part::AnyKey);
            } else if rest.contains('*') {
                return Err(FieldError::WildcardInKey {
                    field: field.into(),
                    key: rest,
                });
            } else if rest.contains('"') {
                return Err(FieldError::QuoteInKey {
                    field: field.into(),
                });
            } else {
                parts.push(Part::Key(rest));
            }
            break;
        }
        i += 1;
    }
    let wildcards = parts.iter().filter(|p| **p == Part::AnyKeyOrIndex).count();
    if wildcards > MAX_WILDCARDS {
        return Err(FieldError::TooManyWildcards {
            field: field.into(),
            limit: MAX_WILDCARDS,
        });
    }
    let mut texts = vec![String::new()];
    for part in &parts {
        let choices: Vec<String> = match part {
            Part::Key(k) if is_plain_key(k) => vec![format!(".{k}")],
            Part::Key(k) => vec![format!("[\"{k}\"]")],
            Part::Index(n) => vec![format!("[{n}]")],
            Part::AnyKey => vec![".*".to_string()],
            Part::AnyKeyOrIndex => vec![".*".to_string(), "[*]".to_string()],
        };
        texts = texts
            .iter()
            .flat_map(|t| choices.iter().map(move |c| format!("{t}{c}")))
            .collect();
    }
    texts
        .iter()
        .map(|t| Ok(FieldPattern::parse(t.strip_prefix('.').unwrap_or(t))?))
        .collect()
}

/// Reads a field path in mansign's syntax (a `ManifestPolicy`'s `ignoreFields`,
/// `verify --ignore-field`). The same text written the Kyverno way reads differently there:
/// `metadata.labels.app.kubernetes.io/name` is one label key upstream but six nested keys
/// here, and `spec.ports.0.port` names a map key `0`, not a list item; either pattern would
/// load and match nothing. A path without brackets whose Kyverno reading is not the mansign
/// reading is therefore refused, with the mansign spelling of what Kyverno would have
/// meant.
pub fn mansign_field_pattern(field: &str) -> Result<FieldPattern, FieldError> {
    let pattern = FieldPattern::parse(field)?;
    if field.contains('[') || field.contains('"') {
        return Ok(pattern);
    }
    let Ok(upstream) = translate_upstream_field(field) else {
        return Ok(pattern);
    };
    if upstream.iter().any(|p| p.to_string() == field) {
        return Ok(pattern);
    }
    Err(FieldError::KyvernoStyle {
        field: field.into(),
        spelled: upstream.iter().map(ToString::to_string).collect(),
    })
}

fn segment(field: &str, seg: &str) -> Result<Part, FieldError> {
    if seg == "*" {
        Ok(Part::AnyKeyOrIndex)
    } else if seg.contains('*') {
        Err(FieldError::WildcardInSegment {
            field: field.into(),
            segment: seg.into(),
        })
    } else if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
        seg.parse()
            .map(Part::Index)
            .map_err(|_| FieldError::IndexTooLarge {
                field: field.into(),
                segment: seg.into(),
            })
    } else {
        Ok(Part::Key(seg.to_string()))
    }
}

/// Keys FieldPattern reads without quoting.
fn is_plain_key(k: &str) -> bool {
    !k.is_empty() && k != "*" && !k.contains(['.', '[', ']', '"'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(field: &str) -> Vec<String> {
        translate_upstream_field(field)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn annotation_keys_with_dots_become_one_quoted_key() {
        assert_eq!(
            t("metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"),
            ["metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]"]
        );
        assert_eq!(
            t("metadata.labels.app.kubernetes.io/instance"),
            ["metadata.labels[\"app.kubernetes.io/instance\"]"]
        );
    }

    #[test]
    fn configmap_data_keys_with_dots_become_one_key() {
        assert_eq!(t("data.config.yaml"), ["data[\"config.yaml\"]"]);
        assert_eq!(t("data.key2"), ["data.key2"]);
    }

    #[test]
    fn numeric_segments_are_list_indices() {
        assert_eq!(t("spec.clusterIPs.0"), ["spec.clusterIPs[0]"]);
    }

    #[test]
    fn inner_wildcards_match_a_key_or_an_index() {
        assert_eq!(
            t("spec.ports.*.nodePort"),
            ["spec.ports.*.nodePort", "spec.ports[*].nodePort"]
        );
    }

    #[test]
    fn trailing_wildcards_are_dropped() {
        assert_eq!(t("metadata.managedFields.*"), ["metadata.managedFields"]);
        assert_eq!(t("metadata.finalizers*"), ["metadata.finalizers"]);
        // Upstream this is every label starting with `app`; anchored, only `app` itself.
        assert_eq!(t("metadata.labels.app*"), ["metadata.labels.app"]);
        assert_eq!(t("metadata.annotations.*"), ["metadata.annotations"]);
    }

    #[test]
    fn bracketed_fields_are_read_as_mansign_patterns() {
        assert_eq!(
            t("spec.template.spec.containers[*].image"),
            ["spec.template.spec.containers[*].image"]
        );
    }

    #[test]
    fn partial_wildcards_and_empty_segments_are_refused() {
        for f in [
            "spec.contain*.image",
            "metadata.labels.a*b",
            "a..b",
            "*",
            "",
        ] {
            assert!(translate_upstream_field(f).is_err(), "{f:?}");
        }
    }

    #[test]
    fn translated_status_is_anchored_at_the_root() {
        let p = &translate_upstream_field("status").unwrap()[0];
        let path = |keys: &[&str]| {
            crate::manifest::FieldPath(
                keys.iter()
                    .map(|k| crate::manifest::Segment::Key(k.to_string()))
                    .collect(),
            )
        };
        assert!(p.matches(&path(&["status", "x"])));
        assert!(!p.matches(&path(&["data", "status"])));
    }

    #[test]
    fn mansign_paths_refuse_kyverno_spellings_that_would_match_nothing() {
        let err = mansign_field_pattern("metadata.annotations.example.com/owner")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(r#"write `metadata.annotations["example.com/owner"]`"#),
            "{err}"
        );
        let err = mansign_field_pattern("spec.ports.0.port")
            .unwrap_err()
            .to_string();
        assert!(err.contains("write `spec.ports[0].port`"), "{err}");
        for ok in [
            "spec.replicas",
            r#"metadata.labels["app.kubernetes.io/name"]"#,
            "spec.template.spec.containers[*].image",
            "spec.containers.*.image",
        ] {
            assert_eq!(mansign_field_pattern(ok).unwrap().to_string(), ok);
        }
    }
}
