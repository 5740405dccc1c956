//! Full-field parse + aggregate of a log, the workload `cargo xtask bench-parse` times: every
//! line is parsed with [`sglang_log::LogReader`]; batch lines contribute peak `#running-req`,
//! peak `#queue-req`, peak `token usage`, the sum of `gen throughput (token/s)` and the peak
//! `#token`; timestamps and rank tags are read for every line.
//!
//! `cargo run --release -p sglang-log --example aggregate -- LOG...`
//! Prints one line per file: `lines batch decode prefill other malformed peak_running
//! peak_queue peak_usage peak_token gen_sum seconds MB/s`.

use sglang_log::{Event, LogReader};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Default)]
struct Agg {
    peak_running: u64,
    peak_queue: u64,
    peak_token: u64,
    peak_usage: f64,
    gen_sum: f64,
    gen_n: u64,
    stamped: u64,
    ranked: u64,
    last_secs: f64,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: aggregate <log file | - | file.gz>...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for a in args {
        let t0 = Instant::now();
        let mut reader = match LogReader::open(&PathBuf::from(&a)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                continue;
            }
        };
        let mut g = Agg::default();
        let res = reader.for_each(|rec| {
            if let Some(t) = &rec.timestamp {
                g.stamped += 1;
                g.last_secs = t.seconds();
            }
            if rec.ranks.tp.is_some() {
                g.ranked += 1;
            }
            if let Event::Batch(b) = &rec.event {
                g.peak_running = g.peak_running.max(b.running_req().unwrap_or(0));
                g.peak_queue = g.peak_queue.max(b.queue_req().unwrap_or(0));
                g.peak_token = g.peak_token.max(b.num_token().unwrap_or(0));
                g.peak_usage = g.peak_usage.max(b.token_usage().unwrap_or(0.0));
                if let Some(x) = b.gen_throughput() {
                    g.gen_sum += x;
                    g.gen_n += 1;
                }
            }
        });
        let secs = t0.elapsed().as_secs_f64();
        match res {
            Ok(s) => println!(
                "{a}: lines {} batch {} decode {} prefill {} other {} malformed {} stamped {} tp-ranked {} \
                 peak_running {} peak_queue {} peak_usage {:.2} peak_token {} gen_mean {:.2} last_ts {:.0} \
                 {:.3} s {:.0} MB/s",
                s.lines,
                s.batch_lines,
                s.decode_lines,
                s.prefill_lines,
                s.other_lines,
                s.malformed_lines,
                g.stamped,
                g.ranked,
                g.peak_running,
                g.peak_queue,
                g.peak_usage,
                g.peak_token,
                g.gen_sum / g.gen_n.max(1) as f64,
                g.last_secs,
                secs,
                s.bytes as f64 / 1e6 / secs.max(1e-9)
            ),
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
