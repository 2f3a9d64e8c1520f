//! Reading one `AdmissionReview` v1 request body, bounded, with kube-core's admission types
//! for the envelope and the object kept as the raw JSON the API server sent.
//!
//! Why the object stays raw: kube-core would read it as a `DynamicObject`, whose typed
//! `ObjectMeta` drops unknown metadata fields and cannot tell a `null` from an absent key.
//! The object is what mansign compares with the signed document, field for field, so it
//! is taken out of the body before kube-core reads the rest, and verified as sent.
//!
//! Checks, in order, each a [`BadReview`] code. The reviewer answers one with HTTP 200 and
//! `allowed: false` whenever the request's uid can still be read ([`readable_uid`]): a
//! client can shape an object the API server forwards (nested deeper than mansign reads,
//! say), and an HTTP error would leave the decision to the webhook's `failurePolicy`,
//! which under `Ignore` admits it. Only a body that is no `AdmissionReview` v1 with a uid
//! gets HTTP 400.
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

/// A body that is not an answerable `AdmissionReview`: refused (HTTP 200, `allowed:
/// false`) when its uid can be read, else HTTP 400.
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
pub(crate) fn nesting_exceeds(body: &[u8], limit: usize) -> bool {
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

/// Longest `request.uid` [`readable_uid`] returns (the API server sends a UUID).
pub const MAX_UID_BYTES: usize = 256;

/// The `request.uid` of a body that is an `admission.k8s.io/v1` `AdmissionReview`, found
/// by a scan that builds nothing: it reads the top-level keys and those of `request`,
/// skipping every other value by counting brackets, and stops as soon as `apiVersion`,
/// `kind` and `request.uid` are read. So it answers for a body [`parse`] refuses after the
/// uid (nested too deeply, malformed further on, a `request` kube-core cannot read), and for
/// the first bytes of a body too large to read whole (the API server writes `kind`,
/// `apiVersion` and `request.uid` first).
///
/// With the uid, a refusal is an HTTP 200 `allowed: false` answer, which the webhook's
/// `failurePolicy` cannot turn into an allow; without it (not an `AdmissionReview` v1, no
/// uid, or a uid longer than [`MAX_UID_BYTES`]) the only answer is an HTTP error.
pub fn readable_uid(body: &[u8]) -> Option<String> {
    let mut scan = Scan { bytes: body, at: 0 };
    let (mut api_version, mut kind, mut uid) = (None, None, None);
    scan.open(b'{')?;
    loop {
        let key = scan.key()?;
        match key.as_str() {
            "apiVersion" => api_version = Some(scan.string()?),
            "kind" => kind = Some(scan.string()?),
            "request" if uid.is_none() => {
                scan.open(b'{')?;
                loop {
                    let key = scan.key()?;
                    if key == "uid" && uid.is_none() {
                        uid = Some(scan.string()?);
                    } else {
                        scan.skip_value()?;
                    }
                    if api_version.is_some() && kind.is_some() && uid.is_some() {
                        break;
                    }
                    if !scan.next_member()? {
                        break;
                    }
                }
            }
            _ => scan.skip_value()?,
        }
        if let (Some(a), Some(k), Some(u)) = (&api_version, &kind, &uid) {
            let answerable = a == API_VERSION && k == KIND && !u.is_empty();
            return (answerable && u.len() <= MAX_UID_BYTES).then(|| u.clone());
        }
        if !scan.next_member()? {
            return None;
        }
    }
}

/// A cursor over JSON bytes for [`readable_uid`]: `None` at anything unexpected, and at
/// the end of the bytes.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.peek()? == want).then(|| self.at += 1)
    }

    /// `{` (or `[`), not followed by its closing bracket.
    fn open(&mut self, bracket: u8) -> Option<()> {
        self.eat(bracket)?;
        (self.peek()? != b'}').then_some(())
    }

    /// A member's key and its `:`.
    fn key(&mut self) -> Option<String> {
        let key = self.string()?;
        self.eat(b':')?;
        Some(key)
    }

    /// After a member: true at `,` (another member follows), false at `}`.
    fn next_member(&mut self) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b'}' => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// The bytes of a string, from its opening quote to its closing one.
    fn string_bytes(&mut self) -> Option<&[u8]> {
        self.eat(b'"')?;
        let start = self.at - 1;
        loop {
            match *self.bytes.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at);
                }
                _ => self.at += 1,
            }
        }
    }

    /// A string value, its escapes decoded as any JSON reader decodes them.
    fn string(&mut self) -> Option<String> {
        let quoted = self.string_bytes()?;
        if quoted.len() > 6 * MAX_UID_BYTES + 2 {
            // Longer than any uid, apiVersion or kind answered, escaped: not decoded.
            return Some(String::new());
        }
        serde_json::from_slice(quoted).ok()
    }

    /// Skips one value of any kind and depth (brackets counted, strings skipped whole).
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string_bytes().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.bytes.get(self.at)? {
                        b'"' => {
                            self.string_bytes()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while !matches!(
                    *self.bytes.get(self.at)?,
                    b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                ) {
                    self.at += 1;
                }
                Some(())
            }
        }
    }
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
    fn the_uid_is_read_from_bodies_parse_refuses() {
        let head = r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"object":"#;
        // Nested far too deep, after the uid.
        let deep = format!("{head}{}{}}}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(
            parse(deep.as_bytes(), 1 << 20, 66).unwrap_err().code,
            "too-deeply-nested"
        );
        assert_eq!(readable_uid(deep.as_bytes()).as_deref(), Some("u-1"));
        // Only the first bytes of a body too large to read whole.
        assert_eq!(readable_uid(head.as_bytes()).as_deref(), Some("u-1"));
        // Malformed after the uid; a request kube-core cannot read.
        let broken = format!("{head}{{\"a\": tru");
        assert_eq!(readable_uid(broken.as_bytes()).as_deref(), Some("u-1"));
        // Keys in another order, escaped, values skipped whole.
        let shuffled = br#"{"request": {"object": {"uid": "not this", "x": ["}", {"uid": 1}]}, "dryRun": false, "\u0075id": "u-2"}, "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}"#;
        assert_eq!(readable_uid(shuffled).as_deref(), Some("u-2"));
    }

    #[test]
    fn no_uid_is_read_from_what_is_no_admission_review_v1() {
        for body in [
            &br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"u"}}"#[..],
            br#"{"kind":"Pod","apiVersion":"v1","request":{"uid":"u"}}"#,
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":""}}"#,
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":7}}"#,
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"name":"x"}}"#,
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}"#,
            br#"{"kind":"AdmissionReview","request":{"uid":"u"}}"#,
            br#"[{"kind":"AdmissionReview"}]"#,
            b"",
            b"{",
            b"not json",
        ] {
            assert_eq!(readable_uid(body), None, "{}", String::from_utf8_lossy(body));
        }
        let long = format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"{}"}}}}"#,
            "u".repeat(MAX_UID_BYTES + 1)
        );
        assert_eq!(readable_uid(long.as_bytes()), None);
    }

    #[test]
    fn nesting_counts_brackets_outside_strings_only() {
        assert!(!nesting_exceeds(br#"{"a":[{"b":"[[[[[[[["}]}"#, 3));
        assert!(nesting_exceeds(br#"{"a":[{"b":[1]}]}"#, 3));
        assert!(!nesting_exceeds(br#"{"a":"\"[[[["}"#, 1));
    }
}
