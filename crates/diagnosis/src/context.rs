//! Evidence beyond the logs: the server's own view, GPU memory, the model's geometry and the
//! client's records. Each is optional; a missing one narrows the report and is named in
//! `not_concluded`.
//!
//! The binary converts what `sglang-client` and `gpu-probe` return into these plain values, so
//! this crate stays free of HTTP and NVML.

use serde::Serialize;

use sglang_log::ClientEvidence;

// What the user expects (`--expect`): defined with the report, which states it back.
pub use crate::report::Expectation;

/// What the server said about itself (`/server_info` or `/get_server_info`, live or saved).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerFacts {
    /// Where it came from: a URL or a file path.
    pub source: String,
    /// SGLang version.
    pub version: Option<String>,
    /// `model_path`.
    pub model_path: Option<String>,
    /// `tp_size`.
    pub tp_size: Option<u32>,
    /// `dp_size`.
    pub dp_size: Option<u32>,
    /// `enable_dp_attention`.
    pub enable_dp_attention: Option<bool>,
    /// `mem_fraction_static` (resolved).
    pub mem_fraction_static: Option<f64>,
    /// `max_total_num_tokens` (tokens per DP rank).
    pub max_total_num_tokens: Option<u64>,
    /// `max_running_requests`.
    pub max_running_requests: Option<u64>,
    /// `chunked_prefill_size` (tokens; −1 = off).
    pub chunked_prefill_size: Option<i64>,
    /// `kv_cache_dtype`.
    pub kv_cache_dtype: Option<String>,
    /// `enable_hierarchical_cache`.
    pub enable_hierarchical_cache: Option<bool>,
    /// `hicache_ratio`.
    pub hicache_ratio: Option<f64>,
    /// `hicache_size` (GB per rank; 0 = use the ratio).
    pub hicache_size_gb: Option<f64>,
    /// `page_size` (tokens).
    pub page_size: Option<u32>,
    /// Σ `internal_states[].last_gen_throughput` (tok/s).
    pub last_gen_throughput: Option<f64>,
}

/// One GPU's memory (bytes).
#[derive(Clone, Debug, Default, Serialize)]
pub struct GpuMemory {
    /// Device index.
    pub index: u32,
    /// Product name.
    pub name: String,
    /// Total memory, bytes.
    pub total_bytes: u64,
    /// Free memory, bytes.
    pub free_bytes: Option<u64>,
}

/// GPU memory from NVML or a copied `nvidia-smi` output.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GpuFacts {
    /// `NVML`, or the file path.
    pub source: String,
    /// Devices.
    pub devices: Vec<GpuMemory>,
}

impl GpuFacts {
    /// Smallest total memory over devices (bytes): the rank that bounds SGLang's `pre`.
    pub fn min_total_bytes(&self) -> Option<u64> {
        self.devices.iter().map(|d| d.total_bytes).min()
    }
    /// Smallest free memory over devices (bytes).
    pub fn min_free_bytes(&self) -> Option<u64> {
        self.devices.iter().filter_map(|d| d.free_bytes).min()
    }
}

/// A model's geometry and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct ModelFacts {
    /// File path.
    pub source: String,
    /// The parsed `config.json`.
    pub config: kv_capacity::ModelConfig,
}

/// One poll of the server's `/metrics` (values summed over DP ranks where they add up).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct MetricsSample {
    /// When it was taken (Unix seconds).
    pub t: f64,
    /// `sglang:num_running_reqs` (requests).
    pub running: Option<f64>,
    /// `sglang:num_queue_reqs` (requests).
    pub queued: Option<f64>,
    /// `sglang:token_usage` (fraction; the highest over ranks).
    pub token_usage: Option<f64>,
    /// `sglang:gen_throughput` (tok/s).
    pub gen_throughput: Option<f64>,
    /// `sglang:generation_tokens_total` (tokens, counter).
    pub generation_tokens_total: Option<f64>,
    /// `sglang:num_requests_total` (requests, counter).
    pub num_requests_total: Option<f64>,
    /// Median TTFT from the histogram (seconds).
    pub ttft_p50_s: Option<f64>,
    /// 90th percentile TTFT (seconds).
    pub ttft_p90_s: Option<f64>,
    /// Median inter-token latency (seconds).
    pub itl_p50_s: Option<f64>,
    /// Median end-to-end latency (seconds).
    pub e2e_p50_s: Option<f64>,
    /// `sglang:scheduler_idle_seconds_total` summed over schedulers (seconds, counter;
    /// `observability/metrics_collector.py`, SGLang PR #37461).
    pub scheduler_idle_seconds_total: Option<f64>,
    /// `sglang:scheduler_process_cpu_seconds_total` summed over schedulers (CPU seconds,
    /// counter; PR #37461).
    pub scheduler_cpu_seconds_total: Option<f64>,
    /// Mean `sglang:fwd_occupancy` over the schedulers that report a number (percent);
    /// `None` when none does.
    pub fwd_occupancy_pct: Option<f64>,
    /// Schedulers whose `sglang:fwd_occupancy` is NaN, SGLang's idle (schedulers).
    pub fwd_occupancy_idle: u32,
    /// Schedulers whose `sglang:fwd_occupancy` is a number (schedulers).
    pub fwd_occupancy_busy: u32,
    /// `sglang:forward_execution_seconds_total` (or `sglang:gpu_execution_seconds_total`)
    /// summed over categories and schedulers (seconds, counter); `Some(0.0)` when declared
    /// without samples (the device timer is off), `None` when neither name is exported.
    pub forward_seconds_total: Option<f64>,
    /// `sglang:prefill_effective_tokens_total` of the `*_hit` modes, summed (tokens, counter).
    pub prefill_hit_tokens_total: Option<f64>,
    /// `sglang:prefill_effective_tokens_total{mode="input"}`, summed (tokens, counter).
    pub prefill_input_tokens_total: Option<f64>,
}

/// Polls of `/metrics` from one server.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MetricsFacts {
    /// The server URL (or file).
    pub source: String,
    /// Samples in time order.
    pub samples: Vec<MetricsSample>,
}

/// Every optional source of evidence beside the logs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Context {
    /// Server info.
    pub server: Option<ServerFacts>,
    /// `/metrics` polls.
    pub metrics: Option<MetricsFacts>,
    /// GPU memory.
    pub gpu: Option<GpuFacts>,
    /// Why GPU memory could not be read, when it was asked for (e.g. no NVML on this machine).
    pub gpu_unavailable: Option<String>,
    /// Model geometry.
    pub model: Option<ModelFacts>,
    /// Why the model config could not be used, when one was given.
    pub model_error: Option<String>,
    /// Client records or progress logs.
    pub clients: Vec<ClientEvidence>,
    /// Host memory (`/proc/meminfo`), for the HiCache check.
    pub host_meminfo: Option<kv_capacity::MemInfo>,
    /// The sample window someone proposes to measure with (seconds); default 60.
    pub sample_window_s: Option<f64>,
    /// Problems reading other sources (server unreachable, bad file), each naming its source.
    pub source_errors: Vec<String>,
    /// What the user expects (`--expect`), when given.
    pub expectation: Option<Expectation>,
}
