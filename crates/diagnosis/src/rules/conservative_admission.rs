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
//! **Evidence it needs.** Steady batch lines with `#queue-req` and `token usage`.
//!
//! **What to change.** Lower `--schedule-conservativeness` (e.g. 0.7), or send `max_tokens`
//! closer to the real completion lengths; watch for retractions afterwards.
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder.rem_total_tokens` with
//! `new_token_ratio`), `server_args.py` (`schedule_conservativeness`); tuning guide.

use crate::evidence::view::SchedulerView;
use crate::thresholds as th;

/// The rule on one scheduler: `Some(median token usage)` when requests wait with room left.
pub fn check(v: &SchedulerView<'_>) -> Option<f64> {
    let u = v.median_usage()?;
    (v.queued() && u < th::KV_FULL_USAGE).then_some(u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{set_field, whole, with_input};

    const NPU_MTP: &str = "real/025-sgl-kernel-npu-pr608-tp-ep-prefix-mtp.log";

    fn check_lines(lines: &str, expected: Option<f64>) {
        with_input(lines, |i| assert_eq!(check(&i.views[0]), expected));
    }

    #[test]
    fn a_queue_at_two_thirds_usage() {
        with_input(&whole(NPU_MTP), |i| {
            let u = check(&i.views[0]).expect("conservative");
            assert!((0.63..=0.66).contains(&u), "{u}");
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
