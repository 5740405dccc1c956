//! Poisson counts: rates over windows, exact intervals, sample adequacy, ETA.

use std::collections::HashMap;
use std::fmt;

use statrs::distribution::{ContinuousCDF, Gamma};

use crate::{MAX_POINTS, StatsError, check, fmt_duration, fmt_sig};

/// Confidence level used where a function takes none: 0.95 (two-sided).
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Above this count the Garwood bounds use the Wilson–Hilferty cube-root approximation of the
/// χ² quantiles (relative error below 1e-6 there) instead of iterating on the Gamma CDF.
const WILSON_HILFERTY_ABOVE: f64 = 1.0e6;

/// Exact (Garwood 1936) two-sided interval for the mean of a Poisson count.
///
/// `count` is the observed number of events (non-negative; a non-integer value is accepted and
/// used by [`adequacy`] for an *expected* count). Returns `(low, high)` in events:
/// `low = χ²(α/2; 2k)/2` (0 when `k = 0`), `high = χ²(1−α/2; 2k+2)/2`, with `α = 1 − confidence`,
/// computed as quantiles of Gamma(k, 1) and Gamma(k+1, 1) (statrs). For `k > 10⁶` the
/// Wilson–Hilferty approximation is used. Example: 6 events at 95% → (2.2009, 13.0595).
///
/// Errors: [`StatsError::InvalidArgument`] when `count` is negative or non-finite, or
/// `confidence` is not in (0, 1).
pub fn garwood_interval(count: f64, confidence: f64) -> Result<(f64, f64), StatsError> {
    let k = check::non_negative(count, "count must be finite and >= 0")?;
    let c = check::confidence(confidence)?;
    let alpha = 1.0 - c;
    if k > WILSON_HILFERTY_ABOVE {
        let z = check::z_value(c)?;
        let wh = |shape: f64, zz: f64| {
            let a = 1.0 / (9.0 * shape);
            shape * (1.0 - a + zz * a.sqrt()).powi(3)
        };
        let low = wh(k, -z);
        let high = check::finite(wh(k + 1.0, z), "count too large")?;
        return Ok((low.max(0.0), high));
    }
    let quantile = |shape: f64, p: f64| -> Result<f64, StatsError> {
        let g = Gamma::new(shape, 1.0).map_err(|_| StatsError::InvalidArgument("gamma shape"))?;
        check::non_negative(g.inverse_cdf(p), "gamma quantile did not converge")
    };
    let low = if k == 0.0 {
        0.0
    } else {
        quantile(k, alpha / 2.0)?
    };
    let high = quantile(k + 1.0, 1.0 - alpha / 2.0)?;
    Ok((low, high))
}

/// A rate measured by counting events in a window, with its exact Poisson interval.
///
/// Units: `rate_per_s`, `ci_low`, `ci_high` in events per second (requests/s for completions);
/// `window_s` in seconds; `count` in events. The interval is [`garwood_interval`] for `count`
/// divided by `window_s`, so it is honest for small counts: `ci_low ≤ rate_per_s ≤ ci_high`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateEstimate {
    /// Point estimate: `count / window_s`, events per second.
    pub rate_per_s: f64,
    /// Events counted in the window.
    pub count: u64,
    /// Window length, seconds (> 0).
    pub window_s: f64,
    /// Lower bound of the interval, events per second.
    pub ci_low: f64,
    /// Upper bound of the interval, events per second.
    pub ci_high: f64,
    /// Two-sided confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
}

impl RateEstimate {
    /// Builds the estimate for `count` events in `window_s` seconds.
    ///
    /// Errors: [`StatsError::InvalidArgument`] if `window_s` is not finite and > 0 or
    /// `confidence` is not in (0, 1).
    pub fn from_count(count: u64, window_s: f64, confidence: f64) -> Result<Self, StatsError> {
        if !(window_s.is_finite() && window_s > 0.0) {
            return Err(StatsError::InvalidArgument(
                "window_s must be finite and > 0",
            ));
        }
        let (lo, hi) = garwood_interval(count as f64, confidence)?;
        Self::from_parts(count, window_s, lo, hi, confidence)
    }

    /// Builds the estimate from a count and its Garwood bounds (in events).
    fn from_parts(
        count: u64,
        window_s: f64,
        lo: f64,
        hi: f64,
        confidence: f64,
    ) -> Result<Self, StatsError> {
        if !(window_s.is_finite() && window_s > 0.0) {
            return Err(StatsError::InvalidArgument(
                "window_s must be finite and > 0",
            ));
        }
        Ok(RateEstimate {
            rate_per_s: check::finite(count as f64 / window_s, "rate overflows f64")?,
            count,
            window_s,
            ci_low: check::finite(lo / window_s, "rate overflows f64")?,
            ci_high: check::finite(hi / window_s, "rate overflows f64")?,
            confidence,
        })
    }

    /// Largest relative deviation of the interval from the estimate, `(ci_high − rate)/rate`
    /// (the upper side is the wider one for Poisson counts). `None` when nothing was counted.
    pub fn relative_half_width(&self) -> Option<f64> {
        if self.count == 0 || self.rate_per_s <= 0.0 {
            None
        } else {
            let up = (self.ci_high - self.rate_per_s) / self.rate_per_s;
            let down = (self.rate_per_s - self.ci_low) / self.rate_per_s;
            Some(up.max(down))
        }
    }
}

impl fmt::Display for RateEstimate {
    /// E.g. `0.1/s (6 events in 60 s; 95% interval 0.037–0.22/s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/s ({} events in {}; {}% interval {}–{}/s)",
            fmt_sig(self.rate_per_s, 3),
            self.count,
            fmt_duration(self.window_s),
            fmt_sig(self.confidence * 100.0, 3),
            fmt_sig(self.ci_low, 2),
            fmt_sig(self.ci_high, 2),
        )
    }
}

/// Events per second averaged since the start of the run: `events / (t_now − t_start)`.
///
/// Kept to show the artifact it produces: when the load ramps or many long requests start
/// together, the dead time before the first completions stays in the denominator, and the result
/// is far below the steady rate even though its Poisson interval is narrow (the interval covers
/// counting noise, not the bias of the window). Prefer [`window_rate`] over the steady span.
/// The interval is at [`DEFAULT_CONFIDENCE`].
///
/// Errors: [`StatsError::InvalidArgument`] if the times are not finite or `t_now <= t_start`.
pub fn lifetime_rate(events: u64, t_start: f64, t_now: f64) -> Result<RateEstimate, StatsError> {
    let w = check::window(t_start, t_now)?;
    RateEstimate::from_count(events, w, DEFAULT_CONFIDENCE)
}

/// Rate of the events whose times fall in `[t_from, t_to)`, with a 95% Garwood interval.
///
/// `event_times` are seconds (e.g. completion times), in any order. See
/// [`window_rate_with_confidence`] for errors.
pub fn window_rate(
    event_times: &[f64],
    t_from: f64,
    t_to: f64,
) -> Result<RateEstimate, StatsError> {
    window_rate_with_confidence(event_times, t_from, t_to, DEFAULT_CONFIDENCE)
}

/// Rate of the events whose times fall in `[t_from, t_to)` with a Garwood interval at `confidence`.
///
/// Events outside the window are not errors (the caller chose the window); they are simply not
/// in the count. Errors: [`StatsError::NonFinite`] for a NaN/∞ time (its index);
/// [`StatsError::InvalidArgument`] for a bad window or confidence.
pub fn window_rate_with_confidence(
    event_times: &[f64],
    t_from: f64,
    t_to: f64,
    confidence: f64,
) -> Result<RateEstimate, StatsError> {
    check::times(event_times)?;
    let w = check::window(t_from, t_to)?;
    let count = event_times
        .iter()
        .filter(|&&t| t >= t_from && t < t_to)
        .count() as u64;
    RateEstimate::from_count(count, w, confidence)
}

/// Sliding-window rates: windows of `window_s` seconds whose ends step by `step_s` from
/// `t_start + window_s` up to `t_end` (inclusive). Returns `(window_end_s, estimate)` pairs; each
/// window is `[end − window_s, end)`.
///
/// Errors: [`StatsError::NonFinite`] for a NaN/∞ event time; [`StatsError::InvalidArgument`] if
/// `window_s` or `step_s` is not > 0, the span is shorter than one window, the confidence is out of
/// (0, 1), or more than [`crate::MAX_POINTS`] windows would result.
pub fn sliding_window_rates(
    event_times: &[f64],
    t_start: f64,
    t_end: f64,
    window_s: f64,
    step_s: f64,
    confidence: f64,
) -> Result<Vec<(f64, RateEstimate)>, StatsError> {
    check::times(event_times)?;
    let span = check::window(t_start, t_end)?;
    if !(window_s.is_finite() && window_s > 0.0 && step_s.is_finite() && step_s > 0.0) {
        return Err(StatsError::InvalidArgument(
            "window_s and step_s must be > 0",
        ));
    }
    if window_s > span {
        return Err(StatsError::InvalidArgument("span shorter than one window"));
    }
    let steps = ((span - window_s) / step_s).floor();
    if !steps.is_finite() || steps >= MAX_POINTS as f64 {
        return Err(StatsError::InvalidArgument("too many windows"));
    }
    let mut sorted = event_times.to_vec();
    sorted.sort_by(f64::total_cmp);
    check::confidence(confidence)?;
    // Counts repeat across windows: compute each count's Garwood bounds once.
    let mut bounds: HashMap<u64, (f64, f64)> = HashMap::new();
    let mut out = Vec::with_capacity(steps as usize + 1);
    for i in 0..=(steps as usize) {
        let end = t_start + window_s + i as f64 * step_s;
        let from = end - window_s;
        let a = sorted.partition_point(|&t| t < from);
        let b = sorted.partition_point(|&t| t < end);
        let count = (b - a) as u64;
        let (lo, hi) = match bounds.get(&count) {
            Some(&v) => v,
            None => {
                let v = garwood_interval(count as f64, confidence)?;
                bounds.insert(count, v);
                v
            }
        };
        out.push((
            end,
            RateEstimate::from_parts(count, window_s, lo, hi, confidence)?,
        ));
    }
    Ok(out)
}

/// Event counts in fixed buckets `[t0 + i·bucket_s, t0 + (i+1)·bucket_s)`.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketCounts {
    /// Start of bucket 0, seconds.
    pub t0: f64,
    /// Bucket width, seconds.
    pub bucket_s: f64,
    /// Events per bucket; bucket `i` starts at `t0 + i·bucket_s`. The last bucket holds the latest event.
    pub counts: Vec<u64>,
    /// Events earlier than `t0`: not in any bucket, counted here so none is silently dropped.
    pub before_t0: u64,
}

impl BucketCounts {
    /// Per-bucket rates (events/s) with Garwood intervals at `confidence`.
    ///
    /// Errors: [`StatsError::InvalidArgument`] for a confidence outside (0, 1).
    pub fn rates(&self, confidence: f64) -> Result<Vec<RateEstimate>, StatsError> {
        check::confidence(confidence)?;
        let mut bounds: HashMap<u64, (f64, f64)> = HashMap::new();
        let mut out = Vec::with_capacity(self.counts.len());
        for &c in &self.counts {
            let (lo, hi) = match bounds.get(&c) {
                Some(&v) => v,
                None => {
                    let v = garwood_interval(c as f64, confidence)?;
                    bounds.insert(c, v);
                    v
                }
            };
            out.push(RateEstimate::from_parts(
                c,
                self.bucket_s,
                lo,
                hi,
                confidence,
            )?);
        }
        Ok(out)
    }
}

/// Counts events per fixed bucket of `bucket_s` seconds starting at `t0` (a time series of
/// completions per minute, say). Empty `times` gives no buckets.
///
/// Errors: [`StatsError::NonFinite`] for a NaN/∞ time; [`StatsError::InvalidArgument`] if `t0` is
/// not finite, `bucket_s` is not > 0, or more than [`crate::MAX_POINTS`] buckets would result.
pub fn bucket_counts(times: &[f64], t0: f64, bucket_s: f64) -> Result<BucketCounts, StatsError> {
    check::times(times)?;
    if !t0.is_finite() {
        return Err(StatsError::InvalidArgument("t0 must be finite"));
    }
    if !(bucket_s.is_finite() && bucket_s > 0.0) {
        return Err(StatsError::InvalidArgument(
            "bucket_s must be finite and > 0",
        ));
    }
    let mut before_t0 = 0u64;
    let mut max_index = None::<usize>;
    let mut indices = Vec::with_capacity(times.len());
    for &t in times {
        if t < t0 {
            before_t0 += 1;
            continue;
        }
        let i = ((t - t0) / bucket_s).floor();
        if !i.is_finite() || i >= MAX_POINTS as f64 {
            return Err(StatsError::InvalidArgument("too many buckets"));
        }
        let i = i as usize;
        max_index = Some(max_index.map_or(i, |m| m.max(i)));
        indices.push(i);
    }
    let mut counts = vec![0u64; max_index.map_or(0, |m| m + 1)];
    for i in indices {
        counts[i] += 1; // ok: i <= max_index < counts.len()
    }
    Ok(BucketCounts {
        t0,
        bucket_s,
        counts,
        before_t0,
    })
}

/// Expected count needed so that the *exact* Garwood interval lies within `±relative_error` of
/// the count (both sides; the upper side is the binding one).
fn count_needed(relative_error: f64, confidence: f64) -> Result<f64, StatsError> {
    if !(relative_error.is_finite() && relative_error > 0.0 && relative_error <= 10.0) {
        return Err(StatsError::InvalidArgument(
            "relative_error must be in (0, 10]",
        ));
    }
    let z = check::z_value(confidence)?;
    let dev = |mu: f64| -> Result<f64, StatsError> {
        let (lo, hi) = garwood_interval(mu, confidence)?;
        Ok(((hi - mu) / mu).max((mu - lo) / mu))
    };
    let normal = (z / relative_error).powi(2);
    let mut hi = normal.max(1.0) * 2.0 + 10.0;
    while dev(hi)? > relative_error {
        hi *= 2.0;
        if hi > 1.0e15 {
            return Err(StatsError::InvalidArgument("relative_error too small"));
        }
    }
    let mut lo = 0.0;
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if dev(mid)? > relative_error {
            lo = mid;
        } else {
            hi = mid;
        }
        if (hi - lo) <= 1e-9 * hi {
            break;
        }
    }
    Ok(hi)
}

/// Seconds of observation needed at `rate_per_s` so that the 95%-style interval (at `confidence`)
/// of the measured rate is within `±relative_error` × rate.
///
/// Method: exact. The expected count `μ = rate × window` is raised (bisection) until the Garwood
/// interval evaluated at `μ` satisfies `max(U(μ) − μ, μ − L(μ)) ≤ ε·μ`; the upper side binds.
/// For ±10% at 95% this is about 423 events (the normal approximation `(z/ε)²`, see
/// [`window_needed_normal`], gives 384). So at 0.1 req/s, ±10% needs about 4,230 s (70 minutes).
///
/// Errors: [`StatsError::InvalidArgument`] if `rate_per_s` is not finite and > 0,
/// `relative_error` is not in (0, 10], `confidence` is not in (0, 1), or the answer overflows.
pub fn window_needed(
    rate_per_s: f64,
    relative_error: f64,
    confidence: f64,
) -> Result<f64, StatsError> {
    if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
        return Err(StatsError::InvalidArgument(
            "rate_per_s must be finite and > 0",
        ));
    }
    let mu = count_needed(relative_error, confidence)?;
    check::finite(mu / rate_per_s, "window overflows f64")
}

/// The normal-approximation counterpart of [`window_needed`]: `(z/ε)² / rate` seconds, where
/// `z` is the two-sided normal quantile at `confidence`. Shorter than the exact answer; given so
/// reports can show both. Errors as for [`window_needed`].
pub fn window_needed_normal(
    rate_per_s: f64,
    relative_error: f64,
    confidence: f64,
) -> Result<f64, StatsError> {
    if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
        return Err(StatsError::InvalidArgument(
            "rate_per_s must be finite and > 0",
        ));
    }
    if !(relative_error.is_finite() && relative_error > 0.0 && relative_error <= 10.0) {
        return Err(StatsError::InvalidArgument(
            "relative_error must be in (0, 10]",
        ));
    }
    let z = check::z_value(confidence)?;
    check::finite(
        (z / relative_error).powi(2) / rate_per_s,
        "window overflows f64",
    )
}

/// Whether a window is long enough to measure a rate to ±10%.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The window is at least [`Adequacy::window_needed_for_10pct_s`] long.
    Adequate,
    /// The window is shorter than needed for ±10%.
    TooShort,
}

/// What a window of a given length can tell about a rate (planning a measurement).
///
/// Units: rates in events/s (requests/s in the `Display` text), times in seconds, counts in events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adequacy {
    /// The rate assumed, events/s.
    pub rate_per_s: f64,
    /// The window considered, seconds.
    pub window_s: f64,
    /// Two-sided confidence level.
    pub confidence: f64,
    /// `rate × window`: events the window is expected to hold.
    pub expected_count: f64,
    /// Lower end of the rate interval one would report if exactly the expected count were seen, events/s.
    pub ci_low: f64,
    /// Upper end of that interval, events/s.
    pub ci_high: f64,
    /// Window needed for ±10% at this confidence ([`window_needed`]), seconds.
    pub window_needed_for_10pct_s: f64,
    /// [`Verdict::Adequate`] when `window_s ≥ window_needed_for_10pct_s`.
    pub verdict: Verdict,
}

impl fmt::Display for Adequacy {
    /// E.g. "60 s at 0.1 req/s holds ~6 completions; 95% interval 0.037-0.22 req/s; about 70
    /// minutes are needed for ±10%".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {} req/s holds ~{} completions; {}% interval {}-{} req/s; about {} {} needed for ±10%",
            fmt_duration(self.window_s),
            fmt_sig(self.rate_per_s, 3),
            fmt_sig(self.expected_count, 3),
            fmt_sig(self.confidence * 100.0, 3),
            fmt_sig(self.ci_low, 2),
            fmt_sig(self.ci_high, 2),
            fmt_duration(self.window_needed_for_10pct_s),
            if self.verdict == Verdict::Adequate {
                "were"
            } else {
                "are"
            },
        )
    }
}

/// How well a window of `window_s` seconds measures a rate of about `rate_per_s` events/s.
///
/// The interval is Garwood's for the expected count `μ = rate × window` (a real number: Gamma
/// quantiles accept non-integer shapes), divided by the window. Example: 60 s at 0.1 req/s →
/// μ = 6, interval 0.0367–0.218 req/s, ±10% needs about 70 minutes → [`Verdict::TooShort`].
///
/// Errors: [`StatsError::InvalidArgument`] if `rate_per_s` or `window_s` is not finite and > 0,
/// `confidence` is not in (0, 1), or a result overflows.
pub fn adequacy(rate_per_s: f64, window_s: f64, confidence: f64) -> Result<Adequacy, StatsError> {
    if !(window_s.is_finite() && window_s > 0.0) {
        return Err(StatsError::InvalidArgument(
            "window_s must be finite and > 0",
        ));
    }
    let needed = window_needed(rate_per_s, 0.1, confidence)?;
    let mu = check::finite(rate_per_s * window_s, "expected count overflows f64")?;
    let (lo, hi) = garwood_interval(mu, confidence)?;
    Ok(Adequacy {
        rate_per_s,
        window_s,
        confidence,
        expected_count: mu,
        ci_low: lo / window_s,
        ci_high: check::finite(hi / window_s, "rate overflows f64")?,
        window_needed_for_10pct_s: needed,
        verdict: if window_s >= needed {
            Verdict::Adequate
        } else {
            Verdict::TooShort
        },
    })
}

/// Time to finish the remaining work at a measured rate.
///
/// Units: seconds. `low_s ≤ seconds ≤ high_s`. A bound is `+∞` when the corresponding rate
/// bound is 0 (no completions seen, or a Garwood lower bound of 0); never NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eta {
    /// `remaining / rate`, seconds (`+∞` if the rate is 0 and work remains).
    pub seconds: f64,
    /// `remaining / ci_high`, seconds: the optimistic end.
    pub low_s: f64,
    /// `remaining / ci_low`, seconds: the pessimistic end (`+∞` if `ci_low` is 0).
    pub high_s: f64,
}

impl fmt::Display for Eta {
    /// E.g. "about 12 minutes (8 minutes to 20 minutes)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "about {} ({} to {})",
            fmt_duration(self.seconds),
            fmt_duration(self.low_s),
            fmt_duration(self.high_s)
        )
    }
}

/// Estimated time to complete `remaining` events (requests, or tokens with a token rate) at the
/// measured `rate`, with the range implied by the rate's interval.
///
/// The range reflects uncertainty in the rate only; it does not add the Poisson scatter of the
/// remaining completions themselves, which is smaller whenever `remaining` exceeds the count the
/// rate was measured on.
///
/// Errors: [`StatsError::InvalidArgument`] if `remaining` is negative or non-finite, or `rate`
/// holds a negative or non-finite field or `ci_low > ci_high`.
pub fn eta(remaining: f64, rate: &RateEstimate) -> Result<Eta, StatsError> {
    let remaining = check::non_negative(remaining, "remaining must be finite and >= 0")?;
    let r = check::non_negative(rate.rate_per_s, "rate must be finite and >= 0")?;
    let lo = check::non_negative(rate.ci_low, "ci_low must be finite and >= 0")?;
    let hi = check::non_negative(rate.ci_high, "ci_high must be finite and >= 0")?;
    if lo > hi || r > hi || r < lo {
        return Err(StatsError::InvalidArgument(
            "need ci_low <= rate <= ci_high",
        ));
    }
    let div = |rate: f64| {
        if remaining == 0.0 {
            0.0
        } else if rate == 0.0 {
            f64::INFINITY
        } else {
            remaining / rate // may be +∞ on overflow, never NaN
        }
    };
    Ok(Eta {
        seconds: div(r),
        low_s: div(hi),
        high_s: div(lo),
    })
}
