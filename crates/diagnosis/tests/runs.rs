//! Logs that hold several server runs (a restart, a second startup block, hours of silence, a
//! log given twice) are split into runs, each diagnosed as its own lines alone would be, and
//! the report says so; a real log with idle gaps and no restart stays one run.

use std::path::{Path, PathBuf};

use diagnosis::report::RunStart;
use diagnosis::{EvidenceBuilder, Report};
use sglang_log::LogReader;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Diagnose `text` read as one source named `log`.
fn diagnose(text: &[u8]) -> Report {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("log");
    let stats = LogReader::from_reader("log", text)
        .for_each(|rec| b.push(id, rec))
        .expect("in memory");
    b.finish_source(id, &stats);
    diagnosis::diagnose(&b.build())
}

fn rate(r: &Report) -> Option<f64> {
    r.steady_gen_throughput.as_ref().map(|g| g.value)
}

fn line_count(text: &[u8]) -> u64 {
    text.split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .count() as u64
}

/// `text` with every `[YYYY-MM-DD HH:MM:SS` stamp moved `hours` later (whole hours, so
/// the minutes and seconds stay; the date rolls over within one month).
fn shifted(text: &[u8], hours: u32) -> Vec<u8> {
    let s = std::str::from_utf8(text).expect("utf-8 log");
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        let b = line.as_bytes();
        let stamped = b.len() > 14
            && b[0] == b'['
            && b[5] == b'-'
            && b[8] == b'-'
            && b[11] == b' '
            && b[14] == b':';
        if !stamped {
            out.push_str(line);
            continue;
        }
        let day: u32 = line[9..11].parse().expect("day");
        let hour: u32 = line[12..14].parse().expect("hour");
        let h = hour + hours;
        out.push_str(&format!(
            "{}{:02} {:02}{}",
            &line[..9],
            day + h / 24,
            h % 24,
            &line[14..]
        ));
    }
    out.into_bytes()
}

const B1: &str = "scenarios/kimi-k25-b1/server.log";
const B2: &str = "scenarios/kimi-k25-b2/server.log";

/// Two runs one after the other: each run's lines, verdict and steady rate are those of its
/// file diagnosed alone, the report is the second's, and its text says how many runs.
fn two_runs(a: &[u8], b: &[u8]) -> (Report, Report, Report) {
    let joined = [a, b].concat();
    (diagnose(a), diagnose(b), diagnose(&joined))
}

fn check_two_runs(one: &Report, two: &Report, r: &Report, lines_a: u64, lines_b: u64) {
    let runs = r.runs.as_ref().expect("two runs");
    assert_eq!(runs.count, 2);
    assert_eq!(runs.runs.len(), 2);
    let (r1, r2) = (&runs.runs[0], &runs.runs[1]);
    assert_eq!((r1.index, r2.index), (1, 2));
    assert_eq!(r1.first.line, 1);
    assert_eq!(r1.last.as_ref().map(|l| l.line), Some(lines_a));
    assert_eq!(r2.first.line, lines_a + 1);
    assert_eq!(r2.last.as_ref().map(|l| l.line), Some(lines_a + lines_b));
    assert_eq!(r1.begins, None);
    assert!(!r1.diagnosed && r2.diagnosed);
    assert_eq!(r1.bottleneck, one.bottleneck);
    assert_eq!(r1.steady_gen_tok_per_s, rate(one));
    assert_eq!(r2.bottleneck, two.bottleneck);
    assert_eq!(r2.steady_gen_tok_per_s, rate(two));
    assert!(r1.steady_gen_tok_per_s.is_some() && r2.steady_gen_tok_per_s.is_some());
    // the report is the last run's, as its file alone gives it
    assert_eq!(r.bottleneck, two.bottleneck);
    assert_eq!(rate(r), rate(two));
    assert_eq!(
        r.capacity.max_total_num_tokens,
        two.capacity.max_total_num_tokens
    );
    assert_eq!(
        r.schedulers.iter().map(|s| s.decode_lines).sum::<u64>(),
        two.schedulers.iter().map(|s| s.decode_lines).sum::<u64>()
    );
    assert!(runs.text.starts_with("This log holds 2 server runs"));
}

#[test]
fn a_restart_whose_clock_steps_back_is_two_runs() {
    let (a, b) = (read(B1), read(B2));
    let (one, two, r) = two_runs(&a, &b);
    check_two_runs(&one, &two, &r, line_count(&a), line_count(&b));
    let runs = r.runs.as_ref().expect("runs");
    let r2 = &runs.runs[1];
    // b1 ends at 14:59:59, b2's server_args line is stamped 13:58:00
    assert_eq!(r2.begins, Some(RunStart::StepBack { seconds: 3719.0 }));
    assert_eq!(r2.gap_before_s, Some(-3719.0));
    assert_eq!(r2.repeats, None);
}

#[test]
fn a_restart_22_hours_later_is_two_runs_not_one_steady_day() {
    let (a, b) = (read(B1), shifted(&read(B2), 22));
    let (one, two, r) = two_runs(&a, &b);
    check_two_runs(&one, &two, &r, line_count(&a), line_count(&b));
    let runs = r.runs.as_ref().expect("runs");
    let r2 = &runs.runs[1];
    assert_eq!(r2.begins, Some(RunStart::NewStartup));
    // 14:59:59 to 11:58:00 the next day (13:58:00 moved 22 h on)
    assert_eq!(r2.gap_before_s, Some(20.0 * 3600.0 + 58.0 * 60.0 + 1.0));
    // no steady span is held across the gap: the report's span is the second run's
    let span = |rep: &Report| {
        rep.schedulers
            .iter()
            .filter_map(|s| s.span.as_ref())
            .map(|s| s.steady_end_s - s.steady_start_s)
            .fold(0.0, f64::max)
    };
    assert_eq!(span(&r), span(&two));
    let own = r2.end_s.zip(r2.start_s).map(|(b, a)| b - a).expect("times");
    assert!(
        span(&r) <= own && own < 3.0 * 3600.0,
        "{} of {own}",
        span(&r)
    );
}

#[test]
fn a_log_concatenated_with_itself_is_two_identical_runs() {
    let b = read(B2);
    let (_, two, r) = two_runs(&b, &b);
    let n = line_count(&b);
    check_two_runs(&two, &two, &r, n, n);
    let runs = r.runs.as_ref().expect("runs");
    assert_eq!(runs.runs[1].repeats, Some(1));
    assert_eq!(runs.runs[0].repeats, None);
    assert!(runs.text.contains("Run 2 repeats the lines of run 1"));
    // the copy's figures are the file's
    assert_eq!(r.headline.running_median, two.headline.running_median);
    assert_eq!(r.headline.queued_median, two.headline.queued_median);
    assert_eq!(r.findings.len(), two.findings.len());
}

#[test]
fn real_logs_with_idle_gaps_stay_one_run() {
    // decode lines 59 s and 40 s apart: idle gaps as the phases read them, not restarts
    for rel in [
        "real-long/ascend-dsr1-dp16-mtp-mixed.log",
        "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
    ] {
        let mut b = EvidenceBuilder::new();
        let id = b.add_source(rel);
        let stats = LogReader::open(&data(rel))
            .expect("opens")
            .for_each(|rec| b.push(id, rec))
            .expect("reads");
        b.finish_source(id, &stats);
        let ev = b.build();
        assert!(ev.earlier_runs.is_empty(), "{rel}");
        let idle = ev.schedulers.values().any(|tl| {
            let d = tl.decode.samples();
            let gap = diagnosis::evidence::phases::idle_gap_s(d);
            d.windows(2)
                .any(|w| matches!((w[0].t, w[1].t), (Some(a), Some(b)) if b - a > gap))
        });
        assert!(idle, "{rel}: an idle gap");
        assert!(diagnosis::diagnose(&ev).runs.is_none(), "{rel}");
    }
}

#[test]
fn no_shared_real_log_holds_two_runs() {
    for dir in ["real", "real-2", "real-long"] {
        let mut n = 0;
        for entry in std::fs::read_dir(data(dir)).expect("data dir") {
            let path = entry.expect("entry").path();
            let name = path.display().to_string();
            if !matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("log" | "txt")
            ) {
                continue;
            }
            let r = diagnose(&std::fs::read(&path).expect("readable"));
            assert!(r.runs.is_none(), "{name}: {:?}", r.runs);
            n += 1;
        }
        assert!(n > 0, "{dir} holds logs");
    }
}

#[test]
fn each_run_keeps_its_own_startup_configuration() {
    // a Qwen3-4B server on an RTX 4090, then the Kimi-K2.5 scenario: two pools, two configs
    let (a, b) = (
        read("real-long/rtx4090-qwen3-4b-kv-retraction.log"),
        read(B2),
    );
    let (one, two, r) = two_runs(&a, &b);
    assert_ne!(
        one.capacity.max_total_num_tokens,
        two.capacity.max_total_num_tokens
    );
    assert_eq!(
        r.capacity.max_total_num_tokens,
        two.capacity.max_total_num_tokens
    );
    assert_eq!(
        r.capacity.max_running_requests,
        two.capacity.max_running_requests
    );
    assert_eq!(
        r.capacity.mem_fraction_static,
        two.capacity.mem_fraction_static
    );
    assert_eq!(
        r.capacity.chunked_prefill_size,
        two.capacity.chunked_prefill_size
    );
    assert_eq!(r.capacity.weights_gb, two.capacity.weights_gb);
    let runs = r.runs.as_ref().expect("runs");
    assert_eq!(runs.count, 2);
    assert_eq!(runs.runs[0].bottleneck, one.bottleneck);
    assert_eq!(runs.runs[0].steady_gen_tok_per_s, rate(&one));
    assert_eq!(runs.runs[1].bottleneck, two.bottleneck);
    assert_eq!(r.bottleneck, two.bottleneck);
    assert_eq!(rate(&r), rate(&two));
}

/// real-3/036: the same 48 requests decoded twice, first with `cuda graph: False` (lines 2-3,
/// 5,453 and 5,399 tok/s), then, on a clock 111 s earlier, with `cuda graph: True` (line 5,
/// 6,139 tok/s): two runs, and what the graphs were worth between them.
#[test]
fn two_runs_that_differ_in_graph_mode_say_what_graphs_are_worth() {
    let text = read("real-3/036-fastrl-pr4-custom-fmt-spec-accept-len-1.log");
    let r = diagnose(&text);
    let runs = r.runs.as_ref().expect("two runs");
    assert_eq!(runs.runs.len(), 2);
    let (a, b) = (&runs.runs[0], &runs.runs[1]);
    assert_eq!(
        (a.decode_lines_with_graph, a.decode_lines_without_graph),
        (0, 2)
    );
    assert_eq!(
        (b.decode_lines_with_graph, b.decode_lines_without_graph),
        (1, 0)
    );
    assert_eq!(
        (a.running_median, b.running_median),
        (Some(48.0), Some(48.0))
    );
    assert!(
        runs.text.contains("Run 1 decoded without CUDA graphs"),
        "{}",
        runs.text
    );
    assert!(
        runs.text.contains("the graphs were worth +14%"),
        "{}",
        runs.text
    );
    // the same two runs both in graph mode: nothing to compare
    let same = String::from_utf8_lossy(&text).replace("cuda graph: False", "cuda graph: True");
    let r = diagnose(same.as_bytes());
    assert!(!r.runs.expect("two runs").text.contains("graphs were worth"));
}

/// real-3/036 again: no start-up line states a cap, every decode line prints `accept len` and
/// runs 48 (SGLang's default max_running_requests with speculative decoding): the cap is
/// inferred, and said to be; at 47 on every line it is not.
#[test]
fn speculative_decoding_pinned_at_48_is_the_default_cap() {
    let text = read("real-3/036-fastrl-pr4-custom-fmt-spec-accept-len-1.log");
    let r = diagnose(&text);
    assert_eq!(r.capacity.max_running_requests, Some(48));
    assert!(r.capacity.max_running_inferred);
    // at the cap, nothing waits: the cap holds nothing back the log shows, so the verdict
    // cannot name it; raising it is advised only for a client with more to send
    assert_eq!(r.bottleneck, diagnosis::report::Bottleneck::Inconclusive);
    assert!(
        r.recommendations[0]
            .action
            .starts_with("If the client has more requests to send than the cap holds"),
        "{}",
        r.recommendations[0].action
    );
    let fewer = String::from_utf8_lossy(&text).replace("#running-req: 48", "#running-req: 47");
    let r = diagnose(fewer.as_bytes());
    assert_eq!(r.capacity.max_running_requests, None);
    assert!(!r.capacity.max_running_inferred);
    // without accept len (no speculative decoding) 48 is no default
    let plain: String = String::from_utf8_lossy(&text)
        .lines()
        .map(|l| {
            format!(
                "{}\n",
                l.replace("accept len: 1.00, accept rate: 0.11, ", "")
            )
        })
        .collect();
    let r = diagnose(plain.as_bytes());
    assert_eq!(r.capacity.max_running_requests, None);
}

/// Issue 30 A2: one startup line 2 s late (real-long dp16: DP3's `Capture draft extend cuda
/// graph end` of 07:09:23, line 1800, moved after the first batch lines of 07:09:25 and
/// stamped then) is a rank's line out of order, not a restart: one run, the same verdict and
/// rate. A new process imports torch and SGLang before its first line; a startup block that
/// comes after the batch lines by more than that is still a new run (the tests above).
#[test]
fn one_startup_line_two_seconds_late_is_no_restart() {
    let log = read("real-long/ascend-dsr1-dp16-mtp-mixed.log");
    let base = diagnose(&log);
    let text = std::str::from_utf8(&log).expect("utf-8");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let late = lines.remove(1799);
    assert!(
        late.contains("DP3 TP3 EP3] Capture draft extend cuda graph end"),
        "{late}"
    );
    let moved = late.replacen("07:09:23", "07:09:25", 1);
    // after the first batch line (line 1812, now 1811 with one line removed above it)
    lines.insert(1811, moved);
    let r = diagnose(lines.join("\n").as_bytes());
    assert!(r.runs.is_none(), "{:?}", r.runs);
    assert_eq!(r.bottleneck, base.bottleneck);
    assert_eq!(rate(&r), rate(&base));
}

/// Issue 30 A2: lines shuffled within 50-line windows (a collector that interleaves) made 5-7
/// phantom runs of real-long dp16, whose own 76 s pause between the warm-up and the traffic was
/// shuffled across (a batch line stepping back past the jitter window). A step back within the
/// run's own span is a line out of order: one run and the verdict of the log, on every seed.
#[test]
fn lines_shuffled_within_windows_are_one_run() {
    let log = read("real-long/ascend-dsr1-dp16-mtp-mixed.log");
    let base = diagnose(&log);
    let text = std::str::from_utf8(&log).expect("utf-8");
    for seed in 1..=5u64 {
        let mut lines: Vec<&str> = text.lines().collect();
        // a small linear congruential generator: the shuffle is the same on every machine
        let mut x = seed;
        let mut next = |n: usize| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 33) as usize) % n
        };
        for w in lines.chunks_mut(50) {
            for i in (1..w.len()).rev() {
                w.swap(i, next(i + 1));
            }
        }
        let r = diagnose(lines.join("\n").as_bytes());
        assert!(
            r.runs.is_none(),
            "seed {seed}: {:?}",
            r.runs.map(|x| x.count)
        );
        assert_eq!(r.bottleneck, base.bottleneck, "seed {seed}");
    }
}

/// Issue 30 A4: two servers side by side in one job directory (real-long rtx4090, and the
/// rdna4 single-stream log moved to the same hour: each opens with its own startup lines, both
/// print untagged "rank 0" batch lines over the same minutes) were summed into one server;
/// they are named as two. One log alone, or the rtx log beside its own copy, is one server.
#[test]
fn two_servers_side_by_side_are_named() {
    let rtx = read("real-long/rtx4090-qwen3-4b-kv-retraction.log");
    let rdna = String::from_utf8(read(
        "real-long/rdna4-2xr9700-qwen3coder-tp2-single-stream.log",
    ))
    .expect("utf-8")
    .replace("2026-05-25 17:5", "2026-09-13 16:0")
    .replace("2026-05-25 18:0", "2026-09-13 16:1");
    let build = |texts: &[(&str, &[u8])]| {
        let mut b = EvidenceBuilder::new();
        for (name, t) in texts {
            let id = b.add_source(*name);
            let stats = LogReader::from_reader(*name, *t)
                .for_each(|rec| b.push(id, rec))
                .expect("in memory");
            b.finish_source(id, &stats);
        }
        b.build()
    };
    let both = build(&[("rtx.log", &rtx), ("rdna.log", rdna.as_bytes())]);
    assert_eq!(both.concurrent_servers(), Some((0, 1)));
    assert_eq!(build(&[("rtx.log", &rtx)]).concurrent_servers(), None);
    assert_eq!(
        build(&[("rtx.log", &rtx), ("copy.log", &rtx)]).concurrent_servers(),
        None
    );
}
