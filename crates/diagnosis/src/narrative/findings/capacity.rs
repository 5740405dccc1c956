//! Findings of the capacity model: the KV what-if summary and the HiCache verdict.

use super::finding;
use crate::report::{CapacityModel, Confidence, Figure, Finding, FindingKind, Unit};

/// The capacity findings: the what-if summary (today's pool, the largest fraction that fits,
/// the first that does not, fp8 KV) and the HiCache verdict.
pub fn capacity(cm: &CapacityModel) -> Vec<Finding> {
    use kv_capacity::{Change, Feasibility};
    let rows = &cm.what_if.rows;
    let mut figures = vec![
        Figure::new(
            "KV pool now",
            cm.what_if.current_tokens as f64,
            Unit::Tokens,
        ),
        Figure::new("bytes per token per GPU", cm.cell_bytes as f64, Unit::Bytes),
        Figure::new(
            "tokens per +0.01 mem_fraction_static",
            cm.tokens_per_hundredth,
            Unit::Tokens,
        ),
    ];
    if let Some(f) = cm.free_now_gib {
        figures.push(Figure::new("free GPU memory at run time", f, Unit::Gib));
    }
    let verdict = |w: &kv_capacity::WhatIfRow| w.feasibility.as_ref().map(|f| f.verdict);
    let current = rows
        .iter()
        .find(|w| w.change == Change::Current)
        .map(|w| w.mem_fraction_static);
    let above = |w: &&kv_capacity::WhatIfRow| matches!(w.change, Change::Fraction { to } if current.is_none_or(|c| to > c));
    // the band's edges: the largest change that likely fits, the largest uncertain one, and
    // the first likely out of memory
    let largest_fitting = rows
        .iter()
        .filter(above)
        .rfind(|w| verdict(w) == Some(Feasibility::Fits));
    let largest_uncertain = rows
        .iter()
        .filter(above)
        .rfind(|w| verdict(w) == Some(Feasibility::Uncertain));
    let first_oom = rows
        .iter()
        .filter(above)
        .find(|w| verdict(w) == Some(Feasibility::OomLikely));
    let dtype = rows
        .iter()
        .filter(|w| matches!(w.change, Change::KvDtype { .. }));
    for w in largest_fitting
        .into_iter()
        .chain(largest_uncertain)
        .chain(first_oom)
        .chain(dtype)
    {
        let feasible = match verdict(w) {
            Some(Feasibility::Fits) => " (fits)",
            Some(Feasibility::Uncertain) => " (uncertain: may run out of memory)",
            Some(Feasibility::OomLikely) => " (likely out of memory)",
            None => "",
        };
        figures.push(Figure::new(
            format!("pool at {}{feasible}", w.label),
            w.pool_tokens as f64,
            Unit::Tokens,
        ));
    }
    let mut out = vec![finding(
        FindingKind::CapacityWhatIf,
        "What a bigger KV pool would take",
        format!(
            "SGLang sizes the pool as rest = avail − pre × (1 − mem_fraction_static) (model_runner profile_max_num_token), so each +0.01 adds 1% of the GPU's {:.1} GiB ({:.0} tokens), not 1% of the pool — \
             but only as far as memory is free after activations and CUDA graphs{}. See the what-if table.",
            cm.pre_gib,
            cm.tokens_per_hundredth,
            cm.free_now_gib
                .map(|f| format!(" ({f:.2} GiB now)"))
                .unwrap_or_default()
        ),
        figures,
        Vec::new(),
        Confidence::High,
    )];
    if let Some(h) = &cm.hicache {
        out.push(finding(
            FindingKind::HiCache,
            "HiCache would not let more requests decode at once",
            h.summary.join("; "),
            vec![
                Figure::new(
                    "device KV pool (decode concurrency limit)",
                    h.decode_pool_tokens as f64,
                    Unit::Tokens,
                ),
                Figure::new(
                    "host pool per rank",
                    h.host_tokens_per_rank as f64,
                    Unit::Tokens,
                ),
                Figure::new(
                    "host RAM for all ranks",
                    h.host_bytes_all_ranks as f64 / kv_capacity::GIB,
                    Unit::Gib,
                ),
            ],
            Vec::new(),
            Confidence::High,
        ));
    }
    out
}
