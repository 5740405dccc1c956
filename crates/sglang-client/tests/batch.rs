//! Batch runner against the simulated server: records, resume, torn lines,
//! fault injection, cancellation, burst mode.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use sglang_client::ClientConfig;
use sglang_client::batch::{
    BatchApi, BatchConfig, BatchError, BatchRecord, CancelToken, CompletionEvent, NoProgress,
    ProgressSink, ProgressSnapshot, run_batch,
};
use sglang_sim::{FaultConfig, SimConfig, SimStats};

fn write_prompts(path: &Path, n: usize) {
    let mut s = String::new();
    for i in 0..n {
        if i % 3 == 0 {
            s.push_str(&format!(
                "{{\"id\": \"p{i}\", \"messages\": [{{\"role\": \"user\", \"content\": \"question {i}\"}}], \"source\": \"x\"}}\n"
            ));
        } else {
            s.push_str(&format!(
                "{{\"id\": \"p{i}\", \"prompt\": \"question number {i}\", \"extra\": 1}}\n"
            ));
        }
    }
    std::fs::write(path, s).unwrap();
}

fn read_records(path: &Path) -> Vec<BatchRecord> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}

fn counts(recs: &[BatchRecord]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for r in recs {
        *m.entry(r.id.clone()).or_insert(0) += 1;
    }
    m
}

#[derive(Default)]
struct Collect {
    start: Option<(u64, u64)>,
    events: Vec<CompletionEvent>,
    snaps: Vec<ProgressSnapshot>,
    warnings: Vec<String>,
}

struct Shared(std::sync::Arc<std::sync::Mutex<Collect>>);
impl ProgressSink for Shared {
    fn on_start(&mut self, total: u64, resumed: u64) {
        self.0.lock().unwrap().start = Some((total, resumed));
    }
    fn on_completion(&mut self, e: &CompletionEvent) {
        self.0.lock().unwrap().events.push(e.clone());
    }
    fn on_snapshot(&mut self, s: &ProgressSnapshot) {
        self.0.lock().unwrap().snaps.push(s.clone());
    }
    fn on_warning(&mut self, m: &str) {
        self.0.lock().unwrap().warnings.push(m.to_string());
    }
}

fn fast_sim() -> SimConfig {
    SimConfig {
        time_scale: 0.002,
        completion_tokens_mean: 10,
        reasoning: true,
        ..SimConfig::default()
    }
}

#[tokio::test]
async fn streaming_chat_batch_writes_every_record_once() {
    let sim = sglang_sim::spawn(fast_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_prompts(&input, 120);
    // Bad input lines: not JSON (line 121), no id (122), duplicate id (123), completions-only problem none.
    let mut text = std::fs::read_to_string(&input).unwrap();
    text.push_str("{not json\n{\"prompt\": \"no id\"}\n{\"id\": \"p5\", \"prompt\": \"dup\"}\n\n");
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.stream = true;
    cfg.concurrency = 16;
    cfg.progress_interval = Duration::from_millis(20);
    cfg.params.insert("max_tokens".into(), 64.into());
    let col = std::sync::Arc::new(std::sync::Mutex::new(Collect::default()));
    let s = run_batch(cfg, Shared(col.clone()), CancelToken::new())
        .await
        .unwrap();
    assert_eq!(
        (s.input_prompts, s.ok, s.failed, s.resumed, s.not_finished),
        (120, 120, 0, 0, 0)
    );
    assert!(!s.cancelled);
    let lines: Vec<u64> = s.input_problems.iter().map(|p| p.0).collect();
    assert_eq!(lines, vec![121, 122, 123]);
    assert!(s.input_problems[2].1.contains("duplicate id p5"));

    let recs = read_records(&out);
    assert_eq!(recs.len(), 120);
    assert!(counts(&recs).values().all(|&c| c == 1));
    let mut toks = 0;
    for r in &recs {
        assert!(r.ok && r.error.is_none() && r.attempts == 1);
        let start = r.start_unix_s.unwrap();
        assert!(r.submit_unix_s <= start && start <= r.end_unix_s);
        let ttft = r.ttft_s.unwrap();
        assert!(ttft >= 0.0 && ttft <= r.latency_s.unwrap());
        let n = r.usage.completion_tokens.unwrap();
        assert!((1..=64).contains(&n));
        // the sim puts n/4 tokens in reasoning_content, one word + space per token
        let words =
            |s: &Option<String>| s.as_deref().map_or(0, |t| t.split_whitespace().count()) as u64;
        assert_eq!(words(&r.reasoning_content), n / 4, "{r:?}");
        assert_eq!(words(&r.content) + words(&r.reasoning_content), n);
        assert_eq!(
            r.finish_reason.as_deref(),
            Some(if n == 64 { "length" } else { "stop" })
        );
        toks += n;
    }
    assert_eq!(s.completion_tokens, toks);
    {
        let c = col.lock().unwrap();
        assert_eq!(c.start, Some((120, 0)));
        assert_eq!(c.events.len(), 120);
        let last = c.snaps.last().unwrap();
        assert_eq!(
            (
                last.completed,
                last.failed,
                last.in_flight,
                last.completion_tokens
            ),
            (120, 0, 0, toks)
        );
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn resume_skips_written_ids_and_cuts_a_torn_line() {
    let sim = sglang_sim::spawn(fast_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_prompts(&input, 50);
    let out = dir.path().join("out.jsonl");
    // Two complete records from an earlier run, then a line torn by a kill.
    let r0 = BatchRecord {
        id: "p0".into(),
        ok: true,
        attempts: 1,
        ..Default::default()
    };
    let r1 = BatchRecord {
        id: "p1".into(),
        ok: false,
        attempts: 5,
        error: Some("x".into()),
        ..Default::default()
    };
    let mut text = format!(
        "{}\n{}\n",
        serde_json::to_string(&r0).unwrap(),
        serde_json::to_string(&r1).unwrap()
    );
    text.push_str("{\"id\":\"p2\",\"ok\":tr");
    std::fs::write(&out, text).unwrap();

    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.api = BatchApi::Chat;
    cfg.concurrency = 8;
    // First, keeping failures: p1's failed record stays and is counted from the file.
    cfg.retry_failed_on_resume = false;
    let col = std::sync::Arc::new(std::sync::Mutex::new(Collect::default()));
    let s = run_batch(cfg.clone(), Shared(col.clone()), CancelToken::new())
        .await
        .unwrap();
    assert_eq!((s.resumed, s.ok, s.failed, s.failed_in_file), (2, 48, 0, 1));
    assert_eq!(s.output_problems.len(), 1);
    assert!(
        s.output_problems[0].contains("torn last line (18 bytes"),
        "{:?}",
        s.output_problems
    );
    assert_eq!(col.lock().unwrap().warnings.len(), 1);
    let recs = read_records(&out);
    assert_eq!(recs.len(), 50);
    assert!(counts(&recs).values().all(|&c| c == 1));
    assert_eq!(recs[0].id, "p0");

    // A second rerun keeping failures has nothing to send, and still says one failed.
    let s = run_batch(cfg.clone(), NoProgress, CancelToken::new())
        .await
        .unwrap();
    assert_eq!(
        (s.resumed, s.attempted, s.ok, s.failed_in_file),
        (50, 0, 0, 1)
    );
    assert!(s.output_problems.is_empty());

    // The default sends p1 again; its failed record is replaced by the new one.
    cfg.retry_failed_on_resume = true;
    let s = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap();
    assert_eq!(
        (
            s.resumed,
            s.attempted,
            s.ok,
            s.retried_from_file,
            s.failed_in_file
        ),
        (49, 1, 1, 1, 0)
    );
    let recs = read_records(&out);
    assert_eq!(recs.len(), 50);
    assert!(counts(&recs).values().all(|&c| c == 1));
    let p1: Vec<_> = recs.iter().filter(|r| r.id == "p1").collect();
    assert!(p1[0].ok, "{:?}", p1[0]);
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_are_retried_or_recorded() {
    faults_case(true).await;
}

/// The non-streaming path (one keep-alive connection per worker, reopened
/// after a reset) under the same faults.
#[tokio::test]
async fn faults_are_retried_or_recorded_without_streaming() {
    faults_case(false).await;
}

async fn faults_case(stream: bool) {
    let faults = FaultConfig {
        p_500: 0.12,
        p_429: 0.08,
        p_reset_mid_stream: 0.06,
        p_malformed_json: 0.05,
        p_slow_first_byte: 0.05,
        slow_first_byte: Duration::from_millis(20),
        retry_after_s: None,
        seed: 42,
    };
    let sim = sglang_sim::spawn(SimConfig {
        faults,
        ..fast_sim()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_prompts(&input, 400);
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.stream = stream;
    cfg.concurrency = 32;
    // Probability that one request meets a retryable fault 12 times in a row:
    // 0.26^12 ≈ 1e-7, so no request exhausts its attempts.
    cfg.retry.max_attempts = 12;
    cfg.retry.base_delay = Duration::from_millis(1);
    cfg.retry.max_delay = Duration::from_millis(20);
    let s = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap();
    let recs = read_records(&out);
    assert_eq!(recs.len(), 400);
    assert!(counts(&recs).values().all(|&c| c == 1));
    assert_eq!(s.ok + s.failed, 400);
    let failed: Vec<_> = recs.iter().filter(|r| !r.ok).collect();
    assert_eq!(failed.len() as u64, s.failed);
    // Malformed JSON is not retried: every failure is one, recorded with its error.
    let st = &sim.stats;
    assert_eq!(s.failed, SimStats::get(&st.injected_malformed));
    assert!(s.failed > 0);
    for r in &failed {
        assert_eq!(r.error_kind.as_deref(), Some("decode"), "{r:?}");
        assert!(r.error.as_deref().unwrap().contains("/v1/chat/completions"));
    }
    // Every retryable fault caused exactly one retry.
    let retryable = SimStats::get(&st.injected_500)
        + SimStats::get(&st.injected_429)
        + SimStats::get(&st.injected_reset);
    assert!(retryable > 0);
    assert_eq!(s.retries, retryable);
    let attempts_beyond_first: u64 = recs.iter().map(|r| (r.attempts - 1) as u64).sum();
    assert_eq!(attempts_beyond_first, retryable);
    assert!(
        recs.iter().any(|r| r.ok && r.attempts > 1),
        "some retried requests succeed"
    );
    assert!(SimStats::get(&st.injected_slow) > 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn cancel_stops_dispatch_and_rerun_completes() {
    // ~40 tokens per request at ~1-2 ms per decode step: tens of ms per request.
    let sim = sglang_sim::spawn(SimConfig {
        time_scale: 0.05,
        completion_tokens_mean: 40,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_prompts(&input, 200);
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.concurrency = 4;
    cfg.grace = Duration::ZERO;
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let s = run_batch(cfg.clone(), NoProgress, cancel).await.unwrap();
    assert!(s.cancelled);
    assert!(s.ok < 200, "{s:?}");
    assert_eq!(s.not_finished, 200 - s.ok - s.failed);
    let first = read_records(&out);
    assert_eq!(first.len() as u64, s.ok + s.failed);
    let s2 = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap();
    assert_eq!(s2.resumed, s.ok + s.failed);
    assert_eq!(s2.ok + s2.resumed, 200);
    let recs = read_records(&out);
    let c = counts(&recs);
    assert_eq!(c.len(), 200);
    assert!(c.values().all(|&n| n == 1));
    sim.shutdown().await;
}

#[tokio::test]
async fn burst_mode_creates_everything_at_t0_and_waits_for_permits() {
    let sim = sglang_sim::spawn(fast_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_prompts(&input, 40);
    let out = dir.path().join("out.jsonl");
    let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
    cfg.api = BatchApi::Chat;
    cfg.burst = true;
    cfg.concurrency = 4;
    let s = run_batch(cfg, NoProgress, CancelToken::new())
        .await
        .unwrap();
    assert_eq!(s.ok, 40);
    let recs = read_records(&out);
    let t0 = recs[0].submit_unix_s;
    assert!(
        recs.iter().all(|r| r.submit_unix_s == t0),
        "all created at t=0"
    );
    // 4 workers for 40 requests: apart from each worker's first request (at
    // most 4), a request was taken only when its worker had finished the one
    // before, so it waited at least as long as the quickest request took. (A
    // fixed wait threshold would depend on how fast the machine serves.)
    let quickest = recs
        .iter()
        .filter_map(|r| r.latency_s)
        .fold(f64::INFINITY, f64::min);
    assert!(quickest > 0.0 && quickest.is_finite(), "{quickest}");
    let waited = recs.iter().filter(|r| r.permit_wait_s >= quickest).count();
    assert!(waited >= 36, "{waited} of 40 waited >= {quickest} s");
    // ... and the waits add up: the last request taken waited for at least
    // a quarter of the others' summed latencies (4 workers ran them).
    let last_wait = recs.iter().map(|r| r.permit_wait_s).fold(0.0, f64::max);
    let total_latency: f64 = recs.iter().filter_map(|r| r.latency_s).sum();
    let longest = recs.iter().filter_map(|r| r.latency_s).fold(0.0, f64::max);
    assert!(
        last_wait >= (total_latency - 4.0 * longest) / 4.0,
        "{last_wait} vs {total_latency} / 4"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn completions_and_generate_apis() {
    let sim = sglang_sim::spawn(fast_sim()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        "{\"id\": \"a\", \"prompt\": \"hello there\"}\n{\"id\": \"b\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n",
    )
    .unwrap();
    for (api, key, stream) in [
        (BatchApi::Completions, "max_tokens", false),
        (BatchApi::Generate, "max_new_tokens", true),
        (BatchApi::Generate, "max_new_tokens", false),
    ] {
        let out = dir.path().join(format!("out-{api:?}-{stream}.jsonl"));
        let mut cfg = BatchConfig::new(ClientConfig::new(sim.base_url()), &input, &out);
        cfg.api = api;
        cfg.stream = stream;
        cfg.params.insert(key.into(), 3.into());
        let s = run_batch(cfg, NoProgress, CancelToken::new())
            .await
            .unwrap();
        // `messages` needs the chat API: reported, not sent.
        assert_eq!((s.ok, s.failed, s.input_problems.len()), (1, 0, 1));
        let r = &read_records(&out)[0];
        assert_eq!(r.content.as_deref(), Some("the batch decode "));
        assert_eq!(r.usage.completion_tokens, Some(3));
        assert_eq!(r.usage.prompt_tokens, Some(2));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(r.ttft_s.is_some(), stream);
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn zero_concurrency_and_missing_input_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = BatchConfig::new(
        ClientConfig::new("http://127.0.0.1:9"),
        dir.path().join("none"),
        dir.path().join("o"),
    );
    cfg.concurrency = 0;
    assert!(matches!(
        run_batch(cfg.clone(), NoProgress, CancelToken::new()).await,
        Err(BatchError::BadConcurrency)
    ));
    cfg.concurrency = 1;
    assert!(matches!(
        run_batch(cfg, NoProgress, CancelToken::new()).await,
        Err(BatchError::Io { .. })
    ));
}

#[tokio::test]
async fn batch_sends_the_api_key_on_the_non_streaming_path() {
    let sim = sglang_sim::spawn(SimConfig {
        api_key: Some("sk-batch".into()),
        ..fast_sim()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_prompts(&input, 30);
    for (key, ok, failed) in [(Some("sk-batch"), 30, 0), (Some("wrong"), 0, 30)] {
        let out = dir.path().join(format!("out-{ok}.jsonl"));
        let mut client = ClientConfig::new(sim.base_url());
        client.api_key = key.map(sglang_client::ApiKey::new);
        let mut cfg = BatchConfig::new(client, &input, &out);
        cfg.concurrency = 4;
        let s = run_batch(cfg, NoProgress, CancelToken::new())
            .await
            .unwrap();
        assert_eq!((s.ok, s.failed), (ok, failed));
        let recs = read_records(&out);
        assert_eq!(recs.len(), 30);
        if failed > 0 {
            // 401 is not retried; the record says why.
            assert!(recs.iter().all(|r| r.attempts == 1
                && r.error_kind.as_deref() == Some("status")
                && r.error.as_deref().unwrap().contains("401")));
        }
    }
    sim.shutdown().await;
}
