//! Evidence: owned, bounded facts gathered from parsed log records.
//!
//! The builder takes [`sglang_log::Record`]s one at a time (the caller owns the reading), so this
//! crate does no I/O. Everything kept is owned and bounded: per-rank [`Timeline`]s of samples plus
//! exact running aggregates, deduplicated retractions, and the startup lines that describe capacity.

use std::collections::BTreeMap;

use serde::Serialize;
use sglang_log::BenchSummary;

pub mod frozen;
mod gauges;
pub mod merge;
pub mod phases;
pub mod pools;
pub mod requests;
pub mod runs;
pub mod timeline;
pub mod view;

pub use timeline::Timeline;

pub mod alarms;
mod builder;
mod consolidate;
mod events;
pub mod outliers;
mod samples;
mod scheduler;
mod source;
mod startup;
#[cfg(test)]
mod tests;

pub use builder::{EvidenceBuilder, MIN_TIMELINE_CAPACITY, SAMPLE_BUDGET};
pub use consolidate::JoinNote;
pub use events::{
    FailureLines, MAX_RETRACTION_SAMPLES, RetractionEvent, RetractionTotals, Shutdown,
    SourceRetractions,
};
pub(crate) use samples::BatchSample;
pub use samples::{DecodeSample, Occupancy, PrefillSample};
pub use scheduler::{Aggregates, SchedulerKey, SchedulerTimeline};
pub use source::{Loc, PdRole, SourceId, SourceInfo, SourceStats};
pub use startup::Startup;

/// `items` collected into a vector that holds `bound` items from the start (`bound`: the
/// length of the slice they are taken from, an upper bound of their count). A filtered copy of
/// a timeline collected by `collect` grows by doubling: every step copies what it holds and
/// (the binary returns freed memory to the OS at once) faults in fresh pages; reserved once,
/// only the pages written are touched.
pub(crate) fn collect_within<T>(bound: usize, items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = Vec::with_capacity(bound);
    v.extend(items);
    v
}

/// Everything the diagnosis knows from the logs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Evidence {
    /// Input sources in the order they were added.
    pub sources: Vec<SourceInfo>,
    /// Batch-line timelines per scheduler.
    pub schedulers: BTreeMap<SchedulerKey, SchedulerTimeline>,
    /// Deduplicated retraction events in log order: all of them up to
    /// [`MAX_RETRACTION_SAMPLES`], beyond that an evenly spread sample (memory stays bounded on
    /// logs with hundreds of thousands of retractions). Counts and sums come from
    /// [`Self::retraction_totals`], which are exact.
    pub retractions: Vec<RetractionEvent>,
    /// Exact totals over every deduplicated retraction event.
    pub retraction_totals: RetractionTotals,
    /// Retraction lines before deduplication (all ranks).
    pub retraction_lines: u64,
    /// The retraction totals and lines of each source, by [`SourceId`] (shorter when the last
    /// sources hold none): what is counted as the log is read. [`Self::retraction_totals`] and
    /// [`Self::retraction_lines`] are their sum ([`Self::sum_retractions`]), which stays exact
    /// without a file that only repeats another, however thinned [`Self::retractions`] is.
    pub retractions_by_source: Vec<SourceRetractions>,
    /// Startup capacity and memory facts.
    pub startup: Startup,
    /// Watchdog timeouts.
    pub watchdog: FailureLines,
    /// KV transfer failures (PD disaggregation).
    pub kv_transfer_failures: FailureLines,
    /// Of those, the lines whose words name the PD server that wrote them
    /// (`sglang_log::transfer_side`): `(prefill, decode)` lines.
    pub kv_transfer_sides: (u64, u64),
    /// `Using default MoE kernel config … sub-optimal` lines (all ranks).
    pub moe_config_untuned: FailureLines,
    /// `Entering DeepGEMM JIT Pre-Compile session` lines: requests wait while kernels compile
    /// (10-20 min on first use).
    pub jit_compile: FailureLines,
    /// How the server's processes stopped (signal lines).
    pub shutdown: Shutdown,
    /// Batch-line values no scheduler can print, set aside before any estimate
    /// ([`outliers`]).
    pub set_aside: outliers::SetAsideValues,
    /// NCCL timeouts, out-of-memory lines, slow passes, failed health checks, HiCache
    /// prefetches ([`alarms`]).
    pub alarms: alarms::Alarms,
    /// The scheduler's per-request time stats (`ReqTimeStats` lines).
    pub request_times: requests::RequestTimes,
    /// Whether any timestamp lacked a date (times are then seconds since midnight, unwrapped).
    pub dateless_timestamps: bool,
    /// Benchmark summary blocks (`Serving Benchmark Result`, spec §7) found among the lines
    /// that are not server lines, e.g. a CI log that runs server and benchmark together.
    pub benchmarks: Vec<SourcedBench>,
    /// Tracebacks, py-spy dumps and the startup step reached ([`crate::incidents`]).
    pub incidents: crate::incidents::Incidents,
    /// Where this server run lies in the log ([`runs`]); everything above is this run's.
    pub run: runs::RunBounds,
    /// The log's earlier server runs, each its own evidence, oldest first (at most
    /// [`runs::MAX_EARLIER_RUNS`]; their own `earlier_runs` are empty).
    pub earlier_runs: Vec<Evidence>,
    /// Earlier runs beyond [`runs::MAX_EARLIER_RUNS`], not kept (runs).
    pub earlier_runs_dropped: u64,
}

/// A benchmark summary block and the source it was read from.
#[derive(Clone, Debug, Serialize)]
pub struct SourcedBench {
    /// The source (log file) that holds it.
    pub source: SourceId,
    /// The block.
    pub summary: BenchSummary,
}

impl Evidence {
    /// The last batch-line time over all schedulers (seconds), if any line has one.
    pub fn latest_time(&self) -> Option<f64> {
        self.schedulers
            .values()
            .filter_map(|s| s.time_range())
            .map(|r| r.1)
            .reduce(f64::max)
    }

    /// The retraction totals and lines (all ranks) of every source `skip` does not name, summed
    /// in source order from [`Self::retractions_by_source`].
    pub fn sum_retractions(&self, skip: impl Fn(SourceId) -> bool) -> (RetractionTotals, u64) {
        let (mut totals, mut lines) = (RetractionTotals::default(), 0);
        for (s, r) in self.retractions_by_source.iter().enumerate() {
            if !skip(s) {
                totals.merge(&r.totals);
                lines += r.lines;
            }
        }
        (totals, lines)
    }

    /// Source `source`'s share of the retraction totals (the list grown to hold it).
    fn source_retractions(&mut self, source: SourceId) -> Option<&mut SourceRetractions> {
        let v = &mut self.retractions_by_source;
        if v.len() <= source {
            v.resize(source + 1, SourceRetractions::default());
        }
        v.get_mut(source)
    }

    /// Total SGLang events over all sources.
    pub fn total_events(&self) -> u64 {
        self.sources
            .iter()
            .filter_map(|s| s.stats.as_ref())
            .map(|s| s.events)
            .sum()
    }

    /// Total batch lines (prefill + decode) kept over all schedulers.
    pub fn total_batch_lines(&self) -> u64 {
        self.schedulers
            .values()
            .map(|s| s.decode.pushed() + s.prefill.pushed())
            .sum()
    }

    /// Display name of a location: `file:line`.
    pub fn loc_name(&self, loc: Loc) -> String {
        let name = self
            .sources
            .get(loc.source)
            .map(|s| s.name.as_str())
            .unwrap_or("?");
        format!("{name}:{}", loc.line)
    }
}

impl Evidence {
    /// Every scheduler of this run and of the earlier runs ([`Self::earlier_runs`]), keyed as
    /// read (by source): what a source showed over all its lines, whichever run they fell in.
    fn every_run_schedulers(&self) -> impl Iterator<Item = (&SchedulerKey, &SchedulerTimeline)> {
        std::iter::once(self)
            .chain(self.earlier_runs.iter())
            .flat_map(|r| r.schedulers.iter())
    }

    /// Two log sources that are separate server runs, not parts of one: `(earlier, later)`,
    /// where the later one opens with its own startup lines and its batch lines begin after
    /// the earlier one's end (within [`crate::thresholds::JITTER_WINDOW_S`]). Read together
    /// they were joined as rotated parts of one scheduler: two runs' batches (and one run's
    /// limits) in one timeline, with a verdict that changed with the order of the files. The
    /// logs of one run's nodes and ranks overlap in time; a rotated part has no startup lines.
    /// Times are those of the batch lines kept, over every run; `None` when no two sources are
    /// such (or none is timed). Of several such pairs, the one whose later run starts first.
    pub fn separate_runs(&self) -> Option<(SourceId, SourceId)> {
        let mut span: BTreeMap<SourceId, (f64, f64)> = BTreeMap::new();
        for (k, tl) in self.every_run_schedulers() {
            if let (Some(s), Some((a, b))) = (k.source, tl.time_range()) {
                let e = span.entry(s).or_insert((a, b));
                *e = (e.0.min(a), e.1.max(b));
            }
        }
        let opens = |s: SourceId| self.sources.get(s).is_some_and(|x| x.opens_with_startup);
        span.iter()
            .flat_map(|(&a, &(_, a_end))| {
                span.iter().filter_map(move |(&b, &(b_start, _))| {
                    (a != b && opens(b) && b_start >= a_end - crate::thresholds::JITTER_WINDOW_S)
                        .then_some((b_start, a, b))
                })
            })
            .min_by(|x, y| x.0.total_cmp(&y.0).then((x.1, x.2).cmp(&(y.1, y.2))))
            .map(|(_, a, b)| (a, b))
    }

    /// Two log sources of two servers that ran at the same time: `(first, second)` in input
    /// order, each opening with its own startup lines, with batch lines of the same scheduler
    /// (the same DP and PP rank, or none) over overlapping times that are not copies of each
    /// other. Read together, their schedulers would be summed as two "rank 0"s of one server
    /// (issue 30 A4). The logs of one run's nodes show different DP ranks (or, for TP across
    /// nodes, batch lines on one node only); another TP rank's file repeats the same lines; a
    /// rotated part has no startup lines. `None` when no two sources are such.
    pub fn concurrent_servers(&self) -> Option<(SourceId, SourceId)> {
        let opens = |s: SourceId| self.sources.get(s).is_some_and(|x| x.opens_with_startup);
        let keys: Vec<(&SchedulerKey, &SchedulerTimeline)> = self
            .schedulers
            .iter()
            .filter(|(k, _)| k.source.is_some_and(opens))
            .collect();
        for (i, (ka, a)) in keys.iter().enumerate() {
            for (kb, b) in &keys[i + 1..] {
                if ka.source == kb.source || (ka.dp, ka.pp) != (kb.dp, kb.pp) {
                    continue;
                }
                let (Some(x), Some(y)) = (a.time_range(), b.time_range()) else {
                    continue;
                };
                let overlap = x.0.max(y.0) < x.1.min(y.1) - crate::thresholds::JITTER_WINDOW_S;
                let copies = a
                    .overlap_share(b)
                    .is_some_and(|s| s >= crate::thresholds::OVERLAP_SAME_SHARE)
                    || b.overlap_share(a)
                        .is_some_and(|s| s >= crate::thresholds::OVERLAP_SAME_SHARE);
                if overlap && !copies {
                    return Some((ka.source?, kb.source?));
                }
            }
        }
        None
    }

    /// The sources of each PD role ([`SourceInfo::pd_role`]: named by their startup lines or
    /// shown by their batch lines), when there is more than one role:
    /// `(role, sources)` in role order (prefill, then decode), each list in input order. A
    /// prefill instance's log and a decode instance's log are two servers with their own KV
    /// pools, limits and schedulers (their DP ranks share names, not state), so one diagnosis
    /// of both would join unrelated schedulers and take one server's limits for the other's;
    /// `None` when the sources name one role or none.
    pub fn mixed_pd_roles(&self) -> Option<Vec<(PdRole, Vec<SourceId>)>> {
        let mut by_role: BTreeMap<PdRole, Vec<SourceId>> = BTreeMap::new();
        for (id, s) in self.sources.iter().enumerate() {
            if let Some(role) = s.pd_role {
                by_role.entry(role).or_default().push(id);
            }
        }
        (by_role.len() > 1).then(|| by_role.into_iter().collect())
    }
}
