//! The diagnosis on real logs from public bug reports (`tests/data/real*/`, see `SOURCES.tsv`):
//! the peaks and the verdict that a careful engineer reads from each file (the `expected` column).

use std::path::{Path, PathBuf};

use diagnosis::report::{Lever, RecommendationKind};
use diagnosis::{Bottleneck, EvidenceBuilder, FindingKind, Report};
use sglang_log::{ForeignFormat, FormatSniffer, LogKind, LogReader};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// The kinds of a report's recommendations, in order.
fn rec_kinds(r: &Report) -> Vec<RecommendationKind> {
    r.recommendations.iter().map(|x| x.kind).collect()
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

/// A key figure an expert reads from a file (SOURCES.tsv's `expected` column, real-long's
/// `notable_observations`), checked against the report.
#[derive(Clone, Copy, Debug)]
enum Key {
    /// The headline's server rate (`steady_gen_throughput`), tok/s, within ± tolerance.
    Gen(f64, f64),
    /// The largest `gen throughput` one line printed (tok/s, ±0.01).
    PeakGen(f64),
    /// The speculative-decoding finding's accept length over the decode lines: lowest, median,
    /// highest (tokens per target forward, ±0.01).
    Accept(f64, f64, f64),
    /// Retraction events (distinct, ranks deduplicated) and the lines that printed them.
    Retractions(u64, u64),
    /// The highest `#new_token_ratio` a retraction raised it to.
    RatioAfter(f64),
    /// `max_total_num_tokens` (tokens per rank).
    MaxTotalTokens(u64),
    /// `max_running_requests` as the startup lines print it.
    MaxRunning(u64),
    /// `context_len` (tokens).
    ContextLen(u64),
    /// `chunked_prefill_size` (tokens).
    ChunkedPrefill(u64),
    /// K + V cache size (GB, ±0.01).
    KvCacheGb(f64),
    /// Schedulers (DP ranks) the log holds.
    Schedulers(usize),
    /// The log holds `.0` of `.1` DP ranks (`dp_size`, or at least as many as the highest
    /// rank number says), and the report says so.
    RanksOf(usize, u32),
    /// The DP ranks' steady medians added up: running, queued (requests, ±0.5).
    DpTotal(f64, f64),
    /// The headline's rate rests on this many decode lines (1: one sample).
    Samples(u32),
    /// A finding of this kind is present.
    Has(FindingKind),
    /// No finding of this kind.
    HasNot(FindingKind),
    /// At least this many lines counted malformed or damaged (read in part), with line numbers.
    Malformed(u64),
    /// The last benchmark run: successful requests.
    BenchOk(u64),
    /// The last benchmark run: output tok/s (±0.5).
    BenchOutput(f64),
    /// The last benchmark run: request throughput, req/s (±0.005).
    BenchReqRate(f64),
    /// The last benchmark run: mean TTFT, seconds (±0.005).
    BenchTtft(f64),
    /// The last benchmark run: accept length (±0.005).
    BenchAccept(f64),
    /// The headline names this (case-insensitive): an event.
    Names(&'static str),
    /// Not an SGLang log: the format sniffer (`sglang_log::FormatSniffer`, which the CLI uses to
    /// refuse it with exit 1) names this format.
    Refused(ForeignFormat),
}

/// One shared real file: the verdict and figures an expert reads from it.
#[derive(Clone, Copy, Debug)]
struct Case {
    /// Path under `tests/data/`.
    file: &'static str,
    verdict: Bottleneck,
    /// Peak `#running-req`, `#queue-req` and `token usage` over all schedulers (`None`: the log
    /// has no such field).
    running: Option<u64>,
    queued: Option<u64>,
    usage: Option<f64>,
    keys: &'static [Key],
    /// Why the current tool does not pass this row yet (`issue 11 pattern N: ...`).
    pending: Option<&'static str>,
}

const fn row(
    file: &'static str,
    verdict: Bottleneck,
    peaks: (Option<u64>, Option<u64>, Option<f64>),
    keys: &'static [Key],
) -> Case {
    Case {
        file,
        verdict,
        running: peaks.0,
        queued: peaks.1,
        usage: peaks.2,
        keys,
        pending: None,
    }
}

impl Case {
    /// Marks a row whose expected values the tool does not reach yet (none today; kept for
    /// the next file that waits on a fix).
    #[allow(dead_code)]
    const fn pending(self, why: &'static str) -> Case {
        Case {
            pending: Some(why),
            ..self
        }
    }
}

const fn p(r: u64, q: u64, u: f64) -> (Option<u64>, Option<u64>, Option<f64>) {
    (Some(r), Some(q), Some(u))
}
/// No batch lines: no peaks.
const NONE: (Option<u64>, Option<u64>, Option<f64>) = (None, None, None);

use Bottleneck as B;
use FindingKind as F;
use Key::*;

/// Every file in `/work/shared/testdata/real/`, `real-2/` and `real-long/` (copies under
/// `tests/data/`), one row each; `every_shared_file_has_a_row` keeps it complete.
const CASES: &[Case] = &[
    // ---- real/ ----
    // One bare decode line (no timestamp): its own gen throughput is the only rate, one sample.
    row(
        "real/001-i938-a100-llama13b-queue12k.log",
        B::KvCacheBound,
        p(1010, 12279, 0.93),
        &[PeakGen(1397.13), Gen(1397.13, 0.01), Samples(1)],
    ),
    row(
        "real/002-i3909-throughput-steadily-decreases.log",
        B::ClientBound,
        p(8, 0, 0.13),
        &[Gen(185.5, 2.5)],
    ),
    // sglang-jax: all nine decode lines print the same second (05:10:47), 84.23-84.92 tok/s:
    // their own rates, the first one's window before the log left out (8 samples).
    row(
        "real/004-sglang-jax-pr564-cache-miss.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[Gen(84.5, 0.4), Samples(8)],
    ),
    row(
        "real/005-pr22166-mixed-prefill-decode-uvicorn.log",
        B::ClientBound,
        p(32, 0, 0.08),
        &[Gen(1635.11, 0.01), Samples(1)],
    ),
    row(
        "real/007-i10053-single-user-chat-prefix-cache.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[Gen(83.0, 1.5)],
    ),
    row(
        "real/008-i14972-overlap-retract-alloc-fail.log",
        B::KvCacheBound,
        p(6, 5, 0.94),
        // Lines 1-5 share 08:43:59 and print 440.85-446.45 tok/s.
        &[Has(F::TinyKvPool), Gen(445.0, 5.0), Samples(4)],
    ),
    // DFLASH: accept len 3.50-4.25 of cap len 6.00; the first window (line 2, 3.08 tok/s)
    // is idle time, steady 373-453 (lines 3-5).
    row(
        "real/010-pr34924-dflash-swa-accept-cap-len.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[Gen(413.0, 40.0), Accept(3.50, 3.96, 4.25)],
    ),
    // No batch lines: one retraction raised new_token_ratio 0.8024 -> 0.9085.
    row(
        "real/011-pr6731-debug-decode-oom-retract.log",
        B::KvCacheBound,
        NONE,
        &[Retractions(1, 1), RatioAfter(0.9085)],
    ),
    // Full-attention pool 1.00 vs swa 0.06: the full pool is the peak token usage.
    row(
        "real/013-i26248-swa-retraction-collapse.log",
        B::KvCacheBound,
        p(4, 3, 1.00),
        &[Gen(429.5, 0.5)],
    ),
    // User-abbreviated lines without #queue-req: six requests hold 2.4M tokens, full token
    // usage 0.92 (lines 1-7), so the pool is what caps concurrency: KV-bound, with the headline
    // saying the queue is unknown. SOURCES' point, "post-retraction throughput collapse (~14x)
    // not explained by KV alone", compares this excerpt with 013's 429 tok/s: one file cannot
    // show it, and the tool does not flag it. `#full token` standing still on lines 3-7 is no
    // sign of a hang either: it moves in whole pages (+512, +768 on lines 1-3, all multiples
    // of 256), and 6 requests at ~6 tok/s each fill a 256-token page about every 40 s.
    row(
        "real/014-i26248-after-retraction-user-abbreviated.log",
        B::KvCacheBound,
        (Some(6), None, Some(0.92)),
        &[Gen(30.7, 9.0)],
    ),
    // accept len 1.67-1.73, accept rate 0.13-0.14 (lines 1-5).
    row(
        "real/016-pr30393-hicache-pd-decode-mtp-transfer.log",
        B::ClientBound,
        p(3, 0, 0.54),
        &[Gen(182.0, 4.0), Accept(1.67, 1.70, 1.73)],
    ),
    row(
        "real/017-i3243-amd-rx7900xtx-rocm.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[Gen(28.0, 1.0), Has(F::IdleWindowArtifact)],
    ),
    // One decode line on DP0: 324.86 tok/s.
    row(
        "real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log",
        B::KvCacheBound,
        p(92, 990, 0.92),
        &[Gen(324.86, 0.01), Samples(1)],
    ),
    // #token stays 64 on every line (sglang-jax) while gen throughput reads 84-89 tok/s
    // (lines 4-5): tokens are produced; line 3's 0.00 is the first window.
    row(
        "real/020-sglang-jax-pr564-prefill-bid-cache-miss.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[HasNot(F::Stall)],
    ),
    // The excerpt holds one decode line from each of 5 ranks (DP0, DP2, DP5, DP6, DP7) of 8:
    // SOURCES' "aggregate ~64" assumes 8 ranks; these lines add up to 40 running.
    row(
        "real/022-pr6081-mtp-dp-attention-8ranks.log",
        B::ClientBound,
        p(8, 0, 0.13),
        // One sample per rank: 171.01 + 168.28 + 173.06 + 155.80 + 152.08 = 820.23 tok/s.
        &[
            Schedulers(5),
            RanksOf(5, 8),
            DpTotal(40.0, 0.0),
            Gen(820.23, 0.01),
            Samples(1),
            Accept(2.58, 2.86, 2.94),
        ],
    ),
    // SOURCES reads "running 6/8/11 across ranks (DP imbalance)" from one decode line per
    // rank (lines 4, 7, 8), three instants: too thin for a finding or a change of the
    // load-balance method (strict expert, 2026-12-04); `dp_imbalance` asks three lines a rank.
    row(
        "real/023-pr17392-dp-ep-decode-prealloc-generate.log",
        B::ClientBound,
        p(11, 0, 0.01),
        &[Schedulers(3), HasNot(F::DpImbalance)],
    ),
    // Three decode lines over 8 s (lines 2, 4, 6): running falls 24 -> 22 as requests finish
    // while the queue grows 2 -> 4 at token usage 0.63-0.66: admission holds requests back
    // with a third of the pool free, which is what "too conservative" means; SOURCES'
    // "approaching capacity but not saturated" says the same in other words.
    row(
        "real/025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log",
        B::SchedulerConservative,
        p(24, 4, 0.66),
        &[Accept(2.63, 2.83, 3.05)],
    ),
    row(
        "real/026-i6901-docker-compose-prefix-prefill.log",
        B::PrefillBound,
        p(10, 56, 0.09),
        &[],
    ),
    // v0.1 `new fill batch` lines drain a burst of arrivals (#remaining_req 4, 3, 2, 1, 0 in one
    // second); the decode stats line reads #queue-req 0: low load, not a conservative scheduler.
    row(
        "real/028-i393-v0.1-new-fill-batch-legacy.log",
        B::ClientBound,
        p(5, 4, 0.24),
        &[],
    ),
    row(
        "real/029-pr18570-debug-interleaved-prefill-input-before-cudagraph.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[],
    ),
    row(
        "real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log",
        B::PdTransferBound,
        p(0, 0, 0.00),
        &[],
    ),
    // SOURCES gives usage 0.01-0.08; the highest in the file is 0.07 (line 9).
    row(
        "real/032-mineru-i3470-rtx4090-embedded-sglang-prefill.log",
        B::ClientBound,
        p(7, 0, 0.07),
        &[],
    ),
    row(
        "real/034-i2255-cache-hit-rate-field-chunked-prefill.log",
        B::PrefillBound,
        p(75, 130, 0.12),
        &[],
    ),
    row(
        "real/035-pr13023-prefill-burst-with-benchmark-marker.log",
        B::PrefillBound,
        p(74, 186, 0.12),
        &[Has(F::RampOnly)],
    ),
    // Full usage 0.01, swa 0.02 (SOURCES "0.01/0.02"): peak token usage is the full pool's.
    row(
        "real/037-llama-benchy-i15-swa-prefill-slow-46tps.log",
        B::PrefillComputeBound,
        p(0, 0, 0.01),
        &[Has(F::PrefillComputeBound)],
    ),
    // SOURCES gives accept len 1.57-2.17 (rate ~0.4-0.54); the file's decode lines print
    // 1.80-2.17 (lines 2-6) and rate 0.45-0.54: no 1.57 in the excerpt. Line 2's 0.39 tok/s is
    // the first window; 165-189 tok/s after it.
    row(
        "real/038-i11948-eagle3-single-gpu-accept-len.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[Gen(177.0, 12.0), Accept(1.80, 1.95, 2.17)],
    ),
    // Not a log: SGLang's Prometheus exposition (num_requests_total 217, num_aborted 157).
    row(
        "real/040-pr7944-prometheus-metrics-pd.log",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::PrometheusExposition)],
    ),
    row(
        "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log",
        B::PrefillBound,
        p(64, 114, 0.24),
        &[Has(F::RampOnly)],
    ),
    // SOURCES names 3 events (21:49:33, 21:49:45, 21:49:51); the excerpt holds 11 lines at
    // 21:49:33 (lines 1-3) and 21:49:45 (lines 4-11) only: 2 events.
    row(
        "real/043-i4184-dsr1-2node-tp16-decode-oom-retract.log",
        B::KvCacheBound,
        NONE,
        &[Retractions(2, 11), RatioAfter(0.1919)],
    ),
    // Only `token usage: 0.95` survives the markdown mangling of line 1.
    row(
        "real/044-i6341-markdown-mangled-quote.log",
        B::KvCacheBound,
        (None, None, Some(0.95)),
        // line 1 ('#running-:, #: 484009'): counted as damaged with its number, and its one
        // readable field (token usage 0.95) used
        &[Malformed(1)],
    ),
    row(
        "real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log",
        B::KvCacheBound,
        p(2, 0, 1.00),
        &[Gen(10.9, 0.3), Retractions(1, 5), RatioAfter(0.9446)],
    ),
    // 2 running at 405-447 tok/s (lines 1-3), then 1 running at 213-239 (lines 5-10): the
    // run drains; the rate of the last, settled batch is ~238.
    row(
        "real/047-i1270-v0.2-time-only-timestamp.log",
        B::ClientBound,
        p(2, 0, 0.00),
        // SOURCES: "447->213-239 tok/s (drops as batch shrinks). Low load". Two requests then
        // one is no drain from a plateau (a 2-request load): the time-weighted mean over both,
        // 286 tok/s, is what the server did over the excerpt.
        &[Gen(286.0, 2.0)],
    ),
    row(
        "real/049-i3752-watchdog-timeout-tp8-with-top.log",
        B::Stall,
        NONE,
        &[Has(F::WatchdogTimeout)],
    ),
    row(
        "real/050-pr6555-blockquoted-watchdog-dp-req-dump.log",
        B::Stall,
        NONE,
        &[Has(F::WatchdogTimeout)],
    ),
    row(
        "real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log",
        B::Stall,
        p(12, 0, 0.00),
        &[Has(F::WatchdogTimeout), HasNot(F::DecodeComputeBound)],
    ),
    // One prefill line, no decode line: no rate.
    row(
        "real/053-i3186-h200-llama8b-single-prefill-line-cache-hit.log",
        B::ClientBound,
        p(28, 0, 0.02),
        &[],
    ),
    // Lines 6-12: running 0 → 21, queue 38 → 18 and usage 0.00 → 0.77 in 4 s: prefill sets
    // the ramp's pace, but with the 5 being admitted and the 18 waiting they would need ~1.61
    // of the pool at 21 requests per 0.77 (SOURCES: the KV cache will saturate soon), so the
    // verdict is the pool.
    row(
        "real/055-i1612-engine-generate-offline-tqdm-time-only.log",
        B::KvCacheBound,
        p(21, 38, 0.77),
        &[Has(F::RampOnly)],
    ),
    row(
        "real/056-openclaw-rl-i44-ray-sglangengine-prefix.log",
        B::ClientBound,
        p(6, 0, 0.04),
        &[Gen(1372.5, 2.0)],
    ),
    row(
        "real/058-pr29853-npu-grok2-128running-14tps-no-graph.log",
        B::DecodeComputeBound,
        p(128, 26, 0.31),
        &[Has(F::NoCudaGraph)],
    ),
    // Running 1 with #queue-req 1 at token usage 0.00 (lines 2-11), then 2 at 160.73 tok/s
    // (line 13): admission holds the second request back with the pool empty. SOURCES names
    // the NPU prefill-decode-interval policy: no reservation of one running request fills the
    // pool, so it is not "too conservative" (which would send the user to
    // --schedule-conservativeness); admission is held between prefill passes (prefill
    // batches [10] and [411], 401 forward iterations apart).
    row(
        "real/059-npu-doc-forward-iteration-numbers-prefill-decode-interval.log",
        B::AdmissionHeld,
        p(2, 1, 0.00),
        &[PeakGen(160.73), Has(F::HeldAdmission)],
    ),
    row(
        "real/061-pr7481-dsr1-fp4-tp8-b200-single-stream.log",
        B::ClientBound,
        p(1, 0, 0.00),
        &[Gen(83.0, 1.0)],
    ),
    // Startup lines only: the capacity facts (1,339,395 tokens per rank, 58.76 GB K + V).
    row(
        "real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log",
        B::StartupOnly,
        NONE,
        &[
            MaxTotalTokens(1_339_395),
            KvCacheGb(117.52),
            MaxRunning(4096),
            ContextLen(131_072),
            ChunkedPrefill(2032),
        ],
    ),
    // Hybrid SWA model with a DFLASH draft: three `KV Cache is allocated` lines (lines 11,
    // 12, 15: 20.42 + 8.50 + 4.26 GB K + V), all of one rank's KV memory; the first alone
    // (the SWA pool) is not "the KV cache".
    row(
        "real-4/100-dgxspark-gb10-laguna-swa-dflash-c1-c4-client-bound.log",
        B::ClientBound,
        p(4, 0, 0.01),
        &[KvCacheGb(33.18), MaxTotalTokens(185_897)],
    ),
    row(
        "real/064-i3909-earlier-chunk-0438.log",
        B::ClientBound,
        p(8, 0, 0.13),
        &[Gen(182.0, 2.0)],
    ),
    // A PD prefill node whose KV transfers over NIXL fail (remote disconnect on four ranks):
    // the failure is the verdict, not the queue of 7 on the second prefill line (no decode
    // reserve exists on a prefill node).
    row(
        "real/065-nixl-i1983-pd-prefill-transfer-disconnect.log",
        B::KvTransferFailed,
        p(0, 7, 0.01),
        &[Has(F::KvTransferFailure), HasNot(F::SchedulerConservative)],
    ),
    // ---- real/bench/: client benchmark pastes, no scheduler lines ----
    row(
        "real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt",
        B::NoSchedulerLines,
        NONE,
        &[
            BenchOk(1648),
            BenchOutput(1915.0),
            BenchTtft(44.29),
            Has(F::BenchmarkFailures),
        ],
    ),
    row(
        "real/bench/002-i8285-sglang-ttft-unstable-rate330.txt",
        B::NoSchedulerLines,
        NONE,
        &[BenchOk(660), BenchOutput(12196.0), BenchTtft(2.53)],
    ),
    // A vLLM benchmark_serving block: a client file, readable as such.
    row(
        "real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt",
        B::NoSchedulerLines,
        NONE,
        &[BenchOk(100), BenchOutput(93.0)],
    ),
    row(
        "real/bench/005-pr17216-sglang-decode-offload-16k-peak-fields.txt",
        B::NoSchedulerLines,
        NONE,
        &[BenchOk(128), BenchOutput(296.0), BenchTtft(130.21)],
    ),
    row(
        "real/bench/007-pr2643-v0.4.1post2-dsv3-sharegpt5k.txt",
        B::NoSchedulerLines,
        NONE,
        &[BenchOk(5000), BenchOutput(2674.0)],
    ),
    row(
        "real/bench/008-i26886-hicache-bench-multiturn-summary.txt",
        B::NoSchedulerLines,
        NONE,
        &[BenchOutput(25.49), BenchTtft(38.35)],
    ),
    // ---- real/nvidia-smi/: GPU snapshots, not logs (their figures are asserted in
    // crates/gpu-probe/tests/nvidia_smi.rs) ----
    row(
        "real/nvidia-smi/001-cubecos-i312-rtx-pro-6000-blackwell-q-memory-perf.txt",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::NvidiaSmi)],
    ),
    row(
        "real/nvidia-smi/002-trtllm-i10278-b200x8-table.txt",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::NvidiaSmi)],
    ),
    row(
        "real/nvidia-smi/004-club3090-i617-rtx5090-single-with-processes-header.txt",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::NvidiaSmi)],
    ),
    row(
        "real/nvidia-smi/005-aikitoria-i20-rtx6000d-blackwell-no-leading-ts.txt",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::NvidiaSmi)],
    ),
    // (tests/data/real/nvidia-smi/101-... is an extra copy of real-2's, covered below.)
    // ---- real-2/ ----
    // mem-fraction 0.2: max_total_num_tokens 25169; one 24k-token prompt fills 0.97 and the
    // second waits (lines 109-111). Decode windows read 74.5-76.1 tok/s; line 109 (0.09) and
    // line 114 (18.95) are the first windows after a prefill.
    row(
        "real-2/104-hicache-mooncake-l3-llama3b-mem02-single-long-req-usage097-queue1.log",
        B::KvCacheBound,
        p(1, 1, 0.97),
        &[MaxTotalTokens(25169), Gen(75.3, 1.0)],
    ),
    row(
        "real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log",
        B::OutOfMemory,
        NONE,
        &[Names("out of memory at weight load"), Names("cannot fix")],
    ),
    // Every rank at #running-req 24 with #queue-req 1-2 at usage ~0.46 (52 of 58 decode lines
    // have a queue; SOURCES' 5230 lines are the original file's, this excerpt is 81 lines).
    row(
        "real-2/109-npu-pd-decode-1p1d-dp16-running-pinned-24-queue-usage046.log",
        B::RunningCapBound,
        p(24, 2, 0.54),
        &[Schedulers(16), Accept(2.72, 2.89, 3.09)],
    ),
    row(
        "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log",
        B::ClientBound,
        p(1, 0, 0.02),
        // Line 3's 3.22 tok/s is the first window: the rate is line 4's, one sample.
        &[Gen(140.78, 0.01), Samples(1), Accept(3.55, 3.985, 4.42)],
    ),
    row(
        "real-2/115-NEGATIVE-llamacpp-pr19408-slot-print-timing.log",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::LlamaCpp)],
    ),
    row(
        "real-2/120-i33483-l40-startup-cuda-graph-max-bs32-vs-max-running-4096.log",
        B::StartupOnly,
        NONE,
        &[
            MaxTotalTokens(2_980_168),
            MaxRunning(4096),
            Has(F::CudaGraphCoverage),
            Names("decode CUDA graphs cover batches up to 32 only"),
        ],
    ),
    row(
        "real-2/bench/104-sglang-dlora-repo-rate2-itl-zero-retokenized-mismatch.txt",
        B::NoSchedulerLines,
        NONE,
        &[BenchOk(996), BenchReqRate(3.77), Names("did not stream")],
    ),
    row(
        "real-2/nvidia-smi/101-marimo-pr6822-gb10-csv-na-and-table-header.txt",
        B::NoSchedulerLines,
        NONE,
        &[Refused(ForeignFormat::NvidiaSmi)],
    ),
    // ---- real-long/ ----
    // SOURCES: "cap bound (client 256 = 16 ranks x 16)". The batch sits at the cap of 16 on a
    // third of the decode lines (960 of 2828), and running plus queued requests reach 16 on
    // most of them: the demand meets the cap, and the requests below it wait for their prefill
    // turn, one per pass, since max_prefill_tokens 1500 is below one 2176-token prompt. The cap
    // is the verdict; the prefill budget its own finding.
    row(
        "real-long/ascend-dsr1-dp16-mtp-mixed.log",
        B::RunningCapBound,
        p(16, 14, 0.84),
        &[
            Schedulers(16),
            Accept(1.80, 2.86, 3.77),
            Has(F::PrefillInterference),
            Has(F::PrefillBound),
        ],
    ),
    row(
        "real-long/ascend-dsr1-pd-client-router.log",
        B::NoSchedulerLines,
        NONE,
        &[BenchOk(3328), BenchOutput(13348.1), BenchAccept(2.61)],
    ),
    // dp_size 32, this node logs DP0-DP15. The queue is nonzero in only 19 of 2656 decode
    // lines and the client's max concurrency (832) equals the server's cap: the client bounds
    // it (running at the cap of 26 only when it sends that many).
    row(
        "real-long/ascend-dsr1-pd-decode-dp32.log",
        B::ClientBound,
        p(26, 2, 0.94),
        &[
            RanksOf(16, 32),
            // medians over the steady phase of the measured benchmark run (its drain left out;
            // each rank's last reading holds for a median interval)
            DpTotal(314.0, 0.0),
            Accept(2.00, 2.62, 2.94),
        ],
    ),
    // dp_size 16, this node logs 8 ranks; running pinned at 2 with a queue in 3197 of 3355
    // decode lines.
    row(
        "real-long/ascend-dsr1-pd-decode-maxrun2-queued.log",
        B::RunningCapBound,
        p(2, 41, 0.87),
        &[RanksOf(8, 16), Accept(1.82, 2.98, 3.91)],
    ),
    // A PD prefill node: nothing waits for prefill (#queue-req up to 4), but #prealloc-req is
    // above 0 on 656 of 1070 prefill lines and reaches 134 (line 2570). Meanwhile its passes
    // carry 4 new requests (its max_running_requests per rank) back to back at ~11.7k tok/s:
    // its bootstrap queue stops at its own metadata buffer (twice the cap), and the companion
    // decode log has room throughout, so the limit is this server's prefill capacity, not the
    // decode side (strict-expert reading, 2026-12-03).
    row(
        "real-long/ascend-dsr1-pd-prefill-dp2.log",
        B::PrefillBound,
        p(0, 4, 0.32),
        &[Schedulers(2)],
    ),
    // SOURCES gives 156 from Decode lines; Prefill lines reach 161 (running + new requests).
    // Accept len 1.79-2.87 over the 140 decode lines (SOURCES: 1.8-2.9).
    row(
        "real-long/ascend-qwen3-30b-tp2-eagle3-highload.log",
        B::ClientBound,
        p(161, 134, 0.92),
        &[
            Accept(1.79, 2.67, 2.87),
            BenchOutput(2988.04),
            Has(F::BenchmarkConcurrencyLimit),
        ],
    ),
    row(
        "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
        B::RunningCapBound,
        p(80, 63, 0.89),
        // the steady span of the second benchmark run. Each wave of 80 ends together and the
        // next is prefilled at once (e.g. lines 1206-1208, same second): those ~15 s of prefill
        // are server work, so the windows that hold them (~185 tok/s, lines 1298, 1426, 1555)
        // count: tokens over time on lines 1169-1591 are 1477 tok/s (the benchmark's own whole
        // run, lines 1609-1617: 1410 tok/s), not the 1730 of the decode windows alone
        &[Gen(1477.0, 30.0), Has(F::BenchmarkConcurrencyLimit)],
    ),
    row(
        "real-long/rdna4-2xr9700-qwen3coder-tp2-single-stream.log",
        B::ClientBound,
        p(1, 0, 0.05),
        &[Gen(23.0, 0.5), Has(F::NoCudaGraph)],
    ),
    // SOURCES: ~2.9k tok/s at the peak, then 1.2-1.5k while the pool is full. The saturated
    // span (requests queue, 16:06:05-16:07:56) reads 1168-2622 tok/s, time-weighted ~1.68k:
    // 1.2-1.5k is its trough, not its mean.
    row(
        "real-long/rtx4090-qwen3-4b-kv-retraction.log",
        B::KvCacheBound,
        p(68, 59, 1.00),
        &[Gen(1680.0, 60.0), Retractions(20, 20), Has(F::NoCudaGraph)],
    ),
];

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

fn figure(r: &Report, name: &str) -> Option<f64> {
    r.findings
        .iter()
        .flat_map(|f| &f.figures)
        .find(|g| g.name == name)
        .and_then(|g| g.value)
}

/// What the format sniffer says of a file under `tests/data/`.
fn sniff(rel: &str) -> LogKind {
    let mut sniffer = FormatSniffer::new();
    LogReader::open(&data(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .for_each(|r| sniffer.push(r))
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    sniffer.classify()
}

/// What in `r` (diagnosed from `rel`) disagrees with `key`, if anything.
fn check_key(r: &Report, rel: &str, key: Key) -> Option<String> {
    let bench = r.benchmark_runs.last().map(|b| &b.summary);
    let ok = match key {
        Gen(v, tol) => r
            .steady_gen_throughput
            .as_ref()
            .is_some_and(|t| close(t.value, v, tol)),
        PeakGen(v) => r
            .schedulers
            .iter()
            .filter_map(|s| s.peak_gen_throughput)
            .reduce(f64::max)
            .is_some_and(|g| close(g, v, 0.01)),
        Accept(lo, med, hi) => [
            ("lowest accept length", lo),
            ("median accept length", med),
            ("highest accept length", hi),
        ]
        .iter()
        .all(|(n, v)| figure(r, n).is_some_and(|g| close(g, *v, 0.01))),
        Retractions(events, lines) => {
            r.retractions.events == events && r.retractions.lines == lines
        }
        RatioAfter(v) => r
            .retractions
            .max_ratio_after
            .is_some_and(|g| close(g, v, 1e-9)),
        MaxTotalTokens(v) => r.capacity.max_total_num_tokens == Some(v),
        MaxRunning(v) => r.capacity.max_running_requests == Some(v),
        ContextLen(v) => r.capacity.context_len == Some(v),
        ChunkedPrefill(v) => r.capacity.chunked_prefill_size == Some(v),
        KvCacheGb(v) => r.capacity.kv_cache_gb.is_some_and(|g| close(g, v, 0.01)),
        Schedulers(n) => r.schedulers.len() == n,
        RanksOf(n, of) => r.dp_totals.as_ref().is_some_and(|t| {
            t.ranks == n
                && (t.dp_size == Some(of) || (t.dp_size.is_none() && t.ranks_at_least == Some(of)))
        }),
        DpTotal(running, queued) => r.dp_totals.as_ref().is_some_and(|t| {
            t.running_median.is_some_and(|g| close(g, running, 0.5))
                && t.queued_median.is_some_and(|g| close(g, queued, 0.5))
        }),
        Samples(n) => r
            .steady_gen_throughput
            .as_ref()
            .is_some_and(|t| t.lines == Some(n)),
        Has(k) => r.findings.iter().any(|f| f.kind == k),
        HasNot(k) => !r.findings.iter().any(|f| f.kind == k),
        Malformed(n) => {
            r.inputs
                .iter()
                .map(|i| i.malformed_lines + i.damaged_lines)
                .sum::<u64>()
                >= n
        }
        BenchOk(n) => bench.is_some_and(|b| b.successful_requests == Some(n)),
        BenchOutput(v) => {
            bench.is_some_and(|b| b.output_tok_per_s.is_some_and(|g| close(g, v, 0.5)))
        }
        BenchReqRate(v) => {
            bench.is_some_and(|b| b.request_throughput.is_some_and(|g| close(g, v, 0.005)))
        }
        BenchTtft(v) => bench.is_some_and(|b| b.ttft.mean_s.is_some_and(|g| close(g, v, 0.005))),
        BenchAccept(v) => {
            bench.is_some_and(|b| b.accept_length.is_some_and(|g| close(g, v, 0.005)))
        }
        Names(what) => r
            .headline
            .text
            .to_lowercase()
            .contains(&what.to_lowercase()),
        Refused(want) => matches!(sniff(rel), LogKind::Foreign { format, .. } if format == want),
    };
    (!ok).then(|| format!("{key:?}"))
}

/// Everything in `r` that disagrees with `case`.
fn disagreements(case: &Case, r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let got = (peak_running(r), peak_queued(r), peak_usage(r));
    let usage_ok = match (got.2, case.usage) {
        (Some(a), Some(b)) => close(a, b, 1e-9),
        (None, None) => true,
        _ => false,
    };
    if got.0 != case.running || got.1 != case.queued || !usage_ok {
        out.push(format!(
            "peaks: expected ({:?}, {:?}, {:?}), got {got:?}",
            case.running, case.queued, case.usage
        ));
    }
    if r.bottleneck != case.verdict {
        out.push(format!(
            "verdict: expected {:?}, got {:?}",
            case.verdict, r.bottleneck
        ));
    }
    out.extend(case.keys.iter().filter_map(|k| check_key(r, case.file, *k)));
    out
}

#[test]
fn peaks_verdicts_and_key_figures_match_the_expected_column() {
    let mut failures = Vec::new();
    for case in CASES {
        let r = diagnose(case.file);
        let wrong = disagreements(case, &r);
        match case.pending {
            Some(why) => println!(
                "pending {}: {why}\n    now: {}\n    differs: {}",
                case.file,
                r.headline.text,
                wrong.join("; ")
            ),
            None if !wrong.is_empty() => failures.push(format!(
                "{}: {}\n    headline: {}",
                case.file,
                wrong.join("; "),
                r.headline.text
            )),
            None => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 11 pattern 14: a finding that says to change a setting has that setting among the
/// recommendations, and a named bottleneck always comes with one.
#[test]
fn every_setting_a_finding_names_is_recommended() {
    let mut failures = Vec::new();
    let mut levers_seen = 0;
    for case in CASES {
        let r = diagnose(case.file);
        let recommended: Vec<diagnosis::report::Lever> = r
            .recommendations
            .iter()
            .flat_map(|x| x.kind.levers())
            .collect();
        for f in &r.findings {
            for l in &f.levers {
                levers_seen += 1;
                if !recommended.contains(l) {
                    failures.push(format!("{}: {:?} names {:?}", case.file, f.kind, l));
                }
            }
        }
        let named = !matches!(
            r.bottleneck,
            B::Inconclusive
                | B::NoSchedulerLines
                | B::StartupOnly
                | B::StartupIncomplete
                | B::SchedulerCrashed
                | B::Stall
        );
        let bottleneck_levers = r.findings.first().is_some_and(|f| !f.levers.is_empty());
        if named && bottleneck_levers && r.recommendations.is_empty() {
            failures.push(format!(
                "{}: {:?} without a recommendation",
                case.file, r.bottleneck
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // the check has something to check: most real logs name a setting
    assert!(levers_seen > 40, "{levers_seen}");
}

#[test]
fn a_pending_row_that_passes_loses_its_mark() {
    let fixed: Vec<&str> = CASES
        .iter()
        .filter(|c| c.pending.is_some())
        .filter(|c| disagreements(c, &diagnose(c.file)).is_empty())
        .map(|c| c.file)
        .collect();
    assert!(
        fixed.is_empty(),
        "these rows pass now: remove their `pending` mark: {fixed:?}"
    );
}

#[test]
fn every_shared_file_has_a_row() {
    let mut missing = Vec::new();
    for dir in ["real", "real-2", "real-long"] {
        for sub in ["", "bench", "nvidia-smi"] {
            let rel_dir = if sub.is_empty() {
                dir.to_string()
            } else {
                format!("{dir}/{sub}")
            };
            let Ok(entries) = std::fs::read_dir(data(&rel_dir)) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("entry").path();
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                if !path.is_file() || name == "README.md" || name == "SOURCES.tsv" {
                    continue;
                }
                let rel = format!("{rel_dir}/{name}");
                // real/nvidia-smi/101 is an extra copy of real-2's file.
                if rel == "real/nvidia-smi/101-marimo-pr6822-gb10-csv-na-and-table-header.txt" {
                    continue;
                }
                if !CASES.iter().any(|c| c.file == rel) {
                    missing.push(rel);
                }
            }
        }
    }
    assert!(missing.is_empty(), "no row for {missing:?}");
    // Every row names a file that exists.
    for c in CASES {
        assert!(data(c.file).is_file(), "{}", c.file);
    }
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
    // median 0.84 over the measured run's steady decode lines: the KV cache (at 0.95) stops ~13
    // more before the cap of 192 would, counted at the longer requests' KV (the 90th percentile
    // of usage per request: requests grow as they decode). The running median and the usage
    // are the decode lines' (a prefill line counts the batch before its own requests join).
    let r = diagnose("real-long/ascend-qwen3-30b-tp2-eagle3-highload.log");
    assert_eq!(r.bottleneck, Bottleneck::ClientBound);
    let rec = &r.recommendations[0];
    assert!(rec.action.starts_with("Send more requests at once"));
    assert!(
        rec.expected_gain.contains("~156 requests run at token usage ~0.84 (p90 0.88); about 13 more could run at once before the KV cache (at the longer requests' KV) stops them"),
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

#[test]
fn a_rate_from_one_decode_line_says_so() {
    // 113: line 3 (3.22 tok/s) is the first window, line 4 reads 140.78: one sample.
    let r = diagnose("real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log");
    assert!(
        r.headline
            .text
            .ends_with("Server generates 141 tok/s (one sample)."),
        "{}",
        r.headline.text
    );
    // 004: nine lines in one second; the first line's window lies before the log.
    let r = diagnose("real/004-sglang-jax-pr564-cache-miss.log");
    assert!(
        r.headline.text.ends_with(
            "Server generates 85 tok/s (mean of 8 decode lines that share one timestamp: few samples)."
        ),
        "{}",
        r.headline.text
    );
    // No rate over time: the report still says so.
    assert!(
        r.not_concluded
            .iter()
            .any(|n| n.reason == diagnosis::report::NotConcludedReason::NoTimedDecodeLines)
    );
}

#[test]
fn held_admission_is_the_verdict_and_names_the_prefill_interval() {
    // one request waits at token usage 0.00 while prefill batches run at iterations 10 and
    // 411 (lines 1, 12): the verdict is held admission, and the recommendation is the
    // scheduler's prefill interval (SOURCES: --prefill-decode-interval 400)
    let r = diagnose("real/059-npu-doc-forward-iteration-numbers-prefill-decode-interval.log");
    assert_eq!(r.bottleneck, B::AdmissionHeld);
    let held = r
        .headline
        .held_admission
        .expect("held admission in the headline");
    assert_eq!(held.prefill_gap_iters, Some(401));
    assert!(
        r.headline
            .text
            .starts_with("Admission held between prefill passes: "),
        "{}",
        r.headline.text
    );
    assert_eq!(
        r.recommendations.first().map(|x| x.kind),
        Some(RecommendationKind::Change {
            lever: Lever::PrefillInterval,
            finding: F::HeldAdmission
        })
    );
    // a log where the verdict is named keeps its own headline
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    assert!(b2.headline.held_admission.is_none());
}

#[test]
fn a_log_whose_requests_were_all_rejected_says_so_in_the_headline() {
    // Issue 11 pattern 7: 113's access line answered 400 (one field changed), with the
    // context-length error SGLang's tokenizer manager raises for it; no batch line ran
    let text = std::fs::read_to_string(data(
        "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log",
    ))
    .expect("113");
    let access = text
        .lines()
        .nth(1)
        .expect("line 2")
        .replace("200 OK", "400 Bad Request");
    let log = format!(
        "{access}\n[2026-08-23 09:06:20] Error in request: The input (170000 tokens) is longer than the model's context length (163840 tokens).\n"
    );
    let r = diagnose_parts(&[("rejected.log", log.as_bytes())]);
    assert_eq!(r.bottleneck, B::RequestsRejected);
    let rej = r.headline.rejected.expect("typed rejection");
    assert_eq!(rej.client_errors, 1);
    assert_eq!(rej.context_len, Some(163840));
    assert_eq!(rej.largest_requested, Some(170000));
    assert!(r.findings.iter().any(|f| f.kind == F::RequestsRejected));
    // the same access line answered 200 is no rejection: no verdict from it
    let served = diagnose_parts(&[(
        "served.log",
        text.lines().nth(1).expect("line 2").as_bytes(),
    )]);
    assert_eq!(served.bottleneck, B::NoSchedulerLines);
}

#[test]
fn a_hybrid_swa_log_reports_both_pools() {
    // Issue 11 pattern 4: `Use Sliding window memory pool. full_layer_tokens=120000,
    // swa_layer_tokens=96000` (spec example, line 1): two pools, each against its own size
    let r = diagnose("spec-examples/hybrid-swa-v0.5.4-v0.5.8.log");
    assert_eq!(r.capacity.max_total_num_tokens, Some(120000));
    assert_eq!(r.capacity.swa_pool_tokens, Some(96000));
    // a model without an SWA pool has none
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    assert_eq!(b2.capacity.swa_pool_tokens, None);
}

#[test]
fn a_max_total_tokens_cap_holds_every_what_if_row() {
    // `max_total_tokens=450560` in server_args (line 135) and `#tokens: 450560` (line 444):
    // SGLang takes the smaller of the cap and what memory holds, so no row grows the pool
    let r = diagnose("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    let t = &r.capacity_model.as_ref().expect("what-if").what_if;
    assert_eq!(t.current_tokens, 450560);
    assert!(t.rows.iter().all(|row| row.pool_tokens <= 450560));
    let capped = t.rows.iter().filter(|row| row.note.is_some()).count();
    assert!(capped > 5, "{capped}");
    // and no recommendation to raise mem_fraction_static for a bigger pool
    assert!(
        !r.recommendations
            .iter()
            .any(|x| matches!(x.kind, diagnosis::report::RecommendationKind::Apply { .. }))
    );
    // a log without the cap keeps its rows (b2 grows with the fraction)
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    let m = b2.capacity_model.as_ref().expect("b2 what-if");
    assert!(
        m.what_if
            .rows
            .iter()
            .any(|row| row.pool_tokens > m.what_if.current_tokens)
    );
}

#[test]
fn a_client_bound_pd_decode_node_names_its_transfers() {
    // DP0-DP15 of a PD decode node: running below the cap of 26, #queue-req 0, and
    // `#transfer-req` above 0 on 1543 of 2656 decode lines (e.g. line 3517): its load is what
    // the prefill side hands over
    let r = diagnose("real-long/ascend-dsr1-pd-decode-dp32.log");
    assert_eq!(r.bottleneck, B::ClientBound);
    let t = r.headline.pd_decode_transfer.expect("transfers");
    assert!((1.0..2.0).contains(&t), "{t}");
    // the client sent more than was served (ascend-dsr1-pd-client-router.log:3696, 3708:
    // concurrency 832, peak 869): the label and the advice point at the prefill side and the
    // handoff, never at the client's concurrency
    assert!(
        r.headline
            .text
            .starts_with("PD decode fed by the prefill side: "),
        "{}",
        r.headline.text
    );
    let kinds = rec_kinds(&r);
    assert_eq!(kinds, [RecommendationKind::CheckPrefillSide]);
    assert!(r.schedulers.iter().all(|s| s.pd_decode));
    assert_eq!(
        diagnosis::narrative::scheduler_verdict_label(&r.schedulers[0]),
        "fed by the prefill side"
    );
    // a server that is not a PD decode node has none
    let q = diagnose("real-long/ascend-qwen3-30b-tp2-eagle3-highload.log");
    assert_eq!(q.headline.pd_decode_transfer, None);
}

#[test]
fn with_chunked_prefill_off_mixed_chunks_are_not_advised() {
    // `chunked_prefill_size=-1` (lines 135, 484): no chunks to mix, so a prefill
    // interference finding asks for a chunk size instead of --enable-mixed-chunk. (Its
    // prefills run in the ramp, 12 of them at #running-req 0: too few interrupt a decode for
    // the finding itself, so its words are checked on this log's capacity.)
    let r = diagnose("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    assert!(r.capacity.chunked_prefill_off);
    let f = diagnosis::rules::prefill_interference::Facts {
        scheduler: diagnosis::SchedulerKey {
            source: None,
            dp: None,
            pp: None,
        },
        loss: 0.2,
        share_with_prefill: 0.3,
        clean_tok_per_s: 100.0,
        mixed_tok_per_s: 60.0,
        largest_prefill_tokens: Some(32_768),
        evidence: None,
        mixed_chunk: diagnosis::rules::prefill_interference::MixedChunk::Available,
    };
    use diagnosis::rules::{Input, Rule, prefill_interference::PrefillInterference};
    let ev = diagnosis::Evidence::default();
    let input = Input {
        ev: &ev,
        views: &[],
        capacity: &r.capacity,
        retractions: &r.retractions,
    };
    let levers = PrefillInterference::finding(&f, &input).levers;
    assert!(levers.contains(&diagnosis::report::Lever::ChunkedPrefillSize));
    assert!(!levers.contains(&diagnosis::report::Lever::EnableMixedChunk));
    // b2 runs 8192-token chunks
    assert!(
        !diagnose("scenarios/kimi-k25-b2/server.log")
            .capacity
            .chunked_prefill_off
    );
}

#[test]
fn a_ceiling_only_from_a_fit_that_explains_the_lines() {
    // maxrun2: 2 running on every rank, so the step-time fit has one batch size and explains
    // nothing; it used to print "ceiling ~488 tok/s (0.6x the measured 835)"
    let r = diagnose("real-long/ascend-dsr1-pd-decode-maxrun2-queued.log");
    let p = r.projection.as_ref().expect("a fit is still made");
    assert!(
        p.r2 < 0.5 || p.a <= 0.0 || p.running_range.1 < 1.5 * p.running_range.0,
        "{p:?}"
    );
    assert_eq!(p.ceiling_tok_per_s, None);
    // b2's fit spans batch sizes and explains them: it keeps its ceiling, above the rate now
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    let q = b2.projection.as_ref().expect("b2 fit");
    assert!(q.r2 >= 0.5, "{}", q.r2);
    assert!(q.ceiling_tok_per_s.expect("ceiling") > q.current_tok_per_s);
}

#[test]
fn two_long_requests_holding_a_full_pool_lead_with_max_tokens() {
    // lines 1-5: 2 running, #token 307481-307801, usage 1.00, #queue-req 0; one retraction
    // (lines 6-10). SOURCES: two runaway generations of ~150k tokens fill the pool, fix =
    // cap max_tokens; more KV or admission settings add nothing while nothing waits
    let r = diagnose("real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log");
    assert_eq!(r.bottleneck, B::KvCacheBound);
    let l = r.headline.long_requests.expect("a few long requests");
    assert_eq!(l.running, 2.0);
    assert_eq!(l.tokens_per_request, 307641.0 / 2.0);
    let kinds = rec_kinds(&r);
    assert_eq!(
        kinds,
        [RecommendationKind::Change {
            lever: Lever::MaxTokens,
            finding: F::KvCacheBound
        }]
    );
    // a full pool with requests waiting keeps the KV plans (019: queue 990 at usage ~1.00)
    let queued = diagnose("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log");
    assert!(queued.headline.long_requests.is_none());
    assert!(
        queued
            .recommendations
            .iter()
            .any(|x| x.kind == RecommendationKind::MoreKvSlots)
    );
}

#[test]
fn one_recommendation_raises_both_prefill_budgets() {
    // 026 lines 1-2: 3 × 5000 = 15000 of 16384 new tokens per prefill batch while 40-56 wait:
    // the prefill-bound recommendation raises --chunked-prefill-size and --max-prefill-tokens,
    // and no second one raises --max-prefill-tokens again
    let r = diagnose("real/026-i6901-docker-compose-prefix-prefill.log");
    assert_eq!(r.bottleneck, B::PrefillBound);
    let kinds = rec_kinds(&r);
    assert_eq!(
        kinds,
        [RecommendationKind::Change {
            lever: Lever::ChunkedPrefillSize,
            finding: F::PrefillBound
        }]
    );
    // two prefill lines over 1 s are a snapshot: low confidence
    assert_eq!(r.findings[0].confidence, diagnosis::Confidence::Low);
}

#[test]
fn a_benchmark_capped_at_the_servers_cap_is_named_in_the_cap_advice() {
    // dp16: max_running_requests=16 per DP rank over 16 ranks; the bench summary's
    // `Max request concurrency: 256` (line 8834) is exactly that, and CUDA graphs stop at 16
    let r = diagnose("real-long/ascend-dsr1-dp16-mtp-mixed.log");
    assert_eq!(r.bottleneck, B::RunningCapBound);
    let cap = r
        .recommendations
        .iter()
        .find(|x| x.kind == RecommendationKind::RaiseMaxRunningRequests)
        .expect("raise the cap");
    assert!(
        cap.action
            .contains("sends at most 256 requests at once, exactly the server's cap of 256 (16 per DP rank × 16 ranks"),
        "{}",
        cap.action
    );
    assert!(
        cap.risk
            .contains("captured only up to 16 requests per rank"),
        "{}",
        cap.risk
    );
}

#[test]
fn a_queue_seen_only_while_the_batch_refills_is_named() {
    // qwen3next: every decode line prints #queue-req 0 at 80 running, while prefill lines
    // show the queue refilling after waves of completions (63 at lines 593 and 850)
    let r = diagnose("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    assert_eq!(r.headline.queued_peak, Some(0.0));
    assert_eq!(r.headline.refill_queue_peak, Some(63.0));
    assert!(
        r.headline
            .text
            .contains("nothing waits on the decode lines (requests queue only while the batch refills, up to 63 on prefill lines)"),
        "{}",
        r.headline.text
    );
}

#[test]
fn a_hung_server_shows_the_stall_on_every_rank_of_the_table() {
    // 052: DP12 and DP14 print 12 running at 3.3 tok/s (lines 1-2), then the watchdog and a
    // py-spy dump: the headline is a stall, and so is each rank's row
    let r = diagnose("real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log");
    assert_eq!(r.bottleneck, B::Stall);
    let rows: Vec<(&str, B)> = r
        .schedulers
        .iter()
        .map(|s| (s.name.as_str(), s.bottleneck))
        .collect();
    assert_eq!(rows, [("DP12", B::Stall), ("DP14", B::Stall)]);
    // a rank's own verdict stays where nothing is hung (b2: KV-bound)
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    assert!(
        b2.schedulers
            .iter()
            .all(|s| s.bottleneck == B::KvCacheBound)
    );
}

#[test]
fn three_decode_lines_over_eight_seconds_are_a_low_confidence_verdict() {
    // 025: lines 1-6, usage 0.66 → 0.63 while the queue grows 2 → 4 over 8 s
    let r = diagnose("real/025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log");
    assert_eq!(r.bottleneck, B::SchedulerConservative);
    assert_eq!(r.findings[0].confidence, diagnosis::Confidence::Low);
}

#[test]
fn a_ramp_that_will_fill_the_pool_is_not_sent_to_bigger_prefill_chunks() {
    // 055 lines 6-12: usage 0.00 → 0.77 in 4 s at +0.15 per 8192-token prefill batch, with 18
    // still waiting: the pool, not prefill, will hold the batch
    let r = diagnose("real/055-i1612-engine-generate-offline-tqdm-time-only.log");
    assert_eq!(r.bottleneck, B::KvCacheBound);
    let fill = r.headline.pool_fill.expect("the pool fills");
    assert_eq!((fill.holding, fill.to_come), (21, 23));
    assert!((fill.projected_usage - 1.613).abs() < 0.001, "{fill:?}");
    assert!(
        r.recommendations
            .iter()
            .all(|x| !x.kind.levers().contains(&Lever::ChunkedPrefillSize)),
        "{:?}",
        r.recommendations
    );
    assert!(
        r.recommendations
            .iter()
            .any(|x| x.kind == RecommendationKind::MoreKvSlots)
    );
    // the ramp is still said
    assert!(r.findings.iter().any(|f| f.kind == F::RampOnly));
}

#[test]
fn a_launch_command_stands_in_for_a_missing_server_args_line() {
    // real-2/109 has no server_args=ServerArgs(…) line; line 2 echoes the launch command:
    // --mem-fraction-static 0.8, --max-running-requests 384 over --dp-size 16, and CUDA graphs
    // for batches 8 … 24 (SOURCES: raise the cap and --cuda-graph-bs together)
    let r = diagnose("real-2/109-npu-pd-decode-1p1d-dp16-running-pinned-24-queue-usage046.log");
    assert_eq!(r.capacity.mem_fraction_static, Some(0.8));
    assert_eq!(r.bottleneck, B::RunningCapBound);
    let cap = r
        .recommendations
        .iter()
        .find(|x| x.kind == RecommendationKind::RaiseMaxRunningRequests)
        .expect("raise the cap");
    assert!(
        cap.risk
            .contains("captured only up to 24 requests per rank"),
        "{}",
        cap.risk
    );
    // the sizes are an explicit --cuda-graph-bs list: that list is what to extend
    assert!(
        cap.risk.contains("add larger sizes to --cuda-graph-bs"),
        "{}",
        cap.risk
    );
}

#[test]
fn with_chunked_prefill_off_the_chunk_advised_is_below_the_largest_prefill_pass() {
    // dp16: chunked_prefill_size=-1 (lines 150, 1791) and prompts of ~2k tokens, so a chunk
    // of 8192 would split nothing: the size offered is below the largest prefill pass seen
    let r = diagnose("real-long/ascend-dsr1-dp16-mtp-mixed.log");
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == F::PrefillInterference)
        .expect("interference");
    assert!(
        f.detail.contains("below the largest prefill pass here ("),
        "{}",
        f.detail
    );
    assert!(!f.detail.contains("e.g. 8192"), "{}", f.detail);
}

#[test]
fn a_missing_ceiling_says_which_test_of_the_fit_failed() {
    use diagnosis::report::NoCeiling;
    let why = |rel: &str| diagnose(rel).projection.and_then(|p| p.no_ceiling);
    // qwen3next: every steady decode line runs the cap of 80 (the ramp is not fitted): no
    // fit at all, and --expect is answered with that reason
    let q = diagnose("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    assert!(q.projection.is_none());
    // maxrun2: 1-2 running on the steady lines (first windows after idle left out): the fit
    // explains little (R² ~0.12)
    assert!(matches!(
        why("real-long/ascend-dsr1-pd-decode-maxrun2-queued.log"),
        Some(NoCeiling::PoorFit { r2 }) if r2 < 0.2
    ));
    // dp16: the fit explains little (R² ~0.18)
    assert!(matches!(
        why("real-long/ascend-dsr1-dp16-mtp-mixed.log"),
        Some(NoCeiling::PoorFit { r2 }) if r2 < 0.2
    ));
    // b2 has its ceiling, and no reason against one
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    let p = b2.projection.expect("projection");
    assert!(p.ceiling_tok_per_s.is_some());
    assert_eq!(p.no_ceiling, None);
}

/// real-4/108: every PD decode rank at its cap of 26 with token usage ~0.8: both limits bind,
/// so more KV slots come before a higher cap (raising the cap alone would run the pool out).
#[test]
fn a_cap_with_a_nearly_full_pool_asks_for_kv_first() {
    use diagnosis::report::RecommendationKind as K;
    let r = diagnose("real-4/108-npu-pd-decode-2node-dp32-mtp-cap26-usage078-transfer.log");
    assert_eq!(r.bottleneck, diagnosis::Bottleneck::RunningCapBound);
    let kinds: Vec<&K> = r.recommendations.iter().map(|x| &x.kind).collect();
    let kv = kinds
        .iter()
        .position(|k| matches!(k, K::MoreKvSlots | K::Apply { .. }));
    let cap = kinds
        .iter()
        .position(|k| matches!(k, K::RaiseMaxRunningRequests));
    assert!(
        matches!((kv, cap), (Some(a), Some(b)) if a < b),
        "{kinds:?}"
    );
}

/// real-3/009: prefill lines at 1, 2, 10 and 26 running (each counted before its own new
/// requests join), then the decode line at 40: the running requests are the decode line's.
#[test]
fn running_requests_come_from_the_decode_lines() {
    let r = diagnose("real-3/009-pr30047-npu-mamba-usage-accept-len.log");
    assert_eq!(r.headline.running_median, Some(40.0));
}

#[test]
fn the_projection_says_the_scale_that_puts_its_rows_on_the_measured_rate() {
    // b2: the fit's "now" row (today's pool filled) is not the measured rate; the JSON rows
    // are the fit's, and `measured_scale` is what the text table multiplies them by, so the
    // "now" row reads the measured rate on that scale
    let r = diagnose("scenarios/kimi-k25-b2/server.log");
    let p = r.projection.as_ref().expect("a fit");
    let m = r.steady_gen_throughput.as_ref().expect("a rate").value;
    let now = p
        .rows
        .iter()
        .find(|x| x.change == kv_capacity::Change::Current)
        .expect("a now row");
    let scale = p.measured_scale.expect("a scale");
    assert!((now.tok_per_s * scale - m).abs() < 1e-6, "{scale}");
    assert!((scale - 1.0).abs() < 0.2, "{scale}");
}

#[test]
fn more_kv_slots_asks_for_the_input_the_what_if_table_lacks() {
    // the simulator's log (GuideLLM run) prints the KV allocation and the weights line but no
    // server_args: mem_fraction_static is what the table lacks, so the advice asks for
    // --server-info, not for a model config or a GPU snapshot it does not need
    let r = diagnose("clients/guidellm-0.8.1/server.log");
    let rec = r
        .recommendations
        .iter()
        .find(|x| x.kind == RecommendationKind::MoreKvSlots)
        .expect("more KV slots");
    assert!(
        rec.expected_gain.contains("with --server-info"),
        "{}",
        rec.expected_gain
    );
    assert!(
        !rec.expected_gain.contains("--model-config"),
        "{}",
        rec.expected_gain
    );
}

#[test]
fn an_ascend_npu_build_is_offered_no_fp8_kv_cache() {
    // 108: `npu graph` on every decode line; SGLang's NPU KV cache has no fp8, so the advice to
    // give the KV cache more slots names none
    let r = diagnose("real-4/108-npu-pd-decode-2node-dp32-mtp-cap26-usage078-transfer.log");
    let rec = r
        .recommendations
        .iter()
        .find(|x| x.kind == RecommendationKind::MoreKvSlots)
        .expect("more KV slots");
    assert!(
        !rec.action.contains("use an fp8 KV cache"),
        "{}",
        rec.action
    );
    // the DP16 Ascend run (device='npu' in its server_args, `cpu graph` on its lines): no fp8
    // row in its what-if table; a CUDA run keeps them
    let is_fp8 = |r: &Report| {
        r.capacity_model.as_ref().is_some_and(|cm| {
            cm.what_if
                .rows
                .iter()
                .any(|w| matches!(w.change, kv_capacity::Change::KvDtype { .. }))
        })
    };
    let npu = diagnose("real-long/ascend-dsr1-pd-decode-maxrun2-queued.log");
    assert!(npu.capacity_model.is_some());
    assert!(!is_fp8(&npu));
    assert!(is_fp8(&diagnose("scenarios/kimi-k25-b2/server.log")));
}

#[test]
fn the_answer_says_what_todays_pool_holds_below_the_ceilings_batch() {
    // 101: the ceiling is taken at 48 running (speculative decoding's default cap, assumed);
    // at the long-prefix requests' KV today's pool holds ~11, which recommendation 1 also
    // says: the Answer names both, with the fit's rate at 11
    let r = diagnose("real-4/101-dgxspark-gb10-long-prefix-chunked-then-400-ctx-exceeded.log");
    let e = r.expectation.as_ref().expect("an answer");
    assert_eq!(e.ceiling_at_running, Some(48.0));
    assert!(e.running_cap_assumed);
    let h = e.kv_holds.expect("what today's pool holds");
    assert!((8.0..15.0).contains(&h.running), "{h:?}");
    let ceiling = e.ceiling_tok_per_s.expect("a ceiling");
    assert!(
        h.tok_per_s > e.measured_tok_per_s && h.tok_per_s < ceiling,
        "{h:?}"
    );
    // a KV-bound run (the founding case) has no room to speak of: nothing added
    let b2 = diagnose("scenarios/kimi-k25-b2/server.log");
    assert_eq!(b2.expectation.and_then(|e| e.kv_holds), None);
}

/// real-3/021: a speculative build whose lines a terminal cut: ~80 wait while one request a
/// pass takes the batch to 48 (SGLang's default cap with speculative decoding, not printed),
/// and token usage is unreadable. The cap or the pool holds them: inconclusive, naming the
/// assumed cap, and no "raise the cap" on a pool nobody read.
#[test]
fn an_assumed_cap_with_an_unread_pool_is_inconclusive() {
    let r = diagnose("real-3/021-pr25960-npu-column-truncated-malformed.log");
    assert_eq!(r.headline.verdict, Bottleneck::Inconclusive);
    assert_eq!(r.headline.assumed_cap, Some(48));
    assert!(
        !rec_kinds(&r).contains(&RecommendationKind::RaiseMaxRunningRequests),
        "{:?}",
        rec_kinds(&r)
    );
    // the damaged prefill lines' running counts are read (their key's tail), so the one
    // request a pass is still a finding beside it
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds.first(),
        Some(&diagnosis::report::FindingKind::RunningCapBound)
    );
    assert!(
        kinds.contains(&diagnosis::report::FindingKind::PrefillBound),
        "{kinds:?}"
    );
}

/// real-3/018: four DP ranks pinned at 32 with 0-2 waiting: a higher cap admits those few
/// now, and more only as more is sent; real-long qwen3next: nothing waits at the cap, so no
/// queue is promised.
#[test]
fn a_higher_cap_gains_what_waits() {
    let gain = |rel: &str| {
        diagnose(rel)
            .recommendations
            .iter()
            .find(|x| x.kind == RecommendationKind::RaiseMaxRunningRequests)
            .map(|x| x.expected_gain.clone())
            .unwrap_or_else(|| panic!("{rel}: no cap advice"))
    };
    let g = gain("real-3/018-pr11854-h20-dp-ep-custom-logformat-mtp.log");
    assert!(
        g.contains("at most 2 per rank wait while the batch is at the cap, so up to that many more now if the KV pool holds them"),
        "{g}"
    );
    let g = gain("real-long/ascend-qwen3next-80b-hybrid-mamba.log");
    assert!(!g.contains("today's queue"), "{g}");
}

/// A server verdict the overrides name from a weak vote shows in each weak row too (strict
/// expert: the table said "client too slow" beside the headline): real/037's slow prefill
/// chunks, real/058's decode at ~0.1 tok/s a request, real-3/045's JIT warm-up at the end.
#[test]
fn the_table_rows_agree_with_an_overridden_headline() {
    for (rel, want) in [
        (
            "real/037-llama-benchy-i15-swa-prefill-slow-46tps.log",
            B::PrefillComputeBound,
        ),
        (
            "real/058-pr29853-npu-grok2-128running-14tps-no-graph.log",
            B::DecodeComputeBound,
        ),
        (
            "real-3/045-pr10622-qwen3next-dp-ep-mamba-usage-deepgemm-jit.log",
            B::Inconclusive,
        ),
    ] {
        let r = diagnose(rel);
        assert_eq!(r.bottleneck, want, "{rel}");
        assert!(!r.schedulers.is_empty(), "{rel}");
        for s in &r.schedulers {
            assert_eq!(s.bottleneck, want, "{rel}: {}", s.name);
        }
    }
}

/// real/019: one decode line of `DP0 TP0`: a DP rank of a server with several, whose rate is
/// that rank's, not the server's (strict expert).
#[test]
fn one_dp_rank_is_not_the_server() {
    let r = diagnose("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log");
    let h = &r.headline.summary;
    assert!(
        h.contains("The one DP rank in the log (of at least 2")
            && h.contains("generates 325 tok/s"),
        "{h}"
    );
    assert!(!h.contains("Server generates"), "{h}");
}
