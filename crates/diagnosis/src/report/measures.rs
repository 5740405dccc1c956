//! The measures every figure rests on: time-weighted gauges, spans and their phases, rates
//! and their basis.

use schemars::JsonSchema;
use serde::Serialize;

use super::Unit;
#[cfg(doc)]
use super::{Confidence, Ramp};

/// Time-weighted summary of one gauge over a span (see `throughput_stats::time_weighted_summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct GaugeStats {
    /// Samples used.
    pub n: usize,
    /// Minimum.
    pub min: Option<f64>,
    /// Time-weighted median.
    pub median: Option<f64>,
    /// Time-weighted 90th percentile.
    pub p90: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
    /// Time-weighted mean.
    pub mean: Option<f64>,
}

/// How a scheduler's span was divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SpanBasis {
    /// MSER-5 found a steady state after the ramp (and before the drain).
    Steady {
        /// Batches of 5 lines cut as the ramp.
        ramp_batches: usize,
        /// Batches of 5 lines cut as the drain.
        drain_batches: usize,
    },
    /// The run is burst-shaped (MSER stopped at its search limit): no steady state; the whole
    /// log is used.
    NoSteadyState {
        /// Batches MSER would have cut.
        ramp_batches: usize,
    },
    /// Too few points for phase detection: the whole log is used.
    TooFewPoints,
    /// MSER found no steady state over the whole log, but the phase rules did: the part of a
    /// burst that saturated the server, between its ramp and its drain (`evidence/phases/`).
    SaturatedBurst,
}

impl Span {
    /// Whether a line at `t` (seconds) inside the steady window is left out of the steady
    /// figures all the same: it is in a stall or after a crash, or inside a busy gap (a line
    /// at either end of a gap is the last or first one outside it).
    pub fn left_out_at(&self, t: f64) -> bool {
        self.phases.iter().any(|p| match p.kind {
            PhaseKind::Stalled | PhaseKind::AfterCrash => t >= p.start_s && t <= p.end_s,
            PhaseKind::BusyGap => t > p.start_s && t < p.end_s,
            _ => false,
        })
    }
}

impl SpanBasis {
    /// Whether a steady state was found (not the whole log taken for want of one).
    pub fn is_steady(self) -> bool {
        matches!(self, SpanBasis::Steady { .. } | SpanBasis::SaturatedBurst)
    }
}

/// The spans a scheduler's run divides into.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Span {
    /// Start of the log's batch lines (seconds, log clock).
    pub start_s: f64,
    /// End of the log's batch lines (seconds).
    pub end_s: f64,
    /// Start of the steady span (seconds).
    pub steady_start_s: f64,
    /// End of the steady span (seconds).
    pub steady_end_s: f64,
    /// How finely the log's clock resolves time (seconds): 1.0 when every timestamp in the series
    /// is a whole second (the usual `[YYYY-MM-DD HH:MM:SS]` prefix), so a line stamped `t`
    /// happened somewhere in `[t, t + 1)`; 0.0 when the timestamps carry fractions.
    pub timestamp_resolution_s: f64,
    /// How the span was found.
    pub basis: SpanBasis,
    /// The same, in words.
    pub method: String,
    /// The run's phases from its decode lines, in time order (empty when the scheduler prints
    /// no timestamped decode lines): warm-up, ramp, steady, drain, idle gaps and other bursts.
    /// `steady_start_s`/`steady_end_s` are the steady phase's bounds when one is found.
    pub phases: Vec<Phase>,
}

/// What part of a run a [`Phase`] is (`evidence/phases/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// Tiny batches before the main load (compile, health checks), followed by idle time.
    WarmUp,
    /// The running count or the KV pool still filling.
    Ramp,
    /// The window the headline figures come from.
    Steady,
    /// Nothing waits and the running count falls: the client has stopped sending.
    Drain,
    /// No decode line for many log intervals.
    Idle,
    /// Another activity segment, outside the main one (not used for the headline).
    OtherBurst,
    /// A gap of many log intervals between decode lines during which the server was at work,
    /// not idle: prefill lines kept coming (a long prompt prefilled chunk by chunk, requests
    /// prefilled without decoding), or the KV tokens grew through it by what the decode rate
    /// gives (the lines were left out of the excerpt). SGLang prints a decode line every
    /// `decode_log_interval` steps while requests run and a prefill line for each prefill
    /// batch (`scheduler_metrics_mixin.py`), so such a gap is work the decode lines do not
    /// measure: not steady, and no idle time either (it is a latency the user sees).
    BusyGap,
    /// Decode lines whose `#token` stays the same while requests run, for
    /// `thresholds::STALL_MIN_S` or longer: the run the `stall` rule calls a stall. The KV
    /// slots in use do not move, so no token is decoded (`#token` is the KV slots in use when
    /// the line is printed, `scheduler_metrics_mixin.py`): a hung step or collective. Not
    /// steady: its readings are no decode rate.
    Stalled,
    /// Decode lines of a scheduler after its `Scheduler hit an exception` line (an
    /// out-of-memory error included) or a watchdog timeout: the process that printed the
    /// earlier lines has died or hung (`scheduler.py` `run_scheduler_process` quits the server
    /// on an exception; the watchdog kills it), so these lines are another process's or a
    /// server in its last moments. Not steady.
    AfterCrash,
}

/// One phase of a run.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Phase {
    /// What it is.
    pub kind: PhaseKind,
    /// First line's time (seconds, log clock); for an idle gap, the last line before it.
    pub start_s: f64,
    /// Last line's time (seconds); for an idle gap, the first line after it.
    pub end_s: f64,
    /// Decode lines in it (0 for an idle gap).
    pub lines: usize,
}

/// What a [`Rate`] was measured over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateBasis {
    /// The server's logged gen throughput over its steady span.
    SteadySpan,
    /// The server's logged gen throughput over the whole log (no steady state found).
    WholeLog,
    /// Client completions inside the server's steady span.
    ClientSteadyWindow,
    /// Client completions in the second half of the client's run.
    ClientSecondHalf,
    /// Client completions since its start over the time since then.
    ClientLifetime,
    /// The server's steady token rate over the mean completion length.
    ImpliedByServerTokens,
    /// A benchmark's successful requests over its whole duration.
    BenchmarkWholeRun,
}

impl Rate {
    /// Whether it was measured over a steady span (not a whole log, for want of one).
    pub fn basis_is_steady(&self) -> bool {
        self.basis != RateBasis::WholeLog
    }
}

/// A rate with its interval.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Rate {
    /// The estimate.
    pub value: f64,
    /// Lower bound of the interval.
    pub low: Option<f64>,
    /// Upper bound of the interval.
    pub high: Option<f64>,
    /// Confidence level of the interval (e.g. 0.95).
    pub confidence: f64,
    /// Unit.
    pub unit: Unit,
    /// Window it was measured over (seconds).
    pub window_s: f64,
    /// What it was measured over.
    pub basis: RateBasis,
    /// How it was computed, in words.
    pub method: String,
    /// Server rates: the decode lines it rests on on the scheduler with the fewest (lines; 1
    /// means one sample); `None` for client and benchmark rates.
    pub lines: Option<u32>,
}
