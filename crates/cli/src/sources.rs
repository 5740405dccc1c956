//! Turning what the I/O crates return (server info, GPU snapshots, files) into the plain values
//! `diagnosis::Context` takes. Every failure names its source and lands in `source_errors`, so a
//! missing source narrows the report instead of aborting it.

use std::path::Path;

use diagnosis::{Context, GpuFacts, GpuMemory, ModelFacts, ServerFacts};
use gpu_probe::{GpuError, GpuSnapshot};
use sglang_client::ServerInfo;

/// Server facts from a decoded `/server_info` payload.
pub fn server_facts(info: &ServerInfo, source: &str) -> ServerFacts {
    let tput: Vec<f64> = info
        .internal_states
        .iter()
        .filter_map(|s| s.last_gen_throughput)
        .collect();
    ServerFacts {
        source: source.to_string(),
        version: info.version.clone(),
        model_path: info.model_path.clone(),
        tp_size: info.tp_size.and_then(|v| u32::try_from(v).ok()),
        dp_size: info.dp_size.and_then(|v| u32::try_from(v).ok()),
        enable_dp_attention: info.enable_dp_attention,
        mem_fraction_static: info.mem_fraction_static,
        max_total_num_tokens: info.kv_capacity_tokens().or(info.max_total_num_tokens),
        max_running_requests: info.max_running_requests,
        chunked_prefill_size: info.chunked_prefill_size,
        kv_cache_dtype: info.kv_cache_dtype.clone(),
        enable_hierarchical_cache: info.enable_hierarchical_cache,
        hicache_ratio: info.hicache_ratio,
        hicache_size_gb: info.hicache_size,
        page_size: info.page_size.and_then(|v| u32::try_from(v).ok()),
        last_gen_throughput: (!tput.is_empty()).then(|| tput.iter().sum()),
    }
}

/// GPU facts from a snapshot (NVML or a copied nvidia-smi file).
pub fn gpu_facts(s: &GpuSnapshot, source: &str) -> GpuFacts {
    GpuFacts {
        source: source.to_string(),
        devices: s
            .devices
            .iter()
            .map(|d| GpuMemory {
                index: d.index,
                name: d.name.clone(),
                total_bytes: d.memory_total_bytes,
                free_bytes: Some(d.memory_free_bytes),
            })
            .collect(),
    }
}

/// Read a saved `/server_info` JSON file into the context.
pub fn add_server_info_file(ctx: &mut Context, path: &Path) {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => match ServerInfo::from_json_str(&text) {
            Ok(info) => ctx.server = Some(server_facts(&info, &name)),
            Err(e) => ctx
                .source_errors
                .push(format!("{name}: not a server info payload: {e}")),
        },
        Err(e) => ctx.source_errors.push(format!("{name}: {e}")),
    }
}

/// Read a copied nvidia-smi output into the context.
pub fn add_gpu_snapshot_file(ctx: &mut Context, path: &Path) {
    let name = path.display().to_string();
    match gpu_probe::read_snapshot_file(path) {
        Ok(s) => ctx.gpu = Some(gpu_facts(&s, &name)),
        Err(e) => ctx.source_errors.push(format!("GPU snapshot {name}: {e}")),
    }
}

/// Probe this machine's GPUs (NVML) into the context; no GPU is not an error.
pub fn add_gpu_probe(ctx: &mut Context) {
    match gpu_probe::probe() {
        Ok(s) => ctx.gpu = Some(gpu_facts(&s, "NVML")),
        Err(GpuError::GpuUnavailable { reason }) => ctx.gpu_unavailable = Some(reason),
        Err(e) => ctx.gpu_unavailable = Some(e.to_string()),
    }
}

/// Read a Hugging Face `config.json`.
pub fn add_model_config(ctx: &mut Context, path: &Path) {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => match kv_capacity::ModelConfig::from_hf_json(&text) {
            Ok(config) => {
                ctx.model = Some(ModelFacts {
                    source: name,
                    config,
                })
            }
            Err(e) => ctx.model_error = Some(format!("{name}: {e}")),
        },
        Err(e) => ctx.model_error = Some(format!("{name}: {e}")),
    }
}

/// Read client records or a client progress log.
pub fn add_client_file(ctx: &mut Context, path: &Path) {
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            ctx.clients.push(diagnosis::parse_client(name, &text));
        }
        Err(e) => ctx.source_errors.push(format!("client file {name}: {e}")),
    }
}

/// Host memory from `/proc/meminfo`, when readable (for the HiCache check).
pub fn add_host_meminfo(ctx: &mut Context) {
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        ctx.host_meminfo = kv_capacity::MemInfo::parse(&text).ok();
    }
}

/// Fetch server info (and check `/metrics` answers) from a live server.
pub fn add_server_url(ctx: &mut Context, url: &str) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            ctx.source_errors.push(format!(
                "server {url}: could not start the async runtime: {e}"
            ));
            return;
        }
    };
    let cfg = sglang_client::ClientConfig::new(url).api_key_from_env(sglang_client::API_KEY_ENV);
    let client = match sglang_client::SglangClient::new(cfg) {
        Ok(c) => c,
        Err(e) => {
            ctx.source_errors.push(format!("server {url}: {e}"));
            return;
        }
    };
    match rt.block_on(client.server_info()) {
        Ok(info) => ctx.server = Some(server_facts(&info, url)),
        Err(e) => ctx.source_errors.push(format!("server {url}: {e}")),
    }
}
