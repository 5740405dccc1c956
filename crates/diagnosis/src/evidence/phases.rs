//! The phases of one scheduler's run beyond the ramp: warm-up, ramp, steady, drain and idle,
//! found from the decode lines alone (running and queued requests, token usage, the gaps
//! between lines).
//!
//! SGLang prints a decode line every `decode_log_interval` (default 40) decode steps while any
//! request runs, and none while the scheduler is idle (`scheduler_metrics_mixin.py`
//! `log_decode_stats`). So:
//! - a gap of many log intervals between decode lines is **idle** time (or prefill-only time);
//! - the first decode line after such a gap (and the log's first line) reports `gen throughput`
//!   over a window that includes the idle time (`num_generated_tokens / (now -
//!   last_decode_stats_tic)`): its reading is not a decode rate ([`first_window_lines`]);
//! - activity segments before the main one that hold only a few tiny batches, smaller than the
//!   main one's, are a **warm-up** (JIT/graph compile requests, a health check); a segment as
//!   large as the main one (a single client's earlier request) is another burst of the run;
//! - in the main segment, the **ramp** is cut by MSER on the running requests
//!   ([`super::view::find_span`]) and, while requests wait, by the fill of the KV pool (token
//!   usage reaching its plateau: until then every step is cheaper than the steady ones);
//! - the **drain** is the tail where nothing waits and the running count falls to a fraction of
//!   its plateau: the client has stopped sending, so the tail says nothing of the server.

use serde::Serialize;

use crate::evidence::{DecodeSample, PrefillSample, collect_within};
use crate::report::{Phase, PhaseKind};
use crate::thresholds as th;

/// The steady window of the main segment and every phase found, in time order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phases {
    /// Start of the window the headline figures come from (seconds, log clock).
    pub steady_start_s: f64,
    /// End of that window (seconds).
    pub steady_end_s: f64,
    /// Every phase, in time order (idle gaps included).
    pub phases: Vec<Phase>,
}

/// Median of the positive gaps between consecutive decode lines (seconds), the log interval.
fn median_interval(ts: &[f64]) -> Option<f64> {
    let gaps: Vec<f64> = ts
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g > 0.0)
        .collect();
    throughput_stats::median_f64(&gaps)
}

/// The gap (seconds) above which two decode lines have idle time between them: at least
/// [`th::IDLE_GAP_S`] and [`th::IDLE_GAP_INTERVALS`] log intervals.
pub fn idle_gap_s(decode: &[DecodeSample]) -> f64 {
    let ts: Vec<f64> = collect_within(decode.len(), decode.iter().filter_map(|d| d.t));
    let interval = median_interval(&ts).unwrap_or(0.0);
    th::IDLE_GAP_S.max(th::IDLE_GAP_INTERVALS * interval)
}

/// Line numbers of the decode lines whose `gen throughput` window includes time without
/// decoding: the first line after an idle gap (not when prefill batches fill the gap, none of
/// them an idle gap apart: that is the server at work); the first line after a prefill batch
/// that found nothing running (`#running-req: 0`: decode had stopped, so the window spans the
/// wait and the prefill), unless that prefill came within [`th::REFILL_MAX_WAIT_S`] of the
/// previous decode line and the refill admitted several requests (a wave of requests that ends
/// together and the next wave prefilled at once: no wait in the window, and its prefill time
/// is a real cost of throughput); and the log's first line when its reading is below [`th::IDLE_LOW_READING`] of
/// the median of the others (an excerpt that starts mid-run keeps a normal first reading).
/// Their readings are left out of every mean and median. Sorted by line number.
pub fn first_window_lines(decode: &[DecodeSample], prefill: &[PrefillSample]) -> Vec<u64> {
    let gap = idle_gap_s(decode);
    let readings: Vec<f64> = collect_within(decode.len(), decode.iter().filter_map(|d| d.gen_tps));
    // line numbers of prefill batches that started from an empty running batch
    let mut restarts: Vec<(u64, Option<f64>)> = prefill
        .iter()
        .filter(|p| p.running == Some(0))
        .map(|p| (p.line, p.t))
        .collect();
    restarts.sort_unstable_by_key(|r| r.0);
    let mut prefill_t: Vec<f64> = collect_within(prefill.len(), prefill.iter().filter_map(|p| p.t));
    prefill_t.sort_by(f64::total_cmp);
    // whether (from, to) holds a whole idle gap without a batch line
    let idle = |from: f64, to: f64| {
        let lo = prefill_t.partition_point(|&t| t <= from);
        let hi = prefill_t.partition_point(|&t| t < to);
        let mut last = from;
        for &t in prefill_t[lo..hi].iter().chain(std::iter::once(&to)) {
            if t - last >= gap {
                return true;
            }
            last = t;
        }
        false
    };
    let mut out = Vec::new();
    let mut prev: Option<f64> = None;
    let mut prev_line: Option<u64> = None;
    let mut prev_sample: Option<&DecodeSample> = None;
    for (i, d) in decode.iter().enumerate() {
        // a restart between the previous decode line and this one (binary search: both sorted)
        // (before the first decode line: any such prefill, since SGLang's window then starts
        // at the last reset, before it)
        let after_restart = match prev_line {
            Some(a) => {
                a < d.line
                    && restarts
                        .get(restarts.partition_point(|r| r.0 <= a))
                        .is_some_and(|&(l, t)| {
                            if l >= d.line {
                                return false;
                            }
                            // a wave refilled at once after the batch emptied has no wait in
                            // it (the admitted requests are summed only then: a scan of every
                            // prefill line for each decode line would be quadratic)
                            let at_once = matches!((t, prev), (Some(t), Some(p)) if t - p <= th::REFILL_MAX_WAIT_S);
                            !at_once
                                || prefill
                                    .iter()
                                    .filter(|p| p.line >= l && p.line < d.line)
                                    .filter_map(|p| p.new_seq)
                                    .sum::<u64>()
                                    < 2
                        })
            }
            None => restarts.first().is_some_and(|r| r.0 < d.line),
        };
        match (prev, d.t) {
            (Some(p), Some(t))
                if t - p >= gap
                    && idle(p, t)
                    && !prev_sample.is_some_and(|a| decoded_through(a, d)) =>
            {
                out.push(d.line)
            }
            _ if after_restart => out.push(d.line),
            (None, _) if i == 0 && readings.len() >= 3 => {
                let rest: Vec<f64> = decode[1..].iter().filter_map(|d| d.gen_tps).collect();
                let median = throughput_stats::median_f64(&rest).unwrap_or(0.0);
                if d.gen_tps.is_some_and(|g| g < th::IDLE_LOW_READING * median) {
                    out.push(d.line);
                }
            }
            _ => {}
        }
        if d.t.is_some() {
            prev = d.t;
            prev_sample = Some(d);
        }
        prev_line = Some(d.line);
    }
    out.sort_unstable();
    out
}

/// Whether decoding went on through the gap between two decode lines whose lines in between
/// are missing (a paste that elides them): the same requests run on both sides and the KV
/// tokens grew by what the later line's rate gives over the gap (within a factor
/// [`th::GAP_TOKENS_FACTOR`] either way). SGLang prints a decode line every
/// `decode_log_interval` steps while any request runs, so a real idle gap has no running
/// request to carry its KV across it.
pub fn decoded_through(a: &DecodeSample, b: &DecodeSample) -> bool {
    let (Some(ta), Some(tb)) = (a.t, b.t) else {
        return false;
    };
    let (Some(ra), Some(rb)) = (a.running, b.running) else {
        return false;
    };
    let (Some(ka), Some(kb), Some(g)) = (a.tokens, b.tokens, b.gen_tps) else {
        return false;
    };
    let grew = kb as f64 - ka as f64;
    let expected = g * (tb - ta);
    ra == rb
        && ra > 0
        && expected > 0.0
        && grew >= expected / th::GAP_TOKENS_FACTOR
        && grew <= expected * th::GAP_TOKENS_FACTOR
}

/// Activity segments: index ranges of `decode` (timestamped, in time order) split at idle gaps.
fn segments(decode: &[DecodeSample], gap: f64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..decode.len() {
        if let (Some(a), Some(b)) = (decode[i - 1].t, decode[i].t)
            && b - a >= gap
            && !decoded_through(&decode[i - 1], &decode[i])
        {
            out.push(start..i);
            start = i;
        }
    }
    if start < decode.len() {
        out.push(start..decode.len());
    }
    out
}

fn peak_running(s: &[DecodeSample]) -> u64 {
    s.iter().filter_map(|d| d.running).max().unwrap_or(0)
}

fn phase(kind: PhaseKind, s: &[DecodeSample]) -> Option<Phase> {
    Some(Phase {
        kind,
        start_s: s.first()?.t?,
        end_s: s.last()?.t?,
        lines: s.len(),
    })
}

/// The phases of one scheduler's decode lines. `ramp_end_s`: where MSER on the running
/// requests ends the ramp (seconds; `None` when it found none). `None` when fewer than two
/// decode lines carry timestamps or they are out of order.
pub fn find(decode: &[DecodeSample], ramp_end_s: Option<f64>) -> Option<Phases> {
    // the timestamped lines: every line as a rule, then no copy
    let some_untimed: Vec<DecodeSample>;
    let timed: &[DecodeSample] = if decode.iter().all(|d| d.t.is_some()) {
        decode
    } else {
        some_untimed = decode.iter().copied().filter(|d| d.t.is_some()).collect();
        &some_untimed
    };
    if timed.len() < 2 || timed.windows(2).any(|w| w[1].t < w[0].t) {
        return None;
    }
    let gap = idle_gap_s(timed);
    let segs = segments(timed, gap);
    // the main segment: the last of those with nearly the most decode lines (a benchmark run
    // twice, a warm-up run then the measured one: the later)
    let most = segs.iter().map(|r| r.len()).max()?;
    let main = segs
        .iter()
        .rposition(|r| r.len() as f64 >= th::MAIN_SEGMENT_SHARE * most as f64)?;
    let main_peak = peak_running(&timed[segs[main].clone()]);
    let mut phases = Vec::new();
    for (i, r) in segs.iter().enumerate() {
        if i > 0 {
            let (a, b) = (timed[r.start - 1].t?, timed[r.start].t?);
            phases.push(Phase {
                kind: PhaseKind::Idle,
                start_s: a,
                end_s: b,
                lines: 0,
            });
        }
        let s = &timed[r.clone()];
        if i != main {
            // a warm-up is smaller than the run it precedes: a single client's earlier
            // requests, at the same one request, are that run's own work
            let peak = peak_running(s);
            let tiny = peak < main_peak
                && peak as f64 <= (th::WARMUP_MAX_RUNNING).max(main_peak as f64 / 4.0);
            let kind = if i < main && tiny {
                PhaseKind::WarmUp
            } else {
                PhaseKind::OtherBurst
            };
            phases.extend(phase(kind, s));
            continue;
        }
        let (steady_from, steady_to) = main_window(s, ramp_end_s);
        // `s` is timestamped and in time order and the window's start is at most its end
        // (`main_window`), so the lines before, inside and after it are three consecutive
        // parts of `s`
        let a = s.partition_point(|d| d.t.is_some_and(|t| t < steady_from));
        let b = s
            .partition_point(|d| d.t.is_some_and(|t| t <= steady_to))
            .max(a);
        phases.extend(phase(PhaseKind::Ramp, &s[..a]));
        phases.extend(phase(PhaseKind::Steady, &s[a..b]));
        phases.extend(phase(PhaseKind::Drain, &s[b..]));
    }
    let steady = phases.iter().find(|p| p.kind == PhaseKind::Steady)?;
    Some(Phases {
        steady_start_s: steady.start_s,
        steady_end_s: steady.end_s,
        phases,
    })
}

/// The steady window of the main segment `s` (timestamped, in order): after the MSER ramp and
/// the KV fill, before the drain.
fn main_window(s: &[DecodeSample], ramp_end_s: Option<f64>) -> (f64, f64) {
    let first = s[0].t.unwrap_or(0.0);
    let last = s[s.len() - 1].t.unwrap_or(first);
    let mut from = ramp_end_s.unwrap_or(first).clamp(first, last);
    if let Some(fill) = kv_fill_end(s) {
        from = from.max(fill);
    }
    if let Some(sat) = saturation_start(s) {
        from = from.max(sat);
    }
    let to = drain_start(s).unwrap_or(last).max(from);
    (from, to)
}

/// Where the KV pool has filled (seconds): while requests wait on most lines, the first line
/// whose token usage reaches [`th::KV_FILL_FRACTION`] of the median usage of the segment's
/// second half, when that is within its first half (a later one is no ramp but the run).
fn kv_fill_end(s: &[DecodeSample]) -> Option<f64> {
    let queued = s.iter().filter(|d| d.queue.is_some_and(|q| q > 0)).count();
    if s.len() < th::MIN_PHASE_LINES || (queued as f64) < th::QUEUED_SHARE * s.len() as f64 {
        return None;
    }
    let half = &s[s.len() / 2..];
    let later: Vec<f64> = half.iter().filter_map(|d| d.usage).collect();
    let plateau = throughput_stats::median_f64(&later)?;
    if plateau <= 0.0 {
        return None;
    }
    let i = s
        .iter()
        .position(|d| d.usage.is_some_and(|u| u >= th::KV_FILL_FRACTION * plateau))?;
    (i > 0 && i < s.len() / 2).then_some(s[i].t).flatten()
}

/// Where a burst saturates the server (seconds): a segment that starts with nothing queued
/// and later queues on at least [`th::SATURATED_SHARE`] of its lines ramps until its first
/// queued line (from there the demand exceeds what the server admits), when that line is in
/// the first half.
fn saturation_start(s: &[DecodeSample]) -> Option<f64> {
    if s.len() < th::MIN_PHASE_LINES || s[0].queue.is_none_or(|q| q > 0) {
        return None;
    }
    let queued = s.iter().filter(|d| d.queue.is_some_and(|q| q > 0)).count();
    if (queued as f64) < th::SATURATED_SHARE * s.len() as f64 {
        return None;
    }
    let i = s.iter().position(|d| d.queue.is_some_and(|q| q > 0))?;
    (i < s.len() / 2).then_some(s[i].t).flatten()
}

/// Where the drain starts (seconds): in the tail where nothing waits, the last line whose
/// running count is still at least [`th::DRAIN_HIGH`] of the plateau (the median running of
/// the segment's lines before that tail, else of its first half), when the segment ends at or
/// below [`th::DRAIN_LOW`] of it and [`th::MIN_DRAIN_LINES`] lines fall after it.
fn drain_start(s: &[DecodeSample]) -> Option<f64> {
    if s.len() < th::MIN_PHASE_LINES {
        return None;
    }
    let tail_from = s
        .iter()
        .rposition(|d| d.queue.is_some_and(|q| q > 0))
        .map_or(0, |i| i + 1);
    let before = if tail_from >= s.len() / 4 {
        &s[..tail_from]
    } else {
        &s[..s.len() / 2]
    };
    let running: Vec<f64> = before
        .iter()
        .filter_map(|d| d.running.map(|r| r as f64))
        .collect();
    let plateau = throughput_stats::median_f64(&running)?;
    let end = s[s.len() - 1].running? as f64;
    if plateau < th::DRAIN_MIN_PLATEAU || end > th::DRAIN_LOW * plateau {
        return None;
    }
    let tail = &s[tail_from..];
    let k = tail.iter().rposition(|d| {
        d.running
            .is_some_and(|r| r as f64 >= th::DRAIN_HIGH * plateau)
    })?;
    (tail.len() - 1 - k >= th::MIN_DRAIN_LINES)
        .then_some(tail[k].t)
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, only, whole, with_input};

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
        let p = find(&decode_of(&whole(log)), None).expect("phases");
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
        let p = find(&decode_of(&text), None).expect("phases");
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
        let p = find(&d, None).expect("phases");
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
        let p = find(&d, None).expect("phases");
        assert_eq!(kinds(&p), vec![PhaseKind::Steady]);
    }

    #[test]
    fn the_kv_fill_is_a_ramp() {
        // The founding case: 41 of 150 requests admitted at once, token usage 0.09 -> 0.86
        // over the first minutes while ~109 wait: the steady window starts once the pool is full.
        let d = decode_of(&whole("scenarios/kimi-k25-b2-early/server.log"));
        let p = find(&d, None).expect("phases");
        assert_eq!(kinds(&p), vec![PhaseKind::Ramp, PhaseKind::Steady]);
        let ramp = p.steady_start_s - d[0].t.unwrap();
        assert!((60.0..=400.0).contains(&ramp), "{ramp}");
    }

    #[test]
    fn a_burst_is_steady_while_it_saturates_the_server() {
        // RTX 4090: running climbs 1 -> 66 with nothing queued (16:05:27-16:06:05), the pool
        // fills and requests queue until ~16:07:50, then the burst drains to 1 running.
        let d = decode_of(&whole("real-long/rtx4090-qwen3-4b-kv-retraction.log"));
        let p = find(&d, None).expect("phases");
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
        let p = find(&d, None).expect("phases");
        assert!(kinds(&p).contains(&PhaseKind::Drain), "{:?}", p.phases);
        let drain = p
            .phases
            .iter()
            .find(|x| x.kind == PhaseKind::Drain)
            .unwrap();
        assert!(drain.lines >= th::MIN_DRAIN_LINES, "{drain:?}");
        // A steady run does not drain: the same rank's lines with a standing queue.
        let queued = crate::rules::testing::set_field(&lines, "#queue-req", "3");
        let p = find(&decode_of(&queued), None).expect("phases");
        assert!(!kinds(&p).contains(&PhaseKind::Drain), "{:?}", p.phases);
    }
}
