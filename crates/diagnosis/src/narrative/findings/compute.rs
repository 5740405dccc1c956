//! Findings of compute: slow decode and prefill steps (the verdict's overrides; the finding
//! rules of compute and graphs word their own findings, in `crate::rules`).

use super::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, Unit};
use crate::rules::{decode_compute, prefill_compute};
use crate::thresholds as th;

/// The finding of [`crate::rules::decode_compute`].
pub fn decode_compute(f: &decode_compute::Facts) -> Finding {
    let per_req = f.tok_per_s_per_request;
    if f.lines == 1 {
        // one instant: its window may hold a prefill, a retraction or idle time
        return finding(
            FindingKind::DecodeComputeBound,
            "Decode looks slow per running request in a single reading",
            format!(
                "On {} the one decode line gives each running request {per_req:.2} tok/s (gen throughput / running requests). \
                 One sample is an instantaneous figure over a window that may hold prefill passes, a retraction or idle time, so it shows no more than that one window: \
                 a log with more decode lines tells whether decode itself is slow (no CUDA graphs, CPU offload, a hung collective).",
                f.scheduler
            ),
            vec![Figure::new(
                "decode speed per running request (one line)",
                per_req,
                Unit::TokPerS,
            )],
            Vec::new(),
            Confidence::Low,
        );
    }
    finding(
        FindingKind::DecodeComputeBound,
        "Decode is extremely slow per running request",
        format!(
            "On {} each running request gains only {per_req:.2} tok/s (median of gen throughput / running requests over the decode lines); \
             a healthy server gives each several tokens per second even in large batches. Look for decode running without CUDA graphs \
             (cuda graph: False; --cuda-graph-max-bs below the batch), CPU or host offload, a hung collective, or a broken kernel.",
            f.scheduler
        ),
        vec![Figure::new(
            "decode speed per running request",
            per_req,
            Unit::TokPerS,
        )],
        Vec::new(),
        Confidence::Medium,
    )
}

/// The finding of [`crate::rules::prefill_compute`].
pub fn prefill_compute(f: &prefill_compute::Facts) -> Finding {
    let p = &f.slow;
    finding(
        FindingKind::PrefillComputeBound,
        "Prefill is extremely slow",
        format!(
            "On {}, consecutive {}-token prefill chunks (one request at a time) are {:.0} s apart: {:.0} tok/s of prefill \
             (median over {} chunk pairs), where a GPU prefills thousands of tokens per second even for a single request. \
             Nothing waits, so this is not load or memory: look for MoE experts or layers offloaded to the CPU \
             (--cpu-offload-gb, expert offload), kernels falling back to a slow path, or a device that is not the one you expect. \
             A prompt of N tokens needs about N / {:.0} seconds before its first token.",
            p.scheduler, p.chunk_tokens, p.seconds_per_chunk, p.tok_per_s, p.pairs, p.tok_per_s
        ),
        vec![
            Figure::new("prefill speed", p.tok_per_s, Unit::TokPerS),
            Figure::new("prefill chunk", p.chunk_tokens as f64, Unit::Tokens),
            Figure::new("seconds per chunk", p.seconds_per_chunk, Unit::Seconds),
        ],
        f.evidence.clone().into_iter().collect(),
        if p.pairs >= th::SURE_CHUNK_PAIRS {
            Confidence::High
        } else {
            Confidence::Medium
        },
    )
}
