//! Phase detection (MSER-5) on simulated series and on a real SGLang server log.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use throughput_stats::*;

/// Approximately normal noise: sum of 12 uniforms − 6 (sd 1).
fn noise(rng: &mut StdRng) -> f64 {
    (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0
}

/// Running requests: linear ramp 0 → 150 over `ramp_s`, plateau at 150, sampled every 2 s,
/// noise sd 4 requests; optional linear drain to 0 starting at `drain_at`.
fn ramp_plateau(seed: u64, ramp_s: f64, end_s: f64, drain_at: Option<f64>) -> Vec<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut t = 0.0;
    while t <= end_s {
        let mut level = if t < ramp_s {
            150.0 * t / ramp_s
        } else {
            150.0
        };
        if let Some(d) = drain_at
            && t >= d
        {
            level = 150.0 * (1.0 - (t - d) / (end_s - d));
        }
        out.push((t, (level + 3.0 * noise(&mut rng)).max(0.0)));
        t += 2.0;
    }
    out
}

#[test]
fn ramp_end_within_5_percent_on_simulated_series() {
    // 50 seeds x 4 ramp lengths, sampled every 2 s (SGLang's Decode-line cadence), noise sd 3.
    for &ramp in &[120.0, 180.0, 300.0, 600.0] {
        let mut errors = Vec::new();
        for seed in 0..50 {
            let s = ramp_plateau(seed, ramp, 3600.0, None);
            let p = detect_phases(&s).unwrap();
            errors.push((p.ramp_end_s - ramp) / ramp);
            assert_eq!(p.drain_start_s, None, "seed {seed} ramp {ramp}: {p:?}");
            assert_eq!(p.steady, (p.ramp_end_s, 3600.0));
            assert!((p.steady_mean - 150.0).abs() < 1.0);
            assert!(matches!(
                p.method,
                PhaseMethod::Mser5 {
                    at_search_limit: false,
                    ..
                }
            ));
        }
        errors.sort_by(f64::total_cmp);
        let within = errors.iter().filter(|e| e.abs() <= 0.05 + 1e-9).count();
        println!(
            "ramp {ramp} s: {within}/50 within 5%; error min {:+.1}% median {:+.1}% max {:+.1}%",
            100.0 * errors[0],
            100.0 * errors[25],
            100.0 * errors[49]
        );
        assert!(
            within >= 47,
            "ramp {ramp}: only {within}/50 within 5%: {errors:?}"
        );
        assert!(
            errors[0] >= -0.10 && errors[49] <= 0.10,
            "ramp {ramp}: {errors:?}"
        );
        assert!(errors[25].abs() <= 0.05);
    }
}

#[test]
fn drain_is_found_and_steady_tail_is_not() {
    for seed in 0..20 {
        let s = ramp_plateau(seed, 300.0, 3600.0, Some(3000.0));
        let p = detect_phases(&s).unwrap();
        let d = p
            .drain_start_s
            .unwrap_or_else(|| panic!("seed {seed}: no drain in {p:?}"));
        assert!((d - 3000.0).abs() <= 150.0, "seed {seed}: drain at {d}");
        assert!(
            (p.ramp_end_s - 300.0).abs() <= 15.0,
            "seed {seed}: ramp {}",
            p.ramp_end_s
        );
        assert_eq!(p.steady, (p.ramp_end_s, d));
    }
    // Pure noise around a level: no drain, and little or no ramp.
    for seed in 0..20 {
        let s = ramp_plateau(seed, 1e-9, 3600.0, None);
        let p = detect_phases(&s).unwrap();
        assert_eq!(p.drain_start_s, None, "seed {seed}: {p:?}");
        assert!(p.ramp_end_s <= 1800.0);
    }
}

#[test]
fn short_and_degenerate_series() {
    let p = detect_phases(&[(5.0, 1.0)]).unwrap();
    assert_eq!(p.steady, (5.0, 5.0));
    assert!(matches!(p.method, PhaseMethod::WholeSpan { .. }));
    let few: Vec<(f64, f64)> = (0..19).map(|i| (i as f64, i as f64)).collect();
    let p = detect_phases(&few).unwrap();
    assert_eq!(p.steady, (0.0, 18.0));
    assert!(matches!(p.method, PhaseMethod::WholeSpan { .. }));
    let flat: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, 7.0)).collect();
    let p = detect_phases(&flat).unwrap();
    assert_eq!(p.steady, (0.0, 99.0));
    assert_eq!(p.steady_mean, 7.0);
    assert_eq!(detect_phases(&[]), Err(StatsError::Empty));
    assert_eq!(
        detect_phases(&[(1.0, 1.0), (0.0, 1.0)]),
        Err(StatsError::NonMonotonic { index: 1 })
    );
    assert_eq!(
        detect_phases(&[(0.0, f64::NAN)]),
        Err(StatsError::NonFinite { index: 0 })
    );
}

/// `(seconds since the first Decode line, #running-req)` from TP0 Decode lines, found with plain
/// string search (the log parser crate is separate; this test must not depend on it).
fn running_requests(log: &str) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut t0 = None;
    for line in log.lines() {
        if !line.contains("Decode batch") {
            continue;
        }
        // "[2026-02-10 14:00:01 TP0] Decode batch, #running-req: 41, ..."
        let Some(clock) = line.get(12..20) else {
            continue;
        };
        let hms: Vec<f64> = clock.split(':').filter_map(|x| x.parse().ok()).collect();
        if hms.len() != 3 {
            continue;
        }
        let t = hms[0] * 3600.0 + hms[1] * 60.0 + hms[2];
        let Some(pos) = line.find("#running-req: ") else {
            continue;
        };
        let rest = &line[pos + "#running-req: ".len()..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let Ok(n) = digits.parse::<f64>() else {
            continue;
        };
        let base = *t0.get_or_insert(t);
        out.push((t - base, n));
    }
    out
}

#[test]
fn kimi_k25_b2_running_requests() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/scenarios/kimi-k25-b2/server.log"
    );
    let log = std::fs::read_to_string(path).unwrap();
    let s = running_requests(&log);
    assert_eq!(s.len(), 3189); // TP0 Decode lines, 14:00:01 .. 15:59:59
    assert_eq!(s[0], (0.0, 41.0));
    assert_eq!(s[s.len() - 1], (7198.0, 41.0));
    let p = detect_phases(&s).unwrap();
    println!("kimi-k25-b2 #running-req phases: {p:?}");
    // The regenerated run admits 41 of the 150 requests at once (the reservation fills the
    // pool's budget on the first prefill) and stays near 41 for two hours: the running series
    // has no ramp to cut and no drain (the ramp of this run is in token usage, 0.09 -> 0.86,
    // which the diagnosis looks at separately).
    assert_eq!(p.ramp_end_s, 0.0);
    assert_eq!(p.steady, (0.0, 7198.0));
    assert_eq!(p.drain_start_s, None);
    assert!((p.steady_mean - 41.13).abs() < 0.01, "{}", p.steady_mean);
    assert_eq!(
        p.method,
        PhaseMethod::Mser5 {
            batches: 637,
            ramp_batches: 0,
            drain_batches: 0,
            at_search_limit: false
        }
    );
    // Time-weighted view of the steady span.
    let steady: Vec<(f64, f64)> = s.iter().copied().filter(|x| x.0 >= p.steady.0).collect();
    let sum = time_weighted_summary(&steady).unwrap();
    println!("steady #running-req: {sum:?}");
    assert_eq!(sum.n, 3189);
    assert_eq!((sum.min, sum.max, sum.last), (19.0, 76.0, 41.0));
    assert!((sum.mean - 42.53).abs() < 0.01, "{}", sum.mean);
    assert_eq!((sum.median, sum.p90), (42.0, 60.0));
}
