//! [`SglangClient`]: one `reqwest::Client` with connect and total timeouts,
//! typed calls for the info, metrics and generation endpoints.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::stream::{BoxStream, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::api::{ChatCompletion, Completion, GenerateResponse};
use crate::error::{ClientError, excerpt, redact_url};
use crate::info::{ModelInfo, ServerInfo};
use crate::sse::{SseDecoder, SseError};

mod scrape;

/// Default environment variable read by [`ClientConfig::api_key_from_env`].
pub const API_KEY_ENV: &str = "SGLANG_API_KEY";

/// A bearer token. Its `Debug` and `Display` never show the value.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// `text` with every occurrence of the key replaced by `<redacted>`: as sent,
    /// URL-encoded, `\u`-escaped or base64-encoded (see [`crate::redact`]). For what a
    /// server echoes (error bodies, logs), never for answers. A key shorter than
    /// [`crate::redact::MIN_SECRET_LEN`] changes nothing: it is no key, and would rewrite
    /// common words.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.secrets().redact(text)
    }

    /// The key as a [`Secrets`](crate::redact::Secrets) set (empty when too short).
    pub fn secrets(&self) -> crate::redact::Secrets {
        crate::redact::Secrets::new().with(&self.0)
    }
}

/// What a server may echo of the base URL's credentials: the password, and the Basic-auth
/// token `base64(user:password)` reqwest sends for them. Empty without a password.
fn url_secrets(base_url: &str) -> Vec<String> {
    use base64::Engine as _;
    let Ok(u) = reqwest::Url::parse(base_url) else {
        return Vec::new();
    };
    let Some(password) = u.password().filter(|p| !p.is_empty()) else {
        return Vec::new();
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let (user, pass) = (decode(u.username()), decode(password));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    let mut out = vec![token, pass, password.to_string()];
    out.retain(|s| s.len() >= 3);
    out.dedup();
    out
}

/// `text` with the key (when there is one) redacted, owned.
fn scrub(key: Option<&ApiKey>, text: String) -> String {
    match key {
        Some(k) => match k.redact(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(o) => o,
        },
        None => text,
    }
}

/// Default cap on a non-streaming completion body: 16 MiB.
pub const DEFAULT_MAX_JSON_BYTES: u64 = 16 << 20;
/// Default cap on an info payload (`/server_info`, `/model_info`): 2 MiB.
/// Real payloads are tens of KiB; these are decoded into a JSON tree, which
/// can take 16 times the text (`[0,0,0,…]`: 32 bytes per 2-byte element),
/// so the cap keeps that tree under about 32 MiB.
pub const DEFAULT_MAX_INFO_BYTES: u64 = 2 << 20;
/// Default cap on a `/metrics` body: 64 MiB.
pub const DEFAULT_MAX_METRICS_BYTES: u64 = 64 << 20;
/// Default cap on the series of one `/metrics` scrape (samples, histogram buckets each
/// one): 100,000. One scheduler exports a few hundred (the per-stage latency histogram is
/// most of them), so 256 schedulers (`--enable-metrics-for-all-schedulers` at DP 32 × TP 8)
/// come to about 77,000; a page of 540,049 series took 1.8 GB to read (issue 30 C18). A series
/// outside the typed view is kept as read, about 770 bytes (77 MB at the cap, measured).
pub const DEFAULT_MAX_METRICS_SERIES: usize = 100_000;
/// Default cap on the label sets of typed `sglang:` series in one scrape (one per scheduler,
/// and the tokenizer's): 10,000, ten times the schedulers of a 1,024-GPU server exporting
/// every one. Each costs about 3 KB in the typed view (32 MB at the cap, measured).
pub const DEFAULT_MAX_METRICS_LABEL_SETS: usize = 10_000;
/// Default cap on one server-sent event (and one line of a stream): 1 MiB.
pub const DEFAULT_MAX_SSE_EVENT_BYTES: u64 = 1 << 20;
/// Default cap on the bodies being received at once by one client, all
/// requests together: 64 MiB. With 64 requests in flight each may still
/// take the whole per-body cap, just not all at the same moment.
pub const DEFAULT_MAX_IN_FLIGHT_BODY_BYTES: u64 = 32 << 20;
/// How much of an error (non-2xx) body is read for its excerpt: 64 KiB.
pub const ERROR_BODY_READ_BYTES: u64 = 64 << 10;

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL, e.g. `http://127.0.0.1:30000` (no trailing path needed).
    /// Only `http://` is supported (the workspace builds reqwest without TLS).
    pub base_url: String,
    /// TCP connect timeout (default 10 s).
    pub connect_timeout: Duration,
    /// Total timeout of info / health / metrics calls (default 30 s).
    pub info_timeout: Duration,
    /// Total timeout of one generation request, including the whole streamed
    /// body (default 600 s: a 16k-token answer at 30 tok/s).
    pub generate_timeout: Duration,
    /// Longest silence inside a stream once its first body byte came
    /// (default 60 s): past it the stream is [`ClientError::Stalled`].
    /// Before the first byte only `generate_timeout` applies, since a
    /// queued request is silent until its prefill runs.
    pub stall_timeout: Duration,
    /// Cap on a non-streaming completion body (bytes, default
    /// [`DEFAULT_MAX_JSON_BYTES`]).
    pub max_json_bytes: u64,
    /// Cap on an info payload (bytes, default [`DEFAULT_MAX_INFO_BYTES`]).
    pub max_info_bytes: u64,
    /// Cap on the non-streaming bodies being received at once, all requests
    /// of this client together (bytes, default
    /// [`DEFAULT_MAX_IN_FLIGHT_BODY_BYTES`]): a body that would pass it fails
    /// as [`ClientError::TooLarge`].
    pub max_in_flight_body_bytes: u64,
    /// Cap on a `/metrics` body (bytes, default [`DEFAULT_MAX_METRICS_BYTES`]).
    pub max_metrics_bytes: u64,
    /// Cap on the series of one `/metrics` scrape (series, default
    /// [`DEFAULT_MAX_METRICS_SERIES`]).
    pub max_metrics_series: usize,
    /// Cap on the label sets of typed `sglang:` series in one scrape (label sets, default
    /// [`DEFAULT_MAX_METRICS_LABEL_SETS`]).
    pub max_metrics_label_sets: usize,
    /// Cap on one server-sent event or stream line (bytes, default
    /// [`DEFAULT_MAX_SSE_EVENT_BYTES`]).
    pub max_sse_event_bytes: u64,
    /// Bearer token sent as `Authorization: Bearer …` (None: no header).
    pub api_key: Option<ApiKey>,
    /// Idle keep-alive connections kept per host (default 4096, enough for
    /// the batch runner's concurrency so connections are reused).
    pub pool_max_idle_per_host: usize,
}

impl ClientConfig {
    /// Defaults for `base_url` (timeouts above, no API key).
    pub fn new(base_url: impl Into<String>) -> Self {
        ClientConfig {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            connect_timeout: Duration::from_secs(10),
            info_timeout: Duration::from_secs(30),
            generate_timeout: Duration::from_secs(600),
            stall_timeout: Duration::from_secs(60),
            max_json_bytes: DEFAULT_MAX_JSON_BYTES,
            max_info_bytes: DEFAULT_MAX_INFO_BYTES,
            max_in_flight_body_bytes: DEFAULT_MAX_IN_FLIGHT_BODY_BYTES,
            max_metrics_bytes: DEFAULT_MAX_METRICS_BYTES,
            max_metrics_series: DEFAULT_MAX_METRICS_SERIES,
            max_metrics_label_sets: DEFAULT_MAX_METRICS_LABEL_SETS,
            max_sse_event_bytes: DEFAULT_MAX_SSE_EVENT_BYTES,
            api_key: None,
            pool_max_idle_per_host: 4096,
        }
    }

    /// Reads the API key from environment variable `var` (e.g.
    /// [`API_KEY_ENV`]); an unset or empty variable leaves no key.
    pub fn api_key_from_env(mut self, var: &str) -> Self {
        self.api_key = std::env::var(var)
            .ok()
            .filter(|k| !k.is_empty())
            .map(ApiKey);
        self
    }
}

/// A parsed endpoint URL (see [`SglangClient::endpoint`]).
#[derive(Debug, Clone)]
pub struct Endpoint {
    url: reqwest::Url,
    path: &'static str,
}

impl Endpoint {
    /// The full URL (may carry credentials: redact before printing).
    pub fn url_str(&self) -> &str {
        self.url.as_str()
    }
}

/// Typed client for one SGLang server. Cheap to clone (the inner
/// `reqwest::Client` is reference counted and shares its connection pool).
#[derive(Debug, Clone)]
pub struct SglangClient {
    http: reqwest::Client,
    cfg: ClientConfig,
    budget: Arc<Budget>,
    /// The base URL's password and Basic-auth token, redacted from what a server echoes.
    url_secrets: Vec<String>,
}

fn map_reqwest(e: reqwest::Error, url: &str) -> ClientError {
    let url = redact_url(url);
    // A connect that timed out never sent the request: a connect error (retried), not a
    // request timeout.
    if e.is_connect() {
        return ClientError::Connect { url };
    }
    if e.is_timeout() {
        return ClientError::Timeout { url };
    }
    let e = e.without_url();
    let mut detail = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        src = s.source();
    }
    ClientError::Transport { url, detail }
}

impl SglangClient {
    /// Builds the client. Errors: [`ClientError::Io`] when the HTTP stack
    /// cannot be initialised (e.g. no resolver).
    pub fn new(cfg: ClientConfig) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .pool_max_idle_per_host(cfg.pool_max_idle_per_host)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ClientError::Io(std::io::Error::other(e.without_url().to_string())))?;
        let budget = Arc::new(Budget {
            used: AtomicU64::new(0),
            limit: cfg.max_in_flight_body_bytes,
        });
        let url_secrets = url_secrets(&cfg.base_url);
        Ok(SglangClient {
            http,
            cfg,
            budget,
            url_secrets,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.cfg.base_url, path)
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
        timeout: Duration,
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = req.timeout(timeout);
        if let Some(k) = &self.cfg.api_key {
            req = req.bearer_auth(&k.0);
        }
        let resp = req.send().await.map_err(|e| map_reqwest(e, url))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after_s = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        // Only the excerpt is kept: read at most ERROR_BODY_READ_BYTES.
        let body = read_head(resp, ERROR_BODY_READ_BYTES).await;
        Err(ClientError::Status {
            url: redact_url(url),
            status: status.as_u16(),
            body_excerpt: self.scrub(excerpt(&String::from_utf8_lossy(&body), 300)),
            retry_after_s,
        })
    }

    fn scrub(&self, text: String) -> String {
        let mut text = scrub(self.cfg.api_key.as_ref(), text);
        for secret in &self.url_secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "<redacted>");
            }
        }
        text
    }

    async fn get_text(&self, path: &str, cap: u64) -> Result<String, ClientError> {
        let url = self.url(path);
        let resp = self
            .send(self.http.get(&url), &url, self.cfg.info_timeout)
            .await?;
        let bytes = read_capped(resp, cap, &url, "response body", &self.budget).await?;
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    async fn get_json(&self, path: &str) -> Result<Value, ClientError> {
        let text = self.get_text(path, self.cfg.max_info_bytes).await?;
        decode(path, &text).map_err(|e| self.scrub_decode(e))
    }

    fn scrub_decode(&self, e: ClientError) -> ClientError {
        match e {
            ClientError::Decode {
                endpoint,
                excerpt,
                source,
            } => ClientError::Decode {
                endpoint,
                excerpt: self.scrub(excerpt),
                source,
            },
            other => other,
        }
    }

    /// `GET /health`: Ok when the server answers 2xx.
    /// Errors: [`ClientError::Connect`], [`ClientError::Timeout`], [`ClientError::Status`].
    pub async fn health(&self) -> Result<(), ClientError> {
        self.get_text("/health", ERROR_BODY_READ_BYTES)
            .await
            .map(|_| ())
    }

    /// `GET /health_generate`: the server generates one token; Ok on 2xx.
    /// Errors as [`SglangClient::health`].
    pub async fn health_generate(&self) -> Result<(), ClientError> {
        self.get_text("/health_generate", ERROR_BODY_READ_BYTES)
            .await
            .map(|_| ())
    }

    /// `GET /server_info` (v0.5.6+), falling back to `/get_server_info`
    /// (v0.3.6.post1+) on 404. Errors: transport errors, [`ClientError::Status`]
    /// from the fallback, [`ClientError::Decode`] when the body is not a JSON
    /// object.
    pub async fn server_info(&self) -> Result<ServerInfo, ClientError> {
        let v = self
            .get_json_with_fallback("/server_info", "/get_server_info")
            .await?;
        let (endpoint, v) = v;
        ServerInfo::from_value(v).map_err(|e| info_decode(endpoint, e))
    }

    /// `GET /model_info` (v0.5.6+), falling back to `/get_model_info` on 404.
    /// Errors as [`SglangClient::server_info`].
    pub async fn model_info(&self) -> Result<ModelInfo, ClientError> {
        let (endpoint, v) = self
            .get_json_with_fallback("/model_info", "/get_model_info")
            .await?;
        ModelInfo::from_value(v).map_err(|e| info_decode(endpoint, e))
    }

    async fn get_json_with_fallback(
        &self,
        new: &'static str,
        old: &'static str,
    ) -> Result<(&'static str, Value), ClientError> {
        match self.get_json(new).await {
            Err(ClientError::Status { status: 404, .. }) => Ok((old, self.get_json(old).await?)),
            other => other.map(|v| (new, v)),
        }
    }

    /// `GET /v1/loads` (v0.5.8+): each DP rank's running and waiting
    /// requests, tokens, memory and queue breakdown.
    ///
    /// Errors as [`SglangClient::health`] (404 before v0.5.8), and
    /// [`ClientError::Decode`] when the body is not a list of loads.
    pub async fn loads(&self) -> Result<crate::loads::Loads, ClientError> {
        let v = self.get_json("/v1/loads").await?;
        crate::loads::Loads::from_json(&v).map_err(|e| ClientError::Decode {
            endpoint: "/v1/loads".into(),
            excerpt: crate::error::excerpt(&v.to_string(), 200),
            source: <serde_json::Error as serde::de::Error>::custom(e),
        })
    }

    /// `GET /metrics` as raw Prometheus text. Errors as [`SglangClient::health`]
    /// (404 when the server runs without `--enable-metrics`), and
    /// [`ClientError::TooLarge`] past `max_metrics_bytes`.
    pub async fn metrics_text(&self) -> Result<String, ClientError> {
        self.get_text("/metrics", self.cfg.max_metrics_bytes).await
    }

    /// POSTs `body` to `path` with the generation timeout and returns the
    /// response once the status is 2xx (body not read yet).
    pub async fn post_raw(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<reqwest::Response, ClientError> {
        let url = self.url(path);
        self.send(
            self.http.post(&url).json(body),
            &url,
            self.cfg.generate_timeout,
        )
        .await
    }

    async fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<T, ClientError> {
        let url = self.url(path);
        let resp = self.post_raw(path, body).await?;
        let bytes = read_capped(
            resp,
            self.cfg.max_json_bytes,
            &url,
            "response body",
            &self.budget,
        )
        .await?;
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode {
            endpoint: path.to_string(),
            excerpt: self.scrub(excerpt(&String::from_utf8_lossy(&bytes), 200)),
            source,
        })
    }

    async fn post_stream<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &'static str,
        body: &Value,
    ) -> Result<BoxStream<'static, Result<T, ClientError>>, ClientError> {
        let url = self.url(path);
        let resp = self.post_raw(path, body).await?;
        Ok(self.sse_stream(resp, url, path))
    }

    /// The full URL of `path` on this server, parsed once (for callers that
    /// send many requests to one endpoint). Errors: [`ClientError::Io`] when
    /// the base URL is not a valid URL.
    pub fn endpoint(&self, path: &'static str) -> Result<Endpoint, ClientError> {
        let url = self.url(path);
        let parsed = reqwest::Url::parse(&url).map_err(|e| {
            ClientError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("bad server URL {}: {e}", redact_url(&url)),
            ))
        })?;
        Ok(Endpoint { url: parsed, path })
    }

    /// POSTs an already serialised JSON body to `ep` and decodes the answer
    /// as `T` (any shape; unknown keys are skipped unless `T` keeps them).
    /// The fast path of the batch runner. Errors as [`SglangClient::generate`].
    pub async fn post_json_bytes<T: DeserializeOwned>(
        &self,
        ep: &Endpoint,
        body: bytes::Bytes,
    ) -> Result<T, ClientError> {
        let resp = self.post_prepared(ep, body).await?;
        let bytes = read_capped(
            resp,
            self.cfg.max_json_bytes,
            ep.url.as_str(),
            "response body",
            &self.budget,
        )
        .await?;
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode {
            endpoint: ep.path.to_string(),
            excerpt: self.scrub(excerpt(&String::from_utf8_lossy(&bytes), 200)),
            source,
        })
    }

    /// Streaming twin of [`SglangClient::post_json_bytes`]: one `T` per SSE
    /// event until `data: [DONE]`.
    pub async fn post_stream_bytes<T: DeserializeOwned + Send + 'static>(
        &self,
        ep: &Endpoint,
        body: bytes::Bytes,
    ) -> Result<BoxStream<'static, Result<T, ClientError>>, ClientError> {
        let resp = self.post_prepared(ep, body).await?;
        Ok(self.sse_stream(resp, ep.url.to_string(), ep.path))
    }

    async fn post_prepared(
        &self,
        ep: &Endpoint,
        body: bytes::Bytes,
    ) -> Result<reqwest::Response, ClientError> {
        let req = self
            .http
            .post(ep.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        self.send(req, ep.url.as_str(), self.cfg.generate_timeout)
            .await
    }

    /// Native `POST /generate` (non-streaming; `body` is SGLang's
    /// `GenerateReqInput`, e.g. `{"text": "...", "sampling_params": {...}}`).
    /// Errors: transport errors, [`ClientError::Status`], [`ClientError::Decode`].
    pub async fn generate(&self, body: &Value) -> Result<GenerateResponse, ClientError> {
        self.post_json("/generate", body).await
    }

    /// Native `POST /generate` with `"stream": true` set by the caller:
    /// one [`GenerateResponse`] per SSE event (cumulative `text`), until
    /// `data: [DONE]`. A stream that ends before `[DONE]` yields
    /// [`ClientError::Transport`].
    pub async fn generate_stream(
        &self,
        body: &Value,
    ) -> Result<BoxStream<'static, Result<GenerateResponse, ClientError>>, ClientError> {
        self.post_stream("/generate", body).await
    }

    /// `POST /v1/chat/completions` (non-streaming). Errors as [`SglangClient::generate`].
    pub async fn chat_completions(&self, body: &Value) -> Result<ChatCompletion, ClientError> {
        self.post_json("/v1/chat/completions", body).await
    }

    /// `POST /v1/chat/completions` with `"stream": true` set by the caller:
    /// one chunk per SSE event until `[DONE]`.
    pub async fn chat_completions_stream(
        &self,
        body: &Value,
    ) -> Result<BoxStream<'static, Result<ChatCompletion, ClientError>>, ClientError> {
        self.post_stream("/v1/chat/completions", body).await
    }

    /// `POST /v1/completions` (non-streaming).
    pub async fn completions(&self, body: &Value) -> Result<Completion, ClientError> {
        self.post_json("/v1/completions", body).await
    }

    /// `POST /v1/completions` with `"stream": true`: one chunk per SSE event.
    pub async fn completions_stream(
        &self,
        body: &Value,
    ) -> Result<BoxStream<'static, Result<Completion, ClientError>>, ClientError> {
        self.post_stream("/v1/completions", body).await
    }
}

fn decode(endpoint: &str, text: &str) -> Result<Value, ClientError> {
    serde_json::from_str(text).map_err(|source| ClientError::Decode {
        endpoint: endpoint.to_string(),
        excerpt: excerpt(text, 200),
        source,
    })
}

fn info_decode(endpoint: &str, e: crate::info::InfoError) -> ClientError {
    let source = match e {
        crate::info::InfoError::Json(j) => j,
        crate::info::InfoError::NotObject(kind) => <serde_json::Error as serde::de::Error>::custom(
            format!("expected an object, got {kind}"),
        ),
    };
    ClientError::Decode {
        endpoint: endpoint.to_string(),
        excerpt: String::new(),
        source,
    }
}

/// Reads a whole body, at most `cap` bytes (a `Content-Length` above the
/// cap fails before reading). Errors: [`ClientError::TooLarge`], transport
/// errors.
async fn read_capped(
    mut resp: reqwest::Response,
    cap: u64,
    url: &str,
    what: &'static str,
    budget: &Arc<Budget>,
) -> Result<Vec<u8>, ClientError> {
    if resp.content_length().is_some_and(|len| len > cap) {
        return Err(ClientError::TooLarge {
            url: redact_url(url),
            what,
            limit_bytes: cap,
        });
    }
    let mut parts = Parts::new(budget.clone(), resp.content_length());
    while let Some(chunk) = resp.chunk().await.map_err(|e| map_reqwest(e, url))? {
        if let Err(over) = parts.push(chunk, cap) {
            return Err(over.error(url, what, cap, budget));
        }
    }
    Ok(parts.into_vec())
}

/// Bytes of bodies being received, all requests of one client together.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicU64,
    limit: u64,
}

/// Which cap a chunk would pass.
#[derive(Debug)]
pub(crate) enum Over {
    /// This body's own cap.
    Body,
    /// The client's in-flight budget.
    Budget,
}

impl Over {
    fn error(&self, url: &str, what: &'static str, cap: u64, budget: &Budget) -> ClientError {
        match self {
            Over::Body => ClientError::TooLarge {
                url: redact_url(url),
                what,
                limit_bytes: cap,
            },
            Over::Budget => ClientError::TooLarge {
                url: redact_url(url),
                what: "response body (with the other answers in flight)",
                limit_bytes: budget.limit,
            },
        }
    }
}

/// A body copied into blocks that grow geometrically up to 64 KiB, joined
/// once at the end (and charged to the client's in-flight budget until
/// then). The received chunks are copied, not kept: a chunk from hyper can
/// hold on to its whole read buffer, so keeping chunks measured twice the
/// data in RSS. A body cut at the cap costs about the cap, no more (a
/// growing `Vec` would hold up
/// to 1.5 times it while reallocating).
pub(crate) struct Parts {
    blocks: Vec<Vec<u8>>,
    len: usize,
    budget: Arc<Budget>,
    /// The declared length (`Content-Length`), sizing the first block.
    hint: Option<usize>,
}

/// Largest block of [`Parts`]: 64 KiB (small enough for the allocator to reuse at once).
const MAX_BLOCK: usize = 64 << 10;

impl Parts {
    fn new(budget: Arc<Budget>, declared: Option<u64>) -> Self {
        Parts {
            blocks: Vec::new(),
            len: 0,
            budget,
            hint: declared.map(|n| (n as usize).clamp(1, MAX_BLOCK)),
        }
    }

    fn copy_in(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let full = self.blocks.last().is_none_or(|b| b.len() == b.capacity());
            if full {
                // A small body of declared length is one exact block (returned as is).
                let grown = self
                    .len
                    .clamp(16 << 10, MAX_BLOCK)
                    .max(data.len().min(MAX_BLOCK));
                let size = self.hint.take().unwrap_or(grown);
                self.blocks.push(Vec::with_capacity(size));
            }
            let Some(b) = self.blocks.last_mut() else {
                return;
            };
            let take = (b.capacity() - b.len()).min(data.len());
            b.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
    }

    /// Adds a chunk; an error (and nothing added) when it would pass `cap`
    /// bytes or the client's budget.
    pub(crate) fn push(&mut self, chunk: bytes::Bytes, cap: u64) -> Result<(), Over> {
        let n = chunk.len() as u64;
        if self.len as u64 + n > cap {
            return Err(Over::Body);
        }
        let before = self.budget.used.fetch_add(n, Ordering::Relaxed);
        if before + n > self.budget.limit {
            self.budget.used.fetch_sub(n, Ordering::Relaxed);
            return Err(Over::Budget);
        }
        self.copy_in(&chunk);
        self.len += chunk.len();
        Ok(())
    }

    /// The body, in one buffer (the block itself when there is one).
    pub(crate) fn into_vec(mut self) -> Vec<u8> {
        let mut blocks = std::mem::take(&mut self.blocks);
        if blocks.len() == 1 {
            return blocks.pop().unwrap_or_default();
        }
        let mut v = Vec::with_capacity(self.len);
        for b in blocks {
            v.extend_from_slice(&b);
        }
        v
    }
}

impl Drop for Parts {
    fn drop(&mut self) {
        self.budget
            .used
            .fetch_sub(self.len as u64, Ordering::Relaxed);
    }
}

/// The first `cap` bytes of a body (for an error excerpt); what cannot be
/// read is left out.
async fn read_head(mut resp: reqwest::Response, cap: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = (cap as usize).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() as u64 >= cap {
            break;
        }
    }
    buf
}

/// State of one decoded SSE stream.
struct SseState {
    resp: reqwest::Response,
    dec: SseDecoder,
    url: String,
    endpoint: &'static str,
    key: Option<ApiKey>,
    max_event_bytes: u64,
    stall: Duration,
    got_bytes: bool,
    eof: bool,
    done: bool,
}

impl SseState {
    fn too_large(&self) -> ClientError {
        ClientError::TooLarge {
            url: redact_url(&self.url),
            what: "server-sent event",
            limit_bytes: self.max_event_bytes,
        }
    }

    /// The next event's data; `Ok(None)` at the end of the body.
    async fn next_data(&mut self) -> Result<Option<Vec<u8>>, ClientError> {
        loop {
            match self.dec.next_event() {
                Ok(Some(ev)) => return Ok(Some(ev)),
                Ok(None) => {}
                Err(SseError::TooLarge) => return Err(self.too_large()),
            }
            if self.eof {
                return self.dec.finish().map_err(|_| self.too_large());
            }
            let chunk = if self.got_bytes {
                match tokio::time::timeout(self.stall, self.resp.chunk()).await {
                    Ok(c) => c,
                    Err(_) => {
                        return Err(ClientError::Stalled {
                            url: redact_url(&self.url),
                            stall_s: self.stall.as_secs_f64(),
                        });
                    }
                }
            } else {
                self.resp.chunk().await
            };
            match chunk.map_err(|e| map_reqwest(e, &self.url))? {
                Some(b) => {
                    self.got_bytes |= !b.is_empty();
                    self.dec.push(&b);
                }
                None => self.eof = true,
            }
        }
    }
}

impl SglangClient {
    /// Turns an SSE response into a stream of decoded events; ends at
    /// `[DONE]`. Bounded: one event or line over `max_sse_event_bytes` is
    /// [`ClientError::TooLarge`]; silence past `stall_timeout` after the first
    /// byte is [`ClientError::Stalled`].
    fn sse_stream<T: DeserializeOwned + Send + 'static>(
        &self,
        resp: reqwest::Response,
        url: String,
        endpoint: &'static str,
    ) -> BoxStream<'static, Result<T, ClientError>> {
        let state = SseState {
            resp,
            dec: SseDecoder::new(self.cfg.max_sse_event_bytes as usize),
            url,
            endpoint,
            key: self.cfg.api_key.clone(),
            max_event_bytes: self.cfg.max_sse_event_bytes,
            stall: self.cfg.stall_timeout,
            got_bytes: false,
            eof: false,
            done: false,
        };
        futures_util::stream::unfold(state, |mut st| async move {
            if st.done {
                return None;
            }
            loop {
                let data = match st.next_data().await {
                    Ok(Some(d)) => d,
                    Ok(None) => {
                        st.done = true;
                        let err = ClientError::Transport {
                            url: redact_url(&st.url),
                            detail: "stream ended before data: [DONE]".into(),
                        };
                        return Some((Err(err), st));
                    }
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                };
                let text = String::from_utf8_lossy(&data);
                let data = text.trim();
                if data.is_empty() {
                    continue;
                }
                if data == "[DONE]" {
                    return None;
                }
                let item = serde_json::from_str::<T>(data).map_err(|source| ClientError::Decode {
                    endpoint: st.endpoint.to_string(),
                    excerpt: scrub(st.key.as_ref(), excerpt(data, 200)),
                    source,
                });
                st.done = item.is_err();
                return Some((item, st));
            }
        })
        .boxed()
    }
}

/// One HTTP/1.1 keep-alive connection to one endpoint, owned by one batch
/// worker: the batch runner's non-streaming fast path (see
/// [`SglangClient::connection`]).
///
/// It skips what a pooled `reqwest` request costs per call (pool checkout,
/// URL handling, a per-request timer set up by the pool, header building):
/// the request head is prepared once, each call is one write of the request
/// and the reads of the answer. The connection is opened on first use (with
/// `TCP_NODELAY`) and again after any error or a close by the server.
#[derive(Debug)]
pub struct BatchConnection {
    /// `host:port` to connect to.
    authority: String,
    /// Full URL, for error messages (redacted when shown).
    url: String,
    path: &'static str,
    uri: hyper::Uri,
    host: hyper::header::HeaderValue,
    auth: Option<hyper::header::HeaderValue>,
    connect_timeout: Duration,
    total_timeout: Duration,
    max_body_bytes: u64,
    budget: Arc<Budget>,
    key: Option<ApiKey>,
    sender: Option<hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>>,
}

fn hyper_detail(e: &(dyn std::error::Error + 'static)) -> String {
    let mut detail = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        src = s.source();
    }
    detail
}

impl SglangClient {
    /// A [`BatchConnection`] to `ep` with this client's API key, connect
    /// timeout and generation timeout. Opens nothing yet.
    /// Errors: [`ClientError::Io`] when the endpoint URL has no host or the
    /// API key is not a valid header value.
    pub fn connection(&self, ep: &Endpoint) -> Result<BatchConnection, ClientError> {
        let bad = |what: &str| {
            ClientError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{what}: {}", redact_url(ep.url.as_str())),
            ))
        };
        let host = ep.url.host_str().ok_or_else(|| bad("no host in URL"))?;
        let port = ep
            .url
            .port_or_known_default()
            .ok_or_else(|| bad("no port in URL"))?;
        let authority = match ep.url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let path_q = match ep.url.query() {
            Some(q) => format!("{}?{q}", ep.url.path()),
            None => ep.url.path().to_string(),
        };
        let uri: hyper::Uri = path_q.parse().map_err(|_| bad("bad path in URL"))?;
        let hv = |s: &str| {
            hyper::header::HeaderValue::from_str(s).map_err(|_| bad("bad header value for"))
        };
        let auth = match &self.cfg.api_key {
            Some(k) => {
                let mut v = hv(&format!("Bearer {}", k.0))?;
                v.set_sensitive(true);
                Some(v)
            }
            None => None,
        };
        Ok(BatchConnection {
            host: hv(&authority)?,
            authority: format!("{host}:{port}"),
            url: ep.url.to_string(),
            path: ep.path,
            uri,
            auth,
            connect_timeout: self.cfg.connect_timeout,
            total_timeout: self.cfg.generate_timeout,
            max_body_bytes: self.cfg.max_json_bytes,
            budget: self.budget.clone(),
            key: self.cfg.api_key.clone(),
            sender: None,
        })
    }
}

impl BatchConnection {
    async fn connect(
        &mut self,
    ) -> Result<
        hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
        ClientError,
    > {
        let url = || redact_url(&self.url);
        let tcp = match tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect(self.authority.as_str()),
        )
        .await
        {
            // Not connected within the connect timeout (a full accept backlog drops SYNs): the
            // request was never sent, so this is a connect error, which is retried.
            Err(_) | Ok(Err(_)) => return Err(ClientError::Connect { url: url() }),
            Ok(Ok(s)) => s,
        };
        // Nagle off: each request is one small write, answered at once.
        let _ = tcp.set_nodelay(true);
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .map_err(|e| ClientError::Transport {
                    url: url(),
                    detail: hyper_detail(&e),
                })?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }

    fn request(&self, body: bytes::Bytes) -> hyper::Request<http_body_util::Full<bytes::Bytes>> {
        let mut req = hyper::Request::new(http_body_util::Full::new(body));
        *req.method_mut() = hyper::Method::POST;
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.insert(hyper::header::HOST, self.host.clone());
        h.insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        if let Some(a) = &self.auth {
            h.insert(hyper::header::AUTHORIZATION, a.clone());
        }
        req
    }

    fn transport(&self, e: &(dyn std::error::Error + 'static)) -> ClientError {
        ClientError::Transport {
            url: redact_url(&self.url),
            detail: hyper_detail(e),
        }
    }

    /// Sends the request, reusing the connection when it is open. A request
    /// that a reused connection closed before sending is sent once more on a
    /// new connection (it never reached the server).
    async fn send(
        &mut self,
        body: bytes::Bytes,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let mut req = self.request(body);
        for _ in 0..2 {
            let reused = self.sender.as_ref().is_some_and(|s| !s.is_closed());
            let mut sender = match self.sender.take() {
                Some(s) if reused => s,
                _ => self.connect().await?,
            };
            if sender.ready().await.is_err() {
                if reused {
                    continue;
                }
                return Err(ClientError::Transport {
                    url: redact_url(&self.url),
                    detail: "connection closed before the request was sent".into(),
                });
            }
            match sender.try_send_request(req).await {
                Ok(resp) => {
                    self.sender = Some(sender);
                    return Ok(resp);
                }
                Err(mut e) => match e.take_message() {
                    Some(r) if reused => req = r,
                    _ => return Err(self.transport(e.error())),
                },
            }
        }
        Err(ClientError::Transport {
            url: redact_url(&self.url),
            detail: "connection closed before the request was sent".into(),
        })
    }

    async fn post_inner<T: DeserializeOwned>(
        &mut self,
        body: bytes::Bytes,
    ) -> Result<T, ClientError> {
        use http_body_util::BodyExt;
        let resp = self.send(body).await?;
        let status = resp.status();
        let retry_after_s = resp
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        // An error body is read only as far as its excerpt needs; a success
        // body up to the cap (a Content-Length above it fails at once).
        let cap = if status.is_success() {
            self.max_body_bytes
        } else {
            ERROR_BODY_READ_BYTES
        };
        let too_large = |s: &Self| ClientError::TooLarge {
            url: redact_url(&s.url),
            what: "response body",
            limit_bytes: cap,
        };
        let declared = resp
            .headers()
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if status.is_success() && declared.is_some_and(|n| n > cap) {
            self.sender = None;
            return Err(too_large(self));
        }
        let mut body = resp.into_body();
        let mut parts = Parts::new(self.budget.clone(), declared);
        let mut cut = None;
        while let Some(frame) = body.frame().await {
            let frame = match frame {
                Ok(f) => f,
                Err(e) => {
                    self.sender = None;
                    return Err(self.transport(&e));
                }
            };
            if let Ok(data) = frame.into_data()
                && let Err(over) = parts.push(data, cap)
            {
                cut = Some(over);
                break;
            }
        }
        let bytes = parts.into_vec();
        if let Some(over) = cut {
            // the rest of the body is still coming: this connection is spent
            self.sender = None;
            if status.is_success() {
                return Err(over.error(&self.url, "response body", cap, &self.budget));
            }
        }
        if !status.is_success() {
            return Err(ClientError::Status {
                url: redact_url(&self.url),
                status: status.as_u16(),
                body_excerpt: scrub(
                    self.key.as_ref(),
                    excerpt(&String::from_utf8_lossy(&bytes), 300),
                ),
                retry_after_s,
            });
        }
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode {
            endpoint: self.path.to_string(),
            excerpt: scrub(
                self.key.as_ref(),
                excerpt(&String::from_utf8_lossy(&bytes), 200),
            ),
            source,
        })
    }

    /// POSTs an already serialised JSON body and decodes the answer as `T`
    /// (unknown keys skipped unless `T` keeps them), within the client's
    /// generation timeout (whole exchange, seconds as configured).
    ///
    /// Errors: [`ClientError::Connect`] (cannot connect),
    /// [`ClientError::Timeout`] (connect or total timeout),
    /// [`ClientError::Transport`] (connection broken mid-exchange),
    /// [`ClientError::Status`] (non-2xx, with `Retry-After` when sent),
    /// [`ClientError::Decode`] (the body is not a `T`). After any error
    /// other than `Status` and `Decode` the next call opens a new connection.
    pub async fn post_json<T: DeserializeOwned>(
        &mut self,
        body: bytes::Bytes,
    ) -> Result<T, ClientError> {
        let limit = self.total_timeout;
        match tokio::time::timeout(limit, self.post_inner(body)).await {
            Ok(r) => {
                if matches!(
                    r,
                    Err(ClientError::Transport { .. } | ClientError::Connect { .. })
                ) {
                    self.sender = None;
                }
                r
            }
            Err(_) => {
                // the connection is mid-exchange: drop it
                self.sender = None;
                Err(ClientError::Timeout {
                    url: redact_url(&self.url),
                })
            }
        }
    }
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    fn budget(limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            limit,
        })
    }

    #[test]
    fn bodies_are_joined_whole_and_their_budget_given_back() {
        let b = budget(1 << 20);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut p = Parts::new(b.clone(), None);
        for c in data.chunks(7_000) {
            p.push(bytes::Bytes::copy_from_slice(c), 1 << 20).unwrap();
        }
        assert!(p.blocks.iter().all(|x| x.capacity() <= MAX_BLOCK));
        assert_eq!(b.used.load(Ordering::Relaxed), 200_000);
        assert_eq!(p.into_vec(), data);
        assert_eq!(b.used.load(Ordering::Relaxed), 0);

        // A declared small body is one exact block, handed over without a copy.
        let mut p = Parts::new(b.clone(), Some(450));
        p.push(bytes::Bytes::from(vec![b'x'; 450]), 1 << 20)
            .unwrap();
        let v = p.into_vec();
        assert_eq!((v.len(), v.capacity()), (450, 450));
    }

    #[test]
    fn the_body_cap_and_the_shared_budget_are_both_enforced() {
        let b = budget(100);
        let mut p = Parts::new(b.clone(), None);
        assert!(matches!(
            p.push(bytes::Bytes::from(vec![0; 60]), 50),
            Err(Over::Body)
        ));
        p.push(bytes::Bytes::from(vec![0; 60]), 1000).unwrap();
        let mut q = Parts::new(b.clone(), None);
        assert!(matches!(
            q.push(bytes::Bytes::from(vec![0; 60]), 1000),
            Err(Over::Budget)
        ));
        drop(p);
        q.push(bytes::Bytes::from(vec![0; 60]), 1000).unwrap();
        drop(q);
        assert_eq!(b.used.load(Ordering::Relaxed), 0);
    }
}

#[cfg(test)]
mod url_secret_tests {
    #[test]
    fn the_password_and_its_basic_auth_token_are_secrets() {
        // base64("bob:hunter2") = Ym9iOmh1bnRlcjI=
        let s = super::url_secrets("http://bob:hunter2@127.0.0.1:30000");
        assert!(s.contains(&"Ym9iOmh1bnRlcjI=".to_string()), "{s:?}");
        assert!(s.contains(&"hunter2".to_string()), "{s:?}");
        assert!(super::url_secrets("http://127.0.0.1:30000").is_empty());
        // percent-escaped passwords are decoded before encoding: base64("bob:p@ss")
        assert_eq!(
            super::url_secrets("http://bob:p%40ss@h:1")
                .first()
                .map(String::as_str),
            Some("Ym9iOnBAc3M=")
        );
    }
}
