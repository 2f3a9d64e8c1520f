//! A fault-injecting HTTP/1.1 proxy on 127.0.0.1, put between `mansign sign` and one service
//! of the loopback Sigstore stack (Fulcio or Rekor): each request is handed to the test's
//! handler, which decides what the client gets: the service's answer as it is, rewritten, or
//! broken (a reset mid-body, a body that never ends), or an answer of its own. The handler
//! may also act on the world before the request goes on (edit an input, re-point a link, make
//! a directory unwritable), so a test reaches an exact point of the run without timing it.
//!
//! One connection a request (`Connection: close` both ways), a thread a connection; the
//! upstream answer is read whole (chunked bodies decoded) before the fault is applied.
#![allow(dead_code)]

use super::stub_server::{Listening, Request, read_request};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An HTTP answer: status, headers (without framing headers), body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(status: u16, body: &serde_json::Value) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    /// The body as JSON (panics on a body that is not: the test's own premise failed).
    pub fn body_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the upstream answer is JSON")
    }
}

/// What the client gets for one request.
pub enum Fault {
    /// The upstream answer, unchanged.
    Pass,
    /// Forwarded with this body instead of the client's.
    RewriteRequest(String),
    /// The upstream answer, rewritten.
    RewriteAnswer(Box<dyn FnOnce(Answer) -> Answer + Send>),
    /// This answer; nothing is forwarded.
    Answer(Answer),
    /// Forwarded; the client gets the head and half the body, then the connection closes.
    ResetMidBody,
    /// Forwarded; the client gets the head (a `Content-Length` of the real body) and then
    /// one byte of it every 500 ms, far slower than any client timeout, until it hangs up.
    EndlessBody,
    /// Nothing is forwarded and nothing answered: the connection stays open, silent, until
    /// the client hangs up (a service that accepts and never answers; at most 10 minutes).
    Stall,
}

type Handler = dyn Fn(&Request, usize) -> Fault + Send + Sync;

/// The proxy; stops when dropped.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`, to pass as `--fulcio-url` or `--rekor-url`.
    pub url: String,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    _listening: Listening,
}

impl FaultProxy {
    /// Proxies to `upstream` (`http://HOST:PORT`), asking `handler(request, n)` what to do,
    /// where `n` counts the requests of the same method and path so far, from 1.
    pub fn start(
        upstream: &str,
        handler: impl Fn(&Request, usize) -> Fault + Send + Sync + 'static,
    ) -> FaultProxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let handler: Arc<Handler> = Arc::new(handler);
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let counts: Arc<Mutex<HashMap<(String, String), usize>>> = Arc::default();
        let listening = {
            let seen = seen.clone();
            Listening::start("fault proxy", move |stream, _| {
                let (handler, seen, counts, upstream) = (
                    handler.clone(),
                    seen.clone(),
                    counts.clone(),
                    upstream.clone(),
                );
                std::thread::spawn(move || {
                    let Some(request) = read_request(&stream) else {
                        return;
                    };
                    let key = (request.method.clone(), request.path().to_string());
                    let n = {
                        let mut counts = counts.lock().unwrap();
                        let n = counts.entry(key.clone()).or_default();
                        *n += 1;
                        *n
                    };
                    seen.lock().unwrap().push(key);
                    let fault = handler(&request, n);
                    serve(stream, &upstream, &request, fault);
                });
            })
        };
        FaultProxy {
            url: listening.url.clone(),
            seen,
            _listening: listening,
        }
    }

    /// How many requests of `method` to `path` arrived so far.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, p)| m == method && p == path)
            .count()
    }
}

fn serve(mut stream: TcpStream, upstream: &str, request: &Request, fault: Fault) {
    let (answer, rewrite) = match fault {
        Fault::Answer(answer) => (answer, None),
        Fault::RewriteRequest(body) => (forward(upstream, request, &body), None),
        Fault::RewriteAnswer(f) => (forward(upstream, request, &request.body), Some(f)),
        Fault::Pass => (forward(upstream, request, &request.body), None),
        Fault::ResetMidBody => {
            let answer = forward(upstream, request, &request.body);
            write_head(&mut stream, &answer);
            let half = answer.body.len() / 2;
            let _ = stream.write_all(&answer.body[..half]);
            let _ = stream.flush();
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
        Fault::Stall => {
            // The request was read whole: the next read returns when the client hangs up.
            stream.set_read_timeout(Some(Duration::from_secs(600))).ok();
            let _ = stream.read(&mut [0u8; 1]);
            return;
        }
        Fault::EndlessBody => {
            let answer = forward(upstream, request, &request.body);
            write_head(&mut stream, &answer);
            for byte in answer.body.iter().cycle() {
                if stream
                    .write_all(&[*byte])
                    .and_then(|_| stream.flush())
                    .is_err()
                {
                    return;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            return;
        }
    };
    let answer = match rewrite {
        Some(f) => f(answer),
        None => answer,
    };
    write_head(&mut stream, &answer);
    let _ = stream.write_all(&answer.body);
    let _ = stream.flush();
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        404 => "Not Found",
        409 => "Conflict",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

fn write_head(stream: &mut TcpStream, answer: &Answer) {
    let mut head = format!("HTTP/1.1 {} {}\r\n", answer.status, reason(answer.status));
    for (k, v) in &answer.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        answer.body.len()
    ));
    let _ = stream.write_all(head.as_bytes());
}

/// Sends `request` (with `body`) to `upstream` and reads the whole answer.
fn forward(upstream: &str, request: &Request, body: &str) -> Answer {
    let mut conn = TcpStream::connect(upstream)
        .unwrap_or_else(|e| panic!("fault proxy: cannot reach {upstream}: {e}"));
    conn.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {upstream}\r\n",
        request.method, request.target
    );
    for (k, v) in &request.headers {
        if !matches!(
            k.as_str(),
            "host" | "connection" | "content-length" | "transfer-encoding"
        ) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    conn.write_all(head.as_bytes())
        .and_then(|_| conn.write_all(body.as_bytes()))
        .expect("fault proxy: send upstream");
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw)
        .expect("fault proxy: read the upstream answer");
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Answer {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("fault proxy: an upstream answer without a head");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut rest = raw[end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("fault proxy: an upstream status line");
    let mut headers = Vec::new();
    let mut chunked = false;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k.to_ascii_lowercase().as_str() {
            "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
            "content-length" | "connection" | "keep-alive" => {}
            _ => headers.push((k.to_string(), v.to_string())),
        }
    }
    if chunked {
        rest = dechunk(&rest);
    }
    Answer {
        status,
        headers,
        body: rest,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        data = &data[line_end + 2..];
        if size == 0 || data.len() < size {
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
}
