//! A tiny HTTP/1.1 server on 127.0.0.1 for tests that play an external endpoint (the
//! GitHub Actions token service, an OIDC issuer with a device flow). Plain
//! `std::net::TcpListener` on its own thread; every request is recorded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// When the request line arrived (to check waits between requests, never durations).
    pub received: std::time::Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == &name.to_ascii_lowercase())
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// A form field of an `application/x-www-form-urlencoded` body.
    pub fn form(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// A query parameter.
    pub fn query(&self, name: &str) -> Option<String> {
        let q = self.target.split_once('?')?.1;
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// An answer with headers (for `Retry-After` and the like).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

type Handler = dyn Fn(&Request, &str) -> Reply + Send + Sync;

/// An accept loop on 127.0.0.1 on its own thread, handing each connection and the base URL
/// to `serve`; stops (and joins) when dropped. Also under `file_server.rs`'s server.
pub struct Listening {
    pub url: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listening {
    pub fn start(what: &str, serve: impl Fn(TcpStream, &str) + Send + 'static) -> Listening {
        let listener =
            TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind {what}: {e}"));
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, url) = (stop.clone(), url.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    serve(stream, &url);
                }
            })
        };
        Listening {
            url,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The server; stops when dropped.
pub struct StubServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    _listening: Listening,
}

impl StubServer {
    /// GitHub's token service (`/_apis/token`) handing out `token` for audience sigstore;
    /// anything else is a 404.
    pub fn token_endpoint(token: String) -> StubServer {
        StubServer::start(move |req, _| {
            if req.path() == "/_apis/token" && req.query("audience").as_deref() == Some("sigstore")
            {
                (200, serde_json::json!({"value": token}).to_string())
            } else {
                (404, "{}".to_string())
            }
        })
    }

    /// Serves `handler(request, base_url) -> (status, JSON body)` until dropped.
    pub fn start(
        handler: impl Fn(&Request, &str) -> (u16, String) + Send + Sync + 'static,
    ) -> Self {
        Self::start_with_headers(move |req, base| {
            let (status, body) = handler(req, base);
            Reply {
                status,
                headers: Vec::new(),
                body,
            }
        })
    }

    /// Serves `handler(request, base_url) -> Reply` (status, extra headers, JSON body)
    /// until dropped.
    pub fn start_with_headers(
        handler: impl Fn(&Request, &str) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = requests.clone();
        // Recorded before the reply is written: a client that exits on the reply must find
        // its request counted (a count read after the client's exit raced the push).
        let listening = Listening::start("stub server", move |stream, url| {
            serve(stream, &*handler, url, |req| {
                recorded.lock().unwrap().push(req.clone())
            });
        });
        StubServer {
            url: listening.url.clone(),
            requests,
            _listening: listening,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one request (line, headers, `Content-Length` body) from `stream`; `None` if the
/// client sent no well-formed request within ten seconds.
pub fn read_request(stream: &TcpStream) -> Option<Request> {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let received = std::time::Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        received,
    })
}

fn serve(stream: TcpStream, handler: &Handler, base: &str, record: impl FnOnce(&Request)) {
    let Some(req) = read_request(&stream) else {
        return;
    };
    let Reply {
        status,
        headers: extra,
        body: text,
    } = handler(&req, base);
    record(&req);
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Status",
    };
    let extra: String = extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let mut stream = stream;
    let status = format!("{status} {reason}");
    write_head(&mut stream, &status, "application/json", text.len(), &extra);
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}

/// Writes a response's status line and headers (`extra`: whole `Name: value\r\n` lines) for a
/// body of `len` bytes on a connection the server closes after it; the caller writes the body.
pub fn write_head(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    len: usize,
    extra: &str,
) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n{extra}Connection: close\r\n\r\n"
    );
}
