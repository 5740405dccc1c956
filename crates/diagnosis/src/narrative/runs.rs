//! The server runs of one log, in words.

use super::{bottleneck_label, count, fmt_duration};
use crate::report::{RunLine, RunStart, RunSummary, ServerRuns};

/// Seconds on the log's clock as a time of day, `HH:MM:SS`.
fn clock(s: f64) -> String {
    let s = s.rem_euclid(86_400.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn lines(first: &RunLine, last: Option<&RunLine>) -> String {
    match last {
        Some(l) if l.source == first.source => {
            format!("{}:{}-{}", first.source, first.line, l.line)
        }
        Some(l) => format!("{}:{} to {}:{}", first.source, first.line, l.source, l.line),
        None => format!("{}:{}", first.source, first.line),
    }
}

/// One run in a sentence: its lines and times, what began it, its verdict and steady rate.
pub fn run_summary(r: &RunSummary) -> String {
    let mut out = format!("Run {}, {}", r.index, lines(&r.first, r.last.as_ref()));
    if let (Some(a), Some(b)) = (r.start_s, r.end_s) {
        out.push_str(&format!(
            " ({} to {}, {})",
            clock(a),
            clock(b),
            fmt_duration(b - a)
        ));
    }
    let previous = r.index.saturating_sub(1);
    match r.begins {
        None => {}
        Some(RunStart::StepBack { seconds }) => out.push_str(&format!(
            ", begins where the clock steps back {} from the end of run {previous}",
            fmt_duration(seconds)
        )),
        Some(RunStart::NewStartup) => {
            out.push_str(", begins with a new startup block");
            if let Some(g) = r.gap_before_s.filter(|g| *g >= 0.0) {
                out.push_str(&format!(" {} after run {previous} ends", fmt_duration(g)));
            }
        }
        Some(RunStart::Gap { seconds }) => out.push_str(&format!(
            ", begins after {} without a batch line",
            fmt_duration(seconds)
        )),
    }
    out.push_str(&format!(": {}", bottleneck_label(r.bottleneck)));
    if let Some(v) = r.steady_gen_tok_per_s {
        out.push_str(&format!(", {} tok/s steady", count(v.round() as u64)));
    }
    if let Some(j) = r.repeats {
        out.push_str(&format!("; the same lines as run {j}"));
    }
    if r.diagnosed {
        out.push_str(" (the run this report diagnoses)");
    }
    out.push('.');
    out
}

/// What a log of several runs means for the report.
pub fn server_runs(s: &ServerRuns) -> String {
    let mut out = format!(
        "This log holds {} server runs (a restart, a second startup block, a long silence or logs pasted together): the report is the last run's",
        s.count
    );
    if let Some(last) = s.runs.last() {
        out.push_str(&format!(", from {}:{}", last.first.source, last.first.line));
    }
    out.push_str("; each earlier run was diagnosed on its own.");
    let kept = s.runs.len();
    if s.count > kept {
        out.push_str(&format!(
            " The {} oldest runs were not kept.",
            count((s.count - kept) as u64)
        ));
    }
    if let Some(c) = graph_comparison(&s.runs) {
        out.push_str(&c);
    }
    if let Some(r) = s.runs.iter().find(|r| r.repeats.is_some())
        && let Some(j) = r.repeats
    {
        out.push_str(&format!(
            " Run {} repeats the lines of run {j} (a log given twice): its verdict and figures are those of one copy.",
            r.index
        ));
    }
    out
}

/// Two runs at about the same batch, one decoding without CUDA graphs on every line and one
/// with them on every line: what the graphs were worth, from the two steady rates.
fn graph_comparison(runs: &[RunSummary]) -> Option<String> {
    use crate::thresholds as th;
    let eager = runs
        .iter()
        .find(|r| r.decode_lines_without_graph > 0 && r.decode_lines_with_graph == 0)?;
    let graphs = runs
        .iter()
        .find(|r| r.decode_lines_with_graph > 0 && r.decode_lines_without_graph == 0)?;
    let (a, b) = (eager.steady_gen_tok_per_s?, graphs.steady_gen_tok_per_s?);
    let (ra, rb) = (eager.running_median?, graphs.running_median?);
    if a <= 0.0 || (ra - rb).abs() > th::SAME_BATCH_SHARE * ra.max(rb) {
        return None;
    }
    Some(format!(
        " Run {} decoded without CUDA graphs (graph flag False on its {} decode lines) at {} tok/s, run {} with them (True on its {}) at {} tok/s, both at ~{rb:.0} running requests: the graphs were worth {:+.0}%.",
        eager.index,
        eager.decode_lines_without_graph,
        count(a.round() as u64),
        graphs.index,
        graphs.decode_lines_with_graph,
        count(b.round() as u64),
        (b / a - 1.0) * 100.0
    ))
}
