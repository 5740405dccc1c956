//! Every log file in `tests/data` (real bug-report excerpts, long real logs, the spec's
//! synthetic examples, both scenario server logs): no panic, the batch-marker invariant, and
//! the real values written in `tests/data/real/SOURCES.tsv` / `real-long/SOURCES.tsv`
//! (peak running requests, max token usage, max queue, retractions, …) computed over batch lines.

mod common;
use common::{data_dir, files_in};
use sglang_log::{BatchKind, Event, LogReader, ParseStats, parse_line};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MARKERS: [&[u8]; 4] = [
    b"Decode batch",
    b"Prefill batch",
    b"Prefil batch",
    b"new fill batch",
];

fn contains(h: &[u8], n: &[u8]) -> bool {
    h.windows(n.len()).any(|w| w == n)
}

fn has_marker(line: &[u8]) -> bool {
    MARKERS.iter().any(|m| contains(line, m))
}

/// What a file yields, computed independently of `ParseStats` where possible.
#[derive(Default, Debug)]
struct Summary {
    lines: u64,
    marker_lines: u64,
    batch: u64,
    prefill: u64,
    decode: u64,
    malformed: u64,
    malformed_with_marker: u64,
    other_with_marker: u64,
    partial: u64,
    by_kind: BTreeMap<&'static str, u64>,
    peak_running: Option<u64>,
    peak_running_decode: Option<u64>,
    max_usage: Option<f64>,
    max_swa_usage: Option<f64>,
    max_mamba_usage: Option<f64>,
    max_queue: Option<u64>,
    max_queue_decode: Option<u64>,
    min_gen: Option<f64>,
    max_gen: Option<f64>,
    max_input: Option<f64>,
    max_pre_alloc: Option<f64>,
    max_transfer: Option<u64>,
    max_prealloc: Option<u64>,
    min_accept_len: Option<f64>,
    max_accept_len: Option<f64>,
    retractions: u64,
    distinct_retractions: BTreeSet<(String, String)>,
    ranks: BTreeSet<String>,
    stamped: u64,
    dated: u64,
}

fn fmax(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn fmin(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn summarize(path: &Path) -> Summary {
    let data = std::fs::read(path).unwrap();
    let mut s = Summary::default();
    let mut raw_lines: Vec<&[u8]> = data.split(|&c| c == b'\n').collect();
    if raw_lines.last().is_some_and(|l| l.is_empty()) {
        raw_lines.pop();
    }
    for (i, raw) in raw_lines.iter().enumerate() {
        let rec = parse_line(raw, i as u64 + 1);
        s.lines += 1;
        let marker = has_marker(raw);
        s.marker_lines += u64::from(marker);
        *s.by_kind.entry(rec.event.name()).or_default() += 1;
        if let Some(t) = rec.timestamp {
            s.stamped += 1;
            s.dated += u64::from(t.has_date());
        }
        match &rec.event {
            Event::Batch(b) => {
                s.batch += 1;
                s.ranks.insert(rec.ranks.to_string());
                if b.broken_fields() > 0 {
                    s.partial += 1;
                }
                let decode = b.kind == BatchKind::Decode;
                if decode {
                    s.decode += 1;
                    s.peak_running_decode = s.peak_running_decode.max(b.running_req());
                    s.max_queue_decode = s.max_queue_decode.max(b.queue_req());
                    s.min_gen = fmin(s.min_gen, b.gen_throughput());
                    s.max_gen = fmax(s.max_gen, b.gen_throughput());
                } else {
                    s.prefill += 1;
                }
                s.peak_running = s.peak_running.max(b.running_req());
                s.max_queue = s.max_queue.max(b.queue_req());
                s.max_usage = fmax(s.max_usage, b.token_usage());
                s.max_swa_usage = fmax(s.max_swa_usage, b.swa_token_usage());
                s.max_mamba_usage = fmax(s.max_mamba_usage, b.mamba_usage());
                s.max_input = fmax(s.max_input, b.input_throughput());
                s.max_pre_alloc = fmax(s.max_pre_alloc, b.pre_allocated_usage());
                s.max_transfer = s.max_transfer.max(b.transfer_req());
                s.max_prealloc = s.max_prealloc.max(b.prealloc_req());
                s.min_accept_len = fmin(s.min_accept_len, b.accept_len());
                s.max_accept_len = fmax(s.max_accept_len, b.accept_len());
            }
            Event::Retraction(r) => {
                s.retractions += 1;
                let ts = rec.timestamp.map(|t| t.to_string()).unwrap_or_default();
                s.distinct_retractions.insert((ts, r.text.to_string()));
            }
            Event::Malformed { .. } => {
                s.malformed += 1;
                s.malformed_with_marker += u64::from(marker);
            }
            Event::Other => s.other_with_marker += u64::from(marker),
            _ => {}
        }
    }
    s
}

fn all_log_files() -> Vec<PathBuf> {
    let mut v = files_in("real", ".log");
    v.extend(files_in("real-long", ".log"));
    v.extend(files_in("spec-examples", ".log"));
    v.push(data_dir().join("scenarios/kimi-k25-b1/server.log"));
    v.push(data_dir().join("scenarios/kimi-k25-b2/server.log"));
    v
}

#[test]
fn every_file_keeps_the_batch_marker_invariant() {
    let files = all_log_files();
    assert!(files.len() >= 60, "found only {} log files", files.len());
    let mut total_batch = 0;
    for path in &files {
        let s = summarize(path);
        let name = path.display();
        // a line with a batch marker is a batch event or malformed, never anything else
        assert_eq!(
            s.marker_lines,
            s.batch - s.legacy_stats_lines(path) + s.malformed_with_marker,
            "{name}: {s:?}"
        );
        assert_eq!(s.other_with_marker, 0, "{name}");
        assert_eq!(
            s.malformed, s.malformed_with_marker,
            "{name}: malformed without marker"
        );
        total_batch += s.batch;

        // the reader yields the same records as line-by-line parsing
        let mut reader = LogReader::open(path).unwrap();
        let mut n = 0u64;
        let stats: ParseStats = reader.for_each(|_| n += 1).unwrap();
        assert_eq!(n, s.lines, "{name}");
        assert_eq!(stats.lines, s.lines, "{name}");
        assert_eq!(stats.batch_lines, s.batch, "{name}");
        assert_eq!(stats.prefill_lines, s.prefill, "{name}");
        assert_eq!(stats.decode_lines, s.decode, "{name}");
        assert_eq!(stats.malformed_lines, s.malformed, "{name}");
        assert_eq!(stats.partial_batch_lines, s.partial, "{name}");
        assert_eq!(
            stats.bytes,
            std::fs::metadata(path).unwrap().len(),
            "{name}"
        );
        assert_eq!(
            stats.lines,
            stats.events + stats.other_lines + stats.malformed_lines,
            "{name}"
        );
    }
    // all batch lines of all files: a regression guard on the total
    // = `grep -c` of the four markers (19,916: real/065 added two) + one head-less v0.1 stats line
    assert_eq!(total_batch, 19_917);
}

impl Summary {
    /// Head-less v0.1 decode stats lines are batch events without a marker.
    fn legacy_stats_lines(&self, path: &Path) -> u64 {
        let data = std::fs::read(path).unwrap();
        data.split(|&c| c == b'\n')
            .filter(|l| l.starts_with(b"#running-req:"))
            .count() as u64
    }
}

fn real(name: &str) -> Summary {
    summarize(&data_dir().join("real").join(name))
}

fn long(name: &str) -> Summary {
    summarize(&data_dir().join("real-long").join(name))
}

#[test]
fn no_data_file_has_malformed_lines() {
    for path in all_log_files() {
        let s = summarize(&path);
        assert_eq!(s.malformed, 0, "{}", path.display());
    }
}

#[test]
fn negative_files_yield_no_sglang_events() {
    // `tests/data/real/*NEGATIVE*` (a vLLM log) when present, plus a constructed vLLM excerpt.
    for path in files_in("real", "")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("NEGATIVE"))
    {
        let s = summarize(&path);
        // what any program prints (no SGLang event): `Event::is_free_text`
        let free: u64 = [
            "other",
            "http_access",
            "context_rejected",
            "out_of_memory",
            "nccl",
        ]
        .iter()
        .map(|k| s.by_kind.get(k).copied().unwrap_or(0))
        .sum();
        assert_eq!(s.lines, free, "{}", path.display());
    }
    let vllm = "INFO 10-20 03:02:22 [api_server.py:1024] Starting vLLM API server on http://0.0.0.0:8000\n\
INFO 10-20 03:02:25 [loggers.py:116] Engine 000: Avg prompt throughput: 1024.0 tokens/s, Avg generation throughput: 512.3 tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 45.2%, Prefix cache hit rate: 10.0%\n\
(VllmWorker rank=0 pid=1234) INFO 10-20 03:02:26 [gpu_model_runner.py:1600] Graph capturing finished in 12 secs, took 0.52 GiB\n\
INFO:     127.0.0.1:40000 - \"POST /v1/completions HTTP/1.1\" 200 OK\n\
WARNING 10-20 03:02:27 [scheduler.py:1100] Sequence group 5 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.\n";
    let mut r = LogReader::from_reader("vllm", vllm.as_bytes());
    let stats = r
        .for_each(|rec| assert!(rec.event.is_free_text(), "{}", rec.message))
        .unwrap();
    assert_eq!(
        (stats.lines, stats.events, stats.malformed_lines),
        (5, 0, 0)
    );
}

#[test]
fn real_001_queue_12k() {
    let s = real("001-i938-a100-llama13b-queue12k.log");
    assert_eq!(s.peak_running, Some(1010));
    assert_eq!(s.max_usage, Some(0.93));
    assert_eq!(s.max_queue, Some(12279));
    assert_eq!(s.max_gen, Some(1397.13));
    assert_eq!(s.stamped, 0);
}

#[test]
fn real_002_and_064_throughput_flat() {
    let s = real("002-i3909-throughput-steadily-decreases.log");
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(8), Some(0), Some(0.13))
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(184.27), Some(186.99)));
    assert_eq!(s.ranks, BTreeSet::from(["TP0".to_string()]));
    let s = real("064-i3909-earlier-chunk-0438.log");
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(8), Some(0), Some(0.13))
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(181.45), Some(183.01)));
}

#[test]
fn real_004_and_020_sglang_jax_unknown_fields() {
    let s = real("004-sglang-jax-pr564-cache-miss.log");
    assert_eq!(
        (s.decode, s.peak_running, s.max_usage, s.max_queue),
        (9, Some(1), Some(0.0), Some(0))
    );
    let s = real("020-sglang-jax-pr564-prefill-bid-cache-miss.log");
    assert_eq!((s.prefill, s.decode), (2, 3));
    assert_eq!(s.min_gen, Some(0.0));
    let line = b"[2025-12-17 05:10:46] Prefill batch. #bid: 1, #cache_miss: 2";
    let rec = parse_line(line, 2);
    let b = rec.event.as_batch().unwrap();
    assert_eq!(
        b.unknown_fields().collect::<Vec<_>>(),
        [("#bid", "1"), ("#cache_miss", "2")]
    );
}

#[test]
fn real_005_mixed_with_uvicorn() {
    let s = real("005-pr22166-mixed-prefill-decode-uvicorn.log");
    // its six uvicorn lines are access lines, each a chat completion answered 200
    assert_eq!((s.decode, s.prefill, s.by_kind["http_access"]), (1, 3, 6));
    assert_eq!(s.by_kind.get("other"), None);
    assert_eq!(s.peak_running, Some(32));
    assert_eq!((s.max_usage, s.max_queue), (Some(0.08), Some(0)));
    assert_eq!(s.max_gen, Some(1635.11));
    assert_eq!(s.max_input, Some(4099.38));
}

#[test]
fn real_007_prefix_cache_and_idle_window() {
    let s = real("007-i10053-single-user-chat-prefix-cache.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(1), Some(0.0), Some(0))
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(1.06), Some(84.2)));
}

#[test]
fn real_008_tiny_pool() {
    let s = real("008-i14972-overlap-retract-alloc-fail.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(6), Some(0.94), Some(5))
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(440.85), Some(446.45)));
}

#[test]
fn real_010_dflash_accept_cap_len() {
    let s = real("010-pr34924-dflash-swa-accept-cap-len.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(1), Some(0.0), Some(0))
    );
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(3.5), Some(4.25))
    );
    assert_eq!(s.by_kind["other"], 1); // the `......` elision line
}

#[test]
fn real_011_and_043_and_046_retractions() {
    let s = real("011-pr6731-debug-decode-oom-retract.log");
    assert_eq!((s.retractions, s.batch), (1, 0));
    let rec = parse_line(b"[2025-05-28 08:25:50] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.8024 -> 0.9085", 14);
    let Event::Retraction(r) = rec.event else {
        panic!()
    };
    assert_eq!(
        (r.new_token_ratio_before, r.new_token_ratio_after),
        (Some(0.8024), Some(0.9085))
    );

    // every TP rank prints the retraction: 11 lines, 2 distinct events in this excerpt
    // (SOURCES names a third at 21:49:51 that lies outside the excerpt)
    let s = real("043-i4184-dsr1-2node-tp16-decode-oom-retract.log");
    assert_eq!(s.retractions, 11);
    assert_eq!(s.distinct_retractions.len(), 2);

    let s = real("046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(2), Some(1.0), Some(0))
    );
    assert_eq!((s.retractions, s.distinct_retractions.len()), (5, 1));
    assert_eq!(s.max_gen, Some(10.94));
}

#[test]
fn real_013_and_014_swa_pools() {
    let s = real("013-i26248-swa-retraction-collapse.log");
    assert_eq!(s.batch, 3);
    assert_eq!(s.dated, 3, "the first line lost its `[` but keeps its date");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_swa_usage, s.max_queue),
        (Some(4), Some(1.0), Some(0.06), Some(3))
    );
    assert_eq!(s.max_gen, Some(429.74));

    let s = real("014-i26248-after-retraction-user-abbreviated.log");
    assert_eq!((s.batch, s.stamped, s.dated), (7, 7, 0));
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(6), Some(0.92), None)
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(21.95), Some(38.84)));
}

#[test]
fn real_016_pd_decode_transfer() {
    let s = real("016-pr30393-hicache-pd-decode-mtp-transfer.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(3), Some(0.54), Some(0))
    );
    assert_eq!(s.max_pre_alloc, Some(0.33));
    assert_eq!((s.max_transfer, s.max_prealloc), (Some(3), Some(0)));
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(1.67), Some(1.73))
    );
}

#[test]
fn real_017_019_022_023() {
    let s = real("017-i3243-amd-rx7900xtx-rocm.log");
    assert_eq!(
        (s.peak_running, s.min_gen, s.max_gen),
        (Some(1), Some(3.5), Some(28.13))
    );

    let s = real("019-i5429-2x8h100-dsr1-dp-attn-queue990.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(92), Some(0.92), Some(990))
    );
    assert_eq!(s.max_gen, Some(324.86));
    assert_eq!(s.ranks, BTreeSet::from(["DP0 TP0".to_string()]));

    let s = real("022-pr6081-mtp-dp-attention-8ranks.log");
    assert_eq!((s.peak_running, s.max_queue), (Some(8), Some(0)));
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(2.58), Some(2.94))
    );
    assert_eq!(s.ranks.len(), 5);

    let s = real("023-pr17392-dp-ep-decode-prealloc-generate.log");
    assert_eq!(
        (s.decode, s.peak_running, s.max_usage),
        (3, Some(11), Some(0.01))
    );
    assert_eq!(
        s.ranks,
        BTreeSet::from(["DP0 TP0 EP0", "DP2 TP2 EP2", "DP3 TP3 EP3"].map(String::from))
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(653.92), Some(1111.11)));
}

#[test]
fn real_025_026_028_029_031() {
    let s = real("025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(24), Some(0.66), Some(4))
    );
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(2.63), Some(3.05))
    );
    assert_eq!(s.ranks, BTreeSet::from(["TP0 EP0".to_string()]));

    let s = real("026-i6901-docker-compose-prefix-prefill.log");
    assert_eq!(
        (s.prefill, s.peak_running, s.max_queue),
        (2, Some(10), Some(56))
    );

    let s = real("028-i393-v0.1-new-fill-batch-legacy.log");
    assert_eq!(
        (s.prefill, s.decode, s.peak_running_decode),
        (5, 1, Some(5))
    );
    assert_eq!(s.max_usage, Some(0.24));

    let s = real("029-pr18570-debug-interleaved-prefill-input-before-cudagraph.log");
    assert_eq!((s.prefill, s.max_input), (2, Some(9610.84)));
    assert_eq!(s.by_kind["other"], 8);

    let s = real("031-i22877-pd-prefill-prealloc-rising-custom-fmt.log");
    assert_eq!((s.prefill, s.dated, s.max_prealloc), (4, 4, Some(28)));
}

#[test]
fn real_032_to_041_prefill_bursts() {
    let s = real("032-mineru-i3470-rtx4090-embedded-sglang-prefill.log");
    assert_eq!(
        (s.prefill, s.peak_running, s.max_usage),
        (8, Some(7), Some(0.07))
    );

    let s = real("034-i2255-cache-hit-rate-field-chunked-prefill.log");
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(75), Some(130), Some(0.12))
    );

    let s = real("035-pr13023-prefill-burst-with-benchmark-marker.log");
    assert_eq!(
        (s.prefill, s.peak_running, s.max_queue),
        (9, Some(74), Some(186))
    );

    let s = real("037-llama-benchy-i15-swa-prefill-slow-46tps.log");
    assert_eq!(
        (s.prefill, s.max_swa_usage, s.max_input),
        (6, Some(0.02), Some(46.38))
    );

    let s = real("038-i11948-eagle3-single-gpu-accept-len.log");
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(1.8), Some(2.17))
    );
    assert_eq!((s.min_gen, s.max_gen), (Some(0.39), Some(188.68)));

    let s = real("040-pr7944-prometheus-metrics-pd.log");
    assert_eq!((s.lines, s.by_kind["other"]), (19, 19));

    let s = real("041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log");
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(64), Some(114), Some(0.24))
    );
}

#[test]
fn real_044_mangled_quote_is_a_partial_batch_line() {
    // Decision: lenient. The line keeps `token usage: 0.95` and the unknown key `#` = 484009;
    // the fragment `#running-:` is counted as broken, and the reader reports the line as partial.
    let s = real("044-i6341-markdown-mangled-quote.log");
    assert_eq!((s.batch, s.partial, s.malformed), (1, 1, 0));
    assert_eq!(s.max_usage, Some(0.95));
    assert_eq!(s.peak_running, None);
}

#[test]
fn real_047_to_064() {
    let s = real("047-i1270-v0.2-time-only-timestamp.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(2), Some(0.0), Some(0))
    );
    assert_eq!((s.stamped, s.dated, s.max_gen), (10, 0, Some(447.31)));

    let s = real("049-i3752-watchdog-timeout-tp8-with-top.log");
    assert_eq!((s.batch, s.by_kind["watchdog_timeout"]), (0, 8));

    let s = real("050-pr6555-blockquoted-watchdog-dp-req-dump.log");
    assert_eq!(s.by_kind["watchdog_timeout"], 2);

    let s = real("052-pr20766-multinode-dp-decode-then-pyspy-dump.log");
    assert_eq!(
        (s.decode, s.peak_running, s.min_gen),
        (2, Some(12), Some(3.27))
    );

    let s = real("053-i3186-h200-llama8b-single-prefill-line-cache-hit.log");
    assert_eq!(
        (s.peak_running, s.max_usage, s.max_queue),
        (Some(28), Some(0.02), Some(0))
    );

    let s = real("055-i1612-engine-generate-offline-tqdm-time-only.log");
    assert_eq!(
        (s.prefill, s.peak_running, s.max_queue, s.max_usage),
        (7, Some(21), Some(38), Some(0.77))
    );

    let s = real("056-openclaw-rl-i44-ray-sglangengine-prefix.log");
    assert_eq!(
        (s.decode, s.peak_running, s.max_usage, s.max_queue),
        (7, Some(6), Some(0.04), Some(0))
    );
    assert_eq!(s.ranks, BTreeSet::from(["TP0".to_string()]));

    let s = real("058-pr29853-npu-grok2-128running-14tps-no-graph.log");
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(128), Some(26), Some(0.31))
    );
    assert_eq!(s.max_gen, Some(14.47));

    let s = real("059-npu-doc-forward-iteration-numbers-prefill-decode-interval.log");
    assert_eq!(
        (s.prefill, s.decode, s.peak_running, s.max_gen),
        (2, 11, Some(2), Some(160.73))
    );

    let s = real("061-pr7481-dsr1-fp4-tp8-b200-single-stream.log");
    assert_eq!((s.decode, s.peak_running, s.ranks.len()), (8, Some(1), 1));
    assert_eq!((s.min_gen, s.max_gen), (Some(81.79), Some(83.9)));
}

#[test]
fn real_062_startup_capacity() {
    let path = data_dir().join("real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log");
    let mut kv = Vec::new();
    let mut cap = None;
    LogReader::open(&path)
        .unwrap()
        .for_each(|rec| match &rec.event {
            Event::KvCacheAllocated(k) => kv.push(*k),
            Event::Capacity(c) => cap = Some((*c, rec.ranks)),
            _ => {}
        })
        .unwrap();
    assert_eq!(kv.len(), 4);
    assert!(kv.iter().all(|k| k.tokens == Some(1_339_395)
        && k.k_size_gb == Some(58.76)
        && k.v_size_gb == Some(58.76)));
    let (c, ranks) = cap.unwrap();
    assert_eq!(c.max_total_num_tokens, Some(1_339_395));
    assert_eq!(c.max_running_requests, Some(4096));
    assert_eq!(c.context_len, Some(131_072));
    assert_eq!(c.chunked_prefill_size, Some(2032));
    assert_eq!(c.available_gpu_mem_gb, Some(33.74));
    assert_eq!(ranks.to_string(), "DP0 TP0 EP0");
}

#[test]
fn real_long_files() {
    // rows of real-long/SOURCES.tsv: decode/prefill line counts, peaks over batch lines
    let s = long("rtx4090-qwen3-4b-kv-retraction.log");
    assert_eq!((s.decode, s.prefill), (370, 109));
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(68), Some(59), Some(1.0))
    );
    assert_eq!(s.retractions, 20);

    let s = long("ascend-qwen3-30b-tp2-eagle3-highload.log");
    assert_eq!((s.decode, s.prefill), (140, 787));
    // SOURCES' "peak running 156" is the decode batch; prefill lines report up to 161
    assert_eq!(
        (s.peak_running_decode, s.peak_running),
        (Some(156), Some(161))
    );
    assert_eq!((s.max_queue, s.max_usage), (Some(134), Some(0.92)));
    assert_eq!(s.max_gen, Some(5275.45));

    let s = long("ascend-dsr1-dp16-mtp-mixed.log");
    assert_eq!((s.decode, s.prefill), (2828, 2067));
    assert_eq!((s.peak_running, s.max_usage), (Some(16), Some(0.84)));
    assert_eq!((s.max_queue, s.max_queue_decode), (Some(14), Some(6)));
    assert_eq!(s.ranks.len(), 16);
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(1.8), Some(3.77))
    );

    let s = long("ascend-dsr1-pd-decode-dp32.log");
    assert_eq!((s.decode, s.prefill), (2656, 0));
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(26), Some(2), Some(0.94))
    );
    assert_eq!(
        (s.max_pre_alloc, s.max_transfer, s.max_prealloc),
        (Some(0.44), Some(17), Some(3))
    );
    assert_eq!(
        (s.min_accept_len, s.max_accept_len),
        (Some(2.0), Some(2.94))
    );

    let s = long("ascend-dsr1-pd-prefill-dp2.log");
    assert_eq!((s.decode, s.prefill), (0, 1070));
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(0), Some(4), Some(0.32))
    );

    let s = long("ascend-dsr1-pd-client-router.log");
    assert_eq!((s.batch, s.marker_lines), (0, 0));

    let s = long("ascend-dsr1-pd-decode-maxrun2-queued.log");
    assert_eq!(s.decode, 3355);
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(2), Some(41), Some(0.87))
    );
    assert_eq!((s.max_transfer, s.max_pre_alloc), (Some(18), Some(0.35)));
    assert_eq!(s.max_gen, Some(140.17)); // SOURCES: "<=140 tok/s per rank"

    let s = long("ascend-qwen3next-80b-hybrid-mamba.log");
    assert_eq!((s.decode, s.prefill), (301, 92));
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(80), Some(63), Some(0.89))
    );
    assert_eq!(s.max_mamba_usage, Some(1.0));

    let s = long("rdna4-2xr9700-qwen3coder-tp2-single-stream.log");
    assert_eq!((s.decode, s.prefill), (224, 8));
    assert_eq!(
        (s.peak_running, s.max_queue, s.max_usage),
        (Some(1), Some(0), Some(0.05))
    );
}

#[test]
fn scenario_server_logs() {
    for (dir, batch, retractions) in [("kimi-k25-b1", 1708, 0), ("kimi-k25-b2", 3472, 1752)] {
        let path = data_dir().join("scenarios").join(dir).join("server.log");
        let s = summarize(&path);
        assert_eq!((s.batch, s.retractions), (batch, retractions), "{dir}");
        let mut args = None;
        let mut kv_tokens = None;
        LogReader::open(&path)
            .unwrap()
            .for_each(|rec| match &rec.event {
                Event::ServerArgs(a) => args = a.get("mem_fraction_static").map(str::to_string),
                Event::Capacity(c) => kv_tokens = c.max_total_num_tokens,
                _ => {}
            })
            .unwrap();
        assert_eq!(args.as_deref(), Some("0.85"), "{dir}");
        assert_eq!(kv_tokens, Some(116_171), "{dir}");
    }
}

#[test]
fn an_echoed_launch_command_gives_the_servers_arguments() {
    // real-2/109 line 2: the launcher's `command=python3 -m sglang.launch_server …` (the log
    // has no server_args=ServerArgs(…) line)
    let text = std::fs::read_to_string(
        data_dir().join("real-2/109-npu-pd-decode-1p1d-dp16-running-pinned-24-queue-usage046.log"),
    )
    .expect("109");
    let line = text.lines().nth(1).expect("line 2");
    let rec = parse_line(line.as_bytes(), 2);
    let Event::LaunchCommand(a) = rec.event else {
        panic!("not a launch command: {:?}", rec.event);
    };
    assert_eq!(a.get("mem-fraction-static"), Some("0.8"));
    assert_eq!(a.get("max_running_requests"), Some("384"));
    assert_eq!(a.get("tp-size"), Some("16"));
    assert_eq!(a.get("dp-size"), Some("16"));
    assert_eq!(a.get("cuda-graph-bs"), Some("8 10 12 14 16 18 20 22 24"));
    // a bare switch has an empty value; an absent flag is None
    assert_eq!(a.get("enable-dp-attention"), Some(""));
    assert_eq!(a.get("enable-mixed-chunk"), None);
    // `--flag=value` is split at the `=`
    let eq = parse_line(
        b"python -m sglang.launch_server --tp=8 --mem-fraction-static=0.9",
        1,
    );
    let Event::LaunchCommand(a) = eq.event else {
        panic!("{:?}", eq.event);
    };
    assert_eq!(
        (a.get("tp"), a.get("mem_fraction_static")),
        (Some("8"), Some("0.9"))
    );
    // another python command is no launch command
    assert!(matches!(
        parse_line(b"python3 bench_serving.py --max-concurrency 80", 1).event,
        Event::Other
    ));
}

/// The screened error parser agrees with the full access grammar on every record of every
/// real log: 23,910 access lines in `tests/data`, of which 19 are errors (503 from the
/// `/health_generate` and `/health` probes; urllib3's `"GET …" 404` line in real-2/104 is no
/// uvicorn access line, and neither is real-long's line glued behind dots).
#[test]
fn the_http_error_screen_agrees_with_the_grammar_on_every_real_line() {
    let (mut access, mut errors) = (0u64, BTreeMap::<u16, u64>::new());
    for dir in ["real", "real-2", "real-long", "scenarios"] {
        let mut stack = vec![data_dir().join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let Ok(mut r) = LogReader::open(&p) else {
                    continue;
                };
                r.for_each(|rec| {
                    let full = sglang_log::parse_http_access(rec.message);
                    access += u64::from(full.is_some());
                    let want = full.filter(|a| a.status >= 400);
                    assert_eq!(
                        sglang_log::parse_http_error(rec.message),
                        want,
                        "{}:{}",
                        p.display(),
                        rec.line_no
                    );
                    if let Some(a) = want {
                        *errors.entry(a.status).or_default() += 1;
                    }
                })
                .unwrap();
            }
        }
    }
    assert_eq!(access, 23_915); // five behind a launcher's progress dots since issue 29
    assert_eq!(errors, BTreeMap::from([(503, 20)]));
}
