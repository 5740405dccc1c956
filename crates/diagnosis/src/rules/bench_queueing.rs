//! # `bench_queueing`: requests waited for their first token
//!
//! **What it detects.** A benchmark whose mean TTFT is at least [`th::TTFT_REPORTED_S`] and at
//! least [`th::TTFT_SHARE_REPORTED`] of the mean end-to-end latency (printed, or TTFT + TPOT ×
//! (mean output − 1) when the block prints no E2E).
//!
//! **Why it matters.** A request's time to first token is its wait in the server's queue, its
//! prefill, and whatever comes before the server (tokenizing, a chat template, the network).
//! A client summary cannot tell these apart: the finding says so and sends the user to the
//! server log, whose `#queue-req` and prefill lines do. With completions under
//! [`th::PREFILL_ONLY_OUTPUT_TOKENS`] (`prefill_only`) a request is almost all prefill: the
//! share is large by construction and the run measures prefill, not decode.
//!
//! **Evidence it needs.** A benchmark block with TTFT and E2E (or TPOT and output tokens).
//!
//! **What to change.** Read the server log for why admission stalls (the KV cache,
//! `max_running_requests`); when the server queues, more requests in flight only lengthen the
//! wait. A prefill-only run is read by its total token rate.
//!
//! **Source.** SGLang `bench_serving.py` (`calculate_metrics`; TPOT = (E2E − TTFT) / (output − 1));
//! spec §7.

use crate::narrative::words::{self, bottleneck_label, num};
use crate::report::{BenchmarkRun, Bottleneck, Confidence, Figure, Finding, FindingKind, Unit};
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Mean TTFT (seconds).
    pub ttft_s: f64,
    /// Mean end-to-end latency (seconds).
    pub e2e_s: f64,
    /// TTFT over E2E (fraction).
    pub share: f64,
    /// Whether E2E was estimated from TTFT and TPOT.
    pub e2e_estimated: bool,
    /// Whether the share is large enough to be sure ([`th::TTFT_SHARE_SURE`]).
    pub sure: bool,
    /// Mean completion tokens below [`th::PREFILL_ONLY_OUTPUT_TOKENS`]: the run measures
    /// prefill.
    pub prefill_only: bool,
}

/// The rule on one run.
pub fn check(run: &BenchmarkRun) -> Option<Facts> {
    let b = &run.summary;
    let (ttft, e2e) = (b.ttft.mean_s?, run.mean_e2e_s()?);
    if e2e <= 0.0 || ttft < th::TTFT_REPORTED_S {
        return None;
    }
    let share = ttft / e2e;
    (share >= th::TTFT_SHARE_REPORTED).then_some(Facts {
        ttft_s: ttft,
        e2e_s: e2e,
        share,
        e2e_estimated: b.e2e.mean_s.is_none(),
        sure: share >= th::TTFT_SHARE_SURE,
        prefill_only: b
            .mean_completion_tokens()
            .is_some_and(|o| o < th::PREFILL_ONLY_OUTPUT_TOKENS),
    })
}

/// The finding of queueing `f` in the benchmark `run`, in this rule's words; `bottleneck` is the server-side verdict from
/// the logs; `overcounted`: the client counts output tokens the server did not generate
/// (`super::bench_tokens`).
pub(crate) fn finding(
    run: &BenchmarkRun,
    f: &Facts,
    bottleneck: Bottleneck,
    overcounted: bool,
) -> Finding {
    let b = &run.summary;
    let inf = b.request_rate.as_deref() == Some("inf");
    let submitted = match (b.request_rate_per_s(), b.max_concurrency) {
        (None, None) if inf => {
            "The benchmark sent every request at once (request rate inf, no concurrency limit)"
                .to_string()
        }
        (None, None) => {
            "The benchmark's request rate and concurrency limit are not in its summary".to_string()
        }
        (None, Some(m)) if inf => {
            format!("The benchmark kept up to {m} requests in flight (request rate inf)")
        }
        (None, Some(m)) => format!("The benchmark kept up to {m} requests in flight"),
        (Some(r), None) => {
            format!("The benchmark sent {r} requests per second with no concurrency limit")
        }
        (Some(r), Some(m)) => {
            format!("The benchmark sent {r} requests per second, at most {m} in flight")
        }
    };
    let e2e_from = if f.e2e_estimated {
        " (end to end estimated as TTFT + TPOT × (mean output tokens − 1): the summary prints no E2E latency)"
    } else {
        ""
    };
    let prompt = match b.mean_prompt_tokens() {
        Some(p) if p >= th::LONG_PROMPT_TOKENS => {
            format!(" Prompts average {p:.0} tokens: prefill itself takes a real share of it.")
        }
        Some(p) => format!(" Prompts average {p:.0} tokens."),
        None => String::new(),
    };
    let server = match bottleneck {
        // vLLM's client may stand in front of any server: say what tells for an SGLang one
        Bottleneck::NoSchedulerLines if b.client == sglang_log::BenchClient::VllmBenchServe => {
            " Which part is queueing and which is prefill (or time before the server: tokenizing, a chat template, the network) a client summary cannot tell; \
             the server's own log does: if the server is SGLang, its #queue-req and Prefill batch lines, which this tool reads (it reads no vLLM server log)."
                .to_string()
        }
        Bottleneck::NoSchedulerLines => {
            " Which part is queueing and which is prefill (or time before the server: tokenizing, a chat template, the network) a client summary cannot tell; \
             the server log (its #queue-req and Prefill batch lines) tells: give it to this tool."
                .to_string()
        }
        other => format!(" The server log says: {}.", bottleneck_label(other)),
    };
    let output = match b.mean_completion_tokens() {
        Some(o) if f.prefill_only => format!(
            " Completions average {o:.1} tokens: a request is almost all prefill, so its TTFT is most of its latency by construction, and the output rate ({} tok/s) \
             does not measure decode; the run's throughput is its total {} tok/s, nearly all prompt tokens.",
            num(b.output_tok_per_s, 0),
            num(b.total_tok_per_s, 0)
        ),
        // the client counts tokens the server did not generate (`bench_tokens`): its output
        // rate is no measure of what the admitted requests achieve
        _ if overcounted => " Its output throughput counts tokens the server did not generate (see the finding on its token count), so it is no measure of the server; if the server queues, more requests in flight only lengthen the wait.".to_string(),
        _ => format!(
            " Output throughput ({} tok/s over the whole run) is what the admitted requests achieve; if the server queues, more requests in flight only lengthen the wait.",
            num(b.output_tok_per_s, 0)
        ),
    };
    let cap = if b.client == sglang_log::BenchClient::VllmBenchServe {
        "max_running_requests in SGLang, max_num_seqs in vLLM"
    } else {
        "max_running_requests"
    };
    words::finding(
        FindingKind::BenchmarkQueueing,
        format!(
            "Requests spent {:.0}% of their latency before the first token (mean TTFT {:.1} s of {:.1} s end to end)",
            f.share * 100.0,
            f.ttft_s,
            f.e2e_s
        ),
        format!(
            "{submitted}{e2e_from}. A request's time to first token is its wait in the server's queue (the server admits only as many requests as its KV cache \
             and its running cap ({cap}) allow) plus its prefill.{prompt}{server}{output}"
        ),
        vec![
            Figure::new("mean TTFT", f.ttft_s, Unit::Seconds),
            Figure::new("mean end-to-end latency", f.e2e_s, Unit::Seconds),
            Figure::new("TTFT share of latency", f.share, Unit::Fraction),
        ],
        vec![run.source.clone()],
        if f.sure {
            Confidence::High
        } else {
            Confidence::Medium
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::bench_failures::tests::runs;

    #[test]
    fn more_than_half_of_the_latency_before_the_first_token() {
        let r = runs("real/bench/001-i2805-sglang-0.4.0-sharegpt-partial-success.txt");
        let f = check(&r[0]).expect("queueing");
        assert!((f.share - 0.55).abs() < 0.01, "{f:?}");
        assert!(f.sure && !f.e2e_estimated && !f.prefill_only);
    }

    #[test]
    fn completions_of_a_few_tokens_measure_prefill() {
        // vLLM benchmark_serving: 746 tokens generated for 100 requests of 777-token prompts
        // (lines 7-8): TTFT is 70% of the latency because a request is almost all prefill.
        let r =
            runs("real-4/bench/103-NEGATIVE-vllm-i9722-benchmark-serving-conc10-tiny-output.txt");
        let f = check(&r[0]).expect("share");
        assert!(f.prefill_only && f.e2e_estimated, "{f:?}");
        assert!((f.share - 0.70).abs() < 0.01, "{f:?}");
        // a vLLM client: engine-neutral words, and no promise to read a vLLM server's log
        let w = finding(&r[0], &f, Bottleneck::NoSchedulerLines, false).detail;
        assert!(w.contains("max_num_seqs in vLLM"), "{w}");
        assert!(w.contains("if the server is SGLang"), "{w}");
        assert!(!w.contains("give it to this tool"), "{w}");
        // 1,024-token completions (003, 20480 / 20) are decode
        let r = runs("real-3/bench/003-achatbot-pr183-gpt-oss-20b-h100-sglang-oai.txt");
        let f = check(&r[0]).expect("share");
        assert!(!f.prefill_only, "{f:?}");
    }

    #[test]
    fn a_tenth_is_not_reported() {
        let r = runs("real/bench/002-i8285-sglang-ttft-unstable-rate330.txt");
        assert_eq!(check(&r[0]), None);
    }

    #[test]
    fn e2e_estimated_from_tpot_when_not_printed() {
        // vLLM's `bench serve` prints no E2E line: TTFT + TPOT × (output − 1) stands for it.
        let r = runs("real/bench/004-vllm-pr40852-2x-rtx-pro-6000-maxq-dsv4.txt");
        let f = check(&r[0]).expect("queueing");
        assert!(f.e2e_estimated);
        let r = runs("real/bench/005-pr17216-sglang-decode-offload-16k-peak-fields.txt");
        let f = check(&r[0]).expect("queueing");
        assert!(!f.e2e_estimated);
        assert!((f.share - 0.29).abs() < 0.01, "{f:?}");
    }
}
