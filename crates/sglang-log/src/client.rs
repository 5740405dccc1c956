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

use serde::Serialize;
use serde_json::Value;

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

const TIME_KEYS: &[&str] = &[
    "end_unix_s",
    "end_time",
    "completed_at",
    "finished_at",
    "timestamp",
    "ts",
    "time",
    "created",
];

/// Parse `YYYY-MM-DD[ T]HH:MM:SS[.fff][Z]` at the start of `s` into seconds (log clock), and the
/// number of bytes it used.
pub fn parse_datetime_prefix(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut used = 19;
    let mut frac = 0.0;
    if b.len() > 20 && (b[19] == b'.' || b[19] == b',') {
        let digits = b[20..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 {
            frac = s
                .get(19..20 + digits)
                .and_then(|x| format!("0{}", x).replace(',', ".").parse::<f64>().ok())
                .unwrap_or(0.0);
            used = 20 + digits;
        }
    }
    if b.get(used) == Some(&b'Z') {
        used += 1;
    }
    let ts = crate::Timestamp::from_ymd_hms(y as i32, mo, d, h, mi, se, 0)?;
    Some((ts.seconds() + frac, used))
}

/// Unix times above these are milliseconds, microseconds, nanoseconds (seconds reach 10^11 only
/// in the year 5138).
const MS_FROM: f64 = 1e11;
const US_FROM: f64 = 1e14;
const NS_FROM: f64 = 1e17;

/// The most tokens one request can carry (a count above it is a broken record, not a request).
pub const MAX_REQUEST_TOKENS: u64 = 100_000_000;

fn as_time(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64().filter(|x| x.is_finite() && *x > 0.0).map(|x| {
            if x >= NS_FROM {
                x / 1e9
            } else if x >= US_FROM {
                x / 1e6
            } else if x >= MS_FROM {
                x / 1e3
            } else {
                x
            }
        }),
        Value::String(s) => parse_datetime_prefix(s).map(|x| x.0),
        _ => None,
    }
}

fn as_u64(v: Option<&Value>) -> Option<u64> {
    v.and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|x| *x >= 0.0).map(|x| x as u64))
    })
    .filter(|&n| n <= MAX_REQUEST_TOKENS)
}

/// A duration of AIPerf's `{"value": X, "unit": "ms"}` (seconds).
fn aiperf_seconds(m: &serde_json::Map<String, Value>, key: &str) -> Option<f64> {
    let o = m.get(key)?.as_object()?;
    let x = o
        .get("value")?
        .as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0)?;
    let scale = match o.get("unit").and_then(Value::as_str).unwrap_or("ms") {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        _ => return None,
    };
    Some(x * scale)
}

/// One record of AIPerf's per-request export (`profile_export.jsonl`, AIPerf 0.13): its
/// `metadata` holds the request's start and end (`request_start_ns`, `request_end_ns`) and
/// whether it was cancelled; its `metrics` each metric as `{"value", "unit"}`: the prompt's
/// `input_sequence_length`, the output's `output_sequence_length` (AIPerf's own token count,
/// which its output throughput counts), `time_to_first_token`. A record with an `error` failed.
fn aiperf_record(obj: &serde_json::Map<String, Value>) -> Option<ClientRequest> {
    let meta = obj.get("metadata")?.as_object()?;
    if !(meta.contains_key("request_end_ns") || meta.contains_key("request_start_ns")) {
        return None;
    }
    let metrics = obj.get("metrics").and_then(Value::as_object);
    let count = |k: &str| {
        metrics
            .and_then(|m| m.get(k))
            .and_then(|o| as_u64(o.get("value")))
    };
    let cancelled = meta.get("was_cancelled").and_then(Value::as_bool) == Some(true);
    let failed = obj.get("error").is_some_and(|e| !e.is_null());
    Some(ClientRequest {
        end: meta.get("request_end_ns").and_then(as_time),
        submit: meta.get("request_start_ns").and_then(as_time),
        permit_wait_s: None,
        ttft_s: metrics.and_then(|m| aiperf_seconds(m, "time_to_first_token")),
        itl_s: metrics.and_then(|m| aiperf_seconds(m, "inter_token_latency")),
        prompt_tokens: count("input_sequence_length").or_else(|| count("usage_prompt_tokens")),
        completion_tokens: count("output_sequence_length")
            .or_else(|| count("usage_completion_tokens")),
        ok: !(cancelled || failed),
        line: 0,
    })
}

fn record_from_json(v: &Value) -> Option<ClientRequest> {
    let obj = v.as_object()?;
    if obj.contains_key("metadata") {
        return aiperf_record(obj);
    }
    let usage = obj.get("usage").and_then(|u| u.as_object());
    let tok = |k: &str| as_u64(obj.get(k)).or_else(|| as_u64(usage.and_then(|u| u.get(k))));
    let end = TIME_KEYS.iter().find_map(|k| obj.get(*k).and_then(as_time));
    // an object with none of a record's fields is no record (a whole report's JSON, a config)
    let known = end.is_some()
        || [
            "submit_unix_s",
            "ttft_s",
            "ok",
            "prompt_tokens",
            "completion_tokens",
            "usage",
        ]
        .iter()
        .any(|k| obj.contains_key(*k));
    if !known {
        return None;
    }
    Some(ClientRequest {
        end,
        submit: obj.get("submit_unix_s").and_then(as_time),
        permit_wait_s: obj.get("permit_wait_s").and_then(|v| v.as_f64()),
        ttft_s: obj.get("ttft_s").and_then(|v| v.as_f64()),
        itl_s: None,
        prompt_tokens: tok("prompt_tokens"),
        completion_tokens: tok("completion_tokens"),
        ok: obj.get("ok").and_then(|v| v.as_bool()).unwrap_or(true),
        line: 0,
    })
}

/// The date-time a progress line starts with, and the rest of the line: bare or in square
/// brackets (`[2026-02-10 14:14:30]`), the forms [`parse_datetime_prefix`] reads.
fn progress_time(line: &str) -> Option<(f64, &str)> {
    let line = line.trim_start();
    let (inner, bracket) = match line.strip_prefix('[') {
        Some(r) => (r, true),
        None => (line, false),
    };
    let (t, used) = parse_datetime_prefix(inner)?;
    let rest = inner.get(used..)?;
    let rest = if bracket {
        rest.strip_prefix(']')?
    } else {
        rest
    };
    Some((t, rest))
}

/// The numbers of a line as `(start, end, value)` byte ranges: runs of digits with at most one
/// decimal point, not glued to a letter before them (`v2`, `x86` are names, not numbers).
fn numbers(s: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if b[i].is_ascii_digit()
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'))
            {
                let start = i;
                let mut dot = false;
                while i < b.len()
                    && (b[i].is_ascii_digit()
                        || (b[i] == b'.' && !dot && i + 1 < b.len() && b[i + 1].is_ascii_digit()))
                {
                    dot |= b[i] == b'.';
                    i += 1;
                }
                return Some((start, i, &s[start..i]));
            }
            i += 1;
        }
        None
    })
}

/// Whether `unit` (after optional spaces) follows byte `at` of `s`, as a whole word.
fn unit_after(s: &str, at: usize, units: &[&str]) -> bool {
    let rest = s[at..].trim_start();
    units.iter().any(|u| {
        rest.strip_prefix(u)
            .is_some_and(|r| r.chars().next().is_none_or(|c| !c.is_ascii_alphanumeric()))
    })
}

/// The completed-request count of a progress line: its first `N/M` (both whole numbers,
/// `0 < M`, `N ≤ M`; a first pair that breaks this makes no count), else, without any `N/M`,
/// `N done` / `N completed` / `done: N`.
fn progress_count(rest: &str) -> Option<(u64, Option<u64>)> {
    let nums: Vec<(usize, usize, &str)> = numbers(rest).collect();
    if let Some(w) = nums
        .windows(2)
        .find(|w| w[1].0 == w[0].1 + 1 && rest.as_bytes()[w[0].1] == b'/')
    {
        let (n, m) = (w[0].2.parse::<u64>().ok()?, w[1].2.parse::<u64>().ok()?);
        return (m > 0 && n <= m).then_some((n, Some(m)));
    }
    nums.iter().find_map(|&(start, end, v)| {
        let n = v.parse::<u64>().ok()?;
        let before = rest[..start].trim_end();
        (unit_after(
            rest,
            end,
            &["done", "completed", "finished", "requests done"],
        ) || before.ends_with("done:")
            || before.ends_with("completed:"))
        .then_some((n, None))
    })
}

/// The first number of `rest` followed by one of `units` (a printed rate).
fn printed_rate(rest: &str, units: &[&str]) -> Option<f64> {
    numbers(rest).find_map(|(_, end, v)| {
        unit_after(rest, end, units)
            .then(|| v.parse::<f64>().ok())
            .flatten()
            .filter(|x| x.is_finite() && *x >= 0.0)
    })
}

/// Whether `line` counts completed requests as a progress line does (`progress_count`) but
/// does not start with a date-time: the count is there, the time to set it against the server
/// log's clock is not (`129/11000 done, 0.1 req/s`, `14:14:30 129/11000 done`).
pub fn progress_without_time(line: &str) -> bool {
    progress_time(line).is_none() && progress_count(line).is_some()
}

/// Whether `line` (surrounding spaces allowed) is a client's progress line as
/// [`parse_client`] reads one: a date-time, then a count of completed requests (`N/M done`).
/// Lets a reader tell a progress log while it reads it, line by line, with no second read.
pub fn is_progress_line(line: &str) -> bool {
    progress_from_line(line.trim()).is_some()
}

/// A progress line: a date-time, a count of completed requests ([`progress_count`]), and the
/// rates the client printed (`X req/s`, `X it/s` of a progress bar counting requests, `X
/// tok/s`), the mean completion length when printed (`avg_comp=4121tok`).
fn progress_from_line(line: &str) -> Option<ProgressPoint> {
    let (t, rest) = progress_time(line)?;
    let (done, total) = progress_count(rest)?;
    let printed = printed_rate(rest, &["req/s", "reqs/s", "requests/s", "it/s"]);
    let printed_tok = printed_rate(rest, &["tok/s", "tokens/s", "token/s"]);
    // `avg_comp=4121tok` (or `avg_comp=4121`, `avg_comp: 4121 tokens`)
    let avg_comp = rest.find("avg_comp").and_then(|i| {
        let v = rest[i + "avg_comp".len()..].trim_start_matches([' ', '=', ':']);
        let end = v
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(v.len());
        v[..end]
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0)
    });
    Some(ProgressPoint {
        t,
        done,
        total,
        printed_req_per_s: printed,
        printed_tok_per_s: printed_tok,
        mean_completion_tokens: avg_comp,
    })
}

/// `line` with the bare `NaN`, `Infinity` and `-Infinity` that Python's `json.dumps` writes
/// (outside strings) as JSON: `null`, `"inf"`, `"-inf"` (bench_serving's `--output-file` holds
/// `"request_rate": Infinity` for a run at rate inf); `None` when it has none.
fn python_json(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let (mut in_str, mut esc, mut changed, mut i) = (false, false, false, 0);
    while i < b.len() {
        let c = b[i];
        if in_str {
            in_str = esc || c != b'"';
            esc = !esc && c == b'\\';
        } else if c == b'"' {
            in_str = true;
        } else {
            let rest = &line[i..];
            let word = [
                ("-Infinity", "\"-inf\""),
                ("Infinity", "\"inf\""),
                ("NaN", "null"),
            ]
            .into_iter()
            .find(|(w, _)| rest.starts_with(w));
            if let Some((w, to)) = word {
                out.push_str(to);
                i += w.len();
                changed = true;
                continue;
            }
        }
        // whole UTF-8 characters: the bytes of one are copied together
        let ch = line[i..].chars().next()?;
        out.push(ch);
        i += ch.len_utf8();
    }
    changed.then_some(out)
}

/// GuideLLM's report (`benchmarks.json`, GuideLLM 0.8: `{"metadata", "config", "benchmarks":
/// [{"requests": {"successful", "errored", "incomplete"}, …}]}`): the requests of its last
/// benchmark (a sweep's runs are separate benchmarks; the last is the one a log usually ends
/// with), each with `request_start_time` / `request_end_time` (Unix seconds),
/// `time_to_first_token_ms`, `prompt_tokens` and `output_tokens`; `errored` ones failed,
/// `incomplete` ones (cancelled in flight at its time limit) counted apart. `None` when `v`
/// is no such report.
fn guidellm_requests(v: &Value) -> Option<(Vec<ClientRequest>, u64)> {
    let bench = v.get("benchmarks")?.as_array()?.last()?;
    let reqs = bench.get("requests")?.as_object()?;
    let list = |k: &str| reqs.get(k).and_then(Value::as_array);
    let read = |r: &Value, ok: bool| -> Option<ClientRequest> {
        let o = r.as_object()?;
        let ms = |k: &str| {
            o.get(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(|ms| ms / 1000.0)
        };
        Some(ClientRequest {
            end: o.get("request_end_time").and_then(as_time),
            submit: o.get("request_start_time").and_then(as_time),
            permit_wait_s: None,
            ttft_s: ms("time_to_first_token_ms"),
            itl_s: ms("inter_token_latency_ms"),
            prompt_tokens: as_u64(o.get("prompt_tokens")),
            completion_tokens: as_u64(o.get("output_tokens")),
            ok,
            line: 1,
        })
    };
    let mut out: Vec<ClientRequest> = Vec::new();
    for r in list("successful").into_iter().flatten() {
        out.extend(read(r, true));
    }
    for r in list("errored").into_iter().flatten() {
        out.extend(read(r, false));
    }
    let cancelled = list("incomplete").map_or(0, |l| l.len() as u64);
    (list("successful").is_some() || list("errored").is_some()).then_some((out, cancelled))
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
        && let Some((requests, cancelled)) = guidellm_requests(&v)
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
                .or_else(|e| python_json(line).map_or(Err(e), |l| serde_json::from_str(&l)));
            if let Ok(v) = parsed {
                if let Some(mut r) = record_from_json(&v) {
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
    use super::*;

    #[test]
    fn progress_line() {
        let p = progress_from_line("2026-02-10 15:59:36 [B2_opencodeinstruct] 1005/11000 done, 0.1 req/s, avg_comp=4121tok, ETA=19.8h").expect("parsed");
        assert_eq!(p.done, 1005);
        assert_eq!(p.total, Some(11000));
        assert_eq!(p.printed_req_per_s, Some(0.1));
        assert_eq!(p.mean_completion_tokens, Some(4121.0));
        let p = progress_from_line("2026-02-10 15:59:36 [x] 3/10 done, avg_comp: 17 tokens")
            .expect("parsed");
        assert_eq!(p.mean_completion_tokens, Some(17.0));
        // a malformed figure is no figure
        let p =
            progress_from_line("2026-02-10 15:59:36 [x] 3/10 done, avg_comp=?tok").expect("parsed");
        assert_eq!(p.mean_completion_tokens, None);
        let t0 = parse_datetime_prefix("2026-02-10 00:00:00").expect("t").0;
        assert_eq!(p.t - t0, 15.0 * 3600.0 + 59.0 * 60.0 + 36.0);
    }

    /// The progress lines a new user's own client printed (the fresh-user trial of
    /// 2026-12-03): brackets round the time, a logger's level, `Progress:`, `completed`,
    /// `Processed`, a progress bar's `it/s`, the token rate.
    #[test]
    fn progress_lines_as_scripts_print_them() {
        let t0 = parse_datetime_prefix("2026-02-10 14:14:30").expect("t").0;
        // line, done, total, printed req/s, printed tok/s
        type Case<'a> = (&'a str, u64, Option<u64>, Option<f64>, Option<f64>);
        let cases: &[Case<'_>] = &[
            (
                "[2026-02-10 14:14:30] 129/11000 done, 0.1 req/s, 500 tok/s",
                129,
                Some(11000),
                Some(0.1),
                Some(500.0),
            ),
            (
                "2026-02-10 14:14:30 INFO Progress: 129/11000 (0.1 req/s, 500 tok/s)",
                129,
                Some(11000),
                Some(0.1),
                Some(500.0),
            ),
            (
                "2026-02-10 14:14:30 completed 129/11000, 0.1 req/s",
                129,
                Some(11000),
                Some(0.1),
                None,
            ),
            (
                "2026-02-10 14:14:30,123 INFO Processed 129/11000 requests | 0.1 req/s | 500 tokens/s",
                129,
                Some(11000),
                Some(0.1),
                Some(500.0),
            ),
            (
                "2026-02-10T14:14:30 Generating:   1%| | 129/11000 [14:30<20:25:00,  0.15it/s]",
                129,
                Some(11000),
                Some(0.15),
                None,
            ),
            ("2026-02-10 14:14:30 [B2] 129 done", 129, None, None, None),
            ("2026-02-10 14:14:30 done: 129", 129, None, None, None),
        ];
        for &(line, done, total, req, tok) in cases {
            let p = progress_from_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (p.done, p.total, p.printed_req_per_s, p.printed_tok_per_s),
                (done, total, req, tok),
                "{line}"
            );
            assert!((p.t - t0).abs() < 0.2, "{line}: {}", p.t - t0);
        }
        assert!(progress_without_time(
            "129/11000 done, 0.1 req/s, 500 tok/s"
        ));
        assert!(progress_without_time("14:14:30 129/11000 done, 0.1 req/s"));
        assert!(!progress_without_time(
            "[2026-02-10 14:14:30] 129/11000 done"
        ));
        assert!(!progress_without_time("starting the job"));
        // no date-time, a time of day alone, a count above its total, a bracket not closed,
        // a count glued to a name: not a progress point
        for line in [
            "129/11000 done, 0.1 req/s, 500 tok/s",
            "14:14:30 129/11000 done, 0.1 req/s",
            "2026-02-10 14:14:30 12000/11000 done",
            "[2026-02-10 14:14:30 129/11000 done",
            "2026-02-10 14:14:30 loaded model v2/3",
        ] {
            assert_eq!(progress_from_line(line), None, "{line}");
        }
    }

    #[test]
    fn records_with_and_without_times() {
        let text = "{\"id\": \"a\", \"prompt_tokens\": 207, \"completion_tokens\": 1775}\n{\"id\":\"b\",\"ok\":false,\"end_unix_s\": 100.5, \"usage\": {\"prompt_tokens\": 3, \"completion_tokens\": null}}\nnot json\n";
        let c = parse_client("x", text);
        assert_eq!(c.lines, 3);
        assert_eq!(c.requests.len(), 2);
        assert_eq!(c.unparsed_lines, 1);
        assert_eq!(c.unparsed[0].0, 3);
        assert_eq!(c.format, ClientFormat::TimedRecords);
        assert_eq!(c.lengths(), vec![(207, 1775)]);
        assert_eq!(c.failed(), 1);
        assert_eq!(c.requests[1].end, Some(100.5));
    }

    #[test]
    fn millisecond_times_and_absurd_counts() {
        let c = parse_client(
            "x",
            "{\"end_unix_s\": 1767225600123, \"completion_tokens\": 1000000000000000}\n",
        );
        assert_eq!(c.requests[0].end, Some(1_767_225_600.123));
        assert_eq!(c.requests[0].completion_tokens, None);
    }

    #[test]
    fn iso_time_field() {
        let c = parse_client(
            "x",
            "{\"timestamp\": \"2026-02-10T14:00:30.250Z\", \"completion_tokens\": 5}\n",
        );
        let t0 = parse_datetime_prefix("2026-02-10 14:00:30").expect("t").0;
        assert_eq!(c.requests[0].end, Some(t0 + 0.25));
    }

    /// AIPerf 0.13's per-request export (the first records of `tests/data/clients/aiperf-0.13.0/
    /// profile_export.head20.jsonl`, from one run against the simulator): times in the metadata,
    /// metrics as `{value, unit}` (issue 32; before, read as records with no times or tokens).
    #[test]
    fn aiperf_records_are_read() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/clients/aiperf-0.13.0/profile_export.head20.jsonl"
        ))
        .expect("test data");
        let c = parse_client("profile_export.jsonl", &text);
        assert_eq!(c.format, ClientFormat::TimedRecords);
        assert_eq!(c.requests.len(), 20);
        let r = &c.requests[0];
        // request_start_ns 1796289423201047261, request_end_ns 1796289428531869306
        assert!(
            (r.end.unwrap() - 1_796_289_428.531_869).abs() < 1e-3,
            "{r:?}"
        );
        assert!(
            (r.submit.unwrap() - 1_796_289_423.201_047).abs() < 1e-3,
            "{r:?}"
        );
        // time_to_first_token 111.572948 ms; input 512, output 142 (AIPerf's own count)
        assert!((r.ttft_s.unwrap() - 0.111_572_948).abs() < 1e-9, "{r:?}");
        // inter_token_latency 37.01595104255319 ms
        assert!((r.itl_s.unwrap() - 0.037_015_951).abs() < 1e-9, "{r:?}");
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens, r.ok),
            (Some(512), Some(142), true)
        );
        let cancelled = r#"{"metadata":{"request_start_ns":1796289423201047261,"request_end_ns":1796289428531869306,"was_cancelled":true},"metrics":{}}"#;
        assert!(!parse_client("x", cancelled).requests[0].ok);
    }

    /// GuideLLM 0.8.1's report, cut down to a valid document (`tests/data/clients/
    /// guidellm-0.8.1/benchmarks.trimmed.json`): its requests are read (before: the whole
    /// document counted as one request with no fields), the in-flight ones cancelled at its time
    /// limit counted apart.
    #[test]
    fn guidellm_report_requests_are_read() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/clients/guidellm-0.8.1/benchmarks.trimmed.json"
        ))
        .expect("test data");
        let c = parse_client("benchmarks.json", &text);
        assert_eq!(c.format, ClientFormat::TimedRecords);
        assert_eq!((c.requests.len(), c.cancelled, c.failed()), (5, 2, 0));
        let r = &c.requests[0];
        assert!(
            (r.submit.unwrap() - 1_796_289_577.104_488).abs() < 1e-3,
            "{r:?}"
        );
        assert!(
            (r.end.unwrap() - 1_796_289_582.610_669).abs() < 1e-3,
            "{r:?}"
        );
        assert!((r.ttft_s.unwrap() - 0.093_008_041).abs() < 1e-6, "{r:?}");
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens),
            (Some(447), Some(129))
        );
        // a JSON object of no record's fields is no record
        let c = parse_client("x", r#"{"metadata": {"version": 2}, "config": {}}"#);
        assert!(c.requests.is_empty());
    }

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
