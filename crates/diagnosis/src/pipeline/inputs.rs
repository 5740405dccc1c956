//! The inputs as the report lists them, the DP ranks added up, what the inputs could not say,
//! and the sources used beside the logs.

use crate::context::Context;
use crate::evidence::outliers::{SetAside, SetAsideField, SetAsideReason};
use crate::evidence::view::SchedulerView;
use crate::evidence::{Evidence, JoinNote};
use crate::narrative;
use crate::report::{
    BenchmarkRun, CapacitySummary, ClientSummary, DpTotals, InputKind, InputSummary, MalformedLine,
    NotConcluded, NotConcludedReason, RejectedValue,
};

/// (line number, reason, excerpt) triples as report lines.
pub(super) fn malformed_lines(v: Vec<(u64, String, String)>) -> Vec<MalformedLine> {
    v.into_iter()
        .map(|(line, reason, excerpt)| MalformedLine {
            line,
            reason,
            excerpt,
        })
        .collect()
}

pub(super) fn input_summaries(ev: &Evidence) -> Vec<InputSummary> {
    ev.sources
        .iter()
        .enumerate()
        .map(|(id, s)| {
            let st = s.stats.clone().unwrap_or_default();
            let judged: Vec<RejectedValue> = ev
                .set_aside
                .values
                .iter()
                .filter(|v| v.loc.source == id)
                .map(set_aside_value)
                .collect();
            let judged_lines = if ev.sources.len() == 1 {
                ev.set_aside.count
            } else {
                judged.len() as u64
            };
            InputSummary {
                name: s.name.clone(),
                kind: s.kind,
                lines: st.lines,
                events: st.events,
                prefill_lines: st.prefill_lines,
                decode_lines: st.decode_lines,
                other_lines: st.other_lines,
                malformed_lines: st.malformed_lines,
                malformed: malformed_lines(st.malformed),
                long_lines: st.long_lines,
                damaged_lines: st.damaged_lines,
                damaged: malformed_lines(st.damaged),
                rejected_lines: st.rejected_lines + judged_lines,
                rejected: st
                    .rejected
                    .into_iter()
                    .map(|(line, key, value, reason)| RejectedValue {
                        line,
                        key,
                        value,
                        reason,
                    })
                    .chain(judged)
                    .collect(),
            }
        })
        .collect()
}

/// A value set aside against its scheduler's neighbours or capacity, as the report lists it.
fn set_aside_value(v: &SetAside) -> RejectedValue {
    let (key, value) = match v.field {
        SetAsideField::GenThroughput => ("gen throughput (token/s)", format!("{:.2}", v.value)),
        SetAsideField::Running => ("#running-req", format!("{:.0}", v.value)),
        SetAsideField::Queue => ("#queue-req", format!("{:.0}", v.value)),
        SetAsideField::PdQueue => ("#transfer-req", format!("{:.0}", v.value)),
    };
    let reason = match v.reason {
        SetAsideReason::Spike { ratio } => match v.field {
            SetAsideField::GenThroughput => format!(
                "{} times the highest rate per running request of the lines around it (a decode step is not that much faster for one line)",
                ratio.round()
            ),
            _ => format!(
                "{} times the highest of the lines around it, for one line only",
                ratio.round()
            ),
        },
        SetAsideReason::AboveCap { cap } => {
            format!("above max_running_requests {cap}: the scheduler admits no request past it")
        }
        SetAsideReason::AbovePool { pool } => {
            format!("above the KV pool's {pool} tokens: each running request holds at least one")
        }
        SetAsideReason::PdOnFewLines { lines } => format!(
            "a PD decode queue on a few of the scheduler's {lines} decode lines: a PD decode server prints it on every one, so this line is damaged or another server's"
        ),
    };
    RejectedValue {
        line: v.loc.line,
        key: key.to_string(),
        value,
        reason,
    }
}

/// The server's `dp_size`: from its server info, else from the log's `server_args`.
pub(super) fn dp_size(ev: &Evidence, ctx: &Context) -> Option<u32> {
    ctx.server.as_ref().and_then(|s| s.dp_size).or_else(|| {
        ev.startup
            .server_args
            .get("dp_size")
            .and_then(|v| v.parse().ok())
    })
}

/// The DP ranks' steady medians added up; `None` with fewer than two DP ranks in the log.
pub(super) fn dp_totals(
    ev: &Evidence,
    ctx: &Context,
    views: &[SchedulerView<'_>],
) -> Option<DpTotals> {
    let ranks: Vec<&SchedulerView<'_>> = views.iter().filter(|v| v.key.dp.is_some()).collect();
    if ranks.len() < 2 {
        return None;
    }
    let sum = |f: &dyn Fn(&SchedulerView<'_>) -> Option<f64>| {
        let vals: Vec<f64> = ranks.iter().filter_map(|v| f(v)).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    Some(DpTotals {
        ranks: ranks.len(),
        dp_size: dp_size(ev, ctx),
        ranks_at_least: ranks
            .iter()
            .filter_map(|v| v.key.dp)
            .max()
            .map(|m| m + 1)
            .filter(|&n| n as usize > ranks.len()),
        running_median: sum(&|v| v.running.median),
        queued_median: sum(&|v| v.queued.median),
        gen_throughput_mean: sum(&|v| v.gen_tps.mean),
    })
}

/// What the inputs could not say, in the order it is reported.
pub(super) fn missing(
    ev: &Evidence,
    ctx: &Context,
    inputs: &[InputSummary],
    capacity: &CapacitySummary,
    have_rate: bool,
    client: Option<&ClientSummary>,
    no_benchmarks: bool,
) -> Vec<NotConcluded> {
    use NotConcludedReason as R;
    let nc = narrative::not_concluded;
    let mut out = Vec::new();
    for i in inputs
        .iter()
        .filter(|i| i.lines == 0 && i.kind == InputKind::Log)
    {
        out.push(nc(
            R::EmptyInput {
                input: i.name.clone(),
            },
            None,
        ));
    }
    if ev.schedulers.is_empty() {
        out.push(nc(R::NoSchedulerLines, None));
    } else if !have_rate {
        out.push(nc(R::NoTimedDecodeLines, None));
    }
    if capacity.max_total_num_tokens.is_none() {
        // say what a server info that was given lacked (issue 30 A7)
        let lacked = ctx.server.as_ref().map(|s| {
            format!(
                "the server info ({}) gives no max_total_num_tokens",
                s.source
            )
        });
        out.push(nc(R::NoPoolSize, lacked.as_deref()));
    }
    let dp_size = dp_size(ev, ctx);
    let dp_seen = ev.schedulers.keys().filter(|k| k.dp.is_some()).count();
    if let Some(of) = dp_size
        && dp_seen > 0
        && (dp_seen as u64) < u64::from(of)
    {
        out.push(nc(R::SomeRanksOnly { seen: dp_seen, of }, None));
    }
    // long logs: timelines that keep one line in `stride`
    let strides: Vec<u64> = ev
        .schedulers
        .values()
        .map(|t| t.decode.stride().max(t.prefill.stride()))
        .filter(|&s| s > 1)
        .collect();
    if let Some(&stride) = strides.iter().max() {
        out.push(nc(
            R::ThinnedTimelines {
                schedulers: strides.len(),
                stride,
            },
            None,
        ));
    }
    match (&ctx.gpu, &ctx.gpu_unavailable) {
        (Some(_), _) => {}
        (None, Some(why)) => out.push(nc(R::GpuUnreadable, Some(why))),
        (None, None) => out.push(nc(
            R::NoGpuData {
                log_has_memory: capacity.available_gpu_mem_gb.is_some(),
            },
            None,
        )),
    }
    if ctx.clients.is_empty() && no_benchmarks {
        out.push(nc(R::NoClientRecords, None));
    } else if client.is_some_and(|c| c.format == sglang_log::ClientFormat::BenchmarkSummary) {
        out.push(nc(R::ClientIsBenchmarkSummary, None));
    } else if client.is_none_or(|c| c.windowed_req_per_s.is_none()) {
        out.push(nc(R::ClientUntimed, None));
    }
    if let Some(e) = &ctx.model_error {
        out.push(nc(R::ModelConfigUnusable, Some(e)));
    }
    if let Some(c) = client {
        for a in &c.set_aside {
            out.push(nc(
                R::ClientRecordsSetAside,
                Some(&narrative::set_aside(c, a)),
            ));
        }
    }
    out.extend(
        ctx.source_errors
            .iter()
            .map(|e| nc(R::SourceError, Some(e))),
    );
    out
}

/// What went wrong with the inputs themselves comes first: it explains the rest.
pub(super) fn inputs_first(not_concluded: &mut [NotConcluded]) {
    not_concluded.sort_by_key(|n| {
        !matches!(
            n.reason,
            NotConcludedReason::EmptyInput { .. } | NotConcludedReason::SourceError
        )
    });
}

/// The sources used beside the logs, in words: the files joined, the context's sources, and
/// the benchmark summaries read from the logs.
pub(super) fn sources(
    joins: &[JoinNote],
    ctx: &Context,
    ev: &Evidence,
    benchmark_runs: &[BenchmarkRun],
) -> Vec<String> {
    let mut sources: Vec<String> = joins.iter().map(narrative::join_note).collect();
    sources.extend(narrative::sources(ctx));
    sources.extend(
        benchmark_runs
            .iter()
            .filter(|r| ev.sources.iter().any(|s| s.name == r.source.source))
            .map(|r| {
                format!(
                    "benchmark summary: {}:{}-{}",
                    r.source.source, r.source.first_line, r.source.last_line
                )
            }),
    );
    sources
}

/// Where the server info contradicts the log (its model, its KV pool, its running cap, as the
/// log's own start-up lines print them), in words; `None` when it agrees or either is silent.
/// The log is what ran: a server info that contradicts it is another server's (issue 30 A6).
pub(super) fn server_info_disagreement(ev: &Evidence, ctx: &Context) -> Option<String> {
    let info = ctx.server.as_ref()?;
    let st = &ev.startup;
    let mut out = Vec::new();
    if let (Some(i), Some(l)) = (info.model_path.as_deref(), st.arg("model_path"))
        && i.trim_end_matches('/') != l.trim_end_matches('/')
    {
        out.push(format!("model_path {i} against the log's {l}"));
    }
    if let (Some(i), Some((l, _))) = (info.max_total_num_tokens, st.max_total_num_tokens)
        && i != l
    {
        out.push(format!("a KV pool of {i} tokens against the log's {l}"));
    }
    // the capacity line prints the cap per DP rank; server info the flag, over all of them
    let dp = u64::from(info.dp_size.unwrap_or(1).max(1));
    if let (Some(i), Some(l)) = (info.max_running_requests, st.max_running_requests)
        && i != l
        && i != l * dp
    {
        out.push(format!("max_running_requests {i} against the log's {l}"));
    }
    (!out.is_empty()).then(|| {
        format!(
            "The server info ({}) is not this log's server: {}. It was set aside; the log's own figures are used.",
            info.source,
            out.join("; ")
        )
    })
}
