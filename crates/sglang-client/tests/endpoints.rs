//! Every endpoint of `SglangClient` against the simulated server.

use futures_util::StreamExt;
use serde_json::json;
use sglang_client::{ApiKey, ClientConfig, ClientError, SglangClient};
use sglang_sim::{FaultConfig, SimConfig};

fn sim_cfg() -> SimConfig {
    SimConfig {
        time_scale: 0.002,
        completion_tokens_mean: 12,
        reasoning: true,
        ..SimConfig::default()
    }
}

async fn client_for(url: &str) -> SglangClient {
    SglangClient::new(ClientConfig::new(url)).unwrap()
}

#[tokio::test]
async fn health_info_and_model_info() {
    let sim = sglang_sim::spawn(sim_cfg()).await.unwrap();
    let c = client_for(&sim.base_url()).await;
    c.health().await.unwrap();
    c.health_generate().await.unwrap();
    let info = c.server_info().await.unwrap();
    assert_eq!(info.model_path.as_deref(), Some("sim/Kimi-K2.5-sim"));
    assert_eq!(info.max_total_num_tokens, Some(116_171));
    assert_eq!(info.version.as_deref(), Some("0.5.8"));
    let mu = info.internal_states[0].memory_usage.as_ref().unwrap();
    assert_eq!(mu.token_capacity, Some(116_171));
    assert_eq!(info.min_version_from_keys(), Some("v0.5.2"));
    let mi = c.model_info().await.unwrap();
    assert_eq!(mi.is_generation, Some(true));
    assert_eq!(mi.model_path.as_deref(), Some("sim/Kimi-K2.5-sim"));
    sim.shutdown().await;
}

#[tokio::test]
async fn legacy_info_endpoints_fallback() {
    let sim = sglang_sim::spawn(SimConfig {
        legacy_endpoints_only: true,
        ..sim_cfg()
    })
    .await
    .unwrap();
    let c = client_for(&sim.base_url()).await;
    // /server_info answers 404 here; the client falls back to /get_server_info.
    let info = c.server_info().await.unwrap();
    assert_eq!(info.max_total_num_tokens, Some(116_171));
    let mi = c.model_info().await.unwrap();
    assert_eq!(mi.weight_version.as_deref(), Some("default"));
    sim.shutdown().await;
}

#[tokio::test]
async fn generation_endpoints_and_metrics() {
    let sim = sglang_sim::spawn(sim_cfg()).await.unwrap();
    let c = client_for(&sim.base_url()).await;
    let prompt = "x".repeat(400); // 100 prompt tokens at 4 chars/token

    let r = c
        .chat_completions(
            &json!({"messages": [{"role": "user", "content": prompt}], "max_tokens": 5}),
        )
        .await
        .unwrap();
    let ch = &r.choices[0];
    assert_eq!(ch.finish_reason.as_deref(), Some("length"));
    let u = r.usage.as_ref().unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(100), Some(5)));
    // reasoning: first quarter of the tokens (5/4 = 1)
    assert_eq!(
        ch.message.as_ref().unwrap().reasoning_content.as_deref(),
        Some("the ")
    );
    assert_eq!(
        ch.message.as_ref().unwrap().content.as_deref(),
        Some("batch decode token cache ")
    );

    let mut s = c
        .chat_completions_stream(&json!({"messages": [{"role": "user", "content": prompt}], "max_tokens": 4,
                                         "stream": true, "stream_options": {"include_usage": true}}))
        .await
        .unwrap();
    let (mut content, mut reasoning, mut finish, mut usage) =
        (String::new(), String::new(), None, None);
    while let Some(chunk) = s.next().await {
        let chunk = chunk.unwrap();
        if chunk.usage.is_some() {
            usage = chunk.usage;
        }
        for ch in chunk.choices {
            if let Some(d) = ch.delta {
                content.push_str(d.content.as_deref().unwrap_or(""));
                reasoning.push_str(d.reasoning_content.as_deref().unwrap_or(""));
            }
            finish = finish.or(ch.finish_reason);
        }
    }
    assert_eq!(content, "batch decode token ");
    assert_eq!(reasoning, "the ");
    assert_eq!(finish.as_deref(), Some("length"));
    assert_eq!(usage.unwrap().completion_tokens, Some(4));

    let r = c
        .completions(&json!({"prompt": prompt, "max_tokens": 3}))
        .await
        .unwrap();
    assert_eq!(r.choices[0].text, "the batch decode ");
    let mut s = c
        .completions_stream(&json!({"prompt": prompt, "max_tokens": 3, "stream": true}))
        .await
        .unwrap();
    let mut text = String::new();
    while let Some(chunk) = s.next().await {
        for ch in chunk.unwrap().choices {
            text.push_str(&ch.text);
        }
    }
    assert_eq!(text, "the batch decode ");

    let g = c
        .generate(&json!({"text": prompt, "sampling_params": {"max_new_tokens": 2}}))
        .await
        .unwrap();
    assert_eq!(g.text, "the batch ");
    assert_eq!(g.meta_info.finish_type().as_deref(), Some("length"));
    assert_eq!(g.meta_info.completion_tokens, Some(2));
    let mut s = c
        .generate_stream(
            &json!({"text": prompt, "sampling_params": {"max_new_tokens": 3}, "stream": true}),
        )
        .await
        .unwrap();
    let mut last = None;
    let mut n = 0;
    while let Some(chunk) = s.next().await {
        last = Some(chunk.unwrap());
        n += 1;
    }
    let last = last.unwrap();
    assert_eq!(n, 4, "3 token events + the final one");
    assert_eq!(last.text, "the batch decode ");
    assert_eq!(last.meta_info.prompt_tokens, Some(100));

    // 6 generation requests (+1 from none) went through the scheduler.
    let m = c.metrics().await.unwrap();
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.total(|s| s.num_requests_total), Some(6.0));
    assert_eq!(m.total(|s| s.prompt_tokens_total), Some(600.0));
    assert_eq!(
        m.total(|s| s.generation_tokens_total),
        Some(5.0 + 4.0 + 3.0 + 3.0 + 2.0 + 3.0)
    );
    assert_eq!(m.total(|s| s.max_total_num_tokens), Some(116_171.0));
    let (_, e2e) = m.first(|s| s.e2e_request_latency_seconds.clone()).unwrap();
    assert_eq!(e2e.count, Some(6.0));
    let (_, ttft) = m.first(|s| s.time_to_first_token_seconds.clone()).unwrap();
    assert_eq!(ttft.count, Some(6.0));
    assert!(ttft.quantile(0.5).is_some());
    sim.shutdown().await;
}

#[tokio::test]
async fn api_key_is_sent_and_never_shown() {
    let key = "sk-very-secret-123";
    let sim = sglang_sim::spawn(SimConfig {
        api_key: Some(key.into()),
        ..sim_cfg()
    })
    .await
    .unwrap();
    let mut cfg = ClientConfig::new(sim.base_url());
    // Without the key: 401, and the message names the URL but no key.
    let c = SglangClient::new(cfg.clone()).unwrap();
    let e = c.server_info().await.unwrap_err();
    assert!(matches!(e, ClientError::Status { status: 401, .. }), "{e}");
    cfg.api_key = Some(ApiKey::new(key));
    let c = SglangClient::new(cfg.clone()).unwrap();
    assert_eq!(
        c.server_info().await.unwrap().max_total_num_tokens,
        Some(116_171)
    );
    let dbg = format!("{cfg:?} {c:?}");
    assert!(!dbg.contains(key), "{dbg}");
    assert!(dbg.contains("<redacted>"));
    // from the environment
    unsafe { std::env::set_var("SGLANG_SIM_TEST_KEY", key) };
    let c = SglangClient::new(
        ClientConfig::new(sim.base_url()).api_key_from_env("SGLANG_SIM_TEST_KEY"),
    )
    .unwrap();
    c.model_info().await.unwrap();
    sim.shutdown().await;
}

#[tokio::test]
async fn errors_are_typed() {
    // A port that is bound but not listening refuses connections. Holding
    // it (without SO_REUSEADDR) keeps any other test's listener off it; a
    // port freed by a shut-down sim could be handed to another test's sim.
    let hole = tokio::net::TcpSocket::new_v4().unwrap();
    hole.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}", hole.local_addr().unwrap());
    let c = client_for(&url).await;
    let e = c.health().await.unwrap_err();
    assert!(matches!(e, ClientError::Connect { .. }), "{e:?}");
    assert!(e.is_retryable());
    drop(hole);

    let sim = sglang_sim::spawn(SimConfig {
        faults: FaultConfig {
            p_500: 1.0,
            ..FaultConfig::default()
        },
        ..sim_cfg()
    })
    .await
    .unwrap();
    let c = client_for(&sim.base_url()).await;
    let e = c
        .chat_completions(&json!({"messages": []}))
        .await
        .unwrap_err();
    match &e {
        ClientError::Status {
            status,
            body_excerpt,
            url,
            ..
        } => {
            assert_eq!(*status, 500);
            assert!(body_excerpt.contains("injected"));
            assert!(url.ends_with("/v1/chat/completions"));
        }
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;

    let sim = sglang_sim::spawn(SimConfig {
        faults: FaultConfig {
            p_malformed_json: 1.0,
            ..FaultConfig::default()
        },
        ..sim_cfg()
    })
    .await
    .unwrap();
    let c = client_for(&sim.base_url()).await;
    let e = c.completions(&json!({"prompt": "a"})).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Decode { endpoint, .. } if endpoint == "/v1/completions"),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    sim.shutdown().await;

    let sim = sglang_sim::spawn(SimConfig {
        faults: FaultConfig {
            p_reset_mid_stream: 1.0,
            ..FaultConfig::default()
        },
        ..sim_cfg()
    })
    .await
    .unwrap();
    let c = client_for(&sim.base_url()).await;
    let e = c
        .chat_completions(&json!({"messages": []}))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Transport { .. }), "{e:?}");
    // The abort may hit before the response head is read or in the body.
    let mut last_err = None;
    match c
        .chat_completions_stream(&json!({"messages": [], "stream": true}))
        .await
    {
        Err(e) => last_err = Some(e),
        Ok(mut s) => {
            while let Some(x) = s.next().await {
                if let Err(e) = x {
                    last_err = Some(e);
                }
            }
        }
    }
    assert!(
        matches!(last_err, Some(ClientError::Transport { .. })),
        "{last_err:?}"
    );
    sim.shutdown().await;
}
