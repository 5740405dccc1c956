//! GuideLLM's files: the benchmarks report (`benchmarks.json`, or the same document as
//! `benchmarks.yaml`), its CSV (`benchmarks.csv`) and its console tables.
//!
//! A report holds one benchmark per run of a sweep (`concurrent@64`, `constant@2.00`, …):
//! each is read as a run summary of its own ([`BenchSummary::label`] names it), and the
//! per-request records of the last one (the one a server log usually ends with) are read as
//! records; [`super::ClientEvidence::records_of`] says which.

use serde::Deserialize;
use serde_json::Value;

use super::jsonl::{as_time, as_u64};
use super::{ClientRequest, NotClientFile};
use crate::bench::{BenchClient, BenchSummary, LatencyStats};

/// The GuideLLM version whose files these readers follow (its report's `metadata.version` 2).
pub const GUIDELLM_READ: &str =
    "GuideLLM 0.8 (benchmarks.json / .yaml with metadata.version 2, its CSV and console tables)";

/// The report: its version and its benchmarks (other fields are left alone).
#[derive(Debug, Deserialize)]
struct Report {
    metadata: Option<Metadata>,
    benchmarks: Vec<Benchmark>,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    guidellm_version: Option<String>,
}

/// One benchmark: its strategy, its duration (seconds) and its metrics.
#[derive(Debug, Deserialize)]
struct Benchmark {
    config: Option<BenchConfig>,
    duration: Option<f64>,
    metrics: Option<Metrics>,
}

#[derive(Debug, Deserialize)]
struct BenchConfig {
    strategy: Option<Strategy>,
}

/// A benchmark's scheduling strategy (`type_`: `synchronous`, `concurrent`, `throughput`,
/// `constant`, `poisson`), with its streams or rate.
#[derive(Debug, Deserialize)]
struct Strategy {
    #[serde(rename = "type_")]
    kind: String,
    streams: Option<u64>,
    max_concurrency: Option<u64>,
    rate: Option<f64>,
}

impl Strategy {
    /// The strategy as GuideLLM names it in its tables: `concurrent@64`, `constant@2.00`.
    fn label(&self) -> String {
        match (self.kind.as_str(), self.streams, self.rate) {
            ("concurrent", Some(n), _) => format!("concurrent@{n}"),
            (k, _, Some(r)) => format!("{k}@{r:.2}"),
            (k, _, _) => k.to_string(),
        }
    }
}

/// The metrics read, each split by the requests' status.
#[derive(Debug, Deserialize)]
struct Metrics {
    request_totals: Totals,
    requests_per_second: ByStatus,
    output_tokens_per_second: ByStatus,
    request_concurrency: Option<ByStatus>,
    request_latency: Option<ByStatus>,
    time_to_first_token_ms: Option<ByStatus>,
    inter_token_latency_ms: Option<ByStatus>,
    time_per_output_token_ms: Option<ByStatus>,
    output_token_count: Option<ByStatus>,
    prompt_token_count: Option<ByStatus>,
}

/// Requests by status: `successful`, `errored`, `incomplete` (cancelled in flight).
#[derive(Debug, Deserialize)]
struct Totals {
    successful: u64,
    errored: u64,
    incomplete: u64,
}

#[derive(Debug, Deserialize)]
struct ByStatus {
    successful: Option<Dist>,
    total: Option<Dist>,
}

/// One distribution: mean, median, max, the sum over the samples, and its percentiles.
#[derive(Debug, Deserialize)]
struct Dist {
    mean: f64,
    median: Option<f64>,
    max: Option<f64>,
    total_sum: Option<f64>,
    percentiles: Option<Percentiles>,
}

#[derive(Debug, Deserialize)]
struct Percentiles {
    p90: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
}

impl Dist {
    /// The distribution as latency statistics, its values `scale` seconds each.
    fn latency(&self, scale: f64) -> LatencyStats {
        let f = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| v * scale);
        let p = self.percentiles.as_ref();
        LatencyStats {
            mean_s: f(Some(self.mean)),
            median_s: f(self.median),
            p90_s: f(p.and_then(|p| p.p90)),
            p95_s: f(p.and_then(|p| p.p95)),
            p99_s: f(p.and_then(|p| p.p99)),
            max_s: f(self.max),
        }
    }
}

/// A report read: every benchmark's summary, the last one's records and cancelled requests,
/// and that benchmark's name.
pub(super) struct ReportRead {
    pub(super) summaries: Vec<BenchSummary>,
    pub(super) requests: Vec<ClientRequest>,
    pub(super) cancelled: u64,
    pub(super) records_of: Option<String>,
}

/// Whether `v` looks like GuideLLM's report: a `benchmarks` list, or its `guidellm_version`.
pub(super) fn is_report(v: &Value) -> bool {
    v.get("benchmarks").is_some_and(Value::is_array)
        || v.pointer("/metadata/guidellm_version").is_some()
}

/// GuideLLM's report (JSON or YAML, as a JSON value): a summary per benchmark
/// ([`summary_of`]), the records of the last. A report whose benchmarks are not in the shape
/// read is refused naming its version.
pub(super) fn read_report(v: &Value) -> Result<ReportRead, NotClientFile> {
    let version = v
        .pointer("/metadata/guidellm_version")
        .and_then(Value::as_str)
        .map(str::to_string);
    let unsupported = |reason: String| NotClientFile::UnsupportedVersion {
        tool: "GuideLLM",
        version: version
            .clone()
            .unwrap_or_else(|| "of no stated version".into()),
        reason,
        read: GUIDELLM_READ,
    };
    let report = Report::deserialize(v).map_err(|e| unsupported(e.to_string()))?;
    if report.benchmarks.is_empty() {
        return Err(unsupported("no benchmark in its `benchmarks`".into()));
    }
    let n = report.benchmarks.len();
    let summaries: Vec<BenchSummary> = report
        .benchmarks
        .iter()
        .filter_map(|b| {
            let mut s = summary_of(b)?;
            s.client_version = report
                .metadata
                .as_ref()
                .and_then(|m| m.guidellm_version.clone());
            Some(s)
        })
        .collect();
    let last = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .and_then(|b| b.last());
    let (requests, cancelled) = last.and_then(guidellm_requests).unwrap_or_default();
    if summaries.is_empty() && requests.is_empty() && cancelled == 0 {
        return Err(unsupported(
            "no benchmark holds `metrics` or `requests`".into(),
        ));
    }
    let label = report
        .benchmarks
        .last()
        .and_then(|b| b.config.as_ref()?.strategy.as_ref().map(Strategy::label));
    let records_of = (!requests.is_empty()).then(|| {
        format!(
            "benchmark {n} of {n}{}",
            label.map(|l| format!(", {l}")).unwrap_or_default()
        )
    });
    Ok(ReportRead {
        summaries,
        requests,
        cancelled,
        records_of,
    })
}

/// One benchmark's figures as GuideLLM prints them: successful requests per second, output
/// tokens per second over all requests (the cancelled ones' tokens too, as its `Server
/// Throughput Statistics (All Requests)` table prints it), the mean requests in flight,
/// TTFT, ITL, TPOT and request latency of the successful requests.
fn summary_of(b: &Benchmark) -> Option<BenchSummary> {
    let m = b.metrics.as_ref()?;
    let mut s = BenchSummary::run_summary(BenchClient::Guidellm, 1);
    let strategy = b.config.as_ref().and_then(|c| c.strategy.as_ref());
    s.label = strategy.map(Strategy::label);
    s.max_concurrency = strategy.and_then(|st| st.streams.or(st.max_concurrency));
    s.request_rate = strategy.and_then(|st| st.rate).map(|r| r.to_string());
    s.successful_requests = Some(m.request_totals.successful);
    s.failed_requests = Some(m.request_totals.errored);
    s.cancelled_requests = Some(m.request_totals.incomplete);
    s.duration_s = b.duration.filter(|d| d.is_finite() && *d > 0.0);
    s.request_throughput = m.requests_per_second.successful.as_ref().map(|d| d.mean);
    s.output_tok_per_s = m
        .output_tokens_per_second
        .total
        .as_ref()
        .or(m.output_tokens_per_second.successful.as_ref())
        .map(|d| d.mean);
    s.concurrency = m
        .request_concurrency
        .as_ref()
        .and_then(|c| c.total.as_ref())
        .map(|d| d.mean);
    fn ok(x: &Option<ByStatus>) -> Option<&Dist> {
        x.as_ref().and_then(|x| x.successful.as_ref())
    }
    let sum = |x: &Option<ByStatus>| {
        ok(x)
            .and_then(|d| d.total_sum)
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| t.round() as u64)
    };
    s.total_generated_tokens = sum(&m.output_token_count);
    s.total_input_tokens = sum(&m.prompt_token_count);
    s.ttft = ok(&m.time_to_first_token_ms).map_or_else(LatencyStats::default, |d| d.latency(1e-3));
    s.itl = ok(&m.inter_token_latency_ms).map_or_else(LatencyStats::default, |d| d.latency(1e-3));
    s.tpot =
        ok(&m.time_per_output_token_ms).map_or_else(LatencyStats::default, |d| d.latency(1e-3));
    s.e2e = ok(&m.request_latency).map_or_else(LatencyStats::default, |d| d.latency(1.0));
    Some(s)
}

/// The requests of one benchmark of GuideLLM's report (`{"requests": {"successful",
/// "errored", "incomplete"}, …}`), each with `request_start_time` / `request_end_time` (Unix seconds),
/// `time_to_first_token_ms`, `prompt_tokens` and `output_tokens`; `errored` ones failed,
/// `incomplete` ones (cancelled in flight at its time limit) counted apart. `None` when the
/// benchmark holds no such lists.
fn guidellm_requests(bench: &Value) -> Option<(Vec<ClientRequest>, u64)> {
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

/// The cells of one CSV line (RFC 4180: a quoted cell may hold commas and doubled quotes).
fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('"');
                }
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            (c, _) => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells
}

/// Whether `text` is GuideLLM's CSV (`benchmarks.csv`): its first header row opens with the
/// `Run Info` group.
pub(super) fn is_csv(text: &str) -> bool {
    text.trim_start().starts_with("Run Info,Run Info,")
}

/// GuideLLM's CSV: three header rows (group, column, statistic: `Time to First Token`,
/// `Successful ms`, `Mean`) and one row per benchmark, read as a summary each. A column's
/// `Percentiles` cell is GuideLLM's list `[p001, p01, p05, p10, p25, p50, p75, p90, p95, p99,
/// p999]`.
pub(super) fn summaries_csv(text: &str) -> Vec<BenchSummary> {
    let rows: Vec<Vec<String>> = text.lines().map(csv_cells).collect();
    if rows.len() < 4 {
        return Vec::new();
    }
    let (group, name, stat) = (&rows[0], &rows[1], &rows[2]);
    let col = |g: &str, n: &str, st: &str| {
        (0..group.len()).find(|&i| {
            group[i] == g
                && name.get(i).is_some_and(|x| x == n)
                && stat.get(i).is_some_and(|x| x == st)
        })
    };
    let mut out = Vec::new();
    for (r, row) in rows.iter().enumerate().skip(3) {
        let cell = |g: &str, n: &str, st: &str| col(g, n, st).and_then(|i| row.get(i));
        let num = |g: &str, n: &str, st: &str| {
            cell(g, n, st)
                .and_then(|c| c.trim().parse::<f64>().ok())
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        let lat = |g: &str, n: &str, scale: f64| {
            let pct: Vec<f64> = cell(g, n, "Percentiles")
                .map(|c| {
                    c.trim_matches(['[', ']'])
                        .split(',')
                        .filter_map(|x| x.trim().parse::<f64>().ok())
                        .collect()
                })
                .unwrap_or_default();
            let p = |i: usize| (pct.len() == 11).then(|| pct[i] * scale);
            LatencyStats {
                mean_s: num(g, n, "Mean").map(|x| x * scale),
                median_s: num(g, n, "Median").map(|x| x * scale),
                p90_s: p(7),
                p95_s: p(8),
                p99_s: p(9),
                max_s: p(10),
            }
        };
        let count = |n: &str| num("Request Counts", n, "").map(|x| x.round() as u64);
        let mut s = BenchSummary::run_summary(BenchClient::Guidellm, r as u64 + 1);
        s.label = cell("Benchmark", "Strategy", "").cloned();
        s.successful_requests = count("Successful");
        s.failed_requests = count("Errored");
        s.cancelled_requests = count("Incomplete");
        s.duration_s = num("Timings", "Duration", "Sec");
        s.request_throughput = num("Server Throughput", "Successful Requests/Sec", "Mean");
        // all requests' tokens, as the console's Server Throughput table prints them
        let out_tps = |st: &str| {
            num(
                "Token Throughput",
                &format!("{st} Output Tokens/Sec"),
                "Mean",
            )
        };
        s.output_tok_per_s = match (out_tps("Successful"), out_tps("Incomplete")) {
            (Some(a), b) => Some(a + b.unwrap_or(0.0)),
            (None, _) => None,
        };
        let conc = |st: &str| num("Server Throughput", &format!("{st} Concurrency"), "Mean");
        s.concurrency = conc("Successful").map(|a| a + conc("Incomplete").unwrap_or(0.0));
        let mean_tokens = |n: &str| num("Token Metrics", n, "Mean");
        let total =
            |mean: Option<f64>| Some((mean? * s.successful_requests? as f64).round() as u64);
        s.total_generated_tokens = total(mean_tokens("Successful Output Tokens"));
        s.total_input_tokens = total(mean_tokens("Successful Input Tokens"));
        s.e2e = lat("Request Latency", "Successful Sec", 1.0);
        s.ttft = lat("Time to First Token", "Successful ms", 1e-3);
        s.itl = lat("Inter Token Latency", "Successful ms", 1e-3);
        s.tpot = lat("Time per Output Token", "Successful ms", 1e-3);
        if s.request_throughput.is_some() || !s.ttft.is_empty() {
            out.push(s);
        }
    }
    out
}

/// Whether `text` holds GuideLLM's console tables.
pub(super) fn has_console_tables(text: &str) -> bool {
    text.contains("Request Latency Statistics") && text.contains("Server Throughput Statistics")
}

/// The figures of one benchmark row of a console table, by table.
#[derive(Default)]
struct ConsoleRow {
    line: u64,
    latency: Option<Vec<Option<f64>>>,
    throughput: Option<Vec<Option<f64>>>,
    summary: Option<Vec<Option<f64>>>,
}

/// GuideLLM's console tables: a row per benchmark strategy in `Request Latency Statistics`
/// (request latency in s, TTFT, TTFOT, ITL, TPOT in ms: mean, median, p95 each), `Server
/// Throughput Statistics` (concurrency median and mean, requests/s, input, output and total
/// tokens/s) and `Run Summary Info` (start, end, duration, warm-up, cool-down, then requests,
/// input and output tokens, each completed, incomplete, errored). A table printed twice (its
/// progress and its end) is read at its last printing.
pub(super) fn summaries_console(text: &str) -> Vec<BenchSummary> {
    let mut rows: Vec<(String, ConsoleRow)> = Vec::new();
    let mut table = "";
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        for title in [
            "Request Latency Statistics",
            "Server Throughput Statistics",
            "Run Summary Info",
        ] {
            if t.contains(title) {
                table = title;
            }
        }
        if t.starts_with("ℹ") || t.starts_with("Warnings") {
            if ![
                "Request Latency Statistics",
                "Server Throughput Statistics",
                "Run Summary Info",
            ]
            .iter()
            .any(|x| t.contains(x))
            {
                table = "";
            }
            continue;
        }
        let Some(inner) = t.strip_prefix('|').and_then(|x| x.strip_suffix('|')) else {
            continue;
        };
        let cells: Vec<&str> = inner.split('|').map(str::trim).collect();
        let name = cells[0];
        if name.is_empty()
            || name == "Benchmark"
            || name == "Strategy"
            || name.starts_with('=')
            || name.starts_with('-')
        {
            continue;
        }
        // `22.4 ± 0.8` is the mean and its interval
        let values: Vec<Option<f64>> = cells[1..]
            .iter()
            .map(|c| {
                c.split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<f64>().ok())
            })
            .collect();
        let at = match rows.iter().position(|(n, _)| n == name) {
            Some(p) => p,
            None => {
                rows.push((name.to_string(), ConsoleRow::default()));
                rows.len() - 1
            }
        };
        let row = &mut rows[at].1;
        row.line = row.line.max(i as u64 + 1);
        match (table, values.len()) {
            ("Request Latency Statistics", 15) => row.latency = Some(values),
            ("Server Throughput Statistics", 6) => row.throughput = Some(values),
            ("Run Summary Info", 14) => row.summary = Some(values),
            _ => {}
        }
    }
    rows.into_iter()
        .filter(|(_, r)| r.latency.is_some() || r.throughput.is_some())
        .map(|(name, r)| {
            let mut s = BenchSummary::run_summary(BenchClient::Guidellm, r.line);
            s.label = Some(name);
            let ms = |v: Option<f64>| v.map(|x| x / 1000.0);
            if let Some(l) = &r.latency {
                let stats = |at: usize, scale: f64| LatencyStats {
                    mean_s: l[at].map(|x| x * scale),
                    median_s: l[at + 1].map(|x| x * scale),
                    p95_s: l[at + 2].map(|x| x * scale),
                    ..LatencyStats::default()
                };
                s.e2e = stats(0, 1.0);
                s.ttft = stats(3, 1e-3);
                s.itl = stats(9, 1e-3);
                s.tpot = stats(12, 1e-3);
                let _ = ms;
            }
            if let Some(t) = &r.throughput {
                s.concurrency = t[1];
                s.request_throughput = t[2];
                s.input_tok_per_s = t[3];
                s.output_tok_per_s = t[4];
                s.total_tok_per_s = t[5];
            }
            if let Some(u) = &r.summary {
                let n = |v: Option<f64>| v.map(|x| x.round() as u64);
                s.duration_s = u[2];
                s.successful_requests = n(u[5]);
                s.cancelled_requests = n(u[6]);
                s.failed_requests = n(u[7]);
                s.total_input_tokens = n(u[8]);
                s.total_generated_tokens = n(u[11]);
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::client::{ClientFormat, parse_client};

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
}
