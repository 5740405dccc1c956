//! `diagnose --prometheus URL`: every SGLang instance a Prometheus scrapes,
//! diagnosed from its history, and a fleet table over them.
//!
//! For each instance the series SGLang exports (`sglang-observables.md`
//! §3.3) are read with one range query per instance (split in time by the
//! client), turned into the `/metrics` polls the diagnosis already takes
//! ([`diagnosis::MetricsFacts`]: running and queued summed over DP ranks,
//! token usage the highest rank's), with the pool size from
//! `sglang:max_total_num_tokens` as server facts, and diagnosed with
//! [`diagnosis::diagnose_with`]. Per-rank means of queue and token usage
//! feed the outlier check (load imbalance) done here over the reports.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use diagnosis::{Bottleneck, Context, MetricsFacts, MetricsSample, Report, ServerFacts};
use serde::Serialize;
use sglang_client::PrometheusClient;
use sglang_client::prometheus::{Labels, RangeSeries, promql_string, selector_with};

/// The SGLang series read per instance with a range query. The pool size
/// (`sglang:max_total_num_tokens`, constant while a server runs) is read for the whole fleet
/// with one instant query instead.
pub const SERIES: &[&str] = &[
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:gen_throughput",
    "sglang:generation_tokens_total",
    "sglang:num_requests_total",
];

/// Requests to Prometheus in flight at once.
const CONCURRENCY: usize = 6;

/// The `--prometheus` options of `diagnose`.
#[derive(Debug, Args, Default, Clone)]
pub struct PrometheusArgs {
    /// Diagnose every SGLang instance this Prometheus scrapes (its base URL, e.g. http://127.0.0.1:9090), from the history of SGLang's series; prints a fleet table, then each instance's verdict.
    #[arg(long, value_name = "URL", conflicts_with_all = ["server", "watch", "logs", "log_flag"])]
    pub prometheus: Option<String>,
    /// With --prometheus: a series selector that narrows what is read, e.g. '{job="sglang"}'.
    #[arg(long, value_name = "SELECTOR", requires = "prometheus")]
    pub selector: Option<String>,
    /// With --prometheus: read this far back from now (a duration: 90s, 30m, 2h). Default 1h.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, requires = "prometheus", conflicts_with_all = ["start", "end"])]
    pub since: Option<Duration>,
    /// With --prometheus: start of the window (Unix seconds, or RFC 3339 like 2026-12-01T08:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = sglang_client::prometheus::parse_time, requires = "end")]
    pub start: Option<f64>,
    /// With --prometheus: end of the window (Unix seconds, or RFC 3339).
    #[arg(long, value_name = "TIME", value_parser = sglang_client::prometheus::parse_time, requires = "start")]
    pub end: Option<f64>,
    /// With --prometheus: the step between points (a duration; default 15s).
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, requires = "prometheus")]
    pub step: Option<Duration>,
}

/// The window read.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Window {
    /// Start, Unix seconds.
    pub start: f64,
    /// End, Unix seconds.
    pub end: f64,
    /// Step, seconds.
    pub step_s: f64,
}

/// Time-weighted (equal-step) means of one DP rank's gauges.
#[derive(Clone, Debug, Serialize)]
pub struct RankSummary {
    /// The `dp_rank` label ("" when the series have none).
    pub dp_rank: String,
    /// Mean `sglang:num_running_reqs` (requests).
    pub running_mean: Option<f64>,
    /// Mean `sglang:num_queue_reqs` (requests).
    pub queued_mean: Option<f64>,
    /// Mean `sglang:token_usage` (fraction).
    pub usage_mean: Option<f64>,
}

/// One instance of the fleet.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceReport {
    /// The `instance` label, as Prometheus sets it (`host:port`).
    pub instance: String,
    /// The verdict (the same `kind` values as a single report's `bottleneck`).
    pub bottleneck: Bottleneck,
    /// Steady generation throughput summed over DP ranks, with its interval.
    pub steady_gen_throughput: Option<diagnosis::report::Rate>,
    /// Mean running requests, summed over DP ranks.
    pub running_mean: Option<f64>,
    /// Mean queued requests, summed over DP ranks.
    pub queued_mean: Option<f64>,
    /// Mean token usage of the fullest rank at each step (fraction).
    pub usage_mean: Option<f64>,
    /// KV pool per DP rank (`sglang:max_total_num_tokens`, tokens).
    pub kv_pool_tokens: Option<u64>,
    /// Points read (steps with at least one value).
    pub points: usize,
    /// Per DP rank.
    pub ranks: Vec<RankSummary>,
    /// Values not used (NaN, negative, absurd), counted.
    pub rejected_points: u64,
    /// The instance's full report.
    pub report: Report,
}

/// A DP rank or instance whose queue or token usage stands apart from its peers.
#[derive(Clone, Debug, Serialize)]
pub struct Outlier {
    /// The instance.
    pub instance: String,
    /// The DP rank, for a rank against the other ranks of its instance; None for an instance
    /// against the other instances.
    pub dp_rank: Option<String>,
    /// `queue` (mean queued requests) or `usage` (mean token usage, fraction).
    pub what: String,
    /// Its value.
    pub value: f64,
    /// The median of its peers (itself included).
    pub peers_median: f64,
}

/// Totals over the fleet.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FleetTotals {
    /// Instances diagnosed.
    pub instances: usize,
    /// DP ranks over all instances.
    pub dp_ranks: usize,
    /// Σ steady gen throughput over the instances that have one (tok/s).
    pub steady_gen_tok_per_s: f64,
    /// Σ mean running requests.
    pub running_mean: f64,
    /// Σ mean queued requests.
    pub queued_mean: f64,
    /// Instances per verdict.
    pub by_bottleneck: BTreeMap<String, usize>,
}

/// `diagnose --prometheus`: the fleet.
#[derive(Clone, Debug, Serialize)]
pub struct FleetReport {
    /// The Prometheus read (credentials removed).
    pub prometheus: String,
    /// The selector used.
    pub selector: String,
    /// The window.
    pub window: Window,
    /// Requests sent to Prometheus.
    pub requests: u64,
    /// One per instance, by instance name.
    pub instances: Vec<InstanceReport>,
    /// Totals.
    pub totals: FleetTotals,
    /// Load imbalance.
    pub outliers: Vec<Outlier>,
    /// Instances that could not be read, each naming it and why.
    pub problems: Vec<String>,
}

/// Plausible ceiling of a series' values (above: rejected, like the `/metrics` reader).
fn ceiling(name: &str) -> f64 {
    match name {
        "sglang:num_running_reqs" | "sglang:num_queue_reqs" => 1e7,
        "sglang:token_usage" => 1.5,
        "sglang:gen_throughput" => 1e9,
        "sglang:max_total_num_tokens" => 1e12,
        _ => 1e15,
    }
}

/// Step-indexed values of one instance.
struct Accum {
    start: f64,
    step: f64,
    samples: Vec<MetricsSample>,
    present: Vec<bool>,
    kv_pool: Option<f64>,
    rejected: u64,
    ranks: BTreeMap<String, [(f64, u64); 3]>,
}

impl Accum {
    fn slot(&mut self, t: f64) -> Option<usize> {
        let i = ((t - self.start) / self.step).round();
        if i < 0.0 || i >= self.samples.len() as f64 {
            return None;
        }
        let i = i as usize;
        self.present[i] = true;
        self.samples[i].t = t;
        Some(i)
    }
}

fn add(slot: &mut Option<f64>, v: f64) {
    *slot = Some(slot.unwrap_or(0.0) + v);
}

/// Turns one instance's series into the `/metrics` polls and server facts the diagnosis takes.
///
/// `series` are the range-query results of that instance; points are placed on the step grid
/// from `window.start`. Returns the facts, the server facts (pool size, DP ranks), per-rank
/// means and the count of rejected points.
pub fn instance_facts(
    instance: &str,
    prometheus: &str,
    window: &Window,
    series: &[RangeSeries],
) -> (MetricsFacts, ServerFacts, Vec<RankSummary>, u64) {
    let n = (((window.end - window.start) / window.step_s).floor() as usize + 1).min(1 << 22);
    let mut a = Accum {
        start: window.start,
        step: window.step_s,
        samples: vec![MetricsSample::default(); n],
        present: vec![false; n],
        kv_pool: None,
        rejected: 0,
        ranks: BTreeMap::new(),
    };
    for s in series {
        let Some(name) = s.labels.get("__name__") else {
            continue;
        };
        let rank = s.labels.get("dp_rank").cloned().unwrap_or_default();
        let max = ceiling(name);
        for &(t, v) in &s.points {
            if !(v.is_finite() && v >= 0.0 && v <= max) {
                a.rejected += 1;
                continue;
            }
            let Some(i) = a.slot(t) else { continue };
            let x = &mut a.samples[i];
            let gauge = match name.as_str() {
                "sglang:num_running_reqs" => {
                    add(&mut x.running, v);
                    Some(0)
                }
                "sglang:num_queue_reqs" => {
                    add(&mut x.queued, v);
                    Some(1)
                }
                "sglang:token_usage" => {
                    x.token_usage = Some(x.token_usage.map_or(v, |u| u.max(v)));
                    Some(2)
                }
                "sglang:gen_throughput" => {
                    add(&mut x.gen_throughput, v);
                    None
                }
                "sglang:generation_tokens_total" => {
                    add(&mut x.generation_tokens_total, v);
                    None
                }
                "sglang:num_requests_total" => {
                    add(&mut x.num_requests_total, v);
                    None
                }
                "sglang:max_total_num_tokens" => {
                    a.kv_pool = Some(a.kv_pool.map_or(v, |p: f64| p.max(v)));
                    None
                }
                _ => None,
            };
            if let Some(g) = gauge {
                let e = a.ranks.entry(rank.clone()).or_default();
                e[g].0 += v;
                e[g].1 += 1;
            }
        }
    }
    let samples: Vec<MetricsSample> = a
        .samples
        .into_iter()
        .zip(a.present)
        .filter_map(|(s, p)| p.then_some(s))
        .collect();
    let mean = |x: (f64, u64)| (x.1 > 0).then(|| x.0 / x.1 as f64);
    let ranks: Vec<RankSummary> = a
        .ranks
        .iter()
        .map(|(r, g)| RankSummary {
            dp_rank: r.clone(),
            running_mean: mean(g[0]),
            queued_mean: mean(g[1]),
            usage_mean: mean(g[2]),
        })
        .collect();
    let source = format!("{prometheus} instance {instance}");
    let server = ServerFacts {
        source: source.clone(),
        dp_size: Some(ranks.len().max(1) as u32),
        max_total_num_tokens: a.kv_pool.map(|p| p.round() as u64),
        ..ServerFacts::default()
    };
    (
        MetricsFacts {
            source: instance.to_string(),
            samples,
        },
        server,
        ranks,
        a.rejected,
    )
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Queue: at least twice the peers' median and 5 requests above it. Usage: 0.25 apart from
/// the median (either way). Peers: the ranks of one instance (2 or more), or the instances
/// (3 or more). An outlier is a few standing apart: when more than a tenth of the peers (and
/// more than one) would be flagged for the same measure, they are a group, not outliers, and
/// none is flagged for it.
/// (instance, DP rank, mean queue, mean usage) of one peer.
type Peer = (String, Option<String>, Option<f64>, Option<f64>);

fn outliers_among(items: &[Peer], min_peers: usize) -> Vec<Outlier> {
    let mut out = Vec::new();
    if items.len() < min_peers {
        return out;
    }
    let mut queues: Vec<f64> = items.iter().filter_map(|i| i.2).collect();
    let mut usages: Vec<f64> = items.iter().filter_map(|i| i.3).collect();
    let mq = median(&mut queues);
    let mu = median(&mut usages);
    let mut by_queue = Vec::new();
    let mut by_usage = Vec::new();
    for (inst, rank, q, u) in items {
        if let (Some(q), Some(m)) = (q, mq)
            && *q >= 2.0 * m
            && *q >= m + 5.0
        {
            by_queue.push(Outlier {
                instance: inst.clone(),
                dp_rank: rank.clone(),
                what: "queue".into(),
                value: *q,
                peers_median: m,
            });
        }
        if let (Some(u), Some(m)) = (u, mu)
            && (u - m).abs() >= 0.25
        {
            by_usage.push(Outlier {
                instance: inst.clone(),
                dp_rank: rank.clone(),
                what: "usage".into(),
                value: *u,
                peers_median: m,
            });
        }
    }
    let few = (items.len() / 10).max(1);
    for group in [by_queue, by_usage] {
        if group.len() <= few {
            out.extend(group);
        }
    }
    out.sort_by(|a, b| (&a.instance, &a.dp_rank).cmp(&(&b.instance, &b.dp_rank)));
    out
}

/// Load imbalance over the fleet: ranks against their instance's other ranks, instances
/// against the other instances.
pub fn outliers(instances: &[InstanceReport]) -> Vec<Outlier> {
    let mut out = Vec::new();
    for i in instances {
        let items: Vec<_> = i
            .ranks
            .iter()
            .map(|r| {
                (
                    i.instance.clone(),
                    Some(r.dp_rank.clone()),
                    r.queued_mean,
                    r.usage_mean,
                )
            })
            .collect();
        out.extend(outliers_among(&items, 2));
    }
    let items: Vec<_> = instances
        .iter()
        .map(|i| (i.instance.clone(), None, i.queued_mean, i.usage_mean))
        .collect();
    out.extend(outliers_among(&items, 3));
    out
}

fn mean_of(s: &[MetricsSample], f: impl Fn(&MetricsSample) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = s.iter().filter_map(f).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Diagnose one instance from its series.
///
/// `pool_tokens` is the instance's `sglang:max_total_num_tokens` when read apart from `series`.
pub fn diagnose_instance(
    instance: &str,
    prometheus: &str,
    window: &Window,
    series: &[RangeSeries],
    pool_tokens: Option<u64>,
    sample_window_s: f64,
) -> InstanceReport {
    let (facts, mut server, ranks, rejected) = instance_facts(instance, prometheus, window, series);
    if server.max_total_num_tokens.is_none() {
        server.max_total_num_tokens = pool_tokens;
    }
    let running_mean = mean_of(&facts.samples, |s| s.running);
    let queued_mean = mean_of(&facts.samples, |s| s.queued);
    let usage_mean = mean_of(&facts.samples, |s| s.token_usage);
    let points = facts.samples.len();
    let kv_pool_tokens = server.max_total_num_tokens;
    let mut ctx = Context {
        sample_window_s: Some(sample_window_s),
        ..Context::default()
    };
    if rejected > 0 {
        ctx.source_errors.push(format!(
            "{prometheus} instance {instance}: {rejected} point(s) not used (NaN, negative or beyond what a server reports)"
        ));
    }
    ctx.server = Some(server);
    ctx.metrics = Some(facts);
    let report = diagnosis::diagnose_with(&diagnosis::Evidence::default(), &ctx);
    InstanceReport {
        instance: instance.to_string(),
        bottleneck: report.bottleneck,
        steady_gen_throughput: report.steady_gen_throughput.clone(),
        running_mean,
        queued_mean,
        usage_mean,
        kv_pool_tokens,
        points,
        ranks,
        rejected_points: rejected,
        report,
    }
}

/// Most points one series may take over the window (a day at a 1 s step fits).
pub const MAX_POINTS_PER_SERIES: f64 = 100_000.0;

/// The window from the options: `--start/--end`, or `--since` (default 1h) back from now.
pub fn window(p: &PrometheusArgs, now: f64) -> Result<Window> {
    let step_s = p.step.map(|d| d.as_secs_f64()).unwrap_or(15.0);
    anyhow::ensure!(step_s >= 0.001, "--step must be at least 1ms");
    let (start, end) = match (p.start, p.end) {
        (Some(s), Some(e)) => (s, e),
        _ => {
            let since = p.since.map(|d| d.as_secs_f64()).unwrap_or(3600.0);
            (now - since, now)
        }
    };
    anyhow::ensure!(end > start, "--end must be after --start");
    let points = (end - start) / step_s;
    anyhow::ensure!(
        points <= MAX_POINTS_PER_SERIES,
        "--step {step_s} s over a {:.0} s window is {points:.0} points per series, more than {MAX_POINTS_PER_SERIES:.0}: give a larger --step or a shorter window",
        end - start
    );
    Ok(Window { start, end, step_s })
}

/// Read and diagnose the fleet.
///
/// # Errors
/// A bad URL, selector or window; Prometheus unreachable or refusing the series query; no
/// SGLang series in the window. An instance whose range query fails is a problem in the
/// report, not an error.
pub fn read_fleet(p: &PrometheusArgs, sample_window_s: f64) -> Result<FleetReport> {
    let url = p.prometheus.clone().unwrap_or_default();
    let shown = sglang_client::error::redact_url(&url);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let w = window(p, now)?;
    let selector = p.selector.clone().unwrap_or_default();
    let names = SERIES
        .iter()
        .map(|s| s.trim_start_matches("sglang:"))
        .collect::<Vec<_>>()
        .join("|");
    let name_re = format!("__name__=~{}", promql_string(&format!("sglang:({names})")));
    let client = PrometheusClient::new(&url, Duration::from_secs(60))
        .map_err(|e| anyhow::anyhow!("--prometheus: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let discover = selector_with(
        &selector,
        &[format!(
            "__name__=~{}",
            promql_string("sglang:(num_running_reqs|generation_tokens_total)")
        )],
    )
    .map_err(|e| anyhow::anyhow!("--selector: {e}"))?;
    let found = rt
        .block_on(client.series(std::slice::from_ref(&discover), w.start, w.end))
        .map_err(|e| anyhow::anyhow!("--prometheus: {e}"))?;
    let instances: BTreeSet<String> = found
        .iter()
        .map(|l: &Labels| l.get("instance").cloned().unwrap_or_default())
        .collect();
    anyhow::ensure!(
        !instances.is_empty(),
        "--prometheus {shown}: no SGLang series ({discover}) between {} and {}; check --selector and the window, and that Prometheus scrapes the servers' /metrics (SGLang needs --enable-metrics)",
        w.start,
        w.end
    );
    let mut problems = Vec::new();
    // The pool size of every instance in one instant query.
    let pool_q = format!(
        "max by (instance) (max_over_time(sglang:max_total_num_tokens{}[{}s]))",
        selector_with(&selector, &[]).map_err(|e| anyhow::anyhow!("--selector: {e}"))?,
        ((w.end - w.start).ceil() as u64).max(1)
    );
    let pools: BTreeMap<String, u64> = match rt.block_on(client.query(&pool_q, w.end)) {
        Ok(v) => v
            .into_iter()
            .filter(|(_, x)| x.is_finite() && *x > 0.0 && *x <= 1e12)
            .map(|(l, x)| {
                (
                    l.get("instance").cloned().unwrap_or_default(),
                    x.round() as u64,
                )
            })
            .collect(),
        Err(e) => {
            problems.push(format!("pool sizes ({pool_q}): {e}"));
            BTreeMap::new()
        }
    };
    let pools = std::sync::Arc::new(pools);
    let mut reports: Vec<InstanceReport> = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        let mut out = Vec::new();
        let mut pending = instances.into_iter();
        let spawn_next = |set: &mut tokio::task::JoinSet<_>, inst: String| -> Result<(), String> {
            let q = selector_with(
                &selector,
                &[
                    name_re.clone(),
                    format!("instance={}", promql_string(&inst)),
                ],
            )?;
            let c = client.clone();
            let shown = shown.clone();
            let pool = pools.get(&inst).copied();
            set.spawn(async move {
                let r = c.query_range(&q, w.start, w.end, w.step_s).await;
                match r {
                    Ok(series) => {
                        // Converting on a blocking thread keeps the runtime's workers on I/O.
                        let inst2 = inst.clone();
                        tokio::task::spawn_blocking(move || {
                            diagnose_instance(&inst2, &shown, &w, &series, pool, sample_window_s)
                        })
                        .await
                        .map_err(|e| format!("instance {inst}: {e}"))
                    }
                    Err(e) => Err(format!("instance {inst}: {e}")),
                }
            });
            Ok(())
        };
        for _ in 0..CONCURRENCY {
            if let Some(i) = pending.next()
                && let Err(e) = spawn_next(&mut set, i)
            {
                problems.push(e);
            }
        }
        while let Some(done) = set.join_next().await {
            match done {
                Ok(Ok(r)) => out.push(r),
                Ok(Err(e)) => problems.push(e),
                Err(e) => problems.push(format!("a query task failed: {e}")),
            }
            if let Some(i) = pending.next()
                && let Err(e) = spawn_next(&mut set, i)
            {
                problems.push(e);
            }
        }
        out
    });
    reports.sort_by(|a, b| a.instance.cmp(&b.instance));
    problems.sort();
    let mut totals = FleetTotals {
        instances: reports.len(),
        ..FleetTotals::default()
    };
    for r in &reports {
        totals.dp_ranks += r.ranks.len().max(1);
        totals.steady_gen_tok_per_s += r.steady_gen_throughput.as_ref().map_or(0.0, |x| x.value);
        totals.running_mean += r.running_mean.unwrap_or(0.0);
        totals.queued_mean += r.queued_mean.unwrap_or(0.0);
        *totals
            .by_bottleneck
            .entry(r.bottleneck.name().to_string())
            .or_default() += 1;
    }
    Ok(FleetReport {
        prometheus: shown,
        selector,
        window: w,
        requests: client.requests_sent(),
        outliers: outliers(&reports),
        instances: reports,
        totals,
        problems,
    })
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.digits$}"))
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
/// outliers, problems, then each instance's headline.
pub fn text(f: &FleetReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Fleet from {} ({} instance(s), {} DP rank(s); {:.0} s window at a {} s step, {} request(s) to Prometheus)",
        f.prometheus,
        f.totals.instances,
        f.totals.dp_ranks,
        f.window.end - f.window.start,
        f.window.step_s,
        f.requests
    );
    let rows: Vec<[String; 7]> = f
        .instances
        .iter()
        .map(|i| {
            [
                i.instance.clone(),
                diagnosis::narrative::bottleneck_label(i.bottleneck).to_string(),
                rate_cell(&i.steady_gen_throughput),
                opt(i.running_mean, 1),
                opt(i.queued_mean, 1),
                opt(i.usage_mean, 2),
                i.kv_pool_tokens.map_or("-".into(), |p| p.to_string()),
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
            Some(r) => format!("{} DP rank {r}", x.instance),
            None => x.instance.clone(),
        };
        let what = if x.what == "queue" {
            format!("mean queue {:.1} requests", x.value)
        } else {
            format!("mean token usage {:.2}", x.value)
        };
        let _ = writeln!(
            o,
            "Outlier: {who}: {what} against a median of {:.2} among its peers (load imbalance)",
            x.peers_median
        );
    }
    for p in &f.problems {
        let _ = writeln!(o, "Not read: {p}");
    }
    for i in &f.instances {
        let _ = writeln!(o, "\n{}: {}", i.instance, i.report.headline.text);
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
        "| instance | verdict | steady gen tok/s (95%) | running | queued | usage | KV pool tokens |\n|---|---|---|---|---|---|---|"
    );
    for i in &f.instances {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            i.instance,
            diagnosis::narrative::bottleneck_label(i.bottleneck),
            rate_cell(&i.steady_gen_throughput),
            opt(i.running_mean, 1),
            opt(i.queued_mean, 1),
            opt(i.usage_mean, 2),
            i.kv_pool_tokens.map_or("-".into(), |p| p.to_string())
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
            x.what,
            x.value,
            x.peers_median
        );
    }
    for i in &f.instances {
        let _ = writeln!(o, "\n## `{}`\n\n{}", i.instance, i.report.headline.text);
    }
    o
}

/// Run `diagnose --prometheus`: print the fleet (text or `--json`), write `--markdown`.
///
/// # Errors
/// See [`read_fleet`]; writing stdout or the Markdown file.
pub fn run(args: &crate::DiagnoseArgs) -> Result<()> {
    let f = read_fleet(&args.prometheus, args.sample_window)?;
    for p in &f.problems {
        eprintln!("warning: {}", crate::flags::printable(p));
    }
    let mut out = anstream::stdout();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&f).context("serialising the fleet report")?
        )?;
    } else {
        write!(out, "{}", text(&f))?;
    }
    out.flush()?;
    if let Some(path) = &args.markdown {
        std::fs::write(path, markdown(&f))
            .with_context(|| format!("--markdown {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, rank: &str, pts: &[(f64, f64)]) -> RangeSeries {
        let mut labels = Labels::new();
        labels.insert("__name__".into(), name.into());
        labels.insert("instance".into(), "h:1".into());
        if !rank.is_empty() {
            labels.insert("dp_rank".into(), rank.into());
        }
        RangeSeries {
            labels,
            points: pts.to_vec(),
        }
    }

    #[test]
    fn ranks_are_summed_per_step_and_bad_points_rejected() {
        let w = Window {
            start: 100.0,
            end: 130.0,
            step_s: 15.0,
        };
        let s = [
            series(
                "sglang:num_running_reqs",
                "0",
                &[(100.0, 10.0), (115.0, 12.0)],
            ),
            series(
                "sglang:num_running_reqs",
                "1",
                &[(100.0, 4.0), (115.0, f64::NAN)],
            ),
            series(
                "sglang:num_queue_reqs",
                "0",
                &[(100.0, 30.0), (115.0, 1.8e19)],
            ),
            series("sglang:token_usage", "0", &[(100.0, 0.9), (130.0, 0.95)]),
            series("sglang:token_usage", "1", &[(100.0, 0.5)]),
            series("sglang:max_total_num_tokens", "0", &[(130.0, 24000.0)]),
        ];
        let (facts, server, ranks, rejected) = instance_facts("h:1", "http://p", &w, &s);
        assert_eq!(rejected, 2);
        assert_eq!(facts.samples.len(), 3);
        assert_eq!(facts.samples[0].running, Some(14.0));
        assert_eq!(facts.samples[1].running, Some(12.0));
        assert_eq!(facts.samples[0].queued, Some(30.0));
        assert_eq!(facts.samples[1].queued, None);
        assert_eq!(facts.samples[0].token_usage, Some(0.9));
        assert_eq!(facts.samples[2].t, 130.0);
        assert_eq!(server.max_total_num_tokens, Some(24000));
        assert_eq!(server.dp_size, Some(2));
        assert_eq!(ranks[0].running_mean, Some(11.0));
        assert_eq!(ranks[1].usage_mean, Some(0.5));
    }

    #[test]
    fn a_rank_with_a_standing_queue_is_an_outlier() {
        let items = vec![
            ("h".to_string(), Some("0".to_string()), Some(1.0), Some(0.5)),
            (
                "h".to_string(),
                Some("1".to_string()),
                Some(2.0),
                Some(0.55),
            ),
            (
                "h".to_string(),
                Some("2".to_string()),
                Some(40.0),
                Some(0.97),
            ),
            ("h".to_string(), Some("3".to_string()), Some(1.5), Some(0.5)),
        ];
        let o = outliers_among(&items, 2);
        let got: Vec<(&str, &str)> = o
            .iter()
            .map(|x| (x.dp_rank.as_deref().unwrap(), x.what.as_str()))
            .collect();
        assert_eq!(got, [("2", "queue"), ("2", "usage")]);
        assert_eq!(o[0].peers_median, 1.75);
        // A third of the fleet apart is a group, not outliers.
        let fleet: Vec<Peer> = (0..9)
            .map(|i| {
                (
                    format!("h{i}"),
                    None,
                    Some(0.0),
                    Some(if i < 3 { 0.97 } else { 0.1 }),
                )
            })
            .collect();
        assert!(outliers_among(&fleet, 3).is_empty());
    }
}
