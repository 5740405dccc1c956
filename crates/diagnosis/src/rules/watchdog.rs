//! # `watchdog`: the scheduler hung
//!
//! **What it detects.** SGLang's watchdog lines (`Watchdog timeout (self.watchdog_timeout=…)`,
//! `Scheduler watchdog timeout`), and PyTorch's NCCL watchdog (`Watchdog caught collective
//! operation timeout: WorkNCCL(…, OpType=ALLREDUCE, …, Timeout(ms)=N) ran for M milliseconds`),
//! counted over all ranks.
//!
//! **Why it matters.** A forward pass or collective took longer than `--watchdog-timeout` (or a
//! collective longer than its NCCL timeout: a rank stopped joining collectives, and the others
//! wait for it); the server aborts. Whatever the batch lines say before it, the run did not end
//! by throughput.
//!
//! **Evidence it needs.** Watchdog lines (any rank), NCCL collective timeouts.
//!
//! **Where it hung.** When the watchdog's py-spy dump follows (`Pyspy dump for PID N:`), the
//! dumped process and the top frames of its first busy thread (else its main thread) say
//! where: [`Hang`]. `Pyspy failed to dump PID N` means py-spy is not installed where the
//! server runs, so the log cannot say where.
//!
//! **What to change.** Look at the lines just before it (NCCL, OOM, a stuck rank) and at the
//! py-spy dump SGLang prints after it (install `py-spy` for one).
//!
//! **Source.** SGLang `scheduler.py` (`watchdog_thread`); spec §4; PyTorch
//! `ProcessGroupNCCL.cpp` (`Watchdog caught collective operation timeout`).

use crate::evidence::FailureLines;
use crate::narrative::words::{failure, frame_words};
use crate::report::{Finding, FindingKind, SourceRange};
use crate::rules::{Input, Rule};

/// What a failure-line rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Lines (all ranks).
    pub count: u64,
    /// The first line's message, shortened.
    pub first_text: String,
    /// The first line.
    pub evidence: Option<SourceRange>,
    /// Where it hung, from the py-spy dump (watchdog only).
    pub hang: Option<Hang>,
    /// `Pyspy failed to dump` lines: py-spy is missing (watchdog only).
    pub pyspy_missing: bool,
    /// PyTorch's NCCL watchdog caught a collective that timed out (watchdog only).
    pub collective: Option<Collective>,
}

/// The NCCL collective timeouts of the log.
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    /// Timeout lines (all ranks).
    pub count: u64,
    /// The first timed-out collective's `OpType` (`ALLREDUCE`, `ALLGATHER`, `BROADCAST`).
    pub op: Option<String>,
    /// Its timeout. Unit: milliseconds.
    pub timeout_ms: Option<u64>,
    /// How long it ran. Unit: milliseconds.
    pub ran_ms: Option<u64>,
    /// The first timeout line.
    pub evidence: Option<SourceRange>,
}

/// Where a hung process was, from the watchdog's py-spy dump.
#[derive(Clone, Debug, PartialEq)]
pub struct Hang {
    /// The process (`sglang::data_parallel_controller`).
    pub process: Option<String>,
    /// The thread shown and whether py-spy marked it idle.
    pub thread: Option<(String, bool)>,
    /// Its top Python frames (with a line number), innermost first, at most
    /// [`HANG_FRAMES`].
    pub frames: Vec<sglang_log::Frame>,
    /// The dump's lines.
    pub evidence: SourceRange,
    /// The dumped thread only waits for its child processes (`multiprocessing` `join` /
    /// `wait`): a parent such as the DP controller, idle by design while its schedulers run;
    /// the hung scheduler's own stack is not among the dumps.
    pub waits_on_children: bool,
}

impl Hang {
    /// Whether the dumped process is SGLang's DP controller (`sglang::data_parallel_controller`).
    pub fn is_dp_controller(&self) -> bool {
        self.process
            .as_deref()
            .is_some_and(|p| p.contains("data_parallel_controller"))
    }
}

/// Whether a dump's frames are a parent process waiting for its children
/// (`multiprocessing/process.py` `join`, `multiprocessing/popen_fork.py` `wait`).
fn waits_on_children(frames: &[sglang_log::Frame]) -> bool {
    frames.iter().any(|f| {
        (f.function == "join" && f.file.ends_with("multiprocessing/process.py"))
            || (f.function == "wait" && f.file.ends_with("multiprocessing/popen_fork.py"))
    })
}

/// Frames of a dump the finding names.
pub const HANG_FRAMES: usize = 3;

/// Facts from counted failure lines (shared by [`super::kv_transfer`]).
pub(crate) fn facts(input: &Input<'_>, lines: &FailureLines) -> Option<Facts> {
    (lines.count > 0).then(|| Facts {
        count: lines.count,
        first_text: lines.first_text.clone().unwrap_or_default(),
        evidence: lines.first.map(|l| input.line(l)),
        hang: None,
        pyspy_missing: false,
        collective: None,
    })
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let a = &input.ev.alarms;
    let collective = (a.collective_timeouts.count > 0).then(|| {
        let first = a.first_collective_timeout.as_ref();
        Collective {
            count: a.collective_timeouts.count,
            op: first.and_then(|t| t.op.clone()),
            timeout_ms: first.and_then(|t| t.timeout_ms),
            ran_ms: first.and_then(|t| t.ran_ms),
            evidence: a.collective_timeouts.first.map(|l| input.line(l)),
        }
    });
    let mut f =
        facts(input, &input.ev.watchdog).or_else(|| facts(input, &a.collective_timeouts))?;
    f.collective = collective;
    // a dump of a process that is doing something beats a parent waiting on its children
    let dump = input
        .ev
        .incidents
        .pyspy_dumps()
        .find(|d| !waits_on_children(&d.stack.frames))
        .or_else(|| input.ev.incidents.pyspy_dumps().next());
    f.hang = dump.map(|d| Hang {
        waits_on_children: waits_on_children(&d.stack.frames),
        process: d.stack.process.clone(),
        thread: d.stack.thread.clone().zip(d.stack.thread_idle),
        frames: d
            .stack
            .frames
            .iter()
            .filter(|fr| fr.line.is_some())
            .take(HANG_FRAMES)
            .cloned()
            .collect(),
        evidence: input.range(d.source, d.stack.first_line, d.stack.last_line),
    });
    f.pyspy_missing = input.ev.incidents.pyspy_failed > 0;
    Some(f)
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words: the hang the py-spy dump shows, or why none is shown.
#[derive(Clone, Copy, Debug)]
pub struct Watchdog;

impl Rule for Watchdog {
    const NAME: &'static str = "watchdog";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, input: &Input<'_>) -> Finding {
        let mut out = failure(
            f.count,
            &f.first_text,
            f.evidence.as_ref(),
            FindingKind::WatchdogTimeout,
            "Watchdog timeout: the scheduler hung",
            "A forward pass or collective took longer than --watchdog-timeout; the server aborts. Look at the lines just before it (NCCL, OOM, a stuck rank).",
        );
        if let Some(c) = &f.collective {
            if input.ev.watchdog.count == 0 {
                out.title = format!(
                    "NCCL collective timeout: a rank stopped joining {}",
                    c.op.as_deref().unwrap_or("a collective")
                );
            }
            out.detail.push_str(&collective_words(c));
            if let Some(e) = c
                .evidence
                .as_ref()
                .filter(|e| Some(*e) != f.evidence.as_ref())
            {
                out.evidence.push(e.clone());
            }
        }
        if let Some(h) = f
            .hang
            .as_ref()
            .filter(|h| h.waits_on_children && h.is_dp_controller())
            && input.ev.watchdog.count <= input.ev.incidents.pyspy_dumps().count() as u64
        {
            // only the DP controller's own dump, no scheduler's watchdog line: the controller's
            // watchdog fired (its `_watchdog_thread` is in the dumped process)
            out.title =
                "Watchdog fired in the DP controller: its schedulers made no progress".into();
            out.detail = format!(
                "The DP controller's own watchdog fired and dumped its process with py-spy: no scheduler printed a watchdog timeout and nothing in the log shows the server aborting. The dump shows {} idle while it waits for its child processes (multiprocessing join), as a parent does by design; no scheduler's stack is in the log: while it hangs, dump the scheduler processes with py-spy (py-spy dump --pid) to see where they wait.",
                h.process.as_deref().unwrap_or("the controller")
            );
            out.evidence.push(h.evidence.clone());
            out.confidence = crate::report::Confidence::Medium;
        } else if let Some(h) = f.hang.as_ref().filter(|h| h.waits_on_children) {
            out.detail.push_str(&format!(
                " The py-spy dump in the log is {}'s, idle while it waits for its child processes (multiprocessing join): a parent by design, not where the hang is; the watchdog that fired dumped only its own process, so no scheduler's stack is in the log: while it hangs, dump the scheduler processes with py-spy (py-spy dump --pid) to see where they wait.",
                h.process.as_deref().unwrap_or("a parent process")
            ));
        } else if let Some(h) = &f.hang {
            let frames: Vec<String> = h.frames.iter().map(frame_words).collect();
            out.title = format!(
                "Watchdog timeout: {} hung in {}",
                h.process.as_deref().unwrap_or("the process"),
                frames.first().map_or("an unknown frame", String::as_str)
            );
            out.detail.push_str(&format!(
                " The py-spy dump shows {}{}: {}.",
                h.process.as_deref().unwrap_or("the process"),
                h.thread
                    .as_ref()
                    .map(|(t, idle)| format!(
                        "'s thread {t}{}",
                        if *idle {
                            " (idle: waiting, not computing)"
                        } else {
                            ""
                        }
                    ))
                    .unwrap_or_default(),
                frames.join(" ← ")
            ));
            out.evidence.push(h.evidence.clone());
        } else if f.pyspy_missing {
            out.detail.push_str(
                " Where it hung is not in the log: py-spy is not installed where the server runs (`Pyspy failed to dump`); install it for the next time.",
            );
        }
        out
    }
}

/// The NCCL watchdog's timeouts, in words.
fn collective_words(c: &Collective) -> String {
    let secs = |ms: u64| format!("{:.0} s", ms as f64 / 1000.0);
    format!(
        " PyTorch's NCCL watchdog caught {} collective timeout line{}{}{}: every rank waits in a collective until all join, so one rank stopped joining (hung in a kernel, died, or was stopped) and the others waited for it. The rank that did not time out, or whose lines end first, is the one to look at.",
        c.count,
        if c.count == 1 { "" } else { "s" },
        c.op.as_deref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default(),
        match (c.ran_ms, c.timeout_ms) {
            (Some(r), Some(t)) => format!(
                ", the first after {} against its {} timeout",
                secs(r),
                secs(t)
            ),
            (Some(r), None) => format!(", the first after {}", secs(r)),
            _ => String::new(),
        }
    )
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
                let f = check(i).expect("watchdog");
                assert!(f.count >= 1);
                // `Pyspy failed to dump PID 549. Error: /bin/sh: 1: py-spy: not found`
                assert!(f.pyspy_missing && f.hang.is_none());
            },
        );
    }

    /// The py-spy dump after the last decode lines: the DP controller's main thread waits in
    /// `join` on its scheduler processes.
    #[test]
    fn where_it_hung_from_the_pyspy_dump() {
        with_input(
            &whole("real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log"),
            |i| {
                let h = check(i).expect("watchdog").hang.expect("dump");
                assert_eq!(
                    h.process.as_deref(),
                    Some("sglang::data_parallel_controller")
                );
                assert_eq!(h.thread, Some(("MainThread".into(), true)));
                let names: Vec<&str> = h.frames.iter().map(|f| f.function.as_str()).collect();
                assert_eq!(names, ["poll", "wait", "join"]);
                // the controller only waits for its schedulers: not where the hang is
                assert!(h.waits_on_children);
                assert_eq!((h.evidence.first_line, h.evidence.last_line), (3, 28));
                // the controller's own watchdog (its `_watchdog_thread` is in the dump): no
                // scheduler watchdog line, no abort claimed (expert reading)
                let w = Watchdog::finding(&check(i).expect("watchdog"), i);
                assert_eq!(
                    w.title,
                    "Watchdog fired in the DP controller: its schedulers made no progress"
                );
                assert!(!w.detail.contains("the server aborts"), "{}", w.detail);
            },
        );
        // the watchdog line alone: no dump, no place
        with_input(
            &whole("real/049-i3752-watchdog-timeout-tp8-with-top.log"),
            |i| {
                let f = check(i).expect("watchdog");
                assert!(f.hang.is_none() && !f.pyspy_missing);
            },
        );
    }

    /// PyTorch's NCCL watchdog alone (no SGLang watchdog line): a collective timeout after a
    /// real log's decode lines is the hang, in its own words.
    #[test]
    fn an_nccl_collective_timeout_is_a_hang() {
        let mut log = excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5);
        log.push_str("[rank3]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=7168, NumelOut=7168, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n");
        with_input(&log, |i| {
            let f = check(i).expect("a collective timeout");
            let c = f.collective.as_ref().expect("collective");
            assert_eq!((c.count, c.op.as_deref()), (1, Some("ALLREDUCE")));
            assert_eq!((c.timeout_ms, c.ran_ms), (Some(600_000), Some(600_081)));
            assert_eq!(c.evidence.as_ref().map(|e| e.first_line), Some(6));
            let w = Watchdog::finding(&f, i);
            assert_eq!(
                w.title,
                "NCCL collective timeout: a rank stopped joining ALLREDUCE"
            );
            assert!(
                w.detail.contains("after 600 s against its 600 s timeout"),
                "{}",
                w.detail
            );
        });
        // at exit, `destroy_process_group() was not called` is no timeout
        let mut quiet = excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5);
        quiet.push_str("[rank0]:[W913 16:10:17.041066816 ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.\n");
        with_input(&quiet, |i| assert_eq!(check(i), None));
    }

    #[test]
    fn a_log_without_the_line_has_no_finding() {
        with_input(
            &excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5),
            |i| assert_eq!(check(i), None),
        );
    }
}
