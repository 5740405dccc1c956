//! A simulated SGLang server for tests and benchmarks.
//!
//! It serves the endpoints `throughput-doctor` talks to (`/health`,
//! `/health_generate`, `/server_info`, `/get_server_info`, `/model_info`,
//! `/get_model_info`, `/metrics`, `/generate`, `/v1/chat/completions`,
//! `/v1/completions`, streaming and not, `/v1/models`) with SGLang's response shapes
//! (`sglang-observables.md` §3–§4 and a real `/metrics` dump), and the
//! sampling parameters that decide an answer's length: `max_tokens`,
//! `min_tokens` and `ignore_eos` (an answer otherwise ends where the
//! modelled end of sequence falls, as a real model's does).
//!
//! Two modes ([`Mode`]):
//! * [`Mode::Scheduled`]: a continuous-batching model after
//!   `tools/sim_sglang_scenario.py`: a KV token pool of `kv_tokens`,
//!   admission that reserves `new_token_ratio` × the remaining
//!   `max_new_tokens` for running requests, a queue when the pool is full,
//!   retraction when it overflows, and a decode step time
//!   `0.026 + 0.00052·running + 9e-8·kv_tokens` s (× `time_scale`), so the
//!   per-request token rate falls as concurrency rises. Prefill costs
//!   `0.015 + 2.5e-6·new_tokens` s. It can append SGLang-format
//!   `Prefill batch` / `Decode batch` lines to a log file.
//!   Its timestamps and the rates its lines print (`gen throughput`, tokens
//!   since the last decode line over the wall-clock seconds since it, as
//!   SGLang computes it; `input throughput`) are on the wall clock, the
//!   client's, whatever `time_scale` is; `/metrics`' durations (latency
//!   histograms, forward and idle seconds) are the model's seconds
//!   (wall ÷ `time_scale`).
//! * [`Mode::NearZero`]: no scheduler; every request is answered at once
//!   with a fixed completion, for client load tests and benchmarks.
//!
//! Faults ([`FaultConfig`]) are drawn per generation request from a seeded
//! RNG: HTTP 500, HTTP 429, a slow first byte, a connection reset in the
//! middle of the body, malformed JSON.
//!
//! A fleet ([`spawn_fleet`]) is several simulators at once, each on its own
//! port with its own configuration ([`SimConfig::kv_bound`],
//! [`SimConfig::running_cap_bound`], [`SimConfig::nearly_idle`]), each
//! driven by a built-in client ([`LoadConfig`]) and labelling its series
//! with `instance="127.0.0.1:PORT"` and, with `dp_size` > 1, `dp_rank`.
//!
//! Numbers are a model, not a measurement.
#![deny(missing_docs)]

mod answer;
mod engine;
mod http;
mod logfmt;
mod metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The context length the simulated model reports (`context_len` in its startup line,
/// `max_model_len` in `/v1/models`), tokens.
pub(crate) const CONTEXT_LEN: u64 = 262_144;

/// How requests are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Continuous batching over a KV pool (see the crate docs).
    Scheduled,
    /// Answer at once with `completion_tokens_mean` tokens.
    NearZero,
}

/// Fault injection, per generation request. Probabilities are in [0, 1] and
/// are tried in the order listed; at most one fault hits a request.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// HTTP 500 with an SGLang-style error body.
    pub p_500: f64,
    /// HTTP 429 (with `Retry-After: retry_after_s` when set).
    pub p_429: f64,
    /// 200 with a body that is not valid JSON (truncated object; in streams
    /// a truncated `data:` event).
    pub p_malformed_json: f64,
    /// 200, part of the body, then the connection is aborted.
    pub p_reset_mid_stream: f64,
    /// Wait `slow_first_byte` before answering.
    pub p_slow_first_byte: f64,
    /// Delay of a slow first byte (not scaled).
    pub slow_first_byte: Duration,
    /// `Retry-After` header value for 429s, seconds.
    pub retry_after_s: Option<u32>,
    /// RNG seed.
    pub seed: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            p_500: 0.0,
            p_429: 0.0,
            p_malformed_json: 0.0,
            p_reset_mid_stream: 0.0,
            p_slow_first_byte: 0.0,
            slow_first_byte: Duration::from_millis(200),
            retry_after_s: None,
            seed: 7,
        }
    }
}

/// Simulator settings.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Port on 127.0.0.1 (0 = pick a free one).
    pub port: u16,
    /// Serving mode.
    pub mode: Mode,
    /// Reported `model_path` / `model_name` label.
    pub model: String,
    /// Reported SGLang `version`.
    pub version: String,
    /// KV pool capacity, tokens (`max_total_num_tokens`).
    pub kv_tokens: u64,
    /// Most requests decoding at once.
    pub max_running_requests: usize,
    /// Multiplier on every modelled duration (1.0 = the model's seconds;
    /// 0.01 makes a 26 ms decode step take 0.26 ms).
    pub time_scale: f64,
    /// Mean completion length, tokens (lognormal, σ = 0.3; capped by the
    /// request's `max_tokens`). In [`Mode::NearZero`] the exact length.
    pub completion_tokens_mean: u32,
    /// `max_tokens` when a request gives none.
    pub default_max_tokens: u32,
    /// Prompt characters per token (prompt tokens = chars / this, at least 1).
    pub chars_per_token: u32,
    /// Put the first quarter of each answer in `reasoning_content` (chat).
    pub reasoning: bool,
    /// Decode passes between `Decode batch` lines and gauge updates (SGLang's
    /// `decode_log_interval`, default 40).
    pub decode_log_interval: u64,
    /// Append SGLang-format scheduler lines to this file.
    pub log_path: Option<PathBuf>,
    /// Require `Authorization: Bearer <key>` on every endpoint but `/health`.
    pub api_key: Option<String>,
    /// Serve only the pre-v0.5.6 names `/get_server_info` and
    /// `/get_model_info` (the new ones answer 404).
    pub legacy_endpoints_only: bool,
    /// Fault injection.
    pub faults: FaultConfig,
    /// Seed of the completion-length RNG.
    pub seed: u64,
    /// Data-parallel ranks: one scheduler (KV pool of `kv_tokens`, running
    /// cap of `max_running_requests`) per rank, requests dealt round robin;
    /// `/metrics` then labels scheduler series with `dp_rank`.
    pub dp_size: u32,
    /// Label every `/metrics` series with `instance="127.0.0.1:PORT"`
    /// (the bound address), as a fleet member does.
    pub instance_label: bool,
    /// A built-in client that keeps requests in flight (none: only HTTP
    /// requests are served).
    pub load: Option<LoadConfig>,
    /// Which SGLang names `/metrics` uses ([`MetricsGeneration`]).
    pub metrics_generation: MetricsGeneration,
    /// Export what `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1` adds: forward-pass seconds
    /// counted (else declared and zero) and `sglang:fwd_occupancy` a number while busy.
    pub device_timer: bool,
}

/// The generation of SGLang `/metrics` names the simulator writes (`--metrics-generation`).
///
/// Both carry the same figures; only the names and labels differ, as between the
/// collectors of SGLang v0.5.9 (`python/sglang/srt/metrics/collector.py`) and main
/// (`python/sglang/srt/observability/metrics_collector.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsGeneration {
    /// v0.5.9: `sglang:cache_config_info{page_size,num_pages}` (a gauge at 1),
    /// `sglang:gpu_execution_seconds_total{category}` and
    /// `sglang:gpu_overlap_wait_seconds_total{category}` (device timer), tokenizer series
    /// without `is_streaming`.
    Old,
    /// main: `sglang:page_size` and `sglang:num_pages` gauges,
    /// `sglang:forward_execution_seconds_total{category}`, `sglang:fwd_occupancy` (NaN when
    /// idle), `sglang:scheduler_idle_seconds_total`, `sglang:scheduler_process_cpu_seconds_total`,
    /// `sglang:scheduler_stage_seconds_total{category}`,
    /// `sglang:prefill_effective_tokens_total{mode}`, and the tokenizer's counters and
    /// TTFT / end-to-end histograms split by `is_streaming`.
    #[default]
    New,
}

impl std::str::FromStr for MetricsGeneration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "old" => Ok(Self::Old),
            "new" => Ok(Self::New),
            _ => Err(format!("{s:?}: expected old or new")),
        }
    }
}

/// A built-in closed-loop client: `concurrency` requests in flight at all
/// times, each with `prompt_tokens` and exactly `output_tokens` to generate.
/// Requests go straight to the schedulers (no HTTP), and are counted in
/// `sglang:num_requests_total` and the latency histograms like HTTP ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadConfig {
    /// Requests in flight.
    pub concurrency: usize,
    /// Prompt length, tokens.
    pub prompt_tokens: u64,
    /// Completion length, tokens (also the request's `max_new_tokens`).
    pub output_tokens: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            port: 0,
            mode: Mode::Scheduled,
            model: "sim/Kimi-K2.5-sim".into(),
            version: "0.5.8".into(),
            kv_tokens: 116_171,
            max_running_requests: 4096,
            time_scale: 0.01,
            completion_tokens_mean: 32,
            default_max_tokens: 16384,
            chars_per_token: 4,
            reasoning: false,
            decode_log_interval: 40,
            log_path: None,
            api_key: None,
            legacy_endpoints_only: false,
            faults: FaultConfig::default(),
            seed: 1,
            dp_size: 1,
            instance_label: false,
            load: None,
            metrics_generation: MetricsGeneration::New,
            device_timer: false,
        }
    }
}

impl SimConfig {
    /// A fleet member whose KV pool is the limit: a 24,000-token pool,
    /// 128 requests of 600 + 600 tokens in flight (≈ 154,000 tokens wanted),
    /// so the pool stays near full while requests queue.
    pub fn kv_bound() -> Self {
        SimConfig {
            kv_tokens: 24_000,
            max_running_requests: 4096,
            time_scale: 0.05,
            instance_label: true,
            load: Some(LoadConfig {
                concurrency: 128,
                prompt_tokens: 600,
                output_tokens: 600,
            }),
            ..Default::default()
        }
    }

    /// A fleet member pinned at its running cap: `max_running_requests` 16,
    /// 64 requests in flight, a pool (400,000 tokens) that stays almost empty.
    pub fn running_cap_bound() -> Self {
        SimConfig {
            kv_tokens: 400_000,
            max_running_requests: 16,
            time_scale: 0.05,
            instance_label: true,
            load: Some(LoadConfig {
                concurrency: 64,
                prompt_tokens: 300,
                output_tokens: 300,
            }),
            ..Default::default()
        }
    }

    /// A nearly idle fleet member: 2 requests in flight on a large pool;
    /// the client, not the server, sets the pace.
    pub fn nearly_idle() -> Self {
        SimConfig {
            kv_tokens: 400_000,
            max_running_requests: 4096,
            time_scale: 0.05,
            instance_label: true,
            load: Some(LoadConfig {
                concurrency: 2,
                prompt_tokens: 300,
                output_tokens: 300,
            }),
            ..Default::default()
        }
    }

    /// Near-zero-latency settings for load tests and benchmarks: 8 tokens
    /// per answer, no scheduler, no faults.
    pub fn near_zero() -> Self {
        SimConfig {
            mode: Mode::NearZero,
            completion_tokens_mean: 8,
            ..Default::default()
        }
    }
}

/// Counters of what the simulator did (for test assertions).
#[derive(Debug, Default)]
pub struct SimStats {
    /// Generation requests received (including faulted ones).
    pub requests: AtomicU64,
    /// Requests answered in full.
    pub completed: AtomicU64,
    /// Injected HTTP 500s.
    pub injected_500: AtomicU64,
    /// Injected HTTP 429s.
    pub injected_429: AtomicU64,
    /// Injected malformed JSON bodies.
    pub injected_malformed: AtomicU64,
    /// Injected connection resets.
    pub injected_reset: AtomicU64,
    /// Injected slow first bytes.
    pub injected_slow: AtomicU64,
    /// Retractions done by the scheduler.
    pub retractions: AtomicU64,
    /// Highest number of requests waiting in the queue at once.
    pub max_queue: AtomicU64,
}

impl SimStats {
    /// Reads one counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// Errors of [`spawn`].
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The listening socket could not be bound, or the log file opened.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A running simulator. Dropping it without [`SimHandle::shutdown`] leaves
/// the server running until the runtime stops.
#[derive(Debug)]
pub struct SimHandle {
    /// Bound address (127.0.0.1 and the port).
    pub addr: SocketAddr,
    /// What the simulator did so far.
    pub stats: Arc<SimStats>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
    engines: Vec<JoinHandle<()>>,
    load: Vec<JoinHandle<()>>,
}

impl SimHandle {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting connections, waits for the server task, stops the
    /// scheduler.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.server.take() {
            // In-flight streams are cut by aborting after a short wait.
            if tokio::time::timeout(Duration::from_secs(2), s)
                .await
                .is_err()
            {
                // ok: the task is dropped with the runtime.
            }
        }
        for l in self.load.drain(..) {
            l.abort();
        }
        for e in self.engines.drain(..) {
            e.abort();
        }
    }

    /// Waits until the server stops (e.g. for the standalone binary).
    pub async fn wait(mut self) {
        if let Some(s) = self.server.take() {
            let _ = s.await;
        }
    }
}

/// Starts the simulator on 127.0.0.1 (`cfg.port`, 0 = random) inside the
/// current tokio runtime.
///
/// Errors: [`SimError::Io`] when the port cannot be bound or the log file
/// cannot be opened for appending.
pub async fn spawn(cfg: SimConfig) -> Result<SimHandle, SimError> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", cfg.port)).await?;
    let addr = listener.local_addr()?;
    let stats = Arc::new(SimStats::default());
    let load_cfg = cfg.load;
    let label = cfg.instance_label;
    let state = http::AppState::new(cfg, stats.clone())?;
    if label {
        let mut g = match state.instance.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *g = Some(addr.to_string());
    }
    let engines = state
        .engines
        .iter()
        .map(|e| tokio::spawn(e.clone().run()))
        .collect();
    let load = match load_cfg {
        Some(l) if !state.engines.is_empty() => (0..l.concurrency)
            .map(|_| tokio::spawn(client_loop(state.clone(), l)))
            .collect(),
        _ => Vec::new(),
    };
    let app = http::router(state);
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await;
    });
    Ok(SimHandle {
        addr,
        stats,
        shutdown: Some(tx),
        server: Some(server),
        engines,
        load,
    })
}

/// Starts one simulator per configuration (each on its own port).
///
/// Errors: the first [`SimError`]; the simulators already started are shut down.
pub async fn spawn_fleet(cfgs: Vec<SimConfig>) -> Result<Vec<SimHandle>, SimError> {
    let mut out = Vec::with_capacity(cfgs.len());
    for c in cfgs {
        match spawn(c).await {
            Ok(h) => out.push(h),
            Err(e) => {
                for h in out {
                    h.shutdown().await;
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// One slot of the built-in client: submit, wait for the last token, repeat. Every other
/// request of a slot is counted as streamed, so both `is_streaming` series exist.
async fn client_loop(state: std::sync::Arc<http::AppState>, l: LoadConfig) {
    let scale = state.cfg.time_scale.max(1e-9);
    let mut streamed = false;
    loop {
        let Some(engine) = state.engine() else { return };
        streamed = !streamed;
        let start = std::time::Instant::now();
        let mut rx = engine.submit_as(
            l.prompt_tokens.max(1),
            l.output_tokens.max(1),
            l.output_tokens.max(1),
            streamed,
        );
        state
            .metrics
            .num_requests_total
            .fetch_add(1, Ordering::Relaxed);
        if streamed {
            state
                .metrics
                .streamed_requests
                .fetch_add(1, Ordering::Relaxed);
        }
        let mut first = true;
        while rx.recv().await.is_some() {
            if first {
                state
                    .metrics
                    .ttft_of(streamed)
                    .observe(start.elapsed().as_secs_f64() / scale);
                first = false;
            }
        }
        state
            .metrics
            .e2e_of(streamed)
            .observe(start.elapsed().as_secs_f64() / scale);
    }
}

/// The `/metrics` text of a fixed state in one generation of names, for tests that hold
/// the generations' figures equal: two DP ranks of a 24,000-token pool, 40 and 20 requests
/// running, 8 queued, 9,000 tokens generated over 30 requests (12 streamed), 50 s of
/// decode and 2.5 s of prefill passes, 7.5 s idle on rank 0.
pub fn sample_exposition(generation: MetricsGeneration, device_timer: bool) -> String {
    use std::sync::Arc;
    let tok = metrics::Metrics::new();
    tok.num_requests_total.store(30, Ordering::Relaxed);
    tok.streamed_requests.store(12, Ordering::Relaxed);
    for (i, t) in [0.15, 0.3, 0.5, 0.9, 1.5, 3.0].iter().enumerate() {
        tok.ttft_of(i % 2 == 0).observe(*t);
        tok.e2e_of(i % 2 == 0).observe(*t * 20.0);
    }
    let ranks: Vec<Arc<metrics::Metrics>> = (0..2)
        .map(|r| {
            let m = metrics::Metrics::new();
            m.num_running_reqs.set(if r == 0 { 40.0 } else { 20.0 });
            m.num_queue_reqs.set(if r == 0 { 8.0 } else { 0.0 });
            m.token_usage.set(if r == 0 { 0.97 } else { 0.41 });
            m.gen_throughput.set(if r == 0 { 900.0 } else { 450.0 });
            m.generation_tokens_total
                .store(if r == 0 { 6000 } else { 3000 }, Ordering::Relaxed);
            m.streamed_generation_tokens
                .store(if r == 0 { 2400 } else { 1200 }, Ordering::Relaxed);
            m.prompt_tokens_total.store(12_000, Ordering::Relaxed);
            m.realtime_prefill_compute.store(12_000, Ordering::Relaxed);
            m.add_forward(25.0, true);
            m.add_forward(1.25, false);
            if r == 0 {
                m.add_idle(7.5);
            }
            Arc::new(m)
        })
        .collect();
    let info = metrics::RenderInfo {
        model: "sim/model",
        kv_tokens: 24_000,
        instance: None,
        generation,
        device_timer,
    };
    metrics::render(&tok, &ranks, &info)
}
