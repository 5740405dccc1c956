//! The server runs one log holds, each with its own diagnosis.

use schemars::JsonSchema;
use serde::Serialize;

use super::Bottleneck;
#[cfg(doc)]
use super::Report;

/// The server runs one log holds (see [`Report::runs`]).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ServerRuns {
    /// Runs the log holds (runs), including earlier runs not kept in `runs`.
    pub count: usize,
    /// What that means for the report, in words.
    pub text: String,
    /// Each kept run, oldest first; the last is the one the report diagnoses.
    pub runs: Vec<RunSummary>,
}

/// One server run of a log and its own diagnosis.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RunSummary {
    /// 1-based position among the log's runs.
    pub index: usize,
    /// Where the run begins: a log file and a 1-based line.
    pub first: RunLine,
    /// Its last line (the line before the next run, or the file's last line).
    pub last: Option<RunLine>,
    /// Its first timestamp (seconds on the log's clock, as spans' times).
    pub start_s: Option<f64>,
    /// Its last timestamp (seconds on the log's clock).
    pub end_s: Option<f64>,
    /// What separates it from the run before (`None` for the first run).
    pub begins: Option<RunStart>,
    /// Its first timestamp minus the previous run's last (seconds; negative where the clock
    /// steps back).
    pub gap_before_s: Option<f64>,
    /// Its verdict.
    pub bottleneck: Bottleneck,
    /// Its steady server generation throughput (tok/s), when measured.
    pub steady_gen_tok_per_s: Option<f64>,
    /// Median running requests of the scheduler behind its verdict (requests).
    pub running_median: Option<f64>,
    /// Its decode lines that ran as a CUDA (NPU) graph (lines; 0 when no line prints the flag).
    pub decode_lines_with_graph: u64,
    /// Its decode lines that ran without one (lines).
    pub decode_lines_without_graph: u64,
    /// The index of an earlier run that holds the same lines (a log concatenated with itself).
    pub repeats: Option<usize>,
    /// Whether the rest of the report is this run's (the last one).
    pub diagnosed: bool,
    /// The run in words.
    pub text: String,
}

/// A line of a log file.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct RunLine {
    /// The log file, as named on the command line.
    pub source: String,
    /// 1-based line number.
    pub line: u64,
}

/// What shows that a new server run begins.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunStart {
    /// The clock steps back by more than the jitter window (a restart, or a second log pasted
    /// after the first).
    StepBack {
        /// How far back (seconds).
        seconds: f64,
    },
    /// A startup block (`server_args`, weights loaded, KV cache allocated, CUDA graphs
    /// captured) after batch lines: a new process started.
    NewStartup,
    /// No batch line for far longer than any idle period of one run.
    Gap {
        /// The gap (seconds).
        seconds: f64,
    },
}
