//! NVIDIA AIPerf's files: the per-request export (`profile_export.jsonl`), read as timed
//! records, and its run summary (`profile_export_aiperf.json`, `profile_export_aiperf.csv`, the
//! console tables it prints), read as the client's own whole-run figures.
//!
//! The summary's three forms hold one table of metrics, each with a unit and statistics
//! (`avg`, `p50`, `p90`, `p95`, `p99`, `max`): the JSON under snake-case tags
//! (`time_to_first_token`), the CSV and the console under titles with the unit in brackets
//! (`Time to First Token (ms)`). Both are turned into the tag (`metric_tag`) and read by one
//! mapping (`summary_from_metrics`), so the three forms give the same figures.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::jsonl::{as_time, as_u64};
use super::{ClientRequest, NotClientFile};
use crate::bench::{BenchClient, BenchSummary, LatencyStats};

/// The AIPerf version whose files these readers follow (its summary's `schema_version` 1.4).
pub const AIPERF_READ: &str =
    "AIPerf 0.13 (profile_export_aiperf.json schema 1.4, its CSV and console tables)";

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
pub(super) fn aiperf_record(obj: &serde_json::Map<String, Value>) -> Option<ClientRequest> {
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

/// One metric of AIPerf's summary: its unit and the statistics printed (absent ones `None`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub(super) struct Metric {
    /// `ms`, `sec`, `requests/sec`, `tokens/sec`, `requests`, `tokens`, `%`, …
    #[serde(default)]
    unit: String,
    avg: Option<f64>,
    p50: Option<f64>,
    p90: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

/// `profile_export_aiperf.json`: its version, its run's configuration and every metric under
/// its tag (the rest of the document, not fixed: other fields are left alone).
#[derive(Debug, Deserialize)]
struct SummaryJson {
    aiperf_version: Option<String>,
    schema_version: Option<String>,
    input_config: Option<InputConfig>,
    #[serde(flatten)]
    rest: BTreeMap<String, Value>,
}

/// The part of `input_config` that says the run's concurrency limit: `phases[].concurrency`
/// (0.13) or `loadgen.concurrency` (earlier).
#[derive(Debug, Deserialize)]
struct InputConfig {
    #[serde(default)]
    phases: Vec<Phase>,
    loadgen: Option<Phase>,
}

#[derive(Debug, Deserialize)]
struct Phase {
    concurrency: Option<u64>,
}

/// Seconds per one of `unit` (a time unit AIPerf prints), `None` for another unit.
fn seconds_per(unit: &str) -> Option<f64> {
    match unit.trim() {
        "ns" => Some(1e-9),
        "us" => Some(1e-6),
        "ms" => Some(1e-3),
        "s" | "sec" | "seconds" => Some(1.0),
        _ => None,
    }
}

/// A metric's title as AIPerf prints it in the CSV and on the console (`Time to First Token
/// (ms)`, `Request Count (requests)`), as its JSON tag (`time_to_first_token`,
/// `request_count`) and its unit (`ms`, `requests`; empty when none).
pub(super) fn metric_tag(title: &str) -> (String, String) {
    let title = title.trim();
    let (name, unit) = match title.rfind(" (") {
        Some(i) if title.ends_with(')') => (&title[..i], &title[i + 2..title.len() - 1]),
        _ => (title, ""),
    };
    let tag: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    // the CSV's titles of the JSON's short tags
    let tag = match tag.as_str() {
        "total_input_sequence_length" => "total_isl".to_string(),
        "total_output_sequence_length" => "total_osl".to_string(),
        _ => tag,
    };
    (tag, unit.to_string())
}

/// The run summary of AIPerf's metrics by tag: request and token rates, counts, duration,
/// concurrency, TTFT, ITL and request latency (AIPerf's `request_count` counts successful
/// requests; `error_request_count` the failed ones, else its error rate gives them).
pub(super) fn summary_from_metrics(m: &BTreeMap<String, Metric>, line_no: u64) -> BenchSummary {
    let mut b = BenchSummary::run_summary(BenchClient::Aiperf, line_no);
    let avg = |k: &str| {
        m.get(k)
            .and_then(|x| x.avg)
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    let count = |k: &str| avg(k).map(|x| x.round() as u64);
    let stats = |k: &str| {
        m.get(k)
            .and_then(|x| {
                let s = seconds_per(&x.unit)?;
                let f = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| v * s);
                Some(LatencyStats {
                    mean_s: f(x.avg),
                    median_s: f(x.p50),
                    p90_s: f(x.p90),
                    p95_s: f(x.p95),
                    p99_s: f(x.p99),
                    max_s: f(x.max),
                })
            })
            .unwrap_or_default()
    };
    b.request_throughput = avg("request_throughput");
    b.output_tok_per_s = avg("output_token_throughput");
    b.input_tok_per_s = avg("input_token_throughput");
    b.total_tok_per_s = avg("total_token_throughput");
    b.successful_requests = count("request_count");
    b.failed_requests = count("error_request_count").or_else(|| {
        let rate = avg("request_error_rate")? / 100.0;
        let ok = b.successful_requests? as f64;
        (rate < 1.0).then(|| (ok * rate / (1.0 - rate)).round() as u64)
    });
    b.duration_s = m
        .get("benchmark_duration")
        .and_then(|x| Some(x.avg? * seconds_per(&x.unit)?))
        .filter(|d| d.is_finite() && *d > 0.0);
    b.total_generated_tokens = count("total_output_tokens").or_else(|| count("total_osl"));
    b.total_input_tokens = count("total_isl");
    b.concurrency = avg("effective_concurrency");
    b.ttft = stats("time_to_first_token");
    b.itl = stats("inter_token_latency");
    b.e2e = stats("request_latency");
    b
}

/// The first line of AIPerf's server-metrics CSV (`server_metrics_export.csv`).
pub(super) const SERVER_METRICS_CSV: &str = "# AIPerf Server Metrics Export";

/// What AIPerf's server-metrics export is, in words.
pub(super) const SERVER_METRICS_WHAT: &str = "AIPerf's server-metrics export (its scrape of the server's /metrics, server_metrics_export.json / .csv)";

/// What an AIPerf file that holds no request's results is: its inputs (`inputs.json`: `{"data":
/// [{"session_id", "payloads"}]}`) or its server-metrics export (`metrics_phase`).
pub(super) fn no_results(v: &Value) -> Option<&'static str> {
    let o = v.as_object()?;
    if o.len() == 1
        && v.pointer("/data/0/session_id").is_some()
        && v.pointer("/data/0/payloads").is_some()
    {
        return Some("AIPerf's inputs.json (the prompts it sent)");
    }
    (o.contains_key("aiperf_version") && o.contains_key("metrics_phase"))
        .then_some(SERVER_METRICS_WHAT)
}

/// Whether `v` is AIPerf's run summary (`profile_export_aiperf.json`): it names the AIPerf
/// version that wrote it and holds no per-request `metadata`.
pub(super) fn is_summary_json(v: &Value) -> bool {
    v.get("aiperf_version").is_some() && v.get("metadata").is_none()
}

/// AIPerf's `profile_export_aiperf.json` as its run summary. A file of AIPerf that holds none
/// of the figures read (another version's layout) is refused naming its version.
pub(super) fn summary_json(v: &Value) -> Result<BenchSummary, NotClientFile> {
    let doc = SummaryJson::deserialize(v).map_err(|e| NotClientFile::UnsupportedVersion {
        tool: "AIPerf",
        version: version_of(v),
        reason: e.to_string(),
        read: AIPERF_READ,
    })?;
    let metrics: BTreeMap<String, Metric> = doc
        .rest
        .iter()
        .filter_map(|(k, x)| {
            let m = Metric::deserialize(x).ok()?;
            (x.get("unit").is_some()).then(|| (k.clone(), m))
        })
        .collect();
    let mut b = summary_from_metrics(&metrics, 1);
    if b.request_throughput.is_none() && b.ttft.is_empty() {
        return Err(NotClientFile::UnsupportedVersion {
            tool: "AIPerf",
            version: version_of(v),
            reason: "no request_throughput or time_to_first_token metric".into(),
            read: AIPERF_READ,
        });
    }
    b.client_version = doc.aiperf_version.clone();
    b.max_concurrency = doc.input_config.and_then(|c| {
        c.phases
            .iter()
            .find_map(|p| p.concurrency)
            .or(c.loadgen.and_then(|l| l.concurrency))
    });
    let _ = doc.schema_version;
    Ok(b)
}

fn version_of(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    match (s("aiperf_version"), s("schema_version")) {
        (Some(a), Some(sv)) => format!("{a} (schema {sv})"),
        (Some(a), None) => a.to_string(),
        (None, Some(sv)) => format!("schema {sv}"),
        (None, None) => "of no stated version".to_string(),
    }
}

/// A number as AIPerf prints it (`13,905.82`; `N/A` is none).
fn printed_number(s: &str) -> Option<f64> {
    s.trim()
        .replace(',', "")
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
}

/// Whether `text` is AIPerf's summary CSV (`profile_export_aiperf.csv`): its first line is
/// the metric table's header.
pub(super) fn is_summary_csv(text: &str) -> bool {
    text.trim_start().starts_with("Metric,avg,")
}

/// AIPerf's summary CSV: a table `Metric,avg,min,max,sum,p1,…,p99,std` of the per-request
/// metrics, then `Metric,Value` of the run's totals and rates, then other tables (GPU
/// telemetry) that are not read.
pub(super) fn summary_csv(text: &str) -> Option<BenchSummary> {
    let mut metrics = BTreeMap::new();
    let mut header: Vec<&str> = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.first() == Some(&"Metric") {
            header = cells;
            continue;
        }
        if cells.len() != header.len() || header.len() < 2 {
            header.clear();
            continue;
        }
        let (tag, unit) = metric_tag(cells[0]);
        let mut m = Metric {
            unit,
            ..Metric::default()
        };
        for (h, c) in header.iter().zip(&cells).skip(1) {
            let v = printed_number(c);
            match *h {
                "avg" | "Value" => m.avg = v,
                "p50" => m.p50 = v,
                "p90" => m.p90 = v,
                "p95" => m.p95 = v,
                "p99" => m.p99 = v,
                "max" => m.max = v,
                _ => {}
            }
        }
        metrics.insert(tag, m);
    }
    let b = summary_from_metrics(&metrics, 1);
    (b.request_throughput.is_some() || !b.ttft.is_empty()).then_some(b)
}

/// Whether `text` holds AIPerf's console tables (`NVIDIA AIPerf | LLM Metrics`).
pub(super) fn has_console_tables(text: &str) -> bool {
    text.contains("NVIDIA AIPerf | LLM Metrics")
}

/// AIPerf's console tables (`profile_export_console.txt`, or the whole console output with
/// them): each table's header row (`┃ Metric ┃ avg ┃ min ┃ …`) names its columns; a row
/// `│ title │ value │ …` is a metric, and a row with only a title continues the one before
/// (`Output Token Throughput Per User` / `(tokens/sec/user)`). The console's
/// `Benchmark Duration: 114.22 sec` line and the `--concurrency N` of its command are read too.
pub(super) fn summary_console(text: &str) -> Option<BenchSummary> {
    let mut rows: Vec<(String, Vec<Option<f64>>, usize)> = Vec::new();
    let mut header: Vec<String> = Vec::new();
    let mut first_line = None;
    let mut duration = None;
    let mut limit = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('┃') {
            header = t
                .trim_matches('┃')
                .split('┃')
                .map(|c| c.trim().to_string())
                .collect();
            continue;
        }
        if let Some(rest) = t.strip_prefix("Benchmark Duration:") {
            duration = rest.trim().strip_suffix("sec").and_then(printed_number);
        }
        if let Some(at) = t.find("--concurrency ") {
            limit = t[at + "--concurrency ".len()..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u64>().ok());
        }
        if !t.starts_with('│') || header.is_empty() {
            continue;
        }
        let cells: Vec<&str> = t.trim_matches('│').split('│').map(str::trim).collect();
        if cells.len() != header.len() {
            continue;
        }
        let values: Vec<Option<f64>> = cells[1..].iter().map(|c| printed_number(c)).collect();
        if cells[1..].iter().all(|c| c.is_empty()) {
            if let Some(last) = rows.last_mut() {
                last.0.push(' ');
                last.0.push_str(cells[0]);
            }
            continue;
        }
        first_line.get_or_insert(i as u64 + 1);
        rows.push((cells[0].to_string(), values, header.len()));
    }
    let mut metrics = BTreeMap::new();
    for (title, values, _) in rows {
        let (tag, unit) = metric_tag(&title);
        let mut m = Metric {
            unit,
            ..Metric::default()
        };
        for (h, v) in header.iter().skip(1).zip(values) {
            match h.as_str() {
                "avg" => m.avg = v,
                "p50" => m.p50 = v,
                "p90" => m.p90 = v,
                "p95" => m.p95 = v,
                "p99" => m.p99 = v,
                "max" => m.max = v,
                _ => {}
            }
        }
        metrics.insert(tag, m);
    }
    let mut b = summary_from_metrics(&metrics, first_line?);
    b.duration_s = b.duration_s.or(duration);
    b.max_concurrency = limit;
    (b.request_throughput.is_some() || !b.ttft.is_empty()).then_some(b)
}

#[cfg(test)]
mod tests {
    use crate::client::{ClientFormat, parse_client};

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
}
