//! Print a GPU memory snapshot: from NVML, or from an `nvidia-smi` file given as argument.
//!
//! ```text
//! cargo run -p gpu-probe --example snapshot -- tests/data/scenarios/kimi-k25-b2/nvidia-smi.csv
//! cargo run -p gpu-probe --example snapshot            # live, through NVML
//! ```

use std::path::Path;

fn main() {
    let result = match std::env::args().nth(1) {
        Some(p) => gpu_probe::read_snapshot_file(Path::new(&p)),
        None => gpu_probe::probe(),
    };
    let snap = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let gib = gpu_probe::GIB as f64;
    eprintln!(
        "driver {} / CUDA {}",
        snap.driver_version.as_deref().unwrap_or("?"),
        snap.cuda_version.as_deref().unwrap_or("?")
    );
    for d in &snap.devices {
        eprintln!(
            "GPU {} {:<45} {}: total {:.2} GiB, used {:.2} GiB, free {:.2} GiB, {} process(es)",
            d.index,
            d.name,
            d.architecture
                .map_or_else(|| "architecture ?".to_string(), |a| format!("{a:?}")),
            d.memory_total_bytes as f64 / gib,
            d.memory_used_bytes as f64 / gib,
            d.memory_free_bytes as f64 / gib,
            d.processes.len()
        );
    }
    for n in &snap.notes {
        eprintln!("note: {n}");
    }
    match serde_json::to_string_pretty(&snap) {
        Ok(j) => println!("{j}"),
        Err(e) => eprintln!("JSON: {e}"),
    }
}
