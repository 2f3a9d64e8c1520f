//! The HTTP routes: a request in, a response out. Nothing here can fail the server: every
//! error becomes an HTTP status with a short text body.
//!
//! | route | answer |
//! |---|---|
//! | `POST /validate` | the `AdmissionReview` response (200), 400 for a body that is no review, 408 body too slow, 413 body too large, 415 not JSON, 503 deadline passed or shutting down |
//! | `GET /healthz` | 200 while the process runs |
//! | `GET /readyz` | 200 with the configuration's status, 503 while shutting down |
//! | `GET /metrics` | Prometheus text |

use super::metrics::{Metrics, ReviewPath};
use super::reload::Live;
use super::{ServeOptions, decision_line, log_line, now_rfc3339};
use crate::admission::Reviewed;
use crate::verify::BlockingVerifications;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
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
        (&Method::POST, "/validate") => validate(&state, request).await,
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
            ),
        ),
        (_, "/validate" | "/healthz" | "/readyz" | "/metrics") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    };
    Ok(answer)
}

/// `POST /validate`.
async fn validate(state: &Arc<State>, request: Request<Incoming>) -> Answer {
    let started = Instant::now();
    let _in_flight = state.metrics.request_started();
    let options = &state.options;
    let fail = |status: StatusCode, reason: &'static str, message: String| {
        state.metrics.failed(reason, started.elapsed());
        log_line(
            options.log_format,
            false,
            &json!({
                "ts": now_rfc3339(),
                "verdict": "error",
                "reason": reason,
                "message": message,
                "status": status.as_u16(),
                "latency_ms": started.elapsed().as_secs_f64() * 1000.0,
            }),
        );
        text(status, &format!("{message}\n"))
    };

    if !is_json(request.headers().get(CONTENT_TYPE)) {
        return fail(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "the AdmissionReview must be sent as Content-Type: application/json".into(),
        );
    }
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        fail(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            format!(
                "the request body is larger than {} bytes",
                options.max_body_bytes
            ),
        )
    };
    if declared.is_some_and(|n| n > options.max_body_bytes as u64) {
        return too_large();
    }

    // The body, bounded in size and in time (a client trickling it holds a connection slot,
    // not the server).
    let limited = Limited::new(request.into_body(), options.max_body_bytes);
    let body = match tokio::time::timeout(options.body_timeout, limited.collect()).await {
        Err(_) => {
            return fail(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                format!(
                    "the request body did not arrive within {} ms",
                    options.body_timeout.as_millis()
                ),
            );
        }
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return too_large();
        }
        Ok(Err(e)) => {
            return fail(
                StatusCode::BAD_REQUEST,
                "body-unreadable",
                format!("the request body could not be read: {e}"),
            );
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };

    let deadline_exceeded = || {
        fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "deadline-exceeded",
            format!(
                "no answer within the deadline of {} ms",
                options.deadline.as_millis()
            ),
        )
    };
    if started.elapsed() >= options.deadline {
        return deadline_exceeded();
    }
    let reviewer = state.live.reviewer();
    // A small review that needs no signature check (a re-applied object whose signatures
    // the cache holds, or one no rule verifies) is answered here: parsing and comparing
    // take microseconds, less than the two thread hops of the blocking pool. A panic is
    // contained as on the pool: the review goes there.
    let inline = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reviewer.review_cached(&body)
    }));
    if let Ok(Some(reviewed)) = inline {
        state.metrics.reviewed(ReviewPath::Inline);
        return answer(state, started, reviewed);
    }
    let remaining = options.deadline.saturating_sub(started.elapsed());
    if remaining.is_zero() {
        return deadline_exceeded();
    }
    // The review, on the blocking pool, within what is left of the deadline. A review that
    // outlives the deadline finishes on its thread (CPU work cannot be interrupted) but its
    // answer is not waited for: the API server gets 503 and applies its failurePolicy.
    state.metrics.reviewed(ReviewPath::Pool);
    let run = state.pool.run(move || reviewer.review(&body));
    match tokio::time::timeout(remaining, run).await {
        Err(_) => deadline_exceeded(),
        Ok(Err(e)) => fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "review-failed",
            e.to_string(),
        ),
        Ok(Ok(reviewed)) => answer(state, started, reviewed),
    }
}

/// Counts, logs and sends one decided review.
fn answer(state: &State, started: Instant, reviewed: Reviewed) -> Answer {
    let options = &state.options;

    let latency = started.elapsed();
    state.metrics.decided(&reviewed.decision, latency);
    log_line(
        options.log_format,
        false,
        &decision_line(&reviewed.decision, latency),
    );
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
