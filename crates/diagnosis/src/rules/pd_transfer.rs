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
//! **Unless this server is full itself** ([`FullBatches`]). The bootstrap queue also stops
//! moving when this server's own metadata buffer is used up: it holds `2 ×
//! max_running_requests` requests (those being prefilled and those whose KV is in transfer),
//! and `pop_bootstrapped` admits no more until one frees. When the prefill passes made while
//! requests wait carry the scheduler's full batch (`#new-seq` at `max_running_requests`, or the
//! same largest batch again and again when the log states no cap) on at least
//! [`th::PLATEAU_SHARE`] of them, this server prefills as fast as it can and the queue is its
//! own: the limit is prefill capacity (more prefill instances, a larger batch), not the decode
//! side.
//!
//! **Evidence it needs.** At least two steady prefill lines with `#prealloc-req`, no decode
//! lines, a median pre-allocation queue of at least 1, and no standing prefill queue. (An
//! earlier version also asked the queue to end higher than it started; a run that drains at
//! its end then hid a queue of up to 134 requests.)
//!
//! **What to change.** Look at the decode server: its KV usage (a full decode pool cannot
//! pre-allocate) and the transfer backend; with full batches here, add prefill capacity (more
//! prefill instances) or raise this server's `--max-running-requests`.
//!
//! **Source.** SGLang `disaggregation/prefill.py` (bootstrap queue, `pop_bootstrapped` stops
//! when the metadata buffer has no free slot; the buffer is `max_running_requests × 2`),
//! `#prealloc-req` / `#bootstrap-req` in `scheduler_metrics_mixin.py`; spec §1.5.

use crate::evidence::view::{SchedulerView, share};
use crate::report::{CapacitySummary, Confidence, Figure, FindingKind, Unit};
use crate::rules::{VerdictWords, on_rank};
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Median `#prealloc-req` over the steady prefill lines (requests).
    pub prealloc_median: u64,
    /// Largest `#prealloc-req` there (requests).
    pub prealloc_max: u64,
    /// The prefill passes made while requests waited carry this server's full batch: the
    /// queue is its own (see the module doc).
    pub full_batches: Option<FullBatches>,
}

/// This prefill server's passes are full while its bootstrap queue stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FullBatches {
    /// Requests in a full pass: `max_running_requests` per DP rank, else the largest
    /// `#new-seq` seen (requests).
    pub per_pass: u64,
    /// Share of the passes with a bootstrap queue that carry it (fraction).
    pub share: f64,
    /// Whether `per_pass` is the configured cap (else the largest batch seen).
    pub configured: bool,
}

/// Whether the passes made while requests wait in the bootstrap queue are full.
fn full_batches(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<FullBatches> {
    let waiting: Vec<_> = v
        .steady_prefill
        .iter()
        .filter(|p| p.prealloc_req.is_some_and(|q| q > 0))
        .collect();
    let (per_pass, configured) = match cap.max_running_requests.filter(|&c| c > 0) {
        Some(c) => (c, true),
        None => (waiting.iter().filter_map(|p| p.new_seq).max()?, false),
    };
    // a batch of one is no sign of a full server
    if per_pass < 2 {
        return None;
    }
    let s = share(&waiting, |p| p.new_seq.map(|n| n >= per_pass))?;
    (s >= th::PLATEAU_SHARE).then_some(FullBatches {
        per_pass,
        share: s,
        configured,
    })
}

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Facts> {
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
    (median >= 1 && !v.queued()).then(|| Facts {
        prealloc_median: median,
        prealloc_max: max,
        full_batches: full_batches(v, cap),
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

/// The finding of a PD prefill server's verdict in this rule's words: facts `f` on the
/// scheduler `v` whose verdict it is; `prefill_bound` when its own passes are full
/// ([`FullBatches`]), else `pd_transfer_bound`.
pub(crate) fn finding(f: &Facts, v: &SchedulerView<'_>) -> VerdictWords {
    let lead = vec![
        Figure::new(
            on_rank(v, "median #prealloc-req"),
            f.prealloc_median as f64,
            Unit::Requests,
        ),
        Figure::new(
            on_rank(v, "largest #prealloc-req"),
            f.prealloc_max as f64,
            Unit::Requests,
        ),
    ];
    let (kind, title, detail, confidence) = match *f {
        Facts {
            full_batches: Some(b),
            prealloc_max,
            ..
        } => (
            FindingKind::PrefillBound,
            "Prefill bound: this PD prefill server runs full batches".to_string(),
            format!(
                "Up to {prealloc_max} requests stand in the bootstrap queue (#prealloc-req) while {:.0}% of the prefill passes made meanwhile carry {} requests, {}: this server prefills as fast as it can, and its queue is its own (SGLang admits from the bootstrap queue only while its metadata buffer, twice max_running_requests, has a free slot). The decode side is not what holds it. Add prefill capacity (more prefill instances) or raise this server's --max-running-requests if its memory allows.",
                b.share * 100.0,
                b.per_pass,
                if b.configured {
                    "its max_running_requests per DP rank"
                } else {
                    "the largest batch it ran (the log states no cap)"
                }
            ),
            Confidence::Medium,
        ),
        _ => (
            FindingKind::PdTransferBound,
            "PD transfer / pre-allocation bound".to_string(),
            "On this prefill server requests stand in the bootstrap/pre-allocation queue (#prealloc-req) while none waits for prefill itself, and its prefill passes are not full: they wait for the decode side to hand-shake and pre-allocate their KV, so this server prefills only as fast as the decode side accepts. Check the decode server's KV usage, running cap and the transfer backend."
                .to_string(),
            Confidence::Medium,
        ),
    };
    VerdictWords::new(kind, title, detail, confidence).lead(lead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const FILE: &str = "real/031-i22877-pd-prefill-prealloc-rising-custom-fmt.log";

    fn check_lines(lines: &str, expected: Option<Facts>) {
        with_input(lines, |i| {
            assert_eq!(check(&i.views[0], &CapacitySummary::default()), expected)
        });
    }

    const PD_PREFILL: &str = "real-long/ascend-dsr1-pd-prefill-dp2.log";

    fn capped(n: u64) -> CapacitySummary {
        CapacitySummary {
            max_running_requests: Some(n),
            ..CapacitySummary::default()
        }
    }

    /// DP0 of the Ascend PD prefill node through its first pile-up (lines 1763-2715).
    fn dp0() -> String {
        crate::rules::testing::only(&excerpt(PD_PREFILL, 1763..=2715), "DP0 TP0")
    }

    #[test]
    fn rising_prealloc_queue_on_a_prefill_server() {
        // 18 rising to 28 requests in the bootstrap queue
        let f = with_input(&whole(FILE), |i| {
            check(&i.views[0], &CapacitySummary::default())
        })
        .expect("PD transfer");
        // one request a pass: no sign that this server is full
        assert_eq!(f.full_batches, None);
        assert_eq!(f.prealloc_max, 28);
        assert!(f.prealloc_median >= 18, "{f:?}");
    }

    #[test]
    fn a_standing_queue_that_drains_at_the_end_still_waits_for_the_decode_side() {
        // the same lines at a flat 18: still 18 requests waiting for pre-allocation
        let f = with_input(&set_field(&whole(FILE), "#prealloc-req", "18"), |i| {
            check(&i.views[0], &CapacitySummary::default())
        });
        assert_eq!(
            f,
            Some(Facts {
                prealloc_median: 18,
                prealloc_max: 18,
                full_batches: None,
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

    #[test]
    fn full_passes_while_the_bootstrap_queue_stands_are_this_servers_own_limit() {
        // the Ascend PD prefill node, DP0: max_running_requests 4 per rank; up to 60+ wait in
        // the bootstrap queue while nearly every pass carries 4 new requests back to back
        let lines = dp0();
        let f = with_input(&lines, |i| check(&i.views[0], &capped(4))).expect("bootstrap queue");
        let b = f.full_batches.expect("full batches");
        assert_eq!((b.per_pass, b.configured), (4, true));
        assert!(b.share >= th::PLATEAU_SHARE, "{b:?}");
        // a cap of 8 would leave room in every pass of 4: the decode side holds the queue
        let f = with_input(&lines, |i| check(&i.views[0], &capped(8))).expect("bootstrap queue");
        assert_eq!(f.full_batches, None);
        // no cap stated: the largest batch, 4, repeated, stands for it
        let f = with_input(&lines, |i| check(&i.views[0], &CapacitySummary::default())).unwrap();
        assert_eq!(
            f.full_batches.map(|b| (b.per_pass, b.configured)),
            Some((4, false))
        );
    }

    #[test]
    fn passes_of_one_request_are_never_full_batches() {
        // the same lines with one request a pass and no cap: a batch of one says nothing
        let ones = set_field(&dp0(), "#new-seq", "1");
        let f = with_input(&ones, |i| check(&i.views[0], &CapacitySummary::default())).unwrap();
        assert_eq!(f.full_batches, None);
        // nor at a stated cap of 1: one request a pass is never a full batch
        let f = with_input(&ones, |i| check(&i.views[0], &capped(1))).unwrap();
        assert_eq!(f.full_batches, None);
    }
}
