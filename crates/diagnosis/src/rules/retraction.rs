//! # `retraction`: the KV pool ran out during decode
//!
//! **What it detects.** SGLang's retraction lines (`KV cache pool is full. Retract requests.`,
//! `Decode out of memory happened`), deduplicated across TP ranks; thrashing from
//! [`th::THRASH_PER_HOUR`] events per hour.
//!
//! **Why it matters.** Admission was too optimistic for this pool (`new_token_ratio` decayed):
//! the pool is the limit. A retracted request keeps its generated tokens and is re-prefilled
//! with them later (SGLang `reset_for_retract`), so each retraction costs a prefill, not the
//! decode work again; frequent retraction wastes compute and lengthens latency.
//!
//! **Evidence it needs.** Retraction lines; timestamps for the rate per hour.
//!
//! **What to change.** Raise `--schedule-conservativeness`, cap `max_tokens`, or give the KV
//! cache more memory.
//!
//! **Source.** SGLang `scheduler.py` (`update_running_batch` → `retract_decode`),
//! `schedule_batch.py` (`reset_for_retract`); spec §3.

use crate::report::SourceRange;
use crate::rules::Input;
use crate::thresholds as th;

/// What the rule saw (the counts are in the report's `RetractionSummary`).
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Whether the rate per hour is thrashing.
    pub thrash: bool,
    /// From the first to the last retraction line, when in one source.
    pub evidence: Option<SourceRange>,
    /// No request waited on any scheduler's steady lines (the queue printed, and 0 on every
    /// one): admission, and so `--schedule-conservativeness`, played no part; the running
    /// requests grew past the pool.
    pub nothing_waited: bool,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    if input.retractions.events == 0 {
        return None;
    }
    let t = &input.ev.retraction_totals;
    Some(Facts {
        thrash: input
            .retractions
            .per_hour
            .is_some_and(|x| x >= th::THRASH_PER_HOUR),
        nothing_waited: input.views.iter().any(|v| v.queued.max.is_some())
            && input
                .views
                .iter()
                .all(|v| v.queued.max.is_none_or(|q| q < 1.0)),
        evidence: t.first_line.zip(t.last_line).map(|(a, b)| input.span(a, b)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    const OOM: &str = "real/011-pr6731-debug-decode-oom-retract.log";

    #[test]
    fn a_decode_out_of_memory_line_is_a_retraction() {
        with_input(&whole(OOM), |i| {
            let f = check(i).expect("retraction");
            assert_eq!(i.retractions.events, 1);
            assert!(!f.thrash);
            // no batch line prints a queue: that nothing waited is not known
            assert!(!f.nothing_waited);
            assert_eq!(f.evidence.map(|e| e.first_line), Some(14));
        });
    }

    #[test]
    fn a_retraction_with_nothing_waiting() {
        // two requests at usage 1.00 and #queue-req 0 (lines 1-5), then the retraction
        with_input(
            &whole("real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log"),
            |i| assert!(check(i).expect("retraction").nothing_waited),
        );
    }

    #[test]
    fn no_retraction_line_no_finding() {
        with_input(&excerpt(OOM, 1..=13), |i| assert_eq!(check(i), None));
    }

    #[test]
    fn every_tp_rank_reports_one_event() {
        let line = excerpt(OOM, 14..=14);
        let two_ranks = format!(
            "{}{}",
            line.replace("08:25:50]", "08:25:50 TP0]"),
            line.replace("08:25:50]", "08:25:50 TP1]")
        );
        with_input(&two_ranks, |i| {
            assert_eq!((i.retractions.events, i.retractions.lines), (1, 2));
            assert!(check(i).is_some());
        });
    }
}
