//! `diagnose --prometheus URL`: every SGLang instance a Prometheus scrapes,
//! diagnosed from its history, and a fleet table over them.
//!
//! This module does the I/O and the printing: it finds the instances, reads each one's
//! series (`diagnosis::fleet::SERIES`) with one range query per instance (split in time by
//! the client) and the pool sizes with one instant query, and prints the table. The analysis
//! is `diagnosis::fleet`: the series on the step grid as `/metrics` polls, each instance's
//! diagnosis, the totals and the outliers (`diagnosis::rules::fleet_imbalance`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use diagnosis::fleet::{FleetTotals, InstanceReport, SERIES, Series, Window};
use diagnosis::rules::fleet_imbalance::Outlier;
use serde::Serialize;

use crate::flags::one_line;
use sglang_client::PrometheusClient;
use sglang_client::prometheus::{Labels, RangeSeries, promql_string, selector_with};

mod render;
pub use render::{markdown, text};

/// Requests to Prometheus in flight at once.
const CONCURRENCY: usize = 6;
/// The most one request to Prometheus may take (seconds), within `--timeout`.
pub const REQUEST_TIMEOUT_S: u64 = 60;
/// `--timeout` when none is given (seconds): the whole read, every instance's queries
/// together. Six range queries run at once, each up to [`REQUEST_TIMEOUT_S`]: 1,000 stalled
/// instances took 2.8 hours before this deadline (issue 30 C17).
pub const DEFAULT_TIMEOUT_S: u64 = 600;
/// Instances named in the problem that says how many the deadline left unread.
const UNREAD_NAMED: usize = 5;

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
    /// With --prometheus: the most the whole read may take (a duration; default 10m). Instances not read by then are listed as not read; if none was read, diagnose exits 1.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, requires = "prometheus")]
    pub timeout: Option<Duration>,
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

/// The window from the options: `--start/--end`, or `--since` (default 1h) back from now, at
/// `--step` (default 15 s).
///
/// # Errors
/// A step under 1 ms, an end not after the start, or too many points per series
/// ([`diagnosis::error::WindowError`]).
pub fn window(p: &PrometheusArgs, now: f64) -> Result<Window> {
    let step_s = p.step.map(|d| d.as_secs_f64()).unwrap_or(15.0);
    let w = match (p.start, p.end) {
        (Some(s), Some(e)) => Window::new(s, e, step_s),
        _ => Window::since(
            now,
            p.since.map(|d| d.as_secs_f64()).unwrap_or(3600.0),
            step_s,
        ),
    };
    Ok(w?)
}

/// v0.5.9's info gauge of the KV page (`python/sglang/srt/metrics/collector.py`,
/// `emit_cache_config_info`): its figures are the labels `page_size` and `num_pages`.
const CACHE_CONFIG_INFO: &str = "sglang:cache_config_info";

/// One instance's range-query results as the diagnosis takes them (a series without a name
/// is left out). A `sglang:cache_config_info{page_size,num_pages}` series becomes the two
/// gauges that replaced it, `sglang:page_size` and `sglang:num_pages`, at its times (labels
/// that are not whole numbers are left out).
fn series_of(found: Vec<RangeSeries>) -> Vec<Series> {
    let mut out = Vec::with_capacity(found.len());
    for mut s in found {
        let Some(name) = s.labels.remove("__name__") else {
            continue;
        };
        let dp_rank = s.labels.remove("dp_rank");
        if name == CACHE_CONFIG_INFO {
            for gauge in ["page_size", "num_pages"] {
                let Some(v) = s.labels.get(gauge).and_then(|v| v.parse::<u64>().ok()) else {
                    continue;
                };
                out.push(Series {
                    name: format!("sglang:{gauge}"),
                    dp_rank: dp_rank.clone(),
                    points: s.points.iter().map(|&(t, _)| (t, v as f64)).collect(),
                });
            }
            continue;
        }
        out.push(Series {
            name,
            dp_rank,
            points: s.points,
        });
    }
    out
}

/// Labels by which one instance's series of one name may differ and still be summed into
/// the instance's figure: its ranks ([`sglang_client::metrics::RANK_LABELS`]), the splits
/// summed over (`is_streaming`, `stream`: [`sglang_client::metrics::SUMMED_LABELS`]), the
/// device timer's `category`, and v0.5.9's `cache_config_info` figures (`page_size`,
/// `num_pages`). `__name__` and `instance` are one value per name and instance.
fn summable(label: &str) -> bool {
    sglang_client::metrics::RANK_LABELS.contains(&label)
        || sglang_client::metrics::SUMMED_LABELS.contains(&label)
        || matches!(
            label,
            "__name__" | "instance" | "category" | "page_size" | "num_pages"
        )
}

/// One instance's series, less the names whose series differ by a label [`summable`] does
/// not allow (two jobs scraping one server, a label a relabelling rule adds, a per-request
/// custom label): those are not the ranks of one server, so they are not summed but left
/// out, each named in a problem with its label (issue 30 C18).
fn refuse_other_splits(inst: &str, found: Vec<RangeSeries>) -> (Vec<RangeSeries>, Vec<String>) {
    let mut by_name: BTreeMap<String, Vec<&Labels>> = BTreeMap::new();
    for s in &found {
        let name = s.labels.get("__name__").cloned().unwrap_or_default();
        by_name.entry(name).or_default().push(&s.labels);
    }
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    for (name, sets) in &by_name {
        let labels: BTreeSet<&str> = sets
            .iter()
            .flat_map(|l| l.keys().map(String::as_str))
            .filter(|k| !summable(k))
            .collect();
        for label in labels {
            let values: BTreeSet<&str> = sets
                .iter()
                .map(|l| l.get(label).map_or("", String::as_str))
                .collect();
            if values.len() > 1 {
                refused.insert(
                    name.clone(),
                    format!(
                        "instance {inst}: {name}: its {} series differ by label {label:?} ({} values), not only by rank labels ({}): not the ranks of one server, so not summed and not used",
                        sets.len(),
                        values.len(),
                        sglang_client::metrics::RANK_LABELS.join(", ")
                    ),
                );
                break;
            }
        }
    }
    if refused.is_empty() {
        return (found, Vec::new());
    }
    let kept = found
        .into_iter()
        .filter(|s| !refused.contains_key(s.labels.get("__name__").map_or("", String::as_str)))
        .collect();
    (kept, refused.into_values().collect())
}

/// Read and diagnose the fleet, all of it within `--timeout` (default [`DEFAULT_TIMEOUT_S`]).
///
/// # Errors
/// A bad URL, selector or window; Prometheus unreachable or refusing the query that finds the
/// instances; no SGLang series in the window; the deadline passed before the instances were
/// found; no instance read (each one's reason counted and the first named). An instance whose
/// range query fails, or that the deadline leaves unread, is a problem in the report.
pub fn read_fleet(p: &PrometheusArgs, sample_window_s: f64) -> Result<FleetReport> {
    let url = p.prometheus.clone().unwrap_or_default();
    let shown = sglang_client::error::redact_url(&url);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let w = window(p, now)?;
    let timeout = p.timeout.unwrap_or(Duration::from_secs(DEFAULT_TIMEOUT_S));
    let selector = p.selector.clone().unwrap_or_default();
    let names = SERIES
        .iter()
        .chain(&[CACHE_CONFIG_INFO])
        .map(|s| s.trim_start_matches("sglang:"))
        .collect::<Vec<_>>()
        .join("|");
    let name_re = format!("__name__=~{}", promql_string(&format!("sglang:({names})")));
    let client = PrometheusClient::new(&url, timeout.min(Duration::from_secs(REQUEST_TIMEOUT_S)))
        .map_err(|e| anyhow::anyhow!("--prometheus: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let deadline = tokio::time::Instant::now() + timeout;
    let late = |what: &str| {
        anyhow::anyhow!(
            "--prometheus {shown}: {what} did not end within --timeout {:.0} s; nothing was read",
            timeout.as_secs_f64()
        )
    };
    // The instances: one series each (`group by (instance)`), however many ranks and names
    // each exports, over the window (`last_over_time` at its end over its length).
    let sel = selector_with(&selector, &[]).map_err(|e| anyhow::anyhow!("--selector: {e}"))?;
    let range = ((w.end - w.start).ceil() as u64).max(1);
    let discover = ["num_running_reqs", "generation_tokens_total"]
        .map(|n| format!("group by (instance) (last_over_time(sglang:{n}{sel}[{range}s]))"))
        .join(" or ");
    let found = rt
        .block_on(async { tokio::time::timeout_at(deadline, client.query(&discover, w.end)).await })
        .map_err(|_| late("finding the instances"))?
        .map_err(|e| anyhow::anyhow!("--prometheus: {e}"))?;
    let instances: BTreeSet<String> = found
        .iter()
        .map(|(l, _)| l.get("instance").cloned().unwrap_or_default())
        .collect();
    anyhow::ensure!(
        !instances.is_empty(),
        "--prometheus {shown}: no SGLang series ({discover}) between {} and {}; check --selector and the window, and that Prometheus scrapes the servers' /metrics (SGLang needs --enable-metrics)",
        w.start,
        w.end
    );
    let mut problems = Vec::new();
    // The pool size of every instance in one instant query: `max_total_num_tokens`, else
    // `page_size × num_pages` (SGLang exports `num_pages = max_total_num_tokens // page_size`,
    // `managers/scheduler.py`); v0.5.9's `cache_config_info` holds them as labels and comes
    // with the range query instead.
    let pool_q = format!(
        "max by (instance) (max_over_time(sglang:max_total_num_tokens{sel}[{range}s])) or \
         max by (instance) (max_over_time(sglang:page_size{sel}[{range}s]) * \
         max_over_time(sglang:num_pages{sel}[{range}s]))"
    );
    let pools = rt
        .block_on(async { tokio::time::timeout_at(deadline, client.query(&pool_q, w.end)).await });
    let pools: BTreeMap<String, u64> = match pools {
        Ok(Ok(v)) => v
            .into_iter()
            .filter(|(_, x)| {
                x.is_finite()
                    && *x > 0.0
                    && *x <= diagnosis::fleet::plausible_max("sglang:max_total_num_tokens")
            })
            .map(|(l, x)| {
                (
                    l.get("instance").cloned().unwrap_or_default(),
                    x.round() as u64,
                )
            })
            .collect(),
        Ok(Err(e)) => {
            problems.push(format!("pool sizes ({pool_q}): {e}"));
            BTreeMap::new()
        }
        Err(_) => {
            problems.push(format!(
                "pool sizes ({pool_q}): no answer within --timeout {:.0} s",
                timeout.as_secs_f64()
            ));
            BTreeMap::new()
        }
    };
    let pools = std::sync::Arc::new(pools);
    let wanted = instances.len();
    let (mut reports, unread) = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        let mut out = Vec::new();
        let mut pending = instances.into_iter();
        let mut in_flight: BTreeSet<String> = BTreeSet::new();
        let spawn_next = |set: &mut tokio::task::JoinSet<_>,
                          in_flight: &mut BTreeSet<String>,
                          inst: String|
         -> Result<(), String> {
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
            in_flight.insert(inst.clone());
            set.spawn(async move {
                let r = c.query_range(&q, w.start, w.end, w.step_s).await;
                let inst2 = inst.clone();
                let mut refused = Vec::new();
                let done = match r {
                    // Converting on a blocking thread keeps the runtime's workers on I/O.
                    Ok(series) => {
                        let (series, said) = refuse_other_splits(&inst, series);
                        refused = said;
                        tokio::task::spawn_blocking(move || {
                            diagnosis::fleet::diagnose_instance(
                                &inst2,
                                &shown,
                                &w,
                                &series_of(series),
                                pool,
                                sample_window_s,
                            )
                        })
                        .await
                        .map_err(|e| format!("instance {inst}: {e}"))
                    }
                    Err(e) => Err(format!("instance {inst}: {e}")),
                };
                (inst, done, refused)
            });
            Ok(())
        };
        let mut next = |set: &mut tokio::task::JoinSet<_>,
                        in_flight: &mut BTreeSet<String>,
                        problems: &mut Vec<String>| {
            if let Some(i) = pending.next()
                && let Err(e) = spawn_next(set, in_flight, i)
            {
                problems.push(e);
            }
        };
        for _ in 0..CONCURRENCY {
            next(&mut set, &mut in_flight, &mut problems);
        }
        loop {
            let done = match tokio::time::timeout_at(deadline, set.join_next()).await {
                Ok(Some(done)) => done,
                Ok(None) => break,
                // The deadline: what runs is dropped (the set aborts its tasks), what waits
                // is not started.
                Err(_) => break,
            };
            match done {
                Ok((inst, r, refused)) => {
                    in_flight.remove(&inst);
                    problems.extend(refused);
                    match r {
                        Ok(r) => out.push(r),
                        Err(e) => problems.push(e),
                    }
                }
                Err(e) => problems.push(format!("a query task failed: {e}")),
            }
            next(&mut set, &mut in_flight, &mut problems);
        }
        let unread: Vec<String> = in_flight.into_iter().chain(pending).collect();
        (out, unread)
    });
    if !unread.is_empty() {
        let named: Vec<&str> = unread
            .iter()
            .take(UNREAD_NAMED)
            .map(String::as_str)
            .collect();
        problems.push(format!(
            "{} of {wanted} instance(s) not read: --timeout {:.0} s passed ({}{})",
            unread.len(),
            timeout.as_secs_f64(),
            named.join(", "),
            if unread.len() > named.len() {
                ", …"
            } else {
                ""
            }
        ));
    }
    problems.sort();
    anyhow::ensure!(
        !reports.is_empty(),
        "--prometheus {shown}: none of the {wanted} instance(s) could be read ({} problem(s); first: {})",
        problems.len(),
        problems.first().map_or("none", String::as_str)
    );
    reports.sort_by(|a, b| a.instance.cmp(&b.instance));
    Ok(FleetReport {
        prometheus: shown,
        selector,
        window: w,
        requests: client.requests_sent(),
        outliers: diagnosis::fleet::outliers(&reports),
        totals: diagnosis::fleet::totals(&reports),
        instances: reports,
        problems,
    })
}

/// Run `diagnose --prometheus`: print the fleet (text or `--json`), write `--markdown`.
///
/// # Errors
/// See [`read_fleet`]; writing stdout or the Markdown file.
pub fn run(args: &crate::DiagnoseArgs) -> Result<()> {
    let f = read_fleet(&args.prometheus, args.sample_window)?;
    for p in &f.problems {
        eprintln!("warning: {}", one_line(p));
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
    use diagnosis::rules::fleet_imbalance::Measure;

    /// Item 24 of issue 30: a label from Prometheus with an escape sequence and a newline
    /// neither reaches the terminal raw nor starts a line of its own.
    #[test]
    fn labels_with_control_characters_stay_on_their_line() {
        let evil = "h:1\u{1b}[2J\nVerdict: all good\r";
        let report = diagnosis::diagnose_with(
            &diagnosis::Evidence::default(),
            &diagnosis::Context::default(),
        );
        let f = FleetReport {
            prometheus: "http://p:9090".into(),
            selector: "{}".into(),
            window: Window::new(0.0, 60.0, 15.0).unwrap(),
            requests: 1,
            instances: vec![InstanceReport {
                instance: evil.into(),
                bottleneck: report.bottleneck,
                steady_gen_throughput: None,
                running_mean: None,
                queued_mean: None,
                usage_mean: None,
                kv_pool_tokens: None,
                points: 0,
                ranks: Vec::new(),
                rejected_points: 0,
                report,
            }],
            totals: FleetTotals::default(),
            outliers: vec![Outlier {
                instance: evil.into(),
                dp_rank: Some("0\n".into()),
                what: Measure::Queue,
                value: 1.0,
                peers_median: 0.0,
            }],
            problems: vec![format!("instance {evil}: no answer")],
        };
        let t = text(&f);
        assert!(!t.contains(['\u{1b}', '\r']), "{t:?}");
        assert!(!t.lines().any(|l| l.starts_with("Verdict")), "{t}");
        assert!(
            t.contains("h:1\\u{1b}[2J\\u{a}Verdict: all good\\u{d}"),
            "{t}"
        );
    }

    #[test]
    fn range_series_become_named_series_with_their_rank() {
        let labeled = |pairs: &[(&str, &str)]| -> Labels {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let found = vec![
            RangeSeries {
                labels: labeled(&[
                    ("__name__", "sglang:num_running_reqs"),
                    ("instance", "h:1"),
                    ("dp_rank", "1"),
                ]),
                points: vec![(1.0, 2.0)],
            },
            RangeSeries {
                labels: labeled(&[("__name__", "sglang:token_usage"), ("instance", "h:1")]),
                points: vec![(1.0, 0.5)],
            },
            // no name: left out
            RangeSeries {
                labels: labeled(&[("instance", "h:1")]),
                points: vec![(1.0, 3.0)],
            },
        ];
        assert_eq!(
            series_of(found),
            [
                Series {
                    name: "sglang:num_running_reqs".into(),
                    dp_rank: Some("1".into()),
                    points: vec![(1.0, 2.0)],
                },
                Series {
                    name: "sglang:token_usage".into(),
                    dp_rank: None,
                    points: vec![(1.0, 0.5)],
                },
            ]
        );
    }

    /// Issue 30 C18, on Prometheus' side: one instance's series of a name that differ by
    /// `job` (two jobs scrape one server) are left out and named, not summed; ranks, the
    /// `is_streaming` split and the timer's `category` are summed as before.
    #[test]
    fn series_split_by_a_label_other_than_a_rank_are_named_not_summed() {
        let one = |name: &str, extra: &[(&str, &str)]| RangeSeries {
            labels: [("__name__", name), ("instance", "h:1")]
                .iter()
                .chain(extra)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            points: vec![(1.0, 2.0)],
        };
        let found = vec![
            one("sglang:num_running_reqs", &[("job", "a"), ("dp_rank", "0")]),
            one("sglang:num_running_reqs", &[("job", "b"), ("dp_rank", "0")]),
            one("sglang:num_queue_reqs", &[("job", "a"), ("dp_rank", "0")]),
            one("sglang:num_queue_reqs", &[("job", "a"), ("dp_rank", "1")]),
            one("sglang:num_requests_total", &[("is_streaming", "true")]),
            one("sglang:num_requests_total", &[("is_streaming", "false")]),
            one(
                "sglang:forward_execution_seconds_total",
                &[("category", "decode")],
            ),
            one(
                "sglang:forward_execution_seconds_total",
                &[("category", "extend")],
            ),
        ];
        let (kept, said) = refuse_other_splits("h:1", found);
        let names: BTreeSet<&str> = kept.iter().map(|s| s.labels["__name__"].as_str()).collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            [
                "sglang:forward_execution_seconds_total",
                "sglang:num_queue_reqs",
                "sglang:num_requests_total"
            ]
        );
        assert_eq!(kept.len(), 6);
        assert_eq!(
            said,
            [
                "instance h:1: sglang:num_running_reqs: its 2 series differ by label \"job\" (2 values), not only by rank labels (dp_rank, tp_rank, pp_rank, moe_ep_rank): not the ranks of one server, so not summed and not used"
            ]
        );
    }

    #[test]
    fn the_window_defaults_to_the_last_hour_at_15_s() {
        let p = PrometheusArgs::default();
        let w = window(&p, 10_000.0).expect("window");
        assert_eq!((w.start, w.end, w.step_s), (6_400.0, 10_000.0, 15.0));
        let p = PrometheusArgs {
            start: Some(200.0),
            end: Some(100.0),
            ..PrometheusArgs::default()
        };
        assert_eq!(
            window(&p, 0.0).expect_err("end before start").to_string(),
            "--end must be after --start"
        );
    }

    /// One instance's range series as Prometheus returns them, in either generation of
    /// SGLang's names: v0.5.9 (`cache_config_info` with the page figures as labels, the
    /// device timer as `gpu_execution_seconds_total`) or main (`page_size`/`num_pages`,
    /// `forward_execution_seconds_total`, the tokenizer's counters split by `is_streaming`,
    /// the scheduler's idle counter, `fwd_occupancy` NaN while idle). The same figures.
    fn generation(new: bool) -> Vec<RangeSeries> {
        let grid = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            (0..=120)
                .map(|i| {
                    let t = 1_000.0 + f64::from(i) * 5.0;
                    (t, f(t - 1_000.0))
                })
                .collect()
        };
        let one = |name: &str, extra: &[(&str, &str)], pts: Vec<(f64, f64)>| {
            let mut labels: Labels = [("__name__", name), ("instance", "h:1"), ("job", "sglang")]
                .iter()
                .chain(extra)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            labels.retain(|_, v| !v.is_empty());
            RangeSeries {
                labels,
                points: pts,
            }
        };
        let mut v = vec![
            one("sglang:num_running_reqs", &[], grid(&|_| 60.0)),
            one("sglang:num_queue_reqs", &[], grid(&|_| 30.0)),
            one("sglang:token_usage", &[], grid(&|_| 0.96)),
            one("sglang:gen_throughput", &[], grid(&|_| 900.0)),
        ];
        if new {
            v.extend([
                one("sglang:page_size", &[], grid(&|_| 16.0)),
                one("sglang:num_pages", &[], grid(&|_| 1500.0)),
                one(
                    "sglang:generation_tokens_total",
                    &[("is_streaming", "true")],
                    grid(&|t| 600.0 * t),
                ),
                one(
                    "sglang:generation_tokens_total",
                    &[("is_streaming", "false")],
                    grid(&|t| 300.0 * t),
                ),
                one(
                    "sglang:num_requests_total",
                    &[("is_streaming", "true")],
                    grid(&|t| (t / 4.0).floor()),
                ),
                one(
                    "sglang:num_requests_total",
                    &[("is_streaming", "false")],
                    grid(&|t| (t / 2.0).floor() - (t / 4.0).floor()),
                ),
                one(
                    "sglang:forward_execution_seconds_total",
                    &[("category", "decode")],
                    grid(&|_| 0.0),
                ),
                one("sglang:scheduler_idle_seconds_total", &[], grid(&|_| 0.0)),
                one("sglang:fwd_occupancy", &[], grid(&|_| f64::NAN)),
            ]);
        } else {
            v.extend([
                one(
                    CACHE_CONFIG_INFO,
                    &[("page_size", "16"), ("num_pages", "1500")],
                    grid(&|_| 1.0),
                ),
                one("sglang:generation_tokens_total", &[], grid(&|t| 900.0 * t)),
                one(
                    "sglang:num_requests_total",
                    &[],
                    grid(&|t| (t / 2.0).floor()),
                ),
                one(
                    "sglang:gpu_execution_seconds_total",
                    &[("category", "decode")],
                    grid(&|_| 0.0),
                ),
            ]);
        }
        v
    }

    #[test]
    fn both_generations_of_names_give_the_same_diagnosis() {
        let w = Window::new(1_000.0, 1_600.0, 5.0).expect("window");
        let run = |new: bool| {
            diagnosis::fleet::diagnose_instance(
                "h:1",
                "http://p",
                &w,
                &series_of(generation(new)),
                None,
                60.0,
            )
        };
        let (old, new) = (run(false), run(true));
        for r in [&old, &new] {
            assert_eq!(r.bottleneck, diagnosis::report::Bottleneck::KvCacheBound);
            assert_eq!(r.kv_pool_tokens, Some(24_000));
            assert_eq!((r.points, r.rejected_points), (121, 0));
            assert_eq!((r.running_mean, r.queued_mean), (Some(60.0), Some(30.0)));
            assert!((r.usage_mean.expect("usage") - 0.96).abs() < 1e-9);
            let m = r.report.server_metrics.as_ref().expect("metrics summary");
            assert_eq!(m.generated_tok_per_s, Some(900.0));
            assert_eq!(
                m.forward_timer,
                Some(diagnosis::report::ForwardTimer::NotEnabled)
            );
        }
        let rate = |r: &InstanceReport| r.steady_gen_throughput.as_ref().map(|x| x.value);
        assert_eq!(rate(&old), rate(&new));
        assert_eq!(old.usage_mean, new.usage_mean);
        assert!(rate(&old).is_some());
        // Only the new generation says how idle the scheduler was, and that its occupancy
        // was idle at every step (NaN), not a number.
        let nm = new.report.server_metrics.as_ref().expect("summary");
        assert_eq!(nm.scheduler_idle_s_per_s, Some(0.0));
        let occ = nm.fwd_occupancy.as_ref().expect("occupancy");
        assert_eq!((occ.busy_mean_pct, occ.idle_readings), (None, 121));
        let om = old.report.server_metrics.as_ref().expect("summary");
        assert_eq!(
            (om.scheduler_idle_s_per_s, om.fwd_occupancy.is_none()),
            (None, true)
        );
    }

    #[test]
    fn cache_config_info_becomes_the_page_gauges() {
        let s = series_of(generation(false));
        let pages: Vec<(&str, f64)> = s
            .iter()
            .filter(|x| x.name == "sglang:page_size" || x.name == "sglang:num_pages")
            .map(|x| (x.name.as_str(), x.points[0].1))
            .collect();
        assert_eq!(
            pages,
            [("sglang:page_size", 16.0), ("sglang:num_pages", 1500.0)]
        );
        assert!(s.iter().all(|x| x.name != CACHE_CONFIG_INFO));
    }
}
