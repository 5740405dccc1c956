//! Zero-copy parser for SGLang server logs.
//!
//! Every line of a log becomes exactly one [`Record`]: a recognised [`Event`] (a `Decode batch` /
//! `Prefill batch` line, a retraction, a startup capacity or memory line, `server_args`, a
//! watchdog timeout, a KV transfer failure, the ready banner, uvicorn's access lines, PyTorch's
//! out-of-memory and NCCL lines: [`alarms`]), [`Event::Other`] (tracebacks, tqdm bars, foreign
//! tools' output) or [`Event::Malformed`] with a reason.
//! The formats and their version ranges are in `shared/spec/sglang-observables.md` §1, §2, §8.
//!
//! # Design decisions and their cost
//!
//! **The grammar is `nom`.** Envelopes (every stamp form, rank tags in any order, the
//! wrappers: docker-compose, Ray, blockquotes, ANSI, a container's or a tracing subscriber's
//! ISO stamp), message heads (batch lines of every version, retractions, startup and memory
//! lines) and fields are `nom` 8 parsers over `&[u8]` with the unit error `()` (`grammar.rs`
//! holds the shared pieces; `rank_tag`, `timestamp`, `bracket_envelope`, `level_body`,
//! `batch_head`, `fragment_of`, `retraction_head`, … in their modules). Leaves that `nom` has no
//! faster form of are our own parser functions (two digits, a literal compared as one slice,
//! memchr searches). The parse of a line never fails as a whole: when no parser accepts it, it
//! is [`Event::Other`] or [`Event::Malformed`]. In front of the grammar sit two caches that
//! only short-cut work whose result is known (the fixed-offset envelope, the predicted-key
//! field splitter); a unit test requires them to give the grammar's records on every test log
//! line and on mutated copies.
//!
//! **Records borrow the input.** A [`Record`] holds `&str` slices of the line: field keys and
//! values of a batch line are byte offsets into the message kept in a fixed inline array of
//! [`MAX_FIELDS`] entries, so parsing a line allocates nothing and numbers are parsed from digit
//! slices only when an accessor asks. The cost: a record cannot outlive the line buffer. The
//! [`LogReader`] hands each record to a callback and reuses its buffer for the next line;
//! callers copy out what they keep (typically a handful of numbers per line). A record is
//! also a fairly large value (a few hundred bytes: 32 inline 16-bit spans), cheap to build on the stack but not
//! meant to be stored by the million.
//!
//! **Speed.** The reader finds the newlines of a whole block of lines in one pass of 32-byte
//! compares (AVX2 when the CPU has it, else SSE2; a bitmap, no call per line) that also tells
//! whether the block is all ASCII (then it needs no UTF-8 check; otherwise the block is checked
//! once, not line by line) and whether it holds a `\r` or an ESC, and builds each record in
//! place where the callback reads it. It keeps a
//! small cache from line to line (`LineCache`): the dominant envelope
//! `[YYYY-MM-DD HH:MM:SS TAGS]` is read at fixed offsets, the stamp is reused when its 19 bytes
//! repeat and only its seconds are read when the rest repeats (the date once per day) and the rank tags when their bytes match one of the last
//! 8 tag groups; a batch body in SGLang's own strict form (`key: value, …`, values of letters,
//! digits, `.%+-`) is copied into a reused zero-padded buffer (so word loads and scans need no
//! bounds checks) and split by predicting each key from the two keys that followed the
//! previous one on earlier lines of the same kind, checked with masked word compares where it
//! must start; digit runs are found 8 bytes at a time, and the same word says whether the value
//! is a short digit run known to be sound ([`values`]). Anything off the strict form goes
//! through the `nom` splitter (`take_until` on `", "` and `": "`, with `memchr` on the
//! needle's first byte; keys identified by a length +
//! first/last-8-bytes hash into a collision-free table checked at compile time). Typed
//! accessors are a table load plus a digit parse on the value's bytes (`%.2f` values have a
//! fixed-point fast path) and a range check. Measured with callgrind, full-field aggregate
//! example on a generated log (`tools/gen_sglang_log.py LOG 20 --seed 7`, 138,189 lines):
//! ~1,803 instructions/line (`valgrind --tool=callgrind` on `target/release/examples/aggregate
//! LOG`, total Ir / lines; the whole `throughput-doctor diagnose` on the same log, on one core
//! (`taskset -c 0`): ~3,492, ~3,991 before issue 15's seventh stop cut its analysis; on two
//! cores ~4,863 at the stop before, ~5,655
//! before the accessors of the graph flag and the `swa=` sub-values stopped searching and the
//! parallel reader kept its buffers; ~1,819 before issue 15's second round: one SSE2 pass for the two
//! keyword screens of non-batch lines, a digit run ended by any non-value byte, events built in
//! place; ~2,009 before the fused block scan and the seconds-only stamp of
//! issue 15; earlier, on a 20 MB slice of the 512 MB log: ~2,089, ~1,771 before the value
//! checks of issue 13 and the `nom` grammar, ~3,200 two versions before). One large file can be parsed on several cores with
//! [`parallel::parse_file_parallel`].
//!
//! **Bounded memory.** A line is held whole only up to [`MAX_LINE`] (1 MiB); a longer one is
//! [`Event::Malformed`] (`"line longer than 1 MiB"`, with its line number and first bytes) and
//! the rest of it is skipped. A long line read from a pipe in many pieces is searched for its
//! newline once.
//!
//! **Impossible values are set aside, not used.** A value that is not finite, negative, or
//! beyond what the quantity can be (see [`values`] for the limits and their reasons) makes its
//! accessor return `None`; [`BatchLine::rejected_fields`] says which field and why, and
//! [`ParseStats`] counts them with line numbers. The line's other fields are used.
//!
//! **Lines first, then complete parsers.** The reader splits the input on `\n` first and
//! only then runs the (nom, `complete`) parsers on whole lines. No parser ever sees half a line,
//! there is no streaming state machine, and one bad line cannot derail the next. The cost is one
//! extra scan over the bytes, which 16-byte compares make small next to parsing. In live mode
//! ([`LogReader::live`]) a last line without its `\n` is held back and completed by the next
//! read, so a log that is still being written is never mis-parsed; the cost is that the very
//! last line of a live log is reported one read late.
//!
//! **Find the message head, then parse the envelope before it.** Real logs arrive wrapped:
//! docker-compose `sglang-1  | `, Ray `(SGLangEngine pid=N) `, markdown `> `, ANSI colours,
//! custom `logging` formats, pastes that lost the opening `[`. Known wrappers are stripped, the
//! SGLang envelope `[TS TAGS]` is parsed when present, and the message head is recognised by
//! its first byte. When that fails but the line still carries a batch marker (`Decode batch`,
//! `Prefill batch`, `Prefil batch`, `new fill batch`), the batch is parsed from the marker and
//! the timestamp and rank tags are recovered from the text before it. **Invariant:** a line
//! with a batch marker is always [`Event::Batch`] or [`Event::Malformed`], never
//! [`Event::Other`], so scheduler lines are never silently lost.
//!
//! **Lenient fields, counted damage.** A batch line whose fragments are partly not
//! `key: value` (e.g. GitHub's mangling `#running-:, #: 484009, token usage: 0.95`) is still a
//! batch event with the good fields; the bad fragments are counted in
//! [`BatchLine::broken_fields`] and in [`ParseStats::partial_batch_lines`]. A batch marker with
//! no usable head or no `key: value` field at all is [`Event::Malformed`]. Unknown keys are kept
//! ([`BatchLine::unknown_fields`]); a batch line whose fields are all unknown (sglang-jax's
//! `Prefill batch. #bid: 1, #cache_miss: 2`) is still a batch line.
//!
//! # Example
//! ```
//! use sglang_log::{parse_line, Event};
//! let rec = parse_line(b"[2025-04-15 17:25:16 DP0 TP0] Decode batch. #running-req: 92, #token: 264288, token usage: 0.92, gen throughput (token/s): 324.86, #queue-req: 990, ", 1);
//! let Event::Batch(b) = &rec.event else { panic!() };
//! assert_eq!(b.running_req(), Some(92));
//! assert_eq!(b.queue_req(), Some(990));
//! assert_eq!(rec.ranks.to_string(), "DP0 TP0");
//! ```
#![deny(missing_docs)]

mod access;
pub mod alarms;
mod batch;
pub mod bench;
pub mod client;
mod events;
pub mod foreign;
mod grammar;
#[cfg(any(test, feature = "grammar-check"))]
pub mod grammar_check;
mod line;
mod num;
pub mod parallel;
mod ranks;
mod reader;
pub mod req_times;
mod scan;
mod timestamp;
pub mod timings;
pub mod values;

pub use access::{
    ContextRejection, HttpAccess, parse_context_rejection, parse_http_access, parse_http_error,
};
pub use alarms::{
    HiCacheLine, NcclKind, NcclLine, OutOfMemory, SlowPass, parse_hicache_line, parse_nccl,
    parse_out_of_memory, parse_slow_pass,
};
pub use batch::{
    BatchForm, BatchKind, BatchLine, DecodeReadings, FwdOccupancy, KNOWN_KEYS, MAX_BATCH_LINE,
    MAX_FIELDS, PrefillReadings,
};
pub use bench::{BenchClient, BenchCollector, BenchSummary, BenchTool, parse_bench_summaries};
pub use client::{
    ClientEvidence, ClientFormat, ClientRequest, NotClientFile, ProgressPoint, is_progress_line,
    parse_client, progress_without_time,
};
pub use events::{
    CapacityLine, CaptureStage, Frame, GraphCapture, KvCacheAllocated, LaunchArgs, MemoryLine,
    Retraction, RetractionWording, ServerArgs, Stack, StackCollector, StackKind,
    cuda_graph_capture_max_bs,
};
pub use foreign::{ForeignFormat, FormatSniffer, LogKind, NotSglangLog};
pub use line::{LineParser, find_batch_marker, parse_line};
pub use ranks::RankTags;
pub use reader::{
    CUT_LAST_LINE_REASON, HEAD_BYTES, HeadStats, KEPT_LINES, LONG_LINE_REASON, LogReader, MAX_LINE,
    MalformedLine, ParseStats, ReadError, RejectedValue,
};
pub use req_times::{ReqMode, ReqTimes, parse_req_times};
pub use timestamp::Timestamp;
pub use timings::{StartupTimings, parse_startup_timings};
pub use values::{RejectedField, Rejection};

/// One parsed log line.
#[derive(Clone, Debug, PartialEq)]
pub struct Record<'a> {
    /// 1-based line number in the input.
    pub line_no: u64,
    /// The line's timestamp (SGLang envelope, else a container runtime's ISO prefix, else one
    /// recovered from the text before a batch marker); `None` for ≤ v0.2.13 lines and
    /// foreign output.
    pub timestamp: Option<Timestamp>,
    /// Rank tags of the envelope (or the in-message `[gpu=N]`); empty when absent.
    pub ranks: RankTags,
    /// The message after the envelope and wrappers (for batch lines: from the batch head on).
    /// Useful to deduplicate lines every TP rank prints (spec §8.6).
    pub message: &'a str,
    /// What the line is.
    pub event: Event<'a>,
}

/// A signal or a child's exit, as SGLang's launcher logs them (`srt/utils` signal handlers,
/// `entrypoints/engine.py`): a stop the operator asked for, or a child process that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `SIGTERM received. … Draining requests and shutting down...`: a stop was asked for.
    Sigterm,
    /// `SIGQUIT received. … It usually means one child failed.` (v0.4: `Received sigquit from a
    /// child proces. It usually means the child failed.`): a child process ended; after a SIGTERM
    /// it is the stop's own cleanup.
    Sigquit,
    /// `Subprocess NAME (pid=N) crashed with exit code C. Triggering SIGQUIT for cleanup...`:
    /// the exit code (`-15`: killed by SIGTERM).
    ChildExited(Option<i64>),
    /// `kill_process_tree called: parent_pid=N, …`: the launcher kills its process tree (after
    /// a SIGQUIT or at the end of a stop).
    KillProcessTree,
    /// `No live scheduler processes found; skipping py-spy and CUDA coredump.`: the crash
    /// handler found every scheduler process already dead.
    NoLiveSchedulers,
}

/// What a line is. Exactly one per line.
// The batch variant is large (its inline field array) on purpose: no allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
    /// A `Decode batch` / `Prefill batch` line (and the v0.1 forms).
    Batch(BatchLine<'a>),
    /// A retraction line (KV pool exhausted during decode), spec §2.3.
    Retraction(Retraction<'a>),
    /// `max_total_num_tokens=…, chunked_prefill_size=…, …` startup capacity line.
    Capacity(CapacityLine),
    /// `KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB`.
    KvCacheAllocated(KvCacheAllocated),
    /// `Load weight end. …, avail mem=X GB, mem usage=Y GB.`
    LoadWeightEnd(MemoryLine),
    /// `Memory pool end. avail mem=X GB`.
    MemoryPoolEnd(MemoryLine),
    /// `Capture [draft] [extend] cuda graph end. Time elapsed: … mem usage=X GB. avail mem=Y GB.`
    /// (every `Capture … graph end` line, draft-model graphs included).
    CudaGraphEnd(MemoryLine),
    /// A CUDA/NPU-graph capture under way: its `Capture … graph begin` line or a progress bar
    /// of it (`Capturing batches (bs=… avail_mem=… GB)`, `Capturing num tokens (…)`,
    /// `cuda_graph_runner.py` / `piecewise_cuda_graph_runner.py`) ([`GraphCapture`]).
    GraphCapture(GraphCapture),
    /// `server_args=ServerArgs(…)`.
    ServerArgs(ServerArgs<'a>),
    /// A launch command echoed into the log (`command=python3 -m sglang.launch_server …`).
    LaunchCommand(LaunchArgs<'a>),
    /// HiCache host pool allocation: `Allocating X GB host memory for hierarchical KV cache.`
    /// or `Allocating kv hierarchical KV host pool: N tokens, X GB host memory.`
    HiCacheAllocated {
        /// Host memory for the hierarchical cache. Unit: GB as printed (GiB).
        host_gb: Option<f64>,
        /// Host pool size. Unit: tokens.
        host_tokens: Option<u64>,
    },
    /// Hybrid sliding-window models: `Use Sliding window memory pool. full_layer_tokens=N,
    /// swa_layer_tokens=M` (lowercase `sliding` from v0.5.7): the two pools' sizes.
    SwaPool {
        /// The full-attention layers' pool (tokens).
        full_tokens: Option<u64>,
        /// The sliding-window layers' pool (tokens).
        swa_tokens: Option<u64>,
    },
    /// `Mamba Cache is allocated. max_mamba_cache_size: N, conv_state size: …` (hybrid SSM
    /// models): the mamba state slots, one per running request (slots per rank).
    MambaCacheAllocated(Option<u64>),
    /// `Max running requests is reset to N for speculative decoding.` (and other reasons the
    /// start-up lowers the cap for, `server_args.py`): the cap in effect (requests per DP
    /// rank), when no capacity line prints it.
    MaxRunningReset(Option<u64>),
    /// `Using default MoE kernel config. Performance might be sub-optimal! Config file not
    /// found at …` (and `Using MoE kernel config with … Performance might be sub-optimal!`):
    /// the fused MoE kernels run with configs not tuned for this GPU; the message text.
    MoeConfigUntuned(&'a str),
    /// `Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20
    /// mins) if you have not run `sglang.compile_deep_gemm`. …`: the first requests of a
    /// DeepGEMM build wait while its kernels compile (`layers/deep_gemm_wrapper/
    /// compile_utils.py`); the message text.
    JitCompile(&'a str),
    /// `The server is fired up and ready to roll!`
    ServerReady,
    /// A watchdog timeout (`Watchdog timeout (self.watchdog_timeout=300)` and later
    /// `… watchdog timeout (…)` wordings, or the watchdog's `Pyspy dump for PID N:` of the hung
    /// schedulers' stacks); the message text.
    WatchdogTimeout(&'a str),
    /// A PD KV transfer failure (`… transfer failed …`, `KVTransferError`, the NIXL transfer
    /// worker's `NIXL transport error for room …` / `Unexpected transfer worker error for room
    /// …`, `Prefill bootstrap failed for request …`); the message text ([`transfer_side`] says
    /// which PD server wrote it).
    KvTransferFailed(&'a str),
    /// A signal the server's process tree received or a child's exit, as SGLang logs them while
    /// it stops ([`Signal`]).
    Signal(Signal),
    /// `Engine startup timings (s): …`: how long each start-up step took, the CUDA graph
    /// captures among them ([`StartupTimings`]).
    StartupTimings(StartupTimings),
    /// A finished request's time stats (`ReqTimeStats(rid=…, …): queue_duration=…`, the older
    /// `Req Time Stats(…)`): read with [`parse_req_times`]; the message text.
    ReqTimeStats(&'a str),
    /// `Scheduler hit an exception: …`: a scheduler process died; its traceback follows on
    /// untimestamped lines ([`StackCollector`] reads it). The message text.
    SchedulerException(&'a str),
    /// `Traceback (most recent call last):` on a line of its own (any Python process: SGLang's
    /// or another tool's; [`StackCollector`] reads the frames that follow).
    TracebackStart,
    /// A uvicorn access line (`127.0.0.1:44946 - "POST /generate HTTP/1.1" 200 OK`): every
    /// request the HTTP server answered, with its status ([`HttpAccess`]).
    HttpAccess(HttpAccess<'a>),
    /// A request refused for its length: `The input (N tokens) is longer than the model's
    /// context length (M tokens).` and the OpenAI-API wording, anywhere in a line
    /// ([`ContextRejection`]).
    ContextRejected(ContextRejection),
    /// A device ran out of memory (`torch.OutOfMemoryError: CUDA out of memory. …`), usually
    /// a traceback's last line ([`OutOfMemory`]).
    OutOfMemory(OutOfMemory<'a>),
    /// A line of PyTorch's NCCL process group: a collective timeout, the watchdog taking the
    /// process down, or exit warnings ([`NcclLine`]).
    Nccl(NcclLine<'a>),
    /// `slow scheduler pass: LABEL took X ms (>= Y ms; …)` ([`SlowPass`]).
    SlowSchedulerPass(SlowPass<'a>),
    /// `Pyspy failed to dump PID N. Error: …`: the watchdog could not dump a hung process's
    /// stack (py-spy is not installed where the server runs).
    PyspyFailed,
    /// `Health check failed. Server couldn't get a response from detokenizer for last N
    /// seconds.`: `/health` answered 503. `N` (seconds), when printed.
    HealthCheckFailed(Option<u64>),
    /// A HiCache storage-tier line: prefetches started, done or revoked, the backend
    /// ([`HiCacheLine`]).
    HiCache(HiCacheLine<'a>),
    /// `Using KV cache dtype: torch.bfloat16`: the KV cache's element type as the model runner
    /// chose it (the text after the colon).
    KvCacheDtype(&'a str),
    /// Not a line this crate reads (tracebacks, tqdm, other tools).
    Other,
    /// A line that carries a batch marker but could not be read as a batch line, or invalid
    /// UTF-8 in such a line.
    Malformed {
        /// Why.
        reason: &'static str,
    },
}

impl Event<'_> {
    /// Short name of the variant (`"batch"`, `"retraction"`, …), for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Batch(_) => "batch",
            Event::Retraction(_) => "retraction",
            Event::Capacity(_) => "capacity",
            Event::KvCacheAllocated(_) => "kv_cache_allocated",
            Event::LoadWeightEnd(_) => "load_weight_end",
            Event::MemoryPoolEnd(_) => "memory_pool_end",
            Event::CudaGraphEnd(_) => "cuda_graph_end",
            Event::GraphCapture(_) => "graph_capture",
            Event::ServerArgs(_) => "server_args",
            Event::LaunchCommand(_) => "launch_command",
            Event::HiCacheAllocated { .. } => "hicache_allocated",
            Event::SwaPool { .. } => "swa_pool",
            Event::MaxRunningReset(_) => "max_running_reset",
            Event::MambaCacheAllocated(_) => "mamba_cache_allocated",
            Event::MoeConfigUntuned(_) => "moe_config_untuned",
            Event::JitCompile(_) => "jit_compile",
            Event::ServerReady => "server_ready",
            Event::WatchdogTimeout(_) => "watchdog_timeout",
            Event::KvTransferFailed(_) => "kv_transfer_failed",
            Event::ReqTimeStats(_) => "req_time_stats",
            Event::StartupTimings(_) => "startup_timings",
            Event::Signal(_) => "signal",
            Event::SchedulerException(_) => "scheduler_exception",
            Event::TracebackStart => "traceback_start",
            Event::HttpAccess(_) => "http_access",
            Event::ContextRejected(_) => "context_rejected",
            Event::OutOfMemory(_) => "out_of_memory",
            Event::Nccl(_) => "nccl",
            Event::SlowSchedulerPass(_) => "slow_scheduler_pass",
            Event::HealthCheckFailed(_) => "health_check_failed",
            Event::PyspyFailed => "pyspy_failed",
            Event::HiCache(_) => "hicache",
            Event::KvCacheDtype(_) => "kv_cache_dtype",
            Event::Other => "other",
            Event::Malformed { .. } => "malformed",
        }
    }

    /// Whether any program may print this line, not only SGLang: a uvicorn access line, a
    /// context-length message quoted anywhere, PyTorch's out-of-memory and NCCL lines, or no
    /// event at all. Such a line does not make a file an SGLang log, and inside a traceback it
    /// is one of the traceback's lines.
    pub fn is_free_text(&self) -> bool {
        matches!(
            self,
            Event::Other
                | Event::HttpAccess(_)
                | Event::ContextRejected(_)
                | Event::OutOfMemory(_)
                | Event::Nccl(_)
        )
    }

    /// The batch line, if this is one.
    pub fn as_batch(&self) -> Option<&BatchLine<'_>> {
        match self {
            Event::Batch(b) => Some(b),
            _ => None,
        }
    }
}

/// The PD server a KV transfer failure line comes from, by the message SGLang writes there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferSide {
    /// `Prefill transfer failed for request …`, `Prefill bootstrap failed for request …`
    /// (`disaggregation/prefill.py`): the prefill server, which aborts the request itself.
    Prefill,
    /// `Decode transfer failed for request …` (`disaggregation/decode.py`): the decode
    /// server, whose every TP rank logs the same request.
    Decode,
}

/// Which PD server wrote the [`Event::KvTransferFailed`] message `msg`; `None` when the
/// message does not say (`KV transfer failed`, the transfer engine's own lines).
pub fn transfer_side(msg: &str) -> Option<TransferSide> {
    if msg.starts_with("Prefill transfer failed") || msg.starts_with("Prefill bootstrap failed") {
        Some(TransferSide::Prefill)
    } else if msg.starts_with("Decode transfer failed") {
        Some(TransferSide::Decode)
    } else {
        None
    }
}

/// The repository's test data for the unit tests that compare a fast path with its grammar
/// on every real line.
#[cfg(test)]
pub(crate) mod test_data {
    /// Every file under `tests/data` (the shared real logs and the fixtures), sorted.
    pub(crate) fn files() -> Vec<std::path::PathBuf> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data");
        let mut dirs = vec![std::path::PathBuf::from(root)];
        let mut files = Vec::new();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    files.push(p);
                }
            }
        }
        files.sort();
        files
    }
}
