//! Gauges, EWMA, counters, token rates, derived rates and Little's law.

use throughput_stats::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn time_weighted_summary_weights_by_hold_time() {
    // 10 for 90 s, 100 for 10 s, last sample (t = 100) closes the span with weight 0.
    let s = [(0.0, 10.0), (90.0, 100.0), (100.0, 1000.0)];
    let g = time_weighted_summary(&s).unwrap();
    assert_eq!(g.n, 3);
    assert_eq!(g.span_s, 100.0);
    assert!(close(g.mean, 19.0, 1e-12), "{}", g.mean);
    assert_eq!((g.min, g.max, g.last), (10.0, 1000.0, 1000.0));
    assert_eq!(g.median, 10.0);
    assert_eq!(g.p90, 10.0); // exactly 90% of the time at 10
    assert_eq!(quantile(&s, 0.95).unwrap(), 100.0);
    assert_eq!(quantile(&s, 1.0).unwrap(), 100.0);
    assert_eq!(quantile(&s, 0.0).unwrap(), 10.0);
    assert!(close(g.sd, 27.0, 1e-9), "{}", g.sd); // sqrt(0.9*81 + 0.1*6561)
    // One sample: equal weights.
    let one = time_weighted_summary(&[(5.0, 3.0)]).unwrap();
    assert_eq!((one.mean, one.median, one.span_s), (3.0, 3.0, 0.0));
    let gs = GaugeSeries::new(s.to_vec()).unwrap();
    assert_eq!(gs.summary().unwrap(), g);
    assert!(close(
        gs.mean_between(0.0, 95.0, Hold::Forward).unwrap(),
        (90.0 * 10.0 + 5.0 * 100.0) / 95.0,
        1e-12
    ));
    // Backward hold: 100 covers (0, 90], 1000 covers (90, 100].
    assert!(close(
        gs.mean_between(0.0, 100.0, Hold::Backward).unwrap(),
        190.0,
        1e-12
    ));
    assert_eq!(time_weighted_summary(&[]), Err(StatsError::Empty));
    assert_eq!(
        time_weighted_summary(&[(1.0, 1.0), (0.5, 1.0)]),
        Err(StatsError::NonMonotonic { index: 1 })
    );
    assert_eq!(
        time_weighted_summary(&[(1.0, 1.0), (2.0, f64::INFINITY)]),
        Err(StatsError::NonFinite { index: 1 })
    );
}

#[test]
fn batch_means_interval_on_constant_and_alternating_gauges() {
    let flat: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, 850.0)).collect();
    let b = gen_throughput_mean(&flat, 0.0, 100.0).unwrap();
    assert_eq!(b.batch_means.len(), 10);
    assert!(
        close(b.mean, 850.0, 1e-9) && close(b.ci_low, 850.0, 1e-9) && close(b.ci_high, 850.0, 1e-9)
    );
    // Alternating 800/900 every 10 s: each 20 s batch averages 850 exactly.
    let alt: Vec<(f64, f64)> = (0..=20)
        .map(|i| (i as f64 * 10.0, if i % 2 == 0 { 800.0 } else { 900.0 }))
        .collect();
    let b = batch_means(&alt, 0.0, 200.0, 10, Hold::Forward, 0.95).unwrap();
    assert!(close(b.mean, 850.0, 1e-9));
    assert!(b.ci_high - b.ci_low < 1e-6);
    assert_eq!(b.batch_s, 20.0);
    // Window clipped to the observed span.
    let b = batch_means(&alt, -50.0, 1000.0, 4, Hold::Forward, 0.95).unwrap();
    assert_eq!((b.from_s, b.to_s), (0.0, 200.0));
    assert!(batch_means(&alt, 300.0, 400.0, 4, Hold::Forward, 0.95).is_err());
}

/// `(seconds since the first Decode line, gen throughput tok/s)` from the b2 log, plain string search.
fn gen_throughput(log: &str) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut t0 = None;
    for line in log.lines().filter(|l| l.contains("Decode batch")) {
        let Some(clock) = line.get(12..20) else {
            continue;
        };
        let hms: Vec<f64> = clock.split(':').filter_map(|x| x.parse().ok()).collect();
        let key = "gen throughput (token/s): ";
        let Some(pos) = line.find(key) else { continue };
        let num: String = line[pos + key.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let (Ok(v), 3) = (num.parse::<f64>(), hms.len()) else {
            continue;
        };
        let t = hms[0] * 3600.0 + hms[1] * 60.0 + hms[2];
        let base = *t0.get_or_insert(t);
        out.push((t - base, v));
    }
    out
}

#[test]
fn kimi_k25_b2_gen_throughput_over_steady_span() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/scenarios/kimi-k25-b2/server.log"
    );
    let log = std::fs::read_to_string(path).unwrap();
    let g = gen_throughput(&log);
    assert_eq!(g.len(), 3189);
    // Steady span after the first five minutes (the token-usage ramp): 300 s .. 7198 s.
    let b = gen_throughput_mean(&g, 300.0, 7198.0).unwrap();
    println!(
        "kimi-k25-b2 gen throughput over steady span: {:.1} tok/s, 95% batch-means interval [{:.1}, {:.1}], lag-1 r = {:?}",
        b.mean, b.ci_low, b.ci_high, b.lag1_autocorrelation
    );
    assert!(close(b.mean, 727.1, 0.1), "{}", b.mean);
    assert!(
        close(b.ci_low, 710.3, 0.1) && close(b.ci_high, 744.0, 0.1),
        "{b:?}"
    );
    assert!(b.ci_low < b.mean && b.mean < b.ci_high);
    // The lifetime figure the operator compared against, all lines, same method.
    let all = gen_throughput_mean(&g, 0.0, 7198.0).unwrap();
    assert!(all.mean > b.mean); // the first minutes ran above the steady rate (short contexts)
}

#[test]
fn ewma_irregular_sampling() {
    let mut e = Ewma::new(10.0).unwrap();
    assert_eq!(e.value(), None);
    assert_eq!(e.update(0.0, 0.0).unwrap(), 0.0);
    // After one half-life the old value keeps weight 1/2.
    assert!(close(e.update(10.0, 100.0).unwrap(), 50.0, 1e-12));
    // Zero elapsed time: the new sample gets no weight.
    assert!(close(e.update(10.0, 1000.0).unwrap(), 50.0, 1e-12));
    // Two half-lives at once: weight 1/4.
    assert!(close(e.update(30.0, 50.0).unwrap(), 50.0, 1e-12));
    assert_eq!(
        e.update(29.0, 1.0),
        Err(StatsError::NonMonotonic { index: 4 })
    );
    assert_eq!(
        e.update(31.0, f64::NAN),
        Err(StatsError::NonFinite { index: 4 })
    );
    assert_eq!(e.value(), Some(50.0));
    assert!(Ewma::new(0.0).is_err());
    let s = ewma_series(&[(0.0, 0.0), (5.0, 8.0)], 5.0).unwrap();
    assert!(close(s[1].1, 4.0, 1e-12));
}

#[test]
fn counters_with_resets() {
    // 0 -> 100 -> 250, restart, 30 -> 80: increase 250 + 80 = 330 over 40 s.
    let c = CounterSeries::from_samples(&[
        (0.0, 0.0),
        (10.0, 100.0),
        (20.0, 250.0),
        (30.0, 30.0),
        (40.0, 80.0),
    ])
    .unwrap();
    assert_eq!(c.resets(), 1);
    assert_eq!(c.increase(), 330.0);
    assert_eq!(c.span_s(), 40.0);
    assert!(close(c.rate().unwrap(), 8.25, 1e-12));
    let r = c.rate_estimate(0.95).unwrap();
    assert_eq!(r.count, 330);
    assert!(r.ci_low < 8.25 && 8.25 < r.ci_high);
    assert!(
        CounterSeries::from_samples(&[(0.0, 5.0)])
            .unwrap()
            .rate()
            .is_err()
    );
    assert!(CounterSeries::from_samples(&[(0.0, -1.0)]).is_err());
}

#[test]
fn token_rate_compound_poisson() {
    // Equal sizes: exactly Garwood on the request count, scaled by the size.
    let s: Vec<(f64, f64)> = (0..6).map(|i| (5.0 + 10.0 * i as f64, 4000.0)).collect();
    let r = token_rate(&s, 0.0, 60.0).unwrap();
    assert_eq!((r.requests, r.tokens), (6, 24000.0));
    assert!(close(r.tok_per_s, 400.0, 1e-9));
    assert!(close(r.ci_low, 4000.0 * 0.036698, 0.5), "{}", r.ci_low);
    assert!(close(r.ci_high, 4000.0 * 0.217657, 0.5), "{}", r.ci_high);
    // Unequal sizes widen it.
    let mixed = [
        (1.0, 1000.0),
        (2.0, 7000.0),
        (3.0, 4000.0),
        (4.0, 4000.0),
        (5.0, 2000.0),
        (6.0, 6000.0),
    ];
    let m = token_rate(&mixed, 0.0, 60.0).unwrap();
    assert!(close(m.tok_per_s, 400.0, 1e-9));
    assert!(m.ci_low < r.ci_low && m.ci_high > r.ci_high);
    let none = token_rate(&[], 0.0, 60.0).unwrap();
    assert_eq!((none.tok_per_s, none.ci_low), (0.0, 0.0));
    assert!(none.ci_high.is_infinite());
    assert!(token_rate(&[(0.0, -5.0)], 0.0, 1.0).is_err());
}

#[test]
fn request_rate_from_token_rate_delta_method() {
    // 850 tok/s ± 17 (95%), 4,000 ± 1,000 tokens/request over 400 requests.
    let d = request_rate_from_tokens(850.0, (833.0, 867.0), 4000.0, 1000.0, 400, 0.95).unwrap();
    assert!(close(d.rate_per_s, 0.2125, 1e-12));
    // se = sqrt((8.674/4000)^2 + (0.2125 * 50/4000)^2)
    let se_t: f64 = 17.0 / 1.959964;
    let expect = ((se_t / 4000.0).powi(2) + (0.2125f64 * 50.0 / 4000.0).powi(2)).sqrt();
    assert!(close(d.se, expect, 1e-9), "{} vs {expect}", d.se);
    assert!(close(d.ci_low, 0.2125 - 1.959964 * expect, 1e-6));
    assert!(close(d.ci_high, 0.2125 + 1.959964 * expect, 1e-6));
    assert!(request_rate_from_tokens(850.0, (900.0, 800.0), 4000.0, 0.0, 1, 0.95).is_err());
    assert!(request_rate_from_tokens(850.0, (800.0, 900.0), 0.0, 0.0, 1, 0.95).is_err());
    assert!(request_rate_from_tokens(850.0, (800.0, 900.0), 10.0, 0.0, 0, 0.95).is_err());
}

#[test]
fn littles_law_consistency() {
    // 0.2125 req/s measured from 2,000 completions; 706 s mean latency -> 150 in flight.
    let rate = RateEstimate::from_count(2000, 2000.0 / 0.2125, 0.95).unwrap();
    let ok = littles_law(150.0, &rate, 705.9, 120.0, 2000).unwrap();
    assert!(
        close(ok.expected_in_flight, 150.0, 0.1),
        "{}",
        ok.expected_in_flight
    );
    assert!(!ok.significant, "{ok:?}");
    assert!(ok.expected_low < 150.0 && ok.expected_high > 150.0);
    // 40 in flight but λW says 150: requests are not where the latency says they are.
    let bad = littles_law(40.0, &rate, 705.9, 120.0, 2000).unwrap();
    assert!(bad.significant);
    assert!(close(bad.relative_mismatch, 40.0 / 150.0 - 1.0, 0.01));
    let none = RateEstimate::from_count(0, 60.0, 0.95).unwrap();
    assert!(littles_law(40.0, &none, 10.0, 1.0, 1).is_err());
}
