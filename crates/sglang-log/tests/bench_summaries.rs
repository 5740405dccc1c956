//! Benchmark summary blocks in real files: the bench_serving pastes of `tests/data/real/bench/`
//! and the CI logs of `tests/data/real-long/` that run server and benchmark together. The
//! values are the ones the files print (and `SOURCES.tsv` states).

mod common;
use common::data_dir;
use sglang_log::{BenchSummary, BenchTool, LogReader, parse_bench_summaries};

fn read(rel: &str) -> Vec<BenchSummary> {
    let text = std::fs::read_to_string(data_dir().join(rel)).expect(rel);
    parse_bench_summaries(&text)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9 * b.abs().max(1.0))
}

#[test]
fn partial_success_with_the_old_typo() {
    // 001: 1,648 of 3,000 requested succeeded; `Max reqeuest concurrency: not set`.
    let b = read("real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt");
    assert_eq!(b.len(), 1);
    let b = &b[0];
    assert_eq!(b.tool, BenchTool::ServingBenchmark);
    assert_eq!((b.first_line, b.last_line), (4, 21));
    assert_eq!(b.num_prompts, Some(3000));
    assert_eq!(b.backend.as_deref(), Some("sglang"));
    assert_eq!(b.request_rate.as_deref(), Some("inf"));
    assert_eq!(b.request_rate_per_s(), None);
    assert_eq!(b.max_concurrency, None);
    assert_eq!(b.successful_requests, Some(1648));
    assert_eq!(b.requested(), Some(3000));
    assert_eq!(b.failed(), Some(1352));
    assert!(close(b.duration_s, 170.41));
    assert_eq!(b.total_input_tokens, Some(369_103));
    assert_eq!(b.total_generated_tokens, Some(326_408));
    assert_eq!(b.total_generated_tokens_retokenized, Some(326_356));
    assert!(close(b.request_throughput, 9.67));
    assert!(close(b.output_tok_per_s, 1915.40));
    assert!(close(b.total_tok_per_s, 4081.34));
    assert!(close(b.e2e.mean_s, 80.12693));
    assert!(close(b.e2e.median_s, 81.16044));
    assert!(close(b.ttft.mean_s, 44.2948));
    assert!(b.other.is_empty(), "{:?}", b.other);
}

#[test]
fn rate_330_with_concurrency_and_p99() {
    let b = &read("real/bench/002-i8285-sglang-ttft-unstable-rate330.txt")[0];
    assert_eq!(b.request_rate_per_s(), Some(330.0));
    assert_eq!(b.max_concurrency, Some(330));
    assert_eq!(b.successful_requests, Some(660));
    assert_eq!(b.num_prompts, None);
    assert_eq!(b.failed(), None);
    assert!(close(b.output_tok_per_s, 12195.89));
    assert!(close(b.concurrency, 315.98));
    assert!(close(b.ttft.mean_s, 2.53344));
    assert!(close(b.ttft.p99_s, 6.00216));
    assert!(close(b.itl.mean_s, 0.02346));
    assert!(close(b.itl.median_s, 0.02282));
    assert_eq!(b.mean_completion_tokens(), Some(1024.0));
    assert_eq!(b.mean_prompt_tokens(), Some(1024.0));
}

#[test]
fn vllm_block_with_failed_requests() {
    // 004: vLLM's `bench serve` prints the same title with `Failed requests` and
    // `Maximum request concurrency`; the sub-header spells `Inter-token`.
    let b = &read("real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt")[0];
    assert_eq!(b.successful_requests, Some(100));
    assert_eq!(b.failed_requests, Some(0));
    assert_eq!(b.requested(), Some(100));
    assert_eq!(b.failed(), Some(0));
    assert_eq!(b.max_concurrency, Some(10));
    assert!(close(b.output_tok_per_s, 93.08));
    assert!(close(b.peak_output_tok_per_s, 130.0));
    assert!(close(b.peak_concurrent_requests, 20.0));
    assert!(close(b.tpot.mean_s, 0.08122));
    assert!(close(b.tpot.p99_s, 0.1028));
    assert!(close(b.itl.mean_s, 0.08122));
}

#[test]
fn newer_fields_unpadded() {
    // 005: values not right-padded; `Total input text tokens` has no typed field and is kept;
    // the vision tokens are typed (issue 29: TTFT with images is encoding too).
    let b = &read("real/bench/005-pr17216-sglang-decode-offload-16k-peak-fields.txt")[0];
    assert_eq!(b.successful_requests, Some(128));
    assert_eq!(b.request_rate_per_s(), Some(5.0));
    assert_eq!(b.max_concurrency, Some(256));
    assert!(close(b.output_tok_per_s, 296.37));
    assert!(close(b.peak_output_tok_per_s, 630.0));
    assert!(close(b.concurrency, 103.47));
    assert!(close(b.ttft.mean_s, 130.2115));
    assert!(close(b.ttft.p99_s, 226.7508));
    let kept: Vec<&str> = b.other.iter().map(|f| f.label.as_str()).collect();
    assert_eq!(kept, ["Total input text tokens"]);
    assert_eq!(b.total_input_vision_tokens, Some(0));
    assert_eq!(b.other[0].value, "2048000");
    assert_eq!(b.other[0].line_no, 8);
}

#[test]
fn dsv3_5000_prompts() {
    let b = &read("real/bench/007-pr2643-v0.4.1post2-dsv3-sharegpt5k.txt")[0];
    assert_eq!(b.num_prompts, Some(5000));
    assert_eq!(b.successful_requests, Some(5000));
    assert_eq!(b.failed(), Some(0));
    assert!(close(b.output_tok_per_s, 2673.55));
    assert!(close(b.e2e.mean_s, 196.52846));
}

#[test]
fn multi_turn_summary_in_seconds() {
    // 008: the multi-turn benchmark's summary; latencies in seconds, rates with unit words.
    let b = read("real/bench/008-i26886-hicache-bench-multiturn-summary.txt");
    assert_eq!(b.len(), 1);
    let b = &b[0];
    assert_eq!(b.tool, BenchTool::MultiTurnSummary);
    assert_eq!(b.total_requests, Some(75));
    assert_eq!(b.request_rate_per_s(), Some(10.0));
    assert!(close(b.mean_prompt_tokens, 30200.0));
    assert!(close(b.mean_output_tokens, 100.0));
    assert!(close(b.ttft.mean_s, 38.35));
    assert!(close(b.ttft.p90_s, 69.55));
    assert!(close(b.ttft.max_s, 75.76));
    assert!(close(b.itl.mean_s, 0.1196));
    assert!(close(b.e2e.mean_s, 50.19));
    assert!(close(b.input_tok_per_s, 7698.36));
    assert!(close(b.output_tok_per_s, 25.49));
    assert!(close(b.request_throughput, 0.25));
    assert!(close(b.cache_hit_rate, 0.668874));
    // P90/P99 prompt and output lengths have no typed field: kept.
    assert_eq!(b.other.len(), 4);
    // The `#Input tokens:` lines after the summary are not part of it.
    assert_eq!(b.last_line, b.first_line + 26);
}

/// `(file, [(successful, output tok/s, mean TTFT s, mean TPOT s, accept length)])` of the
/// real-long CI logs, two benchmark runs each.
#[test]
fn ci_logs_hold_two_runs_each() {
    type Row = (u64, f64, f64, f64, Option<f64>);
    let cases: [(&str, [Row; 2]); 4] = [
        (
            "ascend-dsr1-dp16-mtp-mixed.log",
            [
                (1024, 4010.45, 15.30695, 0.04823, Some(2.83)),
                (1024, 4463.89, 11.96105, 0.04473, Some(2.86)),
            ],
        ),
        (
            "ascend-dsr1-pd-client-router.log",
            [
                (3328, 11109.89, 12.36827, 0.04585, Some(2.60)),
                (3328, 13348.10, 4.70819, 0.04030, Some(2.61)),
            ],
        ),
        (
            "ascend-qwen3-30b-tp2-eagle3-highload.log",
            [
                (624, 2339.73, 3.42910, 0.05112, Some(2.69)),
                (624, 2988.04, 3.33681, 0.04550, Some(2.69)),
            ],
        ),
        (
            "ascend-qwen3next-80b-hybrid-mamba.log",
            [
                (320, 1369.37, 10.81448, 0.05122, None),
                (320, 1410.24, 9.84860, 0.05017, None),
            ],
        ),
    ];
    for (file, rows) in cases {
        let path = data_dir().join("real-long").join(file);
        let blocks = read(&format!("real-long/{file}"));
        assert_eq!(blocks.len(), 2, "{file}");
        for (b, (ok, out, ttft, tpot, accept)) in blocks.iter().zip(rows) {
            assert_eq!(b.successful_requests, Some(ok), "{file}");
            assert_eq!(b.num_prompts, Some(ok), "{file}: --num-prompts");
            assert_eq!(b.failed(), Some(0), "{file}");
            assert!(close(b.output_tok_per_s, out), "{file}");
            assert!(close(b.ttft.mean_s, ttft), "{file}");
            assert!(close(b.tpot.mean_s, tpot), "{file}");
            assert_eq!(b.accept_length.is_some(), accept.is_some(), "{file}");
            if let Some(a) = accept {
                assert!(close(b.accept_length, a), "{file}");
            }
            // Every line of the block was typed or kept.
            assert!(
                b.other.iter().all(|f| f.label.starts_with("Total input")),
                "{file}: {:?}",
                b.other
            );
        }
        // Fed through the log reader's messages, the same blocks come out.
        let mut c = sglang_log::BenchCollector::new();
        LogReader::open(&path)
            .expect("open")
            .for_each(|r| c.push(r.line_no, r.message))
            .expect("read");
        assert_eq!(c.finish(), blocks, "{file}");
    }
}

#[test]
fn text_without_a_block_has_none() {
    let text = std::fs::read_to_string(data_dir().join("real-long/ascend-dsr1-pd-decode-dp32.log"))
        .expect("log");
    assert!(parse_bench_summaries(&text).is_empty());
    assert!(parse_bench_summaries("").is_empty());
    // A title alone (a paste cut right after it) is a block with nothing in it.
    let b = parse_bench_summaries("==== Serving Benchmark Result ====\n");
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].successful_requests, None);
}

#[test]
fn the_client_that_printed_the_block() {
    use sglang_log::BenchClient;
    // 003: SGLang's block opens with `Backend: sglang-oai` (line 3).
    let b = &read("real-3/bench/003-achatbot-pr183-gpt-oss-20b-h100-sglang-oai.txt")[0];
    assert_eq!(b.client, BenchClient::SglangBenchServing);
    assert_eq!(b.max_concurrency, Some(4));
    // 004: no `Backend:`; `Failed requests` and `Maximum request concurrency` are vLLM's.
    let b = &read("real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt")[0];
    assert_eq!(b.client, BenchClient::VllmBenchServe);
    // 008: the multi-turn summary is SGLang's own benchmark.
    let b = &read("real/bench/008-i26886-hicache-bench-multiturn-summary.txt")[0];
    assert_eq!(b.client, BenchClient::SglangMultiTurn);
}

#[test]
fn vllm_prints_its_settings_before_the_block() {
    use sglang_log::BenchClient;
    // 103: `Traffic request rate: inf` and `Maximum request concurrency: 10` (lines 1-2) come
    // before the title (line 3): they are the settings of the block that follows.
    let b = read("real-4/bench/103-NEGATIVE-vllm-i9722-benchmark-serving-conc10-tiny-output.txt");
    assert_eq!(b.len(), 1);
    let b = &b[0];
    assert_eq!(b.client, BenchClient::VllmBenchServe);
    assert_eq!(b.request_rate.as_deref(), Some("inf"));
    assert_eq!(b.max_concurrency, Some(10));
    assert_eq!(b.first_line, 3);
    assert_eq!(b.successful_requests, Some(100));
    assert_eq!(b.total_generated_tokens, Some(746));
    // 006: `Traffic request rate: 15.0 RPS.` with `Burstiness factor` between (lines 3-5).
    let b = &read("real-3/bench/006-kvcached-i136-vllm-benchmark-goodput-percentiles.txt")[0];
    assert_eq!(b.client, BenchClient::VllmBenchServe);
    assert_eq!(b.request_rate_per_s(), Some(15.0));
    assert_eq!(b.max_concurrency, Some(100));
    // No preamble carried past its block: a second block without one has none.
    let two = parse_bench_summaries(
        "Traffic request rate: inf\n============ Serving Benchmark Result ============\n\
         Successful requests: 1\n==================================================\n\
         ============ Serving Benchmark Result ============\nSuccessful requests: 2\n",
    );
    assert_eq!(two[0].request_rate.as_deref(), Some("inf"));
    assert_eq!(two[1].request_rate, None);
    assert_eq!(two[1].client, BenchClient::Unknown);
}
