//! `/server_info` (`/get_server_info`) and `/model_info` (`/get_model_info`)
//! payloads, decoded for every SGLang version.
//!
//! The payload is a flat merge of `ServerArgs`, scheduler start-up info and
//! (from v0.4.3.post3) the scheduler's internal state; see
//! `sglang-observables.md` §4.2 (`python/sglang/srt/entrypoints/http_server.py`).
//! Keys come and go between versions and a few change type (e.g.
//! `memory_usage.graph` is a number in v0.5.2 and a per-phase map in
//! v0.5.17), so decoding is done field by field: a known key whose value has
//! an unexpected type is left in [`ServerInfo::extra`] and named in
//! [`ServerInfo::problems`] instead of failing the whole payload.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Removes `key` from `map` and decodes it as `T`. `null` and a missing key
/// give `None`; a value of another type is put back and reported.
fn take<T: DeserializeOwned>(
    map: &mut Map<String, Value>,
    key: &str,
    scope: &str,
    problems: &mut Vec<String>,
) -> Option<T> {
    let v = map.remove(key)?;
    if v.is_null() {
        return None;
    }
    match serde_json::from_value::<T>(v.clone()) {
        Ok(t) => Some(t),
        Err(e) => {
            let shown = crate::error::excerpt(&v.to_string(), 80);
            problems.push(format!("{scope}{key}: unexpected value {shown} ({e})"));
            map.insert(key.to_string(), v);
            None
        }
    }
}

/// `internal_states[i].memory_usage` (v0.4.9+), one DP rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryUsage {
    /// Model weights, GB (SGLang's "GB" means GiB here).
    pub weight: Option<f64>,
    /// KV cache pool, GB.
    pub kvcache: Option<f64>,
    /// KV pool capacity in tokens (= `max_total_num_tokens` of this rank).
    pub token_capacity: Option<u64>,
    /// SWA pool capacity in tokens (v0.5.17+, hybrid models).
    pub token_capacity_swa: Option<u64>,
    /// CUDA-graph memory, GB: key `cuda_graph` (v0.4.9 – v0.5.1) or
    /// `graph` as a number (v0.5.2 – v0.5.16); the sum of the per-phase map
    /// when `graph` is `{phase: GB}` (v0.5.17+).
    pub graph: Option<f64>,
    /// Memory available at start-up, GB (v0.5.17+).
    pub startup_available: Option<f64>,
    /// The key `graph` came from: `"cuda_graph"` (v0.4.9 – v0.5.1) or
    /// `"graph"` (v0.5.2+); None when neither was present.
    pub graph_key: Option<&'static str>,
    /// Keys not listed above, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl MemoryUsage {
    fn from_map(mut m: Map<String, Value>, scope: &str, problems: &mut Vec<String>) -> Self {
        let weight = take(&mut m, "weight", scope, problems);
        let kvcache = take(&mut m, "kvcache", scope, problems);
        let token_capacity = take(&mut m, "token_capacity", scope, problems);
        let token_capacity_swa = take(&mut m, "token_capacity_swa", scope, problems);
        let startup_available = take(&mut m, "startup_available", scope, problems);
        let mut graph = take::<f64>(&mut m, "cuda_graph", scope, problems);
        let mut graph_key = graph.map(|_| "cuda_graph");
        match m.get("graph") {
            Some(Value::Number(n)) => {
                graph = n.as_f64();
                graph_key = Some("graph");
                m.remove("graph");
            }
            Some(Value::Object(phases)) => {
                // v0.5.17+: {phase: GB}; keep the map in `extra` for detail.
                let mut sum = 0.0;
                let mut all_numbers = true;
                for v in phases.values() {
                    match v.as_f64() {
                        Some(x) => sum += x,
                        None => all_numbers = false,
                    }
                }
                graph_key = Some("graph");
                if all_numbers {
                    graph = Some(sum);
                } else {
                    problems.push(format!("{scope}graph: non-numeric phase value"));
                }
            }
            _ => {}
        }
        MemoryUsage {
            weight,
            kvcache,
            token_capacity,
            token_capacity_swa,
            graph,
            startup_available,
            graph_key,
            extra: m,
        }
    }
}

/// One entry of `internal_states` (one DP rank), or the internal state merged
/// at the top level in v0.4.3.post3 – v0.4.6.post3.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InternalState {
    /// Generation throughput on the last Decode line of this rank, tokens/s.
    pub last_gen_throughput: Option<f64>,
    /// Lifetime mean speculative accept length, tokens/step (spec decoding only).
    pub avg_spec_accept_length: Option<f64>,
    /// KV / weight / graph memory of this rank (v0.4.9+).
    pub memory_usage: Option<MemoryUsage>,
    /// Effective max running requests per DP rank (v0.5.8+).
    pub effective_max_running_requests_per_dp: Option<u64>,
    /// Keys not listed above (server-arg copies, `load`, `step_time_dict`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InternalState {
    fn from_map(mut m: Map<String, Value>, scope: &str, problems: &mut Vec<String>) -> Self {
        let last_gen_throughput = take(&mut m, "last_gen_throughput", scope, problems);
        let avg_spec_accept_length = take(&mut m, "avg_spec_accept_length", scope, problems);
        let effective_max_running_requests_per_dp = take(
            &mut m,
            "effective_max_running_requests_per_dp",
            scope,
            problems,
        );
        let memory_usage = match m.remove("memory_usage") {
            Some(Value::Object(mu)) => Some(MemoryUsage::from_map(
                mu,
                &format!("{scope}memory_usage."),
                problems,
            )),
            Some(Value::Null) | None => None,
            Some(other) => {
                problems.push(format!(
                    "{scope}memory_usage: expected an object, got {other}"
                ));
                m.insert("memory_usage".into(), other);
                None
            }
        };
        InternalState {
            last_gen_throughput,
            avg_spec_accept_length,
            memory_usage,
            effective_max_running_requests_per_dp,
            extra: m,
        }
    }
}

/// The `/server_info` payload of any SGLang version from v0.3.6.post1.
///
/// Every known field is an `Option`: absent or `null` is `None` (unknown,
/// never 0). Unknown keys are kept in [`ServerInfo::extra`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerInfo {
    /// `--model-path`.
    pub model_path: Option<String>,
    /// `--served-model-name`.
    pub served_model_name: Option<String>,
    /// Tensor-parallel size.
    pub tp_size: Option<u64>,
    /// Data-parallel size.
    pub dp_size: Option<u64>,
    /// Pipeline-parallel size (v0.4.6.post2+).
    pub pp_size: Option<u64>,
    /// Expert-parallel size (v0.4.0.post1+).
    pub ep_size: Option<u64>,
    /// DP attention switch.
    pub enable_dp_attention: Option<bool>,
    /// Resolved `mem_fraction_static` (fraction of GPU memory, 0–1).
    pub mem_fraction_static: Option<f64>,
    /// User cap `--max-total-tokens` (None = auto).
    pub max_total_tokens: Option<u64>,
    /// Actual KV pool capacity in tokens, per DP rank (scheduler info).
    pub max_total_num_tokens: Option<u64>,
    /// Longest accepted prompt, tokens (v0.4.1.post7+).
    pub max_req_input_len: Option<u64>,
    /// Resolved chunked prefill size in tokens (−1 = disabled).
    pub chunked_prefill_size: Option<i64>,
    /// `--max-prefill-tokens` (default 16384).
    pub max_prefill_tokens: Option<u64>,
    /// `--max-running-requests` (None = auto).
    pub max_running_requests: Option<u64>,
    /// `--max-queued-requests` (v0.4.9.post6+, None = unlimited).
    pub max_queued_requests: Option<u64>,
    /// `--kv-cache-dtype` (`auto`, `fp8_e5m2`, ...).
    pub kv_cache_dtype: Option<String>,
    /// HiCache switch (v0.4.2.post1+).
    pub enable_hierarchical_cache: Option<bool>,
    /// HiCache host/device ratio (v0.4.4.post2+).
    pub hicache_ratio: Option<f64>,
    /// HiCache host pool size, GB (0 = use the ratio; v0.4.5.post3+).
    pub hicache_size: Option<f64>,
    /// KV page size in tokens (v0.4.4+).
    pub page_size: Option<u64>,
    /// `--context-length` (None = model default).
    pub context_length: Option<u64>,
    /// Queue policy (`fcfs`, `lpm`, ...).
    pub schedule_policy: Option<String>,
    /// `--schedule-conservativeness` (default 1.0).
    pub schedule_conservativeness: Option<f64>,
    /// Decode steps per scheduling round.
    pub num_continuous_decode_steps: Option<u64>,
    /// PD role: `prefill`, `decode`, or None.
    pub disaggregation_mode: Option<String>,
    /// Speculative algorithm (`EAGLE`, ...).
    pub speculative_algorithm: Option<String>,
    /// Decode passes between Decode log lines (default 40).
    pub decode_log_interval: Option<u64>,
    /// `--enable-metrics`.
    pub enable_metrics: Option<bool>,
    /// SGLang version string (not in every version; see [`ServerInfo::min_version_from_keys`]).
    pub version: Option<String>,
    /// Scheduler status (`ready`, v0.3.6.post1 – v0.4.1.post6).
    pub status: Option<String>,
    /// Internal state per DP rank (`internal_states`, v0.4.6.post4+), or the
    /// single state merged at the top level (v0.4.3.post3 – v0.4.6.post3),
    /// which is moved here as one entry.
    pub internal_states: Vec<InternalState>,
    /// True when the internal state came from top-level keys (v0.4.3.post3 – v0.4.6.post3).
    pub internal_state_flat: bool,
    /// Keys not listed above, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// Known keys whose value had an unexpected type (left in `extra`).
    #[serde(skip)]
    pub problems: Vec<String>,
}

/// Errors of [`ServerInfo::from_json_str`] and [`ModelInfo::from_json_str`].
#[derive(Debug, thiserror::Error)]
pub enum InfoError {
    /// Not JSON at all.
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but the top level is not an object.
    #[error("expected a JSON object at the top level, got {0}")]
    NotObject(&'static str),
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl ServerInfo {
    /// Decodes a `/server_info` payload (e.g. a file saved with
    /// `curl .../get_server_info > server_info.json`).
    ///
    /// Errors: [`InfoError::Json`] for invalid JSON, [`InfoError::NotObject`]
    /// when the top level is not an object. Type mismatches of single keys do
    /// not fail; they are listed in [`ServerInfo::problems`].
    pub fn from_json_str(s: &str) -> Result<Self, InfoError> {
        let v: Value = serde_json::from_str(s)?;
        Self::from_value(v)
    }

    /// Same as [`ServerInfo::from_json_str`] for an already parsed value.
    pub fn from_value(v: Value) -> Result<Self, InfoError> {
        match v {
            Value::Object(m) => Ok(Self::from_map(m)),
            other => Err(InfoError::NotObject(kind_of(&other))),
        }
    }

    fn from_map(mut m: Map<String, Value>) -> Self {
        let mut p = Vec::new();
        let p = &mut p;
        let mut info = ServerInfo {
            model_path: take(&mut m, "model_path", "", p),
            served_model_name: take(&mut m, "served_model_name", "", p),
            tp_size: take(&mut m, "tp_size", "", p),
            dp_size: take(&mut m, "dp_size", "", p),
            pp_size: take(&mut m, "pp_size", "", p),
            ep_size: take(&mut m, "ep_size", "", p),
            enable_dp_attention: take(&mut m, "enable_dp_attention", "", p),
            mem_fraction_static: take(&mut m, "mem_fraction_static", "", p),
            max_total_tokens: take(&mut m, "max_total_tokens", "", p),
            max_total_num_tokens: take(&mut m, "max_total_num_tokens", "", p),
            max_req_input_len: take(&mut m, "max_req_input_len", "", p),
            chunked_prefill_size: take(&mut m, "chunked_prefill_size", "", p),
            max_prefill_tokens: take(&mut m, "max_prefill_tokens", "", p),
            max_running_requests: take(&mut m, "max_running_requests", "", p),
            max_queued_requests: take(&mut m, "max_queued_requests", "", p),
            kv_cache_dtype: take(&mut m, "kv_cache_dtype", "", p),
            enable_hierarchical_cache: take(&mut m, "enable_hierarchical_cache", "", p),
            hicache_ratio: take(&mut m, "hicache_ratio", "", p),
            hicache_size: take(&mut m, "hicache_size", "", p),
            page_size: take(&mut m, "page_size", "", p),
            context_length: take(&mut m, "context_length", "", p),
            schedule_policy: take(&mut m, "schedule_policy", "", p),
            schedule_conservativeness: take(&mut m, "schedule_conservativeness", "", p),
            num_continuous_decode_steps: take(&mut m, "num_continuous_decode_steps", "", p),
            disaggregation_mode: take(&mut m, "disaggregation_mode", "", p),
            speculative_algorithm: take(&mut m, "speculative_algorithm", "", p),
            decode_log_interval: take(&mut m, "decode_log_interval", "", p),
            enable_metrics: take(&mut m, "enable_metrics", "", p),
            version: take(&mut m, "version", "", p),
            status: take(&mut m, "status", "", p),
            ..Default::default()
        };
        match m.remove("internal_states") {
            Some(Value::Array(states)) => {
                for (i, s) in states.into_iter().enumerate() {
                    match s {
                        Value::Object(sm) => info.internal_states.push(InternalState::from_map(
                            sm,
                            &format!("internal_states[{i}]."),
                            p,
                        )),
                        other => p.push(format!(
                            "internal_states[{i}]: expected an object, got {}",
                            kind_of(&other)
                        )),
                    }
                }
            }
            Some(Value::Null) | None => {
                // v0.4.3.post3 – v0.4.6.post3: merged at the top level.
                if m.contains_key("last_gen_throughput") {
                    let mut flat = Map::new();
                    for k in [
                        "last_gen_throughput",
                        "avg_spec_accept_length",
                        "memory_usage",
                        "effective_max_running_requests_per_dp",
                    ] {
                        if let Some(v) = m.remove(k) {
                            flat.insert(k.to_string(), v);
                        }
                    }
                    info.internal_states
                        .push(InternalState::from_map(flat, "", p));
                    info.internal_state_flat = true;
                }
            }
            Some(other) => {
                p.push(format!(
                    "internal_states: expected an array, got {}",
                    kind_of(&other)
                ));
                m.insert("internal_states".into(), other);
            }
        }
        info.extra = m;
        info.problems = std::mem::take(p);
        info
    }

    /// The oldest SGLang version consistent with the keys present
    /// (`sglang-observables.md` §4.3): `cuda_graph_config` → v0.5.14,
    /// `memory_usage.graph` → v0.5.2, `memory_usage` → v0.4.9,
    /// `internal_states` list → v0.4.6.post4, flat `last_gen_throughput` →
    /// v0.4.3.post3. `None` when no marker key is present.
    pub fn min_version_from_keys(&self) -> Option<&'static str> {
        if self.extra.contains_key("cuda_graph_config") {
            return Some("v0.5.14");
        }
        let mut any_mu = false;
        let mut new_graph_key = false;
        for m in self
            .internal_states
            .iter()
            .filter_map(|s| s.memory_usage.as_ref())
        {
            any_mu = true;
            new_graph_key |= m.graph_key == Some("graph");
        }
        if any_mu {
            return Some(if new_graph_key { "v0.5.2" } else { "v0.4.9" });
        }
        if !self.internal_states.is_empty() && !self.internal_state_flat {
            return Some("v0.4.6.post4");
        }
        if self.internal_state_flat {
            return Some("v0.4.3.post3");
        }
        None
    }

    /// Checks that each known figure is possible for a server (a size of 0, a fraction above 1,
    /// a throughput of 10^20 tok/s are not) and clears the ones that are not, so that they are
    /// not used. Returns one line per cleared field, naming the field, the value and the range:
    /// e.g. `tp_size: 0 is out of range (1 to 65536)`.
    ///
    /// Ranges: parallel sizes 1–65,536; `mem_fraction_static` in (0, 1]; token counts and
    /// capacities 1–2^40 tokens; `max_running_requests` and `max_queued_requests` 1–10^7;
    /// `chunked_prefill_size` −1 (off) or 1–2^31; `page_size` 1–2^20 tokens; `context_length`
    /// 1–2^34 tokens; `decode_log_interval` and `num_continuous_decode_steps` 1–10^6;
    /// `hicache_ratio` in (0, 10^4]; `hicache_size` 0–10^7 GB; `schedule_conservativeness` in
    /// (0, 10^4]; per rank `last_gen_throughput` 0–10^9 tok/s, memory figures 0–10^6 GB.
    pub fn validate(&mut self) -> Vec<String> {
        let mut bad = Vec::new();
        fn int(bad: &mut Vec<String>, name: &str, v: &mut Option<u64>, lo: u64, hi: u64) {
            if let Some(x) = *v
                && !(lo..=hi).contains(&x)
            {
                bad.push(format!("{name}: {x} is out of range ({lo} to {hi})"));
                *v = None;
            }
        }
        fn float(
            bad: &mut Vec<String>,
            name: &str,
            v: &mut Option<f64>,
            lo: f64,
            hi: f64,
            lo_open: bool,
        ) {
            if let Some(x) = *v {
                let low_ok = if lo_open { x > lo } else { x >= lo };
                if !(x.is_finite() && low_ok && x <= hi) {
                    let open = if lo_open { "above " } else { "" };
                    bad.push(format!("{name}: {x} is out of range ({open}{lo} to {hi})"));
                    *v = None;
                }
            }
        }
        const SIZE: u64 = 65_536;
        const TOKENS: u64 = 1 << 40;
        int(&mut bad, "tp_size", &mut self.tp_size, 1, SIZE);
        int(&mut bad, "dp_size", &mut self.dp_size, 1, SIZE);
        int(&mut bad, "pp_size", &mut self.pp_size, 1, SIZE);
        int(&mut bad, "ep_size", &mut self.ep_size, 1, SIZE);
        float(
            &mut bad,
            "mem_fraction_static",
            &mut self.mem_fraction_static,
            0.0,
            1.0,
            true,
        );
        int(
            &mut bad,
            "max_total_tokens",
            &mut self.max_total_tokens,
            1,
            TOKENS,
        );
        int(
            &mut bad,
            "max_total_num_tokens",
            &mut self.max_total_num_tokens,
            1,
            TOKENS,
        );
        int(
            &mut bad,
            "max_req_input_len",
            &mut self.max_req_input_len,
            1,
            TOKENS,
        );
        int(
            &mut bad,
            "max_prefill_tokens",
            &mut self.max_prefill_tokens,
            1,
            TOKENS,
        );
        int(
            &mut bad,
            "max_running_requests",
            &mut self.max_running_requests,
            1,
            10_000_000,
        );
        int(
            &mut bad,
            "max_queued_requests",
            &mut self.max_queued_requests,
            1,
            10_000_000,
        );
        if let Some(c) = self.chunked_prefill_size
            && !(c == -1 || (1..=1 << 31).contains(&c))
        {
            bad.push(format!(
                "chunked_prefill_size: {c} is out of range (-1 for off, or 1 to {})",
                1u64 << 31
            ));
            self.chunked_prefill_size = None;
        }
        int(&mut bad, "page_size", &mut self.page_size, 1, 1 << 20);
        int(
            &mut bad,
            "context_length",
            &mut self.context_length,
            1,
            1 << 34,
        );
        int(
            &mut bad,
            "decode_log_interval",
            &mut self.decode_log_interval,
            1,
            1_000_000,
        );
        int(
            &mut bad,
            "num_continuous_decode_steps",
            &mut self.num_continuous_decode_steps,
            1,
            1_000_000,
        );
        float(
            &mut bad,
            "hicache_ratio",
            &mut self.hicache_ratio,
            0.0,
            1e4,
            true,
        );
        float(
            &mut bad,
            "hicache_size",
            &mut self.hicache_size,
            0.0,
            1e7,
            false,
        );
        float(
            &mut bad,
            "schedule_conservativeness",
            &mut self.schedule_conservativeness,
            0.0,
            1e4,
            true,
        );
        for (i, st) in self.internal_states.iter_mut().enumerate() {
            let scope = if self.internal_state_flat {
                String::new()
            } else {
                format!("internal_states[{i}].")
            };
            float(
                &mut bad,
                &format!("{scope}last_gen_throughput"),
                &mut st.last_gen_throughput,
                0.0,
                1e9,
                false,
            );
            if let Some(mu) = st.memory_usage.as_mut() {
                for (k, v) in [
                    ("weight", &mut mu.weight),
                    ("kvcache", &mut mu.kvcache),
                    ("graph", &mut mu.graph),
                    ("startup_available", &mut mu.startup_available),
                ] {
                    float(
                        &mut bad,
                        &format!("{scope}memory_usage.{k}"),
                        v,
                        0.0,
                        1e6,
                        false,
                    );
                }
                int(
                    &mut bad,
                    &format!("{scope}memory_usage.token_capacity"),
                    &mut mu.token_capacity,
                    1,
                    TOKENS,
                );
            }
        }
        bad
    }

    /// KV pool capacity in tokens: `max_total_num_tokens`, else the first
    /// rank's `memory_usage.token_capacity`. Per DP rank.
    pub fn kv_capacity_tokens(&self) -> Option<u64> {
        self.max_total_num_tokens.or_else(|| {
            self.internal_states
                .iter()
                .find_map(|s| s.memory_usage.as_ref().and_then(|m| m.token_capacity))
        })
    }
}

/// The `/model_info` (`/get_model_info`) payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelInfo {
    /// Model path or hub id.
    pub model_path: Option<String>,
    /// Tokenizer path (v0.3.x+).
    pub tokenizer_path: Option<String>,
    /// True for generation models, false for embedding/reward models.
    pub is_generation: Option<bool>,
    /// Served model name (main).
    pub served_model_name: Option<String>,
    /// Weight version tag (v0.5.3+).
    pub weight_version: Option<String>,
    /// HF `model_type` (v0.5.9+).
    pub model_type: Option<String>,
    /// HF `architectures` (v0.5.9+).
    pub architectures: Option<Vec<String>>,
    /// Keys not listed above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// Known keys whose value had an unexpected type (left in `extra`).
    #[serde(skip)]
    pub problems: Vec<String>,
}

impl ModelInfo {
    /// Decodes a `/model_info` payload. Errors as [`ServerInfo::from_json_str`].
    pub fn from_json_str(s: &str) -> Result<Self, InfoError> {
        let v: Value = serde_json::from_str(s)?;
        Self::from_value(v)
    }

    /// Same as [`ModelInfo::from_json_str`] for a parsed value.
    pub fn from_value(v: Value) -> Result<Self, InfoError> {
        let mut m = match v {
            Value::Object(m) => m,
            other => return Err(InfoError::NotObject(kind_of(&other))),
        };
        let mut p = Vec::new();
        let info = ModelInfo {
            model_path: take(&mut m, "model_path", "", &mut p),
            tokenizer_path: take(&mut m, "tokenizer_path", "", &mut p),
            is_generation: take(&mut m, "is_generation", "", &mut p),
            served_model_name: take(&mut m, "served_model_name", "", &mut p),
            weight_version: take(&mut m, "weight_version", "", &mut p),
            model_type: take(&mut m, "model_type", "", &mut p),
            architectures: take(&mut m, "architectures", "", &mut p),
            extra: Map::new(),
            problems: Vec::new(),
        };
        Ok(ModelInfo {
            extra: m,
            problems: p,
            ..info
        })
    }
}
