//! Response shapes of the generation endpoints: native `/generate` and the
//! OpenAI-compatible `/v1/chat/completions` and `/v1/completions`
//! (`python/sglang/srt/entrypoints/openai/protocol.py`). Only the fields the
//! tool reads are typed; everything else is kept in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Token accounting of one request (OpenAI `usage`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// Prompt + generated tokens.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// Other keys (e.g. `prompt_tokens_details`, `reasoning_tokens`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A chat message (`choices[i].message` or a streamed `delta`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `assistant` in responses (often absent in deltas).
    #[serde(default)]
    pub role: Option<String>,
    /// Answer text.
    #[serde(default)]
    pub content: Option<String>,
    /// Reasoning text, when the server runs a reasoning parser.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// Other keys (`tool_calls`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One choice of a chat completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatChoice {
    /// Choice index.
    #[serde(default)]
    pub index: u32,
    /// Full message (non-streaming).
    #[serde(default)]
    pub message: Option<ChatMessage>,
    /// Increment (streaming).
    #[serde(default)]
    pub delta: Option<ChatMessage>,
    /// `stop`, `length`, `abort`, ... (None until the last chunk).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Other keys (`logprobs`, `matched_stop`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `/v1/chat/completions` response or one streamed chunk of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    /// Response id.
    #[serde(default)]
    pub id: Option<String>,
    /// Model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Choices (one unless `n` > 1; empty in a usage-only final chunk).
    #[serde(default)]
    pub choices: Vec<ChatChoice>,
    /// Token usage (in streams only with `stream_options.include_usage`).
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One choice of a `/v1/completions` response or chunk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionChoice {
    /// Choice index.
    #[serde(default)]
    pub index: u32,
    /// Generated text (the increment in a stream).
    #[serde(default)]
    pub text: String,
    /// Finish reason.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `/v1/completions` response or one streamed chunk of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Response id.
    #[serde(default)]
    pub id: Option<String>,
    /// Choices.
    #[serde(default)]
    pub choices: Vec<CompletionChoice>,
    /// Token usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `meta_info` of a native `/generate` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetaInfo {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Generated tokens so far (cumulative in a stream).
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// Prompt tokens served from the radix cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    /// `{"type": "stop"|"length"|"abort", ...}`; None until finished.
    #[serde(default)]
    pub finish_reason: Option<Value>,
    /// Server-side end-to-end latency, seconds (recent versions).
    #[serde(default)]
    pub e2e_latency: Option<f64>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl MetaInfo {
    /// The finish reason type as a string (`stop`, `length`, `abort`).
    pub fn finish_type(&self) -> Option<String> {
        match &self.finish_reason {
            Some(Value::Object(m)) => m.get("type").and_then(Value::as_str).map(str::to_string),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        }
    }
}

/// A native `/generate` response (or one streamed chunk: `text` is then the
/// cumulative text so far).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerateResponse {
    /// Generated text.
    #[serde(default)]
    pub text: String,
    /// Token counts and finish reason.
    #[serde(default)]
    pub meta_info: MetaInfo,
    /// Other keys (`output_ids`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
