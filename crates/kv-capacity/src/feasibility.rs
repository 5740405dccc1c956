//! Will the GPU still have room for activations after a change?

use serde::Serialize;

use crate::GIB;

/// Where the free memory of a [`Headroom`] was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FreeSource {
    /// An `nvidia-smi` or NVML snapshot taken while the server runs requests: the activation
    /// peak of the prefills so far is already inside "used" (PyTorch's caching allocator keeps
    /// it), so nothing more is reserved for it.
    UnderLoad,
    /// The log's `available_gpu_mem` at start-up, after CUDA-graph capture: the activations of
    /// the first large prefill still have to fit, so an estimate of them is reserved.
    AfterStartup,
}

/// Room on one GPU for a change that takes more memory, and what it rests on.
///
/// A change that takes `extra` more bytes fits when `free − reserve − extra ≥ margin`, is
/// tight when it stays ≥ 0, and is likely out of memory below that. A change that takes no
/// more memory than today's (the running configuration, fp8 KV at the same fraction, a
/// smaller fraction) fits: the running server shows it. SGLang's tuning guide's 5–8 GB of
/// free memory is a starting point for `available_gpu_mem` at start-up, not a law: a 24 GB
/// card serving a 4B model runs with 1.91 GiB left.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Headroom {
    /// Free memory per GPU (the smallest over the GPUs), bytes.
    pub free_bytes: f64,
    /// Where it was measured.
    pub source: FreeSource,
    /// Memory the activations still need on top (0 under load), bytes; an estimate.
    pub reserve_bytes: f64,
    /// Margin kept for allocator fragmentation, NCCL and graph buffers and the spread between
    /// GPUs, bytes ([`DEFAULT_MARGIN_GIB`]).
    pub margin_bytes: f64,
}

/// Margin kept free after a change (GiB): fragmentation, communication buffers and the
/// rank-to-rank spread of free memory (about 0.15 GiB on the founding case's 8 GPUs) with room
/// to spare.
pub const DEFAULT_MARGIN_GIB: f64 = 1.5;

impl Headroom {
    /// Free memory seen under load (a GPU snapshot while requests run), bytes.
    pub fn under_load(free_bytes: f64) -> Self {
        Headroom {
            free_bytes,
            source: FreeSource::UnderLoad,
            reserve_bytes: 0.0,
            margin_bytes: DEFAULT_MARGIN_GIB * GIB,
        }
    }

    /// Free memory after start-up (`available_gpu_mem`), with `reserve_bytes` of activations
    /// still to come (see [`activation_estimate_bytes`]).
    pub fn after_startup(free_bytes: f64, reserve_bytes: f64) -> Self {
        Headroom {
            free_bytes,
            source: FreeSource::AfterStartup,
            reserve_bytes,
            margin_bytes: DEFAULT_MARGIN_GIB * GIB,
        }
    }
}

/// bf16 tensors of `hidden_size` width live at once per token of a prefill chunk (residual,
/// norms, QKV, attention output, MLP inputs and partial outputs): an estimate, per GPU.
pub const ACTIVATION_TENSORS_PER_TOKEN: f64 = 16.0;

/// Activation memory of one prefill chunk, per GPU, bytes: `chunk_tokens × hidden_size × 2 ×`
/// [`ACTIVATION_TENSORS_PER_TOKEN`]. An estimate of the peak SGLang's `available_gpu_mem` must
/// still hold after start-up (the chunk is `chunked_prefill_size`, spec §6); logits are computed
/// for the last token of each sequence only and are left out.
pub fn activation_estimate_bytes(chunk_tokens: u64, hidden_size: u32) -> f64 {
    chunk_tokens as f64 * f64::from(hidden_size) * 2.0 * ACTIVATION_TENSORS_PER_TOKEN
}

/// Verdict on a change's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Feasibility {
    /// The margin is left after the change (or it takes no more memory than today).
    Fits,
    /// Something but less than the margin is left.
    Tight,
    /// Nothing is left (the pool, or pool and activations, would not fit).
    OomLikely,
}

/// A feasibility verdict with the numbers behind it (GiB per GPU).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FeasibilityCheck {
    /// The verdict.
    pub verdict: Feasibility,
    /// Where the free memory was measured.
    pub source: FreeSource,
    /// Free memory now, GiB.
    pub free_now_gib: f64,
    /// Activations still to come (0 under load), GiB; an estimate.
    pub reserve_gib: f64,
    /// The margin the verdict keeps, GiB.
    pub margin_gib: f64,
    /// Extra memory the change takes, GiB (negative when it frees memory).
    pub extra_gib: f64,
    /// `free_now − reserve − extra`, GiB; negative means it would not fit.
    pub free_after_gib: f64,
}

/// Classify a change that takes `extra_bytes` more per GPU (see [`Headroom`]).
pub fn check_feasibility(h: &Headroom, extra_bytes: f64) -> FeasibilityCheck {
    let free_now_gib = h.free_bytes / GIB;
    let reserve_gib = h.reserve_bytes / GIB;
    let margin_gib = h.margin_bytes / GIB;
    let extra_gib = extra_bytes / GIB;
    let free_after_gib = free_now_gib - reserve_gib - extra_gib;
    let verdict = if extra_bytes <= 0.0 || free_after_gib >= margin_gib {
        Feasibility::Fits
    } else if free_after_gib >= 0.0 {
        Feasibility::Tight
    } else {
        Feasibility::OomLikely
    };
    FeasibilityCheck {
        verdict,
        source: h.source,
        free_now_gib,
        reserve_gib,
        margin_gib,
        extra_gib,
        free_after_gib,
    }
}
