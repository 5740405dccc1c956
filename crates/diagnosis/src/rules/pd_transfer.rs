//! # `pd_transfer`: a PD prefill server waiting for the decode side
//!
//! **What it detects.** On a prefill server of a PD-disaggregated deployment (prefill lines
//! only), a standing bootstrap / pre-allocation queue `#prealloc-req` (a median of at least one
//! request over the steady span) while nothing queues for prefill itself: requests wait for
//! the decode side, not for this server.
//!
//! **Why it matters.** Requests are prefilled only after the decode side has hand-shaken and
//! pre-allocated their KV; when it cannot, requests pile up here and the prefill GPUs idle.
//! Tuning the prefill server changes nothing.
//!
//! **Evidence it needs.** At least two steady prefill lines with `#prealloc-req`, no decode
//! lines, a median pre-allocation queue of at least 1, and no standing prefill queue. (An
//! earlier version also asked the queue to end higher than it started; a run that drains at
//! its end then hid a queue of up to 134 requests.)
//!
//! **What to change.** Look at the decode server: its KV usage (a full decode pool cannot
//! pre-allocate) and the transfer backend.
//!
//! **Source.** SGLang `disaggregation/prefill.py` (bootstrap queue, `#prealloc-req` /
//! `#bootstrap-req` in `scheduler_metrics_mixin.py`); spec §1.5.

use crate::evidence::view::SchedulerView;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Median `#prealloc-req` over the steady prefill lines (requests).
    pub prealloc_median: u64,
    /// Largest `#prealloc-req` there (requests).
    pub prealloc_max: u64,
}

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>) -> Option<Facts> {
    let prealloc: Vec<u64> = v
        .steady_prefill
        .iter()
        .filter_map(|p| p.prealloc_req)
        .collect();
    if !v.steady_decode.is_empty() || prealloc.len() < 2 {
        return None;
    }
    let median = throughput_stats::median_u64(&prealloc)?;
    let max = prealloc.iter().copied().max()?;
    (median >= 1 && !v.queued()).then_some(Facts {
        prealloc_median: median,
        prealloc_max: max,
    })
}

/// A PD prefill instance's work: `(new prompt tokens, tok/s)` summed over schedulers, each
/// rate over the span of its prefill lines. `Some` for `disaggregation_mode='prefill'`, or,
/// without that line, when every scheduler prints prefill lines only and tracks
/// `#prealloc-req` / `#inflight-req`. Its running count stays near 0 by nature: its work is
/// prefill, not decode.
pub fn prefill_instance(input: &crate::rules::Input<'_>) -> Option<(u64, f64)> {
    let mode = input
        .ev
        .startup
        .server_args
        .get("disaggregation_mode")
        .map(|m| m.trim_matches(|c| c == '\'' || c == '"'));
    let prefill_only = !input.views.is_empty()
        && input.views.iter().all(|v| {
            v.tl.decode.pushed() == 0
                && v.tl
                    .prefill
                    .samples()
                    .iter()
                    .any(|p| p.prealloc_req.is_some() || p.inflight_req.is_some())
        });
    if mode != Some("prefill") && !(mode.is_none() && prefill_only) {
        return None;
    }
    let mut tokens = 0u64;
    let mut rate = 0.0;
    for v in input.views {
        let agg = &v.tl.agg;
        tokens += agg.prefill_new_tokens;
        if let Some((t0, t1)) = v.tl.time_range()
            && t1 > t0
        {
            rate += agg.prefill_new_tokens as f64 / (t1 - t0);
        }
    }
    Some((tokens, rate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const FILE: &str = "real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log";

    fn check_lines(lines: &str, expected: Option<Facts>) {
        with_input(lines, |i| assert_eq!(check(&i.views[0]), expected));
    }

    #[test]
    fn rising_prealloc_queue_on_a_prefill_server() {
        // 18 rising to 28 requests in the bootstrap queue
        let f = with_input(&whole(FILE), |i| check(&i.views[0])).expect("PD transfer");
        assert_eq!(f.prealloc_max, 28);
        assert!(f.prealloc_median >= 18, "{f:?}");
    }

    #[test]
    fn a_standing_queue_that_drains_at_the_end_still_waits_for_the_decode_side() {
        // the same lines at a flat 18: still 18 requests waiting for pre-allocation
        let f = with_input(&set_field(&whole(FILE), "#prealloc-req", "18"), |i| {
            check(&i.views[0])
        });
        assert_eq!(
            f,
            Some(Facts {
                prealloc_median: 18,
                prealloc_max: 18
            })
        );
    }

    #[test]
    fn an_empty_bootstrap_queue_is_not_a_transfer_problem() {
        check_lines(&set_field(&whole(FILE), "#prealloc-req", "0"), None);
    }

    #[test]
    fn a_prefill_only_server_is_a_pd_prefill_instance() {
        with_input(&whole(FILE), |i| {
            let (tokens, rate) = prefill_instance(i).expect("PD prefill");
            assert_eq!(tokens, 4);
            assert!((rate - 2.0).abs() < 1e-9, "{rate}");
        });
        with_input(
            &whole("real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log"),
            |i| assert_eq!(prefill_instance(i), None),
        );
    }

    #[test]
    fn one_line_or_a_standing_prefill_queue_is_not_enough() {
        check_lines(&excerpt(FILE, 1..=1), None);
        check_lines(&set_field(&whole(FILE), "#queue-req", "3"), None);
    }
}
