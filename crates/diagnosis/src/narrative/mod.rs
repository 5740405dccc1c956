//! The English that is no rule's own: the headline, the recommendations' words, the "not
//! concluded" sentences, the `method` of every rate and span, the words for enums, and the
//! findings that are no rule's (the capacity model's, a short sample's adequacy). Every rule
//! words its own finding beside its check, with the shared formatting of `words`: a finding
//! rule in `crate::rules::Rule::finding`, a verdict rule in its `finding` function, which
//! [`bottleneck`] picks by the verdict's reason and completes with the figures every verdict
//! shares. Everything here turns typed facts into text: it formats numbers and assembles
//! sections; nothing here decides.

mod expectation;
mod findings;
mod headline;
mod incidents;
mod notes;
mod recommendations;
mod runs;
pub(crate) mod words;

pub use expectation::expectation;
pub use findings::*;
pub use headline::headline;
pub use incidents::incident_headline;
pub use notes::{cell_disagreement, join_note, not_concluded, points_not_used, set_aside, sources};
pub use recommendations::recommendation;
pub use runs::{run_summary, server_runs};
pub use words::{
    bottleneck_label, confidence_pct, count, fmt_duration, frame_words, interval, num, step_words,
};

use sglang_log::ClientFormat;

use crate::capacity::MemorySource;
use crate::report::{Bottleneck, PhaseKind, Rate, RateBasis, Report, Span, SpanBasis};
use crate::thresholds as th;

/// A short name for one scheduler's verdict: a client-bound PD decode node is fed by the
/// prefill side.
pub fn scheduler_verdict_label(s: &crate::report::SchedulerSummary) -> &'static str {
    match s.bottleneck {
        Bottleneck::ClientBound if s.pd_decode => "fed by the prefill side",
        b => bottleneck_label(b),
    }
}

/// How a client file was read, in words.
pub fn client_format_words(f: ClientFormat) -> &'static str {
    match f {
        ClientFormat::TimedRecords => "per-request records with times",
        ClientFormat::UntimedRecords => "per-request records without times",
        ClientFormat::ProgressLog => "progress log",
        ClientFormat::BenchmarkSummary => "benchmark summary",
        ClientFormat::Unknown => "unrecognised",
    }
}

/// The program that printed a benchmark block, in words; `None` when the block does not tell.
pub fn bench_client_words(c: sglang_log::BenchClient) -> Option<&'static str> {
    use sglang_log::BenchClient as C;
    match c {
        C::SglangBenchServing => Some("SGLang bench_serving"),
        C::VllmBenchServe => Some("vLLM benchmark_serving (vllm bench serve)"),
        C::SglangMultiTurn => Some("SGLang multi-turn benchmark"),
        C::Aiperf => Some("NVIDIA AIPerf"),
        C::Guidellm => Some("GuideLLM"),
        C::LlmdReport => Some("llm-d Benchmark Report"),
        C::Unknown => None,
    }
}

/// `Fits` → `fits`, `Uncertain` → `uncertain`, `OomLikely` → `OOM likely`.
pub fn feasibility_label(f: kv_capacity::Feasibility) -> &'static str {
    match f {
        kv_capacity::Feasibility::Fits => "fits",
        kv_capacity::Feasibility::Uncertain => "uncertain",
        kv_capacity::Feasibility::OomLikely => "OOM likely",
    }
}

/// The caveat of a server rate that rests on few decode lines, e.g. `one sample`; `None` for a
/// rate over time from several lines. `dp_ranks`: schedulers summed.
pub fn samples_note(r: &Rate, dp_ranks: usize) -> Option<String> {
    let n = r.lines?;
    let per_rank = if dp_ranks > 1 {
        format!(" per DP rank, summed over {dp_ranks} ranks")
    } else {
        String::new()
    };
    if n <= 1 && dp_ranks > 1 {
        // the fewest lines of any rank: the others may hold many
        Some(format!(
            "summed over {dp_ranks} DP ranks, one sample on the sparsest"
        ))
    } else if n <= 1 {
        Some(format!("one sample{per_rank}"))
    } else if r.window_s <= 0.0 {
        Some(format!(
            "mean of {n} decode lines that share one timestamp{per_rank}: few samples"
        ))
    } else {
        None
    }
}

/// How a rate was computed, in words.
pub fn rate_method(r: &Rate) -> String {
    let with_interval = r.low.is_some();
    match r.basis {
        RateBasis::SteadySpan | RateBasis::WholeLog => format!(
            "time-weighted mean of the logged gen throughput {}, {}, summed over DP ranks",
            if r.basis == RateBasis::SteadySpan {
                "over the steady span"
            } else {
                "over the whole log (no steady state found)"
            },
            if with_interval {
                "batch-means interval".to_string()
            } else {
                format!(
                    "no interval (fewer than {} decode lines)",
                    th::MIN_LINES_FOR_INTERVAL
                )
            }
        ),
        RateBasis::ClientSteadyWindow => "completions in the server's steady span / its length, exact Poisson (Garwood) interval".into(),
        RateBasis::ClientSecondHalf => "completions in the second half of the client's run / its length, exact Poisson (Garwood) interval".into(),
        RateBasis::ClientLifetime => "completions since the client's start / time since then (lifetime average)".into(),
        RateBasis::ImpliedByServerTokens => "server steady gen throughput / mean completion tokens, delta-method interval".into(),
        RateBasis::BenchmarkWholeRun => "benchmark: successful requests / benchmark duration (whole run, ramp and drain included), exact Poisson (Garwood) interval".into(),
    }
}

/// How a span was found, in words, with the phases left out of it.
pub fn span_method(s: &Span) -> String {
    let mut out = span_basis_words(s);
    let left_out: Vec<String> = s
        .phases
        .iter()
        .filter(|p| p.kind != PhaseKind::Steady)
        .map(|p| {
            let kind = match p.kind {
                PhaseKind::WarmUp => "warm-up",
                PhaseKind::Ramp => "ramp",
                PhaseKind::Steady => "steady",
                PhaseKind::Drain => "drain",
                PhaseKind::Idle => "idle",
                PhaseKind::OtherBurst => "another burst",
                PhaseKind::BusyGap => "busy gap",
                PhaseKind::Stalled => "stalled",
                PhaseKind::AfterCrash => "after a crash",
            };
            if p.lines > 0 {
                format!(
                    "{kind} {} ({} lines)",
                    fmt_duration(p.end_s - p.start_s),
                    p.lines
                )
            } else {
                format!("{kind} {}", fmt_duration(p.end_s - p.start_s))
            }
        })
        .collect();
    if !left_out.is_empty() {
        out.push_str("; left out of the steady figures: ");
        out.push_str(&left_out.join(", "));
    }
    out
}

fn span_basis_words(s: &Span) -> String {
    match s.basis {
        SpanBasis::Steady {
            ramp_batches,
            drain_batches,
        } => format!(
            "MSER-5 on running requests: {ramp_batches} ramp batch(es) of 5 lines cut{}",
            if drain_batches > 0 {
                format!(", {drain_batches} drain batch(es) cut")
            } else {
                String::new()
            }
        ),
        SpanBasis::NoSteadyState { ramp_batches } => format!(
            "whole log: no steady state found (MSER-5 on running requests: {ramp_batches} ramp batch(es) of 5 lines cut; the ramp may not have ended)"
        ),
        SpanBasis::TooFewPoints => "whole log (too few points for phase detection)".into(),
        SpanBasis::SaturatedBurst => "MSER-5 found no steady state over the whole burst; the span is the part that saturated the server, between its ramp and its drain".into(),
    }
}

/// Where a capacity model's memory figure came from, in words.
pub fn memory_source(m: &MemorySource) -> String {
    match m {
        MemorySource::GpuTotal(src) => format!("GPU total memory ({src})"),
        MemorySource::LoadWeightLine => {
            "avail mem + mem usage of the log's `Load weight end` line".into()
        }
        MemorySource::LogAvailableAfterGraphs {
            need_gib,
            chunk_tokens,
            chunk_configured,
        } => format!(
            "the log's available_gpu_mem after CUDA graph capture, at start-up; runs with a {chunk_tokens}-token prefill chunk{} were seen to serve with {need_gib:.2} GiB of it left",
            if *chunk_configured {
                ""
            } else {
                ", SGLang's default chunk"
            }
        ),
        MemorySource::GpuFree(src) => {
            format!(
                "minimum free GPU memory under load ({src}): the activation peak is already in use"
            )
        }
    }
}

/// Fill the `method` words of every rate and span of a report.
pub fn fill_methods(r: &mut Report) {
    let rates = r
        .steady_gen_throughput
        .iter_mut()
        .chain(r.headline.gen_throughput.iter_mut())
        .chain(r.client.iter_mut().flat_map(|c| {
            c.lifetime_req_per_s
                .iter_mut()
                .chain(c.windowed_req_per_s.iter_mut())
                .chain(c.implied_req_per_s.iter_mut())
        }));
    for rate in rates {
        rate.method = rate_method(rate);
    }
    for s in r.schedulers.iter_mut().filter_map(|s| s.span.as_mut()) {
        s.method = span_method(s);
    }
}

/// The what-if table's note when fp8 rows are left out on an Ascend NPU build.
pub const NO_FP8_ON_NPU: &str = "no fp8 KV rows: this is an Ascend NPU build (`npu graph` on its batch lines, or device='npu'), and SGLang's NPU KV cache has no fp8";
