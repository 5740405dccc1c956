//! Capacity: the KV pool facts of the startup lines, retractions, the capacity model with
//! its what-if table, and the step-time projection.

use schemars::JsonSchema;
use serde::Serialize;

/// KV pool facts read from the log's startup lines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct CapacitySummary {
    /// `max_total_num_tokens` (tokens per DP rank); for hybrid sliding-window models the
    /// full-attention layers' pool.
    pub max_total_num_tokens: Option<u64>,
    /// Hybrid SSM models: the mamba state slots (`max_mamba_cache_size`), one per running
    /// request (slots per rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba_cache_slots: Option<u64>,
    /// Hybrid sliding-window models: the sliding-window layers' pool (`swa_layer_tokens`,
    /// tokens per DP rank). Each pool is used against its own size (`full token usage`,
    /// `swa token usage`); the sizes do not add up to one pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swa_pool_tokens: Option<u64>,
    /// Chunked prefill is off (`chunked_prefill_size` -1 or 0 in the capacity line or
    /// `server_args`): a whole prompt prefills in one pass, and `--enable-mixed-chunk` has no
    /// chunks to mix.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chunked_prefill_off: bool,
    /// `max_running_requests` (per DP rank).
    pub max_running_requests: Option<u64>,
    /// `max_running_requests` is not printed but inferred: SGLang's default with speculative
    /// decoding ([`crate::thresholds::SPEC_DEFAULT_MAX_RUNNING`]), which every decode line
    /// (all printing `accept len`) reaches and none exceeds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub max_running_inferred: bool,
    /// `chunked_prefill_size` (tokens).
    pub chunked_prefill_size: Option<u64>,
    /// `max_prefill_tokens` (tokens).
    pub max_prefill_tokens: Option<u64>,
    /// `context_len` (tokens).
    pub context_len: Option<u64>,
    /// `mem_fraction_static` from `server_args`.
    pub mem_fraction_static: Option<f64>,
    /// Free GPU memory after CUDA-graph capture (GiB per GPU; SGLang prints it as "GB").
    pub available_gpu_mem_gb: Option<f64>,
    /// KV cache size (GiB per GPU).
    pub kv_cache_gb: Option<f64>,
    /// Weights (GiB per GPU).
    pub weights_gb: Option<f64>,
    /// `prefill_max_requests` as the start-up's `server_args` print it: the most requests one
    /// prefill pass admits (SGLang `schedule_policy.py` `PrefillAdder` stops adding at it;
    /// spec §6.2). `Some(Some(n))` a cap of `n` requests, `Some(None)` printed `None` (no cap,
    /// the default), `None` when the log prints no `prefill_max_requests`. Read by the
    /// `prefill_limit` rule's words; not in the JSON.
    #[serde(skip)]
    #[schemars(skip)]
    pub prefill_max_requests: Option<Option<u64>>,
}

/// Retractions, deduplicated across TP ranks.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct RetractionSummary {
    /// Distinct retraction events.
    pub events: u64,
    /// Retraction lines before deduplication (every TP rank prints one).
    pub lines: u64,
    /// Σ `#retracted_reqs` (requests).
    pub retracted_requests: u64,
    /// Σ `#new_tokens_gained` (tokens), when the version prints it.
    pub tokens_freed: Option<u64>,
    /// Events per hour over the logged span.
    pub per_hour: Option<f64>,
    /// Highest `#new_token_ratio` after a retraction.
    pub max_ratio_after: Option<f64>,
}

/// KV capacity: the pool model and its what-if table (from `kv-capacity`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CapacityModel {
    /// TP size the model was computed for.
    pub tp_size: u32,
    /// Bytes per token slot per GPU.
    pub cell_bytes: u64,
    /// `pre` (free GPU memory before weights load), GiB per GPU.
    pub pre_gib: f64,
    /// Where `pre` came from, in words.
    pub pre_source: String,
    /// Free GPU memory at run time, GiB per GPU.
    pub free_now_gib: Option<f64>,
    /// Source of the free-memory figure, in words.
    pub free_now_source: Option<String>,
    /// Tokens added per +0.01 of `mem_fraction_static`.
    pub tokens_per_hundredth: f64,
    /// The what-if table.
    pub what_if: kv_capacity::WhatIfTable,
    /// The HiCache verdict, when it could be computed.
    pub hicache: Option<kv_capacity::HiCacheVerdict>,
}

/// Decode step time as a function of batch size and KV tokens, and projected throughput.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Projection {
    /// Model: `step_s = a + b × running + c × kv_tokens` (least squares over decode lines).
    pub formula: String,
    /// `a` (seconds per step).
    pub a: f64,
    /// `b` (seconds per step per running request).
    pub b: f64,
    /// `c` (seconds per step per KV token).
    pub c: f64,
    /// Coefficient of determination of the fit.
    pub r2: f64,
    /// Decode lines used.
    pub n: usize,
    /// Lowest and highest running requests observed.
    pub running_range: (f64, f64),
    /// Throughput at the observed mean running requests, by the fit (tok/s).
    pub current_tok_per_s: f64,
    /// Mean running requests over the decode lines used.
    pub observed_mean_running: f64,
    /// KV tokens per running request over the decode lines used (mean `#token` over mean
    /// `#running-req`): what the fit's `c` term is taken at.
    #[serde(default)]
    pub kv_tokens_per_request: f64,
    /// The rate the fit approaches as more requests decode at once with unlimited KV,
    /// `1 / (b + c × KV tokens per request)` (tok/s), or, when `max_running_requests` is
    /// known and the fit reaches less there, its rate at that many requests
    /// ([`Self::ceiling_at_running`]); `None` when the fit has no such limit.
    pub ceiling_tok_per_s: Option<f64>,
    /// The running requests the ceiling is taken at: `max_running_requests`, when the fit's
    /// rate there is below its limit (requests per DP rank); `None`: the limit itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_at_running: Option<f64>,
    /// The running cap the ceiling stops at is SGLang's default with speculative decoding
    /// (48), assumed because no cap is stated and the decode lines print `accept len`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running_cap_assumed: bool,
    /// Why no ceiling is given, when none is (the first test of the fit that failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ceiling: Option<NoCeiling>,
    /// Projected rows, one per what-if row with a decode concurrency. Their `tok_per_s` and
    /// `gain_pct` are the fit's (the "now" row is today's pool filled, so it may differ from
    /// the measured rate); the text report's "tok/s (measured scale)" is `tok_per_s ×
    /// measured_scale`.
    pub rows: Vec<ProjectionRow>,
    /// The measured steady rate over the "now" row's rate: what puts the rows on the measured
    /// rate's scale (one "now" everywhere); `None` without a measured rate or a "now" row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_scale: Option<f64>,
}

/// Why a step-time fit gives no ceiling (see `projection.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NoCeiling {
    /// The per-request step time is not positive: the fit has no limit.
    NoLimit,
    /// The fixed step time `a` is not positive: no step time.
    NegativeFixedStep,
    /// The fit explains too little of the lines' variance.
    PoorFit {
        /// Its R².
        r2: f64,
    },
    /// The lines' batch sizes are too close together to fit a slope.
    NarrowBatchSizes {
        /// Lowest running requests (requests).
        low: f64,
        /// Highest running requests (requests).
        high: f64,
    },
    /// The asymptote is not above the rate the fit gives now.
    NotAboveCurrent,
    /// No fit at all: the steady decode lines are too few, or run one batch size only.
    NoFit,
}

/// Throughput projected for one what-if row.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ProjectionRow {
    /// The what-if row's label.
    pub label: String,
    /// The change the row makes.
    pub change: kv_capacity::Change,
    /// Requests that could decode at once.
    pub concurrency: f64,
    /// Projected gen throughput (tok/s).
    pub tok_per_s: f64,
    /// Change versus the fit's throughput now (percent).
    pub gain_pct: f64,
    /// True when the concurrency is outside the observed range (extrapolation).
    pub extrapolated: bool,
    /// Feasibility of the row, when known.
    pub feasibility: Option<kv_capacity::Feasibility>,
}

impl Projection {
    /// The fit's rate with `running` requests decoding at once, each holding
    /// [`Self::kv_tokens_per_request`] (tok/s): `running / (a + b × running + c × running ×
    /// tokens)`; `None` where the step time is not positive.
    pub fn tok_per_s_at(&self, running: f64) -> Option<f64> {
        let step = self.a + self.b * running + self.c * running * self.kv_tokens_per_request;
        (step > 0.0 && running > 0.0).then(|| running / step)
    }
}

/// DP attention on an MLA model served with TP and no DP attention, sized from the model
/// config and the log's KV pool: with `--dp-size d` the attention runs on groups of `tp / d`
/// GPUs, each GPU holding `d / tp` of the attention weights TP splits instead of `1 / tp`, and
/// the token embedding whole instead of `1 / tp`; each group's pool holds only its own
/// requests' latent KV (SGLang `models/deepseek_v2.py`, `dp_attention.py`; the weights from
/// `kv_capacity::ModelConfig::mla_split_attention_weight_bytes` and `embedding_weight_bytes`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct DpAttentionSizing {
    /// The TP size (GPUs of one replica).
    pub tp: u32,
    /// The attention weights TP splits, all layers, one copy (GiB).
    pub split_attention_gib: f64,
    /// The token embedding, one copy (GiB); `None` when the config gives no `vocab_size`: then
    /// each option's extra is a lower bound and its gain an upper bound.
    pub embedding_gib: Option<f64>,
    /// One GPU's KV pool today (GiB, the log's `KV Cache is allocated … KV size`).
    pub pool_gib: f64,
    /// Each DP size that divides the TP size, smallest first.
    pub options: Vec<DpOption>,
}

/// One DP size of a [`DpAttentionSizing`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct DpOption {
    /// `--dp-size`.
    pub dp: u32,
    /// Weights each GPU holds more than today: split attention × (dp − 1) / tp, plus the
    /// embedding × (tp − 1) / tp when sized (GiB).
    pub extra_gib: f64,
    /// One GPU's pool at the same `--mem-fraction-static`: today's less the extra weights
    /// (GiB; at or below 0 the server does not start so).
    pub pool_after_gib: f64,
    /// Requests decoding at once against today's: dp × pool after / pool today (ratio).
    pub requests_factor: f64,
}

impl DpAttentionSizing {
    /// The sizing for `tp` GPUs with `split_attention_gib` of TP-split attention weights, an
    /// embedding of `embedding_gib` when known, and a pool of `pool_gib` per GPU; `None` at
    /// TP 1 or without a positive pool.
    pub fn new(
        tp: u32,
        split_attention_gib: f64,
        embedding_gib: Option<f64>,
        pool_gib: f64,
    ) -> Option<Self> {
        (tp > 1 && pool_gib > 0.0 && split_attention_gib.is_finite()).then(|| {
            let t = f64::from(tp);
            let embedding_extra = embedding_gib.map_or(0.0, |e| e * (t - 1.0) / t);
            let options = (2..=tp)
                .filter(|d| tp.is_multiple_of(*d))
                .map(|dp| {
                    let extra_gib = split_attention_gib * f64::from(dp - 1) / t + embedding_extra;
                    let pool_after_gib = pool_gib - extra_gib;
                    DpOption {
                        dp,
                        extra_gib,
                        pool_after_gib,
                        requests_factor: (f64::from(dp) * pool_after_gib / pool_gib).max(0.0),
                    }
                })
                .collect();
            DpAttentionSizing {
                tp,
                split_attention_gib,
                embedding_gib,
                pool_gib,
                options,
            }
        })
    }

    /// The DP size that holds the most requests at once, if one holds more than today.
    pub fn best(&self) -> Option<&DpOption> {
        self.options
            .iter()
            .filter(|o| o.pool_after_gib > 0.0 && o.requests_factor > 1.0)
            .max_by(|a, b| a.requests_factor.total_cmp(&b.requests_factor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The founding case's figures (9.77 GiB of split attention weights, a 7.60 GiB pool per
    /// GPU at TP8) with Kimi-K2's embedding (163,840 × 7168 at two bytes, 2.19 GiB) held whole:
    /// --dp-size 4 leaves 2.02 GiB (~1.06x the requests), 2 leaves 4.46 GiB (~1.17x, the
    /// best), 8 does not fit (strict expert's arithmetic).
    #[test]
    fn the_embedding_held_whole_takes_the_gain() {
        let s = DpAttentionSizing::new(8, 9.77, Some(2.1875), 7.60).expect("sized");
        let by_dp = |d: u32| *s.options.iter().find(|o| o.dp == d).expect("option");
        assert!((by_dp(2).pool_after_gib - 4.47).abs() < 0.01, "{s:?}");
        assert!((by_dp(4).pool_after_gib - 2.02).abs() < 0.01, "{s:?}");
        assert!(by_dp(8).pool_after_gib < 0.0, "{s:?}");
        let best = s.best().expect("best");
        assert_eq!(best.dp, 2);
        assert!((best.requests_factor - 1.18).abs() < 0.01, "{best:?}");
        // boundary: TP 1 has nothing to size
        assert_eq!(DpAttentionSizing::new(1, 9.77, None, 7.60), None);
    }
}
