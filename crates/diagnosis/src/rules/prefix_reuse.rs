//! # `prefix_reuse`: most prompt tokens come from the prefix cache
//!
//! **What it detects.** Over every prefill line of every scheduler, the share of prompt tokens
//! the radix cache served (`#cached-token` against `#new-token + #cached-token`), when it is at
//! least [`th::PREFIX_REUSE_SHARE`] over at least [`th::MIN_PREFIX_REUSE_TOKENS`] prompt tokens.
//!
//! **Why it matters.** A cached prefix costs no prefill compute and no new KV slots: repeated
//! system prompts, multi-turn conversations and agent loops prefill only their new tail. It
//! explains cheap prefills of long prompts, and it is what disabling the radix cache, or a
//! router that scatters a conversation's turns over replicas, would lose.
//!
//! **Evidence it needs.** Prefill lines with `#new-token` and `#cached-token`.
//!
//! **What to change.** Nothing: keep the radix cache on and route a conversation's turns to
//! the same replica (a cache-aware router).
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder` counts a request's prefix match as
//! cached tokens), `scheduler_metrics_mixin.py` (`log_prefill_stats`: `#cached-token`).

use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Prompt tokens the prefill lines computed (`#new-token`).
    pub new_tokens: u64,
    /// Prompt tokens the prefix cache served (`#cached-token`).
    pub cached_tokens: u64,
}

impl Facts {
    /// The cached share of the prompt tokens (fraction).
    pub fn share(&self) -> f64 {
        self.cached_tokens as f64 / (self.new_tokens + self.cached_tokens) as f64
    }
}

/// The rule over every scheduler.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let (new_tokens, cached_tokens) = input.views.iter().fold((0, 0), |(n, c), v| {
        (
            n + v.tl.agg.prefill_new_tokens,
            c + v.tl.agg.prefill_cached_tokens,
        )
    });
    let f = Facts {
        new_tokens,
        cached_tokens,
    };
    (new_tokens + cached_tokens >= th::MIN_PREFIX_REUSE_TOKENS
        && f.share() >= th::PREFIX_REUSE_SHARE)
        .then_some(f)
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct PrefixReuse;

impl Rule for PrefixReuse {
    const NAME: &'static str = "prefix_reuse";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        finding(
            FindingKind::PrefixReuse,
            "Most prompt tokens come from the prefix cache",
            format!(
                "{} of the {} prompt tokens the prefill lines admitted were served from the radix (prefix) cache (#cached-token): only {} were computed. Repeated prefixes (a system prompt, earlier turns, an agent's context) cost no prefill and no new KV slots; keep the radix cache on, and route a conversation's turns to the same replica.",
                crate::narrative::words::share_pct(f.share()),
                f.new_tokens + f.cached_tokens,
                f.new_tokens
            ),
            vec![
                Figure::new(
                    "prompt tokens from the prefix cache",
                    f.cached_tokens as f64,
                    Unit::Tokens,
                ),
                Figure::new("prompt tokens computed", f.new_tokens as f64, Unit::Tokens),
                Figure::new("share from the prefix cache", f.share(), Unit::Fraction),
            ],
            Vec::new(),
            Confidence::High,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{set_field, whole, with_input};

    const REPEATED_PREFIX: &str =
        "real-4/101-dgxspark-gb10-long-prefix-chunked-then-400-ctx-exceeded.log";

    #[test]
    fn a_repeated_long_prefix_is_served_from_the_cache() {
        // 101: 694,391 of 781,109 prompt tokens came from the cache (89%)
        with_input(&whole(REPEATED_PREFIX), |i| {
            let f = check(i).expect("prefix reuse");
            assert_eq!((f.new_tokens, f.cached_tokens), (86_718, 694_391));
            assert!((f.share() - 0.889).abs() < 0.001);
        });
    }

    #[test]
    fn no_cached_tokens_no_finding() {
        with_input(
            &set_field(&whole(REPEATED_PREFIX), "#cached-token", "0"),
            |i| assert_eq!(check(i), None),
        );
    }

    #[test]
    fn the_founding_case_shares_little() {
        // kimi-k25-b2-early: a few hundred cached tokens of each prompt, ~2% in all
        with_input(&whole("scenarios/kimi-k25-b2-early/server.log"), |i| {
            assert_eq!(check(i), None)
        });
    }

    /// real-4/118: 1,206,556 of 1,211,200 prompt tokens from the cache, 99.6%: not printed as
    /// 100% (expert reading); a whole share stays whole.
    #[test]
    fn a_share_just_under_all_is_not_all() {
        with_input(
            &whole(
                "real-4/118-rtxpro6000-v0.5.18dev-agentic-300k-prefix-mamba-mtp-reqtimestats.log",
            ),
            |i| {
                let f = check(i).expect("prefix reuse");
                let w = PrefixReuse::finding(&f, i).detail;
                assert!(w.starts_with("99.6% of the 1211200 prompt tokens"), "{w}");
            },
        );
        assert_eq!(crate::narrative::words::share_pct(0.9996), "99.9%");
        assert_eq!(crate::narrative::words::share_pct(1.0), "100%");
        assert_eq!(crate::narrative::words::share_pct(0.42), "42%");
    }
}
