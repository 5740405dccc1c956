//! Every threshold the diagnosis uses, in one place: its unit, why it has that value, and
//! where the value comes from. Rules import these; no rule writes a literal threshold.
//!
//! Sources: SGLang's hyperparameter-tuning guide (`docs/advanced_features/hyperparameter_tuning.md`:
//! "token usage ... above 0.9 ... good"; a queue below that means the scheduler holds back),
//! SGLang's scheduler (`scheduler_metrics_mixin.py` for what the batch lines mean,
//! `schedule_policy.py` for admission), bench_serving's `calculate_metrics` (spec §7), and,
//! where SGLang says nothing, what separates healthy from broken runs in the real logs of
//! `tests/data/real/` (said so on the constant).

/// Confidence level of every interval the report prints (fraction).
pub const CONFIDENCE: f64 = 0.95;

/// Token usage at or above which the KV cache counts as full (fraction; SGLang tuning guide).
pub const KV_FULL_USAGE: f64 = 0.9;
/// Share of steady lines at [`KV_FULL_USAGE`] or more that also makes the pool full, whatever
/// its p90 (fraction).
pub const FULL_SHARE: f64 = 0.5;
/// Token usage below which a queue means the scheduler holds back (fraction; SGLang tuning
/// guide's "below 0.9" with a margin for the window's jitter).
pub const CONSERVATIVE_USAGE: f64 = 0.8;
/// The decode reservation could hold a queue back only if its largest possible size reaches
/// this share of the free pool (fraction; `rules/conservative_admission.rs`).
pub const RESERVATION_FREE_SHARE: f64 = 0.5;
/// Held admission is looked for only below this median token usage (fraction).
pub const HELD_MAX_USAGE: f64 = 0.5;
/// Share of batch lines with `#queue-req` > 0 for requests to count as "queued" (fraction).
pub const QUEUED_SHARE: f64 = 0.5;
/// Share of batch lines with `#queue-req` > 0 below which load counts as too low (fraction).
pub const LOW_LOAD_QUEUED_SHARE: f64 = 0.1;
/// Share of the queued request-time an admission constraint must hold back to be *the* binding
/// one (`rules::admission`): a majority, as [`QUEUED_SHARE`] is of the lines (fraction).
pub const ADMISSION_BINDING_SHARE: f64 = 0.5;
/// Share of the queued request-time one constraint must hold back for the admission model
/// alone to name the verdict, ahead of the pattern rules (`crate::verdict`): nine tenths, so
/// that a limit that binds only on part of the run is left to the rules that read its shape
/// (fraction).
pub const ADMISSION_DECISIVE_SHARE: f64 = 0.9;
/// Share of steady lines at the running cap for the cap to bind (fraction).
pub const AT_CAP_SHARE: f64 = 0.5;
/// …or the batch reaches the cap at all (on at least this share of lines) while running plus queued
/// requests reach it on [`AT_CAP_SHARE`] of them (fraction).
pub const AT_CAP_DEMAND_MIN_SHARE: f64 = 0.1;
/// `mamba usage` at which the mamba state slots count as full (fraction).
pub const MAMBA_FULL_USAGE: f64 = 0.99;
/// Share of decode lines with full mamba slots for them to cap the batch (fraction).
pub const MAMBA_FULL_SHARE: f64 = 0.5;
/// Share of steady lines at the running maximum for a flat ceiling (a cap the log does not
/// print) to be read (fraction).
pub const PLATEAU_SHARE: f64 = 0.8;
/// Steady lines a flat ceiling needs before it is read as a cap (lines).
pub const MIN_PLATEAU_LINES: usize = 5;
/// A prefill batch within this fraction of the prefill size limit counts as at the limit (fraction).
pub const PREFILL_AT_LIMIT_FRACTION: f64 = 0.9;
/// Share of prefill batches at the limit for prefill to bound admission (fraction).
pub const PREFILL_AT_LIMIT_SHARE: f64 = 0.5;
/// A prefill size limit below this is not a throughput limit worth naming (tokens).
pub const MIN_PREFILL_LIMIT_TOKENS: u64 = 512;
/// Prefill lines the prefill limit rule needs (lines).
pub const MIN_PREFILL_LINES: usize = 2;
/// Prefill batches of exactly the same power-of-two size that make it a chunk size.
pub const MIN_EXACT_CHUNKS: usize = 2;
/// Batch lines of one scheduler out of time order by less than this are reordered (swapped
/// lines, a reversed paste); a step back by more is a restart (seconds: SGLang logs a decode
/// line every `decode_log_interval` steps, about a second, so a minute is many intervals).
pub const JITTER_WINDOW_S: f64 = 60.0;
/// Decode lines of a second file inside a first file's time range needed to judge whether it
/// copies the first (lines).
pub const MIN_OVERLAP_LINES: usize = 5;
/// Share of those lines found identical in the first file from which the second is a copy of
/// the same log, not another server (fraction).
pub const OVERLAP_SAME_SHARE: f64 = 0.9;
/// A decode line this much later than the previous batch line follows an idle gap (seconds;
/// SGLang's window then includes the idle time, spec §2.1.2).
pub const IDLE_GAP_S: f64 = 30.0;
/// Longest time (seconds) between the last decode line of a batch that emptied and the
/// prefill that starts the next wave, for the next decode reading to count as a rate (no wait
/// in its window): one tick of SGLang's whole-second log stamps, so the server went straight
/// from one wave of requests to the next, and the prefill in the window is server work.
pub const REFILL_MAX_WAIT_S: f64 = 1.0;
/// Log intervals (the median gap between decode lines) that make a gap idle time, beside
/// [`IDLE_GAP_S`].
pub const IDLE_GAP_INTERVALS: f64 = 10.0;
/// A segment before the main one is a warm-up when its peak running is at most this (requests)
/// or a quarter of the main segment's peak.
pub const WARMUP_MAX_RUNNING: f64 = 2.0;
/// Activity segments with at least this share of the largest one's decode lines compete for
/// the main one; the last of them wins.
pub const MAIN_SEGMENT_SHARE: f64 = 0.8;
/// Decode lines a segment needs before its KV fill or drain is looked for.
pub const MIN_PHASE_LINES: usize = 10;
/// The KV pool has filled when token usage reaches this fraction of its later median.
pub const KV_FILL_FRACTION: f64 = 0.9;
/// A segment that starts unqueued saturates when requests queue on this share of its lines.
pub const SATURATED_SHARE: f64 = 0.25;
/// A drain starts after the last line at or above this fraction of the plateau's running.
pub const DRAIN_HIGH: f64 = 0.8;
/// …and the segment must end at or below this fraction of it.
pub const DRAIN_LOW: f64 = 0.5;
/// Plateaus below this many running requests do not drain visibly (requests).
pub const DRAIN_MIN_PLATEAU: f64 = 4.0;
/// Lines a drain needs after its start.
pub const MIN_DRAIN_LINES: usize = 3;
/// A first reading after idle below this fraction of the median is the idle-window artifact (fraction).
pub const IDLE_LOW_READING: f64 = 0.25;
/// Stalls shorter than this are reported as suspicious, not as a stall (seconds).
pub const STALL_MIN_S: f64 = 60.0;
/// Consecutive decode lines with `#token` frozen that are reported even when short (lines).
pub const MIN_FROZEN_LINES: usize = 3;
/// Decode speed per running request below which decode itself is the problem (tok/s per
/// request). A healthy server gives each running request several tokens per second even in
/// large batches (every real log in `tests/data/real/` but the CPU-offload one).
pub const SLOW_DECODE_TOK_PER_REQ: f64 = 1.0;
/// Prefill speed below which prefill itself is the problem (tok/s): a GPU prefills thousands
/// of tokens per second even for one request; CPU-offloaded experts manage tens.
pub const SLOW_PREFILL_TOK_PER_S: f64 = 256.0;
/// Prefill chunks at least this large are read as a long prompt cut at the chunk size (tokens).
pub const MIN_CHUNK_TOKENS: u64 = 512;
/// Chunk pairs the slow-prefill rule needs (pairs).
pub const MIN_CHUNK_PAIRS: usize = 2;
/// Chunk pairs from which a slow prefill is held with high confidence (pairs).
pub const SURE_CHUNK_PAIRS: usize = 3;
/// Batch lines a verdict needs before it can be held with high confidence (lines).
pub const MIN_LINES_FOR_HIGH_CONFIDENCE: usize = 5;
/// Span of batch lines (seconds) below which a verdict from fewer than
/// [`MIN_LINES_FOR_HIGH_CONFIDENCE`] lines is held with low confidence only: a few seconds of
/// lines are a snapshot (a queue that forms, a pool that fills) that the next minute can
/// contradict.
pub const MIN_SPAN_FOR_MEDIUM_CONFIDENCE_S: f64 = 30.0;
/// Most running requests for which a full pool with nothing waiting is read as held by a few
/// long requests (`kv_cache_bound`, requests).
pub const FEW_LONG_REQUESTS_MAX_RUNNING: f64 = 8.0;
/// KV tokens per running request from which a request is long (`kv_cache_bound`, tokens):
/// beyond the 32k context most chat and batch workloads use, so a few of them fill a pool.
pub const LONG_REQUEST_TOKENS: f64 = 32768.0;
/// Forward iterations between prefill batches, while requests wait at an empty pool, from
/// which the scheduler's prefill interval is named as the lever (`held_admission`): with the
/// default of one decode step per scheduling round a waiting request meets a prefill pass
/// within a few iterations.
pub const HELD_PREFILL_GAP_ITERS: u64 = 10;
/// Token usage from which a ramp's fill is projected (`kv_cache_bound::fills_as_admitted`,
/// fraction): below it the KV tokens per request are too uncertain to extrapolate.
pub const FILL_MIN_USAGE: f64 = 0.5;
/// Decode lines needed before a rate gets an interval (batch means need several batches).
pub const MIN_LINES_FOR_INTERVAL: usize = 20;
/// Decode throughput lost to interleaved prefills above which it is reported (fraction).
pub const PREFILL_INTERFERENCE_MIN_LOSS: f64 = 0.10;
/// Decode intervals of each kind (with and without a prefill) the interference rule needs.
pub const MIN_INTERFERENCE_INTERVALS: usize = 5;
/// Retraction events per hour above which retraction is called thrashing (events/h).
pub const THRASH_PER_HOUR: f64 = 30.0;
/// Share of the logged time that re-prefilling retracted requests may take at most before
/// retraction is worth a recommendation of its own (fraction). Below it, admitting fewer
/// requests (`--schedule-conservativeness`) to avoid retractions costs more decode throughput
/// than the re-prefill it saves; the issue of the founding case asks for a material cost.
pub const MATERIAL_REPREFILL_SHARE: f64 = 0.05;
/// Decode lines (over every scheduler) that must all show one running count for it to be read
/// as a cap the log does not print (lines): one per DP rank of a 4-rank server.
pub const MIN_PINNED_LINES: usize = 4;
/// Share of prompt tokens served by the prefix cache from which it is reported (fraction).
pub const PREFIX_REUSE_SHARE: f64 = 0.5;
/// Prompt tokens (new plus cached) the prefix-reuse finding needs (tokens).
pub const MIN_PREFIX_REUSE_TOKENS: u64 = 10_000;
/// Share of decode lines without a CUDA graph from which it is reported (fraction).
pub const NO_GRAPH_SHARE: f64 = 0.2;
/// Decode batch sizes SGLang captures as CUDA graphs whenever graphs are on (requests): the
/// default `cuda_graph_bs` list starts 1, 2, 4, 8 whatever `--cuda-graph-max-bs` is
/// (`server_args.py` `_generate_cuda_graph_batch_sizes`); an eager batch this small means
/// graphs are off.
pub const ALWAYS_CAPTURED_BS: u64 = 8;
/// SGLang's cap on one request's reserved output tokens in the admission budget (tokens;
/// `schedule_policy.py`, `SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`, default 4096).
pub const CLIP_MAX_NEW_TOKENS: f64 = 4096.0;
/// SGLang's default `max_prefill_tokens` (tokens; `server_args.py`).
pub const DEFAULT_MAX_PREFILL_TOKENS: u64 = 16384;
/// DP imbalance is not reported below this mean running count on the busiest rank (requests).
pub const DP_IMBALANCE_MIN_RUNNING: f64 = 4.0;
/// ... and at least this many steady decode lines on each rank compared (lines): one line a
/// rank is an instant, and ranks step through bursts at different times.
pub const DP_IMBALANCE_MIN_LINES: usize = 3;
/// The idlest rank's mean running over the busiest's below which DP load is uneven (ratio).
pub const DP_IMBALANCE_RATIO: f64 = 0.67;
/// A KV pool below this is tiny for any real model and load (tokens).
pub const TINY_POOL_TOKENS: f64 = 8192.0;
/// Peak token usage a tiny pool must reach to matter (fraction).
pub const TINY_POOL_MIN_USAGE: f64 = 0.5;
/// Token usage from which `#token / token usage` estimates the pool size (fraction; below it
/// the rounding of the printed usage dominates).
pub const POOL_INFERENCE_MIN_USAGE: f64 = 0.05;
/// A KV-bound scheduler carrying at least this share of the lines makes the whole server
/// KV-bound (fraction; under DP attention any full rank caps them all).
pub const KV_VOTE_SHARE: f64 = 0.25;
/// Ramp: running must rise by more than this over the excerpt (requests).
pub const RAMP_MIN_RISE: u64 = 4;
/// Ramp: share of steps where running does not fall (fraction).
pub const RAMP_RISING_SHARE: f64 = 0.8;
/// Ramp: lines at most that may precede the queue's peak (a warm-up) as a share of the log
/// (fraction; at least [`RAMP_MAX_SKIPPED_LINES`]).
pub const RAMP_MAX_SKIPPED_SHARE: f64 = 0.1;
/// Ramp: lines that may always precede the queue's peak (lines).
pub const RAMP_MAX_SKIPPED_LINES: usize = 3;
/// Ramp: share of its whole climb a ramp still makes over the later half of its lines
/// (fraction): less is a batch that levelled off, a plateau.
pub const RAMP_LATER_RISE_SHARE: f64 = 0.25;
/// How far the KV tokens gained across a gap between decode lines may be from the later
/// line's rate × the gap (factor either way) for decoding to count as having gone on through
/// it (lines elided from a paste, not idle): real-4/105 gained 7,040 tokens in 303 s at a
/// logged 23.2 tok/s, a factor of 1.00.
pub const GAP_TOKENS_FACTOR: f64 = 2.0;
/// Ramp: lines a ramp needs (lines).
pub const RAMP_MIN_LINES: usize = 4;
/// Relative difference between lifetime and windowed client rates within which they agree (fraction).
pub const LIFETIME_AGREES: f64 = 0.1;
/// A printed rate this far from the lifetime average is a rounding artifact (fraction).
pub const PRINTED_ROUNDING: f64 = 0.2;
/// A client end time further than this from the median end time (or than
/// [`CLIENT_OUTLIER_IQRS`] interquartile ranges, whichever is more) is a clock error (seconds).
pub const CLIENT_OUTLIER_MIN_S: f64 = 86_400.0;
/// ... in interquartile ranges of the end times.
pub const CLIENT_OUTLIER_IQRS: f64 = 10.0;
/// The sample window someone plans to measure with, when not given (seconds).
pub const DEFAULT_SAMPLE_WINDOW_S: f64 = 60.0;
/// Mean wait for a client concurrency slot from which it is called out (seconds).
pub const CLIENT_SLOT_WAIT_S: f64 = 1.0;
/// Token usage treated as full when estimating headroom (fraction).
pub const HEADROOM_USAGE: f64 = 0.95;
/// Shortest steady span from which a headroom figure ("about N more could run") is given
/// (seconds): over fewer seconds the requests have not decoded long enough for their KV share
/// to say how many more fit.
pub const HEADROOM_MIN_SPAN_S: f64 = 10.0;
/// Quantile of the pool share per running request a headroom figure is counted at (fraction):
/// the longer requests' share (the 90th percentile, as the gauges' p90), since a request holds
/// more KV the longer it decodes.
pub const LONG_REQUEST_QUANTILE: f64 = 0.9;
/// How far `#token / pool` may lie from a line's printed `token usage` and still be the same
/// pool: SGLang prints the usage to two decimals, so half a hundredth, with float slack
/// (fraction).
pub const USAGE_ROUNDING: f64 = 0.0051;
/// The logged rate while decoding above which the wall-time average is said to include idle
/// gaps (ratio of the average to the busy median).
pub const BUSY_VS_AVERAGE: f64 = 0.5;
/// A what-if row must gain more than this to be recommended (percent).
pub const MIN_GAIN_PCT: f64 = 1.0;
/// Projections beyond the observed running range by more than this are extrapolations (fraction).
pub const EXTRAPOLATION_MARGIN: f64 = 0.05;
/// A decode step-time fit gives a ceiling only when it explains at least this share of the
/// variance (R²): a fit of noise (R² near 0, e.g. a batch pinned at one size) has no
/// asymptote worth naming.
pub const MIN_CEILING_FIT_R2: f64 = 0.5;
/// … and when the largest batch fitted is at least this many times the smallest (ratio): the
/// slope over batch size needs batches of several sizes.
pub const MIN_CEILING_RUNNING_SPREAD: f64 = 1.5;
/// Share of failed benchmark requests from which failures are the first thing to fix (fraction).
pub const FAILURES_DOMINATE: f64 = 0.2;
/// Mean TTFT over mean end-to-end latency from which waiting for the first token is reported (fraction).
pub const TTFT_SHARE_REPORTED: f64 = 0.2;
/// ... held with high confidence from this share (fraction).
pub const TTFT_SHARE_SURE: f64 = 0.4;
/// ... and only when the mean TTFT is at least this long (seconds).
pub const TTFT_REPORTED_S: f64 = 1.0;
/// Mean prompt length from which prefill is a real part of the time to first token (tokens).
pub const LONG_PROMPT_TOKENS: f64 = 4096.0;
/// Mean completion length below which a benchmark measures prefill, not decode (tokens): a
/// request is then almost all prefill, its TTFT most of its latency by construction, and the
/// output rate says nothing of decode speed.
pub const PREFILL_ONLY_OUTPUT_TOKENS: f64 = 16.0;
/// Steady batch lines from which a scheduler's state is a span, not an instant (lines): a
/// single line with a queue cannot tell why requests wait, and a single line whose decode
/// crawls cannot tell an idle window from a hang.
pub const MIN_CLIENT_BOUND_LINES: usize = 2;
/// SGLang's default `max_running_requests` when speculative decoding is on and the flag is not
/// given (requests per DP rank; `server_args.py`, and the start-up line "Max running requests
/// is reset to 48 for speculative decoding" of real-4/100).
pub const SPEC_DEFAULT_MAX_RUNNING: u64 = 48;
/// Free memory on a CUDA-graph capture's last line from which a capture that stops is not
/// called out of memory (GiB): real-4/100's three captures took 0.45-5.24 GiB ("mem usage" of
/// its `Capture … graph end` lines, the largest a prefill graph set), so this leaves a margin.
pub const CAPTURE_ROOM_GIB: f64 = 8.0;
/// Share by which the server's tokens per completed request may fall short of the output tokens
/// per request a benchmark counts before the two are said to disagree (fraction of the
/// client's): the whole-run request rate only understates the steady one, so the server's
/// figure errs high, never a quarter low.
pub const CLIENT_TOKENS_DISAGREE: f64 = 0.25;
/// How far a client's own summary figure (its req/s, output tok/s, mean TTFT, mean ITL) may
/// stand from the same figure computed from its records before the two are said to disagree
/// (fraction of the records' figure): the clients' own rounding and their whole-run spans
/// differ by a percent or less (AIPerf's 2.35 req/s printed against 2.346 from its records,
/// GuideLLM's 2.478 against 2.493); issue 32 asks the two to match within 5%. Beyond it the
/// client counts something its records do not (GuideLLM's 655.6 output tok/s counts the tokens
/// of the requests it cancelled, 5.9% over its completed ones' 619.2).
pub const CLIENT_CLAIM_TOLERANCE: f64 = 0.05;
/// The fit's rate at `max_running_requests` is the ceiling only below this share of the fit's
/// limit (fraction): nearer, the cap is no bound worth naming.
pub const CEILING_CAP_SHARE: f64 = 0.99;
/// A ceiling taken at a running count more than this many times the largest batch of the lines
/// the fit rests on is said to be an extrapolation (ratio).
pub const CEILING_EXTRAPOLATION: f64 = 2.0;
/// Two runs' median running requests within this share of the larger count as the same batch,
/// so that their rates compare one setting (fraction).
pub const SAME_BATCH_SHARE: f64 = 0.1;
/// Mean requests in flight over `--max-concurrency` from which the limit counts as held full (fraction).
pub const LIMIT_HELD_FULL: f64 = 0.9;
/// Median `accept len` at or below which speculative decoding gains nothing (tokens per verify
/// step). SGLang's accept length counts the bonus token, so 1.0 means every draft was rejected;
/// at 1.2 a target forward yields 20% more tokens, which the draft passes (one per
/// `speculative_num_steps`, each a forward of the draft model) and the larger verify batch
/// consume (SGLang's EAGLE docs and the real logs: every healthy setup in `tests/data/real*/`
/// reads 1.67 or more).
pub const SPEC_NO_GAIN_ACCEPT_LEN: f64 = 1.2;
/// Median `accept rate` below which most drafted tokens are thrown away and speculation gains
/// little (fraction). SGLang's three definitions (spec §2.5) all divide accepted by drafted
/// tokens; the healthy setups in `tests/data/real*/` print 0.45-0.98, the one whose thread
/// reads "speculation barely helps" (`real/016`) prints 0.13-0.14.
pub const SPEC_LOW_ACCEPT_RATE: f64 = 0.3;
/// Median accept length (tokens per verify step) from which speculation is not called a small
/// gain whatever its accept rate: the target model runs at most half as often as without it.
/// A low accept rate then says only that the draft block is long (DFLASH drafts a 16-token
/// block in one forward: 2.8 kept of 16 is a rate of 0.12 and nearly 3x fewer target passes).
pub const SPEC_GAINS_ACCEPT_LEN: f64 = 2.0;
/// Fall of the median accept length from the earlier half of a scheduler's decode lines to the
/// later half at or above which the draft is said to predict the later text worse (fraction of
/// the earlier median). Accept length varies line to line by ±30% in a steady run (real
/// logs: EAGLE3 1.80-2.17, DFLASH 3.50-4.25); a fall of the median of each half by a quarter
/// is beyond that.
pub const SPEC_ACCEPT_DROP: f64 = 0.25;
/// Decode lines with an accept length each half needs before a fall is read (lines).
pub const SPEC_TREND_MIN_LINES: usize = 4;

/// TTFT over end-to-end latency (both medians or both means) at or above which, with an
/// inter-token latency of 0, a benchmark's client received each response in one piece: it did
/// not stream (fraction; `bench_serving.py` measures TTFT at the first chunk, so without
/// streaming TTFT is the whole request and ITL has no gaps to measure).
pub const NOT_STREAMED_TTFT_SHARE: f64 = 0.98;
/// Captured CUDA-graph batch size over `max_running_requests` at or below which the graphs
/// cover "far fewer" requests than the scheduler admits (fraction; `real-2/120`: 32 of 4096,
/// SGLang's default `cuda_graph_max_bs` is sized for a fraction of the cap).
pub const GRAPH_COVERAGE_SHARE: f64 = 0.25;
/// Full-context requests a KV pool must hold not to count as too small for its context length
/// (requests; "a couple": below two, two long requests cannot run together).
pub const FULL_CONTEXT_REQUESTS_MIN: f64 = 2.0;

/// A startup line after a run's batch lines begins a new run only when it is stamped at least
/// this long after the last of them (seconds): a new server process imports torch and SGLang
/// (seconds) before it prints its first line, while a rank's own startup line printed late or
/// put out of order lies within seconds of the batch lines (issue 30 A2: one line 2 s late
/// invented a restart).
pub const RESTART_MIN_GAP_S: f64 = 5.0;
/// No batch line for this long, and for [`RUN_GAP_INTERVALS`] log intervals, ends a server run
/// even without a startup block or a clock that steps back (seconds: 4 h). An idle server
/// prints no batch line (SGLang logs a decode line every `decode_log_interval` steps of a
/// running batch only), so silence alone is weak evidence; but the longest idle period inside
/// one run of the shared real logs is 397 s (`real-2/104`), the idle phases start at
/// [`IDLE_GAP_S`], and a benchmark or load test session is minutes to an hour or two: hours of
/// silence between two blocks of traffic are two runs of work (two pasted blocks, a server left
/// overnight), and one steady span held across them would mix them. A startup block between
/// the blocks is the decisive evidence, whatever the gap.
pub const RUN_GAP_S: f64 = 4.0 * 3600.0;
/// Log intervals (the median gap between a run's batch lines so far) that a gap must also
/// span to end a run, beside [`RUN_GAP_S`] (intervals: a thousand times the ordinary spacing,
/// so a log written once a minute needs more than 16 h).
pub const RUN_GAP_INTERVALS: f64 = 1000.0;

// The fleet view (`diagnose --prometheus`, `crate::fleet`, `rules/fleet_imbalance.rs`).

/// A DP rank's or instance's mean queue is apart from its peers' median at this many times it
/// or more, and [`FLEET_QUEUE_OUTLIER_MIN_EXCESS`] above it (ratio): twice the median is
/// a member that takes a share of the waiting requests its peers do not, not the jitter of a
/// mean over the window.
pub const FLEET_QUEUE_OUTLIER_FACTOR: f64 = 2.0;
/// ... and this many requests above the median (requests): a queue of 2 against a median of
/// 1 is twice, but nothing an operator would rebalance for.
pub const FLEET_QUEUE_OUTLIER_MIN_EXCESS: f64 = 5.0;
/// A mean token usage this far from its peers' median, either way, is apart (fraction of the
/// pool): a quarter of the KV pool more or less used than its peers under the same traffic.
pub const FLEET_USAGE_OUTLIER_DELTA: f64 = 0.25;
/// Outliers are few: when more than one peer in this many (and more than one) stands apart on
/// the same measure, they are a group (a different configuration or workload), and none is
/// flagged for it (peers).
pub const FLEET_OUTLIER_GROUP_DIVISOR: usize = 10;
/// The DP ranks of one instance are compared from this many (ranks): two ranks fed by one
/// router already share its traffic.
pub const FLEET_MIN_RANK_PEERS: usize = 2;
/// Instances are compared from this many (instances): between two, neither is the odd one.
pub const FLEET_MIN_INSTANCE_PEERS: usize = 3;
/// The finest step of a window read from Prometheus (seconds): Prometheus stores times in
/// milliseconds.
pub const FLEET_MIN_STEP_S: f64 = 0.001;
/// Most points one series may take over a window (points): a day at a 1 s step fits; more is
/// a step too fine for the window, which the reader would hold in memory per instance.
pub const FLEET_MAX_POINTS: f64 = 100_000.0;
/// Largest value of a Prometheus series that is neither a gauge nor a rate `sglang-log`
/// bounds (a cumulative counter such as `sglang:generation_tokens_total`): 10^15 tokens or
/// requests is years of any server, and far below what breaks `f64` sums (the bound
/// `sglang-client`'s `/metrics` reader takes for counters).
pub const METRIC_COUNTER_MAX: f64 = 1e15;
/// Largest `sglang:fwd_occupancy` a fleet series may hold (percent): SGLang writes the
/// GPU-busy share of the forward passes as a percentage (`observability/metrics_collector.py`,
/// "Forward pass GPU occupancy percentage"); a quotient of two timers can land a rounding
/// error above 100 (100.00000000000001 was seen), so the bound is 101 and a point above it
/// is not used. NaN is the idle scheduler and is counted apart, never against this bound.
pub const FWD_OCCUPANCY_MAX_PCT: f64 = 101.0;

/// Standard deviations of the Poisson send time (`√N / R`) by which a benchmark's duration may
/// fall short of `N / R` before the run is said to have finished faster than it was sent
/// (`rules::bench_not_streamed`; four: a chance of about 3 in 100,000).
pub const BENCH_SEND_SIGMAS: f64 = 4.0;
/// A benchmark's `Max ITL` from which one stream is said to have stopped between two chunks
/// (seconds): a decode step is tens of milliseconds; ten seconds is hundreds of steps without a
/// token for that request (`rules::bench_readings`).
pub const STALLED_STREAM_S: f64 = 10.0;
/// A benchmark's `Max ITL` from which the stop is minutes long: no burst of prefills explains
/// it, a stalled server or a retracted request does (seconds).
pub const STALLED_STREAM_MINUTES_S: f64 = 60.0;
/// A benchmark whose duration is under this many mean end-to-end latencies ran its requests
/// in about one wave: its rates average a ramp and a drain, no steady state (ratio).
pub const SHORT_BURST_E2E: f64 = 2.0;
/// A batch line's value this many times its immediate neighbours and the median of the
/// lines around it, then back, is set aside (`evidence::outliers`): for gen throughput per
/// running request, a decode step 20 times faster for one line only (ratio).
pub const SPIKE_FACTOR: f64 = 20.0;
/// Lines on each side whose median a value is judged against (`evidence::outliers`; lines).
pub const SPIKE_NEIGHBOURS: usize = 3;
/// `#queue-req` this many times its neighbours and the lines around it, for one line, is set
/// aside (`evidence::outliers`; ratio): far above what arrives and is admitted in one interval.
pub const QUEUE_SPIKE_FACTOR: f64 = 100.0;
/// ... and only from this many requests: a burst of hundreds admitted within one log interval
/// happens on a large server (requests).
pub const QUEUE_SPIKE_MIN: f64 = 1000.0;
/// A source is a PD server of one role when at least this share of its batch lines of that
/// kind print the PD queues (fraction): SGLang prints them on every line of a PD server.
pub const PD_ROLE_SHARE: f64 = 0.5;
/// ... and at least this many lines, unless every line prints them (lines).
pub const PD_ROLE_MIN_LINES: u64 = 2;

/// Whether `pd` batch lines printing PD queues among `all` lines of that kind make a PD role
/// ([`PD_ROLE_SHARE`], [`PD_ROLE_MIN_LINES`]): one line among hundreds is damage or another
/// server's line.
pub fn pd_role_holds(pd: u64, all: u64) -> bool {
    pd > 0 && pd as f64 >= PD_ROLE_SHARE * all as f64 && (pd >= PD_ROLE_MIN_LINES || pd == all)
}
/// A `#new_token_ratio` at or below this before a retraction had decayed towards SGLang's floor
/// (`init_new_token_ratio` 0.7 × `base_min_new_token_ratio` 0.14 ≈ 0.1, `schedule_policy.py` /
/// `global_config.py`); above it the reserve had not shrunk much (ratio).
pub const NEW_TOKEN_RATIO_DECAYED: f64 = 0.3;
/// SGLang's default starting `new_token_ratio` (`SGLANG_INIT_NEW_TOKEN_RATIO` 0.7 ×
/// `schedule_conservativeness` 1.0, `scheduler.py` `init_schedule_policy`): it only decays
/// from there, and only a retraction raises it, so a ratio above it had been raised (ratio).
pub const INIT_NEW_TOKEN_RATIO: f64 = 0.7;
