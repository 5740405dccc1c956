//! Evidence → findings → report, for SGLang throughput problems.
//!
//! This crate is pure: it takes parsed records (from `sglang-log`) and values, never paths or
//! URLs, so every conclusion is testable without files, servers or GPUs. The flow is
//! [`EvidenceBuilder`] (bounded, owned facts per scheduler) → [`diagnose`] (steady span,
//! time-weighted summaries from `throughput-stats`, classification) → [`Report`].
//!
//! Design decision: the builder keeps per-scheduler [`timeline::Timeline`]s that decimate when
//! full, plus exact aggregates (peaks, sums). Memory stays bounded for multi-gigabyte logs at the
//! cost of summaries over a thinned (evenly spread) sample when a run is very long.
#![deny(missing_docs)]

pub mod analysis;
pub mod bench;
pub mod client;
pub mod context;
pub mod evidence;
mod extended;
pub mod report;
pub mod timeline;

pub use analysis::{diagnose, diagnose_with};
pub use client::{ClientEvidence, parse_client};
pub use context::{
    Context, GpuFacts, GpuMemory, MetricsFacts, MetricsSample, ModelFacts, ServerFacts,
};
pub use evidence::{Evidence, EvidenceBuilder, Loc, SchedulerKey, SourceId};
pub use report::{Bottleneck, Confidence, Figure, Finding, FindingKind, Report, SCHEMA_VERSION};
