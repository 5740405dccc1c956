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
//! [`BatchSummary::input_problems`]; they are not sent.
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
    /// Error kind (`connect`, `timeout`, `status`, `decode`, `transport`).
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

/// One prompt from the input.
#[derive(Debug, Clone)]
enum Payload {
    Prompt(String),
    Messages(Value),
}

#[derive(Debug)]
struct Prompt {
    id: String,
    payload: Payload,
}

/// Reads the input JSONL. Returns prompts and problems.
/// `(1-based line, reason)` of input lines not used.
type InputProblems = Vec<(u64, String)>;

fn read_input(path: &Path, api: BatchApi) -> Result<(Vec<Prompt>, InputProblems), BatchError> {
    let f = File::open(path).map_err(io_err(path))?;
    let mut prompts = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let n = i as u64 + 1;
        let line = line.map_err(io_err(path))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                problems.push((n, format!("not JSON: {e}")));
                continue;
            }
        };
        let id = match v.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(x)) => x.to_string(),
            _ => {
                problems.push((n, "no string or number `id`".into()));
                continue;
            }
        };
        let payload = if let Some(p) = v.get("prompt").and_then(Value::as_str) {
            Payload::Prompt(p.to_string())
        } else if let Some(m @ Value::Array(_)) = v.get("messages") {
            if api != BatchApi::Chat {
                problems.push((n, format!("id {id}: `messages` needs the chat API")));
                continue;
            }
            Payload::Messages(m.clone())
        } else {
            problems.push((
                n,
                format!("id {id}: neither a string `prompt` nor a `messages` array"),
            ));
            continue;
        };
        if !seen.insert(id.clone()) {
            problems.push((n, format!("duplicate id {id} (first occurrence kept)")));
            continue;
        }
        prompts.push(Prompt { id, payload });
    }
    Ok((prompts, problems))
}

/// What an existing output file holds.
#[derive(Debug, Default)]
struct Existing {
    ok_ids: HashSet<String>,
    failed_ids: HashSet<String>,
    problems: Vec<String>,
}

/// Rewrites `path` without the failed records of the ids in `drop_ids`
/// (to `path.tmp`, fsynced, locked, renamed over `path`). Returns how many
/// records were removed and the rewritten file, locked: the run holds it so
/// the output is never unlocked.
fn remove_failed_records(
    path: &Path,
    drop_ids: &HashSet<String>,
) -> Result<(u64, File), BatchError> {
    #[derive(Deserialize)]
    struct Head {
        id: String,
        ok: bool,
    }
    let tmp = out_lock::tmp_path(path);
    let src = File::open(path).map_err(io_err(path))?;
    let mut reader = BufReader::with_capacity(1 << 20, src);
    let out = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut line = Vec::new();
    let mut removed = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io_err(path))? == 0 {
            break;
        }
        let drop = matches!(
            serde_json::from_slice::<Head>(&line),
            Ok(h) if !h.ok && drop_ids.contains(&h.id)
        );
        if drop {
            removed += 1;
        } else {
            w.write_all(&line).map_err(io_err(&tmp))?;
        }
    }
    let out = w.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
    out.sync_all().map_err(io_err(&tmp))?;
    // Locked before it takes the output's name: no instant without the lock.
    out.lock().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    Ok((removed, out))
}

/// Reads an existing output file; cuts a torn last line off.
fn scan_output(path: &Path) -> Result<Existing, BatchError> {
    let mut ex = Existing::default();
    let mut f = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ex),
        Err(e) => return Err(io_err(path)(e)),
    };
    // Stream the file line by line (outputs of long runs hold hundreds of
    // MB of answers); remember where the last complete line ends.
    let mut reader = BufReader::with_capacity(1 << 20, &mut f);
    let mut line = Vec::new();
    let mut complete_len: u64 = 0;
    let mut line_no = 0usize;
    #[derive(Deserialize)]
    struct Head {
        id: String,
        ok: bool,
    }
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            ex.problems.push(format!(
                "{}: torn last line ({n} bytes without a newline, left by an interrupted write) cut off",
                path.display()
            ));
            break;
        }
        complete_len += n as u64;
        line_no += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Head>(&line) {
            Ok(h) => {
                if h.ok {
                    ex.failed_ids.remove(&h.id);
                    ex.ok_ids.insert(h.id);
                } else if !ex.ok_ids.contains(&h.id) {
                    ex.failed_ids.insert(h.id);
                }
            }
            Err(e) => ex.problems.push(format!(
                "{} line {line_no}: not a record ({e}); ignored",
                path.display()
            )),
        }
    }
    drop(reader);
    if f.metadata().map_err(io_err(path))?.len() > complete_len {
        f.set_len(complete_len).map_err(io_err(path))?;
        f.seek(SeekFrom::End(0)).map_err(io_err(path))?;
        f.sync_all().map_err(io_err(path))?;
    }
    Ok(ex)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Shared live counters.
#[derive(Default)]
struct Live {
    in_flight: AtomicU64,
    retries: AtomicU64,
}

/// Everything a request task needs, shared.
struct Ctx {
    client: SglangClient,
    endpoint: Endpoint,
    api: BatchApi,
    stream: bool,
    /// The request body up to the payload: `{"max_tokens":8,...,"stream":false,`
    /// (serialised once; the payload and the closing brace are appended per request).
    body_prefix: Vec<u8>,
    retry: RetryPolicy,
    live: Live,
    key: Option<crate::client::ApiKey>,
}

impl Ctx {
    fn new(client: SglangClient, cfg: &BatchConfig) -> Result<Self, ClientError> {
        let path = match cfg.api {
            BatchApi::Chat => "/v1/chat/completions",
            BatchApi::Completions => "/v1/completions",
            BatchApi::Generate => "/generate",
        };
        let endpoint = client.endpoint(path)?;
        let mut m = Map::new();
        match cfg.api {
            BatchApi::Generate => {
                m.insert("sampling_params".into(), Value::Object(cfg.params.clone()));
            }
            BatchApi::Chat | BatchApi::Completions => {
                for (k, v) in &cfg.params {
                    m.insert(k.clone(), v.clone());
                }
                if let Some(model) = &cfg.model {
                    m.insert("model".into(), Value::String(model.clone()));
                }
                if cfg.stream {
                    m.insert("stream_options".into(), json!({"include_usage": true}));
                }
            }
        }
        m.insert("stream".into(), Value::Bool(cfg.stream));
        // The payload keys are written per request; drop them from the template.
        for k in ["messages", "prompt", "text"] {
            m.remove(k);
        }
        // ok: serialising a map of JSON values cannot fail.
        let mut body_prefix =
            serde_json::to_vec(&Value::Object(m)).unwrap_or_else(|_| b"{}".to_vec());
        body_prefix.pop(); // the closing '}'
        if body_prefix.len() > 1 {
            body_prefix.push(b',');
        }
        Ok(Ctx {
            client,
            endpoint,
            api: cfg.api,
            stream: cfg.stream,
            body_prefix,
            retry: cfg.retry.clone(),
            live: Live::default(),
            key: cfg.client.api_key.clone(),
        })
    }

    /// `s` with the API key redacted.
    fn scrub(&self, s: Option<String>) -> Option<String> {
        match (&self.key, s) {
            (Some(k), Some(s)) => Some(match k.redact(&s) {
                std::borrow::Cow::Borrowed(_) => s,
                std::borrow::Cow::Owned(o) => o,
            }),
            (_, s) => s,
        }
    }

    /// The JSON body for one prompt.
    fn body(&self, payload: &Payload) -> bytes::Bytes {
        let extra = match payload {
            Payload::Prompt(p) => p.len() + 48,
            Payload::Messages(_) => 256,
        };
        let mut b = Vec::with_capacity(self.body_prefix.len() + extra);
        b.extend_from_slice(&self.body_prefix);
        // ok (all `to_writer` calls): writing strings/values into a Vec cannot fail.
        match (self.api, payload) {
            (BatchApi::Chat, Payload::Prompt(p)) => {
                b.extend_from_slice(br#""messages":[{"role":"user","content":"#);
                let _ = serde_json::to_writer(&mut b, p);
                b.extend_from_slice(b"}]");
            }
            (BatchApi::Chat, Payload::Messages(m)) => {
                b.extend_from_slice(br#""messages":"#);
                let _ = serde_json::to_writer(&mut b, m);
            }
            (BatchApi::Completions, Payload::Prompt(p)) => {
                b.extend_from_slice(br#""prompt":"#);
                let _ = serde_json::to_writer(&mut b, p);
            }
            (BatchApi::Generate, Payload::Prompt(p)) => {
                b.extend_from_slice(br#""text":"#);
                let _ = serde_json::to_writer(&mut b, p);
            }
            // rejected by read_input; send an empty prompt rather than invalid JSON
            (_, Payload::Messages(_)) => b.extend_from_slice(br#""prompt":"""#),
        }
        b.push(b'}');
        bytes::Bytes::from(b)
    }
}

/// Lean response shapes for the batch path: only the fields a record
/// needs; everything else is skipped while parsing (no buffering of
/// unknown keys, unlike the public types in [`crate::api`]).
mod lean {
    use serde::Deserialize;

    #[derive(Deserialize, Default)]
    pub struct Usage {
        #[serde(default)]
        pub prompt_tokens: Option<u64>,
        #[serde(default)]
        pub completion_tokens: Option<u64>,
    }

    #[derive(Deserialize, Default)]
    pub struct Message {
        #[serde(default)]
        pub content: Option<String>,
        #[serde(default)]
        pub reasoning_content: Option<String>,
    }

    #[derive(Deserialize, Default)]
    pub struct Choice {
        #[serde(default)]
        pub message: Option<Message>,
        #[serde(default)]
        pub delta: Option<Message>,
        #[serde(default)]
        pub text: Option<String>,
        #[serde(default)]
        pub finish_reason: Option<String>,
    }

    /// A chat or completions response, or one streamed chunk.
    #[derive(Deserialize, Default)]
    pub struct Openai {
        #[serde(default)]
        pub choices: Option<Vec<Choice>>,
        #[serde(default)]
        pub usage: Option<Usage>,
    }

    #[derive(Deserialize, Default)]
    pub struct FinishReason {
        #[serde(default, rename = "type")]
        pub kind: Option<String>,
    }

    #[derive(Deserialize, Default)]
    pub struct MetaInfo {
        #[serde(default)]
        pub prompt_tokens: Option<u64>,
        #[serde(default)]
        pub completion_tokens: Option<u64>,
        #[serde(default)]
        pub finish_reason: Option<FinishReason>,
    }

    /// A native `/generate` response or chunk (`text` cumulative).
    #[derive(Deserialize, Default)]
    pub struct Generate {
        #[serde(default)]
        pub text: Option<String>,
        #[serde(default)]
        pub meta_info: MetaInfo,
    }
}

/// The outcome of one attempt.
#[derive(Default)]
struct Answer {
    content: Option<String>,
    reasoning: Option<String>,
    finish_reason: Option<String>,
    usage: RecordUsage,
    ttft_s: Option<f64>,
}

fn usage_of(u: Option<lean::Usage>) -> RecordUsage {
    u.map(|u| RecordUsage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
    })
    .unwrap_or_default()
}

fn push_opt(acc: &mut Option<String>, s: Option<&str>) {
    if let Some(s) = s {
        acc.get_or_insert_with(String::new).push_str(s);
    }
}

async fn attempt(
    ctx: &Ctx,
    conn: &mut BatchConnection,
    body: bytes::Bytes,
    sent: Instant,
) -> Result<Answer, ClientError> {
    let c = &ctx.client;
    let ep = &ctx.endpoint;
    let mut a = Answer::default();
    let mark = |a: &mut Answer, nonempty: bool| {
        if nonempty && a.ttft_s.is_none() {
            a.ttft_s = Some(sent.elapsed().as_secs_f64());
        }
    };
    match (ctx.api, ctx.stream) {
        (BatchApi::Chat | BatchApi::Completions, false) => {
            let r: lean::Openai = conn.post_json(body).await?;
            let choices = match r.choices {
                None => return Err(no_answer(ep, "no \"choices\" in the response")),
                Some(c) if c.is_empty() => {
                    return Err(no_answer(ep, "\"choices\" is empty"));
                }
                Some(c) => c,
            };
            if let Some(ch) = choices.into_iter().next() {
                match ch.message {
                    Some(m) => {
                        a.content = m.content;
                        a.reasoning = m.reasoning_content;
                    }
                    None => a.content = ch.text,
                }
                a.finish_reason = ch.finish_reason;
            }
            a.usage = usage_of(r.usage);
        }
        (BatchApi::Chat | BatchApi::Completions, true) => {
            let mut s = c.post_stream_bytes::<lean::Openai>(ep, body).await?;
            let mut any_choice = false;
            while let Some(chunk) = s.next().await {
                let chunk = chunk?;
                if chunk.usage.is_some() {
                    a.usage = usage_of(chunk.usage);
                }
                let choices = chunk.choices.unwrap_or_default();
                any_choice |= !choices.is_empty();
                for ch in choices {
                    let (content, reasoning) = match ch.delta {
                        Some(d) => (d.content, d.reasoning_content),
                        None => (ch.text, None),
                    };
                    let ne = content.as_deref().is_some_and(|t| !t.is_empty())
                        || reasoning.as_deref().is_some_and(|t| !t.is_empty());
                    mark(&mut a, ne);
                    push_opt(&mut a.content, content.as_deref());
                    push_opt(&mut a.reasoning, reasoning.as_deref());
                    if ch.finish_reason.is_some() {
                        a.finish_reason = ch.finish_reason;
                    }
                }
            }
            if !any_choice {
                return Err(no_answer(ep, "no chunk of the stream had \"choices\""));
            }
        }
        (BatchApi::Generate, false) => {
            let r: lean::Generate = conn.post_json(body).await?;
            let Some(text) = r.text else {
                return Err(no_answer(ep, "no \"text\" in the response"));
            };
            a.finish_reason = r.meta_info.finish_reason.and_then(|f| f.kind);
            a.usage = RecordUsage {
                prompt_tokens: r.meta_info.prompt_tokens,
                completion_tokens: r.meta_info.completion_tokens,
            };
            a.content = Some(text);
        }
        (BatchApi::Generate, true) => {
            let mut s = c.post_stream_bytes::<lean::Generate>(ep, body).await?;
            while let Some(chunk) = s.next().await {
                let chunk = chunk?;
                let Some(text) = chunk.text else {
                    return Err(no_answer(ep, "a stream chunk has no \"text\""));
                };
                mark(&mut a, !text.is_empty());
                if let Some(f) = chunk.meta_info.finish_reason.and_then(|f| f.kind) {
                    a.finish_reason = Some(f);
                }
                a.usage = RecordUsage {
                    prompt_tokens: chunk.meta_info.prompt_tokens.or(a.usage.prompt_tokens),
                    completion_tokens: chunk
                        .meta_info
                        .completion_tokens
                        .or(a.usage.completion_tokens),
                };
                a.content = Some(text); // cumulative
            }
        }
    }
    Ok(a)
}

fn no_answer(ep: &Endpoint, reason: &str) -> ClientError {
    ClientError::NoAnswer {
        url: crate::error::redact_url(ep.url_str()),
        reason: reason.to_string(),
    }
}

fn backoff(policy: &RetryPolicy, attempt: u32, retry_after_s: Option<f64>) -> Duration {
    let exp = policy.base_delay.as_secs_f64() * 2f64.powi(attempt.saturating_sub(1).min(30) as i32);
    let cap = exp.min(policy.max_delay.as_secs_f64());
    let jittered = rand::rng().random::<f64>() * cap;
    let floor = retry_after_s
        .unwrap_or(0.0)
        .min(policy.max_delay.as_secs_f64());
    Duration::from_secs_f64(jittered.max(floor))
}

/// The record of a request that failed (after its last attempt).
fn failed_record(
    ctx: &Ctx,
    id: String,
    e: ClientError,
    submit_unix_s: f64,
    permit_wait_s: f64,
    (start_unix_s, end_unix_s, latency_s): (f64, f64, f64),
    attempts: u32,
) -> BatchRecord {
    BatchRecord {
        id,
        ok: false,
        submit_unix_s,
        permit_wait_s,
        start_unix_s: Some(start_unix_s),
        end_unix_s,
        latency_s: Some(latency_s),
        attempts,
        error: ctx.scrub(Some(e.to_string())),
        error_kind: Some(e.kind().to_string()),
        ..Default::default()
    }
}

/// The `Retry-After` of a 429 or 503, seconds.
fn retry_after(e: &ClientError) -> Option<f64> {
    match e {
        ClientError::Status { retry_after_s, .. } => *retry_after_s,
        _ => None,
    }
}

/// Runs one prompt to a record (holding its permit throughout).
async fn run_one(
    ctx: &Ctx,
    conn: &mut BatchConnection,
    p: Prompt,
    submit_unix_s: f64,
    permit_wait_s: f64,
) -> BatchRecord {
    let body = ctx.body(&p.payload);
    let mut attempts = 0;
    // `--timeout` bounds the request in all, its retries and their waits included.
    let first_sent = Instant::now();
    let budget = ctx.client.config().generate_timeout;
    loop {
        attempts += 1;
        let start_unix_s = unix_now();
        let sent = Instant::now();
        let res = attempt(ctx, conn, body.clone(), sent).await;
        let latency_s = sent.elapsed().as_secs_f64();
        let end_unix_s = start_unix_s + latency_s;
        match res {
            Ok(a) => {
                return BatchRecord {
                    id: p.id,
                    ok: true,
                    // Answers are data: never rewritten (a short key would change words).
                    content: a.content,
                    reasoning_content: a.reasoning,
                    finish_reason: a.finish_reason,
                    usage: a.usage,
                    submit_unix_s,
                    permit_wait_s,
                    start_unix_s: Some(start_unix_s),
                    ttft_s: a.ttft_s,
                    end_unix_s,
                    latency_s: Some(latency_s),
                    attempts,
                    error: None,
                    error_kind: None,
                };
            }
            Err(e) if e.is_retryable() && attempts < ctx.retry.max_attempts => {
                let delay = backoff(&ctx.retry, attempts, retry_after(&e));
                if first_sent.elapsed() + delay < budget {
                    ctx.live.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(delay).await;
                    continue;
                }
                return failed_record(
                    ctx,
                    p.id,
                    e,
                    submit_unix_s,
                    permit_wait_s,
                    (start_unix_s, end_unix_s, latency_s),
                    attempts,
                );
            }
            Err(e) => {
                return failed_record(
                    ctx,
                    p.id,
                    e,
                    submit_unix_s,
                    permit_wait_s,
                    (start_unix_s, end_unix_s, latency_s),
                    attempts,
                );
            }
        }
    }
}

/// Writer-side tallies, returned when the writer ends.
#[derive(Default)]
struct Tally {
    ok: u64,
    failed: u64,
    completion_tokens: u64,
}

struct Writer<P: ProgressSink> {
    file: File,
    path: PathBuf,
    sink: P,
    started: Instant,
    total: u64,
    resumed: u64,
    window: Duration,
    recent: VecDeque<(Instant, u64)>,
    tally: Tally,
}

impl<P: ProgressSink> Writer<P> {
    fn write_batch(
        &mut self,
        recs: &mut Vec<BatchRecord>,
        buf: &mut Vec<u8>,
    ) -> Result<(), BatchError> {
        buf.clear();
        for r in recs.iter() {
            // ok: serialising a struct of strings/numbers cannot fail; a NaN
            // float is written as null by serde_json.
            if serde_json::to_writer(&mut *buf, r).is_err() {
                continue;
            }
            buf.push(b'\n');
        }
        // One write of whole lines; a kill can tear only the last line, which
        // the next run cuts off.
        self.file.write_all(buf).map_err(io_err(&self.path))?;
        let now = Instant::now();
        for r in recs.drain(..) {
            let toks = if r.ok {
                r.usage.completion_tokens.unwrap_or(0)
            } else {
                0
            };
            if r.ok {
                self.tally.ok += 1;
                self.tally.completion_tokens += toks;
            } else {
                self.tally.failed += 1;
            }
            self.recent.push_back((now, toks));
            self.sink.on_completion(&CompletionEvent {
                t_s: (now - self.started).as_secs_f64(),
                end_unix_s: r.end_unix_s,
                ok: r.ok,
                completion_tokens: r.usage.completion_tokens,
                latency_s: r.latency_s,
                ttft_s: r.ttft_s,
                attempts: r.attempts,
            });
        }
        Ok(())
    }

    fn snapshot(&mut self, live: &Live) -> ProgressSnapshot {
        let now = Instant::now();
        while let Some(&(t, _)) = self.recent.front() {
            if now - t > self.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        let elapsed = (now - self.started).as_secs_f64();
        let window_s = self.window.as_secs_f64().min(elapsed).max(1e-9);
        let n = self.recent.len() as f64;
        let toks: u64 = self.recent.iter().map(|x| x.1).sum();
        let done = self.tally.ok + self.tally.failed;
        let window_req_per_s = n / window_s;
        let remaining = self.total.saturating_sub(done) as f64;
        ProgressSnapshot {
            elapsed_s: elapsed,
            total: self.total,
            resumed: self.resumed,
            completed: self.tally.ok,
            failed: self.tally.failed,
            in_flight: live.in_flight.load(Ordering::Relaxed),
            retries: live.retries.load(Ordering::Relaxed),
            completion_tokens: self.tally.completion_tokens,
            window_s,
            window_req_per_s,
            window_tok_per_s: toks as f64 / window_s,
            lifetime_req_per_s: if elapsed > 0.0 {
                done as f64 / elapsed
            } else {
                0.0
            },
            lifetime_tok_per_s: if elapsed > 0.0 {
                self.tally.completion_tokens as f64 / elapsed
            } else {
                0.0
            },
            eta_s: (window_req_per_s > 0.0).then(|| remaining / window_req_per_s),
        }
    }
}

async fn writer_task<P: ProgressSink>(
    mut w: Writer<P>,
    mut rx: mpsc::Receiver<BatchRecord>,
    ctx: Arc<Ctx>,
    interval: Duration,
) -> (Result<(), BatchError>, Writer<P>) {
    let mut tick = tokio::time::interval(interval.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut recs = Vec::with_capacity(256);
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        tokio::select! {
            got = rx.recv_many(&mut recs, 256) => {
                if got == 0 {
                    break;
                }
                if let Err(e) = w.write_batch(&mut recs, &mut buf) {
                    return (Err(e), w);
                }
            }
            _ = tick.tick() => {
                let s = w.snapshot(&ctx.live);
                w.sink.on_snapshot(&s);
            }
        }
    }
    let s = w.snapshot(&ctx.live);
    w.sink.on_snapshot(&s);
    (Ok(()), w)
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
    let todo: Vec<Prompt> = prompts
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
    let queue = Arc::new(std::sync::Mutex::new(todo.into_iter()));
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
                ctx.live.in_flight.fetch_add(1, Ordering::Relaxed);
                let rec = run_one(&ctx, &mut conn, p, submit, wait).await;
                ctx.live.in_flight.fetch_sub(1, Ordering::Relaxed);
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
