//! Model geometry from a Hugging Face `config.json`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::CapacityError;

/// Attention layout that decides the KV cell formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// Multi-head / grouped-query attention: separate K and V per KV head.
    Mha,
    /// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one compressed latent per token
    /// and layer, `kv_lora_rank + qk_rope_head_dim` values, shared by all heads.
    Mla,
}

/// Layouts with more than one KV pool, which [`crate::cell_size_bytes`] refuses to size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HybridKind {
    /// Sliding-window + full-attention layers (Gemma-2/3, Llama-4 chunked attention, gpt-oss,
    /// MiMo): SGLang keeps a full pool and an SWA pool (`swa_full_tokens_ratio`).
    SlidingWindow {
        /// Which config marker gave it away.
        marker: String,
    },
    /// State-space / linear-attention layers (Qwen3-Next, Nemotron-H, Jamba, Kimi-Linear): a
    /// mamba state pool counted in request slots besides the KV pool.
    Mamba {
        /// Which config marker gave it away.
        marker: String,
    },
}

/// The language-model geometry SGLang's KV pool depends on.
///
/// Source of the field meanings: SGLang `python/sglang/srt/configs/model_config.py`
/// (`ModelConfig`: `head_dim`, `num_key_value_heads`, MLA fields), which reads the same
/// `config.json` keys.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ModelConfig {
    /// `model_type` of the language-model part (e.g. `llama`, `deepseek_v3`).
    pub model_type: Option<String>,
    /// `architectures` from the top level (e.g. `KimiK25ForConditionalGeneration`), else from
    /// the nested text config.
    pub architectures: Vec<String>,
    /// True when the LM fields came from a nested `text_config` / `llm_config` /
    /// `language_config` (VLM wrappers such as Kimi-K2.5, Llama-4, Gemma-3).
    pub from_nested_text_config: bool,
    /// `num_hidden_layers`.
    pub num_hidden_layers: u32,
    /// `num_attention_heads` (query heads).
    pub num_attention_heads: u32,
    /// `num_key_value_heads`; equals `num_attention_heads` when absent (plain MHA).
    pub num_key_value_heads: u32,
    /// `hidden_size`, if given.
    pub hidden_size: Option<u32>,
    /// Per-head K dimension: `head_dim` if given, else `hidden_size / num_attention_heads`.
    pub head_dim: u32,
    /// Per-head V dimension: `v_head_dim` if given, else `head_dim`. For MLA models the
    /// config's `v_head_dim` is an attention-output size and does not enter the KV cell.
    pub v_head_dim: u32,
    /// `kv_lora_rank` (MLA latent size), if given.
    pub kv_lora_rank: Option<u32>,
    /// `qk_rope_head_dim` (MLA rotary part stored next to the latent), if given.
    pub qk_rope_head_dim: Option<u32>,
    /// An MLA model's projection sizes beyond the KV cell (`q_lora_rank`, `qk_nope_head_dim`,
    /// the config's own `v_head_dim`), when all are given: what
    /// [`Self::mla_split_attention_weight_bytes`] needs.
    pub mla_dims: Option<MlaDims>,
    /// `quantization_config.quant_method` (e.g. `fp8`, `compressed-tensors`), if given.
    pub quant_method: Option<String>,
    /// `vocab_size`, if given.
    pub vocab_size: Option<u32>,
    /// `torch_dtype` (or the newer `dtype` key), e.g. `bfloat16`.
    pub torch_dtype: Option<String>,
    /// `sliding_window`, if given and not null.
    pub sliding_window: Option<u32>,
    /// `layer_types` (e.g. `full_attention`, `sliding_attention`, `linear_attention`).
    pub layer_types: Vec<String>,
    /// Detected hybrid layout (two pools), if any.
    pub hybrid: Option<HybridKind>,
    /// `index_topk` / `index_head_dim` present: DeepSeek sparse attention (DSA) adds an
    /// indexer cache per layer that is not modelled.
    pub has_dsa_indexer: bool,
}

/// An MLA model's projection sizes beyond its KV cell ([`ModelConfig::mla_dims`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MlaDims {
    /// `q_lora_rank`: the query's low-rank size; `None` when the query is projected whole.
    pub q_lora_rank: Option<u32>,
    /// `qk_nope_head_dim`: the per-head query/key part without rotary embedding.
    pub qk_nope_head_dim: u32,
    /// `v_head_dim`: the per-head value size (the attention output).
    pub v_head_dim: u32,
}

const NESTED_KEYS: [&str; 3] = ["text_config", "llm_config", "language_config"];

/// Architectures that SGLang runs with two pools even when `layer_types` is absent
/// (`is_hybrid_swa` model list in `model_config.py`).
const HYBRID_SWA_ARCHS: [&str; 8] = [
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Gemma3nForConditionalGeneration",
    "Llama4ForConditionalGeneration",
    "Llama4ForCausalLM",
    "GptOssForCausalLM",
    "MiMoV2FlashForCausalLM",
];

fn get_u32(
    obj: &Map<String, Value>,
    key: &str,
    prefix: &str,
) -> Result<Option<u32>, CapacityError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| CapacityError::BadField {
                field: format!("{prefix}{key}"),
                problem: format!("is not a non-negative integer: {v}"),
            }),
    }
}

fn get_str(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_string)
}

impl ModelConfig {
    /// Parse a Hugging Face `config.json` text.
    ///
    /// When the top level has no `num_hidden_layers` but a nested `text_config` (or
    /// `llm_config`, `language_config`) does, the LM fields are read from there; `architectures`
    /// still comes from the top level. Hybrid markers: a `layer_types` list mixing
    /// `sliding_attention` with full attention, `sliding_window_pattern`, a non-null
    /// `attention_chunk_size`, or a known hybrid-SWA architecture → [`HybridKind::SlidingWindow`];
    /// `linear_attention` / `mamba` in `layer_types`, `hybrid_override_pattern`,
    /// `layers_block_type`, `full_attention_interval`, `linear_attn_config`, or any `mamba_*` /
    /// `ssm_state_size` key → [`HybridKind::Mamba`].
    ///
    /// # Errors
    /// [`CapacityError::Json`] for text that is not a JSON object;
    /// [`CapacityError::BadField`] when `num_hidden_layers` or `num_attention_heads` is missing,
    /// a count is not an integer, or `head_dim` cannot be derived.
    pub fn from_hf_json(text: &str) -> Result<ModelConfig, CapacityError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| CapacityError::Json(e.to_string()))?;
        let top = root
            .as_object()
            .ok_or_else(|| CapacityError::Json("top level is not an object".into()))?;
        let (lm, prefix) = if top.contains_key("num_hidden_layers") {
            (top, String::new())
        } else {
            NESTED_KEYS
                .iter()
                .find_map(|k| {
                    top.get(*k)
                        .and_then(Value::as_object)
                        .filter(|o| o.contains_key("num_hidden_layers"))
                        .map(|o| (o, format!("{k}.")))
                })
                .unwrap_or((top, String::new()))
        };
        let nested = !prefix.is_empty();
        let need = |key: &str| -> Result<u32, CapacityError> {
            get_u32(lm, key, &prefix)?.ok_or_else(|| CapacityError::BadField {
                field: format!("{prefix}{key}"),
                problem: "is missing".into(),
            })
        };
        let num_hidden_layers = need("num_hidden_layers")?;
        let num_attention_heads = need("num_attention_heads")?;
        if num_hidden_layers == 0 || num_attention_heads == 0 {
            return Err(CapacityError::BadField {
                field: format!("{prefix}num_hidden_layers/num_attention_heads"),
                problem: "is zero".into(),
            });
        }
        let num_key_value_heads =
            get_u32(lm, "num_key_value_heads", &prefix)?.unwrap_or(num_attention_heads);
        let hidden_size = get_u32(lm, "hidden_size", &prefix)?;
        let head_dim = match get_u32(lm, "head_dim", &prefix)? {
            Some(h) if h > 0 => h,
            _ => match hidden_size {
                Some(h) if h % num_attention_heads == 0 => h / num_attention_heads,
                _ => {
                    return Err(CapacityError::BadField {
                        field: format!("{prefix}head_dim"),
                        problem:
                            "is missing and hidden_size / num_attention_heads is not an integer"
                                .into(),
                    });
                }
            },
        };
        let kv_lora_rank = get_u32(lm, "kv_lora_rank", &prefix)?.filter(|&r| r > 0);
        let qk_rope_head_dim = get_u32(lm, "qk_rope_head_dim", &prefix)?;
        let v_head_dim = if kv_lora_rank.is_some() {
            head_dim
        } else {
            get_u32(lm, "v_head_dim", &prefix)?.unwrap_or(head_dim)
        };
        let mla_dims = match (
            kv_lora_rank,
            get_u32(lm, "qk_nope_head_dim", &prefix)?,
            get_u32(lm, "v_head_dim", &prefix)?,
        ) {
            (Some(_), Some(qk_nope_head_dim), Some(v)) => Some(MlaDims {
                q_lora_rank: get_u32(lm, "q_lora_rank", &prefix)?.filter(|&r| r > 0),
                qk_nope_head_dim,
                v_head_dim: v,
            }),
            _ => None,
        };
        let quant_method = [lm, top].into_iter().find_map(|o| {
            o.get("quantization_config")
                .and_then(Value::as_object)
                .and_then(|q| q.get("quant_method"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        let vocab_size = get_u32(lm, "vocab_size", &prefix)?
            .or(get_u32(top, "vocab_size", "")?)
            .filter(|&v| v > 0);
        let torch_dtype = get_str(lm, "torch_dtype")
            .or_else(|| get_str(lm, "dtype"))
            .or_else(|| get_str(top, "torch_dtype"))
            .or_else(|| get_str(top, "dtype"));
        let model_type = get_str(lm, "model_type").or_else(|| get_str(top, "model_type"));
        let arch_of = |o: &Map<String, Value>| -> Vec<String> {
            o.get("architectures")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut architectures = arch_of(top);
        if architectures.is_empty() {
            architectures = arch_of(lm);
        }
        let sliding_window = get_u32(lm, "sliding_window", &prefix).ok().flatten();
        let layer_types: Vec<String> = lm
            .get("layer_types")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let hybrid = detect_hybrid(lm, &layer_types, &architectures);
        let has_dsa_indexer = lm.contains_key("index_topk") || lm.contains_key("index_head_dim");
        Ok(ModelConfig {
            model_type,
            architectures,
            from_nested_text_config: nested,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            hidden_size,
            head_dim,
            v_head_dim,
            kv_lora_rank,
            qk_rope_head_dim,
            mla_dims,
            quant_method,
            vocab_size,
            torch_dtype,
            sliding_window,
            layer_types,
            hybrid,
            has_dsa_indexer,
        })
    }

    /// Bytes a weight of this checkpoint takes: one for an `fp8` checkpoint, else the model's
    /// dtype ([`Self::model_dtype_bytes`]).
    fn weight_bytes(&self) -> Option<f64> {
        if self.quant_method.as_deref() == Some("fp8") {
            Some(1.0)
        } else {
            self.model_dtype_bytes().map(f64::from)
        }
    }

    /// The weights of an MLA model's attention that TP splits, over all layers (bytes): the
    /// query's up-projection (`q_b_proj`, or `q_proj` without `q_lora_rank`), `kv_b_proj` and
    /// `o_proj`, at one byte a weight for an `fp8` checkpoint, else at the model's dtype. The
    /// down-projections (`q_a_proj`, `kv_a_proj_with_mqa`, fused as
    /// `fused_qkv_a_proj_with_mqa`) are `ReplicatedLinear`: every GPU holds them whole already
    /// (SGLang `models/deepseek_v2.py`). Per layer: q_lora × heads × (nope + rope) (or hidden ×
    /// heads × (nope + rope)), kv_lora × heads × (nope + v), heads × v × hidden. `None` for a
    /// model that is not MLA or whose config lacks a size.
    pub fn mla_split_attention_weight_bytes(&self) -> Option<f64> {
        let d = self.mla_dims?;
        let (h, heads) = (
            f64::from(self.hidden_size?),
            f64::from(self.num_attention_heads),
        );
        let (kv, rope) = (
            f64::from(self.kv_lora_rank?),
            f64::from(self.qk_rope_head_dim?),
        );
        let (nope, v) = (f64::from(d.qk_nope_head_dim), f64::from(d.v_head_dim));
        let q = match d.q_lora_rank {
            Some(r) => f64::from(r) * heads * (nope + rope),
            None => h * heads * (nope + rope),
        };
        let per_layer = q + kv * heads * (nope + v) + heads * v * h;
        Some(per_layer * f64::from(self.num_hidden_layers) * self.weight_bytes()?)
    }

    /// The token embedding (bytes): `vocab_size × hidden_size` at the checkpoint's weight size.
    /// Under DP attention SGLang holds it whole on every GPU (`VocabParallelEmbedding` with
    /// `enable_tp = not is_dp_attention_enabled()`, `models/deepseek_v2.py`). `None` without
    /// `vocab_size` or `hidden_size`.
    pub fn embedding_weight_bytes(&self) -> Option<f64> {
        Some(f64::from(self.vocab_size?) * f64::from(self.hidden_size?) * self.weight_bytes()?)
    }

    /// MLA when `kv_lora_rank` is set and non-zero, whatever `num_key_value_heads` says
    /// (DeepSeek-V3 / Kimi configs carry `num_key_value_heads` = heads, which MLA ignores).
    pub fn attention_kind(&self) -> AttentionKind {
        if self.kv_lora_rank.is_some() {
            AttentionKind::Mla
        } else {
            AttentionKind::Mha
        }
    }

    /// Bytes per element of the model's own dtype (`torch_dtype`): 2 for bf16/fp16, `None`
    /// for anything else (fp32 is served down-cast by SGLang, so its KV dtype is not 4 bytes
    /// for sure; callers must say which).
    pub fn model_dtype_bytes(&self) -> Option<u32> {
        match self.torch_dtype.as_deref() {
            Some("bfloat16") | Some("float16") | Some("bf16") | Some("fp16") | Some("half") => {
                Some(2)
            }
            _ => None,
        }
    }
}

fn detect_hybrid(
    lm: &Map<String, Value>,
    layer_types: &[String],
    archs: &[String],
) -> Option<HybridKind> {
    let mamba_marker = layer_types
        .iter()
        .find(|t| t.contains("linear") || t.contains("mamba"))
        .map(|t| format!("layer_types contains {t:?}"))
        .or_else(|| {
            [
                "hybrid_override_pattern",
                "layers_block_type",
                "full_attention_interval",
                "linear_attn_config",
                "ssm_state_size",
            ]
            .iter()
            .find(|k| lm.get(**k).is_some_and(|v| !v.is_null()))
            .map(|k| format!("{k} present"))
        })
        .or_else(|| {
            lm.keys()
                .find(|k| k.starts_with("mamba"))
                .map(|k| format!("{k} present"))
        });
    if let Some(marker) = mamba_marker {
        return Some(HybridKind::Mamba { marker });
    }
    let has_sliding = layer_types.iter().any(|t| t.contains("sliding"));
    let has_full = layer_types.iter().any(|t| t.contains("full"));
    let swa_marker = if has_sliding && has_full {
        Some("layer_types mixes sliding_attention and full_attention".to_string())
    } else if lm
        .get("sliding_window_pattern")
        .is_some_and(|v| !v.is_null())
    {
        Some("sliding_window_pattern present".to_string())
    } else if lm.get("attention_chunk_size").is_some_and(|v| !v.is_null()) {
        Some("attention_chunk_size present (chunked local attention)".to_string())
    } else {
        archs
            .iter()
            .find(|a| HYBRID_SWA_ARCHS.contains(&a.as_str()))
            .map(|a| format!("architecture {a}"))
    };
    swa_marker.map(|marker| HybridKind::SlidingWindow { marker })
}
