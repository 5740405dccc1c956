//! What an answer looks like: SGLang's response bodies and stream events for `/generate`,
//! `/v1/completions` and `/v1/chat/completions`, and the sampling parameters a request gives.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};

/// The words an answer cycles through, one per token.
const WORDS: &[&str] = &[
    "the", "batch", "decode", "token", "cache", "prefill", "server", "queue", "rate", "pool",
];

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Which endpoint a request came to.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Generate,
    Chat,
    Completions,
}

/// What one request needs to produce its answer.
pub(crate) struct Plan {
    pub(crate) kind: Kind,
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) prompt_tokens: u64,
    pub(crate) max_new: u64,
    pub(crate) target: u64,
    pub(crate) reasoning_tokens: u64,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
}

impl Plan {
    fn word(i: u64) -> &'static str {
        WORDS[(i % WORDS.len() as u64) as usize]
    }

    fn finish(&self, produced: u64) -> &'static str {
        if produced < self.target {
            "abort"
        } else if self.target >= self.max_new {
            "length"
        } else {
            "stop"
        }
    }

    fn text(&self, from: u64, to: u64) -> String {
        let mut s = String::with_capacity(((to - from) * 7) as usize);
        for i in from..to {
            s.push_str(Self::word(i));
            s.push(' ');
        }
        s
    }

    fn usage(&self, produced: u64) -> Value {
        json!({"prompt_tokens": self.prompt_tokens, "total_tokens": self.prompt_tokens + produced,
               "completion_tokens": produced, "prompt_tokens_details": null})
    }

    pub(crate) fn full_body(&self, produced: u64, e2e: f64) -> String {
        let created = unix_now() as u64;
        let finish = self.finish(produced);
        let r = self.reasoning_tokens.min(produced);
        match self.kind {
            Kind::Chat => json!({
                "id": self.id, "object": "chat.completion", "created": created, "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": self.text(r, produced),
                    "reasoning_content": if r > 0 { Value::String(self.text(0, r)) } else { Value::Null },
                    "tool_calls": null}, "logprobs": null, "finish_reason": finish, "matched_stop": null}],
                "usage": self.usage(produced),
            }),
            Kind::Completions => json!({
                "id": self.id, "object": "text_completion", "created": created, "model": self.model,
                "choices": [{"index": 0, "text": self.text(0, produced), "logprobs": null,
                    "finish_reason": finish, "matched_stop": null}],
                "usage": self.usage(produced),
            }),
            Kind::Generate => json!({
                "text": self.text(0, produced),
                "meta_info": self.meta(produced, Some(finish), e2e),
            }),
        }
        .to_string()
    }

    fn meta(&self, produced: u64, finish: Option<&str>, e2e: f64) -> Value {
        let fr = match finish {
            Some("length") => json!({"type": "length", "length": produced}),
            Some(t) => json!({"type": t, "matched": null}),
            None => Value::Null,
        };
        json!({"id": self.id, "finish_reason": fr, "prompt_tokens": self.prompt_tokens,
               "completion_tokens": produced, "cached_tokens": 0, "e2e_latency": e2e})
    }

    /// SSE event for token index `i` (0-based).
    pub(crate) fn token_event(&self, i: u64) -> String {
        let created = unix_now() as u64;
        let v = match self.kind {
            Kind::Chat => {
                let w = format!("{} ", Self::word(i));
                let (content, reasoning) = if i < self.reasoning_tokens {
                    (Value::Null, Value::String(w))
                } else {
                    (Value::String(w), Value::Null)
                };
                json!({"id": self.id, "object": "chat.completion.chunk", "created": created, "model": self.model,
                       "choices": [{"index": 0, "delta": {"role": null, "content": content, "reasoning_content": reasoning,
                       "tool_calls": null}, "logprobs": null, "finish_reason": null, "matched_stop": null}], "usage": null})
            }
            Kind::Completions => {
                json!({"id": self.id, "object": "text_completion", "created": created, "model": self.model,
                "choices": [{"index": 0, "text": format!("{} ", Self::word(i)), "logprobs": null, "finish_reason": null,
                "matched_stop": null}], "usage": null})
            }
            Kind::Generate => {
                json!({"text": self.text(0, i + 1), "meta_info": self.meta(i + 1, None, 0.0)})
            }
        };
        format!("data: {v}\n\n")
    }

    /// Final SSE events (finish chunk, usage chunk, `[DONE]`).
    pub(crate) fn tail_events(&self, produced: u64, e2e: f64) -> String {
        let created = unix_now() as u64;
        let finish = self.finish(produced);
        let mut out = String::new();
        match self.kind {
            Kind::Chat => {
                let v = json!({"id": self.id, "object": "chat.completion.chunk", "created": created, "model": self.model,
                    "choices": [{"index": 0, "delta": {"role": null, "content": null, "reasoning_content": null, "tool_calls": null},
                    "logprobs": null, "finish_reason": finish, "matched_stop": null}], "usage": null});
                out.push_str(&format!("data: {v}\n\n"));
            }
            Kind::Completions => {
                let v = json!({"id": self.id, "object": "text_completion", "created": created, "model": self.model,
                    "choices": [{"index": 0, "text": "", "logprobs": null, "finish_reason": finish, "matched_stop": null}], "usage": null});
                out.push_str(&format!("data: {v}\n\n"));
            }
            Kind::Generate => {
                let v = json!({"text": self.text(0, produced), "meta_info": self.meta(produced, Some(finish), e2e)});
                out.push_str(&format!("data: {v}\n\n"));
            }
        }
        if self.include_usage && self.kind != Kind::Generate {
            let v = json!({"id": self.id, "object": "chat.completion.chunk", "created": created, "model": self.model,
                "choices": [], "usage": self.usage(produced)});
            out.push_str(&format!("data: {v}\n\n"));
        }
        out.push_str("data: [DONE]\n\n");
        out
    }

    pub(crate) fn head_event(&self) -> Option<String> {
        (self.kind == Kind::Chat).then(|| {
            let v = json!({"id": self.id, "object": "chat.completion.chunk", "created": unix_now() as u64, "model": self.model,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "reasoning_content": null, "tool_calls": null},
                "logprobs": null, "finish_reason": null, "matched_stop": null}], "usage": null});
            format!("data: {v}\n\n")
        })
    }
}

pub(crate) fn sse_response(body: Body) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

pub(crate) fn json_response(body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(crate) fn json_response_body(body: Body) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The sampling parameters that decide how long an answer is, as SGLang reads them: the
/// OpenAI endpoints' top-level `max_completion_tokens` (else `max_tokens`), `min_tokens` and
/// `ignore_eos`, `/generate`'s `sampling_params.max_new_tokens`, `min_new_tokens` and
/// `ignore_eos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Sampling {
    /// Most tokens to generate; `None` when the request gives none.
    pub(crate) max_new: Option<u64>,
    /// Fewest tokens generated before an end of sequence may end the answer, tokens.
    pub(crate) min_new: u64,
    /// Generation goes on to the most tokens whatever the model would end on.
    pub(crate) ignore_eos: bool,
}

impl Sampling {
    /// Reads a request body of the endpoint `kind`; a field of the wrong type is absent.
    pub(crate) fn of(req: &Value, kind: Kind) -> Self {
        let (params, max) = match kind {
            Kind::Generate => {
                let p = req.get("sampling_params");
                (p, p.and_then(|p| p.get("max_new_tokens")))
            }
            Kind::Chat | Kind::Completions => (
                Some(req),
                req.get("max_completion_tokens")
                    .filter(|v| !v.is_null())
                    .or_else(|| req.get("max_tokens")),
            ),
        };
        let min_key = if kind == Kind::Generate {
            "min_new_tokens"
        } else {
            "min_tokens"
        };
        let get = |k: &str| params.and_then(|p| p.get(k));
        Sampling {
            max_new: max.and_then(Value::as_u64),
            min_new: get(min_key).and_then(Value::as_u64).unwrap_or(0),
            ignore_eos: get("ignore_eos").and_then(Value::as_bool).unwrap_or(false),
        }
    }

    /// The answer's length, tokens, given the most tokens `max_new` (≥ 1) and `natural`, the
    /// length at which the model would emit its end of sequence: `max_new` under `ignore_eos`,
    /// else `natural` raised to `min_new`, at most `max_new` (and at least 1).
    pub(crate) fn length(&self, max_new: u64, natural: u64) -> u64 {
        let max_new = max_new.max(1);
        if self.ignore_eos {
            max_new
        } else {
            natural.max(self.min_new).clamp(1, max_new)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_fields_are_read_at_the_top_level() {
        let req = json!({"prompt": "x", "max_tokens": 512, "ignore_eos": true, "min_tokens": 7});
        let s = Sampling::of(&req, Kind::Completions);
        assert_eq!(
            s,
            Sampling {
                max_new: Some(512),
                min_new: 7,
                ignore_eos: true
            }
        );
        // `max_completion_tokens` wins over `max_tokens`; a null one does not.
        let req = json!({"max_completion_tokens": 64, "max_tokens": 512});
        assert_eq!(Sampling::of(&req, Kind::Chat).max_new, Some(64));
        let req = json!({"max_completion_tokens": null, "max_tokens": 512});
        assert_eq!(Sampling::of(&req, Kind::Chat).max_new, Some(512));
        // `/generate`'s names at the top level are not SGLang's: not read there.
        let req = json!({"text": "x", "ignore_eos": true, "max_tokens": 9});
        assert_eq!(Sampling::of(&req, Kind::Generate), Sampling::default());
    }

    #[test]
    fn generate_fields_are_read_in_sampling_params() {
        let req = json!({"text": "x", "sampling_params": {"max_new_tokens": 300,
                         "min_new_tokens": 20, "ignore_eos": true}});
        assert_eq!(
            Sampling::of(&req, Kind::Generate),
            Sampling {
                max_new: Some(300),
                min_new: 20,
                ignore_eos: true
            }
        );
        // A string where a bool belongs is no `ignore_eos`.
        let req = json!({"sampling_params": {"ignore_eos": "yes"}});
        assert!(!Sampling::of(&req, Kind::Generate).ignore_eos);
    }

    #[test]
    fn length_honours_ignore_eos_and_min_tokens() {
        let eos = Sampling::default();
        // Without ignore_eos the model's own end stands, under the cap.
        assert_eq!(eos.length(512, 137), 137);
        assert_eq!(eos.length(100, 137), 100);
        assert_eq!(eos.length(100, 0), 1);
        let min = Sampling {
            min_new: 200,
            ..eos
        };
        assert_eq!(min.length(512, 137), 200);
        assert_eq!(min.length(150, 137), 150);
        let ignore = Sampling {
            ignore_eos: true,
            ..eos
        };
        // Under ignore_eos every answer runs to max_tokens, however short the model's.
        assert_eq!(ignore.length(512, 137), 512);
        assert_eq!(ignore.length(512, 900), 512);
        assert_eq!(ignore.length(0, 5), 1);
    }
}
