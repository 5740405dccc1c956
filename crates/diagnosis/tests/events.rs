//! Events reach the headline (issue 11, pattern 7) and benchmark artifacts are named
//! (pattern 13): the whole pipeline on the real files, the headline and its typed facts.

use diagnosis::EvidenceBuilder;
use diagnosis::report::{Bottleneck, FindingKind, Report, StartupStep};
use sglang_log::LogReader;
use std::path::PathBuf;

fn diagnose(rel: &str) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel);
    let mut b = EvidenceBuilder::new();
    let id = b.add_source(rel);
    let stats = LogReader::open(&path)
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .for_each(|r| b.push(id, r))
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    b.finish_source(id, &stats);
    diagnosis::diagnose(&b.build())
}

fn has(r: &Report, kind: FindingKind) -> bool {
    r.findings.iter().any(|f| f.kind == kind)
}

/// 107 (SOURCES.tsv): "OOM at weight init, not a KV-pool problem … Lowering
/// mem_fraction_static … cannot fix this".
#[test]
fn oom_at_weight_load_is_the_headline() {
    let r = diagnose("real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log");
    assert_eq!(r.bottleneck, Bottleneck::OutOfMemory);
    let i = r.headline.incident.as_ref().expect("incident");
    assert_eq!(i.exception.as_deref(), Some("torch.OutOfMemoryError"));
    assert_eq!(i.step, None);
    assert_eq!(
        i.frame.as_ref().map(|f| f.function.as_str()),
        Some("create_weights")
    );
    assert!(
        r.headline.text.starts_with(
            "Out of memory at weight load: not a KV pool problem; lowering mem_fraction_static cannot fix it"
        ),
        "{}",
        r.headline.text
    );
    assert_eq!(r.findings[0].kind, FindingKind::OutOfMemory);
}

/// 052: the only py-spy dump after the watchdog is the DP controller's, idle in `join` on its
/// scheduler processes (lines 3-17): the headline says so, and does not call that the hang.
#[test]
fn the_watchdog_headline_does_not_blame_a_parent_waiting_on_its_children() {
    let r = diagnose("real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log");
    assert_eq!(r.bottleneck, Bottleneck::Stall);
    let i = r.headline.incident.as_ref().expect("incident");
    assert_eq!(
        i.process.as_deref(),
        Some("sglang::data_parallel_controller")
    );
    assert_eq!(i.frame.as_ref().map(|f| f.function.as_str()), Some("poll"));
    assert!(i.waits_on_children);
    assert_eq!(r.findings[0].kind, FindingKind::WatchdogTimeout);
}

/// 062 (SOURCES.tsv): "capacity facts: 1,339,395 KV tokens per rank …, max_running_requests
/// 4096, context 131072".
#[test]
fn startup_lines_only_get_a_capacity_verdict() {
    let r = diagnose("real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log");
    assert_eq!(r.bottleneck, Bottleneck::StartupOnly);
    let s = r.headline.startup.expect("startup");
    assert_eq!(
        (s.pool_tokens, s.max_running_requests, s.context_len),
        (Some(1_339_395), Some(4096), Some(131_072))
    );
    assert!(has(&r, FindingKind::StartupIncomplete));
    assert!(!has(&r, FindingKind::CudaGraphCoverage));
}

/// 120 (SOURCES.tsv): "decode CUDA graphs cover bs<=32 while the scheduler may admit 4096
/// requests and the pool holds 2.98M tokens".
#[test]
fn graphs_for_32_of_4096_requests_at_startup() {
    let r = diagnose("real-2/120-i33483-l40-startup-cuda-graph-max-bs32-vs-max-running-4096.log");
    assert_eq!(r.bottleneck, Bottleneck::StartupOnly);
    let s = r.headline.startup.expect("startup");
    assert_eq!(
        (s.pool_tokens, s.max_running_requests, s.graph_max_bs),
        (Some(2_980_168), Some(4096), Some(32))
    );
    assert!(has(&r, FindingKind::CudaGraphCoverage));
    assert!(
        r.headline
            .text
            .contains("decode CUDA graphs cover batches up to 32 only"),
        "{}",
        r.headline.text
    );
}

/// bench/104 (SOURCES.tsv): "client-side measurement artifact … latency/ITL figures are
/// invalid, only request throughput 3.77 req/s is usable. Not a server bottleneck."
#[test]
fn a_benchmark_that_did_not_stream_is_not_queueing() {
    let r = diagnose("real-2/bench/104-sglang-dlora-repo-rate2-itl-zero-retokenized-mismatch.txt");
    assert_eq!(r.bottleneck, Bottleneck::NoSchedulerLines);
    assert!(r.headline.benchmark_not_streamed);
    assert_eq!(r.findings[0].kind, FindingKind::BenchmarkNotStreamed);
    assert!(!has(&r, FindingKind::BenchmarkQueueing));
    assert!(
        r.headline
            .text
            .contains("996 requests succeeded at 3.77 req/s"),
        "{}",
        r.headline.text
    );
}

/// A log with batch lines keeps its scheduler verdict; the startup step is still read.
#[test]
fn events_do_not_override_a_served_log() {
    let r = diagnose("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log");
    assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);
    assert!(r.headline.incident.is_none() && r.headline.startup.is_none());
    let _ = StartupStep::Serving;
}

/// real-3/012: a PD decode server whose KV transfers failed on two TP ranks, no batch line:
/// the failures are the verdict, not "no scheduler lines".
#[test]
fn failed_kv_transfers_are_the_verdict() {
    let r = diagnose("real-3/012-i10560-pd-mooncake-decode-transfer-failed.log");
    assert_eq!(r.bottleneck, Bottleneck::KvTransferFailed);
    let i = r.headline.incident.as_ref().expect("incident");
    assert_eq!(i.count, Some(2));
    assert!(!i.after_serving);
    assert!(
        r.headline
            .text
            .starts_with("KV transfers failed: 2 failure lines (all ranks), the first: "),
        "{}",
        r.headline.text
    );
    assert!(has(&r, FindingKind::KvTransferFailure));
}

/// real-4/122: every decode rank at its cap of 26 with token usage 0.91-0.98, then a
/// scheduler dies inside `retract_decode`: the crash ended the run, so it is the verdict, and
/// no recommendation raises the running cap.
#[test]
fn a_crash_after_batch_lines_is_the_verdict() {
    let r = diagnose("real-4/122-npu-pd-decode-dp32-cap26-usage-near-full-096.log");
    assert_eq!(r.bottleneck, Bottleneck::SchedulerCrashed);
    let i = r.headline.incident.as_ref().expect("incident");
    assert!(i.after_serving);
    assert_eq!(
        i.frame.as_ref().map(|f| f.function.as_str()),
        Some("retract_decode")
    );
    assert!(
        r.headline.text.contains("while serving"),
        "{}",
        r.headline.text
    );
    assert!(
        r.recommendations
            .iter()
            .all(|x| x.kind != diagnosis::report::RecommendationKind::RaiseMaxRunningRequests),
        "{:?}",
        r.recommendations
    );
}

fn diagnose_text(text: &str) -> Report {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("log");
    let stats = LogReader::from_reader("log", text.as_bytes())
        .for_each(|r| b.push(id, r))
        .expect("in memory");
    b.finish_source(id, &stats);
    diagnosis::diagnose(&b.build())
}

/// real-4/102: the capture's last line reads `avail_mem=11.78 GB` (line 35) and no traceback
/// follows: with that much free, out of memory is not the likely reason the capture stops;
/// at 2.00 GB free it is.
#[test]
fn a_capture_that_stops_with_room_is_not_called_out_of_memory() {
    let rel = "real-4/102-dgxspark-gb10-nvfp4-mem088-kv26k-stuck-graph-capture.log";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let r = diagnose_text(&text);
    assert_eq!(r.bottleneck, Bottleneck::StartupIncomplete);
    assert!(
        r.headline.summary.contains("out of memory is unlikely"),
        "{}",
        r.headline.summary
    );
    assert!(!r.headline.summary.contains("most often out of memory"));
    let tight = diagnose_text(&text.replace("avail_mem=11.78 GB", "avail_mem=2.00 GB"));
    assert!(
        tight.headline.summary.contains("most often out of memory"),
        "{}",
        tight.headline.summary
    );
}

/// Issue 29 item 5: no recommendation proposes what is already set. real-2/104 is KV-cache
/// bound with a 16-bit cache (`Using KV cache dtype: torch.bfloat16`, line 2): its first
/// recommendation offers an fp8 KV cache; the same log whose model runner chose an fp8 cache
/// does not.
#[test]
fn an_fp8_kv_cache_is_not_proposed_when_the_cache_is_already_fp8() {
    const LOG: &str =
        "real-2/104-hicache-mooncake-l3-llama3b-mem02-single-long-req-usage097-queue1.log";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(LOG);
    let text = std::fs::read_to_string(path).unwrap();
    let bf16 = diagnose_text(&text);
    assert_eq!(bf16.bottleneck, Bottleneck::KvCacheBound);
    let first = &bf16.recommendations[0].action;
    assert!(first.contains("or use an fp8 KV cache"), "{first}");
    let fp8 = text.replace(
        "Using KV cache dtype: torch.bfloat16",
        "Using KV cache dtype: torch.float8_e4m3fn",
    );
    let r = diagnose_text(&fp8);
    assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);
    let first = &r.recommendations[0].action;
    assert!(!first.contains("use an fp8 KV cache"), "{first}");
    assert!(first.ends_with("(the KV cache is already fp8)"), "{first}");
}

/// Issue 30 A6/A7: a server info of another server (the founding case's Kimi-K2.5: pool
/// 116,171, cap 4,096) beside the real-long rtx4090 log (Qwen3-4B, pool 87,552, cap 2,048) is
/// named as a mismatch and set aside: the report keeps the log's pool. One without the pool,
/// beside a log that prints none, is said to lack it (not "no server info was given").
#[test]
fn a_server_info_of_another_server_is_named_and_set_aside() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real-long/rtx4090-qwen3-4b-kv-retraction.log");
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("rtx.log");
    let stats = LogReader::open(&path)
        .unwrap()
        .for_each(|r| b.push(id, r))
        .unwrap();
    b.finish_source(id, &stats);
    let ev = b.build();
    let kimi = diagnosis::ServerFacts {
        source: "kimi-server_info.json".into(),
        model_path: Some("moonshotai/Kimi-K2.5".into()),
        max_total_num_tokens: Some(116_171),
        max_running_requests: Some(4096),
        ..Default::default()
    };
    let ctx = diagnosis::Context {
        server: Some(kimi),
        ..Default::default()
    };
    let r = diagnosis::diagnose_with(&ev, &ctx);
    let note = r
        .not_concluded
        .iter()
        .find(|n| {
            matches!(
                n.reason,
                diagnosis::report::NotConcludedReason::ServerInfoDisagrees
            )
        })
        .expect("the mismatch is named");
    assert!(
        note.text
            .contains("model_path moonshotai/Kimi-K2.5 against the log's Qwen/Qwen3-4B"),
        "{}",
        note.text
    );
    assert!(
        note.text
            .contains("a KV pool of 116171 tokens against the log's 87552"),
        "{}",
        note.text
    );
    assert_eq!(r.capacity.max_total_num_tokens, Some(87_552));
    assert_eq!(r.bottleneck, diagnosis::report::Bottleneck::KvCacheBound);

    // a server info without the pool, beside lines that print none (real/019, decode lines only)
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log"),
    )
    .unwrap();
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("019.log");
    let stats = LogReader::from_reader("019.log", text.as_bytes())
        .for_each(|r| b.push(id, r))
        .unwrap();
    b.finish_source(id, &stats);
    let ctx = diagnosis::Context {
        server: Some(diagnosis::ServerFacts {
            source: "partial.json".into(),
            tp_size: Some(16),
            ..Default::default()
        }),
        ..Default::default()
    };
    let r = diagnosis::diagnose_with(&b.build(), &ctx);
    let pool = r
        .not_concluded
        .iter()
        .find(|n| matches!(n.reason, diagnosis::report::NotConcludedReason::NoPoolSize))
        .expect("no pool");
    assert!(
        pool.text
            .contains("the server info (partial.json) gives no max_total_num_tokens"),
        "{}",
        pool.text
    );
    assert!(
        !pool.text.contains("no server info was given"),
        "{}",
        pool.text
    );
}
