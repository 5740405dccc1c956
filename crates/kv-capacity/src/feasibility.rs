//! Will the GPU still have room for activations after a change?

use serde::Serialize;

use crate::GIB;

/// Free-memory bands (GiB, per GPU, measured after CUDA-graph capture) that classify a change.
///
/// Defaults: ≥ 8 GiB free after the change → [`Feasibility::Fits`]; 5–8 GiB →
/// [`Feasibility::Tight`]; < 5 GiB → [`Feasibility::OomLikely`]. Why: SGLang's tuning guidance
/// is to keep about 5–8 GB free (`available_gpu_mem` in the startup line) for activations of a
/// prefill chunk (`chunked_prefill_size` tokens), the sampler/logits buffers and allocator
/// fragmentation; its own default reserve (`server_args.py`, spec §5.3) never drops below 10 GiB
/// on GPUs over 60 GiB *before* graphs are captured. The bands are absolute rather than a share
/// of the card because activation memory scales with the chunk size and hidden size, not with
/// the card. The log prints "GB" but means GiB, so the bands are GiB.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FeasibilityThresholds {
    /// Free memory after the change at or above which it fits, GiB.
    pub fits_free_gib: f64,
    /// Free memory after the change below which an OOM is likely, GiB.
    pub tight_free_gib: f64,
}

impl Default for FeasibilityThresholds {
    fn default() -> Self {
        FeasibilityThresholds {
            fits_free_gib: 8.0,
            tight_free_gib: 5.0,
        }
    }
}

/// Verdict on a change's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Feasibility {
    /// Enough left for activations.
    Fits,
    /// Within SGLang's 5–8 GB guidance: works for moderate prefill chunks, little margin.
    Tight,
    /// Less than the minimum left (or negative: the pool would not even fit).
    OomLikely,
}

/// A feasibility verdict with the numbers behind it (GiB per GPU).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FeasibilityCheck {
    /// The verdict.
    pub verdict: Feasibility,
    /// Free memory now (after CUDA graphs), GiB.
    pub free_now_gib: f64,
    /// Extra memory the change takes, GiB (negative when it frees memory).
    pub extra_gib: f64,
    /// `free_now − extra`, GiB; negative means the allocation itself cannot succeed.
    pub free_after_gib: f64,
}

/// Classify a change that takes `extra_bytes` more per GPU when `free_now_bytes` are free at
/// run time (the log's `available_gpu_mem`, the last `avail mem` after CUDA-graph capture, or a
/// GPU snapshot's free memory while the server runs).
pub fn check_feasibility(
    free_now_bytes: f64,
    extra_bytes: f64,
    thresholds: &FeasibilityThresholds,
) -> FeasibilityCheck {
    let free_now_gib = free_now_bytes / GIB;
    let extra_gib = extra_bytes / GIB;
    let free_after_gib = free_now_gib - extra_gib;
    let verdict = if free_after_gib >= thresholds.fits_free_gib {
        Feasibility::Fits
    } else if free_after_gib >= thresholds.tight_free_gib {
        Feasibility::Tight
    } else {
        Feasibility::OomLikely
    };
    FeasibilityCheck {
        verdict,
        free_now_gib,
        extra_gib,
        free_after_gib,
    }
}
