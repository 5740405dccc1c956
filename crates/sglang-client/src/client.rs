//! [`SglangClient`]: one `reqwest::Client` with connect and total timeouts,
//! typed calls for the info, metrics and generation endpoints.

use std::fmt;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::stream::{BoxStream, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::api::{ChatCompletion, Completion, GenerateResponse};
use crate::error::{ClientError, excerpt, redact_url};
use crate::info::{ModelInfo, ServerInfo};
use crate::metrics::MetricsSnapshot;

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
}

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
    /// body (default 3600 s: long reasoning answers at low tok/s take minutes).
    pub generate_timeout: Duration,
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
            generate_timeout: Duration::from_secs(3600),
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

/// Typed client for one SGLang server. Cheap to clone (the inner
/// `reqwest::Client` is reference counted and shares its connection pool).
#[derive(Debug, Clone)]
pub struct SglangClient {
    http: reqwest::Client,
    cfg: ClientConfig,
}

fn map_reqwest(e: reqwest::Error, url: &str) -> ClientError {
    let url = redact_url(url);
    if e.is_timeout() {
        return ClientError::Timeout { url };
    }
    if e.is_connect() {
        return ClientError::Connect { url };
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
        Ok(SglangClient { http, cfg })
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
        let body = resp.text().await.unwrap_or_default();
        Err(ClientError::Status {
            url: redact_url(url),
            status: status.as_u16(),
            body_excerpt: excerpt(&body, 300),
            retry_after_s,
        })
    }

    async fn get_text(&self, path: &str) -> Result<String, ClientError> {
        let url = self.url(path);
        let resp = self
            .send(self.http.get(&url), &url, self.cfg.info_timeout)
            .await?;
        resp.text().await.map_err(|e| map_reqwest(e, &url))
    }

    async fn get_json(&self, path: &str) -> Result<Value, ClientError> {
        let text = self.get_text(path).await?;
        decode(path, &text)
    }

    /// `GET /health`: Ok when the server answers 2xx.
    /// Errors: [`ClientError::Connect`], [`ClientError::Timeout`], [`ClientError::Status`].
    pub async fn health(&self) -> Result<(), ClientError> {
        self.get_text("/health").await.map(|_| ())
    }

    /// `GET /health_generate`: the server generates one token; Ok on 2xx.
    /// Errors as [`SglangClient::health`].
    pub async fn health_generate(&self) -> Result<(), ClientError> {
        self.get_text("/health_generate").await.map(|_| ())
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
    /// (404 when the server runs without `--enable-metrics`).
    pub async fn metrics_text(&self) -> Result<String, ClientError> {
        self.get_text("/metrics").await
    }

    /// `GET /metrics`, parsed into [`MetricsSnapshot`]; bad lines and
    /// rejected values are in its `problems`.
    ///
    /// Errors as [`SglangClient::health`], and [`ClientError::NoMetrics`]
    /// when the body holds no usable `sglang:` series (HTML, junk).
    pub async fn metrics(&self) -> Result<MetricsSnapshot, ClientError> {
        let m = MetricsSnapshot::parse(&self.metrics_text().await?);
        if !m.has_data() {
            return Err(ClientError::NoMetrics {
                url: crate::error::redact_url(&self.url("/metrics")),
                lines: m.lines,
                problems: m.problems_total,
                first: m
                    .problems
                    .first()
                    .map(|p| format!("; first: {p}"))
                    .unwrap_or_default(),
            });
        }
        Ok(m)
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
        let bytes = resp.bytes().await.map_err(|e| map_reqwest(e, &url))?;
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode {
            endpoint: path.to_string(),
            excerpt: excerpt(&String::from_utf8_lossy(&bytes), 200),
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
        Ok(sse_stream(resp, url, path))
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
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| map_reqwest(e, ep.url.as_str()))?;
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode {
            endpoint: ep.path.to_string(),
            excerpt: excerpt(&String::from_utf8_lossy(&bytes), 200),
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
        Ok(sse_stream(resp, ep.url.to_string(), ep.path))
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

/// Turns an SSE response into a stream of decoded events; ends at `[DONE]`.
fn sse_stream<T: DeserializeOwned + Send + 'static>(
    resp: reqwest::Response,
    url: String,
    endpoint: &'static str,
) -> BoxStream<'static, Result<T, ClientError>> {
    let events = resp.bytes_stream().eventsource();
    futures_util::stream::unfold(
        (Box::pin(events), url, false),
        move |(mut events, url, done)| async move {
            if done {
                return None;
            }
            loop {
                match events.next().await {
                    None => {
                        let err = ClientError::Transport {
                            url: redact_url(&url),
                            detail: "stream ended before data: [DONE]".into(),
                        };
                        return Some((Err(err), (events, url, true)));
                    }
                    Some(Err(e)) => {
                        let detail = match e {
                            eventsource_stream::EventStreamError::Transport(t) => {
                                return Some((Err(map_reqwest(t, &url)), (events, url, true)));
                            }
                            other => other.to_string(),
                        };
                        let err = ClientError::Transport {
                            url: redact_url(&url),
                            detail,
                        };
                        return Some((Err(err), (events, url, true)));
                    }
                    Some(Ok(ev)) => {
                        let data = ev.data.trim();
                        if data.is_empty() {
                            continue;
                        }
                        if data == "[DONE]" {
                            return None;
                        }
                        let item =
                            serde_json::from_str::<T>(data).map_err(|source| ClientError::Decode {
                                endpoint: endpoint.to_string(),
                                excerpt: excerpt(data, 200),
                                source,
                            });
                        let stop = item.is_err();
                        return Some((item, (events, url, stop)));
                    }
                }
            }
        },
    )
    .boxed()
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
            Err(_) => return Err(ClientError::Timeout { url: url() }),
            Ok(Err(_)) => return Err(ClientError::Connect { url: url() }),
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
        let bytes = match resp.into_body().collect().await {
            Ok(c) => c.to_bytes(),
            Err(e) => {
                self.sender = None;
                return Err(self.transport(&e));
            }
        };
        if !status.is_success() {
            return Err(ClientError::Status {
                url: redact_url(&self.url),
                status: status.as_u16(),
                body_excerpt: excerpt(&String::from_utf8_lossy(&bytes), 300),
                retry_after_s,
            });
        }
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode {
            endpoint: self.path.to_string(),
            excerpt: excerpt(&String::from_utf8_lossy(&bytes), 200),
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
