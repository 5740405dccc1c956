//! Batch runner: a JSONL file of prompts in, a JSONL file of records out,
//! bounded concurrency, retries, resume, progress, cancellation.
//!
//! Entry point: [`run_batch`]. The CLI (`throughput-doctor run-batch`) builds
//! a [`BatchConfig`], passes a [`ProgressSink`] that draws a progress bar on
//! stderr, a [`CancelToken`] that it cancels on Ctrl-C, and exits
//! `0` when [`BatchSummary::failed`] is 0, `1` otherwise, `130` when
//! [`BatchSummary::cancelled`].
//!
//! **Input**: one JSON object per line: `{"id": "...", "prompt": "..."}` or
//! `{"id": "...", "messages": [...]}`; other fields are ignored. Lines that
//! are not such objects, and repeated ids, are counted and listed in
//! [`BatchSummary::input_problems`]; they are not sent. The input is read
//! twice, line by line, and never held: once for the ids (what to send, what
//! the output already has), then each prompt when a worker takes it.
//!
//! **Bounded answers**: a streamed answer (content and reasoning together) is
//! held up to the cap of a non-streamed completion's body
//! ([`ClientConfig::max_json_bytes`], 16 MiB); past it the request fails with
//! [`ClientError::TooLarge`] in its record (not retried) and the run goes on.
//!
//! **Output**: one [`BatchRecord`] per line. Only one task (the writer)
//! owns the file; each record is one `write` of a complete line. On start,
//! an existing output file is read: ids found there with a successful
//! record are skipped (resume), ids whose record is a failure are sent
//! again (unless [`BatchConfig::retry_failed_on_resume`] is off) and their
//! failed records are removed first (the file is rewritten to a temporary
//! file and renamed over the output, so a kill leaves the old or the new
//! file whole), so each id keeps the record of its last attempt. A torn
//! last line (no trailing newline, left by a kill mid-write) is cut off
//! with a warning. So killing the process at any instant and rerunning
//! loses no written success and writes none twice.
//!
//! **One run per output**: a run holds an exclusive lock on `OUT.lock`
//! beside the output for its whole length (an OS file lock, released when
//! the process ends, even by `kill -9`); a second run on the same output
//! fails at once with [`BatchError::Locked`], and so does one given a
//! symbolic or hard link to it (the output file itself is locked too: its
//! device and inode, whatever its name; see `out_lock.rs`). An output that is
//! the input file is refused ([`BatchError::OutputIsInput`]), and so is an
//! input that is the output's work file `OUT.tmp` or `OUT.lock`
//! ([`BatchError::InputIsOutputWork`]).
//!
//! **Redaction**: the API key is replaced by `<redacted>` in every record's
//! error (as sent, URL-encoded, `\u`-escaped or base64: [`crate::redact`]),
//! never in an answer or its reasoning (data, kept as the server sent it), and
//! URLs in errors carry no credentials.
//!
//! **Concurrency**: at most `concurrency` requests in flight: a fixed pool
//! of `concurrency` worker tasks, each taking the next prompt (in input
//! order) when it is free, so no task or permit is created per request. By
//! default a request is created when a worker takes it (`permit_wait_s` is
//! 0); with `burst` every request counts as created at t=0 and waits for a
//! free worker (what a hand-written `asyncio.gather` script does), and that
//! wait is recorded as `permit_wait_s`, apart from the request latency.
//!
//! **Retries**: connect errors, transfer breaks, stalled streams, HTTP 429 and 5xx are
//! retried up to `retry.max_attempts` attempts in all, with exponential
//! backoff and full jitter (`delay = U(0, min(max_delay, base·2^(n−1)))`,
//! and at least a 429's `Retry-After`). The permit is held during backoff so
//! in-flight never exceeds `concurrency`. Other errors are recorded in the
//! request's record and the run goes on.

use std::collections::{HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::client::{BatchConnection, ClientConfig, Endpoint, SglangClient};
use crate::error::ClientError;
use crate::out_lock;

mod files;
mod request;
mod writer;

use files::{
    Payload, Prompt, PromptReader, Wanted, read_input, remove_failed_records, scan_output,
};
use request::{Ctx, Live, run_one, unix_now};
use writer::{Tally, Writer, writer_task};

/// Which endpoint the prompts are sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchApi {
    /// `/v1/chat/completions`; a `prompt` becomes one user message.
    Chat,
    /// `/v1/completions`; needs `prompt` (a `messages` line is an input problem).
    Completions,
    /// Native `/generate` (`text` + `sampling_params`); needs `prompt`.
    Generate,
}

/// Retry policy for retryable errors (see the module docs).
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in all, including the first (1 = no retry). Default 5.
    pub max_attempts: u32,
    /// Backoff base (default 0.5 s).
    pub base_delay: Duration,
    /// Backoff cap (default 30 s).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// Everything a batch run needs.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// Server and timeouts.
    pub client: ClientConfig,
    /// Input JSONL of prompts.
    pub input: PathBuf,
    /// Output JSONL of records (appended to; created when missing).
    pub output: PathBuf,
    /// Endpoint.
    pub api: BatchApi,
    /// `model` field sent with OpenAI requests (None: omitted; SGLang
    /// serves its one model).
    pub model: Option<String>,
    /// Extra request fields merged into every body (e.g. `max_tokens`,
    /// `temperature`; for [`BatchApi::Generate`] they go into
    /// `sampling_params`).
    pub params: Map<String, Value>,
    /// Stream responses (SSE) and record TTFT.
    pub stream: bool,
    /// Most requests in flight at once (≥ 1).
    pub concurrency: usize,
    /// Create every request at t=0 (they then wait for permits).
    pub burst: bool,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// How often [`ProgressSink::on_snapshot`] is called (default 500 ms).
    pub progress_interval: Duration,
    /// Window of the windowed rates in [`ProgressSnapshot`] (default 10 s).
    pub rate_window: Duration,
    /// After cancellation, how long in-flight requests may still finish
    /// (default 30 s); the rest are dropped unwritten and rerun on resume.
    pub grace: Duration,
    /// On resume, send again the ids whose only record is a failure; their
    /// failed records are removed from the output before the run, so the
    /// file keeps each id's last attempt. Default true; false skips every id
    /// already in the output (its failure stays, and counts in
    /// [`BatchSummary::failed_in_file`]).
    pub retry_failed_on_resume: bool,
}

impl BatchConfig {
    /// Defaults: chat API, no streaming, concurrency 64, no burst.
    pub fn new(
        client: ClientConfig,
        input: impl Into<PathBuf>,
        output: impl Into<PathBuf>,
    ) -> Self {
        BatchConfig {
            client,
            input: input.into(),
            output: output.into(),
            api: BatchApi::Chat,
            model: None,
            params: Map::new(),
            stream: false,
            concurrency: 64,
            burst: false,
            retry: RetryPolicy::default(),
            progress_interval: Duration::from_millis(500),
            rate_window: Duration::from_secs(10),
            grace: Duration::from_secs(30),
            retry_failed_on_resume: true,
        }
    }
}

/// Token accounting of a record (from `usage` or native `meta_info`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordUsage {
    /// Prompt tokens.
    pub prompt_tokens: Option<u64>,
    /// Generated tokens.
    pub completion_tokens: Option<u64>,
}

/// One output line. Times are Unix seconds (`*_unix_s`) or durations in
/// seconds (`*_s`). `null` means unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// The prompt's id.
    pub id: String,
    /// True when the request succeeded.
    pub ok: bool,
    /// Answer text.
    pub content: Option<String>,
    /// Reasoning text, when the server returned it separately.
    pub reasoning_content: Option<String>,
    /// `stop`, `length`, `abort`, ...
    pub finish_reason: Option<String>,
    /// Token counts reported by the server.
    pub usage: RecordUsage,
    /// When the request was created (t=0 in burst mode; when its turn came
    /// otherwise), Unix seconds.
    pub submit_unix_s: f64,
    /// Time spent waiting for a concurrency permit, seconds.
    pub permit_wait_s: f64,
    /// When the last attempt was sent, Unix seconds.
    pub start_unix_s: Option<f64>,
    /// Time from sending the last attempt to its first content or reasoning
    /// token, seconds (streaming only).
    pub ttft_s: Option<f64>,
    /// When the last attempt finished, Unix seconds.
    pub end_unix_s: f64,
    /// `end − start` of the last attempt, seconds.
    pub latency_s: Option<f64>,
    /// Attempts made (1 = no retry).
    pub attempts: u32,
    /// Error of the last attempt (failed requests only), e.g.
    /// `status: http://…/v1/chat/completions answered HTTP 500: …`.
    pub error: Option<String>,
    /// Error kind (`connect`, `timeout`, `status`, `decode`, `transport`, `too_large`: a
    /// streamed answer past the cap of a completion's body, ...; `input`: the prompt's line
    /// changed in the input during the run, and was not sent).
    pub error_kind: Option<String>,
}

/// A finished request as the progress sink sees it (raw data for the
/// statistics crate).
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionEvent {
    /// Seconds since the run started.
    pub t_s: f64,
    /// Unix seconds.
    pub end_unix_s: f64,
    /// Success?
    pub ok: bool,
    /// Generated tokens (None when unknown).
    pub completion_tokens: Option<u64>,
    /// Latency of the last attempt, seconds.
    pub latency_s: Option<f64>,
    /// TTFT, seconds (streaming only).
    pub ttft_s: Option<f64>,
    /// Attempts made.
    pub attempts: u32,
}

/// Progress figures. Rates are per second of wall time; "windowed" ones
/// count completions in the last `window_s` seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressSnapshot {
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Requests this run will send (input minus resumed/invalid).
    pub total: u64,
    /// Ids skipped because the output already had them.
    pub resumed: u64,
    /// Succeeded so far.
    pub completed: u64,
    /// Failed so far (after retries).
    pub failed: u64,
    /// Holding a permit now (sending, streaming or backing off).
    pub in_flight: u64,
    /// Retries made so far.
    pub retries: u64,
    /// Generated tokens of the successful requests so far.
    pub completion_tokens: u64,
    /// Window length, seconds (shorter at the start of the run).
    pub window_s: f64,
    /// Finished requests per second over the window.
    pub window_req_per_s: f64,
    /// Generated tokens per second over the window (tok/s).
    pub window_tok_per_s: f64,
    /// Finished requests per second since the start.
    pub lifetime_req_per_s: f64,
    /// Generated tokens per second since the start (tok/s).
    pub lifetime_tok_per_s: f64,
    /// Seconds left at the windowed request rate (None while it is 0).
    pub eta_s: Option<f64>,
}

/// Receives progress. Called from the writer task only, in order.
pub trait ProgressSink: Send + 'static {
    /// Before the first request: what will be sent and what was skipped.
    fn on_start(&mut self, _total: u64, _resumed: u64) {}
    /// After each record is written.
    fn on_completion(&mut self, _event: &CompletionEvent) {}
    /// Every `progress_interval`, and once at the end.
    fn on_snapshot(&mut self, _snapshot: &ProgressSnapshot) {}
    /// A warning (torn last line cut off, bad output lines, ...).
    fn on_warning(&mut self, _message: &str) {}
}

/// A sink that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;
impl ProgressSink for NoProgress {}

/// Cancellation handle: clone it, give one to [`run_batch`], call
/// [`CancelToken::cancel`] (e.g. on Ctrl-C). Dispatch stops at once; requests
/// in flight get `grace` to finish.
#[derive(Debug, Clone)]
pub struct CancelToken {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        CancelToken {
            tx: Arc::new(watch::channel(false).0),
        }
    }
    /// Requests cancellation (idempotent).
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }
    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }
    /// Resolves when cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchSummary {
    /// Valid prompts in the input.
    pub input_prompts: u64,
    /// Skipped because the output already had them.
    pub resumed: u64,
    /// Sent in this run.
    pub attempted: u64,
    /// Succeeded in this run.
    pub ok: u64,
    /// Failed in this run (recorded with their error).
    pub failed: u64,
    /// Ids of the input whose record in the output file is a failure after
    /// this run: this run's failures plus the earlier ones kept (not retried).
    /// What the exit status goes by.
    pub failed_in_file: u64,
    /// Earlier failed records that were removed because their id was sent again.
    pub retried_from_file: u64,
    /// Retries made (attempts beyond the first).
    pub retries: u64,
    /// Not sent or not finished because of cancellation (rerun to finish).
    pub not_finished: u64,
    /// True when the run was cancelled.
    pub cancelled: bool,
    /// Generated tokens of the successful requests.
    pub completion_tokens: u64,
    /// Wall time of the run, seconds.
    pub elapsed_s: f64,
    /// Input lines not used: `(1-based line, reason)`.
    pub input_problems: Vec<(u64, String)>,
    /// Output lines that were not valid records (kept in the file, not
    /// counted as done), plus a torn last line that was cut off.
    pub output_problems: Vec<String>,
}

/// Errors that stop a run (per-request errors are records, not errors).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Reading the input or reading/writing the output failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// `concurrency` is 0.
    #[error("concurrency must be at least 1")]
    BadConcurrency,
    /// Another run holds the output's lock.
    #[error(
        "{}: another run-batch is writing this output (its lock {} is held); wait for it to end or use another --out",
        output.display(),
        lock.display()
    )]
    Locked {
        /// The output file.
        output: PathBuf,
        /// The lock file beside it.
        lock: PathBuf,
    },
    /// The output is the input file: the records would be appended to the prompts.
    #[error("the output {} is the prompts file itself; give another --out", .0.display())]
    OutputIsInput(PathBuf),
    /// The input is a work file of the output (`OUT.tmp`, which a resume rewrites and renames
    /// over the output, or `OUT.lock`): the prompts would be destroyed.
    #[error(
        "the prompts file {} is a work file of the output {} (OUT.tmp or OUT.lock), which a resume overwrites; rename the prompts or give another --out",
        input.display(),
        output.display()
    )]
    InputIsOutputWork {
        /// The prompts file.
        input: PathBuf,
        /// The output file.
        output: PathBuf,
    },
    /// `--prompts` or `--out` is not a regular file (a device, a FIFO, a directory).
    #[error("{} is not a regular file; --prompts and --out must be files", .0.display())]
    NotAFile(PathBuf),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BatchError + '_ {
    move |source| BatchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs a batch (see the module docs for the contract).
///
/// Returns the [`BatchSummary`]; per-request failures are in it and in the
/// output file, not errors. Errors: [`BatchError::Io`] when the input cannot
/// be read or the output cannot be read/written (the run stops; what was
/// written stays valid), [`BatchError::Client`] when the HTTP client cannot
/// be built, [`BatchError::BadConcurrency`] for `concurrency == 0`.
pub async fn run_batch(
    mut cfg: BatchConfig,
    progress: impl ProgressSink,
    cancel: CancelToken,
) -> Result<BatchSummary, BatchError> {
    if cfg.concurrency == 0 {
        return Err(BatchError::BadConcurrency);
    }
    if out_lock::same_file(&cfg.input, &cfg.output) {
        return Err(BatchError::OutputIsInput(cfg.output.clone()));
    }
    // The output's work files (a resume rewrites OUT.tmp and renames it over the output).
    let real_out = out_lock::real_path(&cfg.output);
    for work in [
        out_lock::tmp_path(&real_out),
        out_lock::lock_path(&real_out),
    ] {
        if out_lock::same_file(&cfg.input, &work) {
            return Err(BatchError::InputIsOutputWork {
                input: cfg.input.clone(),
                output: cfg.output.clone(),
            });
        }
    }
    // A device or FIFO as --prompts or --out reads forever (/dev/zero, /dev/full): refuse it.
    for path in [&cfg.input, &cfg.output] {
        if let Ok(m) = std::fs::metadata(path)
            && !m.is_file()
        {
            return Err(BatchError::NotAFile(path.clone()));
        }
    }
    let started = Instant::now();
    let mut progress = progress;
    let (prompts, input_problems) = read_input(&cfg.input, cfg.api)?;
    // From here on the output is its real path: a symbolic link given as --out is
    // followed, so a resume's rewrite replaces the file, not the link.
    cfg.output = real_out;
    // Held until this function returns (dropping the files releases them).
    let mut lock = out_lock::lock_output(&cfg.output)?;
    let existing = scan_output(&cfg.output)?;
    for p in &existing.problems {
        progress.on_warning(p);
    }
    let input_prompts = prompts.len() as u64;
    let mut kept_failed = 0u64;
    let mut retry_ids = HashSet::new();
    let todo: Vec<Wanted> = prompts
        .into_iter()
        .filter(|p| {
            if existing.ok_ids.contains(&p.id) {
                return false;
            }
            if existing.failed_ids.contains(&p.id) {
                if !cfg.retry_failed_on_resume {
                    kept_failed += 1;
                    return false;
                }
                retry_ids.insert(p.id.clone());
            }
            true
        })
        .collect();
    let retried_from_file = if retry_ids.is_empty() {
        0
    } else {
        let (removed, rewritten) = remove_failed_records(&cfg.output, &retry_ids)?;
        lock.hold(rewritten);
        removed
    };
    if retried_from_file > 0 {
        progress.on_warning(&format!(
            "{} earlier failed record(s) removed from {}: their ids are sent again",
            retried_from_file,
            cfg.output.display()
        ));
    }
    let resumed = input_prompts - todo.len() as u64;
    let total = todo.len() as u64;
    progress.on_start(total, resumed);

    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cfg.output)
        .map_err(io_err(&cfg.output))?;
    // Keep at most `concurrency` idle connections: hyper opens a spare
    // connection when none is idle at checkout, and an uncapped pool then
    // grows far past the concurrency (measured: 7,000 sockets at
    // concurrency 2,000), costing memory on both ends.
    let mut client_cfg = cfg.client.clone();
    client_cfg.pool_max_idle_per_host = client_cfg.pool_max_idle_per_host.min(cfg.concurrency);
    let client = SglangClient::new(client_cfg)?;
    let ctx = Arc::new(Ctx::new(client, &cfg)?);
    let (tx, rx) = mpsc::channel::<BatchRecord>(cfg.concurrency.clamp(64, 8192));
    let writer = Writer {
        file,
        path: cfg.output.clone(),
        sink: progress,
        started,
        total,
        resumed,
        window: cfg.rate_window,
        recent: VecDeque::new(),
        tally: Tally::default(),
    };
    let writer = tokio::spawn(writer_task(writer, rx, ctx.clone(), cfg.progress_interval));

    // A fixed pool of `concurrency` workers, each taking the next prompt
    // when it is free: no task spawned and no semaphore permit per request.
    // the prompts are read from the input as the workers take them
    let queue = Arc::new(std::sync::Mutex::new(PromptReader::open(
        &cfg.input, cfg.api, todo,
    )?));
    let dispatched = Arc::new(AtomicU64::new(0));
    let t0_unix = unix_now();
    let t0 = Instant::now();
    let burst = cfg.burst;
    let mut tasks: JoinSet<()> = JoinSet::new();
    for _ in 0..cfg.concurrency.min(total as usize) {
        let ctx = ctx.clone();
        let tx = tx.clone();
        let queue = queue.clone();
        let dispatched = dispatched.clone();
        let cancel = cancel.clone();
        // One keep-alive connection per worker (the non-streaming fast path).
        let mut conn = ctx.client.connection(&ctx.endpoint)?;
        tasks.spawn(async move {
            loop {
                // the writer stopped (I/O error): sending more is pointless
                if cancel.is_cancelled() || tx.is_closed() {
                    return;
                }
                let next = match queue.lock() {
                    Ok(mut q) => q.next(),
                    Err(poisoned) => poisoned.into_inner().next(),
                };
                let Some(p) = next else { return };
                dispatched.fetch_add(1, Ordering::Relaxed);
                // Burst: every request was created at t0 and waited until a
                // worker was free. Otherwise it is created when a worker is free.
                let (submit, wait) = if burst {
                    (t0_unix, t0.elapsed().as_secs_f64())
                } else {
                    (unix_now(), 0.0)
                };
                let rec = match p {
                    Ok(p) => {
                        ctx.live.in_flight.fetch_add(1, Ordering::Relaxed);
                        let rec = run_one(&ctx, &mut conn, p, submit, wait).await;
                        ctx.live.in_flight.fetch_sub(1, Ordering::Relaxed);
                        rec
                    }
                    Err((id, why)) => request::input_record(id, why, submit, wait),
                };
                if tx.send(rec).await.is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);

    // Wait for the tasks; after a cancel, for at most `grace`.
    loop {
        tokio::select! {
            biased;
            r = tasks.join_next() => { if r.is_none() { break; } }
            _ = cancel.cancelled() => {
                let grace = tokio::time::sleep(cfg.grace);
                tokio::pin!(grace);
                loop {
                    tokio::select! {
                        r = tasks.join_next() => { if r.is_none() { break; } }
                        _ = &mut grace => { tasks.abort_all(); while tasks.join_next().await.is_some() {} break; }
                    }
                }
                break;
            }
        }
    }
    let retries = ctx.live.retries.load(Ordering::Relaxed);
    let dispatched = dispatched.load(Ordering::Relaxed);
    drop(ctx);
    let (res, w) = match writer.await {
        Ok(x) => x,
        Err(e) => {
            return Err(BatchError::Io {
                path: cfg.output.clone(),
                source: std::io::Error::other(format!("writer task failed: {e}")),
            });
        }
    };
    res?;
    let done = w.tally.ok + w.tally.failed;
    Ok(BatchSummary {
        input_prompts,
        resumed,
        attempted: dispatched,
        ok: w.tally.ok,
        failed: w.tally.failed,
        failed_in_file: w.tally.failed + kept_failed,
        retried_from_file,
        retries,
        not_finished: total - done,
        cancelled: cancel.is_cancelled(),
        completion_tokens: w.tally.completion_tokens,
        elapsed_s: started.elapsed().as_secs_f64(),
        input_problems,
        output_problems: existing.problems,
    })
}
