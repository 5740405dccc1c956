//! Client benchmark: requests/s and CPU-seconds per 1,000 requests of the
//! batch runner ([`sglang_client::batch::run_batch`]: JSONL in, bounded
//! concurrency, one JSONL record with timings out per request) against a
//! server, normally `sglang-sim --near-zero` in another process so that only
//! the client's CPU is counted.
//!
//! ```text
//! cargo build --release -p sglang-sim -p sglang-client --example bench_client
//! target/release/sglang-sim --near-zero --port 30001 &
//! target/release/examples/bench_client --url http://127.0.0.1:30001 --requests 50000 --concurrency 256
//! ```
//!
//! Prints one JSON object on stdout: requests, ok, wall_s, req_per_s,
//! cpu_s (user + system of this process, from `/proc/self/stat`, USER_HZ
//! = 100), cpu_s_per_1000_req.

use std::time::Instant;

/// mimalloc: glibc malloc/free was ~15% of this client's CPU per request.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use sglang_client::ClientConfig;
use sglang_client::batch::{BatchConfig, CancelToken, NoProgress, run_batch};

/// User + system CPU seconds of this process (all threads).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the `(comm)`; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // rest starts at field 3 (state), so field n is index n - 3.
    (ticks(14 - 3) + ticks(15 - 3)) / 100.0
}

fn main() {
    let mut url = String::from("http://127.0.0.1:30001");
    let mut requests = 50_000usize;
    let mut concurrency = 256usize;
    let mut stream = false;
    let mut threads = 1usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next();
        match (a.as_str(), v) {
            ("--url", Some(v)) => url = v,
            ("--requests", Some(v)) => requests = v.parse().expect("--requests N"),
            ("--concurrency", Some(v)) => concurrency = v.parse().expect("--concurrency N"),
            ("--threads", Some(v)) => threads = v.parse().expect("--threads N"),
            ("--stream", Some(v)) => stream = v == "1" || v == "true",
            _ => {
                eprintln!(
                    "usage: bench_client --url URL [--requests N] [--concurrency N] [--threads N] [--stream 0|1]"
                );
                std::process::exit(2);
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("bench_client_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("prompts.jsonl");
    let out = dir.join("out.jsonl");
    let mut s = String::with_capacity(requests * 48);
    for i in 0..requests {
        s.push_str(&format!(
            "{{\"id\": \"b{i}\", \"prompt\": \"benchmark prompt number {i}\"}}\n"
        ));
    }
    std::fs::write(&input, s).expect("write prompts");
    let _ = std::fs::remove_file(&out);

    // One thread: a current-thread runtime, so the dispatcher, the request
    // tasks and the writer share a thread and wake each other without futexes.
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    }
    .expect("runtime");
    let mut cfg = BatchConfig::new(ClientConfig::new(url), &input, &out);
    cfg.concurrency = concurrency;
    cfg.stream = stream;
    cfg.params.insert("max_tokens".into(), 8.into());
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    let summary = rt
        .block_on(run_batch(cfg, NoProgress, CancelToken::new()))
        .expect("run_batch");
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    println!(
        "{{\"client\": \"rust\", \"requests\": {requests}, \"ok\": {}, \"failed\": {}, \"concurrency\": {concurrency}, \
         \"stream\": {stream}, \"wall_s\": {wall:.3}, \"req_per_s\": {:.0}, \"cpu_s\": {cpu:.2}, \"cpu_s_per_1000_req\": {:.4}}}",
        summary.ok,
        summary.failed,
        summary.ok as f64 / wall,
        cpu * 1000.0 / requests as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}
