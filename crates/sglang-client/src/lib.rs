//! Typed async client for an SGLang server, and a batch runner that cannot
//! lose or duplicate work.
//!
//! * [`SglangClient`]: `/health`, `/health_generate`, `/server_info`
//!   (→ `/get_server_info`), `/model_info` (→ `/get_model_info`), `/metrics`
//!   ([`MetricsSnapshot`]), `/generate`, `/v1/chat/completions`,
//!   `/v1/completions`, streaming (SSE) and not. One `reqwest::Client`
//!   with connect and total timeouts and a stall timeout on streams; an
//!   optional bearer key that is never printed (and is redacted from what a
//!   server echoes back). Every body is read under a cap (2 MiB info JSON,
//!   16 MiB completion JSON, 64 MiB `/metrics`, 1 MiB per server-sent event,
//!   64 KiB of an error body), so a hostile server cannot grow this process's memory.
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
mod out_lock;
pub mod prometheus;
pub mod redact;
mod sse;

pub use api::{ChatCompletion, Completion, GenerateResponse, Usage};
pub use client::{
    API_KEY_ENV, ApiKey, BatchConnection, ClientConfig, DEFAULT_MAX_IN_FLIGHT_BODY_BYTES,
    DEFAULT_MAX_INFO_BYTES, DEFAULT_MAX_JSON_BYTES, DEFAULT_MAX_METRICS_BYTES,
    DEFAULT_MAX_METRICS_LABEL_SETS, DEFAULT_MAX_METRICS_SERIES, DEFAULT_MAX_SSE_EVENT_BYTES,
    ERROR_BODY_READ_BYTES, Endpoint, SglangClient,
};
pub use error::ClientError;
pub use info::{InfoError, InternalState, MemoryUsage, ModelInfo, ServerInfo};
pub use loads::{Loads, RankLoad};
pub use metrics::{
    ForwardTimer, Histogram, LabeledMetrics, MetricsReader, MetricsSnapshot, NotSummed, Occupancy,
};
pub use prometheus::{PromError, PrometheusClient, RangeSeries};
pub use redact::Secrets;
