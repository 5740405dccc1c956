//! The client's records: per-request JSONL, a progress log or a benchmark summary, parsed from
//! text (the diagnosis reads them as the client's view of the server).
//!
//! Three shapes are read, detected line by line:
//! - JSONL records with a completion time: the batch client's own records (`end_unix_s`,
//!   `submit_unix_s`, `usage`, `ok`), or any JSONL with a time field (`end_time`, `timestamp`,
//!   `ts`, `time`, `completed_at`, `created`: Unix seconds or an ISO date-time);
//! - JSONL records without times (a dump of responses): only the request lengths are used;
//! - a progress log whose lines start with a date-time (bare, ISO or in brackets, with
//!   milliseconds or not) and carry a count of completed requests, `N/M` (`3/11000 done`,
//!   `Progress: 3/11000`, `completed 3/11000`, `Processed 3/11000 requests`) or `N done`, and
//!   optionally the client's own printed rates (`X req/s`, `X it/s`, `X tok/s`), e.g.
//!   `2026-02-10 14:00:30 [B2] 3/11000 done, 0.0 req/s`;
//! - a benchmark's printed summary (`python -m sglang.bench_serving`, SGLang's multi-turn
//!   benchmark), read by [`crate::bench`]: whole-run figures, no per-request times;
//! - a benchmark client's own files, told by their content (no option names the kind), one
//!   module per client: NVIDIA AIPerf's per-request export and its run summary (JSON, CSV,
//!   console tables: [`aiperf`]), GuideLLM's report (JSON or YAML: each benchmark of a sweep a
//!   run summary, the last one's requests as records), CSV and console tables ([`guidellm`]),
//!   `vllm bench serve --save-result` and bench_serving's `--output-file` ([`crate::bench`]),
//!   and the llm-d Benchmark Report v0.2, the common format ([`llmd`]).
//!
//! A JSON document or JSONL file of none of these shapes is refused ([`NotClientFile`]) with
//! what it looks like and the shapes read, never counted as one request; a known tool's file of
//! a layout this version does not read names the version it holds and the one read.
//!
//! Every line is accounted for: a line that fits none of these is counted and the first ones are
//! kept with their line numbers.

pub mod aiperf;
pub mod guidellm;
mod jsonl;
pub mod llmd;
mod progress;

use serde::Serialize;
use serde_json::Value;

pub use jsonl::MAX_REQUEST_TOKENS;
use progress::progress_from_line;
pub use progress::{is_progress_line, parse_datetime_prefix, progress_without_time};

/// How the client evidence was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientFormat {
    /// JSONL records with completion times.
    TimedRecords,
    /// JSONL records without any time field (lengths only).
    UntimedRecords,
    /// A progress log with cumulative completion counts.
    ProgressLog,
    /// Benchmark summary blocks (whole-run figures).
    BenchmarkSummary,
    /// Nothing usable was found.
    Unknown,
}

/// One point of a progress log: at time `t`, `done` requests had completed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ProgressPoint {
    /// Seconds on the same clock as the server log (local time, seconds since 1970).
    pub t: f64,
    /// Completed requests so far.
    pub done: u64,
    /// Total requests of the job, when printed (`N/M done`).
    pub total: Option<u64>,
    /// The rate the client printed on this line (req/s), when it did.
    pub printed_req_per_s: Option<f64>,
    /// The token rate the client printed on this line (tok/s), when it did.
    pub printed_tok_per_s: Option<f64>,
    /// The mean completion length the client printed (`avg_comp=4121tok`, tokens), when it did.
    pub mean_completion_tokens: Option<f64>,
}

/// One completed request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ClientRequest {
    /// Completion time (seconds; Unix seconds for JSON numbers, log clock for ISO strings).
    pub end: Option<f64>,
    /// Submit time (seconds), when recorded.
    pub submit: Option<f64>,
    /// Time waiting for a concurrency slot in the client (seconds), when recorded.
    pub permit_wait_s: Option<f64>,
    /// Time to first token (seconds), when recorded.
    pub ttft_s: Option<f64>,
    /// The request's mean inter-token latency (seconds), when recorded (AIPerf's
    /// `inter_token_latency`, GuideLLM's `inter_token_latency_ms`).
    pub itl_s: Option<f64>,
    /// Prompt tokens.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    pub completion_tokens: Option<u64>,
    /// Whether the request succeeded (`ok` field; absent means yes).
    pub ok: bool,
    /// 1-based line number of the record in its file.
    pub line: u64,
}

/// Everything read from one client file.
#[derive(Clone, Debug, Serialize)]
pub struct ClientEvidence {
    /// File name (path).
    pub source: String,
    /// The detected shape.
    pub format: ClientFormat,
    /// Lines read.
    pub lines: u64,
    /// Requests (JSONL formats).
    pub requests: Vec<ClientRequest>,
    /// Progress points (progress logs).
    pub progress: Vec<ProgressPoint>,
    /// Benchmark summary blocks, in order (a file may hold several runs).
    pub bench: Vec<crate::BenchSummary>,
    /// Lines that fit no shape.
    pub unparsed_lines: u64,
    /// The first unparsed lines: (line number, excerpt).
    pub unparsed: Vec<(u64, String)>,
    /// Requests the client cancelled in flight (GuideLLM's `incomplete`: at its time limit),
    /// left out of [`Self::requests`]: they neither completed nor failed on the server's side.
    pub cancelled: u64,
    /// Which of the file's runs [`Self::requests`] come from, when it holds several (a GuideLLM
    /// sweep: `benchmark 3 of 3, concurrent@64`); every run's summary is in [`Self::bench`].
    pub records_of: Option<String>,
    /// Why the file is no client evidence when it is none this tool reads (a JSON document of
    /// no known shape, a known tool's unsupported version).
    #[serde(skip)]
    pub refused: Option<NotClientFile>,
}

/// The shapes of JSON client files read, as the refusal of another one lists them.
pub const JSON_SHAPES_READ: &str = "per-request JSONL (run-batch's records; any JSONL with a time field such as end_time, or token counts), AIPerf's profile_export.jsonl and profile_export_aiperf.json, GuideLLM's benchmarks.json, vllm bench serve --save-result JSON, sglang.bench_serving --output-file JSONL, an llm-d Benchmark Report v0.2";

/// Why a client file is none this tool reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotClientFile {
    /// A JSON document, or JSON lines, of no shape read.
    #[error("it is JSON of no shape read ({looks}); the JSON shapes read are: {JSON_SHAPES_READ}")]
    UnknownJson {
        /// What it looks like: its top-level keys, or its kind of value.
        looks: String,
    },
    /// A known tool's file that holds no request's results (its inputs, its scrape of the
    /// server's metrics).
    #[error("it is {what}: it holds no request's results; give the tool's results file instead")]
    NoResults {
        /// What the file is.
        what: &'static str,
    },
    /// A known tool's file in a layout this version does not read.
    #[error(
        "it is {tool}'s file, version {version}, whose layout is not read ({reason}); read: {read}"
    )]
    UnsupportedVersion {
        /// The tool (`AIPerf`, `GuideLLM`, `llm-d Benchmark Report`).
        tool: &'static str,
        /// The version the file states (or says it states none).
        version: String,
        /// What did not fit.
        reason: String,
        /// The versions read.
        read: &'static str,
    },
}

/// What a JSON value that fits no shape looks like: an object's first keys, else its kind.
fn json_looks(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().take(8).map(String::as_str).collect();
            let more = if o.len() > 8 { ", …" } else { "" };
            format!("an object with keys {}{more}", keys.join(", "))
        }
        Value::Array(a) => format!("an array of {} values", a.len()),
        _ => "a bare value".to_string(),
    }
}

/// A whole-document client file read: summaries, records, or a refusal.
struct Whole {
    summaries: Vec<crate::BenchSummary>,
    requests: Vec<ClientRequest>,
    cancelled: u64,
    records_of: Option<String>,
}

impl Whole {
    fn summaries(summaries: Vec<crate::BenchSummary>) -> Self {
        Whole {
            summaries,
            requests: Vec::new(),
            cancelled: 0,
            records_of: None,
        }
    }
}

/// A client file read as a whole (a JSON or YAML document, a CSV, console tables), when it is
/// one of the known tools' files; `None` leaves it to the line-by-line reading.
fn whole_document(text: &str) -> Option<Result<Whole, NotClientFile>> {
    let head = text.trim_start();
    if head.starts_with('{') {
        let v = serde_json::from_str::<Value>(text)
            .ok()
            .or_else(|| serde_json::from_str(&jsonl::python_json(text)?).ok())?;
        if guidellm::is_report(&v) {
            return Some(guidellm::read_report(&v).map(|r| Whole {
                summaries: r.summaries,
                requests: r.requests,
                cancelled: r.cancelled,
                records_of: r.records_of,
            }));
        }
        if let Some(what) = aiperf::no_results(&v) {
            return Some(Err(NotClientFile::NoResults { what }));
        }
        if aiperf::is_summary_json(&v) {
            return Some(aiperf::summary_json(&v).map(|b| Whole::summaries(vec![b])));
        }
        if llmd::is_report(&v) {
            return Some(llmd::read_report(&v).map(|b| Whole::summaries(vec![b])));
        }
        // a pretty-printed `--save-result` (one object over many lines)
        if text.trim().lines().nth(1).is_some()
            && let Some(b) = crate::BenchSummary::from_bench_serving_json(&v, 1)
        {
            return Some(Ok(Whole::summaries(vec![b])));
        }
        // a document over many lines of no known shape (JSONL's records are one a line)
        if text.trim().lines().nth(1).is_some()
            && text
                .lines()
                .nth(1)
                .is_some_and(|l| !l.trim_start().starts_with('{'))
        {
            return Some(Err(NotClientFile::UnknownJson {
                looks: json_looks(&v),
            }));
        }
        return None;
    }
    // GuideLLM's YAML report: a mapping whose first key is one of its report's
    if ["benchmarks:", "metadata:", "---"]
        .iter()
        .any(|k| head.starts_with(k))
    {
        let v: Value = serde_yaml::from_str(text).ok()?;
        if guidellm::is_report(&v) {
            return Some(guidellm::read_report(&v).map(|r| Whole {
                summaries: r.summaries,
                requests: r.requests,
                cancelled: r.cancelled,
                records_of: r.records_of,
            }));
        }
        return None;
    }
    if head.starts_with(aiperf::SERVER_METRICS_CSV) {
        return Some(Err(NotClientFile::NoResults {
            what: aiperf::SERVER_METRICS_WHAT,
        }));
    }
    if aiperf::is_summary_csv(text) {
        return aiperf::summary_csv(text).map(|b| Ok(Whole::summaries(vec![b])));
    }
    if guidellm::is_csv(text) {
        let s = guidellm::summaries_csv(text);
        return (!s.is_empty()).then(|| Ok(Whole::summaries(s)));
    }
    if aiperf::has_console_tables(text) {
        return aiperf::summary_console(text).map(|b| Ok(Whole::summaries(vec![b])));
    }
    if guidellm::has_console_tables(text) {
        let s = guidellm::summaries_console(text);
        return (!s.is_empty()).then(|| Ok(Whole::summaries(s)));
    }
    None
}

impl ClientEvidence {
    /// `(prompt, completion)` token pairs of successful requests that report both.
    pub fn lengths(&self) -> Vec<(u64, u64)> {
        self.requests
            .iter()
            .filter(|r| r.ok)
            .filter_map(|r| Some((r.prompt_tokens?, r.completion_tokens?)))
            .collect()
    }

    /// Completion times of successful requests, sorted (seconds).
    pub fn completion_times(&self) -> Vec<f64> {
        let mut t: Vec<f64> = self
            .requests
            .iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.end)
            .filter(|x| x.is_finite())
            .collect();
        t.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        t
    }

    /// Failed requests.
    pub fn failed(&self) -> u64 {
        self.requests.iter().filter(|r| !r.ok).count() as u64
    }
}

/// Parse a client file (JSONL records, AIPerf's per-request export, GuideLLM's report, or a
/// progress log). Never fails: what cannot be read is counted in `unparsed_lines`.
pub fn parse_client(source: impl Into<String>, text: &str) -> ClientEvidence {
    let mut ev = ClientEvidence {
        source: source.into(),
        format: ClientFormat::Unknown,
        lines: 0,
        requests: Vec::new(),
        progress: Vec::new(),
        bench: crate::parse_bench_summaries(text),
        unparsed_lines: 0,
        unparsed: Vec::new(),
        cancelled: 0,
        records_of: None,
        refused: None,
    };
    // a whole document (a tool's report, CSV or console tables), not lines
    match whole_document(text) {
        Some(Ok(w)) => {
            ev.lines = text.lines().count() as u64;
            ev.format = if w.requests.iter().any(|r| r.end.is_some()) {
                ClientFormat::TimedRecords
            } else if !w.requests.is_empty() {
                ClientFormat::UntimedRecords
            } else {
                ClientFormat::BenchmarkSummary
            };
            ev.requests = w.requests;
            ev.cancelled = w.cancelled;
            ev.records_of = w.records_of;
            ev.bench = w.summaries;
            return ev;
        }
        Some(Err(e)) => {
            ev.lines = text.lines().count() as u64;
            ev.bench.clear();
            ev.refused = Some(e);
            return ev;
        }
        None => {}
    }
    let in_bench = |line_no: u64| {
        ev.bench
            .iter()
            .any(|b| (b.first_line..=b.last_line).contains(&line_no))
    };
    let mut requests = Vec::new();
    let mut json_runs = Vec::new();
    let mut progress = Vec::new();
    let mut lines = 0;
    let mut unparsed_lines = 0;
    let mut unparsed = Vec::new();
    let mut unknown_json = None;
    for (i, raw) in text.lines().enumerate() {
        lines += 1;
        let line = raw.trim();
        if line.is_empty() || in_bench(i as u64 + 1) {
            continue;
        }
        if line.starts_with('{') {
            let parsed = serde_json::from_str::<Value>(line)
                .or_else(|e| jsonl::python_json(line).map_or(Err(e), |l| serde_json::from_str(&l)));
            if let Ok(v) = parsed {
                if let Some(mut r) = jsonl::record_from_json(&v) {
                    r.line = i as u64 + 1;
                    requests.push(r);
                    continue;
                }
                // bench_serving's `--output-file`: a run's summary per line
                if let Some(b) = crate::BenchSummary::from_bench_serving_json(&v, i as u64 + 1) {
                    json_runs.push(b);
                    continue;
                }
                unknown_json.get_or_insert_with(|| json_looks(&v));
            }
        } else if let Some(p) = progress_from_line(line) {
            progress.push(p);
            continue;
        }
        unparsed_lines += 1;
        if unparsed.len() < 20 {
            unparsed.push((i as u64 + 1, line.chars().take(160).collect()));
        }
    }
    ev.lines = lines;
    ev.bench.extend(json_runs);
    if requests.is_empty() && progress.is_empty() && ev.bench.is_empty() {
        ev.refused = unknown_json.map(|looks| NotClientFile::UnknownJson { looks });
    }
    ev.requests = requests;
    ev.progress = progress;
    ev.unparsed_lines = unparsed_lines;
    ev.unparsed = unparsed;
    ev.format = if !ev.progress.is_empty() && ev.progress.len() >= ev.requests.len() {
        ClientFormat::ProgressLog
    } else if ev.requests.iter().any(|r| r.end.is_some()) {
        ClientFormat::TimedRecords
    } else if !ev.requests.is_empty() {
        ClientFormat::UntimedRecords
    } else if !ev.bench.is_empty() {
        ClientFormat::BenchmarkSummary
    } else {
        ClientFormat::Unknown
    };
    ev
}

#[cfg(test)]
mod tests {
    use super::jsonl::python_json;
    use super::*;

    /// `sglang.bench_serving --output-file` (0.5.23; `tests/data/clients/
    /// sglang-bench-serving-0.5.23/bench.summary.jsonl`, its line without the per-request
    /// arrays): read as the run's summary, Python's bare `Infinity` included (before: one
    /// request with no fields).
    #[test]
    fn bench_serving_output_file_is_a_summary() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/clients/sglang-bench-serving-0.5.23/bench.summary.jsonl"
        ))
        .expect("test data");
        let c = parse_client("bench.jsonl", &text);
        assert!(c.requests.is_empty());
        assert_eq!(c.format, ClientFormat::BenchmarkSummary);
        let b = &c.bench[0];
        assert_eq!(
            (b.successful_requests, b.max_concurrency),
            (Some(240), Some(64))
        );
        assert_eq!(b.request_rate.as_deref(), Some("inf"));
        assert_eq!(b.total_generated_tokens, Some(122_880));
        assert!((b.duration_s.unwrap() - 111.778_866).abs() < 1e-3);
        assert!((b.ttft.mean_s.unwrap() - 16.3).abs() < 0.1, "{:?}", b.ttft);
        assert_eq!(
            python_json(r#"{"a": NaN, "b": "NaN", "c": -Infinity}"#).as_deref(),
            Some(r#"{"a": null, "b": "NaN", "c": "-inf"}"#)
        );
        assert_eq!(python_json(r#"{"a": 1}"#), None);
    }
}
