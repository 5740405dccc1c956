//! The fleet as text and as Markdown: one row per instance, the totals, the outliers, what
//! could not be read, and each instance's headline.

use std::fmt::Write as _;

use diagnosis::fleet::InstanceReport;
use diagnosis::rules::fleet_imbalance::Measure;

use super::FleetReport;
use crate::flags::one_line;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.digits$}"))
}

/// Seconds of idle scheduler per second over the window, summed over DP ranks
/// (`sglang:scheduler_idle_seconds_total`; `-` where the server does not export it).
fn idle_s_per_s(i: &InstanceReport) -> Option<f64> {
    i.report
        .server_metrics
        .as_ref()
        .and_then(|m| m.scheduler_idle_s_per_s)
}

fn rate_cell(r: &Option<diagnosis::report::Rate>) -> String {
    match r {
        None => "-".into(),
        Some(r) => match (r.low, r.high) {
            (Some(l), Some(h)) => format!("{:.0} ({:.0}-{:.0})", r.value, l, h),
            _ => format!("{:.0}", r.value),
        },
    }
}

/// The fleet as text: a table (one row per instance, named as Prometheus labels it), totals,
/// outliers, problems, then each instance's headline. Labels come from Prometheus: their
/// control characters are escaped ([`one_line`]).
pub fn text(f: &FleetReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Fleet from {} ({} instance(s), {} DP rank(s); {:.0} s window at a {} s step, {} request(s) to Prometheus)",
        one_line(&f.prometheus),
        f.totals.instances,
        f.totals.dp_ranks,
        f.window.end - f.window.start,
        f.window.step_s,
        f.requests
    );
    let rows: Vec<[String; 8]> = f
        .instances
        .iter()
        .map(|i| {
            [
                one_line(&i.instance).into_owned(),
                diagnosis::narrative::bottleneck_label(i.bottleneck).to_string(),
                rate_cell(&i.steady_gen_throughput),
                opt(i.running_mean, 1),
                opt(i.queued_mean, 1),
                opt(i.usage_mean, 2),
                i.kv_pool_tokens.map_or("-".into(), |p| p.to_string()),
                opt(idle_s_per_s(i), 2),
            ]
        })
        .collect();
    let head = [
        "instance",
        "verdict",
        "steady gen tok/s (95%)",
        "running",
        "queued",
        "usage",
        "KV pool tokens",
        "sched idle s/s",
    ];
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |o: &mut String, cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(o, "  {}", parts.join("  ").trim_end());
    };
    line(&mut o, &head.map(String::from));
    for r in &rows {
        line(&mut o, r);
    }
    let verdicts: Vec<String> = f
        .totals
        .by_bottleneck
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let _ = writeln!(
        o,
        "Total: {:.0} tok/s steady gen throughput, {:.1} running, {:.1} queued (means); verdicts: {}",
        f.totals.steady_gen_tok_per_s,
        f.totals.running_mean,
        f.totals.queued_mean,
        verdicts.join(", ")
    );
    for x in &f.outliers {
        let who = match &x.dp_rank {
            Some(r) => format!("{} DP rank {}", one_line(&x.instance), one_line(r)),
            None => one_line(&x.instance).into_owned(),
        };
        let what = match x.what {
            Measure::Queue => format!("mean queue {:.1} requests", x.value),
            Measure::Usage => format!("mean token usage {:.2}", x.value),
        };
        let _ = writeln!(
            o,
            "Outlier: {who}: {what} against a median of {:.2} among its peers (load imbalance)",
            x.peers_median
        );
    }
    for p in &f.problems {
        let _ = writeln!(o, "Not read: {}", one_line(p));
    }
    for i in &f.instances {
        let _ = writeln!(
            o,
            "\n{}: {}",
            one_line(&i.instance),
            one_line(&i.report.headline.text)
        );
    }
    o
}

/// The fleet as Markdown (the same table and lines).
pub fn markdown(f: &FleetReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Fleet from {}\n\n{} instance(s), {} DP rank(s), {:.0} s window at a {} s step.\n",
        f.prometheus,
        f.totals.instances,
        f.totals.dp_ranks,
        f.window.end - f.window.start,
        f.window.step_s
    );
    let _ = writeln!(
        o,
        "| instance | verdict | steady gen tok/s (95%) | running | queued | usage | KV pool tokens | sched idle s/s |\n|---|---|---|---|---|---|---|---|"
    );
    for i in &f.instances {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            i.instance,
            diagnosis::narrative::bottleneck_label(i.bottleneck),
            rate_cell(&i.steady_gen_throughput),
            opt(i.running_mean, 1),
            opt(i.queued_mean, 1),
            opt(i.usage_mean, 2),
            i.kv_pool_tokens.map_or("-".into(), |p| p.to_string()),
            opt(idle_s_per_s(i), 2)
        );
    }
    let _ = writeln!(
        o,
        "\nTotal: {:.0} tok/s steady gen throughput, {:.1} running, {:.1} queued (means).",
        f.totals.steady_gen_tok_per_s, f.totals.running_mean, f.totals.queued_mean
    );
    for x in &f.outliers {
        let _ = writeln!(
            o,
            "- Outlier: `{}`{}: {} {:.2} against a median of {:.2} among its peers.",
            x.instance,
            x.dp_rank
                .as_ref()
                .map(|r| format!(" DP rank {r}"))
                .unwrap_or_default(),
            x.what.name(),
            x.value,
            x.peers_median
        );
    }
    for i in &f.instances {
        let _ = writeln!(o, "\n## `{}`\n\n{}", i.instance, i.report.headline.text);
    }
    o
}
