//! The scheduler's per-request times (`ReqTimeStats` lines), summarised: how long finished
//! requests waited in the scheduler's queue and ran, by the server's own clock.

use schemars::JsonSchema;
use serde::Serialize;

use super::SourceRange;

/// Quantiles of one per-request duration over the requests that print it (each request
/// weighs the same). Unit: seconds, unless the field says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Spread {
    /// Requests that print it.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Maximum.
    pub max: f64,
}

/// Which server printed the times (`type=` of the lines), the most common when they differ.
pub use sglang_log::ReqMode;

/// The per-request times of a log (`ReqTimeStats(rid=…, …): queue_duration=…`, SGLang
/// `observability/req_time_stats.py`), over the kept sample of its lines.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct RequestTimesSummary {
    /// `ReqTimeStats` lines in the log (requests; every TP rank that prints them counts).
    pub lines: u64,
    /// Lines the figures below are taken over (an evenly spread sample of a long log).
    pub sampled: usize,
    /// Which server printed them.
    pub mode: ReqMode,
    /// Time in the scheduler's waiting queue before the first forward pass
    /// (`queue_duration`). Unit: seconds.
    pub queue_s: Option<Spread>,
    /// From the first forward pass to completion (`forward_duration`). Unit: seconds.
    pub forward_s: Option<Spread>,
    /// Generated tokens per request (`output_len`). Unit: tokens.
    pub output_tokens: Option<Spread>,
    /// Of the prompt tokens, the share served from the prefix cache (Σ `cached_input_len` /
    /// Σ `input_len`). Unit: fraction.
    pub prefix_cached_share: Option<f64>,
    /// PD: the bootstrap handshake (`bootstrap(…)`). Unit: seconds.
    pub bootstrap_s: Option<Spread>,
    /// PD: the wait for KV memory after the handshake (`alloc_wait(…)`). Unit: seconds.
    pub alloc_wait_s: Option<Spread>,
    /// PD decode: the KV transfer (`transfer_duration`). Unit: seconds.
    pub transfer_s: Option<Spread>,
    /// PD prefill: the KV transfer's speed (`transfer_speed`). Unit: GB/s.
    pub transfer_gb_per_s: Option<Spread>,
    /// PD prefill: the KV transfers' retries summed over every line (`#retries`), when the
    /// lines print them. Unit: retries.
    pub transfer_retries: Option<u64>,
    /// The first and the last line.
    pub evidence: Option<SourceRange>,
}
