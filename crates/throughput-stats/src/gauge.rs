//! Time-weighted statistics of gauges (running/queued requests, token usage, gen throughput),
//! batch-means intervals and the irregular-sampling EWMA.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::{StatsError, check};

/// Which interval a gauge sample's value stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The value holds from its timestamp until the next sample (a level read at that instant:
    /// `#running-req`, `#queue-req`, `token usage`). The last sample closes the span and has no weight.
    Forward,
    /// The value is an average over the interval ending at its timestamp, since the previous
    /// sample (SGLang's `gen throughput (token/s)`, which is tokens since the previous Decode line
    /// ÷ time since it). The first sample's interval starts before the series and has no weight.
    /// With this convention the time-weighted mean of a tok/s gauge is exactly tokens ÷ time.
    Backward,
}

/// A validated gauge: samples `(t_seconds, value)` with finite values and non-decreasing times.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeSeries {
    samples: Vec<(f64, f64)>,
}

impl GaugeSeries {
    /// Validates and wraps the samples.
    ///
    /// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`] (index), [`StatsError::NonMonotonic`] (index).
    pub fn new(samples: Vec<(f64, f64)>) -> Result<Self, StatsError> {
        check::series(&samples)?;
        Ok(GaugeSeries { samples })
    }

    /// The samples, `(t_seconds, value)`.
    pub fn samples(&self) -> &[(f64, f64)] {
        &self.samples
    }

    /// [`time_weighted_summary`] of this series.
    ///
    /// Errors: [`StatsError::InvalidArgument`] only if the time span overflows f64.
    pub fn summary(&self) -> Result<GaugeSummary, StatsError> {
        time_weighted_summary(&self.samples)
    }

    /// Time-weighted quantile `q ∈ [0, 1]` (see [`quantile`]).
    ///
    /// Errors: [`StatsError::InvalidArgument`] for `q` outside [0, 1] or a span overflowing f64.
    pub fn quantile(&self, q: f64) -> Result<f64, StatsError> {
        quantile(&self.samples, q)
    }

    /// Time-weighted mean over `[from, to)` (see [`time_weighted_mean`]).
    ///
    /// Errors: as [`time_weighted_mean`].
    pub fn mean_between(&self, from: f64, to: f64, hold: Hold) -> Result<f64, StatsError> {
        time_weighted_mean(&self.samples, from, to, hold)
    }
}

/// Time-weighted summary of a gauge. Units are those of the values (requests, fraction, tok/s);
/// `span_s` in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaugeSummary {
    /// Number of samples.
    pub n: usize,
    /// Last time − first time, seconds (0 for one sample).
    pub span_s: f64,
    /// Smallest sample value (all samples, including the zero-weight last one).
    pub min: f64,
    /// Largest sample value (all samples).
    pub max: f64,
    /// Time-weighted mean (each sample holds until the next; the last has weight 0).
    pub mean: f64,
    /// Time-weighted standard deviation (population form).
    pub sd: f64,
    /// Time-weighted median.
    pub median: f64,
    /// Time-weighted 90th percentile.
    pub p90: f64,
    /// Value of the last sample.
    pub last: f64,
}

/// Per-sample weights for [`Hold::Forward`]: `t[i+1] − t[i]`, the last 0; all 1 if the span is 0.
/// Returns the weights normalised to sum 1.
/// `t` reads a sample's time.
fn forward_weights<T>(samples: &[T], t: impl Fn(&T) -> f64) -> Result<Vec<f64>, StatsError> {
    let n = samples.len();
    let span = check::finite(
        t(&samples[n - 1]) - t(&samples[0]),
        "time span overflows f64",
    )?;
    if span > 0.0 {
        let mut w: Vec<f64> = Vec::with_capacity(n);
        w.extend(samples.windows(2).map(|p| (t(&p[1]) - t(&p[0])) / span));
        w.push(0.0);
        Ok(w)
    } else {
        Ok(vec![1.0 / n as f64; n])
    }
}

/// Time-weighted quantile of a gauge, `q ∈ [0, 1]` (0 = min of weighted samples, 1 = max).
///
/// Each sample holds from its time until the next sample's time; **the last sample only closes
/// the observed span and carries no weight** (its value is reported as `last` by
/// [`time_weighted_summary`]). If all samples share one timestamp, they are weighted equally.
/// Definition: the smallest value `v` whose cumulative weight (values sorted ascending) reaches
/// `q` — the weighted "inverted CDF" quantile (Hyndman & Fan type 1 with time weights).
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], [`StatsError::NonMonotonic`], and
/// [`StatsError::InvalidArgument`] for `q` outside [0, 1] or a span overflowing f64.
pub fn quantile(samples: &[(f64, f64)], q: f64) -> Result<f64, StatsError> {
    check::series(samples)?;
    if !(q.is_finite() && (0.0..=1.0).contains(&q)) {
        return Err(StatsError::InvalidArgument("q must be in [0, 1]"));
    }
    let w = forward_weights(samples, |s| s.0)?;
    Ok(weighted_quantile(samples, &w, q))
}

fn weighted_quantile(samples: &[(f64, f64)], w: &[f64], q: f64) -> f64 {
    let [v] = weighted_quantiles(samples, w, [q]);
    v
}

/// [`weighted_quantile`] at each of `qs`, with one sort: the weighted values in sample order,
/// sorted stably by value (ties keep sample order, so the cumulative sums are those of a sort
/// of the indices).
fn weighted_quantiles<const K: usize>(samples: &[(f64, f64)], w: &[f64], qs: [f64; K]) -> [f64; K] {
    let vw = crate::order::sorted_by_value(
        samples
            .iter()
            .zip(w)
            .filter(|&(_, &w)| w > 0.0)
            .map(|(s, &w)| (s.1, w)),
        samples.len(),
    );
    quantiles_of_sorted(&vw, samples[0].1, qs)
}

/// The weighted quantiles at `qs` of weighted values sorted by value (each as its
/// [`crate::order`] key), the weights summed in that order; `first` when none has weight.
fn quantiles_of_sorted<const K: usize>(vw: &[(u64, f64)], first: f64, qs: [f64; K]) -> [f64; K] {
    let total: f64 = vw.iter().map(|p| p.1).sum();
    let fallback = vw.last().map_or(first, |p| crate::order::value(p.0));
    qs.map(|q| {
        let target = q * total;
        let mut cum = 0.0;
        for &(k, w) in vw {
            cum += w;
            if cum >= target * (1.0 - 1e-12) {
                return crate::order::value(k);
            }
        }
        fallback
    })
}

/// Time-weighted summary of gauge samples `(t_seconds, value)`: count, span, min, max, mean,
/// standard deviation, median, p90 and last value.
///
/// Weighting: each sample holds until the next ([`Hold::Forward`]); the last sample has weight 0
/// (it marks the end of the observed span; its value is `last`). A single sample, or samples all
/// at one time, are weighted equally.
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`] (index), [`StatsError::NonMonotonic`]
/// (index), [`StatsError::InvalidArgument`] if the time span overflows f64.
pub fn time_weighted_summary(samples: &[(f64, f64)]) -> Result<GaugeSummary, StatsError> {
    check::series(samples)?;
    let w = forward_weights(samples, |s| s.0)?;
    let span_s = samples[samples.len() - 1].0 - samples[0].0;
    summary_of(samples, |s| s.1, &w, span_s)
}

/// [`time_weighted_summary`] of the values `value` reads from `items` (at least one, all
/// finite) with their normalised weights ([`forward_weights`], one per item); `span_s`: last
/// time − first time (seconds).
fn summary_of<T>(
    items: &[T],
    value: impl Fn(&T) -> f64,
    w: &[f64],
    span_s: f64,
) -> Result<GaugeSummary, StatsError> {
    let n = items.len();
    // one pass: least and greatest value, the weighted sum (summed in sample order from -0.0,
    // as `Iterator::sum` does) and the weighted values for the quantiles
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut mean = -0.0;
    let mut keyed: Vec<(u64, f64)> = Vec::with_capacity(n);
    for (v, &w) in items.iter().map(&value).zip(w) {
        min = min.min(v);
        max = max.max(v);
        // Convex combination: no overflow even for values near f64::MAX.
        mean += w * v;
        if w > 0.0 {
            keyed.push((crate::order::key(v), w));
        }
    }
    let mean = f64::clamp(mean, min, max);
    let scale = min.abs().max(max.abs());
    let sd = if scale > 0.0 {
        let var: f64 = items
            .iter()
            .zip(w)
            .map(|(s, w)| w * (value(s) / scale - mean / scale).powi(2))
            .sum();
        var.max(0.0).sqrt() * scale
    } else {
        0.0
    };
    let vw = crate::order::sorted(keyed);
    let [median, p90] = quantiles_of_sorted(&vw, value(&items[0]), [0.5, 0.9]);
    Ok(GaugeSummary {
        n,
        span_s,
        min,
        max,
        mean,
        sd: check::finite(sd, "sd overflows f64")?,
        median,
        p90,
        last: value(&items[n - 1]),
    })
}

/// The sample times of gauges read together (seconds, non-decreasing) with their
/// [`Hold::Forward`] weights: [`time_weighted_summary`] of each gauge on them, the times
/// checked and weighed once for all.
#[derive(Debug, Clone, PartialEq)]
pub struct Clock {
    weights: Vec<f64>,
    span_s: f64,
}

impl Clock {
    /// The clock of `times` (seconds).
    ///
    /// Errors: as [`time_weighted_summary`] on samples at these times.
    pub fn new(times: &[f64]) -> Result<Self, StatsError> {
        check::series_of(times, |&t| (t, 0.0))?;
        Ok(Clock {
            weights: forward_weights(times, |&t| t)?,
            span_s: times[times.len() - 1] - times[0],
        })
    }

    /// How many times it holds.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Whether it holds no time (never: [`Clock::new`] refuses none).
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// [`time_weighted_summary`] of the samples `(times[i], values[i])`, the same figures.
    ///
    /// Errors: [`StatsError::InvalidArgument`] when there are not as many values as times,
    /// [`StatsError::NonFinite`] (index).
    pub fn summary(&self, values: &[f64]) -> Result<GaugeSummary, StatsError> {
        if values.len() != self.weights.len() {
            return Err(StatsError::InvalidArgument("one value per time"));
        }
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(StatsError::NonFinite { index });
        }
        summary_of(values, |&v| v, &self.weights, self.span_s)
    }
}

/// Integral of the step function over `[a, b)` divided by `b − a`, for `a < b` inside the span.
fn step_mean(samples: &[(f64, f64)], a: f64, b: f64, hold: Hold) -> f64 {
    let len = b - a;
    // Segment j = [t_j, t_{j+1}) carries v_j (Forward) or v_{j+1} (Backward).
    let start = samples.partition_point(|s| s.0 <= a).saturating_sub(1);
    let mut acc = 0.0;
    for j in start..samples.len().saturating_sub(1) {
        let (t0, t1) = (samples[j].0, samples[j + 1].0);
        if t0 >= b {
            break;
        }
        let lo = t0.max(a);
        let hi = t1.min(b);
        if hi > lo {
            let v = match hold {
                Hold::Forward => samples[j].1,
                Hold::Backward => samples[j + 1].1,
            };
            acc += (hi - lo) / len * v;
        }
    }
    acc
}

/// Clips `[from, to)` to the observed span `[t_first, t_last]`; errors if nothing is left.
fn clip(samples: &[(f64, f64)], from: f64, to: f64) -> Result<(f64, f64), StatsError> {
    check::window(from, to)?;
    let a = from.max(samples[0].0);
    let b = to.min(samples[samples.len() - 1].0);
    if b <= a {
        return Err(StatsError::InvalidArgument(
            "window does not overlap the series' span",
        ));
    }
    check::window(a, b)?;
    Ok((a, b))
}

/// Time-weighted mean of a gauge over `[from, to)`, clipped to the observed span
/// `[first time, last time]` (nothing is assumed before the first or after the last sample).
/// `hold` says whether a value holds until the next sample or covers the time since the previous.
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], [`StatsError::NonMonotonic`];
/// [`StatsError::InvalidArgument`] for a bad window or one that does not overlap the span.
pub fn time_weighted_mean(
    samples: &[(f64, f64)],
    from: f64,
    to: f64,
    hold: Hold,
) -> Result<f64, StatsError> {
    check::series(samples)?;
    let (a, b) = clip(samples, from, to)?;
    check::finite(step_mean(samples, a, b, hold), "mean overflows f64")
}

/// A time-weighted mean with a batch-means interval.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchMeans {
    /// Time-weighted mean over the (clipped) window, in the gauge's unit (tok/s for gen throughput).
    pub mean: f64,
    /// Lower end of the interval: `mean − t(B−1) · sd(batch means)/√B`.
    pub ci_low: f64,
    /// Upper end of the interval.
    pub ci_high: f64,
    /// Two-sided confidence level.
    pub confidence: f64,
    /// Start of the window actually used (clipped to the series), seconds.
    pub from_s: f64,
    /// End of the window actually used, seconds.
    pub to_s: f64,
    /// Length of each batch, seconds.
    pub batch_s: f64,
    /// The time-weighted mean of each non-overlapping batch, in order.
    pub batch_means: Vec<f64>,
    /// Lag-1 autocorrelation of the batch means (`None` for fewer than 3 batches). Values well
    /// above ~0.3 mean the batches are too short for the interval to be trusted.
    pub lag1_autocorrelation: Option<f64>,
}

/// Time-weighted mean of a gauge over `[from, to)` with a **non-overlapping batch means**
/// interval: the clipped window is cut into `n_batches` equal-time blocks, each block's
/// time-weighted mean is taken, and the interval is `mean ± t_{B−1, 1−α/2} · s_B / √B` where `s_B`
/// is the sample standard deviation of the B block means (Schmeiser 1982, "Batch size effects in
/// the analysis of simulation experiments", Operations Research 30(3); Law & Kelton §9.5.3).
/// Batch means are used because successive gauge samples are strongly autocorrelated, which makes
/// the naive `sd/√n` far too narrow. 10–30 batches is the usual choice.
///
/// `n_batches` is lowered to the number of samples in the window if there are fewer.
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], [`StatsError::NonMonotonic`];
/// [`StatsError::InvalidArgument`] for a bad window, confidence, fewer than 2 batches possible.
pub fn batch_means(
    samples: &[(f64, f64)],
    from: f64,
    to: f64,
    n_batches: usize,
    hold: Hold,
    confidence: f64,
) -> Result<BatchMeans, StatsError> {
    check::series(samples)?;
    check::confidence(confidence)?;
    let (a, b) = clip(samples, from, to)?;
    let in_window = samples.iter().filter(|s| s.0 >= a && s.0 <= b).count();
    let k = n_batches.min(in_window).min(crate::MAX_POINTS);
    if k < 2 {
        return Err(StatsError::InvalidArgument(
            "need at least 2 batches (and 2 samples) in the window",
        ));
    }
    let len = b - a;
    let batch_s = len / k as f64;
    let mut means = Vec::with_capacity(k);
    for i in 0..k {
        let lo = a + batch_s * i as f64;
        let hi = if i + 1 == k {
            b
        } else {
            a + batch_s * (i + 1) as f64
        };
        if hi <= lo {
            return Err(StatsError::InvalidArgument(
                "window too short to split into batches",
            ));
        }
        means.push(step_mean(samples, lo, hi, hold));
    }
    let mean = means.iter().map(|m| m / k as f64).sum::<f64>();
    let mean = check::finite(mean, "mean overflows f64")?;
    let scale = means.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let (s, lag1) = if scale > 0.0 {
        let dev: Vec<f64> = means.iter().map(|m| m / scale - mean / scale).collect();
        let ss: f64 = dev.iter().map(|d| d * d).sum();
        let s = (ss / (k - 1) as f64).sqrt() * scale;
        let lag1 = if k >= 3 && ss > 0.0 {
            Some(dev.windows(2).map(|p| p[0] * p[1]).sum::<f64>() / ss)
        } else {
            None
        };
        (s, lag1)
    } else {
        (0.0, None)
    };
    let t = StudentsT::new(0.0, 1.0, (k - 1) as f64)
        .map_err(|_| StatsError::InvalidArgument("student t"))?
        .inverse_cdf(0.5 + confidence / 2.0);
    let half = check::finite(t * s / (k as f64).sqrt(), "interval overflows f64")?;
    Ok(BatchMeans {
        mean,
        ci_low: check::finite(mean - half, "interval overflows f64")?,
        ci_high: check::finite(mean + half, "interval overflows f64")?,
        confidence,
        from_s: a,
        to_s: b,
        batch_s,
        batch_means: means,
        lag1_autocorrelation: lag1,
    })
}

/// Mean generation throughput (tok/s) over `[from, to)` from SGLang's logged
/// `gen throughput (token/s)` gauge, with a 95% interval from 10 non-overlapping batch means.
///
/// Each logged value is tokens generated since the previous Decode line ÷ time since it
/// (SGLang `scheduler_metrics_mixin.py`, `log_decode_stats`; spec §2.1), i.e. already a window of
/// `decode_log_interval` (default 40) decode steps *ending* at the line, so [`Hold::Backward`]
/// is used and the mean equals total generated tokens ÷ time over the window.
///
/// Errors: as [`batch_means`].
pub fn gen_throughput_mean(
    samples: &[(f64, f64)],
    from: f64,
    to: f64,
) -> Result<BatchMeans, StatsError> {
    batch_means(
        samples,
        from,
        to,
        10,
        Hold::Backward,
        crate::DEFAULT_CONFIDENCE,
    )
}

/// Exponentially weighted moving average for irregularly spaced samples.
///
/// On each update at time `t` with value `x`, the previous average is kept with weight
/// `w = exp(−ln2 · Δt / half_life_s)` and `x` gets `1 − w`; so a value `half_life_s` seconds old
/// counts half as much as a fresh one, whatever the sampling rate. The first sample initialises
/// the average. Units: those of the values; times in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Ewma {
    half_life_s: f64,
    state: Option<(f64, f64)>,
    updates: usize,
}

impl Ewma {
    /// New average with the given half-life in seconds.
    ///
    /// Errors: [`StatsError::InvalidArgument`] unless `half_life_s` is finite and > 0.
    pub fn new(half_life_s: f64) -> Result<Self, StatsError> {
        if !(half_life_s.is_finite() && half_life_s > 0.0) {
            return Err(StatsError::InvalidArgument(
                "half_life_s must be finite and > 0",
            ));
        }
        Ok(Ewma {
            half_life_s,
            state: None,
            updates: 0,
        })
    }

    /// The half-life, seconds.
    pub fn half_life_s(&self) -> f64 {
        self.half_life_s
    }

    /// Adds the sample `(t, x)` and returns the new average.
    ///
    /// Errors (the state is unchanged): [`StatsError::NonFinite`] for a NaN/∞ `t` or `x`,
    /// [`StatsError::NonMonotonic`] if `t` is earlier than the previous sample; `index` is the
    /// number of samples accepted so far.
    pub fn update(&mut self, t: f64, x: f64) -> Result<f64, StatsError> {
        let index = self.updates;
        if !t.is_finite() || !x.is_finite() {
            return Err(StatsError::NonFinite { index });
        }
        let v = match self.state {
            None => x,
            Some((t0, v0)) => {
                if t < t0 {
                    return Err(StatsError::NonMonotonic { index });
                }
                let w = (-std::f64::consts::LN_2 * ((t - t0) / self.half_life_s)).exp();
                let w = if w.is_finite() { w } else { 0.0 };
                w * v0 + (1.0 - w) * x
            }
        };
        self.state = Some((t, v));
        self.updates += 1;
        Ok(v)
    }

    /// Current average, `None` before the first sample.
    pub fn value(&self) -> Option<f64> {
        self.state.map(|s| s.1)
    }

    /// Time of the last accepted sample, seconds.
    pub fn last_time(&self) -> Option<f64> {
        self.state.map(|s| s.0)
    }
}

/// Runs an [`Ewma`] with `half_life_s` over the samples and returns `(t, average)` after each.
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], [`StatsError::NonMonotonic`],
/// [`StatsError::InvalidArgument`] for a bad half-life.
pub fn ewma_series(
    samples: &[(f64, f64)],
    half_life_s: f64,
) -> Result<Vec<(f64, f64)>, StatsError> {
    check::series(samples)?;
    let mut e = Ewma::new(half_life_s)?;
    samples
        .iter()
        .map(|&(t, x)| e.update(t, x).map(|v| (t, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock's summary of values is the time-weighted summary of the same samples, and it
    /// refuses what the general path refuses.
    #[test]
    fn clock_summary_is_the_time_weighted_summary() {
        let times = [0.0, 1.0, 1.5, 1.5, 4.0, 7.25];
        for values in [
            [3.0, 1.0, 4.0, 1.0, 5.0, 9.0],
            [0.0, -0.0, 0.0, 0.0, 0.0, 0.0],
            [2.5, -1.0, 2.5, 2.5, 0.1, 7.0],
        ] {
            let samples: Vec<(f64, f64)> = times.iter().copied().zip(values).collect();
            let clock = Clock::new(&times).unwrap();
            assert_eq!(clock.len(), 6);
            assert_eq!(
                clock.summary(&values).unwrap(),
                time_weighted_summary(&samples).unwrap()
            );
        }
        // one time for all: equal weights
        let clock = Clock::new(&[2.0, 2.0, 2.0]).unwrap();
        let s = clock.summary(&[1.0, 2.0, 6.0]).unwrap();
        assert_eq!(
            s,
            time_weighted_summary(&[(2.0, 1.0), (2.0, 2.0), (2.0, 6.0)]).unwrap()
        );
        assert_eq!((s.mean, s.median, s.last), (3.0, 2.0, 6.0));
        assert_eq!(Clock::new(&[]), Err(StatsError::Empty));
        assert_eq!(
            Clock::new(&[1.0, 0.5]),
            Err(StatsError::NonMonotonic { index: 1 })
        );
        assert!(clock.summary(&[1.0]).is_err());
        assert_eq!(
            clock.summary(&[1.0, f64::NAN, 2.0]),
            Err(StatsError::NonFinite { index: 1 })
        );
    }

    /// The summary as it was computed before its passes were joined: each figure in a pass of
    /// its own, the quantiles by a comparison sort. The reference for the bits.
    fn reference(samples: &[(f64, f64)]) -> Result<GaugeSummary, StatsError> {
        check::series(samples)?;
        let w = forward_weights(samples, |s| s.0)?;
        let n = samples.len();
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(_, v) in samples {
            min = min.min(v);
            max = max.max(v);
        }
        let mean: f64 = samples.iter().zip(&w).map(|(s, w)| w * s.1).sum();
        let mean = mean.clamp(min, max);
        let scale = min.abs().max(max.abs());
        let sd = if scale > 0.0 {
            let var: f64 = samples
                .iter()
                .zip(&w)
                .map(|(s, w)| w * (s.1 / scale - mean / scale).powi(2))
                .sum();
            var.max(0.0).sqrt() * scale
        } else {
            0.0
        };
        let mut vw: Vec<(f64, f64)> = samples
            .iter()
            .zip(&w)
            .filter(|&(_, &w)| w > 0.0)
            .map(|(s, &w)| (s.1, w))
            .collect();
        vw.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = vw.iter().map(|p| p.1).sum();
        let at = |q: f64| {
            let mut cum = 0.0;
            for &(v, w) in &vw {
                cum += w;
                if cum >= q * total * (1.0 - 1e-12) {
                    return v;
                }
            }
            vw.last().map_or(samples[0].1, |p| p.0)
        };
        Ok(GaugeSummary {
            n,
            span_s: samples[n - 1].0 - samples[0].0,
            min,
            max,
            mean,
            sd: check::finite(sd, "sd overflows f64")?,
            median: at(0.5),
            p90: at(0.9),
            last: samples[n - 1].1,
        })
    }

    fn bits(s: &GaugeSummary) -> [u64; 8] {
        [
            s.span_s, s.min, s.max, s.mean, s.sd, s.median, s.p90, s.last,
        ]
        .map(f64::to_bits)
    }

    proptest::proptest! {
        /// The joined passes give the reference's figures bit for bit: counts, fractions and
        /// rates (few and many distinct values), ties in time, one sample.
        #[test]
        fn the_summary_is_the_reference_bit_for_bit(
            steps in proptest::collection::vec((0u8..4, 0u16..2000), 1..3000),
            scale in proptest::prop_oneof![proptest::strategy::Just(1.0f64), 0.001f64..10.0],
        ) {
            let mut t = 0.0;
            let samples: Vec<(f64, f64)> = steps
                .iter()
                .map(|&(dt, v)| {
                    t += f64::from(dt);
                    (t, f64::from(v) * scale)
                })
                .collect();
            let got = time_weighted_summary(&samples).map(|s| (s.n, bits(&s)));
            let want = reference(&samples).map(|s| (s.n, bits(&s)));
            proptest::prop_assert_eq!(got, want);
        }
    }
}
