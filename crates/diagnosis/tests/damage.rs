//! Damaged inputs must not change the headline silently: the same log given twice is counted
//! once, lines out of order are put in order, a log of two server runs (a restart, a log given twice) is split into runs and says so,
//! and random damage (impossible values, swapped lines, duplicated files, over-long lines)
//! either leaves the verdict and rate of the undamaged lines as they were or is reported.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use diagnosis::{Bottleneck, EvidenceBuilder, Report};
use proptest::prelude::*;
use sglang_log::LogReader;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// Diagnose `texts`, each read as its own source.
fn diagnose(texts: &[&[u8]]) -> Report {
    let mut b = EvidenceBuilder::new();
    for (i, t) in texts.iter().enumerate() {
        let name = format!("log{i}");
        let id = b.add_source(&name);
        let mut r = LogReader::from_reader(name, *t);
        let stats = r.for_each(|rec| b.push(id, rec)).expect("in memory");
        b.finish_source(id, &stats);
    }
    diagnosis::diagnose(&b.build())
}

fn rate(r: &Report) -> Option<f64> {
    r.steady_gen_throughput.as_ref().map(|t| t.value)
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(data(rel)).expect("test data")
}

const DP16: &str = "real-long/ascend-dsr1-dp16-mtp-mixed.log";
const RTX: &str = "real-long/rtx4090-qwen3-4b-kv-retraction.log";

#[test]
fn the_same_dp_log_twice_is_counted_once() {
    let log = read(DP16);
    let once = diagnose(&[&log]);
    let twice = diagnose(&[&log, &log]);
    assert_eq!(once.bottleneck, twice.bottleneck);
    assert_eq!(rate(&once), rate(&twice));
    assert!((rate(&once).expect("rate") - 4908.2).abs() < 0.1);
    assert_eq!(once.schedulers.len(), twice.schedulers.len());
    assert!(
        twice
            .sources
            .iter()
            .any(|s| s == "log1 repeats log0: its lines were counted once"),
        "{:?}",
        twice.sources
    );
    // Plain and .gz: the same lines, counted once.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&log).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let mut b = EvidenceBuilder::new();
    for (name, path_bytes) in [("plain.log", None), ("plain.log.gz", Some(gz))] {
        let id = b.add_source(name);
        let stats = match path_bytes {
            None => LogReader::from_reader(name, &log[..]).for_each(|r| b.push(id, r)),
            Some(bytes) => LogReader::from_reader(name, flate2::read::GzDecoder::new(&bytes[..]))
                .for_each(|r| b.push(id, r)),
        }
        .expect("read");
        b.finish_source(id, &stats);
    }
    assert_eq!(rate(&diagnosis::diagnose(&b.build())), rate(&once));
}

#[test]
fn a_reversed_log_reads_as_the_log() {
    let log = read(DP16);
    let mut lines: Vec<&[u8]> = log.split(|&c| c == b'\n').collect();
    lines.reverse();
    let reversed = lines.join(&b'\n');
    let fwd = diagnose(&[&log]);
    let rev = diagnose(&[&reversed]);
    assert_eq!(fwd.bottleneck, rev.bottleneck);
    assert_eq!(rate(&fwd), rate(&rev));
    assert!(
        rev.sources
            .iter()
            .any(|s| s.contains("out of time order by under 60 s were put in order"))
    );
}

#[test]
fn a_log_concatenated_with_itself_is_one_run_said_so() {
    let log = read(RTX);
    let twice = [log.clone(), log.clone()].concat();
    let once = diagnose(&[&log]);
    let r = diagnose(&[&twice]);
    assert_eq!(once.bottleneck, r.bottleneck);
    assert_eq!(rate(&once), rate(&r));
    // two runs, the second the same lines as the first, each with the verdict of one copy
    let runs = r.runs.as_ref().expect("two runs");
    assert_eq!(runs.count, 2);
    // the second copy's run begins at its startup block (its `server_args` line)
    let lines = once.inputs[0].lines;
    let mut server_args = None;
    LogReader::from_reader("log", &log[..])
        .for_each(|rec| {
            if matches!(rec.event, sglang_log::Event::ServerArgs(_)) {
                server_args.get_or_insert(rec.line_no);
            }
        })
        .expect("in memory");
    let start = lines + server_args.expect("a server_args line");
    assert_eq!(runs.runs[0].first.line, 1);
    assert_eq!(runs.runs[0].last.as_ref().map(|l| l.line), Some(start - 1));
    assert_eq!(runs.runs[1].first.line, start);
    assert_eq!(runs.runs[1].last.as_ref().map(|l| l.line), Some(2 * lines));
    assert_eq!(runs.runs[1].repeats, Some(1));
    for run in &runs.runs {
        assert_eq!(run.bottleneck, once.bottleneck);
        assert_eq!(run.steady_gen_tok_per_s, rate(&once));
    }
}

/// Random damage to a real log.
#[derive(Clone, Debug)]
enum Damage {
    /// Replace a batch line's gen throughput with an impossible value.
    Impossible(usize, &'static str),
    /// Swap two adjacent lines.
    Swap(usize),
    /// Give the file twice.
    Duplicate,
    /// Insert a line of 2 MiB without a batch marker.
    LongLine(usize),
    /// Replace one batch line's field with an extreme value that is in range for the parser
    /// (issue 30 A1): `gen throughput (token/s): 5e8`, `#queue-req: 9000000`,
    /// `#running-req: 9000000`.
    Extreme(usize, &'static str, &'static str),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (
            any::<usize>(),
            prop::sample::select(vec!["NaN", "1e309", "-5", "inf"])
        )
            .prop_map(|(i, v)| Damage::Impossible(i, v)),
        any::<usize>().prop_map(Damage::Swap),
        Just(Damage::Duplicate),
        any::<usize>().prop_map(Damage::LongLine),
        (
            any::<usize>(),
            prop::sample::select(vec![
                ("gen throughput (token/s): ", "500000000.00"),
                ("#queue-req: ", "9000000"),
                ("#running-req: ", "9000000"),
            ])
        )
            .prop_map(|(i, (k, v))| Damage::Extreme(i, k, v)),
    ]
}

/// `lines` with line `i` (among those holding `key`) given `value` for `key`.
fn set_field(lines: &mut [Vec<u8>], i: usize, key: &str, value: &str) {
    let with: Vec<usize> = (0..lines.len())
        .filter(|&k| String::from_utf8_lossy(&lines[k]).contains(key))
        .collect();
    let k = with[i % with.len()];
    let text = String::from_utf8_lossy(&lines[k]).into_owned();
    let at = text.find(key).expect("field") + key.len();
    let end = text[at..].find(',').map_or(text.len(), |e| at + e);
    lines[k] = format!("{}{value}{}", &text[..at], &text[end..]).into_bytes();
}

fn apply(log: &[u8], d: &Damage) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = log.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
    let n = lines.len();
    match d {
        Damage::Impossible(i, v) => set_field(&mut lines, *i, "gen throughput (token/s): ", v),
        Damage::Extreme(i, k, v) => set_field(&mut lines, *i, k, v),
        Damage::Swap(i) => lines.swap(i % (n - 1), i % (n - 1) + 1),
        Damage::Duplicate => return vec![log.to_vec(), log.to_vec()],
        Damage::LongLine(i) => lines.insert(i % n, vec![b'x'; 2 << 20]),
    }
    vec![lines.join(&b'\n')]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn damage_leaves_the_headline_or_is_reported(d in damage()) {
        let log = read(RTX);
        let base = diagnose(&[&log]);
        prop_assert_eq!(base.bottleneck, Bottleneck::KvCacheBound);
        let texts = apply(&log, &d);
        let refs: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
        let r = diagnose(&refs);
        let same = r.bottleneck == base.bottleneck
            && match (rate(&r), rate(&base)) {
                (Some(a), Some(b)) => (a - b).abs() <= 0.02 * b,
                (a, b) => a == b,
            };
        let reported = r.inputs.iter().any(|i| i.malformed_lines > 0 || i.rejected_lines > 0 || i.long_lines > 0)
            || !r.sources.is_empty();
        prop_assert!(same || reported, "{:?}: {} vs {}", d, r.headline.text, base.headline.text);
        if matches!(d, Damage::Duplicate) {
            prop_assert!(same, "a duplicated file must be counted once: {}", r.headline.text);
        }
        // one extreme value in range moves nothing, and is said (issue 30 A1; a queue that
        // jumps on the last line of its kind may be a burst arriving as the log ends, which
        // `one_extreme_value_moves_nothing_and_is_said` leaves out)
        if let Damage::Extreme(_, key, _) = d {
            prop_assert!(same, "{:?} moved the headline: {} vs {}", d, r.headline.text, base.headline.text);
            let said = r.inputs.iter().any(|i| i.rejected_lines > 0);
            prop_assert!(said || key == "#queue-req: ", "{:?} was not reported", d);
        }
    }
}

#[test]
fn overlapping_parts_and_another_tp_ranks_copy_are_one_scheduler() {
    let log = String::from_utf8(read("scenarios/kimi-k25-b2/server.log")).expect("utf8");
    let lines: Vec<&str> = log.lines().collect();
    let part =
        |a: usize, b: usize| -> String { lines[a..b].iter().map(|l| format!("{l}\n")).collect() };
    let once = diagnose(&[log.as_bytes()]);
    // Two parts cut with 1,000 lines of overlap.
    let (p1, p2) = (part(0, 4000), part(3000, lines.len()));
    let r = diagnose(&[p1.as_bytes(), p2.as_bytes()]);
    assert_eq!(r.schedulers.len(), 1);
    assert_eq!(rate(&r), rate(&once));
    assert_eq!(r.retractions.events, once.retractions.events);
    assert!(
        r.sources
            .iter()
            .any(|s| s.contains("overlaps") && s.contains("each line counted once"))
    );
    // The same batches logged by TP8 in a second file: not a second server.
    let tp8 = log.replace(" TP0]", " TP8]");
    let r = diagnose(&[log.as_bytes(), tp8.as_bytes()]);
    assert_eq!(r.schedulers.len(), 1);
    assert_eq!(rate(&r), rate(&once));
}

#[test]
fn a_damaged_line_is_counted_with_its_number_and_read_in_part() {
    // 044: GitHub's markdown ate names and numbers ('#running-:, #: 484009'); token usage
    // survives and is used.
    let log = read("real/044-i6341-markdown-mangled-quote.log");
    let r = diagnose(&[&log]);
    let input = &r.inputs[0];
    assert_eq!(input.damaged_lines, 1);
    assert_eq!(input.damaged[0].line, 1);
    assert_eq!(input.malformed_lines, 0);
    assert_eq!(r.schedulers[0].peak_token_usage, Some(0.95));
    // A whole line of the same format is not damaged.
    let clean = b"[2025-05-20 10:00:00 TP0] Decode batch. #running-req: 12, #token: 484009, token usage: 0.95, gen throughput (token/s): 300.00, #queue-req: 0\n";
    let r = diagnose(&[&clean[..]]);
    assert_eq!(r.inputs[0].damaged_lines, 0);
}

/// Issue 30 A1 on the real RTX 4090 log (1,677 tok/s, KV-cache bound): one extreme value that
/// the parser accepts, on the first lines, the last lines (for the queue: but the last decode
/// and the last prefill line) and every 25th line holding the field, leaves the verdict and the rate within 2% and is
/// listed as set aside. (Before:
/// `gen throughput (token/s): 5e8` on one line gave 4,001,665 tok/s.)
#[test]
fn one_extreme_value_moves_nothing_and_is_said() {
    let log = read(RTX);
    let base = diagnose(&[&log]);
    let b = rate(&base).expect("rate");
    let lines: Vec<Vec<u8>> = log.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
    for (key, value) in [
        ("gen throughput (token/s): ", "500000000.00"),
        ("#queue-req: ", "9000000"),
        ("#running-req: ", "9000000"),
    ] {
        let with: Vec<String> = lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .filter(|l| l.contains(key))
            .collect();
        let n = with.len();
        // a queue that jumps on the last decode or prefill line may be a burst arriving as the
        // log ends: nothing says it fell back, and no rate reads it
        let last_of_kind = |i: usize| {
            let kind = |l: &str| l.contains("Decode batch");
            !with[i + 1..].iter().any(|l| kind(l) == kind(&with[i]))
        };
        let picks = (0..3).chain(n - 3..n).chain((0..n).step_by(25));
        for i in picks {
            if key == "#queue-req: " && last_of_kind(i) {
                continue;
            }
            let mut damaged = lines.clone();
            set_field(&mut damaged, i, key, value);
            let r = diagnose(&[&damaged.join(&b'\n')]);
            assert_eq!(r.bottleneck, base.bottleneck, "{key}{value} at #{i}");
            let a = rate(&r).expect("rate");
            assert!(
                (a - b).abs() <= 0.02 * b,
                "{key}{value} at #{i}: {a} vs {b}"
            );
            assert!(
                r.inputs.iter().any(|x| x.rejected_lines == 1),
                "{key}{value} at #{i} not said"
            );
        }
    }
}

/// Issue 30 A3: one `#transfer-req: 1` on one of the 224 decode lines of a real single-stream
/// log (real-long rdna4, client-bound at ~1 running) made it "PD decode fed by the prefill
/// side"; a PD decode server prints the field on every decode line, so one line is no role.
#[test]
fn one_pd_field_on_one_line_is_no_pd_role() {
    let log = read("real-long/rdna4-2xr9700-qwen3coder-tp2-single-stream.log");
    let base = diagnose(&[&log]);
    let mut lines: Vec<Vec<u8>> = log.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
    let k = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| String::from_utf8_lossy(l).contains("Decode batch"))
        .nth(100)
        .map(|(k, _)| k)
        .expect("a decode line");
    let text = String::from_utf8_lossy(&lines[k])
        .replace("#queue-req: 0", "#queue-req: 0, #transfer-req: 1");
    lines[k] = text.into_bytes();
    let r = diagnose(&[&lines.join(&b'\n')]);
    assert_eq!(base.bottleneck, Bottleneck::ClientBound);
    assert_eq!(r.bottleneck, base.bottleneck, "{}", r.headline.text);
    assert!(
        !r.headline.text.contains("PD decode"),
        "{}",
        r.headline.text
    );
    // and the line is listed as damage (expert re-read)
    let listed = r.inputs[0]
        .rejected
        .iter()
        .any(|v| v.key == "#transfer-req");
    assert!(listed, "{:?}", r.inputs[0].rejected);
}

/// Issue 30 A5: the real RTX 4090 log cut into 224 parts of three lines (rotated parts, read
/// in reverse order, as a directory listing may give them) is one scheduler, at the rate of
/// the whole file within 2%: before, a warm-up part sorted after a longer part of the same
/// start second stayed a second "rank 0".
#[test]
fn tiny_rotated_parts_are_one_scheduler() {
    let log = read(RTX);
    let base = diagnose(&[&log]);
    let lines: Vec<&[u8]> = log.split(|&c| c == b'\n').collect();
    let parts: Vec<Vec<u8>> = lines.chunks(3).map(|c| c.join(&b'\n')).rev().collect();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let r = diagnose(&refs);
    assert_eq!(
        r.schedulers.len(),
        1,
        "{:?}",
        r.schedulers.iter().map(|s| &s.source).collect::<Vec<_>>()
    );
    assert_eq!(r.bottleneck, base.bottleneck);
    let (a, b) = (rate(&r).expect("rate"), rate(&base).expect("rate"));
    assert!((a - b).abs() <= 0.02 * b, "{a} vs {b}");
}
