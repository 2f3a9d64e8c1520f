//! The HTTP routes: a request in, a response out. Nothing here can fail the server: every
//! error becomes an HTTP status with a short text body.
//!
//! | route | answer |
//! |---|---|
//! | `POST /validate` | the `AdmissionReview` response (200); a request that cannot be answered (body too large or too slow, nested too deeply, deadline passed, ...) is refused with 200 and `allowed: false` whenever its uid can be read from what arrived; otherwise 400 for a body that is no review, 408 body too slow, 413 body too large, 415 not JSON, 503 deadline passed |
//! | `POST /kyverno/v1/verify` | the verification endpoint for Kyverno's CEL `http` library (`verify_call`): always 200 and JSON, `allowed: true` only when the webhook's review of the same write allows it; a call that cannot be answered (the same bounds as `/validate`, or a malformed call) is refused with `allowed: false` and a code |
//! | `GET /healthz` | 200 while the process runs |
//! | `GET /readyz` | 200 with the configuration's status, 503 while shutting down |
//! | `GET /metrics` | Prometheus text |

use super::metrics::{Metrics, ReviewPath};
use super::reload::Live;
use super::verify_call;
use super::{ServeOptions, decision_line, log_line, now_rfc3339};
use crate::admission::request::readable_uid;
use crate::admission::response::refusal;
use crate::admission::{Look, Reviewed};
use crate::verify::BlockingVerifications;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

/// What every request handler shares.
pub(super) struct State {
    pub(super) live: Arc<Live>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) pool: BlockingVerifications,
    pub(super) options: ServeOptions,
}

type Answer = Response<Full<Bytes>>;

/// Routes one request.
pub(super) async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Answer, Infallible> {
    let answer = match (request.method(), request.uri().path()) {
        (&Method::POST, "/validate") => validate(&state, request, Route::Review).await,
        (&Method::POST, verify_call::PATH) => validate(&state, request, Route::Call).await,
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz") => {
            let (ready, body) = state.live.readiness();
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            respond(status, "application/json", format!("{body:#}\n"))
        }
        (&Method::GET, "/metrics") => respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            state.metrics.render(
                state.live.cache_totals(),
                state.pool.in_use(),
                state.live.failing(),
                &state.live.key_watches(),
            ),
        ),
        (_, "/validate" | verify_call::PATH | "/healthz" | "/readyz" | "/metrics") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    };
    Ok(answer)
}

/// What the body read gave: the whole body, or why it stopped and the bytes read so far
/// (at most the body limit), from which a refusal may still read the request's uid.
enum BodyRead {
    Complete(Bytes),
    TooLarge(Vec<u8>),
    TimedOut(Vec<u8>),
    Unreadable(Vec<u8>, String),
}

/// How much of a body whose declared length is over the limit is read, for its uid (the
/// API server writes `request.uid` in the first hundred bytes), and how long that read may
/// take: the API server sends its body at once, and a client that sent only the head gets
/// its 413 without waiting for `--body-timeout`.
const DECLARED_TOO_LARGE_PREFIX: usize = 64 * 1024;
const DECLARED_TOO_LARGE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads the body: at most `keep` bytes, more is [`BodyRead::TooLarge`] (so is a body
/// declared over the limit, once `keep` bytes are read or [`DECLARED_TOO_LARGE_WAIT`] has
/// passed), within `timeout`.
async fn read_body(
    mut body: Incoming,
    keep: usize,
    declared_too_large: bool,
    timeout: std::time::Duration,
) -> BodyRead {
    let timeout = if declared_too_large {
        timeout.min(DECLARED_TOO_LARGE_WAIT)
    } else {
        timeout
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let mut read: Vec<u8> = Vec::new();
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) if declared_too_large => return BodyRead::TooLarge(read),
            Err(_) => return BodyRead::TimedOut(read),
            Ok(None) if declared_too_large => return BodyRead::TooLarge(read),
            Ok(None) => return BodyRead::Complete(Bytes::from(read)),
            Ok(Some(Err(e))) => return BodyRead::Unreadable(read, e.to_string()),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if read.len() + data.len() > keep {
            read.extend_from_slice(&data[..keep - read.len()]);
            return BodyRead::TooLarge(read);
        }
        read.extend_from_slice(&data);
        if declared_too_large && read.len() == keep {
            return BodyRead::TooLarge(read);
        }
    }
}

/// Which answer a review route gives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `POST /validate`: the body is an `AdmissionReview`, the answer its response.
    Review,
    /// `POST /kyverno/v1/verify`: the body is a call of Kyverno's CEL `http` library,
    /// answered through the review of the same write ([`verify_call`]).
    Call,
}

/// `POST /validate` and `POST /kyverno/v1/verify`: the same bounds, the same review.
async fn validate(state: &Arc<State>, request: Request<Incoming>, route: Route) -> Answer {
    let started = Instant::now();
    let _in_flight = state.metrics.request_started();
    let options = &state.options;
    // A request that cannot be answered: refused (HTTP 200, `allowed: false`) when its uid
    // can be read from what arrived, so that no `failurePolicy` decides it; else `status`.
    let fail = |status: StatusCode, reason: &'static str, message: String, read: &[u8]| {
        // A call is always answered with JSON (HTTP 200, `allowed: false`): the CEL side
        // reads its code; a read uid is the call's own, not a caller's.
        let uid = match route {
            Route::Review => readable_uid(read),
            Route::Call => None,
        };
        let status = match route {
            Route::Review => status,
            Route::Call => StatusCode::OK,
        };
        let answered = if uid.is_some() {
            StatusCode::OK
        } else {
            status
        };
        state.metrics.failed(reason, started.elapsed());
        log_line(
            options.log_format,
            false,
            &json!({
                "ts": now_rfc3339(),
                "uid": uid,
                "verdict": "error",
                "reason": reason,
                "message": message,
                "status": answered.as_u16(),
                "latency_ms": started.elapsed().as_secs_f64() * 1000.0,
            }),
        );
        if route == Route::Call {
            return respond(
                StatusCode::OK,
                "application/json",
                verify_call::refusal_body(reason, &message),
            );
        }
        match uid {
            Some(uid) => respond(
                StatusCode::OK,
                "application/json",
                refusal(&uid, reason, &message),
            ),
            None => text(status, &format!("{message}\n")),
        }
    };

    if !is_json(request.headers().get(CONTENT_TYPE)) {
        return fail(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            match route {
                Route::Review => {
                    "the AdmissionReview must be sent as Content-Type: application/json"
                }
                Route::Call => "the call must be sent as Content-Type: application/json",
            }
            .into(),
            &[],
        );
    }
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large_message = format!(
        "the request body is larger than {} bytes",
        options.max_body_bytes
    );
    let declared_too_large = declared.is_some_and(|n| n > options.max_body_bytes as u64);
    let keep = if declared_too_large {
        DECLARED_TOO_LARGE_PREFIX.min(options.max_body_bytes)
    } else {
        options.max_body_bytes
    };

    // The body, bounded in size and in time (a client trickling it holds a connection slot,
    // not the server).
    let body = match read_body(
        request.into_body(),
        keep,
        declared_too_large,
        options.body_timeout,
    )
    .await
    {
        BodyRead::Complete(body) => body,
        BodyRead::TooLarge(read) => {
            return fail(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body-too-large",
                too_large_message,
                &read,
            );
        }
        BodyRead::TimedOut(read) => {
            return fail(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                format!(
                    "the request body did not arrive within {} ms",
                    options.body_timeout.as_millis()
                ),
                &read,
            );
        }
        BodyRead::Unreadable(read, e) => {
            return fail(
                StatusCode::BAD_REQUEST,
                "body-unreadable",
                format!("the request body could not be read: {e}"),
                &read,
            );
        }
    };

    // A call becomes the review of the write it describes.
    let body = match route {
        Route::Review => body,
        Route::Call => match verify_call::review_of(&body, options.max_body_bytes) {
            Ok(review) => Bytes::from(review),
            Err(refused) => {
                return fail(StatusCode::OK, refused.code, refused.message, &[]);
            }
        },
    };
    let deadline_exceeded = || {
        fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "deadline-exceeded",
            format!(
                "no answer within the deadline of {} ms",
                options.deadline.as_millis()
            ),
            &body,
        )
    };
    if started.elapsed() >= options.deadline {
        return deadline_exceeded();
    }
    let reviewer = state.live.reviewer();
    // A small review that needs no signature check (a re-applied object whose signatures
    // the cache holds, or one no rule verifies) is answered here: parsing and comparing
    // take microseconds, less than the two thread hops of the blocking pool. One that
    // needs a check goes to the pool with what was parsed and matched here, which is not
    // done again. A panic is contained as on the pool: the whole review goes there.
    let inline = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reviewer.look(&body)));
    let pending = match inline {
        Ok(Look::Answered(reviewed)) => {
            state.metrics.reviewed(ReviewPath::Inline);
            return answer(state, started, *reviewed, route);
        }
        Ok(Look::Pending(pending)) => Some(pending),
        Ok(Look::Unread) | Err(_) => None,
    };
    let remaining = options.deadline.saturating_sub(started.elapsed());
    if remaining.is_zero() {
        return deadline_exceeded();
    }
    // The review, on the blocking pool, within what is left of the deadline. A review that
    // outlives the deadline finishes on its thread (CPU work cannot be interrupted) but its
    // answer is not waited for: the request is refused (its uid is read from the body).
    state.metrics.reviewed(ReviewPath::Pool);
    let work: Box<dyn FnOnce() -> Reviewed + Send> = match pending {
        Some(pending) => Box::new(move || pending.finish()),
        None => {
            let reviewed_body = body.clone();
            Box::new(move || reviewer.review(&reviewed_body))
        }
    };
    let run = state.pool.run(work);
    match tokio::time::timeout(remaining, run).await {
        Err(_) => deadline_exceeded(),
        Ok(Err(e)) => fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "review-failed",
            e.to_string(),
            &body,
        ),
        Ok(Ok(reviewed)) => answer(state, started, reviewed, route),
    }
}

/// Counts, logs and sends one decided review.
fn answer(state: &State, started: Instant, reviewed: Reviewed, route: Route) -> Answer {
    let options = &state.options;

    let latency = started.elapsed();
    state.metrics.decided(&reviewed.decision, latency);
    log_line(
        options.log_format,
        false,
        &decision_line(&reviewed.decision, latency),
    );
    if route == Route::Call {
        return respond(
            StatusCode::OK,
            "application/json",
            verify_call::answer_body(&reviewed),
        );
    }
    match reviewed.response {
        Ok(body) => respond(StatusCode::OK, "application/json", body),
        Err(bad) => text(StatusCode::BAD_REQUEST, &format!("{}\n", bad.message)),
    }
}

/// `application/json`, with or without parameters (`; charset=utf-8`), any case.
fn is_json(value: Option<&HeaderValue>) -> bool {
    let Some(value) = value.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

fn text(status: StatusCode, body: &str) -> Answer {
    respond(status, "text/plain; charset=utf-8", body.to_string())
}

fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        let json = |v: &'static str| is_json(Some(&HeaderValue::from_static(v)));
        assert!(json("application/json"));
        assert!(json("Application/JSON; charset=utf-8"));
        assert!(!json("application/json-patch+json"));
        assert!(!json("text/plain"));
        assert!(!json(""));
        assert!(!is_json(None));
    }
}
