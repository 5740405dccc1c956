//! # `watchdog`: the scheduler hung
//!
//! **What it detects.** SGLang's watchdog lines (`Watchdog timeout (self.watchdog_timeout=…)`,
//! `Scheduler watchdog timeout`), counted over all ranks.
//!
//! **Why it matters.** A forward pass or collective took longer than `--watchdog-timeout`; the
//! server aborts. Whatever the batch lines say before it, the run did not end by throughput.
//!
//! **Evidence it needs.** Watchdog lines (any rank).
//!
//! **What to change.** Look at the lines just before it (NCCL, OOM, a stuck rank) and at the
//! py-spy dump SGLang prints after it.
//!
//! **Source.** SGLang `scheduler.py` (`watchdog_thread`); spec §4.

use crate::evidence::FailureLines;
use crate::report::SourceRange;
use crate::rules::Input;

/// What a failure-line rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Lines (all ranks).
    pub count: u64,
    /// The first line's message, shortened.
    pub first_text: String,
    /// The first line.
    pub evidence: Option<SourceRange>,
}

/// Facts from counted failure lines (shared by [`super::kv_transfer`]).
pub(crate) fn facts(input: &Input<'_>, lines: &FailureLines) -> Option<Facts> {
    (lines.count > 0).then(|| Facts {
        count: lines.count,
        first_text: lines.first_text.clone().unwrap_or_default(),
        evidence: lines.first.map(|l| input.line(l)),
    })
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    facts(input, &input.ev.watchdog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    const TP8: &str = "real/049-i3752-watchdog-timeout-tp8-with-top.log";

    #[test]
    fn eight_ranks_time_out() {
        with_input(&whole(TP8), |i| {
            let f = check(i).expect("watchdog");
            assert_eq!(f.count, 8);
            assert!(
                f.first_text.starts_with("Watchdog timeout"),
                "{}",
                f.first_text
            );
            assert_eq!(f.evidence.map(|e| e.first_line), Some(1));
        });
    }

    #[test]
    fn the_blockquoted_dp_dump_is_read_too() {
        with_input(
            &whole("real/050-pr6555-blockquoted-watchdog-dp-req-dump.log"),
            |i| {
                assert!(check(i).is_some_and(|f| f.count >= 1));
            },
        );
    }

    #[test]
    fn a_log_without_the_line_has_no_finding() {
        with_input(
            &excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5),
            |i| assert_eq!(check(i), None),
        );
    }
}
