//! One request of the batch runner: its body, its attempts with retries and backoff, its record.

use super::*;

pub(super) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Shared live counters.
#[derive(Default)]
pub(super) struct Live {
    pub(super) in_flight: AtomicU64,
    pub(super) retries: AtomicU64,
}

/// Everything a request task needs, shared.
pub(super) struct Ctx {
    pub(super) client: SglangClient,
    pub(super) endpoint: Endpoint,
    pub(super) api: BatchApi,
    pub(super) stream: bool,
    /// The request body up to the payload: `{"max_tokens":8,...,"stream":false,`
    /// (serialised once; the payload and the closing brace are appended per request).
    pub(super) body_prefix: Vec<u8>,
    pub(super) retry: RetryPolicy,
    pub(super) live: Live,
    pub(super) key: Option<crate::client::ApiKey>,
    /// Most bytes of one streamed answer (content and reasoning together): the cap of a
    /// non-streamed completion's body ([`ClientConfig::max_json_bytes`]), so that a
    /// stream that never ends cannot grow the answer without bound (the cap of each event
    /// bounds an event, not their sum).
    pub(super) max_answer_bytes: u64,
}

impl Ctx {
    pub(super) fn new(client: SglangClient, cfg: &BatchConfig) -> Result<Self, ClientError> {
        let path = match cfg.api {
            BatchApi::Chat => "/v1/chat/completions",
            BatchApi::Completions => "/v1/completions",
            BatchApi::Generate => "/generate",
        };
        let endpoint = client.endpoint(path)?;
        let mut m = Map::new();
        match cfg.api {
            BatchApi::Generate => {
                m.insert("sampling_params".into(), Value::Object(cfg.params.clone()));
            }
            BatchApi::Chat | BatchApi::Completions => {
                for (k, v) in &cfg.params {
                    m.insert(k.clone(), v.clone());
                }
                if let Some(model) = &cfg.model {
                    m.insert("model".into(), Value::String(model.clone()));
                }
                if cfg.stream {
                    m.insert("stream_options".into(), json!({"include_usage": true}));
                }
            }
        }
        m.insert("stream".into(), Value::Bool(cfg.stream));
        // The payload keys are written per request; drop them from the template.
        for k in ["messages", "prompt", "text"] {
            m.remove(k);
        }
        // ok: serialising a map of JSON values cannot fail.
        let mut body_prefix =
            serde_json::to_vec(&Value::Object(m)).unwrap_or_else(|_| b"{}".to_vec());
        body_prefix.pop(); // the closing '}'
        if body_prefix.len() > 1 {
            body_prefix.push(b',');
        }
        Ok(Ctx {
            client,
            endpoint,
            api: cfg.api,
            stream: cfg.stream,
            body_prefix,
            retry: cfg.retry.clone(),
            live: Live::default(),
            key: cfg.client.api_key.clone(),
            max_answer_bytes: cfg.client.max_json_bytes,
        })
    }

    /// `s` with the API key redacted.
    pub(super) fn scrub(&self, s: Option<String>) -> Option<String> {
        match (&self.key, s) {
            (Some(k), Some(s)) => Some(match k.redact(&s) {
                std::borrow::Cow::Borrowed(_) => s,
                std::borrow::Cow::Owned(o) => o,
            }),
            (_, s) => s,
        }
    }

    /// The JSON body for one prompt.
    pub(super) fn body(&self, payload: &Payload) -> bytes::Bytes {
        let extra = match payload {
            Payload::Prompt(p) => p.len() + 48,
            Payload::Messages(_) => 256,
        };
        let mut b = Vec::with_capacity(self.body_prefix.len() + extra);
        b.extend_from_slice(&self.body_prefix);
        // ok (all `to_writer` calls): writing strings/values into a Vec cannot fail.
        match (self.api, payload) {
            (BatchApi::Chat, Payload::Prompt(p)) => {
                b.extend_from_slice(br#""messages":[{"role":"user","content":"#);
                let _ = serde_json::to_writer(&mut b, p);
                b.extend_from_slice(b"}]");
            }
            (BatchApi::Chat, Payload::Messages(m)) => {
                b.extend_from_slice(br#""messages":"#);
                let _ = serde_json::to_writer(&mut b, m);
            }
            (BatchApi::Completions, Payload::Prompt(p)) => {
                b.extend_from_slice(br#""prompt":"#);
                let _ = serde_json::to_writer(&mut b, p);
            }
            (BatchApi::Generate, Payload::Prompt(p)) => {
                b.extend_from_slice(br#""text":"#);
                let _ = serde_json::to_writer(&mut b, p);
            }
            // rejected by read_input; send an empty prompt rather than invalid JSON
            (_, Payload::Messages(_)) => b.extend_from_slice(br#""prompt":"""#),
        }
        b.push(b'}');
        bytes::Bytes::from(b)
    }
}

/// Lean response shapes for the batch path: only the fields a record
/// needs; everything else is skipped while parsing (no buffering of
/// unknown keys, unlike the public types in [`crate::api`]).
mod lean {
    use serde::Deserialize;

    #[derive(Deserialize, Default)]
    pub struct Usage {
        #[serde(default)]
        pub prompt_tokens: Option<u64>,
        #[serde(default)]
        pub completion_tokens: Option<u64>,
    }

    #[derive(Deserialize, Default)]
    pub struct Message {
        #[serde(default)]
        pub content: Option<String>,
        #[serde(default)]
        pub reasoning_content: Option<String>,
    }

    #[derive(Deserialize, Default)]
    pub struct Choice {
        #[serde(default)]
        pub message: Option<Message>,
        #[serde(default)]
        pub delta: Option<Message>,
        #[serde(default)]
        pub text: Option<String>,
        #[serde(default)]
        pub finish_reason: Option<String>,
    }

    /// A chat or completions response, or one streamed chunk.
    #[derive(Deserialize, Default)]
    pub struct Openai {
        #[serde(default)]
        pub choices: Option<Vec<Choice>>,
        #[serde(default)]
        pub usage: Option<Usage>,
    }

    #[derive(Deserialize, Default)]
    pub struct FinishReason {
        #[serde(default, rename = "type")]
        pub kind: Option<String>,
    }

    #[derive(Deserialize, Default)]
    pub struct MetaInfo {
        #[serde(default)]
        pub prompt_tokens: Option<u64>,
        #[serde(default)]
        pub completion_tokens: Option<u64>,
        #[serde(default)]
        pub finish_reason: Option<FinishReason>,
    }

    /// A native `/generate` response or chunk (`text` cumulative).
    #[derive(Deserialize, Default)]
    pub struct Generate {
        #[serde(default)]
        pub text: Option<String>,
        #[serde(default)]
        pub meta_info: MetaInfo,
    }
}

/// The outcome of one attempt.
#[derive(Default)]
pub(super) struct Answer {
    pub(super) content: Option<String>,
    pub(super) reasoning: Option<String>,
    pub(super) finish_reason: Option<String>,
    pub(super) usage: RecordUsage,
    pub(super) ttft_s: Option<f64>,
}

pub(super) fn usage_of(u: Option<lean::Usage>) -> RecordUsage {
    u.map(|u| RecordUsage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
    })
    .unwrap_or_default()
}

pub(super) fn push_opt(acc: &mut Option<String>, s: Option<&str>) {
    if let Some(s) = s {
        acc.get_or_insert_with(String::new).push_str(s);
    }
}

pub(super) async fn attempt(
    ctx: &Ctx,
    conn: &mut BatchConnection,
    body: bytes::Bytes,
    sent: Instant,
) -> Result<Answer, ClientError> {
    let c = &ctx.client;
    let ep = &ctx.endpoint;
    let mut a = Answer::default();
    let mark = |a: &mut Answer, nonempty: bool| {
        if nonempty && a.ttft_s.is_none() {
            a.ttft_s = Some(sent.elapsed().as_secs_f64());
        }
    };
    match (ctx.api, ctx.stream) {
        (BatchApi::Chat | BatchApi::Completions, false) => {
            let r: lean::Openai = conn.post_json(body).await?;
            let choices = match r.choices {
                None => return Err(no_answer(ep, "no \"choices\" in the response")),
                Some(c) if c.is_empty() => {
                    return Err(no_answer(ep, "\"choices\" is empty"));
                }
                Some(c) => c,
            };
            if let Some(ch) = choices.into_iter().next() {
                match ch.message {
                    Some(m) => {
                        a.content = m.content;
                        a.reasoning = m.reasoning_content;
                    }
                    None => a.content = ch.text,
                }
                a.finish_reason = ch.finish_reason;
            }
            a.usage = usage_of(r.usage);
        }
        (BatchApi::Chat | BatchApi::Completions, true) => {
            let mut s = c.post_stream_bytes::<lean::Openai>(ep, body).await?;
            let mut any_choice = false;
            while let Some(chunk) = s.next().await {
                let chunk = chunk?;
                if chunk.usage.is_some() {
                    a.usage = usage_of(chunk.usage);
                }
                let choices = chunk.choices.unwrap_or_default();
                any_choice |= !choices.is_empty();
                for ch in choices {
                    let (content, reasoning) = match ch.delta {
                        Some(d) => (d.content, d.reasoning_content),
                        None => (ch.text, None),
                    };
                    let ne = content.as_deref().is_some_and(|t| !t.is_empty())
                        || reasoning.as_deref().is_some_and(|t| !t.is_empty());
                    mark(&mut a, ne);
                    push_opt(&mut a.content, content.as_deref());
                    push_opt(&mut a.reasoning, reasoning.as_deref());
                    if ch.finish_reason.is_some() {
                        a.finish_reason = ch.finish_reason;
                    }
                }
                let held = a.content.as_ref().map_or(0, String::len)
                    + a.reasoning.as_ref().map_or(0, String::len);
                if held as u64 > ctx.max_answer_bytes {
                    return Err(answer_too_large(ctx));
                }
            }
            if !any_choice {
                return Err(no_answer(ep, "no chunk of the stream had \"choices\""));
            }
        }
        (BatchApi::Generate, false) => {
            let r: lean::Generate = conn.post_json(body).await?;
            let Some(text) = r.text else {
                return Err(no_answer(ep, "no \"text\" in the response"));
            };
            a.finish_reason = r.meta_info.finish_reason.and_then(|f| f.kind);
            a.usage = RecordUsage {
                prompt_tokens: r.meta_info.prompt_tokens,
                completion_tokens: r.meta_info.completion_tokens,
            };
            a.content = Some(text);
        }
        (BatchApi::Generate, true) => {
            let mut s = c.post_stream_bytes::<lean::Generate>(ep, body).await?;
            while let Some(chunk) = s.next().await {
                let chunk = chunk?;
                let Some(text) = chunk.text else {
                    return Err(no_answer(ep, "a stream chunk has no \"text\""));
                };
                mark(&mut a, !text.is_empty());
                if text.len() as u64 > ctx.max_answer_bytes {
                    return Err(answer_too_large(ctx));
                }
                if let Some(f) = chunk.meta_info.finish_reason.and_then(|f| f.kind) {
                    a.finish_reason = Some(f);
                }
                a.usage = RecordUsage {
                    prompt_tokens: chunk.meta_info.prompt_tokens.or(a.usage.prompt_tokens),
                    completion_tokens: chunk
                        .meta_info
                        .completion_tokens
                        .or(a.usage.completion_tokens),
                };
                a.content = Some(text); // cumulative
            }
        }
    }
    Ok(a)
}

/// A streamed answer past [`Ctx::max_answer_bytes`]: the request's error (not retried: the
/// same prompt would stream as long an answer again).
fn answer_too_large(ctx: &Ctx) -> ClientError {
    ClientError::TooLarge {
        url: crate::error::redact_url(ctx.endpoint.url_str()),
        what: "streamed answer",
        limit_bytes: ctx.max_answer_bytes,
    }
}

pub(super) fn no_answer(ep: &Endpoint, reason: &str) -> ClientError {
    ClientError::NoAnswer {
        url: crate::error::redact_url(ep.url_str()),
        reason: reason.to_string(),
    }
}

pub(super) fn backoff(policy: &RetryPolicy, attempt: u32, retry_after_s: Option<f64>) -> Duration {
    let exp = policy.base_delay.as_secs_f64() * 2f64.powi(attempt.saturating_sub(1).min(30) as i32);
    let cap = exp.min(policy.max_delay.as_secs_f64());
    let jittered = rand::rng().random::<f64>() * cap;
    let floor = retry_after_s
        .unwrap_or(0.0)
        .min(policy.max_delay.as_secs_f64());
    Duration::from_secs_f64(jittered.max(floor))
}

/// The record of a request that failed (after its last attempt).
pub(super) fn failed_record(
    ctx: &Ctx,
    id: String,
    e: ClientError,
    submit_unix_s: f64,
    permit_wait_s: f64,
    (start_unix_s, end_unix_s, latency_s): (f64, f64, f64),
    attempts: u32,
) -> BatchRecord {
    BatchRecord {
        id,
        ok: false,
        submit_unix_s,
        permit_wait_s,
        start_unix_s: Some(start_unix_s),
        end_unix_s,
        latency_s: Some(latency_s),
        attempts,
        error: ctx.scrub(Some(e.to_string())),
        error_kind: Some(e.kind().to_string()),
        ..Default::default()
    }
}

/// The record of a prompt whose input line could not be read again when its turn came
/// (the input changed during the run): not sent, its error names the file and line.
pub(super) fn input_record(
    id: String,
    why: String,
    submit_unix_s: f64,
    permit_wait_s: f64,
) -> BatchRecord {
    BatchRecord {
        id,
        ok: false,
        submit_unix_s,
        permit_wait_s,
        end_unix_s: unix_now(),
        attempts: 0,
        error: Some(why),
        error_kind: Some("input".into()),
        ..Default::default()
    }
}

/// The `Retry-After` of a 429 or 503, seconds.
pub(super) fn retry_after(e: &ClientError) -> Option<f64> {
    match e {
        ClientError::Status { retry_after_s, .. } => *retry_after_s,
        _ => None,
    }
}

/// Runs one prompt to a record (holding its permit throughout).
pub(super) async fn run_one(
    ctx: &Ctx,
    conn: &mut BatchConnection,
    p: Prompt,
    submit_unix_s: f64,
    permit_wait_s: f64,
) -> BatchRecord {
    let body = ctx.body(&p.payload);
    let mut attempts = 0;
    // `--timeout` bounds the request in all, its retries and their waits included.
    let first_sent = Instant::now();
    let budget = ctx.client.config().generate_timeout;
    loop {
        attempts += 1;
        let start_unix_s = unix_now();
        let sent = Instant::now();
        let res = attempt(ctx, conn, body.clone(), sent).await;
        let latency_s = sent.elapsed().as_secs_f64();
        let end_unix_s = start_unix_s + latency_s;
        match res {
            Ok(a) => {
                return BatchRecord {
                    id: p.id,
                    ok: true,
                    // Answers are data: never rewritten (a short key would change words).
                    content: a.content,
                    reasoning_content: a.reasoning,
                    finish_reason: a.finish_reason,
                    usage: a.usage,
                    submit_unix_s,
                    permit_wait_s,
                    start_unix_s: Some(start_unix_s),
                    ttft_s: a.ttft_s,
                    end_unix_s,
                    latency_s: Some(latency_s),
                    attempts,
                    error: None,
                    error_kind: None,
                };
            }
            Err(e) if e.is_retryable() && attempts < ctx.retry.max_attempts => {
                let delay = backoff(&ctx.retry, attempts, retry_after(&e));
                if first_sent.elapsed() + delay < budget {
                    ctx.live.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(delay).await;
                    continue;
                }
                return failed_record(
                    ctx,
                    p.id,
                    e,
                    submit_unix_s,
                    permit_wait_s,
                    (start_unix_s, end_unix_s, latency_s),
                    attempts,
                );
            }
            Err(e) => {
                return failed_record(
                    ctx,
                    p.id,
                    e,
                    submit_unix_s,
                    permit_wait_s,
                    (start_unix_s, end_unix_s, latency_s),
                    attempts,
                );
            }
        }
    }
}
