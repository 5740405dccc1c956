//! The simulator's scheduler model, seen through the client: a full KV pool
//! queues requests, the log file gets SGLang-format scheduler lines, and
//! `/metrics` agrees with what was served.

use sglang_client::ClientConfig;
use sglang_client::batch::{BatchConfig, CancelToken, NoProgress, run_batch};
use sglang_sim::{SimConfig, SimStats};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_kv_pool_queues_requests_and_logs_batches() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    // 3,000-token pool; each request: 100 prompt tokens + up to 200 new
    // tokens, reserved at new_token_ratio 0.7 -> ~240 tokens per admission,
    // so only ~12 of the 40 concurrent requests fit at first and the other
    // ~28 queue, provided they all arrive before the first ones finish.
    // At time_scale 0.3 a decode pass takes ~10 ms, so the quickest answer
    // (~60 tokens) takes ~0.6 s, against the 10-40 ms the client needs to
    // send all 40 on a 2-core machine running other tests. At 0.01 (~20 ms)
    // the queue peaked at 18-19 under a parallel cargo build, and still at 19
    // once at 0.1 (~200 ms) with the machine at load average ~25.
    let sim = sglang_sim::spawn(SimConfig {
        kv_tokens: 3000,
        time_scale: 0.3,
        completion_tokens_mean: 120,
        decode_log_interval: 10,
        log_path: Some(log.clone()),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let input = dir.path().join("in.jsonl");
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!(
            "{{\"id\": \"q{i}\", \"prompt\": \"{}\"}}\n",
            "y".repeat(400)
        ));
    }
    std::fs::write(&input, s).unwrap();
    let mut cfg = BatchConfig::new(
        ClientConfig::new(sim.base_url()),
        &input,
        dir.path().join("out.jsonl"),
    );
    cfg.concurrency = 40;
    cfg.params.insert("max_tokens".into(), 200.into());
    let sum = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap();
    assert_eq!(sum.ok, 40);
    assert!(
        SimStats::get(&sim.stats.max_queue) >= 20,
        "queue {}",
        SimStats::get(&sim.stats.max_queue)
    );

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("max_total_num_tokens=3000, chunked_prefill_size=8192"));
    let mut max_running = 0u64;
    let mut decode_lines = 0;
    let mut prefill_seqs = 0u64;
    for line in text.lines() {
        // `[YYYY-MM-DD HH:MM:SS TP0] Decode batch, #running-req: N, #token: K, token usage: U, ...`
        assert!(
            line.starts_with('[')
                && line.as_bytes().get(20) == Some(&b' ')
                && &line[21..26] == "TP0] ",
            "{line}"
        );
        let field = |name: &str| -> Option<f64> {
            let i = line.find(name)? + name.len();
            line[i..].split(',').next()?.trim().parse().ok()
        };
        if line.contains("] Decode batch, ") {
            decode_lines += 1;
            let running = field("#running-req: ").unwrap() as u64;
            let tokens = field("#token: ").unwrap();
            let usage = field("token usage: ").unwrap();
            assert!(usage <= 1.0 && tokens <= 3000.0, "{line}");
            assert!(field("gen throughput (token/s): ").unwrap() > 0.0, "{line}");
            max_running = max_running.max(running);
        } else if line.contains("] Prefill batch, ") {
            prefill_seqs += field("#new-seq: ").unwrap() as u64;
            assert!(field("#new-token: ").unwrap() >= 100.0, "{line}");
        }
    }
    assert!(decode_lines > 0);
    assert!(
        max_running < 40,
        "the pool cannot hold all 40 at once: {max_running}"
    );
    // Every request was prefilled once, plus re-prefills after retraction.
    assert_eq!(prefill_seqs, 40 + SimStats::get(&sim.stats.retractions));

    let c = sglang_client::SglangClient::new(ClientConfig::new(sim.base_url())).unwrap();
    let m = c.metrics().await.unwrap();
    assert_eq!(m.total(|s| s.num_requests_total), Some(40.0));
    assert_eq!(
        m.total(|s| s.generation_tokens_total),
        Some(sum.completion_tokens as f64)
    );
    sim.shutdown().await;
}
