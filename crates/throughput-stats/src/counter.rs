//! Cumulative counters (Prometheus `*_total`, token counters) that may reset.

use crate::{RateEstimate, StatsError, check};

/// A cumulative counter sampled at times, with resets (process restarts) detected and bridged.
///
/// A value lower than the previous one is taken as a reset to zero followed by growth to the new
/// value, so the increase across that step is the new value itself — the convention of
/// Prometheus' `increase()`/`rate()`. Growth between the last sample before a reset and the
/// reset itself is unobservable and therefore not counted (the increase is a lower bound then).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterSeries {
    samples: Vec<(f64, f64)>,
    increase: f64,
    resets: usize,
}

impl CounterSeries {
    /// Builds the series from `(t_seconds, cumulative value)` samples.
    ///
    /// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`] (index),
    /// [`StatsError::NonMonotonic`] (index, for time going backwards), and
    /// [`StatsError::InvalidArgument`] for a negative counter value or a total that overflows f64.
    pub fn from_samples(samples: &[(f64, f64)]) -> Result<Self, StatsError> {
        check::series(samples)?;
        if samples.iter().any(|s| s.1 < 0.0) {
            return Err(StatsError::InvalidArgument("counter values must be >= 0"));
        }
        check::finite(
            samples[samples.len() - 1].0 - samples[0].0,
            "time span overflows f64",
        )?;
        let mut increase = 0.0;
        let mut resets = 0;
        for p in samples.windows(2) {
            let (prev, cur) = (p[0].1, p[1].1);
            if cur >= prev {
                increase += cur - prev;
            } else {
                resets += 1;
                increase += cur;
            }
        }
        check::finite(increase, "counter increase overflows f64")?;
        Ok(CounterSeries {
            samples: samples.to_vec(),
            increase,
            resets,
        })
    }

    /// Total increase over the series, in the counter's unit (requests, tokens), resets bridged.
    pub fn increase(&self) -> f64 {
        self.increase
    }

    /// Number of resets (value drops) detected.
    pub fn resets(&self) -> usize {
        self.resets
    }

    /// Seconds from the first to the last sample.
    pub fn span_s(&self) -> f64 {
        self.samples[self.samples.len() - 1].0 - self.samples[0].0 // ok: non-empty by construction
    }

    /// The samples, `(t_seconds, value)`.
    pub fn samples(&self) -> &[(f64, f64)] {
        &self.samples
    }

    /// Average rate over the series: `increase / span`, counter units per second.
    ///
    /// Errors: [`StatsError::InvalidArgument`] if the span is 0 (one sample, or one timestamp).
    pub fn rate(&self) -> Result<f64, StatsError> {
        let span = self.span_s();
        if span <= 0.0 {
            return Err(StatsError::InvalidArgument("counter span is 0 s"));
        }
        check::finite(self.increase / span, "rate overflows f64")
    }

    /// Rate with a Garwood interval, treating the increase as a count of Poisson events (valid for
    /// counters of discrete events such as completed requests; not for token counters, whose
    /// increments arrive in lumps — use [`crate::token_rate`] for those). The increase is rounded
    /// to the nearest integer.
    ///
    /// Errors: [`StatsError::InvalidArgument`] for a zero span, a bad confidence, or an increase
    /// beyond 2⁶³.
    pub fn rate_estimate(&self, confidence: f64) -> Result<RateEstimate, StatsError> {
        let span = self.span_s();
        if span <= 0.0 {
            return Err(StatsError::InvalidArgument("counter span is 0 s"));
        }
        if self.increase > 9.2e18 {
            return Err(StatsError::InvalidArgument(
                "increase too large for an event count",
            ));
        }
        RateEstimate::from_count(self.increase.round() as u64, span, confidence)
    }
}
