//! Print the what-if table for a model and a running server's figures.
//!
//! ```text
//! cargo run -p kv-capacity --example what_if -- \
//!     tests/data/scenarios/kimi-k25-b2/config.json 8 0.85 116171 97887 5.16
//! #   config.json  tp  mem_fraction_static  max_total_num_tokens  GPU total MiB  available_gpu_mem GB
//! ```
//! Without arguments it uses the kimi-k25-b2 scenario figures above.

use kv_capacity::{
    CapacityInput, GIB, Headroom, KvDtype, ModelConfig, ParallelConfig, PoolModel, PreSource,
    cell_size_bytes, what_if,
};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let default_cfg = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/scenarios/kimi-k25-b2/config.json"
    );
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let config_path = arg(0, default_cfg);
    let tp: u32 = arg(1, "8").parse()?;
    let fraction: f64 = arg(2, "0.85").parse()?;
    let tokens: u64 = arg(3, "116171").parse()?;
    let total_mib: f64 = arg(4, "97887").parse()?;
    let free_gib: f64 = arg(5, "5.16").parse()?;

    let model = ModelConfig::from_hf_json(&std::fs::read_to_string(&config_path)?)?;
    let parallel = ParallelConfig::tp(tp);
    let cell = cell_size_bytes(&model, &parallel, KvDtype::Auto)?;
    let pool = PoolModel::calibrated(
        fraction,
        tokens,
        total_mib * 1_048_576.0,
        PreSource::GpuTotal,
        cell.bytes,
    )?;
    let table = what_if(&CapacityInput {
        model: Some(model),
        parallel,
        kv_dtype: KvDtype::Auto,
        mem_fraction_static: fraction,
        pool,
        // what runs with SGLang's default 8192-token prefill chunk were seen to need
        headroom: Some(Headroom::after_startup(
            free_gib * GIB,
            kv_capacity::startup_need_bytes(8192, None),
        )),
        load: None,
        gpus_on_host: None,
        max_total_tokens: None,
    });
    println!(
        "cell {} B/token ({:?}); {:.0} tokens per +0.01 of mem_fraction_static",
        cell.bytes, cell.kind, table.tokens_per_hundredth
    );
    println!(
        "{:<48} {:>10} {:>9} {:>10} {:>10}  verdict",
        "change", "tokens", "vs now", "extra GiB", "free GiB"
    );
    for r in &table.rows {
        let (verdict, free) = match &r.feasibility {
            Some(f) => (
                format!("{:?}", f.verdict),
                format!("{:.2}", f.free_after_gib),
            ),
            None => ("?".into(), "?".into()),
        };
        println!(
            "{:<48} {:>10} {:>8.1}% {:>10.2} {:>10}  {}",
            r.label, r.pool_tokens, r.change_pct, r.extra_gib_per_gpu, free, verdict
        );
    }
    for a in &table.assumptions {
        println!("assumption: {a}");
    }
    for s in &table.skipped {
        println!("skipped: {s}");
    }
    Ok(())
}
