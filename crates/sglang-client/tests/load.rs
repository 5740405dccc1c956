//! Loopback load test: 50,000 requests at concurrency 2,000 against the
//! near-zero-latency simulator in the same process, with a memory check.
//!
//! Memory bound: the runner keeps per-request state only while a request is
//! in flight (≤ 2,000) and writes records out as they finish, so resident
//! memory may grow with the concurrency but not with the number of
//! requests. RSS (`VmRSS` of `/proc/self/status`, client and server
//! together) is read when 10,000, 25,000 and 50,000 records are written.
//! Measured (debug build, 2 cores): RSS climbs while connection pools,
//! socket buffers and allocator arenas of both ends fill (to ~190 MiB at
//! 10,000), then creeps by ~5 MiB over the last 25,000 requests as the
//! allocator settles. The test allows 16 MiB over those 25,000 requests: a
//! leak of 700 bytes per request, or keeping each ~450-byte record in
//! memory, would exceed it. The peak must stay under 768 MiB: 2,000
//! connections × 2 ends × up to 96 KiB of buffers and task state each
//! (~375 MiB), twice over for idle pooled connections.

use std::sync::{Arc, Mutex};
use std::time::Instant;

// The real binary runs on mimalloc; glibc's per-thread arenas made this test's RSS wander by
// tens of MiB between runs (one run in eight grew 35 MiB over the last 25,000 requests).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use sglang_client::ClientConfig;
use sglang_client::batch::{BatchConfig, CancelToken, CompletionEvent, ProgressSink, run_batch};
use sglang_sim::SimConfig;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

struct RssAt {
    done: u64,
    at: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl ProgressSink for RssAt {
    fn on_completion(&mut self, _: &CompletionEvent) {
        self.done += 1;
        if [10_000, 25_000, 50_000].contains(&self.done) {
            self.at.lock().unwrap().push((self.done, rss_kib()));
        }
    }
}

/// Raises this process's soft open-file limit towards what 2,000 connections need on both ends
/// (the common default soft limit is 1,024), and returns the concurrency the limit allows: 2,000,
/// or fewer when the hard limit is lower (three descriptors per in-flight request are budgeted:
/// the client socket, the server socket, and slack for pooled spares and files).
fn concurrency_for_fd_limit() -> usize {
    let limit = rlimit::increase_nofile_limit(8_192).unwrap_or(1_024);
    let fit = (limit.saturating_sub(128) / 3) as usize;
    if fit < 2_000 {
        eprintln!("open-file limit {limit}: concurrency {fit} instead of 2,000");
    }
    fit.clamp(16, 2_000)
}

async fn one_batch(
    sim: &sglang_sim::SimHandle,
    dir: &std::path::Path,
    tag: &str,
    concurrency: usize,
) -> Vec<(u64, u64)> {
    let input = dir.join(format!("{tag}.in"));
    let out = dir.join(format!("{tag}.out"));
    let mut s = String::with_capacity(50_000 * 48);
    for i in 0..50_000 {
        s.push_str(&format!(
            "{{\"id\": \"{tag}{i}\", \"prompt\": \"load test prompt {i}\"}}\n"
        ));
    }
    std::fs::write(&input, s).unwrap();
    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.concurrency = concurrency;
    let at = Arc::new(Mutex::new(Vec::new()));
    let t = Instant::now();
    let s = run_batch(
        cfg,
        RssAt {
            done: 0,
            at: at.clone(),
        },
        CancelToken::new(),
    )
    .await
    .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let at = at.lock().unwrap().clone();
    eprintln!(
        "load {tag}: {} ok in {secs:.2} s ({:.0} req/s); RSS at (records, KiB) {at:?}",
        s.ok,
        s.ok as f64 / secs
    );
    if s.failed > 0 {
        // Say why: the first errors of the failed records.
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let errors: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("\"ok\":false"))
            .take(5)
            .collect();
        eprintln!("failed records (first 5): {errors:#?}");
    }
    assert_eq!((s.ok, s.failed, s.not_finished), (50_000, 0, 0));
    assert_eq!(s.completion_tokens, 50_000 * 8);
    let lines = std::fs::read_to_string(&out).unwrap().lines().count();
    assert_eq!(lines, 50_000);
    assert_eq!(at.len(), 3);
    at
}

/// Two batches of 50,000 in one process: the first fills connection pools, socket buffers and
/// allocator arenas (RSS plateaus at ~170 MiB, reached after 10,000-50,000 requests depending on
/// scheduling); the second must not grow RSS by more than 16 MiB: a leak of 350 bytes per request,
/// or keeping each ~450-byte record, would exceed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_requests_at_concurrency_two_thousand() {
    let concurrency = concurrency_for_fd_limit();
    let sim = sglang_sim::spawn(SimConfig::near_zero()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let start_rss = rss_kib();
    let warm = one_batch(&sim, dir.path(), "warm", concurrency).await;
    let measured = one_batch(&sim, dir.path(), "load", concurrency).await;
    eprintln!("RSS KiB at start {start_rss}");
    let growth = measured[2].1.saturating_sub(warm[2].1);
    assert!(
        growth < 16 * 1024,
        "RSS grew {growth} KiB over a second batch of 50,000 requests: warm {warm:?}, measured {measured:?}"
    );
    assert!(
        warm.iter().chain(measured.iter()).all(|x| x.1 < 768 * 1024),
        "{warm:?} {measured:?}"
    );
    sim.shutdown().await;
}
