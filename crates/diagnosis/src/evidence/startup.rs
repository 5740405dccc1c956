//! Startup facts about capacity and memory, and the server arguments kept from the
//! `server_args=ServerArgs(...)` line.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Loc;

/// Startup facts about capacity and memory (first seen per kind; values per GPU).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Startup {
    /// `Using KV cache dtype: …` (`torch.bfloat16`, `torch.float8_e4m3fn`): the KV cache's
    /// element type as the model runner chose it.
    pub kv_cache_dtype: Option<String>,
    /// `max_total_num_tokens` (KV pool size, tokens per DP rank) and where it was read.
    pub max_total_num_tokens: Option<(u64, Loc)>,
    /// `max_running_requests` from the capacity line (requests per DP rank).
    pub max_running_requests: Option<u64>,
    /// `chunked_prefill_size` (tokens).
    pub chunked_prefill_size: Option<u64>,
    /// The capacity line prints `chunked_prefill_size=-1` (or 0): chunked prefill is off.
    pub chunked_prefill_off: bool,
    /// `max_prefill_tokens` (tokens).
    pub max_prefill_tokens: Option<u64>,
    /// `context_len` (tokens).
    pub context_len: Option<u64>,
    /// `available_gpu_mem` after CUDA graph capture (GB as SGLang prints it, i.e. GiB).
    pub available_gpu_mem_gb: Option<f64>,
    /// `avail mem` after the weights loaded (GiB).
    pub avail_mem_after_weights_gb: Option<f64>,
    /// `mem usage` of the weights (GiB).
    pub weights_gb: Option<f64>,
    /// `avail mem` after the memory pool was allocated (GiB).
    pub avail_mem_after_pool_gb: Option<f64>,
    /// `avail mem` after CUDA graph capture (GiB).
    pub avail_mem_after_graph_gb: Option<f64>,
    /// `KV Cache is allocated. #tokens`.
    pub kv_alloc_tokens: Option<u64>,
    /// K + V (or KV for MLA) size (GiB) of the first `KV Cache is allocated` line: the pool
    /// whose `#tokens` is [`Self::kv_alloc_tokens`].
    pub kv_alloc_gb: Option<f64>,
    /// Every KV pool one rank allocated (GiB): the sum over the distinct (`#tokens`, size)
    /// of the `KV Cache is allocated` lines with the first line's rank tags. A hybrid
    /// sliding-window model allocates two (the SWA and the full pool), a speculative
    /// draft model one more; other TP ranks repeat the same lines, which count once.
    pub kv_alloc_total_gb: Option<f64>,
    /// The pools summed in [`Self::kv_alloc_total_gb`]: (rank tags, tokens, GiB bits).
    #[serde(skip)]
    pub(super) kv_alloc_seen: Vec<(sglang_log::RankTags, Option<u64>, u64)>,
    /// Hybrid sliding-window models: the sliding-window layers' pool (`swa_layer_tokens`,
    /// tokens per DP rank); `max_total_num_tokens` is then the full-attention layers' pool.
    pub swa_pool_tokens: Option<u64>,
    /// Hybrid sliding-window models: the full-attention layers' pool of the same line
    /// (`full_layer_tokens`, tokens per DP rank), the pool size when no capacity line prints
    /// `max_total_num_tokens` (the first `KV Cache is allocated` line is then the
    /// sliding-window pool's, not the full one's).
    pub swa_full_pool_tokens: Option<u64>,
    /// `Max running requests is reset to N` (requests per DP rank).
    pub max_running_reset: Option<u64>,
    /// `Mamba Cache is allocated. max_mamba_cache_size: N` (state slots per rank).
    pub mamba_cache_slots: Option<u64>,
    /// The first KV allocation line printed one `KV size` (SGLang's `MLATokenToKVPool`), not
    /// `K size` and `V size` (`MHATokenToKVPool`): the model's attention is MLA, whose latent
    /// KV every TP rank holds whole.
    pub kv_alloc_mla: bool,
    /// Selected `server_args=ServerArgs(...)` values, raw (quotes stripped); for a log without
    /// that line, the same arguments from an echoed launch command (`--mem-fraction-static 0.8`
    /// as `mem_fraction_static`, a bare switch as `True`).
    pub server_args: BTreeMap<String, String>,
    /// Whether a `server_args=ServerArgs(...)` line was read (its values win over a launch
    /// command's).
    pub server_args_line: bool,
    /// HiCache host pool (GB), if the allocation line was seen.
    pub hicache_host_gb: Option<f64>,
    /// Whether `The server is fired up and ready to roll!` was seen.
    pub server_ready: bool,
    /// Seconds the decode CUDA graphs took to capture, from `Engine startup timings (s): …
    /// cuda_graph={…, decode=…}`: 0.00 when none was captured.
    pub graph_decode_capture_s: Option<f64>,
}

impl Startup {
    /// A server argument's value as the log gave it, trimmed (quotes were stripped on reading).
    pub fn arg(&self, key: &str) -> Option<&str> {
        self.server_args.get(key).map(|v| v.trim())
    }

    /// Whether the KV cache is already 8-bit: `kv_cache_dtype` fp8 (`fp8_e4m3`, `fp8_e5m2`) in
    /// the server's arguments, or the model runner's `Using KV cache dtype: torch.float8_…` /
    /// `torch.uint8` (SGLang stores fp8 KV as `uint8` on some backends).
    pub fn kv_cache_is_8bit(&self) -> bool {
        self.arg("kv_cache_dtype")
            .is_some_and(|d| d.starts_with("fp8"))
            || self
                .kv_cache_dtype
                .as_deref()
                .is_some_and(|d| d.starts_with("torch.float8") || d == "torch.uint8")
    }

    /// A server argument as a whole number, when it is one.
    pub fn arg_u64(&self, key: &str) -> Option<u64> {
        self.arg(key)?.parse().ok()
    }
}

/// Keys copied out of the `server_args=ServerArgs(...)` line.
pub(super) const SERVER_ARG_KEYS: &[&str] = &[
    "model_path",
    "tp_size",
    "dp_size",
    "pp_size",
    "ep_size",
    "enable_dp_attention",
    "mem_fraction_static",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "max_running_requests",
    "prefill_max_requests",
    "max_total_tokens",
    "schedule_policy",
    "schedule_conservativeness",
    "kv_cache_dtype",
    "device",
    "enable_hierarchical_cache",
    "hicache_storage_prefetch_policy",
    "hicache_ratio",
    "hicache_size",
    "page_size",
    "context_length",
    "decode_log_interval",
    "num_continuous_decode_steps",
    "disaggregation_mode",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "enable_mixed_chunk",
    "disable_radix_cache",
    "cuda_graph_max_bs",
    "cuda_graph_bs",
    "disable_cuda_graph",
];
