//! The fleet view (`diagnose --prometheus`): every SGLang instance a Prometheus scrapes,
//! diagnosed from the history of its series, and the fleet's totals and outliers.
//!
//! For each instance the series SGLang exports (`sglang-observables.md` §3.3, [`SERIES`]) are
//! placed on the window's step grid and turned into the `/metrics` polls the diagnosis already
//! takes ([`instance_facts`]: running and queued summed over DP ranks, token usage the
//! fullest rank's), with the pool size from `sglang:max_total_num_tokens` as server facts, and
//! diagnosed with [`crate::diagnose_with`] ([`diagnose_instance`]). Per-rank means of queue and
//! token usage feed the load-imbalance rule ([`crate::rules::fleet_imbalance`], [`outliers`]).
//!
//! Pure, like the rest of this crate: the binary reads the series from Prometheus (with
//! `sglang-client`), hands them over as [`Series`], and prints the table.

use std::collections::BTreeMap;

use serde::Serialize;
use sglang_log::values;

use crate::context::{Context, MetricsFacts, MetricsSample, ServerFacts};
use crate::error::WindowError;
use crate::evidence::Evidence;
use crate::report::{Bottleneck, Rate, Report};
use crate::rules::fleet_imbalance::{self, Among, Outlier, Peer};
use crate::thresholds as th;

/// The SGLang series read per instance over the window. The pool size
/// (`sglang:max_total_num_tokens`, constant while a server runs) is read too when it comes
/// with them, else given apart ([`diagnose_instance`]'s `pool_tokens`); without it,
/// `sglang:page_size × sglang:num_pages` of a rank is its pool (SGLang exports
/// `num_pages = max_total_num_tokens // page_size`, `managers/scheduler.py`; the binary turns
/// v0.5.9's `sglang:cache_config_info{page_size,num_pages}` into these two).
///
/// Both generations of names are read: the device timer's
/// `sglang:forward_execution_seconds_total` (v0.5.11+) or `sglang:gpu_execution_seconds_total`
/// (v0.5.7 – v0.5.10), summed over `category`; series split by `is_streaming` are summed at
/// each step like those of DP ranks. The scheduler's idle and CPU counters (SGLang PR #37461)
/// and `sglang:fwd_occupancy` (NaN when idle: counted apart, never averaged) are read where a
/// server exports them. The removed `sglang:gpu_overlap_wait_seconds_total` is not read.
pub const SERIES: &[&str] = &[
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:gen_throughput",
    "sglang:generation_tokens_total",
    "sglang:num_requests_total",
    "sglang:page_size",
    "sglang:num_pages",
    "sglang:scheduler_idle_seconds_total",
    "sglang:scheduler_process_cpu_seconds_total",
    "sglang:fwd_occupancy",
    "sglang:forward_execution_seconds_total",
    "sglang:gpu_execution_seconds_total",
];

/// The window read: from `start` to `end` at every `step_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Window {
    /// Start, Unix seconds.
    pub start: f64,
    /// End, Unix seconds.
    pub end: f64,
    /// Step, seconds.
    pub step_s: f64,
}

impl Window {
    /// The window from `start` to `end` (Unix seconds) at a step of `step_s` seconds.
    ///
    /// # Errors
    /// A step under [`th::FLEET_MIN_STEP_S`], an end not after the start, or more than
    /// [`th::FLEET_MAX_POINTS`] steps in the window, checked in that order.
    pub fn new(start: f64, end: f64, step_s: f64) -> Result<Self, WindowError> {
        if step_s < th::FLEET_MIN_STEP_S {
            return Err(WindowError::StepTooSmall { step_s });
        }
        if end <= start {
            return Err(WindowError::EndNotAfterStart { start, end });
        }
        let points = (end - start) / step_s;
        if points > th::FLEET_MAX_POINTS {
            return Err(WindowError::TooManyPoints {
                step_s,
                span_s: end - start,
                points,
                max: th::FLEET_MAX_POINTS,
            });
        }
        Ok(Self { start, end, step_s })
    }

    /// The window of the last `since_s` seconds before `now` (Unix seconds), at `step_s`.
    ///
    /// # Errors
    /// As [`Window::new`].
    pub fn since(now: f64, since_s: f64, step_s: f64) -> Result<Self, WindowError> {
        Self::new(now - since_s, now, step_s)
    }

    /// Steps on the grid from `start` to `end`, both included (points).
    pub fn points(&self) -> usize {
        // capped for a window built without `new`: the grid is allocated per instance
        (((self.end - self.start) / self.step_s).floor() as usize + 1).min(1 << 22)
    }
}

/// One series of one instance over the window.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its name (`__name__`, e.g. `sglang:num_running_reqs`).
    pub name: String,
    /// Its `dp_rank` label; `None` when it has none.
    pub dp_rank: Option<String>,
    /// `(Unix seconds, value)` points in time order; NaN where Prometheus wrote `NaN`.
    pub points: Vec<(f64, f64)>,
}

/// Time-weighted (equal-step) means of one DP rank's gauges.
#[derive(Clone, Debug, PartialEq, Serialize)]
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

/// What one instance's series say, in the form the diagnosis takes.
#[derive(Clone, Debug)]
pub struct InstanceFacts {
    /// The `/metrics` polls: one per step with a value, running and queued summed over DP
    /// ranks, token usage the fullest rank's, throughput and counters summed.
    pub metrics: MetricsFacts,
    /// The server facts: the pool size (`sglang:max_total_num_tokens`, tokens per DP rank)
    /// and the DP ranks seen.
    pub server: ServerFacts,
    /// Per DP rank, by rank label.
    pub ranks: Vec<RankSummary>,
    /// Points not used: NaN, negative or above [`plausible_max`] (points).
    pub rejected_points: u64,
}

/// One instance of the fleet.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceReport {
    /// The `instance` label, as Prometheus sets it (`host:port`).
    pub instance: String,
    /// The verdict (the same `kind` values as a single report's `bottleneck`).
    pub bottleneck: Bottleneck,
    /// Steady generation throughput summed over DP ranks, with its interval (tok/s).
    pub steady_gen_throughput: Option<Rate>,
    /// Mean running requests, summed over DP ranks (requests).
    pub running_mean: Option<f64>,
    /// Mean queued requests, summed over DP ranks (requests).
    pub queued_mean: Option<f64>,
    /// Mean token usage of the fullest rank at each step (fraction).
    pub usage_mean: Option<f64>,
    /// KV pool per DP rank (`sglang:max_total_num_tokens`, tokens).
    pub kv_pool_tokens: Option<u64>,
    /// Points read (steps with at least one value).
    pub points: usize,
    /// Per DP rank.
    pub ranks: Vec<RankSummary>,
    /// Values not used (NaN, negative, absurd), counted (points).
    pub rejected_points: u64,
    /// The instance's full report.
    pub report: Report,
}

/// Totals over the fleet.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FleetTotals {
    /// Instances diagnosed.
    pub instances: usize,
    /// DP ranks over all instances (an instance without `dp_rank` labels counts one).
    pub dp_ranks: usize,
    /// Σ steady gen throughput over the instances that have one (tok/s).
    pub steady_gen_tok_per_s: f64,
    /// Σ mean running requests (requests).
    pub running_mean: f64,
    /// Σ mean queued requests (requests).
    pub queued_mean: f64,
    /// Instances per verdict, by the verdict's JSON name ([`Bottleneck::name`]).
    pub by_bottleneck: BTreeMap<String, usize>,
}

/// The largest plausible value of a series (its unit: requests, fraction, tok/s, tokens);
/// above it a point is rejected, as the `/metrics` reader and the log parser reject one: the
/// limits of `sglang_log::values` for requests, usage, throughput and pool tokens, and
/// [`th::METRIC_COUNTER_MAX`] for the counters and any other series.
pub fn plausible_max(series: &str) -> f64 {
    match series {
        "sglang:num_running_reqs" | "sglang:num_queue_reqs" => values::MAX_REQUESTS as f64,
        "sglang:token_usage" => values::MAX_USAGE,
        "sglang:gen_throughput" => values::MAX_TOKENS_PER_S,
        "sglang:max_total_num_tokens" | "sglang:page_size" | "sglang:num_pages" => {
            values::MAX_TOKENS as f64
        }
        "sglang:fwd_occupancy" => th::FWD_OCCUPANCY_MAX_PCT,
        _ => th::METRIC_COUNTER_MAX,
    }
}

/// A gauge whose per-rank mean is kept: its index in [`Accum::ranks`]' arrays.
#[derive(Clone, Copy)]
enum RankGauge {
    Running = 0,
    Queued = 1,
    Usage = 2,
}

/// Step-indexed values of one instance.
struct Accum {
    start: f64,
    step: f64,
    samples: Vec<MetricsSample>,
    present: Vec<bool>,
    kv_pool: Option<f64>,
    /// Per rank label, the largest `sglang:page_size` and `sglang:num_pages` read.
    pages: BTreeMap<String, (Option<f64>, Option<f64>)>,
    rejected: u64,
    /// Per rank label, (Σ value, points) of each [`RankGauge`].
    ranks: BTreeMap<String, [(f64, u64); 3]>,
}

impl Accum {
    /// The grid slot of time `t` (nearest step), marked as read, its time set to `t`.
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
/// `series` are that instance's; points are placed on the step grid from `window.start`
/// (the nearest step; one outside the window is left out). `prometheus` names where they
/// were read (the server facts' source is `"{prometheus} instance {instance}"`).
pub fn instance_facts(
    instance: &str,
    prometheus: &str,
    window: &Window,
    series: &[Series],
) -> InstanceFacts {
    let n = window.points();
    let mut a = Accum {
        start: window.start,
        step: window.step_s,
        samples: vec![MetricsSample::default(); n],
        present: vec![false; n],
        kv_pool: None,
        pages: BTreeMap::new(),
        rejected: 0,
        ranks: BTreeMap::new(),
    };
    for s in series {
        let name = s.name.as_str();
        let rank = s.dp_rank.clone().unwrap_or_default();
        let max = plausible_max(name);
        for &(t, v) in &s.points {
            if name == "sglang:fwd_occupancy" && v.is_nan() {
                // SGLang's idle scheduler: a reading, not a number.
                if let Some(i) = a.slot(t) {
                    a.samples[i].fwd_occupancy_idle += 1;
                }
                continue;
            }
            if !(v.is_finite() && v >= 0.0 && v <= max) {
                a.rejected += 1;
                continue;
            }
            let Some(i) = a.slot(t) else { continue };
            let x = &mut a.samples[i];
            let gauge = match name {
                "sglang:num_running_reqs" => {
                    add(&mut x.running, v);
                    Some(RankGauge::Running)
                }
                "sglang:num_queue_reqs" => {
                    add(&mut x.queued, v);
                    Some(RankGauge::Queued)
                }
                "sglang:token_usage" => {
                    x.token_usage = Some(x.token_usage.map_or(v, |u| u.max(v)));
                    Some(RankGauge::Usage)
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
                "sglang:page_size" | "sglang:num_pages" => {
                    let e = a.pages.entry(rank.clone()).or_default();
                    let slot = if name == "sglang:page_size" {
                        &mut e.0
                    } else {
                        &mut e.1
                    };
                    *slot = Some(slot.map_or(v, |p: f64| p.max(v)));
                    None
                }
                "sglang:scheduler_idle_seconds_total" => {
                    add(&mut x.scheduler_idle_seconds_total, v);
                    None
                }
                "sglang:scheduler_process_cpu_seconds_total" => {
                    add(&mut x.scheduler_cpu_seconds_total, v);
                    None
                }
                "sglang:forward_execution_seconds_total" | "sglang:gpu_execution_seconds_total" => {
                    add(&mut x.forward_seconds_total, v);
                    None
                }
                "sglang:fwd_occupancy" => {
                    // Summed here, divided by the busy readings below.
                    add(&mut x.fwd_occupancy_pct, v);
                    x.fwd_occupancy_busy += 1;
                    None
                }
                _ => None,
            };
            if let Some(g) = gauge {
                let e = a.ranks.entry(rank.clone()).or_default();
                e[g as usize].0 += v;
                e[g as usize].1 += 1;
            }
        }
    }
    let samples: Vec<MetricsSample> = a
        .samples
        .into_iter()
        .zip(a.present)
        .filter_map(|(mut s, p)| {
            if s.fwd_occupancy_busy > 0 {
                s.fwd_occupancy_pct = s
                    .fwd_occupancy_pct
                    .map(|x| x / f64::from(s.fwd_occupancy_busy));
            }
            p.then_some(s)
        })
        .collect();
    let paged_pool = a
        .pages
        .values()
        .filter_map(|&(p, n)| Some(p? * n?))
        .reduce(f64::max);
    let mean = |x: (f64, u64)| (x.1 > 0).then(|| x.0 / x.1 as f64);
    let ranks: Vec<RankSummary> = a
        .ranks
        .iter()
        .map(|(r, g)| RankSummary {
            dp_rank: r.clone(),
            running_mean: mean(g[RankGauge::Running as usize]),
            queued_mean: mean(g[RankGauge::Queued as usize]),
            usage_mean: mean(g[RankGauge::Usage as usize]),
        })
        .collect();
    let server = ServerFacts {
        source: format!("{prometheus} instance {instance}"),
        dp_size: Some(ranks.len().max(1) as u32),
        max_total_num_tokens: a.kv_pool.or(paged_pool).map(|p| p.round() as u64),
        ..ServerFacts::default()
    };
    InstanceFacts {
        metrics: MetricsFacts {
            source: instance.to_string(),
            samples,
        },
        server,
        ranks,
        rejected_points: a.rejected,
    }
}

/// The mean of `f` over the samples that have it.
fn mean_of(s: &[MetricsSample], f: impl Fn(&MetricsSample) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = s.iter().filter_map(f).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Diagnose one instance from its series ([`instance_facts`], then [`crate::diagnose_with`]
/// on them as `/metrics` polls, with `sample_window_s` seconds as the proposed sample window).
///
/// `pool_tokens` is the instance's `sglang:max_total_num_tokens` (tokens) when read apart
/// from `series`; the series' own value wins.
pub fn diagnose_instance(
    instance: &str,
    prometheus: &str,
    window: &Window,
    series: &[Series],
    pool_tokens: Option<u64>,
    sample_window_s: f64,
) -> InstanceReport {
    let InstanceFacts {
        metrics,
        mut server,
        ranks,
        rejected_points,
    } = instance_facts(instance, prometheus, window, series);
    if server.max_total_num_tokens.is_none() {
        server.max_total_num_tokens = pool_tokens;
    }
    let running_mean = mean_of(&metrics.samples, |s| s.running);
    let queued_mean = mean_of(&metrics.samples, |s| s.queued);
    let usage_mean = mean_of(&metrics.samples, |s| s.token_usage);
    let points = metrics.samples.len();
    let kv_pool_tokens = server.max_total_num_tokens;
    let mut ctx = Context {
        sample_window_s: Some(sample_window_s),
        ..Context::default()
    };
    if rejected_points > 0 {
        ctx.source_errors.push(crate::narrative::points_not_used(
            prometheus,
            instance,
            rejected_points,
        ));
    }
    ctx.server = Some(server);
    ctx.metrics = Some(metrics);
    let report = crate::pipeline::diagnose_with(&Evidence::default(), &ctx);
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
        rejected_points,
        report,
    }
}

/// Load imbalance over the fleet ([`fleet_imbalance`]): each instance's ranks against one
/// another, then the instances against one another.
pub fn outliers(instances: &[InstanceReport]) -> Vec<Outlier> {
    let mut out = Vec::new();
    for i in instances {
        let peers: Vec<Peer<'_>> = i
            .ranks
            .iter()
            .map(|r| Peer {
                instance: &i.instance,
                dp_rank: Some(&r.dp_rank),
                queued_mean: r.queued_mean,
                usage_mean: r.usage_mean,
            })
            .collect();
        out.extend(fleet_imbalance::check(&peers, Among::RanksOfAnInstance));
    }
    let peers: Vec<Peer<'_>> = instances
        .iter()
        .map(|i| Peer {
            instance: &i.instance,
            dp_rank: None,
            queued_mean: i.queued_mean,
            usage_mean: i.usage_mean,
        })
        .collect();
    out.extend(fleet_imbalance::check(&peers, Among::Instances));
    out
}

/// The fleet's totals over its instances' reports.
pub fn totals(instances: &[InstanceReport]) -> FleetTotals {
    let mut t = FleetTotals {
        instances: instances.len(),
        ..FleetTotals::default()
    };
    for r in instances {
        t.dp_ranks += r.ranks.len().max(1);
        t.steady_gen_tok_per_s += r.steady_gen_throughput.as_ref().map_or(0.0, |x| x.value);
        t.running_mean += r.running_mean.unwrap_or(0.0);
        t.queued_mean += r.queued_mean.unwrap_or(0.0);
        *t.by_bottleneck
            .entry(r.bottleneck.name().to_string())
            .or_default() += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, rank: &str, pts: &[(f64, f64)]) -> Series {
        Series {
            name: name.into(),
            dp_rank: (!rank.is_empty()).then(|| rank.into()),
            points: pts.to_vec(),
        }
    }

    #[test]
    fn ranks_are_summed_per_step_and_bad_points_rejected() {
        let w = Window::new(100.0, 130.0, 15.0).expect("window");
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
        let f = instance_facts("h:1", "http://p", &w, &s);
        assert_eq!(f.rejected_points, 2);
        let samples = &f.metrics.samples;
        assert_eq!(samples.len(), 3);
        assert_eq!(samples[0].running, Some(14.0));
        assert_eq!(samples[1].running, Some(12.0));
        assert_eq!(samples[0].queued, Some(30.0));
        assert_eq!(samples[1].queued, None);
        assert_eq!(samples[0].token_usage, Some(0.9));
        assert_eq!(samples[2].t, 130.0);
        assert_eq!(f.server.max_total_num_tokens, Some(24000));
        assert_eq!(f.server.dp_size, Some(2));
        assert_eq!(f.server.source, "http://p instance h:1");
        assert_eq!(f.ranks[0].running_mean, Some(11.0));
        assert_eq!(f.ranks[1].usage_mean, Some(0.5));
    }

    #[test]
    fn points_off_the_window_are_left_out_and_limits_hold() {
        let w = Window::new(100.0, 130.0, 15.0).expect("window");
        let s = [
            // before the start, past the end (beyond half a step), then at the limits
            series(
                "sglang:num_running_reqs",
                "",
                &[(90.0, 1.0), (140.0, 1.0), (115.0, 1e7)],
            ),
            series("sglang:token_usage", "", &[(100.0, 1.5), (115.0, 1.51)]),
        ];
        let f = instance_facts("h:1", "p", &w, &s);
        assert_eq!(f.rejected_points, 1);
        let got: Vec<(f64, Option<f64>, Option<f64>)> = f
            .metrics
            .samples
            .iter()
            .map(|s| (s.t, s.running, s.token_usage))
            .collect();
        assert_eq!(got, [(100.0, None, Some(1.5)), (115.0, Some(1e7), None)]);
        // no dp_rank label: one rank, named ""
        assert_eq!(f.ranks.len(), 1);
        assert_eq!(f.ranks[0].dp_rank, "");
        assert_eq!(f.server.dp_size, Some(1));
        assert_eq!(plausible_max("sglang:generation_tokens_total"), 1e15);
        assert_eq!(plausible_max("sglang:max_total_num_tokens"), 1e12);
    }

    #[test]
    fn windows_are_checked_step_first() {
        assert_eq!(Window::new(100.0, 200.0, 0.5).map(|w| w.points()), Ok(201));
        assert_eq!(
            Window::since(1000.0, 60.0, 1.0),
            Ok(Window {
                start: 940.0,
                end: 1000.0,
                step_s: 1.0
            })
        );
        assert!(matches!(
            Window::new(200.0, 100.0, 0.0),
            Err(WindowError::StepTooSmall { .. })
        ));
        assert!(matches!(
            Window::new(200.0, 100.0, 1.0),
            Err(WindowError::EndNotAfterStart { .. })
        ));
        // a day at 1 s fits, a second more does not
        assert!(Window::since(1e9, 100_000.0, 1.0).is_ok());
        let e = Window::since(1e9, 100_001.0, 1.0).expect_err("too many points");
        assert_eq!(
            e.to_string(),
            "--step 1 s over a 100001 s window is 100001 points per series, more than 100000: give a larger --step or a shorter window"
        );
    }

    #[test]
    fn an_instance_is_diagnosed_from_its_series_and_counted() {
        let w = Window::new(0.0, 600.0, 5.0).expect("window");
        let grid = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            (0..=120)
                .map(|i| {
                    let t = f64::from(i) * 5.0;
                    (t, f(t))
                })
                .collect()
        };
        let s = [
            series("sglang:num_running_reqs", "", &grid(&|_| 60.0)),
            series("sglang:num_queue_reqs", "", &grid(&|_| 30.0)),
            series("sglang:token_usage", "", &grid(&|_| 0.96)),
            series("sglang:gen_throughput", "", &grid(&|_| 900.0)),
            series("sglang:generation_tokens_total", "", &grid(&|t| 900.0 * t)),
            series(
                "sglang:num_requests_total",
                "",
                &grid(&|t| (t / 2.0).floor()),
            ),
            series("sglang:num_queue_reqs", "", &[(300.0, f64::NAN)]),
        ];
        let r = diagnose_instance("h:1", "http://p", &w, &s, Some(50_000), 60.0);
        assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);
        assert_eq!((r.points, r.rejected_points), (121, 1));
        assert_eq!(r.kv_pool_tokens, Some(50_000));
        assert_eq!(r.queued_mean, Some(30.0));
        assert!(r.steady_gen_throughput.is_some());
        let t = totals(std::slice::from_ref(&r));
        assert_eq!((t.instances, t.dp_ranks), (1, 1));
        assert_eq!(t.running_mean, 60.0);
        assert_eq!(t.by_bottleneck.get("kv_cache_bound"), Some(&1));
        // one instance has no peers
        assert!(outliers(std::slice::from_ref(&r)).is_empty());
    }

    #[test]
    fn new_series_are_read_and_an_idle_occupancy_is_not_a_number() {
        let w = Window::new(0.0, 20.0, 10.0).expect("window");
        let s = [
            // no max_total_num_tokens: the pool is page_size × num_pages of a rank
            series("sglang:page_size", "0", &[(0.0, 16.0)]),
            series("sglang:num_pages", "0", &[(0.0, 1500.0)]),
            series("sglang:num_pages", "1", &[(0.0, 1400.0)]),
            series(
                "sglang:fwd_occupancy",
                "0",
                &[(0.0, 80.0), (10.0, f64::NAN), (20.0, 150.0)],
            ),
            series("sglang:fwd_occupancy", "1", &[(0.0, 60.0), (10.0, 90.0)]),
            series(
                "sglang:scheduler_idle_seconds_total",
                "0",
                &[(0.0, 1.0), (20.0, 6.0)],
            ),
            series(
                "sglang:scheduler_idle_seconds_total",
                "1",
                &[(0.0, 2.0), (20.0, 2.0)],
            ),
            series("sglang:gpu_execution_seconds_total", "0", &[(0.0, 0.0)]),
            series("sglang:forward_execution_seconds_total", "1", &[(0.0, 0.0)]),
        ];
        let f = instance_facts("h:1", "p", &w, &s);
        // 150 % is rejected; NaN is an idle reading, not a rejected point
        assert_eq!(f.rejected_points, 1);
        assert_eq!(f.server.max_total_num_tokens, Some(24_000));
        let x = &f.metrics.samples;
        assert_eq!(
            (x[0].fwd_occupancy_pct, x[0].fwd_occupancy_busy),
            (Some(70.0), 2)
        );
        assert_eq!(
            (x[1].fwd_occupancy_pct, x[1].fwd_occupancy_busy),
            (Some(90.0), 1)
        );
        assert_eq!(x[1].fwd_occupancy_idle, 1);
        assert_eq!(x[0].scheduler_idle_seconds_total, Some(3.0));
        assert_eq!(x[2].scheduler_idle_seconds_total, Some(8.0));
        // both names of the device timer, zero: not enabled
        assert_eq!(x[0].forward_seconds_total, Some(0.0));
        let r = diagnose_instance("h:1", "p", &w, &s, None, 60.0);
        assert_eq!(r.kv_pool_tokens, Some(24_000));
        let sum = r.report.server_metrics.expect("summary");
        assert_eq!(sum.scheduler_idle_s_per_s, Some(0.25));
        assert_eq!(
            sum.forward_timer,
            Some(crate::report::ForwardTimer::NotEnabled)
        );
        let occ = sum.fwd_occupancy.expect("occupancy");
        assert_eq!((occ.busy_readings, occ.idle_readings), (3, 1));
        assert_eq!(occ.busy_mean_pct, Some((80.0 + 60.0 + 90.0) / 3.0));
    }
}
