//! # `idle_window`: a low reading after idle is an artifact
//!
//! **What it detects.** The first decode line after an idle gap of [`th::IDLE_GAP_S`] or more
//! (or the log's first line) whose gen throughput is below [`th::IDLE_LOW_READING`] of the
//! scheduler's steady median.
//!
//! **Why it matters.** SGLang's gen throughput divides the tokens since the previous decode line
//! by the wall time since then, idle time included, so the first line after idle reads low. It
//! is not slowness, and averaging it in understates the rate.
//!
//! **Evidence it needs.** Timestamped decode lines with `gen throughput`, every one of them (on a
//! timeline thinned to one line in `stride` the gap before a kept line is not its idle time:
//! such a scheduler is passed over).
//!
//! **What to change.** Nothing on the server; ignore those readings.
//!
//! **Source.** SGLang `scheduler_metrics_mixin.py` (`log_decode_stats`: `num_generated_tokens /
//! (time.perf_counter() - last_decode_stats_tic)`); spec §2.1.2.

use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// What the rule saw on the first scheduler that has such readings.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Low readings after idle (lines).
    pub low_readings: usize,
    /// The first one (tok/s).
    pub first_reading: f64,
    /// The scheduler's steady median (tok/s).
    pub median: f64,
    /// The first low line.
    pub evidence: SourceRange,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    for v in input.views {
        let median = v.gen_tps.median.unwrap_or(0.0);
        if median <= 0.0 {
            continue;
        }
        let Some(decode) = v.tl.every_decode_line() else {
            continue;
        };
        let mut prev_t: Option<f64> = None;
        let mut hits = Vec::new();
        for o in &v.obs {
            if let (Some(t), Some(d)) = (o.t, decode.get(&(o.source, o.line))) {
                let after_gap = prev_t.is_none_or(|p| t - p >= th::IDLE_GAP_S);
                if after_gap && d.gen_tps.is_some_and(|g| g < th::IDLE_LOW_READING * median) {
                    hits.push((d.loc(), d.gen_tps.unwrap_or(0.0)));
                }
            }
            if o.t.is_some() {
                prev_t = o.t;
            }
        }
        if let Some(&(at, g)) = hits.first() {
            return Some(Facts {
                low_readings: hits.len(),
                first_reading: g,
                median,
                evidence: input.line(at),
            });
        }
    }
    None
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct IdleWindow;

impl Rule for IdleWindow {
    const NAME: &'static str = "idle_window";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        finding(
            FindingKind::IdleWindowArtifact,
            "Low gen throughput after idle is a measurement artifact",
            format!(
                "SGLang's gen throughput divides the tokens since the previous decode line by the wall time since then, idle time included, so the first line after an idle gap reads low ({:.2} tok/s vs a median of {:.1} tok/s). It is not slowness; ignore it.",
                f.first_reading, f.median
            ),
            vec![
                Figure::new(
                    "low readings after idle",
                    f.low_readings as f64,
                    Unit::Lines,
                ),
                Figure::new("median gen throughput", f.median, Unit::TokPerS),
            ],
            vec![f.evidence.clone()],
            Confidence::Medium,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, excerpt, whole, with_input};

    const ROCM: &str = "real/017-i3243-amd-rx7900xtx-rocm.log";

    #[test]
    fn the_first_reading_of_a_run_is_low() {
        with_input(&whole(ROCM), |i| {
            let f = check(i).expect("artifact");
            assert_eq!(f.low_readings, 1);
            assert_eq!(f.first_reading, 3.5);
            assert_eq!(f.evidence.first_line, 1);
        });
    }

    #[test]
    fn steady_readings_are_no_artifact() {
        with_input(&excerpt(ROCM, 2..=5), |i| assert_eq!(check(i), None));
    }

    #[test]
    fn a_quarter_of_the_median_is_the_boundary() {
        // Median 28.12 tok/s: 7.03 is exactly a quarter (not reported), 7.02 is below it.
        let at = edit(&whole(ROCM), "3.50", "7.04");
        with_input(&at, |i| assert_eq!(check(i), None));
        let below = edit(&whole(ROCM), "3.50", "7.02");
        with_input(&below, |i| assert!(check(i).is_some()));
    }
}
