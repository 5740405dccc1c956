//! Phases on real lines: every kind positive, negative and at its boundary.

use super::*;
use crate::report::Span;
use crate::rules::testing::{edit, excerpt, only, set_field, whole, with_input};

fn decode_of(lines: &str) -> Vec<DecodeSample> {
    let mut out = Vec::new();
    with_input(lines, |i| out = i.views[0].tl.decode.samples().to_vec());
    out
}

fn first_windows(lines: &str) -> (Vec<DecodeSample>, Vec<u64>) {
    let mut out = (Vec::new(), Vec::new());
    with_input(lines, |i| {
        let tl = i.views[0].tl;
        out = (
            tl.decode.samples().to_vec(),
            first_window_lines(tl.decode.samples(), tl.prefill.samples()),
        );
    });
    out
}

fn kinds(p: &Phases) -> Vec<PhaseKind> {
    p.phases.iter().map(|p| p.kind).collect()
}

#[test]
fn a_low_first_reading_is_a_first_window() {
    // 017: the first line reads 3.50 tok/s (the window since start-up), the rest ~28.
    let (d, lines) = first_windows(&whole("real/017-i3243-amd-rx7900xtx-rocm.log"));
    assert_eq!(lines, vec![d[0].line]);
    assert_eq!(d[0].gen_tps, Some(3.5));
    // An excerpt that starts mid-run keeps its first reading.
    let (_, mid) = first_windows(&excerpt("real/017-i3243-amd-rx7900xtx-rocm.log", 2..=99));
    assert!(mid.is_empty());
}

#[test]
fn the_line_after_idle_is_a_first_window() {
    // 007: an interactive chat, idle between turns; the line after each pause reads 1.06 and
    // 3.17 tok/s against ~83 while decoding.
    let (d, lines) = first_windows(&whole("real/007-i10053-single-user-chat-prefix-cache.log"));
    let readings: Vec<f64> = d
        .iter()
        .filter(|s| lines.contains(&s.line))
        .filter_map(|s| s.gen_tps)
        .collect();
    assert!(
        readings.contains(&1.06) || readings.contains(&3.17),
        "{readings:?}"
    );
    assert!(readings.iter().all(|&g| g < 10.0), "{readings:?}");
}

#[test]
fn a_wave_refilled_at_once_is_no_first_window() {
    // qwen3next: 80 requests end together (line 1206, 07:44:29) and the next 80 are
    // prefilled from line 1208 on (same second, `#running-req: 0`) until 07:44:44; the
    // decode line after it (1298, 185.61 tok/s) is the server at work, not a wait
    let (_, lines) = first_windows(&whole("real-long/ascend-qwen3next-80b-hybrid-mamba.log"));
    for refill in [1298, 1426, 1555] {
        assert!(!lines.contains(&refill), "{refill}: {lines:?}");
    }
}

#[test]
fn the_line_after_a_prefill_from_nothing_running_is_a_first_window() {
    // 104: one long request finishes, the next is prefilled with nothing running (line
    // 113) and the next decode line (114) reads 18.95 tok/s against ~76.
    let (d, lines) = first_windows(&whole(
        "real-2/104-hicache-mooncake-l3-llama3b-mem02-single-long-req-usage097-queue1.log",
    ));
    assert!(lines.contains(&114), "{lines:?}");
    assert!(lines.contains(&109), "{lines:?}"); // the log's first reading, 0.09
    assert!(!lines.contains(&115));
    assert_eq!(
        d.iter().find(|s| s.line == 114).and_then(|s| s.gen_tps),
        Some(18.95)
    );
}

#[test]
fn the_first_decode_line_after_a_prefill_from_nothing_running_is_a_first_window() {
    // 113: a prefill with nothing running (line 1), then the log's first decode line reads
    // 3.22 tok/s (its window spans the wait and the prefill) and the next 140.78
    let rel = "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log";
    let (d, lines) = first_windows(&whole(rel));
    assert_eq!(lines, vec![3]);
    assert_eq!(d[0].gen_tps, Some(3.22));
    // without that prefill line the first reading stands (an excerpt that starts mid-run)
    let (_, none) = first_windows(&excerpt(rel, 3..=4));
    assert!(none.is_empty());
}

/// 118: one agentic client, 1 running throughout: the burst of 15:56 (lines 1-21) and the
/// one of 15:57-15:58 (lines 24-36) are the same work, 65 s of idle apart. The earlier is
/// another burst, not a warm-up. With its running count cut to 1 under a main burst at 4,
/// it would be one (boundary: a warm-up is smaller than what follows).
#[test]
fn an_earlier_burst_as_large_as_the_main_one_is_no_warm_up() {
    let log = "real-4/118-rtxpro6000-v0.5.18dev-agentic-300k-prefix-mamba-mtp-reqtimestats.log";
    let p = find(&decode_of(&whole(log)), None, &Marks::default()).expect("phases");
    let k = kinds(&p);
    assert!(!k.contains(&PhaseKind::WarmUp), "{k:?}");
    assert!(k.contains(&PhaseKind::OtherBurst), "{k:?}");
    assert!(k.contains(&PhaseKind::Idle), "{k:?}");
    // the later burst at 4 running: the earlier one, at 1, is its warm-up
    let text: String = whole(log)
        .lines()
        .enumerate()
        .map(|(n, l)| {
            if n >= 23 {
                format!(
                    "{}\n",
                    l.replacen("#running-req: 1,", "#running-req: 4,", 1)
                )
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let p = find(&decode_of(&text), None, &Marks::default()).expect("phases");
    assert!(kinds(&p).contains(&PhaseKind::WarmUp), "{:?}", kinds(&p));
}

/// real-4/105: one stream at ~23 tok/s; lines 77-78 are 303 s apart, #token 913 -> 7953,
/// the later line reading 23.2 tok/s: the lines between were left out of the paste, the
/// request decoded on. No idle phase there; with #token unchanged across it, idle.
#[test]
fn a_gap_the_kv_tokens_decoded_through_is_not_idle() {
    let log = "real-4/105-amd-2x-r9700-rdna4-tp2-coder30b-awq-no-graph-23tps.log";
    let d = decode_of(&whole(log));
    let gap_at = d
        .windows(2)
        .position(|w| w[1].t.zip(w[0].t).is_some_and(|(b, a)| b - a > 250.0))
        .expect("the 5-min gap");
    assert!(decoded_through(&d[gap_at], &d[gap_at + 1]));
    let p = find(&d, None, &Marks::default()).expect("phases");
    assert!(!kinds(&p).contains(&PhaseKind::Idle), "{:?}", kinds(&p));
    // the same gap with the KV tokens unchanged: nothing decoded, idle
    let mut frozen = d.clone();
    frozen[gap_at + 1].tokens = frozen[gap_at].tokens;
    assert!(!decoded_through(&frozen[gap_at], &frozen[gap_at + 1]));
    // and with 5x the tokens the rate gives: not the same request decoding on
    let mut far = d.clone();
    far[gap_at + 1].tokens = far[gap_at].tokens.map(|k| k + 5 * 7040);
    assert!(!decoded_through(&far[gap_at], &far[gap_at + 1]));
}

#[test]
fn a_steady_run_has_one_steady_phase() {
    // 002: 8 running throughout, nothing waits, no drain in the excerpt.
    let d = decode_of(&whole("real/002-i3909-throughput-steadily-decreases.log"));
    let p = find(&d, None, &Marks::default()).expect("phases");
    assert_eq!(kinds(&p), vec![PhaseKind::Steady]);
}

#[test]
fn the_kv_fill_is_a_ramp() {
    // The founding case: 41 of 150 requests admitted at once, token usage 0.09 -> 0.86
    // over the first minutes while ~109 wait: the steady window starts once the pool is full.
    let d = decode_of(&whole("scenarios/kimi-k25-b2-early/server.log"));
    let p = find(&d, None, &Marks::default()).expect("phases");
    assert_eq!(kinds(&p), vec![PhaseKind::Ramp, PhaseKind::Steady]);
    let ramp = p.steady_start_s - d[0].t.unwrap();
    assert!((60.0..=400.0).contains(&ramp), "{ramp}");
}

#[test]
fn a_burst_is_steady_while_it_saturates_the_server() {
    // RTX 4090: running climbs 1 -> 66 with nothing queued (16:05:27-16:06:05), the pool
    // fills and requests queue until ~16:07:50, then the burst drains to 1 running.
    let d = decode_of(&whole("real-long/rtx4090-qwen3-4b-kv-retraction.log"));
    let p = find(&d, None, &Marks::default()).expect("phases");
    assert_eq!(
        kinds(&p),
        vec![PhaseKind::Ramp, PhaseKind::Steady, PhaseKind::Drain]
    );
    let t0 = d[0].t.unwrap();
    assert!(
        (30.0..=45.0).contains(&(p.steady_start_s - t0)),
        "{}",
        p.steady_start_s - t0
    );
    assert!(
        (130.0..=170.0).contains(&(p.steady_end_s - t0)),
        "{}",
        p.steady_end_s - t0
    );
}

#[test]
fn a_falling_tail_with_nothing_queued_is_a_drain() {
    // One DP rank of a benchmark on a PD decode node: 26 running at the plateau, then the
    // client stops and the count falls to 1 with nothing queued.
    let lines = only(
        &excerpt("real-long/ascend-dsr1-pd-decode-dp32.log", 4900..=6600),
        "DP3 TP3",
    );
    let d = decode_of(&lines);
    let p = find(&d, None, &Marks::default()).expect("phases");
    assert!(kinds(&p).contains(&PhaseKind::Drain), "{:?}", p.phases);
    let drain = p
        .phases
        .iter()
        .find(|x| x.kind == PhaseKind::Drain)
        .unwrap();
    assert!(drain.lines >= th::MIN_DRAIN_LINES, "{drain:?}");
    // A steady run does not drain: the same rank's lines with a standing queue.
    let queued = crate::rules::testing::set_field(&lines, "#queue-req", "3");
    let p = find(&decode_of(&queued), None, &Marks::default()).expect("phases");
    assert!(!kinds(&p).contains(&PhaseKind::Drain), "{:?}", p.phases);
}

/// The lines of a file under `tests/data/` whose 1-based number `keep` says yes to.
fn lines_where(rel: &str, keep: impl Fn(usize, &str) -> bool) -> String {
    whole(rel)
        .lines()
        .enumerate()
        .filter(|(i, l)| keep(i + 1, l))
        .map(|(_, l)| format!("{l}\n"))
        .collect()
}

/// The phases as the views find them (MSER's ramp, the prefills, stalls and crash of the
/// timeline), per scheduler.
fn view_phases(text: &str) -> Vec<Vec<Phase>> {
    let mut out = Vec::new();
    with_input(text, |i| {
        out = i
            .views
            .iter()
            .map(|v| {
                v.span
                    .as_ref()
                    .map(|s| s.phases.clone())
                    .unwrap_or_default()
            })
            .collect()
    });
    out
}

fn kinds_of(p: &[Phase]) -> Vec<PhaseKind> {
    p.iter().map(|p| p.kind).collect()
}

/// 118: the 65 s between 15:56:39 and 15:57:44 is idle (the next request's prefill comes at
/// its end). At 30 s ([`th::IDLE_GAP_S`], the log interval being ~1 s) it still is; at 29 s
/// the two bursts are one.
#[test]
fn a_gap_of_the_idle_threshold_is_idle() {
    let log = "real-4/118-rtxpro6000-v0.5.18dev-agentic-300k-prefix-mamba-mtp-reqtimestats.log";
    // an idle phase from line 21 (15:56:39)
    let idle = |text: &str| {
        let d = decode_of(text);
        let t21 = d.iter().find(|s| s.line == 21).and_then(|s| s.t);
        let p = find(&d, None, &Marks::default()).expect("phases");
        p.phases
            .iter()
            .any(|x| x.kind == PhaseKind::Idle && Some(x.start_s) == t21)
    };
    assert!(idle(&whole(log)));
    assert_eq!(idle_gap_s(&decode_of(&whole(log))), th::IDLE_GAP_S);
    assert!(idle(&edit(&whole(log), "15:57:44", "15:57:09")));
    assert!(!idle(&edit(&whole(log), "15:57:44", "15:57:08")));
}

/// real-long/ascend-qwen3-30b-tp2-eagle3-highload: no decode line for 51 s after line 1512
/// (07:36:52), but prefill lines come from 27 s on, each within the idle gap of the one
/// before (1566 to 1739, 156 requests admitted): the server was at work, a busy gap, not idle
/// (the 27 s before the first prefill line are shorter than an idle gap).
#[test]
fn a_gap_that_prefill_lines_fill_is_busy() {
    let log = "real-long/ascend-qwen3-30b-tp2-eagle3-highload.log";
    let gap_at = |p: &[Phase], kind| {
        p.iter()
            .any(|x| x.kind == kind && x.lines == 0 && (x.end_s - x.start_s - 51.0).abs() < 0.5)
    };
    let p = &view_phases(&whole(log))[0];
    assert!(gap_at(p, PhaseKind::BusyGap), "{p:?}");
    assert!(!gap_at(p, PhaseKind::Idle), "{p:?}");
    // negative: without the prefill lines in it, the same gap is idle
    let bare = lines_where(log, |n, l| {
        !(1513..1740).contains(&n) || !l.contains("Prefill batch")
    });
    let p = &view_phases(&bare)[0];
    assert!(gap_at(p, PhaseKind::Idle), "{p:?}");
    // boundary: the idle gap here is 10 log intervals, 50 s; with only the last prefill line
    // (1739, 07:37:40, 48 s after the decode line) it is busy, moved to 49 s still, to 50 s
    // the time before it was idle
    assert_eq!(idle_gap_s(&decode_of(&whole(log))), 50.0);
    let last_only = lines_where(log, |n, l| {
        !(1513..1739).contains(&n) || !l.contains("Prefill batch")
    });
    assert!(gap_at(&view_phases(&last_only)[0], PhaseKind::BusyGap));
    let at = |t: &str| {
        edit(
            &last_only,
            "07:37:40 TP0] Prefill",
            &format!("{t} TP0] Prefill"),
        )
    };
    assert!(gap_at(&view_phases(&at("07:37:41"))[0], PhaseKind::BusyGap));
    assert!(gap_at(&view_phases(&at("07:37:42"))[0], PhaseKind::Idle));
}

/// real-4/105: the 303 s gap the KV tokens decoded through is a busy gap inside the run (lines
/// missing from the paste), left out of the steady figures but no segment's end.
#[test]
fn a_gap_decoded_through_is_busy() {
    let log = "real-4/105-amd-2x-r9700-rdna4-tp2-coder30b-awq-no-graph-23tps.log";
    let d = decode_of(&whole(log));
    let p = find(&d, None, &Marks::default()).expect("phases");
    let busy = p
        .phases
        .iter()
        .find(|x| x.kind == PhaseKind::BusyGap)
        .expect("busy gap");
    assert!(busy.end_s - busy.start_s > 250.0, "{busy:?}");
    assert!(
        !kinds(&p).contains(&PhaseKind::OtherBurst),
        "{:?}",
        kinds(&p)
    );
    // a line inside it would be left out; the lines at its ends are not
    let span = Span {
        start_s: 0.0,
        end_s: 0.0,
        steady_start_s: 0.0,
        steady_end_s: 0.0,
        timestamp_resolution_s: 1.0,
        basis: crate::report::SpanBasis::TooFewPoints,
        method: String::new(),
        phases: p.phases.clone(),
    };
    assert!(span.left_out_at(busy.start_s + 1.0));
    assert!(!span.left_out_at(busy.start_s) && !span.left_out_at(busy.end_s));
}

/// real-long/rtx4090: `#token` set to one value on the steady lines 336 (16:06:23) to 427
/// (16:07:23), 60 s: a stall ([`th::STALL_MIN_S`]), cut out of the steady phase; its lines are
/// not steady. From line 337 (16:06:24, 59 s) it is not one.
#[test]
fn a_frozen_run_of_the_stall_threshold_is_stalled() {
    let log = "real-long/rtx4090-qwen3-4b-kv-retraction.log";
    let frozen_from = |first: usize| {
        let all = whole(log);
        let part = |r: std::ops::RangeInclusive<usize>| -> String {
            all.lines()
                .enumerate()
                .filter(|(i, _)| r.contains(&(i + 1)))
                .map(|(_, l)| format!("{l}\n"))
                .collect()
        };
        format!(
            "{}{}{}",
            part(1..=first - 1),
            set_field(&part(first..=427), "#token", "150000"),
            part(428..=usize::MAX - 1)
        )
    };
    let stalled = |text: &str| {
        let mut out = None;
        with_input(text, |i| {
            let v = &i.views[0];
            let sp = v.span.as_ref().expect("span");
            out = Some((
                sp.phases.clone(),
                v.steady_decode.iter().any(|d| d.tokens == Some(150000)),
            ));
        });
        out.expect("a view")
    };
    let (p, frozen_in_steady) = stalled(&frozen_from(336));
    let s = p
        .iter()
        .find(|x| x.kind == PhaseKind::Stalled)
        .expect("stalled");
    assert_eq!(s.end_s - s.start_s, 60.0, "{s:?}");
    assert!(!frozen_in_steady);
    let k = kinds_of(&p);
    let at = k.iter().position(|&x| x == PhaseKind::Stalled).unwrap();
    assert_eq!(k[at - 1], PhaseKind::Steady, "{k:?}");
    assert_eq!(k[at + 1], PhaseKind::Steady, "{k:?}");
    // boundary: 59 s frozen is no stall, and its lines stay in the steady figures
    let (p, frozen_in_steady) = stalled(&frozen_from(337));
    assert!(!kinds_of(&p).contains(&PhaseKind::Stalled), "{p:?}");
    assert!(frozen_in_steady);
    // negative: as logged, nothing is frozen
    assert!(!kinds_of(&view_phases(&whole(log))[0]).contains(&PhaseKind::Stalled));
}

/// real-4/122: DP13 hits an exception at 12:10:42 (line 51), after its last decode line
/// (12:10:41): nothing after the crash. With the exception at 12:10:38, its line of 12:10:41
/// is after the crash and left out of the steady figures; at 12:10:37, the time of its line
/// 33, that line is before it (a line of the same second was printed first).
#[test]
fn lines_after_a_crash_are_after_crash() {
    let log = "real-4/122-npu-pd-decode-dp32-cap26-usage-near-full-096.log";
    let dp13 = |text: &str| {
        let mut out = None;
        with_input(text, |i| {
            let v = i.views.iter().find(|v| v.key.dp == Some(13)).expect("DP13");
            let sp = v.span.as_ref().expect("span");
            out = Some((
                v.tl.crash_t,
                sp.phases.clone(),
                v.steady_decode.iter().map(|d| d.line).collect::<Vec<_>>(),
            ));
        });
        out.expect("DP13")
    };
    let lines = excerpt(log, 1..=51);
    let (crash, p, _) = dp13(&lines);
    assert!(crash.is_some());
    assert!(!kinds_of(&p).contains(&PhaseKind::AfterCrash), "{p:?}");
    let (_, p, steady) = dp13(&edit(&lines, "12:10:42 DP13", "12:10:38 DP13"));
    let after = p.iter().find(|x| x.kind == PhaseKind::AfterCrash);
    assert_eq!(after.map(|a| a.lines), Some(1), "{p:?}");
    assert!(!steady.contains(&49), "{steady:?}");
    let (_, p, steady) = dp13(&edit(&lines, "12:10:42 DP13", "12:10:37 DP13"));
    assert_eq!(
        p.iter()
            .find(|x| x.kind == PhaseKind::AfterCrash)
            .map(|a| a.lines),
        Some(1)
    );
    assert!(steady.contains(&33), "{steady:?}");
    // a watchdog timeout ends a scheduler as well; another rank's crash ends none of its lines
    let watchdog = edit(
        &edit(&lines, "12:10:42 DP13", "12:10:38 DP13"),
        "Scheduler hit an exception: Traceback (most recent call last):",
        "Watchdog timeout (self.watchdog_timeout=300)",
    );
    let (crash, p, _) = dp13(&watchdog);
    assert!(crash.is_some());
    assert!(kinds_of(&p).contains(&PhaseKind::AfterCrash), "{p:?}");
    with_input(&edit(&lines, "12:10:42 DP13", "12:10:38 DP13"), |i| {
        for v in i.views.iter().filter(|v| v.key.dp != Some(13)) {
            assert_eq!(v.tl.crash_t, None, "{}", v.key);
        }
    });
}

/// real/002 with the ramp ended by MSER at its second line: that line is the ramp; ended at
/// its first, there is none.
#[test]
fn the_ramp_ends_where_mser_ends_it() {
    let d = decode_of(&whole("real/002-i3909-throughput-steadily-decreases.log"));
    let (t0, t1) = (d[0].t.unwrap(), d[1].t.unwrap());
    let p = find(&d, Some(t0), &Marks::default()).expect("phases");
    assert_eq!(kinds(&p), vec![PhaseKind::Steady]);
    let p = find(&d, Some(t1), &Marks::default()).expect("phases");
    assert_eq!(kinds(&p), vec![PhaseKind::Ramp, PhaseKind::Steady]);
    assert_eq!((p.phases[0].lines, p.steady_start_s), (1, t1));
}

/// real/002 with every line frozen over its 14 s and marked stalled: no line is steady, so
/// there are no phases to narrow the span with.
#[test]
fn no_steady_line_no_phases() {
    let d = decode_of(&whole("real/002-i3909-throughput-steadily-decreases.log"));
    let (t0, tn) = (d[0].t.unwrap(), d[d.len() - 1].t.unwrap());
    let marks = Marks {
        stalls: vec![(t0, tn)],
        ..Marks::default()
    };
    assert_eq!(find(&d, None, &marks), None);
    // one line left out of the stall: it is the steady phase
    let marks = Marks {
        stalls: vec![(d[1].t.unwrap(), tn)],
        ..Marks::default()
    };
    let p = find(&d, None, &marks).expect("phases");
    assert_eq!(kinds(&p), vec![PhaseKind::Steady, PhaseKind::Stalled]);
    assert_eq!((p.steady_start_s, p.steady_end_s), (t0, t0));
}

/// Boundary of the warm-up rule (`th::WARMUP_MAX_RUNNING`): 118 with its later burst at 4
/// running; an earlier burst that peaks at 2 is still its warm-up, at 3 it is a burst of its
/// own (above both 2 and a quarter of the later peak).
#[test]
fn an_earlier_burst_up_to_two_running_is_a_warm_up() {
    let log = "real-4/118-rtxpro6000-v0.5.18dev-agentic-300k-prefix-mamba-mtp-reqtimestats.log";
    let with_earlier = |earlier: &str| -> String {
        whole(log)
            .lines()
            .enumerate()
            .map(|(n, l)| {
                let l = if n >= 23 {
                    l.replacen("#running-req: 1,", "#running-req: 4,", 1)
                } else {
                    l.replacen("#running-req: 1,", &format!("#running-req: {earlier},"), 1)
                };
                format!("{l}\n")
            })
            .collect()
    };
    let two = find(&decode_of(&with_earlier("2")), None, &Marks::default()).expect("phases");
    assert!(
        kinds(&two).contains(&PhaseKind::WarmUp),
        "{:?}",
        kinds(&two)
    );
    let three = find(&decode_of(&with_earlier("3")), None, &Marks::default()).expect("phases");
    assert!(
        !kinds(&three).contains(&PhaseKind::WarmUp),
        "{:?}",
        kinds(&three)
    );
}

#[test]
fn a_drain_ends_at_half_the_plateau() {
    // The same rank's fall: nothing waits on its lines, so its plateau is the median running
    // of the first half of them (21). Cut at 03:44:41 the last line runs 11, above half the
    // plateau (10.5): the fall is not yet a drain; one line later it runs 10, and the lines
    // from the last one at four fifths of the plateau on are the drain.
    let lines = only(
        &excerpt("real-long/ascend-dsr1-pd-decode-dp32.log", 4900..=6600),
        "DP3 TP3",
    );
    let until = |stamp: &str| -> String {
        let mut out = String::new();
        for l in lines.lines() {
            out.push_str(l);
            out.push('\n');
            if l.contains(stamp) {
                break;
            }
        }
        out
    };
    let plateau = |d: &[DecodeSample]| {
        let r: Vec<f64> = d
            .iter()
            .filter_map(|x| x.running.map(|r| r as f64))
            .collect();
        throughput_stats::median_f64(&r[..r.len() / 2]).unwrap()
    };
    let at_11 = decode_of(&until("03:44:41"));
    assert_eq!(at_11.last().and_then(|d| d.running), Some(11));
    assert_eq!(plateau(&at_11), 21.0);
    let p = find(&at_11, None, &Marks::default()).expect("phases");
    assert!(!kinds(&p).contains(&PhaseKind::Drain), "{:?}", p.phases);
    let at_10 = decode_of(&until("03:44:44"));
    assert_eq!(at_10.last().and_then(|d| d.running), Some(10));
    assert_eq!(plateau(&at_10), 21.0);
    let p = find(&at_10, None, &Marks::default()).expect("phases");
    let drain = p
        .phases
        .iter()
        .find(|x| x.kind == PhaseKind::Drain)
        .unwrap_or_else(|| panic!("{:?}", p.phases));
    assert!(drain.lines >= th::MIN_DRAIN_LINES, "{drain:?}");
}

/// The first reading's test without the median is the test against the median: readings with
/// ties, zeros of both signs, values that are not finite, none at all, and first readings on
/// either side of a quarter of each.
#[test]
fn the_counted_first_reading_test_is_the_medians() {
    let line = |g: Option<f64>| DecodeSample {
        gen_tps: g,
        ..DecodeSample::default()
    };
    let sets: Vec<Vec<Option<f64>>> = vec![
        (0..101)
            .map(|i| Some(f64::from((i * 37) % 11) * 100.0))
            .collect(),
        (0..40).map(|i| Some(f64::from(i % 4) * 0.25)).collect(),
        vec![Some(-0.0), Some(0.0), None, Some(f64::NAN), Some(4.0)],
        vec![Some(f64::INFINITY), Some(800.0), Some(800.0), None],
        vec![None, Some(f64::NAN)],
        Vec::new(),
    ];
    for set in sets {
        let decode: Vec<DecodeSample> = set.iter().map(|&g| line(g)).collect();
        let readings: Vec<f64> = set.iter().flatten().copied().collect();
        let median = throughput_stats::median_f64(&readings).unwrap_or(0.0);
        let mut gs: Vec<f64> = readings.iter().map(|x| x * th::IDLE_LOW_READING).collect();
        gs.extend([
            -1.0,
            0.0,
            -0.0,
            1e-9,
            24.9,
            25.0,
            199.9,
            200.0,
            250.1,
            f64::NAN,
        ]);
        for g in gs {
            assert_eq!(
                below_median_share(g, &decode),
                g < th::IDLE_LOW_READING * median,
                "{g} in {set:?}"
            );
        }
    }
}
