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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_requests_at_concurrency_two_thousand() {
    let sim = sglang_sim::spawn(SimConfig::near_zero()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("load.in");
    let out = dir.path().join("load.out");
    let mut s = String::with_capacity(50_000 * 48);
    for i in 0..50_000 {
        s.push_str(&format!(
            "{{\"id\": \"l{i}\", \"prompt\": \"load test prompt {i}\"}}\n"
        ));
    }
    std::fs::write(&input, s).unwrap();
    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.concurrency = 2000;
    let at = Arc::new(Mutex::new(Vec::new()));
    let start_rss = rss_kib();
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
        "load: {} ok in {secs:.2} s ({:.0} req/s); RSS KiB at start {start_rss}, at (records, KiB) {at:?}",
        s.ok,
        s.ok as f64 / secs
    );
    assert_eq!((s.ok, s.failed, s.not_finished), (50_000, 0, 0));
    assert_eq!(s.completion_tokens, 50_000 * 8);
    let lines = std::fs::read_to_string(&out).unwrap().lines().count();
    assert_eq!(lines, 50_000);
    assert_eq!(at.len(), 3);
    let growth_second_half = at[2].1.saturating_sub(at[1].1);
    assert!(
        growth_second_half < 16 * 1024,
        "RSS grew {growth_second_half} KiB over the last 25,000 requests: {at:?}"
    );
    assert!(at.iter().all(|x| x.1 < 768 * 1024), "{at:?}");
    sim.shutdown().await;
}
