//! # `bench_failures`: a benchmark run lost requests
//!
//! **What it detects.** A benchmark summary whose failed requests (printed, or `--num-prompts`
//! less the successful) are more than zero; from [`th::FAILURES_DOMINATE`] of the requested
//! they are the first thing to fix.
//!
//! **Why it matters.** bench_serving's throughput and latencies cover only the successful
//! requests, so they describe a lighter run than the one asked for.
//!
//! **Evidence it needs.** A `Serving Benchmark Result` block with `Successful requests` and
//! `Failed requests` or the `--num-prompts` of its command.
//!
//! **What to change.** Find why requests failed first: the benchmark's error output, the
//! server log for aborted requests (`--max-queued-requests`, prompts over the context length,
//! out of memory).
//!
//! **Source.** SGLang `bench_serving.py` (`calculate_metrics`: metrics over `outputs[i].success`
//! only); spec §7.

use crate::narrative::words::{self, count};
use crate::report::{BenchmarkRun, Confidence, Figure, Finding, FindingKind, Unit};
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Failed requests.
    pub failed: u64,
    /// Requested.
    pub requested: u64,
    /// Successful, when printed.
    pub successful: Option<u64>,
    /// Failed over requested (fraction).
    pub share: f64,
    /// Whether the block printed `Failed requests` (else derived from `--num-prompts`).
    pub printed: bool,
    /// Whether failures dominate ([`th::FAILURES_DOMINATE`]).
    pub dominate: bool,
}

/// The rule on one run.
pub fn check(run: &BenchmarkRun) -> Option<Facts> {
    let b = &run.summary;
    let (failed, requested) = (b.failed()?, b.requested()?);
    if failed == 0 || requested == 0 {
        return None;
    }
    let share = failed as f64 / requested as f64;
    Some(Facts {
        failed,
        requested,
        successful: b.successful_requests,
        share,
        printed: b.failed_requests.is_some(),
        dominate: share >= th::FAILURES_DOMINATE,
    })
}

/// The finding of failed requests `f` of the benchmark `run`, in this rule's words.
pub(crate) fn finding(run: &BenchmarkRun, f: &Facts) -> Finding {
    let from = if f.printed {
        "the block's `Failed requests`".to_string()
    } else {
        format!(
            "`--num-prompts {}` less the {} successful",
            f.requested,
            count(f.successful.unwrap_or(0))
        )
    };
    words::finding(
        FindingKind::BenchmarkFailures,
        format!(
            "{} of {} benchmark requests failed ({:.0}%)",
            count(f.failed),
            count(f.requested),
            f.share * 100.0
        ),
        format!(
            "Counted from {from}. The benchmark's throughput and latencies cover only the successful requests, so they describe a different, lighter run than the one asked for{}. \
             Find why requests failed before tuning throughput: the benchmark's error output (timeouts, connection resets), and the server log for aborted requests \
             (a full waiting queue with --max-queued-requests, prompts over the context length, out-of-memory).",
            if f.dominate {
                ", and failures are the first thing to fix"
            } else {
                ""
            }
        ),
        vec![
            Figure::new("failed requests", f.failed as f64, Unit::Requests),
            Figure::new("requested", f.requested as f64, Unit::Requests),
            Figure::new("failed share", f.share, Unit::Fraction),
        ],
        vec![run.source.clone()],
        if f.dominate {
            Confidence::High
        } else {
            Confidence::Medium
        },
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::SourceRange;
    use crate::rules::testing::whole;

    /// The benchmark runs of a file under `tests/data/`.
    pub(crate) fn runs(rel: &str) -> Vec<BenchmarkRun> {
        sglang_log::parse_bench_summaries(&whole(rel))
            .into_iter()
            .map(|summary| BenchmarkRun {
                source: SourceRange {
                    source: rel.into(),
                    first_line: summary.first_line,
                    last_line: summary.last_line,
                    last_source: None,
                },
                summary,
            })
            .collect()
    }

    #[test]
    fn almost_half_of_sharegpt_failed() {
        let r = runs("real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt");
        let f = check(&r[0]).expect("failures");
        assert_eq!((f.failed, f.requested), (1352, 3000));
        assert!(f.dominate && !f.printed);
    }

    #[test]
    fn a_clean_run_has_none() {
        let r = runs("real/bench/002-i8285-sglang-ttft-unstable-rate330.txt");
        assert_eq!(check(&r[0]), None);
    }

    #[test]
    fn one_in_five_dominates() {
        let mut r =
            runs("real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt").remove(0);
        r.summary.successful_requests = Some(2400);
        assert!(check(&r).is_some_and(|f| f.dominate && f.share == 0.2));
        r.summary.successful_requests = Some(2401);
        assert!(check(&r).is_some_and(|f| !f.dominate));
    }
}
