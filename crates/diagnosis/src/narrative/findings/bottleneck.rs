//! The finding that names a scheduler's bottleneck: which verdict rule words it (each in its
//! own file, `crate::rules::VerdictWords`), and what every verdict's finding shares around the
//! rule's words: the queue's share and the pool's usage, the admission model's figures, the
//! medians of the scheduler's gauges, and a confidence no higher than a handful of lines allow.

use super::{finding, with_levers};
use crate::evidence::view::SchedulerView;
use crate::report::{
    CapacitySummary, Confidence, Figure, Finding, RetractionSummary, SourceRange, Unit,
};
use crate::rules::{
    VerdictWords, admission, client_bound, conservative_admission, drain, kv_cache_bound, on_rank,
    pd_transfer, prefill_limit, running_cap,
};
use crate::thresholds as th;
use crate::verdict::Reason;

/// The finding that names a scheduler's bottleneck, from the reason its verdict rests on, in
/// the words of the rule that gave it. `None` for verdicts without one of their own (stall,
/// compute, inconclusive; held admission's is `rules::held_admission`'s own finding).
pub fn bottleneck(
    v: &SchedulerView<'_>,
    reason: &Reason,
    cap: &CapacitySummary,
    retr: &RetractionSummary,
    evidence: Option<SourceRange>,
) -> Option<Finding> {
    use running_cap::Held;
    let words: VerdictWords = match reason {
        Reason::AssumedCapUnreadPool(l) => {
            running_cap::finding(l, Held::AssumedCapUnreadPool, v, cap)
        }
        Reason::RunningCap(l) => running_cap::finding(l, Held::Queue, v, cap),
        Reason::AtCapNothingWaits(l) => running_cap::finding(l, Held::NothingWaits, v, cap),
        Reason::KvCache(p) => kv_cache_bound::finding(p, v, cap, retr),
        Reason::PrefillLimit(f) => prefill_limit::finding(f, v, cap),
        Reason::Conservative(_) => conservative_admission::finding(),
        Reason::PdTransfer(f) => pd_transfer::finding(f, v),
        Reason::ClientBound => client_bound::finding(v),
        Reason::Drain(f) => drain::finding(f),
        Reason::NoLines
        | Reason::HeldAdmission(_)
        | Reason::LoneReading
        | Reason::QueuedUnexplained
        | Reason::Unexplained => return None,
    };
    let mut figures = Vec::new();
    // with DP ranks, the figures are the rank's behind the verdict: say which
    let of = |name: &str| on_rank(v, name);
    if let Some(s) = v.queued_share {
        figures.push(Figure::new(
            of(if v.queue_from_decode {
                "share of decode lines with a queue"
            } else {
                "share of prefill lines with a queue"
            }),
            s,
            Unit::Fraction,
        ));
    }
    if let Some(u) = v.median_usage() {
        figures.push(Figure::new(of("median token usage"), u, Unit::Fraction));
    }
    figures.extend(words.lead);
    figures.extend(admission::figures(v, cap));
    if let Some(x) = v.running.median {
        figures.push(Figure::new(
            of("median running requests"),
            x,
            Unit::Requests,
        ));
    }
    if let Some(x) = v.queued.median {
        figures.push(Figure::new(of("median queued requests"), x, Unit::Requests));
    }
    if let Some(x) = v.usage.p90 {
        figures.push(Figure::new(of("p90 token usage"), x, Unit::Fraction));
    }
    if let Some(x) = v.gen_tps.mean {
        figures.push(Figure::new(
            format!("mean gen throughput of {}", v.key),
            x,
            Unit::TokPerS,
        ));
    }
    figures.extend(words.figures);
    let VerdictWords {
        kind,
        title,
        detail,
        confidence,
        levers,
        ..
    } = words;
    // A handful of lines is an excerpt, not a run: never high confidence, and a few seconds of
    // lines are a snapshot that the next minute can contradict.
    let confidence = if v.steady.len() < th::MIN_LINES_FOR_HIGH_CONFIDENCE {
        confidence.min(Confidence::Medium)
    } else {
        confidence
    };
    let snapshot = v.steady.len() < th::MIN_LINES_FOR_HIGH_CONFIDENCE
        && v.span
            .as_ref()
            .is_none_or(|s| s.end_s - s.start_s < th::MIN_SPAN_FOR_MEDIUM_CONFIDENCE_S);
    let confidence = if snapshot {
        confidence.min(Confidence::Low)
    } else {
        confidence
    };
    Some(with_levers(
        finding(
            kind,
            title,
            detail,
            figures,
            evidence.into_iter().collect(),
            confidence,
        ),
        &levers,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{set_field, whole, with_input};

    #[test]
    fn the_rules_figures_stand_between_the_shared_ones() {
        // 036 with one request waiting on every line: the configured cap names the verdict
        let lines = set_field(
            &whole("real-3/036-fastrl-pr4-custom-fmt-spec-accept-len-1.log"),
            "#queue-req",
            "1",
        );
        with_input(&lines, |i| {
            let v = &i.views[0];
            let reason = crate::verdict::classify(v, i.capacity);
            assert!(matches!(reason, Reason::RunningCap(_)), "{reason:?}");
            let f = bottleneck(v, &reason, i.capacity, i.retractions, None).expect("a finding");
            let names: Vec<&str> = f.figures.iter().map(|f| f.name.as_str()).collect();
            let at = |n: &str| names.iter().position(|x| *x == n);
            // the queue's share first, the rule's lead figures next, the shared medians after
            assert_eq!(at("share of decode lines with a queue"), Some(0));
            let cap = at("max_running_requests").expect("the cap's figure");
            let running = at("median running requests").expect("the median running");
            assert!(cap < running, "{names:?}");
            assert_eq!(f.kind, crate::report::FindingKind::RunningCapBound);
        });
        // a verdict without a finding of its own
        with_input(&lines, |i| {
            let v = &i.views[0];
            let none = bottleneck(v, &Reason::Unexplained, i.capacity, i.retractions, None);
            assert!(none.is_none());
        });
    }
}
