//! A fault-injecting TCP proxy on loopback, put between a client (the webhook's key watcher)
//! and a real server (the API server), to break the connection the ways networks break it:
//!
//! * [`Fault::Drop`]: every open connection is closed at once (both ways, as a restarted
//!   API server or a reset load balancer does), and new ones are closed as soon as they are
//!   accepted;
//! * [`Fault::Blackhole`]: nothing is forwarded any more and nothing is closed: open
//!   connections stay open and silent (no FIN, no data, as after a lost route or a dead NAT
//!   entry), new connections are accepted and stay silent. A blackholed connection never
//!   comes back, as a dead one would not;
//! * [`FaultProxy::recover`]: new connections are forwarded again.
//!
//! Bytes are copied unchanged (TLS passes through: the client checks the server's own
//! certificate, for `127.0.0.1`). The proxy's threads end when it is dropped.
#![allow(dead_code)]

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does to connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward (no fault).
    None,
    Drop,
    Blackhole,
}

/// One proxied connection: both sockets, and whether it was frozen or closed by a fault.
struct Link {
    client: TcpStream,
    server: TcpStream,
    frozen: AtomicBool,
    closed: AtomicBool,
}

impl Link {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
    }
}

struct Inner {
    fault: Mutex<Fault>,
    links: Mutex<Vec<Arc<Link>>>,
    stopped: AtomicBool,
    accepted: AtomicUsize,
}

pub struct FaultProxy {
    inner: Arc<Inner>,
    address: SocketAddr,
}

impl FaultProxy {
    /// A proxy on `127.0.0.1:ANY` to `target`, forwarding.
    pub fn start(target: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fault proxy");
        let address = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let inner = Arc::new(Inner {
            fault: Mutex::new(Fault::None),
            links: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            accepted: AtomicUsize::new(0),
        });
        let accepting = inner.clone();
        std::thread::spawn(move || accept_loop(listener, target, accepting));
        FaultProxy { inner, address }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.inner.accepted.load(Ordering::SeqCst)
    }

    /// Applies `fault` to the open connections and to the ones that come.
    pub fn set(&self, fault: Fault) {
        *self.inner.fault.lock().unwrap() = fault;
        let links = self.inner.links.lock().unwrap();
        for link in links.iter() {
            match fault {
                Fault::Drop => link.close(),
                Fault::Blackhole => link.frozen.store(true, Ordering::SeqCst),
                Fault::None => {}
            }
        }
        eprintln!("fault proxy {}: {fault:?}", self.address);
    }

    /// Forwards new connections again (frozen ones stay dead, closed ones closed).
    pub fn recover(&self) {
        self.set(Fault::None);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        for link in self.inner.links.lock().unwrap().iter() {
            link.close();
        }
    }
}

fn accept_loop(listener: TcpListener, target: SocketAddr, inner: Arc<Inner>) {
    while !inner.stopped.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => continue,
        };
        inner.accepted.fetch_add(1, Ordering::SeqCst);
        let _ = client.set_nonblocking(false);
        let fault = *inner.fault.lock().unwrap();
        if fault == Fault::Drop {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let Ok(server) = TcpStream::connect_timeout(&target, Duration::from_secs(5)) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let (Ok(client_read), Ok(server_read)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        let link = Arc::new(Link {
            client,
            server,
            frozen: AtomicBool::new(fault == Fault::Blackhole),
            closed: AtomicBool::new(false),
        });
        {
            let mut links = inner.links.lock().unwrap();
            links.retain(|l| !l.closed.load(Ordering::SeqCst));
            links.push(link.clone());
        }
        let (up, down) = (link.clone(), link);
        let stopped = inner.clone();
        std::thread::spawn(move || pump(client_read, &up, true, &stopped));
        let stopped = inner.clone();
        std::thread::spawn(move || pump(server_read, &down, false, &stopped));
    }
}

/// Copies `from` to the link's other socket until either end closes, the link is closed
/// by a fault, or the proxy stops. A frozen link's bytes are read and discarded: the
/// sender sees its writes succeed, the receiver never gets them.
fn pump(mut from: TcpStream, link: &Link, client_to_server: bool, inner: &Inner) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buffer = [0u8; 16 * 1024];
    loop {
        if link.closed.load(Ordering::SeqCst) || inner.stopped.load(Ordering::SeqCst) {
            return;
        }
        let n = match from.read(&mut buffer) {
            Ok(0) => {
                if !link.frozen.load(Ordering::SeqCst) {
                    link.close();
                }
                return;
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => {
                if !link.frozen.load(Ordering::SeqCst) {
                    link.close();
                }
                return;
            }
        };
        if link.frozen.load(Ordering::SeqCst) {
            continue;
        }
        let mut to = if client_to_server {
            &link.server
        } else {
            &link.client
        };
        if to.write_all(&buffer[..n]).is_err() {
            link.close();
            return;
        }
    }
}
