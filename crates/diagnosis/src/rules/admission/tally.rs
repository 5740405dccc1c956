//! The admission model's pass over the steps: each step's weight from a [`Clock`], and every
//! constraint judged on a step at once into a [`Tally`] (see the parent module's doc).

use super::order;
use crate::evidence::view::SchedulerView;
use crate::report::{Admission, Binding, CapacitySummary, Constraint, Slack};
use crate::rules::{order_key as key, order_value as value, prefill_limit};
use crate::thresholds as th;

/// One queued step: its weight, and the readings of each constraint.
#[derive(Clone, Copy)]
pub(super) struct Step {
    pub(super) weight: f64,
    /// Requests waiting (`#queue-req`, plus `#prealloc-req` on a PD decode server).
    pub(super) queue: u64,
    pub(super) running: Option<u64>,
    pub(super) usage: Option<f64>,
    pub(super) swa: Option<f64>,
    pub(super) mamba: Option<f64>,
    /// `#new-token` of the prefill pass admitted in this step.
    pub(super) prefill_tokens: Option<u64>,
    /// `#new-seq` of the prefill passes admitted in this step (requests).
    pub(super) prefill_seqs: Option<u64>,
}

/// The running-request cap to judge against: configured (or SGLang's speculative default),
/// else the count every decode line of every rank is pinned at.
pub(super) fn running_cap(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<u64> {
    cap.max_running_requests
        .filter(|&c| c > 0)
        .or(v.pinned_across_ranks)
}

/// Weights from times: each step until the next, the last one the median of the others; one
/// each when a time is missing or out of order. `interval`: that median when the caller has
/// it (the upper median of these times' intervals, [`SchedulerView::steady_interval`]).
/// The model reads the same weights one at a time from a [`Clock`]; this vector is what the
/// tests hold the clock to.
#[cfg(test)]
pub(super) fn weights(times: &[Option<f64>], interval: Option<f64>) -> Vec<f64> {
    let mut t: Vec<f64> = Vec::with_capacity(times.len());
    for &x in times {
        match x {
            Some(x) => t.push(x),
            None => return vec![1.0; times.len()],
        }
    }
    let Some(t) = Some(t).filter(|t| t.len() >= 2 && t.windows(2).all(|w| w[1] >= w[0])) else {
        return vec![1.0; times.len()];
    };
    let mut w: Vec<f64> = Vec::with_capacity(t.len());
    w.extend(t.windows(2).map(|p| p[1] - p[0]));
    // the upper median, selected (the element at len/2 in sorted order)
    let median = interval.unwrap_or_else(|| {
        let mut sorted = w.clone();
        let k = sorted.len() / 2;
        *sorted.select_nth_unstable_by(k, f64::total_cmp).1
    });
    w.push(median);
    if w.iter().sum::<f64>() <= 0.0 {
        return vec![1.0; times.len()];
    }
    w
}

/// The weights of the steps (seconds, or one each), read one at a time: each step until the
/// next, the last one the median of the others ([`weights`]'s, bit for bit, without three
/// vectors per scheduler).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Clock {
    /// One each: a time is missing or out of order, or they sum to nothing.
    Ones,
    /// Each step until the next (seconds); the last one `last`, the median interval.
    Timed { last: f64 },
}

impl Clock {
    /// The clock of `times` (see [`weights`]; `interval`: the median when the caller has it),
    /// and whether every step has its time.
    pub(super) fn of(
        times: impl Iterator<Item = Option<f64>>,
        interval: Option<f64>,
    ) -> (Clock, bool) {
        let (mut n, mut prev, mut sorted) = (0usize, None::<f64>, true);
        // the intervals summed in order from -0.0, as `weights` sums them (`Sum` for f64)
        let mut sum = -0.0_f64;
        // the intervals themselves only when their median is to be selected here
        let mut dts: Vec<f64> = Vec::new();
        for t in times {
            let Some(t) = t else {
                return (Clock::Ones, false);
            };
            if let Some(p) = prev {
                sorted &= t >= p;
                let dt = t - p;
                sum += dt;
                if interval.is_none() {
                    dts.push(dt);
                }
            }
            prev = Some(t);
            n += 1;
        }
        if n < 2 || !sorted {
            return (Clock::Ones, true);
        }
        let last = interval.unwrap_or_else(|| {
            let k = dts.len() / 2;
            *dts.select_nth_unstable_by(k, f64::total_cmp).1
        });
        if sum + last <= 0.0 {
            return (Clock::Ones, true);
        }
        (Clock::Timed { last }, true)
    }

    /// The weight of the step at time `t` whose next step is at `next` (`None`: the last).
    #[inline(always)]
    pub(super) fn weight(self, t: Option<f64>, next: Option<Option<f64>>) -> f64 {
        match (self, t, next) {
            (Clock::Ones, ..) => 1.0,
            (Clock::Timed { .. }, Some(t), Some(Some(n))) => n - t,
            (Clock::Timed { last }, ..) => last,
        }
    }
}

/// A constraint with the unit of its slack.
type Judge = (Constraint, fn(f64) -> Slack);

/// The constraints in the order the model judges and lists them, with the unit of the slack.
const JUDGES: [Judge; 7] = [
    (Constraint::RunningCap, Slack::Requests),
    (Constraint::KvPool, Slack::Fraction),
    (Constraint::KvReserve, Slack::Fraction),
    (Constraint::SwaPool, Slack::Fraction),
    (Constraint::MambaSlots, Slack::Fraction),
    (Constraint::PrefillBudget, Slack::Tokens),
    (Constraint::OnePerPass, Slack::Requests),
];

/// The model's sums over the steps, every constraint judged on a step at once (one pass over
/// the steps instead of one per constraint and a vector of them: the model 8.35 M -> 5.2 M
/// instructions on the 20 MB sample's three schedulers). Sums run in step order, as they did.
pub(super) struct Tally {
    cap: Option<u64>,
    /// The prefill budget (tokens) and the mark a pass at it reaches (`PREFILL_AT_LIMIT_FRACTION`
    /// of it, taken once).
    budget: Option<(u64, f64)>,
    one_per_pass: bool,
    /// The steps' time and queued request-time (`Sum`'s order and start).
    time: f64,
    total: f64,
    /// Per constraint of [`JUDGES`]: the steps it reads, and the request-time it holds back.
    read: [usize; 7],
    binds: [f64; 7],
    /// The finite slacks in step order: the cap's (requests), the KV pool's (its reserve's are
    /// the same readings), the SWA pool's, the mamba slots', the budget's (tokens), one per
    /// pass's (requests). Whole numbers stay whole: their median is the same as floats; the
    /// pools' are kept as [`key`]s.
    cap_slack: Vec<u64>,
    pool_slack: Vec<u64>,
    swa_slack: Vec<u64>,
    mamba_slack: Vec<u64>,
    budget_slack: Vec<u64>,
    pass_slack: Vec<u64>,
    /// The steps.
    steps: usize,
    /// A bit per constraint of [`JUDGES`] read on some step.
    reads: u8,
    /// The constraints taken to cover the steps while the room everywhere is summed (a bit
    /// each): all of them at first; the room is right when every constraint read covers
    /// ([`Self::admission`] says when not, and the steps are summed again with those that do).
    /// Summed as the steps come, no record of each step is kept for a second pass.
    covering: u8,
    /// The queued request-time no covering constraint holds back, in step order from 0.0.
    free: f64,
}

impl Tally {
    /// Sums for the steps of scheduler `v` with the capacity `cap`, at most `n` of them.
    /// `covering`: the constraints taken to cover the steps (see [`Self::covering`]).
    pub(super) fn new(
        v: &SchedulerView<'_>,
        cap: &CapacitySummary,
        n: usize,
        covering: u8,
    ) -> Tally {
        // the budget once: the prefill_limit facts take it rather than work it out again
        let budget = prefill_limit::budget(v, cap);
        let one_per_pass = prefill_limit::check_with_budget(v, cap, budget)
            .is_some_and(|f| f.one_per_pass.is_some());
        let cap_n = running_cap(v, cap);
        let room = |on: bool| if on { n } else { 0 };
        Tally {
            cap: cap_n,
            budget: budget.map(|(b, _)| (b, th::PREFILL_AT_LIMIT_FRACTION * b as f64)),
            one_per_pass,
            time: -0.0,
            total: -0.0,
            read: [0; 7],
            binds: [0.0; 7],
            cap_slack: Vec::with_capacity(room(cap_n.is_some())),
            pool_slack: Vec::with_capacity(n),
            swa_slack: Vec::new(),
            mamba_slack: Vec::new(),
            budget_slack: Vec::with_capacity(room(budget.is_some())),
            pass_slack: Vec::with_capacity(room(one_per_pass)),
            steps: 0,
            reads: 0,
            covering,
            free: 0.0,
        }
    }

    /// One step: how many of its waiting requests each constraint holds back, and its room.
    #[inline(always)]
    pub(super) fn add(&mut self, s: Step) {
        let (w, q) = (s.weight, s.queue);
        // the step's queued request-time, and what a constraint that holds back none of it
        // adds: each product taken once, the same bits the sums took one by one (`w * h as
        // f64` with `h` the queue or 0); ~0.5 M instructions on the 20 MB sample
        let (all, none) = (w * q as f64, w * 0.0);
        self.time += w;
        self.total += all;
        let mut whole = 0u8;
        let mut cap_hold = u64::MAX;
        // the cap admits `cap - running` more; the rest of the queue waits for it
        if let (Some(c), Some(r)) = (self.cap, s.running) {
            let h = (r + q).saturating_sub(c).min(q);
            cap_hold = h;
            self.read[0] += 1;
            self.binds[0] += w * h as f64;
            self.cap_slack.push(c.saturating_sub(r));
        }
        if let Some(u) = s.usage {
            let slack = (1.0 - u).max(0.0);
            if slack.is_finite() {
                self.pool_slack.push(key(slack));
            }
            let full = u >= th::KV_FULL_USAGE;
            // below the full mark, the reserve for the running requests' remaining tokens
            let reserve = (th::CONSERVATIVE_USAGE..th::KV_FULL_USAGE).contains(&u);
            // the reserve reads the steps the pool does (`read[2]` is set from `read[1]`)
            self.read[1] += 1;
            self.binds[1] += if full { all } else { none };
            self.binds[2] += if reserve { all } else { none };
            whole |= u8::from(full) << 1 | u8::from(reserve) << 2;
        }
        let pool = |u: f64, full: f64, slacks: &mut Vec<u64>| {
            let slack = (1.0 - u).max(0.0);
            if slack.is_finite() {
                slacks.push(key(slack));
            }
            u >= full
        };
        if let Some(u) = s.swa {
            let full = pool(u, th::KV_FULL_USAGE, &mut self.swa_slack);
            self.read[3] += 1;
            self.binds[3] += if full { all } else { none };
            whole |= u8::from(full) << 3;
        }
        if let Some(u) = s.mamba {
            let full = pool(u, th::MAMBA_FULL_USAGE, &mut self.mamba_slack);
            self.read[4] += 1;
            self.binds[4] += if full { all } else { none };
            whole |= u8::from(full) << 4;
        }
        // a pass filled to the budget: what still waits after it waits for the next one
        if let (Some((b, mark)), Some(n)) = (self.budget, s.prefill_tokens) {
            let full = n as f64 >= mark;
            self.read[5] += 1;
            self.binds[5] += if full { all } else { none };
            self.budget_slack.push(b.saturating_sub(n));
            whole |= u8::from(full) << 5;
        }
        // a build that admits one request a pass (`prefill_limit`'s pattern): the rest of the
        // queue waits for the next pass
        if let Some(n) = s.prefill_seqs.filter(|_| self.one_per_pass) {
            self.read[6] += 1;
            self.binds[6] += if n == 1 { all } else { none };
            self.pass_slack.push(n.saturating_sub(1));
            whole |= u8::from(n == 1) << 6;
        }
        // the room everywhere: what the covering constraints hold back on a step is the most
        // any of them does, the whole queue or what the cap holds (`weight × (queue - held)`:
        // none of it, part of it, or all of it)
        self.free += if whole & self.covering != 0 {
            none
        } else if cap_hold != u64::MAX && self.covering & 1 != 0 {
            w * q.saturating_sub(cap_hold) as f64
        } else {
            all
        };
        self.steps += 1;
    }

    /// The model from the sums; `None` without queued request-time, or when a constraint that
    /// covers the steps has no finite slack. `Err` with the constraints that cover the steps
    /// when the room everywhere was summed with others: the steps are to be summed again.
    pub(super) fn admission(mut self, timed: bool) -> Result<Option<Admission>, u8> {
        let steps = self.steps;
        if steps == 0 || self.total <= 0.0 {
            return Ok(None);
        }
        self.read[2] = self.read[1];
        for (i, &r) in self.read.iter().enumerate() {
            self.reads |= u8::from(r > 0) << i;
        }
        // the upper median (the element at len/2 in total order, selected); whole numbers
        // convert in the same order, so their median converts to the floats' median
        let whole = |s: &mut Vec<u64>| {
            let k = s.len() / 2;
            (k < s.len()).then(|| *s.select_nth_unstable(k).1 as f64)
        };
        let float = |s: &mut Vec<u64>| {
            let k = s.len() / 2;
            (k < s.len()).then(|| value(*s.select_nth_unstable(k).1))
        };
        let mut pool_median: Option<Option<f64>> = None;
        let mut bindings = Vec::new();
        let mut covering = 0u8;
        for (i, (constraint, unit)) in JUDGES.iter().enumerate() {
            let read = self.read[i];
            // the prefill budget is read only on steps that admitted; the others must cover most
            let covered = matches!(
                *constraint,
                Constraint::PrefillBudget | Constraint::OnePerPass
            ) || read as f64 >= th::QUEUED_SHARE * steps as f64;
            if read == 0 || !covered {
                continue;
            }
            covering |= 1 << i;
            let median = match constraint {
                Constraint::RunningCap => whole(&mut self.cap_slack),
                // the pool and its reserve read the same slacks: selected once
                Constraint::KvPool | Constraint::KvReserve => {
                    *pool_median.get_or_insert_with(|| float(&mut self.pool_slack))
                }
                Constraint::SwaPool => float(&mut self.swa_slack),
                Constraint::MambaSlots => float(&mut self.mamba_slack),
                Constraint::PrefillBudget => whole(&mut self.budget_slack),
                Constraint::OnePerPass => whole(&mut self.pass_slack),
            };
            let Some(median) = median else {
                return Ok(None);
            };
            bindings.push(Binding {
                constraint: *constraint,
                share: self.binds[i] / self.total,
                slack: unit(median),
            });
        }
        if bindings.is_empty() {
            return Ok(None);
        }
        bindings.sort_by(|a, b| {
            b.share
                .total_cmp(&a.share)
                .then(order(a.constraint).cmp(&order(b.constraint)))
        });
        // the room was summed with the constraints this pass took to cover: right when those
        // read on some step are the ones that do
        if self.reads & self.covering != self.reads & covering {
            return Err(covering);
        }
        let free = self.free;
        Ok(Some(Admission {
            queued_steps: steps,
            queued_s: timed.then_some(self.time),
            bindings,
            room_everywhere: free / self.total,
            cap: self.cap,
        }))
    }
}
