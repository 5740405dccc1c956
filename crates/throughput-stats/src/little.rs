//! Little's law consistency check.

use crate::{RateEstimate, StatsError, check};

/// Result of comparing the observed number in flight with `λ·W` (Little's law, `L = λW`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LittleCheck {
    /// `λ·W`: completion rate (req/s) × mean latency (s), in requests.
    pub expected_in_flight: f64,
    /// Lower end of the interval on `λ·W`, requests.
    pub expected_low: f64,
    /// Upper end of the interval on `λ·W`, requests.
    pub expected_high: f64,
    /// The observed time-weighted mean in flight, requests.
    pub observed: f64,
    /// `(observed − expected) / expected`: +0.5 means 50% more in flight than the rate and
    /// latency explain (requests stuck, or a latency that misses the queueing time).
    pub relative_mismatch: f64,
    /// True when `observed` lies outside `[expected_low, expected_high]`.
    pub significant: bool,
}

/// Checks Little's law `L = λW` over one steady window.
///
/// Inputs: `mean_in_flight` = time-weighted mean of requests in the system (requests; e.g. the
/// sum of running and queued requests from the server log, or the client's own count);
/// `completion_rate` = completions in the same window ([`crate::window_rate`]); `mean_latency_s` =
/// mean end-to-end latency of requests that completed in it (s), with its sample standard
/// deviation `latency_sd_s` (s) over `n_latencies` requests.
///
/// Interval on `λW` by the delta method: `se² = (W·se_λ)² + (λ·se_W)²` with
/// `se_λ = (ci_high − ci_low)/(2z)` from the rate's Garwood interval and `se_W = sd/√n`; bounds
/// `λW ± z·se` at the rate's confidence. The observed mean in flight is taken as exact (it is a
/// time average over many samples); the law holds only for a window in steady state — use the
/// steady span from [`crate::detect_phases`].
///
/// Errors: [`StatsError::InvalidArgument`] for negative or non-finite inputs, `n_latencies == 0`,
/// or an expected value of 0 (no completions or zero latency: the law cannot be checked).
pub fn littles_law(
    mean_in_flight: f64,
    completion_rate: &RateEstimate,
    mean_latency_s: f64,
    latency_sd_s: f64,
    n_latencies: u64,
) -> Result<LittleCheck, StatsError> {
    let l = check::non_negative(mean_in_flight, "mean_in_flight must be finite and >= 0")?;
    let lambda = check::non_negative(completion_rate.rate_per_s, "rate must be finite and >= 0")?;
    let lo = check::non_negative(completion_rate.ci_low, "ci_low must be finite and >= 0")?;
    let hi = check::non_negative(completion_rate.ci_high, "ci_high must be finite and >= 0")?;
    if lo > hi {
        return Err(StatsError::InvalidArgument("ci_low must be <= ci_high"));
    }
    let w = check::non_negative(mean_latency_s, "mean_latency_s must be finite and >= 0")?;
    let sd = check::non_negative(latency_sd_s, "latency_sd_s must be finite and >= 0")?;
    if n_latencies == 0 {
        return Err(StatsError::InvalidArgument("n_latencies must be >= 1"));
    }
    let z = check::z_value(completion_rate.confidence)?;
    let expected = check::finite(lambda * w, "lambda * W overflows f64")?;
    if expected <= 0.0 {
        return Err(StatsError::InvalidArgument(
            "expected in-flight is 0 (no completions or zero latency): Little's law cannot be checked",
        ));
    }
    let se_lambda = (hi - lo) / (2.0 * z);
    let se_w = sd / (n_latencies as f64).sqrt();
    let se = check::finite(
        (w * se_lambda).hypot(lambda * se_w),
        "standard error overflows f64",
    )?;
    let low = (expected - z * se).max(0.0);
    let high = check::finite(expected + z * se, "interval overflows f64")?;
    let mismatch = check::finite((l - expected) / expected, "mismatch overflows f64")?;
    Ok(LittleCheck {
        expected_in_flight: expected,
        expected_low: low,
        expected_high: high,
        observed: l,
        relative_mismatch: mismatch,
        significant: l < low || l > high,
    })
}
