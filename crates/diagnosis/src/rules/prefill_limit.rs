//! # `prefill_limit`: admission limited by the prefill batch size
//!
//! **What it detects.** With a standing queue, at least [`th::PREFILL_AT_LIMIT_SHARE`] of the
//! steady prefill batches carry `#new-token` within [`th::PREFILL_AT_LIMIT_FRACTION`] of the
//! prefill size limit: `min(chunked_prefill_size, max_prefill_tokens)` when the log or server
//! info gives them, else the largest prefill seen. It also tells when `max_prefill_tokens` is
//! below a single prompt, so that every prefill pass admits exactly one request.
//!
//! **Why it matters.** Queued requests are admitted only as fast as their prompts are
//! prefilled; with the KV cache still having room, the prefill budget is the limit.
//!
//! **Evidence it needs.** At least [`th::MIN_PREFILL_LINES`] steady prefill lines with
//! `#new-token` (and `#new-seq`), a limit of at least [`th::MIN_PREFILL_LIMIT_TOKENS`].
//!
//! **What to change.** A larger `--chunked-prefill-size` / `--max-prefill-tokens` (more
//! activation memory, longer decode pauses), or PD disaggregation; when the budget is below one
//! prompt, raise `--max-prefill-tokens` to a few prompts.
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder`: `rem_input_tokens` from
//! `max_prefill_tokens`, `rem_chunk_tokens` from `chunked_prefill_size`; the first request of a
//! batch may exceed the budget); spec §6.

use crate::evidence::view::{SchedulerView, share};
use crate::report::CapacitySummary;
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Share of steady prefill batches at the limit (fraction).
    pub share_at_limit: f64,
    /// The limit they were judged against (tokens).
    pub limit_tokens: u64,
    /// `Some((max_prefill_tokens, median prompt))` when the budget is below every prompt and
    /// each prefill batch holds one request (tokens).
    pub budget_below_prompt: Option<(u64, u64)>,
}

/// The prefill size limit (tokens): the configured one, capped by what was seen, else the
/// largest prefill seen.
fn limit(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<u64> {
    let observed_max = v.steady_prefill.iter().filter_map(|p| p.new_token).max()?;
    let configured = match (
        cap.chunked_prefill_size.filter(|&c| c > 0),
        cap.max_prefill_tokens,
    ) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Some(
        configured
            .map(|c| c.min(observed_max.max(1)))
            .unwrap_or(observed_max),
    )
}

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Facts> {
    if !v.queued() || v.steady_prefill.len() < th::MIN_PREFILL_LINES {
        return None;
    }
    let limit_tokens = limit(v, cap).filter(|&l| l >= th::MIN_PREFILL_LIMIT_TOKENS)?;
    let share_at_limit = share(&v.steady_prefill, |p| {
        p.new_token
            .map(|n| n as f64 >= th::PREFILL_AT_LIMIT_FRACTION * limit_tokens as f64)
    })?;
    if share_at_limit < th::PREFILL_AT_LIMIT_SHARE {
        return None;
    }
    let seqs: Vec<u64> = v.steady_prefill.iter().filter_map(|p| p.new_seq).collect();
    let prompts: Vec<u64> = v
        .steady_prefill
        .iter()
        .filter_map(|p| p.new_token)
        .collect();
    let one_each = !seqs.is_empty() && seqs.iter().all(|&n| n == 1);
    let budget_below_prompt = match (cap.max_prefill_tokens, prompts.iter().min()) {
        (Some(b), Some(&p)) if one_each && p > b => {
            throughput_stats::median_u64(&prompts).map(|m| (b, m))
        }
        _ => None,
    };
    Some(Facts {
        share_at_limit,
        limit_tokens,
        budget_below_prompt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const CHUNKS: &str = "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log";
    const COMPOSE: &str = "real/026-i6901-docker-compose-prefix-prefill.log";

    fn check_lines(lines: &str, cap: &CapacitySummary) -> Option<Facts> {
        with_input(lines, |i| check(&i.views[0], cap))
    }

    #[test]
    fn full_chunks_while_the_queue_waits() {
        let f = check_lines(&whole(CHUNKS), &CapacitySummary::default()).expect("prefill bound");
        assert_eq!(f.limit_tokens, 8192);
        assert_eq!(f.share_at_limit, 1.0);
        assert_eq!(f.budget_below_prompt, None);
        let f = check_lines(&whole(COMPOSE), &CapacitySummary::default()).expect("prefill bound");
        assert_eq!(f.limit_tokens, 15000);
    }

    #[test]
    fn no_queue_or_one_line_is_not_prefill_bound() {
        let none = CapacitySummary::default();
        assert_eq!(
            check_lines(&set_field(&whole(CHUNKS), "#queue-req", "0"), &none),
            None
        );
        assert_eq!(check_lines(&excerpt(COMPOSE, 1..=1), &none), None);
    }

    #[test]
    fn a_budget_below_one_prompt_admits_one_request_per_pass() {
        let one_each = set_field(&whole(COMPOSE), "#new-seq", "1");
        let cap = CapacitySummary {
            max_prefill_tokens: Some(1500),
            ..CapacitySummary::default()
        };
        let f = check_lines(&one_each, &cap).expect("prefill bound");
        assert_eq!(f.budget_below_prompt, Some((1500, 15000)));
        // A limit under 512 tokens is no throughput limit worth naming.
        let small = set_field(&whole(COMPOSE), "#new-token", "300");
        assert_eq!(check_lines(&small, &CapacitySummary::default()), None);
    }
}
