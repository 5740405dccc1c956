//! Mean KV tokens held by a request in flight, and the decode concurrency a pool allows.

use serde::Serialize;

use crate::CapacityError;

/// How [`InFlightLoad::mean_held_tokens`] was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadMethod {
    /// From per-request (prompt, completion) lengths: exact time average.
    Samples,
    /// From means and the completion second moment, assuming prompt and completion lengths are
    /// independent.
    MomentsIndependent,
    /// From the server log: the KV tokens the running requests held per request on the steady
    /// decode lines (`token usage × pool / #running-req`, or `#token / #running-req`). The
    /// requests' lengths are not known; the figure already holds whatever prefix sharing and
    /// length mix the run had.
    LogObserved,
}

/// KV tokens held by the requests that are decoding, time-averaged.
///
/// A request with prompt `P` and completion `C` holds `P + c` tokens at decode step `c` and
/// stays in flight for a time ∝ `C` (one token per step). Averaged over time, the requests seen
/// in flight are length-biased, and the mean tokens each holds is
///
/// `H = E[C · (P + C/2)] / E[C]`
///
/// not `E[P] + E[C]/2`. With independent `P` and `C` this is `E[P] + E[C²] / (2 E[C])`.
/// The decode concurrency a pool of `N` tokens allows is then `N / H`. Assumptions: continuous
/// steps (`C/2` instead of `(C+1)/2`), no prefix sharing between requests (radix-cache hits
/// would lower `H`), and no admission reserve (SGLang's `new_token_ratio` keeps part of the pool
/// free, so real concurrency is somewhat lower).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct InFlightLoad {
    /// Requests the figures came from (0 for moments and for the log).
    pub requests: u64,
    /// Mean prompt length, tokens (`None` when read from the log).
    pub mean_prompt_tokens: Option<f64>,
    /// Mean completion length, tokens (`None` when read from the log).
    pub mean_completion_tokens: Option<f64>,
    /// `H`, tokens per in-flight request (time average).
    pub mean_held_tokens: f64,
    /// How `H` was obtained.
    pub method: LoadMethod,
}

impl InFlightLoad {
    /// From (prompt tokens, completion tokens) per finished request:
    /// `H = Σ C·(P + C/2) / Σ C`. Requests with `C = 0` never decode and weigh nothing.
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] when the list is empty or every completion is 0.
    pub fn from_samples(samples: &[(u64, u64)]) -> Result<InFlightLoad, CapacityError> {
        if samples.is_empty() {
            return Err(CapacityError::Invalid("no requests to average".into()));
        }
        let (mut sp, mut sc, mut num) = (0.0f64, 0.0f64, 0.0f64);
        for &(p, c) in samples {
            let (p, c) = (p as f64, c as f64);
            sp += p;
            sc += c;
            num += c * (p + c / 2.0);
        }
        if sc == 0.0 {
            return Err(CapacityError::Invalid(
                "every completion has 0 tokens".into(),
            ));
        }
        let n = samples.len() as f64;
        Ok(InFlightLoad {
            requests: samples.len() as u64,
            mean_prompt_tokens: Some(sp / n),
            mean_completion_tokens: Some(sc / n),
            mean_held_tokens: num / sc,
            method: LoadMethod::Samples,
        })
    }

    /// From `E[P]`, `E[C]` and `E[C²]` (tokens, tokens²), assuming `P` and `C` independent:
    /// `H = E[P] + E[C²] / (2 E[C])`.
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] when a mean is negative or not finite, `E[C] = 0`, or
    /// `E[C²] < E[C]²` (impossible).
    pub fn from_moments(
        mean_prompt: f64,
        mean_completion: f64,
        mean_completion_sq: f64,
    ) -> Result<InFlightLoad, CapacityError> {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if !(ok(mean_prompt) && ok(mean_completion) && ok(mean_completion_sq))
            || mean_completion == 0.0
        {
            return Err(CapacityError::Invalid(format!(
                "moments must be finite, ≥ 0, E[C] > 0: {mean_prompt}, {mean_completion}, {mean_completion_sq}"
            )));
        }
        if mean_completion_sq < mean_completion * mean_completion * (1.0 - 1e-12) {
            return Err(CapacityError::Invalid(format!(
                "E[C²] = {mean_completion_sq} < E[C]² = {}",
                mean_completion * mean_completion
            )));
        }
        Ok(InFlightLoad {
            requests: 0,
            mean_prompt_tokens: Some(mean_prompt),
            mean_completion_tokens: Some(mean_completion),
            mean_held_tokens: mean_prompt + mean_completion_sq / (2.0 * mean_completion),
            method: LoadMethod::MomentsIndependent,
        })
    }

    /// From the KV tokens held per running request on the server's steady decode lines
    /// (tokens; see [`LoadMethod::LogObserved`]). With a full pool, `pool / H` is then the
    /// running requests the pool holds at today's fill: scaled to another pool, it assumes the
    /// same lengths and the same admission reserve (`new_token_ratio`).
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] when `held_tokens` is not finite or not above 0.
    pub fn observed(held_tokens: f64) -> Result<InFlightLoad, CapacityError> {
        if !(held_tokens.is_finite() && held_tokens > 0.0) {
            return Err(CapacityError::Invalid(format!(
                "KV tokens held per running request must be finite and > 0: {held_tokens}"
            )));
        }
        Ok(InFlightLoad {
            requests: 0,
            mean_prompt_tokens: None,
            mean_completion_tokens: None,
            mean_held_tokens: held_tokens,
            method: LoadMethod::LogObserved,
        })
    }

    /// The naive `E[P] + E[C]/2`, for comparison (it under-counts long requests); `None` when
    /// the lengths are not known.
    pub fn naive_held_tokens(&self) -> Option<f64> {
        Some(self.mean_prompt_tokens? + self.mean_completion_tokens? / 2.0)
    }

    /// Requests that can decode at once in a pool of `pool_tokens`: `pool_tokens / H`.
    pub fn concurrency(&self, pool_tokens: u64) -> f64 {
        pool_tokens as f64 / self.mean_held_tokens
    }
}
