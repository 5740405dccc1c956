//! # `bench_readings`: a benchmark's own figures that do not mean what they say
//!
//! **What it detects.** In one benchmark block (`Serving Benchmark Result` of SGLang's
//! `bench_serving` or vLLM's `bench serve`), figures a reader takes at face value and should
//! not:
//! - `Peak concurrent requests` above the client's own `Max request concurrency`: the peak is
//!   the most requests active within one second (a request that ends in that second and the
//!   next one that starts both count), not requests in flight at once;
//! - `Peak output token throughput` below the mean `Output token throughput`: the per-second
//!   peak counts streamed chunks, the mean counts tokens; under speculative decoding a chunk
//!   carries several tokens, so the peak undercounts;
//! - `Max ITL` of [`th::STALLED_STREAM_S`] or more: one stream got no chunk for that long,
//!   hundreds of decode steps; minutes ([`th::STALLED_STREAM_MINUTES_S`]) is a stalled server
//!   or a retracted request, not scheduling;
//! - `Total input vision tokens` above zero: a request's time to first token includes encoding
//!   its images, so TTFT is not queueing and prefill alone;
//! - a duration under [`th::SHORT_BURST_E2E`] mean end-to-end latencies, for a client that
//!   kept a concurrency limit or a request rate: the requests ran in about one wave, and every
//!   rate of the block averages a ramp and a drain. (With every request sent at once and no
//!   limit, a request's latency is about half the run whatever the waves: not judged.)
//!
//! **Why it matters.** Each of these, read at face value, sends the user after a problem that
//! is not there (a client that broke its own limit, a server that slowed to a crawl at its
//! peak) or away from one that is (a stream that stopped, a burst taken for a steady rate).
//!
//! **Evidence it needs.** The benchmark block's figures.
//!
//! **What to change.** Nothing for the peaks (read the means); for a stopped stream, the server
//! log around it (prefill passes of a burst, a retraction, a stall); for images, the encoder's
//! time apart from the queue; for a short burst, a longer run (more requests than the
//! concurrency holds at once) before comparing rates.
//!
//! **Source.** SGLang `bench_serving.py` (`calculate_metrics`: one-second bins for the peak
//! output rate and concurrency, ITLs per chunk), vLLM `benchmarks/serve.py` (the same block);
//! spec §7.

use crate::narrative::words;
use crate::report::{BenchmarkRun, Confidence, Figure, Finding, FindingKind, Unit};
use crate::thresholds as th;

/// One reading of a block that does not mean what it says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Facts {
    /// `Peak concurrent requests` above `Max request concurrency`.
    PeakAboveLimit {
        /// The peak (requests active within one second).
        peak: f64,
        /// The client's limit (requests).
        limit: u64,
    },
    /// `Peak output token throughput` below `Output token throughput`.
    PeakBelowMean {
        /// The peak (tok/s, as the client counts it).
        peak: f64,
        /// The mean (tok/s).
        mean: f64,
        /// `Accept length`, when printed (tokens per verify step).
        accept_length: Option<f64>,
    },
    /// `Max ITL` of [`th::STALLED_STREAM_S`] or more.
    StalledStream {
        /// The longest gap (seconds).
        max_itl_s: f64,
        /// The mean ITL, when printed (seconds).
        mean_itl_s: Option<f64>,
        /// The traffic rate was `inf`: every request was sent at once.
        burst: bool,
        /// A PD-disaggregated deployment: the decode server runs no prefill.
        pd: bool,
    },
    /// `Total input vision tokens` above zero.
    VisionInput {
        /// Vision tokens (tokens).
        vision_tokens: u64,
        /// All input tokens, when printed (tokens).
        input_tokens: Option<u64>,
    },
    /// A duration under [`th::SHORT_BURST_E2E`] mean end-to-end latencies.
    ShortBurst {
        /// `Benchmark duration` (seconds).
        duration_s: f64,
        /// Mean end-to-end latency (seconds).
        e2e_s: f64,
    },
}

/// Every reading of `run` that does not mean what it says, in the module doc's order.
pub fn check(run: &BenchmarkRun) -> Vec<Facts> {
    let b = &run.summary;
    let mut out = Vec::new();
    if let (Some(peak), Some(limit)) = (b.peak_concurrent_requests, b.max_concurrency)
        && limit > 0
        && peak > limit as f64
    {
        out.push(Facts::PeakAboveLimit { peak, limit });
    }
    if let (Some(peak), Some(mean)) = (b.peak_output_tok_per_s, b.output_tok_per_s)
        && peak > 0.0
        && peak < mean
    {
        out.push(Facts::PeakBelowMean {
            peak,
            mean,
            accept_length: b.accept_length,
        });
    }
    if let Some(m) = b.itl.max_s
        && m >= th::STALLED_STREAM_S
    {
        out.push(Facts::StalledStream {
            max_itl_s: m,
            mean_itl_s: b.itl.mean_s,
            burst: b
                .request_rate
                .as_deref()
                .is_some_and(|r| r.trim().eq_ignore_ascii_case("inf")),
            pd: b.pd_disaggregation,
        });
    }
    if let Some(v) = b.total_input_vision_tokens.filter(|&v| v > 0) {
        out.push(Facts::VisionInput {
            vision_tokens: v,
            input_tokens: b.total_input_tokens,
        });
    }
    // with every request sent at once and no limit, a request's latency is about half the run
    // whatever the number of waves the server makes: only a client that keeps a limit or a
    // rate spreads its requests, so that the run's length counts its waves
    let paced = b.max_concurrency.is_some() || b.request_rate_per_s().is_some();
    if let (Some(d), Some(e)) = (b.duration_s, run.mean_e2e_s())
        && paced
        && d > 0.0
        && e > 0.0
        && d < th::SHORT_BURST_E2E * e
    {
        out.push(Facts::ShortBurst {
            duration_s: d,
            e2e_s: e,
        });
    }
    out
}

/// The finding of one reading.
pub(crate) fn finding(run: &BenchmarkRun, f: &Facts) -> Finding {
    let (kind, title, detail, figures, confidence) = match *f {
        Facts::PeakAboveLimit { peak, limit } => (
            FindingKind::BenchmarkPeakAboveLimit,
            format!("The benchmark's peak of {peak:.0} concurrent requests is above its own limit of {limit}"),
            format!(
                "The client never had more than {limit} requests in flight (--max-concurrency holds that): its 'Peak concurrent requests' counts the requests active within one second, so a request that ended and the next that started in the same second both count. Read it as at most {limit} at once, not as a client that broke its limit."
            ),
            vec![
                Figure::new("peak concurrent requests, as printed", peak, Unit::Requests),
                Figure::new("the client's limit", limit as f64, Unit::Requests),
            ],
            Confidence::High,
        ),
        Facts::PeakBelowMean {
            peak,
            mean,
            accept_length,
        } => (
            FindingKind::BenchmarkPeakBelowMean,
            format!("The benchmark's peak output rate ({peak:.0} tok/s) is below its mean ({mean:.0} tok/s)"),
            format!(
                "A peak cannot be below a mean of the same count: the per-second peak counts streamed chunks, the mean counts tokens.{} Judge the run by its mean output throughput; the peak undercounts.",
                match accept_length {
                    Some(a) => format!(" With speculative decoding each chunk carries ~{a:.2} tokens (its accept length), so the peak counts about 1 in {a:.1} tokens."),
                    None => " A chunk can carry several tokens (speculative decoding, a server that batches its stream).".to_string(),
                }
            ),
            vec![
                Figure::new("peak output throughput, as printed", peak, Unit::TokPerS),
                Figure::new("mean output throughput", mean, Unit::TokPerS),
            ],
            Confidence::High,
        ),
        Facts::StalledStream {
            max_itl_s,
            mean_itl_s,
            burst,
            pd,
        } => {
            let minutes = max_itl_s >= th::STALLED_STREAM_MINUTES_S;
            let mean = mean_itl_s
                .map(|m| format!(" (the mean ITL is {:.0} ms)", m * 1000.0))
                .unwrap_or_default();
            let why = if minutes {
                " Minutes without a token is no scheduling pause: the server stalled (a hung scheduler, a collective timeout) or the request was retracted and waited to be admitted again; the server log around that time tells which."
            } else if pd {
                " In this PD-disaggregated deployment the decode server runs no prefill passes, and a request's KV pre-allocation and transfer come before its first token (they are in its TTFT): a pause inside a stream is a retraction on the decode server (the request's KV given up, then taken again) or a stalled server; the decode server's log (its retraction lines, its batch lines around the pause) tells which."
            } else if burst {
                " With every request sent at once (request rate inf), SGLang runs prefill passes before decode while new requests can still be admitted, so the first requests' streams pause while the rest prefill; a retraction (the request re-queued) or a stalled server does it too: the server log's prefill and retraction lines around the pause tell which."
            } else {
                " Prefill passes of new requests run before decode while requests can be admitted, a retraction re-queues a request, a stalled server stops them all: the server log's prefill and retraction lines around the pause tell which."
            };
            (
                FindingKind::BenchmarkStalledStream,
                format!("A stream got no token for {max_itl_s:.1} s (the benchmark's max ITL)"),
                format!(
                    "One request waited {max_itl_s:.1} s between two chunks{mean}: hundreds of decode steps without a token for it.{why}"
                ),
                vec![Figure::new("max inter-token latency", max_itl_s, Unit::Seconds)],
                Confidence::High,
            )
        }
        Facts::VisionInput {
            vision_tokens,
            input_tokens,
        } => (
            FindingKind::BenchmarkVisionInput,
            format!("The benchmark's input holds {vision_tokens} vision tokens"),
            format!(
                "{vision_tokens} of its{} input tokens are image or video tokens: a request's time to first token includes encoding them (the vision encoder) before prefill, so TTFT is not queueing and prefill alone; read queueing from the server log's #queue-req, not from TTFT.",
                input_tokens
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default()
            ),
            vec![Figure::new("vision tokens", vision_tokens as f64, Unit::Tokens)],
            Confidence::High,
        ),
        Facts::ShortBurst { duration_s, e2e_s } => (
            FindingKind::BenchmarkShortBurst,
            format!("The benchmark ran {duration_s:.0} s, under {:.0} mean request latencies", th::SHORT_BURST_E2E),
            format!(
                "A request took {e2e_s:.1} s on average and the whole run {duration_s:.1} s: its requests ran in about one wave, so every rate it prints averages the ramp (the batch filling) and the drain (the last requests alone), not a steady state. Run more requests than the concurrency holds at once before comparing its rates with the server's steady rate."
            ),
            vec![
                Figure::new("benchmark duration", duration_s, Unit::Seconds),
                Figure::new("mean end-to-end latency", e2e_s, Unit::Seconds),
            ],
            Confidence::Medium,
        ),
    };
    words::finding(
        kind,
        title,
        detail,
        figures,
        vec![run.source.clone()],
        confidence,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::bench_failures::tests::runs;

    /// real-long dp16 MTP: bench_serving at request rate inf, max concurrency 256: its block
    /// prints 276 peak concurrent requests and a 25,498.55 ms max ITL.
    const DP16: &str = "real-long/ascend-dsr1-dp16-mtp-mixed.log";

    #[test]
    fn a_burst_of_a_real_run() {
        let r = runs(DP16);
        let f = check(&r[0]);
        assert!(
            f.contains(&Facts::PeakAboveLimit {
                peak: 276.0,
                limit: 256
            }),
            "{f:?}"
        );
        let stalled = f
            .iter()
            .find_map(|x| match x {
                Facts::StalledStream {
                    max_itl_s, burst, ..
                } => Some((*max_itl_s, *burst)),
                _ => None,
            })
            .expect("a stopped stream");
        assert!(
            (stalled.0 - 25.49855).abs() < 1e-6 && stalled.1,
            "{stalled:?}"
        );
        // its peak output rate (7957) is above its mean (4010), no vision tokens
        assert!(
            !f.iter()
                .any(|x| matches!(x, Facts::PeakBelowMean { .. } | Facts::VisionInput { .. }))
        );
        let w = finding(&r[0], &f[0]);
        assert_eq!(w.kind, FindingKind::BenchmarkPeakAboveLimit);
        assert!(w.detail.contains("at most 256 at once"), "{}", w.detail);
        let s = f
            .iter()
            .find(|x| matches!(x, Facts::StalledStream { .. }))
            .unwrap();
        assert!(
            finding(&r[0], s)
                .detail
                .contains("prefill passes before decode")
        );
    }

    /// The same block with a peak output rate below its mean and an image input (values edited
    /// on the real block): both are read.
    #[test]
    fn a_peak_below_the_mean_and_vision_tokens() {
        let mut r = runs(DP16).remove(0);
        r.summary.peak_output_tok_per_s = Some(1500.0);
        r.summary.total_input_vision_tokens = Some(65_536);
        r.summary.peak_concurrent_requests = Some(256.0); // at the limit: not above it
        let f = check(&r);
        assert!(!f.iter().any(|x| matches!(x, Facts::PeakAboveLimit { .. })));
        let below = f
            .iter()
            .find(|x| matches!(x, Facts::PeakBelowMean { .. }))
            .expect("below the mean");
        let w = finding(&r, below);
        assert!(w.detail.contains("~2.83 tokens"), "{}", w.detail);
        assert!(f.iter().any(|x| matches!(
            x,
            Facts::VisionInput {
                vision_tokens: 65_536,
                ..
            }
        )));
    }

    /// A max ITL just under the threshold is no stopped stream; minutes are a stall; a run
    /// shorter than two request latencies is one wave.
    #[test]
    fn boundaries() {
        let mut r = runs(DP16).remove(0);
        r.summary.itl.max_s = Some(th::STALLED_STREAM_S - 0.001);
        assert!(
            !check(&r)
                .iter()
                .any(|x| matches!(x, Facts::StalledStream { .. }))
        );
        r.summary.itl.max_s = Some(180.0);
        let f = check(&r);
        let s = f
            .iter()
            .find(|x| matches!(x, Facts::StalledStream { .. }))
            .unwrap();
        assert!(finding(&r, s).detail.contains("the server stalled"));
        r.summary.e2e.mean_s = Some(r.summary.duration_s.unwrap() / 1.5);
        assert!(
            check(&r)
                .iter()
                .any(|x| matches!(x, Facts::ShortBurst { .. }))
        );
        r.summary.e2e.mean_s = Some(r.summary.duration_s.unwrap() / 2.0);
        assert!(
            !check(&r)
                .iter()
                .any(|x| matches!(x, Facts::ShortBurst { .. }))
        );
    }

    /// real-long client-router: bench_serving through a router started with
    /// `--pd-disaggregation` (line 338), max ITL 10,367.87 ms: the decode server runs no
    /// prefill, so the pause is not read as prefill passes before decode (expert reading).
    #[test]
    fn a_stopped_stream_behind_a_pd_router_is_read_as_pd() {
        let r = runs("real-long/ascend-dsr1-pd-client-router.log");
        assert!(r[0].summary.pd_disaggregation);
        let f = check(&r[0]);
        let s = f
            .iter()
            .find(|x| matches!(x, Facts::StalledStream { pd: true, .. }))
            .expect("a stopped stream");
        let w = finding(&r[0], s).detail;
        assert!(w.contains("runs no prefill passes"), "{w}");
        assert!(!w.contains("prefill passes before decode"), "{w}");
    }

    /// real/bench/007: 5,000 prompts at request rate inf with no concurrency limit: a request's
    /// latency is about half the run by construction, so no "one wave" is read (expert reading).
    #[test]
    fn an_unpaced_burst_is_not_read_as_one_wave() {
        let r = runs("real/bench/007-pr2643-v0.4.1post2-dsv3-sharegpt5k.txt");
        assert_eq!(r[0].summary.max_concurrency, None);
        assert!(
            !check(&r[0])
                .iter()
                .any(|x| matches!(x, Facts::ShortBurst { .. }))
        );
    }
}
