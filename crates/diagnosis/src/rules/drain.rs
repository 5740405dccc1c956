//! # `drain`: the log holds only a run winding down
//!
//! **What it detects.** A scheduler whose decode lines (the span judged, no steady state
//! found) only fall: every line runs at most as many requests as the one before, the last at
//! most [`th::DRAIN_LOW`] of the first, over at least [`th::MIN_DRAIN_LINES`] + 1 lines, while
//! nothing waits (every printed `#queue-req` is 0, or none is printed) and no prefill line
//! admits a request.
//!
//! **Why it matters.** Requests finish and none replace them: the client has stopped sending
//! (the end of a benchmark or a job). The batch shrinks by itself, so its size says nothing of
//! the client's concurrency, and a step-time fit over it mixes batch, context length and graph
//! mode changing together. "Raise the client's concurrency" and a ceiling from these lines
//! would both be wrong.
//!
//! **Evidence it needs.** Decode lines with `#running-req`; the queue and the prefill lines
//! when printed.
//!
//! **What to change.** Nothing on the server from these lines: give a log of the run's steady
//! part (while the client was sending).
//!
//! **Source.** SGLang `scheduler.py` (a request leaves the running batch when it finishes and a
//! waiting one is admitted only by a prefill pass), `scheduler_metrics_mixin.py`
//! (`log_decode_stats`).

use crate::evidence::view::SchedulerView;
use crate::report::{Confidence, FindingKind};
use crate::rules::VerdictWords;
use crate::thresholds as th;

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Running requests on the first decode line of the span.
    pub from: u64,
    /// Running requests on its last.
    pub to: u64,
    /// Decode lines.
    pub lines: usize,
}

/// The rule on one scheduler.
pub fn check(v: &SchedulerView<'_>) -> Option<Facts> {
    let running: Vec<u64> = v.steady_decode.iter().filter_map(|d| d.running).collect();
    let (&from, &to) = (running.first()?, running.last()?);
    let falling = running.windows(2).all(|w| w[1] <= w[0]);
    let nothing_waits = v
        .steady_decode
        .iter()
        .all(|d| d.queue.is_none_or(|q| q == 0));
    let nothing_admitted = v
        .steady_prefill
        .iter()
        .all(|p| p.new_seq.is_none_or(|n| n == 0));
    (running.len() > th::MIN_DRAIN_LINES
        && from as f64 >= th::DRAIN_MIN_PLATEAU
        && (to as f64) <= th::DRAIN_LOW * from as f64
        && falling
        && nothing_waits
        && nothing_admitted)
        .then_some(Facts {
            from,
            to,
            lines: running.len(),
        })
}

/// The finding of a `drain` verdict in this rule's words, from its facts `f`.
pub(crate) fn finding(f: &Facts) -> VerdictWords {
    let (kind, title, detail, confidence) = (
        FindingKind::Drain,
        "Only the drain of a run".to_string(),
        format!(
            "Over {} decode lines the batch only shrinks, from {} to {} running requests, while nothing waits and no prefill admits a request: requests finish and none replace them, so the client had stopped sending (the end of a benchmark or a job). \
                 The batch size here describes no state the server was held in, and a step-time fit over it mixes batch, context length and graph mode changing together: no verdict on the server, the client's concurrency or a ceiling can come from these lines. Give a log of the run while the client was sending.",
            f.lines, f.from, f.to
        ),
        Confidence::Medium,
    );
    VerdictWords::new(kind, title, detail, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, whole, with_input};

    const GRAPHS: &str = "real-3/006-pr13023-trailing-comma-cuda-graph-false.log";
    const NO_QUEUE_FIELD: &str = "real-3/048-i4407-largest-len-field-drain.log";

    #[test]
    fn a_batch_that_only_shrinks_with_nothing_waiting() {
        // 006: 46, 36, 28, 22, 20, 15, 12, 11 running, #queue-req 0 on every line
        with_input(&whole(GRAPHS), |i| {
            assert_eq!(
                check(&i.views[0]),
                Some(Facts {
                    from: 46,
                    to: 11,
                    lines: 8
                })
            );
        });
    }

    #[test]
    fn a_drain_without_a_queue_field() {
        // 048: an old format that prints no #queue-req; 509 → 182 running and no prefill
        with_input(&whole(NO_QUEUE_FIELD), |i| {
            let f = check(&i.views[0]).expect("drain");
            assert_eq!((f.from, f.to), (509, 182));
        });
    }

    #[test]
    fn a_request_waiting_is_no_drain() {
        with_input(
            &edit(&whole(GRAPHS), "#queue-req: 0", "#queue-req: 3"),
            |i| assert_eq!(check(&i.views[0]), None),
        );
    }

    #[test]
    fn a_batch_that_grows_once_is_no_drain() {
        // boundary: one line up from 20 to 21 running, the rest as it was
        with_input(
            &edit(&whole(GRAPHS), "#running-req: 15,", "#running-req: 21,"),
            |i| assert_eq!(check(&i.views[0]), None),
        );
    }

    #[test]
    fn a_fall_to_half_is_a_drain_and_less_is_not() {
        // boundary: the first four lines at the plateau n, then 20, 15, 12, 11: a drain when
        // 11 is at most half of n
        let at = |n: u64| {
            ["46", "36", "28", "22"]
                .iter()
                .fold(whole(GRAPHS), |text, from| {
                    edit(
                        &text,
                        &format!("#running-req: {from},"),
                        &format!("#running-req: {n},"),
                    )
                })
        };
        with_input(&at(22), |i| assert!(check(&i.views[0]).is_some()));
        with_input(&at(21), |i| assert_eq!(check(&i.views[0]), None));
    }
}
