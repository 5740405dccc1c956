//! The parts of the diagnosis that need more than a log: the client's view, the KV capacity
//! model with what-if rows, the decode step-time fit that projects throughput, and the
//! recommendations that follow.

use kv_capacity::{
    CapacityInput, FeasibilityThresholds, GIB, HiCacheInput, HiCacheSizing, InFlightLoad, KvDtype,
    ParallelConfig, PoolModel, PreSource,
};

use crate::client::ClientFormat;
use crate::context::Context;
use crate::evidence::{DecodeSample, Evidence};
use crate::report::*;

/// Confidence level of every interval printed.
pub const CONFIDENCE: f64 = 0.95;

pub(crate) fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((m, v.sqrt()))
}

pub(crate) fn rate_from(est: &throughput_stats::RateEstimate, method: &str) -> Rate {
    Rate {
        value: est.rate_per_s,
        low: Some(est.ci_low),
        high: est.ci_high.is_finite().then_some(est.ci_high),
        confidence: est.confidence,
        unit: "req/s".into(),
        window_s: est.window_s,
        method: method.into(),
    }
}

/// The server's steady span on the log's clock (seconds), as finely as that clock places it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SteadyClock {
    /// Start of the steady span (seconds).
    pub start_s: f64,
    /// End of the steady span, to the end of its last clock tick (seconds).
    pub end_s: f64,
    /// The log clock's resolution (seconds; 1.0 for whole-second timestamps, 0.0 for finer).
    pub resolution_s: f64,
}

/// The request rate a server token rate implies: `tok/s / mean completion tokens`, with a
/// delta-method interval from the token rate's interval and the completion lengths' standard
/// deviation `sd` over `n` requests (`throughput_stats::request_rate_from_tokens`). `None` when
/// the mean is not positive or the inputs are not finite.
pub(crate) fn implied_rate(server_tps: &Rate, mean: f64, sd: f64, n: u64) -> Option<Rate> {
    if mean <= 0.0 {
        return None;
    }
    let t = server_tps;
    let d = throughput_stats::request_rate_from_tokens(
        t.value,
        (t.low.unwrap_or(t.value), t.high.unwrap_or(t.value)),
        mean,
        sd,
        n,
        CONFIDENCE,
    )
    .ok()?;
    Some(Rate {
        value: d.rate_per_s,
        low: Some(d.ci_low),
        high: Some(d.ci_high),
        confidence: d.confidence,
        unit: "req/s".into(),
        window_s: t.window_s,
        method: "server steady gen throughput / mean completion tokens, delta-method interval"
            .into(),
    })
}

/// Reconcile the first client source with the server's steady rate.
pub(crate) fn client_summary(
    ev: &Evidence,
    ctx: &Context,
    steady: Option<SteadyClock>,
    server_tps: Option<&Rate>,
    running_median: Option<f64>,
    in_system_mean: Option<f64>,
    findings: &mut Vec<Finding>,
) -> Option<ClientSummary> {
    // The source with completion times (progress log or timed records) drives the rates; token
    // counts come from every client source (a progress log has none, a responses dump has them).
    let c = ctx
        .clients
        .iter()
        .find(|c| {
            matches!(
                c.format,
                ClientFormat::ProgressLog | ClientFormat::TimedRecords
            )
        })
        .or_else(|| ctx.clients.first())?;
    let all_ok = || {
        ctx.clients
            .iter()
            .flat_map(|c| c.requests.iter())
            .filter(|r| r.ok)
    };
    let completions: Vec<f64> = all_ok()
        .filter_map(|r| r.completion_tokens)
        .map(|x| x as f64)
        .collect();
    let prompts: Vec<f64> = all_ok()
        .filter_map(|r| r.prompt_tokens)
        .map(|x| x as f64)
        .collect();
    let comp = mean_sd(&completions);
    let mut s = ClientSummary {
        source: c.source.clone(),
        format: c.format.label().to_string(),
        completed: 0,
        failed: c.failed(),
        total: None,
        printed_req_per_s: None,
        lifetime_req_per_s: None,
        windowed_req_per_s: None,
        implied_req_per_s: None,
        first_completion_after_s: None,
        mean_completion_tokens: comp.map(|x| x.0),
        mean_prompt_tokens: mean_sd(&prompts).map(|x| x.0),
        adequacy: None,
        window_needed_s: None,
        eta: None,
    };

    // Cumulative completions over time, from either shape.
    let mut cum: Vec<(f64, u64)> = Vec::new();
    match c.format {
        ClientFormat::ProgressLog => {
            cum = c.progress.iter().map(|p| (p.t, p.done)).collect();
            if let Some(last) = c.progress.last() {
                s.total = c.progress.iter().rev().find_map(|p| p.total);
                s.printed_req_per_s = last.printed_req_per_s;
                s.completed = last.done;
            }
        }
        ClientFormat::TimedRecords => {
            let times = c.completion_times();
            s.completed = times.len() as u64;
            cum = times
                .iter()
                .enumerate()
                .map(|(i, &t)| (t, i as u64 + 1))
                .collect();
            // the client's start: its first submit, else the first completion
            if let Some(first_submit) = c.requests.iter().filter_map(|r| r.submit).reduce(f64::min)
            {
                cum.insert(0, (first_submit, 0));
            }
        }
        ClientFormat::UntimedRecords => {
            s.completed = c.requests.iter().filter(|r| r.ok).count() as u64;
        }
        // Read by `bench::client_summary` before this point.
        ClientFormat::BenchmarkSummary | ClientFormat::Unknown => {}
    }
    cum.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));

    if cum.len() >= 2 {
        let (t0, _) = cum[0];
        let (t1, n1) = cum[cum.len() - 1];
        if let Ok(est) = throughput_stats::lifetime_rate(n1, t0, t1) {
            s.lifetime_req_per_s = Some(rate_from(
                &est,
                "completions since the client's start / time since then (lifetime average)",
            ));
        }
        s.first_completion_after_s = cum.iter().find(|p| p.1 > 0).map(|p| p.0 - t0);
        // Window: the server's steady span when the clocks overlap by more than the log clock
        // can resolve (a shorter overlap is an artefact of whole-second timestamps, not a
        // window), else the client's second half.
        let (mut from, to, method) = match steady {
            Some(w)
                if w.start_s < t1
                    && w.end_s > t0
                    && w.end_s.min(t1) - w.start_s.max(t0) >= w.resolution_s =>
            {
                (
                    w.start_s.max(t0),
                    w.end_s.min(t1),
                    "completions in the server's steady span / its length, exact Poisson (Garwood) interval",
                )
            }
            _ => (
                t0 + (t1 - t0) / 2.0,
                t1,
                "completions in the second half of the client's run / its length, exact Poisson (Garwood) interval",
            ),
        };
        // Never start the window before the first completion: the ramp holds none by construction.
        if let Some(first) = s.first_completion_after_s {
            from = from.max(t0 + first);
        }
        let at = |t: f64| -> u64 {
            cum.iter()
                .take_while(|p| p.0 <= t)
                .last()
                .map(|p| p.1)
                .unwrap_or(0)
        };
        if to > from {
            let n = at(to).saturating_sub(at(from));
            if let Ok(est) = throughput_stats::RateEstimate::from_count(n, to - from, CONFIDENCE) {
                s.windowed_req_per_s = Some(rate_from(&est, method));
            }
        }
    }

    // The request rate the server's token rate implies.
    if let (Some(t), Some((m, sd))) = (server_tps, comp) {
        s.implied_req_per_s = implied_rate(t, m, sd, completions.len() as u64);
    }

    // Adequacy of a short sample at the best rate we have, and the ETA.
    let best = s
        .windowed_req_per_s
        .clone()
        .or_else(|| s.implied_req_per_s.clone());
    if let Some(r) = &best {
        let w = ctx.sample_window_s.unwrap_or(60.0);
        if let Ok(a) = throughput_stats::adequacy(r.value, w, CONFIDENCE) {
            s.adequacy = Some(a.to_string());
            s.window_needed_s = Some(a.window_needed_for_10pct_s);
        }
        if let (Some(total), Some(w)) = (s.total, &s.windowed_req_per_s) {
            let remaining = total.saturating_sub(s.completed);
            let est = throughput_stats::RateEstimate {
                rate_per_s: w.value,
                count: 0,
                window_s: w.window_s,
                ci_low: w.low.unwrap_or(w.value),
                ci_high: w.high.unwrap_or(w.value),
                confidence: w.confidence,
            };
            if let Ok(e) = throughput_stats::eta(remaining as f64, &est) {
                s.eta = Some(EtaSummary {
                    remaining,
                    seconds: e.seconds,
                    low_s: e.low_s,
                    high_s: e.high_s.is_finite().then_some(e.high_s),
                });
            }
        }
    }

    littles_law_finding(&s, c, in_system_mean, findings);
    let waits: Vec<f64> = c
        .requests
        .iter()
        .filter_map(|r| r.permit_wait_s)
        .filter(|x| x.is_finite())
        .collect();
    gap_finding(&s, ev, running_median, &waits, findings);
    Some(s)
}

/// Little's law over the client's steady window: requests in the server (running + queued,
/// time-weighted mean from the log) against the client's completion rate × mean end-to-end
/// latency (submit → end, from records that carry both). A significant surplus on the client side
/// means requests spend time outside the server's batch and queue: in the client's own queue, the
/// HTTP/tokenizer layer, or retries.
fn littles_law_finding(
    s: &ClientSummary,
    c: &crate::client::ClientEvidence,
    in_system_mean: Option<f64>,
    findings: &mut Vec<Finding>,
) {
    let (Some(win), Some(observed)) = (&s.windowed_req_per_s, in_system_mean) else {
        return;
    };
    let lat: Vec<f64> = c
        .requests
        .iter()
        .filter(|r| r.ok)
        .filter_map(|r| Some(r.end? - r.submit?))
        .filter(|x| x.is_finite() && *x >= 0.0)
        .collect();
    let Some((mean, sd)) = mean_sd(&lat) else {
        return;
    };
    let est = throughput_stats::RateEstimate {
        rate_per_s: win.value,
        count: 0,
        window_s: win.window_s,
        ci_low: win.low.unwrap_or(win.value),
        ci_high: win.high.unwrap_or(win.value),
        confidence: win.confidence,
    };
    let Ok(l) = throughput_stats::littles_law(observed, &est, mean, sd, lat.len() as u64) else {
        return;
    };
    if !l.significant {
        return;
    }
    let detail = if l.relative_mismatch < 0.0 {
        format!(
            "The client's completion rate ({:.3} req/s) × its mean latency ({mean:.1} s) says ~{:.0} requests should be in flight \
             (95% interval {:.0}-{:.0}), but the server holds only ~{observed:.0} (running + queued): requests spend about {:.0}% of their \
             latency outside the server's batch and queue, in the client's own queue, the HTTP/tokenizer layer, or retries.",
            win.value,
            l.expected_in_flight,
            l.expected_low,
            l.expected_high,
            (1.0 - observed / l.expected_in_flight) * 100.0
        )
    } else {
        format!(
            "The server holds ~{observed:.0} requests (running + queued) but the client's rate × latency accounts for only ~{:.0} \
             (95% interval {:.0}-{:.0}): the server is also serving requests this client did not record (another client, or aborted requests).",
            l.expected_in_flight, l.expected_low, l.expected_high
        )
    };
    findings.push(Finding {
        kind: FindingKind::LittlesLaw,
        title: "Little's law does not add up between client and server".into(),
        detail,
        figures: vec![
            Figure::new(
                "requests in the server (running + queued), mean",
                observed,
                "requests",
            ),
            Figure::new(
                "completion rate × mean latency",
                l.expected_in_flight,
                "requests",
            ),
            Figure::new("client mean latency", mean, "s"),
            Figure::new("relative mismatch", l.relative_mismatch, "fraction"),
        ],
        evidence: Vec::new(),
        confidence: Confidence::Medium,
    });
}

/// Relative difference between lifetime and windowed rates within which they agree (fraction).
const LIFETIME_AGREES: f64 = 0.1;

/// Whether the client's lifetime average (or the rate it printed) misleads: the lifetime
/// average lies outside the windowed rate's interval or more than [`LIFETIME_AGREES`] from it,
/// or the printed rate is more than 20% off the lifetime average (rounding).
pub(crate) fn lifetime_misleads(s: &ClientSummary) -> bool {
    let (Some(life), Some(win)) = (&s.lifetime_req_per_s, &s.windowed_req_per_s) else {
        return false;
    };
    let outside =
        life.value < win.low.unwrap_or(win.value) || life.value > win.high.unwrap_or(win.value);
    let far = (life.value - win.value).abs() > LIFETIME_AGREES * win.value;
    let rounded = s
        .printed_req_per_s
        .is_some_and(|p| (p - life.value).abs() > 0.2 * life.value);
    outside || far || rounded
}

fn gap_finding(
    s: &ClientSummary,
    ev: &Evidence,
    running_median: Option<f64>,
    permit_waits: &[f64],
    findings: &mut Vec<Finding>,
) {
    let (Some(life), Some(win)) = (&s.lifetime_req_per_s, &s.windowed_req_per_s) else {
        return;
    };
    let mut figures = vec![
        Figure::new("client lifetime average", life.value, "req/s"),
        Figure::new("client rate over the steady window", win.value, "req/s"),
        Figure::new("steady window", win.window_s, "s"),
    ];
    if let Some(p) = s.printed_req_per_s {
        figures.insert(0, Figure::new("rate the client printed", p, "req/s"));
    }
    if let Some(f) = s.first_completion_after_s {
        figures.push(Figure::new("time to the first completion", f, "s"));
    }
    // Only a client that prints its own rate, and whose lifetime average misleads, invites the
    // lifetime-average explanation.
    let printed = s.printed_req_per_s.is_some() && lifetime_misleads(s);
    if s.printed_req_per_s.is_some() && !printed {
        findings.push(Finding {
            kind: FindingKind::ClientGap,
            title: "The client's lifetime rate agrees with its steady rate".into(),
            detail: format!(
                "Its lifetime average ({:.3} req/s) lies within the steady window's 95% interval ({:.3}-{:.3} req/s) and within {:.0}% of it: \
                 the client's number is not distorted by a ramp or by rounding here.",
                life.value,
                win.low.unwrap_or(f64::NAN),
                win.high.unwrap_or(f64::NAN),
                LIFETIME_AGREES * 100.0
            ),
            figures,
            evidence: Vec::new(),
            confidence: Confidence::Medium,
        });
        return;
    }
    let mut detail = if printed {
        format!(
            "The client's figure is a lifetime average: completions since its start divided by the time since then ({:.3} req/s). \
             Over the steady window the same client completes {:.3} req/s (95% interval {:.3}-{:.3}).",
            life.value,
            win.value,
            win.low.unwrap_or(f64::NAN),
            win.high.unwrap_or(f64::NAN)
        )
    } else {
        format!(
            "Over the steady window the client completed {:.3} req/s (95% interval {:.3}-{:.3}); its lifetime average is {:.3} req/s.",
            win.value,
            win.low.unwrap_or(f64::NAN),
            win.high.unwrap_or(f64::NAN),
            life.value
        )
    };
    if let Some(p) = s.printed_req_per_s
        && (p - life.value).abs() > 0.2 * life.value
    {
        detail.push_str(&format!(
                " It prints {p} req/s: one decimal place turns {:.3} into {p}, a {:.0}% error on its own.",
                life.value,
                (p / life.value - 1.0).abs() * 100.0
            ));
    }
    if let Some(f) = s.first_completion_after_s {
        detail.push_str(&format!(
            " Its denominator includes the first {:.0} s, when requests fired at once had not finished yet and nothing completed.",
            f
        ));
    }
    if let Some(imp) = &s.implied_req_per_s {
        figures.push(Figure::new(
            "request rate implied by the server's tokens",
            imp.value,
            "req/s",
        ));
        detail.push_str(&format!(
            " The server's steady token rate implies {:.3} req/s (95% interval {:.3}-{:.3}) at the mean completion of {:.0} tokens.",
            imp.value,
            imp.low.unwrap_or(f64::NAN),
            imp.high.unwrap_or(f64::NAN),
            s.mean_completion_tokens.unwrap_or(f64::NAN)
        ));
        if imp
            .low
            .map(|l| l > win.high.unwrap_or(f64::INFINITY))
            .unwrap_or(false)
        {
            let totals = &ev.retraction_totals;
            let freed = totals.tokens_freed.unwrap_or(0);
            let wasted_tps = totals
                .time_span
                .filter(|(a, b)| b > a)
                .map(|(a, b)| freed as f64 / (b - a));
            detail.push_str(
                " The server generates more tokens than the client receives in completed requests",
            );
            if let Some(w) = wasted_tps {
                figures.push(Figure::new(
                    "KV freed by retractions, per second of the run",
                    w,
                    "tok/s",
                ));
                detail.push_str(&format!(
                    ": retractions freed {freed} KV tokens (~{w:.0} tok/s over the run) whose work is redone, which is part of the gap"
                ));
            }
            detail.push('.');
        }
    }
    // A client counts a request's tokens only when it completes: at any instant the running
    // requests hold generated tokens it has not counted yet, about half a completion each.
    if let (Some(run), Some(m)) = (running_median, s.mean_completion_tokens) {
        let uncounted = run * m / 2.0;
        figures.push(Figure::new(
            "generated tokens in flight, not yet counted by the client",
            uncounted,
            "tokens",
        ));
        detail.push_str(&format!(
            " A client counts tokens only at completion: ~{:.0} running requests hold ~{uncounted:.0} generated tokens it has not counted yet, \
             which shifts a 60 s window's token rate by up to {:.0} tok/s but a {:.0} s window's by only {:.1} tok/s.",
            run,
            uncounted / 60.0,
            win.window_s,
            uncounted / win.window_s.max(1.0)
        ));
    }
    if !permit_waits.is_empty() {
        let mean = permit_waits.iter().sum::<f64>() / permit_waits.len() as f64;
        figures.push(Figure::new(
            "mean wait for a client concurrency slot",
            mean,
            "s",
        ));
        if mean > 1.0 {
            detail.push_str(&format!(
                " Requests waited {mean:.1} s on average for a slot in the client before being sent: that time is in the client's latency but not the server's."
            ));
        }
    }
    findings.push(Finding {
        kind: FindingKind::ClientGap,
        title: if printed {
            "The client's req/s is a lifetime average, not the server's rate".into()
        } else {
            "The client's completions against the server's tokens".into()
        },
        detail,
        figures,
        evidence: vec![SourceRange {
            source: s.source.clone(),
            first_line: 1,
            last_line: 1,
        }]
        .into_iter()
        .filter(|_| false)
        .collect(),
        confidence: Confidence::High,
    });
    if let Some(a) = &s.adequacy {
        let mut figs = Vec::new();
        if let Some(w) = s.window_needed_s {
            figs.push(Figure::new("window needed for ±10% at 95%", w, "s"));
        }
        findings.push(Finding {
            kind: FindingKind::SampleAdequacy,
            title: "A short sample cannot settle the rate".into(),
            detail: format!("{a}. Measure over the steady span (or at least the window above), not a one-minute sample."),
            figures: figs,
            evidence: Vec::new(),
            confidence: Confidence::High,
        });
    }
}

/// Parallel layout from server facts or the log's server args.
fn parallel(ev: &Evidence, ctx: &Context) -> ParallelConfig {
    let arg = |k: &str| {
        ev.startup
            .server_args
            .get(k)
            .and_then(|v| v.parse::<u32>().ok())
    };
    let tp = ctx
        .server
        .as_ref()
        .and_then(|s| s.tp_size)
        .or_else(|| arg("tp_size"))
        .unwrap_or(1)
        .max(1);
    let dp = ctx
        .server
        .as_ref()
        .and_then(|s| s.dp_size)
        .or_else(|| arg("dp_size"))
        .unwrap_or(1)
        .max(1);
    let dp_attn = ctx
        .server
        .as_ref()
        .and_then(|s| s.enable_dp_attention)
        .or_else(|| {
            ev.startup
                .server_args
                .get("enable_dp_attention")
                .map(|v| v == "True" || v == "true")
        })
        .unwrap_or(false);
    let pp = arg("pp_size").unwrap_or(1).max(1);
    let mut p = ParallelConfig::tp(tp);
    p.pp_size = pp;
    if dp_attn && dp > 1 {
        p.attn_tp_size = Some((tp / dp).max(1));
    }
    p
}

/// Build the KV capacity model and its what-if table. Returns why not, when it cannot.
pub(crate) fn capacity_model(
    ev: &Evidence,
    ctx: &Context,
    cap: &CapacitySummary,
    cached_share: Option<f64>,
) -> Result<CapacityModel, String> {
    let model = ctx
        .model
        .as_ref()
        .ok_or("no model config (--model-config config.json) was given")?;
    let fraction = cap
        .mem_fraction_static
        .ok_or("mem_fraction_static is unknown (no server_args line or server info)")?;
    let tokens = cap
        .max_total_num_tokens
        .ok_or("max_total_num_tokens is unknown (no startup lines or server info)")?;
    let par = parallel(ev, ctx);
    let kv_dtype_s = ctx
        .server
        .as_ref()
        .and_then(|s| s.kv_cache_dtype.clone())
        .or_else(|| ev.startup.server_args.get("kv_cache_dtype").cloned())
        .unwrap_or_else(|| "auto".into());
    let kv_dtype = KvDtype::from_sglang(&kv_dtype_s).map_err(|e| e.to_string())?;
    let cell =
        kv_capacity::cell_size_bytes(&model.config, &par, kv_dtype).map_err(|e| e.to_string())?;
    let (pre_bytes, pre_source, pre_name) = match ctx.gpu.as_ref().and_then(|g| g.min_total_bytes()) {
        Some(t) => (t as f64, PreSource::GpuTotal, format!("GPU total memory ({})", ctx.gpu.as_ref().map(|g| g.source.clone()).unwrap_or_default())),
        None => match (ev.startup.avail_mem_after_weights_gb, ev.startup.weights_gb) {
            (Some(a), Some(w)) => ((a + w) * GIB, PreSource::LogLoadWeightLine, "avail mem + mem usage of the log's `Load weight end` line".to_string()),
            _ => return Err("the GPU's memory is unknown (no --gpu / --gpu-snapshot and no `Load weight end` line)".into()),
        },
    };
    let pool = PoolModel::calibrated(fraction, tokens, pre_bytes, pre_source, cell.bytes)
        .map_err(|e| e.to_string())?;
    let (free_now, free_src) = match (
        cap.available_gpu_mem_gb,
        ctx.gpu.as_ref().and_then(|g| g.min_free_bytes()),
    ) {
        (Some(gb), _) => (
            Some(gb * GIB),
            Some("the log's available_gpu_mem after CUDA graph capture".to_string()),
        ),
        (None, Some(b)) => (
            Some(b as f64),
            Some(format!(
                "minimum free GPU memory ({})",
                ctx.gpu
                    .as_ref()
                    .map(|g| g.source.clone())
                    .unwrap_or_default()
            )),
        ),
        _ => (None, None),
    };
    let lengths: Vec<(u64, u64)> = ctx.clients.iter().flat_map(|c| c.lengths()).collect();
    let load = InFlightLoad::from_samples(&lengths).ok();
    let input = CapacityInput {
        model: model.config.clone(),
        parallel: par,
        kv_dtype,
        mem_fraction_static: fraction,
        pool: pool.clone(),
        free_now_bytes: free_now,
        load,
        thresholds: FeasibilityThresholds::default(),
        gpus_on_host: ctx.gpu.as_ref().map(|g| g.devices.len() as u32),
    };
    let table = kv_capacity::what_if(&input);
    let hicache = hicache(ev, ctx, tokens, cell.bytes, par, cached_share);
    Ok(CapacityModel {
        tp_size: par.tp_size,
        cell_bytes: cell.bytes,
        pre_gib: pre_bytes / GIB,
        pre_source: pre_name,
        free_now_gib: free_now.map(|b| b / GIB),
        free_now_source: free_src,
        tokens_per_hundredth: pool.tokens_per_hundredth(),
        what_if: table,
        hicache,
    })
}

fn hicache(
    ev: &Evidence,
    ctx: &Context,
    device_tokens: u64,
    cell_bytes: u64,
    par: ParallelConfig,
    cached_share: Option<f64>,
) -> Option<kv_capacity::HiCacheVerdict> {
    let arg_f = |k: &str| {
        ev.startup
            .server_args
            .get(k)
            .and_then(|v| v.parse::<f64>().ok())
    };
    let size = ctx
        .server
        .as_ref()
        .and_then(|s| s.hicache_size_gb)
        .or_else(|| arg_f("hicache_size"))
        .unwrap_or(0.0);
    let ratio = ctx
        .server
        .as_ref()
        .and_then(|s| s.hicache_ratio)
        .or_else(|| arg_f("hicache_ratio"))
        .unwrap_or(2.0);
    let ranks = (par.tp_size * par.pp_size).max(1);
    let ranks_on_host = ctx
        .gpu
        .as_ref()
        .map(|g| (g.devices.len() as u32).max(1))
        .unwrap_or(ranks)
        .min(ranks);
    kv_capacity::hicache_verdict(&HiCacheInput {
        sizing: HiCacheSizing::from_server_args(size, ratio),
        device_pool_tokens: device_tokens,
        host_bytes_per_token: cell_bytes,
        ranks_on_host,
        page_size: ctx.server.as_ref().and_then(|s| s.page_size).unwrap_or(1),
        cached_token_share: cached_share,
        meminfo: ctx.host_meminfo,
    })
    .ok()
}

/// Least squares `y = a + b·x1 + c·x2` (3×3 normal equations, Gaussian elimination).
fn fit3(rows: &[(f64, f64, f64)]) -> Option<(f64, f64, f64, f64)> {
    let n = rows.len();
    if n < 6 {
        return None;
    }
    // scale for conditioning
    let s1 = rows.iter().map(|r| r.0.abs()).fold(0.0, f64::max).max(1.0);
    let s2 = rows.iter().map(|r| r.1.abs()).fold(0.0, f64::max).max(1.0);
    let mut m = [[0.0f64; 4]; 3];
    for &(x1, x2, y) in rows {
        let v = [1.0, x1 / s1, x2 / s2];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += v[i] * v[j];
            }
            m[i][3] += v[i] * y;
        }
    }
    for col in 0..3 {
        let piv = (col..3).max_by(|&a, &b| {
            m[a][col]
                .abs()
                .partial_cmp(&m[b][col].abs())
                .unwrap_or(std::cmp::Ordering::Equal)
        })?;
        if m[piv][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, piv);
        let pivot_row = m[col];
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(pivot_row.iter()).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let a = m[0][3] / m[0][0];
    let b = m[1][3] / m[1][1] / s1;
    let c = m[2][3] / m[2][2] / s2;
    let mean = rows.iter().map(|r| r.2).sum::<f64>() / n as f64;
    let ss_tot: f64 = rows.iter().map(|r| (r.2 - mean).powi(2)).sum();
    let ss_res: f64 = rows
        .iter()
        .map(|r| (r.2 - (a + b * r.0 + c * r.1)).powi(2))
        .sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        0.0
    };
    [a, b, c, r2]
        .iter()
        .all(|x| x.is_finite())
        .then_some((a, b, c, r2))
}

/// Fit decode step time and project throughput for the what-if rows.
///
/// Step time per decode step is read from each Decode line as `running × accept_len / gen
/// throughput` (each running request gains `accept_len` tokens per step, 1 without speculative
/// decoding). SGLang's logged throughput counts wall time, prefill passes included, so the fit
/// describes the mix as it ran.
pub(crate) fn projection(
    decode: &[DecodeSample],
    cap: Option<&CapacityModel>,
) -> Option<Projection> {
    let rows: Vec<(f64, f64, f64)> = decode
        .iter()
        .filter_map(|d| {
            let r = d.running? as f64;
            let g = d.gen_tps?;
            let k = d.tokens? as f64;
            (r > 0.0 && g > 0.0).then(|| (r, k, r * d.accept_len.unwrap_or(1.0) / g))
        })
        .collect();
    let (a, b, c, r2) = fit3(&rows)?;
    let rmin = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let rmax = rows.iter().map(|r| r.0).fold(f64::NEG_INFINITY, f64::max);
    let rmean = rows.iter().map(|r| r.0).sum::<f64>() / rows.len() as f64;
    let kmean = rows.iter().map(|r| r.1).sum::<f64>() / rows.len() as f64;
    let held = kmean / rmean;
    let tps = |n: f64| -> f64 {
        let step = a + b * n + c * n * held;
        if step > 0.0 { n / step } else { f64::NAN }
    };
    let current = tps(rmean);
    let mut out = Vec::new();
    if let Some(cm) = cap {
        for row in &cm.what_if.rows {
            let Some(n) = row.decode_concurrency else {
                continue;
            };
            let t = tps(n);
            if !t.is_finite() {
                continue;
            }
            out.push(ProjectionRow {
                label: row.label.clone(),
                concurrency: n,
                tok_per_s: t,
                gain_pct: (t / current - 1.0) * 100.0,
                extrapolated: n > rmax * 1.05 || n < rmin * 0.95,
                feasibility: row
                    .feasibility
                    .as_ref()
                    .map(|f| format!("{:?}", f.verdict).to_lowercase()),
            });
        }
    }
    Some(Projection {
        observed_mean_running: rmean,
        formula: "step_s = a + b × running + c × kv_tokens; tok/s = running / step_s, with kv_tokens = running × (observed KV tokens per running request)".into(),
        a,
        b,
        c,
        r2,
        n: rows.len(),
        running_range: (rmin, rmax),
        current_tok_per_s: current,
        rows: out,
    })
}

fn feasibility_word(f: &Option<String>) -> &str {
    match f.as_deref() {
        Some("fits") => "fits in the free memory",
        Some("tight") => "fits with little margin",
        Some("oomlikely") => "likely out of memory",
        _ => "feasibility unknown",
    }
}

/// How loaded the primary scheduler is over its steady span.
pub(crate) struct Load {
    /// Median running requests.
    pub running_median: f64,
    /// Median token usage (fraction of the KV pool).
    pub usage_median: f64,
    /// 90th percentile token usage (fraction).
    pub usage_p90: Option<f64>,
    /// `max_running_requests` per DP rank, when known.
    pub max_running_requests: Option<u64>,
}

/// Token usage treated as full when estimating headroom (fraction).
const HEADROOM_USAGE: f64 = 0.95;

impl Load {
    /// Extra requests that could run at once before the running cap or a KV pool at
    /// [`HEADROOM_USAGE`] stops them (KV tokens per request assumed as today's), and which limit
    /// comes first.
    fn headroom(&self) -> Option<(f64, &'static str)> {
        let kv = (self.usage_median > 0.0)
            .then(|| self.running_median * (HEADROOM_USAGE / self.usage_median - 1.0));
        let cap = self
            .max_running_requests
            .map(|c| c as f64 - self.running_median);
        match (kv, cap) {
            (Some(k), Some(c)) if c <= k => Some((c.max(0.0), "the running-request cap")),
            (Some(k), _) => Some((k.max(0.0), "the KV cache")),
            (None, Some(c)) => Some((c.max(0.0), "the running-request cap")),
            (None, None) => None,
        }
    }
}

/// Recommendations ordered by expected gain.
pub(crate) fn recommendations(
    bottleneck: Bottleneck,
    cap: Option<&CapacityModel>,
    proj: Option<&Projection>,
    client: Option<&ClientSummary>,
    retr: &RetractionSummary,
    load: Option<&Load>,
) -> Vec<Recommendation> {
    let mut out: Vec<Recommendation> = Vec::new();
    if bottleneck == Bottleneck::KvCacheBound {
        if let (Some(cm), Some(p)) = (cap, proj) {
            // Best feasible row of each kind.
            // Gains relative to the current row's projection (same formula, so like with like);
            // a larger TP needs proportionally more GPUs, so its gain is counted per GPU.
            let (base, base_n) = cm
                .what_if
                .rows
                .iter()
                .find(|w| matches!(w.change, kv_capacity::Change::Current))
                .and_then(|w| p.rows.iter().find(|r| r.label == w.label))
                .map(|r| (r.tok_per_s, r.concurrency))
                .unwrap_or((p.current_tok_per_s, p.observed_mean_running));
            let gpu_factor = |label: &str| -> f64 {
                cm.what_if
                    .rows
                    .iter()
                    .find(|w| w.label == label)
                    .and_then(|w| match w.change {
                        kv_capacity::Change::TpSize { to } => {
                            let now = cm
                                .what_if
                                .rows
                                .iter()
                                .find(|x| matches!(x.change, kv_capacity::Change::Current));
                            let _ = now;
                            Some(f64::from(to))
                        }
                        _ => None,
                    })
                    .map(|to| to / cm.tp_size.max(1) as f64)
                    .unwrap_or(1.0)
            };
            let rows: Vec<ProjectionRow> = p
                .rows
                .iter()
                .filter(|r| {
                    !matches!(
                        cm.what_if
                            .rows
                            .iter()
                            .find(|w| w.label == r.label)
                            .map(|w| w.change),
                        Some(kv_capacity::Change::Current)
                    )
                })
                .map(|r| {
                    let mut r = r.clone();
                    r.gain_pct = (r.tok_per_s / gpu_factor(&r.label) / base - 1.0) * 100.0;
                    r
                })
                .collect();
            let mut candidates: Vec<&ProjectionRow> = rows
                .iter()
                .filter(|r| r.feasibility.as_deref() != Some("oomlikely") && r.gain_pct > 1.0)
                .collect();
            candidates.sort_by(|a, b| {
                b.gain_pct
                    .partial_cmp(&a.gain_pct)
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let mut seen_kinds = Vec::new();
            for r in candidates {
                let kind = r.label.split_whitespace().next().unwrap_or("").to_string();
                if seen_kinds.contains(&kind) {
                    continue;
                }
                seen_kinds.push(kind);
                let pool = cm.what_if.rows.iter().find(|w| w.label == r.label);
                out.push(Recommendation {
                    action: format!("Set {}", r.label),
                    expected_gain: format!(
                        "pool {} tokens ({:+.0}%), ~{:.0} requests decoding at once, ~{:.0} tok/s ({:+.0}% over the step-time fit's ~{:.0} tok/s for today's pool, ~{:.0} decoding at once){}",
                        pool.map(|w| w.pool_tokens.to_string()).unwrap_or_else(|| "?".into()),
                        pool.map(|w| w.change_pct).unwrap_or(f64::NAN),
                        r.concurrency,
                        r.tok_per_s,
                        r.gain_pct,
                        base,
                        base_n,
                        if r.extrapolated { " (extrapolated beyond the observed batch sizes)" } else { "" }
                    ),
                    gain_pct: Some(r.gain_pct),
                    risk: if r.label.contains("kv_cache_dtype") {
                        "fp8 KV slightly changes numerics: check output quality on a sample; no extra memory".into()
                    } else if r.label.contains("tp_size") {
                        "needs twice the GPUs per replica".into()
                    } else {
                        format!("{}: {}", feasibility_word(&r.feasibility), pool.and_then(|w| w.feasibility.as_ref()).map(|f| format!("{:.2} GiB free per GPU afterwards", f.free_after_gib)).unwrap_or_default())
                    },
                });
            }
            // Fractions that would not fit: say so, since it is the usual first idea.
            if let Some(bad) = cm.what_if.rows.iter().find(|w| {
                w.feasibility
                    .as_ref()
                    .map(|f| format!("{:?}", f.verdict) == "OomLikely")
                    .unwrap_or(false)
                    && w.label.contains("mem_fraction_static")
            }) {
                out.push(Recommendation {
                    action: format!(
                        "Do not raise mem_fraction_static to {:.2} or beyond",
                        bad.mem_fraction_static
                    ),
                    expected_gain: match &bad.feasibility {
                        Some(f) => format!(
                            "none: the pool would take {:.2} GiB more per GPU, leaving {:.2} of the {:.2} GiB free after CUDA graphs, \
                             under the {:.0} GiB that prefill activations need",
                            f.extra_gib,
                            f.free_after_gib,
                            f.free_now_gib,
                            FeasibilityThresholds::default().tight_free_gib
                        ),
                        None => format!(
                            "none: the pool would take {:.2} GiB more per GPU than is safe to give it",
                            bad.extra_gib_per_gpu
                        ),
                    },
                    gain_pct: None,
                    risk: "out of memory at start-up or under the first large prefill".into(),
                });
            }
        }
        if cap.and_then(|c| c.hicache.as_ref()).is_some() || cap.is_some() {
            out.push(Recommendation {
                action: "Do not expect host-RAM hierarchical cache (HiCache) to raise throughput here".into(),
                expected_gain: "none for decode concurrency: HiCache keeps evicted prefixes in host RAM; running requests' KV stays on the GPU".into(),
                gain_pct: None,
                risk: "uses pinned host RAM per rank".into(),
            });
        }
        if retr.events > 0 {
            out.push(Recommendation {
                action: "Raise --schedule-conservativeness a little (e.g. 1.3) or cap max_tokens"
                    .into(),
                expected_gain: format!(
                    "fewer of the {} retractions and the recomputation they cause",
                    retr.events
                ),
                gain_pct: None,
                risk: "slightly fewer requests admitted at once".into(),
            });
        }
    }
    // Below the pool: what the current pool would allow if admission let it fill.
    let fill_gain = || -> Option<(f64, f64, f64, bool)> {
        let (cm, p) = (cap?, proj?);
        let now = cm
            .what_if
            .rows
            .iter()
            .find(|w| matches!(w.change, kv_capacity::Change::Current))?;
        let n = now.decode_concurrency?;
        let r = p.rows.iter().find(|r| r.label == now.label)?;
        let observed = p.observed_mean_running;
        (n > observed).then(|| {
            (
                n,
                r.tok_per_s,
                (r.tok_per_s / p.current_tok_per_s - 1.0) * 100.0,
                r.extrapolated,
            )
        })
    };
    match bottleneck {
        Bottleneck::SchedulerConservative => {
            let g = fill_gain();
            out.push(Recommendation {
                action: "Lower --schedule-conservativeness (e.g. 0.7), or send max_tokens closer to the real completion lengths".into(),
                expected_gain: match g {
                    Some((n, t, pct, extrapolated)) => format!(
                        "the pool could hold ~{n:.0} requests decoding at once instead of the ~{:.0} admitted: ~{t:.0} tok/s ({pct:+.0}% over the step-time fit's ~{:.0} tok/s now){}",
                        proj.map(|p| p.observed_mean_running).unwrap_or(f64::NAN),
                        proj.map(|p| p.current_tok_per_s).unwrap_or(f64::NAN),
                        if extrapolated { " (extrapolated beyond the observed batch sizes)" } else { "" }
                    ),
                    None => "more requests admitted while the KV cache has room".into(),
                },
                gain_pct: g.map(|x| x.2),
                risk: "more retractions if completions run longer than reserved; watch for `KV cache pool is full. Retract requests.`".into(),
            });
        }
        Bottleneck::RunningCapBound => out.push(Recommendation {
            action: "Raise --max-running-requests (per DP rank), if the KV cache has room; check the client is not capped at the same number".into(),
            expected_gain: "more requests decoding at once, up to what the KV pool holds".into(),
            gain_pct: None,
            risk: "larger batches need more activation memory and may exceed the captured CUDA-graph batch size".into(),
        }),
        // Nothing runs (a PD prefill instance, an idle server): the batch model does not apply.
        Bottleneck::ClientBound if load.is_some_and(|l| l.running_median < 1.0) => {}
        Bottleneck::ClientBound => out.push(Recommendation {
            action: "Send more requests at once from the client (raise its concurrency)".into(),
            expected_gain: match load.and_then(|l| Some((l, l.headroom()?))) {
                Some((l, (extra, limit))) => format!(
                    "little waits: ~{:.0} requests run at token usage ~{:.2}{}; about {extra:.0} more could run at once before {limit} stops them, \
                     and throughput grows with the batch until then",
                    l.running_median,
                    l.usage_median,
                    l.usage_p90.map(|p| format!(" (p90 {p:.2})")).unwrap_or_default()
                ),
                None => "the server has KV room and little waits: throughput grows with the batch until the KV cache or compute is the limit".into(),
            },
            gain_pct: None,
            risk: "higher per-request latency (ITL) as the batch grows".into(),
        }),
        _ => {}
    }
    if let Some(c) = client
        && c.printed_req_per_s.is_some()
        && lifetime_misleads(c)
    {
        out.push(Recommendation {
                action: "Judge progress by the windowed rate (or throughput-doctor run-batch), not the client's lifetime average".into(),
                expected_gain: "a correct number to plan with; no throughput change".into(),
                gain_pct: None,
                risk: "none".into(),
            });
    }
    out.sort_by(|a, b| {
        b.gain_pct
            .unwrap_or(f64::NEG_INFINITY)
            .partial_cmp(&a.gain_pct.unwrap_or(f64::NEG_INFINITY))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

/// Capacity findings: the what-if summary and the HiCache verdict.
pub(crate) fn capacity_findings(cm: &CapacityModel, findings: &mut Vec<Finding>) {
    let rows = &cm.what_if.rows;
    let mut figures = vec![
        Figure::new("KV pool now", cm.what_if.current_tokens as f64, "tokens"),
        Figure::new("bytes per token per GPU", cm.cell_bytes as f64, "bytes"),
        Figure::new(
            "tokens per +0.01 mem_fraction_static",
            cm.tokens_per_hundredth,
            "tokens",
        ),
    ];
    if let Some(f) = cm.free_now_gib {
        figures.push(Figure::new("free GPU memory at run time", f, "GiB"));
    }
    for w in rows.iter().filter(|w| {
        w.label.contains("0.88") || w.label.contains("0.93") || w.label.contains("kv_cache_dtype")
    }) {
        let feasible = match w.feasibility.as_ref().map(|f| f.verdict) {
            Some(kv_capacity::Feasibility::Fits) => " (fits)",
            Some(kv_capacity::Feasibility::Tight) => " (fits with little margin)",
            Some(kv_capacity::Feasibility::OomLikely) => " (likely out of memory)",
            None => "",
        };
        figures.push(Figure::new(
            format!("pool at {}{feasible}", w.label),
            w.pool_tokens as f64,
            "tokens",
        ));
    }
    findings.push(Finding {
        kind: FindingKind::CapacityWhatIf,
        title: "What a bigger KV pool would take".into(),
        detail: format!(
            "SGLang sizes the pool as rest = avail − pre × (1 − mem_fraction_static) (model_runner profile_max_num_token), so each +0.01 adds 1% of the GPU's {:.1} GiB ({:.0} tokens), not 1% of the pool — \
             but only as far as memory is free after activations and CUDA graphs{}. See the what-if table.",
            cm.pre_gib,
            cm.tokens_per_hundredth,
            cm.free_now_gib.map(|f| format!(" ({f:.2} GiB now)")).unwrap_or_default()
        ),
        figures,
        evidence: Vec::new(),
        confidence: Confidence::High,
    });
    if let Some(h) = &cm.hicache {
        findings.push(Finding {
            kind: FindingKind::HiCache,
            title: "HiCache would not let more requests decode at once".into(),
            detail: h.summary.join("; "),
            figures: vec![
                Figure::new(
                    "device KV pool (decode concurrency limit)",
                    h.decode_pool_tokens as f64,
                    "tokens",
                ),
                Figure::new(
                    "host pool per rank",
                    h.host_tokens_per_rank as f64,
                    "tokens",
                ),
                Figure::new(
                    "host RAM for all ranks",
                    h.host_bytes_all_ranks as f64 / GIB,
                    "GiB",
                ),
            ],
            evidence: Vec::new(),
            confidence: Confidence::High,
        });
    }
}
