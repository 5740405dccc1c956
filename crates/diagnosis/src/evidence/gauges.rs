//! Gauges over samples: time-weighted summaries of `(t, v)` points and shares of the items a
//! predicate says yes to. A leaf: the views ([`super::view`], which re-exports these) and the
//! pools ([`super::pools`]) both summarise with them.

use super::collect_within;
use crate::report::GaugeStats;
use throughput_stats::{Clock, Hold};

/// Time-weighted stats of `(t, v)` points: each reading holds until the next, the last one for
/// the series' median interval (a ramp's last, highest reading is not left out); equal weights
/// when times are missing, unsorted, or too coarse (SGLang prints whole seconds, so a burst of
/// lines within a few seconds shares timestamps: then every line counts equally instead).
pub fn gauge(points: &[(Option<f64>, f64)]) -> GaugeStats {
    gauge_held(points, Hold::Forward, None, None)
}

/// [`gauge`] of points whose times are those `interval` was taken from
/// ([`upper_median_interval`] of the same times, in the same order): the median interval
/// is not selected again for each gauge over one clock.
/// `clock`: the clock of the points' times with `interval` ([`interval_and_clock`]), when there
/// is one.
pub(crate) fn gauge_on(
    points: &[(Option<f64>, f64)],
    interval: Option<f64>,
    clock: Option<&(Clock, bool)>,
) -> GaugeStats {
    gauge_held(points, Hold::Forward, interval, clock)
}

/// The gauge of the readings `read` takes from `items` (lines at times `t`), `None` when no
/// item has one: [`gauge_on`] of the points `(t, reading)` when every item has a reading (then
/// `interval` and `clock` must be those of every item's time, [`interval_and_clock`]), else
/// [`gauge`] of the points of the items that have one. With a clock and every reading finite,
/// the readings go to the clock straight from the items: no list of points is made and read
/// again (~0.4 M instructions for the three gauges of a scheduler's 5,900 steady decode lines).
pub(crate) fn gauge_of<T>(
    items: &[T],
    t: impl Fn(&T) -> Option<f64>,
    read: impl Fn(&T) -> Option<f64>,
    (interval, clock): (Option<f64>, Option<&(Clock, bool)>),
) -> Option<GaugeStats> {
    if let Some((c, held_on)) = clock
        && let Some((first, rest)) = items.split_first()
        && let Some(v0) = read(first).filter(|v| v.is_finite())
    {
        // what `gauge_held` finds on the clock, in its order: least and greatest of the
        // readings, then the clock's summary of them (the last held on when it is)
        let mut values: Vec<f64> = Vec::with_capacity(items.len() + 1);
        values.push(v0);
        let (mut min, mut max) = (v0, v0);
        let mut every = true;
        for it in rest {
            match read(it) {
                Some(v) if v.is_finite() => {
                    min = min.min(v);
                    max = max.max(v);
                    values.push(v);
                }
                _ => {
                    every = false;
                    break;
                }
            }
        }
        if every {
            let n = values.len();
            if *held_on {
                values.push(values[n - 1]);
            }
            return Some(stats(n, Some(min), Some(max), c.summary(&values)));
        }
    }
    let points: Vec<(Option<f64>, f64)> = collect_within(
        items.len(),
        items.iter().filter_map(|x| Some((t(x), read(x)?))),
    );
    if points.is_empty() {
        return None;
    }
    Some(if points.len() == items.len() {
        gauge_on(&points, interval, clock)
    } else {
        gauge(&points)
    })
}

/// The clock a [`gauge_on`] of points at `times` with `interval` weighs them by, made once for
/// the gauges read at those times; with whether the last reading is held on past the last
/// time. `None` when such a gauge would not weigh by time (a point without a time, fewer than
/// two, times out of order or too coarse) or the times fail [`Clock::new`]: each gauge then
/// goes its own way.
#[cfg(test)]
pub(crate) fn decode_clock(
    times: impl Iterator<Item = Option<f64>>,
    interval: Option<f64>,
) -> Option<(Clock, bool)> {
    // room for every time and the one held on: collected through `Option` the list grew by
    // doubling, each step a copy (counted a byte at a time under callgrind)
    let mut ts: Vec<f64> = Vec::with_capacity(times.size_hint().1.unwrap_or(0) + 1);
    for t in times {
        ts.push(t?);
    }
    clock_on(ts, interval)
}

/// The upper median interval of `times` ([`upper_median_interval`]) and their
/// clock with it (what `decode_clock` makes), when every time is there (else neither): one list of the times
/// for both, the intervals read from it (two passes over the lines and a list of the
/// intervals fewer, ~0.15 M instructions for a scheduler's 5,900 steady decode lines).
pub(crate) fn interval_and_clock(
    times: impl ExactSizeIterator<Item = Option<f64>>,
) -> (Option<f64>, Option<(Clock, bool)>) {
    let mut ts: Vec<f64> = Vec::with_capacity(times.len() + 1);
    for t in times {
        let Some(t) = t else {
            return (None, None);
        };
        ts.push(t);
    }
    let interval = (ts.len() >= 2)
        .then(|| {
            throughput_stats::nth_in_total_order(
                ts.windows(2).map(|w| w[1] - w[0]),
                (ts.len() - 1) / 2,
            )
        })
        .flatten();
    (interval, clock_on(ts, interval))
}

/// The clock of the times `ts` (room for one more) with `interval`: what `decode_clock` gives.
fn clock_on(mut ts: Vec<f64>, interval: Option<f64>) -> Option<(Clock, bool)> {
    if ts.len() < 2 || !weighs_by_time(ts.len(), ts.iter().copied()) {
        return None;
    }
    let dt = interval
        .or_else(|| upper_median_interval(ts.iter().copied()))
        .unwrap_or(0.0);
    let held_on = dt > 0.0;
    if held_on {
        ts.push(ts[ts.len() - 1] + dt);
    }
    Clock::new(&ts).ok().map(|c| (c, held_on))
}

/// Whether `n` readings at `times` are weighed by time: the times never decrease and at least
/// half of them are distinct (SGLang prints whole seconds: a burst shares its timestamps).
fn weighs_by_time(n: usize, times: impl Iterator<Item = f64>) -> bool {
    let (mut sorted, mut distinct, mut prev) = (true, 1, None);
    for t in times {
        if let Some(p) = prev {
            sorted &= p <= t;
            distinct += usize::from(t > p);
        }
        prev = Some(t);
    }
    sorted && distinct * 2 >= n
}

/// The upper median (the element at `len / 2` in [`f64::total_cmp`] order, selected) of the
/// intervals between consecutive times (seconds); `None` for fewer than two times.
pub(crate) fn upper_median_interval(times: impl Iterator<Item = f64>) -> Option<f64> {
    let mut prev: Option<f64> = None;
    // room for them all at once (a list grown by doubling is copied at each step)
    let bound = times.size_hint().1.unwrap_or(0);
    let dts: Vec<f64> = collect_within(
        bound,
        times.filter_map(|t| {
            let dt = prev.map(|p| t - p);
            prev = Some(t);
            dt
        }),
    );
    throughput_stats::nth_in_total_order(dts.iter().copied(), dts.len() / 2)
}

/// [`gauge`] of a windowed rate (SGLang's `gen throughput`: tokens since the previous decode
/// line ÷ the time since it): each reading stands for the interval before it
/// ([`Hold::Backward`]), so the first reading, whose window starts before the series, has no
/// weight in the mean and quantiles (it stays in min and max). Equal weights when the times
/// are unusable, as in [`gauge`].
pub fn rate_gauge(points: &[(Option<f64>, f64)]) -> GaugeStats {
    gauge_held(points, Hold::Backward, None, None)
}

/// [`rate_gauge`] of the readings `read` takes from `items` at their times `t`: when every
/// reading has a time (as a rule), the series it summarises is made in place from the
/// readings, with no list of points made first and copied twice more (~0.2 M instructions a
/// scheduler of 5,900 steady decode lines).
pub(crate) fn rate_gauge_of<T>(
    items: &[T],
    t: impl Fn(&T) -> Option<f64>,
    read: impl Fn(&T) -> Option<f64>,
) -> GaugeStats {
    let mut timed: Vec<(f64, f64)> = Vec::with_capacity(items.len() + 1);
    for x in items {
        if let Some(v) = read(x) {
            let Some(at) = t(x) else {
                return rate_gauge(&collect_within(
                    items.len(),
                    items.iter().filter_map(|x| Some((t(x), read(x)?))),
                ));
            };
            timed.push((at, v));
        }
    }
    // what `gauge_held` finds on these points, in its order
    let mut finite = timed.iter().map(|p| p.1).filter(|v| v.is_finite());
    let Some(first) = finite.next() else {
        return GaugeStats::default();
    };
    let (mut n, mut min, mut max) = (1, first, first);
    for v in finite {
        n += 1;
        min = min.min(v);
        max = max.max(v);
    }
    // `series` of backward-held points that all have a time
    let series = if weighs_by_time(timed.len(), timed.iter().map(|p| p.0)) {
        // reading i+1 holds over (t_i, t_i+1]: (t_i, v_i+1), closed by the last point as it is
        for i in 1..timed.len() {
            timed[i - 1].1 = timed[i].1;
        }
        timed
    } else {
        collect_within(
            n,
            timed
                .iter()
                .map(|p| p.1)
                .filter(|v| v.is_finite())
                .enumerate()
                .map(|(i, v)| (i as f64, v)),
        )
    };
    stats(
        n,
        Some(min),
        Some(max),
        throughput_stats::time_weighted_summary(&series),
    )
}

/// `interval`: the upper median interval of the points' times when the caller has it (they
/// must be every point's time, in order), else `None`; `clock`: their clock with it
/// (forward-held points only), when there is one.
fn gauge_held(
    points: &[(Option<f64>, f64)],
    hold: Hold,
    interval: Option<f64>,
    clock: Option<&(Clock, bool)>,
) -> GaugeStats {
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
    let summary = match clock {
        // every reading finite: the series below is the clock's times with these readings
        Some((c, held_on)) if n == points.len() => {
            let last = points.last().map(|p| p.1).filter(|_| *held_on);
            let values: Vec<f64> = points.iter().map(|p| p.1).chain(last).collect();
            c.summary(&values)
        }
        _ => throughput_stats::time_weighted_summary(&series(points, hold, interval, n)),
    };
    stats(n, min, max, summary)
}

/// A gauge's figures: `n` finite readings, their least and greatest, and their time-weighted
/// summary (without one when it failed).
fn stats(
    n: usize,
    min: Option<f64>,
    max: Option<f64>,
    summary: Result<throughput_stats::GaugeSummary, throughput_stats::StatsError>,
) -> GaugeStats {
    match summary {
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

/// The series [`gauge_held`] summarises: the points weighed by time when their times allow,
/// else the `n` finite readings one second apart.
fn series(
    points: &[(Option<f64>, f64)],
    hold: Hold,
    interval: Option<f64>,
    n: usize,
) -> Vec<(f64, f64)> {
    let finite = || points.iter().map(|p| p.1).filter(|v| v.is_finite());
    // one more place: a forward-held series closes with its last reading held on
    let timed: Vec<(f64, f64)> = collect_within(
        points.len() + 1,
        points.iter().filter_map(|&(t, v)| t.map(|t| (t, v))),
    );
    if timed.len() == points.len() && weighs_by_time(timed.len(), timed.iter().map(|p| p.0)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A gauge on the clock of its times is the gauge without it: times that weigh, a reading
    /// that is not finite, times too coarse or out of order, a single point.
    #[test]
    fn a_gauge_on_its_clock_is_the_general_gauge() {
        let at = |ts: &[f64], vs: &[f64]| -> Vec<(Option<f64>, f64)> {
            ts.iter().zip(vs).map(|(&t, &v)| (Some(t), v)).collect()
        };
        let vs = [4.0, 7.0, 7.0, 2.0, 9.0, 0.5];
        let cases = [
            (at(&[0.0, 1.0, 2.5, 3.0, 5.0, 6.0], &vs), true),
            (at(&[0.0, 0.0, 0.0, 0.0, 1.0, 1.0], &vs), false),
            (at(&[0.0, 1.0, 0.5, 3.0, 5.0, 6.0], &vs), false),
            (
                at(
                    &[0.0, 1.0, 2.5, 3.0, 5.0, 6.0],
                    &[4.0, f64::NAN, 1.0, 2.0, 9.0, 0.5],
                ),
                true,
            ),
            (at(&[0.0, 0.0, 1.0, 1.0, 2.0, 2.0], &vs), true),
            (at(&[3.0], &[1.0]), false),
        ];
        for (points, clocked) in cases {
            let interval = upper_median_interval(points.iter().filter_map(|p| p.0));
            let clock = decode_clock(points.iter().map(|p| p.0), interval);
            assert_eq!(clock.is_some(), clocked);
            // both made from one list of the times: the same
            assert_eq!(
                interval_and_clock(points.iter().map(|p| p.0)),
                (interval, clock.clone())
            );
            let want = gauge_held(&points, Hold::Forward, interval, None);
            assert_eq!(gauge_on(&points, interval, clock.as_ref()), want);
        }
        // a time missing: neither
        let times = [Some(0.0), None, Some(2.0)];
        assert_eq!(interval_and_clock(times.into_iter()), (None, None));
        let points = at(&[0.0, 1.0, 2.5, 3.0, 5.0, 6.0], &vs);
        let clock = decode_clock(points.iter().map(|p| p.0), Some(1.0));
        let g = gauge_on(&points, Some(1.0), clock.as_ref());
        // held on for the interval: 4·1 + 7·1.5 + 7·0.5 + 2·2 + 9·1 + 0.5·1 over 7 s
        assert!(g.mean.is_some_and(|m| (m - 31.5 / 7.0).abs() < 1e-12));
        assert_eq!((g.min, g.max, g.median), (Some(0.5), Some(9.0), Some(4.0)));
    }
}
