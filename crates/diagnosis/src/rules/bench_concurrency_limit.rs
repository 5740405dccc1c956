//! # `bench_concurrency_limit`: the benchmark's `--max-concurrency` was held full
//!
//! **What it detects.** A benchmark whose mean requests in flight (`Concurrency`) is at least
//! [`th::LIMIT_HELD_FULL`] of its `--max-concurrency`, or whose `Peak concurrent requests`
//! reached the limit while the mean stayed below it, read against the server's verdict and
//! `max_running_requests`.
//!
//! **The peak against the mean.** `Concurrency` is a whole-run average (Σ end-to-end latency
//! over the run's duration): a run that sends at a finite rate ramps up while it sends and
//! drains after, so the mean sits below the load it held in between. `Peak concurrent
//! requests` is the most requests active in one 1-second bucket (bench_serving's
//! `calculate_metrics`; spec §7): at or above the limit, the limit was reached. The arrival
//! window, `requested / rate` for a Poisson arrival process, is how long bench_serving made
//! arrivals; with the limit reached its semaphore held them and sent each as a slot freed, so
//! the client kept sending after that window (it is not the sending window).
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
//! server runs: the cap was reached and the rest waited in the server's queue. The client
//! talks to the whole server, so its figures are read against the cap of every DP rank
//! together ([`ServerCap::total`]: SGLang divides a `--max-running-requests` by the attention
//! DP size, `resolve_max_num_reqs`, and each plain-DP replica runs its own). The peak counts the
//! requests active in a 1-second bucket, so it can exceed the client's own `--max-concurrency`
//! by the requests that ended and began within one second; above that limit it no longer says
//! how many the server held at once, so it is not read against the server's cap (nothing is
//! concluded), only against the client's limit (see "The peak against the mean").
//!
//! **Source.** SGLang `bench_serving.py` (`Concurrency` = Σ E2E / duration, Little's law); spec §7.

use crate::narrative::words::{self, bottleneck_label, with_levers};
use crate::report::{
    BenchmarkRun, Bottleneck, Confidence, Figure, Finding, FindingKind, Lever, Unit,
};
use crate::thresholds as th;

/// The server's running-request cap as a client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerCap {
    /// `max_running_requests` of one scheduler (per DP rank; requests).
    pub per_rank: u64,
    /// DP ranks (`dp_size`, else the ranks the log shows; 1 without DP).
    pub dp_ranks: u32,
}

impl ServerCap {
    /// The cap over every DP rank (requests).
    pub fn total(&self) -> u64 {
        self.per_rank * u64::from(self.dp_ranks.max(1))
    }
}

/// What the limit means for the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// The server has headroom: the limit sets the load.
    ServerHasHeadroom,
    /// The server's `max_running_requests` (over every DP rank) is at or below the limit.
    ServerCapAtOrBelow {
        /// The server's cap.
        cap: ServerCap,
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
    /// The mean held the limit full ([`th::LIMIT_HELD_FULL`]); else only the peak reached it.
    pub held_full: bool,
    /// `Peak concurrent requests` when the block prints it (requests in a 1-second bucket).
    pub peak: Option<f64>,
    /// Seconds over which bench_serving made arrivals: requested / rate at a finite rate
    /// (seconds). Under a limit that was reached, requests were still sent after it, as the
    /// semaphore freed slots.
    pub arrival_window_s: Option<f64>,
    /// `Benchmark duration (s)` (seconds).
    pub duration_s: Option<f64>,
}

/// A peak in flight above the server's cap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeakAboveCap {
    /// `Peak concurrent requests` (requests).
    pub peak: f64,
    /// The server's cap.
    pub cap: ServerCap,
}

/// The peak rule on one run (see the module doc).
pub fn peak_above_cap(run: &BenchmarkRun, server_cap: Option<ServerCap>) -> Option<PeakAboveCap> {
    let (peak, cap) = (run.summary.peak_concurrent_requests?, server_cap?);
    if run
        .summary
        .max_concurrency
        .is_some_and(|limit| peak > limit as f64)
    {
        return None;
    }
    (peak > cap.total() as f64).then_some(PeakAboveCap { peak, cap })
}

/// The rule on one run, given the server's verdict and cap.
pub fn check(
    run: &BenchmarkRun,
    bottleneck: Bottleneck,
    server_cap: Option<ServerCap>,
) -> Option<Facts> {
    let b = &run.summary;
    let (limit, c) = (b.max_concurrency?, b.concurrency?);
    let held_full = c >= th::LIMIT_HELD_FULL * limit as f64;
    let peak_reached = b
        .peak_concurrent_requests
        .is_some_and(|p| p >= limit as f64);
    if limit == 0 || !(held_full || peak_reached) {
        return None;
    }
    let arrival_window_s = match (
        b.request_rate_per_s(),
        b.requested().or(b.successful_requests),
    ) {
        (Some(r), Some(n)) if r > 0.0 => Some(n as f64 / r),
        _ => None,
    };
    let meaning = match (bottleneck, server_cap) {
        (Bottleneck::ClientBound, _) => Meaning::ServerHasHeadroom,
        (_, Some(cap)) if cap.total() <= limit => Meaning::ServerCapAtOrBelow { cap },
        (Bottleneck::NoSchedulerLines, _) => Meaning::Unknown,
        (other, _) => Meaning::ServerBound(other),
    };
    Some(Facts {
        limit,
        concurrency: c,
        meaning,
        held_full,
        peak: b.peak_concurrent_requests,
        arrival_window_s,
        duration_s: b.duration_s,
    })
}

/// The finding of the benchmark `run`'s concurrency limit `f`, in this rule's words; its
/// levers follow what the server's side means for raising the limit.
pub(crate) fn finding(run: &BenchmarkRun, f: &Facts) -> Finding {
    let limit = f.limit;
    // the limit and the mean in flight under the client's own names
    use sglang_log::BenchClient as C;
    let (flag, mean_words) = match run.summary.client {
        C::Aiperf => (
            format!("--concurrency {limit}"),
            "AIPerf's effective concurrency is the time-weighted mean of requests in flight",
        ),
        C::Guidellm => (
            format!("its {limit} concurrent streams"),
            "GuideLLM's concurrency mean is the mean of requests in flight",
        ),
        C::LlmdReport => (
            format!("its concurrency {limit}"),
            "The report's concurrency is the mean number of requests in flight",
        ),
        _ => (
            format!("--max-concurrency {limit}"),
            "bench_serving's Concurrency is the sum of end-to-end latencies over the run's duration, the mean number of requests in flight (Little's law)",
        ),
    };
    let (meaning, confidence) = match f.meaning {
        Meaning::ServerHasHeadroom => (
            format!(
                "The server log shows headroom (little waits): the benchmark's limit sets the load. Raise the client's limit ({flag}) to measure the server."
            ),
            Confidence::High,
        ),
        Meaning::ServerCapAtOrBelow { cap } => (
            format!(
                "The server's max_running_requests is {}, {}: raising the benchmark's limit alone would only queue requests in the server; raise both together to run more at once.",
                server_cap_words(cap),
                if cap.total() == limit {
                    "the same as the limit"
                } else {
                    "below the limit"
                }
            ),
            Confidence::Medium,
        ),
        Meaning::Unknown => (
            format!(
                "Whether the server could run more than {limit} at once is not in this input: its log (#running-req, #queue-req, token usage) tells."
            ),
            Confidence::Low,
        ),
        Meaning::ServerBound(other) => (
            format!(
                "The server log says {}: raising the limit would lengthen the server's queue, not raise throughput.",
                bottleneck_label(other)
            ),
            Confidence::Medium,
        ),
    };
    let (title, how) = match f.peak {
        Some(peak) if !f.held_full => (
            format!(
                "The benchmark reached its concurrency limit: up to {peak:.0} requests active within one second against {flag}, though {:.1} on average",
                f.concurrency
            ),
            format!(
                "Peak concurrent requests counts the requests active in a 1-second bucket (a few more than the limit when some end and others begin within that second); \
                 Concurrency is the sum of end-to-end latencies over the run's duration, a whole-run average that the ramp-up and the drain pull down{}. \
                 Do not read {:.0} as the load the server held. {meaning}",
                match (f.arrival_window_s, f.duration_s) {
                    (Some(w), Some(d)) if w < d => format!(
                        " (arrivals came at the request rate for ~{w:.0} s of the {d:.0} s run, but with the limit reached bench_serving's semaphore held them and sent each as a slot freed, so the client went on sending after those {w:.0} s; the ramp-up and the final drain pull the mean down)"
                    ),
                    _ => String::new(),
                },
                f.concurrency
            ),
        ),
        _ => (
            format!(
                "The benchmark held its concurrency limit full: {:.1} requests in flight on average of {flag}",
                f.concurrency
            ),
            format!("{mean_words}. {meaning}"),
        ),
    };
    let mut figures = vec![
        Figure::new("mean requests in flight", f.concurrency, Unit::Requests),
        Figure::new("max concurrency", limit as f64, Unit::Requests),
    ];
    if let Some(p) = f.peak {
        figures.push(Figure::new("peak concurrent requests", p, Unit::Requests));
    }
    let out = words::finding(
        FindingKind::BenchmarkConcurrencyLimit,
        title,
        how,
        figures,
        vec![run.source.clone()],
        confidence,
    );
    let levers: &[Lever] = match f.meaning {
        Meaning::ServerHasHeadroom => &[Lever::ClientConcurrency],
        Meaning::ServerCapAtOrBelow { .. } => {
            &[Lever::ClientConcurrency, Lever::MaxRunningRequests]
        }
        Meaning::Unknown | Meaning::ServerBound(_) => &[],
    };
    with_levers(out, levers)
}

/// The finding of [`peak_above_cap`] in the benchmark `run`, in this rule's words.
pub(crate) fn peak_finding(run: &BenchmarkRun, f: &PeakAboveCap) -> Finding {
    Finding {
        kind: FindingKind::BenchmarkPeakAboveCap,
        title: format!(
            "The benchmark had up to {:.0} requests in flight, above the server's max_running_requests of {}: the cap was reached",
            f.peak,
            server_cap_words(f.cap)
        ),
        detail: "Requests beyond the server's running cap wait in its queue; their wait is part of the benchmark's TTFT.".to_string(),
        figures: vec![
            Figure::new("peak concurrent requests", f.peak, Unit::Requests),
            Figure::new(
                "max_running_requests over every DP rank",
                f.cap.total() as f64,
                Unit::Requests,
            ),
        ],
        evidence: vec![run.source.clone()],
        confidence: Confidence::High,
        levers: Vec::new(),
    }
}

/// A server's running cap as a client sees it: `256 (16 per DP rank × 16 ranks)`, or `80`.
fn server_cap_words(c: ServerCap) -> String {
    if c.dp_ranks > 1 {
        format!(
            "{} ({} per DP rank × {} ranks)",
            c.total(),
            c.per_rank,
            c.dp_ranks
        )
    } else {
        c.per_rank.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_above_the_server_cap() {
        // SGLang bench: 128 requests at rate 5 under --max-concurrency 256, peak 128 in flight
        // (line 16): a server capped at 64 reached its cap, one at 128 not
        let r = crate::rules::bench_failures::tests::runs(
            "real/bench/005-pr17216-sglang-decode-offload-16k-peak-fields.txt",
        );
        let cap = |per_rank, dp_ranks| Some(ServerCap { per_rank, dp_ranks });
        assert_eq!(
            peak_above_cap(&r[0], cap(64, 1)),
            Some(PeakAboveCap {
                peak: 128.0,
                cap: ServerCap {
                    per_rank: 64,
                    dp_ranks: 1
                }
            })
        );
        assert_eq!(peak_above_cap(&r[0], cap(128, 1)), None);
        // 64 per DP rank on two ranks is 128 for the client
        assert_eq!(peak_above_cap(&r[0], cap(64, 2)), None);
        assert_eq!(peak_above_cap(&r[0], None), None);
        // vLLM bench: `Peak concurrent requests: 20.00` under `Maximum request concurrency:
        // 10` (lines 4, 11): no count of requests in flight, whatever the server's cap
        let v = crate::rules::bench_failures::tests::runs(
            "real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt",
        );
        assert_eq!(peak_above_cap(&v[0], cap(16, 1)), None);
    }

    #[test]
    fn a_peak_above_the_clients_own_limit_is_no_count_of_requests_in_flight() {
        // bench_serving prints `Peak concurrent requests: 160` under `Max request
        // concurrency: 80` (lines 1040, 1052): the client cannot have had 160 in flight
        let r = crate::rules::bench_failures::tests::runs(
            "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
        );
        assert_eq!(r[0].summary.peak_concurrent_requests, Some(160.0));
        assert_eq!(r[0].summary.max_concurrency, Some(80));
        let cap = ServerCap {
            per_rank: 80,
            dp_ranks: 1,
        };
        assert_eq!(peak_above_cap(&r[0], Some(cap)), None);
    }
    use crate::rules::bench_failures::tests::runs;

    fn cap(per_rank: u64) -> ServerCap {
        ServerCap {
            per_rank,
            dp_ranks: 1,
        }
    }

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
            check(&r[0], Bottleneck::KvCacheBound, Some(cap(limit))).map(|f| f.meaning),
            Some(Meaning::ServerCapAtOrBelow { cap: cap(limit) })
        );
        assert_eq!(
            check(&r[0], Bottleneck::KvCacheBound, Some(cap(limit + 1))).map(|f| f.meaning),
            Some(Meaning::ServerBound(Bottleneck::KvCacheBound))
        );
    }

    #[test]
    fn a_peak_at_the_limit_under_a_lower_mean() {
        // bench_serving: 3,328 prompts at 16 req/s under --max-concurrency 832, `Concurrency:
        // 519.71`, `Peak concurrent requests: 851` (lines 20-21, 31-33): the limit was reached;
        // arrivals came for 208 s of the 395 s run (sent on as the semaphore freed slots).
        let r = runs("real-4/bench/100-npu-pd-2p1d-dsr1-w8a8-conc832-accept-len.txt");
        let f = check(&r[0], Bottleneck::NoSchedulerLines, None).expect("peak");
        assert!(!f.held_full);
        assert_eq!(f.peak, Some(851.0));
        assert_eq!(f.limit, 832);
        assert!(
            (f.arrival_window_s.expect("window") - 208.0).abs() < 0.5,
            "{f:?}"
        );
        assert!((f.duration_s.expect("duration") - 395.31).abs() < 0.01);
        // a peak one below the limit is not the limit reached
        let mut r = r[0].clone();
        r.summary.peak_concurrent_requests = Some(831.0);
        assert_eq!(check(&r, Bottleneck::NoSchedulerLines, None), None);
        // 004 (vLLM): peak 20 over limit 10 with a mean of none printed: no mean, no finding
        let v = runs("real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt");
        assert_eq!(check(&v[0], Bottleneck::NoSchedulerLines, None), None);
    }

    #[test]
    fn a_limit_not_reached_is_no_finding() {
        let mut r = runs(RATE330).remove(0);
        let limit = r.summary.max_concurrency.expect("limit") as f64;
        r.summary.concurrency = Some(0.89 * limit);
        assert_eq!(check(&r, Bottleneck::NoSchedulerLines, None), None);
    }
}
