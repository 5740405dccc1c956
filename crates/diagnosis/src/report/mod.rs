//! The report: what `diagnose` found, as data only. This module is a leaf: it imports nothing
//! of this crate, only the data types of the crates it reports on (`kv-capacity`,
//! `sglang-log`). Rendering (text, Markdown) is the binary's job; English sentences inside the
//! report (`headline.summary`, finding titles and details, `method`s) come from
//! `crate::narrative`, and no code decides on them.
//!
//! The JSON form is this structure serialised with serde; its schema is generated from these
//! types (`schemars`) into `docs/report.schema.json` and versioned by [`SCHEMA_VERSION`]. Every
//! enum has one spelling (`snake_case`). Unknown values are `null`, never 0 and never NaN.

mod finding;

pub use finding::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};

use schemars::JsonSchema;
use serde::Serialize;

/// Version of the JSON report schema. Bump on any breaking change of field names or meaning.
/// 2: the headline is an object, enums have one spelling, `not_concluded` items carry a
/// reason, rates and spans carry their basis, recommendations their kind.
pub const SCHEMA_VERSION: u32 = 2;

/// The main cause of lost throughput, as far as the evidence shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, JsonSchema)]
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
    /// Requests queue at a nearly empty KV pool that no reservation explains, while prefill
    /// batches run far apart: admission waits for the next prefill pass (an interval between
    /// prefill passes, many continuous decode steps), not for memory.
    AdmissionHeld,
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
    /// A process ran out of device memory (`torch.OutOfMemoryError`, `CUDA out of memory`):
    /// the server never served, or stopped serving (the verdict after batch lines too).
    OutOfMemory,
    /// A scheduler died (`Scheduler hit an exception`): the server stopped, whatever its batch
    /// lines said before.
    SchedulerCrashed,
    /// No batch lines, and the startup stops before the KV pool was allocated or during
    /// CUDA-graph capture, without the ready banner or a traceback.
    StartupIncomplete,
    /// No batch lines, only startup lines: the capacity they fix (pool, running cap, CUDA
    /// graphs) is all that can be judged.
    StartupOnly,
    /// No batch lines, and the server turned the generation requests away (HTTP 4xx/5xx,
    /// prompts over the context length): nothing ran.
    RequestsRejected,
    /// The log holds only a run winding down: the batch falls with nothing waiting and nothing
    /// admitted (`rules::drain`): the client stopped sending, and the lines say nothing of the
    /// server under load.
    Drain,
    /// PD disaggregation could not move KV (`KVTransferError`, `Decode transfer failed`):
    /// without batch lines, or when the batch lines name no bottleneck, the failed transfers
    /// are what blocked serving (SGLang's decode side aborts a request whose KV did not come).
    KvTransferFailed,
}

/// How far a server's startup got, in SGLang's order (`model_runner.py`: weights, then the KV
/// pool, then CUDA graphs; then the HTTP server's ready banner).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartupStep {
    /// `server_args=…` was printed.
    Launched,
    /// `Load weight end`.
    WeightsLoaded,
    /// `KV Cache is allocated` / `Memory pool end` / the capacity line.
    KvPoolAllocated,
    /// CUDA-graph capture began (`Capture cuda graph begin`, or the capture's progress bar:
    /// `Capturing batches (bs=… avail_mem=… GB)`, `Capturing num tokens (…)`) and had not
    /// ended.
    CapturingGraphs,
    /// `Capture … graph end`.
    CudaGraphsCaptured,
    /// The ready banner or a batch line.
    Serving,
}

/// What ended or blocked serving, for a headline without batch lines.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Incident {
    /// The exception type (`torch.OutOfMemoryError`), when a traceback gives it.
    pub exception: Option<String>,
    /// The exception's message as logged, shortened.
    pub message: Option<String>,
    /// The innermost frame in SGLang's code (py-spy: the top Python frame).
    pub frame: Option<sglang_log::Frame>,
    /// The startup step reached before it (`None`: no startup line before it).
    pub step: Option<StartupStep>,
    /// py-spy: the process dumped.
    pub process: Option<String>,
    /// Lines that reported it (all ranks), when counted (KV transfer failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Whether batch lines were served before it (the run ended by it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_serving: bool,
    /// The free memory the step under way printed last (GiB): a CUDA-graph capture's
    /// `avail_mem`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_gib: Option<f64>,
    /// py-spy: the dumped process only waits for its child processes (a DP controller): the
    /// hung scheduler's own stack is not in the log.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waits_on_children: bool,
}

/// The capacity a startup fixes, for a headline without batch lines (per DP rank).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct StartupCapacity {
    /// `max_total_num_tokens` (tokens).
    pub pool_tokens: Option<u64>,
    /// `max_running_requests` (requests).
    pub max_running_requests: Option<u64>,
    /// `context_len` (tokens).
    pub context_len: Option<u64>,
    /// The largest decode batch run as a CUDA graph (requests).
    pub graph_max_bs: Option<u64>,
}

/// The answer in one line: the verdict and the key figures behind it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Headline {
    /// The verdict (the same as [`Report::bottleneck`]).
    pub verdict: Bottleneck,
    /// The verdict's name for people, e.g. `KV-cache bound`.
    pub label: String,
    /// The rest of the answer, after the label (English, from `narrative`).
    pub summary: String,
    /// `label: summary`, the whole answer in one string.
    pub text: String,
    /// Median running requests of the scheduler behind the verdict, over its steady span (requests).
    pub running_median: Option<f64>,
    /// Highest running requests of that scheduler over its steady span (requests).
    pub running_peak: Option<f64>,
    /// Sum of the median running requests over DP ranks, when there are several (requests).
    pub running_total: Option<f64>,
    /// DP ranks with their own batch lines (0 without DP tags).
    pub dp_ranks: usize,
    /// The server's DP ranks when the log holds fewer: `dp_size`, else the highest rank
    /// number + 1 (see [`DpTotals`]).
    pub dp_ranks_of: Option<u32>,
    /// Median queued requests over the steady span (requests).
    pub queued_median: Option<f64>,
    /// Highest queued requests over the steady span (requests).
    pub queued_peak: Option<f64>,
    /// Median token usage over the steady span (fraction of the KV pool).
    pub token_usage_median: Option<f64>,
    /// The server's generation throughput, summed over DP ranks (see [`Report::steady_gen_throughput`]).
    pub gen_throughput: Option<Rate>,
    /// Median logged gen throughput while decoding (tok/s), idle gaps excluded.
    pub busy_gen_tok_per_s: Option<f64>,
    /// The ramp, when the log holds only the ramp-up of a burst.
    pub ramp_only: Option<Ramp>,
    /// Retraction events, when the verdict rests on them (no scheduler carries the verdict).
    pub retraction_events: Option<u64>,
    /// The prefill crawl, for a prefill compute bound verdict.
    pub slow_prefill: Option<SlowPrefill>,
    /// New prompt tokens prefilled per second, for a PD prefill instance (tok/s).
    pub pd_prefill_tok_per_s: Option<f64>,
    /// New prompt tokens prefilled, for a PD prefill instance (tokens).
    pub pd_prefill_tokens: Option<u64>,
    /// What ended or blocked serving, for the verdicts of a log without batch lines
    /// (`out_of_memory`, `scheduler_crashed`, `startup_incomplete`, a watchdog `stall`).
    pub incident: Option<Incident>,
    /// The startup's capacity, for `startup_only`.
    pub startup: Option<StartupCapacity>,
    /// The last benchmark run's client did not stream (`bench_not_streamed`): its latency
    /// figures are invalid.
    pub benchmark_not_streamed: bool,
    /// Requests wait at a nearly empty pool (`held_admission`), for the
    /// [`Bottleneck::AdmissionHeld`] verdict (or an inconclusive one): the headline points at
    /// how often prefill runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_admission: Option<HeldAdmissionFacts>,
    /// Share of the steady lines at the running cap, for the [`Bottleneck::RunningCapBound`]
    /// verdict (fraction): below one half the cap is reached while the demand fills it, not
    /// held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_cap_share: Option<f64>,
    /// With a `prefill_bound` verdict: every prefill pass admitted one request though the
    /// budget held more (`rules::prefill_limit::OnePerPass`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_per_pass: bool,
    /// With a `drain` verdict: the running requests on the first and the last decode line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<(u64, u64)>,
    /// A PD decode node's mean `#transfer-req` over the steady span of the scheduler behind
    /// the verdict (requests), for a client-bound verdict there: its load comes from the
    /// prefill side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pd_decode_transfer: Option<f64>,
    /// A ramp whose waiting requests will not fit in the KV pool (`kv_cache_bound`'s
    /// fills-as-admitted pattern), for the [`Bottleneck::KvCacheBound`] verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_fill: Option<PoolFill>,
    /// A few long requests hold the full KV pool while nothing waits (`kv_cache_bound`'s
    /// few-long-requests pattern), for the [`Bottleneck::KvCacheBound`] verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_requests: Option<LongRequests>,
    /// Highest `#queue-req` on the steady prefill lines (requests), when the standing queue of
    /// the decode lines stays empty: requests then queue only while the batch refills after a
    /// wave of completions (a prefill line is printed exactly when queued requests are
    /// admitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill_queue_peak: Option<f64>,
    /// The requests the server turned away, for the [`Bottleneck::RequestsRejected`] verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<RejectedRequests>,
    /// With an `inconclusive` verdict: each scheduler's steady span holds one batch line, an
    /// instant from which no phase, load or speed follows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lone_reading: bool,
    /// With an `inconclusive` verdict: the JIT compile line (DeepGEMM's pre-compile) the log
    /// ends in, after its last batch line: the lines are the server's warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_compile: Option<SourceRange>,
}

/// A burst's ramp-up: running requests climbing while the queue drains.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Ramp {
    /// Running requests at the ramp's start (requests).
    pub running_start: u64,
    /// Running requests at its end (requests).
    pub running_end: u64,
    /// Queued requests at its start (requests).
    pub queued_start: u64,
    /// Queued requests at its end (requests).
    pub queued_end: u64,
}

/// Prefill chunks of one long prompt that crawl on an otherwise idle server.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SlowPrefill {
    /// The scheduler (`rank 0`, `DP1`, ...).
    pub scheduler: String,
    /// Prefill speed (tok/s), the median over chunk pairs.
    pub tok_per_s: f64,
    /// The chunk size (tokens).
    pub chunk_tokens: u64,
    /// Seconds between consecutive chunks.
    pub seconds_per_chunk: f64,
    /// Chunk pairs measured.
    pub pairs: usize,
}

/// Time-weighted summary of one gauge over a span (see `throughput_stats::time_weighted_summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, JsonSchema)]
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

/// How a scheduler's span was divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SpanBasis {
    /// MSER-5 found a steady state after the ramp (and before the drain).
    Steady {
        /// Batches of 5 lines cut as the ramp.
        ramp_batches: usize,
        /// Batches of 5 lines cut as the drain.
        drain_batches: usize,
    },
    /// The run is burst-shaped (MSER stopped at its search limit): no steady state; the whole
    /// log is used.
    NoSteadyState {
        /// Batches MSER would have cut.
        ramp_batches: usize,
    },
    /// Too few points for phase detection: the whole log is used.
    TooFewPoints,
    /// MSER found no steady state over the whole log, but the phase rules did: the part of a
    /// burst that saturated the server, between its ramp and its drain (`evidence/phases.rs`).
    SaturatedBurst,
}

impl SpanBasis {
    /// Whether a steady state was found (not the whole log taken for want of one).
    pub fn is_steady(self) -> bool {
        matches!(self, SpanBasis::Steady { .. } | SpanBasis::SaturatedBurst)
    }
}

/// The spans a scheduler's run divides into.
#[derive(Clone, Debug, Serialize, JsonSchema)]
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
    /// How the span was found.
    pub basis: SpanBasis,
    /// The same, in words.
    pub method: String,
    /// The run's phases from its decode lines, in time order (empty when the scheduler prints
    /// no timestamped decode lines): warm-up, ramp, steady, drain, idle gaps and other bursts.
    /// `steady_start_s`/`steady_end_s` are the steady phase's bounds when one is found.
    pub phases: Vec<Phase>,
}

/// What part of a run a [`Phase`] is (`evidence/phases.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// Tiny batches before the main load (compile, health checks), followed by idle time.
    WarmUp,
    /// The running count or the KV pool still filling.
    Ramp,
    /// The window the headline figures come from.
    Steady,
    /// Nothing waits and the running count falls: the client has stopped sending.
    Drain,
    /// No decode line for many log intervals.
    Idle,
    /// Another activity segment, outside the main one (not used for the headline).
    OtherBurst,
}

/// One phase of a run.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Phase {
    /// What it is.
    pub kind: PhaseKind,
    /// First line's time (seconds, log clock); for an idle gap, the last line before it.
    pub start_s: f64,
    /// Last line's time (seconds); for an idle gap, the first line after it.
    pub end_s: f64,
    /// Decode lines in it (0 for an idle gap).
    pub lines: usize,
}

/// What a [`Rate`] was measured over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateBasis {
    /// The server's logged gen throughput over its steady span.
    SteadySpan,
    /// The server's logged gen throughput over the whole log (no steady state found).
    WholeLog,
    /// Client completions inside the server's steady span.
    ClientSteadyWindow,
    /// Client completions in the second half of the client's run.
    ClientSecondHalf,
    /// Client completions since its start over the time since then.
    ClientLifetime,
    /// The server's steady token rate over the mean completion length.
    ImpliedByServerTokens,
    /// A benchmark's successful requests over its whole duration.
    BenchmarkWholeRun,
}

impl Rate {
    /// Whether it was measured over a steady span (not a whole log, for want of one).
    pub fn basis_is_steady(&self) -> bool {
        self.basis != RateBasis::WholeLog
    }
}

/// A rate with its interval.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Rate {
    /// The estimate.
    pub value: f64,
    /// Lower bound of the interval.
    pub low: Option<f64>,
    /// Upper bound of the interval.
    pub high: Option<f64>,
    /// Confidence level of the interval (e.g. 0.95).
    pub confidence: f64,
    /// Unit.
    pub unit: Unit,
    /// Window it was measured over (seconds).
    pub window_s: f64,
    /// What it was measured over.
    pub basis: RateBasis,
    /// How it was computed, in words.
    pub method: String,
    /// Server rates: the decode lines it rests on on the scheduler with the fewest (lines; 1
    /// means one sample); `None` for client and benchmark rates.
    pub lines: Option<u32>,
}

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
    /// The verdict for this scheduler alone.
    pub bottleneck: Bottleneck,
}

/// What kind of input a [`InputSummary`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// A log file (or stdin).
    Log,
    /// A live server's `/metrics` polls, read as a scheduler.
    MetricsPolls,
}

/// Counts of one input.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct InputSummary {
    /// Path or `-`.
    pub name: String,
    /// What it is.
    pub kind: InputKind,
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
    /// The first malformed lines.
    pub malformed: Vec<MalformedLine>,
    /// Lines cut at the 1 MiB line-length cap (also counted as malformed).
    pub long_lines: u64,
    /// Damaged batch lines (fragments that are not `key: value`); their readable fields were
    /// used. Counted among the events, not the malformed lines.
    pub damaged_lines: u64,
    /// The first damaged lines.
    pub damaged: Vec<MalformedLine>,
    /// Batch lines with a value set aside as impossible; their other fields were used.
    pub rejected_lines: u64,
    /// The first values set aside.
    pub rejected: Vec<RejectedValue>,
}

/// A batch-line value set aside as impossible (NaN, infinite, negative, out of range).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RejectedValue {
    /// 1-based line number.
    pub line: u64,
    /// The field as printed.
    pub key: String,
    /// The value as printed.
    pub value: String,
    /// Why it was set aside.
    pub reason: String,
}

/// One malformed line, where it is and why.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MalformedLine {
    /// 1-based line number.
    pub line: u64,
    /// Why it could not be parsed.
    pub reason: String,
    /// Its start, shortened.
    pub excerpt: String,
}

/// KV pool facts read from the log's startup lines.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct CapacitySummary {
    /// `max_total_num_tokens` (tokens per DP rank); for hybrid sliding-window models the
    /// full-attention layers' pool.
    pub max_total_num_tokens: Option<u64>,
    /// Hybrid SSM models: the mamba state slots (`max_mamba_cache_size`), one per running
    /// request (slots per rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba_cache_slots: Option<u64>,
    /// Hybrid sliding-window models: the sliding-window layers' pool (`swa_layer_tokens`,
    /// tokens per DP rank). Each pool is used against its own size (`full token usage`,
    /// `swa token usage`); the sizes do not add up to one pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swa_pool_tokens: Option<u64>,
    /// Chunked prefill is off (`chunked_prefill_size` -1 or 0 in the capacity line or
    /// `server_args`): a whole prompt prefills in one pass, and `--enable-mixed-chunk` has no
    /// chunks to mix.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chunked_prefill_off: bool,
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
    /// Free GPU memory after CUDA-graph capture (GiB per GPU; SGLang prints it as "GB").
    pub available_gpu_mem_gb: Option<f64>,
    /// KV cache size (GiB per GPU).
    pub kv_cache_gb: Option<f64>,
    /// Weights (GiB per GPU).
    pub weights_gb: Option<f64>,
}

/// Retractions, deduplicated across TP ranks.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
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

/// Why something could not be concluded.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NotConcludedReason {
    /// A named source could not be read (unreachable server, bad file).
    SourceError,
    /// An input holds no lines at all.
    EmptyInput {
        /// The input's name.
        input: String,
    },
    /// No scheduler (batch) lines anywhere.
    NoSchedulerLines,
    /// No scheduler has two timestamped decode lines.
    NoTimedDecodeLines,
    /// The KV pool size is unknown (no startup lines, no server info).
    NoPoolSize,
    /// GPU memory was asked for and could not be read.
    GpuUnreadable,
    /// No GPU memory source was given.
    NoGpuData {
        /// Whether the log's startup lines give the memory left after the KV pool and CUDA
        /// graphs (`avail mem=`): the only free-memory figure then.
        #[serde(default)]
        log_has_memory: bool,
    },
    /// No client records or logs were given.
    NoClientRecords,
    /// The client evidence is a benchmark's whole-run summary.
    ClientIsBenchmarkSummary,
    /// The client records carry no completion times.
    ClientUntimed,
    /// The model config could not be used.
    ModelConfigUnusable,
    /// Client records were left out of the rates.
    ClientRecordsSetAside,
    /// The model config's KV cell disagrees with the log's: it is another model's config.
    ModelConfigDisagrees,
    /// The log holds only some of the server's DP ranks.
    SomeRanksOnly {
        /// DP ranks with batch lines in the log.
        seen: usize,
        /// `dp_size` of the server.
        of: u32,
    },
    /// The KV what-if table could not be built.
    NoWhatIfTable,
    /// `--expect` was given but cannot be answered: it needs the measured steady rate and a
    /// decode step-time fit.
    ExpectationUnanswered {
        /// Whether a steady generation rate was measured (then the fit is what is missing).
        has_rate: bool,
    },
    /// Schedulers logged more batch lines than their timelines keep (one in `stride`, a power
    /// of two): the rules that need every line (`idle_window`, `prefill_interference`,
    /// `prefill_compute`) passed them over.
    ThinnedTimelines {
        /// Schedulers thinned.
        schedulers: usize,
        /// The largest stride among them (lines per kept sample).
        stride: u64,
    },
}

/// One thing the report could not conclude.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct NotConcluded {
    /// Why, as data.
    pub reason: NotConcludedReason,
    /// Why, in words.
    pub text: String,
}

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

/// What [`Headline::held_admission`] says: how far apart prefill batches ran while requests
/// waited.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct HeldAdmissionFacts {
    /// Largest gap between prefill batches in forward iterations, when the log prints them.
    pub prefill_gap_iters: Option<u64>,
    /// Largest gap between prefill batches (seconds), when timestamped.
    pub prefill_gap_s: Option<f64>,
}

/// A pool that fills as the queue is admitted (see [`Headline::pool_fill`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct PoolFill {
    /// Token usage on the ramp's last line (fraction).
    pub usage: f64,
    /// Requests whose KV that usage counts (requests).
    pub holding: u64,
    /// Requests still to come: waiting, plus a prefill batch not yet allocated (requests).
    pub to_come: u64,
    /// The usage all of them would need at the same KV tokens per request (fraction).
    pub projected_usage: f64,
}

/// A few long requests holding the full KV pool (see [`Headline::long_requests`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LongRequests {
    /// Median running requests (requests).
    pub running: f64,
    /// Median KV tokens held per running request, `#token / #running-req` (tokens).
    pub tokens_per_request: f64,
}

/// Requests the server turned away (see `rules::rejected_requests`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RejectedRequests {
    /// 4xx responses to generation requests (requests).
    pub client_errors: u64,
    /// 5xx responses to generation requests (requests).
    pub server_errors: u64,
    /// The model's context length, when the rejections name it (tokens).
    pub context_len: Option<u64>,
    /// The largest prompt plus requested completion among the context-length rejections
    /// (tokens).
    pub largest_requested: Option<u64>,
}

/// The whole diagnosis.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The inputs and their parse counts.
    pub inputs: Vec<InputSummary>,
    /// The main bottleneck.
    pub bottleneck: Bottleneck,
    /// The answer: the verdict and its key figures.
    pub headline: Headline,
    /// Per scheduler.
    pub schedulers: Vec<SchedulerSummary>,
    /// Server generation throughput over the steady span, summed over DP ranks.
    pub steady_gen_throughput: Option<Rate>,
    /// The DP ranks' figures added up, when the log holds more than one DP rank.
    pub dp_totals: Option<DpTotals>,
    /// Startup capacity facts.
    pub capacity: CapacitySummary,
    /// Retractions.
    pub retractions: RetractionSummary,
    /// Findings, most important first.
    pub findings: Vec<Finding>,
    /// What could not be concluded from this input, and why (input problems first).
    pub not_concluded: Vec<NotConcluded>,
    /// The client's view reconciled with the server's, when client records were given.
    pub client: Option<ClientSummary>,
    /// Benchmark summary blocks read from the logs and client files (whole-run figures).
    pub benchmark_runs: Vec<BenchmarkRun>,
    /// KV capacity model and what-if projections, when enough facts were given.
    pub capacity_model: Option<CapacityModel>,
    /// Decode step-time fit and the throughput it projects.
    pub projection: Option<Projection>,
    /// What to change: plans with a gain first (changes that keep outputs as they are before
    /// those that alter them, such as an fp8 KV cache; each group by expected gain), then the
    /// rest, advice not to change something last.
    pub recommendations: Vec<Recommendation>,
    /// The sources that were used beside the logs, in words.
    pub sources: Vec<String>,
    /// What the server's `/metrics` said, when it was polled.
    pub server_metrics: Option<MetricsSummary>,
    /// The measured rate against the ceiling of this setup and the user's expectation.
    pub expectation: Option<ExpectationCheck>,
    /// The server runs the log holds, when more than one (a restart, a second startup block, a
    /// long gap, two pasted blocks): everything above is the last run's; each earlier run is
    /// diagnosed on its own. Absent for a log of one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<ServerRuns>,
}

/// The server runs one log holds (see [`Report::runs`]).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ServerRuns {
    /// Runs the log holds (runs), including earlier runs not kept in `runs`.
    pub count: usize,
    /// What that means for the report, in words.
    pub text: String,
    /// Each kept run, oldest first; the last is the one the report diagnoses.
    pub runs: Vec<RunSummary>,
}

/// One server run of a log and its own diagnosis.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunSummary {
    /// 1-based position among the log's runs.
    pub index: usize,
    /// Where the run begins: a log file and a 1-based line.
    pub first: RunLine,
    /// Its last line (the line before the next run, or the file's last line).
    pub last: Option<RunLine>,
    /// Its first timestamp (seconds on the log's clock, as spans' times).
    pub start_s: Option<f64>,
    /// Its last timestamp (seconds on the log's clock).
    pub end_s: Option<f64>,
    /// What separates it from the run before (`None` for the first run).
    pub begins: Option<RunStart>,
    /// Its first timestamp minus the previous run's last (seconds; negative where the clock
    /// steps back).
    pub gap_before_s: Option<f64>,
    /// Its verdict.
    pub bottleneck: Bottleneck,
    /// Its steady server generation throughput (tok/s), when measured.
    pub steady_gen_tok_per_s: Option<f64>,
    /// The index of an earlier run that holds the same lines (a log concatenated with itself).
    pub repeats: Option<usize>,
    /// Whether the rest of the report is this run's (the last one).
    pub diagnosed: bool,
    /// The run in words.
    pub text: String,
}

/// A line of a log file.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct RunLine {
    /// The log file, as named on the command line.
    pub source: String,
    /// 1-based line number.
    pub line: u64,
}

/// What shows that a new server run begins.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunStart {
    /// The clock steps back by more than the jitter window (a restart, or a second log pasted
    /// after the first).
    StepBack {
        /// How far back (seconds).
        seconds: f64,
    },
    /// A startup block (`server_args`, weights loaded, KV cache allocated, CUDA graphs
    /// captured) after batch lines: a new process started.
    NewStartup,
    /// No batch line for far longer than any idle period of one run.
    Gap {
        /// The gap (seconds).
        seconds: f64,
    },
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

/// The answer to "it should be N times faster": the measured steady rate, the ceiling of this
/// setup, the best feasible change, and whether the expectation is reachable.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ExpectationCheck {
    /// The expectation as given (`null` without `--expect`).
    pub asked: Option<serde_json::Value>,
    /// The expected rate (tok/s).
    pub expected_tok_per_s: Option<f64>,
    /// The measured steady rate (tok/s).
    pub measured_tok_per_s: f64,
    /// The ceiling of this setup on the measured rate's scale (tok/s): the step-time fit's
    /// limit as more requests decode at once with unlimited KV.
    pub ceiling_tok_per_s: Option<f64>,
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
    /// The expectation was in req/s and no client figures give the completion length, so it
    /// could not be turned into tok/s: the answer says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_completion_length: bool,
    /// The answer, in words.
    pub text: String,
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
    /// Sample adequacy of a short window at the best rate known.
    pub adequacy: Option<SampleAdequacy>,
    /// Time to finish the remaining requests at the windowed rate.
    pub eta: Option<EtaSummary>,
    /// Client records the rates do not count, and why.
    pub set_aside: Vec<ClientSetAside>,
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

/// KV capacity: the pool model and its what-if table (from `kv-capacity`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CapacityModel {
    /// TP size the model was computed for.
    pub tp_size: u32,
    /// Bytes per token slot per GPU.
    pub cell_bytes: u64,
    /// `pre` (free GPU memory before weights load), GiB per GPU.
    pub pre_gib: f64,
    /// Where `pre` came from, in words.
    pub pre_source: String,
    /// Free GPU memory at run time, GiB per GPU.
    pub free_now_gib: Option<f64>,
    /// Source of the free-memory figure, in words.
    pub free_now_source: Option<String>,
    /// Tokens added per +0.01 of `mem_fraction_static`.
    pub tokens_per_hundredth: f64,
    /// The what-if table.
    pub what_if: kv_capacity::WhatIfTable,
    /// The HiCache verdict, when it could be computed.
    pub hicache: Option<kv_capacity::HiCacheVerdict>,
}

/// Decode step time as a function of batch size and KV tokens, and projected throughput.
#[derive(Clone, Debug, Serialize, JsonSchema)]
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
    /// The rate the fit approaches as more requests decode at once with unlimited KV,
    /// `1 / (b + c × KV tokens per request)` (tok/s); `None` when the fit has no such limit.
    pub ceiling_tok_per_s: Option<f64>,
    /// Why no ceiling is given, when none is (the first test of the fit that failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ceiling: Option<NoCeiling>,
    /// Projected rows, one per what-if row with a decode concurrency.
    pub rows: Vec<ProjectionRow>,
}

/// Why a step-time fit gives no ceiling (see `projection.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NoCeiling {
    /// The per-request step time is not positive: the fit has no limit.
    NoLimit,
    /// The fixed step time `a` is not positive: no step time.
    NegativeFixedStep,
    /// The fit explains too little of the lines' variance.
    PoorFit {
        /// Its R².
        r2: f64,
    },
    /// The lines' batch sizes are too close together to fit a slope.
    NarrowBatchSizes {
        /// Lowest running requests (requests).
        low: f64,
        /// Highest running requests (requests).
        high: f64,
    },
    /// The asymptote is not above the rate the fit gives now.
    NotAboveCurrent,
}

/// Throughput projected for one what-if row.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ProjectionRow {
    /// The what-if row's label.
    pub label: String,
    /// The change the row makes.
    pub change: kv_capacity::Change,
    /// Requests that could decode at once.
    pub concurrency: f64,
    /// Projected gen throughput (tok/s).
    pub tok_per_s: f64,
    /// Change versus the fit's throughput now (percent).
    pub gain_pct: f64,
    /// True when the concurrency is outside the observed range (extrapolation).
    pub extrapolated: bool,
    /// Feasibility of the row, when known.
    pub feasibility: Option<kv_capacity::Feasibility>,
}

/// What a [`Recommendation`] changes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecommendationKind {
    /// Apply a what-if row's change (`mem_fraction_static`, `kv_cache_dtype`, `tp_size`).
    Apply {
        /// The change.
        change: kv_capacity::Change,
    },
    /// Do not raise `mem_fraction_static` to this fraction or beyond: it would not fit.
    DoNotRaiseFraction {
        /// The first fraction that would not fit.
        to: f64,
    },
    /// HiCache would not raise decode concurrency.
    HiCacheNoGain,
    /// Give the KV cache more slots (no what-if table to size the change).
    MoreKvSlots,
    /// Raise `--schedule-conservativeness` (fewer retractions).
    RaiseConservativeness,
    /// Lower `--schedule-conservativeness` (admit more while the pool has room).
    LowerConservativeness,
    /// Raise `--max-running-requests`.
    RaiseMaxRunningRequests,
    /// Send more requests at once from the client.
    RaiseClientConcurrency,
    /// A PD decode node runs what the prefill side hands over: look there (and at the handoff).
    CheckPrefillSide,
    /// Judge progress by the windowed rate, not the lifetime average.
    UseWindowedRate,
    /// Try `--enable-dp-attention`: an MLA model's latent KV is held whole by every TP rank.
    DpAttention,
    /// Change a setting that a finding names and no recommendation above covers.
    Change {
        /// The setting.
        lever: Lever,
        /// The finding that names it.
        finding: FindingKind,
    },
}

impl RecommendationKind {
    /// The settings this recommendation is about (empty for advice that changes none).
    pub fn levers(&self) -> Vec<Lever> {
        match *self {
            RecommendationKind::Apply { change } => match change {
                kv_capacity::Change::Fraction { .. } => vec![Lever::MemFractionStatic],
                kv_capacity::Change::KvDtype { .. } => vec![Lever::KvCacheDtype],
                kv_capacity::Change::TpSize { .. } | kv_capacity::Change::Current => Vec::new(),
            },
            RecommendationKind::DoNotRaiseFraction { .. } => vec![Lever::MemFractionStatic],
            RecommendationKind::MoreKvSlots => {
                vec![
                    Lever::MemFractionStatic,
                    Lever::KvCacheDtype,
                    Lever::MaxTokens,
                ]
            }
            // capping max_tokens cuts outputs: its own recommendation, with that risk
            RecommendationKind::RaiseConservativeness => vec![Lever::ScheduleConservativeness],
            RecommendationKind::LowerConservativeness => {
                vec![Lever::ScheduleConservativeness, Lever::MaxTokens]
            }
            // its words raise the cap together with the client's concurrency
            RecommendationKind::RaiseMaxRunningRequests => {
                vec![Lever::MaxRunningRequests, Lever::ClientConcurrency]
            }
            RecommendationKind::RaiseClientConcurrency => vec![Lever::ClientConcurrency],
            // its words raise both prefill budgets together
            RecommendationKind::Change {
                lever: Lever::ChunkedPrefillSize,
                finding: FindingKind::PrefillBound,
            } => vec![Lever::ChunkedPrefillSize, Lever::MaxPrefillTokens],
            RecommendationKind::Change { lever, .. } => vec![lever],
            RecommendationKind::HiCacheNoGain
            | RecommendationKind::DpAttention
            | RecommendationKind::UseWindowedRate
            | RecommendationKind::CheckPrefillSide => Vec::new(),
        }
    }
}

/// One concrete change.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Recommendation {
    /// What it changes, as data.
    pub kind: RecommendationKind,
    /// What to do.
    pub action: String,
    /// Expected gain, in words with numbers.
    pub expected_gain: String,
    /// Expected gain in percent of throughput, for ordering (`null` when none is expected).
    pub gain_pct: Option<f64>,
    /// Risk.
    pub risk: String,
}
