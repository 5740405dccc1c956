//! NVIDIA AIPerf, the benchmark client users run, against the simulated SGLang server, and
//! `diagnose` on the server's log with AIPerf's per-request export (issue 32).
//!
//! The simulator serves on a loopback port and writes its log; a word-level tokenizer written
//! here (a `tokenizers` `tokenizer.json` and a `tokenizer_config.json` that
//! `transformers.AutoTokenizer` loads from the folder) stands in for a model's, since the test
//! cannot fetch one: its words are the simulator's, so AIPerf's token counts are the server's.
//! AIPerf runs a short streamed profile (120 requests, 8 at once, `ignore_eos`, one in ten
//! answered with an HTTP 500); then the report's client view must hold AIPerf's own counts of
//! requests that succeeded and failed and, within 5%, its req/s (`profile_export_aiperf.json`),
//! and the server's rate from its log must agree with what AIPerf measured.
//!
//! Without `aiperf` on PATH (or in `THROUGHPUT_DOCTOR_AIPERF`) the test says loudly that it
//! was skipped and passes, unless `THROUGHPUT_DOCTOR_REQUIRE_AIPERF=1` (set by `.ci/run`,
//! which installs AIPerf 0.13.0 with pip), which makes it fail.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sglang_sim::{FaultConfig, SimConfig};

/// Requests AIPerf sends, and how many at once.
const REQUESTS: u64 = 120;
const CONCURRENCY: u64 = 8;
/// Output tokens of every request (`--osl` with `ignore_eos`), and prompt tokens (`--isl`).
const OSL: u64 = 96;
const ISL: u64 = 64;
/// The most AIPerf may take (it takes ~20 s on a 2-core machine: ~8 s to start its
/// services, ~10 s of load).
const AIPERF_TIMEOUT: Duration = Duration::from_secs(300);

fn aiperf_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("THROUGHPUT_DOCTOR_AIPERF") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("aiperf"))
        .find(|p| p.is_file())
}

/// Kills the child when the test ends, however it ends.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The simulator's words (one token each) and `[UNK]` for every other word: a WordLevel
/// model split on whitespace, without special tokens (AIPerf decodes its synthetic prompts
/// with them kept, so `[UNK]` stays text).
fn write_tokenizer(dir: &Path) {
    std::fs::create_dir_all(dir).expect("tokenizer dir");
    let words = [
        "[UNK]", "the", "batch", "decode", "token", "cache", "prefill", "server", "queue", "rate",
        "pool",
    ];
    let vocab: serde_json::Map<String, Value> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), Value::from(i)))
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("tokenizer.json");
    let config = serde_json::json!({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
        "model_max_length": 262_144,
    });
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string())
        .expect("tokenizer_config.json");
}

/// `file`'s `key.avg` (AIPerf's summary JSON: each metric an object with its unit and
/// statistics).
fn avg(summary: &Value, key: &str) -> f64 {
    summary[key]["avg"]
        .as_f64()
        .unwrap_or_else(|| panic!("profile_export_aiperf.json has no {key}.avg"))
}

fn within(a: f64, b: f64, share: f64) -> bool {
    (a - b).abs() <= share * b.abs()
}

#[test]
fn aiperf_against_the_simulator_is_diagnosed_with_its_own_figures() {
    let Some(aiperf) = aiperf_binary() else {
        let required = std::env::var("THROUGHPUT_DOCTOR_REQUIRE_AIPERF").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "THROUGHPUT_DOCTOR_REQUIRE_AIPERF=1 but no aiperf is on PATH (or in THROUGHPUT_DOCTOR_AIPERF)"
        );
        eprintln!(
            "\n========================================================================\n\
             SKIPPED aiperf_against_the_simulator_is_diagnosed_with_its_own_figures: no `aiperf`.\n\
             Install it to run this test (CPython 3.11-3.13), e.g.:\n    \
             python3 -m venv target/aiperf-venv && target/aiperf-venv/bin/pip install aiperf==0.13.0\n\
             and put target/aiperf-venv/bin on PATH or point THROUGHPUT_DOCTOR_AIPERF at its aiperf.\n\
             ========================================================================\n"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    // A 6 ms decode pass at 8 running (time scale 0.2): ~10 s of load for 120 requests of
    // 96 tokens, long enough for a steady span in a log of 1 s timestamps. Answers would end
    // near 48 tokens but for ignore_eos. A tenth of the requests fail at once (seeded draws).
    let sim = rt
        .block_on(sglang_sim::spawn(SimConfig {
            log_path: Some(log.clone()),
            time_scale: 0.2,
            kv_tokens: 20_000,
            completion_tokens_mean: 48,
            faults: FaultConfig {
                p_500: 0.1,
                seed: 3,
                ..FaultConfig::default()
            },
            ..SimConfig::default()
        }))
        .expect("sim");
    let tok = dir.path().join("tok");
    write_tokenizer(&tok);
    let art = dir.path().join("artifacts");
    let console = dir.path().join("aiperf.console.txt");
    let out = std::fs::File::create(&console).expect("console file");
    let err = out.try_clone().expect("console file");
    let n = |v: u64| v.to_string();
    let child = Command::new(&aiperf)
        .args(["profile", "-m", "sim", "--url", &sim.base_url()])
        .args(["--endpoint-type", "completions", "--streaming"])
        .args([
            "--concurrency",
            &n(CONCURRENCY),
            "--request-count",
            &n(REQUESTS),
        ])
        .args(["--isl", &n(ISL), "--osl", &n(OSL)])
        .args(["--extra-inputs", "ignore_eos:true", "--random-seed", "1"])
        .arg("--tokenizer")
        .arg(&tok)
        .arg("--artifact-dir")
        .arg(&art)
        .args(["--ui", "none"])
        // No network: the tokenizer is a local folder (an absolute path, which AIPerf loads
        // as one), and anything that would still reach the Hugging Face hub meets a closed
        // port. HF_HUB_OFFLINE is not set: AIPerf 0.13.0 then looks a local path up in the
        // hub's cache and fails.
        .env("HF_HOME", dir.path().join("hf"))
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("TRANSFORMERS_OFFLINE")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", aiperf.display()));
    let mut child = Killed(child);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("wait aiperf") {
            break s;
        }
        assert!(
            started.elapsed() < AIPERF_TIMEOUT,
            "aiperf still running after {AIPERF_TIMEOUT:?}; its output:\n{}",
            std::fs::read_to_string(&console).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    rt.block_on(sim.shutdown());
    let printed = std::fs::read_to_string(&console).unwrap_or_default();
    assert!(status.success(), "aiperf: {status}; its output:\n{printed}");
    eprintln!("aiperf ran in {:.1} s", started.elapsed().as_secs_f64());

    // AIPerf's own figures.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(art.join("profile_export_aiperf.json")).expect("summary"),
    )
    .expect("summary JSON");
    // AIPerf's request_count holds the requests that succeeded, its error summary the others.
    let succeeded = avg(&summary, "request_count");
    let failed: f64 = summary["error_summary"]
        .as_array()
        .expect("error_summary")
        .iter()
        .map(|e| e["count"].as_f64().unwrap_or(f64::NAN))
        .sum();
    assert_eq!(avg(&summary, "completed_request_count"), REQUESTS as f64);
    assert_eq!(succeeded + failed, REQUESTS as f64);
    assert!(
        (1.0..=30.0).contains(&failed),
        "{failed} of {REQUESTS} failed"
    );
    // ignore_eos honoured by the simulator, and the tokenizer's counts are the server's.
    assert_eq!(avg(&summary, "output_sequence_length"), OSL as f64);
    let aiperf_req_s = avg(&summary, "request_throughput");
    let aiperf_tok_s = avg(&summary, "output_token_throughput");

    let records = art.join("profile_export.jsonl");
    let o = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"))
        .arg("diagnose")
        .arg(&log)
        .arg("--client-records")
        .arg(&records)
        .arg("--json")
        .output()
        .expect("diagnose");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&o.stdout).expect("report JSON");
    let client = &report["client"];
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let client_req_s = f(&client["lifetime_req_per_s"]["value"]);
    let implied_req_s = f(&client["implied_req_per_s"]["value"]);
    let server_tok_s = f(&report["headline"]["gen_throughput"]["value"]);
    let figures = format!(
        "AIPerf {succeeded} succeeded, {failed} failed, {aiperf_req_s:.3} req/s, {aiperf_tok_s:.1} tok/s; report: client {client_req_s:.3} req/s, \
         implied by the server's tokens {implied_req_s:.3} req/s, server {server_tok_s:.1} tok/s\n\
         client view: {client}\nstderr: {stderr}"
    );
    eprintln!("{figures}");

    // The client view holds AIPerf's own counts and rate.
    assert_eq!(f(&client["completed"]), succeeded, "{figures}");
    assert_eq!(f(&client["failed"]), failed, "{figures}");
    assert_eq!(
        f(&client["mean_completion_tokens"]),
        OSL as f64,
        "{figures}"
    );
    assert!(within(client_req_s, aiperf_req_s, 0.05), "{figures}");
    // The server's rate, from its log alone, agrees with what the client measured: its
    // tokens per second with AIPerf's, and the request rate they imply with AIPerf's.
    assert!(within(server_tok_s, aiperf_tok_s, 0.15), "{figures}");
    assert!(within(implied_req_s, aiperf_req_s, 0.15), "{figures}");
}
