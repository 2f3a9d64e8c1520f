//! Reading one `AdmissionReview` v1 request body, bounded, with kube-core's admission types
//! for the envelope and the object kept as the raw JSON the API server sent.
//!
//! Why the object stays raw: kube-core would read it as a `DynamicObject`, whose typed
//! `ObjectMeta` drops unknown metadata fields and cannot tell a `null` from an absent key.
//! The object is what mansign compares with the signed document, field for field, so it
//! is taken out of the body before kube-core reads the rest, and verified as sent.
//!
//! Checks, in order, each a [`BadReview`] code (the server answers HTTP 400, the API server
//! applies the webhook's `failurePolicy`):
//!
//! 1. `body-too-large`: more than `max_body_bytes`, refused before it is read;
//! 2. `too-deeply-nested`: maps and lists nested deeper than `max_depth`, found by a scan
//!    of the bytes before any parser builds anything;
//! 3. `malformed-json`: not one JSON object;
//! 4. `wrong-api-version`: not `admission.k8s.io/v1` `AdmissionReview`;
//! 5. `missing-request`, `missing-uid`;
//! 6. `malformed-request`: the request does not read as kube-core's `AdmissionRequest`
//!    (a missing `operation`, `userInfo`, `kind`, ...);
//! 7. `missing-object`: a `CREATE` or `UPDATE` without `object`.

use kube_core::admission::{AdmissionRequest, AdmissionReview, Operation};
use kube_core::dynamic::DynamicObject;
use serde_json::Value;

/// The only `AdmissionReview` version answered (the API server sends v1 when the webhook
/// configuration lists `admissionReviewVersions: ["v1"]`, as `deploy/` does).
pub const API_VERSION: &str = "admission.k8s.io/v1";
pub const KIND: &str = "AdmissionReview";

/// A body that is not an answerable `AdmissionReview` (the server answers HTTP 400, and
/// the API server applies the webhook's `failurePolicy`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadReview {
    /// Stable code for metrics (`malformed-json`, `wrong-api-version`, `missing-uid`, ...;
    /// the module documentation lists them).
    pub code: &'static str,
    pub message: String,
}

/// One request, read.
#[derive(Debug)]
pub struct ParsedRequest {
    /// The envelope, as kube-core reads it (`object` and `oldObject` taken out).
    pub request: AdmissionRequest<DynamicObject>,
    /// `request.object` exactly as sent (`None` when absent or `null`).
    pub object: Option<Value>,
    /// `request.oldObject` exactly as sent (`None` when absent or `null`): the stored object
    /// an `UPDATE` replaces. Not verified; the tolerances that depend on the object's history
    /// read it (`manifest::AdmissionWrite`).
    pub old_object: Option<Value>,
}

fn bad(code: &'static str, message: impl Into<String>) -> BadReview {
    BadReview {
        code,
        message: message.into(),
    }
}

/// The deepest nesting of `[`/`{` in `body`, stopping as soon as it passes `limit`.
/// Strings are skipped (escapes included), so brackets inside them do not count.
fn nesting_exceeds(body: &[u8], limit: usize) -> bool {
    /// Where the scan is: outside strings, in a string, or just after a `\` in one.
    #[derive(Clone, Copy)]
    enum Place {
        Code,
        Text,
        Escape,
    }
    let mut depth = 0usize;
    let mut place = Place::Code;
    for &b in body {
        place = match (place, b) {
            (Place::Escape, _) => Place::Text,
            (Place::Text, b'\\') => Place::Escape,
            (Place::Text, b'"') => Place::Code,
            (Place::Text, _) => Place::Text,
            (Place::Code, b'"') => Place::Text,
            (Place::Code, b'[' | b'{') => {
                depth += 1;
                if depth > limit {
                    return true;
                }
                Place::Code
            }
            (Place::Code, b']' | b'}') => {
                depth = depth.saturating_sub(1);
                Place::Code
            }
            (Place::Code, _) => Place::Code,
        };
    }
    false
}

/// Reads a request body (see the module documentation for the checks and their codes).
pub fn parse(
    body: &[u8],
    max_body_bytes: usize,
    max_depth: usize,
) -> Result<ParsedRequest, BadReview> {
    if body.len() > max_body_bytes {
        return Err(bad(
            "body-too-large",
            format!(
                "request body of {} bytes is larger than the limit of {max_body_bytes} bytes",
                body.len()
            ),
        ));
    }
    if nesting_exceeds(body, max_depth) {
        return Err(bad(
            "too-deeply-nested",
            format!("request body nests maps and lists deeper than {max_depth} levels"),
        ));
    }
    let mut review: Value = serde_json::from_slice(body)
        .map_err(|e| bad("malformed-json", format!("request body is not JSON: {e}")))?;
    let Some(top) = review.as_object_mut() else {
        return Err(bad(
            "malformed-json",
            "request body is not a JSON object (expected an AdmissionReview)",
        ));
    };
    let field = |name: &str| top.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if api_version != API_VERSION || kind != KIND {
        return Err(bad(
            "wrong-api-version",
            format!(
                "expected apiVersion {API_VERSION} kind {KIND}, found apiVersion {api_version:?} \
                 kind {kind:?}"
            ),
        ));
    }
    let request = match top.get_mut("request") {
        Some(Value::Object(r)) => r,
        Some(Value::Null) | None => {
            return Err(bad("missing-request", "AdmissionReview has no request"));
        }
        Some(_) => {
            return Err(bad("malformed-request", "request is not a JSON object"));
        }
    };
    match request.get("uid") {
        Some(Value::String(uid)) if !uid.is_empty() => {}
        _ => {
            return Err(bad(
                "missing-uid",
                "request.uid is missing or empty (the response must echo it)",
            ));
        }
    }
    let object = match request.remove("object") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    };
    // Not verified (the new object is, research §2.8); kept for the tolerances.
    let old_object = match request.remove("oldObject") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    };
    let typed: AdmissionReview<DynamicObject> = serde_json::from_value(review)
        .map_err(|e| bad("malformed-request", format!("request is malformed: {e}")))?;
    let request: AdmissionRequest<DynamicObject> = typed
        .try_into()
        .map_err(|_| bad("missing-request", "AdmissionReview has no request"))?;
    if matches!(request.operation, Operation::Create | Operation::Update) && object.is_none() {
        return Err(bad(
            "missing-object",
            format!(
                "request.object is missing for a {} request",
                operation_name(&request.operation)
            ),
        ));
    }
    Ok(ParsedRequest {
        request,
        object,
        old_object,
    })
}

/// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
pub fn operation_name(op: &Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_brackets_outside_strings_only() {
        assert!(!nesting_exceeds(br#"{"a":[{"b":"[[[[[[[["}]}"#, 3));
        assert!(nesting_exceeds(br#"{"a":[{"b":[1]}]}"#, 3));
        assert!(!nesting_exceeds(br#"{"a":"\"[[[["}"#, 1));
    }
}
