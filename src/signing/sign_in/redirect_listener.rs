//! The loopback listener that receives the browser flow's redirect
//! (`http://localhost:<port>/auth/callback?code=..&state=..`), bounded: it reads at most
//! 8 KiB of request head, gives a connection 10 s to send it, answers other paths with 404,
//! and ends at the first redirect that carries this sign-in's `state` — a forged redirect
//! (wrong or missing `state`, e.g. from a web page guessing the port) gets a 400 and does not
//! end the wait for the real one. The flow drops the listener right after (single use).

use super::error::SignInError;
use crate::signing::secret::Secret;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt as _, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Largest HTTP request head accepted.
const MAX_CALLBACK_HEAD: usize = 8 * 1024;
/// Time a browser gets to send its request once connected.
const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections until the redirect to `/auth/callback` arrives (browsers also
/// ask for `/favicon.ico` and the like; those get a 404).
pub(super) async fn receive_code(
    listener: &TcpListener,
    state: &str,
) -> Result<Secret, SignInError> {
    loop {
        let (stream, _) = listener.accept().await.map_err(SignInError::Listener)?;
        let mut stream = BufReader::new(stream.take(MAX_CALLBACK_HEAD as u64 + 1));
        let head = match tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_head(&mut stream)).await {
            Ok(Some(head)) => head,
            _ => continue,
        };
        let target = head
            .lines()
            .next()
            .and_then(|line| {
                let mut parts = line.split_whitespace();
                (parts.next() == Some("GET"))
                    .then(|| parts.next())
                    .flatten()
            })
            .unwrap_or("");
        let Ok(url) = reqwest::Url::parse(&format!("http://localhost{target}")) else {
            respond(
                stream.get_mut().get_mut(),
                "400 Bad Request",
                "Bad request.",
            )
            .await;
            continue;
        };
        if url.path() != "/auth/callback" {
            respond(stream.get_mut().get_mut(), "404 Not Found", "Not found.").await;
            continue;
        }
        let query = |k: &str| {
            url.query_pairs()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.into_owned())
        };
        // The state first: an error redirect carries it too (RFC 6749 §4.1.2.1), and one
        // without it is not an answer to our request.
        let outcome = if query("state").as_deref() != Some(state) {
            Err(SignInError::StateMismatch)
        } else if let Some(error) = query("error") {
            Err(SignInError::Denied {
                error,
                description: query("error_description"),
            })
        } else {
            query("code")
                .map(Secret::new)
                .ok_or(SignInError::MissingCode)
        };
        let (status, text) = match &outcome {
            Ok(_) => ("200 OK", "Signed in to mansign. You can close this window."),
            Err(_) => (
                "400 Bad Request",
                "mansign sign-in failed; see the terminal.",
            ),
        };
        respond(stream.get_mut().get_mut(), status, text).await;
        // A forged request with a wrong state must not end the wait for the real one.
        match outcome {
            Err(SignInError::StateMismatch) => continue,
            other => return other,
        }
    }
}

async fn read_head<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    let mut head = Vec::new();
    loop {
        let n = reader.read_until(b'\n', &mut head).await.ok()?;
        if n == 0 || head.len() > MAX_CALLBACK_HEAD {
            return None;
        }
        if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            return String::from_utf8(head).ok();
        }
    }
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, text: &str) {
    let html = format!("<!doctype html><title>mansign</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
        html.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn get(port: u16, target: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// The status line's start (`HTTP/1.1 NNN`) of the answer to `GET target`.
    async fn status(port: u16, target: &str) -> String {
        get(port, target).await.chars().take(12).collect()
    }

    /// Runs [`receive_code`] (expecting `state`) on a loopback listener while `client`
    /// sends requests to its port; returns what [`receive_code`] ended with.
    fn sign_in_with<Fut: std::future::Future<Output = ()>>(
        state: &'static str,
        client: impl FnOnce(u16) -> Fut,
    ) -> Result<Secret, SignInError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let wait = tokio::spawn(async move { receive_code(&listener, state).await });
            client(port).await;
            wait.await.unwrap()
        })
    }

    #[test]
    fn the_listener_ignores_other_paths_and_forged_states_until_the_real_redirect() {
        let code = sign_in_with("good", |port| async move {
            assert_eq!(status(port, "/favicon.ico").await, "HTTP/1.1 404");
            let forged = "/auth/callback?code=evil&state=bad";
            assert_eq!(status(port, forged).await, "HTTP/1.1 400");
            let real = "/auth/callback?code=c0de&state=good";
            assert_eq!(status(port, real).await, "HTTP/1.1 200");
        })
        .unwrap();
        assert_eq!(code.expose(), "c0de");
    }

    #[test]
    fn an_error_redirect_ends_the_sign_in() {
        let err = sign_in_with("s", |port| async move {
            let denied = "/auth/callback?error=access_denied&error_description=no&state=s";
            get(port, denied).await;
        })
        .unwrap_err();
        assert!(matches!(err, SignInError::Denied { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "the issuer refused the sign-in: access_denied (no)"
        );
    }

    /// RFC 6749 §4.1.2.1: an error redirect carries the request's `state` too. Without
    /// it, any web page or local process could abort the sign-in (and put its own text
    /// in the terminal) by guessing the port.
    #[test]
    fn an_error_redirect_with_a_wrong_state_does_not_end_the_sign_in() {
        let code = sign_in_with("good", |port| async move {
            for forged in [
                "/auth/callback?error=access_denied&error_description=forged",
                "/auth/callback?error=access_denied&state=bad",
            ] {
                assert_eq!(status(port, forged).await, "HTTP/1.1 400", "{forged}");
            }
            let real = "/auth/callback?code=c0de&state=good";
            assert_eq!(status(port, real).await, "HTTP/1.1 200");
        })
        .unwrap();
        assert_eq!(code.expose(), "c0de");
    }
}
