//! Findings in words: one function per rule, from its facts. One file per theme:
//! [`admission`] (load and admission: each verdict's bottleneck finding, held admission, the
//! KV pool's size, DP load), [`compute`] (compute and graphs), [`events`] (stalls, retractions,
//! failures, idle and ramp-up windows), [`client`] (the client and its benchmarks) and
//! [`capacity`] (the capacity model); this file holds the helpers they share, a leaf none of
//! them needs the others for.

mod admission;
mod capacity;
mod client;
mod compute;
mod events;

pub use admission::{bottleneck, dp_imbalance, held_admission, tiny_pool};
pub use capacity::capacity;
pub use client::{
    bench_concurrency_limit, bench_failures, bench_queueing, bench_tokens, client_gap, littles_law,
    numbered, sample_adequacy,
};
pub use compute::{
    cuda_graph, decode_compute, moe_config, prefill_compute, prefill_interference, prefix_reuse,
    speculative,
};
pub use events::{idle_window, kv_transfer, ramp_only, retraction, stall, watchdog};

// The words of `narrative` the themes use, imported here so that their `super::` paths (as
// written when the findings were one file) still resolve.
use super::{
    bottleneck_label, confidence_pct, count, fmt_duration, frame_words, incidents, interval, num,
};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::watchdog;

/// `f` with the settings it says to change.
fn with_levers(mut f: Finding, levers: &[Lever]) -> Finding {
    f.levers = levers.to_vec();
    f
}

fn finding(
    kind: FindingKind,
    title: impl Into<String>,
    detail: impl Into<String>,
    figures: Vec<Figure>,
    evidence: Vec<SourceRange>,
    confidence: Confidence,
) -> Finding {
    Finding {
        kind,
        title: title.into(),
        detail: detail.into(),
        figures,
        evidence,
        confidence,
        levers: Vec::new(),
    }
}

fn failure(f: &watchdog::Facts, kind: FindingKind, title: &str, detail: &str) -> Finding {
    finding(
        kind,
        title,
        format!("{detail} First: {}", f.first_text),
        vec![Figure::new(
            "failure lines (all ranks)",
            f.count as f64,
            Unit::Lines,
        )],
        f.evidence.clone().into_iter().collect(),
        Confidence::High,
    )
}
