//! Kill -9 the batch runner (a child process, `sglang-batch`) at several
//! moments mid-run, rerun with the same `--out`, and check that every prompt
//! id ends up in the output exactly once.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use sglang_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_minus_nine_and_rerun_loses_and_duplicates_nothing() {
    // ~30 tokens per request at ~1 ms per decode step: a run of 400 prompts
    // at concurrency 16 takes about a second, so kills land mid-run.
    let sim = sglang_sim::spawn(SimConfig {
        time_scale: 0.03,
        completion_tokens_mean: 30,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let out = dir.path().join("out.jsonl");
    let n = 400;
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "{{\"id\": \"k{i}\", \"prompt\": \"prompt {i}\"}}\n"
        ));
    }
    std::fs::write(&input, s).unwrap();
    let exe = env!("CARGO_BIN_EXE_sglang-batch");
    let run = || {
        Command::new(exe)
            .args(["--url", &sim.base_url(), "--concurrency", "16", "--stream"])
            .arg("--input")
            .arg(&input)
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let lines = || {
        std::fs::read_to_string(&out)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };

    let mut kills = 0;
    let mut partial_kills = 0;
    let mut finished = false;
    // Kill at growing delays; later children resume where the last stopped.
    for delay_ms in [150u64, 220, 90, 300, 260, 180, 400, 350] {
        let mut child = run();
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        if child.try_wait().unwrap().is_some() {
            finished = true;
            break;
        }
        child.kill().unwrap(); // SIGKILL on Unix
        let _ = child.wait();
        kills += 1;
        let l = lines();
        if l > 0 && l < n {
            partial_kills += 1;
        }
    }
    eprintln!(
        "kills: {kills}, mid-run: {partial_kills}, finished early: {finished}, lines now: {}",
        lines()
    );
    assert!(
        kills >= 2,
        "the child finished before it could be killed twice"
    );
    assert!(partial_kills >= 1, "at least one kill landed mid-run");
    if !finished {
        let child = run();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // Whatever the kills left (a torn last line is cut off on rerun), the
    // file now holds every id exactly once, each line a valid record.
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.ends_with('\n'));
    let mut seen: HashMap<String, usize> = HashMap::new();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["ok"], true, "{l}");
        *seen
            .entry(v["id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(seen.len(), n);
    for i in 0..n {
        assert_eq!(seen.get(&format!("k{i}")), Some(&1), "k{i}");
    }
    sim.shutdown().await;
}
