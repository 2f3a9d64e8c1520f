//! The `AdmissionReview` response body: kube-core's `AdmissionResponse`, with the wording
//! rules of Kubernetes' webhook documentation (research kyverno-manifests §5).
//!
//! * A denial carries `status.code` 403 and `reason` `Forbidden` (with no code the API
//!   server would report 400, a client error, as it does for Kyverno), and a message that
//!   starts with the reason, bounded to [`MAX_MESSAGE_CHARS`].
//! * Warnings (returned to the client as `Warning: 299` headers) are at most
//!   [`MAX_WARNING_CHARS`] characters each, without a `Warning:` prefix or control
//!   characters, at most [`MAX_WARNINGS`] of them.

use kube_core::admission::{AdmissionRequest, AdmissionResponse};
use kube_core::dynamic::DynamicObject;

/// Longest `status.message` (kubectl prints it whole; the API server prefixes the webhook
/// name).
pub const MAX_MESSAGE_CHARS: usize = 1024;
/// Kubernetes asks webhooks to keep each warning within 120 characters.
pub const MAX_WARNING_CHARS: usize = 120;
/// The API server drops warnings past 4096 characters in total.
pub const MAX_WARNINGS: usize = 16;

/// What the response says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub allowed: bool,
    /// `status.message` of a denial.
    pub message: Option<String>,
    pub warnings: Vec<String>,
}

/// `text` cut to at most `max` characters, ending with `…` when cut.
pub fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Control characters replaced by spaces: the API server turns warnings into HTTP
/// `Warning` headers, and a reason may quote the object. Invisible formatting characters
/// (bidirectional overrides and isolates, zero-width characters, the byte-order mark) are
/// written as `\u{…}`: a quoted value must not reorder or hide the text around it when
/// kubectl prints the message.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push(' ');
        } else if is_invisible_format(c) {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Unicode format characters that change how the text around them is shown.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}' | '\u{206a}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}')
}

/// The response body for `request` (HTTP 200).
pub fn body(request: &AdmissionRequest<DynamicObject>, answer: &Answer) -> Vec<u8> {
    let mut response = AdmissionResponse::from(request);
    if !answer.allowed {
        response = response.deny(bounded(
            &printable(answer.message.as_deref().unwrap_or("denied")),
            MAX_MESSAGE_CHARS,
        ));
        response.result.code = 403;
        response.result.reason = "Forbidden".into();
    }
    if !answer.warnings.is_empty() {
        response.warnings = Some(
            answer
                .warnings
                .iter()
                .take(MAX_WARNINGS)
                .map(|w| bounded(&printable(w), MAX_WARNING_CHARS))
                .collect(),
        );
    }
    // Serializing plain data with string keys cannot fail; an empty body would be
    // rejected by the API server (failurePolicy), never read as an allow.
    serde_json::to_vec(&response.into_review()).unwrap_or_default()
}

/// The response body (HTTP 200, `allowed: false`, `status.code` 403) for a request that
/// cannot be answered, whose `uid` is all that could be read of it
/// ([`readable_uid`](super::request::readable_uid)): the message ends with `[code]`. An
/// HTTP error instead would leave the decision to the webhook's `failurePolicy`, which
/// under `Ignore` admits what mansign could not check.
pub fn refusal(uid: &str, code: &str, message: &str) -> Vec<u8> {
    let mut response = AdmissionResponse::invalid("");
    response.uid = uid.to_string();
    response = response.deny(bounded(
        &printable(&format!("{message} [{code}]")),
        MAX_MESSAGE_CHARS,
    ));
    response.result.code = 403;
    response.result.reason = "Forbidden".into();
    serde_json::to_vec(&response.into_review()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_denies_the_request_it_names() {
        let body = refusal("u-1", "too-deeply-nested", "nested \u{202e}deep");
        let review: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let response = &review["response"];
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(response["uid"], "u-1");
        assert_eq!(response["allowed"], false);
        assert_eq!(response["status"]["code"], 403);
        assert_eq!(
            response["status"]["message"],
            "nested \\u{202e}deep [too-deeply-nested]"
        );
    }

    #[test]
    fn bounded_cuts_on_characters_and_marks_the_cut() {
        assert_eq!(bounded("abc", 3), "abc");
        assert_eq!(bounded("abcd", 3), "ab…");
        assert_eq!(bounded("ééééé", 4), "ééé…");
    }

    #[test]
    fn warnings_carry_no_control_characters() {
        assert_eq!(printable("a\r\nb\u{7}c"), "a  b c");
    }

    #[test]
    fn invisible_formatting_is_spelled_out() {
        // A right-to-left override would show `evil.yaml` reversed; zero-width spaces
        // would hide a difference between two names.
        assert_eq!(
            printable("name \"a\u{202e}lmay.live\u{200b}\""),
            "name \"a\\u{202e}lmay.live\\u{200b}\""
        );
        assert_eq!(printable("\u{feff}x\u{2066}y"), "\\u{feff}x\\u{2066}y");
        assert_eq!(printable("é ü 日本"), "é ü 日本");
    }
}
