//! The report: what `diagnose` found, as data only. This module is a leaf: it imports nothing
//! of this crate, only the data types of the crates it reports on (`kv-capacity`,
//! `sglang-log`). Rendering (text, Markdown) is the binary's job; English sentences inside the
//! report (`headline.summary`, finding titles and details, `method`s) come from
//! `crate::narrative`, and no code decides on them.
//!
//! The JSON form is this structure serialised with serde; its schema is generated from these
//! types (`schemars`) into `docs/report.schema.json` and versioned by [`SCHEMA_VERSION`]. Every
//! enum has one spelling (`snake_case`). Unknown values are `null`, never 0 and never NaN.

mod admission;
mod capacity;
mod client;
mod finding;
mod headline;
mod inputs;
mod measures;
mod names;
pub(crate) mod prefill_limit;
mod recommendation;
mod requests;
mod runs;
mod scheduler;

pub use admission::{Admission, Binding, Constraint, Slack};
pub use capacity::{
    CapacityModel, CapacitySummary, DpAttentionSizing, DpOption, NoCeiling, Projection,
    ProjectionRow, RetractionSummary,
};
pub use client::{
    BenchmarkRun, ClaimCheck, ClaimedFigure, ClientExpectation, ClientSetAside, ClientSummary,
    EtaSummary, Expectation, ExpectationCheck, ForwardTimer, KvHolds, LatencySpread,
    MetricsSummary, OccupancySummary, Reach, SampleAdequacy, SetAsideReason,
};
pub use finding::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
pub use headline::{
    Headline, HeldAdmissionFacts, Incident, LongRequests, PdPrefillFull, PoolFill, Ramp,
    RejectedRequests, SentTooFast, SlowPrefill, StartupCapacity, StartupStep,
};
pub use inputs::{
    InputKind, InputSummary, MalformedLine, NotConcluded, NotConcludedReason, RejectedValue,
};
pub use measures::{GaugeStats, Phase, PhaseKind, Rate, RateBasis, Span, SpanBasis};
pub use recommendation::{Recommendation, RecommendationKind};
pub use requests::{ReqMode, RequestTimesSummary, Spread};
pub use runs::{RunLine, RunStart, RunSummary, ServerRuns};
pub use scheduler::{DpTotals, SchedulerSummary};

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
    /// PD disaggregation could not move KV (`KVTransferError`, `Decode transfer failed`,
    /// `Prefill transfer failed`): without batch lines, or when the batch lines name no
    /// bottleneck, the failed transfers are what blocked serving (SGLang aborts each request
    /// whose transfer failed, `disaggregation/prefill.py` and `decode.py`).
    KvTransferFailed,
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
    /// The scheduler's own per-request times, when the log prints them (`ReqTimeStats` lines,
    /// `--log-requests`). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_times: Option<RequestTimesSummary>,
    /// The server runs the log holds, when more than one (a restart, a second startup block, a
    /// long gap, two pasted blocks): everything above is the last run's; each earlier run is
    /// diagnosed on its own. Absent for a log of one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<ServerRuns>,
}
