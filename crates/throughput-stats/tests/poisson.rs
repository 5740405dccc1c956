//! Rates over event counts: exact intervals, coverage, adequacy, the lifetime-average artifact.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use throughput_stats::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Exponential inter-arrival by inverse CDF: −ln(1 − U)/λ.
fn poisson_times(rng: &mut StdRng, rate: f64, t_end: f64) -> Vec<f64> {
    let mut t = 0.0;
    let mut out = Vec::new();
    loop {
        let u: f64 = rng.random();
        t += -(1.0 - u).ln() / rate;
        if t >= t_end {
            return out;
        }
        out.push(t);
    }
}

#[test]
fn six_events_in_sixty_seconds() {
    // Garwood 95% for k = 6: chi2(0.025; 12)/2 = 2.2019, chi2(0.975; 14)/2 = 13.0594.
    let (lo, hi) = garwood_interval(6.0, 0.95).unwrap();
    assert!(close(lo, 2.2019, 1e-3), "{lo}");
    assert!(close(hi, 13.0594, 1e-3), "{hi}");
    let times: Vec<f64> = (0..6).map(|i| 5.0 + 10.0 * i as f64).collect();
    let r = window_rate(&times, 0.0, 60.0).unwrap();
    assert_eq!(r.count, 6);
    assert!(close(r.rate_per_s, 0.1, 1e-12));
    assert!(close(r.ci_low, 0.0367, 1e-4), "{}", r.ci_low);
    assert!(close(r.ci_high, 0.2177, 1e-4), "{}", r.ci_high);
    assert_eq!(r.confidence, 0.95);
    assert_eq!(
        r.to_string(),
        "0.1/s (6 events in 60 s; 95% interval 0.037–0.22/s)"
    );

    let a = adequacy(0.1, 60.0, 0.95).unwrap();
    assert!(close(a.expected_count, 6.0, 1e-12));
    assert!(close(a.ci_low, 0.0367, 1e-4) && close(a.ci_high, 0.2177, 1e-4));
    assert_eq!(a.verdict, Verdict::TooShort);
    // Exact: ~423 events for ±10% at 95% (normal approximation: 384).
    assert!(
        close(a.window_needed_for_10pct_s, 4229.4, 1.0),
        "{}",
        a.window_needed_for_10pct_s
    );
    let normal = window_needed_normal(0.1, 0.1, 0.95).unwrap();
    assert!(close(normal, 3841.5, 0.5), "{normal}");
    let text = a.to_string();
    println!("{text}");
    assert_eq!(
        text,
        "60 s at 0.1 req/s holds ~6 completions; 95% interval 0.037-0.22 req/s; about 70 minutes are needed for ±10%"
    );
    let long = adequacy(0.1, 4300.0, 0.95).unwrap();
    assert_eq!(long.verdict, Verdict::Adequate);
}

#[test]
fn zero_events_and_large_counts() {
    let (lo, hi) = garwood_interval(0.0, 0.95).unwrap();
    assert_eq!(lo, 0.0);
    assert!(close(hi, 3.6889, 1e-3), "{hi}"); // -ln(0.025)
    // Above 1e6 the Wilson–Hilferty branch must agree with the normal limit k ± z√k.
    let k = 4.0e6;
    let (lo, hi) = garwood_interval(k, 0.95).unwrap();
    assert!(close(lo, k - 1.96 * k.sqrt(), 5.0), "{lo}");
    assert!(close(hi, k + 1.96 * k.sqrt(), 5.0), "{hi}");
    // Both branches agree at the switch.
    let (l1, h1) = garwood_interval(1.0e6, 0.95).unwrap();
    let (l2, h2) = garwood_interval(1.0e6 + 1.0, 0.95).unwrap();
    assert!(
        close(l2 - l1, 1.0, 0.05) && close(h2 - h1, 1.0, 0.05),
        "{l1} {l2} {h1} {h2}"
    );
}

#[test]
fn garwood_coverage_is_95_percent() {
    let mut rng = StdRng::seed_from_u64(20260210);
    let true_rate = 0.5; // req/s
    let window = 600.0; // s: expected 300 events
    let trials = 1000;
    let mut covered = 0;
    for _ in 0..trials {
        let times = poisson_times(&mut rng, true_rate, window);
        let r = window_rate(&times, 0.0, window).unwrap();
        if r.ci_low <= true_rate && true_rate <= r.ci_high {
            covered += 1;
        }
    }
    let coverage = covered as f64 / trials as f64;
    println!(
        "Garwood 95% coverage, rate 0.5/s over 600 s (mean 300 events), 1000 trials: {coverage:.3}"
    );
    assert!((0.93..=0.97).contains(&coverage), "{coverage}");

    // Small counts (mean 6): Garwood is conservative, never below nominal by more than noise.
    let mut covered = 0;
    for _ in 0..trials {
        let times = poisson_times(&mut rng, 0.1, 60.0);
        let r = window_rate(&times, 0.0, 60.0).unwrap();
        if r.ci_low <= 0.1 && 0.1 <= r.ci_high {
            covered += 1;
        }
    }
    let small = covered as f64 / trials as f64;
    println!("Garwood 95% coverage, rate 0.1/s over 60 s (mean 6 events), 1000 trials: {small:.3}");
    assert!((0.93..=0.995).contains(&small), "{small}");
}

/// 150 slots, each request ~4,000 output tokens (uniform 3,000–5,000) decoded at 850/150 tok/s
/// per slot, all 150 submitted at t = 0, a replacement submitted as each slot frees.
fn simulate_150_at_once(rng: &mut StdRng, t_end: f64) -> (Vec<f64>, Vec<(f64, f64)>, f64) {
    let per_slot = 850.0 / 150.0; // tok/s
    let mut completions = Vec::new();
    let mut tokens = Vec::new();
    for _slot in 0..150 {
        let mut t = 0.0;
        loop {
            let size = 3000.0 + 2000.0 * rng.random::<f64>();
            t += size / per_slot;
            if t >= t_end {
                break;
            }
            completions.push(t);
            tokens.push((t, size));
        }
    }
    completions.sort_by(f64::total_cmp);
    tokens.sort_by(|a, b| a.0.total_cmp(&b.0));
    let true_rate = 150.0 / (4000.0 / per_slot); // 0.2125 req/s
    (completions, tokens, true_rate)
}

#[test]
fn lifetime_average_vs_steady_window_150_at_once() {
    let mut rng = StdRng::seed_from_u64(150);
    let t_end = 4.0 * 3600.0;
    let (done, tokens, true_rate) = simulate_150_at_once(&mut rng, t_end);
    assert!(close(true_rate, 0.2125, 1e-9));

    // What the client printed after 20 minutes: completed / elapsed.
    let at_20min = done.iter().filter(|&&t| t < 1200.0).count() as u64;
    let life = lifetime_rate(at_20min, 0.0, 1200.0).unwrap();
    println!("lifetime average after 20 min: {life}  (true steady rate {true_rate} req/s)");
    assert!(life.rate_per_s < 0.7 * true_rate, "{}", life.rate_per_s);
    // Its counting interval is narrow and still misses the truth: the bias is the window, not noise.
    assert!(life.ci_high < true_rate);

    // Completions per minute -> MSER-5 finds where the completion rate settles.
    let per_min = bucket_counts(&done, 0.0, 60.0).unwrap();
    let series: Vec<(f64, f64)> = per_min
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 * 60.0, c as f64))
        .collect();
    let phases = detect_phases(&series).unwrap();
    println!("phases of completions/min: {phases:?}");
    // Nothing can finish before 3,000 tokens / 5.67 tok/s = 529 s: that dead time must be cut.
    assert!(
        phases.ramp_end_s >= 529.0 && phases.ramp_end_s <= 7200.0,
        "{}",
        phases.ramp_end_s
    );
    assert_eq!(phases.drain_start_s, None);
    let steady = window_rate(&done, phases.steady.0, t_end).unwrap();
    println!("windowed rate over the steady span: {steady}");
    assert!(
        (steady.rate_per_s / true_rate - 1.0).abs() < 0.05,
        "{}",
        steady.rate_per_s
    );
    assert!(steady.ci_low <= true_rate && true_rate <= steady.ci_high);

    // Token rate over the steady span: ~850 tok/s generated.
    let tr = token_rate(&tokens, phases.steady.0, t_end).unwrap();
    println!(
        "token rate over the steady span: {:.1} tok/s [{:.1}, {:.1}]",
        tr.tok_per_s, tr.ci_low, tr.ci_high
    );
    assert!(
        (tr.tok_per_s / 850.0 - 1.0).abs() < 0.05,
        "{}",
        tr.tok_per_s
    );
    assert!(tr.ci_low < 850.0 && 850.0 < tr.ci_high);
}

#[test]
fn windows_buckets_and_sliding() {
    let times = [0.5, 1.5, 1.7, 2.0, 9.99, -3.0];
    let b = bucket_counts(&times, 0.0, 1.0).unwrap();
    assert_eq!(b.counts, vec![1, 2, 1, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(b.before_t0, 1);
    let rates = b.rates(0.95).unwrap();
    assert_eq!(rates.len(), 10);
    assert!(close(rates[1].rate_per_s, 2.0, 1e-12));

    let s = sliding_window_rates(&times, 0.0, 10.0, 2.0, 1.0, 0.95).unwrap();
    assert_eq!(s.len(), 9);
    assert_eq!(s[0].0, 2.0);
    assert_eq!(s[0].1.count, 3); // 0.5, 1.5, 1.7 in [0, 2)
    assert_eq!(s[1].1.count, 3); // 1.5, 1.7, 2.0 in [1, 3)
    assert_eq!(s[8].1.count, 1); // 9.99 in [8, 10)

    // Half-open windows: an event at t_to is not counted, one at t_from is.
    assert_eq!(window_rate(&[0.0, 10.0], 0.0, 10.0).unwrap().count, 1);
    assert!(matches!(
        window_rate(&[f64::NAN], 0.0, 1.0),
        Err(StatsError::NonFinite { index: 0 })
    ));
    assert!(matches!(
        window_rate(&[], 1.0, 1.0),
        Err(StatsError::InvalidArgument(_))
    ));
}

#[test]
fn eta_from_rate() {
    let r = RateEstimate::from_count(6, 60.0, 0.95).unwrap();
    let e = eta(30.0, &r).unwrap();
    assert!(close(e.seconds, 300.0, 1e-9));
    assert!(close(e.low_s, 30.0 / 0.21766, 0.5), "{}", e.low_s);
    assert!(close(e.high_s, 30.0 / 0.036698, 1.0), "{}", e.high_s);
    assert_eq!(e.to_string(), "about 5 minutes (2 minutes to 14 minutes)");
    let none = RateEstimate::from_count(0, 60.0, 0.95).unwrap();
    let e = eta(30.0, &none).unwrap();
    assert!(e.seconds.is_infinite() && e.high_s.is_infinite() && e.low_s.is_finite());
    assert_eq!(eta(0.0, &none).unwrap().seconds, 0.0);
}

#[test]
fn window_needed_exact_vs_normal() {
    // ±10% at 95% needs ~423 expected events exactly, 384.1 by the normal approximation.
    let exact = window_needed(1.0, 0.1, 0.95).unwrap();
    println!(
        "events needed for ±10% at 95%: exact {exact:.1}, normal {:.1}",
        window_needed_normal(1.0, 0.1, 0.95).unwrap()
    );
    assert!(close(exact, 422.94, 0.05), "{exact}");
    let (lo, hi) = garwood_interval(exact, 0.95).unwrap();
    assert!(hi - exact <= 0.1 * exact + 1e-6 && exact - lo <= 0.1 * exact);
    assert!(window_needed(0.0, 0.1, 0.95).is_err());
    assert!(window_needed(1.0, 0.0, 0.95).is_err());
    assert!(window_needed(1.0, 0.1, 1.0).is_err());
}
