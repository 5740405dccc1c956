//! Will the GPU still have room for activations after a change? A band calibrated on real
//! outcomes, not a stack of cautions.
//!
//! # The start-up band and the evidence it rests on
//!
//! SGLang prints `available_gpu_mem` after the KV pool is allocated and the CUDA graphs are
//! captured. A change of `mem_fraction_static` by Δ moves only the pool, so the same figure at
//! the new fraction is `available_gpu_mem − Δ × pre` ([`crate::PoolModel`]). What the server
//! needs of it at run time is the activation peak of the largest pass that is not a graph (a
//! prefill chunk of `chunked_prefill_size` tokens) plus allocator fragmentation. Outcomes seen
//! (each a log or a report read with its fraction, its `available_gpu_mem` and what happened):
//!
//! | case | chunk (tokens) | left after start-up (GiB) | outcome |
//! |---|---|---|---|
//! | Kimi-K2.5 on 8 × RTX PRO 6000, TP8 (the founding case) at 0.88 | 8,192 | ~2.31 (5.16 at 0.85 − 3 × 0.95) | served under load |
//! | the same at 0.93 | 8,192 | ~−2.44 | out of memory |
//! | Qwen3-4B on an RTX 4090 (`real-long/rtx4090-*`), pool full | 2,048 | 1.91 | served under load |
//! | a hybrid model + MTP on a 96 GB card (public report) | 4,096 | 1.37 / 0.72 / 0.45 | served / out of memory at warm-up / out of memory |
//! | Qwen3-4B, one GPU (public report) | 29k prompt | 0.45 | out of memory on the prefill |
//! | a 27B hybrid on a 48 GB card, WSL2 (public report) | 2,048 | 0.52 | served long prompts; chunk 8,192 crashed |
//!
//! So: below [`OOM_BELOW_GIB`] runs have run out of memory and none has served a real load
//! with confidence; at or above [`RUN_NEED_GIB_PER_1K_CHUNK_TOKENS`] × chunk (at least
//! [`FITS_FLOOR_GIB`]) every run seen served; in between the evidence cannot tell, and the band
//! says *uncertain* instead of forbidding it. SGLang's own default fraction
//! (`server_args.py` `_handle_gpu_memory_settings`) budgets 1.5 MiB per chunk token plus the
//! graphs, 3–6 times what the runs above needed: a starting point, not the edge.

use serde::Serialize;

use crate::GIB;

/// Where the free memory of a [`Headroom`] was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FreeSource {
    /// An `nvidia-smi` or NVML snapshot taken while the server runs requests: the activation
    /// peak of the prefills so far is already inside "used" (PyTorch's caching allocator keeps
    /// it), so what is left only needs a margin.
    UnderLoad,
    /// The log's `available_gpu_mem` at start-up, after CUDA-graph capture: the activations of
    /// the largest prefill chunk still have to fit in what is left.
    AfterStartup,
}

/// Room on one GPU for a change that takes more memory, and the band it is judged by.
///
/// A change that takes `extra` more bytes leaves `free − extra`. It *fits* (likely) when that
/// is at least `fits_at`, is *out of memory* (likely) below `oom_below`, and is *uncertain* in
/// between. A change that takes no more memory than today's (the running configuration, fp8 KV
/// at the same fraction, a smaller fraction) fits: the running server shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Headroom {
    /// Free memory per GPU (the smallest over the GPUs), bytes.
    pub free_bytes: f64,
    /// Where it was measured.
    pub source: FreeSource,
    /// Free memory a change must leave to be called likely to fit, bytes.
    pub fits_at_bytes: f64,
    /// Free memory below which a change is likely out of memory, bytes.
    pub oom_below_bytes: f64,
}

/// Margin kept free after a change under load (GiB): fragmentation, communication buffers and
/// the rank-to-rank spread of free memory (about 0.15 GiB on the founding case's 8 GPUs).
pub const DEFAULT_MARGIN_GIB: f64 = 1.5;

/// Below this much free memory after a change (GiB), runs have run out of memory (0.45 GiB on a
/// prefill, 0.72 GiB at warm-up; see the module doc) and none has served a real load with
/// confidence.
pub const OOM_BELOW_GIB: f64 = 0.5;

/// Free memory after start-up that every run seen served with, per 1,024 tokens of the prefill
/// chunk (GiB): 2.0 GiB at 8,192 (the founding case ran at 0.88 with ~2.31 GiB), 0.5 GiB at
/// 2,048 (an RTX 4090 ran with 1.91 GiB).
pub const RUN_NEED_GIB_PER_1K_CHUNK_TOKENS: f64 = 0.25;

/// The least free memory after start-up called likely to fit, whatever the chunk (GiB).
pub const FITS_FLOOR_GIB: f64 = 1.0;

impl Headroom {
    /// Free memory seen under load (a GPU snapshot while requests run), bytes: a change fits
    /// when [`DEFAULT_MARGIN_GIB`] stays free.
    pub fn under_load(free_bytes: f64) -> Self {
        Headroom {
            free_bytes,
            source: FreeSource::UnderLoad,
            fits_at_bytes: DEFAULT_MARGIN_GIB * GIB,
            oom_below_bytes: OOM_BELOW_GIB * GIB,
        }
    }

    /// Free memory after start-up (`available_gpu_mem`), bytes, for a server whose largest
    /// prefill pass needs `need_bytes` (see [`startup_need_bytes`]).
    pub fn after_startup(free_bytes: f64, need_bytes: f64) -> Self {
        Headroom {
            free_bytes,
            source: FreeSource::AfterStartup,
            fits_at_bytes: need_bytes.max(OOM_BELOW_GIB * GIB),
            oom_below_bytes: OOM_BELOW_GIB * GIB,
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

/// Free memory after start-up that a server with prefill chunks of `chunk_tokens` needs to be
/// called likely to fit, bytes: the calibrated [`RUN_NEED_GIB_PER_1K_CHUNK_TOKENS`] × chunk, at
/// least [`FITS_FLOOR_GIB`], and at least the activation estimate of a wide model
/// (`activation_bytes`, per GPU, when the model config gives its hidden size).
pub fn startup_need_bytes(chunk_tokens: u64, activation_bytes: Option<f64>) -> f64 {
    let calibrated = RUN_NEED_GIB_PER_1K_CHUNK_TOKENS * chunk_tokens as f64 / 1024.0 * GIB;
    calibrated
        .max(FITS_FLOOR_GIB * GIB)
        .max(activation_bytes.unwrap_or(0.0))
}

/// Verdict on a change's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Feasibility {
    /// Likely fits: it leaves what every run seen needed (or takes no more memory than today).
    Fits,
    /// Uncertain: it leaves less than runs were seen to serve with, but more than runs were
    /// seen to run out of memory at; try it, watching the first large prefills.
    Uncertain,
    /// Likely out of memory: it leaves less than runs were seen to fail at, or nothing.
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
    /// Extra memory the change takes, GiB (negative when it frees memory).
    pub extra_gib: f64,
    /// `free_now − extra`, GiB: what the change leaves (after start-up: SGLang's
    /// `available_gpu_mem` at the new setting); negative means it would not fit at all.
    pub free_after_gib: f64,
    /// What it must leave to be called likely to fit, GiB.
    pub fits_at_gib: f64,
    /// Below this left, out of memory is likely, GiB.
    pub oom_below_gib: f64,
}

/// Classify a change that takes `extra_bytes` more per GPU (see [`Headroom`]).
pub fn check_feasibility(h: &Headroom, extra_bytes: f64) -> FeasibilityCheck {
    let free_now_gib = h.free_bytes / GIB;
    let extra_gib = extra_bytes / GIB;
    let free_after_gib = free_now_gib - extra_gib;
    let fits_at_gib = h.fits_at_bytes / GIB;
    let oom_below_gib = h.oom_below_bytes / GIB;
    let verdict = if extra_bytes <= 0.0 || free_after_gib >= fits_at_gib {
        Feasibility::Fits
    } else if free_after_gib >= oom_below_gib {
        Feasibility::Uncertain
    } else {
        Feasibility::OomLikely
    };
    FeasibilityCheck {
        verdict,
        source: h.source,
        free_now_gib,
        extra_gib,
        free_after_gib,
        fits_at_gib,
        oom_below_gib,
    }
}
