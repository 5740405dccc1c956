//! # `slow_pass`: scheduler passes slower than their threshold
//!
//! **What it detects.** SGLang's slow-pass tracer lines (`slow scheduler pass: LABEL took X ms
//! (>= Y ms; …)`, on with `SGLANG_DEBUG_SLOW_SCHEDULER_PASS_MS`): how many passes of the
//! scheduler's loop ran past the threshold, and the longest.
//!
//! **Why it matters.** The scheduler's loop is Python on one CPU core: while one pass runs
//! long (receiving and tokenizing requests, grammar compilation, garbage collection, a
//! blocking call) no batch is launched and the GPU waits. Batch lines only show the slower
//! throughput; these lines name the pass, and the tracer dumps every thread's stack next to
//! them.
//!
//! **Evidence it needs.** The tracer's lines.
//!
//! **What to change.** Read the stack dump printed with the longest pass (the lines before
//! it): a Python hot spot in the scheduler is fixed there, not by a server flag; a busy host
//! (other processes on the scheduler's core) by freeing the core.
//!
//! **Source.** SGLang's slow-pass tracer (`SlowPassTracer`, `faulthandler.dump_traceback_later`
//! around the scheduler's passes).

use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, SourceRange, Unit};
use crate::rules::{Input, Rule};

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Slow passes (all ranks).
    pub count: u64,
    /// The longest. Unit: milliseconds.
    pub max_ms: Option<f64>,
    /// Its label.
    pub max_label: Option<String>,
    /// The tracer's threshold. Unit: milliseconds.
    pub threshold_ms: Option<f64>,
    /// The first line.
    pub evidence: Option<SourceRange>,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let s = &input.ev.alarms.slow_passes;
    (s.count > 0).then(|| Facts {
        count: s.count,
        max_ms: s.max_ms,
        max_label: s.max_label.clone(),
        threshold_ms: s.threshold_ms,
        evidence: s.first.map(|l| input.line(l)),
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct SlowPass;

impl Rule for SlowPass {
    const NAME: &'static str = "slow_pass";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let longest = match (f.max_ms, f.max_label.as_deref()) {
            (Some(ms), Some(l)) => format!("; the longest, {l}, took {ms:.0} ms"),
            (Some(ms), None) => format!("; the longest took {ms:.0} ms"),
            _ => String::new(),
        };
        let mut figures = vec![Figure::new("slow passes", f.count as f64, Unit::Events)];
        if let Some(ms) = f.max_ms {
            figures.push(Figure::new("longest pass", ms / 1000.0, Unit::Seconds));
        }
        finding(
            FindingKind::SlowSchedulerPass,
            "Scheduler passes ran past their threshold",
            format!(
                "{} scheduler pass{} took longer than {}{longest}. While a pass runs the scheduler launches no batch and the GPU waits: the stack dump printed with each line says where the time went (a Python hot spot, a blocking call, a busy CPU core), which batch lines cannot.",
                f.count,
                if f.count == 1 { "" } else { "es" },
                f.threshold_ms
                    .map(|t| format!("the {t:.0} ms threshold"))
                    .unwrap_or_else(|| "the tracer's threshold".to_string()),
            ),
            figures,
            f.evidence.iter().cloned().collect(),
            Confidence::High,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, with_input};

    /// The tracer's lines (its format string), after real decode lines.
    fn log(extra: &[&str]) -> String {
        let mut log = excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5);
        for l in extra {
            log.push_str(l);
            log.push('\n');
        }
        log
    }

    #[test]
    fn the_longest_pass_is_named() {
        let l = log(&[
            "[2025-04-15 17:30:00 DP0 TP0] slow scheduler pass: event_loop_overlap took 812.4ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)",
            "[2025-04-15 17:30:02 DP0 TP0] slow scheduler pass: recv_requests took 1500.0ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)",
        ]);
        with_input(&l, |i| {
            let f = check(i).expect("slow passes");
            assert_eq!(
                (f.count, f.max_ms, f.threshold_ms),
                (2, Some(1500.0), Some(500.0))
            );
            assert_eq!(f.max_label.as_deref(), Some("recv_requests"));
            assert_eq!(f.evidence.as_ref().map(|e| e.first_line), Some(6));
            let w = SlowPass::finding(&f, i);
            assert!(w.detail.starts_with("2 scheduler passes took longer than the 500 ms threshold; the longest, recv_requests, took 1500 ms."), "{}", w.detail);
        });
    }

    /// One pass exactly at the threshold is still a line the tracer printed (`>=`).
    #[test]
    fn a_pass_at_the_threshold_counts() {
        let l = log(&[
            "[2025-04-15 17:30:00 DP0 TP0] slow scheduler pass: event_loop_overlap took 500.0ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)",
        ]);
        with_input(&l, |i| assert_eq!(check(i).map(|f| f.count), Some(1)));
    }

    #[test]
    fn no_tracer_line_no_finding() {
        with_input(&log(&[]), |i| assert_eq!(check(i), None));
    }
}
