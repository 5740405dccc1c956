//! What each scheduler (DP rank / PP stage) did, and the DP ranks added up.

use schemars::JsonSchema;
use serde::Serialize;

#[cfg(doc)]
use super::Report;
use super::{Admission, Bottleneck, GaugeStats, Span};

/// What one scheduler (DP rank / PP stage) did.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SchedulerSummary {
    /// `DP1`, `PP0`, `rank 0`, ...
    pub name: String,
    /// The source whose lines were used, when the scheduler has no DP tag.
    pub source: Option<String>,
    /// The TP rank whose lines were kept.
    pub tp: Option<u32>,
    /// Decode lines.
    pub decode_lines: u64,
    /// Prefill lines.
    pub prefill_lines: u64,
    /// Lines from other TP ranks skipped as duplicates of this scheduler's.
    pub duplicate_lines: u64,
    /// Run spans, when lines carry timestamps.
    pub span: Option<Span>,
    /// `#running-req` over the steady span (requests).
    pub running: GaugeStats,
    /// `#queue-req` over the steady span (requests).
    pub queued: GaugeStats,
    /// `token usage` over the steady span (fraction 0-1).
    pub token_usage: GaugeStats,
    /// `gen throughput` over the steady span (tok/s).
    pub gen_throughput: GaugeStats,
    /// Peak `#running-req` over the whole log.
    pub peak_running: Option<u64>,
    /// Peak `#queue-req` over the whole log.
    pub peak_queued: Option<u64>,
    /// Peak `token usage` over the whole log.
    pub peak_token_usage: Option<f64>,
    /// Peak `gen throughput` over the whole log (tok/s).
    pub peak_gen_throughput: Option<f64>,
    /// Share of prompt tokens served from the prefix cache: Σcached / Σ(cached + new) (fraction).
    pub prefix_cache_share: Option<f64>,
    /// Whether this scheduler is a PD decode node (its decode lines print `#transfer-req`):
    /// a client-bound verdict there means the prefill side hands over too little.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pd_decode: bool,
    /// Which admission limit held the queue over the steady steps with requests waiting, and
    /// for what share of that time (`rules::admission`); absent when nothing waited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// `fwd occupancy` over this scheduler's batch lines (v0.5.11+ with
    /// `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`: the device timer's GPU-busy time of forward
    /// passes over each logging window's wall time, `scheduler_metrics_mixin.py`); `nan%`
    /// windows counted as idle; absent when no line prints it.
    pub fwd_occupancy: Option<super::OccupancySummary>,
    /// The verdict for this scheduler alone.
    pub bottleneck: Bottleneck,
}

/// Per-rank figures added up over the DP ranks in the log: what the server as a whole does.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct DpTotals {
    /// DP ranks with batch lines in the log.
    pub ranks: usize,
    /// The server's `dp_size` (from `server_args` or server info), when known; above
    /// [`Self::ranks`] the log holds only some of the ranks and the sums cover those.
    pub dp_size: Option<u32>,
    /// The highest DP rank number in the log plus one, when that is more than [`Self::ranks`]:
    /// the server has at least that many ranks, so the log holds only some (e.g. DP0, DP2, DP7).
    pub ranks_at_least: Option<u32>,
    /// Sum of the ranks' median `#running-req` over their steady spans (requests).
    pub running_median: Option<f64>,
    /// Sum of the ranks' median `#queue-req` over their steady spans (requests).
    pub queued_median: Option<f64>,
    /// Sum of the ranks' time-weighted mean `gen throughput` over their steady spans (tok/s;
    /// close to [`Report::steady_gen_throughput`], which also gives an interval).
    pub gen_throughput_mean: Option<f64>,
}
