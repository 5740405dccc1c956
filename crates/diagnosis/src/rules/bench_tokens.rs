//! # `bench_tokens`: the benchmark counts output tokens the server did not generate
//!
//! **What it detects.** The last benchmark run whose output tokens per successful request
//! (`Total generated tokens / Successful requests`) exceed what the server generated per
//! completed request over the same run (the server's steady gen throughput divided by the
//! benchmark's whole-run request rate) by more than [`th::CLIENT_TOKENS_DISAGREE`] of the
//! client's figure.
//!
//! **Why it matters.** A whole-run request rate can only understate the steady rate (the ramp
//! and the drain are in its duration), so the server's tokens per completed request are, if
//! anything, too high. Fewer than the client counts means the client's output tokens are not
//! the server's: a length requested under `ignore_eos` that the server did not produce, chunks
//! or retokenized text counted as tokens. Its `Output token throughput`, and any rate worked
//! out from its tokens per request, overstate what the server generated; the server's rate is
//! the one to judge.
//!
//! **Evidence it needs.** A benchmark block with successful requests, total generated tokens
//! and its duration; the server log's steady gen throughput of the same run.
//!
//! **What to change.** Judge throughput by the server's rate; check the client's token
//! counting (`ignore_eos`, its tokenizer) before comparing runs by its output tok/s.
//!
//! **Source.** SGLang `bench_serving.py` (`calculate_metrics`: `total_output` counts each
//! request's `output_len`, `retokenized` its text re-encoded), `scheduler_metrics_mixin.py`
//! (`gen throughput`); spec §2.1 and §7.

use crate::narrative::words::{self, num};
use crate::report::{BenchmarkRun, Confidence, Figure, Finding, FindingKind, Rate, Unit};
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Output tokens per successful request the client counts (tokens).
    pub client_tokens_per_request: f64,
    /// Server tokens per completed request: steady gen throughput ÷ the run's request rate
    /// (tokens).
    pub server_tokens_per_request: f64,
    /// `Total generated tokens (retokenized)` per successful request, when printed (tokens).
    pub retokenized_per_request: Option<f64>,
    /// The run's whole-run request rate: successful requests ÷ duration (req/s).
    pub req_per_s: f64,
    /// The server's steady gen throughput (tok/s).
    pub server_tok_per_s: f64,
    /// The client's `Output token throughput` (tok/s).
    pub client_tok_per_s: Option<f64>,
}

/// The rule on one run, against the server's steady rate.
pub fn check(run: &BenchmarkRun, server: Option<&Rate>) -> Option<Facts> {
    let b = &run.summary;
    let ok = b.successful_requests.filter(|&n| n > 0)?;
    let duration = b.duration_s.filter(|&d| d > 0.0)?;
    let client = b.mean_completion_tokens()?;
    let server_tps = server
        .map(|r| r.value)
        .filter(|v| v.is_finite() && *v > 0.0)?;
    let req_per_s = ok as f64 / duration;
    let server_per_req = server_tps / req_per_s;
    (server_per_req < (1.0 - th::CLIENT_TOKENS_DISAGREE) * client).then(|| Facts {
        client_tokens_per_request: client,
        server_tokens_per_request: server_per_req,
        retokenized_per_request: b
            .total_generated_tokens_retokenized
            .map(|t| t as f64 / ok as f64),
        req_per_s,
        server_tok_per_s: server_tps,
        client_tok_per_s: b.output_tok_per_s,
    })
}

/// The finding of the benchmark `run`'s token count `f` against the server's, in this rule's
/// words.
pub(crate) fn finding(run: &BenchmarkRun, f: &Facts) -> Finding {
    let retok = f
        .retokenized_per_request
        .map(|r| {
            format!(" (its own retokenized count, ~{r:.0} per request, is closer to the server's)")
        })
        .unwrap_or_default();
    let mut figures = vec![
        Figure::new(
            "output tokens per request, as the client counts them",
            f.client_tokens_per_request,
            Unit::Tokens,
        ),
        Figure::new(
            "tokens the server generated per completed request",
            f.server_tokens_per_request,
            Unit::Tokens,
        ),
        Figure::new("the run's request rate", f.req_per_s, Unit::ReqPerS),
        Figure::new("server gen throughput", f.server_tok_per_s, Unit::TokPerS),
    ];
    if let Some(c) = f.client_tok_per_s {
        figures.push(Figure::new(
            "the client's output throughput",
            c,
            Unit::TokPerS,
        ));
    }
    words::finding(
        FindingKind::BenchmarkTokensDisagree,
        format!(
            "The benchmark counts ~{:.0} output tokens per request; the server generated ~{:.0} per completed request",
            f.client_tokens_per_request, f.server_tokens_per_request
        ),
        format!(
            "At the benchmark's {:.2} req/s (a whole-run average, which only understates the steady rate), the server's {:.0} tok/s is ~{:.0} tokens per completed request, {:.0}% fewer than the client counts{retok}. \
             The client's output tokens are not the server's: a length requested under ignore_eos that the server did not produce, or chunks or re-encoded text counted as tokens. \
             Its output throughput ({} tok/s) and anything worked out from its tokens per request overstate what the server generated: judge throughput by the server's rate, and check the client's token counting before comparing runs by it.",
            f.req_per_s,
            f.server_tok_per_s,
            f.server_tokens_per_request,
            (1.0 - f.server_tokens_per_request / f.client_tokens_per_request) * 100.0,
            num(f.client_tok_per_s, 0)
        ),
        figures,
        vec![run.source.clone()],
        Confidence::Medium,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RateBasis;
    use crate::rules::bench_failures::tests::runs;

    /// bench_serving 0.5.23 against the simulator: 240 requests of 512 tokens in 111.78 s, 122,880
    /// generated, 66,025 retokenized (lines 27-35 of the console); the server's log of the same
    /// run reads 555 tok/s steady.
    const CONSOLE: &str = "clients/sglang-bench-serving-0.5.23/bench_serving.console.txt";

    fn rate(value: f64) -> Rate {
        Rate {
            value,
            low: None,
            high: None,
            confidence: 0.95,
            unit: crate::report::Unit::TokPerS,
            window_s: 98.0,
            basis: RateBasis::SteadySpan,
            method: String::new(),
            lines: None,
        }
    }

    #[test]
    fn the_client_counts_twice_the_tokens_the_server_generated() {
        let r = runs(CONSOLE);
        let f = check(&r[0], Some(&rate(555.0))).expect("disagree");
        assert_eq!(f.client_tokens_per_request, 512.0);
        assert!((f.req_per_s - 240.0 / 111.78).abs() < 1e-9);
        assert!((f.server_tokens_per_request - 258.5).abs() < 0.5, "{f:?}");
        assert!((f.retokenized_per_request.expect("retok") - 275.1).abs() < 0.1);
        assert_eq!(f.client_tok_per_s, Some(1099.31));
    }

    #[test]
    fn a_server_rate_that_accounts_for_the_tokens_is_no_finding() {
        let r = runs(CONSOLE);
        // 1,099 tok/s is 512 per completed request: they agree
        assert_eq!(check(&r[0], Some(&rate(1099.0))), None);
        // a server faster than the whole-run average (the ramp and drain dilute it) agrees too
        assert_eq!(check(&r[0], Some(&rate(1400.0))), None);
        // no server rate, nothing to compare
        assert_eq!(check(&r[0], None), None);
    }

    #[test]
    fn a_quarter_fewer_is_the_boundary() {
        let r = runs(CONSOLE);
        let per_req = 240.0 / 111.78;
        // exactly 75% of 512 per request: not below it
        assert_eq!(check(&r[0], Some(&rate(0.75 * 512.0 * per_req))), None);
        assert!(check(&r[0], Some(&rate(0.74 * 512.0 * per_req))).is_some());
    }
}
