//! Every record of a log as one text line: the envelope, the event, and for a batch line every
//! typed accessor's value and every set-aside field, then the read's counts. Two builds'
//! dumps of the same files compare the parsers line for line (a change to the parser must
//! leave them equal, or say why a line now reads differently).
//!
//! `cargo run --release -p sglang-log --example dump -- LOG... > dump.txt`

use sglang_log::{BatchLine, Event, LogReader};
use std::io::{BufWriter, Write};
use std::process::ExitCode;

/// The typed values of a batch line, in a fixed order (`{:?}` of each, bit-exact floats).
fn typed(b: &BatchLine<'_>) -> String {
    let f = |x: Option<f64>| format!("{:?}", x.map(f64::to_bits));
    // the combined accessor says what the two say (on stderr when not: a bug)
    if b.graph_flag() != b.graph_device().map(|d| (d, b.graph())) {
        eprintln!(
            "graph_flag disagrees: {:?} in {:?}",
            b.graph_flag(),
            b.text()
        );
    }
    [
        format!("{:?}", b.running_req()),
        format!("{:?}", b.queue_req()),
        format!("{:?}", b.num_token()),
        format!("{:?}", b.num_swa_token()),
        f(b.token_usage()),
        f(b.swa_token_usage()),
        format!("{:?}", b.mamba_num()),
        f(b.mamba_usage()),
        f(b.gen_throughput()),
        f(b.input_throughput()),
        format!("{:?}", b.new_seq()),
        format!("{:?}", b.new_token()),
        format!("{:?}", b.cached_token()),
        f(b.cache_hit_rate()),
        format!("{:?}", b.pending_token()),
        f(b.accept_len()),
        f(b.accept_rate()),
        format!("{:?}", b.graph()),
        format!("{:?}", b.graph_device()),
        f(b.pre_allocated_usage()),
        format!("{:?}", b.prealloc_req()),
        format!("{:?}", b.bootstrap_req()),
        format!("{:?}", b.transfer_req()),
        format!("{:?}", b.retracted_req()),
        format!("{:?}", b.inflight_req()),
        format!("{:?}", b.optimistic_req()),
        format!("{:?}", b.waiting_image_req()),
        f(b.cap_len()),
        format!("{:?}", b.fwd_occupancy()),
        f(b.est_tflops_per_gpu()),
        f(b.est_read_bw_gbps()),
        f(b.est_write_bw_gbps()),
        format!("{:?}", b.timestamp_field()),
        format!("{:?}", b.rejected_fields().collect::<Vec<_>>()),
        format!(
            "n={} overflow={} broken={}",
            b.field_count(),
            b.overflow_fields(),
            b.broken_fields()
        ),
    ]
    .join(" ")
}

fn main() -> ExitCode {
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut code = ExitCode::SUCCESS;
    for path in std::env::args().skip(1) {
        let _ = writeln!(out, "== {path}");
        let mut reader = match LogReader::open(std::path::Path::new(&path)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                code = ExitCode::FAILURE;
                continue;
            }
        };
        let res = reader.for_each(|rec| {
            let _ = write!(
                out,
                "{} {:?} {:?} {:?} {:?}",
                rec.line_no, rec.timestamp, rec.ranks, rec.message, rec.event
            );
            if let Event::Batch(b) = &rec.event {
                let _ = write!(out, " | {}", typed(b));
            }
            let _ = writeln!(out);
        });
        match res {
            Ok(stats) => {
                let _ = writeln!(out, "stats {stats:?}");
            }
            Err(e) => {
                let _ = writeln!(out, "error {e}");
            }
        }
    }
    code
}
