//! Against the simulated SGLang server (loopback, random port): run-batch writes records that
//! diagnose reads beside the server's log, and live mode follows a log being appended.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use sglang_sim::SimConfig;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_throughput-doctor"))
}

fn write_prompts(path: &Path, n: usize, prefix: &str) {
    let mut f = std::fs::File::create(path).expect("prompts");
    for i in 0..n {
        writeln!(f, "{{\"id\": \"{prefix}-{i:04}\", \"prompt\": \"Write a short poem number {i} about queues.\"}}").expect("write");
    }
}

fn sim(log: &Path) -> (tokio::runtime::Runtime, sglang_sim::SimHandle) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let cfg = SimConfig {
        log_path: Some(log.to_path_buf()),
        // a small pool so that requests queue, and a short log interval so the log grows quickly
        kv_tokens: 4_000,
        decode_log_interval: 4,
        completion_tokens_mean: 48,
        time_scale: 0.02,
        ..SimConfig::default()
    };
    let h = rt.block_on(sglang_sim::spawn(cfg)).expect("sim");
    (rt, h)
}

#[test]
fn run_batch_records_feed_diagnose_and_watch_follows_the_log() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    let (rt, h) = sim(&log);
    let url = h.base_url();

    // 1. run-batch: every prompt answered once, records with timings.
    let prompts = dir.path().join("prompts.jsonl");
    let out = dir.path().join("out.jsonl");
    write_prompts(&prompts, 120, "a");
    let st = bin()
        .args([
            "run-batch",
            "--server",
            &url,
            "--concurrency",
            "48",
            "--max-tokens",
            "64",
            "--chat",
        ])
        .arg("--prompts")
        .arg(&prompts)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run-batch");
    assert_eq!(
        st.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("out");
    let mut ids: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("record")["id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 120);
    assert_eq!(text.lines().count(), 120);

    // 2. diagnose reads the records beside the server log (the sim wrote SGLang-format lines).
    let d = bin()
        .args(["diagnose", "--json"])
        .arg(&log)
        .arg("--client-records")
        .arg(&out)
        .output()
        .expect("diagnose");
    assert_eq!(
        d.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&d.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&d.stdout).expect("json");
    assert!(
        v["inputs"][0]["decode_lines"].as_u64().unwrap_or(0) > 0,
        "{}",
        v["inputs"]
    );
    assert_eq!(v["client"]["format"], "timed_records");
    assert_eq!(v["client"]["completed"], 120);
    assert!(
        v["client"]["mean_completion_tokens"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );
    assert!(
        v["client"]["windowed_req_per_s"]["value"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "client {} schedulers {}",
        v["client"],
        v["schedulers"]
    );

    // 3. live mode: follow the log while a second batch appends to it; 3 reports, then stop.
    let lines_before = std::fs::read_to_string(&log).expect("log").lines().count();
    let watch = bin()
        .args([
            "diagnose",
            "--server",
            &url,
            "--watch",
            "1s",
            "--watch-count",
            "3",
            "--log",
        ])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch");
    let prompts2 = dir.path().join("prompts2.jsonl");
    let out2 = dir.path().join("out2.jsonl");
    write_prompts(&prompts2, 120, "b");
    let st = bin()
        .args([
            "run-batch",
            "--server",
            &url,
            "--concurrency",
            "48",
            "--max-tokens",
            "64",
        ])
        .arg("--prompts")
        .arg(&prompts2)
        .arg("--out")
        .arg(&out2)
        .output()
        .expect("run-batch 2");
    assert_eq!(st.status.code(), Some(0));
    let w = watch.wait_with_output().expect("watch output");
    assert_eq!(
        w.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&w.stderr)
    );
    let text = String::from_utf8_lossy(&w.stdout);
    assert_eq!(text.matches("── report ").count(), 3, "{text}");
    assert!(text.contains("/metrics: running"), "{text}");
    assert!(text.contains("Verdict: "), "{text}");
    let lines_after = std::fs::read_to_string(&log).expect("log").lines().count();
    assert!(
        lines_after > lines_before,
        "the second batch appended to the log"
    );
    // The last report read more lines than the first.
    let counts: Vec<u64> = text
        .lines()
        .filter(|l| l.contains("server.log:"))
        .filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(counts.len(), 3, "{text}");
    assert!(counts[0] >= lines_before as u64);
    rt.block_on(h.shutdown());
}

#[test]
fn diagnose_a_live_server_alone_from_server_info_and_metrics() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    let (rt, h) = sim(&log);
    let url = h.base_url();
    // Load the server while diagnose polls it.
    let prompts = dir.path().join("prompts.jsonl");
    write_prompts(&prompts, 400, "c");
    let mut load = bin()
        .args([
            "run-batch",
            "--server",
            &url,
            "--concurrency",
            "200",
            "--max-tokens",
            "64",
        ])
        .arg("--prompts")
        .arg(&prompts)
        .arg("--out")
        .arg(dir.path().join("out.jsonl"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("load");
    let d = bin()
        .args([
            "diagnose",
            "--json",
            "--server",
            &url,
            "--metrics-polls",
            "3",
        ])
        .output()
        .expect("diagnose");
    let _ = load.wait();
    assert_eq!(
        d.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&d.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&d.stdout).expect("json");
    // server info from /server_info, and three /metrics polls
    assert_eq!(v["capacity"]["max_total_num_tokens"], 4000);
    assert_eq!(v["server_metrics"]["samples"], 3);
    assert!(v["server_metrics"]["span_s"].as_f64().unwrap_or(0.0) >= 1.9);
    // the verdict comes from the gauges (no log was given)
    assert_ne!(v["bottleneck"], "no_scheduler_lines", "{}", v["headline"]);
    assert_eq!(v["schedulers"].as_array().map(|a| a.len()), Some(1));
    assert!(v["sources"].to_string().contains("/metrics"));
    rt.block_on(h.shutdown());
}

#[test]
fn unreachable_server_narrows_the_report() {
    // Port 9 on loopback: nothing listens there. Beside a log the server is a missing source
    // that narrows the report (alone it is an error: tests/cli.rs).
    let d = bin()
        .args(["diagnose", "--json", "--server", "http://127.0.0.1:9"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/real/001-i938-a100-llama13b-queue12k.log"
        ))
        .output()
        .expect("diagnose");
    assert_eq!(
        d.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&d.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&d.stdout).expect("json");
    let nc = v["not_concluded"].to_string();
    assert!(nc.contains("server http://127.0.0.1:9"), "{nc}");
    assert_eq!(v["bottleneck"], "kv_cache_bound");
}
