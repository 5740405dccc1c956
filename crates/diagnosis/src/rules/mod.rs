//! The diagnosis rules, one file each, written like clippy lints: every file starts with what
//! it detects, why it matters, the evidence it needs, what to change and the SGLang source it
//! follows, exposes pure functions from typed evidence to typed facts, and carries its own
//! `check(lines, expected)` tests on real log lines.
//!
//! Rules never write English and never read text the project wrote: they return facts
//! (numbers, line ranges), and `crate::narrative` words them. Which verdict wins when several
//! rules hold is decided in one place, `crate::verdict`.
//!
//! Two kinds of rule:
//! - *scheduler rules* judge one scheduler's steady span ([`SchedulerView`]) and name its
//!   bottleneck: [`pd_transfer`], [`kv_cache_bound`], [`running_cap`], [`prefill_limit`],
//!   [`conservative_admission`], [`client_bound`];
//! - *finding rules* look over all schedulers, the retractions, the failure lines, the
//!   benchmark runs or the client's view: the rest;
//! - the *fleet rule* [`fleet_imbalance`] compares the instances of a fleet (and each
//!   instance's DP ranks) read from Prometheus, after each is diagnosed (`crate::fleet`).

use crate::evidence::view::SchedulerView;
use crate::evidence::{Evidence, Loc, SchedulerTimeline};
use crate::report::{CapacitySummary, RetractionSummary, SourceRange};

pub mod admission;
pub mod bench_concurrency_limit;
pub mod bench_failures;
pub mod bench_not_streamed;
pub mod bench_queueing;
pub mod bench_tokens;
pub mod client_bound;
pub mod client_gap;
pub mod conservative_admission;
pub mod cuda_graph;
pub mod decode_compute;
pub mod dp_imbalance;
pub mod drain;
pub mod fleet_imbalance;
pub mod held_admission;
pub mod idle_window;
pub mod kv_cache_bound;
pub mod kv_transfer;
pub mod littles_law;
pub mod moe_config;
pub mod oom;
pub mod pd_transfer;
pub mod prefill_compute;
pub mod prefill_interference;
pub mod prefill_limit;
pub mod prefix_reuse;
pub mod ramp_only;
pub mod rejected_requests;
pub mod retraction;
pub mod running_cap;
pub mod scheduler_exception;
pub mod speculative;
pub mod stall;
pub mod startup_incomplete;
pub mod tiny_pool;
pub mod watchdog;

#[cfg(test)]
pub(crate) mod testing;

/// What the finding rules read: the evidence, every scheduler's view, and the capacity and
/// retraction facts.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// The evidence (after consolidation).
    pub ev: &'a Evidence,
    /// One view per scheduler, in key order.
    pub views: &'a [SchedulerView<'a>],
    /// The capacity facts.
    pub capacity: &'a CapacitySummary,
    /// The retraction totals.
    pub retractions: &'a RetractionSummary,
}

impl Input<'_> {
    /// The name of a source.
    pub fn source_name(&self, source: usize) -> String {
        self.ev
            .sources
            .get(source)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    /// A line range in one source.
    pub fn range(&self, source: usize, first_line: u64, last_line: u64) -> SourceRange {
        SourceRange {
            source: self.source_name(source),
            first_line,
            last_line,
            last_source: None,
        }
    }

    /// The lines from `first` to `last`, which may lie in another source (a scheduler whose
    /// rotated logs were joined).
    pub fn span(&self, first: Loc, last: Loc) -> SourceRange {
        SourceRange {
            last_source: (last.source != first.source).then(|| self.source_name(last.source)),
            ..self.range(first.source, first.line, last.line)
        }
    }

    /// The whole range of a scheduler's batch lines: from its first line to its last, in one
    /// source or across the rotated parts it was joined from.
    pub fn timeline_range(&self, tl: &SchedulerTimeline) -> Option<SourceRange> {
        Some(self.span(tl.first?, tl.last?))
    }

    /// One line.
    pub fn line(&self, loc: Loc) -> SourceRange {
        self.range(loc.source, loc.line, loc.line)
    }

    /// The source of a scheduler's first batch line (0 when it has none).
    pub fn source_of(&self, tl: &SchedulerTimeline) -> usize {
        tl.first.map(|l| l.source).unwrap_or(0)
    }
}
