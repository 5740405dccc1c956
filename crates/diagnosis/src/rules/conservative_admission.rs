//! # `conservative_admission`: requests wait although the KV pool has room
//!
//! **What it detects.** A standing queue (on at least [`th::QUEUED_SHARE`] of the lines) while
//! the median token usage stays below [`th::KV_FULL_USAGE`], and no cap or prefill limit (the
//! rules before it in `crate::verdict`) explains it.
//!
//! **Why it matters.** SGLang reserves KV for each running request's remaining `max_new_tokens`
//! (scaled by `new_token_ratio`) before admitting more; large `max_tokens` make it hold back
//! while the pool is not full, so fewer requests decode at once than the pool could hold.
//!
//! **Evidence it needs.** Steady batch lines with `#queue-req` and `token usage`. When the
//! pool's size is known (from `#token` / `token usage`) and even the largest reservation the
//! running requests could hold (each at most `CLIP_MAX_NEW_TOKENS` = 4096 tokens at
//! `new_token_ratio` 1.0), plus the waiting request's own, stays under half the free pool, the
//! reservation cannot be what holds the queue back: the rule does not hold (the queue is
//! something else: a prefill schedule policy, a PD handshake, a grammar or LoRA load). Nor does
//! it hold on a PD prefill node ([`SchedulerView::is_pd_prefill`]): SGLang sets every request's
//! `max_new_tokens` to 1 there "so PrefillAdder memory estimation is accurate"
//! (`disaggregation/prefill.py`, `PrefillBootstrapQueue._process_req`), so no decode reserve
//! exists for `--schedule-conservativeness` to shrink.
//!
//! **What to change.** Lower `--schedule-conservativeness` (e.g. 0.7), or send `max_tokens`
//! closer to the real completion lengths; watch for retractions afterwards.
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder.rem_total_tokens` with
//! `new_token_ratio`), `server_args.py` (`schedule_conservativeness`); tuning guide.

use crate::evidence::view::SchedulerView;
use crate::report::{Confidence, FindingKind, Lever};
use crate::rules::VerdictWords;
use crate::thresholds as th;

pub use crate::thresholds::CLIP_MAX_NEW_TOKENS;

/// A lower bound of the KV pool (tokens) from the steady decode lines: `#token / token usage`,
/// the usage rounded up by the half-hundredth SGLang's two decimals may have dropped.
fn pool_lower_bound(v: &SchedulerView<'_>) -> Option<f64> {
    v.steady_decode
        .iter()
        .filter_map(|d| Some(d.tokens? as f64 / (d.usage? + 0.005)))
        .reduce(f64::max)
}

/// Whether the decode reservation could hold the queue back (see the module doc); `true` when
/// the pool's size is unknown.
pub fn reservation_could_explain(v: &SchedulerView<'_>) -> bool {
    let (Some(pool), Some(u), Some(running)) = (
        pool_lower_bound(v),
        v.median_usage(),
        v.steady.iter().filter_map(|o| o.running).max(),
    ) else {
        return true;
    };
    let most_reserved = (running as f64 + 1.0) * CLIP_MAX_NEW_TOKENS;
    most_reserved >= th::RESERVATION_FREE_SHARE * (1.0 - u) * pool
}

/// The rule on one scheduler: `Some(median token usage)` when requests wait with room left and
/// the reservation could be why.
pub fn check(v: &SchedulerView<'_>) -> Option<f64> {
    if v.is_pd_prefill() {
        return None;
    }
    let u = v.median_usage()?;
    (v.queued() && u < th::KV_FULL_USAGE && reservation_could_explain(v)).then_some(u)
}

/// The finding of a `scheduler_conservative` verdict in this rule's words.
pub(crate) fn finding() -> VerdictWords {
    let (kind, title, detail, confidence) = (
        FindingKind::SchedulerConservative,
        "Scheduler too conservative".to_string(),
        format!(
            "Requests queue while token usage stays below {}-{}. SGLang reserves KV for each request's remaining max_new_tokens (x new_token_ratio) before admitting more; \
                 large max_tokens make it hold back. Lower --schedule-conservativeness (e.g. 0.5-0.8) or send realistic max_tokens; watch for retractions afterwards.",
            th::CONSERVATIVE_USAGE,
            th::KV_FULL_USAGE
        ),
        Confidence::Medium,
    );
    VerdictWords::new(kind, title, detail, confidence)
        .levers(vec![Lever::ScheduleConservativeness, Lever::MaxTokens])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{set_field, whole, with_input};

    const NPU_MTP: &str = "real/025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log";

    fn check_lines(lines: &str, expected: Option<f64>) {
        with_input(lines, |i| assert_eq!(check(&i.views[0]), expected));
    }

    /// real/065, a PD prefill node (`#bootstrap-req` / `#inflight-req` on both prefill lines)
    /// with 7 queued at usage 0.01: no decode reserve on a prefill node, not this rule; the
    /// same lines without the PD queues (a plain server) are.
    #[test]
    fn not_on_a_pd_prefill_node() {
        const NIXL: &str = "real/065-nixl-i1983-pd-prefill-transfer-disconnect.log";
        with_input(&whole(NIXL), |i| {
            assert!(i.views[0].is_pd_prefill());
            assert_eq!(check(&i.views[0]), None);
        });
        let plain = crate::rules::testing::edit(
            &crate::rules::testing::edit(&whole(NIXL), "#inflight-req: 1, ", ""),
            "#inflight-req: 2, ",
            "",
        );
        with_input(&plain, |i| {
            assert!(!i.views[0].is_pd_prefill());
            assert!(check(&i.views[0]).is_some());
        });
    }

    #[test]
    fn a_queue_at_two_thirds_usage() {
        with_input(&whole(NPU_MTP), |i| {
            let u = check(&i.views[0]).expect("conservative");
            assert!((0.63..=0.66).contains(&u), "{u}");
        });
    }

    #[test]
    fn a_queue_at_an_empty_pool_is_not_the_reservation() {
        // 059: one request runs (#token 128-512, usage 0.00) while one waits for ~400 forward
        // iterations: no reservation of one running request fills a pool of 100k+ tokens.
        let lines = whole("real/059-npu-doc-forward-iteration-numbers-prefill-decode-interval.log");
        with_input(&lines, |i| {
            assert!(i.views[0].queued());
            assert!(!reservation_could_explain(&i.views[0]));
            assert_eq!(check(&i.views[0]), None);
        });
        // 025: 24 running hold up to ~100k of the ~120k free tokens: it could.
        with_input(&whole(NPU_MTP), |i| {
            assert!(reservation_could_explain(&i.views[0]))
        });
    }

    #[test]
    fn no_queue_is_not_conservative() {
        check_lines(&set_field(&whole(NPU_MTP), "#queue-req", "0"), None);
    }

    #[test]
    fn a_full_pool_is_not_conservative() {
        check_lines(&set_field(&whole(NPU_MTP), "token usage", "0.90"), None);
        check_lines(
            &set_field(&whole(NPU_MTP), "token usage", "0.89"),
            Some(0.89),
        );
    }
}
