//! Token rates (compound Poisson) and request rates derived from token rates.

use crate::{StatsError, check, garwood_interval};

/// Tokens completed per second over a window, with an interval that accounts for tokens
/// arriving in lumps (one lump per finished request).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenRate {
    /// Tokens per second over the window.
    pub tok_per_s: f64,
    /// Tokens counted in the window.
    pub tokens: f64,
    /// Number of completions (lumps) in the window.
    pub requests: u64,
    /// Window length, seconds.
    pub window_s: f64,
    /// Lower bound, tok/s.
    pub ci_low: f64,
    /// Upper bound, tok/s; `+∞` when no request completed (the size of a lump is then unknown).
    pub ci_high: f64,
    /// Two-sided confidence level.
    pub confidence: f64,
}

/// Token rate over `[from, to)` at 95%; see [`token_rate_with_confidence`].
pub fn token_rate(samples: &[(f64, f64)], from: f64, to: f64) -> Result<TokenRate, StatsError> {
    token_rate_with_confidence(samples, from, to, crate::DEFAULT_CONFIDENCE)
}

/// Token rate over `[from, to)` from `(t_seconds, tokens)` samples, one per completed request
/// (e.g. `usage.completion_tokens` at the time the response finished). Samples may be in any order.
///
/// Model: completions are Poisson with rate λ, each carrying `X` tokens, so the token total is
/// compound Poisson with `Var = λT·E[X²]`, i.e. relative variance `(1 + cv²)/n`. The interval
/// combines, in quadrature on the relative scale, the exact Garwood interval for the request count
/// `n` (`L/n`, `U/n`) and the size spread `z·cv/√n` (cv = sample sd / mean of the sizes):
/// `low = rate·(1 − √((1 − L/n)² + (z·cv)²/n))`, `high = rate·(1 + √((U/n − 1)² + (z·cv)²/n))`.
/// With equal sizes this is exactly Garwood; for large `n` it tends to the normal compound-Poisson
/// interval `rate·(1 ± z√((1+cv²)/n))`. With `n = 0` the rate is 0 and `ci_high` is `+∞`.
///
/// Errors: [`StatsError::NonFinite`] (index); [`StatsError::InvalidArgument`] for negative token
/// counts, a bad window or confidence, or overflow.
pub fn token_rate_with_confidence(
    samples: &[(f64, f64)],
    from: f64,
    to: f64,
    confidence: f64,
) -> Result<TokenRate, StatsError> {
    for (index, &(t, x)) in samples.iter().enumerate() {
        if !t.is_finite() || !x.is_finite() {
            return Err(StatsError::NonFinite { index });
        }
        if x < 0.0 {
            return Err(StatsError::InvalidArgument("token counts must be >= 0"));
        }
    }
    let w = check::window(from, to)?;
    let z = check::z_value(confidence)?;
    let sizes: Vec<f64> = samples
        .iter()
        .filter(|s| s.0 >= from && s.0 < to)
        .map(|s| s.1)
        .collect();
    let n = sizes.len();
    let scale = sizes.iter().fold(0.0f64, |m, &x| m.max(x));
    let mean_scaled = sizes
        .iter()
        .map(|x| x / scale.max(f64::MIN_POSITIVE))
        .sum::<f64>()
        / n.max(1) as f64;
    let tokens = check::finite(mean_scaled * n as f64 * scale, "token total overflows f64")?;
    let rate = check::finite(tokens / w, "rate overflows f64")?;
    if n == 0 {
        return Ok(TokenRate {
            tok_per_s: 0.0,
            tokens: 0.0,
            requests: 0,
            window_s: w,
            ci_low: 0.0,
            ci_high: f64::INFINITY,
            confidence,
        });
    }
    let cv = if n >= 2 && mean_scaled > 0.0 {
        let var = sizes
            .iter()
            .map(|x| (x / scale - mean_scaled).powi(2))
            .sum::<f64>()
            / (n - 1) as f64;
        var.sqrt() / mean_scaled
    } else {
        0.0
    };
    let (lo, hi) = garwood_interval(n as f64, confidence)?;
    let nf = n as f64;
    let spread = (z * cv).powi(2) / nf;
    let rel_low = 1.0 - ((1.0 - lo / nf).powi(2) + spread).sqrt();
    let rel_high = 1.0 + ((hi / nf - 1.0).powi(2) + spread).sqrt();
    Ok(TokenRate {
        tok_per_s: rate,
        tokens,
        requests: n as u64,
        window_s: w,
        ci_low: (rate * rel_low).max(0.0),
        ci_high: check::finite(rate * rel_high, "rate overflows f64")?,
        confidence,
    })
}

/// A rate derived from other estimates, with a delta-method interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DerivedRate {
    /// Point estimate, per second (requests/s for [`request_rate_from_tokens`]).
    pub rate_per_s: f64,
    /// Standard error by the delta method, per second.
    pub se: f64,
    /// `max(0, rate − z·se)`, per second.
    pub ci_low: f64,
    /// `rate + z·se`, per second.
    pub ci_high: f64,
    /// Two-sided confidence level.
    pub confidence: f64,
}

/// Request rate implied by a token rate: `r = T / m`, where `T` is tokens/s and `m` the mean
/// tokens per request, with an interval by the **delta method** for a ratio.
///
/// Formula: `Var(r) ≈ (se_T / m)² + (r · se_m / m)²`, with `se_T = (tok_ci.1 − tok_ci.0) / (2z)`
/// (the token interval is read as symmetric, at the same `confidence`), `se_m = sd / √n_reqs`,
/// and `T`, `m` treated as independent (the covariance term is dropped — true when the token rate
/// comes from the server's gauge and the sizes from a separate sample of responses). The interval
/// is `r ± z·√Var(r)`, clipped at 0.
///
/// Units: `tok_per_s` and `tok_ci` in tok/s; `mean_tokens_per_req` and `sd_tokens_per_req` in
/// tokens; result in requests/s.
///
/// Errors: [`StatsError::InvalidArgument`] for a non-finite or negative input,
/// `tok_ci.0 > tok_ci.1`, `mean_tokens_per_req <= 0`, `n_reqs == 0`, a bad confidence or overflow.
pub fn request_rate_from_tokens(
    tok_per_s: f64,
    tok_ci: (f64, f64),
    mean_tokens_per_req: f64,
    sd_tokens_per_req: f64,
    n_reqs: u64,
    confidence: f64,
) -> Result<DerivedRate, StatsError> {
    let t = check::non_negative(tok_per_s, "tok_per_s must be finite and >= 0")?;
    let lo = check::non_negative(tok_ci.0, "tok_ci must be finite and >= 0")?;
    let hi = check::non_negative(tok_ci.1, "tok_ci must be finite and >= 0")?;
    if lo > hi {
        return Err(StatsError::InvalidArgument("tok_ci.0 must be <= tok_ci.1"));
    }
    let m = check::non_negative(mean_tokens_per_req, "mean_tokens_per_req must be finite")?;
    if m <= 0.0 {
        return Err(StatsError::InvalidArgument(
            "mean_tokens_per_req must be > 0",
        ));
    }
    let sd = check::non_negative(
        sd_tokens_per_req,
        "sd_tokens_per_req must be finite and >= 0",
    )?;
    if n_reqs == 0 {
        return Err(StatsError::InvalidArgument("n_reqs must be >= 1"));
    }
    let z = check::z_value(confidence)?;
    let r = check::finite(t / m, "rate overflows f64")?;
    let se_t = (hi - lo) / (2.0 * z);
    let se_m = sd / (n_reqs as f64).sqrt();
    let a = se_t / m;
    let b = r * (se_m / m);
    let se = check::finite(a.hypot(b), "standard error overflows f64")?;
    Ok(DerivedRate {
        rate_per_s: r,
        se,
        ci_low: (r - z * se).max(0.0),
        ci_high: check::finite(r + z * se, "interval overflows f64")?,
        confidence,
    })
}
