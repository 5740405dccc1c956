//! HTTP endpoints and response shapes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, StreamExt};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

use crate::answer::{
    Kind, Plan, Sampling, json_response, json_response_body, sse_response, unix_now,
};
use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::{Mode, SimConfig, SimError, SimStats};

pub struct AppState {
    pub cfg: Arc<SimConfig>,
    /// One scheduler per DP rank (none in [`Mode::NearZero`]).
    pub engines: Vec<Arc<Engine>>,
    /// Each rank's scheduler metrics.
    ranks: Vec<Arc<Metrics>>,
    /// The tokenizer's metrics (HTTP side).
    pub metrics: Arc<Metrics>,
    /// The `instance` label, once the address is known.
    pub instance: Mutex<Option<String>>,
    next_rank: AtomicU64,
    stats: Arc<SimStats>,
    fault_rng: Mutex<StdRng>,
    len_rng: Mutex<StdRng>,
    next_id: AtomicU64,
}

impl AppState {
    pub fn new(cfg: SimConfig, stats: Arc<SimStats>) -> Result<Arc<Self>, SimError> {
        let cfg = Arc::new(cfg);
        let metrics = Arc::new(Metrics::new());
        let dp = cfg.dp_size.max(1);
        let ranks: Vec<Arc<Metrics>> = match cfg.mode {
            Mode::Scheduled => (0..dp).map(|_| Arc::new(Metrics::new())).collect(),
            Mode::NearZero => vec![metrics.clone()],
        };
        let mut engines = Vec::new();
        if cfg.mode == Mode::Scheduled {
            for (r, m) in ranks.iter().enumerate() {
                let tag = (dp > 1).then_some(r as u32);
                engines.push(Arc::new(Engine::new(
                    cfg.clone(),
                    m.clone(),
                    stats.clone(),
                    tag,
                )?));
            }
        }
        Ok(Arc::new(AppState {
            engines,
            ranks,
            instance: Mutex::new(None),
            next_rank: AtomicU64::new(0),
            fault_rng: Mutex::new(StdRng::seed_from_u64(cfg.faults.seed)),
            len_rng: Mutex::new(StdRng::seed_from_u64(cfg.seed)),
            cfg,
            metrics,
            stats,
            next_id: AtomicU64::new(0),
        }))
    }
}

impl AppState {
    /// The scheduler the next request goes to (round robin over DP ranks,
    /// as SGLang's data-parallel controller does by default).
    pub fn engine(&self) -> Option<&Arc<Engine>> {
        if self.engines.is_empty() {
            return None;
        }
        let n = self.next_rank.fetch_add(1, Ordering::Relaxed) as usize;
        self.engines.get(n % self.engines.len())
    }

    /// The whole `/metrics` text.
    pub fn render_metrics(&self) -> String {
        let inst = match self.instance.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        let tok: &Metrics = &self.metrics;
        let info = crate::metrics::RenderInfo {
            model: &self.cfg.model,
            kv_tokens: self.cfg.kv_tokens,
            instance: inst.as_deref(),
            generation: self.cfg.metrics_generation,
            device_timer: self.cfg.device_timer,
        };
        if self.cfg.mode == Mode::NearZero {
            // One process does it all: its counters are the tokenizer's.
            crate::metrics::render(&Metrics::new(), &self.ranks, &info)
        } else {
            crate::metrics::render(tok, &self.ranks, &info)
        }
    }
}

type S = State<Arc<AppState>>;

pub fn router(state: Arc<AppState>) -> Router {
    let mut r = Router::new()
        .route("/health", get(health))
        .route("/health_generate", get(health_generate))
        .route("/get_server_info", get(server_info))
        .route("/get_model_info", get(model_info))
        .route("/metrics", get(metrics))
        .route("/generate", post(generate))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{*model}", get(model_card));
    if !state.cfg.legacy_endpoints_only {
        r = r
            .route("/server_info", get(server_info))
            .route("/model_info", get(model_info))
            .route("/v1/loads", get(loads));
    }
    r.with_state(state)
}

fn error_json(status: StatusCode, msg: &str) -> Response {
    let body = json!({"object": "error", "message": msg, "type": status.canonical_reason().unwrap_or("Error"), "param": null, "code": status.as_u16()});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn authorized(s: &AppState, headers: &HeaderMap) -> bool {
    match &s.cfg.api_key {
        None => true,
        Some(k) => headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|v| v == k),
    }
}

async fn health() -> Response {
    (StatusCode::OK, "").into_response()
}

async fn health_generate(State(s): S, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    if let Some(e) = s.engine() {
        let mut rx = e.submit(4, 1, 1);
        while rx.recv().await.is_some() {}
    }
    (StatusCode::OK, "").into_response()
}

async fn server_info(State(s): S, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let c = &s.cfg;
    let kv_gb = c.kv_tokens as f64 * 70272.0 / (1u64 << 30) as f64;
    let body = json!({
        "model_path": c.model, "tokenizer_path": c.model, "served_model_name": c.model,
        "tp_size": 8, "dp_size": c.dp_size.max(1), "pp_size": 1, "ep_size": 1, "enable_dp_attention": false,
        "mem_fraction_static": 0.85, "max_total_tokens": null, "chunked_prefill_size": 8192,
        "max_prefill_tokens": 16384, "max_running_requests": c.max_running_requests,
        "max_queued_requests": null, "schedule_policy": "fcfs", "schedule_conservativeness": 1.0,
        "num_continuous_decode_steps": 1, "kv_cache_dtype": "auto", "page_size": 1,
        "context_length": null, "enable_hierarchical_cache": false, "hicache_ratio": 2.0,
        "hicache_size": 0, "disaggregation_mode": "null", "decode_log_interval": c.decode_log_interval,
        "enable_metrics": true, "stream_interval": 1,
        "status": "ready", "max_total_num_tokens": c.kv_tokens, "max_req_input_len": 262138,
        "internal_states": [{
            "last_gen_throughput": s.ranks.iter().map(|m| m.last_gen_throughput.get()).sum::<f64>(),
            "memory_usage": {"weight": 71.2, "kvcache": (kv_gb * 1000.0).round() / 1000.0,
                              "token_capacity": c.kv_tokens, "graph": 1.62},
            "effective_max_running_requests_per_dp": c.max_running_requests,
            "chunked_prefill_size": 8192
        }],
        "version": c.version,
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `/v1/loads` (v0.5.8+): one snapshot per DP rank.
async fn loads(State(s): S, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let c = &s.cfg;
    let now = unix_now();
    let ranks: Vec<Value> = s
        .ranks
        .iter()
        .enumerate()
        .map(|(r, m)| {
            let used = m.num_used_tokens.get();
            let waiting = m.num_queue_reqs.get();
            json!({
                "dp_rank": r, "timestamp": now,
                "num_running_reqs": m.num_running_reqs.get() as u64,
                "num_waiting_reqs": waiting as u64,
                "num_used_tokens": used as u64,
                "num_total_tokens": used as u64,
                "max_total_num_tokens": c.kv_tokens,
                "token_usage": m.token_usage.get(),
                "gen_throughput": m.gen_throughput.get(),
                "cache_hit_rate": 0.0, "utilization": 0.0,
                "max_running_requests": c.max_running_requests,
                "queues": {"waiting": waiting as u64, "grammar": 0, "paused": 0, "retracted": 0},
            })
        })
        .collect();
    let body = json!({ "timestamp": now, "dp_rank_count": ranks.len(), "loads": ranks });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn model_info(State(s): S, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let body = json!({"model_path": s.cfg.model, "tokenizer_path": s.cfg.model, "is_generation": true,
                      "preferred_sampling_params": null, "weight_version": "default"});
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// One model card of `/v1/models`, as SGLang's `ModelCard` (`entrypoints/openai/protocol.py`)
/// serialises it for the served model.
fn card(model: &str) -> Value {
    json!({"id": model, "object": "model", "created": unix_now() as u64, "owned_by": "sglang",
           "root": model, "parent": null, "max_model_len": crate::CONTEXT_LEN})
}

/// `/v1/models`: the served model (SGLang's `available_models`; no LoRA adapters here).
async fn models(State(s): S, headers: HeaderMap) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    json_response(json!({"object": "list", "data": [card(&s.cfg.model)]}).to_string())
}

/// `/v1/models/{model}`: the served model's card, else SGLang's 404 (`retrieve_model`).
async fn model_card(
    State(s): S,
    axum::extract::Path(model): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    if model != s.cfg.model {
        let body = json!({"error": {"message": format!("The model '{model}' does not exist"),
                          "type": "invalid_request_error", "param": "model", "code": "model_not_found"}});
        let mut r = json_response(body.to_string());
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    json_response(card(&model).to_string())
}

async fn metrics(State(s): S) -> Response {
    let text = s.render_metrics();
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn generate(st: S, headers: HeaderMap, body: Bytes) -> Response {
    handle(st, headers, body, Kind::Generate).await
}
async fn chat(st: S, headers: HeaderMap, body: Bytes) -> Response {
    handle(st, headers, body, Kind::Chat).await
}
async fn completions(st: S, headers: HeaderMap, body: Bytes) -> Response {
    handle(st, headers, body, Kind::Completions).await
}

fn text_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(text_len).sum(),
        Value::Object(m) => m
            .get("content")
            .or_else(|| m.get("text"))
            .map(text_len)
            .unwrap_or(0),
        _ => 0,
    }
}

enum Fault {
    None,
    E500,
    E429,
    Malformed,
    Reset,
}

async fn handle(State(s): S, headers: HeaderMap, body: Bytes, kind: Kind) -> Response {
    if !authorized(&s, &headers) {
        return error_json(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let req: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error_json(StatusCode::BAD_REQUEST, &format!("invalid JSON body: {e}")),
    };
    let cfg = &s.cfg;
    let chars = match kind {
        Kind::Chat => req.get("messages").map(text_len).unwrap_or(0),
        Kind::Completions => req.get("prompt").map(text_len).unwrap_or(0),
        Kind::Generate => req.get("text").map(text_len).unwrap_or(0),
    };
    let sampling = Sampling::of(&req, kind);
    let max_new = sampling
        .max_new
        .unwrap_or(cfg.default_max_tokens as u64)
        .max(1);
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = req
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    s.stats.requests.fetch_add(1, Ordering::Relaxed);

    // Fault draw.
    let (fault, slow) = {
        let f = &cfg.faults;
        let mut rng = match s.fault_rng.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let x: f64 = rng.random();
        let mut acc = 0.0;
        let mut pick = Fault::None;
        for (p, fault) in [
            (f.p_500, Fault::E500),
            (f.p_429, Fault::E429),
            (f.p_malformed_json, Fault::Malformed),
            (f.p_reset_mid_stream, Fault::Reset),
        ] {
            acc += p;
            if x < acc {
                pick = fault;
                break;
            }
        }
        let slow = f.p_slow_first_byte > 0.0 && rng.random::<f64>() < f.p_slow_first_byte;
        (pick, slow)
    };
    if slow {
        s.stats.injected_slow.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(cfg.faults.slow_first_byte).await;
    }
    let n = s.next_id.fetch_add(1, Ordering::Relaxed);
    let id = format!("sim-{n}");
    match fault {
        Fault::None => {}
        Fault::E500 => {
            s.stats.injected_500.fetch_add(1, Ordering::Relaxed);
            return error_json(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal server error (injected by sglang-sim)",
            );
        }
        Fault::E429 => {
            s.stats.injected_429.fetch_add(1, Ordering::Relaxed);
            let mut r = error_json(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests (injected by sglang-sim)",
            );
            if let Some(ra) = cfg.faults.retry_after_s {
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(ra));
            }
            return r;
        }
        Fault::Malformed => {
            s.stats.injected_malformed.fetch_add(1, Ordering::Relaxed);
            let bad = format!(
                "{{\"id\": \"{id}\", \"object\": \"chat.completion\", \"choices\": [{{\"index\": 0, \"message\": {{\"content\": \"trunc"
            );
            return if stream {
                sse_response(Body::from(format!("data: {bad}\n\ndata: [DONE]\n\n")))
            } else {
                json_response(bad)
            };
        }
        Fault::Reset => {
            s.stats.injected_reset.fetch_add(1, Ordering::Relaxed);
            let part = if stream {
                format!(
                    "data: {{\"id\": \"{id}\", \"choices\": []}}\n\ndata: {{\"id\": \"{id}\", \"cho"
                )
            } else {
                format!("{{\"id\": \"{id}\", \"choices\": [{{\"index\": 0, \"mess")
            };
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from(part)),
                Err(std::io::Error::other(
                    "connection reset (injected by sglang-sim)",
                )),
            ];
            let body = Body::from_stream(stream::iter(chunks));
            return if stream {
                sse_response(body)
            } else {
                json_response_body(body)
            };
        }
    }

    let prompt_tokens = (chars as u64 / cfg.chars_per_token.max(1) as u64).max(1);
    // Where the model would emit its end of sequence; `ignore_eos` and `min_tokens` decide
    // whether the answer ends there (the draw is made either way, so that one request's
    // `ignore_eos` leaves the lengths of the others as they were).
    let natural = match cfg.mode {
        Mode::NearZero => cfg.completion_tokens_mean as u64,
        Mode::Scheduled => {
            let mean = cfg.completion_tokens_mean.max(1) as f64;
            let sigma = 0.3f64;
            let mu = mean.ln() - sigma * sigma / 2.0;
            let (u1, u2): (f64, f64) = {
                let mut rng = match s.len_rng.lock() {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
                (rng.random(), rng.random())
            };
            // Box–Muller normal draw.
            let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (mu + sigma * z).exp().round() as u64
        }
    };
    let target = sampling.length(max_new, natural);
    let reasoning_tokens = if cfg.reasoning && kind == Kind::Chat {
        target / 4
    } else {
        0
    };
    let plan = Plan {
        kind,
        id,
        model: req
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&cfg.model)
            .to_string(),
        prompt_tokens,
        max_new,
        target,
        reasoning_tokens,
        stream,
        include_usage,
    };
    s.metrics.num_requests_total.fetch_add(1, Ordering::Relaxed);
    if stream {
        s.metrics.streamed_requests.fetch_add(1, Ordering::Relaxed);
    }

    match s.engine() {
        None => {
            // Near-zero latency: everything at once.
            s.metrics
                .prompt_tokens_total
                .fetch_add(prompt_tokens, Ordering::Relaxed);
            s.metrics
                .generation_tokens_total
                .fetch_add(target, Ordering::Relaxed);
            if stream {
                s.metrics
                    .streamed_prompt_tokens
                    .fetch_add(prompt_tokens, Ordering::Relaxed);
                s.metrics
                    .streamed_generation_tokens
                    .fetch_add(target, Ordering::Relaxed);
            }
            s.metrics.ttft_of(stream).observe(0.0);
            s.metrics.e2e_of(stream).observe(0.0);
            s.stats.completed.fetch_add(1, Ordering::Relaxed);
            if plan.stream {
                let mut out = plan.head_event().unwrap_or_default();
                for i in 0..target {
                    out.push_str(&plan.token_event(i));
                }
                out.push_str(&plan.tail_events(target, 0.0));
                sse_response(Body::from(out))
            } else {
                json_response(plan.full_body(target, 0.0))
            }
        }
        Some(engine) => {
            let start = Instant::now();
            let rx = engine.submit_as(prompt_tokens, max_new, target, stream);
            let scale = cfg.time_scale.max(1e-9);
            let state = s.clone();
            if plan.stream {
                let head = plan.head_event();
                let plan = Arc::new(plan);
                let st = StreamState {
                    rx,
                    produced: 0,
                    last: start,
                    done: false,
                };
                let tokens = stream::unfold(st, move |mut st| {
                    let plan = plan.clone();
                    let state = state.clone();
                    async move {
                        if st.done {
                            return None;
                        }
                        match st.rx.recv().await {
                            Some(()) => {
                                let now = Instant::now();
                                let gap = (now - st.last).as_secs_f64() / scale;
                                if st.produced == 0 {
                                    state.metrics.ttft_of(true).observe(gap);
                                } else {
                                    state.metrics.itl.observe(gap);
                                }
                                st.last = now;
                                let ev = plan.token_event(st.produced);
                                st.produced += 1;
                                Some((Ok::<Bytes, std::io::Error>(Bytes::from(ev)), st))
                            }
                            None => {
                                st.done = true;
                                let e2e = (Instant::now() - start).as_secs_f64() / scale;
                                state.metrics.e2e_of(true).observe(e2e);
                                if st.produced >= plan.target {
                                    state.stats.completed.fetch_add(1, Ordering::Relaxed);
                                }
                                Some((Ok(Bytes::from(plan.tail_events(st.produced, e2e))), st))
                            }
                        }
                    }
                });
                let head = stream::iter(head.map(|h| Ok(Bytes::from(h))));
                sse_response(Body::from_stream(head.chain(tokens)))
            } else {
                let mut rx = rx;
                let mut produced = 0u64;
                let mut last = start;
                while rx.recv().await.is_some() {
                    let now = Instant::now();
                    let gap = (now - last).as_secs_f64() / scale;
                    if produced == 0 {
                        s.metrics.ttft_of(false).observe(gap);
                    } else {
                        s.metrics.itl.observe(gap);
                    }
                    last = now;
                    produced += 1;
                }
                let e2e = (Instant::now() - start).as_secs_f64() / scale;
                s.metrics.e2e_of(false).observe(e2e);
                if produced >= plan.target {
                    s.stats.completed.fetch_add(1, Ordering::Relaxed);
                }
                json_response(plan.full_body(produced, e2e))
            }
        }
    }
}

struct StreamState {
    rx: tokio::sync::mpsc::UnboundedReceiver<()>,
    produced: u64,
    last: Instant,
    done: bool,
}
