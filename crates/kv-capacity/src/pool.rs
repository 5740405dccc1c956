//! SGLang's KV pool size as a function of `mem_fraction_static`.

use serde::Serialize;

use crate::{CapacityError, GIB};

/// Where the `pre` figure (free GPU memory before weights load, per rank) came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PreSource {
    /// The GPU's total memory (NVML / nvidia-smi). An **estimate**: SGLang measures free memory
    /// after the CUDA context exists, typically 0.3–1 GiB less than the total, so the projected
    /// step per +0.01 is slightly too large.
    GpuTotal,
    /// `avail mem + mem usage` of the `Load weight end` log line (each rounded to 0.01 GiB).
    LogLoadWeightLine,
    /// Given by the caller (e.g. measured).
    Given,
}

/// What the pool model was built from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PoolBasis {
    /// Memory figures: `avail` = free memory after weights load, bytes (min over ranks). The
    /// pool follows SGLang's formula directly.
    MemoryFigures {
        /// Free memory after weights, bytes.
        avail_bytes: f64,
    },
    /// One observed pair (`mem_fraction_static`, `max_total_num_tokens`), e.g. from
    /// `/server_info`. Needs no weight-size guess: only the slope `pre / cell` is assumed.
    Calibrated {
        /// The observed `mem_fraction_static`.
        fraction: f64,
        /// The observed `max_total_num_tokens` (per DP rank).
        tokens: u64,
    },
}

/// KV pool model of one rank (SGLang `profile_max_num_token`, spec §5.1):
///
/// `rest = avail − pre × (1 − mem_fraction_static)` and
/// `max_total_num_tokens = floor(rest / cell)` (bytes; SGLang works in GiB = 2^30 bytes and
/// multiplies back). Source: `python/sglang/srt/model_executor/model_runner.py`
/// (`profile_max_num_token`, v0.2.x–v0.5.6), `model_runner_kv_cache_mixin.py` (v0.5.7–v0.5.15),
/// `mem_cache/kv_cache_configurator.py::_profile_available_bytes` (v0.5.16+).
///
/// Consequence: `d tokens / d fraction = pre / cell`. Raising the fraction by 0.01 adds 1 % of
/// `pre` (about the whole card), not 1 % of the pool.
///
/// Not modelled (so projections are upper bounds where they apply): `--max-total-tokens` caps,
/// page-size rounding, EAGLE draft pools, the multimodal reservation of recent versions.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PoolModel {
    /// `pre`: free GPU memory before weights load, bytes, minimum over ranks.
    pub pre_bytes: f64,
    /// Where `pre` came from (and whether it is an estimate).
    pub pre_source: PreSource,
    /// Bytes per token slot on this rank (see [`crate::cell_size_bytes`]).
    pub cell_bytes: u64,
    /// Memory figures or calibration point.
    pub basis: PoolBasis,
}

/// `to − from` computed on fractions quantised to 10^-6, so that e.g. 0.85 − 0.80 is 0.05 and
/// not 0.04999999999999993 (which would floor one token short on exact boundaries). SGLang's
/// fractions have at most 3 decimals.
fn fraction_delta(to: f64, from: f64) -> f64 {
    ((to * 1e6).round() - (from * 1e6).round()) / 1e6
}

fn check_common(pre_bytes: f64, cell_bytes: u64) -> Result<(), CapacityError> {
    if !(pre_bytes.is_finite() && pre_bytes > 0.0) {
        return Err(CapacityError::Invalid(format!(
            "pre must be > 0 bytes, got {pre_bytes}"
        )));
    }
    if cell_bytes == 0 {
        return Err(CapacityError::Invalid("cell size must be > 0 bytes".into()));
    }
    Ok(())
}

fn check_fraction(f: f64) -> Result<(), CapacityError> {
    if f.is_finite() && f > 0.0 && f <= 1.0 {
        Ok(())
    } else {
        Err(CapacityError::Invalid(format!(
            "mem_fraction_static must be in (0, 1], got {f}"
        )))
    }
}

impl PoolModel {
    /// Pool model from memory figures: `pre_bytes` (free before weights), `avail_bytes` (free
    /// after weights, e.g. the log's `Load weight end … avail mem`), both per rank.
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] for non-positive `pre`, negative `avail`, `avail > pre`, or a
    /// zero cell.
    pub fn from_memory(
        pre_bytes: f64,
        pre_source: PreSource,
        avail_bytes: f64,
        cell_bytes: u64,
    ) -> Result<PoolModel, CapacityError> {
        check_common(pre_bytes, cell_bytes)?;
        if !(avail_bytes.is_finite() && avail_bytes >= 0.0 && avail_bytes <= pre_bytes) {
            return Err(CapacityError::Invalid(format!(
                "avail ({avail_bytes} B) must be between 0 and pre ({pre_bytes} B)"
            )));
        }
        Ok(PoolModel {
            pre_bytes,
            pre_source,
            cell_bytes,
            basis: PoolBasis::MemoryFigures { avail_bytes },
        })
    }

    /// Pool model calibrated on an observed (`fraction`, `max_total_num_tokens`) pair:
    /// `tokens(f) = observed + floor((f − f_obs) × pre / cell)`. Exact at the observed point;
    /// elsewhere only `pre` can be off (see [`PreSource`]).
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] for a fraction outside (0, 1], non-positive `pre`, or a zero
    /// cell.
    pub fn calibrated(
        fraction: f64,
        tokens: u64,
        pre_bytes: f64,
        pre_source: PreSource,
        cell_bytes: u64,
    ) -> Result<PoolModel, CapacityError> {
        check_common(pre_bytes, cell_bytes)?;
        check_fraction(fraction)?;
        Ok(PoolModel {
            pre_bytes,
            pre_source,
            cell_bytes,
            basis: PoolBasis::Calibrated { fraction, tokens },
        })
    }

    /// `max_total_num_tokens` at `fraction` (per rank / DP group). 0 means SGLang would refuse
    /// to start ("Not enough memory").
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] for a fraction outside (0, 1].
    pub fn tokens_at(&self, fraction: f64) -> Result<u64, CapacityError> {
        self.tokens_with_cell(fraction, self.cell_bytes)
    }

    /// Pool tokens at `fraction` if each token took `cell_bytes` instead (same byte budget):
    /// used for a KV dtype change. For a calibrated model the budget is
    /// `observed × cell + (f − f_obs) × pre`.
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] for a fraction outside (0, 1] or a zero cell.
    pub fn tokens_with_cell(&self, fraction: f64, cell_bytes: u64) -> Result<u64, CapacityError> {
        check_fraction(fraction)?;
        if cell_bytes == 0 {
            return Err(CapacityError::Invalid("cell size must be > 0 bytes".into()));
        }
        let t = match &self.basis {
            PoolBasis::Calibrated {
                fraction: f0,
                tokens,
            } if cell_bytes == self.cell_bytes => {
                let step = (fraction_delta(fraction, *f0) * self.pre_bytes
                    / self.cell_bytes as f64)
                    .floor();
                *tokens as f64 + step
            }
            _ => (self.kv_bytes_at(fraction)? / cell_bytes as f64).floor(),
        };
        Ok(if t > 0.0 { t as u64 } else { 0 })
    }

    /// KV pool bytes (`rest`) at `fraction`: `avail − pre × (1 − f)`, or for a calibrated model
    /// `observed × cell + (f − f_obs) × pre`. May be negative (SGLang would not start).
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] for a fraction outside (0, 1].
    pub fn kv_bytes_at(&self, fraction: f64) -> Result<f64, CapacityError> {
        check_fraction(fraction)?;
        Ok(match &self.basis {
            PoolBasis::MemoryFigures { avail_bytes } => {
                avail_bytes - self.pre_bytes * fraction_delta(1.0, fraction)
            }
            PoolBasis::Calibrated {
                fraction: f0,
                tokens,
            } => {
                *tokens as f64 * self.cell_bytes as f64
                    + fraction_delta(fraction, *f0) * self.pre_bytes
            }
        })
    }

    /// GPU memory taken between the `pre` and `avail` measurements, bytes (mostly weights):
    /// `pre − avail`. For a calibrated model it is inferred as `f_obs × pre − observed × cell`
    /// (an **estimate**, within one cell of SGLang's own figure when `pre` is right).
    pub fn used_since_pre_bytes(&self) -> f64 {
        match &self.basis {
            PoolBasis::MemoryFigures { avail_bytes } => self.pre_bytes - avail_bytes,
            PoolBasis::Calibrated { fraction, tokens } => {
                fraction * self.pre_bytes - *tokens as f64 * self.cell_bytes as f64
            }
        }
    }

    /// Extra GPU memory per rank that moving from `from` to `to` takes, bytes:
    /// `(to − from) × pre` (negative when lowering).
    pub fn extra_bytes(&self, from: f64, to: f64) -> f64 {
        fraction_delta(to, from) * self.pre_bytes
    }

    /// Tokens added per +0.01 of `mem_fraction_static`: `0.01 × pre / cell`.
    pub fn tokens_per_hundredth(&self) -> f64 {
        0.01 * self.pre_bytes / self.cell_bytes as f64
    }

    /// `pre` in GiB.
    pub fn pre_gib(&self) -> f64 {
        self.pre_bytes / GIB
    }
}
