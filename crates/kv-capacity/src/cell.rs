//! Bytes per KV token slot on one rank (`cell_size`).

use serde::Serialize;

use crate::{AttentionKind, CapacityError, HybridKind, ModelConfig};

/// `--kv-cache-dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    /// `auto`: the model's dtype (`torch_dtype`).
    Auto,
    /// bfloat16, 2 bytes.
    Bf16,
    /// float16, 2 bytes.
    Fp16,
    /// `fp8_e4m3`, 1 byte.
    Fp8E4m3,
    /// `fp8_e5m2`, 1 byte.
    Fp8E5m2,
    /// `fp4_e2m1` (and other fp4 variants): half a byte plus scale buffers; not modelled.
    Fp4,
    /// `mxfp8`: 1 byte plus 1/32 for scales; not modelled.
    Mxfp8,
}

impl KvDtype {
    /// Parse SGLang's `kv_cache_dtype` server argument (`auto`, `bf16`/`bfloat16`,
    /// `fp16`/`float16`, `fp8_e4m3`, `fp8_e5m2`, `fp4_e2m1`/`fp4`, `mxfp8`).
    ///
    /// # Errors
    /// [`CapacityError::Invalid`] for any other string.
    pub fn from_sglang(s: &str) -> Result<KvDtype, CapacityError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => KvDtype::Auto,
            "bf16" | "bfloat16" => KvDtype::Bf16,
            "fp16" | "float16" | "half" => KvDtype::Fp16,
            "fp8_e4m3" | "fp8" => KvDtype::Fp8E4m3,
            "fp8_e5m2" => KvDtype::Fp8E5m2,
            s if s.starts_with("fp4") || s.starts_with("nvfp4") => KvDtype::Fp4,
            "mxfp8" => KvDtype::Mxfp8,
            other => {
                return Err(CapacityError::Invalid(format!(
                    "unknown kv_cache_dtype {other:?}"
                )));
            }
        })
    }

    /// The value `--kv-cache-dtype` takes for this dtype (SGLang `server_args.py`).
    pub fn sglang_name(self) -> &'static str {
        match self {
            KvDtype::Auto => "auto",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8E4m3 => "fp8_e4m3",
            KvDtype::Fp8E5m2 => "fp8_e5m2",
            KvDtype::Fp4 => "fp4_e2m1",
            KvDtype::Mxfp8 => "mxfp8",
        }
    }

    /// Bytes per element for `model`. `Auto` follows the model dtype (bf16/fp16 → 2).
    ///
    /// # Errors
    /// [`CapacityError::Unsupported`] for fp4 / mxfp8 (scale buffers not modelled) and for
    /// `Auto` when the model dtype is not bf16/fp16 (absent or fp32).
    pub fn bytes(self, model: &ModelConfig) -> Result<u32, CapacityError> {
        match self {
            KvDtype::Bf16 | KvDtype::Fp16 => Ok(2),
            KvDtype::Fp8E4m3 | KvDtype::Fp8E5m2 => Ok(1),
            KvDtype::Fp4 => Err(CapacityError::Unsupported {
                what: "fp4 KV cache (half-byte values plus per-block scale buffers)".into(),
            }),
            KvDtype::Mxfp8 => Err(CapacityError::Unsupported {
                what: "mxfp8 KV cache (1 byte plus 1/32 scale buffers)".into(),
            }),
            KvDtype::Auto => model.model_dtype_bytes().ok_or_else(|| CapacityError::Unsupported {
                what: format!(
                    "kv_cache_dtype=auto with model dtype {:?}: give the serving KV dtype explicitly",
                    model.torch_dtype
                ),
            }),
        }
    }
}

/// How the model is split over GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ParallelConfig {
    /// `--tp-size`.
    pub tp_size: u32,
    /// Attention tensor-parallel size when it differs from `tp_size`: with DP attention
    /// (`--enable-dp-attention`) it is `tp_size / dp_size`. `None` = `tp_size`.
    pub attn_tp_size: Option<u32>,
    /// `--pp-size` (pipeline stages).
    pub pp_size: u32,
}

impl ParallelConfig {
    /// Plain tensor parallelism: `attn_tp_size = tp_size`, one pipeline stage.
    pub fn tp(tp_size: u32) -> ParallelConfig {
        ParallelConfig {
            tp_size,
            attn_tp_size: None,
            pp_size: 1,
        }
    }

    /// The attention-TP size KV heads are divided by.
    pub fn attn_tp(&self) -> u32 {
        self.attn_tp_size.unwrap_or(self.tp_size)
    }
}

/// Bytes of one KV token slot on one rank, with the factors that produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CellSize {
    /// Bytes per token slot on one rank (SGLang's `cell_size`).
    pub bytes: u64,
    /// MHA/GQA or MLA formula.
    pub kind: AttentionKind,
    /// KV heads held by one rank (MHA only): `max(1, kv_heads / attn_tp)`.
    pub kv_heads_per_rank: Option<u32>,
    /// True when there are fewer KV heads than attention-TP ranks, so heads are replicated.
    pub kv_heads_replicated: bool,
    /// Values per token, layer and KV head (MHA: `head_dim + v_head_dim`) or per token and layer
    /// (MLA: `kv_lora_rank + qk_rope_head_dim`).
    pub values_per_layer: u32,
    /// Layers held by this rank: `ceil(num_hidden_layers / pp_size)` (the largest stage).
    pub layers: u32,
    /// Bytes per value (2 for bf16/fp16, 1 for fp8).
    pub dtype_bytes: u32,
}

/// Bytes per KV token slot on one rank, as SGLang computes `cell_size` in
/// `profile_max_num_token` (`python/sglang/srt/model_executor/model_runner.py` up to v0.5.6,
/// `model_runner_kv_cache_mixin.py` v0.5.7–v0.5.15, `model_executor/pool_configurator.py` from
/// v0.5.16):
///
/// - MHA/GQA: `max(1, kv_heads / attn_tp) × (head_dim + v_head_dim) × layers × dtype_bytes`
///   (integer division; heads are replicated when there are fewer than attention-TP ranks).
/// - MLA: `(kv_lora_rank + qk_rope_head_dim) × layers × dtype_bytes`, **not** divided by TP:
///   every rank holds the full latent.
///
/// `layers` is this pipeline stage's share, `ceil(num_hidden_layers / pp_size)`.
///
/// # Errors
/// [`CapacityError::Invalid`] for a zero TP/PP size; [`CapacityError::Unsupported`] for hybrid
/// SWA or mamba models (two pools), DSA indexer models, MLA configs without
/// `qk_rope_head_dim`, fp4/mxfp8 KV, and `auto` with a non-16-bit model dtype.
pub fn cell_size_bytes(
    model: &ModelConfig,
    parallel: &ParallelConfig,
    kv_dtype: KvDtype,
) -> Result<CellSize, CapacityError> {
    if parallel.tp_size == 0 || parallel.pp_size == 0 || parallel.attn_tp() == 0 {
        return Err(CapacityError::Invalid(format!(
            "parallel sizes must be ≥ 1: {parallel:?}"
        )));
    }
    match &model.hybrid {
        Some(HybridKind::SlidingWindow { marker }) => {
            return Err(CapacityError::Unsupported {
                what: format!(
                    "hybrid sliding-window model ({marker}): SGLang sizes a full pool and an SWA pool (swa_full_tokens_ratio)"
                ),
            });
        }
        Some(HybridKind::Mamba { marker }) => {
            return Err(CapacityError::Unsupported {
                what: format!(
                    "hybrid mamba/linear-attention model ({marker}): the mamba state pool is not modelled"
                ),
            });
        }
        None => {}
    }
    if model.has_dsa_indexer {
        return Err(CapacityError::Unsupported {
            what: "DeepSeek sparse attention (DSA) indexer cache per layer".into(),
        });
    }
    let dtype_bytes = kv_dtype.bytes(model)?;
    let layers = model.num_hidden_layers.div_ceil(parallel.pp_size);
    let (values_per_layer, heads, replicated) = match model.attention_kind() {
        AttentionKind::Mla => {
            let rope = model
                .qk_rope_head_dim
                .ok_or_else(|| CapacityError::Unsupported {
                    what: "MLA config without qk_rope_head_dim".into(),
                })?;
            // ok: attention_kind() is Mla only when kv_lora_rank is Some
            let rank = model.kv_lora_rank.unwrap_or(0);
            (rank + rope, None, false)
        }
        AttentionKind::Mha => {
            let attn_tp = parallel.attn_tp();
            let per_rank = (model.num_key_value_heads / attn_tp).max(1);
            (
                model.head_dim + model.v_head_dim,
                Some(per_rank),
                model.num_key_value_heads < attn_tp,
            )
        }
    };
    let bytes = u64::from(heads.unwrap_or(1))
        * u64::from(values_per_layer)
        * u64::from(layers)
        * u64::from(dtype_bytes);
    Ok(CellSize {
        bytes,
        kind: model.attention_kind(),
        kv_heads_per_rank: heads,
        kv_heads_replicated: replicated,
        values_per_layer,
        layers,
        dtype_bytes,
    })
}
