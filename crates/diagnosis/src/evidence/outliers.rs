//! Values one batch line cannot hold, set aside before any estimate reads them (issue 30 A1:
//! one bad value must not move the headline).
//!
//! Each check is a fact of SGLang's scheduler, judged against the same scheduler's
//! neighbouring lines and its capacity, never a bound tuned to a file:
//! - **gen throughput.** A decode line's `gen throughput` is the tokens the running batch made
//!   since the last line over that time (`scheduler_metrics_mixin.py` `log_decode_stats`), so
//!   per running request it is one token per decode step (times the accept length): the
//!   inverse of the step time. A step does not get [`th::SPIKE_FACTOR`] times faster for one
//!   line and slow down again; a line whose rate per running request is that many times every
//!   line's around it is a corrupt value (a damaged digit, two lines glued), not a
//!   measurement. (A low line after an idle gap is SGLang's window, not a slow step: a line is
//!   judged against the highest around it, so a normal line between two such is kept.)
//! - **#running-req** above the scheduler's `max_running_requests` or above its KV pool's
//!   tokens (each running request holds at least one): impossible (`schedule_policy.py`
//!   admits no request past either).
//! - **#queue-req** that jumps [`th::QUEUE_SPIKE_FACTOR`] times above every line around it (and
//!   to at least [`th::QUEUE_SPIKE_MIN`] requests, and above the running cap when it is known),
//!   then falls back at the next line: so many requests neither arrive and get admitted within
//!   one log interval (no more than the cap can be admitted at once).
//!
//! A value set aside is removed from its sample (the field reads `None`), the scheduler's
//! exact peaks are taken again without it, and it is listed with its line and reason
//! ([`SetAside`]) so that the report says what was left out.

use serde::Serialize;

use super::samples::DecodeSample;
use super::scheduler::SchedulerTimeline;
use super::{Evidence, Loc};
use crate::thresholds as th;

/// Which value of a line was set aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetAsideField {
    /// `gen throughput (token/s)`.
    GenThroughput,
    /// `#running-req`.
    Running,
    /// `#queue-req`.
    Queue,
    /// `#transfer-req` (with the other PD decode queues of the line).
    PdQueue,
}

/// Why a value was set aside.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetAsideReason {
    /// Its value (per running request, for gen throughput) is this many times the highest of
    /// the lines around it (ratio).
    Spike {
        /// The value over the typical value of the lines around it (ratio).
        ratio: f64,
    },
    /// Above `max_running_requests` (requests).
    AboveCap {
        /// The cap.
        cap: u64,
    },
    /// Above the KV pool's size (tokens): each running request holds at least one token.
    AbovePool {
        /// The pool (tokens).
        pool: u64,
    },
    /// A PD decode queue on a few lines of a scheduler whose other lines print none: a PD
    /// server prints it on every decode line (`crate::thresholds::pd_role_holds`).
    PdOnFewLines {
        /// Its decode lines (lines).
        lines: u64,
    },
}

/// One value set aside.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SetAside {
    /// Its line.
    pub loc: Loc,
    /// Which field.
    pub field: SetAsideField,
    /// The value as printed.
    pub value: f64,
    /// Why.
    pub reason: SetAsideReason,
}

/// Values set aside, kept up to this many (the count stays exact).
pub const MAX_SET_ASIDE: usize = 64;

/// The values set aside over a run: the first [`MAX_SET_ASIDE`] and the exact count.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SetAsideValues {
    /// Values set aside.
    pub count: u64,
    /// The first ones.
    pub values: Vec<SetAside>,
}

impl SetAsideValues {
    fn push(&mut self, s: SetAside) {
        self.count += 1;
        if self.values.len() < MAX_SET_ASIDE {
            self.values.push(s);
        }
    }
}

/// Indices of `vals` (index, value, in line order) that stand `factor` times above every
/// value within [`th::SPIKE_NEIGHBOURS`] on each side, and at least `min`: isolated spikes.
/// Each returned with its ratio to the highest of those. A line with a neighbour on each side
/// is judged; the first line on the two after it or more (it fell back); the last line on the
/// two before it or more only when `last` (a queue that jumps as the log ends may be a burst
/// that arrived: nothing says it fell back).
///
/// Every neighbour, not their median: a decode line after an idle gap reads low (its window
/// includes the idle time), so one normal line between two such lines stands far above both;
/// it does not stand above the normal lines further on.
fn spikes(vals: &[(usize, f64)], factor: f64, min: f64, last: bool) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    for j in 0..vals.len() {
        let v = vals[j].1;
        let lo = j.saturating_sub(th::SPIKE_NEIGHBOURS);
        let hi = (j + th::SPIKE_NEIGHBOURS).min(vals.len() - 1);
        let (before, after) = (j - lo, hi - j);
        let judged = (before >= 1 && after >= 1) || after >= 2 || (last && before >= 2);
        if !judged || v.is_nan() || v < min {
            continue;
        }
        let neighbours = (lo..=hi).filter(|&k| k != j).map(|k| vals[k].1);
        // the usual reading: a neighbour within the factor of it (the highest is then too),
        // found without taking the highest of all (`factor` is positive: a product is
        // monotone, and a NaN neighbour is never within it, as `f64::max` passes it over)
        if neighbours.clone().any(|x| factor * x >= v) {
            continue;
        }
        let highest = neighbours.fold(f64::MIN_POSITIVE, f64::max);
        if v > factor * highest {
            out.push((vals[j].0, v / highest));
        }
    }
    out
}

/// The reason `running` requests cannot run on a scheduler of `cap` and `pool`, if they cannot.
fn over_capacity(running: u64, cap: Option<u64>, pool: Option<u64>) -> Option<SetAsideReason> {
    match (cap, pool) {
        (Some(c), _) if running > c => Some(SetAsideReason::AboveCap { cap: c }),
        (_, Some(p)) if running > p => Some(SetAsideReason::AbovePool { pool: p }),
        _ => None,
    }
}

/// The counts both kinds of batch line print, for the checks they share.
trait Counts {
    fn at(&self) -> Loc;
    fn running(&mut self) -> &mut Option<u64>;
    fn queue(&mut self) -> &mut Option<u64>;
}

impl Counts for DecodeSample {
    fn at(&self) -> Loc {
        self.loc()
    }
    fn running(&mut self) -> &mut Option<u64> {
        &mut self.running
    }
    fn queue(&mut self) -> &mut Option<u64> {
        &mut self.queue
    }
}

impl Counts for super::samples::PrefillSample {
    fn at(&self) -> Loc {
        self.loc()
    }
    fn running(&mut self) -> &mut Option<u64> {
        &mut self.running
    }
    fn queue(&mut self) -> &mut Option<u64> {
        &mut self.queue
    }
}

/// Clears the running counts above what the scheduler can admit and the queue spikes of
/// `samples` (one kind of line, in order), each noted in `out`; whether any was.
fn set_aside_counts<S: Counts>(
    samples: &mut [S],
    cap: Option<u64>,
    pool: Option<u64>,
    out: &mut SetAsideValues,
) -> bool {
    let before = out.count;
    for s in samples.iter_mut() {
        let running = *s.running();
        if let Some((r, reason)) = running.and_then(|r| Some((r, over_capacity(r, cap, pool)?))) {
            out.push(SetAside {
                loc: s.at(),
                field: SetAsideField::Running,
                value: r as f64,
                reason,
            });
            *s.running() = None;
        }
    }
    // and more requests than the cap lets in at once: up to the cap, a burst can be admitted
    // within one interval
    let min = cap.map_or(th::QUEUE_SPIKE_MIN, |c| th::QUEUE_SPIKE_MIN.max(c as f64));
    // the usual scheduler: no queue reaches that, so none is a spike (`spikes` passes over a
    // reading below `min`), and the readings are not copied out
    if samples
        .iter_mut()
        .all(|s| s.queue().is_none_or(|q| (q as f64) < min))
    {
        return out.count > before;
    }
    // a queue that jumps and falls back within one line (the last line is not judged: a
    // burst that arrives as the log ends does not fall back)
    let queue: Vec<(usize, f64)> = samples
        .iter_mut()
        .enumerate()
        .filter_map(|(i, s)| Some((i, (*s.queue())? as f64)))
        .collect();
    for (i, ratio) in spikes(&queue, th::QUEUE_SPIKE_FACTOR, min, false) {
        let s = &mut samples[i];
        out.push(SetAside {
            loc: s.at(),
            field: SetAsideField::Queue,
            value: s.queue().unwrap_or(0) as f64,
            reason: SetAsideReason::Spike { ratio },
        });
        *s.queue() = None;
    }
    out.count > before
}

/// Sets aside the impossible values of one scheduler's samples (see the module doc), given
/// its cap and pool when the start-up says them.
fn set_aside_in(
    tl: &mut SchedulerTimeline,
    cap: Option<u64>,
    pool: Option<u64>,
    out: &mut SetAsideValues,
) {
    let mut changed = set_aside_counts(tl.decode.samples_mut(), cap, pool, out);
    // PD decode queues on a few lines only: no PD role, and damage to list (issue 30 A3)
    let all = tl.decode.samples().len() as u64;
    let pd = tl
        .decode
        .samples()
        .iter()
        .filter(|d| d.transfer_req.is_some())
        .count() as u64;
    if pd > 0 && !th::pd_role_holds(pd, all) {
        for d in tl
            .decode
            .samples_mut()
            .iter_mut()
            .filter(|d| d.transfer_req.is_some())
        {
            out.push(SetAside {
                loc: d.loc(),
                field: SetAsideField::PdQueue,
                value: d.transfer_req.unwrap_or(0) as f64,
                reason: SetAsideReason::PdOnFewLines { lines: all },
            });
            d.transfer_req = None;
            d.prealloc_req = None;
            d.pre_allocated_usage = None;
        }
        changed = true;
    }
    changed |= set_aside_counts(tl.prefill.samples_mut(), cap, pool, out);
    // gen throughput per running request: the inverse of the step time
    let samples = tl.decode.samples_mut();
    let per_req: Vec<(usize, f64)> = samples
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, d.gen_tps? / d.running?.max(1) as f64)))
        .filter(|(_, v)| v.is_finite())
        .collect();
    for (i, ratio) in spikes(&per_req, th::SPIKE_FACTOR, 0.0, true) {
        let d: &mut DecodeSample = &mut samples[i];
        out.push(SetAside {
            loc: d.loc(),
            field: SetAsideField::GenThroughput,
            value: d.gen_tps.unwrap_or(0.0),
            reason: SetAsideReason::Spike { ratio },
        });
        d.gen_tps = None;
        changed = true;
    }
    if changed {
        tl.retake_decode_peaks();
    }
}

/// Sets aside the values no line of `ev`'s run can hold (see the module doc), per scheduler.
pub(super) fn set_aside(ev: &mut Evidence) {
    let cap = ev
        .startup
        .max_running_requests
        .or(ev.startup.max_running_reset);
    let pool = ev.startup.max_total_num_tokens.map(|(t, _)| t);
    let mut out = std::mem::take(&mut ev.set_aside);
    for tl in ev.schedulers.values_mut() {
        set_aside_in(tl, cap, pool, &mut out);
    }
    ev.set_aside = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(v: &[f64]) -> Vec<(usize, f64)> {
        v.iter().copied().enumerate().collect()
    }

    #[test]
    fn an_isolated_spike_is_found_and_a_step_change_is_not() {
        // per-request rates of real-long rtx4090 (~40 tok/s per request) with one damaged line
        let s = spikes(
            &vals(&[40.1, 39.7, 40.4, 13_888_888.0, 40.0, 39.2, 41.0]),
            20.0,
            0.0,
            true,
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, 3);
        assert!(s[0].1 > 300_000.0);
        // a level that changes and stays (fewer requests, faster steps) is no spike
        assert!(spikes(&vals(&[40.0, 40.0, 900.0, 905.0, 910.0]), 20.0, 0.0, true).is_empty());
        // 19x is under the factor; an end is judged on its side only with two values there,
        // the last line only when asked
        assert!(spikes(&vals(&[40.0, 760.0, 40.0]), 20.0, 0.0, true).is_empty());
        assert_eq!(spikes(&vals(&[9e9, 40.0, 40.0]), 20.0, 0.0, false).len(), 1);
        assert!(spikes(&vals(&[9e9, 40.0]), 20.0, 0.0, true).is_empty());
        assert_eq!(spikes(&vals(&[40.0, 40.0, 9e9]), 20.0, 0.0, true).len(), 1);
        assert!(spikes(&vals(&[40.0, 40.0, 9e9]), 20.0, 0.0, false).is_empty());
        // real/007: single-user chat, the first line after each idle gap low (1.06, 3.17 tok/s,
        // SGLang's window includes the idle time): the normal 84.20 between them is kept
        assert!(spikes(&vals(&[1.06, 84.20, 3.17, 81.97]), 20.0, 0.0, true).is_empty());
    }

    #[test]
    fn a_queue_spike_needs_its_floor() {
        // 0 -> 300 -> 0: a burst admitted within one interval happens; below the floor
        assert!(spikes(&vals(&[0.0, 0.0, 300.0, 0.0, 0.0]), 100.0, 1000.0, false).is_empty());
        let s = spikes(
            &vals(&[46.0, 46.0, 9_000_000.0, 46.0, 45.0]),
            100.0,
            1000.0,
            false,
        );
        assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), [2]);
    }
}
