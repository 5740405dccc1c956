//! Parse throughput of `sglang-log` (bytes/s via `Throughput::Bytes`; lines/s is printed once per
//! input as `lines/s = bytes/s ÷ mean line length`) and the full `diagnose` pipeline.
//!
//! Inputs:
//! - `generated`: a deterministic synthetic log (seeded generator below, same mix of lines as
//!   `tools/gen_sglang_log.py`: 12% prefill, 73% decode, 12% HTTP access, 2% retraction, 1%
//!   traceback), `BENCH_GEN_MB` MiB (default 16); or the file named by `BENCH_LOG`.
//! - every file in `tests/data/real`, `tests/data/real-long` and `tests/data/scenarios/*/server.log`,
//!   concatenated per directory (single files are too small to time alone).
//!
//! `cargo bench --bench parse` (add `-- --quick` for a fast pass). Target dir: see README.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sglang_log::{Event, LogReader, parse_line};
use std::hint::black_box;
use std::path::{Path, PathBuf};

/// SplitMix64: a tiny seeded generator, so the bench needs no extra dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A synthetic SGLang log of about `bytes` bytes (deterministic for `seed`).
fn generate(bytes: usize, seed: u64) -> Vec<u8> {
    use std::fmt::Write;
    let mut rng = Rng(seed);
    let mut out = String::with_capacity(bytes + 512);
    let cap = 116_171u64;
    let (mut running, mut queue, mut used) = (0u64, 150u64, 0u64);
    let mut ms: u64 = 0;
    let tags = ["TP0", "TP0", "DP0 TP0", "DP1 TP4"];
    while out.len() < bytes {
        ms += rng.range(200, 1500);
        let s = ms / 1000;
        let (y, mo, d) = civil(20_468 + s / 86_400); // 2026-01-15 + elapsed days
        let ts = format!(
            "{y}-{mo:02}-{d:02} {:02}:{:02}:{:02}",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60
        );
        let tag = tags[rng.range(0, 3) as usize];
        let r = rng.unit();
        if r < 0.12 {
            let new = rng.range(1, 8);
            running = (running + new).min(160);
            queue = queue.saturating_sub(new) + rng.range(0, 6);
            used = cap.min(used + new * rng.range(150, 900));
            let _ = write!(
                out,
                "[{ts} {tag}] Prefill batch. #new-seq: {new}, #new-token: {}, #cached-token: {}, token usage: {:.2}, #running-req: {running}, #queue-req: {queue}",
                new * rng.range(100, 900),
                rng.range(0, 4000),
                used as f64 / cap as f64
            );
            if rng.unit() < 0.5 {
                let _ = write!(
                    out,
                    ", #pending-token: {}, input throughput (token/s): {:.2}",
                    rng.range(0, 9000),
                    500.0 + rng.unit() * 29_500.0
                );
            }
        } else if r < 0.85 {
            let done = rng.range(0, 2);
            running = running.saturating_sub(done);
            used = cap.min((used + running * 40).saturating_sub(done * 4000));
            let sep = if rng.unit() < 0.5 { ',' } else { '.' };
            let _ = write!(
                out,
                "[{ts} {tag}] Decode batch{sep} #running-req: {running}, #token: {used}, token usage: {:.2}, ",
                used as f64 / cap as f64
            );
            if rng.unit() < 0.3 {
                let _ = write!(out, "accept len: {:.2}, ", 1.5 + rng.unit() * 2.5);
            }
            let graph = if rng.unit() < 0.5 { "True" } else { "False" };
            let _ = write!(
                out,
                "cuda graph: {graph}, gen throughput (token/s): {:.2}, #queue-req: {queue}",
                600.0 + rng.unit() * 800.0
            );
            if sep == ',' {
                out.push_str(", ");
            }
        } else if r < 0.97 {
            let _ = write!(
                out,
                "[{ts}] INFO:     192.0.2.{}:{} - \"POST /generate HTTP/1.1\" 200 OK",
                rng.range(1, 254),
                rng.range(30_000, 60_000)
            );
        } else if r < 0.99 {
            let _ = write!(
                out,
                "[{ts} {tag}] KV cache pool is full. Retract requests. #retracted_reqs: {}, #new_token_ratio: 0.4213 -> 0.6000",
                rng.range(1, 9)
            );
        } else {
            out.push_str("Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py\", line 2974, in run\nRuntimeError: CUDA error: an illegal memory access was encountered");
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// (year, month, day) of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil(z: u64) -> (u64, u64, u64) {
    let z = z + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + u64::from(m <= 2), m, d)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Concatenates the `.log` files of `dir` (sorted), or the `server.log` of each scenario.
fn concat_dir(dir: &Path, only: Option<&str>) -> Vec<u8> {
    let mut files: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        match only {
            Some(name) if p.is_dir() => files.push(p.join(name)),
            None if p.extension().is_some_and(|x| x == "log") => files.push(p),
            _ => {}
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        if let Ok(b) = std::fs::read(&f) {
            out.extend_from_slice(&b);
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
        }
    }
    out
}

/// Full-field aggregate over every record: what `bench-parse` times.
fn aggregate(data: &[u8]) -> (u64, u64, u64, f64) {
    let mut reader = LogReader::from_reader("bench", data);
    let (mut peak_running, mut peak_queue, mut gen_sum, mut stamped) = (0u64, 0u64, 0.0f64, 0u64);
    let stats = reader
        .for_each(|rec| {
            stamped += u64::from(rec.timestamp.is_some());
            if let Event::Batch(b) = &rec.event {
                peak_running = peak_running.max(b.running_req().unwrap_or(0));
                peak_queue = peak_queue.max(b.queue_req().unwrap_or(0));
                gen_sum += b.gen_throughput().unwrap_or(0.0) + b.token_usage().unwrap_or(0.0);
            }
        })
        .unwrap_or_default();
    (stats.lines + stamped, peak_running, peak_queue, gen_sum)
}

fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    if let Some(p) = std::env::var_os("BENCH_LOG") {
        match std::fs::read(&p) {
            Ok(b) => v.push(("file".to_string(), b)),
            Err(e) => eprintln!(
                "BENCH_LOG {}: {e}; using the generated log",
                p.to_string_lossy()
            ),
        }
    }
    if v.is_empty() {
        let mb: usize = std::env::var("BENCH_GEN_MB")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(16);
        v.push(("generated".to_string(), generate(mb << 20, 7)));
    }
    let data = root().join("tests/data");
    v.push(("real".into(), concat_dir(&data.join("real"), None)));
    v.push((
        "real-long".into(),
        concat_dir(&data.join("real-long"), None),
    ));
    v.push((
        "scenarios".into(),
        concat_dir(&data.join("scenarios"), Some("server.log")),
    ));
    v.retain(|(_, b)| !b.is_empty());
    v
}

fn parse_benches(c: &mut Criterion) {
    for (name, data) in inputs() {
        let lines = data.iter().filter(|&&b| b == b'\n').count().max(1);
        eprintln!(
            "{name}: {} bytes, {lines} lines, {:.1} bytes/line (lines/s = bytes/s ÷ this)",
            data.len(),
            data.len() as f64 / lines as f64
        );
        let mut g = c.benchmark_group(format!("parse/{name}"));
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function("reader+aggregate", |b| {
            b.iter(|| black_box(aggregate(black_box(&data))))
        });
        g.bench_function("parse_line", |b| {
            b.iter(|| {
                let mut n = 0usize;
                for (i, line) in data.split(|&c| c == b'\n').enumerate() {
                    let rec = parse_line(black_box(line), i as u64 + 1);
                    n += usize::from(matches!(rec.event, Event::Batch(_)));
                }
                black_box(n)
            })
        });
        g.finish();
        // lines/s as its own throughput figure
        let mut g = c.benchmark_group(format!("lines/{name}"));
        g.throughput(Throughput::Elements(lines as u64));
        g.bench_function("reader+aggregate", |b| {
            b.iter(|| black_box(aggregate(black_box(&data))))
        });
        g.finish();
    }
}

fn diagnose_bench(c: &mut Criterion) {
    let path = root().join("tests/data/scenarios/kimi-k25-b2/server.log");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut g = c.benchmark_group("diagnose");
    g.throughput(Throughput::Bytes(size));
    g.sample_size(20);
    g.bench_function("kimi-k25-b2/server.log", |b| {
        b.iter(|| {
            let args = throughput_doctor_cli::DiagnoseArgs {
                logs: vec![path.clone()],
                ..Default::default()
            };
            black_box(throughput_doctor_cli::diagnose(&args).is_ok())
        })
    });
    g.finish();
}

criterion_group!(benches, parse_benches, diagnose_bench);
criterion_main!(benches);
