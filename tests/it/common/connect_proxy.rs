//! A loopback HTTP CONNECT proxy that counts the tunnels it opened, for the proxy rule of
//! mansign's cluster client (`src/kube/proxy.rs`).
//!
//! It answers only `CONNECT HOST:PORT`, and connects every tunnel to `127.0.0.1:PORT`
//! whatever HOST is: a server URL with a name the API server's certificate carries
//! (`kubernetes.default.svc`) then reaches the loopback API server through the proxy,
//! while a direct connection to that name (no DNS for it) cannot; so a request that
//! bypassed the proxy is told apart from one that went through it. Every other request is
//! answered 405. Threads, no runtime: the tests that use it are synchronous.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A running proxy; it stops accepting when the test process ends.
pub struct ConnectProxy {
    port: u16,
    tunnels: Arc<AtomicUsize>,
    targets: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    pub fn start() -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let tunnels = Arc::new(AtomicUsize::new(0));
        let targets = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (tunnels.clone(), targets.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (count, seen) = (count.clone(), seen.clone());
                std::thread::spawn(move || {
                    let _ = tunnel(client, &count, &seen);
                });
            }
        });
        ConnectProxy {
            port,
            tunnels,
            targets,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// How many tunnels it opened so far.
    pub fn tunnels(&self) -> usize {
        self.tunnels.load(Ordering::SeqCst)
    }

    /// The `HOST:PORT` of every CONNECT, in order.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}

fn tunnel(
    client: TcpStream,
    count: &AtomicUsize,
    seen: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The header lines, up to the blank one (bounded: a proxy for tests, not for the world).
    let mut header_bytes = 0;
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        header_bytes += n;
        if n == 0 || line == "\r\n" || line == "\n" || header_bytes > 16 * 1024 {
            break;
        }
    }
    let mut writer = client.try_clone()?;
    let parts: Vec<&str> = request_line.split_whitespace().collect();
    let [method, target, _version] = parts.as_slice() else {
        writer.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")?;
        return Ok(());
    };
    let port = target.rsplit_once(':').map(|(_, p)| p).unwrap_or_default();
    if *method != "CONNECT" || port.parse::<u16>().is_err() {
        writer.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")?;
        return Ok(());
    }
    let upstream = match TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())) {
        Ok(s) => s,
        Err(_) => {
            writer.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")?;
            return Ok(());
        }
    };
    seen.lock().unwrap().push(target.to_string());
    count.fetch_add(1, Ordering::SeqCst);
    writer.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    // Bytes the client sent after the header (the TLS ClientHello may already be there).
    let buffered = reader.buffer().to_vec();
    let mut up_writer = upstream.try_clone()?;
    up_writer.write_all(&buffered)?;
    let mut up_reader = upstream.try_clone()?;
    let mut down_writer = writer;
    let down = std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_reader, &mut down_writer);
        let _ = down_writer.shutdown(Shutdown::Write);
    });
    let mut client_reader = reader.into_inner();
    let _ = std::io::copy(&mut client_reader, &mut up_writer);
    let _ = up_writer.shutdown(Shutdown::Write);
    let _ = down.join();
    Ok(())
}
