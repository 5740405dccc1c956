//! Rendering a [`Report`] for people: terminal text (optionally coloured) and Markdown.
//!
//! Numbers always carry their unit; unknown values print as `?`.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use diagnosis::Bottleneck;
use diagnosis::analysis::fmt_duration;
use diagnosis::report::{
    CapacityModel, ClientSummary, Finding, GaugeStats, Projection, Rate, Recommendation, Report,
};

fn style_for(b: Bottleneck) -> Style {
    let color = match b {
        Bottleneck::ClientBound | Bottleneck::Inconclusive | Bottleneck::NoSchedulerLines => {
            AnsiColor::Yellow
        }
        _ => AnsiColor::Red,
    };
    Style::new().bold().fg_color(Some(color.into()))
}

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();

fn f(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "?".into(),
    }
}

/// The verdict line as `(head, tail)`, `head + tail` being the whole line: `head` is
/// `Verdict: ` and the label (to emphasise), `tail` the rest of the headline.
///
/// A headline that already starts with the bottleneck's label (any case: `No SGLang scheduler
/// lines were found…` for `no SGLang scheduler lines`) keeps its own words, so the label is
/// not said twice; one that names its verdict otherwise (`PD disaggregation: …`) has that
/// name emphasised; any other gets the label put in front.
fn verdict_parts(r: &Report) -> (String, String) {
    let h = r.headline.as_str();
    let label = r.bottleneck.label();
    let starts_with_label = h
        .get(..label.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(label))
        && !h[label.len()..]
            .chars()
            .next()
            .is_some_and(char::is_alphanumeric);
    if starts_with_label {
        let mut n = label.len();
        if h[n..].starts_with(':') {
            n += 1;
        }
        return (format!("Verdict: {}", &h[..n]), h[n..].to_string());
    }
    match h.split_once(": ") {
        Some((name, rest)) if !name.contains(['.', ';']) => {
            (format!("Verdict: {name}:"), format!(" {rest}"))
        }
        _ => (format!("Verdict: {label}:"), format!(" {h}")),
    }
}

fn gauge_line(name: &str, g: &GaugeStats, digits: usize, unit: &str) -> String {
    format!(
        "{name:<16} median {} · p90 {} · max {} {unit}",
        f(g.median, digits),
        f(g.p90, digits),
        f(g.max, digits)
    )
}

/// "Steady server gen throughput", or what it is when phase detection found no steady state.
fn throughput_label(r: &Rate) -> &'static str {
    if r.method.contains("no steady state") {
        "Server gen throughput over the whole log (no steady state found)"
    } else {
        "Steady server gen throughput"
    }
}

fn rate_text(r: &Rate) -> String {
    let ci = match (r.low, r.high) {
        (Some(l), Some(h)) => format!(" (95% interval {l:.0}-{h:.0})"),
        _ => String::new(),
    };
    format!(
        "{:.0} {}{ci} over {}",
        r.value,
        r.unit,
        fmt_duration(r.window_s)
    )
}

/// Render the report as terminal text. With `color`, ANSI styles are emitted (the caller decides,
/// e.g. through `anstream`, whether the terminal keeps them; `NO_COLOR` is honoured there).
pub fn text(r: &Report, color: bool) -> String {
    let paint = |s: Style, t: &str| {
        if color {
            format!("{s}{t}{s:#}")
        } else {
            t.to_string()
        }
    };
    let mut o = String::new();
    let _ = writeln!(o, "{}", paint(BOLD, "throughput-doctor diagnosis"));
    for i in &r.inputs {
        let _ = writeln!(
            o,
            "{}",
            paint(
                DIM,
                &format!(
                    "  input {}: {} lines, {} SGLang events ({} prefill, {} decode), {} other, {} malformed",
                    i.name,
                    i.lines,
                    i.events,
                    i.prefill_lines,
                    i.decode_lines,
                    i.other_lines,
                    i.malformed_lines
                )
            )
        );
    }
    let _ = writeln!(o);
    // The headline starts with the verdict's label: colour that part.
    let (head, tail) = verdict_parts(r);
    let _ = writeln!(o, "{}{tail}", paint(style_for(r.bottleneck), &head));
    if let Some(t) = &r.steady_gen_throughput {
        let _ = writeln!(o, "{}: {}", throughput_label(t), rate_text(t));
    }
    let _ = writeln!(o);

    for s in &r.schedulers {
        let src = s
            .source
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{}",
            paint(
                BOLD,
                &format!(
                    "Scheduler {}{src}: {} decode + {} prefill lines",
                    s.name, s.decode_lines, s.prefill_lines
                )
            )
        );
        if let Some(sp) = &s.span {
            if sp.method.starts_with("whole log") {
                let _ = writeln!(
                    o,
                    "  span {} ; no steady state told apart, the whole log is used ({})",
                    fmt_duration(sp.end_s - sp.start_s),
                    sp.method
                );
            } else {
                let _ = writeln!(
                    o,
                    "  span {} ; steady state from +{} to +{} ({}; {})",
                    fmt_duration(sp.end_s - sp.start_s),
                    fmt_duration(sp.steady_start_s - sp.start_s),
                    fmt_duration(sp.steady_end_s - sp.start_s),
                    fmt_duration(sp.steady_end_s - sp.steady_start_s),
                    sp.method
                );
            }
        }
        let _ = writeln!(o, "  {}", gauge_line("running", &s.running, 0, "requests"));
        let _ = writeln!(o, "  {}", gauge_line("queued", &s.queued, 0, "requests"));
        let _ = writeln!(
            o,
            "  {}",
            gauge_line("token usage", &s.token_usage, 2, "(fraction of KV pool)")
        );
        let _ = writeln!(
            o,
            "  {}",
            gauge_line("gen throughput", &s.gen_throughput, 1, "tok/s")
        );
        let _ = writeln!(
            o,
            "  peaks over the whole log: {} running, {} queued, token usage {}",
            s.peak_running
                .map(|x| x.to_string())
                .unwrap_or_else(|| "?".into()),
            s.peak_queued
                .map(|x| x.to_string())
                .unwrap_or_else(|| "?".into()),
            f(s.peak_token_usage, 2)
        );
        if s.duplicate_lines > 0 {
            let _ = writeln!(
                o,
                "  ({} duplicate lines from other TP ranks of this scheduler were not counted)",
                s.duplicate_lines
            );
        }
        let _ = writeln!(o, "  this scheduler: {}", s.bottleneck.label());
    }
    if !r.schedulers.is_empty() {
        let _ = writeln!(o);
    }

    let c = &r.capacity;
    if c.max_total_num_tokens.is_some() || c.mem_fraction_static.is_some() {
        let _ = writeln!(
            o,
            // SGLang prints these as "GB" but divides bytes by 1 << 30 (`get_available_gpu_memory`,
            // spec §2.9 and §5.1); the JSON keeps its `_gb` names for schema stability, the
            // values are GiB.
            "KV pool: {} tokens per DP rank; mem_fraction_static {}; KV cache {} GiB; free after CUDA graphs {} GiB (SGLang's log prints GiB as \"GB\"); max_running_requests {}",
            c.max_total_num_tokens
                .map(|x| x.to_string())
                .unwrap_or_else(|| "?".into()),
            f(c.mem_fraction_static, 2),
            f(c.kv_cache_gb, 2),
            f(c.available_gpu_mem_gb, 2),
            c.max_running_requests
                .map(|x| x.to_string())
                .unwrap_or_else(|| "?".into()),
        );
        let _ = writeln!(o);
    }

    if !r.sources.is_empty() {
        let _ = writeln!(
            o,
            "{}",
            paint(DIM, &format!("Also used: {}", r.sources.join("; ")))
        );
        let _ = writeln!(o);
    }
    if let Some(m) = &r.server_metrics {
        let _ = writeln!(
            o,
            "{}",
            paint(
                BOLD,
                &format!(
                    "Server /metrics ({} polls over {:.0} s)",
                    m.samples, m.span_s
                )
            )
        );
        let _ = writeln!(
            o,
            "  running {} · queued {} · token usage {} · gen throughput {} tok/s · generated {} tok/s between polls",
            f(m.running, 0),
            f(m.queued, 0),
            f(m.token_usage, 2),
            f(m.gen_throughput, 1),
            f(m.generated_tok_per_s, 1)
        );
        let _ = writeln!(
            o,
            "  since server start: TTFT median {} s, p90 {} s · ITL median {} s · end-to-end median {} s",
            f(m.ttft_p50_s, 3),
            f(m.ttft_p90_s, 3),
            f(m.itl_p50_s, 4),
            f(m.e2e_p50_s, 2)
        );
        let _ = writeln!(o);
    }
    if let Some(c) = &r.client {
        let _ = writeln!(o, "{}", paint(BOLD, "Client vs server"));
        client_text(&mut o, c);
        let _ = writeln!(o);
    }
    if !r.benchmark_runs.is_empty() {
        let _ = writeln!(o, "{}", paint(BOLD, BENCH_TITLE));
        bench_text(&mut o, &r.benchmark_runs);
        let _ = writeln!(o);
    }
    if let Some(cm) = &r.capacity_model {
        let _ = writeln!(
            o,
            "{}",
            paint(BOLD, "KV capacity what-if (per GPU; SGLang's pool formula)")
        );
        capacity_text(&mut o, cm, r.projection.as_ref());
        let _ = writeln!(o);
    }
    if !r.recommendations.is_empty() {
        let _ = writeln!(o, "{}", paint(BOLD, "Recommendations (by expected gain)"));
        recommendations_text(&mut o, &r.recommendations);
        let _ = writeln!(o);
    }
    if !r.findings.is_empty() {
        let _ = writeln!(o, "{}", paint(BOLD, "Findings"));
        for (i, fi) in r.findings.iter().enumerate() {
            finding_text(&mut o, i + 1, fi, color);
        }
    }
    if !r.not_concluded.is_empty() {
        let _ = writeln!(o, "{}", paint(BOLD, "Not concluded"));
        for n in &r.not_concluded {
            let _ = writeln!(o, "  - {n}");
        }
    }
    let malformed: Vec<&String> = r.inputs.iter().flat_map(|i| i.malformed.iter()).collect();
    if !malformed.is_empty() {
        let _ = writeln!(o, "{}", paint(BOLD, "Malformed lines (first ones)"));
        for m in malformed.iter().take(10) {
            let _ = writeln!(o, "  {m}");
        }
    }
    o
}

fn finding_text(o: &mut String, n: usize, fi: &Finding, color: bool) {
    let title = format!(
        "{n}. {} [{} confidence]",
        fi.title,
        confidence_label(fi.confidence)
    );
    let _ = writeln!(
        o,
        "{}",
        if color {
            format!("{BOLD}{title}{BOLD:#}")
        } else {
            title
        }
    );
    let _ = writeln!(o, "   {}", fi.detail);
    for g in &fi.figures {
        let _ = writeln!(o, "   - {}: {}", g.name, figure_value(g.value, &g.unit));
    }
    for e in &fi.evidence {
        let _ = writeln!(o, "   - lines: {e}");
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

/// Render the report as Markdown (for issues and chat).
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# throughput-doctor diagnosis\n");
    let (head, tail) = verdict_parts(r);
    let _ = writeln!(o, "**{head}**{tail}\n");
    if let Some(t) = &r.steady_gen_throughput {
        let _ = writeln!(o, "{}: {}\n", throughput_label(t), rate_text(t));
    }
    let _ = writeln!(
        o,
        "| input | lines | SGLang events | prefill | decode | other | malformed |\n|---|---|---|---|---|---|---|"
    );
    for i in &r.inputs {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            i.name,
            i.lines,
            i.events,
            i.prefill_lines,
            i.decode_lines,
            i.other_lines,
            i.malformed_lines
        );
    }
    let _ = writeln!(o);
    if !r.schedulers.is_empty() {
        let _ = writeln!(
            o,
            "| scheduler | running (median / max) | queued (median / max) | token usage (median / p90 / max) | gen tok/s (median) | verdict |\n|---|---|---|---|---|---|"
        );
        for s in &r.schedulers {
            let _ = writeln!(
                o,
                "| {} | {} / {} | {} / {} | {} / {} / {} | {} | {} |",
                s.name,
                f(s.running.median, 0),
                s.peak_running
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "?".into()),
                f(s.queued.median, 0),
                s.peak_queued
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "?".into()),
                f(s.token_usage.median, 2),
                f(s.token_usage.p90, 2),
                f(s.peak_token_usage, 2),
                f(s.gen_throughput.median, 1),
                s.bottleneck.label()
            );
        }
        let _ = writeln!(o);
    }
    if !r.recommendations.is_empty() {
        let _ = writeln!(o, "## Recommendations (by expected gain)\n");
        for (i, rec) in r.recommendations.iter().enumerate() {
            let _ = writeln!(
                o,
                "{}. **{}**{} Gain: {}{} Risk: {}{}",
                i + 1,
                rec.action,
                full_stop(&rec.action),
                rec.expected_gain,
                full_stop(&rec.expected_gain),
                rec.risk,
                full_stop(&rec.risk)
            );
        }
        let _ = writeln!(o);
    }
    if let Some(m) = &r.server_metrics {
        let _ = writeln!(
            o,
            "## Server /metrics ({} polls over {:.0} s)\n",
            m.samples, m.span_s
        );
        let _ = writeln!(
            o,
            "running {} · queued {} · token usage {} · gen throughput {} tok/s · generated {} tok/s between polls · TTFT median {} s, p90 {} s · ITL median {} s\n",
            f(m.running, 0),
            f(m.queued, 0),
            f(m.token_usage, 2),
            f(m.gen_throughput, 1),
            f(m.generated_tok_per_s, 1),
            f(m.ttft_p50_s, 3),
            f(m.ttft_p90_s, 3),
            f(m.itl_p50_s, 4)
        );
    }
    if let Some(c) = &r.client {
        let _ = writeln!(o, "## Client vs server\n");
        let mut t = String::new();
        client_text(&mut t, c);
        let _ = writeln!(o, "```text\n{}```\n", t);
    }
    if !r.benchmark_runs.is_empty() {
        let _ = writeln!(o, "## {BENCH_TITLE}\n");
        let mut t = String::new();
        bench_text(&mut t, &r.benchmark_runs);
        let _ = writeln!(o, "```text\n{}```\n", t);
    }
    if let Some(cm) = &r.capacity_model {
        let _ = writeln!(
            o,
            "## KV capacity what-if (per GPU; SGLang's pool formula)\n"
        );
        let _ = writeln!(
            o,
            "{} bytes per token per GPU; pre = {:.1} GiB ({}); +0.01 mem_fraction_static = +{:.0} tokens; free at run time {} GiB.\n",
            cm.cell_bytes,
            cm.pre_gib,
            cm.pre_source,
            cm.tokens_per_hundredth,
            f(cm.free_now_gib, 2)
        );
        let _ = writeln!(
            o,
            "| change | pool tokens | change | extra GiB/GPU | feasibility | decode concurrency | projected tok/s |\n|---|---|---|---|---|---|---|"
        );
        for row in &cm.what_if.rows {
            let p = r
                .projection
                .as_ref()
                .and_then(|p| p.rows.iter().find(|x| x.label == row.label));
            let _ = writeln!(
                o,
                "| {} | {} | {:+.1}% | {:.2} | {} | {} | {} |",
                row.label,
                row.pool_tokens,
                row.change_pct,
                row.extra_gib_per_gpu,
                row.feasibility
                    .as_ref()
                    .map(|x| feasibility_label(x.verdict))
                    .unwrap_or("?"),
                f(row.decode_concurrency, 1),
                p.map(|p| format!(
                    "{:.0}{}",
                    p.tok_per_s,
                    if p.extrapolated {
                        " (extrapolated)"
                    } else {
                        ""
                    }
                ))
                .unwrap_or_else(|| "?".into())
            );
        }
        let _ = writeln!(o);
        for a in &cm.what_if.assumptions {
            let _ = writeln!(o, "- assumption: {a}");
        }
        if let Some(h) = &cm.hicache {
            for line in &h.summary {
                let _ = writeln!(o, "- HiCache: {line}");
            }
        }
        let _ = writeln!(o);
    }
    if !r.findings.is_empty() {
        let _ = writeln!(o, "## Findings\n");
        for (i, fi) in r.findings.iter().enumerate() {
            let _ = writeln!(
                o,
                "{}. **{}** ({} confidence). {}",
                i + 1,
                fi.title,
                confidence_label(fi.confidence),
                fi.detail
            );
            for g in &fi.figures {
                let _ = writeln!(o, "   - {}: {}", g.name, figure_value(g.value, &g.unit));
            }
            for e in &fi.evidence {
                let _ = writeln!(o, "   - lines: `{e}`");
            }
        }
        let _ = writeln!(o);
    }
    if !r.not_concluded.is_empty() {
        let _ = writeln!(o, "## Not concluded\n");
        for n in &r.not_concluded {
            let _ = writeln!(o, "- {n}");
        }
    }
    o
}

/// The `.` that ends a sentence after `s`, or nothing when `s` already ends one: with `.`,
/// `!` or `?`, possibly inside closing backticks, quotes, brackets or `**` (a quoted log line
/// such as `` `Retract requests.` `` ends its sentence too).
fn full_stop(s: &str) -> &'static str {
    let t = s
        .trim_end()
        .trim_end_matches(['`', '"', '\'', ')', ']', '*', '\u{201d}', '\u{2019}']);
    if t.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    }
}

fn rate_opt(r: &Option<Rate>, digits: usize) -> String {
    match r {
        Some(r) => {
            let ci = match (r.low, r.high) {
                (Some(l), Some(h)) => format!(" (95% interval {l:.digits$}-{h:.digits$})"),
                (Some(l), None) => format!(" (95% interval from {l:.digits$})"),
                _ => String::new(),
            };
            format!(
                "{:.digits$} {}{ci} over {}",
                r.value,
                r.unit,
                fmt_duration(r.window_s)
            )
        }
        None => "?".into(),
    }
}

fn client_text(o: &mut String, c: &ClientSummary) {
    let _ = writeln!(
        o,
        "  source {} ({}): {} completed, {} failed{}",
        c.source,
        c.format,
        c.completed,
        c.failed,
        c.total.map(|t| format!(" of {t}")).unwrap_or_default()
    );
    if let Some(p) = c.printed_req_per_s {
        let _ = writeln!(o, "  the client printed       {p} req/s");
    }
    if c.lifetime_req_per_s.is_some() {
        let _ = writeln!(
            o,
            "  lifetime average         {}",
            rate_opt(&c.lifetime_req_per_s, 3)
        );
    }
    if c.windowed_req_per_s.is_some() {
        let _ = writeln!(
            o,
            "  steady-window rate       {}",
            rate_opt(&c.windowed_req_per_s, 3)
        );
    }
    if c.implied_req_per_s.is_some() {
        let _ = writeln!(
            o,
            "  implied by server tokens {}",
            rate_opt(&c.implied_req_per_s, 3)
        );
    }
    if let Some(m) = c.mean_completion_tokens {
        let _ = writeln!(
            o,
            "  mean completion {m:.0} tokens, mean prompt {} tokens",
            f(c.mean_prompt_tokens, 0)
        );
    }
    if let Some(a) = &c.adequacy {
        let _ = writeln!(o, "  sample adequacy: {a}");
    }
    if let Some(e) = &c.eta {
        let _ = writeln!(
            o,
            "  ETA for the remaining {} requests: {} (95% interval {} to {})",
            e.remaining,
            fmt_duration(e.seconds),
            fmt_duration(e.low_s),
            e.high_s
                .map(fmt_duration)
                .unwrap_or_else(|| "unbounded".into())
        );
    }
}

const BENCH_TITLE: &str = "Benchmark runs (whole-run figures as the benchmark printed them)";

/// One line per benchmark run, then its latencies.
fn bench_text(o: &mut String, runs: &[diagnosis::bench::BenchmarkRun]) {
    let ms = |v: Option<f64>| f(v.map(|x| x * 1e3), 1);
    for run in runs {
        let b = &run.summary;
        let ok = b
            .successful_requests
            .or(b.total_requests)
            .map(|n| n.to_string())
            .unwrap_or_else(|| "?".into());
        let of = b
            .requested()
            .map(|n| format!(" of {n}"))
            .unwrap_or_default();
        let limit = b
            .max_concurrency
            .map(|m| format!(" (limit {m})"))
            .unwrap_or_default();
        let _ = writeln!(o, "  {}", run.source);
        let _ = writeln!(
            o,
            "    {ok} ok{of} in {} s · {} req/s · output {} tok/s (peak {}) · {} requests in flight{limit} · sent at {}{}",
            f(b.duration_s, 1),
            f(b.request_throughput, 2),
            f(b.output_tok_per_s, 0),
            f(b.peak_output_tok_per_s, 0),
            f(b.concurrency, 1),
            match (b.request_rate_per_s(), b.request_rate.as_deref()) {
                (Some(r), _) => format!("{r} req/s"),
                (None, Some("inf")) => "once (rate inf)".to_string(),
                (None, Some(other)) => format!("rate {other}"),
                (None, None) => "an unprinted rate".to_string(),
            },
            b.accept_length
                .map(|a| format!(" · accept length {a:.2}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            o,
            "    mean (median) TTFT {} ({}) ms · TPOT {} ({}) ms · ITL {} ({}) ms · end to end {} ({}) ms",
            ms(b.ttft.mean_s),
            ms(b.ttft.median_s),
            ms(b.tpot.mean_s),
            ms(b.tpot.median_s),
            ms(b.itl.mean_s),
            ms(b.itl.median_s),
            ms(b.e2e.mean_s),
            ms(b.e2e.median_s)
        );
    }
}

fn capacity_text(o: &mut String, cm: &CapacityModel, proj: Option<&Projection>) {
    let _ = writeln!(
        o,
        "  {} bytes per token per GPU; pre = {:.1} GiB ({}); +0.01 mem_fraction_static = +{:.0} tokens; free at run time {} GiB{}",
        cm.cell_bytes,
        cm.pre_gib,
        cm.pre_source,
        cm.tokens_per_hundredth,
        f(cm.free_now_gib, 2),
        cm.free_now_source
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "  {:<52} {:>10} {:>8} {:>9} {:>11} {:>13} {:>14}",
        "change", "pool tok", "change", "extra GiB", "feasibility", "decode concur.", "proj. tok/s"
    );
    for row in &cm.what_if.rows {
        let p = proj.and_then(|p| p.rows.iter().find(|x| x.label == row.label));
        let _ = writeln!(
            o,
            "  {:<52} {:>10} {:>+7.1}% {:>9.2} {:>11} {:>13} {:>14}",
            row.label,
            row.pool_tokens,
            row.change_pct,
            row.extra_gib_per_gpu,
            row.feasibility
                .as_ref()
                .map(|x| feasibility_label(x.verdict))
                .unwrap_or("?"),
            f(row.decode_concurrency, 1),
            p.map(|p| format!(
                "{:.0}{}",
                p.tok_per_s,
                if p.extrapolated { "*" } else { "" }
            ))
            .unwrap_or_else(|| "?".into())
        );
    }
    if let Some(p) = proj {
        let _ = writeln!(
            o,
            "  projection: {} (a={:.4} s, b={:.2e} s/req, c={:.2e} s/token, R²={:.2}, {} decode lines, running {:.0}-{:.0}; * = extrapolated)",
            p.formula, p.a, p.b, p.c, p.r2, p.n, p.running_range.0, p.running_range.1
        );
    }
    for a in &cm.what_if.assumptions {
        let _ = writeln!(o, "  assumption: {a}");
    }
    if let Some(h) = &cm.hicache {
        for line in &h.summary {
            let _ = writeln!(o, "  HiCache: {line}");
        }
    }
}

fn recommendations_text(o: &mut String, recs: &[Recommendation]) {
    for (i, r) in recs.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {}. {}\n     gain: {}\n     risk: {}",
            i + 1,
            r.action,
            r.expected_gain,
            r.risk
        );
    }
}

/// Render a GPU snapshot as text.
pub fn gpu_text(s: &gpu_probe::GpuSnapshot) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "GPU memory ({}); driver {}; CUDA {}",
        gpu_source_label(&s.source),
        s.driver_version.as_deref().unwrap_or("?"),
        s.cuda_version.as_deref().unwrap_or("?")
    );
    const MIB: f64 = 1024.0 * 1024.0;
    for d in &s.devices {
        let _ = writeln!(
            o,
            "  GPU {} {} ({}): total {:.0} MiB, used {:.0} MiB, free {:.0} MiB{}",
            d.index,
            d.name,
            d.architecture
                .map(|a| format!("{a:?}"))
                .unwrap_or_else(|| "architecture ?".into()),
            d.memory_total_bytes as f64 / MIB,
            d.memory_used_bytes as f64 / MIB,
            d.memory_free_bytes as f64 / MIB,
            d.memory_reserved_bytes
                .map(|r| format!(", reserved {:.0} MiB", r as f64 / MIB))
                .unwrap_or_default()
        );
    }
    for n in &s.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// `Fits` → `fits`, `OomLikely` → `OOM likely`.
pub fn feasibility_label(f: kv_capacity::Feasibility) -> &'static str {
    match f {
        kv_capacity::Feasibility::Fits => "fits",
        kv_capacity::Feasibility::Tight => "tight",
        kv_capacity::Feasibility::OomLikely => "OOM likely",
    }
}

/// A figure's value with its unit; fractions print as percentages.
fn figure_value(value: Option<f64>, unit: &str) -> String {
    match (value, unit) {
        (Some(v), "fraction") => format!("{:.0}%", v * 100.0),
        (v, u) => format!("{} {u}", fmt_num(v)),
    }
}

fn confidence_label(c: diagnosis::Confidence) -> &'static str {
    match c {
        diagnosis::Confidence::High => "high",
        diagnosis::Confidence::Medium => "medium",
        diagnosis::Confidence::Low => "low",
    }
}

fn gpu_source_label(s: &gpu_probe::SnapshotSource) -> String {
    match s {
        gpu_probe::SnapshotSource::Nvml => "NVML".into(),
        gpu_probe::SnapshotSource::NvidiaSmiCsv { path } => format!("nvidia-smi CSV {path}"),
        gpu_probe::SnapshotSource::NvidiaSmiTable { path } => format!("nvidia-smi table {path}"),
        gpu_probe::SnapshotSource::NvidiaSmiQuery { path } => format!("nvidia-smi -q {path}"),
    }
}
