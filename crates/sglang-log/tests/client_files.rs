//! The benchmark clients' own files (`tests/data/clients/`, copied or cut down from
//! `../shared/testdata/clients/`, whose README gives each command and what each client printed),
//! read by content, and the figures each client printed found in them (issue 32).

use sglang_log::{BenchClient, BenchSummary, ClientFormat, NotClientFile, parse_client};

fn read(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../tests/data/clients/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `x` within `tol` (relative) of `want`.
fn near(x: Option<f64>, want: f64, tol: f64) -> bool {
    x.is_some_and(|x| ((x - want) / want).abs() <= tol)
}

/// The one run summary a file gives.
fn one(path: &str) -> BenchSummary {
    let c = parse_client(path, &read(path));
    assert_eq!(
        c.format,
        ClientFormat::BenchmarkSummary,
        "{path}: {:?}",
        c.refused
    );
    assert_eq!(c.bench.len(), 1, "{path}");
    c.bench[0].clone()
}

/// What AIPerf 0.13.0 printed (`profile_export_console.txt`): 2.35 req/s, 649.75 output tok/s,
/// TTFT 13,905.82 / 15,375.23 / 20,577.75 ms (avg, p50, p99), ITL 37.99 / 38.66 / 39.12 ms,
/// 268 requests, 0% errors, effective concurrency 57.19.
fn assert_aiperf_figures(b: &BenchSummary, path: &str) {
    assert_eq!(b.client, BenchClient::Aiperf, "{path}");
    assert!(near(b.request_throughput, 2.35, 0.005), "{path}: {b:?}");
    assert!(near(b.output_tok_per_s, 649.75, 0.001), "{path}");
    assert!(near(b.ttft.mean_s, 13.90582, 0.001), "{path}: {:?}", b.ttft);
    assert!(
        near(b.ttft.median_s, 15.37523, 0.001),
        "{path}: {:?}",
        b.ttft
    );
    assert!(near(b.ttft.p99_s, 20.57775, 0.001), "{path}: {:?}", b.ttft);
    assert!(near(b.itl.mean_s, 0.03799, 0.001), "{path}: {:?}", b.itl);
    assert!(near(b.itl.median_s, 0.03866, 0.001), "{path}: {:?}", b.itl);
    assert!(near(b.itl.p99_s, 0.03912, 0.001), "{path}: {:?}", b.itl);
    assert_eq!(
        (b.successful_requests, b.failed_requests),
        (Some(268), Some(0)),
        "{path}"
    );
    assert!(near(b.concurrency, 57.19, 0.001), "{path}");
}

#[test]
fn aiperf_summary_json_csv_and_console_give_what_aiperf_printed() {
    let json = one("aiperf-0.13.0/profile_export_aiperf.json");
    assert_aiperf_figures(&json, "json");
    assert_eq!(json.client_version.as_deref(), Some("0.13.0"));
    assert_eq!(json.max_concurrency, Some(64));
    assert!(near(json.duration_s, 114.223, 0.0001));
    assert_eq!(json.total_generated_tokens, Some(74_228));
    let csv = one("aiperf-0.13.0/profile_export_aiperf.csv");
    assert_aiperf_figures(&csv, "csv");
    assert!(near(csv.duration_s, 114.22, 0.0001));
    assert_eq!(csv.total_generated_tokens, Some(74_228));
    for path in [
        "aiperf-0.13.0/profile_export_console.txt",
        "aiperf-0.13.0/aiperf.console.txt",
    ] {
        let b = one(path);
        assert_aiperf_figures(&b, path);
        if path.ends_with("aiperf.console.txt") {
            // the whole console output also prints the duration and the command's limit
            assert!(near(b.duration_s, 114.22, 0.0001));
            assert_eq!(b.max_concurrency, Some(64));
        }
    }
}

#[test]
fn aiperf_summary_of_another_layout_names_its_version() {
    let c = parse_client(
        "old.json",
        r#"{"aiperf_version": "0.1.0", "schema_version": "0.9", "records": {}}"#,
    );
    let Some(NotClientFile::UnsupportedVersion { tool, version, .. }) = &c.refused else {
        panic!("{:?}", c.refused);
    };
    assert_eq!((*tool, version.as_str()), ("AIPerf", "0.1.0 (schema 0.9)"));
    let words = c.refused.expect("refused").to_string();
    assert!(words.contains("AIPerf 0.13"), "{words}");
}

/// What GuideLLM 0.8.1 printed (`guidellm.console.txt`): concurrent@64, 2.5 req/s, output 655.6
/// tok/s (all requests), concurrency mean 63.8, TTFT 11569.5 / 12691.4 ms (mean, median),
/// ITL 43.8 / 44.5 ms, 223 completed, 64 incomplete, 0 errored, 90.0 s.
fn assert_guidellm_figures(b: &BenchSummary, path: &str) {
    assert_eq!(b.client, BenchClient::Guidellm, "{path}");
    assert_eq!(b.label.as_deref(), Some("concurrent@64"), "{path}");
    assert!(near(b.request_throughput, 2.478, 0.01), "{path}: {b:?}");
    assert!(near(b.output_tok_per_s, 655.6, 0.001), "{path}");
    assert!(near(b.concurrency, 63.8, 0.002), "{path}");
    assert!(near(b.ttft.mean_s, 11.5695, 0.001), "{path}: {:?}", b.ttft);
    assert!(
        near(b.ttft.median_s, 12.6914, 0.001),
        "{path}: {:?}",
        b.ttft
    );
    assert!(near(b.itl.mean_s, 0.0438, 0.002), "{path}: {:?}", b.itl);
    assert!(near(b.itl.median_s, 0.0445, 0.002), "{path}: {:?}", b.itl);
    assert_eq!(
        (
            b.successful_requests,
            b.cancelled_requests,
            b.failed_requests
        ),
        (Some(223), Some(64), Some(0)),
        "{path}"
    );
    assert!(near(b.duration_s, 90.0, 0.0001), "{path}");
    assert_eq!(b.total_generated_tokens, Some(55_388), "{path}");
}

#[test]
fn guidellm_json_yaml_csv_and_console_give_what_guidellm_printed() {
    for path in [
        "guidellm-0.8.1/benchmarks.trimmed.json",
        "guidellm-0.8.1/benchmarks.trimmed.yaml",
    ] {
        let c = parse_client(path, &read(path));
        assert_eq!(c.format, ClientFormat::TimedRecords, "{path}");
        assert_eq!(c.bench.len(), 1, "{path}");
        assert_guidellm_figures(&c.bench[0], path);
        assert_eq!(c.bench[0].client_version.as_deref(), Some("0.8.1"));
        // p99 of the JSON: 19941.9 ms TTFT, 45.27 ms ITL
        assert!(near(c.bench[0].ttft.p99_s, 19.9419, 0.001), "{path}");
        assert!(near(c.bench[0].itl.p99_s, 0.045266, 0.001), "{path}");
        assert_eq!((c.requests.len(), c.cancelled), (5, 2), "{path}");
        assert_eq!(
            c.records_of.as_deref(),
            Some("benchmark 1 of 1, concurrent@64"),
            "{path}"
        );
    }
    let csv = parse_client("benchmarks.csv", &read("guidellm-0.8.1/benchmarks.csv"));
    assert_eq!(csv.bench.len(), 1);
    assert_guidellm_figures(&csv.bench[0], "csv");
    assert!(near(csv.bench[0].ttft.p99_s, 19.9419, 0.001));
    let console = parse_client(
        "guidellm.console.txt",
        &read("guidellm-0.8.1/guidellm.console.txt"),
    );
    assert_eq!(console.bench.len(), 1);
    assert_guidellm_figures(&console.bench[0], "console");
    // the console prints p95, not p99: TTFT 17434.9 ms, ITL 45.2 ms
    assert!(near(console.bench[0].ttft.p95_s, 17.4349, 0.0001));
    assert_eq!(console.bench[0].ttft.p99_s, None);
}

/// A sweep (`benchmarks.sweep.json`: the real benchmark, preceded by a copy of it relabelled
/// `constant@2.00` with other request totals, a synthetic second run): each benchmark is a run
/// of its own, the records are the last one's and the evidence says so.
#[test]
fn a_guidellm_sweep_reads_each_benchmark_apart() {
    let c = parse_client("sweep.json", &read("guidellm-0.8.1/benchmarks.sweep.json"));
    let labels: Vec<_> = c.bench.iter().map(|b| b.label.clone()).collect();
    assert_eq!(
        labels,
        vec![Some("constant@2.00".into()), Some("concurrent@64".into())]
    );
    assert_eq!(
        (c.bench[0].successful_requests, c.bench[0].failed_requests),
        (Some(180), Some(3))
    );
    assert_eq!(c.bench[0].request_rate.as_deref(), Some("2"));
    assert_guidellm_figures(&c.bench[1], "sweep's last");
    assert_eq!(
        c.records_of.as_deref(),
        Some("benchmark 2 of 2, concurrent@64")
    );
}

#[test]
fn a_guidellm_report_without_benchmarks_it_can_read_names_its_version() {
    let c = parse_client(
        "old.json",
        r#"{"metadata": {"guidellm_version": "0.2.1"}, "benchmarks": [{"results": []}]}"#,
    );
    let Some(NotClientFile::UnsupportedVersion { tool, version, .. }) = &c.refused else {
        panic!("{:?}", c.refused);
    };
    assert_eq!((*tool, version.as_str()), ("GuideLLM", "0.2.1"));
}

/// `vllm bench serve --save-result` (`vllm-bench-serve/result.json`): no run of it was
/// possible here, so the file is built from the fields `vllm/benchmarks/serve.py` writes
/// (`completed`, `failed`, `duration`, `request_throughput`, `output_throughput`,
/// `total_token_throughput`, `{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms`, `burstiness`,
/// `max_concurrency`, `max_output_tokens_per_s`, …), with figures of a run like the others.
#[test]
fn vllm_save_result_is_read_as_vllms_summary() {
    let b = one("vllm-bench-serve/result.json");
    assert_eq!(b.client, BenchClient::VllmBenchServe);
    assert_eq!(
        (b.successful_requests, b.failed_requests, b.num_prompts),
        (Some(238), Some(2), Some(240))
    );
    assert_eq!(b.max_concurrency, Some(64));
    assert!(near(b.request_throughput, 2.38, 1e-9));
    assert!(near(b.output_tok_per_s, 618.8, 1e-9));
    assert!(near(b.total_tok_per_s, 1837.36, 1e-9));
    assert!(near(b.ttft.mean_s, 12.0345, 1e-9));
    assert!(near(b.ttft.p99_s, 19.8764, 1e-9));
    assert!(near(b.itl.median_s, 0.0401, 1e-9));
    assert!(near(b.e2e.mean_s, 22.5103, 1e-9), "{:?}", b.e2e);
    assert!(near(b.peak_output_tok_per_s, 702.0, 1e-9));
}

/// An llm-d Benchmark Report v0.2 (`llmd-report-0.2/benchmark_report.json`): built from the
/// schema (llm-d-benchmark's `benchmark_report_v0_2.py`) with GuideLLM's figures of the same
/// run, as llm-d-benchmark's converter would carry them.
#[test]
fn an_llmd_report_is_read_as_the_common_format() {
    let b = one("llmd-report-0.2/benchmark_report.json");
    assert_eq!(b.client, BenchClient::LlmdReport);
    assert_eq!(b.label.as_deref(), Some("guidellm 0.8.1"));
    assert_eq!(b.max_concurrency, Some(64));
    assert_eq!(
        (
            b.successful_requests,
            b.failed_requests,
            b.cancelled_requests
        ),
        (Some(223), Some(0), Some(64))
    );
    assert!(near(b.request_throughput, 2.478, 0.001));
    assert!(near(b.output_tok_per_s, 655.6, 0.001));
    assert!(near(b.ttft.mean_s, 11.5695, 0.001));
    assert!(near(b.itl.mean_s, 0.0438, 0.001));
    assert!(near(b.e2e.median_s, 22.967, 0.001));
    // another version, and a v0.2 report with a field the schema does not define
    let text = read("llmd-report-0.2/benchmark_report.json");
    let c = parse_client("v0.1.json", &text.replacen("\"0.2\"", "\"0.1\"", 1));
    assert!(matches!(
        &c.refused,
        Some(NotClientFile::UnsupportedVersion { version, .. }) if version == "0.1"
    ));
    let c = parse_client(
        "extra.json",
        &text.replacen("\"results\": {", "\"results\": {\"extra\": 1, ", 1),
    );
    assert!(c.refused.is_some(), "{:?}", c.bench);
}

/// JSON of no known shape is refused with what it looks like and the shapes read, never read
/// as one request (before: a whole report counted as "1 request").
#[test]
fn json_of_no_known_shape_is_refused_with_what_it_looks_like() {
    for text in [
        "{\n  \"model\": \"x\",\n  \"accuracy\": 0.5\n}\n",
        "{\"model\": \"x\", \"accuracy\": 0.5}\n{\"model\": \"y\", \"accuracy\": 0.7}\n",
    ] {
        let c = parse_client("eval.json", text);
        assert!(c.requests.is_empty() && c.bench.is_empty());
        let Some(e @ NotClientFile::UnknownJson { looks }) = &c.refused else {
            panic!("{:?}", c.refused);
        };
        assert_eq!(looks, "an object with keys accuracy, model");
        assert!(e.to_string().contains("GuideLLM's benchmarks.json"), "{e}");
    }
}
