//! Prints what `sglang-log` makes of a log file: line counts per event kind, the peaks of the
//! batch lines, and the first malformed lines.
//!
//! `cargo run -p sglang-log --example count -- tests/data/real/001-i938-a100-llama13b-queue12k.log`
//! (`-` reads stdin; `.gz` files are detected).

use sglang_log::{Event, LogReader};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: count <log file | - | file.gz>...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for a in args {
        let path = PathBuf::from(&a);
        let mut reader = match LogReader::open(&path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                continue;
            }
        };
        let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
        let (mut peak_running, mut peak_queue, mut max_usage) =
            (None::<u64>, None::<u64>, None::<f64>);
        let t0 = Instant::now();
        let res = reader.for_each(|rec| {
            *kinds.entry(rec.event.name()).or_default() += 1;
            if let Event::Batch(b) = &rec.event {
                peak_running = peak_running.max(b.running_req());
                peak_queue = peak_queue.max(b.queue_req());
                if let Some(u) = b.token_usage() {
                    max_usage = Some(max_usage.map_or(u, |m: f64| m.max(u)));
                }
            }
        });
        let secs = t0.elapsed().as_secs_f64();
        match res {
            Ok(stats) => {
                println!("{a}");
                println!(
                    "  lines {}  bytes {}  events {}  batch {} (prefill {}, decode {})  retraction {}  other {}  malformed {}  partial {}",
                    stats.lines,
                    stats.bytes,
                    stats.events,
                    stats.batch_lines,
                    stats.prefill_lines,
                    stats.decode_lines,
                    stats.retraction_lines,
                    stats.other_lines,
                    stats.malformed_lines,
                    stats.partial_batch_lines
                );
                println!("  by kind: {kinds:?}");
                let show = |v: Option<String>| v.unwrap_or_else(|| "null".into());
                println!(
                    "  peak #running-req {}  max token usage {}  max #queue-req {}",
                    show(peak_running.map(|v| v.to_string())),
                    show(max_usage.map(|v| format!("{v:.2}"))),
                    show(peak_queue.map(|v| v.to_string()))
                );
                println!(
                    "  parsed in {:.3} s ({:.0} MB/s)",
                    secs,
                    stats.bytes as f64 / 1e6 / secs.max(1e-9)
                );
                for m in stats.malformed.iter().take(5) {
                    println!(
                        "  malformed line {}: {}: {}",
                        m.line_no, m.reason, m.excerpt
                    );
                }
                for m in stats.partial.iter().take(5) {
                    println!("  partial line {}: {}", m.line_no, m.excerpt);
                }
            }
            Err(e) => {
                eprintln!("{e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
