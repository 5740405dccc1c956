//! # `bench_not_streamed`: the benchmark's client did not stream
//!
//! **What it detects.** A benchmark run whose inter-token latency is 0 (mean, and p99 when
//! printed) while its TTFT is at least [`th::NOT_STREAMED_TTFT_SHARE`] of its end-to-end
//! latency (medians, else means).
//!
//! **Why it matters.** `bench_serving` takes TTFT at the first streamed chunk and ITL between
//! chunks. A response that arrives in one chunk (a backend or proxy that does not stream)
//! makes TTFT the whole request and ITL zero: the latency figures measure nothing about the
//! server's queue or decode, and reading TTFT ≈ E2E as queueing is wrong. Only the request
//! throughput (and the token totals, if not retokenized) are usable.
//!
//! **Sent slower than it finished** ([`SentTooFast`]). A run sent at a finite request rate
//! `R` (`Traffic request rate`) cannot end before its last request is sent: `N` Poisson
//! arrivals take `N / R` seconds on average, with a standard deviation of `√N / R`. A duration
//! more than [`th::BENCH_SEND_SIGMAS`] deviations below that (so a request throughput above the
//! rate it was sent at) means the rate line or the duration is not what the run did (a driver
//! that replays a trace ignores the rate): the request rate is then no more usable than the
//! latencies.
//!
//! **Evidence it needs.** A benchmark block with ITL, TTFT and E2E (and, for the rate check,
//! the request rate, the successful requests and the duration).
//!
//! **What to change.** Rerun with a streaming endpoint (bench_serving streams by default; a
//! custom backend or a proxy may buffer); judge the server from its log meanwhile.
//!
//! **Source.** SGLang `bench_serving.py` (`async_request_*`: `ttft` at the first chunk, `itl`
//! between chunks; `calculate_metrics`); spec §7.

use crate::narrative::words::count;
pub use crate::report::SentTooFast;
use crate::report::{BenchmarkRun, Confidence, Figure, Finding, FindingKind, Unit};
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// TTFT (seconds; the median, else the mean).
    pub ttft_s: f64,
    /// End-to-end latency (seconds; the same statistic).
    pub e2e_s: f64,
    /// Request throughput (req/s), the figure that stays valid.
    pub request_throughput: Option<f64>,
    /// Retokenized over generated tokens, when both are printed (fraction).
    pub retokenized_share: Option<f64>,
    /// The run ended before its requests could have been sent at its rate.
    pub sent_too_fast: Option<SentTooFast>,
}

/// Whether `run` finished before its requests could have been sent (see the module doc).
pub fn sent_too_fast(run: &BenchmarkRun) -> Option<SentTooFast> {
    let b = &run.summary;
    let (r, n, d) = (
        b.request_rate_per_s().filter(|&r| r > 0.0)?,
        b.successful_requests.filter(|&n| n > 0)?,
        b.duration_s?,
    );
    let send_s = n as f64 / r;
    let sd = (n as f64).sqrt() / r;
    (d < send_s - th::BENCH_SEND_SIGMAS * sd).then_some(SentTooFast {
        sent_per_s: r,
        requests: n,
        send_s,
        duration_s: d,
    })
}

/// The rule on one run.
pub fn check(run: &BenchmarkRun) -> Option<Facts> {
    let b = &run.summary;
    let itl_zero = b.itl.mean_s? == 0.0 && b.itl.p99_s.is_none_or(|p| p == 0.0);
    if !itl_zero {
        return None;
    }
    let (ttft, e2e) = match (b.ttft.median_s, b.e2e.median_s) {
        (Some(t), Some(e)) => (t, e),
        _ => (b.ttft.mean_s?, b.e2e.mean_s?),
    };
    if e2e <= 0.0 || ttft / e2e < th::NOT_STREAMED_TTFT_SHARE {
        return None;
    }
    Some(Facts {
        ttft_s: ttft,
        e2e_s: e2e,
        request_throughput: b.request_throughput,
        retokenized_share: match (
            b.total_generated_tokens_retokenized,
            b.total_generated_tokens,
        ) {
            (Some(r), Some(g)) if g > 0 => Some(r as f64 / g as f64),
            _ => None,
        },
        sent_too_fast: sent_too_fast(run),
    })
}

/// The finding of the benchmark `run` whose client did not stream (`f`), in this rule's words.
pub(crate) fn finding(run: &BenchmarkRun, f: &Facts) -> Finding {
    let retok = f
        .retokenized_share
        .map(|s| {
            format!(
                " The retokenized output count is {:.0}% of the generated one: the token totals disagree too.",
                s * 100.0
            )
        })
        .unwrap_or_default();
    Finding {
        kind: FindingKind::BenchmarkNotStreamed,
        title: format!(
            "The benchmark's client did not stream: TTFT ({:.3} s) equals end-to-end latency ({:.3} s) and ITL is 0",
            f.ttft_s, f.e2e_s
        ),
        detail: format!(
            "Each response arrived in one piece, so the time to first token is the whole request and there are no gaps between tokens to measure. Its latency figures (TTFT, TPOT, ITL) are invalid and say nothing about queueing; {}. This is a measurement artifact, not a server bottleneck: rerun against a streaming endpoint.{retok}",
            match (f.sent_too_fast, f.request_throughput) {
                (Some(s), r) => format!(
                    "nor can the request throughput{} be taken as measured: {} requests sent at the {:.1} req/s it names take ~{:.0} s to send, yet the run printed {:.0} s, so its rate line or its duration is not what the run did (a driver that replays a trace ignores the rate)",
                    r.map(|r| format!(" ({r:.2} req/s)")).unwrap_or_default(),
                    count(s.requests),
                    s.sent_per_s,
                    s.send_s,
                    s.duration_s
                ),
                (None, r) => format!(
                    "only the request throughput{} is usable",
                    r.map(|r| format!(" ({r:.2} req/s)")).unwrap_or_default()
                ),
            }
        ),
        figures: vec![
            Figure::new("ttft", f.ttft_s, Unit::Seconds),
            Figure::new("e2e_latency", f.e2e_s, Unit::Seconds),
        ],
        evidence: vec![run.source.clone()],
        confidence: Confidence::High,
        levers: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::bench_failures::tests::runs;

    const NOT_STREAMED: &str =
        "real-2/bench/104-sglang-dlora-repo-rate2-itl-zero-retokenized-mismatch.txt";

    #[test]
    fn itl_zero_and_ttft_equal_to_e2e() {
        let r = runs(NOT_STREAMED);
        let f = check(&r[0]).expect("not streamed");
        assert!(
            (f.ttft_s - 0.60688).abs() < 1e-6 && (f.e2e_s - 0.60686).abs() < 1e-6,
            "{f:?}"
        );
        assert_eq!(f.request_throughput, Some(3.77));
        assert!((f.retokenized_share.unwrap() - 103837.0 / 218257.0).abs() < 1e-9);
    }

    #[test]
    fn streamed_runs_are_not_flagged() {
        for file in [
            "real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt",
            "real/bench/002-i8285-sglang-ttft-unstable-rate330.txt",
            "real/bench/005-pr17216-sglang-decode-offload-16k-peak-fields.txt",
        ] {
            let r = runs(file);
            assert_eq!(check(&r[0]), None, "{file}");
        }
    }

    #[test]
    fn the_means_decide_without_medians_and_a_gap_between_chunks_is_streaming() {
        let r = runs(NOT_STREAMED)[0].clone();
        // without medians, the means: a TTFT of 2074.09 ms in 2098.07 ms
        let mut means = r.clone();
        (means.summary.ttft.median_s, means.summary.e2e.median_s) = (None, None);
        let f = check(&means).expect("not streamed, by the means");
        assert!(
            (f.ttft_s - 2.07409).abs() < 1e-6 && (f.e2e_s - 2.09807).abs() < 1e-6,
            "{f:?}"
        );
        // a gap after the first chunk (ITL p99 above 0): the client streamed
        let mut late_chunk = r.clone();
        late_chunk.summary.itl.p99_s = Some(0.05);
        assert_eq!(check(&late_chunk), None);
        // the first token well before the last: not one piece
        let mut early_first = r;
        early_first.summary.ttft.median_s = Some(0.3);
        assert_eq!(check(&early_first), None);
    }

    #[test]
    fn a_run_that_ends_before_it_could_be_sent_has_no_usable_rate() {
        // 104: 996 requests at 2.0 req/s take ~498 s to send (sd ~16 s); the run printed
        // 264.25 s, so its 3.77 req/s is not what it measured either
        let r = runs(NOT_STREAMED);
        let s = sent_too_fast(&r[0]).expect("faster than sent");
        assert_eq!((s.sent_per_s, s.requests), (2.0, 996));
        assert!((s.send_s - 498.0).abs() < 1e-9 && (s.duration_s - 264.25).abs() < 1e-9);
        assert_eq!(check(&r[0]).unwrap().sent_too_fast, Some(s));
    }

    #[test]
    fn a_duration_within_the_poisson_spread_is_consistent() {
        // the same run lasting 498 s, or 4 deviations short of it, is what 2.0 req/s gives;
        // without a finite rate (inf) nothing is checked
        let mut r = runs(NOT_STREAMED);
        let sd = 996f64.sqrt() / 2.0;
        r[0].summary.duration_s = Some(498.0);
        assert_eq!(sent_too_fast(&r[0]), None);
        r[0].summary.duration_s = Some(498.0 - th::BENCH_SEND_SIGMAS * sd);
        assert_eq!(sent_too_fast(&r[0]), None);
        r[0].summary.duration_s = Some(498.0 - th::BENCH_SEND_SIGMAS * sd - 1.0);
        assert!(sent_too_fast(&r[0]).is_some());
        r[0].summary.request_rate = Some("inf".into());
        assert_eq!(sent_too_fast(&r[0]), None);
    }
}
