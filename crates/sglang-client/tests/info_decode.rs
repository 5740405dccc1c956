//! `ServerInfo` / `ModelInfo` decoding across SGLang versions. The fixtures
//! in `tests/data/` are payload shapes written from
//! `sglang-observables.md` §4.2 (v0.4.5 flat internal state, v0.4.9
//! `internal_states` with `memory_usage.cuda_graph`, v0.5.4 DP=2 with
//! `memory_usage.graph`), plus the kimi-k25-b2 scenario's `server_info.json`.

use sglang_client::{ModelInfo, ServerInfo};

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn v0_4_5_flat_internal_state() {
    let i = ServerInfo::from_json_str(&fixture("server_info_v0.4.5_flat.json")).unwrap();
    assert_eq!(
        i.model_path.as_deref(),
        Some("meta-llama/Llama-3.1-8B-Instruct")
    );
    assert_eq!(i.version.as_deref(), Some("0.4.5"));
    assert_eq!(i.tp_size, Some(1));
    assert_eq!(i.mem_fraction_static, Some(0.88));
    assert_eq!(i.max_total_num_tokens, Some(431_072));
    assert_eq!(i.max_total_tokens, None);
    assert_eq!(i.max_running_requests, None);
    assert_eq!(i.chunked_prefill_size, Some(8192));
    assert_eq!(i.status.as_deref(), Some("ready"));
    assert!(i.internal_state_flat);
    assert_eq!(i.internal_states.len(), 1);
    assert_eq!(i.internal_states[0].last_gen_throughput, Some(1843.27));
    assert_eq!(i.min_version_from_keys(), Some("v0.4.3.post3"));
    // unknown keys are kept
    assert_eq!(
        i.extra.get("attention_backend").and_then(|v| v.as_str()),
        Some("flashinfer")
    );
    assert_eq!(i.extra.get("port").and_then(|v| v.as_u64()), Some(30000));
    assert!(i.problems.is_empty(), "{:?}", i.problems);
}

#[test]
fn v0_4_9_internal_states_with_cuda_graph_key() {
    let i = ServerInfo::from_json_str(&fixture("server_info_v0.4.9_list.json")).unwrap();
    assert!(!i.internal_state_flat);
    assert_eq!(i.kv_cache_dtype.as_deref(), Some("fp8_e5m2"));
    assert_eq!(i.enable_hierarchical_cache, Some(true));
    assert_eq!(i.hicache_ratio, Some(2.0));
    assert_eq!(i.hicache_size, Some(0.0));
    let s = &i.internal_states[0];
    assert_eq!(s.last_gen_throughput, Some(612.5));
    let mu = s.memory_usage.as_ref().unwrap();
    assert_eq!(mu.weight, Some(30.52));
    assert_eq!(mu.kvcache, Some(8.67));
    assert_eq!(mu.token_capacity, Some(283_941));
    assert_eq!(mu.graph, Some(1.13));
    assert_eq!(mu.graph_key, Some("cuda_graph"));
    assert_eq!(s.extra.get("load").and_then(|v| v.as_u64()), Some(12));
    assert_eq!(i.min_version_from_keys(), Some("v0.4.9"));
}

#[test]
fn v0_5_4_dp2_spec_decoding() {
    let i = ServerInfo::from_json_str(&fixture("server_info_v0.5.4_dp2.json")).unwrap();
    assert_eq!(i.dp_size, Some(2));
    assert_eq!(i.enable_dp_attention, Some(true));
    assert_eq!(i.page_size, Some(64));
    assert_eq!(i.context_length, Some(163_840));
    assert_eq!(i.speculative_algorithm.as_deref(), Some("EAGLE"));
    assert_eq!(i.served_model_name.as_deref(), Some("deepseek-v3"));
    assert_eq!(i.internal_states.len(), 2);
    assert_eq!(i.internal_states[1].last_gen_throughput, Some(2187.9));
    assert_eq!(i.internal_states[0].avg_spec_accept_length, Some(2.71));
    let mu = i.internal_states[0].memory_usage.as_ref().unwrap();
    assert_eq!(mu.graph, Some(2.31));
    assert_eq!(mu.graph_key, Some("graph"));
    assert_eq!(i.min_version_from_keys(), Some("v0.5.2"));
    assert_eq!(i.kv_capacity_tokens(), Some(622_592));
    // per-rank server-arg copies stay in the rank's extra
    assert_eq!(
        i.internal_states[0]
            .extra
            .get("page_size")
            .and_then(|v| v.as_u64()),
        Some(64)
    );
}

#[test]
fn kimi_k25_b2_scenario() {
    let p = format!(
        "{}/../../tests/data/scenarios/kimi-k25-b2/server_info.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let i = ServerInfo::from_json_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    assert_eq!(i.model_path.as_deref(), Some("moonshotai/Kimi-K2.5"));
    assert_eq!(i.tp_size, Some(8));
    assert_eq!(i.max_total_num_tokens, Some(116_171));
    assert_eq!(i.max_running_requests, Some(4096));
    assert_eq!(i.num_continuous_decode_steps, Some(4));
    assert_eq!(i.context_length, Some(262_144));
    assert_eq!(i.version.as_deref(), Some("0.5.8"));
    assert_eq!(i.internal_states[0].last_gen_throughput, Some(851.3));
    // `avg_spec_accept_length: null` is None, not 0
    assert_eq!(i.internal_states[0].avg_spec_accept_length, None);
    assert_eq!(i.min_version_from_keys(), Some("v0.4.6.post4"));
    assert_eq!(
        i.extra.get("max_prefill_tokens"),
        None,
        "typed field must not linger in extra"
    );
    assert_eq!(i.max_prefill_tokens, Some(16384));
}

#[test]
fn wrong_types_are_reported_not_fatal() {
    let s = r#"{"model_path": "m", "page_size": "auto", "tp_size": 4,
               "internal_states": [{"last_gen_throughput": "fast", "memory_usage": {"graph": {"decode": 1.5, "prefill": 0.25}}}],
               "cuda_graph_config": {"decode": {"max_bs": 256}}}"#;
    let i = ServerInfo::from_json_str(s).unwrap();
    assert_eq!(i.tp_size, Some(4));
    assert_eq!(i.page_size, None);
    assert_eq!(
        i.extra.get("page_size").and_then(|v| v.as_str()),
        Some("auto")
    );
    assert_eq!(i.problems.len(), 2, "{:?}", i.problems);
    assert!(i.problems[0].starts_with("page_size"));
    assert!(i.problems[1].starts_with("internal_states[0].last_gen_throughput"));
    // v0.5.17+ per-phase graph map: summed
    assert_eq!(
        i.internal_states[0].memory_usage.as_ref().unwrap().graph,
        Some(1.75)
    );
    assert_eq!(i.min_version_from_keys(), Some("v0.5.14"));
}

#[test]
fn not_an_object_is_an_error() {
    assert!(ServerInfo::from_json_str("[1, 2]").is_err());
    assert!(ServerInfo::from_json_str("{not json").is_err());
}

#[test]
fn model_info_versions() {
    let old = ModelInfo::from_json_str(r#"{"model_path": "m", "is_generation": true}"#).unwrap();
    assert_eq!(old.is_generation, Some(true));
    assert_eq!(old.tokenizer_path, None);
    let new = ModelInfo::from_json_str(
        r#"{"model_path": "m", "tokenizer_path": "t", "is_generation": true, "weight_version": "default",
            "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "reasoning_parser": "kimi"}"#,
    )
    .unwrap();
    assert_eq!(
        new.architectures.as_deref(),
        Some(&["DeepseekV3ForCausalLM".to_string()][..])
    );
    assert_eq!(
        new.extra.get("reasoning_parser").and_then(|v| v.as_str()),
        Some("kimi")
    );
}
