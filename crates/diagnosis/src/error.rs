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

/// Why a window of Prometheus history cannot be read ([`crate::fleet::Window::new`]). The
/// messages name the `diagnose --prometheus` options that set it.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum WindowError {
    /// The step is finer than [`crate::thresholds::FLEET_MIN_STEP_S`].
    #[error("--step must be at least 1ms")]
    StepTooSmall {
        /// The step given (seconds).
        step_s: f64,
    },
    /// The window ends at or before its start.
    #[error("--end must be after --start")]
    EndNotAfterStart {
        /// Start (Unix seconds).
        start: f64,
        /// End (Unix seconds).
        end: f64,
    },
    /// The window holds more than [`crate::thresholds::FLEET_MAX_POINTS`] steps.
    #[error(
        "--step {step_s} s over a {span_s:.0} s window is {points:.0} points per series, more than {max:.0}: give a larger --step or a shorter window"
    )]
    TooManyPoints {
        /// The step (seconds).
        step_s: f64,
        /// The window's length (seconds).
        span_s: f64,
        /// Its length in steps (points).
        points: f64,
        /// The most allowed (points).
        max: f64,
    },
}
