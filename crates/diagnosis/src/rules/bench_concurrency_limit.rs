//! # `bench_concurrency_limit`: the benchmark's `--max-concurrency` was held full
//!
//! **What it detects.** A benchmark whose mean requests in flight (`Concurrency`) is at least
//! [`th::LIMIT_HELD_FULL`] of its `--max-concurrency`, read against the server's verdict and
//! `max_running_requests`.
//!
//! **Why it matters.** The client's limit, not the server, may set the load: raising it helps
//! only when the server has headroom, and only together with a server cap at the same number.
//!
//! **Evidence it needs.** A benchmark block with `Max request concurrency` and `Concurrency`;
//! the server log for what the limit means.
//!
//! **What to change.** With server headroom, raise `--max-concurrency`; with a server cap at or
//! below it, raise both; otherwise neither.
//!
//! **Peak above the server's cap** ([`peak_above_cap`]): a `Peak concurrent requests` above
//! the server's `max_running_requests` shows the client had more requests in flight than the
//! server runs: the cap was reached and the rest waited in the server's queue.
//!
//! **Source.** SGLang `bench_serving.py` (`Concurrency` = Σ E2E / duration, Little's law); spec §7.

use crate::report::{BenchmarkRun, Bottleneck};
use crate::thresholds as th;

/// What the limit means for the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// The server has headroom: the limit sets the load.
    ServerHasHeadroom,
    /// The server's `max_running_requests` is at or below the limit.
    ServerCapAtOrBelow {
        /// The server's cap (requests).
        cap: u64,
    },
    /// No server log says.
    Unknown,
    /// The server is bound elsewhere: raising the limit only queues.
    ServerBound(Bottleneck),
}

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// `--max-concurrency` (requests).
    pub limit: u64,
    /// Mean requests in flight (requests).
    pub concurrency: f64,
    /// What it means.
    pub meaning: Meaning,
}

/// A peak in flight above the server's cap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeakAboveCap {
    /// `Peak concurrent requests` (requests).
    pub peak: f64,
    /// The server's `max_running_requests` (requests).
    pub cap: u64,
}

/// The peak rule on one run (see the module doc).
pub fn peak_above_cap(run: &BenchmarkRun, server_cap: Option<u64>) -> Option<PeakAboveCap> {
    let (peak, cap) = (run.summary.peak_concurrent_requests?, server_cap?);
    (peak > cap as f64).then_some(PeakAboveCap { peak, cap })
}

/// The rule on one run, given the server's verdict and cap.
pub fn check(run: &BenchmarkRun, bottleneck: Bottleneck, server_cap: Option<u64>) -> Option<Facts> {
    let b = &run.summary;
    let (limit, c) = (b.max_concurrency?, b.concurrency?);
    if limit == 0 || c < th::LIMIT_HELD_FULL * limit as f64 {
        return None;
    }
    let meaning = match (bottleneck, server_cap) {
        (Bottleneck::ClientBound, _) => Meaning::ServerHasHeadroom,
        (_, Some(cap)) if cap <= limit => Meaning::ServerCapAtOrBelow { cap },
        (Bottleneck::NoSchedulerLines, _) => Meaning::Unknown,
        (other, _) => Meaning::ServerBound(other),
    };
    Some(Facts {
        limit,
        concurrency: c,
        meaning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_above_the_server_cap() {
        // vLLM bench: peak 20 in flight; a server capped at 16 reached its cap, one at 32 not
        let r = crate::rules::bench_failures::tests::runs(
            "real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt",
        );
        assert_eq!(
            peak_above_cap(&r[0], Some(16)),
            Some(PeakAboveCap {
                peak: 20.0,
                cap: 16
            })
        );
        assert_eq!(peak_above_cap(&r[0], Some(32)), None);
        assert_eq!(peak_above_cap(&r[0], None), None);
    }
    use crate::rules::bench_failures::tests::runs;

    const RATE330: &str = "real/bench/002-i8285-sglang-ttft-unstable-rate330.txt";

    #[test]
    fn the_limit_held_full_without_a_server_log() {
        let r = runs(RATE330);
        let f = check(&r[0], Bottleneck::NoSchedulerLines, None).expect("limit");
        assert_eq!(f.meaning, Meaning::Unknown);
        assert!(f.concurrency >= 0.9 * f.limit as f64);
    }

    #[test]
    fn the_server_decides_what_it_means() {
        let r = runs(RATE330);
        let limit = r[0].summary.max_concurrency.expect("limit");
        assert_eq!(
            check(&r[0], Bottleneck::ClientBound, None).map(|f| f.meaning),
            Some(Meaning::ServerHasHeadroom)
        );
        assert_eq!(
            check(&r[0], Bottleneck::KvCacheBound, Some(limit)).map(|f| f.meaning),
            Some(Meaning::ServerCapAtOrBelow { cap: limit })
        );
        assert_eq!(
            check(&r[0], Bottleneck::KvCacheBound, Some(limit + 1)).map(|f| f.meaning),
            Some(Meaning::ServerBound(Bottleneck::KvCacheBound))
        );
    }

    #[test]
    fn a_limit_not_reached_is_no_finding() {
        let mut r = runs(RATE330).remove(0);
        let limit = r.summary.max_concurrency.expect("limit") as f64;
        r.summary.concurrency = Some(0.89 * limit);
        assert_eq!(check(&r, Bottleneck::NoSchedulerLines, None), None);
    }
}
