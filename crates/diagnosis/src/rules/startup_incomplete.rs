//! # `startup_incomplete`: the startup never finished
//!
//! **What it detects.** Startup lines (`server_args`, `Load weight end`, the KV pool's lines,
//! CUDA-graph capture) but no `The server is fired up and ready to roll!`, no batch line and
//! no traceback: the log stops during the startup, at the step [`Facts::step`] names.
//!
//! **Why it matters.** A server that never printed its ready banner never served: there is no
//! throughput to diagnose. Stopping before the KV pool means loading or building the model
//! hung or was killed (an OOM kill by the host leaves no traceback); stopping after it may
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

use crate::report::{SourceRange, StartupStep};
use crate::rules::Input;

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The furthest startup step reached.
    pub step: StartupStep,
    /// Whether it stopped before the KV pool was allocated (then it is the verdict).
    pub before_pool: bool,
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
            evidence: input.line(loc),
        }
    })
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
                assert_eq!(f.step, StartupStep::KvPoolAllocated);
                assert!(!f.before_pool);
                assert_eq!(f.evidence.first_line, 1);
            },
        );
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
