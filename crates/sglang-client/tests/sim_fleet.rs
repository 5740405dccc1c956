//! Scrapes of a simulated fleet, read with the new exposition parser: every
//! line is read, every series carries its `instance`, DP ranks are label
//! sets, and each member shows the state it was built for.

use sglang_client::{ClientConfig, SglangClient};
use sglang_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_scrapes_parse_whole_and_show_each_state() {
    let mut kv = SimConfig::kv_bound();
    kv.dp_size = 2;
    let fleet = sglang_sim::spawn_fleet(vec![
        kv,
        SimConfig::running_cap_bound(),
        SimConfig::nearly_idle(),
    ])
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let mut snaps = Vec::new();
    for h in &fleet {
        let c = SglangClient::new(ClientConfig::new(h.base_url())).unwrap();
        let text = c.metrics_text().await.unwrap();
        let m = sglang_client::MetricsSnapshot::parse(&text);
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        assert_eq!(m.lines, text.lines().count());
        let inst = h.addr.to_string();
        assert!(
            m.sets
                .iter()
                .all(|s| s.labels.get("instance") == Some(&inst)),
            "{:?}",
            m.sets.iter().map(|s| &s.labels).collect::<Vec<_>>()
        );
        snaps.push(m);
    }
    // KV-bound, two DP ranks: two scheduler label sets, a queue, a full pool.
    let kv = &snaps[0];
    let ranks: Vec<&str> = kv
        .sets
        .iter()
        .filter_map(|s| s.labels.get("dp_rank").map(String::as_str))
        .collect();
    assert_eq!(ranks, ["0", "1"]);
    assert!(kv.total(|s| s.num_queue_reqs).unwrap() > 0.0);
    let usage = kv
        .sets
        .iter()
        .filter_map(|s| s.token_usage)
        .reduce(f64::max);
    assert!(usage.unwrap() >= 0.8, "{usage:?}");
    assert_eq!(kv.total(|s| s.max_total_num_tokens), Some(48_000.0));
    assert!(kv.total(|s| s.generation_tokens_total).unwrap() > 0.0);
    let (_, rt) = kv
        .first(|s| s.realtime_tokens_total.get("decode").copied())
        .unwrap();
    assert!(rt > 0.0);
    assert!(kv.first(|s| s.queue_time_seconds.clone()).is_some());
    // Pinned at the cap of 16, the pool nearly empty.
    let cap = &snaps[1];
    assert_eq!(cap.total(|s| s.num_running_reqs), Some(16.0));
    assert!(cap.total(|s| s.num_queue_reqs).unwrap() >= 40.0);
    assert!(cap.total(|s| s.token_usage).unwrap() < 0.1);
    // Nearly idle: at most its 2 requests, nothing waiting.
    let idle = &snaps[2];
    assert!(idle.total(|s| s.num_running_reqs).unwrap() <= 2.0);
    assert_eq!(idle.total(|s| s.num_queue_reqs), Some(0.0));
    // /v1/loads: one entry per DP rank, agreeing with /metrics on the pool and the cap.
    let c = SglangClient::new(ClientConfig::new(fleet[0].base_url())).unwrap();
    let l = c.loads().await.unwrap();
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    let ranks: Vec<Option<u64>> = l.ranks.iter().map(|r| r.dp_rank).collect();
    assert_eq!(ranks, [Some(0), Some(1)]);
    assert!(
        l.ranks
            .iter()
            .all(|r| r.max_total_num_tokens == Some(24_000))
    );
    let c = SglangClient::new(ClientConfig::new(fleet[1].base_url())).unwrap();
    let l = c.loads().await.unwrap();
    assert_eq!(l.ranks[0].max_running_requests, Some(16));
    assert_eq!(l.ranks[0].num_running_reqs, Some(16));
    for h in fleet {
        h.shutdown().await;
    }
}
