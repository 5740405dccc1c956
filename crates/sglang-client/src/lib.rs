//! Typed async client for an SGLang server, and a batch runner that cannot
//! lose or duplicate work.
//!
//! * [`SglangClient`]: `/health`, `/health_generate`, `/server_info`
//!   (→ `/get_server_info`), `/model_info` (→ `/get_model_info`), `/metrics`
//!   ([`MetricsSnapshot`]), `/generate`, `/v1/chat/completions`,
//!   `/v1/completions`, streaming (SSE) and not. One `reqwest::Client`
//!   with connect and total timeouts; an optional bearer key that is never
//!   printed.
//! * [`PrometheusClient`]: `/api/v1/series` and `/api/v1/query_range` of
//!   the Prometheus that scrapes a fleet, split so no request is too large.
//! * [`ServerInfo`] decodes the info payload of every SGLang version
//!   field by field; what it does not know is kept, what has the wrong type
//!   is reported, nothing fails the whole payload.
//! * [`batch::run_batch`] sends a JSONL file of prompts with bounded
//!   concurrency and appends one JSON line per finished request, with
//!   client-side timings (submit, permit wait, TTFT, end).
//!
//! Design decision: the batch output file is the only state. Each record is
//! written whole by one writer task in a single `write` call, and a rerun
//! skips the ids already there. The cost: a request that finished but was
//! not yet written when the process died is sent again on resume (the
//! server does that work twice), which is the price for never writing a
//! record twice.
#![deny(missing_docs)]

pub mod api;
pub mod batch;
mod client;
pub mod error;
pub mod exposition;
pub mod info;
pub mod loads;
pub mod metrics;
pub mod prometheus;

pub use api::{ChatCompletion, Completion, GenerateResponse, Usage};
pub use client::{API_KEY_ENV, ApiKey, BatchConnection, ClientConfig, Endpoint, SglangClient};
pub use error::ClientError;
pub use info::{InfoError, InternalState, MemoryUsage, ModelInfo, ServerInfo};
pub use loads::{Loads, RankLoad};
pub use metrics::{Histogram, LabeledMetrics, MetricsSnapshot};
pub use prometheus::{PromError, PrometheusClient, RangeSeries};
