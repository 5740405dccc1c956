//! Model configs → KV cell size, on the fixtures in `tests/data/configs/`.

use kv_capacity::{
    AttentionKind, CapacityError, HybridKind, KvDtype, ModelConfig, ParallelConfig, cell_size_bytes,
};

fn config(name: &str) -> ModelConfig {
    let path = format!(
        "{}/../../tests/data/configs/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    ModelConfig::from_hf_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn cell(m: &ModelConfig, tp: u32, dtype: KvDtype) -> u64 {
    cell_size_bytes(m, &ParallelConfig::tp(tp), dtype)
        .unwrap()
        .bytes
}

#[test]
fn llama_3_8b_gqa() {
    let m = config("llama-3-8b.json");
    assert_eq!(m.head_dim, 128); // 4096 / 32, derived
    assert_eq!(m.v_head_dim, 128);
    assert_eq!(m.num_key_value_heads, 8);
    assert_eq!(m.attention_kind(), AttentionKind::Mha);
    // 32 layers × 8 KV heads × (128 + 128) × 2 bytes
    assert_eq!(cell(&m, 1, KvDtype::Auto), 131_072);
    assert_eq!(cell(&m, 2, KvDtype::Auto), 65_536);
    assert_eq!(cell(&m, 8, KvDtype::Auto), 16_384);
    // fewer KV heads than ranks: 1 head per rank, replicated
    let c16 = cell_size_bytes(&m, &ParallelConfig::tp(16), KvDtype::Auto).unwrap();
    assert_eq!(
        (c16.bytes, c16.kv_heads_per_rank, c16.kv_heads_replicated),
        (16_384, Some(1), true)
    );
    // fp8 halves it; explicit bf16 equals auto
    assert_eq!(cell(&m, 1, KvDtype::Fp8E4m3), 65_536);
    assert_eq!(cell(&m, 1, KvDtype::Fp8E5m2), 65_536);
    assert_eq!(cell(&m, 1, KvDtype::Bf16), 131_072);
}

#[test]
fn dp_attention_and_pipeline_split() {
    let m = config("llama-3-8b.json");
    // TP8 with DP attention 4 → attention TP 2 → 4 KV heads per rank
    let p = ParallelConfig {
        tp_size: 8,
        attn_tp_size: Some(2),
        pp_size: 1,
    };
    assert_eq!(
        cell_size_bytes(&m, &p, KvDtype::Auto).unwrap().bytes,
        65_536
    );
    // PP 3 → ceil(32 / 3) = 11 layers on the largest stage
    let p = ParallelConfig {
        tp_size: 1,
        attn_tp_size: None,
        pp_size: 3,
    };
    let c = cell_size_bytes(&m, &p, KvDtype::Auto).unwrap();
    assert_eq!((c.layers, c.bytes), (11, 8 * 256 * 11 * 2));
    let bad = ParallelConfig {
        tp_size: 0,
        attn_tp_size: None,
        pp_size: 1,
    };
    assert!(matches!(
        cell_size_bytes(&m, &bad, KvDtype::Auto),
        Err(CapacityError::Invalid(_))
    ));
}

#[test]
fn qwen2_5_7b_replicated_at_tp8() {
    let m = config("qwen2.5-7b.json");
    assert_eq!(m.head_dim, 128); // 3584 / 28
    assert!(
        m.hybrid.is_none(),
        "use_sliding_window=false is a plain model"
    );
    // 28 layers × 4 heads × 256 × 2 = 57,344; at TP8 one replicated head: 28 × 256 × 2
    assert_eq!(cell(&m, 1, KvDtype::Auto), 57_344);
    assert_eq!(cell(&m, 8, KvDtype::Auto), 14_336);
}

#[test]
fn mistral_sliding_window_everywhere_is_not_hybrid() {
    let m = config("mistral-7b-v0.1.json");
    assert_eq!(m.sliding_window, Some(4096));
    assert!(m.hybrid.is_none());
    assert_eq!(cell(&m, 1, KvDtype::Auto), 131_072);
}

#[test]
fn deepseek_v3_mla_any_tp() {
    let m = config("deepseek-v3.json");
    assert_eq!(m.attention_kind(), AttentionKind::Mla);
    // (512 + 64) × 61 × 2, not divided by TP
    for tp in [1, 2, 8, 16] {
        assert_eq!(cell(&m, tp, KvDtype::Auto), 70_272, "TP{tp}");
    }
    assert_eq!(cell(&m, 8, KvDtype::Fp8E4m3), 35_136);
    let c = cell_size_bytes(&m, &ParallelConfig::tp(8), KvDtype::Auto).unwrap();
    assert_eq!(
        (
            c.values_per_layer,
            c.layers,
            c.dtype_bytes,
            c.kv_heads_per_rank
        ),
        (576, 61, 2, None)
    );
}

#[test]
fn kimi_k2_5_nested_text_config() {
    let m = config("kimi-k2.5-vlm.json");
    assert!(m.from_nested_text_config);
    assert_eq!(
        m.architectures,
        vec!["KimiK25ForConditionalGeneration".to_string()]
    );
    assert_eq!(m.model_type.as_deref(), Some("kimi_k2"));
    assert_eq!(
        (m.num_hidden_layers, m.num_key_value_heads, m.kv_lora_rank),
        (61, 64, Some(512))
    );
    assert_eq!(m.torch_dtype.as_deref(), Some("bfloat16"));
    // num_key_value_heads = 64 is ignored: MLA wins
    assert_eq!(cell(&m, 8, KvDtype::Auto), 70_272);
}

fn unsupported(name: &str) -> String {
    let m = config(name);
    match cell_size_bytes(&m, &ParallelConfig::tp(8), KvDtype::Auto) {
        Err(CapacityError::Unsupported { what }) => what,
        other => panic!("{name}: expected Unsupported, got {other:?}"),
    }
}

#[test]
fn hybrid_and_sparse_models_are_named_not_guessed() {
    let llama4 = config("llama-4-scout.json");
    assert!(llama4.from_nested_text_config);
    assert_eq!(
        llama4.hybrid,
        Some(HybridKind::SlidingWindow {
            marker: "attention_chunk_size present (chunked local attention)".into()
        })
    );
    assert!(unsupported("llama-4-scout.json").starts_with("hybrid sliding-window model"));
    assert!(unsupported("gemma-3-27b.json").contains("sliding_window_pattern present"));
    assert!(unsupported("qwen3-next-80b-a3b.json").contains("full_attention_interval present"));
    assert_eq!(
        unsupported("deepseek-v3.2.json"),
        "DeepSeek sparse attention (DSA) indexer cache per layer"
    );
}

#[test]
fn gemma_3_dtype_from_top_level() {
    let m = config("gemma-3-27b.json");
    assert_eq!(m.torch_dtype.as_deref(), Some("bfloat16"));
    assert_eq!((m.num_hidden_layers, m.head_dim), (62, 128));
}

#[test]
fn unsupported_dtypes_and_bad_configs() {
    let m = config("llama-3-8b.json");
    for d in ["fp4_e2m1", "mxfp8"] {
        let dtype = KvDtype::from_sglang(d).unwrap();
        assert!(matches!(
            cell_size_bytes(&m, &ParallelConfig::tp(1), dtype),
            Err(CapacityError::Unsupported { .. })
        ));
    }
    assert_eq!(KvDtype::from_sglang("fp8_e5m2").unwrap(), KvDtype::Fp8E5m2);
    assert!(KvDtype::from_sglang("int3").is_err());
    // fp32 config with kv_cache_dtype=auto is refused, explicit bf16 works
    let fp32 = ModelConfig::from_hf_json(
        r#"{"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, "torch_dtype": "float32"}"#,
    )
    .unwrap();
    assert_eq!(fp32.num_key_value_heads, 4); // defaults to attention heads
    assert!(matches!(
        cell_size_bytes(&fp32, &ParallelConfig::tp(1), KvDtype::Auto),
        Err(CapacityError::Unsupported { .. })
    ));
    assert_eq!(cell(&fp32, 1, KvDtype::Bf16), 4 * 128 * 2 * 2);
    // errors name the field
    let e = ModelConfig::from_hf_json(r#"{"num_attention_heads": 4}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "config.json: field `num_hidden_layers` is missing"
    );
    let e =
        ModelConfig::from_hf_json(r#"{"text_config": {"num_hidden_layers": "x"}}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "config.json: field `text_config.num_hidden_layers` is not a non-negative integer: \"x\""
    );
    let e = ModelConfig::from_hf_json(
        r#"{"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 256}"#,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("config.json: field `head_dim` is missing")
    );
    assert!(matches!(
        ModelConfig::from_hf_json("[1]"),
        Err(CapacityError::Json(_))
    ));
}

/// The attention weights TP splits of the founding case's Kimi-K2.5
/// (`scenarios/kimi-k25-b2/config.json`: hidden 7168, 61 layers, 64 heads, q_lora 1536, kv_lora
/// 512, rope 64, nope 128, v 128, bf16): per layer 18.87M (q_b), 8.39M (kv_b), 58.72M (o) =
/// 85.98M weights, 5.24B over the layers, 9.77 GiB at two bytes (the replicated q_a and kv_a
/// not among them). Its config gives no vocab_size: no embedding is sized; Kimi-K2's own
/// (163,840 × 7168 at two bytes) is 2.19 GiB.
#[test]
fn mla_attention_weights_of_the_founding_case() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/scenarios/kimi-k25-b2/config.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let c = ModelConfig::from_hf_json(&text).unwrap();
    let per_layer = 1536.0 * 64.0 * 192.0 + 512.0 * 64.0 * 256.0 + 64.0 * 128.0 * 7168.0;
    let bytes = c.mla_split_attention_weight_bytes().expect("MLA dims");
    assert_eq!(bytes, per_layer * 61.0 * 2.0);
    let gib = bytes / (1u64 << 30) as f64;
    assert!((gib - 9.77).abs() < 0.01, "{gib}");
    assert_eq!(c.embedding_weight_bytes(), None);
    // the same config with Kimi-K2's vocabulary
    let with_vocab = text.replacen('{', "{\"vocab_size\": 163840, ", 1);
    let c = ModelConfig::from_hf_json(&with_vocab).unwrap();
    let emb = c.embedding_weight_bytes().expect("embedding") / (1u64 << 30) as f64;
    assert!((emb - 2.1875).abs() < 1e-9, "{emb}");
    // a model that is not MLA has none
    let llama = config("llama-3-8b.json");
    assert_eq!(llama.mla_split_attention_weight_bytes(), None);
}
