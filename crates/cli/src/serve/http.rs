//! How `serve` faces the network: the routes, a bearer token, and connection limits.
//!
//! `axum::serve` reads request heads without a deadline and accepts without limit, so 20,000
//! half-open connections (slow-loris) took every file descriptor. The listener here is
//! `hyper`'s HTTP/1 connection builder over the same `axum` router: a connection must send its
//! whole request head within the header timeout (`hyper`'s `header_read_timeout`, also the
//! longest a kept-alive connection idles), and at most `max_connections` are open at once; a
//! connection past the cap is closed as soon as it is accepted, so the process never holds more
//! than the cap's sockets.
//!
//! With `--auth-token-file`, both routes answer 401 unless the request carries
//! `Authorization: Bearer <token>` (compared in constant time). Both bodies are redacted of the
//! API key and every server URL's password before they are sent.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clap::Args;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

use super::{Shared, expose, lock};

/// Default cap on the connections open at once: a Prometheus server or two, a few people.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 256;

/// Default time a connection has to send its whole request head (and the longest a kept-alive
/// connection waits for its next one): Prometheus sends its scrape at once.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How `serve` faces the network.
#[derive(Debug, Args, Clone)]
pub struct NetArgs {
    /// A file holding a bearer token: /metrics and /report.json then answer only requests with `Authorization: Bearer <token>` (Prometheus: `authorization: { credentials_file: ... }`).
    #[arg(long, value_name = "PATH")]
    pub auth_token_file: Option<PathBuf>,
    /// Connections open at once; more are closed as they arrive.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_connections: u32,
    /// Time a connection has to send its request head (and the longest a kept-alive one idles).
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "10s")]
    pub header_timeout: Duration,
}

impl Default for NetArgs {
    fn default() -> Self {
        NetArgs {
            auth_token_file: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
        }
    }
}

impl NetArgs {
    /// The bearer token of `--auth-token-file` (trimmed), when given.
    ///
    /// # Errors
    /// The file cannot be read, or holds no token.
    pub fn token(&self) -> Result<Option<Arc<str>>> {
        let Some(p) = &self.auth_token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("--auth-token-file {}", p.display()))?;
        let token = text.trim();
        anyhow::ensure!(
            !token.is_empty(),
            "--auth-token-file {}: the file holds no token",
            p.display()
        );
        anyhow::ensure!(
            token.chars().all(|c| c.is_ascii_graphic()),
            "--auth-token-file {}: a token is one line of visible ASCII characters",
            p.display()
        );
        Ok(Some(Arc::from(token)))
    }
}

/// The connection limits of [`serve`].
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time to send a request head.
    pub header_timeout: Duration,
}

impl Limits {
    /// The limits `net` asks for.
    pub fn of(net: &NetArgs) -> Self {
        Limits {
            max_connections: usize::try_from(net.max_connections.max(1)).unwrap_or(usize::MAX),
            header_timeout: net.header_timeout,
        }
    }
}

/// Whether `a` equals `b`, in time that depends only on their lengths.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the request may read: no token set, or its bearer token is the token.
fn authorized(headers: &HeaderMap, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, cred) = v.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| same_secret(cred.trim().as_bytes(), token.as_bytes()))
        })
        .unwrap_or(false)
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a bearer token is required (Authorization: Bearer <token>)\n",
    )
        .into_response()
}

/// The routes: `/metrics` and `/report.json`, behind the token when there is one, their
/// bodies redacted of `secrets`.
pub fn router(
    shared: Shared,
    token: Option<Arc<str>>,
    secrets: sglang_client::Secrets,
) -> axum::Router {
    let secrets = Arc::new(secrets);
    let metrics = {
        let (shared, token, secrets) = (shared.clone(), token.clone(), secrets.clone());
        move |headers: HeaderMap| {
            let resp = if authorized(&headers, token.as_deref()) {
                let text = expose::exposition(&lock(&shared));
                let text = secrets.redact(&text).into_owned();
                ([(header::CONTENT_TYPE, expose::CONTENT_TYPE)], text).into_response()
            } else {
                unauthorized()
            };
            async move { resp }
        }
    };
    let report = move |headers: HeaderMap| {
        let resp = if authorized(&headers, token.as_deref()) {
            let body = serde_json::to_string_pretty(&*lock(&shared))
                .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
            let body = secrets.redact(&body).into_owned();
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        } else {
            unauthorized()
        };
        async move { resp }
    };
    axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .route("/report.json", axum::routing::get(report))
}

/// Serves `app` on `listener` under `limits` until `stop` changes; then closes every
/// connection.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: Limits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        // Reap finished connections so the set does not grow.
        while conns.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors or a reset before accept: wait a little, do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            // Past the cap: closed at once (dropped), so it holds no descriptor.
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        conns.spawn(async move {
            let _permit = permit;
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    conns.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bearer_token_is_authorized() {
        let mut h = HeaderMap::new();
        assert!(authorized(&h, None));
        assert!(!authorized(&h, Some("s3cret-token")));
        h.insert(
            header::AUTHORIZATION,
            "Bearer s3cret-token".parse().unwrap(),
        );
        assert!(authorized(&h, Some("s3cret-token")));
        assert!(!authorized(&h, Some("s3cret-tokeX")));
        assert!(!authorized(&h, Some("s3cret")));
        h.insert(header::AUTHORIZATION, "Basic s3cret-token".parse().unwrap());
        assert!(!authorized(&h, Some("s3cret-token")));
    }
}
