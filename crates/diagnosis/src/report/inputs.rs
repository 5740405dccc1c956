//! The inputs read (parse counts, lines set aside) and what the report could not conclude.

use schemars::JsonSchema;
use serde::Serialize;

/// What kind of input a [`InputSummary`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// A log file (or stdin).
    Log,
    /// A live server's `/metrics` polls, read as a scheduler.
    MetricsPolls,
}

/// Counts of one input.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct InputSummary {
    /// Path or `-`.
    pub name: String,
    /// What it is.
    pub kind: InputKind,
    /// Lines read.
    pub lines: u64,
    /// SGLang events recognised.
    pub events: u64,
    /// Prefill batch lines.
    pub prefill_lines: u64,
    /// Decode batch lines.
    pub decode_lines: u64,
    /// Lines not from SGLang's scheduler.
    pub other_lines: u64,
    /// Lines that could not be parsed.
    pub malformed_lines: u64,
    /// The first malformed lines.
    pub malformed: Vec<MalformedLine>,
    /// Lines cut at the 1 MiB line-length cap (also counted as malformed).
    pub long_lines: u64,
    /// Damaged batch lines (fragments that are not `key: value`); their readable fields were
    /// used. Counted among the events, not the malformed lines.
    pub damaged_lines: u64,
    /// The first damaged lines.
    pub damaged: Vec<MalformedLine>,
    /// Batch lines with a value set aside as impossible; their other fields were used.
    pub rejected_lines: u64,
    /// The first values set aside.
    pub rejected: Vec<RejectedValue>,
}

/// A batch-line value set aside as impossible (NaN, infinite, negative, out of range).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RejectedValue {
    /// 1-based line number.
    pub line: u64,
    /// The field as printed.
    pub key: String,
    /// The value as printed.
    pub value: String,
    /// Why it was set aside.
    pub reason: String,
}

/// One malformed line, where it is and why.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MalformedLine {
    /// 1-based line number.
    pub line: u64,
    /// Why it could not be parsed.
    pub reason: String,
    /// Its start, shortened.
    pub excerpt: String,
}

/// Why something could not be concluded.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NotConcludedReason {
    /// A named source could not be read (unreachable server, bad file).
    SourceError,
    /// An input holds no lines at all.
    EmptyInput {
        /// The input's name.
        input: String,
    },
    /// No scheduler (batch) lines anywhere.
    NoSchedulerLines,
    /// No scheduler has two timestamped decode lines.
    NoTimedDecodeLines,
    /// The KV pool size is unknown (no startup lines, no server info).
    NoPoolSize,
    /// GPU memory was asked for and could not be read.
    GpuUnreadable,
    /// No GPU memory source was given.
    NoGpuData {
        /// Whether the log's startup lines give the memory left after the KV pool and CUDA
        /// graphs (`avail mem=`): the only free-memory figure then.
        #[serde(default)]
        log_has_memory: bool,
    },
    /// No client records or logs were given.
    NoClientRecords,
    /// The client evidence is a benchmark's whole-run summary.
    ClientIsBenchmarkSummary,
    /// The client records carry no completion times.
    ClientUntimed,
    /// The model config could not be used.
    ModelConfigUnusable,
    /// Client records were left out of the rates.
    ClientRecordsSetAside,
    /// The model config's KV cell disagrees with the log's: it is another model's config.
    ModelConfigDisagrees,
    /// The server info contradicts the log (another model, another pool or cap): it is another
    /// server's, and was set aside; the log's figures are used.
    ServerInfoDisagrees,
    /// The log holds only some of the server's DP ranks.
    SomeRanksOnly {
        /// DP ranks with batch lines in the log.
        seen: usize,
        /// `dp_size` of the server.
        of: u32,
    },
    /// The KV what-if table could not be built.
    NoWhatIfTable,
    /// `--expect` was given but cannot be answered: it needs the measured steady rate and a
    /// decode step-time fit.
    ExpectationUnanswered {
        /// Whether a steady generation rate was measured (then the fit is what is missing).
        has_rate: bool,
    },
    /// Schedulers logged more batch lines than their timelines keep (one in `stride`, a power
    /// of two): the rules that need every line (`idle_window`, `prefill_interference`,
    /// `prefill_compute`) passed them over.
    ThinnedTimelines {
        /// Schedulers thinned.
        schedulers: usize,
        /// The largest stride among them (lines per kept sample).
        stride: u64,
    },
}

/// One thing the report could not conclude.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct NotConcluded {
    /// Why, as data.
    pub reason: NotConcludedReason,
    /// Why, in words.
    pub text: String,
}
