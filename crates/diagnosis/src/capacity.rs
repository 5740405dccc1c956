//! The KV capacity model: SGLang's pool formula calibrated on the running server
//! (`kv-capacity`), its what-if table checked against the free memory, and the HiCache verdict.

use kv_capacity::{
    CapacityInput, GIB, Headroom, HiCacheInput, HiCacheSizing, InFlightLoad, KvDtype,
    ParallelConfig, PoolModel, PreSource,
};

use crate::context::Context;
use crate::error::WhatIfUnavailable;
use crate::evidence::Evidence;
use crate::report::{CapacityModel, CapacitySummary};

/// Where the GPU memory figures of the model came from.
#[derive(Clone, Debug, PartialEq)]
pub enum MemorySource {
    /// The GPU's total memory from NVML or a copied `nvidia-smi` (the source's name).
    GpuTotal(String),
    /// `avail mem + mem usage` of the log's `Load weight end` line.
    LoadWeightLine,
    /// The log's `available_gpu_mem` after CUDA graph capture, of which a change must leave
    /// what runs with prefill chunks of this many tokens were seen to need (GiB).
    LogAvailableAfterGraphs {
        /// What a change must leave to be called likely to fit, GiB.
        need_gib: f64,
        /// The prefill chunk it assumes (tokens).
        chunk_tokens: u64,
        /// Whether the chunk is the configured `chunked_prefill_size` (else SGLang's default).
        chunk_configured: bool,
    },
    /// The minimum free memory of a GPU snapshot taken while the server runs (the source's name).
    GpuFree(String),
}

/// The prefill chunk assumed when the log and server info do not give one (tokens): SGLang's
/// default `chunked_prefill_size` on large GPUs (`server_args.py`).
pub const DEFAULT_CHUNK_TOKENS: u64 = 8192;

/// The capacity model and where its memory figures came from.
#[derive(Clone, Debug)]
pub struct Built {
    /// The model (its `pre_source` / `free_now_source` words are filled by `narrative`).
    pub model: CapacityModel,
    /// Where `pre` came from.
    pub pre: MemorySource,
    /// Where the free memory came from.
    pub free_now: Option<MemorySource>,
    /// Where the bytes per token came from.
    pub cell: CellSource,
}

/// Where the bytes per token (the KV cell) came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellSource {
    /// The model config, and the log agrees (or says nothing).
    ModelConfig,
    /// The log's KV allocation line (no model config).
    Log,
    /// The log's: the model config gives another size, so it is not this server's model.
    LogDisagreesWithConfig {
        /// Bytes per token from the config.
        config: u64,
        /// Bytes per token from the log.
        log: u64,
    },
}

/// The config's and the log's bytes per token agree within this fraction (the log rounds the
/// pool to 0.01 GiB).
pub const CELL_AGREES: f64 = 0.02;

/// Parallel layout from server facts or the log's server args.
pub fn parallel(ev: &Evidence, ctx: &Context) -> ParallelConfig {
    let arg = |k: &str| {
        ev.startup
            .server_args
            .get(k)
            .and_then(|v| v.parse::<u32>().ok())
    };
    let srv = ctx.server.as_ref();
    let tp = srv
        .and_then(|s| s.tp_size)
        .or_else(|| arg("tp_size"))
        .unwrap_or(1)
        .max(1);
    let dp = srv
        .and_then(|s| s.dp_size)
        .or_else(|| arg("dp_size"))
        .unwrap_or(1)
        .max(1);
    let dp_attn = srv
        .and_then(|s| s.enable_dp_attention)
        .or_else(|| {
            ev.startup
                .server_args
                .get("enable_dp_attention")
                .map(|v| v == "True" || v == "true")
        })
        .unwrap_or(false);
    let mut p = ParallelConfig::tp(tp);
    p.pp_size = arg("pp_size").unwrap_or(1).max(1);
    if dp_attn && dp > 1 {
        p.attn_tp_size = Some((tp / dp).max(1));
    }
    p
}

/// Build the KV capacity model and its what-if table.
///
/// `observed_held`: the KV tokens each running request held on the steady decode lines of a
/// scheduler whose pool is full (tokens), for the decode concurrency of each row when the
/// client's records give no requests' lengths (`InFlightLoad::observed`); records win.
///
/// # Errors
/// [`WhatIfUnavailable`] naming the missing fact (model config, `mem_fraction_static`, pool
/// size, GPU memory) or what `kv-capacity` refused.
pub fn capacity_model(
    ev: &Evidence,
    ctx: &Context,
    cap: &CapacitySummary,
    cached_share: Option<f64>,
    observed_held: Option<f64>,
) -> Result<Built, WhatIfUnavailable> {
    let model = ctx.model.as_ref();
    // Bytes per token from the log's `KV Cache is allocated. #tokens: N, K size: a GB, V size:
    // b GB` line (SGLang's "GB" is GiB): the running server's own cell, rounded to 0.01 GiB.
    let log_cell = match (ev.startup.kv_alloc_gb, ev.startup.kv_alloc_tokens) {
        (Some(gb), Some(n)) if n > 0 && gb > 0.0 => Some((gb * GIB / n as f64).round() as u64),
        _ => None,
    };
    if model.is_none() && log_cell.is_none() {
        return Err(WhatIfUnavailable::NoModelConfig);
    }
    let fraction = cap
        .mem_fraction_static
        .ok_or(WhatIfUnavailable::NoMemFraction)?;
    let tokens = cap
        .max_total_num_tokens
        .ok_or(WhatIfUnavailable::NoPoolSize)?;
    let par = parallel(ev, ctx);
    let kv_dtype_s = ctx
        .server
        .as_ref()
        .and_then(|s| s.kv_cache_dtype.clone())
        .or_else(|| ev.startup.server_args.get("kv_cache_dtype").cloned())
        .unwrap_or_else(|| "auto".into());
    let kv_dtype = KvDtype::from_sglang(&kv_dtype_s)?;
    let config_cell = match model {
        Some(m) => Some(kv_capacity::cell_size_bytes(&m.config, &par, kv_dtype)?.bytes),
        None => None,
    };
    // The config's exact figure when it agrees with the log (within its 0.01 GiB rounding and
    // a margin), the log's when they disagree: the config then describes another model.
    let (cell_bytes, cell_source) = match (config_cell, log_cell) {
        (Some(c), Some(l)) if (c as f64 - l as f64).abs() > CELL_AGREES * l as f64 => {
            (l, CellSource::LogDisagreesWithConfig { config: c, log: l })
        }
        (Some(c), _) => (c, CellSource::ModelConfig),
        (None, Some(l)) => (l, CellSource::Log),
        (None, None) => return Err(WhatIfUnavailable::NoModelConfig),
    };
    let gpu = ctx.gpu.as_ref();
    // `pre` is SGLang's `total_gpu_memory`: what was free before the weights loaded, after the
    // CUDA context. The log's `Load weight end` line gives it (avail + usage); a GPU's total
    // memory is a little more (the context), so it is the fallback, and one `pre` for every
    // set of inputs that holds the log.
    let (pre_bytes, pre_kind, pre) = match (
        ev.startup.avail_mem_after_weights_gb,
        ev.startup.weights_gb,
        gpu.and_then(|g| g.min_total_bytes()),
    ) {
        (Some(a), Some(w), _) => (
            (a + w) * GIB,
            PreSource::LogLoadWeightLine,
            MemorySource::LoadWeightLine,
        ),
        (_, _, Some(t)) => (
            t as f64,
            PreSource::GpuTotal,
            MemorySource::GpuTotal(gpu.map(|g| g.source.clone()).unwrap_or_default()),
        ),
        _ => return Err(WhatIfUnavailable::NoGpuMemory),
    };
    let pool = PoolModel::calibrated(fraction, tokens, pre_bytes, pre_kind, cell_bytes)?;
    // Free memory under load (a GPU snapshot while requests run) already holds the activation
    // peak; the log's start-up figure must still hold the first large prefill's activations.
    let (headroom, free_src) = match (
        gpu.and_then(|g| g.min_free_bytes()),
        cap.available_gpu_mem_gb,
    ) {
        (Some(b), _) => (
            Some(Headroom::under_load(b as f64)),
            Some(MemorySource::GpuFree(
                gpu.map(|g| g.source.clone()).unwrap_or_default(),
            )),
        ),
        (None, Some(gb)) => {
            let configured = cap.chunked_prefill_size.or(cap.max_prefill_tokens);
            let chunk = configured.unwrap_or(DEFAULT_CHUNK_TOKENS);
            let attn_tp = f64::from(par.attn_tp_size.unwrap_or(par.tp_size).max(1));
            // the calibrated need of this chunk, or a wide model's activation estimate
            let need = kv_capacity::startup_need_bytes(
                chunk,
                model
                    .and_then(|m| m.config.hidden_size)
                    .map(|h| kv_capacity::activation_estimate_bytes(chunk, h) / attn_tp),
            );
            (
                Some(Headroom::after_startup(gb * GIB, need)),
                Some(MemorySource::LogAvailableAfterGraphs {
                    need_gib: need / GIB,
                    chunk_tokens: chunk,
                    chunk_configured: configured.is_some(),
                }),
            )
        }
        _ => (None, None),
    };
    let free_now = headroom.map(|h| h.free_bytes);
    let lengths: Vec<(u64, u64)> = ctx.clients.iter().flat_map(|c| c.lengths()).collect();
    let input = CapacityInput {
        model: model.map(|m| m.config.clone()),
        parallel: par,
        kv_dtype,
        mem_fraction_static: fraction,
        pool: pool.clone(),
        headroom,
        load: InFlightLoad::from_samples(&lengths)
            .ok()
            .or_else(|| observed_held.and_then(|h| InFlightLoad::observed(h).ok())),
        gpus_on_host: gpu.map(|g| g.devices.len() as u32),
        max_total_tokens: ev
            .startup
            .server_args
            .get("max_total_tokens")
            .and_then(|v| v.parse::<u64>().ok()),
    };
    Ok(Built {
        model: CapacityModel {
            tp_size: par.tp_size,
            cell_bytes,
            pre_gib: pre_bytes / GIB,
            pre_source: String::new(),
            free_now_gib: free_now.map(|b| b / GIB),
            free_now_source: None,
            tokens_per_hundredth: pool.tokens_per_hundredth(),
            what_if: kv_capacity::what_if(&input),
            hicache: hicache(ev, ctx, tokens, cell_bytes, par, cached_share),
        },
        pre,
        free_now: free_src,
        cell: cell_source,
    })
}

/// The HiCache verdict for the server's `hicache_size` / `hicache_ratio` (SGLang defaults: ratio
/// 2 when no size is given).
fn hicache(
    ev: &Evidence,
    ctx: &Context,
    device_tokens: u64,
    cell_bytes: u64,
    par: ParallelConfig,
    cached_share: Option<f64>,
) -> Option<kv_capacity::HiCacheVerdict> {
    let arg_f = |k: &str| {
        ev.startup
            .server_args
            .get(k)
            .and_then(|v| v.parse::<f64>().ok())
    };
    let srv = ctx.server.as_ref();
    let size = srv
        .and_then(|s| s.hicache_size_gb)
        .or_else(|| arg_f("hicache_size"))
        .unwrap_or(0.0);
    let ratio = srv
        .and_then(|s| s.hicache_ratio)
        .or_else(|| arg_f("hicache_ratio"))
        .unwrap_or(2.0);
    let ranks = (par.tp_size * par.pp_size).max(1);
    let ranks_on_host = ctx
        .gpu
        .as_ref()
        .map(|g| (g.devices.len() as u32).max(1))
        .unwrap_or(ranks)
        .min(ranks);
    kv_capacity::hicache_verdict(&HiCacheInput {
        sizing: HiCacheSizing::from_server_args(size, ratio),
        device_pool_tokens: device_tokens,
        host_bytes_per_token: cell_bytes,
        ranks_on_host,
        page_size: srv.and_then(|s| s.page_size).unwrap_or(1),
        cached_token_share: cached_share,
        meminfo: ctx.host_meminfo,
    })
    .ok()
}
