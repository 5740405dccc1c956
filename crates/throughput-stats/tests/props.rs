//! Property tests: every public function, on arbitrary finite inputs, returns Ok without NaN or
//! an Err — it never panics and never produces NaN.

use proptest::prelude::*;
use throughput_stats::*;

/// Any finite f64, from subnormal to ±f64::MAX, or an everyday value in ±1e4.
fn num() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        -1.0e4..1.0e4f64,
        0.0..100.0f64,
    ]
}

/// A series with sorted times (sometimes) or arbitrary order.
fn series() -> impl Strategy<Value = Vec<(f64, f64)>> {
    (prop::collection::vec((num(), num()), 0..60), any::<bool>()).prop_map(|(mut v, sort)| {
        if sort {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        v
    })
}

fn conf() -> impl Strategy<Value = f64> {
    prop_oneof![num(), 0.5..0.999f64, Just(0.95)]
}

fn no_nan(xs: &[f64]) -> bool {
    xs.iter().all(|x| !x.is_nan())
}

fn rate_ok(r: &RateEstimate) -> bool {
    no_nan(&[r.rate_per_s, r.window_s, r.ci_low, r.ci_high, r.confidence])
        && r.ci_low <= r.rate_per_s
        && r.rate_per_s <= r.ci_high
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn gauge_functions(s in series(), q in num(), from in num(), to in num(), nb in 0usize..40, c in conf(), hl in num()) {
        if let Ok(g) = time_weighted_summary(&s) {
            prop_assert!(no_nan(&[g.span_s, g.min, g.max, g.mean, g.sd, g.median, g.p90, g.last]));
            prop_assert!(g.min <= g.mean && g.mean <= g.max);
            prop_assert!(g.min <= g.median && g.median <= g.p90 && g.p90 <= g.max);
        }
        if let Ok(v) = quantile(&s, q) { prop_assert!(!v.is_nan()); }
        for hold in [Hold::Forward, Hold::Backward] {
            if let Ok(v) = time_weighted_mean(&s, from, to, hold) { prop_assert!(!v.is_nan()); }
            if let Ok(b) = batch_means(&s, from, to, nb, hold, c) {
                prop_assert!(no_nan(&[b.mean, b.ci_low, b.ci_high, b.batch_s, b.from_s, b.to_s]));
                prop_assert!(no_nan(&b.batch_means));
                prop_assert!(b.lag1_autocorrelation.is_none_or(|r| !r.is_nan()));
            }
        }
        if let Ok(b) = gen_throughput_mean(&s, from, to) { prop_assert!(no_nan(&[b.mean, b.ci_low, b.ci_high])); }
        if let Ok(g) = GaugeSeries::new(s.clone()) {
            prop_assert!(g.quantile(0.5).is_ok());
            if let Ok(v) = g.mean_between(from, to, Hold::Forward) { prop_assert!(!v.is_nan()); }
        }
        if let Ok(e) = ewma_series(&s, hl) {
            prop_assert!(e.iter().all(|p| !p.1.is_nan()));
        }
        if let Ok(mut e) = Ewma::new(hl) {
            for &(t, x) in &s {
                if let Ok(v) = e.update(t, x) { prop_assert!(!v.is_nan()); }
            }
        }
    }

    /// The summary's median and p90 (one sort for both) are `quantile` at 0.5 and 0.9, ties
    /// included (values drawn from a few levels, as token usage or running requests are).
    #[test]
    fn summary_quantiles_are_quantile(mut s in series(), levels in prop::collection::vec(0u8..4, 0..60)) {
        for (p, l) in s.iter_mut().zip(&levels) {
            p.1 = f64::from(*l) * 0.25;
        }
        if let Ok(g) = time_weighted_summary(&s) {
            prop_assert_eq!(Some(g.median), quantile(&s, 0.5).ok());
            prop_assert_eq!(Some(g.p90), quantile(&s, 0.9).ok());
        }
    }

    #[test]
    fn phases_and_counters(s in series()) {
        if let Ok(p) = detect_phases(&s) {
            prop_assert!(no_nan(&[p.ramp_end_s, p.steady.0, p.steady.1, p.steady_mean]));
            prop_assert!(p.steady.0 <= p.steady.1);
            prop_assert!(p.drain_start_s.is_none_or(|d| !d.is_nan()));
        }
        if let Ok(c) = CounterSeries::from_samples(&s) {
            prop_assert!(!c.increase().is_nan() && c.increase() >= 0.0);
            if let Ok(r) = c.rate() { prop_assert!(!r.is_nan()); }
            if let Ok(r) = c.rate_estimate(0.95) { prop_assert!(rate_ok(&r)); }
        }
    }

    #[test]
    fn event_rates(times in prop::collection::vec(num(), 0..80), a in num(), b in num(), w in num(), step in num(), c in conf(), count in any::<u64>(), k in num()) {
        if let Ok(r) = window_rate(&times, a, b) { prop_assert!(rate_ok(&r)); }
        if let Ok(r) = window_rate_with_confidence(&times, a, b, c) { prop_assert!(rate_ok(&r)); }
        if let Ok(r) = lifetime_rate(count, a, b) { prop_assert!(rate_ok(&r)); }
        if let Ok(r) = RateEstimate::from_count(count % 1_000_000, w, c) {
            prop_assert!(rate_ok(&r));
            prop_assert!(r.relative_half_width().is_none_or(|x| !x.is_nan()));
            let _ = r.to_string();
            if let Ok(e) = eta(k, &r) {
                prop_assert!(no_nan(&[e.seconds, e.low_s, e.high_s]));
                prop_assert!(e.low_s <= e.seconds && e.seconds <= e.high_s);
                let _ = e.to_string();
            }
        }
        if let Ok((lo, hi)) = garwood_interval(k, c) { prop_assert!(no_nan(&[lo, hi]) && lo <= hi); }
        // Bound the work: a tiny step over a long span is refused (MAX_POINTS) or kept small here.
        if (b - a).abs() / step.abs().max(1e-300) < 5_000.0
            && let Ok(v) = sliding_window_rates(&times, a, b, w, step, c) {
                prop_assert!(v.iter().all(|(t, r)| !t.is_nan() && rate_ok(r)));
            }
        if let Ok(bc) = bucket_counts(&times, a, w) {
            prop_assert_eq!(bc.counts.iter().sum::<u64>() + bc.before_t0, times.len() as u64);
            if bc.counts.len() < 5_000
                && let Ok(rs) = bc.rates(c) { prop_assert!(rs.iter().all(rate_ok)); }
        }
    }

    #[test]
    fn planning_and_derived(rate in num(), eps in num(), w in num(), c in conf(), t in num(), lo in num(), hi in num(), m in num(), sd in num(), n in any::<u64>(), l in num()) {
        if let Ok(x) = window_needed(rate, eps, c) { prop_assert!(!x.is_nan() && x > 0.0); }
        if let Ok(x) = window_needed_normal(rate, eps, c) { prop_assert!(!x.is_nan()); }
        if let Ok(a) = adequacy(rate, w, c) {
            prop_assert!(no_nan(&[a.expected_count, a.ci_low, a.ci_high, a.window_needed_for_10pct_s]));
            let _ = a.to_string();
        }
        if let Ok(d) = request_rate_from_tokens(t, (lo, hi), m, sd, n, c) {
            prop_assert!(no_nan(&[d.rate_per_s, d.se, d.ci_low, d.ci_high]));
            prop_assert!(d.ci_low <= d.rate_per_s && d.rate_per_s <= d.ci_high);
        }
        if let Ok(r) = RateEstimate::from_count(n % 100_000, w, 0.95)
            && let Ok(x) = littles_law(l, &r, m, sd, n) {
                prop_assert!(no_nan(&[x.expected_in_flight, x.expected_low, x.expected_high, x.observed, x.relative_mismatch]));
            }
    }

    #[test]
    fn token_rates(s in series(), a in num(), b in num(), c in conf()) {
        if let Ok(r) = token_rate_with_confidence(&s, a, b, c) {
            prop_assert!(no_nan(&[r.tok_per_s, r.tokens, r.window_s, r.ci_low, r.ci_high]));
            prop_assert!(r.ci_low <= r.tok_per_s && r.tok_per_s <= r.ci_high);
        }
        if let Ok(r) = token_rate(&s, a, b) { prop_assert!(!r.tok_per_s.is_nan()); }
    }

    /// Everyday-sized series, so the Ok paths of phase detection are exercised.
    #[test]
    fn phases_on_plausible_series(v in prop::collection::vec(0.0..200.0f64, 0..400), dt in 0.0..5.0f64) {
        let s: Vec<(f64, f64)> = v.iter().enumerate().map(|(i, &x)| (i as f64 * dt, x)).collect();
        let p = detect_phases(&s);
        if s.is_empty() { prop_assert_eq!(p, Err(StatsError::Empty)); } else {
            let p = p.unwrap();
            prop_assert!(p.steady.0 <= p.steady.1 && !p.steady_mean.is_nan());
        }
    }
}
