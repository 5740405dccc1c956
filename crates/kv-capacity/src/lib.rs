//! KV-cache capacity of an SGLang server: bytes per token from the model's `config.json`, the
//! pool size SGLang computes from `mem_fraction_static`, and what-if projections (higher
//! fraction, fp8 KV, larger TP, host-RAM HiCache).
//!
//! Design decision: the crate is pure. It takes strings and numbers (a `config.json` text, a
//! `/proc/meminfo` text, figures from logs, `/server_info` or a GPU snapshot), never paths, so
//! every projection is testable and the caller decides where numbers come from.
//!
//! The formulas follow SGLang's code (spec `sglang-observables.md` §5):
//! - cell size: [`cell_size_bytes`] (`model_runner.py` / `model_runner_kv_cache_mixin.py` /
//!   `pool_configurator.py`);
//! - pool: [`PoolModel`] (`profile_max_num_token`): `rest = avail − pre × (1 − f)`,
//!   `tokens = floor(rest / cell)`. Raising `f` by 0.01 adds `0.01 × pre` bytes, about 1 % of
//!   the card, **not** 1 % of the pool: 0.85 → 0.95 is not +12 %;
//! - feasibility: [`check_feasibility`] against memory free at run time;
//! - concurrency: [`InFlightLoad`] (length-biased mean tokens per in-flight request);
//! - HiCache: [`hicache_verdict`] (`memory_pool_host.py`): a host-RAM prefix cache that does
//!   not add decode concurrency.
//!
//! Which inputs are estimates: `pre` taken from the GPU total ([`PreSource::GpuTotal`]), the
//! weight memory inferred by a calibrated model ([`PoolModel::used_since_pre_bytes`]) and used
//! by the TP row, the headroom model ([`Headroom`]) and the concurrency model's
//! assumptions. The observed `max_total_num_tokens` and the cell size are exact.
//!
//! Units: bytes in fields named `_bytes`, GiB (2^30 bytes, what SGLang prints as "GB") in fields
//! named `_gib`, tokens elsewhere. `hicache_size` is decimal GB (10^9) as SGLang reads it.
#![deny(missing_docs)]

mod cell;
mod error;
mod feasibility;
mod hicache;
mod load;
mod model;
mod pool;
mod whatif;

pub use cell::{CellSize, KvDtype, ParallelConfig, cell_size_bytes};
pub use error::CapacityError;
pub use feasibility::{
    ACTIVATION_TENSORS_PER_TOKEN, DEFAULT_MARGIN_GIB, FITS_FLOOR_GIB, Feasibility,
    FeasibilityCheck, FreeSource, Headroom, OOM_BELOW_GIB, RUN_NEED_GIB_PER_1K_CHUNK_TOKENS,
    activation_estimate_bytes, check_feasibility, startup_need_bytes,
};
pub use hicache::{
    HOST_RESERVE_BYTES, HiCacheInput, HiCacheSizing, HiCacheVerdict, MIN_USEFUL_CACHED_SHARE,
    MemInfo, PrefixReuse, hicache_verdict,
};
pub use load::{InFlightLoad, LoadMethod};
pub use model::{AttentionKind, HybridKind, MlaDims, ModelConfig};
pub use pool::{PoolBasis, PoolModel, PreSource};
pub use whatif::{CapacityInput, Change, WhatIfRow, WhatIfTable, what_if};

/// One GiB (2^30 bytes) as `f64`: SGLang's "GB" in memory log lines.
pub const GIB: f64 = 1_073_741_824.0;
