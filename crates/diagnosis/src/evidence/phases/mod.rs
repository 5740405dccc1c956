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

use crate::evidence::frozen;
use crate::evidence::{DecodeSample, PrefillSample, SchedulerTimeline, collect_within};
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
    /// Whether the main segment stands apart from the rest of the run: other segments (idle
    /// or busy gaps between) or a ramp or drain cut from it.
    pub main_stands_apart: bool,
    /// Whether a ramp or drain was cut from the main segment.
    pub ramp_or_drain: bool,
}

/// The gap (seconds) above which two decode lines have idle time between them: at least
/// [`th::IDLE_GAP_S`] and [`th::IDLE_GAP_INTERVALS`] log intervals.
pub fn idle_gap_s(decode: &[DecodeSample]) -> f64 {
    // the gaps taken in one pass over the lines (a list of their times first cost a pass
    // and a copy more)
    let mut prev: Option<f64> = None;
    let gaps: Vec<f64> = collect_within(
        decode.len(),
        decode.iter().filter_map(|d| {
            let t = d.t?;
            let gap = prev.map(|p| t - p);
            prev = Some(t);
            gap.filter(|g| *g > 0.0)
        }),
    );
    let interval = throughput_stats::median_f64(&gaps).unwrap_or(0.0);
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
    first_window_lines_at(decode, prefill, &prefill_times(prefill), idle_gap_s(decode))
}

/// The times of prefill lines (seconds), in [`f64::total_cmp`] order: sorted only when they
/// are not in order already (a log's lines are, as a rule: the stable sort still cost ~20
/// instructions a line to find them so).
fn prefill_times(prefill: &[PrefillSample]) -> Vec<f64> {
    let mut t: Vec<f64> = collect_within(prefill.len(), prefill.iter().filter_map(|p| p.t));
    if !t.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
        t.sort_by(f64::total_cmp);
    }
    t
}

/// [`first_window_lines`] with the idle gap of `decode` ([`idle_gap_s`]) and the sorted times
/// of `prefill` ([`Marks::prefill_t`]) already taken (a view takes them once for this and
/// [`find_at`]).
pub(crate) fn first_window_lines_at(
    decode: &[DecodeSample],
    prefill: &[PrefillSample],
    prefill_t: &[f64],
    gap: f64,
) -> Vec<u64> {
    let readings = decode.iter().filter(|d| d.gen_tps.is_some()).count();
    // line numbers of prefill batches that started from an empty running batch
    let mut restarts: Vec<(u64, Option<f64>)> = prefill
        .iter()
        .filter(|p| p.running == Some(0))
        .map(|p| (p.line, p.t))
        .collect();
    restarts.sort_unstable_by_key(|r| r.0);
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
            (None, _)
                if i == 0
                    && readings >= 3
                    && d.gen_tps
                        .is_some_and(|g| below_median_share(g, &decode[1..])) =>
            {
                out.push(d.line)
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

/// Whether `g < IDLE_LOW_READING · m` ([`th::IDLE_LOW_READING`]), `m` the upper median of the
/// finite `gen throughput` readings of `decode` ([`throughput_stats::median_f64`]; 0 when there
/// is none), told without the median ([`median_holds`]: `g < c·x`, `c` > 0, holds for a
/// reading `x` and every greater one, a product rounding monotonically). One pass that
/// counts, where the median's copy and selection cost ~0.24 M instructions on a scheduler's
/// 5,900 decode lines.
fn below_median_share(g: f64, decode: &[DecodeSample]) -> bool {
    const { assert!(th::IDLE_LOW_READING > 0.0) };
    let holds = |x: f64| g < th::IDLE_LOW_READING * x;
    median_holds(decode.iter().filter_map(|d| d.gen_tps), holds).unwrap_or_else(|| holds(0.0))
}

/// Whether `holds` is true of the upper median of the finite `values`
/// ([`throughput_stats::median_f64`]), for a `holds` that, true of a value, is true of every
/// greater one: then the values it is false of come first in order, and it is true of the one
/// at index `n / 2` exactly when they are at most `n / 2`. Counted in one pass, without the
/// copy and selection of the median; `None` when no value is finite (no median).
fn median_holds(values: impl Iterator<Item = f64>, holds: impl Fn(f64) -> bool) -> Option<bool> {
    let (mut finite, mut fails) = (0usize, 0usize);
    for x in values {
        if x.is_finite() {
            finite += 1;
            fails += usize::from(!holds(x));
        }
    }
    (finite > 0).then_some(fails <= finite / 2)
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

/// What the phases read beyond the decode lines: when the scheduler prefilled, stalled and
/// crashed ([`Marks::of`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marks {
    /// Times of its prefill lines (seconds), in order.
    pub prefill_t: Vec<f64>,
    /// First and last time (seconds) of each frozen `#token` run that lasted
    /// [`th::STALL_MIN_S`] or more: the runs the `stall` rule calls a stall
    /// ([`frozen::frozen_runs`], or [`frozen::FrozenTracker::longest`] on a timeline that
    /// keeps one line in `stride`).
    pub stalls: Vec<(f64, f64)>,
    /// When it crashed (seconds; [`SchedulerTimeline::crash_t`]).
    pub crash_s: Option<f64>,
}

impl Marks {
    /// The marks of one scheduler's timeline.
    pub fn of(tl: &SchedulerTimeline) -> Self {
        let prefill_t = prefill_times(tl.prefill.samples());
        let stalls = if tl.decode.stride() > 1 {
            // not every line kept: the longest run followed line by line
            tl.frozen
                .longest()
                .filter(frozen::FrozenSpan::is_long)
                .and_then(|r| r.first_t.zip(r.last_t))
                .into_iter()
                .collect()
        } else {
            let d = tl.decode.samples();
            frozen::frozen_runs(d)
                .iter()
                .filter(|r| r.is_long())
                .filter_map(|r| d[r.first].t.zip(d[r.last].t))
                .collect()
        };
        Marks {
            prefill_t,
            stalls,
            crash_s: tl.crash_t,
        }
    }

    /// Whether prefill lines kept the server busy through the gap between decode lines at
    /// `from` and `to` (seconds): some prefill line falls in it and none comes
    /// `gap` seconds or more after the batch line before it (so no request arrived after idle
    /// time). The stretch from the last prefill line to `to` is that prefill's forward pass
    /// (and the first decode steps of what it admitted), however long: SGLang prints a decode
    /// line every `decode_log_interval` steps once a request runs.
    fn prefilled_through(&self, from: f64, to: f64, gap: f64) -> bool {
        let lo = self.prefill_t.partition_point(|&t| t <= from);
        let hi = self.prefill_t.partition_point(|&t| t < to);
        let mut last = from;
        for &t in &self.prefill_t[lo..hi] {
            if t - last >= gap {
                return false;
            }
            last = t;
        }
        hi > lo
    }
}

/// One piece of a timeline before like pieces are joined: a line (`lines` 1) or a gap
/// between two lines (`lines` 0).
fn piece(kind: PhaseKind, start_s: f64, end_s: f64, lines: usize) -> Phase {
    Phase {
        kind,
        start_s,
        end_s,
        lines,
    }
}

/// The phases of one scheduler's decode lines. `ramp_end_s`: where MSER on the running
/// requests ends the ramp (seconds; `None` when it found none); `marks`: its prefills, stalls
/// and crash. The lines after the crash are the after-crash phase and the others are segmented
/// without them; a crash before every line is one of an earlier run and is passed over.
/// `None` when fewer than two decode lines before the crash carry timestamps, when they are out
/// of order, or when no line is left steady.
pub fn find(decode: &[DecodeSample], ramp_end_s: Option<f64>, marks: &Marks) -> Option<Phases> {
    find_at(decode, ramp_end_s, marks, idle_gap_s(decode))
}

/// [`find`] with the idle gap of all of `decode` ([`idle_gap_s`]) already taken: used when
/// the lines it reads are all of them (every line stamped, no crash cut), else taken again.
pub(crate) fn find_at(
    decode: &[DecodeSample],
    ramp_end_s: Option<f64>,
    marks: &Marks,
    whole_gap: f64,
) -> Option<Phases> {
    // the timestamped lines: every line as a rule, then no copy
    let some_untimed: Vec<DecodeSample>;
    let all: &[DecodeSample] = if decode.iter().all(|d| d.t.is_some()) {
        decode
    } else {
        some_untimed = decode.iter().copied().filter(|d| d.t.is_some()).collect();
        &some_untimed
    };
    if all.windows(2).any(|w| w[1].t < w[0].t) {
        return None;
    }
    let cut = marks
        .crash_s
        .map(|c| all.partition_point(|d| d.t.is_some_and(|t| t <= c)))
        .filter(|&n| n > 0)
        .unwrap_or(all.len());
    let (timed, after) = all.split_at(cut);
    if timed.len() < 2 {
        return None;
    }
    let gap = if timed.len() == decode.len() {
        // a prefix of the stamped lines as long as all lines: all of them, in order
        whole_gap
    } else {
        idle_gap_s(timed)
    };
    let segs = segments(timed, gap);
    // the main segment: the last of those with nearly the most decode lines (a benchmark run
    // twice, a warm-up run then the measured one: the later)
    let most = segs.iter().map(|r| r.len()).max()?;
    let main = segs
        .iter()
        .rposition(|r| r.len() as f64 >= th::MAIN_SEGMENT_SHARE * most as f64)?;
    let main_peak = peak_running(&timed[segs[main].clone()]);
    // each line's kind, and the kind of the gap before it (idle or busy), if it is one
    let mut kinds = vec![PhaseKind::Steady; timed.len()];
    let mut gaps: Vec<Option<PhaseKind>> = vec![None; timed.len()];
    let mut ramp_or_drain = false;
    for (i, r) in segs.iter().enumerate() {
        let s = &timed[r.clone()];
        if i > 0 {
            let (a, b) = (timed[r.start - 1].t?, s[0].t?);
            gaps[r.start] = Some(if marks.prefilled_through(a, b, gap) {
                PhaseKind::BusyGap
            } else {
                PhaseKind::Idle
            });
        }
        // a gap the KV tokens decoded through is no segment's end, but no steady time either
        for j in r.start + 1..r.end {
            if let (Some(a), Some(b)) = (timed[j - 1].t, timed[j].t)
                && b - a >= gap
            {
                gaps[j] = Some(PhaseKind::BusyGap);
            }
        }
        let kind = if i == main {
            let (steady_from, steady_to) = main_window(s, ramp_end_s);
            // `s` is timestamped and in time order and the window's start is at most its end
            // (`main_window`), so the lines before, inside and after it are three consecutive
            // parts of `s`
            let a = s.partition_point(|d| d.t.is_some_and(|t| t < steady_from));
            let b = s
                .partition_point(|d| d.t.is_some_and(|t| t <= steady_to))
                .max(a);
            kinds[r.start..r.start + a].fill(PhaseKind::Ramp);
            kinds[r.start + b..r.end].fill(PhaseKind::Drain);
            ramp_or_drain = a > 0 || b < s.len();
            continue;
        } else {
            // a warm-up is smaller than the run it precedes: a single client's earlier
            // requests, at the same one request, are that run's own work
            let peak = peak_running(s);
            let tiny = peak < main_peak
                && peak as f64 <= (th::WARMUP_MAX_RUNNING).max(main_peak as f64 / 4.0);
            if i < main && tiny {
                PhaseKind::WarmUp
            } else {
                PhaseKind::OtherBurst
            }
        };
        kinds[r.clone()].fill(kind);
    }
    // a stall is no steady time, whatever segment it is in; nor is the gap inside it
    for &(from, to) in &marks.stalls {
        let a = timed.partition_point(|d| d.t.is_some_and(|t| t < from));
        let b = timed.partition_point(|d| d.t.is_some_and(|t| t <= to));
        for j in a..b {
            kinds[j] = PhaseKind::Stalled;
            if j > a && gaps[j].is_some() {
                gaps[j] = Some(PhaseKind::Stalled);
            }
        }
    }
    // each line and gap a piece, joined to the phase before it as it comes
    let mut phases: Vec<Phase> = Vec::new();
    for (j, d) in timed.iter().enumerate() {
        let t = d.t?;
        if let Some(g) = gaps[j] {
            join_piece(&mut phases, piece(g, timed[j - 1].t?, t, 0));
        }
        join_piece(&mut phases, piece(kinds[j], t, t, 1));
    }
    if let (Some(first), Some(last)) = (after.first(), after.last()) {
        join_piece(
            &mut phases,
            piece(PhaseKind::AfterCrash, first.t?, last.t?, after.len()),
        );
    }
    let first = phases.iter().find(|p| p.kind == PhaseKind::Steady)?;
    let last = phases.iter().rfind(|p| p.kind == PhaseKind::Steady)?;
    Some(Phases {
        steady_start_s: first.start_s,
        steady_end_s: last.end_s,
        main_stands_apart: segs.len() > 1 || ramp_or_drain,
        ramp_or_drain,
        phases,
    })
}

/// The next piece in time order, joined to the last phase of `out` where the kind runs on;
/// idle and busy gaps stay one phase each (two lie between two lines of other kinds).
fn join_piece(out: &mut Vec<Phase>, p: Phase) {
    match out.last_mut() {
        Some(q) if q.kind == p.kind && !matches!(p.kind, PhaseKind::Idle | PhaseKind::BusyGap) => {
            q.end_s = p.end_s;
            q.lines += p.lines;
        }
        _ => out.push(p),
    }
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
    // no plateau above 0 (a pool that reads 0.00 on most lines): told by counting, before
    // the median is selected
    if !median_holds(half.iter().filter_map(|d| d.usage), |u| u > 0.0)? {
        return None;
    }
    let later: Vec<f64> = collect_within(half.len(), half.iter().filter_map(|d| d.usage));
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
    let running: Vec<f64> = collect_within(
        before.len(),
        before.iter().filter_map(|d| d.running.map(|r| r as f64)),
    );
    let plateau = throughput_stats::median_f64(&running)?;
    // the last line that reads a batch (a value set aside or damaged leaves a line without)
    let end = s.iter().rev().find_map(|d| d.running)? as f64;
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
mod tests;
