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
//!   benchmark), read by [`crate::bench`]: whole-run figures, no per-request times.
//!
//! Every line is accounted for: a line that fits none of these is counted and the first ones are
//! kept with their line numbers.

mod aiperf;
mod guidellm;
mod jsonl;
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
    };
    // a whole JSON document (GuideLLM's report), not JSON lines
    if text.trim_start().starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(text)
        && let Some((requests, cancelled)) = guidellm::guidellm_requests(&v)
    {
        ev.lines = text.lines().count() as u64;
        ev.format = if requests.iter().any(|r| r.end.is_some()) {
            ClientFormat::TimedRecords
        } else {
            ClientFormat::UntimedRecords
        };
        ev.requests = requests;
        ev.cancelled = cancelled;
        return ev;
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
