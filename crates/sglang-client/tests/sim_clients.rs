//! The simulator answers as SGLang does for the benchmark clients users run (AIPerf, GuideLLM,
//! `bench_serving`): `/v1/models`, `ignore_eos` and `min_tokens` honoured, and a log whose
//! `gen throughput` is on the clock of its timestamps and of the client, whatever the
//! simulator's `time_scale`.

use futures_util::StreamExt;
use serde_json::{Value, json};
use sglang_sim::SimConfig;

const MODEL: &str = "sim/Kimi-K2.5-sim";

async fn post(url: &str, path: &str, body: Value) -> Value {
    let r = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn v1_models_lists_the_served_model_as_sglang_does() {
    let sim = sglang_sim::spawn(SimConfig {
        time_scale: 0.002,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let url = sim.base_url();
    let list: Value = reqwest::get(format!("{url}/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["object"], "list");
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    let card = &data[0];
    assert_eq!(card["id"], MODEL);
    assert_eq!(card["object"], "model");
    assert_eq!(card["owned_by"], "sglang");
    assert_eq!(card["root"], MODEL);
    assert_eq!(card["parent"], Value::Null);
    assert_eq!(card["max_model_len"], 262_144);
    assert!(card["created"].as_u64().unwrap() > 1_700_000_000);

    // One model by its id (a path with a slash), and SGLang's 404 for any other.
    let one = reqwest::get(format!("{url}/v1/models/{MODEL}"))
        .await
        .unwrap();
    assert_eq!(one.status(), 200);
    assert_eq!(one.json::<Value>().await.unwrap()["id"], MODEL);
    let none = reqwest::get(format!("{url}/v1/models/other"))
        .await
        .unwrap();
    assert_eq!(none.status(), 404);
    let err: Value = none.json().await.unwrap();
    assert_eq!(err["error"]["code"], "model_not_found");
    assert_eq!(err["error"]["message"], "The model 'other' does not exist");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_eos_runs_every_answer_to_max_tokens() {
    // Answers end near 8 tokens (lognormal, sigma 0.3: 40 is 5 sigma away) unless told not to.
    let sim = sglang_sim::spawn(SimConfig {
        time_scale: 0.002,
        completion_tokens_mean: 8,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let url = sim.base_url();
    for i in 0..6 {
        let prompt = format!("prompt number {i}");
        let free = post(
            &url,
            "/v1/completions",
            json!({"model": "sim", "prompt": prompt, "max_tokens": 40}),
        )
        .await;
        let n = free["usage"]["completion_tokens"].as_u64().unwrap();
        assert!((1..40).contains(&n), "{free}");
        assert_eq!(free["choices"][0]["finish_reason"], "stop");

        let ignored = post(
            &url,
            "/v1/completions",
            json!({"model": "sim", "prompt": prompt, "max_tokens": 40, "ignore_eos": true}),
        )
        .await;
        assert_eq!(ignored["usage"]["completion_tokens"], 40, "{ignored}");
        assert_eq!(ignored["choices"][0]["finish_reason"], "length");
        // 40 words, one per token.
        let text = ignored["choices"][0]["text"].as_str().unwrap();
        assert_eq!(text.split_whitespace().count(), 40);

        let chat = post(
            &url,
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": prompt}], "max_completion_tokens": 33,
                   "min_tokens": 30}),
        )
        .await;
        let n = chat["usage"]["completion_tokens"].as_u64().unwrap();
        assert!((30..=33).contains(&n), "{chat}");

        let native = post(
            &url,
            "/generate",
            json!({"text": prompt, "sampling_params": {"max_new_tokens": 25, "ignore_eos": true}}),
        )
        .await;
        assert_eq!(native["meta_info"]["completion_tokens"], 25, "{native}");
        assert_eq!(native["meta_info"]["finish_reason"]["type"], "length");
    }

    // Streamed: one chunk per token, then the finish chunk, the usage chunk and [DONE].
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/completions"))
        .json(
            &json!({"prompt": "x", "max_tokens": 50, "ignore_eos": true, "stream": true,
                      "stream_options": {"include_usage": true}}),
        )
        .send()
        .await
        .unwrap();
    let mut body = Vec::new();
    let mut s = r.bytes_stream();
    while let Some(b) = s.next().await {
        body.extend_from_slice(&b.unwrap());
    }
    let body = String::from_utf8(body).unwrap();
    let events: Vec<&str> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect();
    assert_eq!(events.len(), 50 + 3, "{body}");
    assert_eq!(events[52], "[DONE]");
    let usage: Value = serde_json::from_str(events[51]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 50);
    let finish: Value = serde_json::from_str(events[50]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    sim.shutdown().await;
}

/// `gen throughput (token/s): X` of one decode line.
fn gen_throughput(line: &str) -> Option<f64> {
    let key = "gen throughput (token/s): ";
    let i = line.find(key)? + key.len();
    line[i..].split(',').next()?.trim().parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_rate_is_on_the_clients_clock_at_any_time_scale() {
    // At time_scale 0.05 a modelled 30 ms decode pass takes 1.5 ms: the log's rate used to be
    // in the model's seconds, 20 times below what the client saw over the timestamps' clock.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let sim = sglang_sim::spawn(SimConfig {
        time_scale: 0.05,
        decode_log_interval: 20,
        log_path: Some(log.clone()),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let url = sim.base_url();
    // 8 requests of 400 tokens each, sent at once and all running together to the end: the
    // server's rate is constant, and equal to the client's tokens over its wall time.
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            post(
                &url,
                "/v1/completions",
                json!({"prompt": format!("p{i}"), "max_tokens": 400, "ignore_eos": true}),
            )
            .await["usage"]["completion_tokens"]
                .as_u64()
                .unwrap()
        }));
    }
    let mut tokens = 0;
    for t in tasks {
        tokens += t.await.unwrap();
    }
    let wall_s = started.elapsed().as_secs_f64();
    sim.shutdown().await;
    assert_eq!(tokens, 3200);
    let client_tok_per_s = tokens as f64 / wall_s;

    let text = std::fs::read_to_string(&log).unwrap();
    // The first line's window opens when the engine was made, before any request: left out,
    // as SGLang's first window is.
    let mut rates: Vec<f64> = text.lines().filter_map(gen_throughput).skip(1).collect();
    assert!(rates.len() >= 10, "{text}");
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    let ratio = median / client_tok_per_s;
    assert!(
        (0.7..1.4).contains(&ratio),
        "log median {median:.0} tok/s against the client's {client_tok_per_s:.0} tok/s \
         ({tokens} tokens in {wall_s:.2} s)\n{text}"
    );
}
