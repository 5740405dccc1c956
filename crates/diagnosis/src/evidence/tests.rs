//! Tests of the evidence as a whole: PD roles, separate runs, the sample budget, retraction
//! totals and joined copies.

use super::*;
use sglang_log::{ParseStats, parse_line};

/// `n` decode lines of TP0, one a second from `from` seconds after midnight.
fn decode_lines(from: u64, n: u64) -> Vec<String> {
    (from..from + n)
            .map(|t| {
                format!(
                    "[2026-01-15 {:02}:{:02}:{:02} TP0] Decode batch, #running-req: {}, #token: {}, \
                     token usage: 0.10, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0",
                    t / 3600,
                    t / 60 % 60,
                    t % 60,
                    1 + t % 7,
                    t
                )
            })
            .collect()
}

fn read_into(b: &mut EvidenceBuilder, name: &str, lines: &[String]) {
    let id = b.add_source(name);
    let mut stats = ParseStats::default();
    for (i, l) in lines.iter().enumerate() {
        let rec = parse_line(l.as_bytes(), i as u64 + 1);
        stats.observe(&rec, l.as_bytes());
        b.push(id, &rec);
    }
    b.finish_source(id, &stats);
}

/// Each source's PD role is `roles` (in input order), and the sources of two roles are
/// `mixed`.
fn assert_roles(
    ev: &Evidence,
    roles: &[Option<PdRole>],
    mixed: Option<Vec<(PdRole, Vec<SourceId>)>>,
) {
    let got: Vec<_> = ev.sources.iter().map(|s| s.pd_role).collect();
    assert_eq!(got, roles);
    assert_eq!(ev.mixed_pd_roles(), mixed);
}

/// Line `n` (1-based) of a test log under `tests/data/`.
fn data_line(rel: &str, n: usize) -> String {
    data_lines(rel).swap_remove(n - 1)
}

#[test]
fn pd_role_from_its_printed_forms() {
    assert_eq!(PdRole::from_arg("'prefill'"), Some(PdRole::Prefill));
    assert_eq!(PdRole::from_arg("decode"), Some(PdRole::Decode));
    assert_eq!(PdRole::from_arg("\"decode\""), Some(PdRole::Decode));
    assert_eq!(PdRole::from_arg("null"), None);
    assert_eq!(PdRole::from_arg("'null'"), None);
    assert_eq!(PdRole::from_arg(""), None);
}

/// Each source's role comes from its own startup line (the `server_args` of the real PD
/// prefill and decode logs, a launch command's `--disaggregation-mode decode`); sources of
/// two roles are named, sources of one role or none are not.
#[test]
fn each_source_has_the_pd_role_of_its_own_startup_lines() {
    let prefill = data_line("real-long/ascend-dsr1-pd-prefill-dp2.log", 98);
    let decode = data_line("real-long/ascend-dsr1-pd-decode-dp32.log", 101);
    let launch = data_line(
        "real-2/109-npu-pd-decode-1p1d-dp16-running-pinned-24-queue-usage046.log",
        2,
    );
    let plain = decode_lines(0, 3);
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "prefill.log", std::slice::from_ref(&prefill));
    read_into(&mut b, "plain.log", &plain);
    read_into(&mut b, "decode.log", std::slice::from_ref(&decode));
    read_into(&mut b, "launch.log", std::slice::from_ref(&launch));
    let ev = b.build();
    let (p, d) = (Some(PdRole::Prefill), Some(PdRole::Decode));
    let mixed = vec![(PdRole::Prefill, vec![0]), (PdRole::Decode, vec![2, 3])];
    assert_roles(&ev, &[p, None, d, d], Some(mixed));
    // one role (two decode logs), or none: nothing to say
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "decode.log", &[decode]);
    read_into(&mut b, "launch.log", &[launch]);
    read_into(&mut b, "plain.log", &plain);
    assert_eq!(b.build().mixed_pd_roles(), None);
}

/// Every line of a test log under `tests/data/`.
fn data_lines(rel: &str) -> Vec<String> {
    let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(str::to_string).collect()
}

/// Without startup lines the role comes from the batch lines: real/031's prefill lines
/// carry a PD prefill instance's `#prealloc-req` and `#inflight-req`, real/016's decode
/// lines a decode instance's `pre-allocated usage` and `#transfer-req`; a plain server's
/// lines show neither, and an explicit role is not overridden.
#[test]
fn without_startup_lines_the_pd_role_comes_from_the_batch_lines() {
    let prefill = data_lines("real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log");
    let decode = data_lines("real/016-pr30393-hicache-pd-decode-mtp-transfer.log");
    let plain = decode_lines(0, 3);
    let explicit = data_line("real-long/ascend-dsr1-pd-prefill-dp2.log", 98);
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "031.log", &prefill);
    read_into(&mut b, "016.log", &decode);
    read_into(&mut b, "plain.log", &plain);
    // a prefill instance's startup line above decode lines of a decode instance's form:
    // the log's own word stands
    let mut said = vec![explicit];
    said.extend(decode.iter().cloned());
    read_into(&mut b, "said.log", &said);
    let ev = b.build();
    let id = |name: &str| ev.sources.iter().position(|s| s.name == name).expect(name);
    let (p, d) = (Some(PdRole::Prefill), Some(PdRole::Decode));
    let mixed = vec![(PdRole::Prefill, vec![0, 3]), (PdRole::Decode, vec![1])];
    assert_roles(&ev, &[p, d, None, p], Some(mixed));
    let agg = |name: &str| {
        ev.schedulers
            .iter()
            .filter(|(k, _)| k.source == Some(id(name)))
            .map(|(_, t)| (t.agg.pd_prefill_lines, t.agg.pd_decode_lines))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    assert_eq!(agg("031.log"), (4, 0));
    assert_eq!(agg("016.log"), (0, 4));
    assert_eq!(agg("plain.log"), (0, 0));
}

/// The role stands however the runs fall: a later file's restart (here a startup line
/// after the others' batch lines) moves the earlier lines into an earlier run, where the
/// prefill instance's lines still show its role; a file that restarts in another mode has
/// its last run's role (the run diagnosed); `null` is no role, whatever the lines hold.
#[test]
fn the_pd_role_holds_across_runs_and_restarts() {
    let prefill_args = data_line("real-long/ascend-dsr1-pd-prefill-dp2.log", 98);
    let decode_args = data_line("real-long/ascend-dsr1-pd-decode-dp32.log", 101);
    let prefill = data_lines("real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log");
    let decode = data_lines("real/016-pr30393-hicache-pd-decode-mtp-transfer.log");
    let mut restart_late = decode_lines(0, 3);
    restart_late.push(decode_args.clone());
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "031.log", &prefill);
    read_into(&mut b, "016.log", &decode);
    read_into(&mut b, "late.log", &restart_late);
    let ev = b.build();
    assert!(!ev.earlier_runs.is_empty());
    let (p, d) = (Some(PdRole::Prefill), Some(PdRole::Decode));
    let mixed = vec![(PdRole::Prefill, vec![0]), (PdRole::Decode, vec![1, 2])];
    assert_roles(&ev, &[p, d, d], Some(mixed));
    // prefill, then a restart as a decode instance: the last run's role
    let mut restarted = vec![prefill_args.clone()];
    restarted.extend(prefill.iter().cloned());
    restarted.push(decode_args);
    restarted.extend(decode.iter().cloned());
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "restarted.log", &restarted);
    read_into(&mut b, "016.log", &decode);
    let ev = b.build();
    assert_eq!(ev.sources[0].pd_role, Some(PdRole::Decode));
    assert_eq!(ev.mixed_pd_roles(), None);
    // `disaggregation_mode='null'` above lines with PD fields: no role
    let null_args = prefill_args.replace(
        "disaggregation_mode='prefill'",
        "disaggregation_mode='null'",
    );
    assert_ne!(null_args, prefill_args);
    let mut said_null = vec![null_args];
    said_null.extend(prefill.iter().cloned());
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "null.log", &said_null);
    read_into(&mut b, "016.log", &decode);
    let ev = b.build();
    assert_eq!(ev.sources[0].pd_role, None);
    assert_eq!(ev.mixed_pd_roles(), None);
}

/// Two decode runs of the same deployment one after the other, each log opening with its
/// own startup lines, are two runs whatever their order (they were joined as rotated
/// parts, and the verdict followed the order); the two halves of one log (the later half
/// without startup lines) and two logs that overlap in time are not.
#[test]
fn logs_of_two_runs_one_after_the_other_are_separate_runs() {
    let early = data_lines("real-long/ascend-dsr1-pd-decode-maxrun2-queued.log");
    let late = data_lines("real-long/ascend-dsr1-pd-decode-dp32.log");
    let read = |logs: &[(&str, &[String])]| {
        let mut b = EvidenceBuilder::new();
        for (name, lines) in logs {
            read_into(&mut b, name, lines);
        }
        b.build()
    };
    let ev = read(&[("early.log", &early), ("late.log", &late)]);
    assert!(ev.sources.iter().all(|s| s.opens_with_startup));
    assert_eq!(ev.separate_runs(), Some((0, 1)));
    let ev = read(&[("late.log", &late), ("early.log", &early)]);
    assert_eq!(ev.separate_runs(), Some((1, 0)));
    // rotated: the later half opens with batch lines, not startup lines
    let (first, second) = late.split_at(late.len() / 2);
    let ev = read(&[("part1.log", first), ("part2.log", second)]);
    assert!(ev.sources[0].opens_with_startup && !ev.sources[1].opens_with_startup);
    assert_eq!(ev.separate_runs(), None);
    // overlapping in time (another node's log of the same run)
    let ev = read(&[("node0.log", &late), ("node1.log", &late)]);
    assert_eq!(ev.separate_runs(), None);
}

/// The boundary of "after the other's end": a later log's batch lines may begin up to
/// [`crate::thresholds::JITTER_WINDOW_S`] (60 s) before the earlier log's last one; a
/// second more of overlap is overlapping logs of one run.
#[test]
fn separate_runs_allow_a_jitter_window_of_overlap_and_no_more() {
    let startup = data_line("real-long/ascend-dsr1-pd-decode-dp32.log", 101);
    let earlier = decode_lines(1000, 100); // batch lines at 1000 ..= 1099 s
    let later = |from: u64| {
        let mut l = vec![startup.clone()];
        l.extend(decode_lines(from, 50));
        l
    };
    let read = |b_lines: Vec<String>| {
        let mut b = EvidenceBuilder::new();
        read_into(&mut b, "earlier.log", &earlier);
        read_into(&mut b, "later.log", &b_lines);
        b.build().separate_runs()
    };
    assert_eq!(read(later(1099 - 60)), Some((0, 1)));
    assert_eq!(read(later(1200)), Some((0, 1)));
    assert_eq!(read(later(1099 - 61)), None);
    // the same lines without the startup line: a rotated part, not a run
    assert_eq!(read(decode_lines(1200, 50)), None);
}

fn kept(ev: &Evidence) -> usize {
    ev.schedulers
        .values()
        .map(|t| t.decode.samples().len() + t.prefill.samples().len())
        .sum()
}

#[test]
fn many_sources_stay_within_the_sample_budget() {
    // 24 rotated parts of 3,000 decode lines: 72,000 samples in all without the budget
    let mut b = EvidenceBuilder::new();
    for k in 0..24 {
        read_into(
            &mut b,
            &format!("part{k:02}.log"),
            &decode_lines(k * 3000, 3000),
        );
    }
    let ev = b.build();
    assert_eq!(ev.schedulers.len(), 24);
    // the 22nd part made 66,000: 4,096 was not enough (every part holds 3,000), 2,048
    // halved each part to 1,500; the last two parts were read at 2,048
    assert_eq!(kept(&ev), 36_000);
    assert!(kept(&ev) <= SAMPLE_BUDGET);
    for t in ev.schedulers.values() {
        assert_eq!(t.decode.capacity(), 2048);
        assert_eq!((t.decode.stride(), t.decode.samples().len()), (2, 1500));
        assert_eq!(t.decode.pushed(), 3000);
    }
    // joined again, the parts are one scheduler of every line, at a full capacity, each
    // part said to continue the one before it
    let (joined, notes) = ev.consolidated();
    for k in 1..24 {
        let n = JoinNote::Continues {
            file: format!("part{k:02}.log"),
            of: format!("part{:02}.log", k - 1),
        };
        assert!(notes.contains(&n), "{n:?} not in {notes:?}");
    }
    assert_eq!(joined.schedulers.len(), 1);
    let t = joined.schedulers.values().next().map(|t| &t.decode);
    assert_eq!(t.map(|t| t.pushed()), Some(72_000));
    assert_eq!(t.map(|t| t.capacity()), Some(timeline::DEFAULT_CAPACITY));
    // 72,000 lines at stride 16: 4,500, and one more where a part's phase restarts
    assert_eq!(t.map(|t| (t.stride(), t.samples().len())), Some((16, 4501)));
}

#[test]
fn a_sample_knows_its_source_and_stays_240_bytes() {
    // the source fits in the padding: budgets in bytes above rest on it
    assert_eq!(std::mem::size_of::<DecodeSample>(), 240);
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "a.log", &decode_lines(0, 3));
    read_into(&mut b, "b.log", &decode_lines(3, 2));
    let ev = b.build();
    let (joined, _) = ev.consolidated();
    let locs: Vec<Loc> = joined
        .schedulers
        .values()
        .flat_map(|t| t.decode.samples().iter().map(DecodeSample::loc))
        .collect();
    let at = |source, line| Loc { source, line };
    assert_eq!(locs, [at(0, 1), at(0, 2), at(0, 3), at(1, 1), at(1, 2)]);
}

/// `n` retraction lines of TP0, one a second from `from` seconds after midnight.
fn retraction_lines(from: u64, n: u64) -> Vec<String> {
    (from..from + n)
        .map(|t| {
            format!(
                "[2026-01-15 {:02}:{:02}:{:02} TP0] KV cache pool is full. Retract requests. \
                     #retracted_reqs: 3, #new_token_ratio: 0.4213 -> 0.6000",
                t / 3600,
                t / 60 % 60,
                t % 60
            )
        })
        .collect()
}

#[test]
fn a_repeated_file_leaves_the_retraction_totals_exact_when_the_sample_is_thinned() {
    // two logs of 2,500 retractions each: 5,000 events, more than the kept sample holds
    let log = |from: u64| {
        let mut l = decode_lines(from, 100);
        l.extend(retraction_lines(from + 100, 2500));
        l
    };
    let (a, b) = (log(0), log(10_000));
    let mut r = EvidenceBuilder::new();
    read_into(&mut r, "a.log", &a);
    read_into(&mut r, "b.log", &b);
    read_into(&mut r, "a-copy.log", &a);
    let ev = r.build();
    assert!(ev.retractions.len() < 7500);
    let (joined, notes) = ev.consolidated();
    assert!(notes.contains(&JoinNote::Repeats {
        file: "a-copy.log".into(),
        of: "a.log".into()
    }));
    let t = joined.retraction_totals;
    assert_eq!(
        (t.events, t.retracted_reqs, joined.retraction_lines),
        (5000, 15_000, 5000)
    );
    assert_eq!(
        t.first_line,
        Some(Loc {
            source: 0,
            line: 101
        })
    );
    assert_eq!(
        t.last_line,
        Some(Loc {
            source: 1,
            line: 2600
        })
    );
}

#[test]
fn a_thinned_scheduler_is_said_to_skip_the_checks_that_need_every_line() {
    use crate::report::NotConcludedReason as R;
    let thinned = |ev: &Evidence| {
        crate::pipeline::diagnose(ev)
            .not_concluded
            .into_iter()
            .find(|n| matches!(n.reason, R::ThinnedTimelines { .. }))
            .map(|n| n.reason)
    };
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "long.log", &decode_lines(0, 9000));
    assert_eq!(
        thinned(&b.build()),
        Some(R::ThinnedTimelines {
            schedulers: 1,
            stride: 2
        })
    );
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "short.log", &decode_lines(0, 8000));
    assert_eq!(thinned(&b.build()), None);
}

#[test]
fn one_source_keeps_full_timelines() {
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "one.log", &decode_lines(0, 9000));
    let ev = b.build();
    let t = ev.schedulers.values().next().map(|t| &t.decode);
    assert_eq!(t.map(|t| t.capacity()), Some(timeline::DEFAULT_CAPACITY));
    assert_eq!(t.map(|t| (t.stride(), t.samples().len())), Some((2, 4500)));
}

#[test]
fn a_copy_read_after_the_budget_cut_keeps_the_same_samples() {
    // the first copy is read at the full capacity and cut later; the second is read at
    // the cut capacity: both keep the lines at multiples of one stride, so the second is
    // still seen as a repeat of the first
    let lines = decode_lines(0, 7000);
    let mut b = EvidenceBuilder::new();
    read_into(&mut b, "a.log", &lines);
    // 7,000 + 12 x 5,000 = 67,000 samples at the twelfth: every capacity goes to 4,096
    for k in 0..12 {
        read_into(
            &mut b,
            &format!("other{k}.log"),
            &decode_lines(8000 + k * 5000, 5000),
        );
    }
    read_into(&mut b, "a-copy.log", &lines);
    let ev = b.build();
    let by_name = |name: &str| {
        let id = ev.sources.iter().position(|s| s.name == name);
        ev.schedulers
            .iter()
            .find(|(k, _)| k.source == id)
            .map(|(_, t)| t)
    };
    let (a, copy) = (by_name("a.log"), by_name("a-copy.log"));
    assert_eq!(
        a.map(|a| (a.decode.stride(), a.decode.samples().len())),
        Some((2, 3500))
    );
    assert!(a.zip(copy).is_some_and(|(a, c)| a.same_lines(c)));
    let (_, notes) = ev.consolidated();
    assert!(notes.contains(&JoinNote::Repeats {
        file: "a-copy.log".into(),
        of: "a.log".into()
    }));
}
