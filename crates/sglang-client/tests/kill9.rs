//! Kill -9 the batch runner (a child process, `sglang-batch`) at several
//! moments mid-run, rerun with the same `--out`, and check that every prompt
//! id ends up in the output exactly once.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sglang_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_minus_nine_and_rerun_loses_and_duplicates_nothing() {
    // ~30 tokens per request at ~1 ms per decode step: a run of 400 prompts
    // at concurrency 16 takes about a second (longer under load).
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

    // Kill at moments defined by progress, not by the clock: right after the
    // spawn (before the child has written anything), then once the child has
    // appended `step` more lines. Under load a child can take seconds to
    // start; a fixed delay could then kill every child before its first
    // record (no kill mid-run), or a fast one could let it finish. The steps
    // add up to far fewer than `n` lines, so every kill lands mid-run.
    let steps = [
        None,
        Some(1),
        Some(25),
        Some(3),
        Some(60),
        Some(10),
        Some(40),
    ];
    let mut kills = 0;
    for step in steps {
        let before = lines();
        let mut child = run();
        if let Some(step) = step {
            let deadline = Instant::now() + Duration::from_secs(120);
            while lines() < before + step {
                if let Some(st) = child.try_wait().unwrap() {
                    let o = child.wait_with_output().unwrap();
                    panic!(
                        "the child exited ({st}) with {} of {n} lines before {step} more were written: {}",
                        lines(),
                        String::from_utf8_lossy(&o.stderr)
                    );
                }
                assert!(
                    Instant::now() < deadline,
                    "no {step} new lines within 120 s ({} now)",
                    lines()
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        child.kill().unwrap(); // SIGKILL on Unix
        let _ = child.wait();
        kills += 1;
        let l = lines();
        eprintln!("kill {kills} after {step:?} new lines: {before} -> {l} lines");
        assert!(
            l < n,
            "kill {kills} landed after the run had finished ({l} lines)"
        );
    }
    // The killed children got somewhere: at least the lines waited for.
    assert!(lines() >= 1 + 25 + 3 + 60 + 10 + 40);
    // A kill may tear the last line; the rerun cuts it off and finishes.
    let child = run();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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
