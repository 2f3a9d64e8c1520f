//! A static file server on 127.0.0.1 for tests that download release assets: `GET /<path>`
//! answers the file under the served directory (any size, streamed), 404 for anything else.
//! Every requested path is recorded. Stops when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub struct FileServer {
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FileServer {
    /// Serves the files under `root`.
    pub fn start(root: &Path) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind file server");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stop, root) = (requests.clone(), stop.clone(), root.to_path_buf());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    if let Some(path) = serve(stream, &root) {
                        requests.lock().unwrap().push(path);
                    }
                }
            })
        };
        FileServer {
            url,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// The paths requested so far (e.g. `/v0.1.0/SHA256SUMS`).
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The file for a request path, if it stays under `root`.
fn file_for(root: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    let p = root.join(rel);
    p.is_file().then_some(p)
}

fn serve(stream: TcpStream, root: &Path) -> Option<String> {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h.trim_end().is_empty() {
            break;
        }
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut stream = stream;
    match (method.as_str(), file_for(root, &path)) {
        ("GET", Some(file)) => {
            let mut f = std::fs::File::open(&file).ok()?;
            let len = f.metadata().ok()?.len();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
            );
            let _ = std::io::copy(&mut f, &mut stream);
        }
        _ => {
            let body = "Not Found";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    }
    let _ = stream.flush();
    Some(path)
}
