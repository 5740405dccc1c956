//! What could not be concluded, and the sources used, in words.

use super::client_format_words;
use crate::context::Context;
use crate::evidence::JoinNote;
use crate::report::{NotConcluded, NotConcludedReason};

/// A "not concluded" item with its sentence. `detail`: the error or source problem, for the
/// reasons that carry one.
pub fn not_concluded(reason: NotConcludedReason, detail: Option<&str>) -> NotConcluded {
    let d = detail.unwrap_or("");
    let text = match &reason {
        NotConcludedReason::SourceError => d.to_string(),
        NotConcludedReason::EmptyInput { input } => format!("{input} is empty: it holds no lines at all."),
        NotConcludedReason::NoSchedulerLines => "No SGLang scheduler lines (Prefill batch / Decode batch) were found, so nothing about the server's load can be concluded.".into(),
        NotConcludedReason::NoTimedDecodeLines => "No scheduler has two or more timestamped decode lines, so no throughput over time can be given.".into(),
        NotConcludedReason::NoPoolSize if d.is_empty() => "The startup lines (max_total_num_tokens=...) are not in the log and no server info was given, so the KV pool size is known only through token usage.".into(),
        NotConcludedReason::NoPoolSize => format!("The startup lines (max_total_num_tokens=...) are not in the log and {d}, so the KV pool size is known only through token usage."),
        NotConcludedReason::GpuUnreadable => format!("GPU memory could not be read ({d}); free memory comes from the log only."),
        NotConcludedReason::NoGpuData { log_has_memory: true } => "No GPU memory data was given (--gpu / --gpu-snapshot): free memory comes from the log's startup lines only.".into(),
        NotConcludedReason::NoGpuData { log_has_memory: false } => "No GPU memory data was given (--gpu / --gpu-snapshot), and the log prints no free memory after start-up (available_gpu_mem, or the avail mem of the CUDA-graph capture's end line): free GPU memory is unknown, so no change to the KV pool can be checked against it.".into(),
        NotConcludedReason::NoClientRecords => "No client records were given (--client-records / --client-log): the client-side rate cannot be compared with the server's.".into(),
        NotConcludedReason::ClientIsBenchmarkSummary => "The client evidence is a benchmark's summary: whole-run figures only, so the client's rate over time (and its steady window) cannot be measured.".into(),
        NotConcludedReason::ClientUntimed => "The client records carry no completion times, so the client's own rate over time cannot be measured (lengths are still used).".into(),
        NotConcludedReason::ModelConfigUnusable => format!("The model config could not be used: {d}."),
        NotConcludedReason::ClientRecordsSetAside
        | NotConcludedReason::ModelConfigDisagrees
        | NotConcludedReason::ServerInfoDisagrees => d.to_string(),
        NotConcludedReason::NoWhatIfTable => format!("No KV what-if table: {d}."),
        NotConcludedReason::ExpectationUnanswered { has_rate: false } => "--expect was given, but no steady generation rate was measured (no timed decode lines to measure it over), so whether it is reachable cannot be said.".into(),
        NotConcludedReason::ExpectationUnanswered { has_rate: true } => "--expect was given, but the decode lines give no step-time fit (too few lines with running requests and a gen throughput, or one batch size only), so no ceiling or change can be set against it.".into(),
        NotConcludedReason::ThinnedTimelines { schedulers, stride } => format!(
            "{schedulers} scheduler(s) logged more batch lines than are kept as samples (one in up to {stride}): the checks that need every line were not run on them (low readings after idle, prefill passes slowing decode, prefill chunk speed). Stalls are followed on every line."
        ),
        NotConcludedReason::SomeRanksOnly { seen, of } => format!(
            "The log holds {seen} of the server's {of} DP ranks (dp_size): rates and totals cover those ranks only; the whole server does about {:.1}x as much.",
            f64::from(*of) / *seen as f64
        ),
    };
    NotConcluded { reason, text }
}

/// The model config and the log disagree on bytes per token, in words.
pub fn cell_disagreement(config: u64, log: u64) -> String {
    format!(
        "The model config gives {config} bytes per token per GPU but the log's KV allocation gives {log}: the config is not this server's model; the what-if table uses the log's figure, and its fp8 and TP rows come from the config and may be wrong."
    )
}

/// Client records the rates leave out, in words.
pub fn set_aside(s: &crate::report::ClientSummary, a: &crate::report::ClientSetAside) -> String {
    let at = a
        .first_line
        .map(|l| format!(", the first at {}:{l}", s.source))
        .unwrap_or_default();
    match a.reason {
        crate::report::SetAsideReason::EndFarFromOthers { cutoff_s } => format!(
            "{} client record(s){at} end more than {} from the others' median end: set aside as clock errors, not counted in the client's rates.",
            a.records,
            super::fmt_duration(cutoff_s)
        ),
        crate::report::SetAsideReason::NoEndTime => format!(
            "{} of {} completed client records{at} carry no end time: the client's rates count only the timed ones, so they are a lower bound.",
            a.records, s.completed
        ),
    }
}

/// What [`crate::Evidence::consolidated`] joined, in words.
pub fn join_note(n: &JoinNote) -> String {
    match n {
        JoinNote::Repeats { file, of } => {
            format!("{file} repeats {of}: its lines were counted once")
        }
        JoinNote::Continues { file, of } => {
            format!("{file} continues {of} (rotated parts): read as one scheduler")
        }
        JoinNote::Overlaps { file, of } => format!(
            "{file} overlaps {of} with the same lines: read as one scheduler, each line counted once"
        ),
        JoinNote::Reordered {
            scheduler,
            steps_back,
        } => format!(
            "{scheduler}: {steps_back} line(s) out of time order by under {:.0} s were put in order",
            crate::thresholds::JITTER_WINDOW_S
        ),
        JoinNote::EarlierRunsSetAside {
            scheduler,
            runs,
            step_back_s,
            from_line,
        } => format!(
            "{scheduler}: the clock steps back by {step_back_s:.0} s ({runs} runs: a restart or a second run in one log); only the last run, from line {from_line}, is diagnosed"
        ),
    }
}

/// The sources used beside the logs, in words.
pub fn sources(ctx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = &ctx.server {
        out.push(format!("server info: {}", s.source));
    }
    if let Some(m) = &ctx.metrics {
        out.push(format!(
            "/metrics: {} ({} polls)",
            m.source,
            m.samples.len()
        ));
    }
    if let Some(g) = &ctx.gpu {
        out.push(format!("GPU memory: {}", g.source));
    }
    if let Some(m) = &ctx.model {
        out.push(format!("model config: {}", m.source));
    }
    for c in &ctx.clients {
        out.push(format!(
            "client: {} ({}, {} lines, {} unparsed)",
            c.source,
            client_format_words(c.format),
            c.lines,
            c.unparsed_lines
        ));
    }
    out
}

/// The source problem of a fleet instance whose series held points the diagnosis could not
/// use (`rejected` points: NaN, negative, or above `crate::fleet::plausible_max`).
pub fn points_not_used(prometheus: &str, instance: &str, rejected: u64) -> String {
    format!(
        "{prometheus} instance {instance}: {rejected} point(s) not used (NaN, negative or beyond what a server reports)"
    )
}
