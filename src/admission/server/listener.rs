//! Accepting connections: TLS, HTTP/1.1 or HTTP/2, the connection bounds, and the graceful
//! shutdown.

use super::metrics::{Metrics, certificate_not_after};
use super::reload::{Live, ReviewerSource, load_certified_key, watch};
use super::routes::{State, handle};
use super::tls::LiveTls;
use super::{LogFormat, ServeError, ServeOptions, log_line, now_rfc3339};
use crate::verify::BlockingVerifications;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch as signal_channel};
use tokio_rustls::TlsAcceptor;

/// Runs the webhook until `shutdown` completes, then drains in-flight requests for at most
/// [`ServeOptions::shutdown_grace`] and returns. Errors only if it cannot start (the
/// policies, the TLS files or the address).
pub async fn serve(
    options: ServeOptions,
    source: ReviewerSource,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let log_format = options.log_format;
    let load = source.load.clone();
    let reviewer = tokio::task::spawn_blocking(move || load())
        .await
        .map_err(|e| ServeError::Policies(e.to_string()))?
        .map_err(|e| ServeError::Policies(crate::error::chain(&*e)))?;
    let (cert_path, key_path) = (options.tls_cert.clone(), options.tls_key.clone());
    let certified = tokio::task::spawn_blocking(move || load_certified_key(&cert_path, &key_path))
        .await
        .map_err(|e| ServeError::Tls(e.to_string()))?
        .map_err(ServeError::Tls)?;
    let metrics = Arc::new(Metrics::default());
    metrics.serving_certificate(certificate_not_after(&certified));
    let tls_config = LiveTls::new(certified).map_err(ServeError::Tls)?;
    let listener =
        TcpListener::bind(options.listen)
            .await
            .map_err(|source| ServeError::Listen {
                address: options.listen,
                source,
            })?;
    let address = listener.local_addr().unwrap_or(options.listen);

    let live = Arc::new(Live::new(
        reviewer,
        tls_config,
        source.files.clone(),
        (options.tls_cert.clone(), options.tls_key.clone()),
        source.key_watcher.clone(),
    ));
    let (stop_tx, stop_rx) = signal_channel::channel(false);
    let watcher = tokio::spawn(watch(
        live.clone(),
        source,
        metrics.clone(),
        options.reload_interval,
        log_format,
        stop_rx.clone(),
    ));
    let state = Arc::new(State {
        live: live.clone(),
        metrics: metrics.clone(),
        pool: BlockingVerifications::new(options.max_concurrent_reviews),
        options: options.clone(),
    });
    let http = http_builder(&options);
    let connection_slots = Arc::new(Semaphore::new(options.max_connections.max(1)));

    log_line(
        log_format,
        true,
        &json!({
            "ts": now_rfc3339(),
            "event": "listening",
            "address": address.to_string(),
            "rules": live.reviewer().policies().rules.len(),
        }),
    );

    tokio::pin!(shutdown);
    loop {
        // A free connection slot first: past the cap, clients wait in the kernel's backlog.
        let slot = tokio::select! {
            slot = connection_slots.clone().acquire_owned() => slot,
            _ = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        let tcp = match accepted {
            Ok((tcp, _peer)) => tcp,
            Err(e) => {
                // Out of file descriptors or a connection reset before accept: wait a moment
                // instead of spinning.
                log_line(
                    log_format,
                    true,
                    &json!({"ts": now_rfc3339(), "event": "accept-failed", "error": e.to_string()}),
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let connection = Connection {
            acceptor: live.tls_config.acceptor(),
            http: http.clone(),
            state: state.clone(),
            stop: stop_rx.clone(),
        };
        tokio::spawn(async move {
            let _slot = slot;
            connection.run(tcp).await;
        });
    }

    // Shutdown: no new connections, unready, every connection told to finish.
    drop(listener);
    live.start_draining();
    let _ = stop_tx.send(true);
    log_line(
        log_format,
        true,
        &json!({
            "ts": now_rfc3339(),
            "event": "draining",
            "in_flight": metrics.in_flight(),
            "grace_ms": options.shutdown_grace.as_millis() as u64,
        }),
    );
    let all = u32::try_from(options.max_connections.max(1)).unwrap_or(u32::MAX);
    let drained = tokio::time::timeout(options.shutdown_grace, connection_slots.acquire_many(all))
        .await
        .is_ok();
    let _ = watcher.await;
    log_line(
        log_format,
        true,
        &json!({
            "ts": now_rfc3339(),
            "event": "stopped",
            "drained": drained,
            "in_flight": metrics.in_flight(),
        }),
    );
    Ok(())
}

/// Runs the webhook on its own runtime until SIGTERM or SIGINT (the CLI's entry point).
pub fn run(options: ServeOptions, source: ReviewerSource) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mansign-webhook")
        .build()
        .map_err(ServeError::Runtime)?;
    let log_format = options.log_format;
    let served = runtime.block_on(serve(options, source, termination(log_format)));
    // A review that outlived the grace period is abandoned, not waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// SIGTERM (the kubelet stopping the pod) or SIGINT (a terminal).
async fn termination(log_format: LogFormat) {
    let name = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    };
    log_line(
        log_format,
        true,
        &json!({"ts": now_rfc3339(), "event": "signal", "signal": name}),
    );
}

/// The HTTP/1.1 + HTTP/2 settings.
fn http_builder(options: &ServeOptions) -> auto::Builder<TokioExecutor> {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        // Also bounds an idle keep-alive connection: the timer runs while a head is awaited.
        .header_read_timeout(options.header_timeout)
        .max_buf_size(64 * 1024);
    http.http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(options.max_streams_per_connection)
        .max_header_list_size(64 * 1024)
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(10));
    http
}

/// One accepted TCP connection.
struct Connection {
    acceptor: TlsAcceptor,
    http: auto::Builder<TokioExecutor>,
    state: Arc<State>,
    stop: signal_channel::Receiver<bool>,
}

/// Requests of one connection in flight, and when the last one ended.
struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.last.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Activity {
    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(
            self.last
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .elapsed(),
        )
    }
}

impl Connection {
    async fn run(mut self, tcp: tokio::net::TcpStream) {
        let metrics = self.state.metrics.clone();
        let options = &self.state.options;
        let _open = metrics.connection_opened();
        let tls = match tokio::time::timeout(options.handshake_timeout, self.acceptor.accept(tcp))
            .await
        {
            Ok(Ok(tls)) => tls,
            // A failed or slow handshake is the client's problem: counted, not logged per
            // connection (a scanner would flood the log).
            _ => {
                metrics.handshake_failed();
                return;
            }
        };
        let activity = Arc::new(Activity {
            in_flight: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
        });
        let service = {
            let (state, activity) = (self.state.clone(), activity.clone());
            service_fn(move |request| {
                activity.in_flight.fetch_add(1, Ordering::SeqCst);
                let busy = Busy(activity.clone());
                let state = state.clone();
                async move {
                    let answer = handle(state, request).await;
                    drop(busy);
                    answer
                }
            })
        };
        let idle_timeout = options.idle_timeout;
        let connection = self.http.serve_connection(TokioIo::new(tls), service);
        tokio::pin!(connection);
        let mut check = tokio::time::interval((idle_timeout / 4).max(Duration::from_millis(20)));
        let mut closing = *self.stop.borrow();
        if closing {
            connection.as_mut().graceful_shutdown();
        }
        // A connection closed for idleness gets `idle_timeout` more to finish: a client that
        // ignores the GOAWAY (or never completes a stream's head) is then dropped.
        let mut forced_close: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                // An error here is the client's (reset, protocol error): nothing to do.
                _ = connection.as_mut() => return,
                _ = self.stop.changed(), if !closing => {
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
                _ = check.tick() => {
                    if let Some(at) = forced_close
                        && tokio::time::Instant::now() >= at
                    {
                        return;
                    }
                    if !closing && activity.idle_for().is_some_and(|idle| idle >= idle_timeout) {
                        closing = true;
                        forced_close = Some(tokio::time::Instant::now() + idle_timeout);
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
}
