//! Evidence: owned, bounded facts gathered from parsed log records.
//!
//! The builder takes [`sglang_log::Record`]s one at a time (the caller owns the reading), so this
//! crate does no I/O. Everything kept is owned and bounded: per-rank [`Timeline`]s of samples plus
//! exact running aggregates, deduplicated retractions, and the startup lines that describe capacity.

use std::collections::BTreeMap;

use serde::Serialize;
use sglang_log::{BenchCollector, BenchSummary, Event, ParseStats, RankTags, Record};

pub mod frozen;
pub mod merge;
pub mod phases;
pub mod pools;
pub mod runs;
pub mod timeline;
pub mod view;

pub use timeline::Timeline;

/// `items` collected into a vector that holds `bound` items from the start (`bound`: the
/// length of the slice they are taken from, an upper bound of their count). A filtered copy of
/// a timeline collected by `collect` grows by doubling: every step copies what it holds and
/// (the binary returns freed memory to the OS at once) faults in fresh pages; reserved once,
/// only the pages written are touched.
pub(crate) fn collect_within<T>(bound: usize, items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = Vec::with_capacity(bound);
    v.extend(items);
    v
}

use crate::report::InputKind;

/// Index of an input source (a log file) in [`Evidence::sources`].
pub type SourceId = usize;

/// Where a fact came from: a source and a 1-based line number in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Loc {
    /// Index into [`Evidence::sources`].
    pub source: SourceId,
    /// 1-based line number.
    pub line: u64,
}

/// One input log and what its parse produced.
#[derive(Clone, Debug, Serialize)]
pub struct SourceInfo {
    /// The name given by the caller (a path, or `-` for stdin).
    pub name: String,
    /// What it is (a log, or a live server's `/metrics` polls).
    pub kind: InputKind,
    /// Parse counts; `None` until [`EvidenceBuilder::finish_source`] is called.
    pub stats: Option<SourceStats>,
    /// The part its server plays in PD disaggregation: what the last of its own startup lines
    /// that names `disaggregation_mode` says (`server_args=ServerArgs(...)` or a launch
    /// command; the run diagnosed is the last one), or, when none names it, what its batch
    /// lines in every run show once the evidence is built (one role's PD fields only: see
    /// [`EvidenceBuilder::build`]); `None` for a server that is not disaggregated (`null`), or
    /// a log that shows neither role or both.
    pub pd_role: Option<PdRole>,
    /// Its lines open a server run: a startup line (`server_args`, `Load weight end`, ...:
    /// [`runs`]) comes before its first batch line. A rotated later part of a log does not;
    /// every node's or rank's log of one run does, and they overlap in time.
    pub opens_with_startup: bool,
}

/// The part a server plays in prefill/decode (PD) disaggregation: SGLang's
/// `--disaggregation-mode` (`server_args.py`; `null` when not disaggregated). A prefill
/// instance and a decode instance are two servers, each with its own KV pool, limits and
/// schedulers (SGLang `disaggregation/prefill.py`, `disaggregation/decode.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PdRole {
    /// `--disaggregation-mode prefill`: runs prefill and hands the KV cache over.
    Prefill,
    /// `--disaggregation-mode decode`: receives the KV cache and decodes.
    Decode,
}

impl PdRole {
    /// The role of a `disaggregation_mode` value as SGLang prints it (`'prefill'`, `decode`,
    /// quoted or not); `None` for `null` and anything else.
    pub fn from_arg(value: &str) -> Option<PdRole> {
        match value.trim().trim_matches(|c| c == '\'' || c == '"') {
            "prefill" => Some(PdRole::Prefill),
            "decode" => Some(PdRole::Decode),
            _ => None,
        }
    }
}

/// The counts of one parse, owned (see [`sglang_log::ParseStats`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceStats {
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines recognised as SGLang events (batch, retraction, startup, ...).
    pub events: u64,
    /// Prefill batch lines.
    pub prefill_lines: u64,
    /// Decode batch lines.
    pub decode_lines: u64,
    /// Lines that are not SGLang scheduler output (access logs, tracebacks, other programs).
    pub other_lines: u64,
    /// Lines that looked like SGLang output but could not be parsed.
    pub malformed_lines: u64,
    /// The first malformed lines: (line number, reason, excerpt).
    pub malformed: Vec<(u64, String, String)>,
    /// Lines cut at the line-length cap (also counted as malformed).
    pub long_lines: u64,
    /// Damaged batch lines: fragments that are not `key: value` (a paste that ate names or
    /// numbers, merged columns); their readable fields were used.
    pub damaged_lines: u64,
    /// The first damaged lines: (line number, reason, excerpt).
    pub damaged: Vec<(u64, String, String)>,
    /// Batch lines with a field set aside as impossible (NaN, infinite, negative, out of range).
    pub rejected_lines: u64,
    /// Fields set aside.
    pub rejected_fields: u64,
    /// The first fields set aside: (line number, key, value, why).
    pub rejected: Vec<(u64, String, String, String)>,
}

impl From<&ParseStats> for SourceStats {
    fn from(s: &ParseStats) -> Self {
        Self {
            lines: s.lines,
            bytes: s.bytes,
            events: s.events,
            prefill_lines: s.prefill_lines,
            decode_lines: s.decode_lines,
            other_lines: s.other_lines,
            malformed_lines: s.malformed_lines,
            malformed: s
                .malformed
                .iter()
                .map(|m| (m.line_no, m.reason.to_string(), m.excerpt.clone()))
                .collect(),
            long_lines: s.long_lines,
            damaged_lines: s.partial_batch_lines,
            damaged: s
                .partial
                .iter()
                .map(|m| (m.line_no, m.reason.to_string(), m.excerpt.clone()))
                .collect(),
            rejected_lines: s.rejected_lines,
            rejected_fields: s.rejected_fields,
            rejected: s
                .rejected
                .iter()
                .map(|r| {
                    (
                        r.line_no,
                        r.key.clone(),
                        r.value.clone(),
                        r.reason.to_string(),
                    )
                })
                .collect(),
        }
    }
}

/// Identity of one scheduler process that prints batch lines.
///
/// Under TP only attention-TP rank 0 prints (SGLang `scheduler_metrics_mixin.py`,
/// spec §1.3), so a scheduler is identified by its DP rank and PP stage; TP ranks that
/// print the same batch (`--enable-metrics-for-all-schedulers`) are duplicates of it and are
/// not summed. Without a DP tag, schedulers in different files are different servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SchedulerKey {
    /// The source, when the line carries no DP rank (else `None`: DP ranks are global).
    pub source: Option<SourceId>,
    /// DP rank (`DPn` tag), if any.
    pub dp: Option<u32>,
    /// PP stage (`PPn` tag), if any.
    pub pp: Option<u32>,
}

impl std::fmt::Display for SchedulerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(dp) = self.dp {
            parts.push(format!("DP{dp}"));
        }
        if let Some(pp) = self.pp {
            parts.push(format!("PP{pp}"));
        }
        if parts.is_empty() {
            parts.push("rank 0".to_string());
        }
        write!(f, "{}", parts.join(" "))
    }
}

/// One `Decode batch` line, owned. Times are seconds (see [`sglang_log::Timestamp::seconds`],
/// unwrapped across midnight for date-less logs); `None` when the line has no timestamp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DecodeSample {
    /// Seconds.
    pub t: Option<f64>,
    /// 1-based line number in its source.
    pub line: u64,
    /// Its source: an index into [`Evidence::sources`] (a [`SourceId`], narrowed so that the
    /// sample stays 240 bytes). A joined scheduler's samples come from several sources.
    pub source: u32,
    /// `#running-req` (requests).
    pub running: Option<u64>,
    /// `#queue-req` (requests).
    pub queue: Option<u64>,
    /// `#token` (KV slots in use, tokens).
    pub tokens: Option<u64>,
    /// `token usage` (fraction 0-1); for hybrid models the full-attention pool.
    pub usage: Option<f64>,
    /// `gen throughput (token/s)`.
    pub gen_tps: Option<f64>,
    /// Whether the batch ran as a captured CUDA/NPU graph.
    pub graph: Option<bool>,
    /// `accept len` (tokens per verify step, speculative decoding).
    pub accept_len: Option<f64>,
    /// `accept rate` (fraction 0-1, speculative decoding; its definition depends on the version,
    /// spec §2.5).
    pub accept_rate: Option<f64>,
    /// `cap len` (tokens per verify step, DSpark/DFLASH speculative decoding).
    pub cap_len: Option<f64>,
    /// PD decode: `pre-allocated usage` (fraction 0-1).
    pub pre_allocated_usage: Option<f64>,
    /// PD decode: `#prealloc-req` (requests).
    pub prealloc_req: Option<u64>,
    /// PD decode: `#transfer-req` (requests).
    pub transfer_req: Option<u64>,
    /// `mamba usage` (fraction 0-1), hybrid SSM models.
    pub mamba_usage: Option<f64>,
    /// `swa token usage` (fraction 0-1), hybrid sliding-window models: the SWA pool, against
    /// its own size (spec §2.6).
    pub swa_usage: Option<f64>,
}

impl DecodeSample {
    /// Where the line is.
    pub fn loc(&self) -> Loc {
        Loc {
            source: self.source as SourceId,
            line: self.line,
        }
    }
}

/// One `Prefill batch` line, owned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PrefillSample {
    /// Seconds (see [`DecodeSample::t`]).
    pub t: Option<f64>,
    /// 1-based line number in its source.
    pub line: u64,
    /// Its source (see [`DecodeSample::source`]).
    pub source: u32,
    /// `#new-seq` (requests).
    pub new_seq: Option<u64>,
    /// `#new-token` (tokens computed in this batch).
    pub new_token: Option<u64>,
    /// `#cached-token` (prefix tokens reused).
    pub cached_token: Option<u64>,
    /// `#running-req` (requests).
    pub running: Option<u64>,
    /// `#queue-req` (requests).
    pub queue: Option<u64>,
    /// `token usage` (fraction 0-1).
    pub usage: Option<f64>,
    /// `input throughput (token/s)`: the batch's new tokens over the time since the previous
    /// prefill line (SGLang `scheduler_metrics_mixin.py` `log_prefill_stats`), so at most the
    /// rate prefill computes at (tok/s).
    pub input_tps: Option<f64>,
    /// The graph flag (`cuda graph: True`), printed on prefill lines from v0.5.9, when the line
    /// moved after the forward: its `token usage` then includes the batch's own KV (spec
    /// §2.2.1); without it the usage was read before the batch was allocated.
    pub graph: Option<bool>,
    /// PD prefill: `#prealloc-req` / `#bootstrap-req` (requests).
    pub prealloc_req: Option<u64>,
    /// PD prefill: `#inflight-req` (requests).
    pub inflight_req: Option<u64>,
    /// The forward-iteration counter of `Prefill batch [N]` (v0.5.4+, or
    /// `SGLANG_LOG_FORWARD_ITERS=1`).
    pub iter: Option<u64>,
}

impl PrefillSample {
    /// Where the line is.
    pub fn loc(&self) -> Loc {
        Loc {
            source: self.source as SourceId,
            line: self.line,
        }
    }
}

/// Exact maxima and sums over every line of one scheduler (never decimated).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Aggregates {
    /// Highest `#running-req` on any batch line (requests).
    pub max_running: Option<u64>,
    /// Highest `#queue-req` on any batch line (requests).
    pub max_queue: Option<u64>,
    /// Highest `token usage` on any batch line (fraction 0-1).
    pub max_usage: Option<f64>,
    /// Highest `gen throughput` on a decode line (tok/s).
    pub max_gen_tps: Option<f64>,
    /// Highest `mamba usage` (fraction 0-1).
    pub max_mamba_usage: Option<f64>,
    /// Highest `#prealloc-req` (requests).
    pub max_prealloc_req: Option<u64>,
    /// Σ `#new-token` over prefill lines (tokens).
    pub prefill_new_tokens: u64,
    /// Σ `#cached-token` over prefill lines (tokens).
    pub prefill_cached_tokens: u64,
    /// Largest `#new-token` of one prefill line (tokens).
    pub max_prefill_new_tokens: Option<u64>,
    /// Highest `input throughput` of a prefill line (tok/s): a lower bound on the rate prefill
    /// computes at (the figure's time includes whatever ran since the previous prefill line).
    pub max_input_tps: Option<f64>,
    /// Decode lines whose batch did not run as a graph.
    pub decode_without_graph: u64,
    /// Decode lines with a PD decode instance's fields (`#prealloc-req`, `#transfer-req`,
    /// `pre-allocated usage`: SGLang `disaggregation/decode.py`).
    pub pd_decode_lines: u64,
    /// Prefill lines with a PD prefill instance's fields (its bootstrap queue as
    /// `#prealloc-req`, or `#inflight-req` / `#transferring-req`: SGLang
    /// `disaggregation/prefill.py`).
    pub pd_prefill_lines: u64,
}

/// Whether `a` and `b` hold the same samples apart from what `like(x, y)` takes from `y` into
/// `x` (e.g. the source: two copies of a log are two sources).
fn equal_but<T: PartialEq>(a: &[T], b: &[T], like: impl Fn(&T, &T) -> T) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| like(x, y) == *y)
}

fn max_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y > x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The batch lines of one scheduler, in log order.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SchedulerTimeline {
    /// The TP rank whose lines were kept (the lowest seen); other TP ranks' duplicates are counted in `duplicate_lines`.
    pub tp: Option<u32>,
    /// Decode samples (bounded; see [`Timeline`]).
    pub decode: Timeline<DecodeSample>,
    /// Prefill samples (bounded).
    pub prefill: Timeline<PrefillSample>,
    /// Exact aggregates over every kept-rank line.
    pub agg: Aggregates,
    /// Lines from other TP ranks of the same scheduler, skipped as duplicates.
    pub duplicate_lines: u64,
    /// Frozen `#token` runs over every kept-rank decode line (exact, whatever `decode` keeps).
    pub frozen: frozen::FrozenTracker,
    /// First and last line of this scheduler's batch lines.
    pub first: Option<Loc>,
    /// Last batch line.
    pub last: Option<Loc>,
}

/// A retraction, deduplicated across TP ranks (every TP rank prints the same line; spec §1.3).
#[derive(Clone, Debug, Serialize)]
pub struct RetractionEvent {
    /// Seconds, if the line had a timestamp.
    pub t: Option<f64>,
    /// Where it was first seen.
    pub loc: Loc,
    /// `#retracted_reqs` (requests).
    pub retracted_reqs: Option<u64>,
    /// `#new_tokens_gained` (KV slots freed, tokens), v0.5.7+.
    pub new_tokens_gained: Option<u64>,
    /// `#new_token_ratio` before the retraction.
    pub ratio_before: Option<f64>,
    /// `#new_token_ratio` after the retraction.
    pub ratio_after: Option<f64>,
    /// How many rank lines reported this same event.
    pub ranks_reporting: u32,
}

/// What identifies one decode line's content: time, running, queue, `#token`, gen throughput.
type DecodeKey = (
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

fn decode_key(d: &DecodeSample) -> DecodeKey {
    (
        d.t.map(f64::to_bits),
        d.running,
        d.queue,
        d.tokens,
        d.gen_tps.map(f64::to_bits),
    )
}

/// Retraction events kept as a sample before older ones are thinned (events).
pub const MAX_RETRACTION_SAMPLES: usize = 4096;
/// The most recent events that thinning never touches: the window in which other TP ranks'
/// lines of the same event are matched to it (events).
const RECENT_RETRACTIONS: usize = 64;

/// One source's share of the retraction totals ([`Evidence::retractions_by_source`]).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SourceRetractions {
    /// Its deduplicated events.
    pub totals: RetractionTotals,
    /// Its retraction lines (all ranks).
    pub lines: u64,
}

/// Exact totals over every deduplicated retraction event, however many are kept as samples.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RetractionTotals {
    /// Deduplicated events.
    pub events: u64,
    /// Sum of `#retracted_reqs` (requests).
    pub retracted_reqs: u64,
    /// Sum of `#new_tokens_gained` (KV slots freed, tokens), when any line reports it.
    pub tokens_freed: Option<u64>,
    /// Highest `#new_token_ratio` after a retraction.
    pub max_ratio_after: Option<f64>,
    /// Time of the first and last event (seconds), when timestamped.
    pub time_span: Option<(f64, f64)>,
    /// The first retraction line of any rank.
    pub first_line: Option<Loc>,
    /// The last retraction line of any rank (duplicates included).
    pub last_line: Option<Loc>,
}

impl RetractionTotals {
    /// Count one new (deduplicated) event.
    fn add(&mut self, e: &RetractionEvent) {
        self.events += 1;
        self.retracted_reqs += e.retracted_reqs.unwrap_or(0);
        if let Some(n) = e.new_tokens_gained {
            self.tokens_freed = Some(self.tokens_freed.unwrap_or(0) + n);
        }
        self.max_ratio_after = max_opt(self.max_ratio_after, e.ratio_after);
        if let Some(t) = e.t.filter(|t| t.is_finite()) {
            self.time_span = Some(match self.time_span {
                Some((a, b)) => (a.min(t), b.max(t)),
                None => (t, t),
            });
        }
        self.note_line(e.loc);
    }

    /// Note a retraction line (a new event or another rank's copy of one).
    fn note_line(&mut self, loc: Loc) {
        self.first_line.get_or_insert(loc);
        self.last_line = Some(loc);
    }

    /// Adds the totals of events read after these (another source's, read later).
    pub fn merge(&mut self, o: &RetractionTotals) {
        self.events += o.events;
        self.retracted_reqs += o.retracted_reqs;
        if let Some(n) = o.tokens_freed {
            self.tokens_freed = Some(self.tokens_freed.unwrap_or(0) + n);
        }
        self.max_ratio_after = max_opt(self.max_ratio_after, o.max_ratio_after);
        self.time_span = match (self.time_span, o.time_span) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, None) => x,
            (None, y) => y,
        };
        if self.first_line.is_none() {
            self.first_line = o.first_line;
        }
        if o.last_line.is_some() {
            self.last_line = o.last_line;
        }
    }

    /// Totals over a list of events (used when a time window cuts the kept sample).
    pub fn of(events: &[RetractionEvent]) -> Self {
        let mut t = Self::default();
        for e in events {
            t.add(e);
        }
        t
    }
}

/// Startup facts about capacity and memory (first seen per kind; values per GPU).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Startup {
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
    kv_alloc_seen: Vec<(RankTags, Option<u64>, u64)>,
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
}

/// Keys copied out of the `server_args=ServerArgs(...)` line.
const SERVER_ARG_KEYS: &[&str] = &[
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
    "max_total_tokens",
    "schedule_policy",
    "schedule_conservativeness",
    "kv_cache_dtype",
    "enable_hierarchical_cache",
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

/// A counted kind of failure line (watchdog timeout, KV transfer failure).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FailureLines {
    /// How many lines (all ranks).
    pub count: u64,
    /// The first one.
    pub first: Option<Loc>,
    /// Its message, shortened to 200 characters.
    pub first_text: Option<String>,
}

impl FailureLines {
    fn note(&mut self, loc: Loc, text: &str) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(loc);
            self.first_text = Some(text.chars().take(200).collect());
        }
    }
}

/// Everything the diagnosis knows from the logs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Evidence {
    /// Input sources in the order they were added.
    pub sources: Vec<SourceInfo>,
    /// Batch-line timelines per scheduler.
    pub schedulers: BTreeMap<SchedulerKey, SchedulerTimeline>,
    /// Deduplicated retraction events in log order: all of them up to
    /// [`MAX_RETRACTION_SAMPLES`], beyond that an evenly spread sample (memory stays bounded on
    /// logs with hundreds of thousands of retractions). Counts and sums come from
    /// [`Self::retraction_totals`], which are exact.
    pub retractions: Vec<RetractionEvent>,
    /// Exact totals over every deduplicated retraction event.
    pub retraction_totals: RetractionTotals,
    /// Retraction lines before deduplication (all ranks).
    pub retraction_lines: u64,
    /// The retraction totals and lines of each source, by [`SourceId`] (shorter when the last
    /// sources hold none): what is counted as the log is read. [`Self::retraction_totals`] and
    /// [`Self::retraction_lines`] are their sum ([`Self::sum_retractions`]), which stays exact
    /// without a file that only repeats another, however thinned [`Self::retractions`] is.
    pub retractions_by_source: Vec<SourceRetractions>,
    /// Startup capacity and memory facts.
    pub startup: Startup,
    /// Watchdog timeouts.
    pub watchdog: FailureLines,
    /// KV transfer failures (PD disaggregation).
    pub kv_transfer_failures: FailureLines,
    /// `Using default MoE kernel config … sub-optimal` lines (all ranks).
    pub moe_config_untuned: FailureLines,
    /// `Entering DeepGEMM JIT Pre-Compile session` lines: requests wait while kernels compile
    /// (10-20 min on first use).
    pub jit_compile: FailureLines,
    /// Whether any timestamp lacked a date (times are then seconds since midnight, unwrapped).
    pub dateless_timestamps: bool,
    /// Benchmark summary blocks (`Serving Benchmark Result`, spec §7) found among the lines
    /// that are not server lines, e.g. a CI log that runs server and benchmark together.
    pub benchmarks: Vec<SourcedBench>,
    /// Tracebacks, py-spy dumps and the startup step reached ([`crate::incidents`]).
    pub incidents: crate::incidents::Incidents,
    /// Where this server run lies in the log ([`runs`]); everything above is this run's.
    pub run: runs::RunBounds,
    /// The log's earlier server runs, each its own evidence, oldest first (at most
    /// [`runs::MAX_EARLIER_RUNS`]; their own `earlier_runs` are empty).
    pub earlier_runs: Vec<Evidence>,
    /// Earlier runs beyond [`runs::MAX_EARLIER_RUNS`], not kept (runs).
    pub earlier_runs_dropped: u64,
}

/// What [`Evidence::consolidated`] joined.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JoinNote {
    /// `file` repeats `of` (the same lines): counted once.
    Repeats {
        /// The repeating file.
        file: String,
        /// The file it repeats.
        of: String,
    },
    /// `file` continues `of` in time (rotated parts): one scheduler.
    Continues {
        /// The later part.
        file: String,
        /// The earlier part.
        of: String,
    },
    /// `file` overlaps `of` with the same lines (a part cut with overlap, another TP rank's
    /// copy): one scheduler, each line counted once.
    Overlaps {
        /// The later file.
        file: String,
        /// The file it overlaps.
        of: String,
    },
    /// Lines of a scheduler were out of time order by less than the jitter window and were
    /// put in order.
    Reordered {
        /// The scheduler.
        scheduler: String,
        /// Steps back in time between consecutive lines.
        steps_back: usize,
    },
    /// The clock of a scheduler steps back by more than the jitter window: a restart or a
    /// second run; only the last run is diagnosed.
    EarlierRunsSetAside {
        /// The scheduler.
        scheduler: String,
        /// Runs seen.
        runs: usize,
        /// Seconds the clock stepped back at the last restart.
        step_back_s: f64,
        /// First line of the run kept.
        from_line: u64,
    },
}

/// A benchmark summary block and the source it was read from.
#[derive(Clone, Debug, Serialize)]
pub struct SourcedBench {
    /// The source (log file) that holds it.
    pub source: SourceId,
    /// The block.
    pub summary: BenchSummary,
}

impl Aggregates {
    fn merge(&mut self, o: &Aggregates) {
        self.max_running = max_opt(self.max_running, o.max_running);
        self.max_queue = max_opt(self.max_queue, o.max_queue);
        self.max_usage = max_opt(self.max_usage, o.max_usage);
        self.max_gen_tps = max_opt(self.max_gen_tps, o.max_gen_tps);
        self.max_mamba_usage = max_opt(self.max_mamba_usage, o.max_mamba_usage);
        self.max_prealloc_req = max_opt(self.max_prealloc_req, o.max_prealloc_req);
        self.prefill_new_tokens += o.prefill_new_tokens;
        self.prefill_cached_tokens += o.prefill_cached_tokens;
        self.max_prefill_new_tokens =
            max_opt(self.max_prefill_new_tokens, o.max_prefill_new_tokens);
        self.max_input_tps = max_opt(self.max_input_tps, o.max_input_tps);
        self.decode_without_graph += o.decode_without_graph;
        self.pd_decode_lines += o.pd_decode_lines;
        self.pd_prefill_lines += o.pd_prefill_lines;
    }
}

impl SchedulerTimeline {
    /// An empty timeline whose decode and prefill samples are each bounded by `capacity`.
    pub fn with_capacity(capacity: usize) -> Self {
        SchedulerTimeline {
            decode: Timeline::with_capacity(capacity),
            prefill: Timeline::with_capacity(capacity),
            ..SchedulerTimeline::default()
        }
    }

    /// Record one decode sample: exact aggregates, then the bounded timeline.
    pub fn push_decode(&mut self, d: DecodeSample) {
        self.note_decode(&d, d.t, d.loc());
        self.decode.push(d);
    }

    /// The exact facts of one decode line `d` at `at` (time `t`, seconds): its aggregates and
    /// the frozen runs.
    fn note_decode(&mut self, d: &DecodeSample, t: Option<f64>, at: Loc) {
        self.frozen.push(d.tokens, d.running, d.gen_tps, t, at);
        let agg = &mut self.agg;
        agg.max_running = max_opt(agg.max_running, d.running);
        agg.max_queue = max_opt(agg.max_queue, d.queue);
        agg.max_usage = max_opt(agg.max_usage, d.usage);
        agg.max_gen_tps = max_opt(agg.max_gen_tps, d.gen_tps);
        agg.max_mamba_usage = max_opt(agg.max_mamba_usage, d.mamba_usage);
        agg.max_prealloc_req = max_opt(agg.max_prealloc_req, d.prealloc_req);
        if d.graph == Some(false) {
            agg.decode_without_graph += 1;
        }
        agg.pd_decode_lines += u64::from(
            d.prealloc_req.is_some() || d.transfer_req.is_some() || d.pre_allocated_usage.is_some(),
        );
    }

    /// Record one prefill sample: exact aggregates, then the bounded timeline.
    pub fn push_prefill(&mut self, p: PrefillSample) {
        self.note_prefill(&p);
        self.prefill.push(p);
    }

    /// The exact aggregates of one prefill sample.
    fn note_prefill(&mut self, p: &PrefillSample) {
        let agg = &mut self.agg;
        agg.max_running = max_opt(agg.max_running, p.running);
        agg.max_queue = max_opt(agg.max_queue, p.queue);
        agg.max_usage = max_opt(agg.max_usage, p.usage);
        agg.prefill_new_tokens += p.new_token.unwrap_or(0);
        agg.prefill_cached_tokens += p.cached_token.unwrap_or(0);
        agg.max_prefill_new_tokens = max_opt(agg.max_prefill_new_tokens, p.new_token);
        agg.max_input_tps = max_opt(agg.max_input_tps, p.input_tps);
        agg.max_prealloc_req = max_opt(agg.max_prealloc_req, p.prealloc_req);
        agg.pd_prefill_lines += u64::from(p.prealloc_req.is_some() || p.inflight_req.is_some());
    }

    /// Whether both sample lists are in time order (untimed samples do not count).
    pub fn is_time_ordered(&self) -> bool {
        fn ordered(ts: impl Iterator<Item = f64>) -> bool {
            let mut prev = f64::NEG_INFINITY;
            ts.into_iter().all(|t| {
                let ok = t >= prev;
                prev = t;
                ok
            })
        }
        ordered(self.decode.samples().iter().filter_map(|d| d.t))
            && ordered(self.prefill.samples().iter().filter_map(|p| p.t))
    }

    /// Its decode samples by source and line, when it kept every line (rules that read what
    /// happened between consecutive lines need them all: between two kept samples of a thinned
    /// timeline, one line in `stride`, nothing is known). Keyed by source too: a scheduler
    /// joined from several files repeats line numbers.
    pub fn every_decode_line(
        &self,
    ) -> Option<std::collections::HashMap<(u32, u64), &DecodeSample>> {
        (self.decode.stride() == 1 && self.prefill.stride() == 1).then(|| {
            self.decode
                .samples()
                .iter()
                .map(|d| ((d.source, d.line), d))
                .collect()
        })
    }

    /// Whether `other` holds the same lines (the same file read twice, or its `.gz`): the same
    /// counts, TP rank and samples.
    pub fn same_lines(&self, other: &SchedulerTimeline) -> bool {
        self.tp == other.tp
            && self.decode.pushed() == other.decode.pushed()
            && self.prefill.pushed() == other.prefill.pushed()
            && equal_but(self.decode.samples(), other.decode.samples(), |x, y| {
                DecodeSample {
                    source: y.source,
                    ..*x
                }
            })
            && equal_but(self.prefill.samples(), other.prefill.samples(), |x, y| {
                PrefillSample {
                    source: y.source,
                    ..*x
                }
            })
    }

    /// The share of `other`'s decode lines inside this timeline's time range that this one holds
    /// too (the same time, running, queue, `#token` and gen throughput), when at least
    /// [`crate::thresholds::MIN_OVERLAP_LINES`] of them fall in the range: overlapping copies
    /// of one log (a part cut with overlap, another TP rank's file of the same batches).
    pub fn overlap_share(&self, other: &SchedulerTimeline) -> Option<f64> {
        let (from, to) = self.time_range()?;
        let mine: std::collections::HashSet<DecodeKey> =
            self.decode.samples().iter().map(decode_key).collect();
        let inside: Vec<DecodeKey> = other
            .decode
            .samples()
            .iter()
            .filter(|d| d.t.is_some_and(|t| t >= from && t <= to))
            .map(decode_key)
            .collect();
        (inside.len() >= crate::thresholds::MIN_OVERLAP_LINES).then(|| {
            inside.iter().filter(|k| mine.contains(k)).count() as f64 / inside.len() as f64
        })
    }

    /// Join `other`, an overlapping copy of this scheduler's log: its lines that this one does
    /// not hold are added, in time order; those it holds are counted as duplicates.
    fn union_with(&mut self, other: &SchedulerTimeline) {
        let mine: std::collections::HashSet<DecodeKey> =
            self.decode.samples().iter().map(decode_key).collect();
        let mine_p: std::collections::HashSet<(Option<u64>, u64, Option<u64>)> = self
            .prefill
            .samples()
            .iter()
            .map(|p| (p.t.map(f64::to_bits), p.new_token.unwrap_or(0), p.queue))
            .collect();
        let mut decode: Vec<DecodeSample> = self.decode.samples().to_vec();
        let mut prefill: Vec<PrefillSample> = self.prefill.samples().to_vec();
        let mut dup = 0;
        for d in other.decode.samples() {
            if mine.contains(&decode_key(d)) {
                dup += 1;
            } else {
                decode.push(*d);
            }
        }
        for p in other.prefill.samples() {
            if mine_p.contains(&(p.t.map(f64::to_bits), p.new_token.unwrap_or(0), p.queue)) {
                dup += 1;
            } else {
                prefill.push(*p);
            }
        }
        let by_time = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => std::cmp::Ordering::Equal,
        };
        decode.sort_by(|a, b| by_time(a.t, b.t));
        prefill.sort_by(|a, b| by_time(a.t, b.t));
        let (tp, first, last) = (self.tp, self.first, other.last.or(self.last));
        let dups = self.duplicate_lines + other.duplicate_lines + dup;
        *self = SchedulerTimeline {
            tp,
            first,
            last,
            duplicate_lines: dups,
            ..SchedulerTimeline::default()
        };
        for d in decode {
            self.push_decode(d);
        }
        for p in prefill {
            self.push_prefill(p);
        }
    }

    /// Put the samples in time order: steps back shorter than the jitter window are reordered;
    /// after a longer step back (a restart) only the last run is kept. Returns what was done.
    fn put_in_time_order(&mut self, key: &SchedulerKey) -> Option<JoinNote> {
        if self.is_time_ordered() {
            return None;
        }
        let window = crate::thresholds::JITTER_WINDOW_S;
        // Steps back in push order over both lists, merged by line (one source: line order is
        // write order).
        let mut marks: Vec<(u64, f64)> = self
            .decode
            .samples()
            .iter()
            .filter_map(|d| Some((d.line, d.t?)))
            .chain(
                self.prefill
                    .samples()
                    .iter()
                    .filter_map(|p| Some((p.line, p.t?))),
            )
            .collect();
        marks.sort_by_key(|m| m.0);
        let mut steps_back = 0;
        let mut restarts: Vec<(u64, f64)> = Vec::new();
        for w in marks.windows(2) {
            if w[1].1 < w[0].1 {
                steps_back += 1;
                if w[0].1 - w[1].1 > window {
                    restarts.push((w[1].0, w[0].1 - w[1].1));
                }
            }
        }
        // Most steps back: the lines are in reverse order (a reversed paste), not restarts.
        let reversed = steps_back * 2 > marks.len().saturating_sub(1);
        if reversed {
            restarts.clear();
        }
        let single_source = self
            .first
            .zip(self.last)
            .is_some_and(|(a, b)| a.source == b.source);
        let mut decode: Vec<DecodeSample> = self.decode.samples().to_vec();
        let mut prefill: Vec<PrefillSample> = self.prefill.samples().to_vec();
        let note = match restarts.last() {
            Some(&(from_line, step_back_s)) if single_source => {
                decode.retain(|d| d.line >= from_line);
                prefill.retain(|p| p.line >= from_line);
                if let Some(first) = self.first.as_mut() {
                    first.line = from_line;
                }
                JoinNote::EarlierRunsSetAside {
                    scheduler: key.to_string(),
                    runs: restarts.len() + 1,
                    step_back_s,
                    from_line,
                }
            }
            _ => JoinNote::Reordered {
                scheduler: key.to_string(),
                steps_back,
            },
        };
        let by_time = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => std::cmp::Ordering::Equal,
        };
        decode.sort_by(|a, b| by_time(a.t, b.t));
        prefill.sort_by(|a, b| by_time(a.t, b.t));
        let (tp, first, last, dup) = (self.tp, self.first, self.last, self.duplicate_lines);
        *self = SchedulerTimeline {
            tp,
            first,
            last,
            duplicate_lines: dup,
            ..SchedulerTimeline::default()
        };
        for d in decode {
            self.push_decode(d);
        }
        for p in prefill {
            self.push_prefill(p);
        }
        Some(note)
    }

    /// First and last timestamp of its batch lines (seconds).
    pub fn time_range(&self) -> Option<(f64, f64)> {
        let ts = self
            .decode
            .samples()
            .iter()
            .filter_map(|d| d.t)
            .chain(self.prefill.samples().iter().filter_map(|p| p.t));
        ts.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        })
    }
}

impl Evidence {
    /// Every scheduler of this run and of the earlier runs ([`Self::earlier_runs`]), keyed as
    /// read (by source): what a source showed over all its lines, whichever run they fell in.
    fn every_run_schedulers(&self) -> impl Iterator<Item = (&SchedulerKey, &SchedulerTimeline)> {
        std::iter::once(self)
            .chain(self.earlier_runs.iter())
            .flat_map(|r| r.schedulers.iter())
    }

    /// Two log sources that are separate server runs, not parts of one: `(earlier, later)`,
    /// where the later one opens with its own startup lines and its batch lines begin after
    /// the earlier one's end (within [`crate::thresholds::JITTER_WINDOW_S`]). Read together
    /// they were joined as rotated parts of one scheduler: two runs' batches (and one run's
    /// limits) in one timeline, with a verdict that changed with the order of the files. The
    /// logs of one run's nodes and ranks overlap in time; a rotated part has no startup lines.
    /// Times are those of the batch lines kept, over every run; `None` when no two sources are
    /// such (or none is timed). Of several such pairs, the one whose later run starts first.
    pub fn separate_runs(&self) -> Option<(SourceId, SourceId)> {
        let mut span: BTreeMap<SourceId, (f64, f64)> = BTreeMap::new();
        for (k, tl) in self.every_run_schedulers() {
            if let (Some(s), Some((a, b))) = (k.source, tl.time_range()) {
                let e = span.entry(s).or_insert((a, b));
                *e = (e.0.min(a), e.1.max(b));
            }
        }
        let opens = |s: SourceId| self.sources.get(s).is_some_and(|x| x.opens_with_startup);
        span.iter()
            .flat_map(|(&a, &(_, a_end))| {
                span.iter().filter_map(move |(&b, &(b_start, _))| {
                    (a != b && opens(b) && b_start >= a_end - crate::thresholds::JITTER_WINDOW_S)
                        .then_some((b_start, a, b))
                })
            })
            .min_by(|x, y| x.0.total_cmp(&y.0).then((x.1, x.2).cmp(&(y.1, y.2))))
            .map(|(_, a, b)| (a, b))
    }

    /// The sources of each PD role ([`SourceInfo::pd_role`]: named by their startup lines or
    /// shown by their batch lines), when there is more than one role:
    /// `(role, sources)` in role order (prefill, then decode), each list in input order. A
    /// prefill instance's log and a decode instance's log are two servers with their own KV
    /// pools, limits and schedulers (their DP ranks share names, not state), so one diagnosis
    /// of both would join unrelated schedulers and take one server's limits for the other's;
    /// `None` when the sources name one role or none.
    pub fn mixed_pd_roles(&self) -> Option<Vec<(PdRole, Vec<SourceId>)>> {
        let mut by_role: BTreeMap<PdRole, Vec<SourceId>> = BTreeMap::new();
        for (id, s) in self.sources.iter().enumerate() {
            if let Some(role) = s.pd_role {
                by_role.entry(role).or_default().push(id);
            }
        }
        (by_role.len() > 1).then(|| by_role.into_iter().collect())
    }
}

impl Evidence {
    /// The last batch-line time over all schedulers (seconds), if any line has one.
    pub fn latest_time(&self) -> Option<f64> {
        self.schedulers
            .values()
            .filter_map(|s| s.time_range())
            .map(|r| r.1)
            .reduce(f64::max)
    }

    /// The retraction totals and lines (all ranks) of every source `skip` does not name, summed
    /// in source order from [`Self::retractions_by_source`].
    pub fn sum_retractions(&self, skip: impl Fn(SourceId) -> bool) -> (RetractionTotals, u64) {
        let (mut totals, mut lines) = (RetractionTotals::default(), 0);
        for (s, r) in self.retractions_by_source.iter().enumerate() {
            if !skip(s) {
                totals.merge(&r.totals);
                lines += r.lines;
            }
        }
        (totals, lines)
    }

    /// Source `source`'s share of the retraction totals (the list grown to hold it).
    fn source_retractions(&mut self, source: SourceId) -> Option<&mut SourceRetractions> {
        let v = &mut self.retractions_by_source;
        if v.len() <= source {
            v.resize(source + 1, SourceRetractions::default());
        }
        v.get_mut(source)
    }

    /// A copy keeping only what happened at or after `from` (seconds): live mode judges the
    /// recent past, not the whole history. Untimed samples are kept; peaks are recomputed over
    /// what is kept.
    pub fn since(&self, from: f64) -> Evidence {
        let mut ev = self.clone();
        let keep = |t: Option<f64>| t.is_none_or(|t| t >= from);
        for tl in ev.schedulers.values_mut() {
            let decode: Vec<DecodeSample> = tl
                .decode
                .samples()
                .iter()
                .copied()
                .filter(|d| keep(d.t))
                .collect();
            let prefill: Vec<PrefillSample> = tl
                .prefill
                .samples()
                .iter()
                .copied()
                .filter(|p| keep(p.t))
                .collect();
            tl.decode = Timeline::default();
            tl.prefill = Timeline::default();
            tl.agg = Aggregates::default();
            for d in decode {
                tl.push_decode(d);
            }
            for p in prefill {
                tl.push_prefill(p);
            }
        }
        ev.schedulers
            .retain(|_, tl| tl.decode.pushed() + tl.prefill.pushed() > 0);
        ev.retractions.retain(|r| keep(r.t));
        // Over a window the kept events are what is known (exact unless the log had more than
        // MAX_RETRACTION_SAMPLES of them), each source's and so their sum
        for (s, r) in ev.retractions_by_source.iter_mut().enumerate() {
            let mine: Vec<RetractionEvent> = ev
                .retractions
                .iter()
                .filter(|e| e.loc.source == s)
                .cloned()
                .collect();
            r.totals = RetractionTotals::of(&mine);
            r.lines = mine.iter().map(|e| u64::from(e.ranks_reporting)).sum();
        }
        ev.retraction_totals = ev.sum_retractions(|_| false).0;
        ev
    }

    /// Join the schedulers that several files describe once, and put each in time order:
    /// - a file that repeats another (the same log given twice, or plain and `.gz`) is counted
    ///   once: its schedulers, retractions and benchmark blocks are set aside;
    /// - files that follow one another in time (rotated parts) become one scheduler;
    /// - a DP rank's lines from several files (one file per node or TP rank) are one scheduler,
    ///   the lowest TP rank's lines kept and the others counted as duplicates;
    /// - files without DP tags that overlap in time with different lines stay separate servers;
    /// - lines out of time order by less than [`crate::thresholds::JITTER_WINDOW_S`] (swapped
    ///   lines, a reversed file) are put in order; a step back by more is a restart, and only the
    ///   last run of that scheduler is kept (said in a [`JoinNote::EarlierRunsSetAside`]); within
    ///   one file the builder has already split the log into server runs ([`runs`]), so this
    ///   is left for a step back across files.
    ///
    /// Borrowed (no copy) when there is nothing to join or reorder.
    pub fn consolidated(&self) -> (std::borrow::Cow<'_, Evidence>, Vec<JoinNote>) {
        let mut per_group: BTreeMap<(Option<u32>, Option<u32>), usize> = BTreeMap::new();
        for k in self.schedulers.keys() {
            *per_group.entry((k.dp, k.pp)).or_default() += 1;
        }
        let rekey = self
            .schedulers
            .keys()
            .any(|k| k.dp.is_some() && k.source.is_some());
        let unordered = self.schedulers.values().any(|t| !t.is_time_ordered());
        if per_group.values().all(|&n| n < 2) && !rekey && !unordered {
            return (std::borrow::Cow::Borrowed(self), Vec::new());
        }
        let mut ev = self.clone();
        let mut notes: Vec<JoinNote> = Vec::new();
        let mut note = |n: JoinNote| {
            if !notes.contains(&n) {
                notes.push(n);
            }
        };
        let name = |ev: &Evidence, s: Option<SourceId>| {
            s.and_then(|s| ev.sources.get(s))
                .map(|x| x.name.clone())
                .unwrap_or_default()
        };
        // Sources with at least one scheduler, and those whose every scheduler repeated another.
        let mut contributing: BTreeMap<SourceId, (usize, usize)> = BTreeMap::new();
        for k in ev.schedulers.keys() {
            if let Some(s) = k.source {
                contributing.entry(s).or_default().0 += 1;
            }
        }
        let mut groups: BTreeMap<(Option<u32>, Option<u32>), Vec<SchedulerKey>> = BTreeMap::new();
        for k in ev.schedulers.keys() {
            groups.entry((k.dp, k.pp)).or_default().push(*k);
        }
        let mut overlapped = false;
        for ((dp, pp), mut keys) in groups {
            keys.sort_by(|a, b| {
                let start = |k: &SchedulerKey| {
                    ev.schedulers
                        .get(k)
                        .and_then(|t| t.time_range())
                        .map(|r| r.0)
                };
                start(a)
                    .partial_cmp(&start(b))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let mut kept: Vec<SchedulerKey> = Vec::new();
            for next in keys {
                let Some(b) = ev.schedulers.get(&next) else {
                    continue;
                };
                if let Some(of) = kept
                    .iter()
                    .find(|k| ev.schedulers.get(k).is_some_and(|a| a.same_lines(b)))
                    .copied()
                {
                    note(JoinNote::Repeats {
                        file: name(&ev, next.source),
                        of: name(&ev, of.source),
                    });
                    if let Some(s) = next.source {
                        contributing.entry(s).or_default().1 += 1;
                    }
                    ev.schedulers.remove(&next);
                    continue;
                }
                let Some(&cur) = kept.last() else {
                    kept.push(next);
                    continue;
                };
                let (Some(a), Some(b)) = (ev.schedulers.get(&cur), ev.schedulers.get(&next)) else {
                    continue;
                };
                let follows = matches!((a.time_range(), b.time_range()), (Some(x), Some(y)) if y.0 >= x.1 - 1.0);
                // An overlapping copy of the same lines (a part cut with overlap, another TP
                // rank's file of the same batches): one scheduler, each line once.
                let copy = !follows
                    && a.overlap_share(b)
                        .is_some_and(|s| s >= crate::thresholds::OVERLAP_SAME_SHARE);
                if copy {
                    if let Some(b) = ev.schedulers.remove(&next)
                        && let Some(a) = ev.schedulers.get_mut(&cur)
                    {
                        a.union_with(&b);
                    }
                    note(JoinNote::Overlaps {
                        file: name(&ev, next.source),
                        of: name(&ev, cur.source),
                    });
                    overlapped = true;
                    continue;
                }
                if dp.is_some() && a.tp != b.tp {
                    // Another TP rank of the same DP scheduler: keep the lowest TP rank's lines.
                    let (keep, drop) = if b.tp < a.tp {
                        (next, cur)
                    } else {
                        (cur, next)
                    };
                    if let Some(d) = ev.schedulers.remove(&drop)
                        && let Some(k) = ev.schedulers.get_mut(&keep)
                    {
                        k.duplicate_lines +=
                            d.decode.pushed() + d.prefill.pushed() + d.duplicate_lines;
                    }
                    kept.retain(|k| *k != drop);
                    if !kept.contains(&keep) {
                        kept.push(keep);
                    }
                } else if follows || dp.is_some() {
                    // the part it continues: the one whose lines the joined scheduler ends with
                    let prev = ev
                        .schedulers
                        .get(&cur)
                        .and_then(|a| a.last)
                        .map(|l| l.source)
                        .or(cur.source);
                    if let Some(b) = ev.schedulers.remove(&next)
                        && let Some(a) = ev.schedulers.get_mut(&cur)
                    {
                        // one scheduler again: a full timeline, whatever each part kept
                        let full = timeline::DEFAULT_CAPACITY;
                        a.decode.set_capacity(a.decode.capacity().max(full));
                        a.prefill.set_capacity(a.prefill.capacity().max(full));
                        a.decode.append(&b.decode);
                        a.frozen.append(&b.frozen);
                        a.prefill.append(&b.prefill);
                        a.agg.merge(&b.agg);
                        a.duplicate_lines += b.duplicate_lines;
                        a.last = b.last.or(a.last);
                    }
                    if follows {
                        note(JoinNote::Continues {
                            file: name(&ev, next.source),
                            of: name(&ev, prev),
                        });
                    }
                } else {
                    kept.push(next);
                }
            }
            // A DP rank is one scheduler whatever file its lines came from.
            if dp.is_some() {
                for k in kept {
                    if let Some(tl) = ev.schedulers.remove(&k) {
                        ev.schedulers.insert(
                            SchedulerKey {
                                source: None,
                                dp,
                                pp,
                            },
                            tl,
                        );
                    }
                }
            }
        }
        // A file that only repeated others adds nothing else either.
        let repeated: Vec<SourceId> = contributing
            .iter()
            .filter(|(_, (n, dup))| *n > 0 && n == dup)
            .map(|(s, _)| *s)
            .collect();
        if overlapped {
            // The same retraction seen in two overlapping files: the same second and figures.
            type Seen = (
                Option<i64>,
                Option<u64>,
                Option<u64>,
                Option<u64>,
                Option<u64>,
            );
            let mut seen: std::collections::HashSet<Seen> = std::collections::HashSet::new();
            ev.retractions.retain(|r| {
                r.t.is_none()
                    || seen.insert((
                        r.t.map(|t| t.round() as i64),
                        r.retracted_reqs,
                        r.new_tokens_gained,
                        r.ratio_before.map(f64::to_bits),
                        r.ratio_after.map(f64::to_bits),
                    ))
            });
            ev.retraction_totals = RetractionTotals::of(&ev.retractions);
        }
        if !repeated.is_empty() {
            ev.retractions.retain(|r| !repeated.contains(&r.loc.source));
            // from each kept source's exact totals: the kept sample may be thinned (a sum over
            // it lost every event it had let go: 5,479 events read as 2,000)
            (ev.retraction_totals, ev.retraction_lines) =
                ev.sum_retractions(|s| repeated.contains(&s));
            ev.benchmarks.retain(|b| !repeated.contains(&b.source));
            ev.incidents
                .stacks
                .retain(|s| !repeated.contains(&s.source));
        }
        for (key, tl) in ev.schedulers.iter_mut() {
            if let Some(n) = tl.put_in_time_order(key) {
                note(n);
            }
        }
        (std::borrow::Cow::Owned(ev), notes)
    }

    /// A copy with one more scheduler built from `/metrics` polls (used when the logs hold no
    /// batch lines, so that a live server alone still gets a verdict). The samples are decode
    /// samples on the polls' clock; line numbers are the poll numbers.
    pub fn with_metrics_scheduler(&self, m: &crate::context::MetricsFacts) -> Evidence {
        let mut ev = self.clone();
        ev.sources.push(SourceInfo {
            name: m.source.clone(),
            kind: InputKind::MetricsPolls,
            stats: None,
            pd_role: None,
            opens_with_startup: false,
        });
        let source = ev.sources.len() - 1;
        let key = SchedulerKey {
            source: Some(source),
            dp: None,
            pp: None,
        };
        let tl = ev.schedulers.entry(key).or_default();
        for (i, x) in m.samples.iter().enumerate() {
            let line = i as u64 + 1;
            let to_u = |v: Option<f64>| {
                v.filter(|x| x.is_finite() && *x >= 0.0)
                    .map(|x| x.round() as u64)
            };
            let d = DecodeSample {
                t: Some(x.t),
                line,
                source: u32::try_from(source).unwrap_or(u32::MAX),
                running: to_u(x.running),
                queue: to_u(x.queued),
                usage: x.token_usage,
                gen_tps: x.gen_throughput,
                ..DecodeSample::default()
            };
            if tl.first.is_none() {
                tl.first = Some(Loc { source, line });
            }
            tl.last = Some(Loc { source, line });
            tl.push_decode(d);
        }
        ev
    }

    /// Total SGLang events over all sources.
    pub fn total_events(&self) -> u64 {
        self.sources
            .iter()
            .filter_map(|s| s.stats.as_ref())
            .map(|s| s.events)
            .sum()
    }

    /// Total batch lines (prefill + decode) kept over all schedulers.
    pub fn total_batch_lines(&self) -> u64 {
        self.schedulers
            .values()
            .map(|s| s.decode.pushed() + s.prefill.pushed())
            .sum()
    }

    /// Display name of a location: `file:line`.
    pub fn loc_name(&self, loc: Loc) -> String {
        let name = self
            .sources
            .get(loc.source)
            .map(|s| s.name.as_str())
            .unwrap_or("?");
        format!("{name}:{}", loc.line)
    }
}

/// Per-source state while reading.
#[derive(Default)]
struct SourceState {
    day_offset: f64,
    last_raw: Option<f64>,
    /// Benchmark blocks among the untimestamped lines not yet moved into the evidence.
    bench: BenchCollector,
    /// A startup line of this source named its `disaggregation_mode` (`null` included): its
    /// PD role is then what the last such line said, never inferred from its batch lines.
    pd_mode_said: bool,
    /// A batch line of this source has been read.
    batch_seen: bool,
}

/// Move a source's finished benchmark blocks into the evidence.
fn flush_bench(ev: &mut Evidence, source: SourceId, st: &mut SourceState) {
    let blocks = std::mem::take(&mut st.bench).finish();
    ev.benchmarks.extend(
        blocks
            .into_iter()
            .map(|summary| SourcedBench { source, summary }),
    );
}

/// Builds [`Evidence`] from records, one source at a time or interleaved.
pub struct EvidenceBuilder {
    ev: Evidence,
    states: Vec<SourceState>,
    /// Last retraction key per source for deduplication: (time, text) -> index in `retractions`.
    recent_retractions: Vec<(SourceId, Option<i64>, String, usize)>,
    incidents: crate::incidents::IncidentBuilder,
    /// Where a new server run begins.
    runs: runs::RunSplitter,
    /// Samples each scheduler's timelines keep while reading (lowered by the sample budget).
    timeline_capacity: usize,
}

/// Samples (decode and prefill together) that the schedulers of a read of several sources
/// keep at most, once each source has ended (eight full timelines; a decode sample is ~240
/// bytes, a prefill one less): see [`EvidenceBuilder::finish_source`].
pub const SAMPLE_BUDGET: usize = 8 * timeline::DEFAULT_CAPACITY;

/// The fewest samples a scheduler's timeline is cut to keep [`SAMPLE_BUDGET`] (its own
/// summaries still rest on hundreds of lines spread over its whole run).
pub const MIN_TIMELINE_CAPACITY: usize = 256;

impl Default for EvidenceBuilder {
    fn default() -> Self {
        EvidenceBuilder {
            ev: Evidence::default(),
            states: Vec::new(),
            recent_retractions: Vec::new(),
            incidents: Default::default(),
            runs: Default::default(),
            timeline_capacity: timeline::DEFAULT_CAPACITY,
        }
    }
}

impl EvidenceBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a source (a log file); returns its id for [`Self::push`].
    pub fn add_source(&mut self, name: impl Into<String>) -> SourceId {
        self.ev.sources.push(SourceInfo {
            name: name.into(),
            kind: InputKind::Log,
            stats: None,
            pd_role: None,
            opens_with_startup: false,
        });
        self.states.push(SourceState::default());
        self.ev.sources.len() - 1
    }

    /// Record the parse counts of a finished source.
    ///
    /// When more than one source has been added, the schedulers' timelines are then held to
    /// [`SAMPLE_BUDGET`] samples in all: while they hold more, every timeline's capacity is
    /// halved (down to [`MIN_TIMELINE_CAPACITY`]) and later schedulers start at the lower
    /// one. A job directory of many rank logs so reads in bounded memory (each scheduler's
    /// timeline alone is bounded, but one per rank file is not), and a read of one file keeps
    /// full timelines. The kept samples of a timeline are the offered ones at multiples of
    /// its stride whenever its capacity was set, so two copies of one log still keep the same
    /// samples; rotated parts of one scheduler get a full capacity back when
    /// [`Evidence::consolidated`] joins them.
    pub fn finish_source(&mut self, source: SourceId, stats: &ParseStats) {
        if let Some(s) = self.ev.sources.get_mut(source) {
            s.stats = Some(SourceStats::from(stats));
        }
        if let Some(st) = self.states.get_mut(source) {
            flush_bench(&mut self.ev, source, st);
        }
        if self.ev.sources.len() > 1 {
            self.fit_sample_budget();
        }
    }

    /// Halves every timeline's capacity while the schedulers keep more than [`SAMPLE_BUDGET`]
    /// samples (see [`Self::finish_source`]).
    fn fit_sample_budget(&mut self) {
        let kept = |ev: &Evidence| -> usize {
            ev.schedulers
                .values()
                .map(|t| t.decode.samples().len() + t.prefill.samples().len())
                .sum()
        };
        let mut capacity = self.timeline_capacity;
        while kept(&self.ev) > SAMPLE_BUDGET && capacity > MIN_TIMELINE_CAPACITY {
            capacity = (capacity / 2).max(MIN_TIMELINE_CAPACITY);
            for t in self.ev.schedulers.values_mut() {
                t.decode.set_capacity(t.decode.capacity().min(capacity));
                t.prefill.set_capacity(t.prefill.capacity().min(capacity));
            }
            self.timeline_capacity = capacity;
        }
    }

    /// Notes the PD role a startup line of `source` names (`disaggregation_mode`, `null`
    /// included): the last one stands, as the last run is the one diagnosed.
    fn note_pd_role(&mut self, source: SourceId, mode: Option<&str>) {
        let Some(mode) = mode else {
            return;
        };
        if let Some(st) = self.states.get_mut(source) {
            st.pd_mode_said = true;
        }
        if let Some(s) = self.ev.sources.get_mut(source) {
            s.pd_role = PdRole::from_arg(mode);
        }
    }

    /// Sets the PD role of each source whose startup lines name no `disaggregation_mode` from
    /// its batch lines in every run (a later file's restart moves the earlier lines into
    /// [`Evidence::earlier_runs`]; they still show the role): PD decode when its decode lines
    /// carry a decode instance's fields and no prefill line a prefill instance's, PD prefill
    /// the other way round. SGLang prints `#prealloc-req` / `#transfer-req` / `pre-allocated
    /// usage` on a decode instance's decode lines and its bootstrap and in-flight queues on a
    /// prefill instance's prefill lines (spec §2.1-2.2). A source that shows both, or neither,
    /// keeps `None`.
    fn infer_pd_roles(ev: &mut Evidence, states: &[SourceState]) {
        let mut shown: BTreeMap<SourceId, (u64, u64)> = BTreeMap::new();
        for (k, tl) in ev.every_run_schedulers() {
            if let Some(s) = k.source {
                let e = shown.entry(s).or_default();
                e.0 += tl.agg.pd_prefill_lines;
                e.1 += tl.agg.pd_decode_lines;
            }
        }
        for (id, (prefill, decode)) in shown {
            if states.get(id).is_some_and(|st| st.pd_mode_said) {
                continue;
            }
            if let Some(src) = ev.sources.get_mut(id) {
                src.pd_role = match (prefill > 0, decode > 0) {
                    (true, false) => Some(PdRole::Prefill),
                    (false, true) => Some(PdRole::Decode),
                    _ => None,
                };
            }
        }
    }

    /// Seconds for a record, unwrapped across midnight when the log has no dates.
    fn time_of(&mut self, source: SourceId, rec: &Record<'_>) -> Option<f64> {
        let ts = rec.timestamp.as_ref()?;
        let raw = ts.seconds();
        if !raw.is_finite() {
            return None;
        }
        let st = self.states.get_mut(source)?;
        if !ts.has_date() {
            self.ev.dateless_timestamps = true;
            if let Some(last) = st.last_raw
                && raw + 43_200.0 < last
            {
                st.day_offset += 86_400.0;
            }
            st.last_raw = Some(raw);
            return Some(raw + st.day_offset);
        }
        Some(raw)
    }

    /// Seconds for a record as [`Self::time_of`] gives them, without moving the midnight
    /// unwrapping on (for lines only the run splitter reads the time of).
    fn peek_time(&self, source: SourceId, rec: &Record<'_>) -> Option<f64> {
        let ts = rec.timestamp.as_ref()?;
        let raw = ts.seconds();
        if !raw.is_finite() {
            return None;
        }
        if ts.has_date() {
            return Some(raw);
        }
        let st = self.states.get(source)?;
        let wrap = st.last_raw.is_some_and(|last| raw + 43_200.0 < last);
        Some(raw + st.day_offset + if wrap { 86_400.0 } else { 0.0 })
    }

    /// A batch line at `loc` (time `t`, seconds): a new run may begin at it.
    pub(super) fn observe_batch(&mut self, loc: Loc, t: Option<f64>) {
        if let Some(st) = self.states.get_mut(loc.source) {
            st.batch_seen = true;
        }
        if let Some(start) = self.runs.batch(loc.source, t) {
            self.new_run(loc, start);
        }
        self.ev.run.note(loc, t);
    }

    /// A startup line at `loc` (time `t`, seconds): a new run may begin at it.
    fn observe_startup(&mut self, loc: Loc, t: Option<f64>) {
        if self.states.get(loc.source).is_some_and(|st| !st.batch_seen)
            && let Some(s) = self.ev.sources.get_mut(loc.source)
        {
            s.opens_with_startup = true;
        }
        if let Some(start) = self.runs.startup(loc.source, t) {
            self.new_run(loc, start);
        }
        self.ev.run.note(loc, t);
    }

    /// Close the evidence gathered so far as an earlier run and begin a new one at `at`.
    fn new_run(&mut self, at: Loc, start: crate::report::RunStart) {
        for (source, st) in self.states.iter_mut().enumerate() {
            flush_bench(&mut self.ev, source, st);
        }
        let mut done = std::mem::take(&mut self.ev);
        done.incidents = std::mem::take(&mut self.incidents).build();
        self.recent_retractions.clear();
        self.ev.sources = done.sources.clone();
        self.ev.dateless_timestamps = done.dateless_timestamps;
        self.ev.run = done.run.next(at, start);
        self.ev.earlier_runs = std::mem::take(&mut done.earlier_runs);
        self.ev.earlier_runs_dropped = done.earlier_runs_dropped;
        if self.ev.earlier_runs.len() >= runs::MAX_EARLIER_RUNS {
            self.ev.earlier_runs.remove(0);
            self.ev.earlier_runs_dropped += 1;
        }
        self.ev.earlier_runs.push(done);
    }

    /// Give the earlier runs the sources' final counts, end the last run at its file's last
    /// line, and sum each run's retractions over its sources.
    fn close_runs(ev: &mut Evidence) {
        (ev.retraction_totals, ev.retraction_lines) = ev.sum_retractions(|_| false);
        let lines = |s: usize| {
            ev.sources
                .get(s)
                .and_then(|x| x.stats.as_ref())
                .map(|x| x.lines)
        };
        let mut run = ev.run;
        run.end_at(lines);
        ev.run = run;
        let (sources, dateless) = (ev.sources.clone(), ev.dateless_timestamps);
        for e in &mut ev.earlier_runs {
            e.sources = sources.clone();
            e.dateless_timestamps |= dateless;
            (e.retraction_totals, e.retraction_lines) = e.sum_retractions(|_| false);
        }
    }

    fn key_for(source: SourceId, ranks: &RankTags) -> SchedulerKey {
        // Per source while reading (a DP rank's files are joined by `Evidence::consolidated`).
        SchedulerKey {
            source: Some(source),
            dp: ranks.dp,
            pp: ranks.pp,
        }
    }

    /// Take one parsed record from `source`.
    pub fn push(&mut self, source: SourceId, rec: &Record<'_>) {
        let loc = Loc {
            source,
            line: rec.line_no,
        };
        // A new server run may begin here: the line then belongs to it.
        let mut batch_t = None;
        if matches!(rec.event, Event::Batch(_)) {
            batch_t = self.time_of(source, rec);
            self.observe_batch(loc, batch_t);
        } else if runs::is_startup(&rec.event) {
            let t = self.peek_time(source, rec);
            self.observe_startup(loc, t);
        }
        self.incidents.push(source, rec);
        match &rec.event {
            Event::Batch(b) => {
                if let Some(sched) = self.batch_target(source, rec.line_no, &rec.ranks) {
                    sched.offer(&merge::BatchSample::of(rec.line_no, b), batch_t, loc);
                }
            }
            Event::Retraction(r) => {
                // counted per source; the totals are their sum (`close_runs`)
                if let Some(s) = self.ev.source_retractions(source) {
                    s.lines += 1;
                }
                let t = self.time_of(source, rec);
                let tkey = t.map(|x| x.round() as i64);
                let text = r.text.to_string();
                // Same second, same text, same source: another TP rank reporting the same event.
                if let Some(entry) = self
                    .recent_retractions
                    .iter()
                    .find(|(s, tt, txt, _)| *s == source && *tt == tkey && *txt == text)
                {
                    let idx = entry.3;
                    if let Some(ev) = self.ev.retractions.get_mut(idx) {
                        ev.ranks_reporting += 1;
                    }
                    if let Some(s) = self.ev.source_retractions(source) {
                        s.totals.note_line(loc);
                    }
                    return;
                }
                let event = RetractionEvent {
                    t,
                    loc,
                    retracted_reqs: r.retracted_reqs,
                    new_tokens_gained: r.new_tokens_gained,
                    ratio_before: r.new_token_ratio_before,
                    ratio_after: r.new_token_ratio_after,
                    ranks_reporting: 1,
                };
                if let Some(s) = self.ev.source_retractions(source) {
                    s.totals.add(&event);
                }
                if self.ev.retractions.len() >= MAX_RETRACTION_SAMPLES {
                    self.thin_retractions();
                }
                self.ev.retractions.push(event);
                let idx = self.ev.retractions.len() - 1;
                self.recent_retractions.push((source, tkey, text, idx));
                if self.recent_retractions.len() > RECENT_RETRACTIONS {
                    self.recent_retractions.remove(0);
                }
            }
            Event::Capacity(c) => {
                let st = &mut self.ev.startup;
                if st.max_total_num_tokens.is_none() {
                    if let Some(n) = c.max_total_num_tokens {
                        st.max_total_num_tokens = Some((n, loc));
                    }
                    st.max_running_requests = st.max_running_requests.or(c.max_running_requests);
                    st.chunked_prefill_size = st
                        .chunked_prefill_size
                        .or(c.chunked_prefill_size.and_then(|v| u64::try_from(v).ok()));
                    st.chunked_prefill_off |= c.chunked_prefill_size.is_some_and(|v| v <= 0);
                    st.max_prefill_tokens = st.max_prefill_tokens.or(c.max_prefill_tokens);
                    st.context_len = st.context_len.or(c.context_len);
                    st.available_gpu_mem_gb = st.available_gpu_mem_gb.or(c.available_gpu_mem_gb);
                }
            }
            Event::SwaPool {
                swa_tokens,
                full_tokens,
            } => {
                let st = &mut self.ev.startup;
                st.swa_pool_tokens = st.swa_pool_tokens.or(*swa_tokens);
                st.swa_full_pool_tokens = st.swa_full_pool_tokens.or(*full_tokens);
            }
            Event::MaxRunningReset(n) => {
                let st = &mut self.ev.startup;
                st.max_running_reset = st.max_running_reset.or(*n);
            }
            Event::MambaCacheAllocated(n) => {
                let st = &mut self.ev.startup;
                st.mamba_cache_slots = st.mamba_cache_slots.or(*n);
            }
            Event::KvCacheAllocated(k) => {
                let st = &mut self.ev.startup;
                if let Some(gb) = k.total_gb() {
                    let key = (rec.ranks, k.tokens, gb.to_bits());
                    let same_rank = st.kv_alloc_seen.first().is_none_or(|f| f.0 == rec.ranks);
                    if same_rank && !st.kv_alloc_seen.contains(&key) && st.kv_alloc_seen.len() < 8 {
                        st.kv_alloc_seen.push(key);
                        st.kv_alloc_total_gb = Some(st.kv_alloc_total_gb.unwrap_or(0.0) + gb);
                    }
                }
                if st.kv_alloc_tokens.is_none() {
                    st.kv_alloc_mla = k.kv_size_gb.is_some() && k.k_size_gb.is_none();
                    st.kv_alloc_tokens = k.tokens;
                    st.kv_alloc_gb = match (k.kv_size_gb, k.k_size_gb, k.v_size_gb) {
                        (Some(kv), _, _) => Some(kv),
                        (None, Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                }
            }
            Event::LoadWeightEnd(m) => {
                let st = &mut self.ev.startup;
                if st.avail_mem_after_weights_gb.is_none() {
                    st.avail_mem_after_weights_gb = m.avail_mem_gb;
                    st.weights_gb = m.mem_usage_gb;
                }
            }
            Event::MemoryPoolEnd(m) => {
                let st = &mut self.ev.startup;
                st.avail_mem_after_pool_gb = st.avail_mem_after_pool_gb.or(m.avail_mem_gb);
            }
            Event::CudaGraphEnd(m) => {
                let st = &mut self.ev.startup;
                st.avail_mem_after_graph_gb = st.avail_mem_after_graph_gb.or(m.avail_mem_gb);
            }
            Event::ServerArgs(a) => {
                self.note_pd_role(source, a.get("disaggregation_mode"));
                let st = &mut self.ev.startup;
                // the first line replaces what a launch command said; later ranks' copies not
                let first = !st.server_args_line;
                st.server_args_line = true;
                for key in SERVER_ARG_KEYS {
                    if let Some(v) = a.get(key) {
                        if first {
                            st.server_args.insert((*key).to_string(), v.to_string());
                        } else {
                            st.server_args
                                .entry((*key).to_string())
                                .or_insert_with(|| v.to_string());
                        }
                    }
                }
            }
            Event::LaunchCommand(a) => {
                self.note_pd_role(source, a.get("disaggregation_mode"));
                let st = &mut self.ev.startup;
                if !st.server_args_line {
                    for key in SERVER_ARG_KEYS {
                        if let Some(v) = a.get(key) {
                            let v = if v.is_empty() { "True" } else { v };
                            st.server_args
                                .entry((*key).to_string())
                                .or_insert_with(|| v.to_string());
                        }
                    }
                }
            }
            Event::HiCacheAllocated { host_gb, .. } => {
                let st = &mut self.ev.startup;
                st.hicache_host_gb = st.hicache_host_gb.or(*host_gb);
            }
            Event::ServerReady => self.ev.startup.server_ready = true,
            Event::WatchdogTimeout(text) => self.ev.watchdog.note(loc, text),
            Event::KvTransferFailed(text) => self.ev.kv_transfer_failures.note(loc, text),
            Event::MoeConfigUntuned(text) => self.ev.moe_config_untuned.note(loc, text),
            Event::JitCompile(text) => self.ev.jit_compile.note(loc, text),
            // A benchmark's summary has no server timestamp; server lines are never part of one.
            Event::Other if rec.timestamp.is_none() => {
                if let Some(st) = self.states.get_mut(source) {
                    st.bench.push(rec.line_no, rec.message);
                }
            }
            Event::Other
            | Event::Malformed { .. }
            | Event::SchedulerException(_)
            | Event::TracebackStart => {}
        }
    }

    /// Drop every other kept retraction event except the most recent [`RECENT_RETRACTIONS`]
    /// (where other ranks' copies are still being matched), and move the indices of those.
    fn thin_retractions(&mut self) {
        let v = &mut self.ev.retractions;
        let old_len = v.len();
        let cut = old_len.saturating_sub(RECENT_RETRACTIONS);
        let mut i = 0;
        v.retain(|_| {
            let keep = i >= cut || i % 2 == 0;
            i += 1;
            keep
        });
        let removed = old_len - v.len();
        for entry in &mut self.recent_retractions {
            entry.3 = entry.3.saturating_sub(removed);
        }
    }

    /// Finish and return the evidence (benchmark blocks of sources not yet finished included;
    /// each source's PD role set from its batch lines where its startup lines name none).
    pub fn build(mut self) -> Evidence {
        for (source, st) in self.states.iter_mut().enumerate() {
            flush_bench(&mut self.ev, source, st);
        }
        Self::infer_pd_roles(&mut self.ev, &self.states);
        self.ev.incidents = self.incidents.build();
        Self::close_runs(&mut self.ev);
        self.ev
    }

    /// The evidence so far, leaving the builder usable (live mode diagnoses repeatedly while
    /// the log grows); benchmark blocks still being read are left out.
    pub fn snapshot(&self) -> Evidence {
        let mut ev = self.ev.clone();
        ev.incidents = self.incidents.snapshot();
        for (source, st) in self.states.iter().enumerate() {
            ev.benchmarks
                .extend(st.bench.completed().iter().map(|b| SourcedBench {
                    source,
                    summary: b.clone(),
                }));
        }
        Self::infer_pd_roles(&mut ev, &self.states);
        Self::close_runs(&mut ev);
        ev
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sglang_log::parse_line;

    /// `n` decode lines of TP0, one a second from `from` seconds after midnight.
    fn decode_lines(from: u64, n: u64) -> Vec<String> {
        (from..from + n)
            .map(|t| {
                format!(
                    "[2026-01-15 {:02}:{:02}:{:02} TP0] Decode batch, #running-req: {}, #token: {}, \
                     token usage: 0.10, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0",
                    t / 3600,
                    t / 60 % 60,
                    t % 60,
                    1 + t % 7,
                    t
                )
            })
            .collect()
    }

    fn read_into(b: &mut EvidenceBuilder, name: &str, lines: &[String]) {
        let id = b.add_source(name);
        let mut stats = ParseStats::default();
        for (i, l) in lines.iter().enumerate() {
            let rec = parse_line(l.as_bytes(), i as u64 + 1);
            stats.observe(&rec, l.as_bytes());
            b.push(id, &rec);
        }
        b.finish_source(id, &stats);
    }

    /// Each source's PD role is `roles` (in input order), and the sources of two roles are
    /// `mixed`.
    fn assert_roles(
        ev: &Evidence,
        roles: &[Option<PdRole>],
        mixed: Option<Vec<(PdRole, Vec<SourceId>)>>,
    ) {
        let got: Vec<_> = ev.sources.iter().map(|s| s.pd_role).collect();
        assert_eq!(got, roles);
        assert_eq!(ev.mixed_pd_roles(), mixed);
    }

    /// Line `n` (1-based) of a test log under `tests/data/`.
    fn data_line(rel: &str, n: usize) -> String {
        data_lines(rel).swap_remove(n - 1)
    }

    #[test]
    fn pd_role_from_its_printed_forms() {
        assert_eq!(PdRole::from_arg("'prefill'"), Some(PdRole::Prefill));
        assert_eq!(PdRole::from_arg("decode"), Some(PdRole::Decode));
        assert_eq!(PdRole::from_arg("\"decode\""), Some(PdRole::Decode));
        assert_eq!(PdRole::from_arg("null"), None);
        assert_eq!(PdRole::from_arg("'null'"), None);
        assert_eq!(PdRole::from_arg(""), None);
    }

    /// Each source's role comes from its own startup line (the `server_args` of the real PD
    /// prefill and decode logs, a launch command's `--disaggregation-mode decode`); sources of
    /// two roles are named, sources of one role or none are not.
    #[test]
    fn each_source_has_the_pd_role_of_its_own_startup_lines() {
        let prefill = data_line("real-long/ascend-dsr1-pd-prefill-dp2.log", 98);
        let decode = data_line("real-long/ascend-dsr1-pd-decode-dp32.log", 101);
        let launch = data_line(
            "real-2/109-npu-pd-decode-1p1d-dp16-running-pinned-24-queue-usage046.log",
            2,
        );
        let plain = decode_lines(0, 3);
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "prefill.log", std::slice::from_ref(&prefill));
        read_into(&mut b, "plain.log", &plain);
        read_into(&mut b, "decode.log", std::slice::from_ref(&decode));
        read_into(&mut b, "launch.log", std::slice::from_ref(&launch));
        let ev = b.build();
        let (p, d) = (Some(PdRole::Prefill), Some(PdRole::Decode));
        let mixed = vec![(PdRole::Prefill, vec![0]), (PdRole::Decode, vec![2, 3])];
        assert_roles(&ev, &[p, None, d, d], Some(mixed));
        // one role (two decode logs), or none: nothing to say
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "decode.log", &[decode]);
        read_into(&mut b, "launch.log", &[launch]);
        read_into(&mut b, "plain.log", &plain);
        assert_eq!(b.build().mixed_pd_roles(), None);
    }

    /// Every line of a test log under `tests/data/`.
    fn data_lines(rel: &str) -> Vec<String> {
        let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        text.lines().map(str::to_string).collect()
    }

    /// Without startup lines the role comes from the batch lines: real/031's prefill lines
    /// carry a PD prefill instance's `#prealloc-req` and `#inflight-req`, real/016's decode
    /// lines a decode instance's `pre-allocated usage` and `#transfer-req`; a plain server's
    /// lines show neither, and an explicit role is not overridden.
    #[test]
    fn without_startup_lines_the_pd_role_comes_from_the_batch_lines() {
        let prefill = data_lines("real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log");
        let decode = data_lines("real/016-pr30393-hicache-pd-decode-mtp-transfer.log");
        let plain = decode_lines(0, 3);
        let explicit = data_line("real-long/ascend-dsr1-pd-prefill-dp2.log", 98);
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "031.log", &prefill);
        read_into(&mut b, "016.log", &decode);
        read_into(&mut b, "plain.log", &plain);
        // a prefill instance's startup line above decode lines of a decode instance's form:
        // the log's own word stands
        let mut said = vec![explicit];
        said.extend(decode.iter().cloned());
        read_into(&mut b, "said.log", &said);
        let ev = b.build();
        let id = |name: &str| ev.sources.iter().position(|s| s.name == name).expect(name);
        let (p, d) = (Some(PdRole::Prefill), Some(PdRole::Decode));
        let mixed = vec![(PdRole::Prefill, vec![0, 3]), (PdRole::Decode, vec![1])];
        assert_roles(&ev, &[p, d, None, p], Some(mixed));
        let agg = |name: &str| {
            ev.schedulers
                .iter()
                .filter(|(k, _)| k.source == Some(id(name)))
                .map(|(_, t)| (t.agg.pd_prefill_lines, t.agg.pd_decode_lines))
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        };
        assert_eq!(agg("031.log"), (4, 0));
        assert_eq!(agg("016.log"), (0, 4));
        assert_eq!(agg("plain.log"), (0, 0));
    }

    /// The role stands however the runs fall: a later file's restart (here a startup line
    /// after the others' batch lines) moves the earlier lines into an earlier run, where the
    /// prefill instance's lines still show its role; a file that restarts in another mode has
    /// its last run's role (the run diagnosed); `null` is no role, whatever the lines hold.
    #[test]
    fn the_pd_role_holds_across_runs_and_restarts() {
        let prefill_args = data_line("real-long/ascend-dsr1-pd-prefill-dp2.log", 98);
        let decode_args = data_line("real-long/ascend-dsr1-pd-decode-dp32.log", 101);
        let prefill = data_lines("real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log");
        let decode = data_lines("real/016-pr30393-hicache-pd-decode-mtp-transfer.log");
        let mut restart_late = decode_lines(0, 3);
        restart_late.push(decode_args.clone());
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "031.log", &prefill);
        read_into(&mut b, "016.log", &decode);
        read_into(&mut b, "late.log", &restart_late);
        let ev = b.build();
        assert!(!ev.earlier_runs.is_empty());
        let (p, d) = (Some(PdRole::Prefill), Some(PdRole::Decode));
        let mixed = vec![(PdRole::Prefill, vec![0]), (PdRole::Decode, vec![1, 2])];
        assert_roles(&ev, &[p, d, d], Some(mixed));
        // prefill, then a restart as a decode instance: the last run's role
        let mut restarted = vec![prefill_args.clone()];
        restarted.extend(prefill.iter().cloned());
        restarted.push(decode_args);
        restarted.extend(decode.iter().cloned());
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "restarted.log", &restarted);
        read_into(&mut b, "016.log", &decode);
        let ev = b.build();
        assert_eq!(ev.sources[0].pd_role, Some(PdRole::Decode));
        assert_eq!(ev.mixed_pd_roles(), None);
        // `disaggregation_mode='null'` above lines with PD fields: no role
        let null_args = prefill_args.replace(
            "disaggregation_mode='prefill'",
            "disaggregation_mode='null'",
        );
        assert_ne!(null_args, prefill_args);
        let mut said_null = vec![null_args];
        said_null.extend(prefill.iter().cloned());
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "null.log", &said_null);
        read_into(&mut b, "016.log", &decode);
        let ev = b.build();
        assert_eq!(ev.sources[0].pd_role, None);
        assert_eq!(ev.mixed_pd_roles(), None);
    }

    /// Two decode runs of the same deployment one after the other, each log opening with its
    /// own startup lines, are two runs whatever their order (they were joined as rotated
    /// parts, and the verdict followed the order); the two halves of one log (the later half
    /// without startup lines) and two logs that overlap in time are not.
    #[test]
    fn logs_of_two_runs_one_after_the_other_are_separate_runs() {
        let early = data_lines("real-long/ascend-dsr1-pd-decode-maxrun2-queued.log");
        let late = data_lines("real-long/ascend-dsr1-pd-decode-dp32.log");
        let read = |logs: &[(&str, &[String])]| {
            let mut b = EvidenceBuilder::new();
            for (name, lines) in logs {
                read_into(&mut b, name, lines);
            }
            b.build()
        };
        let ev = read(&[("early.log", &early), ("late.log", &late)]);
        assert!(ev.sources.iter().all(|s| s.opens_with_startup));
        assert_eq!(ev.separate_runs(), Some((0, 1)));
        let ev = read(&[("late.log", &late), ("early.log", &early)]);
        assert_eq!(ev.separate_runs(), Some((1, 0)));
        // rotated: the later half opens with batch lines, not startup lines
        let (first, second) = late.split_at(late.len() / 2);
        let ev = read(&[("part1.log", first), ("part2.log", second)]);
        assert!(ev.sources[0].opens_with_startup && !ev.sources[1].opens_with_startup);
        assert_eq!(ev.separate_runs(), None);
        // overlapping in time (another node's log of the same run)
        let ev = read(&[("node0.log", &late), ("node1.log", &late)]);
        assert_eq!(ev.separate_runs(), None);
    }

    /// The boundary of "after the other's end": a later log's batch lines may begin up to
    /// [`crate::thresholds::JITTER_WINDOW_S`] (60 s) before the earlier log's last one; a
    /// second more of overlap is overlapping logs of one run.
    #[test]
    fn separate_runs_allow_a_jitter_window_of_overlap_and_no_more() {
        let startup = data_line("real-long/ascend-dsr1-pd-decode-dp32.log", 101);
        let earlier = decode_lines(1000, 100); // batch lines at 1000 ..= 1099 s
        let later = |from: u64| {
            let mut l = vec![startup.clone()];
            l.extend(decode_lines(from, 50));
            l
        };
        let read = |b_lines: Vec<String>| {
            let mut b = EvidenceBuilder::new();
            read_into(&mut b, "earlier.log", &earlier);
            read_into(&mut b, "later.log", &b_lines);
            b.build().separate_runs()
        };
        assert_eq!(read(later(1099 - 60)), Some((0, 1)));
        assert_eq!(read(later(1200)), Some((0, 1)));
        assert_eq!(read(later(1099 - 61)), None);
        // the same lines without the startup line: a rotated part, not a run
        assert_eq!(read(decode_lines(1200, 50)), None);
    }

    fn kept(ev: &Evidence) -> usize {
        ev.schedulers
            .values()
            .map(|t| t.decode.samples().len() + t.prefill.samples().len())
            .sum()
    }

    #[test]
    fn many_sources_stay_within_the_sample_budget() {
        // 24 rotated parts of 3,000 decode lines: 72,000 samples in all without the budget
        let mut b = EvidenceBuilder::new();
        for k in 0..24 {
            read_into(
                &mut b,
                &format!("part{k:02}.log"),
                &decode_lines(k * 3000, 3000),
            );
        }
        let ev = b.build();
        assert_eq!(ev.schedulers.len(), 24);
        // the 22nd part made 66,000: 4,096 was not enough (every part holds 3,000), 2,048
        // halved each part to 1,500; the last two parts were read at 2,048
        assert_eq!(kept(&ev), 36_000);
        assert!(kept(&ev) <= SAMPLE_BUDGET);
        for t in ev.schedulers.values() {
            assert_eq!(t.decode.capacity(), 2048);
            assert_eq!((t.decode.stride(), t.decode.samples().len()), (2, 1500));
            assert_eq!(t.decode.pushed(), 3000);
        }
        // joined again, the parts are one scheduler of every line, at a full capacity, each
        // part said to continue the one before it
        let (joined, notes) = ev.consolidated();
        for k in 1..24 {
            let n = JoinNote::Continues {
                file: format!("part{k:02}.log"),
                of: format!("part{:02}.log", k - 1),
            };
            assert!(notes.contains(&n), "{n:?} not in {notes:?}");
        }
        assert_eq!(joined.schedulers.len(), 1);
        let t = joined.schedulers.values().next().map(|t| &t.decode);
        assert_eq!(t.map(|t| t.pushed()), Some(72_000));
        assert_eq!(t.map(|t| t.capacity()), Some(timeline::DEFAULT_CAPACITY));
        // 72,000 lines at stride 16: 4,500, and one more where a part's phase restarts
        assert_eq!(t.map(|t| (t.stride(), t.samples().len())), Some((16, 4501)));
    }

    #[test]
    fn a_sample_knows_its_source_and_stays_240_bytes() {
        // the source fits in the padding: budgets in bytes above rest on it
        assert_eq!(std::mem::size_of::<DecodeSample>(), 240);
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "a.log", &decode_lines(0, 3));
        read_into(&mut b, "b.log", &decode_lines(3, 2));
        let ev = b.build();
        let (joined, _) = ev.consolidated();
        let locs: Vec<Loc> = joined
            .schedulers
            .values()
            .flat_map(|t| t.decode.samples().iter().map(DecodeSample::loc))
            .collect();
        let at = |source, line| Loc { source, line };
        assert_eq!(locs, [at(0, 1), at(0, 2), at(0, 3), at(1, 1), at(1, 2)]);
    }

    /// `n` retraction lines of TP0, one a second from `from` seconds after midnight.
    fn retraction_lines(from: u64, n: u64) -> Vec<String> {
        (from..from + n)
            .map(|t| {
                format!(
                    "[2026-01-15 {:02}:{:02}:{:02} TP0] KV cache pool is full. Retract requests. \
                     #retracted_reqs: 3, #new_token_ratio: 0.4213 -> 0.6000",
                    t / 3600,
                    t / 60 % 60,
                    t % 60
                )
            })
            .collect()
    }

    #[test]
    fn a_repeated_file_leaves_the_retraction_totals_exact_when_the_sample_is_thinned() {
        // two logs of 2,500 retractions each: 5,000 events, more than the kept sample holds
        let log = |from: u64| {
            let mut l = decode_lines(from, 100);
            l.extend(retraction_lines(from + 100, 2500));
            l
        };
        let (a, b) = (log(0), log(10_000));
        let mut r = EvidenceBuilder::new();
        read_into(&mut r, "a.log", &a);
        read_into(&mut r, "b.log", &b);
        read_into(&mut r, "a-copy.log", &a);
        let ev = r.build();
        assert!(ev.retractions.len() < 7500);
        let (joined, notes) = ev.consolidated();
        assert!(notes.contains(&JoinNote::Repeats {
            file: "a-copy.log".into(),
            of: "a.log".into()
        }));
        let t = joined.retraction_totals;
        assert_eq!(
            (t.events, t.retracted_reqs, joined.retraction_lines),
            (5000, 15_000, 5000)
        );
        assert_eq!(
            t.first_line,
            Some(Loc {
                source: 0,
                line: 101
            })
        );
        assert_eq!(
            t.last_line,
            Some(Loc {
                source: 1,
                line: 2600
            })
        );
    }

    #[test]
    fn a_thinned_scheduler_is_said_to_skip_the_checks_that_need_every_line() {
        use crate::report::NotConcludedReason as R;
        let thinned = |ev: &Evidence| {
            crate::pipeline::diagnose(ev)
                .not_concluded
                .into_iter()
                .find(|n| matches!(n.reason, R::ThinnedTimelines { .. }))
                .map(|n| n.reason)
        };
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "long.log", &decode_lines(0, 9000));
        assert_eq!(
            thinned(&b.build()),
            Some(R::ThinnedTimelines {
                schedulers: 1,
                stride: 2
            })
        );
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "short.log", &decode_lines(0, 8000));
        assert_eq!(thinned(&b.build()), None);
    }

    #[test]
    fn one_source_keeps_full_timelines() {
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "one.log", &decode_lines(0, 9000));
        let ev = b.build();
        let t = ev.schedulers.values().next().map(|t| &t.decode);
        assert_eq!(t.map(|t| t.capacity()), Some(timeline::DEFAULT_CAPACITY));
        assert_eq!(t.map(|t| (t.stride(), t.samples().len())), Some((2, 4500)));
    }

    #[test]
    fn a_copy_read_after_the_budget_cut_keeps_the_same_samples() {
        // the first copy is read at the full capacity and cut later; the second is read at
        // the cut capacity: both keep the lines at multiples of one stride, so the second is
        // still seen as a repeat of the first
        let lines = decode_lines(0, 7000);
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "a.log", &lines);
        // 7,000 + 12 x 5,000 = 67,000 samples at the twelfth: every capacity goes to 4,096
        for k in 0..12 {
            read_into(
                &mut b,
                &format!("other{k}.log"),
                &decode_lines(8000 + k * 5000, 5000),
            );
        }
        read_into(&mut b, "a-copy.log", &lines);
        let ev = b.build();
        let by_name = |name: &str| {
            let id = ev.sources.iter().position(|s| s.name == name);
            ev.schedulers
                .iter()
                .find(|(k, _)| k.source == id)
                .map(|(_, t)| t)
        };
        let (a, copy) = (by_name("a.log"), by_name("a-copy.log"));
        assert_eq!(
            a.map(|a| (a.decode.stride(), a.decode.samples().len())),
            Some((2, 3500))
        );
        assert!(a.zip(copy).is_some_and(|(a, c)| a.same_lines(c)));
        let (_, notes) = ev.consolidated();
        assert!(notes.contains(&JoinNote::Repeats {
            file: "a-copy.log".into(),
            of: "a.log".into()
        }));
    }
}
