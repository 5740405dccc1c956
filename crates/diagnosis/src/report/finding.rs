//! Findings: what a rule concluded, with the figures and lines behind it.

use schemars::JsonSchema;
use serde::Serialize;

/// How sure a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Figure {
    /// What it is, e.g. `median token usage`.
    pub name: String,
    /// The value (`null` in JSON when unknown or not finite).
    pub value: Option<f64>,
    /// Its unit.
    pub unit: Unit,
}

impl Figure {
    /// A figure; a value that is not finite is kept as unknown (`null`), never as NaN.
    pub fn new(name: impl Into<String>, value: f64, unit: Unit) -> Self {
        Self {
            name: name.into(),
            value: value.is_finite().then_some(value),
            unit,
        }
    }
}

/// The unit of a [`Figure`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A fraction 0-1 (printed as a percentage).
    Fraction,
    /// Requests.
    Requests,
    /// Tokens.
    Tokens,
    /// Tokens per second.
    TokPerS,
    /// Requests per second.
    ReqPerS,
    /// Seconds.
    Seconds,
    /// Bytes.
    Bytes,
    /// GiB (2^30 bytes).
    Gib,
    /// Log lines.
    Lines,
    /// Events (e.g. retractions).
    Events,
    /// Events per hour.
    EventsPerHour,
    /// A dimensionless ratio.
    Ratio,
    /// Scheduler forward iterations.
    Iterations,
}

/// A range of lines that supports a finding: in one source, or from a line of one source to a
/// line of a later one (a scheduler's rotated logs joined into one).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SourceRange {
    /// The source name (path) of the first line.
    pub source: String,
    /// First line (1-based).
    pub first_line: u64,
    /// Last line (inclusive), in `last_source` when that is given, else in `source`.
    pub last_line: u64,
    /// The source of the last line when it is not `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_source: Option<String>,
}

/// Stable identifiers of finding kinds (the JSON `kind` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// See [`crate::Bottleneck::KvCacheBound`].
    KvCacheBound,
    /// See [`crate::Bottleneck::RunningCapBound`].
    RunningCapBound,
    /// See [`crate::Bottleneck::PrefillBound`].
    PrefillBound,
    /// See [`crate::Bottleneck::SchedulerConservative`].
    SchedulerConservative,
    /// See [`crate::Bottleneck::PdTransferBound`].
    PdTransferBound,
    /// See [`crate::Bottleneck::ClientBound`].
    ClientBound,
    /// Running requests but `#token` frozen or gen throughput near zero.
    Stall,
    /// See [`crate::Bottleneck::DecodeComputeBound`].
    DecodeComputeBound,
    /// See [`crate::Bottleneck::PrefillComputeBound`].
    PrefillComputeBound,
    /// KV cache pool exhausted during decode; requests retracted.
    Retraction,
    /// A watchdog timeout: the scheduler hung.
    WatchdogTimeout,
    /// KV transfers failed (PD disaggregation).
    KvTransferFailure,
    /// The fused MoE kernels run with default configs, not tuned for this GPU.
    MoeConfigUntuned,
    /// The server was stopped on request (SIGTERM); a SIGQUIT after it is the stop's cleanup.
    ServerStopped,
    /// A child process failed (SIGQUIT, or a child's non-zero exit, with no SIGTERM before).
    ChildFailed,
    /// The server failed its health check (`Health check failed`): its probe request got no
    /// answer in time, and `/health` answered 503.
    HealthCheckFailed,
    /// What HiCache's storage tier (L3) loaded: its prefetches, completed, empty or revoked.
    HiCacheStorage,
    /// Scheduler passes ran past the slow-pass tracer's threshold.
    SlowSchedulerPass,
    /// Most prompt tokens came from the prefix (radix) cache.
    PrefixReuse,
    /// The first decode line after an idle gap reads low: SGLang's window includes the idle time.
    IdleWindowArtifact,
    /// Decode batches larger than the captured CUDA-graph batch size ran without graphs.
    NoCudaGraph,
    /// The log covers only the ramp-up; no steady state.
    RampOnly,
    /// The log ends under full load: requests kept arriving to its last line (a client
    /// stopped at its time limit, a log captured mid-run), not the ramp-up of a burst.
    EndsUnderLoad,
    /// The log covers only the drain of a run: the batch falls with nothing waiting.
    Drain,
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
    /// Requests wait while the KV pool is nearly empty: admission is held back elsewhere.
    HeldAdmission,
    /// Speculative decoding's accept length: tokens per target forward, and what the drafts cost.
    SpeculativeDecoding,
    /// A process ran out of device memory (a traceback with `OutOfMemoryError`).
    OutOfMemory,
    /// A scheduler died with an exception.
    SchedulerException,
    /// The startup never reached the ready banner.
    StartupIncomplete,
    /// Decode CUDA graphs cover far fewer requests than `max_running_requests` admits.
    CudaGraphCoverage,
    /// A benchmark's client did not stream: its latency figures are invalid.
    BenchmarkNotStreamed,
    /// A benchmark's peak requests in flight exceeded the server's `max_running_requests`.
    BenchmarkPeakAboveCap,
    /// A benchmark's peak concurrent requests exceed its own `--max-concurrency`: the peak
    /// counts requests active within one second.
    BenchmarkPeakAboveLimit,
    /// A benchmark's peak output rate is below its mean: the peak counts streamed chunks.
    BenchmarkPeakBelowMean,
    /// A benchmark's max ITL says one stream got no token for many seconds.
    BenchmarkStalledStream,
    /// A benchmark's input holds vision tokens: TTFT includes encoding them.
    BenchmarkVisionInput,
    /// A benchmark ran in about one wave of requests: its rates are a burst's, not steady.
    BenchmarkShortBurst,
    /// A benchmark counts more output tokens per request than the server generated per
    /// completed request over the same run.
    BenchmarkTokensDisagree,
    /// The server turned generation requests away (HTTP errors, prompts over the context
    /// length).
    RequestsRejected,
}

/// A conclusion with the numbers and lines that support it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Finding {
    /// Stable kind.
    pub kind: FindingKind,
    /// One-line statement (English, from its rule or `narrative`).
    pub title: String,
    /// Explanation, with what to change where that follows (English, from its rule or `narrative`).
    pub detail: String,
    /// Supporting numbers.
    pub figures: Vec<Figure>,
    /// Supporting line ranges.
    pub evidence: Vec<SourceRange>,
    /// How sure.
    pub confidence: Confidence,
    /// The settings this finding says to change; each is among the recommendations
    /// ([`crate::recommend`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levers: Vec<Lever>,
}

/// A setting a finding may say to change: a server flag, or the client's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lever {
    /// `--mem-fraction-static`: the share of GPU memory for weights plus the KV pool.
    MemFractionStatic,
    /// `--kv-cache-dtype` (fp8 halves bytes per token).
    KvCacheDtype,
    /// The requests' `max_tokens` (SGLang reserves KV for it at admission).
    MaxTokens,
    /// `--schedule-conservativeness`: how much KV admission reserves for future tokens.
    ScheduleConservativeness,
    /// `--max-running-requests` (per DP rank).
    MaxRunningRequests,
    /// `--max-mamba-cache-size`: the mamba-state slots of a hybrid SSM model.
    MaxMambaCacheSize,
    /// `--cuda-graph-max-bs`: the largest decode batch run as a captured graph.
    CudaGraphMaxBs,
    /// `--disable-cuda-graph`: every decode step runs eagerly.
    DisableCudaGraph,
    /// `--chunked-prefill-size`: the prefill chunk (tokens).
    ChunkedPrefillSize,
    /// `--max-prefill-tokens`: the token budget of one prefill batch.
    MaxPrefillTokens,
    /// `--enable-mixed-chunk`: prefill chunks run with the decode batch.
    EnableMixedChunk,
    /// `--load-balance-method`: how the DP controller spreads requests over ranks.
    LoadBalanceMethod,
    /// `--speculative-*`: the speculative decoding settings (algorithm, steps, draft tokens).
    SpeculativeDecoding,
    /// The client's concurrency (`--max-concurrency` of a benchmark, the batch client's
    /// limit).
    ClientConcurrency,
    /// `--context-length`: the longest prompt plus completion the server accepts (tokens).
    ContextLength,
    /// How often the scheduler tries a prefill pass: `--num-continuous-decode-steps` (decode
    /// steps run before the next check for new requests; NPU builds also have a prefill-decode
    /// interval).
    PrefillInterval,
    /// The fused MoE kernels' tuned config for this GPU, shape and dtype (the file SGLang looks
    /// for; its `tuning_fused_moe_triton.py` benchmark writes it).
    MoeKernelConfig,
}

impl Lever {
    /// The flag (or client setting) as the user types it.
    pub fn flag(self) -> &'static str {
        match self {
            Lever::MemFractionStatic => "--mem-fraction-static",
            Lever::KvCacheDtype => "--kv-cache-dtype",
            Lever::MaxTokens => "max_tokens",
            Lever::ScheduleConservativeness => "--schedule-conservativeness",
            Lever::MaxRunningRequests => "--max-running-requests",
            Lever::MaxMambaCacheSize => "--max-mamba-cache-size",
            Lever::CudaGraphMaxBs => "--cuda-graph-max-bs",
            Lever::DisableCudaGraph => "--disable-cuda-graph",
            Lever::ChunkedPrefillSize => "--chunked-prefill-size",
            Lever::MaxPrefillTokens => "--max-prefill-tokens",
            Lever::EnableMixedChunk => "--enable-mixed-chunk",
            Lever::LoadBalanceMethod => "--load-balance-method",
            Lever::SpeculativeDecoding => "--speculative-num-steps",
            Lever::ClientConcurrency => "--max-concurrency",
            Lever::ContextLength => "--context-length",
            Lever::PrefillInterval => "--num-continuous-decode-steps",
            Lever::MoeKernelConfig => "the fused MoE kernel config",
        }
    }
}
