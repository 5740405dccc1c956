//! # `client_bound`: the server runs what it is given
//!
//! **What it detects.** Requests queue on fewer than [`th::LOW_LOAD_QUEUED_SHARE`] of the
//! steady lines and the KV pool is not full. A queue nobody reported (no `#queue-req`, a NaN
//! gauge) is unknown, not empty: then this rule does not hold.
//!
//! **Why it matters.** With nothing waiting and room in the pool, server tuning cannot raise
//! throughput: only more concurrent requests can, until the pool or compute is the limit.
//!
//! **Evidence it needs.** Steady batch lines with `#queue-req` and `token usage`. A single
//! line is an instant: it is read as the server's state only when it looks healthy; one whose
//! decode crawls ([`lone_reading`]) is `inconclusive`, saying so.
//!
//! **What to change.** Send more requests at once from the client (raise its concurrency).
//!
//! **Source.** SGLang `scheduler_metrics_mixin.py` (`#queue-req` is the waiting queue's length
//! when the line is printed); Little's law.

use crate::evidence::view::SchedulerView;
use crate::narrative::words::pool_room_clause;
use crate::report::{Confidence, FindingKind, Lever};
use crate::rules::VerdictWords;
use crate::thresholds as th;

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>) -> bool {
    !lone_reading(v)
        && v.queued_share
            .is_some_and(|s| s < th::LOW_LOAD_QUEUED_SHARE)
        && !v.kv_full()
}

/// The scheduler's steady span holds fewer than [`th::MIN_CLIENT_BOUND_LINES`] batch lines
/// and requests wait on it, or its one decode reading gives each running request less than
/// [`th::SLOW_DECODE_TOK_PER_REQ`] while running as a CUDA graph (or without the flag): an
/// instant that cannot tell a window spanning idle time (SGLang divides the tokens since the
/// previous decode line by the time since then) from steps that hang. Neither "underfed" nor
/// "slow decode" follows. Not when the running count is pinned at one value on every rank's
/// lines (`SchedulerView::pinned_across_ranks`): the ranks together are the evidence then.
pub fn lone_reading(v: &SchedulerView<'_>) -> bool {
    if v.steady.len() >= th::MIN_CLIENT_BOUND_LINES || v.pinned_across_ranks.is_some() {
        return false;
    }
    // requests wait on the one line: why they wait (the admission reserve, a cap the log does
    // not print, a burst not admitted yet) is a question of a span, not of an instant; the
    // limits one line can show (a full pool, the configured cap) come before this step
    if v.queued() {
        return true;
    }
    let d = v.tl.decode.samples();
    match d {
        [one] => {
            one.graph != Some(false)
                && one.running.is_some_and(|r| r > 0)
                && one
                    .gen_tps
                    .zip(one.running)
                    .is_some_and(|(g, r)| g / (r as f64) < th::SLOW_DECODE_TOK_PER_REQ)
        }
        _ => false,
    }
}

/// The finding of a `client_bound` verdict in this rule's words, on the scheduler `v` whose
/// verdict it is: a PD decode node is fed by the prefill side (no client setting to change),
/// any other server by its client (its concurrency).
pub(crate) fn finding(v: &SchedulerView<'_>) -> VerdictWords {
    let (kind, title, detail, confidence, levers) = if v.is_pd_decode() {
        // a PD decode node's load comes from the prefill side, not from a client setting
        let (kind, title, detail, confidence) = (
            FindingKind::ClientBound,
            "PD decode node fed by the prefill side".to_string(),
            format!(
                "Nearly nothing waits on this PD decode node (its #queue-req and #prealloc-req stay near 0){}: it decodes what the prefill side hands over. \
                     If the prefill nodes show a standing bootstrap queue, the handoff is the slow part (the bootstrap handshake, the KV transfer backend), not this node's capacity; \
                     otherwise the prefill nodes or the router receive too little load.",
                pool_room_clause(&v.pool_room),
            ),
            Confidence::Medium,
        );
        (kind, title, detail, confidence, Vec::new())
    } else {
        let (kind, title, detail, confidence) = (
            FindingKind::ClientBound,
            "Client too slow / not enough load".to_string(),
            format!(
                "Nearly nothing waits in the queue{}: the server runs what it is given. More throughput needs more concurrent requests from the client (raise its concurrency){}; server settings can only make each step faster.",
                pool_room_clause(&v.pool_room),
                if v.pool_room.has_room() {
                    ""
                } else {
                    ", and more requests at once need more room in the fullest pool"
                }
            ),
            Confidence::Medium,
        );
        (
            kind,
            title,
            detail,
            confidence,
            vec![Lever::ClientConcurrency],
        )
    };
    VerdictWords::new(kind, title, detail, confidence).levers(levers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, only, set_field, whole, with_input};

    const DP_EP: &str = "real/023-pr17392-dp-ep-decode-prealloc-generate.log";
    /// One request at a time on a TP8 B200: 8 decode lines, 1 running, nothing queued.
    const SINGLE: &str = "real/061-pr7481-dsr1-fp4-tp8-b200-single-stream.log";

    fn check_lines(lines: &str, expected: bool) {
        with_input(lines, |i| assert_eq!(check(&i.views[0]), expected));
    }

    #[test]
    fn nothing_waits_and_the_pool_has_room() {
        check_lines(&whole(SINGLE), true);
    }

    #[test]
    fn a_lone_crawling_reading_is_no_underfed_server() {
        // 024: one line per DP rank, 12 running at 3.83 tok/s with CUDA graphs on: an idle
        // window or a hang, not a client that sends too little
        let dp16 = "real-3/024-pr20766-multinode-dp16-stalled-3tps.log";
        with_input(&whole(dp16), |i| {
            assert!(i.views.iter().all(|v| lone_reading(v) && !check(v)));
        });
        // the same line at 12.00 tok/s per request is a healthy instant: read as it is
        with_input(
            &set_field(&whole(dp16), "gen throughput (token/s)", "144.00"),
            |i| assert!(i.views.iter().all(|v| !lone_reading(v) && check(v))),
        );
    }

    #[test]
    fn one_line_with_a_queue_is_an_instant() {
        // real-3/054: one cut line, 229 running, 28 queued at usage 0.18 and 2.2 tok/s each:
        // why they wait is not in one instant
        let cut = "real-3/054-pr3888-16xa100-int8-truncated-line-start.log";
        with_input(&whole(cut), |i| assert!(lone_reading(&i.views[0])));
        // nothing queued on that line: a healthy instant, read as it is
        with_input(&set_field(&whole(cut), "#queue-req", "0"), |i| {
            assert!(!lone_reading(&i.views[0]))
        });
    }

    #[test]
    fn a_lone_healthy_reading_and_a_span_are_read() {
        // one line of the single stream (line 2: 82 tok/s for 1 request), two lines, and one
        // line of the DP-EP log's DP0 (8 running at 1,044 tok/s)
        check_lines(&excerpt(SINGLE, 2..=2), true);
        check_lines(&excerpt(SINGLE, 2..=3), true);
        check_lines(&only(&whole(DP_EP), "DP0"), true);
        // the single stream's line at 0.99 tok/s for its 1 request: lone and slow
        let slow = set_field(&excerpt(SINGLE, 2..=2), "gen throughput (token/s)", "0.99");
        with_input(&slow, |i| assert!(lone_reading(&i.views[0])));
        let ok = set_field(&excerpt(SINGLE, 2..=2), "gen throughput (token/s)", "1.00");
        with_input(&ok, |i| assert!(!lone_reading(&i.views[0])));
    }

    #[test]
    fn a_standing_queue_is_not_client_bound() {
        check_lines(&set_field(&whole(SINGLE), "#queue-req", "3"), false);
    }

    #[test]
    fn an_unknown_queue_is_not_an_empty_one() {
        let no_queue: String = whole(SINGLE)
            .lines()
            .map(|l| format!("{}\n", l.replace(", #queue-req: 0", "")))
            .collect();
        check_lines(&no_queue, false);
    }

    #[test]
    fn a_full_pool_is_not_client_bound() {
        check_lines(&set_field(&whole(SINGLE), "token usage", "0.95"), false);
        check_lines(&set_field(&whole(SINGLE), "token usage", "0.89"), true);
    }
}
