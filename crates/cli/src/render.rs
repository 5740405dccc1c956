//! Rendering a [`Report`] for people: terminal text (optionally coloured) and Markdown.
//!
//! Numbers always carry their unit; unknown values print as `?`.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use diagnosis::Bottleneck;
use diagnosis::report::{Finding, GaugeStats, Rate, Report};

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

fn gauge_line(name: &str, g: &GaugeStats, digits: usize, unit: &str) -> String {
    format!(
        "{name:<16} median {} · p90 {} · max {} {unit}",
        f(g.median, digits),
        f(g.p90, digits),
        f(g.max, digits)
    )
}

fn duration(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
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
        duration(r.window_s)
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
    let _ = writeln!(
        o,
        "{} {}",
        paint(
            style_for(r.bottleneck),
            &format!("Verdict: {}.", r.bottleneck.label())
        ),
        r.headline
    );
    if let Some(t) = &r.steady_gen_throughput {
        let _ = writeln!(o, "Steady server gen throughput: {}", rate_text(t));
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
            let _ = writeln!(
                o,
                "  span {} ; steady state from +{} to +{} ({}; {})",
                duration(sp.end_s - sp.start_s),
                duration(sp.steady_start_s - sp.start_s),
                duration(sp.steady_end_s - sp.start_s),
                duration(sp.steady_end_s - sp.steady_start_s),
                sp.method
            );
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
            "KV pool: {} tokens per DP rank; mem_fraction_static {}; KV cache {} GiB; free after CUDA graphs {} GiB; max_running_requests {}",
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
    let title = format!("{n}. {} [{:?} confidence]", fi.title, fi.confidence);
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
        let _ = writeln!(o, "   - {}: {} {}", g.name, fmt_num(g.value), g.unit);
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
    let _ = writeln!(o, "**Verdict: {}.** {}\n", r.bottleneck.label(), r.headline);
    if let Some(t) = &r.steady_gen_throughput {
        let _ = writeln!(o, "Steady server gen throughput: {}\n", rate_text(t));
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
    if !r.findings.is_empty() {
        let _ = writeln!(o, "## Findings\n");
        for (i, fi) in r.findings.iter().enumerate() {
            let _ = writeln!(
                o,
                "{}. **{}** ({:?} confidence). {}",
                i + 1,
                fi.title,
                fi.confidence,
                fi.detail
            );
            for g in &fi.figures {
                let _ = writeln!(o, "   - {}: {} {}", g.name, fmt_num(g.value), g.unit);
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
