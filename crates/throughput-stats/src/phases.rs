//! Load phases of a run: ramp (initial transient), steady span, drain.

use crate::{StatsError, check};

/// Batch size of MSER-5: consecutive samples are averaged in groups of 5 before truncation.
pub const MSER_BATCH: usize = 5;

/// Fewest batches for which MSER is attempted (20 samples); shorter series get the whole span.
const MIN_BATCHES: usize = 4;

/// Near-ties in the MSER statistic: on a steady stretch `Z(d)` drifts up by about `1/(k − d)`
/// (relative) per batch cut, while noise moves it by the same order, so the raw minimum often lies
/// a few batches past the true end of the transient (MSER's known over-truncation). The earliest
/// cut whose statistic is within 3 batches' worth of drift of the minimum is taken instead.
const TIE_BATCHES: f64 = 3.0;

/// Extra allowance for near-ties, in standard deviations of the statistic's noise: removing `j`
/// steady batches moves `(k − d)·ΔZ/Z` by about `√(2j)` (a χ²₁ term per batch).
const TIE_SDS: f64 = 2.0;

/// Fewest batches a drain must span to be reported.
const MIN_DRAIN_BATCHES: usize = 2;

/// A drain must lower the mean by more than this many standard deviations of the steady batch
/// means (one-sided), so that a noisy but steady tail is not reported as a drain.
const DRAIN_SDS: f64 = 2.0;

/// How [`detect_phases`] reached its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseMethod {
    /// MSER-5 truncation (White 1997; White, Cobb & Spratt 2000), forwards for the ramp and
    /// backwards for the drain.
    Mser5 {
        /// Number of 5-sample batches the statistic was computed on.
        batches: usize,
        /// Batches truncated at the start (the ramp).
        ramp_batches: usize,
        /// Batches truncated at the end (the drain; 0 when none was found significant).
        drain_batches: usize,
        /// True when the best truncation point is at the search limit (half the batches): the run
        /// may not have reached steady state, and a longer run is needed to be sure.
        at_search_limit: bool,
    },
    /// The series was too short to split; the whole span is reported as steady.
    WholeSpan {
        /// Why no split was attempted.
        reason: &'static str,
    },
}

/// Phases of a run found from a gauge series. Times in seconds (same origin as the input).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// End of the ramp (initial transient): time of the first sample kept. Equals the first
    /// sample's time when there is no ramp.
    pub ramp_end_s: f64,
    /// The steady span `(start, end)`: what rates are reported over by default.
    pub steady: (f64, f64),
    /// Start of the drain (load falling away at the end), if a significant one was found.
    pub drain_start_s: Option<f64>,
    /// Mean of the series over the steady span (unweighted mean of its samples), in the gauge's unit.
    pub steady_mean: f64,
    /// How the answer was reached.
    pub method: PhaseMethod,
}

/// Sum of squared deviations accumulator (Welford), on scaled values.
#[derive(Default, Clone, Copy)]
struct Welford {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Welford {
    fn push(&mut self, x: f64) {
        self.n += 1.0;
        let d = x - self.mean;
        self.mean += d / self.n;
        self.m2 += d * (x - self.mean);
    }
}

/// Forward MSER over `b[lo..hi]`: the `d` in `0..=(hi−lo)/2` (keeping ≥ 2 batches) minimising
/// `Z(d) = SSE(b[lo+d..hi]) / (hi−lo−d)²`; then the earliest `d` whose `Z(d)` is within
/// `TIE_BATCHES / (hi−lo−d*)` (relative) of that minimum. Returns `(d, at_limit)`.
fn mser_forward(b: &[f64], lo: usize, hi: usize) -> (usize, bool) {
    let m = hi - lo;
    let limit = (m / 2).min(m.saturating_sub(2));
    let mut acc = Welford::default();
    let mut z = vec![f64::INFINITY; limit + 1];
    for d in (0..m).rev() {
        acc.push(b[lo + d]);
        if d <= limit {
            let kept = (m - d) as f64;
            z[d] = acc.m2 / (kept * kept);
        }
    }
    let mut best = (f64::INFINITY, 0usize);
    for (d, &zd) in z.iter().enumerate() {
        if zd < best.0 {
            best = (zd, d);
        }
    }
    let scale = best.0 / (m - best.1) as f64;
    let d = z
        .iter()
        .enumerate()
        .position(|(d, &zd)| {
            let j = best.1.saturating_sub(d) as f64;
            zd <= best.0 + scale * (TIE_BATCHES + TIE_SDS * (2.0 * j).sqrt())
        })
        .unwrap_or(best.1);
    (d, best.1 == limit && limit > 0)
}

/// Backward MSER over `b[lo..hi]`: the `e` in `0..=(hi−lo)/2` minimising `SSE(b[lo..hi−e])/(hi−lo−e)²`.
fn mser_backward(b: &[f64], lo: usize, hi: usize) -> usize {
    let m = hi - lo;
    let limit = (m / 2).min(m.saturating_sub(2));
    let mut acc = Welford::default();
    let mut best = (f64::INFINITY, 0usize);
    for j in 0..m {
        acc.push(b[lo + j]);
        let kept = j + 1;
        let e = m - kept;
        if e <= limit {
            let stat = acc.m2 / (kept * kept) as f64;
            if stat < best.0 || (stat == best.0 && e < best.1) {
                best = (stat, e);
            }
        }
    }
    best.1
}

/// MSER with batch size 1 over `series[..end]`, minimising `SSE(series[i..end]) / (end − i)²` for
/// `i` within one batch of `cut`.
fn refine(series: &[(f64, f64)], scale: f64, cut: usize, end: usize) -> usize {
    let lo = cut.saturating_sub(MSER_BATCH);
    let hi = (cut + MSER_BATCH).min(end.saturating_sub(2));
    if hi <= lo {
        return cut;
    }
    let mut acc = Welford::default();
    let mut best = (f64::INFINITY, cut);
    for i in (lo..end).rev() {
        acc.push(series[i].1 / scale);
        if i <= hi {
            let kept = (end - i) as f64;
            let stat = acc.m2 / (kept * kept);
            if stat <= best.0 {
                best = (stat, i);
            }
        }
    }
    best.1
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let mut w = Welford::default();
    for &v in x {
        w.push(v);
    }
    let sd = if w.n > 1.0 {
        (w.m2 / (w.n - 1.0)).max(0.0).sqrt()
    } else {
        0.0
    };
    (w.mean, sd)
}

/// Finds the ramp end, steady span and drain of a gauge series `(t_seconds, value)` — running
/// requests, queued requests or token usage from the server log.
///
/// Method: **MSER-5** (White 1997, "An effective truncation heuristic for bias reduction in
/// simulation output", *Simulation* 69(6):323–334; MSER-5 as evaluated in White, Cobb & Spratt
/// 2000, *Proc. Winter Simulation Conference*). Samples are averaged in consecutive batches of 5;
/// the truncation point `d` minimises `SSE(batches d..k) / (k − d)²` — the squared standard error
/// of the mean of what is kept — searched over the first half of the batches (beyond it MSER is
/// known to chase noise; hitting that limit is reported as `at_search_limit`). Among cuts whose
/// statistic is within `3/(k − d*)` (relative) of the minimum — indistinguishable by less than three
/// batches' worth of drift — the earliest is taken, and the cut is then refined to single samples by
/// MSER on the raw observations within one batch either side. MSER works on
/// observations, not time; SGLang logs decode lines every `decode_log_interval` steps, nearly
/// evenly in time while busy.
///
/// Drain: the same rule backwards on the kept batches; the cut is reported only if it spans at
/// least 2 batches and the tail's mean is more than 2 standard deviations (of the steady batch
/// means) *below* the steady mean — a drain lowers every one of these gauges. When a drain is
/// found, the ramp is searched again without it.
///
/// Short series (fewer than 20 samples, or a constant one) are not split: the whole span is
/// reported as steady with [`PhaseMethod::WholeSpan`] and a reason.
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`] (index), [`StatsError::NonMonotonic`] (index).
pub fn detect_phases(series: &[(f64, f64)]) -> Result<Phases, StatsError> {
    check::series(series)?;
    let n = series.len();
    let t_first = series[0].0;
    let t_last = series[n - 1].0;
    let scale = series.iter().fold(0.0f64, |m, s| m.max(s.1.abs()));
    let plain_mean = |a: usize, b: usize| -> f64 {
        if scale == 0.0 {
            return 0.0;
        }
        let s: f64 = series[a..b].iter().map(|s| s.1 / scale).sum();
        s / (b - a) as f64 * scale
    };
    let whole = |reason| Phases {
        ramp_end_s: t_first,
        steady: (t_first, t_last),
        drain_start_s: None,
        steady_mean: plain_mean(0, n),
        method: PhaseMethod::WholeSpan { reason },
    };
    let k = n / MSER_BATCH;
    if k < MIN_BATCHES {
        return Ok(whole(
            "fewer than 20 samples: too short to tell a ramp from noise",
        ));
    }
    if scale == 0.0 || series.iter().all(|s| s.1 == series[0].1) {
        return Ok(whole("constant series: no ramp or drain"));
    }
    // Scaled batch means (values / max|value|) keep every sum finite.
    let b: Vec<f64> = (0..k)
        .map(|i| {
            series[i * MSER_BATCH..(i + 1) * MSER_BATCH]
                .iter()
                .map(|s| s.1 / scale)
                .sum::<f64>()
                / MSER_BATCH as f64
        })
        .collect();

    let (mut d, mut at_limit) = mser_forward(&b, 0, k);
    let mut drain = 0usize;
    let e = mser_backward(&b, d, k);
    if e >= MIN_DRAIN_BATCHES && k - d - e >= 2 {
        let (m_steady, sd_steady) = mean_sd(&b[d..k - e]);
        let (m_tail, _) = mean_sd(&b[k - e..k]);
        if m_tail < m_steady - DRAIN_SDS * sd_steady {
            drain = e;
            let (d2, lim2) = mser_forward(&b, 0, k - e);
            d = d2;
            at_limit = lim2;
        }
    }
    // Refine the cut to single samples: MSER on raw observations (batch size 1, White 1997),
    // searched only within one batch either side of the MSER-5 cut.
    let end_for_refine = (k - drain) * MSER_BATCH;
    let start_idx = refine(series, scale, d * MSER_BATCH, end_for_refine);
    let ramp_end_s = series[start_idx].0;
    let (drain_start_s, end_idx) = if drain > 0 {
        let i = (k - drain) * MSER_BATCH;
        (Some(series[i].0), i)
    } else {
        (None, n)
    };
    let steady_end = drain_start_s.unwrap_or(t_last);
    Ok(Phases {
        ramp_end_s,
        steady: (ramp_end_s, steady_end),
        drain_start_s,
        steady_mean: plain_mean(start_idx, end_idx.max(start_idx + 1)),
        method: PhaseMethod::Mser5 {
            batches: k,
            ramp_batches: d,
            drain_batches: drain,
            at_search_limit: at_limit,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mser_cuts_a_step() {
        // Five batches at 0, then steady at 10 with alternating noise: cut exactly at the step.
        let b: Vec<f64> = (0..40)
            .map(|i| {
                if i < 5 {
                    0.0
                } else if i % 2 == 0 {
                    10.5
                } else {
                    9.5
                }
            })
            .collect();
        assert_eq!(mser_forward(&b, 0, 40), (5, false));
        // Reversed: a falling tail of 6 batches is cut from the end.
        let mut c: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 10.5 } else { 9.5 })
            .collect();
        c.extend([8.0, 6.0, 4.0, 2.0, 1.0, 0.0]);
        assert_eq!(mser_backward(&c, 0, c.len()), 6);
    }

    #[test]
    fn refine_moves_to_the_sample() {
        // Samples 0..7 ramp, 7.. steady; the batch cut (5) is refined to 7.
        let s: Vec<(f64, f64)> = (0..60)
            .map(|i| {
                (
                    i as f64,
                    if i < 7 {
                        i as f64
                    } else if i % 2 == 0 {
                        100.5
                    } else {
                        99.5
                    },
                )
            })
            .collect();
        assert_eq!(refine(&s, 100.5, 5, 60), 7);
    }
}
