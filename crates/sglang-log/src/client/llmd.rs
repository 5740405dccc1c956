//! The llm-d Benchmark Report (v0.2): the common format llm-d-benchmark writes for every
//! harness it runs (inference-perf, vllm-benchmark, guidellm, …), read as the run's summary.
//!
//! The schema is llm-d-benchmark's `benchmark_report_v0_2.py` (pydantic models with `extra =
//! "forbid"`, published as a JSON Schema): a fixed format, so the structures read here refuse
//! fields it does not define (`deny_unknown_fields`), except `Statistics`, which the schema
//! leaves open. Units are the schema's: `ms` / `s` for latencies, `ms/token` / `s/token` for
//! TPOT and ITL, `token/s` and `qps` for rates.

use serde::Deserialize;
use serde_json::Value;

use super::NotClientFile;
use crate::bench::{BenchClient, BenchSummary, LatencyStats};

/// The report versions read.
pub const LLMD_READ: &str =
    "llm-d Benchmark Report v0.2 (llm-d-benchmark's benchmark_report_v0_2 schema)";

/// The report's top level (`version`, `run`, `scenario`, `results`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    version: String,
    #[allow(dead_code)]
    run: Value,
    scenario: Option<Scenario>,
    results: Results,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    #[allow(dead_code)]
    stack: Option<Value>,
    load: Option<Load>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Load {
    #[allow(dead_code)]
    metadata: Value,
    standardized: LoadStandardized,
    #[serde(rename = "Native")]
    #[allow(dead_code)]
    native: Value,
}

/// The workload generator in standardized form: the tool, its version, the rate (qps) or the
/// concurrency it ran at.
#[derive(Debug, Deserialize)]
struct LoadStandardized {
    tool: String,
    tool_version: Option<String>,
    rate_qps: Option<f64>,
    concurrency: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Results {
    request_performance: Option<RequestPerformance>,
    #[allow(dead_code)]
    observability: Option<Value>,
    #[allow(dead_code)]
    profiling: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestPerformance {
    aggregate: Option<Aggregate>,
    #[allow(dead_code)]
    time_series: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Aggregate {
    requests: Option<Requests>,
    latency: Option<Latency>,
    throughput: Option<Throughput>,
}

/// Requests sent (`total`), those that answered an error (`failures`) and those not completed
/// (`incomplete`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Requests {
    total: u64,
    failures: Option<u64>,
    incomplete: Option<u64>,
    input_length: Option<Statistics>,
    output_length: Option<Statistics>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Latency {
    time_to_first_token: Option<Statistics>,
    #[allow(dead_code)]
    normalized_time_per_output_token: Option<Statistics>,
    time_per_output_token: Option<Statistics>,
    inter_token_latency: Option<Statistics>,
    request_latency: Option<Statistics>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Throughput {
    input_token_rate: Option<Statistics>,
    output_token_rate: Option<Statistics>,
    total_token_rate: Option<Statistics>,
    requests_rate: Option<Statistics>,
}

/// One statistic in its `units`.
#[derive(Debug, Deserialize)]
struct Statistics {
    units: String,
    mean: f64,
    p50: Option<f64>,
    p90: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

impl Statistics {
    /// Seconds per one of its units, for a latency (`None`: not a time unit).
    fn latency(&self) -> LatencyStats {
        let scale = match self.units.as_str() {
            "ms" | "ms/token" => 1e-3,
            "s" | "s/token" => 1.0,
            _ => return LatencyStats::default(),
        };
        let f = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| v * scale);
        LatencyStats {
            mean_s: f(Some(self.mean)),
            median_s: f(self.p50),
            p90_s: f(self.p90),
            p95_s: f(self.p95),
            p99_s: f(self.p99),
            max_s: f(self.max),
        }
    }

    /// Its mean, when positive and finite.
    fn mean(&self) -> Option<f64> {
        Some(self.mean).filter(|x| x.is_finite() && *x >= 0.0)
    }
}

/// Whether `v` looks like an llm-d Benchmark Report: a `version`, `run` and `results`.
pub(super) fn is_report(v: &Value) -> bool {
    v.get("version").is_some_and(Value::is_string)
        && v.get("run").is_some()
        && v.get("results").is_some()
}

/// An llm-d Benchmark Report as the run's summary. Another version than 0.2.x, or a v0.2
/// report that does not fit the schema, is refused naming its version.
pub(super) fn read_report(v: &Value) -> Result<BenchSummary, NotClientFile> {
    let version = v
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let refuse = |reason: String| NotClientFile::UnsupportedVersion {
        tool: "llm-d Benchmark Report",
        version: version.clone(),
        reason,
        read: LLMD_READ,
    };
    if !(version == "0.2" || version.starts_with("0.2.")) {
        return Err(refuse("its version is not 0.2.x".into()));
    }
    let r = Report::deserialize(v).map_err(|e| refuse(e.to_string()))?;
    let mut b = BenchSummary::run_summary(BenchClient::LlmdReport, 1);
    let load = r.scenario.and_then(|s| s.load).map(|l| l.standardized);
    if let Some(l) = &load {
        b.label = Some(match &l.tool_version {
            Some(tv) => format!("{} {tv}", l.tool),
            None => l.tool.clone(),
        });
        b.max_concurrency = l.concurrency;
        b.request_rate = l.rate_qps.map(|q| q.to_string());
    }
    b.client_version = Some(r.version);
    let Some(agg) = r.results.request_performance.and_then(|p| p.aggregate) else {
        return Err(refuse("no results.request_performance.aggregate".into()));
    };
    if let Some(q) = &agg.requests {
        let failed = q.failures.unwrap_or(0);
        let incomplete = q.incomplete.unwrap_or(0);
        b.successful_requests = Some(q.total.saturating_sub(failed + incomplete));
        b.failed_requests = q.failures;
        b.cancelled_requests = q.incomplete;
        let total = |s: &Option<Statistics>| {
            Some((s.as_ref()?.mean()? * b.successful_requests? as f64).round() as u64)
        };
        b.total_input_tokens = total(&q.input_length);
        b.total_generated_tokens = total(&q.output_length);
    }
    if let Some(l) = &agg.latency {
        let lat = |s: &Option<Statistics>| {
            s.as_ref()
                .map_or_else(LatencyStats::default, Statistics::latency)
        };
        b.ttft = lat(&l.time_to_first_token);
        b.tpot = lat(&l.time_per_output_token);
        b.itl = lat(&l.inter_token_latency);
        b.e2e = lat(&l.request_latency);
    }
    if let Some(t) = &agg.throughput {
        let mean = |s: &Option<Statistics>| s.as_ref().and_then(Statistics::mean);
        b.request_throughput = mean(&t.requests_rate);
        b.output_tok_per_s = mean(&t.output_token_rate);
        b.input_tok_per_s = mean(&t.input_token_rate);
        b.total_tok_per_s = mean(&t.total_token_rate);
    }
    // the run's length: successful requests over their rate (the report's own duration is
    // an ISO-8601 span of the experiment, set-up included)
    b.duration_s = match (b.successful_requests, b.request_throughput) {
        (Some(n), Some(r)) if r > 0.0 => Some(n as f64 / r),
        _ => None,
    };
    Ok(b)
}
