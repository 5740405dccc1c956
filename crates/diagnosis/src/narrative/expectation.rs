//! The expectation check in words.

use crate::report::{ExpectationCheck, NoCeiling, Reach};

/// Why no ceiling, in words.
fn no_ceiling_words(why: Option<NoCeiling>) -> String {
    use crate::thresholds as th;
    match why {
        Some(NoCeiling::PoorFit { r2 }) => format!(
            "the decode step-time fit explains too little of the lines (R² {r2:.2}, below {})",
            th::MIN_CEILING_FIT_R2
        ),
        Some(NoCeiling::NarrowBatchSizes { low, high }) => format!(
            "the decode lines' batch sizes span only {low:.0}-{high:.0} requests, too narrow to fit how the step time grows with the batch (a ceiling needs them {}x apart)",
            th::MIN_CEILING_RUNNING_SPREAD
        ),
        Some(NoCeiling::NegativeFixedStep) => {
            "fitted to these lines, the fixed part of a decode step comes out at or below zero, which no server has: the fit does not describe them well enough to extrapolate (decode lines over a wider range of batch sizes would)".into()
        }
        Some(NoCeiling::NoLimit) => {
            "in these lines a decode step takes no longer when more requests decode at once (the fitted cost per request is zero or below), so they show no limit; lines at larger batch sizes would".into()
        }
        Some(NoCeiling::NotAboveCurrent) => {
            "the step-time fit levels off at or below today's rate, so it names no ceiling above it"
                .into()
        }
        None => format!(
            "a ceiling needs a decode step-time fit over lines at several batch sizes that explains them (R² at least {})",
            th::MIN_CEILING_FIT_R2
        ),
    }
}

/// The answer: the ceiling, the best feasible change and, with an expectation, whether it is
/// reachable and what could reach it.
pub fn expectation(e: &ExpectationCheck) -> String {
    let m = e.measured_tok_per_s;
    let ceiling = e.ceiling_tok_per_s.map(|c| {
        format!(
            "this setup's ceiling is ~{c:.0} tok/s ({:.1}x the measured {m:.0} tok/s: the rate the fitted decode step time approaches as more requests decode at once, with unlimited KV)",
            c / m
        )
    });
    let best = e.best_change.as_ref().map(|(label, rate)| {
        let faster = e
            .faster_change_altering_outputs
            .as_ref()
            .map(|(l, r)| {
                format!(
                    "; {l} gives more, ~{r:.0} tok/s ({:+.0}%), but alters outputs",
                    (r / m - 1.0) * 100.0
                )
            })
            .unwrap_or_default();
        format!(
            "the best change that fits, {label}, gives ~{rate:.0} tok/s ({:+.0}%){faster}",
            (rate / m - 1.0) * 100.0
        )
    });
    let facts = [ceiling, best]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
    let Some(target) = e.expected_tok_per_s else {
        return if facts.is_empty() {
            format!(
                "The server generates {m:.0} tok/s; no ceiling can be fitted from this log: {}.",
                no_ceiling_words(e.no_ceiling)
            )
        } else {
            format!("{}{}.", facts[..1].to_uppercase(), &facts[1..])
        };
    };
    let asked = format!(
        "{target:.0} tok/s ({:.1}x the measured {m:.0} tok/s)",
        target / m
    );
    let verdict = match &e.reach {
        Some(Reach::AlreadyThere) => format!("{asked} is what the server already does."),
        Some(Reach::ByChange { change }) => format!("{asked} is reachable: {change} gets there."),
        Some(Reach::NeedsMoreMemory) => format!(
            "{asked} is not reachable with the memory this setup has, but lies below its ceiling: more KV slots than fit (more GPUs, a smaller or quantised model, shorter completions) could reach it."
        ),
        Some(Reach::BeyondCeiling) | None => format!(
            "{asked} is not reachable on this setup: it lies beyond the ceiling, so no memory or scheduling setting gets there; only faster decode steps (speculative decoding such as EAGLE/MTP, a smaller or quantised model) or more replicas beside this one (data parallel, more GPUs) can."
        ),
        Some(Reach::BelowCeilingUnprojected) => format!(
            "{asked} lies below this setup's ceiling, but which change gets there is not known: the what-if changes have no projected rate without the requests' lengths (give --client-records, or a benchmark's output as --client-log)."
        ),
        Some(Reach::NoCeiling) => format!(
            "Whether {asked} is reachable is not known: no change that fits is projected to reach it, and no ceiling can be fitted from this log: {}.",
            no_ceiling_words(e.no_ceiling)
        ),
    };
    if facts.is_empty() {
        verdict
    } else {
        format!("{verdict} Why: {facts}.")
    }
}
