//! Benchmark summaries as evidence: a bench_serving paste given as the client file, and CI logs
//! that hold the server log and the benchmark's summary together (`tests/data/real*/`).

use std::path::{Path, PathBuf};

use diagnosis::{Bottleneck, Confidence, Context, EvidenceBuilder, FindingKind, Report};
use sglang_log::LogReader;
use sglang_log::parse_client;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// The file as a client file (`--client-log`), no server log.
fn as_client(rel: &str) -> Report {
    let text = std::fs::read_to_string(data(rel)).expect(rel);
    let ctx = Context {
        clients: vec![parse_client(rel, &text)],
        ..Context::default()
    };
    diagnosis::diagnose_with(&EvidenceBuilder::new().build(), &ctx)
}

/// The file as a server log.
fn as_log(rel: &str) -> Report {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source(rel);
    let stats = LogReader::open(&data(rel))
        .expect("open")
        .for_each(|r| b.push(id, r))
        .expect("read");
    b.finish_source(id, &stats);
    diagnosis::diagnose(&b.build())
}

fn figure(r: &Report, kind: FindingKind, name: &str) -> f64 {
    r.findings
        .iter()
        .find(|f| f.kind == kind)
        .and_then(|f| f.figures.iter().find(|g| g.name == name))
        .and_then(|g| g.value)
        .unwrap_or_else(|| panic!("{kind:?} / {name}"))
}

#[test]
fn failed_requests_come_first_and_the_client_summary_is_the_benchmarks() {
    // 001: 1,648 of 3,000 succeeded; mean TTFT 44.3 s of 80.1 s end to end.
    let r = as_client("real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt");
    assert_eq!(r.bottleneck, Bottleneck::NoSchedulerLines);
    assert_eq!(
        r.headline.text,
        "No SGLang scheduler lines: only a benchmark summary of SGLang bench_serving — 1,648 of 3,000 requests succeeded, 1915 output tok/s over the whole run, mean TTFT 44.29 s."
    );
    assert_eq!(r.benchmark_runs.len(), 1);
    let f = &r.findings[0];
    assert_eq!(f.kind, FindingKind::BenchmarkFailures);
    assert_eq!(f.title, "1,352 of 3,000 benchmark requests failed (45%)");
    assert_eq!(f.confidence, Confidence::High);
    assert_eq!(f.evidence[0].first_line, 4);
    assert_eq!(f.evidence[0].last_line, 21);
    assert!(
        (figure(&r, FindingKind::BenchmarkFailures, "failed share") - 1352.0 / 3000.0).abs()
            < 1e-12
    );
    let q = figure(&r, FindingKind::BenchmarkQueueing, "TTFT share of latency");
    assert!((q - 44.2948 / 80.12693).abs() < 1e-9, "{q}");

    let c = r.client.expect("client");
    assert_eq!(c.format, sglang_log::ClientFormat::BenchmarkSummary);
    assert_eq!((c.completed, c.failed, c.total), (1648, 1352, Some(3000)));
    assert_eq!(c.printed_req_per_s, Some(9.67));
    let life = c.lifetime_req_per_s.expect("rate");
    assert!((life.value - 1648.0 / 170.41).abs() < 1e-9);
    assert!(life.low.expect("low") < life.value && life.high.expect("high") > life.value);
    assert!((c.mean_completion_tokens.expect("mean") - 326_408.0 / 1648.0).abs() < 1e-9);
    assert!(
        r.not_concluded
            .iter()
            .any(|n| n.reason == diagnosis::report::NotConcludedReason::ClientIsBenchmarkSummary)
    );
}

#[test]
fn long_prompts_queue_and_prefill() {
    // 005: 16k-token prompts at 5 req/s; mean TTFT 130.2 s of 453.8 s.
    let r = as_client("real/bench/005-pr17216-sglang-decode-offload-16k-peak-fields.txt");
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::BenchmarkQueueing)
        .expect("queueing");
    assert_eq!(
        f.title,
        "Requests spent 29% of their latency before the first token (mean TTFT 130.2 s of 453.8 s end to end)"
    );
    assert!(
        f.detail
            .contains("5 requests per second, at most 256 in flight")
    );
    assert!(
        f.detail
            .contains("Prompts average 16000 tokens: prefill itself")
    );
    assert!(
        !r.findings
            .iter()
            .any(|f| f.kind == FindingKind::BenchmarkFailures)
    );
}

#[test]
fn short_ttft_is_not_reported_and_a_full_limit_is_said_with_low_confidence() {
    // 002: TTFT 2.5 s of 26.5 s (10%); 316 of 330 in flight.
    let r = as_client("real/bench/002-i8285-sglang-ttft-unstable-rate330.txt");
    assert!(
        !r.findings
            .iter()
            .any(|f| f.kind == FindingKind::BenchmarkQueueing)
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::BenchmarkConcurrencyLimit)
        .expect("limit");
    assert_eq!(f.confidence, Confidence::Low);
    assert!(
        (figure(
            &r,
            FindingKind::BenchmarkConcurrencyLimit,
            "mean requests in flight"
        ) - 315.98)
            .abs()
            < 1e-9
    );
}

#[test]
fn multi_turn_summary_without_successful_count() {
    // 008: 75 requests, TTFT 38.35 s of 50.19 s, 30.2k-token prompts.
    let r = as_client("real/bench/008-i26886-hicache-bench-multiturn-summary.txt");
    assert_eq!(
        r.headline.text,
        "No SGLang scheduler lines: only a benchmark summary of SGLang multi-turn benchmark — 75 requests, 25 output tok/s over the whole run, mean TTFT 38.35 s."
    );
    let q = figure(&r, FindingKind::BenchmarkQueueing, "TTFT share of latency");
    assert!((q - 38.35 / 50.19).abs() < 1e-9);
}

#[test]
fn ci_log_with_server_and_two_benchmark_runs() {
    // Qwen3-Next on Ascend: max_running_requests 80, the benchmark's limit 80, held full.
    let r = as_log("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    assert_eq!(r.bottleneck, Bottleneck::RunningCapBound);
    assert_eq!(r.benchmark_runs.len(), 2);
    assert_eq!(
        (
            r.benchmark_runs[0].source.first_line,
            r.benchmark_runs[0].source.last_line
        ),
        (1037, 1072)
    );
    let limits: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::BenchmarkConcurrencyLimit)
        .collect();
    assert_eq!(limits.len(), 2);
    assert!(limits[0].title.starts_with("Benchmark run 1 of 2: "));
    assert!(limits[1].detail.contains("max_running_requests is 80"));
    // The client summary is the last run's; the server's steady token rate implies a request
    // rate at its mean completion of 1,500 tokens.
    let c = r.client.expect("client");
    assert_eq!(c.completed, 320);
    assert_eq!(c.mean_completion_tokens, Some(1500.0));
    let implied = c.implied_req_per_s.expect("implied");
    let tps = r.steady_gen_throughput.expect("tps");
    assert!((implied.value - tps.value / 1500.0).abs() < 1e-9);
    // TTFT 9.8 s of 85.1 s: not reported.
    assert!(
        !r.findings
            .iter()
            .any(|f| f.kind == FindingKind::BenchmarkQueueing)
    );
}

#[test]
fn benchmark_only_ci_log_has_a_headline_from_the_last_run() {
    let r = as_log("real-long/ascend-dsr1-pd-client-router.log");
    assert_eq!(r.bottleneck, Bottleneck::NoSchedulerLines);
    assert_eq!(
        r.headline.text,
        "No SGLang scheduler lines: only a benchmark summary of SGLang bench_serving (last of 2 runs) — 3,328 requests succeeded, 13348 output tok/s over the whole run, 579.4 in flight on average, mean TTFT 4.71 s, mean TPOT 40.3 ms."
    );
    assert_eq!(r.client.expect("client").completed, 3328);
}

#[test]
fn a_summary_without_rate_or_e2e_says_what_it_estimated() {
    // 004 (vLLM bench serve): no `Traffic request rate`, no E2E line; TTFT 3.43578 s, TPOT
    // 81.22 ms, 128 output tokens: end to end ~ 3.436 + 0.08122 x 127 = 13.75 s.
    let r = as_client("real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt");
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::BenchmarkQueueing)
        .expect("queueing");
    assert!(
        f.detail.starts_with(
            "The benchmark kept up to 10 requests in flight (end to end estimated as TTFT + TPOT"
        ),
        "{}",
        f.detail
    );
    assert!(!f.detail.contains("request rate inf"));
    let e2e = figure(
        &r,
        FindingKind::BenchmarkQueueing,
        "mean end-to-end latency",
    );
    assert!((e2e - (3.43578 + 0.08122 * 127.0)).abs() < 1e-9, "{e2e}");
}
