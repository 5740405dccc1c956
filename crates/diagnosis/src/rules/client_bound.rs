//! # `client_bound`: the server runs what it is given
//!
//! **What it detects.** Requests queue on fewer than [`th::LOW_LOAD_QUEUED_SHARE`] of the
//! steady lines and the KV pool is not full. A queue nobody reported (no `#queue-req`, a NaN
//! gauge) is unknown, not empty: then this rule does not hold.
//!
//! **Why it matters.** With nothing waiting and room in the pool, server tuning cannot raise
//! throughput: only more concurrent requests can, until the pool or compute is the limit.
//!
//! **Evidence it needs.** Steady batch lines with `#queue-req` and `token usage`.
//!
//! **What to change.** Send more requests at once from the client (raise its concurrency).
//!
//! **Source.** SGLang `scheduler_metrics_mixin.py` (`#queue-req` is the waiting queue's length
//! when the line is printed); Little's law.

use crate::evidence::view::SchedulerView;
use crate::thresholds as th;

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>) -> bool {
    v.queued_share
        .is_some_and(|s| s < th::LOW_LOAD_QUEUED_SHARE)
        && !v.kv_full()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{only, set_field, whole, with_input};

    const DP_EP: &str = "real/023-pr17392-dp-ep-decode-prealloc-generate.log";

    fn check_lines(lines: &str, expected: bool) {
        with_input(lines, |i| assert_eq!(check(&i.views[0]), expected));
    }

    #[test]
    fn nothing_waits_and_the_pool_has_room() {
        check_lines(&only(&whole(DP_EP), "DP0"), true);
    }

    #[test]
    fn a_standing_queue_is_not_client_bound() {
        check_lines(
            &set_field(&only(&whole(DP_EP), "DP0"), "#queue-req", "3"),
            false,
        );
    }

    #[test]
    fn an_unknown_queue_is_not_an_empty_one() {
        let no_queue: String = only(&whole(DP_EP), "DP0")
            .lines()
            .map(|l| format!("{}\n", l.replace(", #queue-req: 0", "")))
            .collect();
        check_lines(&no_queue, false);
    }

    #[test]
    fn a_full_pool_is_not_client_bound() {
        check_lines(
            &set_field(&only(&whole(DP_EP), "DP0"), "token usage", "0.95"),
            false,
        );
        check_lines(
            &set_field(&only(&whole(DP_EP), "DP0"), "token usage", "0.89"),
            true,
        );
    }
}
