//! # `oom`: a process ran out of device memory
//!
//! **What it detects.** A Python traceback whose exception is an out-of-memory error
//! (`torch.OutOfMemoryError`, `torch.cuda.OutOfMemoryError`, `RuntimeError: CUDA out of
//! memory`), with the startup step the log had reached before it: before the KV pool
//! (`KV Cache is allocated` / `Memory pool end`), the OOM happened while the weights were
//! loaded or the model was built.
//!
//! **Why it matters.** An OOM at weight load is not a KV-pool problem: SGLang sizes the pool
//! from what is left *after* the weights (`model_runner.py` `profile_max_num_token`), so
//! lowering `--mem-fraction-static` cannot help; the weights themselves do not fit (a
//! quantization that was not applied, too few GPUs for the model). After the pool it is the
//! activations of a batch or CUDA-graph capture that did not fit in the rest.
//!
//! **Evidence it needs.** The traceback's last line (and its frames); the startup lines
//! before it.
//!
//! **What to change.** At weight load: more GPUs (a larger `--tp`), a quantized checkpoint
//! whose quantization applies to every layer, or a smaller model. After the pool: a lower
//! `--mem-fraction-static`, `--chunked-prefill-size` or `--cuda-graph-max-bs`.
//!
//! **Source.** SGLang `model_executor/model_runner.py` (`load_model`, then
//! `init_memory_pool`, then `init_cuda_graphs`); `managers/scheduler.py`
//! (`run_scheduler_process` logs `Scheduler hit an exception`).

use crate::evidence::alarms::OomFigures;
use crate::incidents::SourcedStack;
use crate::narrative::words::{exception_words, in_frame};
use crate::report::{
    Confidence, Figure, Finding, FindingKind, Lever, SourceRange, StartupStep, Unit,
};
use crate::rules::{Input, Rule};

/// Where in the server's life the memory ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomPhase {
    /// Before the KV pool was allocated: loading weights or building the model.
    WeightLoad,
    /// After the pool, before serving (CUDA-graph capture, warm-up).
    AfterKvPool,
    /// While serving.
    Serving,
}

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// When.
    pub phase: OomPhase,
    /// The exception type.
    pub exception: Option<String>,
    /// Its message.
    pub message: Option<String>,
    /// The innermost frame in SGLang's code.
    pub frame: Option<sglang_log::Frame>,
    /// The startup step reached before it.
    pub step: Option<StartupStep>,
    /// Out-of-memory tracebacks in all (all ranks).
    pub count: usize,
    /// The first one's lines.
    pub evidence: SourceRange,
    /// The allocator's figures of the first out-of-memory line (what it asked for, what was
    /// free), when the message prints them.
    pub figures: Option<OomFigures>,
}

/// The phase of a stack's startup step.
fn phase_of(step: Option<StartupStep>) -> OomPhase {
    match step {
        None | Some(StartupStep::Launched | StartupStep::WeightsLoaded) => OomPhase::WeightLoad,
        Some(
            StartupStep::KvPoolAllocated
            | StartupStep::CapturingGraphs
            | StartupStep::CudaGraphsCaptured,
        ) => OomPhase::AfterKvPool,
        Some(StartupStep::Serving) => OomPhase::Serving,
    }
}

/// The rule: the first out-of-memory traceback.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let ooms: Vec<&SourcedStack> = input
        .ev
        .incidents
        .tracebacks()
        .filter(|s| s.stack.is_oom())
        .collect();
    let first = ooms.first()?;
    Some(Facts {
        phase: phase_of(first.step),
        exception: first.stack.exception.clone(),
        message: first.stack.message.clone(),
        frame: first.stack.innermost_sglang_frame().cloned(),
        step: first.step,
        count: ooms.len(),
        evidence: input.range(first.source, first.stack.first_line, first.stack.last_line),
        figures: input.ev.alarms.first_oom.clone(),
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words: the phase it ran out in, what to change there, the error.
#[derive(Clone, Copy, Debug)]
pub struct Oom;

impl Rule for Oom {
    const NAME: &'static str = "oom";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let at = in_frame(f.frame.as_ref());
        let (title, detail) = match f.phase {
            OomPhase::WeightLoad => (
                "Out of memory at weight load, not a KV pool problem".to_string(),
                format!(
                    "The device ran out of memory while the model was being loaded or built{at}, before the KV pool was allocated. SGLang sizes the pool from the memory left after the weights, so lowering --mem-fraction-static cannot fix this: the weights do not fit. Use more GPUs (a larger --tp), a quantized checkpoint whose quantization applies to every layer (a layer that falls back to the unquantized method takes full-precision memory), or a smaller model."
                ),
            ),
            OomPhase::AfterKvPool => (
                "Out of memory after the KV pool was allocated".to_string(),
                format!(
                    "The device ran out of memory{at} after the KV pool took its share (CUDA-graph capture or warm-up): the rest left for activations is too small. Lower --mem-fraction-static, --cuda-graph-max-bs or --chunked-prefill-size."
                ),
            ),
            OomPhase::Serving => (
                "Out of memory while serving".to_string(),
                format!(
                    "The device ran out of memory{at} while serving: a batch's activations did not fit beside the KV pool. Lower --mem-fraction-static or --chunked-prefill-size."
                ),
            ),
        };
        Finding {
            kind: FindingKind::OutOfMemory,
            title,
            detail: format!(
                "{detail}{} The error: {}",
                f.figures.as_ref().map(allocation_words).unwrap_or_default(),
                exception_words(f.exception.as_deref(), f.message.as_deref())
            ),
            figures: vec![Figure::new("tracebacks", f.count as f64, Unit::Events)],
            evidence: vec![f.evidence.clone()],
            confidence: Confidence::High,
            levers: match f.phase {
                OomPhase::WeightLoad => Vec::new(),
                OomPhase::AfterKvPool => vec![
                    Lever::MemFractionStatic,
                    Lever::CudaGraphMaxBs,
                    Lever::ChunkedPrefillSize,
                ],
                OomPhase::Serving => vec![Lever::MemFractionStatic, Lever::ChunkedPrefillSize],
            },
        }
    }
}

/// What the allocator asked for against what was free, in words (` It asked for 256 MiB with
/// 70 MiB free of 31.86 GiB.`), or nothing when the message gives neither.
fn allocation_words(o: &OomFigures) -> String {
    let size = |b: u64| {
        let mib = b as f64 / (1024.0 * 1024.0);
        if mib >= 1024.0 {
            format!("{:.2} GiB", mib / 1024.0)
        } else {
            format!("{mib:.0} MiB")
        }
    };
    match (o.tried_bytes, o.free_bytes) {
        (Some(t), Some(f)) => format!(
            " It asked the {} allocator for {} with {} free{}.",
            o.device,
            size(t),
            size(f),
            o.total_bytes
                .map(|c| format!(" of {}", size(c)))
                .unwrap_or_default()
        ),
        (Some(t), None) => format!(" It asked the {} allocator for {}.", o.device, size(t)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    const OOM: &str = "real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log";

    #[test]
    fn oom_while_the_model_is_built() {
        with_input(&whole(OOM), |i| {
            let f = check(i).expect("oom");
            assert_eq!(f.phase, OomPhase::WeightLoad);
            assert_eq!(f.step, None);
            assert_eq!(f.exception.as_deref(), Some("torch.OutOfMemoryError"));
            assert_eq!(
                f.frame.as_ref().map(|f| f.function.as_str()),
                Some("create_weights")
            );
            assert_eq!((f.evidence.first_line, f.evidence.last_line), (17, 81));
            // line 81: `Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 31.86 GiB
            // of which 70.00 MiB is free.`
            let w = Oom::finding(&f, i);
            assert!(
                w.detail.contains(
                    "It asked the CUDA allocator for 256 MiB with 70 MiB free of 31.86 GiB."
                ),
                "{}",
                w.detail
            );
        });
    }

    /// The same traceback after the pool's lines (real lines of `real/062`) is past weight
    /// load.
    #[test]
    fn after_the_pool_it_is_not_weight_load() {
        let pool = excerpt(
            "real/062-i11208-gb200-glm45air-dp-startup-kv-capacity.log",
            1..=2,
        );
        with_input(&format!("{pool}{}", whole(OOM)), |i| {
            assert_eq!(check(i).map(|f| f.phase), Some(OomPhase::AfterKvPool));
        });
    }

    #[test]
    fn no_traceback_no_finding() {
        with_input(
            &whole("real/049-i3752-watchdog-timeout-tp8-with-top.log"),
            |i| assert_eq!(check(i), None),
        );
        // a traceback that is not an OOM
        let other = whole(OOM).replace(
            "torch.OutOfMemoryError: CUDA out of memory.",
            "ValueError: bad shape.",
        );
        with_input(&other, |i| assert_eq!(check(i), None));
    }
}
