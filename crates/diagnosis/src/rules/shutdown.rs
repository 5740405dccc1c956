//! # `shutdown`: how the server's processes stopped
//!
//! **What it detects.** The signal lines SGLang's launcher prints while its process tree stops
//! (`sglang_log::Signal`): `SIGTERM received … Draining requests and shutting down` (a stop
//! someone asked for), `SIGQUIT received … It usually means one child failed`, and
//! `Subprocess NAME (pid=N) crashed with exit code C`. After a SIGTERM, the children killed by
//! it (exit code -15) and the SIGQUIT they trigger are the stop's own cleanup; a SIGQUIT or a
//! child's non-zero exit with no SIGTERM before it is a child process that failed.
//!
//! **Why it matters.** A SIGQUIT line says "one child failed" even in a clean stop: read alone
//! it sends an operator hunting a crash that did not happen; and a child that did fail (a
//! scheduler, the detokenizer) ends serving whatever the batch lines said before it.
//!
//! **Evidence it needs.** The signal lines, in order.
//!
//! **What to change.** Nothing after a requested stop; after a failed child, what came before
//! it says why it died: a watchdog timeout, an NCCL collective timeout or an out-of-memory line
//! earlier in the log (named, with its line: the child's death is its consequence, and that
//! finding holds the lever), else the traceback just before the SIGQUIT.
//!
//! **Source.** SGLang `entrypoints/engine.py` and `srt/utils` (the launcher's SIGTERM and
//! SIGQUIT handlers, `kill_process_tree`), `managers/tokenizer_manager.py` (the child's
//! `crashed with exit code` watch).

use crate::evidence::Loc;
use crate::narrative::words::finding;
use crate::report::{Confidence, Finding, FindingKind, SourceRange};
use crate::rules::{Input, Rule};

/// How the processes stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Facts {
    /// A stop asked for (SIGTERM); `cleanup`: a SIGQUIT or a child's exit followed it.
    Stopped {
        /// The SIGTERM line.
        at: SourceRange,
        /// A SIGQUIT or a child's exit came after it: the stop's own cleanup.
        cleanup: bool,
    },
    /// A SIGQUIT or a child's non-zero exit with no SIGTERM before it.
    ChildFailed {
        /// The first such line.
        at: SourceRange,
        /// The child's exit code, when a `crashed with exit code` line gives it.
        code: Option<i64>,
        /// The first alarm before it that kills a process (SGLang's watchdog, PyTorch's NCCL
        /// watchdog, an out-of-memory error), with its line: the child's death follows it.
        after: Option<(Cause, SourceRange)>,
    },
}

/// An alarm that takes a process down before its parent reports the child's death.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// SGLang's scheduler watchdog (`Watchdog timeout (self.watchdog_timeout=…)`), which
    /// kills the process after the timeout (`managers/scheduler.py`, `utils/watchdog.py`).
    Watchdog,
    /// PyTorch's NCCL watchdog on a collective that timed out (`ProcessGroupNCCL`), which
    /// tears the process group down.
    CollectiveTimeout,
    /// A device out-of-memory error.
    OutOfMemory,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let s = &input.ev.shutdown;
    let line = |l: Loc| input.span(l, l);
    // the first sign of a failure: a SIGQUIT, or a child's exit other than SIGTERM's -15
    let failed = [
        s.sigquit.map(|l| (l, None)),
        s.child_exit.filter(|(_, c)| *c != Some(-15)),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|(l, _)| *l);
    match (s.sigterm, failed) {
        (Some(t), f) if f.is_none_or(|(l, _)| t <= l) => Some(Facts::Stopped {
            at: line(t),
            cleanup: s.sigquit.is_some() || s.child_exit.is_some(),
        }),
        (_, Some((l, code))) => {
            let ev = input.ev;
            let after = [
                (Cause::Watchdog, ev.watchdog.first),
                (
                    Cause::CollectiveTimeout,
                    ev.alarms.collective_timeouts.first,
                ),
                (Cause::OutOfMemory, ev.alarms.out_of_memory.first),
            ]
            .into_iter()
            .filter_map(|(c, at)| at.filter(|a| *a < l).map(|a| (c, a)))
            .min_by_key(|(_, a)| *a)
            .map(|(c, a)| (c, line(a)));
            Some(Facts::ChildFailed {
                at: line(l),
                code: code.or(s.child_exit.and_then(|(_, c)| c)),
                after,
            })
        }
        _ => None,
    }
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct Shutdown;

impl Rule for Shutdown {
    const NAME: &'static str = "shutdown";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        match f {
            Facts::Stopped { at, cleanup } => finding(
                FindingKind::ServerStopped,
                "The server was stopped on request (SIGTERM)",
                format!(
                    "At line {} the server received SIGTERM and drained its requests to shut down: a stop someone asked for, not a crash.{}",
                    at.first_line,
                    if *cleanup {
                        " The SIGQUIT and the child exits after it are the stop's own cleanup (children killed by the SIGTERM exit with -15), not a failed child, whatever the SIGQUIT line says."
                    } else {
                        ""
                    }
                ),
                Vec::new(),
                vec![at.clone()],
                Confidence::High,
            ),
            Facts::ChildFailed { at, code, after } => {
                let why = match after {
                    Some((cause, a)) => format!(
                        " It follows the {} at line {}: the child died of it, and that finding says what to change.",
                        match cause {
                            Cause::Watchdog => "scheduler watchdog's timeout",
                            Cause::CollectiveTimeout => "NCCL collective timeout",
                            Cause::OutOfMemory => "out-of-memory error",
                        },
                        a.first_line
                    ),
                    None => " The traceback before it says why it died.".to_owned(),
                };
                let mut lines = vec![at.clone()];
                lines.extend(after.as_ref().map(|(_, a)| a.clone()));
                finding(
                    FindingKind::ChildFailed,
                    "A child process of the server failed",
                    format!(
                        "At line {} a child process of the server ended{} with no SIGTERM before it: SGLang stops the whole server then.{why}",
                        at.first_line,
                        code.map(|c| format!(" (exit code {c})"))
                            .unwrap_or_default()
                    ),
                    Vec::new(),
                    lines,
                    Confidence::High,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, whole, with_input};

    const STOP: &str = "real-4/101-dgxspark-gb10-long-prefix-chunked-then-400-ctx-exceeded.log";

    /// real-4/101 ends with SIGTERM (line 125), the detokenizer killed by it (exit -15) and
    /// the SIGQUIT it triggers: a requested stop and its cleanup.
    #[test]
    fn a_sigterm_then_its_cleanup_is_a_stop() {
        with_input(&whole(STOP), |i| {
            let f = check(i).expect("a stop");
            assert!(
                matches!(&f, Facts::Stopped { at, cleanup: true } if at.first_line == 125),
                "{f:?}"
            );
            let w = Shutdown::finding(&f, i);
            assert_eq!(w.kind, FindingKind::ServerStopped);
            assert!(w.detail.contains("not a failed child"), "{}", w.detail);
        });
        // rtx4090: a SIGTERM with no cleanup lines after it
        with_input(
            &whole("real-long/rtx4090-qwen3-4b-kv-retraction.log"),
            |i| {
                assert!(matches!(
                    check(i),
                    Some(Facts::Stopped { at, cleanup: false }) if at.first_line == 669
                ));
            },
        );
    }

    /// The same lines without the SIGTERM: the SIGQUIT is a child that failed; a child's exit
    /// code other than -15 before a SIGTERM too.
    #[test]
    fn a_sigquit_without_a_sigterm_is_a_failed_child() {
        let no_term = edit(&whole(STOP), "SIGTERM received.", "Shutting down.");
        with_input(&no_term, |i| {
            let f = check(i).expect("a failure");
            assert!(
                matches!(&f, Facts::ChildFailed { at, code: Some(-15), after: None } if at.first_line == 127),
                "{f:?}"
            );
            assert_eq!(Shutdown::finding(&f, i).kind, FindingKind::ChildFailed);
        });
        // boundary: a child that exited with 1 before the SIGTERM failed first
        let early = edit(
            &edit(&whole(STOP), "SIGTERM received.", "Shutting down."),
            "crashed with exit code -15",
            "crashed with exit code 1",
        );
        with_input(&early, |i| {
            assert!(matches!(
                check(i),
                Some(Facts::ChildFailed { at, code: Some(1), .. }) if at.first_line == 126
            ));
        });
    }

    /// real/049: eight ranks' watchdog timeouts (lines 1-8), then the launcher's v0.4 SIGQUIT
    /// line (9): the child died of the watchdog, which the finding names instead of sending the
    /// reader to a traceback the log does not hold.
    #[test]
    fn a_sigquit_after_the_watchdog_is_its_consequence() {
        const WD: &str = "real/049-i3752-watchdog-timeout-tp8-with-top.log";
        with_input(&whole(WD), |i| {
            let f = check(i).expect("a failure");
            assert!(
                matches!(&f, Facts::ChildFailed { at, code: None, after: Some((Cause::Watchdog, w)) }
                    if at.first_line == 9 && w.first_line == 1),
                "{f:?}"
            );
            let w = Shutdown::finding(&f, i);
            assert!(
                w.detail.contains("watchdog's timeout at line 1"),
                "{}",
                w.detail
            );
            assert!(!w.detail.contains("traceback"), "{}", w.detail);
        });
        // boundary: the same SIGQUIT with the watchdog lines gone has no cause before it
        let alone = edit(&whole(WD), "Watchdog timeout (self", "Timeout note (self");
        with_input(&alone, |i| {
            assert!(matches!(
                check(i),
                Some(Facts::ChildFailed { after: None, .. })
            ));
        });
    }

    /// A log without signal lines says nothing of how it stopped.
    #[test]
    fn no_signal_no_finding() {
        with_input(&whole("real/001-i938-a100-llama13b-queue12k.log"), |i| {
            assert_eq!(check(i), None)
        });
    }
}
