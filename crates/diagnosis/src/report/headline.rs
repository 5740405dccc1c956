//! The headline: the verdict and its key figures, and the facts of the verdicts that carry
//! their own (an incident, a held admission, a filling pool, long requests, rejections).

use schemars::JsonSchema;
use serde::Serialize;

use super::{Bottleneck, Rate};
#[cfg(doc)]
use super::{DpTotals, Report};

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
    /// The last benchmark run ended before its requests could have been sent at the rate it
    /// names (`bench_not_streamed::sent_too_fast`): its rate line or its duration is not what
    /// the run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_sent_too_fast: Option<SentTooFast>,
    /// Requests wait at a nearly empty pool (`held_admission`), for the
    /// [`Bottleneck::AdmissionHeld`] verdict (or an inconclusive one): the headline points at
    /// how often prefill runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_admission: Option<HeldAdmissionFacts>,
    /// Share of the steady lines at the running cap, for the [`Bottleneck::RunningCapBound`]
    /// verdict (fraction): below one half the cap is reached while the demand fills it, not
    /// held; also for an [`Bottleneck::Inconclusive`] verdict at the cap while nothing waits
    /// (`rules::running_cap::nothing_waits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_cap_share: Option<f64>,
    /// For an [`Bottleneck::Inconclusive`] verdict: the cap the running batch reaches while
    /// requests wait (requests), assumed from SGLang's default under speculative decoding and
    /// not stated by the log, while no line reads the KV pool (`verdict::Reason::AssumedCapUnreadPool`):
    /// the cap or the pool holds the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumed_cap: Option<u64>,
    /// With a `prefill_bound` verdict: every prefill pass admitted one request though the
    /// budget held more (`rules::prefill_limit::OnePerPass`); with an inconclusive verdict at
    /// an assumed cap ([`Headline::assumed_cap`]): the passes took one request each, also
    /// where the batch was below that cap.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_per_pass: bool,
    /// With a `prefill_bound` verdict on a PD prefill server: its passes carry its full batch
    /// while requests wait in its bootstrap queue (`rules::pd_transfer::FullBatches`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pd_prefill_full: Option<PdPrefillFull>,
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
    /// With an `inconclusive` verdict: each scheduler's steady span holds one batch line
    /// (`rules::client_bound::lone_reading`), with requests waiting on it (why they wait is not
    /// in an instant) or decoding at a crawl for its batch (an idle window or a hang).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lone_reading: bool,
    /// No server log was given at all (only a client's files, say): the verdict says so, not
    /// that a log held no scheduler lines.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_server_log: bool,
    /// With an `inconclusive` verdict: the JIT compile line (DeepGEMM's pre-compile) the log
    /// ends in, after its last batch line: the lines are the server's warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_compile: Option<super::SourceRange>,
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

/// A PD prefill server whose passes are full while its bootstrap queue stands.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct PdPrefillFull {
    /// Requests in a full pass: `max_running_requests` per DP rank, else the largest
    /// `#new-seq` seen (requests).
    pub per_pass: u64,
    /// Share of the passes with a bootstrap queue that carry it (fraction).
    pub share: f64,
    /// Largest `#prealloc-req` (requests).
    pub waiting_max: u64,
}

/// A benchmark run that finished faster than it could have been sent at its rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SentTooFast {
    /// The traffic request rate it names (req/s).
    pub sent_per_s: f64,
    /// Successful requests.
    pub requests: u64,
    /// Seconds those requests take to send at that rate on average (`N / R`).
    pub send_s: f64,
    /// The benchmark duration it printed (seconds).
    pub duration_s: f64,
}
