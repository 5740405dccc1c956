//! Why "completed ÷ time since start" misleads, and what to print instead.
//!
//! Run: `cargo run -p throughput-stats --example rates`
//!
//! A deterministic toy run: 150 requests start together, each takes 529–882 s (3,000–5,000
//! tokens at 850/150 tok/s per slot), and each finished slot is refilled at once.

use throughput_stats::{
    adequacy, bucket_counts, detect_phases, eta, lifetime_rate, window_needed, window_rate,
};

fn main() -> Result<(), throughput_stats::StatsError> {
    // Completion times of the toy run (a low-discrepancy sequence instead of a random generator).
    let per_slot = 850.0 / 150.0;
    let t_end = 4.0 * 3600.0;
    let mut done = Vec::new();
    for slot in 0..150u32 {
        let mut t = 0.0;
        let mut i = slot;
        loop {
            i = i.wrapping_add(97);
            let u = (f64::from(i) * 0.618_033_988_75).fract();
            t += (3000.0 + 2000.0 * u) / per_slot;
            if t >= t_end {
                break;
            }
            done.push(t);
        }
    }

    let at_20min = done.iter().filter(|&&t| t < 1200.0).count() as u64;
    println!(
        "lifetime average after 20 min: {}",
        lifetime_rate(at_20min, 0.0, 1200.0)?
    );

    let per_min = bucket_counts(&done, 0.0, 60.0)?;
    let series: Vec<(f64, f64)> = per_min
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 * 60.0, c as f64))
        .collect();
    let phases = detect_phases(&series)?;
    println!(
        "completions/min settle at {:.0} s ({:?})",
        phases.ramp_end_s, phases.method
    );
    let steady = window_rate(&done, phases.steady.0, t_end)?;
    println!("rate over the steady span:     {steady}");

    println!("{}", adequacy(0.1, 60.0, 0.95)?);
    println!(
        "±5% at {:.3} req/s needs {:.0} minutes",
        steady.rate_per_s,
        window_needed(steady.rate_per_s, 0.05, 0.95)? / 60.0
    );
    println!("1,000 more requests: {}", eta(1000.0, &steady)?);
    Ok(())
}
