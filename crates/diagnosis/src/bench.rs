//! A benchmark's printed summary as client evidence: the runs found in the logs and client
//! files, and the client summary one of them gives. Their findings are rules
//! (`rules::bench_failures`, `rules::bench_queueing`, `rules::bench_concurrency_limit`).
//!
//! The figures are bench_serving's own (spec §7, `calculate_metrics`): `Request throughput` and
//! `Output token throughput` divide by the whole benchmark duration, ramp and drain included;
//! `Concurrency` is Σ end-to-end latency / duration (Little's law); TTFT, TPOT and E2E are per
//! request, over successful requests only.

use sglang_log::ClientFormat;

use crate::client_view::{implied_rate, rate_from};
use crate::context::Context;
use crate::evidence::Evidence;
use crate::report::{BenchmarkRun, ClientSummary, Rate, RateBasis, SourceRange};
use crate::thresholds as th;

/// Every benchmark run: the blocks in the logs (in source order), then those in client files.
pub fn collect_runs(ev: &Evidence, ctx: &Context) -> Vec<BenchmarkRun> {
    let in_logs = ev.benchmarks.iter().map(|b| BenchmarkRun {
        source: SourceRange {
            source: ev
                .sources
                .get(b.source)
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            first_line: b.summary.first_line,
            last_line: b.summary.last_line,
            last_source: None,
        },
        summary: b.summary.clone(),
    });
    let in_clients = ctx.clients.iter().flat_map(|c| {
        c.bench.iter().map(|b| BenchmarkRun {
            source: SourceRange {
                source: c.source.clone(),
                first_line: b.first_line,
                last_line: b.last_line,
                last_source: None,
            },
            summary: b.clone(),
        })
    });
    in_logs.chain(in_clients).collect()
}

/// Whether the client files hold per-request or progress evidence, which is preferred over a
/// benchmark's whole-run figures.
pub fn clients_have_times(ctx: &Context) -> bool {
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
/// `whole_server`: the same rate when the log holds every DP rank, to check the client's tokens
/// against (`rules::bench_tokens`).
pub fn client_summary(
    runs: &[BenchmarkRun],
    server_tps: Option<&Rate>,
    whole_server: Option<&Rate>,
) -> Option<ClientSummary> {
    let run = runs.last()?;
    let b = &run.summary;
    let completed = b.successful_requests.or(b.total_requests).unwrap_or(0);
    let lifetime_req_per_s = b.duration_s.and_then(|d| {
        let est = throughput_stats::RateEstimate::from_count(completed, d, th::CONFIDENCE).ok()?;
        Some(rate_from(&est, RateBasis::BenchmarkWholeRun))
    });
    let mean_completion_tokens = b.mean_completion_tokens();
    // the server's rate at the client's tokens per request, unless the client counts tokens
    // the server did not generate (`rules::bench_tokens`): then its completions are the rate
    let implied_req_per_s = match (server_tps, mean_completion_tokens) {
        (Some(t), Some(m)) if crate::rules::bench_tokens::check(run, whole_server).is_none() => {
            implied_rate(t, m, 0.0, completed)
        }
        _ => None,
    };
    Some(ClientSummary {
        source: format!(
            "{}:{}-{}",
            run.source.source, run.source.first_line, run.source.last_line
        ),
        format: ClientFormat::BenchmarkSummary,
        completed,
        failed: b.failed().unwrap_or(0),
        total: b.requested(),
        printed_req_per_s: b.request_throughput,
        printed_tok_per_s: b.output_tok_per_s,
        lifetime_req_per_s,
        lifetime_tok_per_s: None,
        records_of: None,
        claims: Vec::new(),
        windowed_req_per_s: None,
        implied_req_per_s,
        first_completion_after_s: None,
        mean_completion_tokens,
        mean_prompt_tokens: b.mean_prompt_tokens(),
        adequacy: None,
        eta: None,
        set_aside: Vec::new(),
        // a benchmark's summary gives its TTFT in its own block (the benchmark run's figures)
        ttft_s: None,
        itl_s: None,
        cancelled: 0,
    })
}
