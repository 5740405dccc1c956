//! The client's side: the client summary and its findings, and the benchmark rules over
//! every run.

use super::inputs::dp_size;
use crate::context::Context;
use crate::evidence::Evidence;
use crate::evidence::view::{self, SchedulerView};
use crate::narrative;
use crate::report::{BenchmarkRun, Bottleneck, CapacitySummary, ClientSummary, Finding, Rate};
use crate::rules::{self, bench_concurrency_limit::ServerCap};
use crate::{bench, client_view};

/// The server's rate and the client's view of it.
pub(super) struct ClientSide<'a> {
    /// The server's generation rate over the steady span.
    pub(super) steady_gen_throughput: Option<Rate>,
    /// The scheduler with the most decode lines.
    pub(super) primary: Option<&'a SchedulerView<'a>>,
    /// The benchmark runs read from the logs and client files.
    pub(super) benchmark_runs: Vec<BenchmarkRun>,
    /// The client summary.
    pub(super) client: Option<ClientSummary>,
    /// The server's running-request cap as a client sees it.
    pub(super) server_cap: Option<ServerCap>,
}

/// The server's rate and the client's view of it; the client's and the benchmarks' findings
/// are added to `findings`.
pub(super) fn client_side<'a>(
    ev: &Evidence,
    ctx: &Context,
    views: &'a [SchedulerView<'a>],
    capacity: &CapacitySummary,
    bottleneck: Bottleneck,
    findings: &mut Vec<Finding>,
) -> ClientSide<'a> {
    let steady_gen_throughput = view::steady_throughput(views);
    let primary = views.iter().max_by_key(|v| v.tl.decode.pushed());
    let benchmark_runs = bench::collect_runs(ev, ctx);
    // the server's tokens against a client's only when the log holds every DP rank (the
    // highest rank seen, or `dp_size`, counts them)
    let ranks_seen = views.iter().filter(|v| v.key.dp.is_some()).count();
    let ranks_of = dp_size(ev, ctx).unwrap_or(0).max(
        views
            .iter()
            .filter_map(|v| v.key.dp)
            .max()
            .map_or(0, |m| m + 1),
    ) as usize;
    let whole_server = steady_gen_throughput
        .as_ref()
        .filter(|_| ranks_seen == 0 || ranks_seen >= ranks_of);
    let client = if benchmark_runs.is_empty() || bench::clients_have_times(ctx) {
        client_findings(ctx, primary, steady_gen_throughput.as_ref(), findings).map(|mut s| {
            s.claims = client_view::claims(&s, &benchmark_runs, ctx);
            s
        })
    } else {
        bench::client_summary(
            &benchmark_runs,
            steady_gen_throughput.as_ref(),
            whole_server,
        )
    };
    let server_cap =
        capacity
            .max_running_requests
            .map(|per_rank| rules::bench_concurrency_limit::ServerCap {
                per_rank,
                dp_ranks: dp_size(ev, ctx).unwrap_or(0).max(
                    views
                        .iter()
                        .filter_map(|v| v.key.dp)
                        .max()
                        .map_or(1, |m| m + 1),
                ),
            });
    benchmark_findings(
        &benchmark_runs,
        bottleneck,
        server_cap,
        whole_server,
        findings,
    );
    ClientSide {
        steady_gen_throughput,
        primary,
        benchmark_runs,
        client,
        server_cap,
    }
}

/// The client summary, and the findings on it: Little's law, the gap, a short sample's adequacy.
fn client_findings(
    ctx: &Context,
    primary: Option<&SchedulerView<'_>>,
    server_tps: Option<&Rate>,
    findings: &mut Vec<Finding>,
) -> Option<ClientSummary> {
    // The steady span as the log's clock can place it: a line stamped in whole seconds happened
    // somewhere within that second, so the span reaches to the end of its last second.
    let steady = primary.and_then(|v| {
        v.span.as_ref().map(|s| client_view::SteadyClock {
            start_s: s.steady_start_s,
            end_s: s.steady_end_s + s.timestamp_resolution_s,
            resolution_s: s.timestamp_resolution_s,
        })
    });
    let s = client_view::client_summary(ctx, steady, server_tps)?;
    let c = client_view::primary_client(ctx)?;
    let in_system = primary.and_then(|v| Some(v.running.mean? + v.queued.mean.unwrap_or(0.0)));
    if let (Some(f), Some(w)) = (
        rules::littles_law::check(&s, c, in_system),
        &s.windowed_req_per_s,
    ) {
        findings.push(rules::littles_law::finding(&f, w.value));
    }
    let waits: Vec<f64> = c
        .requests
        .iter()
        .filter_map(|r| r.permit_wait_s)
        .filter(|x| x.is_finite())
        .collect();
    if let Some(gap) = rules::client_gap::check(&s, primary.and_then(|v| v.running.median), &waits)
    {
        findings.extend(rules::client_gap::finding(&s, &gap));
        if matches!(gap, rules::client_gap::Facts::Gap(_)) {
            findings.extend(s.adequacy.as_ref().map(narrative::sample_adequacy));
        }
    }
    Some(s)
}

/// The benchmark rules over every run; failures that dominate a run come before everything
/// else (the run measured is not the one asked for).
fn benchmark_findings(
    runs: &[BenchmarkRun],
    bottleneck: Bottleneck,
    cap: Option<rules::bench_concurrency_limit::ServerCap>,
    server: Option<&Rate>,
    findings: &mut Vec<Finding>,
) {
    let mut first = Vec::new();
    let mut rest = Vec::new();
    // the last run is the one the server's log covers: its token count can be checked
    let tokens = runs
        .last()
        .and_then(|run| rules::bench_tokens::check(run, server));
    for (i, run) in runs.iter().enumerate() {
        let overcounted = i + 1 == runs.len() && tokens.is_some();
        let n = |f| narrative::numbered(f, i + 1, runs.len());
        if let Some(f) = rules::bench_failures::check(run) {
            let dominant = f.dominate;
            let finding = n(rules::bench_failures::finding(run, &f));
            if dominant {
                first.push(finding)
            } else {
                rest.push(finding)
            }
        }
        // A client that did not stream makes TTFT the whole request: no queueing to read.
        match rules::bench_not_streamed::check(run) {
            Some(f) => first.push(n(rules::bench_not_streamed::finding(run, &f))),
            None => rest.extend(rules::bench_queueing::check(run).map(|f| {
                n(rules::bench_queueing::finding(
                    run,
                    &f,
                    bottleneck,
                    overcounted,
                ))
            })),
        }
        let limit = rules::bench_concurrency_limit::check(run, bottleneck, cap);
        // the limit's finding reads a peak above the limit as one-second bins already
        let peak_read = limit
            .as_ref()
            .is_some_and(|f| f.peak.is_some() && !f.held_full);
        rest.extend(limit.map(|f| n(rules::bench_concurrency_limit::finding(run, &f))));
        rest.extend(
            rules::bench_concurrency_limit::peak_above_cap(run, cap)
                .map(|f| n(rules::bench_concurrency_limit::peak_finding(run, &f))),
        );
        rest.extend(
            rules::bench_readings::check(run)
                .iter()
                .filter(|f| {
                    use rules::bench_readings::Facts as R;
                    // a client that counts tokens the server did not make (`bench_tokens`):
                    // its mean overstates, so "judge by the mean" would mislead
                    !(peak_read && matches!(f, R::PeakAboveLimit { .. })
                        || overcounted && matches!(f, R::PeakBelowMean { .. }))
                })
                .map(|f| n(rules::bench_readings::finding(run, f))),
        );
    }
    if let (Some(run), Some(f)) = (runs.last(), tokens) {
        rest.push(rules::bench_tokens::finding(run, &f));
    }
    findings.splice(0..0, first);
    findings.extend(rest);
}
