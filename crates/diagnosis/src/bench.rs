//! A benchmark's printed summary as client evidence: the runs found in the logs and client
//! files, the client summary one of them gives, and the findings its whole-run figures support
//! (failures, time to first token dominating latency, a concurrency limit held full).
//!
//! The figures are bench_serving's own (spec §7, `calculate_metrics`): `Request throughput` and
//! `Output token throughput` divide by the whole benchmark duration, ramp and drain included;
//! `Concurrency` is Σ end-to-end latency / duration (Little's law); TTFT, TPOT and E2E are per
//! request, over successful requests only.

use serde::Serialize;
use sglang_log::BenchSummary;

use crate::client::ClientFormat;
use crate::context::Context;
use crate::evidence::Evidence;
use crate::extended::{CONFIDENCE, implied_rate, rate_from};
use crate::report::{
    Bottleneck, ClientSummary, Confidence, Figure, Finding, FindingKind, Rate, SourceRange,
};

/// Share of failed requests from which failures are the first thing to fix (fraction).
const FAILURES_DOMINATE: f64 = 0.2;
/// Mean TTFT over mean end-to-end latency from which waiting for the first token is reported
/// (fraction).
const TTFT_SHARE_REPORTED: f64 = 0.2;
/// ... and only when the mean TTFT is at least this long (seconds).
const TTFT_REPORTED_S: f64 = 1.0;
/// Mean prompt length from which prefill is a real part of the time to first token (tokens).
const LONG_PROMPT_TOKENS: f64 = 4096.0;
/// Mean requests in flight over `--max-concurrency` from which the limit counts as held full.
const LIMIT_HELD_FULL: f64 = 0.9;

/// One benchmark run the report read, and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct BenchmarkRun {
    /// The file and lines of the summary block (`path:first-last`).
    pub source: SourceRange,
    /// The block's figures (latencies in seconds).
    pub summary: BenchSummary,
}

impl BenchmarkRun {
    /// Mean end-to-end latency (seconds): the printed mean, else TTFT + TPOT × (mean output
    /// tokens − 1), the identity bench_serving's TPOT is defined by.
    pub fn mean_e2e_s(&self) -> Option<f64> {
        let b = &self.summary;
        b.e2e.mean_s.or_else(|| {
            let out = b.mean_completion_tokens()?;
            Some(b.ttft.mean_s? + b.tpot.mean_s? * (out - 1.0).max(0.0))
        })
    }
}

/// Every benchmark run: the blocks in the logs (in source order), then those in client files.
pub(crate) fn collect_runs(ev: &Evidence, ctx: &Context) -> Vec<BenchmarkRun> {
    let in_logs = ev.benchmarks.iter().map(|b| BenchmarkRun {
        source: SourceRange {
            source: ev
                .sources
                .get(b.source)
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            first_line: b.summary.first_line,
            last_line: b.summary.last_line,
        },
        summary: b.summary.clone(),
    });
    let in_clients = ctx.clients.iter().flat_map(|c| {
        c.bench.iter().map(|b| BenchmarkRun {
            source: SourceRange {
                source: c.source.clone(),
                first_line: b.first_line,
                last_line: b.last_line,
            },
            summary: b.clone(),
        })
    });
    in_logs.chain(in_clients).collect()
}

/// Whether the client files hold per-request or progress evidence, which is preferred over a
/// benchmark's whole-run figures.
pub(crate) fn clients_have_times(ctx: &Context) -> bool {
    ctx.clients.iter().any(|c| {
        matches!(
            c.format,
            ClientFormat::ProgressLog | ClientFormat::TimedRecords
        )
    })
}

/// The client summary of the last benchmark run: successes and failures, the whole-run request
/// rate with an exact Poisson (Garwood) interval over the benchmark duration, mean lengths from
/// the totals, and the rate the server's steady token rate implies at that mean completion
/// (no spread of completion lengths is known from a summary: the interval reflects the server
/// rate's uncertainty only).
pub(crate) fn client_summary(
    runs: &[BenchmarkRun],
    server_tps: Option<&Rate>,
) -> Option<ClientSummary> {
    let run = runs.last()?;
    let b = &run.summary;
    let completed = b.successful_requests.or(b.total_requests).unwrap_or(0);
    let lifetime_req_per_s = b.duration_s.and_then(|d| {
        let est = throughput_stats::RateEstimate::from_count(completed, d, CONFIDENCE).ok()?;
        Some(rate_from(
            &est,
            "benchmark: successful requests / benchmark duration (whole run, ramp and drain included), exact Poisson (Garwood) interval",
        ))
    });
    let mean_completion_tokens = b.mean_completion_tokens();
    let implied_req_per_s = match (server_tps, mean_completion_tokens) {
        (Some(t), Some(m)) => implied_rate(t, m, 0.0, completed),
        _ => None,
    };
    Some(ClientSummary {
        source: run.source.to_string(),
        format: ClientFormat::BenchmarkSummary.label().to_string(),
        completed,
        failed: b.failed().unwrap_or(0),
        total: b.requested(),
        printed_req_per_s: b.request_throughput,
        lifetime_req_per_s,
        windowed_req_per_s: None,
        implied_req_per_s,
        first_completion_after_s: None,
        mean_completion_tokens,
        mean_prompt_tokens: b.mean_prompt_tokens(),
        adequacy: None,
        window_needed_s: None,
        eta: None,
    })
}

/// `1,648` style thousands separators for counts in sentences.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The findings the benchmark runs support. `bottleneck` is the server-side verdict from the
/// logs (`NoSchedulerLines` when there are none); `server_running_cap` the server's
/// `max_running_requests` when known.
pub(crate) fn findings(
    runs: &[BenchmarkRun],
    bottleneck: Bottleneck,
    server_running_cap: Option<u64>,
    out: &mut Vec<Finding>,
) {
    for (i, run) in runs.iter().enumerate() {
        let from = out.len();
        failures(run, out);
        ttft_share(run, bottleneck, out);
        limit_held_full(run, bottleneck, server_running_cap, out);
        if runs.len() > 1 {
            for f in &mut out[from..] {
                f.title = format!("Benchmark run {} of {}: {}", i + 1, runs.len(), f.title);
            }
        }
    }
}

fn failures(run: &BenchmarkRun, out: &mut Vec<Finding>) {
    let b = &run.summary;
    let (Some(failed), Some(requested)) = (b.failed(), b.requested()) else {
        return;
    };
    if failed == 0 || requested == 0 {
        return;
    }
    let share = failed as f64 / requested as f64;
    let from = if b.failed_requests.is_some() {
        "the block's `Failed requests`".to_string()
    } else {
        format!(
            "`--num-prompts {requested}` less the {} successful",
            count(b.successful_requests.unwrap_or(0))
        )
    };
    out.push(Finding {
        kind: FindingKind::BenchmarkFailures,
        title: format!(
            "{} of {} benchmark requests failed ({:.0}%)",
            count(failed),
            count(requested),
            share * 100.0
        ),
        detail: format!(
            "Counted from {from}. The benchmark's throughput and latencies cover only the successful requests, so they describe a different, lighter run than the one asked for{}. \
             Find why requests failed before tuning throughput: the benchmark's error output (timeouts, connection resets), and the server log for aborted requests \
             (a full waiting queue with --max-queued-requests, prompts over the context length, out-of-memory).",
            if share >= FAILURES_DOMINATE { ", and failures are the first thing to fix" } else { "" }
        ),
        figures: vec![
            Figure::new("failed requests", failed as f64, "requests"),
            Figure::new("requested", requested as f64, "requests"),
            Figure::new("failed share", share, "fraction"),
        ],
        evidence: vec![run.source.clone()],
        confidence: if share >= FAILURES_DOMINATE { Confidence::High } else { Confidence::Medium },
    });
}

fn ttft_share(run: &BenchmarkRun, bottleneck: Bottleneck, out: &mut Vec<Finding>) {
    let b = &run.summary;
    let (Some(ttft), Some(e2e)) = (b.ttft.mean_s, run.mean_e2e_s()) else {
        return;
    };
    if e2e <= 0.0 || ttft < TTFT_REPORTED_S {
        return;
    }
    let share = ttft / e2e;
    if share < TTFT_SHARE_REPORTED {
        return;
    }
    let inf = b.request_rate.as_deref() == Some("inf");
    let submitted = match (b.request_rate_per_s(), b.max_concurrency) {
        (None, None) if inf => {
            "The benchmark sent every request at once (request rate inf, no concurrency limit)"
                .to_string()
        }
        (None, None) => {
            "The benchmark's request rate and concurrency limit are not in its summary".to_string()
        }
        (None, Some(m)) if inf => {
            format!("The benchmark kept up to {m} requests in flight (request rate inf)")
        }
        (None, Some(m)) => format!("The benchmark kept up to {m} requests in flight"),
        (Some(r), None) => {
            format!("The benchmark sent {r} requests per second with no concurrency limit")
        }
        (Some(r), Some(m)) => {
            format!("The benchmark sent {r} requests per second, at most {m} in flight")
        }
    };
    let e2e_from = if b.e2e.mean_s.is_some() {
        ""
    } else {
        " (end to end estimated as TTFT + TPOT × (mean output tokens − 1): the summary prints no E2E latency)"
    };
    let prompt = match b.mean_prompt_tokens() {
        Some(p) if p >= LONG_PROMPT_TOKENS => {
            format!(" Prompts average {p:.0} tokens: prefill itself takes a real share of it.")
        }
        Some(p) => format!(
            " Prompts average {p:.0} tokens: their prefill alone is short, so most of it is time waiting to be scheduled."
        ),
        None => String::new(),
    };
    let server = match bottleneck {
        Bottleneck::NoSchedulerLines => {
            " The server log (its #queue-req and token usage) tells which; give it to this tool."
                .to_string()
        }
        other => format!(" The server log says: {}.", other.label()),
    };
    out.push(Finding {
        kind: FindingKind::BenchmarkQueueing,
        title: format!(
            "Requests spent {:.0}% of their latency before the first token (mean TTFT {:.1} s of {:.1} s end to end)",
            share * 100.0,
            ttft,
            e2e
        ),
        detail: format!(
            "{submitted}{e2e_from}. A request's time to first token is its wait in the server's queue (the server admits only as many requests as its KV cache \
             and max_running_requests allow) plus its prefill.{prompt}{server} \
             Output throughput ({} tok/s over the whole run) is what the admitted requests achieve; while the server queues, more requests in flight only lengthen the wait.",
            b.output_tok_per_s.map(|x| format!("{x:.0}")).unwrap_or_else(|| "?".into())
        ),
        figures: vec![
            Figure::new("mean TTFT", ttft, "s"),
            Figure::new("mean end-to-end latency", e2e, "s"),
            Figure::new("TTFT share of latency", share, "fraction"),
        ],
        evidence: vec![run.source.clone()],
        confidence: if share >= 0.4 { Confidence::High } else { Confidence::Medium },
    });
}

fn limit_held_full(
    run: &BenchmarkRun,
    bottleneck: Bottleneck,
    server_running_cap: Option<u64>,
    out: &mut Vec<Finding>,
) {
    let b = &run.summary;
    let (Some(limit), Some(c)) = (b.max_concurrency, b.concurrency) else {
        return;
    };
    if limit == 0 || c < LIMIT_HELD_FULL * limit as f64 {
        return;
    }
    let (meaning, confidence) = match (bottleneck, server_running_cap) {
        (Bottleneck::ClientBound, _) => (
            format!(
                "The server log shows headroom (little waits): the benchmark's limit sets the load. Raise --max-concurrency above {limit} to measure the server."
            ),
            Confidence::High,
        ),
        (_, Some(cap)) if cap <= limit => (
            format!(
                "The server's max_running_requests is {cap}, {}: raising the benchmark's limit alone would only queue requests in the server; raise both together to run more at once.",
                if cap == limit {
                    "the same as the limit"
                } else {
                    "below the limit"
                }
            ),
            Confidence::Medium,
        ),
        (Bottleneck::NoSchedulerLines, _) => (
            format!(
                "Whether the server could run more than {limit} at once is not in this input: its log (#running-req, #queue-req, token usage) tells."
            ),
            Confidence::Low,
        ),
        (other, _) => (
            format!(
                "The server log says {}: raising the limit would lengthen the server's queue, not raise throughput.",
                other.label()
            ),
            Confidence::Medium,
        ),
    };
    out.push(Finding {
        kind: FindingKind::BenchmarkConcurrencyLimit,
        title: format!(
            "The benchmark held its concurrency limit full: {c:.1} requests in flight on average of --max-concurrency {limit}"
        ),
        detail: format!(
            "bench_serving's Concurrency is the sum of end-to-end latencies over the run's duration, the mean number of requests in flight (Little's law). {meaning}"
        ),
        figures: vec![
            Figure::new("mean requests in flight", c, "requests"),
            Figure::new("max concurrency", limit as f64, "requests"),
        ],
        evidence: vec![run.source.clone()],
        confidence,
    });
}

/// The headline when the input holds no scheduler lines but a benchmark summary: the last
/// run's figures.
pub(crate) fn headline_sentence(runs: &[BenchmarkRun]) -> Option<String> {
    let run = runs.last()?;
    let b = &run.summary;
    let mut parts = Vec::new();
    match (b.successful_requests, b.requested(), b.failed()) {
        (Some(ok), Some(req), Some(f)) if f > 0 => parts.push(format!(
            "{} of {} requests succeeded",
            count(ok),
            count(req)
        )),
        (Some(ok), _, _) => parts.push(format!("{} requests succeeded", count(ok))),
        _ => {
            if let Some(n) = b.total_requests {
                parts.push(format!("{} requests", count(n)));
            }
        }
    }
    if let Some(o) = b.output_tok_per_s {
        parts.push(format!("{o:.0} output tok/s over the whole run"));
    }
    if let Some(c) = b.concurrency {
        parts.push(format!("{c:.1} in flight on average"));
    }
    if let Some(t) = b.ttft.mean_s {
        parts.push(format!("mean TTFT {t:.2} s"));
    }
    if let Some(t) = b.tpot.mean_s {
        parts.push(format!("mean TPOT {:.1} ms", t * 1e3));
    }
    if parts.is_empty() {
        return None;
    }
    let runs_s = if runs.len() > 1 {
        format!(" (last of {} runs)", runs.len())
    } else {
        String::new()
    };
    Some(format!(
        "No SGLang scheduler lines; benchmark summary{runs_s}: {}.",
        parts.join(", ")
    ))
}
