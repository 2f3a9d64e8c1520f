//! A static file server on 127.0.0.1 for tests that download release assets: `GET /<path>`
//! answers the file under the served directory (any size, streamed), 404 for anything else.
//! Every requested path is recorded. Stops when dropped. Built on `stub_server.rs`'s accept
//! loop and request reader: a test that includes this file includes that one as `stub_server`.
#![allow(dead_code)]

use crate::common::stub_server::{Listening, read_request, write_head};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

pub struct FileServer {
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
    _listening: Listening,
}

impl FileServer {
    /// Serves the files under `root`.
    pub fn start(root: &Path) -> FileServer {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (recorded, root) = (requests.clone(), root.to_path_buf());
        let listening = Listening::start("file server", move |stream, _| {
            if let Some(path) = serve(stream, &root) {
                recorded.lock().unwrap().push(path);
            }
        });
        FileServer {
            url: listening.url.clone(),
            requests,
            _listening: listening,
        }
    }

    /// The paths requested so far (e.g. `/v0.1.0/SHA256SUMS`).
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
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
    let request = read_request(&stream)?;
    let (method, target) = (request.method, request.target);
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut stream = stream;
    match (method.as_str(), file_for(root, &path)) {
        ("GET", Some(file)) => {
            let mut f = std::fs::File::open(&file).ok()?;
            let len = f.metadata().ok()?.len();
            write_head(
                &mut stream,
                "200 OK",
                "application/octet-stream",
                len as usize,
                "",
            );
            let _ = std::io::copy(&mut f, &mut stream);
        }
        _ => {
            let body = "Not Found";
            write_head(&mut stream, "404 Not Found", "text/plain", body.len(), "");
            let _ = stream.write_all(body.as_bytes());
        }
    }
    let _ = stream.flush();
    Some(path)
}
