//! Gauges over samples: time-weighted summaries of `(t, v)` points and shares of the items a
//! predicate says yes to. A leaf: the views ([`super::view`], which re-exports these) and the
//! pools ([`super::pools`]) both summarise with them.

use super::collect_within;
use crate::report::GaugeStats;
use throughput_stats::Hold;

/// Time-weighted stats of `(t, v)` points: each reading holds until the next, the last one for
/// the series' median interval (a ramp's last, highest reading is not left out); equal weights
/// when times are missing, unsorted, or too coarse (SGLang prints whole seconds, so a burst of
/// lines within a few seconds shares timestamps: then every line counts equally instead).
pub fn gauge(points: &[(Option<f64>, f64)]) -> GaugeStats {
    gauge_held(points, Hold::Forward, None)
}

/// [`gauge`] of points whose times are those `interval` was taken from
/// ([`upper_median_interval`] of the same times, in the same order): the median interval
/// is not selected again for each gauge over one clock.
pub(crate) fn gauge_on(points: &[(Option<f64>, f64)], interval: Option<f64>) -> GaugeStats {
    gauge_held(points, Hold::Forward, interval)
}

/// The upper median (the element at `len / 2` in [`f64::total_cmp`] order, selected) of the
/// intervals between consecutive times (seconds); `None` for fewer than two times.
pub(crate) fn upper_median_interval(times: impl Iterator<Item = f64>) -> Option<f64> {
    let mut prev: Option<f64> = None;
    let dts: Vec<f64> = times
        .filter_map(|t| {
            let dt = prev.map(|p| t - p);
            prev = Some(t);
            dt
        })
        .collect();
    throughput_stats::nth_in_total_order(dts.iter().copied(), dts.len() / 2)
}

/// [`gauge`] of a windowed rate (SGLang's `gen throughput`: tokens since the previous decode
/// line ÷ the time since it): each reading stands for the interval before it
/// ([`Hold::Backward`]), so the first reading, whose window starts before the series, has no
/// weight in the mean and quantiles (it stays in min and max). Equal weights when the times
/// are unusable, as in [`gauge`].
pub fn rate_gauge(points: &[(Option<f64>, f64)]) -> GaugeStats {
    gauge_held(points, Hold::Backward, None)
}

/// `interval`: the upper median interval of the points' times when the caller has it (they
/// must be every point's time, in order), else `None`.
fn gauge_held(points: &[(Option<f64>, f64)], hold: Hold, interval: Option<f64>) -> GaugeStats {
    let finite = || points.iter().map(|p| p.1).filter(|v| v.is_finite());
    // count, least and greatest of the finite readings, in reading order
    let mut rest = finite();
    let Some(first) = rest.next() else {
        return GaugeStats::default();
    };
    let (mut n, mut min, mut max) = (1, first, first);
    for v in rest {
        n += 1;
        min = min.min(v);
        max = max.max(v);
    }
    let (min, max) = (Some(min), Some(max));
    // one more place: a forward-held series closes with its last reading held on
    let timed: Vec<(f64, f64)> = collect_within(
        points.len() + 1,
        points.iter().filter_map(|&(t, v)| t.map(|t| (t, v))),
    );
    // times that never decrease, and how many distinct ones, in one pass
    let (mut sorted, mut distinct) = (true, 1);
    for w in timed.windows(2) {
        sorted &= w[0].0 <= w[1].0;
        distinct += usize::from(w[1].0 > w[0].0);
    }
    let series: Vec<(f64, f64)> =
        if timed.len() == points.len() && sorted && distinct * 2 >= timed.len() {
            match hold {
                // reading i+1 holds over (t_i, t_i+1]: as a forward-held series, (t_i, v_i+1),
                // closed by the last time
                Hold::Backward if timed.len() >= 2 => timed
                    .windows(2)
                    .map(|w| (w[0].0, w[1].1))
                    .chain(timed.last().copied())
                    .collect(),
                // each reading holds until the next; the last one as long as a median
                // interval (else a ramp's last, highest reading had no weight at all)
                Hold::Forward if timed.len() >= 2 => {
                    // the upper median: the element at len/2 in sorted order, selected
                    let dt = interval
                        .or_else(|| upper_median_interval(timed.iter().map(|p| p.0)))
                        .unwrap_or(0.0);
                    let mut s = timed;
                    if let Some(&(t, v)) = s.last().filter(|_| dt > 0.0) {
                        s.push((t + dt, v));
                    }
                    s
                }
                _ => timed,
            }
        } else {
            collect_within(n, finite().enumerate().map(|(i, v)| (i as f64, v)))
        };
    match throughput_stats::time_weighted_summary(&series) {
        Ok(s) => GaugeStats {
            n,
            min,
            median: Some(s.median),
            p90: Some(s.p90),
            max,
            mean: Some(s.mean),
        },
        Err(_) => GaugeStats {
            n,
            min,
            max,
            ..GaugeStats::default()
        },
    }
}

/// Whether the points' times never decrease.
pub fn is_sorted(s: &[(f64, f64)]) -> bool {
    s.windows(2).all(|w| w[0].0 <= w[1].0)
}

/// Share of the items for which `pred` says yes, among those it can judge (`None` = unknown).
pub fn share<T>(items: &[T], pred: impl Fn(&T) -> Option<bool>) -> Option<f64> {
    let mut n = 0usize;
    let mut yes = 0usize;
    for it in items {
        if let Some(b) = pred(it) {
            n += 1;
            if b {
                yes += 1;
            }
        }
    }
    (n > 0).then(|| yes as f64 / n as f64)
}
