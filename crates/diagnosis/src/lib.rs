//! Evidence → findings → report, for SGLang throughput problems.
//!
//! This crate is pure: it takes parsed records (from `sglang-log`) and values, never paths or
//! URLs, so every conclusion is testable without files, servers or GPUs. The flow, in
//! [`pipeline`]: [`EvidenceBuilder`] (bounded, owned facts per scheduler) → views over each
//! scheduler's steady span ([`evidence::view`]) → [`rules`] (one file per detector, typed facts
//! out, its finding's words beside it) → [`verdict`] (the one place that picks the bottleneck)
//! → [`narrative`] (formats and assembles: the rest of the English) → [`Report`] (data only).
//! [`fleet`] runs the same pipeline on each instance of a fleet read from Prometheus, and
//! compares the instances.
//!
//! Design decision: the builder keeps per-scheduler [`evidence::Timeline`]s that decimate when
//! full, plus exact aggregates (peaks, sums). Memory stays bounded for multi-gigabyte logs at the
//! cost of summaries over a thinned (evenly spread) sample when a run is very long.
#![deny(missing_docs)]

pub mod bench;
pub mod capacity;
pub mod client_view;
pub mod context;
pub mod error;
pub mod evidence;
pub mod expectation;
pub mod fleet;
pub mod incidents;
pub mod narrative;
pub mod pipeline;
pub mod projection;
pub mod recommend;
pub mod report;
pub mod rules;
pub mod thresholds;
pub mod verdict;

pub use context::{
    Context, Expectation, GpuFacts, GpuMemory, MetricsFacts, MetricsSample, ModelFacts, ServerFacts,
};
pub use error::WhatIfUnavailable;
pub use evidence::{Evidence, EvidenceBuilder, Loc, SchedulerKey, SourceId};
pub use pipeline::{diagnose, diagnose_owned, diagnose_with};
pub use report::{Bottleneck, Confidence, Figure, Finding, FindingKind, Report, SCHEMA_VERSION};
