//! # `scheduler_exception`: a scheduler died
//!
//! **What it detects.** `Scheduler hit an exception:` followed by its Python traceback, with
//! the exception type, its message and the innermost frame in SGLang's code. Out-of-memory
//! tracebacks are [`super::oom`]'s.
//!
//! **Why it matters.** The scheduler process exits and the server with it (SGLang kills the
//! parent): whatever the batch lines say before it, the run ended by the exception.
//!
//! **Evidence it needs.** The `Scheduler hit an exception` line and the traceback after it.
//!
//! **What to change.** What the exception says; the frame names the code that raised it.
//!
//! **Source.** SGLang `managers/scheduler.py` (`run_scheduler_process`:
//! `logger.error(f"Scheduler hit an exception: {traceback}")`, then `SIGQUIT` to the parent).

use crate::narrative::words::{exception_words, in_frame};
use crate::report::{Confidence, Figure, Finding, FindingKind, SourceRange, StartupStep, Unit};
use crate::rules::{Input, Rule};
use sglang_log::StackKind;

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The exception type, if the traceback ran to its last line.
    pub exception: Option<String>,
    /// Its message.
    pub message: Option<String>,
    /// The innermost frame in SGLang's code.
    pub frame: Option<sglang_log::Frame>,
    /// The startup step reached before it.
    pub step: Option<StartupStep>,
    /// Scheduler exceptions in all (all ranks).
    pub count: usize,
    /// The first one's lines.
    pub evidence: SourceRange,
}

/// The rule: the first scheduler exception that is not an out-of-memory error.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let mut crashes = input
        .ev
        .incidents
        .tracebacks()
        .filter(|s| s.stack.kind == StackKind::SchedulerException && !s.stack.is_oom());
    let first = crashes.next()?;
    Some(Facts {
        exception: first.stack.exception.clone(),
        message: first.stack.message.clone(),
        frame: first.stack.innermost_sglang_frame().cloned(),
        step: first.step,
        count: 1 + crashes.count(),
        evidence: input.range(first.source, first.stack.first_line, first.stack.last_line),
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words: the exception and the frame that raised it.
#[derive(Clone, Copy, Debug)]
pub struct SchedulerException;

impl Rule for SchedulerException {
    const NAME: &'static str = "scheduler_exception";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let at = in_frame(f.frame.as_ref());
        Finding {
            kind: FindingKind::SchedulerException,
            title: format!(
                "A scheduler died: {}{at}",
                f.exception.as_deref().unwrap_or("an exception")
            ),
            detail: format!(
                "SGLang's scheduler process raised {} and exited, taking the server down; the run ended by the exception, not by throughput. Fix what it says; the frame names the code that raised it.",
                exception_words(f.exception.as_deref(), f.message.as_deref())
            ),
            figures: vec![Figure::new("tracebacks", f.count as f64, Unit::Events)],
            evidence: vec![f.evidence.clone()],
            confidence: Confidence::High,
            levers: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{whole, with_input};

    const OOM: &str = "real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log";

    /// The real traceback with another exception at its end.
    #[test]
    fn the_type_and_the_frame() {
        let other = whole(OOM).replace(
            "torch.OutOfMemoryError: CUDA out of memory.",
            "ValueError: bad shape.",
        );
        with_input(&other, |i| {
            let f = check(i).expect("crash");
            assert_eq!(f.exception.as_deref(), Some("ValueError"));
            assert!(f.message.unwrap().starts_with("bad shape."));
            let frame = f.frame.unwrap();
            assert_eq!(
                (frame.function.as_str(), frame.line),
                ("create_weights", Some(219))
            );
            assert_eq!(f.count, 1);
        });
    }

    #[test]
    fn an_oom_is_the_oom_rule_s() {
        with_input(&whole(OOM), |i| assert_eq!(check(i), None));
    }

    /// Bare tracebacks of other processes (the router's, in a PD log) are not a scheduler's.
    #[test]
    fn other_tracebacks_are_not_a_scheduler_crash() {
        with_input(
            &crate::rules::testing::excerpt(
                "real-long/ascend-dsr1-pd-client-router.log",
                7100..=7160,
            ),
            |i| assert_eq!(check(i), None),
        );
    }
}
