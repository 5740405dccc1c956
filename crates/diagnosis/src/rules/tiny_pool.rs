//! # `tiny_pool`: the KV pool holds only a few thousand tokens
//!
//! **What it detects.** A pool below [`th::TINY_POOL_TOKENS`] (from `max_total_num_tokens`, or
//! inferred as `#token / token usage` from a decode line at [`th::POOL_INFERENCE_MIN_USAGE`] or
//! more) on a scheduler whose usage peaks at [`th::TINY_POOL_MIN_USAGE`] or more.
//!
//! **Why it matters.** Far below what any GPU gives: `--max-total-tokens` or a very low
//! `mem_fraction_static` is set, or the run is a reproduction with an artificial cap. Any real
//! load will be KV-bound, whatever else is tuned.
//!
//! **Evidence it needs.** The pool size (startup line or server info) or decode lines with
//! `#token` and `token usage`.
//!
//! **What to change.** Remove `--max-total-tokens`, or give the pool its memory back.
//!
//! **At startup** ([`few_full_context`]): a pool that holds fewer than
//! [`th::FULL_CONTEXT_REQUESTS_MIN`] requests of the full `context_len` (from the startup's
//! capacity line), whatever the batch lines say: long requests will queue one at a time.
//!
//! **Source.** SGLang `model_runner.py` (`profile_max_num_token`, capped by
//! `max_total_tokens`); `token usage = #token / max_total_num_tokens`, spec §2.1.

use crate::narrative::words::{finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// The pool, and where it was seen.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Pool size (tokens).
    pub pool_tokens: f64,
    /// Whether it was inferred from `#token / token usage` (else read from the startup line).
    pub inferred: bool,
    /// The scheduler's batch lines.
    pub evidence: Option<SourceRange>,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    input.views.iter().find_map(|v| {
        let inferred =
            v.tl.decode
                .samples()
                .iter()
                .filter_map(|d| Some((d.tokens? as f64, d.usage?)))
                .find(|(_, u)| *u >= th::POOL_INFERENCE_MIN_USAGE)
                .map(|(t, u)| t / u);
        let configured = input.capacity.max_total_num_tokens.map(|p| p as f64);
        let pool = configured.or(inferred)?;
        let busy = v.tl.agg.max_usage.unwrap_or(0.0) >= th::TINY_POOL_MIN_USAGE;
        (pool < th::TINY_POOL_TOKENS && busy).then(|| Facts {
            pool_tokens: pool,
            inferred: configured.is_none(),
            evidence: input.timeline_range(v.tl),
        })
    })
}

/// The pool against the context length.
#[derive(Clone, Debug, PartialEq)]
pub struct FullContext {
    /// Pool size (tokens).
    pub pool_tokens: u64,
    /// `context_len` (tokens).
    pub context_len: u64,
    /// Full-context requests the pool holds (requests).
    pub requests: f64,
}

/// The startup rule (see the module doc).
pub fn few_full_context(input: &Input<'_>) -> Option<FullContext> {
    let pool_tokens = input.capacity.max_total_num_tokens?;
    let context_len = input.capacity.context_len.filter(|c| *c > 0)?;
    let requests = pool_tokens as f64 / context_len as f64;
    (requests < th::FULL_CONTEXT_REQUESTS_MIN).then_some(FullContext {
        pool_tokens,
        context_len,
        requests,
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct TinyPool;

impl Rule for TinyPool {
    const NAME: &'static str = "tiny_pool";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let out = finding(
            FindingKind::TinyKvPool,
            "The KV pool is tiny",
            format!(
                "The pool holds only ~{:.0} tokens ({}), far below what a GPU normally gives: --max-total-tokens or a very low mem_fraction_static is set, or the run is a reproduction with an artificial cap. Any real load will be KV-bound.",
                f.pool_tokens,
                if f.inferred {
                    "from #token / token usage"
                } else {
                    "max_total_num_tokens"
                }
            ),
            vec![Figure::new("KV pool size", f.pool_tokens, Unit::Tokens)],
            f.evidence.clone().into_iter().collect(),
            Confidence::Medium,
        );
        with_levers(out, &[Lever::MemFractionStatic])
    }
}

/// A pool of few full-context requests ([`few_full_context`]) as a registered rule: judged on a
/// log of startup lines only ([`Input::no_decode_lines`]), where the capacity the startup
/// fixed is what can be judged.
#[derive(Clone, Copy, Debug)]
pub struct FewFullContext;

impl Rule for FewFullContext {
    const NAME: &'static str = "tiny_pool";
    type Facts = FullContext;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = FullContext> {
        input
            .no_decode_lines()
            .then(|| few_full_context(input))
            .flatten()
    }

    fn finding(f: &FullContext, _input: &Input<'_>) -> Finding {
        Finding {
            kind: FindingKind::TinyKvPool,
            title: format!(
                "The KV pool holds only {:.1} full-context requests ({} tokens for a {}-token context)",
                f.requests, f.pool_tokens, f.context_len
            ),
            detail: "Two requests of the full context length cannot run together: long requests will run one at a time and the rest queue. Give the pool more memory (--mem-fraction-static, fewer CUDA graphs), a larger --tp, fp8 KV (--kv-cache-dtype fp8_e4m3), or lower --context-length to what the workload needs.".to_string(),
            figures: vec![
                Figure::new("KV pool size", f.pool_tokens as f64, Unit::Tokens),
                Figure::new("context length", f.context_len as f64, Unit::Tokens),
            ],
            evidence: vec![],
            confidence: Confidence::Medium,
            levers: vec![Lever::MemFractionStatic, Lever::KvCacheDtype],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{set_field, whole, with_input};

    const TINY: &str = "real/008-i14972-overlap-retract-alloc-fail.log";

    #[test]
    fn two_thousand_tokens_is_tiny() {
        with_input(&whole(TINY), |i| {
            let f = check(i).expect("tiny pool");
            assert!((f.pool_tokens - 1920.0 / 0.94).abs() < 0.5, "{f:?}");
            assert!(f.inferred);
        });
    }

    #[test]
    fn a_normal_pool_is_not_tiny() {
        with_input(
            &whole("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log"),
            |i| assert_eq!(check(i), None),
        );
    }

    const GB200: &str = "real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log";

    #[test]
    fn ten_full_context_requests_are_enough() {
        with_input(&whole(GB200), |i| assert_eq!(few_full_context(i), None));
    }

    #[test]
    fn a_pool_of_one_and_a_half_full_context_requests() {
        // the real startup line with a 196,608-token pool for a 131,072-token context
        let text = crate::rules::testing::edit(
            &whole(GB200),
            "max_total_num_tokens=1339395",
            "max_total_num_tokens=196608",
        );
        with_input(&text, |i| {
            let f = few_full_context(i).expect("few");
            assert_eq!((f.pool_tokens, f.context_len), (196_608, 131_072));
            assert!((f.requests - 1.5).abs() < 1e-9);
        });
    }

    #[test]
    fn an_idle_tiny_pool_does_not_matter() {
        // #token 1920 at usage 0.40: a 4,800-token pool, but it never fills past half.
        with_input(&set_field(&whole(TINY), "token usage", "0.40"), |i| {
            assert_eq!(check(i), None)
        });
    }
}
