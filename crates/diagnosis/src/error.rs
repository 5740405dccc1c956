//! The errors of this crate. The diagnosis itself never fails (a missing fact narrows the
//! report); these say why a part of it could not be built, and reach the report's
//! `not_concluded`.

/// Why the KV what-if table could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WhatIfUnavailable {
    /// No `--model-config`.
    #[error("no model config (--model-config config.json) was given")]
    NoModelConfig,
    /// `mem_fraction_static` unknown.
    #[error("mem_fraction_static is unknown (no server_args line or server info)")]
    NoMemFraction,
    /// The pool size unknown.
    #[error("max_total_num_tokens is unknown (no startup lines or server info)")]
    NoPoolSize,
    /// The GPU's memory unknown.
    #[error(
        "the GPU's memory is unknown (no --gpu / --gpu-snapshot and no `Load weight end` line)"
    )]
    NoGpuMemory,
    /// `kv-capacity` refused an input (dtype, geometry, pool calibration).
    #[error(transparent)]
    Capacity(#[from] kv_capacity::CapacityError),
}
