//! Full-field parse + aggregate of a log, the workload `cargo xtask bench-parse` times: every
//! line is parsed with [`sglang_log::LogReader`]; batch lines contribute peak `#running-req`,
//! peak `#queue-req`, peak `token usage`, the sum of `gen throughput (token/s)` and the peak
//! `#token`; timestamps and rank tags are read for every line.
//!
//! `cargo run --release -p sglang-log --example aggregate -- [--threads N] LOG...` (with
//! `--threads N` each plain file is split at line boundaries and parsed on N threads,
//! `sglang_log::parallel`; the chunks' aggregates are merged in file order).
//! Prints one line per file: `lines batch decode prefill other malformed peak_running
//! peak_queue peak_usage peak_token gen_sum seconds MB/s`.

use sglang_log::parallel::{merged_stats, parse_file_parallel};
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

impl Agg {
    /// One record's contribution.
    fn add(&mut self, rec: &sglang_log::Record<'_>) {
        let g = self;
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
    }

    /// Appends the aggregate of a later chunk of the same file.
    fn merge(&mut self, o: &Agg) {
        self.peak_running = self.peak_running.max(o.peak_running);
        self.peak_queue = self.peak_queue.max(o.peak_queue);
        self.peak_token = self.peak_token.max(o.peak_token);
        self.peak_usage = self.peak_usage.max(o.peak_usage);
        self.gen_sum += o.gen_sum;
        self.gen_n += o.gen_n;
        self.stamped += o.stamped;
        self.ranked += o.ranked;
        if o.stamped > 0 {
            self.last_secs = o.last_secs;
        }
    }
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--threads N`: split each plain file at line boundaries and parse the chunks on N threads
    let mut threads = 1usize;
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        match args.get(i + 1).and_then(|n| n.parse().ok()) {
            Some(n) if n >= 1 => threads = n,
            _ => {
                eprintln!("--threads needs a number >= 1");
                return ExitCode::from(2);
            }
        }
        args.drain(i..i + 2);
    }
    if args.is_empty() {
        eprintln!("usage: aggregate [--threads N] <log file | - | file.gz>...");
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
        let res = if threads > 1 {
            drop(reader);
            parse_file_parallel(&PathBuf::from(&a), threads, Agg::default, |g, rec| {
                g.add(rec)
            })
            .map(|chunks| {
                for c in &chunks {
                    g.merge(&c.state);
                }
                merged_stats(&chunks)
            })
        } else {
            reader.for_each(|rec| g.add(rec))
        };
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
