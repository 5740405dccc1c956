//! Rendering a [`Report`] for people: terminal text (optionally coloured) and Markdown.
//!
//! Both are written from one model of the report's sections (`sections`): the verdict, the
//! recommendations, the findings, then the evidence and the details (client view, benchmark
//! runs, `/metrics`, the what-if table, per-scheduler figures, inputs). A table is built once
//! and laid out by each writer. Numbers always carry their unit; unknown values print as `?`.
//! This module reads only typed data: it never parses text the report holds.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use diagnosis::Bottleneck;
pub use diagnosis::narrative::feasibility_label;
use diagnosis::narrative::{fmt_duration, interval};
use diagnosis::report::{
    CapacityModel, Confidence, Finding, NotConcludedReason, Projection, Rate, Recommendation,
    Report, SourceRange, Unit,
};

mod client;
mod gpu;
mod write;
use client::{bench_lines, client_lines};
pub use gpu::{gpu_check_text, gpu_text};
pub use write::{markdown, text};

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();

fn style_for(b: Bottleneck) -> Style {
    let color = match b {
        Bottleneck::ClientBound
        | Bottleneck::Inconclusive
        | Bottleneck::NoSchedulerLines
        | Bottleneck::StartupOnly => AnsiColor::Yellow,
        _ => AnsiColor::Red,
    };
    Style::new().bold().fg_color(Some(color.into()))
}

fn f(v: Option<f64>, digits: usize) -> String {
    diagnosis::narrative::num(v, digits)
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "?".into())
}

/// A block of a section.
enum Block {
    /// Plain lines (indented in text, paragraphs in Markdown).
    Lines(Vec<String>),
    /// Dimmed lines (text) / a bullet list (Markdown).
    Notes(Vec<String>),
    /// A table: header and rows, laid out per writer.
    Table {
        header: Vec<&'static str>,
        rows: Vec<Vec<String>>,
    },
    /// The recommendations, numbered.
    Recommendations(Vec<Recommendation>),
    /// The findings, numbered.
    Findings(Vec<Finding>),
}

/// One section: an optional title and its blocks.
struct Section {
    title: Option<String>,
    blocks: Vec<Block>,
}

fn section(title: impl Into<String>, blocks: Vec<Block>) -> Section {
    Section {
        title: Some(title.into()),
        blocks,
    }
}

fn rate_text(r: &Rate, digits: usize) -> String {
    rate_text_over(r, digits, 1)
}

/// [`rate_text`] of a rate summed over `dp_ranks` schedulers (its few-samples note says so).
fn rate_text_over(r: &Rate, digits: usize, dp_ranks: usize) -> String {
    let ci = interval(r, digits);
    let ci = if ci.is_empty() {
        ci
    } else {
        format!(" ({ci})")
    };
    let unit = match r.unit {
        Unit::ReqPerS => "req/s",
        _ => "tok/s",
    };
    if let Some(few) = diagnosis::narrative::samples_note(r, dp_ranks) {
        return format!("{:.digits$} {unit} ({few})", r.value);
    }
    format!(
        "{:.digits$} {unit}{ci} over {}",
        r.value,
        fmt_duration(r.window_s)
    )
}

fn range_text(e: &SourceRange) -> String {
    if let Some(last) = &e.last_source {
        format!("{}:{} to {last}:{}", e.source, e.first_line, e.last_line)
    } else if e.first_line == e.last_line {
        format!("{}:{}", e.source, e.first_line)
    } else {
        format!("{}:{}-{}", e.source, e.first_line, e.last_line)
    }
}

fn confidence_label(c: Confidence) -> &'static str {
    match c {
        Confidence::High => "high",
        Confidence::Medium => "medium",
        Confidence::Low => "low",
    }
}

fn fmt_num(v: Option<f64>) -> String {
    match v {
        None => "?".into(),
        Some(x) if x.fract() == 0.0 && x.abs() < 1e12 => format!("{x:.0}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// A fraction as a percentage: whole percents, but a share above zero and below 1% keeps
/// its first significant digits (0.48%, not 0%), and one just below 100% is not rounded up
/// to it (99.6%).
fn percent(v: f64) -> String {
    let p = v * 100.0;
    if p > 0.0 && p < 1.0 {
        format!(
            "{:.1$}%",
            p,
            (1.0 - p.log10().floor()).clamp(1.0, 4.0) as usize
        )
    } else if p > 99.0 && p < 100.0 {
        // rounded down: 99.96% is not a full 100%
        format!("{:.1}%", (p * 10.0).floor() / 10.0)
    } else {
        format!("{p:.0}%")
    }
}

/// A figure's value with its unit; fractions print as percentages ([`percent`]).
fn figure_value(value: Option<f64>, unit: Unit) -> String {
    let u = match unit {
        Unit::Fraction => return value.map_or_else(|| "?".into(), percent),
        Unit::Requests => "requests",
        Unit::Tokens => "tokens",
        Unit::TokPerS => "tok/s",
        Unit::ReqPerS => "req/s",
        Unit::Seconds => "s",
        Unit::Bytes => "bytes",
        Unit::Gib => "GiB",
        Unit::Lines => "lines",
        Unit::Events => "events",
        Unit::EventsPerHour => "events/h",
        Unit::Ratio => "ratio",
        Unit::Iterations => "iterations",
    };
    format!("{} {u}", fmt_num(value))
}

fn throughput_label(r: &Rate) -> &'static str {
    if r.basis_is_steady() {
        "Steady server gen throughput"
    } else {
        "Server gen throughput over the whole log (no steady state found)"
    }
}

fn finding_lines(fi: &Finding) -> Vec<String> {
    fi.figures
        .iter()
        .map(|g| format!("- {}: {}", g.name, figure_value(g.value, g.unit)))
        .chain(
            fi.evidence
                .iter()
                .map(|e| format!("- lines: {}", range_text(e))),
        )
        .collect()
}

/// The what-if table, built once for both writers.
fn what_if(
    cm: &CapacityModel,
    proj: Option<&Projection>,
    now: Option<(f64, Option<f64>)>,
) -> Vec<Block> {
    let mut blocks = vec![Block::Lines(vec![format!(
        "{} bytes per token per GPU; pre = {:.1} GiB ({}); +0.01 mem_fraction_static = +{:.0} tokens; free at run time {} GiB{}",
        cm.cell_bytes,
        cm.pre_gib,
        cm.pre_source,
        cm.tokens_per_hundredth,
        f(cm.free_now_gib, 2),
        cm.free_now_source
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    )])];
    // One "now" everywhere: today's row shows the measured rate and running requests, and the
    // projections are read on the measured rate's scale (measured / the fit's rate today).
    let scale = proj.and_then(|p| p.measured_scale).unwrap_or(1.0);
    // Concurrencies too: the model's for today's pool against the running requests observed.
    let model_now = cm
        .what_if
        .rows
        .iter()
        .find(|x| x.change == kv_capacity::Change::Current)
        .and_then(|x| x.decode_concurrency);
    let c_scale = match (now.and_then(|n| n.1), model_now) {
        (Some(seen), Some(m)) if m > 0.0 => seen / m,
        _ => 1.0,
    };
    let rows = cm
        .what_if
        .rows
        .iter()
        .map(|row| {
            let p = proj.and_then(|p| p.rows.iter().find(|x| x.change == row.change));
            let today = row.change == kv_capacity::Change::Current;
            let concurrency = match (today, now) {
                (true, Some((_, Some(running)))) => Some(running),
                _ => row.decode_concurrency.map(|c| c * c_scale),
            };
            vec![
                row.label.clone(),
                row.pool_tokens.to_string(),
                format!("{:+.1}%", row.change_pct),
                format!("{:.2}", row.extra_gib_per_gpu),
                row.feasibility
                    .as_ref()
                    .map_or("?", |x| feasibility_label(x.verdict))
                    .to_string(),
                f(concurrency, 1),
                match (today, now, p) {
                    (true, Some((m, _)), _) => format!("{m:.0}"),
                    (_, _, Some(p)) => format!(
                        "{:.0}{}",
                        p.tok_per_s * scale,
                        if p.extrapolated { "*" } else { "" }
                    ),
                    _ => "?".into(),
                },
            ]
        })
        .collect();
    blocks.push(Block::Table {
        header: vec![
            "change",
            "pool tokens",
            "change",
            "extra GiB/GPU",
            "feasibility",
            "decode concurrency (measured scale)",
            "tok/s (measured scale)",
        ],
        rows,
    });
    let mut notes = Vec::new();
    if let Some(p) = proj {
        notes.push(format!(
            "projection: {} (a={:.4} s, b={:.2e} s/req, c={:.2e} s/token, R²={:.2}, {} decode lines, running {:.0}-{:.0}; * = extrapolated)",
            p.formula, p.a, p.b, p.c, p.r2, p.n, p.running_range.0, p.running_range.1
        ));
    }
    notes.extend(
        cm.what_if
            .assumptions
            .iter()
            .map(|a| format!("assumption: {a}")),
    );
    if let Some(h) = &cm.hicache {
        notes.extend(h.summary.iter().map(|l| format!("HiCache: {l}")));
    }
    blocks.push(Block::Lines(notes));
    blocks
}

/// From this many schedulers on, their spans are summed up in one line, not one line each.
const MANY_SCHEDULERS: usize = 4;

/// The spans of many schedulers in one line: their range, and how many had a steady state.
fn spans_in_one_line(r: &Report) -> Vec<String> {
    let spans: Vec<_> = r
        .schedulers
        .iter()
        .filter_map(|s| s.span.as_ref())
        .collect();
    let mut out = Vec::new();
    let range = |v: Vec<f64>| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if (hi - lo).abs() < 1.0 {
            fmt_duration(hi)
        } else {
            format!("{}-{}", fmt_duration(lo), fmt_duration(hi))
        }
    };
    if !spans.is_empty() {
        let steady: Vec<_> = spans.iter().filter(|s| s.basis.is_steady()).collect();
        let mut line = format!(
            "{} schedulers ({} to {}): spans {}; ",
            r.schedulers.len(),
            r.schedulers[0].name,
            r.schedulers[r.schedulers.len() - 1].name,
            range(spans.iter().map(|s| s.end_s - s.start_s).collect())
        );
        if steady.is_empty() {
            line.push_str("no steady state told apart on any, the whole log is used");
        } else {
            line.push_str(&format!(
                "steady state told apart on {} of them, {} long",
                steady.len(),
                range(
                    steady
                        .iter()
                        .map(|s| s.steady_end_s - s.steady_start_s)
                        .collect()
                )
            ));
        }
        out.push(line);
    }
    let dup: u64 = r.schedulers.iter().map(|s| s.duplicate_lines).sum();
    if dup > 0 {
        out.push(format!(
            "{dup} duplicate lines from other TP ranks of these schedulers were not counted"
        ));
    }
    out
}

fn schedulers(r: &Report) -> Vec<Block> {
    let rows = r
        .schedulers
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                format!("{} + {}", s.decode_lines, s.prefill_lines),
                format!(
                    "{} / {} / {}",
                    f(s.running.median, 0),
                    f(s.running.p90, 0),
                    opt(s.peak_running)
                ),
                format!(
                    "{} / {} / {}",
                    f(s.queued.median, 0),
                    f(s.queued.p90, 0),
                    opt(s.peak_queued)
                ),
                format!(
                    "{} / {} / {}",
                    f(s.token_usage.median, 2),
                    f(s.token_usage.p90, 2),
                    f(s.peak_token_usage, 2)
                ),
                f(s.gen_throughput.median, 1),
                diagnosis::narrative::scheduler_verdict_label(s).to_string(),
            ]
        })
        .collect::<Vec<_>>();
    let mut rows = rows;
    if let Some(t) = &r.dp_totals {
        let of = match (t.dp_size, t.ranks_at_least) {
            (Some(n), _) if n as usize > t.ranks => format!("{} of {n} DP ranks", t.ranks),
            (None, Some(n)) => format!("{} of at least {n} DP ranks", t.ranks),
            _ => format!("all {} DP ranks", t.ranks),
        };
        rows.push(vec![
            format!("total ({of})"),
            format!(
                "{} + {}",
                r.schedulers.iter().map(|s| s.decode_lines).sum::<u64>(),
                r.schedulers.iter().map(|s| s.prefill_lines).sum::<u64>()
            ),
            format!("{} (sum of medians)", f(t.running_median, 0)),
            format!("{} (sum of medians)", f(t.queued_median, 0)),
            String::new(),
            format!("{} (sum of means)", f(t.gen_throughput_mean, 1)),
            String::new(),
        ]);
    }
    let mut lines = Vec::new();
    if r.schedulers.len() > MANY_SCHEDULERS {
        lines.extend(spans_in_one_line(r));
    }
    for s in r
        .schedulers
        .iter()
        .filter(|_| r.schedulers.len() <= MANY_SCHEDULERS)
    {
        let src = s
            .source
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default();
        if let Some(sp) = &s.span {
            lines.push(if sp.basis.is_steady() {
                format!(
                    "{}{src}: span {}; steady state from +{} to +{} ({}; {})",
                    s.name,
                    fmt_duration(sp.end_s - sp.start_s),
                    fmt_duration(sp.steady_start_s - sp.start_s),
                    fmt_duration(sp.steady_end_s - sp.start_s),
                    fmt_duration(sp.steady_end_s - sp.steady_start_s),
                    sp.method
                )
            } else {
                format!(
                    "{}{src}: span {}; no steady state told apart, the whole log is used ({})",
                    s.name,
                    fmt_duration(sp.end_s - sp.start_s),
                    sp.method
                )
            });
        }
        if let Some(o) = &s.fwd_occupancy {
            lines.push(format!(
                "{}: fwd occupancy (the device timer's GPU-busy share of each logging window): {}",
                s.name,
                occupancy_words(o, "line")
            ));
        }
        if s.duplicate_lines > 0 {
            lines.push(format!(
                "{}: {} duplicate lines from other TP ranks of this scheduler were not counted",
                s.name, s.duplicate_lines
            ));
        }
    }
    vec![
        Block::Table {
            header: vec![
                "scheduler",
                "decode + prefill lines",
                "running (median / p90 / max)",
                "queued (median / p90 / max)",
                "token usage (median / p90 / max)",
                "gen tok/s (median)",
                "verdict",
            ],
            rows,
        },
        Block::Lines(lines),
    ]
}

/// The report's sections, in reading order: the answer, what to do, why, then the details.
fn sections(r: &Report) -> Vec<Section> {
    let mut out = Vec::new();
    let mut answer = Vec::new();
    if let Some(t) = &r.steady_gen_throughput {
        let ranks = r.dp_totals.as_ref().map_or(1, |d| d.ranks);
        answer.push(format!(
            "{}: {}",
            throughput_label(t),
            rate_text_over(t, 0, ranks)
        ));
    }
    out.push(Section {
        title: None,
        blocks: vec![Block::Lines(answer)],
    });
    // A log of several server runs: the report is the last one's; say so before anything else.
    if let Some(runs) = &r.runs {
        let mut lines = vec![runs.text.clone()];
        lines.extend(runs.runs.iter().map(|run| run.text.clone()));
        out.push(section("Server runs", vec![Block::Lines(lines)]));
    }
    if !r.recommendations.is_empty() {
        out.push(section(
            "Recommendations (changes that keep outputs as they are first, each group by expected gain; what not to change last)",
            vec![Block::Recommendations(r.recommendations.clone())],
        ));
    }
    if !r.findings.is_empty() {
        out.push(section(
            "Findings",
            vec![Block::Findings(r.findings.clone())],
        ));
    }
    if let Some(c) = &r.client {
        let ranks = r.not_concluded.iter().find_map(|n| match n.reason {
            NotConcludedReason::SomeRanksOnly { seen, of } => Some((seen, of)),
            _ => None,
        });
        out.push(section(
            "Client vs server",
            vec![Block::Lines(client_lines(c, ranks))],
        ));
    }
    if !r.benchmark_runs.is_empty() {
        out.push(section(
            "Benchmark runs (whole-run figures as the benchmark printed them)",
            vec![Block::Lines(bench_lines(&r.benchmark_runs))],
        ));
    }
    if let Some(m) = &r.server_metrics {
        out.push(section(
            format!("Server /metrics ({} polls over {:.0} s)", m.samples, m.span_s),
            vec![Block::Lines(vec![
                format!(
                    "/metrics: running {} · queued {} · token usage {} · gen throughput {} tok/s · generated {} tok/s between polls",
                    f(m.running, 0),
                    f(m.queued, 0),
                    f(m.token_usage, 2),
                    f(m.gen_throughput, 1),
                    f(m.generated_tok_per_s, 1)
                ),
                format!(
                    "since server start: TTFT median {} s, p90 {} s · ITL median {} s · end-to-end median {} s",
                    f(m.ttft_p50_s, 3),
                    f(m.ttft_p90_s, 3),
                    f(m.itl_p50_s, 4),
                    f(m.e2e_p50_s, 2)
                ),
            ]
            .into_iter()
            .chain(scheduler_time_line(m))
            .collect())],
        ));
    }
    if let Some(q) = &r.request_times {
        out.push(section(
            format!(
                "Requests (the scheduler's own per-request times, ReqTimeStats: {} lines{})",
                q.lines,
                if q.sampled < q.lines as usize {
                    format!(", {} sampled", q.sampled)
                } else {
                    String::new()
                }
            ),
            request_times(q),
        ));
    }
    if let Some(cm) = &r.capacity_model {
        out.push(section(
            "KV capacity what-if (per GPU; SGLang's pool formula)",
            what_if(
                cm,
                r.projection.as_ref(),
                r.steady_gen_throughput
                    .as_ref()
                    .map(|t| (t.value, r.headline.running_median)),
            ),
        ));
    }
    if !r.schedulers.is_empty() {
        out.push(section("Schedulers (steady span)", schedulers(r)));
    }
    let c = &r.capacity;
    if c.max_total_num_tokens.is_some() || c.mem_fraction_static.is_some() {
        // SGLang prints these as "GB" but divides bytes by 1 << 30 (`get_available_gpu_memory`,
        // spec §2.9 and §5.1); the JSON keeps its `_gb` names, the values are GiB.
        out.push(section(
            "Capacity (startup lines)",
            vec![Block::Lines(vec![format!(
                "KV pool: {} tokens per DP rank{}; mem_fraction_static {}; {}KV cache {} GiB; free after CUDA graphs {} GiB (SGLang's log prints GiB as \"GB\"); max_running_requests {}",
                opt(c.max_total_num_tokens),
                format!(
                    "{}{}",
                    c.swa_pool_tokens
                        .map(|s| format!(" in the full-attention layers and {s} in the sliding-window layers (two pools, each used against its own size)"))
                        .unwrap_or_default(),
                    c.mamba_cache_slots
                        .map(|m| format!(" and {m} mamba state slots (one per running request: they cap the batch as max_running_requests does)"))
                        .unwrap_or_default()
                ),
                f(c.mem_fraction_static, 2),
                c.weights_gb
                    .map(|w| format!("weights {w:.2} GiB; "))
                    .unwrap_or_default(),
                f(c.kv_cache_gb, 2),
                f(c.available_gpu_mem_gb, 2),
                opt(c.max_running_requests),
            )])],
        ));
    }
    let mut inputs: Vec<String> = r
        .inputs
        .iter()
        .map(|i| {
            format!(
                "input {}: {} lines, {} SGLang events ({} prefill, {} decode), {} other, {} malformed{}{}",
                i.name,
                i.lines,
                i.events,
                i.prefill_lines,
                i.decode_lines,
                i.other_lines,
                i.malformed_lines,
                if i.damaged_lines > 0 {
                    format!(", {} damaged (read in part)", i.damaged_lines)
                } else {
                    String::new()
                },
                if i.rejected_lines > 0 {
                    format!(", {} with an impossible value set aside", i.rejected_lines)
                } else {
                    String::new()
                }
            )
        })
        .collect();
    if !r.sources.is_empty() {
        inputs.push(format!("Also used: {}", r.sources.join("; ")));
    }
    out.push(section("Inputs", vec![Block::Notes(inputs)]));
    if !r.not_concluded.is_empty() {
        out.push(section(
            "Not concluded",
            vec![Block::Notes(
                r.not_concluded.iter().map(|n| n.text.clone()).collect(),
            )],
        ));
    }
    let malformed: Vec<String> = r
        .inputs
        .iter()
        .flat_map(|i| {
            i.malformed
                .iter()
                .map(move |m| format!("{}:{}: {}: {}", i.name, m.line, m.reason, m.excerpt))
                .chain(i.damaged.iter().map(move |m| {
                    format!(
                        "{}:{}: damaged, read in part ({}): {}",
                        i.name, m.line, m.reason, m.excerpt
                    )
                }))
                .chain(i.rejected.iter().map(move |r| {
                    format!(
                        "{}:{}: {} `{}` set aside: {}",
                        i.name, r.line, r.key, r.value, r.reason
                    )
                }))
        })
        .take(10)
        .collect();
    if !malformed.is_empty() {
        out.push(section(
            "Malformed lines (first ones)",
            vec![Block::Notes(malformed)],
        ));
    }
    out
}

/// The per-request times as a table (one row per duration the lines print) and the prefix
/// cache's share of prompt tokens.
fn request_times(q: &diagnosis::report::RequestTimesSummary) -> Vec<Block> {
    let rows: Vec<Vec<String>> = [
        ("waiting in the scheduler's queue (s)", q.queue_s, 3),
        ("first forward pass to completion (s)", q.forward_s, 2),
        ("output tokens", q.output_tokens, 0),
        ("PD bootstrap handshake (s)", q.bootstrap_s, 3),
        ("PD wait for KV memory (s)", q.alloc_wait_s, 3),
        ("PD KV transfer (s)", q.transfer_s, 3),
        ("PD KV transfer speed (GB/s)", q.transfer_gb_per_s, 2),
    ]
    .into_iter()
    .filter_map(|(name, s, d)| {
        let s = s?;
        Some(vec![
            name.to_string(),
            s.n.to_string(),
            format!("{:.d$}", s.median),
            format!("{:.d$}", s.p90),
            format!("{:.d$}", s.max),
        ])
    })
    .collect();
    let mut blocks = vec![Block::Table {
        header: vec!["per request", "requests", "median", "p90", "max"],
        rows,
    }];
    if let Some(c) = q.prefix_cached_share {
        blocks.push(Block::Notes(vec![format!(
            "prompt tokens served from the prefix cache: {:.1}%",
            c * 100.0
        )]));
    }
    if let Some(n) = q.transfer_retries {
        blocks.push(Block::Notes(vec![format!(
            "PD KV transfer retries over every line: {n}"
        )]));
    }
    blocks
}

/// `fwd occupancy` readings in words: the busy mean over the readings that are numbers, and
/// the idle (`nan`) ones apart; `what` names a reading (`line`, `reading`).
fn occupancy_words(o: &diagnosis::report::OccupancySummary, what: &str) -> String {
    match o.busy_mean_pct {
        Some(p) => format!(
            "{p:.1} % over {} busy {what}(s), {} idle",
            o.busy_readings, o.idle_readings
        ),
        None => format!(
            "nan on every {what} ({} of them: the device timer measured no window)",
            o.idle_readings
        ),
    }
}

/// The scheduler's time between the polls, from the counters newer SGLang exports (idle and
/// CPU seconds, the forward-pass device timer, `fwd_occupancy`); none when it exports none.
fn scheduler_time_line(m: &diagnosis::report::MetricsSummary) -> Option<String> {
    use diagnosis::report::ForwardTimer;
    let timer = match &m.forward_timer {
        None => "-".to_string(),
        Some(ForwardTimer::NotEnabled) => {
            "not enabled (SGLANG_ENABLE_METRICS_DEVICE_TIMER=1 turns it on)".to_string()
        }
        Some(ForwardTimer::Measured { forward_s_per_s }) => {
            format!("{} s/s", f(*forward_s_per_s, 2))
        }
    };
    let occupancy = match &m.fwd_occupancy {
        None => "-".to_string(),
        Some(o) => occupancy_words(o, "reading"),
    };
    (m.scheduler_idle_s_per_s.is_some()
        || m.scheduler_cpu_s_per_s.is_some()
        || m.forward_timer.is_some()
        || m.fwd_occupancy.is_some())
    .then(|| {
        format!(
            "scheduler between polls: idle {} s/s · CPU {} s/s · forward passes {timer} · occupancy {occupancy}",
            f(m.scheduler_idle_s_per_s, 2),
            f(m.scheduler_cpu_s_per_s, 2),
        )
    })
}

#[cfg(test)]
mod tests;
