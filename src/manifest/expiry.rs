//! Signed times: both are annotations written into each document before signing, so the
//! signature covers them.
//!
//! * `mansign.dev/expires` (`mansign sign --expires 4h`): verification rejects a document
//!   whose signed expiry has passed: a temporary PolicyException ends without a cleanup
//!   controller, and an old signed version cannot be replayed after it.
//! * `mansign.dev/signed-at` (every signature mansign makes): when the signer signed.
//!   `--max-age` / policy `maxAge` are measured from it. A transparency-log time is not a
//!   signing time: anyone holding a key signature (or a malleated twin of it) can log it at
//!   any time, and a key signature need not be logged at all.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value};

/// The annotation holding the signed expiry.
pub const EXPIRES_ANNOTATION: &str = "mansign.dev/expires";

/// The annotation holding the signed signing time.
pub const SIGNED_AT_ANNOTATION: &str = "mansign.dev/signed-at";

/// Why a signed time could not be written into a document or read from it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TimeAnnotationError {
    /// The document has no `metadata` mapping to hold the annotation.
    #[error("document has no metadata mapping")]
    NoMetadata,
    /// `metadata.annotations` is there but not a mapping.
    #[error("`metadata.annotations` is not a mapping")]
    AnnotationsNotAMapping,
    /// The time cannot be written in whole seconds.
    #[error("{at} cannot be written in whole seconds")]
    OutOfRange {
        at: Timestamp,
        #[source]
        source: jiff::Error,
    },
    /// The annotation's value is not a string.
    #[error("annotation {key} is not a string")]
    NotAString { key: &'static str },
    /// The annotation's value is not an RFC 3339 time.
    #[error("annotation {key}: {text:?} is not an RFC 3339 time")]
    NotATime {
        key: &'static str,
        text: String,
        #[source]
        source: jiff::Error,
    },
}

/// Why an `--expires` value or a duration (`--max-age`, a policy's `maxAge`) was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TimeSpecError {
    /// Not a duration like `90s`, `30m`, `4h`, `7d` or `1h30m`.
    #[error("{spec:?} is not a duration like 90s, 30m, 4h, 7d or 1h30m")]
    NotADuration { spec: String },
    /// `--expires` is neither a duration, a date nor an RFC 3339 time.
    #[error(
        "--expires {spec:?} is neither a duration (90s, 30m, 4h, 7d, 1h30m), a date \
         (2026-12-31: the end of that day, UTC) nor an RFC 3339 time \
         (2026-12-31T18:00:00Z)"
    )]
    ExpiresUnreadable { spec: String },
    /// `--expires` names a time that cannot be reached (out of range).
    #[error("--expires {spec:?}")]
    ExpiresOutOfRange {
        spec: String,
        #[source]
        source: jiff::Error,
    },
    /// `--expires` names a time that is not in the future.
    #[error("--expires {spec:?} is not in the future")]
    ExpiresPast { spec: String },
}

/// Writes the expiry annotation into a document (replacing an older one).
pub fn set_expiry(value: &mut Value, at: Timestamp) -> Result<(), TimeAnnotationError> {
    set_time_annotation(value, EXPIRES_ANNOTATION, at)
}

/// Writes the signing-time annotation into a document (replacing an older one).
pub fn set_signed_at(value: &mut Value, at: Timestamp) -> Result<(), TimeAnnotationError> {
    set_time_annotation(value, SIGNED_AT_ANNOTATION, at)
}

fn set_time_annotation(
    value: &mut Value,
    key: &str,
    at: Timestamp,
) -> Result<(), TimeAnnotationError> {
    let meta = value
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or(TimeAnnotationError::NoMetadata)?;
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(TimeAnnotationError::AnnotationsNotAMapping)?;
    // Whole seconds: the value is for people to read as well.
    let at = Timestamp::from_second(at.as_second())
        .map_err(|source| TimeAnnotationError::OutOfRange { at, source })?;
    ann.insert(key.into(), Value::String(at.to_string()));
    Ok(())
}

/// The signed expiry of a document, if it has one; a malformed value is an error (fail
/// closed: an unreadable expiry is not "no expiry").
pub fn expiry_of(value: &Value) -> Result<Option<Timestamp>, TimeAnnotationError> {
    time_annotation(value, EXPIRES_ANNOTATION)
}

/// The signed signing time of a document, if it has one; a malformed value is an error.
pub fn signed_at_of(value: &Value) -> Result<Option<Timestamp>, TimeAnnotationError> {
    time_annotation(value, SIGNED_AT_ANNOTATION)
}

fn time_annotation(
    value: &Value,
    key: &'static str,
) -> Result<Option<Timestamp>, TimeAnnotationError> {
    let Some(v) = value
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(key))
    else {
        return Ok(None);
    };
    let text = v.as_str().ok_or(TimeAnnotationError::NotAString { key })?;
    text.parse::<Timestamp>()
        .map(Some)
        .map_err(|source| TimeAnnotationError::NotATime {
            key,
            text: text.to_string(),
            source,
        })
}

/// Parses `--expires`: a duration from `now` (`90s`, `30m`, `4h`, `7d`, or combined like
/// `1h30m`), a date (`2026-12-31`: the end of that day, UTC) or an RFC 3339 time. The result
/// must lie in the future.
pub fn parse_expires(spec: &str, now: Timestamp) -> Result<Timestamp, TimeSpecError> {
    let out_of_range = |source| TimeSpecError::ExpiresOutOfRange {
        spec: spec.to_string(),
        source,
    };
    let at = if let Ok(t) = spec.parse::<Timestamp>() {
        t
    } else if let Ok(date) = spec.parse::<jiff::civil::Date>() {
        // A date means the end of that day, UTC: `--expires 2026-12-31` lasts all of it.
        date.tomorrow()
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC))
            .map(|z| z.timestamp())
            .map_err(out_of_range)?
    } else {
        now.checked_add(
            parse_duration(spec).map_err(|_| TimeSpecError::ExpiresUnreadable {
                spec: spec.to_string(),
            })?,
        )
        .map_err(out_of_range)?
    };
    if at <= now {
        return Err(TimeSpecError::ExpiresPast {
            spec: spec.to_string(),
        });
    }
    Ok(at)
}

/// `90s`, `30m`, `4h`, `7d`, `1h30m`.
pub fn parse_duration(spec: &str) -> Result<SignedDuration, TimeSpecError> {
    let bad = || TimeSpecError::NotADuration {
        spec: spec.to_string(),
    };
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in spec.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: i64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            _ => return Err(bad()),
        };
        let n: i64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|x| total.checked_add(x))
            .ok_or_else(bad)?;
        digits.clear();
    }
    if !digits.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(SignedDuration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When `--expires text` given at `now` ends, as RFC 3339.
    fn expires_at(text: &str, now: &str) -> String {
        let now: Timestamp = now.parse().unwrap();
        parse_expires(text, now).unwrap().to_string()
    }

    #[test]
    fn an_expiry_date_lasts_until_the_end_of_that_day_utc() {
        let now: Timestamp = "2026-11-23T12:00:00Z".parse().unwrap();
        assert_eq!(
            expires_at("2026-12-31", "2026-11-23T12:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert!(parse_expires("2026-11-22", now).is_err());
        let err = parse_expires("next week", now).unwrap_err().to_string();
        assert!(err.contains("RFC 3339 time"), "{err}");
        assert!(err.contains("a date"), "{err}");
    }
    use serde_json::json;

    #[test]
    fn durations_and_times_parse() {
        for (text, end) in [
            ("4h", "2026-01-01T04:00:00Z"),
            ("1h30m", "2026-01-01T01:30:00Z"),
            ("7d", "2026-01-08T00:00:00Z"),
            ("2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        ] {
            assert_eq!(expires_at(text, "2026-01-01T00:00:00Z"), end, "{text}");
        }
    }

    #[test]
    fn rejects_bad_or_past_expiry() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        for bad in [
            "",
            "4",
            "h",
            "4x",
            "-4h",
            "0s",
            "2025-01-01T00:00:00Z",
            "99999999999999999999d",
        ] {
            assert!(parse_expires(bad, now).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn expiry_round_trips_through_the_annotation() {
        let mut v = json!({"metadata": {"name": "x"}});
        let at: Timestamp = "2026-01-01T04:00:00.5Z".parse().unwrap();
        set_expiry(&mut v, at).unwrap();
        assert_eq!(
            v["metadata"]["annotations"][EXPIRES_ANNOTATION],
            "2026-01-01T04:00:00Z"
        );
        assert_eq!(
            expiry_of(&v).unwrap().unwrap().to_string(),
            "2026-01-01T04:00:00Z"
        );
    }

    #[test]
    fn malformed_expiry_is_an_error() {
        let v = json!({"metadata": {"annotations": {EXPIRES_ANNOTATION: "tomorrow"}}});
        assert!(expiry_of(&v).is_err());
        let v = json!({"metadata": {"annotations": {EXPIRES_ANNOTATION: 5}}});
        assert!(expiry_of(&v).is_err());
    }
}
