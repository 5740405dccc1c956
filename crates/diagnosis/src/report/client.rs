//! The client's side: benchmark runs, the client's view against the server's, `/metrics`,
//! and the expectation check.

use schemars::JsonSchema;
use serde::Serialize;

#[cfg(doc)]
use super::Confidence;
use super::{NoCeiling, Rate, SourceRange};

/// One benchmark run the report read, and where it came from.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BenchmarkRun {
    /// The file and lines of the summary block.
    pub source: SourceRange,
    /// The block's figures (latencies in seconds).
    pub summary: sglang_log::BenchSummary,
}

impl BenchmarkRun {
    /// Mean end-to-end latency (seconds): the printed mean, else TTFT + TPOT × (mean output
    /// tokens − 1), the identity bench_serving's TPOT is defined by (spec §7).
    pub fn mean_e2e_s(&self) -> Option<f64> {
        let b = &self.summary;
        b.e2e.mean_s.or_else(|| {
            let out = b.mean_completion_tokens()?;
            Some(b.ttft.mean_s? + b.tpot.mean_s? * (out - 1.0).max(0.0))
        })
    }
}

/// Whether an expected rate is within reach, and of what.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reach {
    /// Already reached: the measured rate is at or above it.
    AlreadyThere,
    /// A feasible change reaches it.
    ByChange {
        /// The what-if row's label.
        change: String,
        /// The change alters outputs (an fp8 KV cache): no change that keeps them gets there.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        alters_outputs: bool,
    },
    /// Below the ceiling but beyond every change that fits: more KV slots than this memory
    /// allows (more GPUs, a smaller or quantised model).
    NeedsMoreMemory,
    /// Beyond the ceiling: only faster decode steps reach it (speculative decoding, a smaller
    /// or quantised model), or more replicas (data parallel) beside this one.
    BeyondCeiling,
    /// Below the ceiling, but no what-if change could be projected (without the requests'
    /// lengths the rows have no decode concurrency): which change reaches it is not known.
    BelowCeilingUnprojected,
    /// No ceiling could be fitted ([`ExpectationCheck::no_ceiling`] says why) and no change
    /// that fits is projected to reach it: whether this setup can is not known.
    NoCeiling,
}

/// What the user expects the server to do (`--expect`), to be checked against what this setup
/// can reach. In the JSON: `{"kind": "multiple" | "tok_per_s" | "req_per_s", "value": N}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Expectation {
    /// A multiple of the measured steady rate (`--expect 4x`).
    Multiple(f64),
    /// A generation rate, tok/s (`--expect 2500tok/s`).
    TokPerS(f64),
    /// A completion rate, req/s (`--expect 0.4req/s`): read against the client's mean
    /// completion length, so it needs the client's figures (`--client-log`, records).
    ReqPerS(f64),
}

/// The answer to "it should be N times faster": the measured steady rate, the ceiling of this
/// setup, the best feasible change, and whether the expectation is reachable.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ExpectationCheck {
    /// The expectation as given (`null` without `--expect`).
    pub asked: Option<Expectation>,
    /// The expected rate (tok/s).
    pub expected_tok_per_s: Option<f64>,
    /// The measured steady rate (tok/s).
    pub measured_tok_per_s: f64,
    /// The ceiling of this setup on the measured rate's scale (tok/s): the step-time fit's
    /// limit as more requests decode at once with unlimited KV, or its rate at
    /// `max_running_requests` when that is lower ([`Self::ceiling_at_running`]).
    pub ceiling_tok_per_s: Option<f64>,
    /// The running requests the ceiling is taken at (`max_running_requests`, per DP rank);
    /// `None`: the fit's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_at_running: Option<f64>,
    /// [`Self::ceiling_at_running`] is SGLang's default cap with speculative decoding,
    /// assumed (no cap is stated).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running_cap_assumed: bool,
    /// The running requests of the lines the fit rests on (lowest, highest), when a ceiling
    /// is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_running_range: Option<(f64, f64)>,
    /// The best change that fits, and its projected rate on the measured rate's scale (tok/s):
    /// changes that keep outputs as they are come first (an fp8 KV cache alters them), then
    /// the fastest.
    pub best_change: Option<(String, f64)>,
    /// The fastest change that fits and its rate (tok/s), when it is not [`Self::best_change`]
    /// (it alters outputs).
    pub faster_change_altering_outputs: Option<(String, f64)>,
    /// Whether the expectation is reachable (`null` without `--expect`).
    pub reach: Option<Reach>,
    /// Why the fit gives no ceiling, when it gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ceiling: Option<NoCeiling>,
    /// The expectation read in the client's units: a multiple of the rate the client prints
    /// (the number the user sees), or a req/s figure, each turned into tok/s at the client's
    /// mean completion length. `null` without a client's rate and completion length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientExpectation>,
    /// An MLA model under TP of this many ranks without DP attention: the ceiling is this
    /// layout's (every rank holds the whole latent KV); DP attention is not projected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_replicated_by_tp: Option<u32>,
    /// DP attention sized for that layout, when the model config gives the attention weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp_attention: Option<super::DpAttentionSizing>,
    /// When the ceiling's batch is more than today's KV pool holds: how many requests it
    /// holds at the longer requests' KV, and the fit's rate there on the measured scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_holds: Option<KvHolds>,
    /// The expectation was in req/s and no client figures give the completion length, so it
    /// could not be turned into tok/s: the answer says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_completion_length: bool,
    /// The answer, in words.
    pub text: String,
}

/// What today's pool holds, against a ceiling taken at a larger batch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct KvHolds {
    /// Requests decoding at once when the KV pool (or the mamba slots) stops more, at the
    /// longer requests' KV (requests per DP rank).
    pub running: f64,
    /// The fit's rate there, on the measured rate's scale (tok/s).
    pub tok_per_s: f64,
}

/// An expectation in the client's units, and whether it is reachable.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ClientExpectation {
    /// The completion rate the client printed last (req/s), multiplied by `--expect Nx`.
    pub printed_req_per_s: Option<f64>,
    /// The completion rate expected (req/s).
    pub expected_req_per_s: f64,
    /// The client's completion rate now (req/s): its steady-window rate, else the rate the
    /// server's tokens imply; the scale the recommendations' req/s use.
    pub now_req_per_s: Option<f64>,
    /// The client's mean completion length (tokens).
    pub mean_completion_tokens: Option<f64>,
    /// The expected rate in the server's tok/s: `measured × expected / now`, else
    /// `expected_req_per_s × mean_completion_tokens`.
    pub expected_tok_per_s: f64,
    /// This setup's ceiling in the client's req/s, on the same scale.
    pub ceiling_req_per_s: Option<f64>,
    /// Whether that rate is reachable.
    pub reach: Reach,
}

/// The server's `/metrics` over the polls.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MetricsSummary {
    /// Server URL.
    pub source: String,
    /// Polls.
    pub samples: usize,
    /// Seconds between the first and last poll.
    pub span_s: f64,
    /// Last running requests.
    pub running: Option<f64>,
    /// Last queued requests.
    pub queued: Option<f64>,
    /// Last token usage (fraction).
    pub token_usage: Option<f64>,
    /// Last logged gen throughput (tok/s).
    pub gen_throughput: Option<f64>,
    /// Increase of `generation_tokens_total` over the polls divided by their span (tok/s).
    pub generated_tok_per_s: Option<f64>,
    /// Median TTFT (seconds, histogram estimate, since server start).
    pub ttft_p50_s: Option<f64>,
    /// 90th percentile TTFT (seconds).
    pub ttft_p90_s: Option<f64>,
    /// Median inter-token latency (seconds).
    pub itl_p50_s: Option<f64>,
    /// Median end-to-end latency (seconds).
    pub e2e_p50_s: Option<f64>,
    /// Increase of `sglang:scheduler_idle_seconds_total` over the polls divided by their
    /// span: seconds of idle scheduler per second, summed over schedulers (1.0 is one
    /// scheduler idle throughout).
    pub scheduler_idle_s_per_s: Option<f64>,
    /// Increase of `sglang:scheduler_process_cpu_seconds_total` over the polls divided by
    /// their span: CPU seconds per second, summed over schedulers (a process's threads
    /// can take more than 1).
    pub scheduler_cpu_s_per_s: Option<f64>,
    /// `sglang:fwd_occupancy` over the polls, idle readings (NaN) apart.
    pub fwd_occupancy: Option<OccupancySummary>,
    /// The forward-pass device timer (`sglang:forward_execution_seconds_total`, formerly
    /// `sglang:gpu_execution_seconds_total`); `None` when neither is exported.
    pub forward_timer: Option<ForwardTimer>,
    /// Of the prefill tokens between the first and last poll, the share served from a cache
    /// (`sglang:prefill_effective_tokens_total`: the `*_hit` modes over all modes, SGLang's
    /// own windowed hit rate; fraction).
    pub prefill_hit_share: Option<f64>,
}

/// `sglang:fwd_occupancy` over a set of readings: NaN is an idle scheduler, counted apart
/// and never averaged (`observability/metrics_collector.py`, `SchedulerStats.fwd_occupancy`).
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
pub struct OccupancySummary {
    /// Mean of the readings that are numbers (percent); `None` when every reading was idle.
    pub busy_mean_pct: Option<f64>,
    /// Readings that were numbers (scheduler readings).
    pub busy_readings: u64,
    /// Readings that were NaN: the scheduler was idle (scheduler readings).
    pub idle_readings: u64,
}

/// What the forward-pass device timer says. SGLang counts forward time only with
/// `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`; otherwise the counter stays at zero.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ForwardTimer {
    /// The counter is zero (or declared without samples): the timer is off, nothing was
    /// measured.
    NotEnabled,
    /// The timer counts.
    Measured {
        /// Increase over the polls divided by their span: GPU-busy seconds of forward
        /// passes per second, summed over schedulers; `None` with a single poll.
        forward_s_per_s: Option<f64>,
    },
}

/// Whether a short window can pin down a rate (exact Poisson, Garwood).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SampleAdequacy {
    /// The window considered (seconds).
    pub window_s: f64,
    /// The rate assumed (req/s).
    pub rate_per_s: f64,
    /// Completions such a window is expected to hold.
    pub expected_count: f64,
    /// Lower end of the rate interval that count would give (req/s).
    pub low: f64,
    /// Upper end (req/s).
    pub high: f64,
    /// Confidence level of the interval.
    pub confidence: f64,
    /// Seconds a window must last for ±10% at that confidence.
    pub window_needed_s: f64,
    /// Whether the window is long enough.
    pub adequate: bool,
    /// The same, in words.
    pub text: String,
}

/// The client's view and how it relates to the server's.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ClientSummary {
    /// The client file.
    pub source: String,
    /// How it was read.
    pub format: sglang_log::ClientFormat,
    /// Completed requests seen.
    pub completed: u64,
    /// Failed requests seen.
    pub failed: u64,
    /// Total requests of the job, when the client printed it.
    pub total: Option<u64>,
    /// The last rate the client printed (req/s), when it printed one.
    pub printed_req_per_s: Option<f64>,
    /// The last token rate the client printed (tok/s), when it printed one (a progress line's
    /// `X tok/s`): as the client counts, not the server's generation rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printed_tok_per_s: Option<f64>,
    /// Completions since the client's start divided by the time since then: the lifetime average.
    pub lifetime_req_per_s: Option<Rate>,
    /// The successful records' completion tokens over the same span as
    /// [`Self::lifetime_req_per_s`]: the client's output throughput as its records count it
    /// (tokens per second; `None` without timed records carrying token counts).
    pub lifetime_tok_per_s: Option<f64>,
    /// Which of the client file's runs the records come from, when it holds several (a
    /// GuideLLM sweep's `benchmark 3 of 3, concurrent@64`).
    pub records_of: Option<String>,
    /// The client's own summary of the run its records come from (its result file or console
    /// tables), figure by figure against the same figure from the records.
    pub claims: Vec<ClaimCheck>,
    /// Completions in the steady window divided by its length, with a Poisson interval.
    pub windowed_req_per_s: Option<Rate>,
    /// The server's steady gen throughput divided by the mean completion length (delta-method interval).
    pub implied_req_per_s: Option<Rate>,
    /// Seconds from the client's start to its first completion.
    pub first_completion_after_s: Option<f64>,
    /// Mean completion tokens per request.
    pub mean_completion_tokens: Option<f64>,
    /// Mean prompt tokens per request.
    pub mean_prompt_tokens: Option<f64>,
    /// Sample adequacy of a short window at the best rate known.
    pub adequacy: Option<SampleAdequacy>,
    /// Time to finish the remaining requests at the windowed rate.
    pub eta: Option<EtaSummary>,
    /// Client records the rates do not count, and why.
    pub set_aside: Vec<ClientSetAside>,
    /// Time to first token of the successful requests whose records carry it (AIPerf,
    /// GuideLLM, `run-batch --stream`). Unit: seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_s: Option<LatencySpread>,
    /// Each successful request's mean inter-token latency, over the requests whose records
    /// carry it (AIPerf, GuideLLM). Unit: seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_s: Option<LatencySpread>,
    /// Requests the client cancelled in flight (GuideLLM's at its time limit): neither
    /// completed nor failed. Unit: requests.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A figure a client's own run summary states, against the same figure from its records.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ClaimCheck {
    /// Which figure.
    pub figure: ClaimedFigure,
    /// What the client's summary states (its unit: [`ClaimedFigure`]'s).
    pub claimed: f64,
    /// The same from its records.
    pub from_records: f64,
    /// Whether the two agree within `thresholds::CLIENT_CLAIM_TOLERANCE`.
    pub agrees: bool,
}

/// The figures of a client's summary checked against its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimedFigure {
    /// Successful requests (requests).
    CompletedRequests,
    /// Failed requests (requests).
    FailedRequests,
    /// Requests cancelled in flight (requests).
    CancelledRequests,
    /// The whole-run request rate (req/s).
    RequestRate,
    /// The whole-run output token rate (tok/s).
    OutputTokenRate,
    /// Mean time to first token (seconds).
    MeanTtft,
    /// Mean inter-token latency (seconds).
    MeanItl,
}

/// A latency over the client's requests: how many carry it, its mean, median and 99th
/// percentile. Unit: seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LatencySpread {
    /// Requests that carry it.
    pub n: usize,
    /// Mean. Unit: seconds.
    pub mean: f64,
    /// Median. Unit: seconds.
    pub p50: f64,
    /// 99th percentile. Unit: seconds.
    pub p99: f64,
}

/// Client records left out of the rates.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ClientSetAside {
    /// Why.
    pub reason: SetAsideReason,
    /// How many records.
    pub records: u64,
    /// The first such record's line in the client file.
    pub first_line: Option<u64>,
}

/// Why client records were left out of the rates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SetAsideReason {
    /// The end time lies further than `cutoff_s` from the median end time: a clock error.
    EndFarFromOthers {
        /// The distance beyond which an end time is set aside (seconds).
        cutoff_s: f64,
    },
    /// A completed record without an end time: the rates count only timed records, so they
    /// are a lower bound.
    NoEndTime,
}

/// Estimated time to completion.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EtaSummary {
    /// Requests left.
    pub remaining: u64,
    /// Seconds, at the point estimate of the rate.
    pub seconds: f64,
    /// Seconds at the upper end of the rate interval (optimistic).
    pub low_s: f64,
    /// Seconds at the lower end of the rate interval (pessimistic; may be infinite → null).
    pub high_s: Option<f64>,
}
