//! `POST /kyverno/v1/verify`: the verification endpoint for Kyverno's CEL `http` library.
//!
//! A call is answered by the webhook's own review: it is rewritten as the `AdmissionReview`
//! the API server would have sent for the same write (same object, old object, operation,
//! namespace, name, kind, subresource and user) and given to the same
//! [`Reviewer`](crate::admission::Reviewer), so the rules, the tolerances of the operation,
//! the cache and the verdict are the webhook's. Only the answer's shape differs: always
//! JSON, always HTTP 200 (the CEL side reads a code), `allowed: true` only when the
//! webhook's response for that review is `allowed: true`.
//!
//! The call (`docs/admission.md`, "The verification endpoint for Kyverno"):
//!
//! ```json
//! {"object": {...}, "oldObject": {...} | null,
//!  "request": {"operation": "CREATE" | "UPDATE", "namespace": "...", "name": "...",
//!              "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
//!              "resource": {"group": "", "version": "v1", "resource": "configmaps"},
//!              "subResource": "", "dryRun": false,
//!              "userInfo": {"username": "...", "groups": ["..."]}}}
//! ```
//!
//! `request` and each of its fields are optional: what is absent (or an empty string) is
//! read from the object
//! (its `apiVersion`, `kind`, `metadata.namespace`, `metadata.name`; the operation is
//! `CREATE`, which no tolerance of an update loosens). Refusals (`allowed: false`), each a
//! stable code: `body-too-large`, `too-deeply-nested`, `malformed-json`, `unknown-field`,
//! `missing-object`, `malformed-request`, `unsupported-operation`, `number-out-of-range`
//! (an integer of 2^53 or more, which Kyverno's float64 numbers cannot carry exactly), and
//! the webhook's own
//! (`body-timeout`, `deadline-exceeded`, ...).

use crate::admission::request::nesting_exceeds;
use crate::admission::response::{MAX_MESSAGE_CHARS, bounded, printable};
use crate::admission::review::MAX_REVIEW_DEPTH;
use crate::admission::{Outcome, Reviewed};
use serde_json::{Map, Value, json};

/// The path of the endpoint.
pub(super) const PATH: &str = "/kyverno/v1/verify";

/// The uid of the review a call is answered through (a call has none of its own).
const CALL_UID: &str = "00000000-0000-0000-0000-00000000ca11";

/// Deepest nesting of a call: the review's bound less one level (a call's `object` is one
/// level nearer the top than a review's `request.object`), so that an object refused as
/// too deeply nested by the webhook is refused here, and no other.
const MAX_CALL_DEPTH: usize = MAX_REVIEW_DEPTH - 1;

/// The fields a call may have; any other is refused (a misspelt `oldObject` must not
/// silently verify a `CREATE`).
const CALL_FIELDS: &[&str] = &["object", "oldObject", "request"];
const REQUEST_FIELDS: &[&str] = &[
    "operation",
    "namespace",
    "name",
    "kind",
    "resource",
    "subResource",
    "dryRun",
    "userInfo",
];

/// A call that is not answered by a review: its code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refused {
    pub(super) code: &'static str,
    pub(super) message: String,
}

fn refused(code: &'static str, message: impl Into<String>) -> Refused {
    Refused {
        code,
        message: message.into(),
    }
}

/// The answer body of a refusal.
pub(super) fn refusal_body(code: &str, message: &str) -> Vec<u8> {
    let answer = json!({
        "allowed": false,
        "code": code,
        "outcome": "refused",
        "message": bounded(&printable(message), MAX_MESSAGE_CHARS),
        "signer": Value::Null,
        "signers": [],
    });
    serde_json::to_vec(&answer).unwrap_or_default()
}

/// The answer body of a decided review: `allowed` only when both the decision and the
/// webhook's own response body say so.
pub(super) fn answer_body(reviewed: &Reviewed) -> Vec<u8> {
    let decision = &reviewed.decision;
    let response_allows = match &reviewed.response {
        Ok(body) => {
            serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.get("response")?.get("allowed")?.as_bool())
                == Some(true)
        }
        Err(_) => false,
    };
    let allowed = response_allows && decision.outcome.is_allowed();
    let code = match (&decision.reason_code, decision.outcome) {
        (Some(code), _) => code.clone(),
        (None, Outcome::Allowed) => "verified".to_string(),
        (None, outcome) => outcome.as_str().to_string(),
    };
    let answer = json!({
        "allowed": allowed,
        "code": code,
        "outcome": decision.outcome.as_str(),
        "message": bounded(&printable(&decision.message), MAX_MESSAGE_CHARS),
        "signer": decision.signers.first(),
        "signers": decision.signers,
    });
    serde_json::to_vec(&answer).unwrap_or_default()
}

/// The `AdmissionReview` request body the API server would send for the write a call
/// describes, or why the call is refused. Bounded before it is parsed.
pub(super) fn review_of(body: &[u8], max_body_bytes: usize) -> Result<Vec<u8>, Refused> {
    if body.len() > max_body_bytes {
        return Err(refused(
            "body-too-large",
            format!(
                "request body of {} bytes is larger than the limit of {max_body_bytes} bytes",
                body.len()
            ),
        ));
    }
    if nesting_exceeds(body, MAX_CALL_DEPTH) {
        return Err(refused(
            "too-deeply-nested",
            format!(
                "the call nests maps and lists deeper than {MAX_CALL_DEPTH} levels (the \
                 object deeper than {} levels)",
                MAX_CALL_DEPTH - 1
            ),
        ));
    }
    let call: Value = serde_json::from_slice(body)
        .map_err(|e| refused("malformed-json", format!("the call is not JSON: {e}")))?;
    let Some(call) = call.as_object() else {
        return Err(refused("malformed-json", "the call is not a JSON object"));
    };
    only_fields(call, CALL_FIELDS, "")?;
    let object = match call.get("object") {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        None | Some(Value::Null) => {
            return Err(refused("missing-object", "the call has no object"));
        }
        Some(_) => {
            return Err(refused("malformed-request", "object is not a JSON object"));
        }
    };
    let old_object = match call.get("oldObject") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Object(o)) => Value::Object(o.clone()),
        Some(_) => {
            return Err(refused(
                "malformed-request",
                "oldObject is not a JSON object or null",
            ));
        }
    };
    let empty = Map::new();
    let request = match call.get("request") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(r)) => r,
        Some(_) => {
            return Err(refused("malformed-request", "request is not a JSON object"));
        }
    };
    only_fields(request, REQUEST_FIELDS, "request.")?;

    let operation = match optional_str(request, "operation")? {
        None | Some("") => "CREATE",
        Some(op @ ("CREATE" | "UPDATE")) => op,
        Some(other) => {
            return Err(refused(
                "unsupported-operation",
                format!(
                    "request.operation {other:?}: the endpoint verifies writes (CREATE, \
                     UPDATE) only"
                ),
            ));
        }
    };
    for (field, value) in [("object", &object), ("oldObject", &old_object)] {
        if let Some(n) = inexact_integer(value) {
            return Err(refused(
                "number-out-of-range",
                format!(
                    "{field} holds the integer {n}, at or beyond 2^53: Kyverno's http library \
                     passes numbers as float64, so a changed integer of that size could \
                     arrive equal to the signed one (use mansign's webhook for such objects)"
                ),
            ));
        }
    }
    if operation == "UPDATE" && old_object.is_null() {
        return Err(refused(
            "malformed-request",
            "an UPDATE call has no oldObject (the stored object it replaces)",
        ));
    }

    let metadata_str = |field: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (object_group, object_version) = group_version(&object);
    let object_kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let given_kind = match request.get("kind") {
        None | Some(Value::Null) => None,
        Some(k) => Some(triple(k, "request.kind", "kind")?).filter(|k| k["kind"] != ""),
    };
    let kind = given_kind.unwrap_or_else(
        || json!({"group": object_group, "version": object_version, "kind": object_kind}),
    );
    let group = kind["group"].as_str().unwrap_or_default().to_string();
    let is_namespace_kind = group.is_empty() && kind["kind"] == "Namespace";
    let given_resource = match request.get("resource") {
        None | Some(Value::Null) => None,
        Some(r) => Some(triple(r, "request.resource", "resource")?).filter(|r| r["resource"] != ""),
    };
    let resource = given_resource.unwrap_or_else(|| {
        json!({
            "group": group,
            "version": kind["version"],
            "resource": resource_of(kind["kind"].as_str().unwrap_or_default()),
        })
    });
    // An empty name or namespace is an absent one (a background scan has no request).
    let name = match optional_str(request, "name")? {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => metadata_str("name"),
    };
    let namespace = match optional_str(request, "namespace")?.filter(|ns| !ns.is_empty()) {
        Some(ns) => ns.to_string(),
        // The API server sends a Namespace's own name as the request's namespace.
        None if is_namespace_kind => name.clone(),
        None => metadata_str("namespace"),
    };
    let sub_resource = optional_str(request, "subResource")?.unwrap_or_default();
    let dry_run = match request.get("dryRun") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(refused(
                "malformed-request",
                "request.dryRun is not a boolean",
            ));
        }
    };
    let user_info = match request.get("userInfo") {
        None | Some(Value::Null) => json!({"username": ""}),
        Some(Value::Object(u)) => {
            let username = match u.get("username") {
                None | Some(Value::Null) => "",
                Some(Value::String(s)) => s.as_str(),
                Some(_) => {
                    return Err(refused(
                        "malformed-request",
                        "request.userInfo.username is not a string",
                    ));
                }
            };
            let groups = match u.get("groups") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(groups)) => groups
                    .iter()
                    .map(|g| {
                        g.as_str().map(str::to_string).ok_or_else(|| {
                            refused(
                                "malformed-request",
                                "request.userInfo.groups is not a list of strings",
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                Some(_) => {
                    return Err(refused(
                        "malformed-request",
                        "request.userInfo.groups is not a list of strings",
                    ));
                }
            };
            json!({"username": username, "groups": groups})
        }
        Some(_) => {
            return Err(refused(
                "malformed-request",
                "request.userInfo is not a JSON object",
            ));
        }
    };

    let options = if operation == "UPDATE" {
        "UpdateOptions"
    } else {
        "CreateOptions"
    };
    let mut review_request = json!({
        "uid": CALL_UID,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": name,
        "operation": operation,
        "userInfo": user_info,
        "object": object,
        "oldObject": old_object,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
    });
    if !namespace.is_empty() {
        review_request["namespace"] = json!(namespace);
    }
    if !sub_resource.is_empty() {
        review_request["subResource"] = json!(sub_resource);
        review_request["requestSubResource"] = json!(sub_resource);
    }
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": review_request,
    });
    serde_json::to_vec(&review).map_err(|e| {
        refused(
            "malformed-request",
            format!("the call cannot be reviewed: {e}"),
        )
    })
}

/// The first integer of `value` whose magnitude is 2^53 or more: Kyverno's CEL `http`
/// library converts the body to a protobuf `Value`, whose numbers are float64, and only
/// integers below 2^53 survive that exactly. Recursion is bounded by the nesting check.
fn inexact_integer(value: &Value) -> Option<serde_json::Number> {
    const EXACT: u64 = 1 << 53;
    match value {
        Value::Number(n) => {
            let too_large = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u >= EXACT,
                (None, Some(i)) => i.unsigned_abs() >= EXACT,
                (None, None) => n
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() >= EXACT as f64),
            };
            too_large.then(|| n.clone())
        }
        Value::Array(items) => items.iter().find_map(inexact_integer),
        Value::Object(map) => map.values().find_map(inexact_integer),
        _ => None,
    }
}

/// Refuses a field of `map` not in `allowed`.
fn only_fields(map: &Map<String, Value>, allowed: &[&str], prefix: &str) -> Result<(), Refused> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(unknown) => Err(refused(
            "unknown-field",
            format!(
                "{prefix}{unknown}: not a field of the call (expected one of: {})",
                allowed
                    .iter()
                    .map(|f| format!("{prefix}{f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// `request.FIELD` as a string: `None` when absent or null, refused when not a string.
fn optional_str<'a>(
    request: &'a Map<String, Value>,
    field: &str,
) -> Result<Option<&'a str>, Refused> {
    match request.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(refused(
            "malformed-request",
            format!("request.{field} is not a string"),
        )),
    }
}

/// `{group, version, LAST}` of strings (`LAST` is `kind` or `resource`), as given.
fn triple(value: &Value, field: &str, last: &str) -> Result<Value, Refused> {
    let bad = || {
        refused(
            "malformed-request",
            format!("{field} is not {{group, version, {last}}} of strings"),
        )
    };
    let map = value.as_object().ok_or_else(bad)?;
    let part = |name: &str| match map.get(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad()),
    };
    Ok(json!({"group": part("group")?, "version": part("version")?, (last): part(last)?}))
}

/// The group and version of the object's `apiVersion` (`v1`: the core group).
fn group_version(object: &Value) -> (String, String) {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match api_version.split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), api_version.to_string()),
    }
}

/// The resource name of a kind, for a call that does not give it: the lower-case plural
/// (only `namespaces` is read by the review, the rest is named in messages).
fn resource_of(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s') || lower.ends_with('x') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{ReviewOptions, Reviewer};
    use crate::policy::{LoadOptions, load_str};

    const POLICY: &str = r#"
apiVersion: mansign.dev/v1alpha1
kind: ManifestPolicy
metadata: {name: exceptions}
spec:
  match: {kinds: [PolicyException]}
  attestors:
  - entries:
    - keys:
        publicKeys: |
          -----BEGIN PUBLIC KEY-----
          MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyQfmL5YwHbn9xrrgG3vgbU0KJxMY
          BibYLJ5L4VSMvGxeMLnBGdM48w5IE//6idUPj3rscigFdHs7GDMH4LLAng==
          -----END PUBLIC KEY-----
"#;

    fn reviewer() -> Reviewer {
        let policy =
            load_str("policy.yaml", POLICY, ".".as_ref(), &LoadOptions::default()).unwrap();
        Reviewer::new(policy, ReviewOptions::default())
    }

    fn exception() -> Value {
        json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
               "metadata": {"name": "allow-debug", "namespace": "team-a"},
               "spec": {"exceptions": []}})
    }

    fn answer(body: &[u8]) -> Value {
        let reviewer = reviewer();
        let bytes = match review_of(body, 3 * 1024 * 1024) {
            Ok(review) => answer_body(&reviewer.review(&review)),
            Err(r) => refusal_body(r.code, &r.message),
        };
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn an_unsigned_object_is_denied_with_the_webhooks_code() {
        let a = answer(&serde_json::to_vec(&json!({"object": exception()})).unwrap());
        assert_eq!(a["allowed"], false, "{a}");
        assert_eq!(a["code"], "not-signed", "{a}");
        assert_eq!(a["outcome"], "denied", "{a}");
        assert_eq!(a["signer"], Value::Null, "{a}");
    }

    #[test]
    fn an_object_no_rule_matches_is_allowed_as_not_matched() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "c", "namespace": "team-a"}});
        let a = answer(&serde_json::to_vec(&json!({"object": object})).unwrap());
        assert_eq!(a["allowed"], true, "{a}");
        assert_eq!(a["code"], "not-matched", "{a}");
    }

    #[test]
    fn malformed_calls_are_refused_with_a_code_never_allowed() {
        let too_deep = format!(
            "{{\"object\": {}1{}}}",
            "[".repeat(MAX_CALL_DEPTH),
            "]".repeat(MAX_CALL_DEPTH)
        );
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"not json".to_vec(), "malformed-json"),
            (b"[1]".to_vec(), "malformed-json"),
            (b"{}".to_vec(), "missing-object"),
            (br#"{"object": 1}"#.to_vec(), "malformed-request"),
            (
                br#"{"object": {}, "policy": "x"}"#.to_vec(),
                "unknown-field",
            ),
            (
                br#"{"object": {}, "oldobject": {}}"#.to_vec(),
                "unknown-field",
            ),
            (
                br#"{"object": {}, "request": {"operation": "DELETE"}}"#.to_vec(),
                "unsupported-operation",
            ),
            (
                br#"{"object": {}, "request": {"operation": "UPDATE"}}"#.to_vec(),
                "malformed-request",
            ),
            (
                br#"{"object": {}, "request": {"userInfo": {"groups": [1]}}}"#.to_vec(),
                "malformed-request",
            ),
            (too_deep.into_bytes(), "too-deeply-nested"),
            (
                br#"{"object": {"spec": {"n": 9007199254740992}}}"#.to_vec(),
                "number-out-of-range",
            ),
            (
                br#"{"object": {}, "oldObject": {"a": [-9007199254740993]}}"#.to_vec(),
                "number-out-of-range",
            ),
            (
                br#"{"object": {"spec": {"n": 1e300}}}"#.to_vec(),
                "number-out-of-range",
            ),
        ];
        for (body, code) in cases {
            let a = answer(&body);
            assert_eq!(
                a["allowed"],
                false,
                "{}: {a}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(a["code"], code, "{}: {a}", String::from_utf8_lossy(&body));
        }
        let big = vec![b' '; 101];
        assert_eq!(review_of(&big, 100).unwrap_err().code, "body-too-large");
    }

    #[test]
    fn the_review_carries_the_request_fields_given_and_the_objects_otherwise() {
        let call = json!({"object": exception(), "request": {
            "operation": "CREATE", "namespace": "team-b",
            "userInfo": {"username": "alice", "groups": ["dev"]}}});
        let review: Value = serde_json::from_slice(
            &review_of(&serde_json::to_vec(&call).unwrap(), 1 << 20).unwrap(),
        )
        .unwrap();
        let r = &review["request"];
        assert_eq!(r["namespace"], "team-b");
        assert_eq!(r["name"], "allow-debug");
        assert_eq!(
            r["kind"],
            json!({"group": "kyverno.io", "version": "v2", "kind": "PolicyException"})
        );
        assert_eq!(r["resource"]["resource"], "policyexceptions");
        assert_eq!(r["userInfo"]["username"], "alice");
        // The object names another namespace than the request: the webhook's refusal.
        let a = answer(&serde_json::to_vec(&call).unwrap());
        assert_eq!(a["allowed"], false, "{a}");
        assert_eq!(a["code"], "namespace-mismatch", "{a}");
    }

    #[test]
    fn resource_names() {
        assert_eq!(resource_of("PolicyException"), "policyexceptions");
        assert_eq!(resource_of("Policy"), "policies");
        assert_eq!(resource_of("Ingress"), "ingresses");
        assert_eq!(resource_of("Namespace"), "namespaces");
    }
}
