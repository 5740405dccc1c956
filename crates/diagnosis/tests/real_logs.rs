//! The diagnosis on real logs from public bug reports (`tests/data/real*/`, see `SOURCES.tsv`):
//! the peaks and the verdict that a careful engineer reads from each file (the `expected` column).

use std::path::{Path, PathBuf};

use diagnosis::{Bottleneck, EvidenceBuilder, FindingKind, Report};
use sglang_log::LogReader;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

fn diagnose(rel: &str) -> Report {
    let path = data(rel);
    let mut b = EvidenceBuilder::new();
    let id = b.add_source(rel);
    let mut reader = LogReader::open(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let stats = reader
        .for_each(|r| b.push(id, r))
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    b.finish_source(id, &stats);
    diagnosis::diagnose(&b.build())
}

fn peak_running(r: &Report) -> Option<u64> {
    r.schedulers.iter().filter_map(|s| s.peak_running).max()
}
fn peak_queued(r: &Report) -> Option<u64> {
    r.schedulers.iter().filter_map(|s| s.peak_queued).max()
}
fn peak_usage(r: &Report) -> Option<f64> {
    r.schedulers
        .iter()
        .filter_map(|s| s.peak_token_usage)
        .reduce(f64::max)
}

/// (file, peak running, peak queued, peak token usage, verdict), from SOURCES.tsv's `expected`.
const CASES: &[(&str, u64, u64, f64, Bottleneck)] = &[
    (
        "real/001-i938-a100-llama13b-queue12k.log",
        1010,
        12279,
        0.93,
        Bottleneck::KvCacheBound,
    ),
    (
        "real/002-i3909-throughput-steadily-decreases.log",
        8,
        0,
        0.13,
        Bottleneck::ClientBound,
    ),
    (
        "real/005-pr22166-mixed-prefill-decode-uvicorn.log",
        32,
        0,
        0.08,
        Bottleneck::ClientBound,
    ),
    (
        "real/007-i10053-single-user-chat-prefix-cache.log",
        1,
        0,
        0.00,
        Bottleneck::ClientBound,
    ),
    (
        "real/008-i14972-overlap-retract-alloc-fail.log",
        6,
        5,
        0.94,
        Bottleneck::KvCacheBound,
    ),
    (
        "real/010-pr34924-dflash-swa-accept-cap-len.log",
        1,
        0,
        0.00,
        Bottleneck::ClientBound,
    ),
    (
        "real/013-i26248-swa-retraction-collapse.log",
        4,
        3,
        1.00,
        Bottleneck::KvCacheBound,
    ),
    (
        "real/016-pr30393-hicache-pd-decode-mtp-transfer.log",
        3,
        0,
        0.54,
        Bottleneck::ClientBound,
    ),
    (
        "real/017-i3243-amd-rx7900xtx-rocm.log",
        1,
        0,
        0.00,
        Bottleneck::ClientBound,
    ),
    (
        "real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log",
        92,
        990,
        0.92,
        Bottleneck::KvCacheBound,
    ),
    (
        "real/022-pr6081-mtp-dp-attention-8ranks.log",
        8,
        0,
        0.13,
        Bottleneck::ClientBound,
    ),
    (
        "real/023-pr17392-dp-ep-decode-prealloc-generate.log",
        11,
        0,
        0.01,
        Bottleneck::ClientBound,
    ),
    (
        "real/026-i6901-docker-compose-prefix-prefill.log",
        10,
        56,
        0.09,
        Bottleneck::PrefillBound,
    ),
    (
        "real/034-i2255-cache-hit-rate-field-chunked-prefill.log",
        75,
        130,
        0.12,
        Bottleneck::PrefillBound,
    ),
    (
        "real/038-i11948-eagle3-single-gpu-accept-len.log",
        1,
        0,
        0.00,
        Bottleneck::ClientBound,
    ),
    (
        "real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log",
        2,
        0,
        1.00,
        Bottleneck::KvCacheBound,
    ),
    (
        "real/053-i3186-h200-llama8b-single-prefill-line-cache-hit.log",
        28,
        0,
        0.02,
        Bottleneck::ClientBound,
    ),
    (
        "real/056-openclaw-rl-i44-ray-sglangengine-prefix.log",
        6,
        0,
        0.04,
        Bottleneck::ClientBound,
    ),
    (
        "real/061-pr7481-dsr1-fp4-tp8-b200-single-stream.log",
        1,
        0,
        0.00,
        Bottleneck::ClientBound,
    ),
    (
        "real-long/rtx4090-qwen3-4b-kv-retraction.log",
        68,
        59,
        1.00,
        Bottleneck::KvCacheBound,
    ),
    (
        "real-long/ascend-dsr1-pd-decode-maxrun2-queued.log",
        2,
        41,
        0.87,
        Bottleneck::RunningCapBound,
    ),
    (
        "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
        80,
        63,
        0.89,
        Bottleneck::RunningCapBound,
    ),
    // v0.1 `new fill batch` lines drain a burst of arrivals (#remaining_req 4, 3, 2, 1, 0 in one
    // second); the decode stats line reads #queue-req 0: low load, not a conservative scheduler.
    (
        "real/028-i393-v0.1-new-fill-batch-legacy.log",
        5,
        4,
        0.24,
        Bottleneck::ClientBound,
    ),
    // SOURCES gives 156 from Decode lines; Prefill lines reach 161 (running + new requests).
    (
        "real-long/ascend-qwen3-30b-tp2-eagle3-highload.log",
        161,
        134,
        0.92,
        Bottleneck::ClientBound,
    ),
];

#[test]
fn peaks_and_verdicts_match_the_expected_column() {
    let mut failures = Vec::new();
    for &(file, running, queued, usage, verdict) in CASES {
        let r = diagnose(file);
        let got = (
            peak_running(&r),
            peak_queued(&r),
            peak_usage(&r),
            r.bottleneck,
        );
        let ok = got.0 == Some(running)
            && got.1 == Some(queued)
            && got.2.map(|u| (u - usage).abs() < 1e-9).unwrap_or(false)
            && got.3 == verdict;
        if !ok {
            failures.push(format!(
                "{file}: expected ({running}, {queued}, {usage}, {verdict:?}), got {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn retraction_only_excerpt_is_kv_bound_with_ranks_deduplicated() {
    // 043: every TP rank of the second node prints the same retraction line.
    let r = diagnose("real/043-i4184-dsr1-2node-tp16-decode-oom-retract.log");
    assert_eq!(r.retractions.lines, 11);
    assert_eq!(r.retractions.events, 2);
    assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);
    assert!(r.findings.iter().any(|f| f.kind == FindingKind::Retraction));
}

#[test]
fn watchdog_timeout_is_a_stall() {
    let r = diagnose("real/049-i3752-watchdog-timeout-tp8-with-top.log");
    assert_eq!(r.bottleneck, Bottleneck::Stall);
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::WatchdogTimeout)
        .expect("watchdog finding");
    assert!(f.figures[0].value.unwrap_or(0.0) >= 1.0);
}

#[test]
fn watchdog_pyspy_dump_is_a_stall() {
    // 052 (SOURCES.tsv): "no decode progress for >3 min: hang, not a throughput regime". The
    // excerpt holds two decode lines at 3.3 tok/s and the watchdog's py-spy dump of the hung
    // schedulers (`_watchdog_thread` -> `pyspy_dump_schedulers`).
    let r = diagnose("real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log");
    assert_eq!(r.bottleneck, Bottleneck::Stall);
    assert_eq!(r.findings[0].kind, FindingKind::WatchdogTimeout);
    assert!(
        !r.findings
            .iter()
            .any(|f| f.kind == FindingKind::DecodeComputeBound)
    );
}

#[test]
fn pd_prefill_stuck_in_preallocation() {
    let r = diagnose("real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log");
    assert_eq!(r.bottleneck, Bottleneck::PdTransferBound);
}

#[test]
fn prometheus_dump_has_no_scheduler_lines() {
    let r = diagnose("real/040-pr7944-prometheus-metrics-pd.log");
    assert_eq!(r.bottleneck, Bottleneck::NoSchedulerLines);
    assert!(r.schedulers.is_empty());
    assert!(
        r.not_concluded
            .iter()
            .any(|n| n.text.contains("No SGLang scheduler lines"))
    );
}

#[test]
fn idle_window_artifact_is_named() {
    // 017: the first gen throughput (3.50 tok/s) is a warm-up window, steady ~28 tok/s.
    let r = diagnose("real/017-i3243-amd-rx7900xtx-rocm.log");
    assert!(
        r.findings
            .iter()
            .any(|f| f.kind == FindingKind::IdleWindowArtifact)
    );
}

#[test]
fn batches_beyond_the_cuda_graph_size_are_flagged() {
    // rtx4090: batches > 24 requests run with `cuda graph: False`.
    let r = diagnose("real-long/rtx4090-qwen3-4b-kv-retraction.log");
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::NoCudaGraph)
        .expect("no-graph finding");
    let max_with_graph = f
        .figures
        .iter()
        .find(|g| g.name.starts_with("largest batch"))
        .and_then(|g| g.value);
    assert_eq!(max_with_graph, Some(24.0));
    assert_eq!(r.retractions.lines, 20);
}

#[test]
fn every_real_log_yields_a_report() {
    for dir in ["real", "real-long"] {
        for entry in std::fs::read_dir(data(dir)).expect("data dir") {
            let path = entry.expect("entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("log") {
                continue;
            }
            let rel = format!(
                "{dir}/{}",
                path.file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
            );
            let r = diagnose(&rel);
            assert!(!r.headline.text.is_empty(), "{rel}");
            assert_eq!(r.inputs.len(), 1);
            assert!(r.inputs[0].lines > 0, "{rel}");
        }
    }
}

#[test]
fn scenario_b2_is_kv_bound_with_steady_throughput() {
    let r = diagnose("scenarios/kimi-k25-b2/server.log");
    assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);
    assert_eq!(r.capacity.max_total_num_tokens, Some(116_171));
    assert_eq!(r.capacity.mem_fraction_static, Some(0.85));
    let t = r.steady_gen_throughput.as_ref().expect("steady throughput");
    // ~729 tok/s over the steady span (the regenerated run: retracted requests keep their
    // generated tokens; the report prints 729 [721, 738]).
    assert!((t.value - 729.1).abs() < 5.0, "{}", t.value);
    let s = &r.schedulers[0];
    assert_eq!(s.peak_running, Some(76));
    assert_eq!(s.peak_queued, Some(131));
    assert_eq!(s.running.median, Some(42.0));
    // ramp of ~2 minutes excluded
    let span = s.span.as_ref().expect("span");
    let ramp = span.steady_start_s - span.start_s;
    assert!((60.0..=300.0).contains(&ramp), "ramp {ramp}");
}

#[test]
fn decode_slow_per_request_is_decode_compute_bound() {
    // 058: 128 running on an NPU with graphs disabled, 14.47 tok/s in all (0.11 tok/s per request).
    let r = diagnose("real/058-pr29853-npu-grok2-128running-14tps-no-graph.log");
    assert_eq!(r.bottleneck, Bottleneck::DecodeComputeBound);
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::DecodeComputeBound)
        .expect("finding");
    let per_req = f.figures[0].value.expect("value");
    assert!((per_req - 14.47 / 128.0).abs() < 0.02, "{per_req}");
    assert_eq!(peak_running(&r), Some(128));
}

/// Diagnose in-memory parts as if each were a file of its own.
fn diagnose_parts(parts: &[(&str, &[u8])]) -> Report {
    let mut b = EvidenceBuilder::new();
    for (name, bytes) in parts {
        let id = b.add_source(*name);
        let stats = LogReader::from_reader(*name, *bytes)
            .for_each(|r| b.push(id, r))
            .expect("read");
        b.finish_source(id, &stats);
    }
    diagnosis::diagnose(&b.build())
}

#[test]
fn a_log_given_twice_is_counted_once_and_rotated_parts_are_joined() {
    let text = std::fs::read(data("scenarios/kimi-k25-b2/server.log")).expect("log");
    let r = diagnose_parts(&[("a.log", &text), ("a-copy.log", &text)]);
    assert_eq!(r.schedulers.len(), 1);
    assert!(
        r.sources
            .iter()
            .any(|s| s.contains("a-copy.log repeats a.log")),
        "{:?}",
        r.sources
    );
    let t = r.steady_gen_throughput.expect("tput").value;
    assert!((t - 727.2).abs() < 5.0, "{t}");

    // the same log cut in two at a line boundary: one scheduler, same figures
    let cut = text
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == b'\n')
        .nth(3000)
        .map(|(i, _)| i + 1)
        .expect("cut");
    let r = diagnose_parts(&[("part1.log", &text[..cut]), ("part2.log", &text[cut..])]);
    assert_eq!(r.schedulers.len(), 1);
    assert!(
        r.sources
            .iter()
            .any(|s| s.contains("part2.log continues part1.log")),
        "{:?}",
        r.sources
    );
    assert_eq!(r.schedulers[0].decode_lines, 3189);
    assert_eq!(r.schedulers[0].running.median, Some(42.0));
}

#[test]
fn interleaved_prefills_cost_decode_throughput() {
    // DP-attention ranks that mix prefill and decode: intervals with a prefill run at ~214 tok/s
    // against ~332 without, 13.6% of decode throughput over the run.
    let r = diagnose("real-long/ascend-dsr1-dp16-mtp-mixed.log");
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::PrefillInterference)
        .expect("finding");
    let loss = f.figures[0].value.expect("loss");
    assert!((loss - 0.136).abs() < 0.005, "{loss}");
    // The founding scenario's prefills are short: no such finding there.
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    assert!(
        !b2.findings
            .iter()
            .any(|f| f.kind == FindingKind::PrefillInterference)
    );
}

#[test]
fn ramp_only_excerpts_say_so_in_the_headline() {
    // SOURCES.tsv: 035 "ramp-up: queue 186->120, running 0->74 ... Transient ramp, not steady
    // state"; 055 "queue 38->18; running ->21"; 041 "queue 114->53; running 0->64 ... Ramp-up".
    // A warm-up request before the burst (035, 055) does not hide the ramp.
    for (file, from) in [
        (
            "real/035-pr13023-prefill-burst-with-benchmark-marker.log",
            "running 4 → 74, queue 186 → 120",
        ),
        (
            "real/055-i1612-engine-generate-offline-tqdm-time-only.log",
            "running 1 → 21, queue 38 → 18",
        ),
        (
            "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log",
            "queue 114 → 53",
        ),
    ] {
        let r = diagnose(file);
        assert!(
            r.findings.iter().any(|f| f.kind == FindingKind::RampOnly),
            "{file}"
        );
        assert!(
            r.headline
                .text
                .contains("This log holds only the ramp-up of a burst (")
                && r.headline.text.contains(from),
            "{file}: {}",
            r.headline.text
        );
    }
    // A long steady run is not a ramp, nor one that reaches its ceiling and stays there.
    for file in [
        "scenarios/kimi-k25-b2/server.log",
        "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
    ] {
        let r = diagnose(file);
        assert!(
            !r.findings.iter().any(|f| f.kind == FindingKind::RampOnly),
            "{file}"
        );
    }
}

#[test]
fn one_long_prompt_prefilled_at_tens_of_tokens_per_second() {
    // 037 (SOURCES.tsv): "running 0, queue 0, usage 0.01/0.02; input throughput ~46 tok/s.
    // Prefill compute-bound on CPU-offloaded MoE ... nothing to do with KV or scheduling."
    let r = diagnose("real/037-llama-benchy-i15-swa-prefill-slow-46tps.log");
    assert_eq!(r.bottleneck, Bottleneck::PrefillComputeBound);
    assert_eq!(
        r.headline.text,
        "Prefill compute bound: 2048-token prefill chunks take ~44 s each (~47 tok/s) with nothing queued."
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::PrefillComputeBound)
        .expect("finding");
    // Lines at 12:50:14, 12:50:58, 12:51:43, 12:52:27, 12:53:11, 12:53:56: gaps 44, 45, 44,
    // 44, 45 s; the median pair is 2048 tokens / 44 s.
    let fig = |name: &str| {
        f.figures
            .iter()
            .find(|g| g.name == name)
            .and_then(|g| g.value)
    };
    assert_eq!(fig("seconds per chunk"), Some(44.0));
    assert_eq!(fig("prefill chunk"), Some(2048.0));
    assert!((fig("prefill speed").expect("speed") - 2048.0 / 44.0).abs() < 1e-9);
    assert_eq!((f.evidence[0].first_line, f.evidence[0].last_line), (1, 6));
}

#[test]
fn page_granular_token_count_is_not_a_stall() {
    // 013: an SWA model's #token moves in page steps; over 1 s it repeats while every line
    // still logs ~429 tok/s. That is counting, not a hang.
    let r = diagnose("real/013-i26248-swa-retraction-collapse.log");
    assert!(
        !r.findings.iter().any(|f| f.kind == FindingKind::Stall),
        "{:?}",
        r.findings.iter().map(|f| &f.title).collect::<Vec<_>>()
    );
}

#[test]
fn client_bound_says_how_many_more_requests_fit() {
    // Ascend Qwen3-30B (SOURCES.tsv): "client-concurrency bound (156 < 192 cap)"; token usage
    // median 0.83 over the measured run's steady span: the KV cache (at 0.95) stops ~22 more
    // before the cap of 192 would.
    let r = diagnose("real-long/ascend-qwen3-30b-tp2-eagle3-highload.log");
    assert_eq!(r.bottleneck, Bottleneck::ClientBound);
    let rec = &r.recommendations[0];
    assert!(rec.action.starts_with("Send more requests at once"));
    assert!(
        rec.expected_gain.contains("~155 requests run at token usage ~0.83 (p90 0.88); about 22 more could run at once before the KV cache stops them"),
        "{}",
        rec.expected_gain
    );
}

#[test]
fn pd_prefill_instance_is_named_with_its_prefill_rate() {
    // The Ascend PD prefill node (disaggregation_mode='prefill', DP2): running stays 0 by design.
    let r = diagnose("real-long/ascend-dsr1-pd-prefill-dp2.log");
    assert!(
        r.headline.text.ends_with(
            "This is a PD prefill instance: it runs no decode (its running count stays near 0), so its work is prefill: 11920768 new prompt tokens, ~11739 tok/s over its lines."
        ),
        "{}",
        r.headline.text
    );
}

#[test]
fn a_prefill_budget_below_one_prompt_admits_one_request_per_pass() {
    // Ascend DP16: max_prefill_tokens=1500, chunked prefill off, every prompt 2176 tokens. The
    // verdict is the running cap (16 per DP rank, the client's 256 = 16 x 16: SOURCES.tsv), and
    // the one-request-per-pass prefill is its own finding.
    let r = diagnose("real-long/ascend-dsr1-dp16-mtp-mixed.log");
    assert_eq!(r.bottleneck, Bottleneck::RunningCapBound);
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::PrefillBound)
        .expect("prefill finding");
    assert!(
        f.detail
            .starts_with("max_prefill_tokens (1500) is below one prompt (~2176 tokens)"),
        "{}",
        f.detail
    );
}

#[test]
fn cap_bound_hybrid_model_names_the_full_mamba_slots() {
    // Qwen3-Next on Ascend (SOURCES.tsv): "mamba usage 1.00 in 298/301 decode lines (state slots
    // exhausted = cap)"; max_running_requests 80 and the benchmark's limit 80.
    let r = diagnose("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    assert_eq!(r.bottleneck, Bottleneck::RunningCapBound);
    let f = &r.findings[0];
    assert!(
        f.detail.contains("Mamba usage reaches 1.00"),
        "{}",
        f.detail
    );
    assert!(f.detail.contains("raise both together"), "{}", f.detail);
    let limit = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::BenchmarkConcurrencyLimit)
        .expect("limit finding");
    assert!(
        limit
            .detail
            .contains("max_running_requests is 80, the same as the limit")
    );
}

#[test]
fn a_watchdog_without_batch_lines_says_the_scheduler_hung() {
    // 049: the watchdog fired; no batch line shows requests running.
    let r = diagnose("real/049-i3752-watchdog-timeout-tp8-with-top.log");
    assert!(
        r.headline
            .text
            .starts_with("Stall: the scheduler watchdog fired"),
        "{}",
        r.headline.text
    );
}

#[test]
fn graphs_switched_off_are_named_as_such() {
    // The RDNA4 log's server_args hold disable_cuda_graph=True: raising --cuda-graph-max-bs
    // would do nothing.
    let r = diagnose("real-long/rdna4-2xr9700-qwen3coder-tp2-single-stream.log");
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::NoCudaGraph)
        .expect("graph finding");
    assert!(
        f.detail.contains("Remove --disable-cuda-graph"),
        "{}",
        f.detail
    );
    assert!(!f.detail.contains("Raise --cuda-graph-max-bs"));
}
