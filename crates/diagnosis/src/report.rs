//! The report: what `diagnose` found, as data. Rendering (text, Markdown, JSON) is the binary's job.
//!
//! The JSON form is this structure serialised with serde; its schema is versioned by
//! [`SCHEMA_VERSION`] and documented in `docs/report-schema.md`. Unknown values are `null`, never 0.

use serde::Serialize;

/// Version of the JSON report schema. Bump on any breaking change of field names or meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// The main cause of lost throughput, as far as the evidence shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// The KV cache is (nearly) full while requests queue: only as many requests run as fit in the pool.
    KvCacheBound,
    /// The running batch is pinned at `max_running_requests` (or the mamba-state slots) while requests queue.
    RunningCapBound,
    /// Requests queue while prefill batches run at their size limit (`chunked_prefill_size` / `max_prefill_tokens`).
    PrefillBound,
    /// Requests queue although the KV cache is well below full: admission reserves too much.
    SchedulerConservative,
    /// PD disaggregation: requests pile up waiting for KV pre-allocation / bootstrap.
    PdTransferBound,
    /// Nearly nothing waits: the client sends too little load for the server.
    ClientBound,
    /// Requests run but tokens stop moving.
    Stall,
    /// Decode itself is extremely slow per running request (well under 1 tok/s each): a hung or
    /// eager (no CUDA graph) decode, CPU offload, or a broken kernel, not load or memory.
    DecodeComputeBound,
    /// Prefill itself is extremely slow: one request's consecutive prefill chunks take tens of
    /// seconds each (tens of tok/s) with nothing queued: CPU/host offload, kernels falling back,
    /// or a broken device, not load or memory.
    PrefillComputeBound,
    /// Batch lines are present but the signals disagree or are too few.
    Inconclusive,
    /// No SGLang scheduler lines were found.
    NoSchedulerLines,
}

impl Bottleneck {
    /// A short human label.
    pub fn label(self) -> &'static str {
        match self {
            Bottleneck::KvCacheBound => "KV-cache bound",
            Bottleneck::RunningCapBound => "running-request cap bound",
            Bottleneck::PrefillBound => "prefill bound",
            Bottleneck::SchedulerConservative => "scheduler too conservative",
            Bottleneck::PdTransferBound => "PD transfer / pre-allocation bound",
            Bottleneck::ClientBound => "client too slow / not enough load",
            Bottleneck::Stall => "stall",
            Bottleneck::DecodeComputeBound => "decode compute bound",
            Bottleneck::PrefillComputeBound => "prefill compute bound",
            Bottleneck::Inconclusive => "inconclusive",
            Bottleneck::NoSchedulerLines => "no SGLang scheduler lines",
        }
    }
}

/// How sure a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Weak or indirect evidence.
    Low,
    /// Consistent evidence from one source.
    Medium,
    /// Strong, consistent evidence.
    High,
}

/// One number supporting a finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// What it is, e.g. `median token usage`.
    pub name: String,
    /// The value (`null` in JSON when unknown).
    pub value: Option<f64>,
    /// Its unit, e.g. `tok/s`, `requests`, `fraction`, `s`.
    pub unit: String,
}

impl Figure {
    /// A figure with a known value.
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: Some(value),
            unit: unit.into(),
        }
    }
}

/// A range of lines in one source that supports a finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceRange {
    /// The source name (path).
    pub source: String,
    /// First line (1-based).
    pub first_line: u64,
    /// Last line (inclusive).
    pub last_line: u64,
}

impl std::fmt::Display for SourceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.first_line == self.last_line {
            write!(f, "{}:{}", self.source, self.first_line)
        } else {
            write!(f, "{}:{}-{}", self.source, self.first_line, self.last_line)
        }
    }
}

/// Stable identifiers of finding kinds (the JSON `kind` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// See [`Bottleneck::KvCacheBound`].
    KvCacheBound,
    /// See [`Bottleneck::RunningCapBound`].
    RunningCapBound,
    /// See [`Bottleneck::PrefillBound`].
    PrefillBound,
    /// See [`Bottleneck::SchedulerConservative`].
    SchedulerConservative,
    /// See [`Bottleneck::PdTransferBound`].
    PdTransferBound,
    /// See [`Bottleneck::ClientBound`].
    ClientBound,
    /// Running requests but `#token` frozen or gen throughput near zero.
    Stall,
    /// See [`Bottleneck::DecodeComputeBound`].
    DecodeComputeBound,
    /// See [`Bottleneck::PrefillComputeBound`].
    PrefillComputeBound,
    /// KV cache pool exhausted during decode; requests retracted.
    Retraction,
    /// A watchdog timeout: the scheduler hung.
    WatchdogTimeout,
    /// KV transfers failed (PD disaggregation).
    KvTransferFailure,
    /// The first decode line after an idle gap reads low: SGLang's window includes the idle time.
    IdleWindowArtifact,
    /// Decode batches larger than the captured CUDA-graph batch size ran without graphs.
    NoCudaGraph,
    /// The log covers only the ramp-up; no steady state.
    RampOnly,
    /// Load is spread unevenly over DP ranks.
    DpImbalance,
    /// The KV pool is very small for the model/context, e.g. `--max-total-tokens` set.
    TinyKvPool,
    /// The client's rate differs from the server's: why.
    ClientGap,
    /// Prefill batches interrupt decode and cost decode throughput.
    PrefillInterference,
    /// Little's law: the server holds fewer (or more) requests than the client's rate × latency implies.
    LittlesLaw,
    /// A proposed sample window is too short for the rate.
    SampleAdequacy,
    /// What a bigger KV pool would take (SGLang's formula, free memory).
    CapacityWhatIf,
    /// Host-RAM hierarchical cache: what it would and would not do.
    HiCache,
    /// A benchmark run lost requests: its figures cover only the successes.
    BenchmarkFailures,
    /// A benchmark's requests spent much of their latency before the first token (queueing).
    BenchmarkQueueing,
    /// A benchmark kept its `--max-concurrency` limit full.
    BenchmarkConcurrencyLimit,
}

/// A conclusion with the numbers and lines that support it.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Stable kind.
    pub kind: FindingKind,
    /// One-line statement.
    pub title: String,
    /// Explanation, with what to change where that follows.
    pub detail: String,
    /// Supporting numbers.
    pub figures: Vec<Figure>,
    /// Supporting line ranges.
    pub evidence: Vec<SourceRange>,
    /// How sure.
    pub confidence: Confidence,
}

/// Time-weighted summary of one gauge over a span (see `throughput_stats::time_weighted_summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct GaugeStats {
    /// Samples used.
    pub n: usize,
    /// Minimum.
    pub min: Option<f64>,
    /// Time-weighted median.
    pub median: Option<f64>,
    /// Time-weighted 90th percentile.
    pub p90: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
    /// Time-weighted mean.
    pub mean: Option<f64>,
}

/// The spans a scheduler's run divides into.
#[derive(Clone, Debug, Serialize)]
pub struct Span {
    /// Start of the log's batch lines (seconds, log clock).
    pub start_s: f64,
    /// End of the log's batch lines (seconds).
    pub end_s: f64,
    /// Start of the steady span (seconds).
    pub steady_start_s: f64,
    /// End of the steady span (seconds).
    pub steady_end_s: f64,
    /// How finely the log's clock resolves time (seconds): 1.0 when every timestamp in the series
    /// is a whole second (the usual `[YYYY-MM-DD HH:MM:SS]` prefix), so a line stamped `t`
    /// happened somewhere in `[t, t + 1)`; 0.0 when the timestamps carry fractions.
    pub timestamp_resolution_s: f64,
    /// The method used to find it.
    pub method: String,
}

/// A rate with its interval.
#[derive(Clone, Debug, Serialize)]
pub struct Rate {
    /// The estimate.
    pub value: f64,
    /// Lower bound of the interval.
    pub low: Option<f64>,
    /// Upper bound of the interval.
    pub high: Option<f64>,
    /// Confidence level of the interval (e.g. 0.95).
    pub confidence: f64,
    /// Unit, e.g. `tok/s` or `req/s`.
    pub unit: String,
    /// Window it was measured over (seconds).
    pub window_s: f64,
    /// How it was computed.
    pub method: String,
}

/// What one scheduler (DP rank / PP stage) did.
#[derive(Clone, Debug, Serialize)]
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
    /// The verdict for this scheduler alone.
    pub bottleneck: Bottleneck,
}

/// Counts of one input.
#[derive(Clone, Debug, Serialize)]
pub struct InputSummary {
    /// Path or `-`.
    pub name: String,
    /// Lines read.
    pub lines: u64,
    /// SGLang events recognised.
    pub events: u64,
    /// Prefill batch lines.
    pub prefill_lines: u64,
    /// Decode batch lines.
    pub decode_lines: u64,
    /// Lines not from SGLang's scheduler.
    pub other_lines: u64,
    /// Lines that could not be parsed.
    pub malformed_lines: u64,
    /// The first malformed lines: `file:line: reason: excerpt`.
    pub malformed: Vec<String>,
}

/// KV pool facts read from the log's startup lines.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CapacitySummary {
    /// `max_total_num_tokens` (tokens per DP rank).
    pub max_total_num_tokens: Option<u64>,
    /// `max_running_requests` (per DP rank).
    pub max_running_requests: Option<u64>,
    /// `chunked_prefill_size` (tokens).
    pub chunked_prefill_size: Option<u64>,
    /// `max_prefill_tokens` (tokens).
    pub max_prefill_tokens: Option<u64>,
    /// `context_len` (tokens).
    pub context_len: Option<u64>,
    /// `mem_fraction_static` from `server_args`.
    pub mem_fraction_static: Option<f64>,
    /// Free GPU memory after CUDA-graph capture (GiB per GPU).
    pub available_gpu_mem_gb: Option<f64>,
    /// KV cache size (GiB per GPU).
    pub kv_cache_gb: Option<f64>,
    /// Weights (GiB per GPU).
    pub weights_gb: Option<f64>,
}

/// Retractions, deduplicated across TP ranks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RetractionSummary {
    /// Distinct retraction events.
    pub events: u64,
    /// Retraction lines before deduplication (every TP rank prints one).
    pub lines: u64,
    /// Σ `#retracted_reqs` (requests).
    pub retracted_requests: u64,
    /// Σ `#new_tokens_gained` (tokens), when the version prints it.
    pub tokens_freed: Option<u64>,
    /// Events per hour over the logged span.
    pub per_hour: Option<f64>,
    /// Highest `#new_token_ratio` after a retraction.
    pub max_ratio_after: Option<f64>,
}

/// The whole diagnosis.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The inputs and their parse counts.
    pub inputs: Vec<InputSummary>,
    /// The main bottleneck.
    pub bottleneck: Bottleneck,
    /// One sentence: the answer.
    pub headline: String,
    /// Per scheduler.
    pub schedulers: Vec<SchedulerSummary>,
    /// Server generation throughput over the steady span, summed over DP ranks.
    pub steady_gen_throughput: Option<Rate>,
    /// Startup capacity facts.
    pub capacity: CapacitySummary,
    /// Retractions.
    pub retractions: RetractionSummary,
    /// Findings, most important first.
    pub findings: Vec<Finding>,
    /// What could not be concluded from this input, and why.
    pub not_concluded: Vec<String>,
    /// The client's view reconciled with the server's, when client records were given.
    pub client: Option<ClientSummary>,
    /// Benchmark summary blocks read from the logs and client files (whole-run figures).
    pub benchmark_runs: Vec<crate::bench::BenchmarkRun>,
    /// KV capacity model and what-if projections, when enough facts were given.
    pub capacity_model: Option<CapacityModel>,
    /// Decode step-time fit and the throughput it projects.
    pub projection: Option<Projection>,
    /// What to change, ordered by expected gain.
    pub recommendations: Vec<Recommendation>,
    /// The sources that were used beside the logs (`server info: FILE`, `GPU: NVML`, ...).
    pub sources: Vec<String>,
    /// What the server's `/metrics` said, when it was polled.
    pub server_metrics: Option<MetricsSummary>,
}

/// The server's `/metrics` over the polls.
#[derive(Clone, Debug, Serialize)]
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
}

/// The client's view and how it relates to the server's.
#[derive(Clone, Debug, Serialize)]
pub struct ClientSummary {
    /// The client file.
    pub source: String,
    /// How it was read (`timed_records`, `untimed_records`, `progress_log`).
    pub format: String,
    /// Completed requests seen.
    pub completed: u64,
    /// Failed requests seen.
    pub failed: u64,
    /// Total requests of the job, when the client printed it.
    pub total: Option<u64>,
    /// The last rate the client printed (req/s), when it printed one.
    pub printed_req_per_s: Option<f64>,
    /// Completions since the client's start divided by the time since then: the lifetime average.
    pub lifetime_req_per_s: Option<Rate>,
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
    /// Sample adequacy of a short window at the windowed rate.
    pub adequacy: Option<String>,
    /// Seconds a window must last for ±10% at 95% (Garwood).
    pub window_needed_s: Option<f64>,
    /// Time to finish the remaining requests at the windowed rate.
    pub eta: Option<EtaSummary>,
}

/// Estimated time to completion.
#[derive(Clone, Debug, Serialize)]
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

/// KV capacity: the pool model and its what-if table (from `kv-capacity`).
#[derive(Clone, Debug, Serialize)]
pub struct CapacityModel {
    /// TP size the model was computed for.
    pub tp_size: u32,
    /// Bytes per token slot per GPU, and how it was obtained.
    pub cell_bytes: u64,
    /// `pre` (free GPU memory before weights load), GiB per GPU.
    pub pre_gib: f64,
    /// Where `pre` came from.
    pub pre_source: String,
    /// Free GPU memory at run time, GiB per GPU, and where from.
    pub free_now_gib: Option<f64>,
    /// Source of the free-memory figure.
    pub free_now_source: Option<String>,
    /// Tokens added per +0.01 of `mem_fraction_static`.
    pub tokens_per_hundredth: f64,
    /// The what-if table.
    pub what_if: kv_capacity::WhatIfTable,
    /// The HiCache verdict, when it could be computed.
    pub hicache: Option<kv_capacity::HiCacheVerdict>,
}

/// Decode step time as a function of batch size and KV tokens, and projected throughput.
#[derive(Clone, Debug, Serialize)]
pub struct Projection {
    /// Model: `step_s = a + b × running + c × kv_tokens` (least squares over decode lines).
    pub formula: String,
    /// `a` (seconds per step).
    pub a: f64,
    /// `b` (seconds per step per running request).
    pub b: f64,
    /// `c` (seconds per step per KV token).
    pub c: f64,
    /// Coefficient of determination of the fit.
    pub r2: f64,
    /// Decode lines used.
    pub n: usize,
    /// Lowest and highest running requests observed.
    pub running_range: (f64, f64),
    /// Throughput at the observed mean running requests, by the fit (tok/s).
    pub current_tok_per_s: f64,
    /// Mean running requests over the decode lines used.
    pub observed_mean_running: f64,
    /// Projected rows.
    pub rows: Vec<ProjectionRow>,
}

/// Throughput projected for one what-if row.
#[derive(Clone, Debug, Serialize)]
pub struct ProjectionRow {
    /// The what-if row's label.
    pub label: String,
    /// Requests that could decode at once.
    pub concurrency: f64,
    /// Projected gen throughput (tok/s).
    pub tok_per_s: f64,
    /// Change versus now (percent).
    pub gain_pct: f64,
    /// True when the concurrency is outside the observed range (extrapolation).
    pub extrapolated: bool,
    /// Feasibility of the row (`fits`, `tight`, `oom_likely`), when known.
    pub feasibility: Option<String>,
}

/// One concrete change.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    /// What to do.
    pub action: String,
    /// Expected gain, in words with numbers.
    pub expected_gain: String,
    /// Expected gain in percent of throughput, for ordering (`null` when none is expected).
    pub gain_pct: Option<f64>,
    /// Risk.
    pub risk: String,
}
