//! Runs the simulated SGLang server standalone.
//!
//! `sglang-sim --port 30000 --log /tmp/sim.log` (scheduled mode), or
//! `sglang-sim --near-zero --port 30001` for client benchmarks.
//! `--metrics-generation old|new` picks the generation of `/metrics` names (default new),
//! `--device-timer` what `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1` adds.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use sglang_sim::{FaultConfig, MetricsGeneration, Mode, SimConfig};

/// mimalloc: in `--near-zero` benchmarks the simulator's per-request
/// allocations (JSON values, the answer) otherwise cap the client's req/s.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Simulated SGLang server (127.0.0.1 only).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Port on 127.0.0.1 (0 = random; the bound address is printed).
    #[arg(long, default_value_t = 30000)]
    port: u16,
    /// Append SGLang-format Prefill/Decode batch lines to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Answer at once with a fixed completion (load tests, benchmarks).
    #[arg(long)]
    near_zero: bool,
    /// KV pool capacity, tokens.
    #[arg(long, default_value_t = 116_171)]
    kv_tokens: u64,
    /// Multiplier on modelled durations (1.0 = the model's seconds).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Mean completion length, tokens.
    #[arg(long, default_value_t = 256)]
    completion_mean: u32,
    /// Probability of an injected HTTP 500.
    #[arg(long, default_value_t = 0.0)]
    p500: f64,
    /// Probability of an injected HTTP 429.
    #[arg(long, default_value_t = 0.0)]
    p429: f64,
    /// Probability of a connection reset mid-body.
    #[arg(long, default_value_t = 0.0)]
    preset: f64,
    /// Probability of malformed JSON.
    #[arg(long, default_value_t = 0.0)]
    pmalformed: f64,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Data-parallel ranks (one scheduler each; `dp_rank` labels).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    dp: u32,
    /// Run a fleet instead: a comma-separated list of kv-bound, cap-bound,
    /// idle; each member gets its own port from `--port` up (0 = random),
    /// its built-in client, and `instance` labels.
    #[arg(long, value_delimiter = ',')]
    fleet: Vec<String>,
    /// Which SGLang `/metrics` names to write: `old` (v0.5.9: cache_config_info,
    /// gpu_execution_seconds_total, no is_streaming) or `new` (main: page_size/num_pages,
    /// forward_execution_seconds_total, fwd_occupancy, the scheduler's idle/CPU/stage
    /// counters, prefill_effective_tokens_total, is_streaming). The figures are the same.
    #[arg(long, default_value = "new", value_name = "old|new")]
    metrics_generation: MetricsGeneration,
    /// Count forward-pass seconds and occupancy, as SGLANG_ENABLE_METRICS_DEVICE_TIMER=1 does
    /// (without it the timer's counter stays at zero and occupancy is NaN).
    #[arg(long)]
    device_timer: bool,
}

fn preset(name: &str) -> Option<SimConfig> {
    Some(match name {
        "kv-bound" => SimConfig::kv_bound(),
        "cap-bound" => SimConfig::running_cap_bound(),
        "idle" => SimConfig::nearly_idle(),
        _ => return None,
    })
}

async fn run_fleet(a: &Args) {
    let mut cfgs = Vec::new();
    for (i, name) in a.fleet.iter().enumerate() {
        let Some(mut c) = preset(name) else {
            eprintln!("sglang-sim: --fleet {name}: not one of kv-bound, cap-bound, idle");
            std::process::exit(2);
        };
        c.port = if a.port == 0 {
            0
        } else {
            a.port.saturating_add(i as u16)
        };
        c.dp_size = a.dp;
        c.seed = a.seed + i as u64;
        c.metrics_generation = a.metrics_generation;
        c.device_timer = a.device_timer;
        cfgs.push(c);
    }
    match sglang_sim::spawn_fleet(cfgs).await {
        Ok(hs) => {
            for (h, name) in hs.iter().zip(&a.fleet) {
                println!("sglang-sim {name} listening on {}", h.base_url());
            }
            let _ = tokio::signal::ctrl_c().await;
            for h in hs {
                h.shutdown().await;
            }
        }
        Err(e) => {
            eprintln!("sglang-sim: {e}");
            std::process::exit(1);
        }
    }
}

#[tokio::main]
async fn main() {
    let a = Args::parse();
    if !a.fleet.is_empty() {
        run_fleet(&a).await;
        return;
    }
    let mut cfg = if a.near_zero {
        SimConfig::near_zero()
    } else {
        SimConfig::default()
    };
    cfg.port = a.port;
    cfg.log_path = a.log;
    cfg.kv_tokens = a.kv_tokens;
    cfg.time_scale = a.time_scale;
    if !a.near_zero {
        cfg.mode = Mode::Scheduled;
        cfg.completion_tokens_mean = a.completion_mean;
    }
    cfg.seed = a.seed;
    cfg.dp_size = a.dp;
    cfg.metrics_generation = a.metrics_generation;
    cfg.device_timer = a.device_timer;
    cfg.faults = FaultConfig {
        p_500: a.p500,
        p_429: a.p429,
        p_reset_mid_stream: a.preset,
        p_malformed_json: a.pmalformed,
        seed: a.seed,
        slow_first_byte: Duration::from_millis(200),
        ..FaultConfig::default()
    };
    match sglang_sim::spawn(cfg).await {
        Ok(h) => {
            println!("sglang-sim listening on {}", h.base_url());
            let stop = tokio::signal::ctrl_c();
            tokio::select! {
                _ = stop => {}
            }
            h.shutdown().await;
        }
        Err(e) => {
            eprintln!("sglang-sim: {e}");
            std::process::exit(1);
        }
    }
}
