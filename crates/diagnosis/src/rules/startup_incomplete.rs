//! # `startup_incomplete`: the startup never finished
//!
//! **What it detects.** Startup lines (`server_args`, `Load weight end`, the KV pool's lines,
//! CUDA-graph capture) but no `The server is fired up and ready to roll!`, no batch line and
//! no traceback: the log stops during the startup, at the step [`Facts::step`] names.
//!
//! **Why it matters.** A server that never printed its ready banner never served: there is no
//! throughput to diagnose. Stopping before the KV pool means loading or building the model
//! hung or was killed (an OOM kill by the host leaves no traceback); stopping while the CUDA
//! graphs were being captured (the capture began, its progress bar printed, no end line) means
//! the capture did not finish: it takes its memory from what the KV pool left, so it is most
//! often out of memory, or a hung kernel. Stopping after the pool with no step under way may
//! also be a paste that ends there, so then the capacity the startup fixed is judged instead
//! (`startup_only`).
//!
//! **Evidence it needs.** Startup lines; the absence of the banner and of batch lines.
//!
//! **What to change.** Look at what the process printed last and at the host's log
//! (`dmesg` for the OOM killer); for a paste, include the lines after the startup.
//!
//! **Source.** SGLang `model_executor/model_runner.py` (load, pool, graphs in that order),
//! `entrypoints/http_server.py` (`_wait_and_warmup` prints the ready banner).

use crate::narrative::words::step_words;
use crate::report::{Confidence, Finding, FindingKind, SourceRange, StartupStep};
use crate::rules::{Input, Rule};

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The furthest startup step reached.
    pub step: StartupStep,
    /// Whether it stopped before the KV pool was allocated (then it is the verdict).
    pub before_pool: bool,
    /// Whether it stopped during CUDA-graph capture (then it is the verdict too).
    pub in_capture: bool,
    /// The free memory the last capture line printed (GiB).
    pub capture_avail_gib: Option<f64>,
    /// The line of the step reached.
    pub evidence: SourceRange,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let ev = input.ev;
    let (step, loc) = ev.incidents.step?;
    let no_batches = ev.schedulers.values().all(|s| s.first.is_none());
    let crashed = ev.incidents.tracebacks().next().is_some();
    (step < StartupStep::Serving && !ev.startup.server_ready && no_batches && !crashed).then(|| {
        Facts {
            step,
            before_pool: step < StartupStep::KvPoolAllocated,
            in_capture: step == StartupStep::CapturingGraphs,
            capture_avail_gib: ev.incidents.capture_avail_gib,
            evidence: input.line(loc),
        }
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words: the step the startup reached.
#[derive(Clone, Copy, Debug)]
pub struct StartupIncomplete;

impl Rule for StartupIncomplete {
    const NAME: &'static str = "startup_incomplete";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let (detail, confidence) = if f.before_pool {
            (
                "Loading or building the model hung or was killed (a kill by the host's OOM killer leaves no traceback: see dmesg). There is no throughput to diagnose.",
                Confidence::High,
            )
        } else if f.in_capture {
            (
                "The CUDA-graph capture began and never ended: it ran out of memory, hung, or the process was killed (see dmesg). The graphs take their memory from what the KV pool left, so lowering mem_fraction_static (or --cuda-graph-max-bs) leaves them more. There is no throughput to diagnose.",
                Confidence::Medium,
            )
        } else {
            (
                "Either the startup stopped there or the paste ends there; the capacity the startup fixed is judged from its lines.",
                Confidence::Low,
            )
        };
        Finding {
            kind: FindingKind::StartupIncomplete,
            title: format!(
                "The log ends during the startup, after {}: no ready banner and no batch line",
                step_words(f.step)
            ),
            detail: detail.to_string(),
            figures: vec![],
            evidence: vec![f.evidence.clone()],
            confidence,
            levers: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    /// `real/062`'s pool and capacity lines, and nothing after them.
    #[test]
    fn startup_lines_without_the_banner() {
        with_input(
            &whole("real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log"),
            |i| {
                let f = check(i).expect("incomplete");
                // the capacity line comes after the model runner, graphs included
                assert_eq!(f.step, StartupStep::CudaGraphsCaptured);
                assert!(!f.before_pool && !f.in_capture);
                assert_eq!(f.evidence.first_line, 6);
            },
        );
    }

    #[test]
    fn a_log_that_stops_during_graph_capture() {
        // real-4/119: the pool allocated, then the capture's progress bar at 1 of 52 batch
        // sizes with 20.14 GB free, and nothing after
        with_input(
            &whole("real-4/119-pr18263-amd-aiter-mem0911-kv-overallocation-debug-prints.log"),
            |i| {
                let f = check(i).expect("incomplete");
                assert_eq!(f.step, StartupStep::CapturingGraphs);
                assert!(f.in_capture && !f.before_pool);
                assert_eq!(f.capture_avail_gib, Some(20.14));
                assert_eq!(f.evidence.first_line, 8);
            },
        );
        // real-4/102: the capture began (target prefill graphs) and its bar stopped at 0 of 58
        with_input(
            &whole("real-4/102-dgxspark-gb10-nvfp4-mem088-kv26k-stuck-graph-capture.log"),
            |i| {
                let f = check(i).expect("incomplete");
                assert!(f.in_capture);
                assert_eq!(f.capture_avail_gib, Some(11.78));
            },
        );
        // boundary: the capture's end line after its bar: the step is past the capture
        let ended = format!(
            "{}[2026-07-15 13:15:30] Capture cuda graph end. Time elapsed: 36.00 s. mem usage=3.10 GB. avail mem=17.04 GB.\n",
            whole("real-4/119-pr18263-amd-aiter-mem0911-kv-overallocation-debug-prints.log")
        );
        with_input(&ended, |i| {
            let f = check(i).expect("incomplete");
            assert_eq!(f.step, StartupStep::CudaGraphsCaptured);
            assert!(!f.in_capture);
        });
    }

    #[test]
    fn batch_lines_mean_it_served() {
        let text = format!(
            "{}{}",
            whole("real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log"),
            excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=3)
        );
        with_input(&text, |i| assert_eq!(check(i), None));
    }

    #[test]
    fn a_traceback_is_its_own_finding() {
        let text = format!(
            "{}{}",
            excerpt(
                "real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log",
                1..=2
            ),
            whole("real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log")
        );
        with_input(&text, |i| assert_eq!(check(i), None));
    }
}
