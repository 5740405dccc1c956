//! # `held_admission`: requests wait while the KV pool is nearly empty
//!
//! **What it detects.** A standing queue on a scheduler whose pool is nearly empty, where even
//! the largest decode reservation the running requests could hold leaves most of the pool
//! free ([`conservative_admission::reservation_could_explain`] says no), and the log names no
//! running cap at the running count. It reports how far apart the prefill batches ran while
//! requests waited: in forward iterations when the log prints the counters (`Prefill batch
//! [N]`), else in seconds.
//!
//! **Why it matters.** SGLang admits a waiting request when a prefill batch is scheduled and
//! the request fits the budget (`schedule_policy.py` `PrefillAdder`). With the pool empty the
//! budget is not the reason; the prefill is scheduled rarely: a policy that runs prefill only
//! every N decode iterations (NPU builds' prefill-decode interval), a PD handshake, or a
//! request blocked outside the scheduler (grammar compilation, LoRA loading). Calling this
//! "too conservative" would send the user to `--schedule-conservativeness`, which cannot help.
//!
//! **Evidence it needs.** Steady decode lines with `#queue-req`, `#token` and `token usage`;
//! prefill lines (with their forward counters, for the iteration gap), every one of them for
//! the gap (on a timeline thinned to one prefill line in `stride` the gap is not given).
//!
//! **What to change.** Look at the prefill scheduling policy in the server's arguments (an
//! interval between prefill passes, the schedule policy) and at what the waiting requests wait
//! for; not at the KV cache.
//!
//! **Source.** SGLang `scheduler.py` (`get_next_batch_to_run`: a prefill batch is formed only
//! when the scheduler tries one), `schedule_policy.py` (`CLIP_MAX_NEW_TOKENS`), the
//! `SGLANG_LOG_FORWARD_ITERS` counters (`scheduler_metrics_mixin.py`).

use crate::evidence::view::SchedulerView;
use crate::narrative::words::{self, fmt_duration, with_levers};
use crate::report::{
    CapacitySummary, Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit,
};
use crate::rules::conservative_admission;
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Median token usage (fraction).
    pub usage: f64,
    /// Most requests running at once (requests).
    pub running_max: u64,
    /// Largest gap between consecutive prefill batches in forward iterations, when the log
    /// prints the counters (iterations).
    pub prefill_gap_iters: Option<u64>,
    /// Largest gap between consecutive prefill batches (seconds), when timestamped.
    pub prefill_gap_s: Option<f64>,
}

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Facts> {
    let usage = v.median_usage()?;
    if !v.queued()
        || usage >= th::HELD_MAX_USAGE
        || conservative_admission::reservation_could_explain(v)
    {
        return None;
    }
    let running_max = v.steady.iter().filter_map(|o| o.running).max()?;
    if cap.max_running_requests.is_some_and(|c| running_max >= c) {
        return None;
    }
    // the gap between consecutive prefill lines: unknown on a timeline thinned to one prefill
    // line in `stride` (two kept samples are `stride` prefills apart)
    let p: &[_] = if v.tl.prefill.stride() == 1 {
        v.tl.prefill.samples()
    } else {
        &[]
    };
    let prefill_gap_iters = p
        .windows(2)
        .filter_map(|w| w[1].iter?.checked_sub(w[0].iter?))
        .max();
    let prefill_gap_s = p
        .windows(2)
        .filter_map(|w| Some(w[1].t? - w[0].t?))
        .reduce(f64::max);
    Some(Facts {
        usage,
        running_max,
        prefill_gap_iters,
        prefill_gap_s,
    })
}

/// The finding of an `admission_held` verdict (or of held admission on the first rank that
/// shows it, under a weak vote) in this rule's words: facts `f`, `evidence` the scheduler's lines.
pub(crate) fn finding(f: &Facts, evidence: Option<SourceRange>) -> Finding {
    let gap = match (f.prefill_gap_iters, f.prefill_gap_s) {
        (Some(n), _) => format!(
            " Prefill batches ran up to {n} forward iterations apart while requests waited."
        ),
        (None, Some(s)) if s > 0.0 => format!(
            " Prefill batches ran up to {} apart while requests waited.",
            fmt_duration(s)
        ),
        _ => String::new(),
    };
    let mut figures = vec![
        Figure::new("median token usage", f.usage, Unit::Fraction),
        Figure::new(
            "most requests running",
            f.running_max as f64,
            Unit::Requests,
        ),
    ];
    if let Some(n) = f.prefill_gap_iters {
        figures.push(Figure::new(
            "largest gap between prefill batches",
            n as f64,
            Unit::Iterations,
        ));
    }
    let f_out = words::finding(
        FindingKind::HeldAdmission,
        "Requests wait while the KV pool is nearly empty",
        format!(
            "Requests queue at token usage ~{:.2} with at most {} running: even the largest reservation those requests could hold (4096 tokens each, SGLang's clip) leaves most of the pool free, so neither the KV cache nor --schedule-conservativeness holds them back.{gap} \
             Admission waits for a prefill pass: look at how often the server schedules prefill (an interval between prefill passes, the schedule policy) or at what the requests wait for outside the scheduler (a PD handshake, grammar compilation, a LoRA load).",
            f.usage, f.running_max
        ),
        figures,
        evidence.into_iter().collect(),
        Confidence::Medium,
    );
    // prefill passes many forward iterations apart: the scheduler's prefill interval
    let spaced = f
        .prefill_gap_iters
        .is_some_and(|n| n >= th::HELD_PREFILL_GAP_ITERS);
    with_levers(
        f_out,
        if spaced {
            &[Lever::PrefillInterval]
        } else {
            &[]
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{set_field, whole, with_input};

    const INTERVAL: &str = "real/059-npu-doc-forward-iteration-numbers-prefill-decode-interval.log";

    fn check_lines(lines: &str, cap: &CapacitySummary) -> Option<Facts> {
        with_input(lines, |i| check(&i.views[0], cap))
    }

    #[test]
    fn a_queue_at_an_empty_pool_between_rare_prefills() {
        // Prefill [10], then [411] while one request waits at usage 0.00.
        let f = check_lines(&whole(INTERVAL), &CapacitySummary::default()).expect("held");
        assert_eq!(f.prefill_gap_iters, Some(401));
        assert_eq!(f.running_max, 2);
        assert_eq!(f.usage, 0.0);
    }

    #[test]
    fn no_queue_or_a_full_pool_or_the_cap_is_not_held_admission() {
        let none = CapacitySummary::default();
        assert_eq!(
            check_lines(&set_field(&whole(INTERVAL), "#queue-req", "0"), &none),
            None
        );
        let full = set_field(&whole(INTERVAL), "token usage", "0.70");
        assert_eq!(check_lines(&full, &none), None);
        let capped = CapacitySummary {
            max_running_requests: Some(1),
            ..CapacitySummary::default()
        };
        assert_eq!(check_lines(&whole(INTERVAL), &capped), None);
    }

    #[test]
    fn a_pool_the_decode_reservation_could_fill_is_not_held_admission() {
        // `#token` 128-256 at usage 0.49: a pool of a few hundred tokens, which the decode
        // reservation of the running requests could fill: conservative admission's case
        let small_pool = set_field(&whole(INTERVAL), "token usage", "0.49");
        assert!(with_input(&small_pool, |i| conservative_admission::check(&i.views[0])).is_some());
        assert_eq!(check_lines(&small_pool, &CapacitySummary::default()), None);
        // a cap above the most running is not what holds the queue
        let roomy = CapacitySummary {
            max_running_requests: Some(3),
            ..CapacitySummary::default()
        };
        assert_eq!(
            check_lines(&whole(INTERVAL), &roomy).map(|f| f.running_max),
            Some(2)
        );
    }
}
