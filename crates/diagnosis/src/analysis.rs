//! From [`Evidence`] to a [`Report`]: per-scheduler summaries, the steady span, and findings.
//!
//! Thresholds follow SGLang's own guidance where it exists: token usage ≥ 0.9 means the KV cache
//! is the limit (SGLang hyperparameter-tuning docs: "token usage ... above 0.9 ... good"; below
//! that with a queue, the scheduler is too conservative). Each threshold is a named constant.

use crate::bench;
use crate::client::ClientFormat;
use crate::context::Context;
use crate::evidence::{DecodeSample, Evidence, PrefillSample, SchedulerKey, SchedulerTimeline};
use crate::extended;
use crate::report::*;

/// Token usage at or above which the KV cache counts as full (fraction).
pub const KV_FULL_USAGE: f64 = 0.9;
/// Token usage below which a queue means the scheduler holds back (fraction).
pub const CONSERVATIVE_USAGE: f64 = 0.8;
/// Share of batch lines with `#queue-req` > 0 for requests to count as "queued".
pub const QUEUED_SHARE: f64 = 0.5;
/// Share of batch lines with `#queue-req` > 0 below which load counts as too low.
pub const LOW_LOAD_QUEUED_SHARE: f64 = 0.1;
/// A decode line this much later than the previous batch line follows an idle gap (seconds).
pub const IDLE_GAP_S: f64 = 30.0;
/// Stalls shorter than this are reported as suspicious, not as a stall (seconds).
pub const STALL_MIN_S: f64 = 60.0;
/// Decode speed per running request below which decode itself is the problem (tok/s per request).
/// A healthy server gives each running request several tokens per second even in large batches.
pub const SLOW_DECODE_TOK_PER_REQ: f64 = 1.0;
/// Batch lines a verdict needs before it can be held with high confidence.
pub const MIN_LINES_FOR_HIGH_CONFIDENCE: usize = 5;
/// Decode lines needed before a rate gets an interval (batch means need several batches).
pub const MIN_LINES_FOR_INTERVAL: usize = 20;
/// Prefill speed below which prefill itself is the problem (tok/s): a GPU prefills thousands of
/// tokens per second even for one request; CPU-offloaded experts manage tens.
pub const SLOW_PREFILL_TOK_PER_S: f64 = 256.0;
/// Prefill chunks at least this large are read as a long prompt cut at the chunk size (tokens).
const MIN_CHUNK_TOKENS: u64 = 512;
/// Decode throughput lost to interleaved prefills above which it is reported (fraction).
pub const PREFILL_INTERFERENCE_MIN_LOSS: f64 = 0.10;
/// Retraction events per hour above which retraction is called thrashing.
pub const THRASH_PER_HOUR: f64 = 30.0;

/// One batch-line observation on a common footing (decode or prefill).
#[derive(Clone, Copy, Debug)]
struct Obs {
    t: Option<f64>,
    line: u64,
    running: Option<u64>,
    queue: Option<u64>,
    usage: Option<f64>,
}

fn merged_obs(s: &SchedulerTimeline) -> Vec<Obs> {
    let d = s.decode.samples().iter().map(|d: &DecodeSample| Obs {
        t: d.t,
        line: d.line,
        running: d.running,
        queue: d.queue,
        usage: d.usage,
    });
    let p = s.prefill.samples().iter().map(|p: &PrefillSample| Obs {
        t: p.t,
        line: p.line,
        running: p.running,
        queue: p.queue,
        usage: p.usage,
    });
    let mut all: Vec<Obs> = d.chain(p).collect();
    // Time order (rotated parts joined into one scheduler restart their line numbers), then line.
    all.sort_by(|a, b| match (a.t, b.t) {
        (Some(x), Some(y)) => x
            .partial_cmp(&y)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.line.cmp(&b.line)),
        _ => a.line.cmp(&b.line),
    });
    all
}

/// Time-weighted stats of `(t, v)` points; falls back to equal weights when times are missing.
fn gauge(points: &[(Option<f64>, f64)]) -> GaugeStats {
    let vals: Vec<f64> = points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    if vals.is_empty() {
        return GaugeStats::default();
    }
    let timed: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|&(t, v)| t.map(|t| (t, v)))
        .collect();
    // Time weights need time resolution: SGLang prints whole seconds, so a burst of lines within a
    // few seconds shares timestamps; then every line counts equally instead.
    let distinct = timed.windows(2).filter(|w| w[1].0 > w[0].0).count() + 1;
    let series: Vec<(f64, f64)> =
        if timed.len() == points.len() && is_sorted(&timed) && distinct * 2 >= timed.len() {
            timed
        } else {
            vals.iter()
                .enumerate()
                .map(|(i, &v)| (i as f64, v))
                .collect()
        };
    match throughput_stats::time_weighted_summary(&series) {
        Ok(s) => GaugeStats {
            n: s.n,
            min: Some(s.min),
            median: Some(s.median),
            p90: Some(s.p90),
            max: Some(s.max),
            mean: Some(s.mean),
        },
        Err(_) => GaugeStats {
            n: vals.len(),
            min: vals.iter().copied().reduce(f64::min),
            max: vals.iter().copied().reduce(f64::max),
            ..GaugeStats::default()
        },
    }
}

fn is_sorted(s: &[(f64, f64)]) -> bool {
    s.windows(2).all(|w| w[0].0 <= w[1].0)
}

fn share<T>(items: &[T], pred: impl Fn(&T) -> Option<bool>) -> Option<f64> {
    let mut n = 0usize;
    let mut yes = 0usize;
    for it in items {
        if let Some(b) = pred(it) {
            n += 1;
            if b {
                yes += 1;
            }
        }
    }
    (n > 0).then(|| yes as f64 / n as f64)
}

/// Everything computed for one scheduler, used for its summary and for findings.
struct SchedAnalysis<'e> {
    key: SchedulerKey,
    tl: &'e SchedulerTimeline,
    span: Option<Span>,
    steady: Vec<Obs>,
    steady_decode: Vec<DecodeSample>,
    steady_prefill: Vec<PrefillSample>,
    running: GaugeStats,
    queued: GaugeStats,
    usage: GaugeStats,
    gen_tps: GaugeStats,
    queued_share: Option<f64>,
    full_share: Option<f64>,
    bottleneck: Bottleneck,
    reasons: Vec<Figure>,
}

fn in_span(t: Option<f64>, span: &Option<Span>) -> bool {
    match (t, span) {
        (Some(t), Some(s)) => t >= s.steady_start_s && t <= s.steady_end_s,
        _ => true,
    }
}

fn describe_method(m: &throughput_stats::PhaseMethod) -> String {
    match m {
        throughput_stats::PhaseMethod::Mser5 {
            ramp_batches,
            drain_batches,
            at_search_limit,
            ..
        } => format!(
            "MSER-5 on running requests: {ramp_batches} ramp batch(es) of 5 lines cut{}{}",
            if *drain_batches > 0 {
                format!(", {drain_batches} drain batch(es) cut")
            } else {
                String::new()
            },
            if *at_search_limit {
                "; the ramp may not have ended"
            } else {
                ""
            }
        ),
        throughput_stats::PhaseMethod::WholeSpan { reason } => format!("whole log ({reason})"),
    }
}

/// The steady span, from the running-requests series of decode lines (prefill lines when the
/// scheduler prints no decode lines, e.g. a PD prefill server).
fn find_span(tl: &SchedulerTimeline, obs: &[Obs]) -> Option<Span> {
    let decode: Vec<(f64, f64)> = tl
        .decode
        .samples()
        .iter()
        .filter_map(|d| Some((d.t?, d.running? as f64)))
        .collect();
    let series: Vec<(f64, f64)> = if decode.len() >= 2 {
        decode
    } else {
        obs.iter()
            .filter_map(|o| Some((o.t?, o.running? as f64)))
            .collect()
    };
    if series.len() < 2 || !is_sorted(&series) {
        return None;
    }
    let start_s = series[0].0;
    let end_s = series[series.len() - 1].0;
    let timestamp_resolution_s = if series.iter().all(|p| p.0.fract() == 0.0) {
        1.0
    } else {
        0.0
    };
    match throughput_stats::detect_phases(&series) {
        Ok(p) => Some(Span {
            start_s,
            end_s,
            steady_start_s: p.steady.0,
            steady_end_s: p.steady.1,
            timestamp_resolution_s,
            method: describe_method(&p.method),
        }),
        Err(_) => Some(Span {
            start_s,
            end_s,
            steady_start_s: start_s,
            steady_end_s: end_s,
            timestamp_resolution_s,
            method: "whole log (too few points for phase detection)".to_string(),
        }),
    }
}

fn analyse<'e>(
    key: SchedulerKey,
    tl: &'e SchedulerTimeline,
    cap: &CapacitySummary,
) -> SchedAnalysis<'e> {
    let obs = merged_obs(tl);
    let span = find_span(tl, &obs);
    // A burst-shaped run (ramp, saturation, drain) has no steady state; MSER then stops at its
    // search limit and the "steady" span would be the drain. Classify over the whole log instead.
    let span = span.map(|mut s| {
        if s.method.contains("may not have ended") {
            s.steady_start_s = s.start_s;
            s.steady_end_s = s.end_s;
            s.method = format!("whole log: no steady state found ({})", s.method);
        }
        s
    });
    let steady: Vec<Obs> = obs
        .iter()
        .copied()
        .filter(|o| in_span(o.t, &span))
        .collect();
    let steady_decode: Vec<DecodeSample> = tl
        .decode
        .samples()
        .iter()
        .copied()
        .filter(|d| in_span(d.t, &span))
        .collect();
    let steady_prefill: Vec<PrefillSample> = tl
        .prefill
        .samples()
        .iter()
        .copied()
        .filter(|p| in_span(p.t, &span))
        .collect();

    let running = gauge(
        &steady
            .iter()
            .filter_map(|o| Some((o.t, o.running? as f64)))
            .collect::<Vec<_>>(),
    );
    // The standing queue is what decode lines sample (every N steps); a prefill line is printed
    // exactly when queued requests are being admitted, so its queue is biased upward (a burst
    // of arrivals reads 4, 3, 2, 1, 0 over one second). Prefill lines count only when the span
    // has no decode line with a queue.
    let decode_queue: Vec<(Option<f64>, f64)> = steady_decode
        .iter()
        .filter_map(|d| Some((d.t, d.queue? as f64)))
        .collect();
    let queue_series = if decode_queue.is_empty() {
        steady
            .iter()
            .filter_map(|o| Some((o.t, o.queue? as f64)))
            .collect()
    } else {
        decode_queue
    };
    let queued = gauge(&queue_series);
    let usage = gauge(
        &steady
            .iter()
            .filter_map(|o| Some((o.t, o.usage?)))
            .collect::<Vec<_>>(),
    );
    let gen_tps = gauge(
        &steady_decode
            .iter()
            .filter_map(|d| Some((d.t, d.gen_tps?)))
            .collect::<Vec<_>>(),
    );
    let queued_share = share(&queue_series, |&(_, q)| Some(q > 0.0));
    let full_share = share(&steady, |o| o.usage.map(|u| u >= KV_FULL_USAGE));

    let mut a = SchedAnalysis {
        key,
        tl,
        span,
        steady,
        steady_decode,
        steady_prefill,
        running,
        queued,
        usage,
        gen_tps,
        queued_share,
        full_share,
        bottleneck: Bottleneck::Inconclusive,
        reasons: Vec::new(),
    };
    a.bottleneck = classify(&mut a, cap);
    a
}

/// Running-request cap in force for this scheduler, if known.
fn running_cap(cap: &CapacitySummary) -> Option<u64> {
    cap.max_running_requests.filter(|&c| c > 0)
}

fn classify(a: &mut SchedAnalysis<'_>, cap: &CapacitySummary) -> Bottleneck {
    if a.steady.is_empty() {
        return Bottleneck::NoSchedulerLines;
    }
    let queued_share = a.queued_share;
    let queued = queued_share.map(|s| s >= QUEUED_SHARE).unwrap_or(false);
    let p90_usage = a.usage.p90.or(a.usage.max);
    let median_usage = a.usage.median.or(a.usage.max);
    let kv_full = p90_usage.map(|u| u >= KV_FULL_USAGE).unwrap_or(false)
        || a.full_share.map(|s| s >= 0.5).unwrap_or(false);
    if let Some(s) = queued_share {
        a.reasons.push(Figure::new(
            "share of batch lines with a queue",
            s,
            "fraction",
        ));
    }
    if let Some(u) = median_usage {
        a.reasons
            .push(Figure::new("median token usage", u, "fraction"));
    }

    // PD prefill server stuck waiting for the decode side (bootstrap / pre-allocation queue grows).
    let prealloc: Vec<u64> = a
        .steady_prefill
        .iter()
        .filter_map(|p| p.prealloc_req)
        .collect();
    if a.steady_decode.is_empty() && prealloc.len() >= 2 {
        let first = prealloc[0];
        let last = prealloc[prealloc.len() - 1];
        let median = median_u64(&prealloc);
        if median >= 1 && last > first && !queued {
            a.reasons
                .push(Figure::new("#prealloc-req first", first as f64, "requests"));
            a.reasons
                .push(Figure::new("#prealloc-req last", last as f64, "requests"));
            return Bottleneck::PdTransferBound;
        }
    }

    if queued && kv_full {
        return Bottleneck::KvCacheBound;
    }

    // Decode servers in PD: pre-allocation queue builds while the pool is full.
    let dec_prealloc = share(&a.steady_decode, |d| d.prealloc_req.map(|p| p > 0));
    if !queued && kv_full && dec_prealloc.map(|s| s >= QUEUED_SHARE).unwrap_or(false) {
        return Bottleneck::KvCacheBound;
    }

    // Running pinned at the cap (max_running_requests per DP rank): whatever the client sends,
    // no more can run.
    let cap_n = running_cap(cap);
    let at_cap = cap_n.and_then(|c| share(&a.steady, |o| o.running.map(|r| r >= c)));
    if at_cap.map(|s| s >= 0.5).unwrap_or(false) {
        if let Some(c) = cap_n {
            a.reasons
                .push(Figure::new("max_running_requests", c as f64, "requests"));
        }
        a.reasons.push(Figure::new(
            "share of batch lines at the cap",
            at_cap.unwrap_or(0.0),
            "fraction",
        ));
        return Bottleneck::RunningCapBound;
    }

    if queued {
        // Mamba state slots (hybrid SSM models) cap the running batch like max_running_requests.
        let mamba_full = share(&a.steady_decode, |d| d.mamba_usage.map(|m| m >= 0.99));
        let pinned = plateau_share(&a.steady);
        if mamba_full.map(|s| s >= 0.5).unwrap_or(false) {
            a.reasons.push(Figure::new(
                "share of decode lines with mamba usage >= 0.99",
                mamba_full.unwrap_or(0.0),
                "fraction",
            ));
            return Bottleneck::RunningCapBound;
        }
        // Prefill batches at their size limit while the queue waits.
        if let Some(limit_share) = prefill_at_limit_share(&a.steady_prefill, cap)
            && limit_share >= 0.5
            && a.steady_prefill.len() >= 2
        {
            a.reasons.push(Figure::new(
                "share of prefill batches at the size limit",
                limit_share,
                "fraction",
            ));
            return Bottleneck::PrefillBound;
        }
        if pinned.map(|s| s >= 0.8).unwrap_or(false)
            && median_usage
                .map(|u| u < CONSERVATIVE_USAGE)
                .unwrap_or(false)
            && a.steady.len() >= 5
        {
            a.reasons.push(Figure::new(
                "share of lines at the running plateau",
                pinned.unwrap_or(0.0),
                "fraction",
            ));
            return Bottleneck::RunningCapBound;
        }
        if median_usage.map(|u| u < KV_FULL_USAGE).unwrap_or(false) {
            return Bottleneck::SchedulerConservative;
        }
        return Bottleneck::Inconclusive;
    }

    if queued_share
        .map(|s| s < LOW_LOAD_QUEUED_SHARE)
        .unwrap_or(true)
        && !kv_full
    {
        return Bottleneck::ClientBound;
    }
    if kv_full {
        // Full without a queue: the pool is the limit for what runs, but nothing waits (yet).
        return Bottleneck::KvCacheBound;
    }
    Bottleneck::Inconclusive
}

fn median_u64(v: &[u64]) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s[s.len() / 2]
}

/// Share of observations whose `#running-req` equals the maximum seen in the span.
fn plateau_share(obs: &[Obs]) -> Option<f64> {
    let max = obs.iter().filter_map(|o| o.running).max()?;
    share(obs, |o| o.running.map(|r| r == max))
}

/// Share of prefill lines whose `#new-token` is within 10% of the prefill size limit:
/// `min(chunked_prefill_size, max_prefill_tokens)` when known, else the largest prefill seen.
fn prefill_at_limit_share(prefill: &[PrefillSample], cap: &CapacitySummary) -> Option<f64> {
    let observed_max = prefill.iter().filter_map(|p| p.new_token).max()?;
    let configured = match (
        cap.chunked_prefill_size.filter(|&c| c > 0),
        cap.max_prefill_tokens,
    ) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let limit = configured
        .map(|c| c.min(observed_max.max(1)))
        .unwrap_or(observed_max);
    if limit < 512 {
        return None;
    }
    share(prefill, |p| {
        p.new_token.map(|n| n as f64 >= 0.9 * limit as f64)
    })
}

fn range(ev: &Evidence, key: &SchedulerKey, tl: &SchedulerTimeline) -> Vec<SourceRange> {
    let _ = key;
    match (tl.first, tl.last) {
        (Some(a), Some(b)) if a.source == b.source => vec![SourceRange {
            source: ev
                .sources
                .get(a.source)
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            first_line: a.line,
            last_line: b.line,
        }],
        _ => Vec::new(),
    }
}

fn summary_of(ev: &Evidence, a: &SchedAnalysis<'_>) -> SchedulerSummary {
    let agg = &a.tl.agg;
    let total_prompt = agg.prefill_cached_tokens + agg.prefill_new_tokens;
    SchedulerSummary {
        name: a.key.to_string(),
        source: a
            .key
            .source
            .and_then(|s| ev.sources.get(s))
            .map(|s| s.name.clone()),
        tp: a.tl.tp,
        decode_lines: a.tl.decode.pushed(),
        prefill_lines: a.tl.prefill.pushed(),
        duplicate_lines: a.tl.duplicate_lines,
        span: a.span.clone(),
        running: a.running,
        queued: a.queued,
        token_usage: a.usage,
        gen_throughput: a.gen_tps,
        peak_running: agg.max_running,
        peak_queued: agg.max_queue,
        peak_token_usage: agg.max_usage,
        peak_gen_throughput: agg.max_gen_tps,
        prefix_cache_share: (total_prompt > 0)
            .then(|| agg.prefill_cached_tokens as f64 / total_prompt as f64),
        bottleneck: a.bottleneck,
    }
}

fn capacity_of(ev: &Evidence, ctx: &Context) -> CapacitySummary {
    let st = &ev.startup;
    let srv = ctx.server.as_ref();
    let arg_u64 = |k: &str| st.server_args.get(k).and_then(|v| v.parse::<u64>().ok());
    CapacitySummary {
        max_total_num_tokens: st
            .max_total_num_tokens
            .map(|x| x.0)
            .or(st.kv_alloc_tokens)
            .or_else(|| srv.and_then(|s| s.max_total_num_tokens)),
        max_running_requests: st
            .max_running_requests
            .or_else(|| arg_u64("max_running_requests"))
            .or_else(|| srv.and_then(|s| s.max_running_requests)),
        chunked_prefill_size: st
            .chunked_prefill_size
            .or_else(|| arg_u64("chunked_prefill_size"))
            .or_else(|| {
                srv.and_then(|s| s.chunked_prefill_size)
                    .and_then(|v| u64::try_from(v).ok())
            }),
        max_prefill_tokens: st
            .max_prefill_tokens
            .or_else(|| arg_u64("max_prefill_tokens")),
        context_len: st.context_len,
        mem_fraction_static: st
            .server_args
            .get("mem_fraction_static")
            .and_then(|v| v.parse().ok())
            .or_else(|| srv.and_then(|s| s.mem_fraction_static)),
        available_gpu_mem_gb: st.available_gpu_mem_gb.or(st.avail_mem_after_graph_gb),
        kv_cache_gb: st.kv_alloc_gb,
        weights_gb: st.weights_gb,
    }
}

fn retraction_summary(ev: &Evidence, span_s: Option<f64>) -> RetractionSummary {
    let r = &ev.retraction_totals;
    RetractionSummary {
        events: r.events,
        lines: ev.retraction_lines,
        retracted_requests: r.retracted_reqs,
        tokens_freed: r.tokens_freed,
        per_hour: span_s
            .filter(|&s| s >= 60.0)
            .map(|s| r.events as f64 / (s / 3600.0)),
        max_ratio_after: r.max_ratio_after,
    }
}

/// Sum of steady gen throughput over schedulers (DP ranks add; TP duplicates were dropped).
fn steady_throughput(analyses: &[SchedAnalysis<'_>]) -> Option<Rate> {
    let mut total = 0.0;
    let mut var = 0.0;
    let mut window = f64::INFINITY;
    let mut any = false;
    let mut fewest_points = usize::MAX;
    let mut steady_found = true;
    for a in analyses {
        let pts: Vec<(f64, f64)> = a
            .steady_decode
            .iter()
            .filter_map(|d| Some((d.t?, d.gen_tps?)))
            .collect();
        if pts.len() < 2 || !is_sorted(&pts) {
            continue;
        }
        let (from, to) = (pts[0].0, pts[pts.len() - 1].0);
        let Ok(est) = throughput_stats::gen_throughput_mean(&pts, from, to) else {
            continue;
        };
        total += est.mean;
        let half = (est.ci_high - est.ci_low) / 2.0;
        var += (half / 1.96).powi(2);
        window = window.min(pts[pts.len() - 1].0 - pts[0].0);
        fewest_points = fewest_points.min(pts.len());
        steady_found &= a.span.as_ref().is_some_and(span_is_steady);
        any = true;
    }
    if !any {
        return None;
    }
    let sd = var.sqrt();
    // Too few lines give a batch-means interval of no width or no meaning: none is printed.
    let interval = fewest_points >= MIN_LINES_FOR_INTERVAL && sd > 0.0;
    let over = if steady_found {
        "over the steady span"
    } else {
        "over the whole log (no steady state found)"
    };
    Some(Rate {
        value: total,
        low: interval.then(|| (total - 1.96 * sd).max(0.0)),
        high: interval.then_some(total + 1.96 * sd),
        confidence: 0.95,
        unit: "tok/s".into(),
        window_s: window,
        method: format!(
            "time-weighted mean of the logged gen throughput {over}, {}, summed over DP ranks",
            if interval {
                "batch-means interval"
            } else {
                "no interval (fewer than 20 decode lines)"
            }
        ),
    })
}

/// For a PD-disaggregation prefill instance (`disaggregation_mode='prefill'`, or schedulers
/// that print prefill lines only and track `#prealloc-req` / `#inflight-req`): a sentence with
/// its prefill rate, prompt tokens prefilled (new, not from the prefix cache) over the span of
/// its prefill lines, summed over schedulers (tok/s).
fn pd_prefill_sentence(ev: &Evidence, analyses: &[SchedAnalysis<'_>]) -> Option<String> {
    let mode = ev
        .startup
        .server_args
        .get("disaggregation_mode")
        .map(|m| m.trim_matches(|c| c == '\'' || c == '"'));
    let prefill_only = !analyses.is_empty()
        && analyses.iter().all(|a| {
            a.tl.decode.pushed() == 0
                && a.tl
                    .prefill
                    .samples()
                    .iter()
                    .any(|p| p.prealloc_req.is_some() || p.inflight_req.is_some())
        });
    if mode != Some("prefill") && !(mode.is_none() && prefill_only) {
        return None;
    }
    let mut tokens = 0u64;
    let mut rate = 0.0;
    for a in analyses {
        let agg = &a.tl.agg;
        tokens += agg.prefill_new_tokens;
        if let Some((t0, t1)) = a.tl.time_range()
            && t1 > t0
        {
            rate += agg.prefill_new_tokens as f64 / (t1 - t0);
        }
    }
    Some(format!(
        " This is a PD prefill instance: it runs no decode (its running count stays near 0), so its work is prefill: {tokens} new prompt tokens, ~{rate:.0} tok/s over its lines."
    ))
}

/// Whether phase detection found a steady state (not the whole log taken for want of one).
pub(crate) fn span_is_steady(s: &Span) -> bool {
    !s.method.starts_with("whole log")
}

/// Diagnose from log evidence alone.
pub fn diagnose(ev: &Evidence) -> Report {
    diagnose_with(ev, &Context::default())
}

/// Diagnose from log evidence and whatever else the context holds (server info, GPU memory,
/// model config, client records).
pub fn diagnose_with(ev: &Evidence, ctx: &Context) -> Report {
    // No batch lines but a polled server: judge from its gauges.
    let with_metrics;
    let ev = match &ctx.metrics {
        Some(m) if ev.schedulers.is_empty() && !m.samples.is_empty() => {
            with_metrics = ev.with_metrics_scheduler(m);
            &with_metrics
        }
        _ => ev,
    };
    let (consolidated, join_notes) = ev.consolidated();
    let ev = &consolidated;
    let capacity = capacity_of(ev, ctx);
    let analyses: Vec<SchedAnalysis<'_>> = ev
        .schedulers
        .iter()
        .map(|(k, tl)| analyse(*k, tl, &capacity))
        .collect();

    let inputs: Vec<InputSummary> = ev
        .sources
        .iter()
        .map(|s| {
            let st = s.stats.clone().unwrap_or_default();
            InputSummary {
                name: s.name.clone(),
                lines: st.lines,
                events: st.events,
                prefill_lines: st.prefill_lines,
                decode_lines: st.decode_lines,
                other_lines: st.other_lines,
                malformed_lines: st.malformed_lines,
                malformed: st
                    .malformed
                    .iter()
                    .map(|(l, r, x)| format!("{}:{l}: {r}: {x}", s.name))
                    .collect(),
            }
        })
        .collect();

    let span_s = analyses
        .iter()
        .filter_map(|a| a.span.as_ref().map(|s| s.end_s - s.start_s))
        .reduce(f64::max);
    let retractions = retraction_summary(ev, span_s);
    let mut findings = Vec::new();
    let mut not_concluded = Vec::new();

    // The overall bottleneck: the verdict of the scheduler(s) carrying the most batch lines,
    // with KV-cache bound winning ties because it is the one that caps every rank.
    let mut bottleneck = overall(&analyses);
    let weak = matches!(
        bottleneck,
        Bottleneck::ClientBound | Bottleneck::Inconclusive | Bottleneck::NoSchedulerLines
    );
    let long_stall = has_long_stall(&analyses);
    let slow = slowest_decode(&analyses);
    let decode_weak = weak
        || matches!(
            bottleneck,
            Bottleneck::PrefillBound | Bottleneck::SchedulerConservative
        );
    if decode_weak
        && !long_stall
        && ev.watchdog.count == 0
        && slow.as_ref().is_some_and(|s| s.1 < SLOW_DECODE_TOK_PER_REQ)
    {
        bottleneck = Bottleneck::DecodeComputeBound;
    }
    let slow_prefill = slowest_prefill(ev, &analyses);
    if decode_weak
        && bottleneck != Bottleneck::DecodeComputeBound
        && !long_stall
        && ev.watchdog.count == 0
        && slow_prefill.is_some()
    {
        bottleneck = Bottleneck::PrefillComputeBound;
    }
    if weak && (long_stall || ev.watchdog.count > 0) {
        bottleneck = Bottleneck::Stall;
    } else if weak && retractions.events > 0 {
        // The pool ran out during decode: at its peak the run was KV-bound even if the queue was short.
        bottleneck = Bottleneck::KvCacheBound;
    }

    for a in &analyses {
        if a.bottleneck == bottleneck {
            if let Some(f) = bottleneck_finding(ev, a, &capacity, &retractions) {
                findings.push(f);
            }
            break;
        }
    }
    // In a stall the crawl is a symptom of the hang, reported by the stall findings.
    if let Some((name, per_req)) = slow
        .filter(|s| s.1 < SLOW_DECODE_TOK_PER_REQ)
        .filter(|_| bottleneck != Bottleneck::Stall)
    {
        findings.push(Finding {
            kind: FindingKind::DecodeComputeBound,
            title: "Decode is extremely slow per running request".into(),
            detail: format!(
                "On {name} each running request gains only {per_req:.2} tok/s (median of gen throughput / running requests over the decode lines); \
                 a healthy server gives each several tokens per second even in large batches. Look for decode running without CUDA graphs \
                 (cuda graph: False; --cuda-graph-max-bs below the batch), CPU or host offload, a hung collective, or a broken kernel."
            ),
            figures: vec![Figure::new("decode speed per running request", per_req, "tok/s")],
            evidence: Vec::new(),
            confidence: Confidence::Medium,
        });
    }
    if let Some(p) = &slow_prefill {
        findings.push(Finding {
            kind: FindingKind::PrefillComputeBound,
            title: "Prefill is extremely slow".into(),
            detail: format!(
                "On {}, consecutive {}-token prefill chunks (one request at a time) are {:.0} s apart: {:.0} tok/s of prefill \
                 (median over {} chunk pairs), where a GPU prefills thousands of tokens per second even for a single request. \
                 Nothing waits, so this is not load or memory: look for MoE experts or layers offloaded to the CPU \
                 (--cpu-offload-gb, expert offload), kernels falling back to a slow path, or a device that is not the one you expect. \
                 A prompt of N tokens needs about N / {:.0} seconds before its first token.",
                p.scheduler, p.chunk_tokens, p.seconds_per_chunk, p.tok_per_s, p.pairs, p.tok_per_s
            ),
            figures: vec![
                Figure::new("prefill speed", p.tok_per_s, "tok/s"),
                Figure::new("prefill chunk", p.chunk_tokens as f64, "tokens"),
                Figure::new("seconds per chunk", p.seconds_per_chunk, "s"),
            ],
            evidence: p.evidence.clone().into_iter().collect(),
            confidence: if p.pairs >= 3 { Confidence::High } else { Confidence::Medium },
        });
    }
    prefill_interference(ev, &analyses, &capacity, &mut findings);
    stall_findings(ev, &analyses, &mut findings);
    retraction_finding(ev, &retractions, &mut findings);
    failure_findings(ev, &mut findings);
    idle_artifact_findings(ev, &analyses, &mut findings);
    graph_findings(ev, &analyses, &mut findings);
    dp_imbalance(ev, &analyses, &mut findings);
    ramp_only(ev, &analyses, &mut findings);
    tiny_pool(ev, &analyses, &capacity, &mut findings);

    let steady_gen_throughput = steady_throughput(&analyses);
    // The primary scheduler: the one with the most decode lines.
    let primary = analyses.iter().max_by_key(|a| a.tl.decode.pushed());
    // The steady span as the log's clock can place it: a line stamped in whole seconds happened
    // somewhere within that second, so the span reaches to the end of its last second.
    let steady = primary.and_then(|a| {
        a.span.as_ref().map(|s| extended::SteadyClock {
            start_s: s.steady_start_s,
            end_s: s.steady_end_s + s.timestamp_resolution_s,
            resolution_s: s.timestamp_resolution_s,
        })
    });
    let running_median = primary.and_then(|a| a.running.median);
    let in_system_mean = primary.and_then(|a| Some(a.running.mean? + a.queued.mean.unwrap_or(0.0)));
    // A benchmark's summary stands for the client when no client file has times.
    let benchmark_runs = bench::collect_runs(ev, ctx);
    let client = if benchmark_runs.is_empty() || bench::clients_have_times(ctx) {
        extended::client_summary(
            ev,
            ctx,
            steady,
            steady_gen_throughput.as_ref(),
            running_median,
            in_system_mean,
            &mut findings,
        )
    } else {
        bench::client_summary(&benchmark_runs, steady_gen_throughput.as_ref())
    };
    let mut bench_findings = Vec::new();
    bench::findings(
        &benchmark_runs,
        bottleneck,
        capacity.max_running_requests,
        &mut bench_findings,
    );
    // Failures that dominate a run come before everything else: the run measured is not the
    // one asked for.
    let (first, rest): (Vec<Finding>, Vec<Finding>) = bench_findings.into_iter().partition(|f| {
        f.kind == FindingKind::BenchmarkFailures && f.confidence == Confidence::High
    });
    findings.splice(0..0, first);
    findings.extend(rest);
    let cached_share = primary.and_then(|a| {
        let agg = &a.tl.agg;
        let total = agg.prefill_cached_tokens + agg.prefill_new_tokens;
        (total > 0).then(|| agg.prefill_cached_tokens as f64 / total as f64)
    });
    let capacity_model = match extended::capacity_model(ev, ctx, &capacity, cached_share) {
        Ok(cm) => {
            extended::capacity_findings(&cm, &mut findings);
            Some(cm)
        }
        Err(why) => {
            not_concluded.push(format!("No KV what-if table: {why}."));
            None
        }
    };
    let projection =
        primary.and_then(|a| extended::projection(a.tl.decode.samples(), capacity_model.as_ref()));
    let load = primary.and_then(|a| {
        Some(extended::Load {
            running_median: a.running.median?,
            usage_median: a.usage.median?,
            usage_p90: a.usage.p90,
            max_running_requests: running_cap(&capacity),
        })
    });
    let recommendations = extended::recommendations(
        bottleneck,
        capacity_model.as_ref(),
        projection.as_ref(),
        client.as_ref(),
        &retractions,
        load.as_ref(),
    );

    for i in inputs
        .iter()
        .filter(|i| i.lines == 0 && !i.name.ends_with("/metrics"))
    {
        not_concluded.push(format!("{} is empty: it holds no lines at all.", i.name));
    }
    if ev.schedulers.is_empty() {
        not_concluded.push(
            "No SGLang scheduler lines (Prefill batch / Decode batch) were found, so nothing about the server's load can be concluded."
                .into(),
        );
    } else if steady_gen_throughput.is_none() {
        not_concluded.push(
            "No scheduler has two or more timestamped decode lines, so no throughput over time can be given.".into(),
        );
    }
    if capacity.max_total_num_tokens.is_none() {
        not_concluded.push(
            "The startup lines (max_total_num_tokens=...) are not in the log and no server info was given, so the KV pool size is known only through token usage.".into(),
        );
    }
    match (&ctx.gpu, &ctx.gpu_unavailable) {
        (Some(_), _) => {}
        (None, Some(why)) => not_concluded.push(format!("GPU memory could not be read ({why}); free memory comes from the log only.")),
        (None, None) => not_concluded.push(
            "No GPU memory data was given (--gpu / --gpu-snapshot): free memory comes from the log's startup lines only.".into(),
        ),
    }
    if ctx.clients.is_empty() && benchmark_runs.is_empty() {
        not_concluded.push("No client records were given (--client-records / --client-log): the client-side rate cannot be compared with the server's.".into());
    } else if client
        .as_ref()
        .is_some_and(|c| c.format == ClientFormat::BenchmarkSummary.label())
    {
        not_concluded.push("The client evidence is a benchmark's summary: whole-run figures only, so the client's rate over time (and its steady window) cannot be measured.".into());
    } else if client
        .as_ref()
        .map(|c| c.windowed_req_per_s.is_none())
        .unwrap_or(true)
    {
        not_concluded.push("The client records carry no completion times, so the client's own rate over time cannot be measured (lengths are still used).".into());
    }
    if let Some(e) = &ctx.model_error {
        not_concluded.push(format!("The model config could not be used: {e}."));
    }
    not_concluded.extend(ctx.source_errors.iter().cloned());
    // What went wrong with the inputs themselves comes first: it explains the rest.
    let (mut lead, rest): (Vec<String>, Vec<String>) = not_concluded
        .into_iter()
        .partition(|n| n.ends_with("holds no lines at all.") || ctx.source_errors.contains(n));
    lead.extend(rest);
    let not_concluded = lead;
    let mut sources = join_notes;
    if let Some(s) = &ctx.server {
        sources.push(format!("server info: {}", s.source));
    }
    if let Some(m) = &ctx.metrics {
        sources.push(format!(
            "/metrics: {} ({} polls)",
            m.source,
            m.samples.len()
        ));
    }
    if let Some(g) = &ctx.gpu {
        sources.push(format!("GPU memory: {}", g.source));
    }
    if let Some(m) = &ctx.model {
        sources.push(format!("model config: {}", m.source));
    }
    for c in &ctx.clients {
        sources.push(format!(
            "client: {} ({}, {} lines, {} unparsed)",
            c.source,
            c.format.label(),
            c.lines,
            c.unparsed_lines
        ));
    }

    let mut headline = headline(
        bottleneck,
        &analyses,
        steady_gen_throughput.as_ref(),
        ev,
        slow_prefill.as_ref(),
    );
    if ev.schedulers.is_empty()
        && let Some(b) = bench::headline_sentence(&benchmark_runs)
    {
        headline = b;
    }
    // A PD prefill instance runs no decode: "running 0" is its nature, its work is prefill.
    if matches!(
        bottleneck,
        Bottleneck::ClientBound | Bottleneck::Inconclusive
    ) && let Some(p) = pd_prefill_sentence(ev, &analyses)
    {
        headline.push_str(&p);
    }
    // A burst's start is not its steady state: the verdict holds for the ramp only.
    if let Some(f) = findings.iter().find(|f| f.kind == FindingKind::RampOnly) {
        let fig = |name: &str| {
            f.figures
                .iter()
                .find(|g| g.name == name)
                .and_then(|g| g.value)
                .map_or_else(|| "?".to_string(), |v| format!("{v:.0}"))
        };
        headline.push_str(&format!(
            " This log holds only the ramp-up of a burst (running {} → {}, queue {} → {}): the steady state is not in it; capture a longer log for the rates.",
            fig("running requests at start"),
            fig("running requests at end"),
            fig("queued requests at start"),
            fig("queued requests at end")
        ));
    }
    for b in &ev.benchmarks {
        if let Some(src) = ev.sources.get(b.source) {
            sources.push(format!(
                "benchmark summary: {}:{}-{}",
                src.name, b.summary.first_line, b.summary.last_line
            ));
        }
    }
    Report {
        schema_version: SCHEMA_VERSION,
        inputs,
        bottleneck,
        headline,
        schedulers: analyses.iter().map(|a| summary_of(ev, a)).collect(),
        steady_gen_throughput,
        capacity,
        retractions,
        findings,
        not_concluded,
        client,
        benchmark_runs,
        capacity_model,
        projection,
        recommendations,
        sources,
        server_metrics: ctx.metrics.as_ref().and_then(metrics_summary),
    }
}

fn metrics_summary(m: &crate::context::MetricsFacts) -> Option<MetricsSummary> {
    let first = m.samples.first()?;
    let last = m.samples.last()?;
    let span_s = last.t - first.t;
    let generated_tok_per_s = match (first.generation_tokens_total, last.generation_tokens_total) {
        (Some(a), Some(b)) if span_s > 0.0 && b >= a => Some((b - a) / span_s),
        _ => None,
    };
    Some(MetricsSummary {
        source: m.source.clone(),
        samples: m.samples.len(),
        span_s,
        running: last.running,
        queued: last.queued,
        token_usage: last.token_usage,
        gen_throughput: last.gen_throughput,
        generated_tok_per_s,
        ttft_p50_s: last.ttft_p50_s,
        ttft_p90_s: last.ttft_p90_s,
        itl_p50_s: last.itl_p50_s,
        e2e_p50_s: last.e2e_p50_s,
    })
}

fn overall(analyses: &[SchedAnalysis<'_>]) -> Bottleneck {
    if analyses.is_empty() {
        return Bottleneck::NoSchedulerLines;
    }
    let mut votes: Vec<(Bottleneck, u64)> = Vec::new();
    for a in analyses {
        let w = a.steady.len() as u64;
        match votes.iter_mut().find(|(b, _)| *b == a.bottleneck) {
            Some(v) => v.1 += w,
            None => votes.push((a.bottleneck, w)),
        }
    }
    let priority = |b: Bottleneck| match b {
        Bottleneck::KvCacheBound => 0,
        Bottleneck::RunningCapBound => 1,
        Bottleneck::PdTransferBound => 2,
        Bottleneck::PrefillBound => 3,
        Bottleneck::SchedulerConservative => 4,
        Bottleneck::Stall => 5,
        Bottleneck::DecodeComputeBound | Bottleneck::PrefillComputeBound => 5,
        Bottleneck::ClientBound => 6,
        Bottleneck::Inconclusive => 7,
        Bottleneck::NoSchedulerLines => 8,
    };
    votes.sort_by(|a, b| b.1.cmp(&a.1).then(priority(a.0).cmp(&priority(b.0))));
    // Any rank that is KV-bound bounds the whole server under DP attention: report it when it
    // holds at least a quarter of the lines.
    let total: u64 = votes.iter().map(|v| v.1).sum();
    if let Some(kv) = votes.iter().find(|v| v.0 == Bottleneck::KvCacheBound)
        && kv.1 * 4 >= total
    {
        return Bottleneck::KvCacheBound;
    }
    votes[0].0
}

/// Clauses with their numbers, leaving out what is unknown (never `?` in a sentence).
fn clause(template: &str, v: Option<f64>, digits: usize) -> Option<String> {
    v.filter(|x| x.is_finite())
        .map(|x| template.replace("{}", &format!("{x:.digits$}")))
}

fn join_clauses(parts: Vec<Option<String>>) -> String {
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    match parts.len() {
        0 => String::new(),
        1 => parts[0].clone(),
        _ => format!(
            "{} and {}",
            parts[..parts.len() - 1].join(", "),
            parts[parts.len() - 1]
        ),
    }
}

fn headline(
    b: Bottleneck,
    analyses: &[SchedAnalysis<'_>],
    tput: Option<&Rate>,
    ev: &Evidence,
    slow_prefill: Option<&SlowPrefill>,
) -> String {
    let a = analyses.iter().find(|a| a.bottleneck == b);
    // DP ranks are separate schedulers: give the per-rank figure and the total.
    let dp_ranks = analyses.iter().filter(|x| x.key.dp.is_some()).count();
    let per_rank = if dp_ranks > 1 { " per DP rank" } else { "" };
    let run = a.and_then(|a| a.running.median);
    let run_total: Option<f64> =
        (dp_ranks > 1).then(|| analyses.iter().filter_map(|x| x.running.median).sum());
    let run_s = match (run, run_total) {
        (Some(r), Some(t)) => Some(format!(
            "~{r:.0} requests run{per_rank} (~{t:.0} over {dp_ranks} ranks)"
        )),
        (Some(r), None) if r.round() == 1.0 => Some("~1 request runs".to_string()),
        (Some(r), None) => Some(format!("~{r:.0} requests run")),
        _ => None,
    };
    // Queue: the median, or the peak when the median is 0 but requests did wait.
    let q_med = a.and_then(|a| a.queued.median);
    let q_peak = a.and_then(|a| a.queued.max);
    let wait_s = match (q_med, q_peak) {
        (Some(m), _) if m >= 1.0 => Some(format!("~{m:.0} wait")),
        (_, Some(p)) if p >= 1.0 => Some(format!("up to {p:.0} wait (none most of the time)")),
        (Some(_), _) => Some("nothing waits".to_string()),
        _ => None,
    };
    let usage_s = clause("token usage ~{}", a.and_then(|a| a.usage.median), 2);
    let body = match b {
        Bottleneck::KvCacheBound => {
            if a.is_none() && ev.retraction_totals.events > 0 {
                format!("KV-cache bound: the KV pool ran out during decode ({} retraction events).", ev.retraction_totals.events)
            } else {
                format!("KV-cache bound: {}.", join_clauses(vec![usage_s, run_s, wait_s]))
            }
        }
        Bottleneck::RunningCapBound => format!(
            "Running-request cap bound: the batch stays at its ceiling of {}{}.",
            a.and_then(|a| a.running.max).map(|m| format!("~{m:.0} requests")).unwrap_or_else(|| "its cap".into()),
            {
                let rest = join_clauses(vec![wait_s, usage_s]);
                if rest.is_empty() { String::new() } else { format!(" while {rest}") }
            }
        ),
        Bottleneck::PrefillBound => format!(
            "Prefill bound: prefill batches run at their size limit{}.",
            {
                let rest = join_clauses(vec![wait_s, usage_s]);
                if rest.is_empty() { String::new() } else { format!(" while {rest}") }
            }
        ),
        Bottleneck::SchedulerConservative => format!(
            "Scheduler too conservative: {} although {}.",
            wait_s.unwrap_or_else(|| "requests wait".into()),
            usage_s.unwrap_or_else(|| "the KV cache has room".into())
        ),
        Bottleneck::PdTransferBound => "PD disaggregation: requests pile up waiting for KV pre-allocation / bootstrap on the decode side.".to_string(),
        Bottleneck::ClientBound => format!(
            "Client too slow / not enough load: {}.",
            join_clauses(vec![wait_s.or(Some("nothing waits".into())), run_s, usage_s])
        ),
        Bottleneck::Stall if !has_long_stall(analyses) && ev.watchdog.count > 0 => {
            "Stall: the scheduler watchdog fired: a scheduler hung (see the watchdog finding for where).".to_string()
        }
        Bottleneck::Stall => "Stall: requests are running but tokens stopped moving (or the scheduler hung).".to_string(),
        Bottleneck::PrefillComputeBound => format!(
            "Prefill compute bound: {} with nothing queued{}.",
            slow_prefill.map_or_else(
                || "prefill crawls".to_string(),
                |p| format!(
                    "{}-token prefill chunks take ~{:.0} s each (~{:.0} tok/s)",
                    p.chunk_tokens, p.seconds_per_chunk, p.tok_per_s
                )
            ),
            {
                let rest = join_clauses(vec![run_s, usage_s]);
                if rest.is_empty() { String::new() } else { format!(" while {rest}") }
            }
        ),
        Bottleneck::DecodeComputeBound => format!(
            "Decode compute bound: decode is extremely slow per request{}.",
            {
                let rest = join_clauses(vec![run_s, usage_s]);
                if rest.is_empty() { String::new() } else { format!(" while {rest}") }
            }
        ),
        Bottleneck::Inconclusive => "Inconclusive: the batch lines do not point to one bottleneck.".to_string(),
        Bottleneck::NoSchedulerLines => "No SGLang scheduler lines were found in the input.".to_string(),
    };
    // The logged gen throughput while busy vs the average over wall time (idle gaps included).
    let busy = a.and_then(|a| a.gen_tps.median);
    let tput_s = tput
        .map(|r| {
            let ci = match (r.low, r.high) {
                (Some(l), Some(h)) => format!("95% interval {l:.0}-{h:.0}, "),
                _ => String::new(),
            };
            match busy {
                Some(m) if r.value < 0.5 * m && dp_ranks <= 1 => format!(
                    " The server averages {:.0} tok/s over {} ({ci}idle gaps included); while decoding it runs at ~{m:.0} tok/s.",
                    r.value,
                    fmt_duration(r.window_s)
                ),
                _ if r.method.contains("no steady state") => format!(
                    " Server generates {:.0} tok/s averaged over the whole log ({ci}over {}; no steady state found).",
                    r.value,
                    fmt_duration(r.window_s)
                ),
                _ => format!(" Server generates {:.0} tok/s in steady state ({ci}over {}).", r.value, fmt_duration(r.window_s)),
            }
        })
        .unwrap_or_default();
    format!("{body}{tput_s}")
}

/// `7087 s` → `1.97 h`; short spans stay in seconds.
pub fn fmt_duration(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.2} h", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

fn bottleneck_finding(
    ev: &Evidence,
    a: &SchedAnalysis<'_>,
    cap: &CapacitySummary,
    retr: &RetractionSummary,
) -> Option<Finding> {
    let mut figures = a.reasons.clone();
    if let Some(v) = a.running.median {
        figures.push(Figure::new("median running requests", v, "requests"));
    }
    if let Some(v) = a.queued.median {
        figures.push(Figure::new("median queued requests", v, "requests"));
    }
    if let Some(v) = a.usage.p90 {
        figures.push(Figure::new("p90 token usage", v, "fraction"));
    }
    if let Some(v) = a.gen_tps.mean {
        figures.push(Figure::new(
            format!("mean gen throughput of {}", a.key),
            v,
            "tok/s",
        ));
    }
    let evidence = range(ev, &a.key, a.tl);
    let (kind, title, detail, confidence) = match a.bottleneck {
        Bottleneck::KvCacheBound => {
            let pool = cap.max_total_num_tokens;
            let per_req = match (a.usage.median, pool, a.running.median) {
                (Some(u), Some(p), Some(r)) if r > 0.0 => Some(u * p as f64 / r),
                _ => None,
            };
            if let Some(x) = per_req {
                figures.push(Figure::new("KV tokens held per running request", x, "tokens"));
            }
            let usage_s = match (a.usage.p90, a.usage.median) {
                (Some(p), Some(m)) => format!("Token usage reaches {p:.2} (90th percentile; median {m:.2})"),
                _ => format!("Token usage sits at or above {KV_FULL_USAGE}"),
            };
            let queue_s = match (a.queued.median, a.queued.max) {
                (Some(m), _) if m >= 1.0 => format!(" while ~{m:.0} requests queue"),
                (_, Some(x)) if x >= 1.0 => format!(" and up to {x:.0} requests queue at times"),
                _ => String::new(),
            };
            let detail = format!(
                "{usage_s}{queue_s}{}: admission stops when the pool cannot hold another request's prompt plus its reserved output, so only what fits decodes at once. \
                 More requests can decode at once only with more KV slots: a larger mem_fraction_static (each +0.01 adds 1% of the GPU's memory, but only if that much is free after activations and CUDA graphs), \
                 an fp8 KV cache (kv_cache_dtype=fp8_e4m3 halves bytes per token), more GPUs (DP), or shorter max_tokens; the what-if table checks each against the free memory when the model config and GPU memory are given. \
                 Host-RAM hierarchical cache (HiCache) extends the prefix cache only and does not raise decode concurrency.{}",
                if retr.events > 0 { format!(", and the pool ran out {} times (retractions)", retr.events) } else { String::new() },
                pool.map(|p| format!(" The pool holds {p} tokens per DP rank.")).unwrap_or_default()
            );
            // Sure when requests wait at a nearly full pool, or the pool ran out (retractions).
            let sure = retr.events > 0
                || (a.queued.median.is_some_and(|q| q >= 1.0)
                    && a.usage.median.is_some_and(|u| u >= CONSERVATIVE_USAGE));
            let confidence = if sure { Confidence::High } else { Confidence::Medium };
            (FindingKind::KvCacheBound, "KV-cache bound".to_string(), detail, confidence)
        }
        Bottleneck::RunningCapBound => (
            FindingKind::RunningCapBound,
            "Running-request cap bound".to_string(),
            {
                let mamba_full = a.tl.agg.max_mamba_usage.is_some_and(|m| m >= 0.99);
                format!(
                    "The running batch stays at its ceiling{} and the KV cache has room{}.{} Raise it if memory allows; \
                     if the client's concurrency equals this cap, raise both together, since either alone changes nothing.",
                    if a.queued.median.is_some_and(|q| q >= 1.0) { " while requests queue" } else { "" },
                    cap.max_running_requests.map(|c| format!(" (max_running_requests={c} per DP rank)")).unwrap_or_default(),
                    if mamba_full {
                        " Mamba usage reaches 1.00: the mamba state slots of this hybrid model are full, so they cap the batch as much as max_running_requests: the mamba state cache must grow with it."
                    } else {
                        ""
                    }
                )
            },
            Confidence::Medium,
        ),
        Bottleneck::PrefillBound => {
            if let Some(c) = cap.chunked_prefill_size {
                figures.push(Figure::new("chunked_prefill_size", c as f64, "tokens"));
            }
            if let Some(m) = cap.max_prefill_tokens {
                figures.push(Figure::new("max_prefill_tokens", m as f64, "tokens"));
            }
            if let Some(m) = a.tl.agg.max_prefill_new_tokens {
                figures.push(Figure::new("largest prefill batch", m as f64, "tokens"));
            }
            // A budget below one prompt: the first request of a batch may exceed
            // max_prefill_tokens (spec §6, schedule_policy.py PrefillAdder), so every prefill
            // batch holds exactly one request.
            let seqs: Vec<u64> = a.steady_prefill.iter().filter_map(|p| p.new_seq).collect();
            let prompt: Vec<u64> = a.steady_prefill.iter().filter_map(|p| p.new_token).collect();
            let one_each = !seqs.is_empty() && seqs.iter().all(|&n| n == 1);
            let budget_below_prompt = match (cap.max_prefill_tokens, prompt.iter().min()) {
                (Some(b), Some(&p)) if one_each && p > b => Some((b, median_u64(&prompt))),
                _ => None,
            };
            let detail = match budget_below_prompt {
                Some((budget, p)) => format!(
                    "max_prefill_tokens ({budget}) is below one prompt (~{p} tokens): SGLang admits the first request of a prefill batch whatever its size, \
                     so every prefill batch holds exactly one request and requests are admitted one per prefill pass while the queue waits. \
                     Raise --max-prefill-tokens to a few prompts (e.g. {}) so that one pass admits several; it costs activation memory and longer decode pauses.",
                    p * 4
                ),
                None => "Prefill batches run at their token limit (chunked_prefill_size / max_prefill_tokens) while the queue waits and the KV cache has room: requests are admitted only as fast as prompts are prefilled. \
                 A larger --chunked-prefill-size and --max-prefill-tokens admit more per batch (more activation memory; longer decode pauses), or PD disaggregation separates prefill from decode."
                    .to_string(),
            };
            (
                FindingKind::PrefillBound,
                "Prefill bound: admission is limited by the prefill batch size".to_string(),
                detail,
                Confidence::Medium,
            )
        }
        Bottleneck::SchedulerConservative => (
            FindingKind::SchedulerConservative,
            "Scheduler too conservative".to_string(),
            format!(
                "Requests queue while token usage stays below {CONSERVATIVE_USAGE}-{KV_FULL_USAGE}. SGLang reserves KV for each request's remaining max_new_tokens (x new_token_ratio) before admitting more; \
                 large max_tokens make it hold back. Lower --schedule-conservativeness (e.g. 0.5-0.8) or send realistic max_tokens; watch for retractions afterwards."
            ),
            Confidence::Medium,
        ),
        Bottleneck::PdTransferBound => (
            FindingKind::PdTransferBound,
            "PD transfer / pre-allocation bound".to_string(),
            "On this prefill server the bootstrap/pre-allocation queue grows while almost nothing is computed: requests wait for the decode side to hand-shake and pre-allocate KV. Check the decode server's KV usage and the transfer backend."
                .to_string(),
            Confidence::Medium,
        ),
        Bottleneck::ClientBound => (
            FindingKind::ClientBound,
            "Client too slow / not enough load".to_string(),
            "Nearly nothing waits in the queue and the KV cache has room: the server runs what it is given. More throughput needs more concurrent requests from the client (raise its concurrency), not server tuning."
                .to_string(),
            Confidence::Medium,
        ),
        _ => return None,
    };
    // A handful of lines is an excerpt, not a run: never high confidence.
    let confidence = if a.steady.len() < MIN_LINES_FOR_HIGH_CONFIDENCE {
        confidence.min(Confidence::Medium)
    } else {
        confidence
    };
    Some(Finding {
        kind,
        title,
        detail,
        figures,
        evidence,
        confidence,
    })
}

/// A scheduler whose prefill chunks crawl.
struct SlowPrefill {
    scheduler: String,
    tok_per_s: f64,
    chunk_tokens: u64,
    seconds_per_chunk: f64,
    pairs: usize,
    evidence: Option<SourceRange>,
}

/// The slowest prefill among schedulers whose consecutive prefill lines are chunks of one long
/// prompt on an otherwise idle server: `#new-seq: 1`, the same `#new-token` of at least
/// [`MIN_CHUNK_TOKENS`] (the chunk size), nothing running or queued. Such lines follow each
/// other without idle time or decode steps, so chunk tokens over the time to the next line is
/// the prefill speed. `Some` only when its median over at least
/// two pairs is below [`SLOW_PREFILL_TOK_PER_S`].
fn slowest_prefill(ev: &Evidence, analyses: &[SchedAnalysis<'_>]) -> Option<SlowPrefill> {
    analyses
        .iter()
        .filter_map(|a| {
            let p = a.tl.prefill.samples();
            let mut rates = Vec::new();
            let mut lines = (u64::MAX, 0u64);
            for w in p.windows(2) {
                let (x, y) = (&w[0], &w[1]);
                let (Some(chunk), Some(t0), Some(t1)) =
                    (x.new_token.filter(|&n| n >= MIN_CHUNK_TOKENS), x.t, y.t)
                else {
                    continue;
                };
                // Nothing else runs or waits: no decode step, no other request's prefill in
                // between, so the gap is this chunk's compute.
                let same = x.new_seq == Some(1)
                    && y.new_token == Some(chunk)
                    && x.queue.unwrap_or(0) == 0
                    && x.running == Some(0)
                    && y.running == Some(0);
                let dt = t1 - t0;
                if same && dt > 0.0 {
                    rates.push((chunk as f64 / dt, chunk, dt));
                    lines = (lines.0.min(x.line), lines.1.max(y.line));
                }
            }
            if rates.len() < 2 {
                return None;
            }
            rates.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
            let (tok_per_s, chunk_tokens, seconds_per_chunk) = rates[rates.len() / 2];
            (tok_per_s < SLOW_PREFILL_TOK_PER_S).then(|| SlowPrefill {
                scheduler: a.key.to_string(),
                tok_per_s,
                chunk_tokens,
                seconds_per_chunk,
                pairs: rates.len(),
                evidence: a.tl.first.map(|l| SourceRange {
                    source: ev
                        .sources
                        .get(l.source)
                        .map(|s| s.name.clone())
                        .unwrap_or_default(),
                    first_line: lines.0,
                    last_line: lines.1,
                }),
            })
        })
        .min_by(|x, y| {
            x.tok_per_s
                .partial_cmp(&y.tok_per_s)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
}

/// The scheduler whose decode is slowest per running request: (name, median tok/s per request).
fn slowest_decode(analyses: &[SchedAnalysis<'_>]) -> Option<(String, f64)> {
    analyses
        .iter()
        .filter_map(|a| {
            let mut v: Vec<f64> =
                a.tl.decode
                    .samples()
                    .iter()
                    .filter_map(|d| {
                        let r = d.running? as f64;
                        let g = d.gen_tps?;
                        (r > 0.0 && g > 0.0).then(|| g / r)
                    })
                    .collect();
            if v.is_empty() {
                return None;
            }
            v.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
            Some((a.key.to_string(), v[v.len() / 2]))
        })
        .min_by(|x, y| x.1.partial_cmp(&y.1).unwrap_or(std::cmp::Ordering::Equal))
}

/// Decode throughput lost while prefills run: SGLang's gen throughput of a decode line covers
/// the wall time since the previous decode line, prefill passes included (spec §2.1.2), so the
/// lines whose interval held a prefill read lower. Loss = 1 − (time-weighted mean over all decode
/// intervals) / (mean over intervals without a prefill).
fn prefill_interference(
    ev: &Evidence,
    analyses: &[SchedAnalysis<'_>],
    cap: &CapacitySummary,
    out: &mut Vec<Finding>,
) {
    for a in analyses {
        let obs = merged_obs(a.tl);
        let decode: std::collections::HashMap<u64, &DecodeSample> =
            a.tl.decode.samples().iter().map(|d| (d.line, d)).collect();
        let (mut clean, mut mixed) = (Vec::new(), Vec::new());
        let mut prefill_since_last = false;
        let mut prev_t: Option<f64> = None;
        for o in &obs {
            match decode.get(&o.line) {
                Some(d) if d.t.is_some() => {
                    if let (Some(g), Some(t), Some(p)) = (d.gen_tps, d.t, prev_t) {
                        let dt = t - p;
                        if dt > 0.0 && dt < IDLE_GAP_S {
                            if prefill_since_last {
                                mixed.push((g, dt))
                            } else {
                                clean.push((g, dt))
                            }
                        }
                    }
                    prev_t = d.t;
                    prefill_since_last = false;
                }
                Some(_) => {}
                None => prefill_since_last = true,
            }
        }
        let wmean = |v: &[(f64, f64)]| {
            let w: f64 = v.iter().map(|x| x.1).sum();
            (w > 0.0).then(|| v.iter().map(|x| x.0 * x.1).sum::<f64>() / w)
        };
        let all: Vec<(f64, f64)> = clean.iter().chain(mixed.iter()).copied().collect();
        let (Some(c), Some(m), Some(t)) = (wmean(&clean), wmean(&mixed), wmean(&all)) else {
            continue;
        };
        if clean.len() < 5 || mixed.len() < 5 || c <= 0.0 {
            continue;
        }
        let loss = 1.0 - t / c;
        if loss < PREFILL_INTERFERENCE_MIN_LOSS {
            continue;
        }
        let share = mixed.iter().map(|x| x.1).sum::<f64>() / all.iter().map(|x| x.1).sum::<f64>();
        let mut figures = vec![
            Figure::new(
                "decode throughput lost to interleaved prefills",
                loss,
                "fraction",
            ),
            Figure::new(
                "share of decode wall time with a prefill in it",
                share,
                "fraction",
            ),
            Figure::new("gen throughput without prefills", c, "tok/s"),
            Figure::new("gen throughput with prefills", m, "tok/s"),
        ];
        if let Some(cp) = cap.chunked_prefill_size {
            figures.push(Figure::new("chunked_prefill_size", cp as f64, "tokens"));
        }
        out.push(Finding {
            kind: FindingKind::PrefillInterference,
            title: "Prefills interrupt decode".into(),
            detail: format!(
                "On {}, decode intervals that contain a prefill batch generate {m:.0} tok/s against {c:.0} tok/s without one; over the run that costs {:.0}% of decode throughput. \
                 Prefill passes stop decode while they run (unless --enable-mixed-chunk). A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                a.key,
                loss * 100.0
            ),
            figures,
            evidence: range(ev, &a.key, a.tl),
            confidence: Confidence::Medium,
        });
        return;
    }
}

/// A run of decode lines with running requests and `#token` unchanged for at least [`STALL_MIN_S`].
fn has_long_stall(analyses: &[SchedAnalysis<'_>]) -> bool {
    analyses.iter().any(|a| {
        frozen_runs(a.tl.decode.samples())
            .iter()
            .any(|r| r.duration_s.map(|d| d >= STALL_MIN_S).unwrap_or(false))
    })
}

/// A run of consecutive decode lines with running > 0 and the same `#token`.
struct FrozenRun {
    first: usize,
    last: usize,
    tokens: u64,
    running: u64,
    duration_s: Option<f64>,
}

/// Runs of ≥ 3 frozen lines, or ≥ 2 spanning at least [`STALL_MIN_S`].
fn frozen_runs(d: &[DecodeSample]) -> Vec<FrozenRun> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        let (Some(tok), Some(run)) = (d[i].tokens, d[i].running) else {
            i += 1;
            continue;
        };
        if run == 0 {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < d.len() && d[j].tokens == Some(tok) && d[j].running.unwrap_or(0) > 0 {
            j += 1;
        }
        let duration_s = match (d[i].t, d[j - 1].t) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        let n = j - i;
        if n >= 3 || (n >= 2 && duration_s.map(|x| x >= STALL_MIN_S).unwrap_or(false)) {
            out.push(FrozenRun {
                first: i,
                last: j - 1,
                tokens: tok,
                running: run,
                duration_s,
            });
        }
        i = j;
    }
    out
}

fn stall_findings(ev: &Evidence, analyses: &[SchedAnalysis<'_>], out: &mut Vec<Finding>) {
    for a in analyses {
        let d = a.tl.decode.samples();
        let runs = frozen_runs(d);
        // Report the longest frozen run of this scheduler.
        let Some(r) = runs.iter().max_by(|x, y| {
            (x.last - x.first).cmp(&(y.last - y.first)).then(
                x.duration_s
                    .unwrap_or(0.0)
                    .partial_cmp(&y.duration_s.unwrap_or(0.0))
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
        }) else {
            continue;
        };
        let n = r.last - r.first + 1;
        let long = r.duration_s.map(|x| x >= STALL_MIN_S).unwrap_or(false);
        // A short freeze while every line still logs a healthy gen throughput is #token counted
        // in pages (SWA / paged pools move it in steps of a page), not a stall.
        let moving = (r.first..=r.last).all(|i| {
            d[i].gen_tps
                .is_some_and(|g| g > r.running as f64 * SLOW_DECODE_TOK_PER_REQ)
        });
        if !long && moving {
            continue;
        }
        let src = a.tl.first.map(|l| l.source).unwrap_or(0);
        let mut figures = vec![
            Figure::new("decode lines with #token unchanged", n as f64, "lines"),
            Figure::new("#token", r.tokens as f64, "tokens"),
            Figure::new("running requests", r.running as f64, "requests"),
        ];
        if let Some(x) = r.duration_s {
            figures.push(Figure::new("duration", x, "s"));
        }
        out.push(Finding {
            kind: FindingKind::Stall,
            title: if long { "Stall: tokens stopped moving".into() } else { "#token frozen while requests run".into() },
            detail: format!(
                "{n} consecutive decode lines of {} report {} running request(s) but the same #token ({}){}: decode steps run without adding KV tokens. \
                 A hung step or collective, broken output (the model emitting nothing new), or a logging bug; look at what the server printed around these lines.",
                a.key,
                r.running,
                r.tokens,
                r.duration_s.map(|x| format!(" for {x:.0} s")).unwrap_or_default()
            ),
            figures,
            evidence: vec![SourceRange {
                source: ev.sources.get(src).map(|s| s.name.clone()).unwrap_or_default(),
                first_line: d[r.first].line,
                last_line: d[r.last].line,
            }],
            confidence: if long { Confidence::High } else { Confidence::Low },
        });
    }
}

fn retraction_finding(ev: &Evidence, r: &RetractionSummary, out: &mut Vec<Finding>) {
    if r.events == 0 {
        return;
    }
    let mut figures = vec![
        Figure::new("retraction events", r.events as f64, "events"),
        Figure::new("retraction lines (all ranks)", r.lines as f64, "lines"),
        Figure::new(
            "requests retracted",
            r.retracted_requests as f64,
            "requests",
        ),
    ];
    if let Some(x) = r.per_hour {
        figures.push(Figure::new("retractions per hour", x, "events/h"));
    }
    if let Some(x) = r.tokens_freed {
        figures.push(Figure::new(
            "KV slots freed by retraction",
            x as f64,
            "tokens",
        ));
    }
    if let Some(x) = r.max_ratio_after {
        figures.push(Figure::new(
            "highest new_token_ratio after a retraction",
            x,
            "ratio",
        ));
    }
    let thrash = r.per_hour.map(|x| x >= THRASH_PER_HOUR).unwrap_or(false);
    let first = ev.retraction_totals.first_line;
    let last = ev.retraction_totals.last_line;
    let evidence = match (first, last) {
        (Some(a), Some(b)) if a.source == b.source => vec![SourceRange {
            source: ev
                .sources
                .get(a.source)
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            first_line: a.line,
            last_line: b.line,
        }],
        _ => Vec::new(),
    };
    out.push(Finding {
        kind: FindingKind::Retraction,
        title: if thrash { "Retraction thrash".into() } else { "KV cache ran out during decode (retraction)".into() },
        detail: "The KV pool could not hold the next decode token of every running request, so SGLang retracted requests back to the queue; their generated tokens are recomputed later. \
                 It means admission was too optimistic for this pool (new_token_ratio decayed) and the pool is the limit. Frequent retraction wastes compute: raise --schedule-conservativeness, \
                 cap max_tokens, or give the KV cache more memory."
            .into(),
        figures,
        evidence,
        confidence: Confidence::High,
    });
}

fn failure_findings(ev: &Evidence, out: &mut Vec<Finding>) {
    for (lines, kind, title, detail) in [
        (
            &ev.watchdog,
            FindingKind::WatchdogTimeout,
            "Watchdog timeout: the scheduler hung",
            "A forward pass or collective took longer than --watchdog-timeout; the server aborts. Look at the lines just before it (NCCL, OOM, a stuck rank).",
        ),
        (
            &ev.kv_transfer_failures,
            FindingKind::KvTransferFailure,
            "KV transfers failed",
            "PD disaggregation could not move KV from prefill to decode servers; affected requests fail or retry. Check the transfer backend and network.",
        ),
    ] {
        if lines.count == 0 {
            continue;
        }
        out.push(Finding {
            kind,
            title: title.into(),
            detail: format!(
                "{detail} First: {}",
                lines.first_text.clone().unwrap_or_default()
            ),
            figures: vec![Figure::new("lines", lines.count as f64, "lines")],
            evidence: lines
                .first
                .map(|l| SourceRange {
                    source: ev
                        .sources
                        .get(l.source)
                        .map(|s| s.name.clone())
                        .unwrap_or_default(),
                    first_line: l.line,
                    last_line: l.line,
                })
                .into_iter()
                .collect(),
            confidence: Confidence::High,
        });
    }
}

fn idle_artifact_findings(ev: &Evidence, analyses: &[SchedAnalysis<'_>], out: &mut Vec<Finding>) {
    for a in analyses {
        let obs = merged_obs(a.tl);
        let median = a.gen_tps.median.unwrap_or(0.0);
        if median <= 0.0 {
            continue;
        }
        let mut prev_t: Option<f64> = None;
        let d_lines: std::collections::HashMap<u64, &DecodeSample> =
            a.tl.decode.samples().iter().map(|d| (d.line, d)).collect();
        let mut hits = Vec::new();
        for o in &obs {
            if let (Some(t), Some(d)) = (o.t, d_lines.get(&o.line)) {
                let after_gap = prev_t.map(|p| t - p >= IDLE_GAP_S).unwrap_or(true);
                if after_gap && d.gen_tps.map(|g| g < 0.25 * median).unwrap_or(false) {
                    hits.push((d.line, d.gen_tps.unwrap_or(0.0)));
                }
            }
            if o.t.is_some() {
                prev_t = o.t;
            }
        }
        if let Some(&(line, g)) = hits.first() {
            let src = a.tl.first.map(|l| l.source).unwrap_or(0);
            out.push(Finding {
                kind: FindingKind::IdleWindowArtifact,
                title: "Low gen throughput after idle is a measurement artifact".into(),
                detail: format!(
                    "SGLang's gen throughput divides the tokens since the previous decode line by the wall time since then, idle time included, so the first line after an idle gap reads low ({g:.2} tok/s vs a median of {median:.1} tok/s). It is not slowness; ignore it."
                ),
                figures: vec![
                    Figure::new("low readings after idle", hits.len() as f64, "lines"),
                    Figure::new("median gen throughput", median, "tok/s"),
                ],
                evidence: vec![SourceRange {
                    source: ev.sources.get(src).map(|s| s.name.clone()).unwrap_or_default(),
                    first_line: line,
                    last_line: line,
                }],
                confidence: Confidence::Medium,
            });
            return;
        }
    }
}

fn graph_findings(ev: &Evidence, analyses: &[SchedAnalysis<'_>], out: &mut Vec<Finding>) {
    for a in analyses {
        let total = a.tl.decode.pushed();
        let without = a.tl.agg.decode_without_graph;
        let with_flag =
            a.tl.decode
                .samples()
                .iter()
                .filter(|d| d.graph.is_some())
                .count();
        if total == 0 || without == 0 || with_flag == 0 {
            continue;
        }
        let share = without as f64 / total as f64;
        let with_graph_max =
            a.tl.decode
                .samples()
                .iter()
                .filter(|d| d.graph == Some(true))
                .filter_map(|d| d.running)
                .max();
        if share < 0.2 {
            continue;
        }
        let mut figures = vec![Figure::new(
            "share of decode lines without a graph",
            share,
            "fraction",
        )];
        if let Some(m) = with_graph_max {
            figures.push(Figure::new(
                "largest batch that ran with a graph",
                m as f64,
                "requests",
            ));
        }
        let src = a.tl.first.map(|l| l.source).unwrap_or(0);
        let disabled = ev
            .startup
            .server_args
            .get("disable_cuda_graph")
            .is_some_and(|v| v.trim() == "True");
        out.push(Finding {
            kind: FindingKind::NoCudaGraph,
            title: "Decode runs without CUDA graphs".into(),
            detail: if disabled {
                format!(
                    "{:.0}% of decode batches of {} ran without a captured graph: the server was started with disable_cuda_graph=True, so every decode step runs eagerly. \
                     Remove --disable-cuda-graph (graphs cost some memory and start-up time) unless it was set to work around a bug.",
                    share * 100.0,
                    a.key
                )
            } else {
                format!(
                    "{:.0}% of decode batches of {} ran without a captured graph{}: batches larger than --cuda-graph-max-bs (or graphs disabled) run eagerly and each step is slower. Raise --cuda-graph-max-bs to the running batch size if memory allows.",
                    share * 100.0,
                    a.key,
                    with_graph_max.map(|m| format!(" (graphs were used up to {m} requests)")).unwrap_or_default()
                )
            },
            figures,
            evidence: a.tl.first.map(|f| SourceRange {
                source: ev.sources.get(src).map(|s| s.name.clone()).unwrap_or_default(),
                first_line: f.line,
                last_line: a.tl.last.map(|l| l.line).unwrap_or(f.line),
            }).into_iter().collect(),
            confidence: Confidence::Medium,
        });
        return;
    }
}

fn dp_imbalance(_ev: &Evidence, analyses: &[SchedAnalysis<'_>], out: &mut Vec<Finding>) {
    let dp: Vec<(String, f64)> = analyses
        .iter()
        .filter(|a| a.key.dp.is_some())
        .filter_map(|a| Some((a.key.to_string(), a.running.mean?)))
        .collect();
    if dp.len() < 2 {
        return;
    }
    let max = dp.iter().map(|x| x.1).fold(f64::MIN, f64::max);
    let min = dp.iter().map(|x| x.1).fold(f64::MAX, f64::min);
    if max < 4.0 || min > 0.67 * max {
        return;
    }
    out.push(Finding {
        kind: FindingKind::DpImbalance,
        title: "Load is uneven across DP ranks".into(),
        detail: format!(
            "Mean running requests range from {min:.1} to {max:.1} across {} DP ranks: the busiest rank sets the pace. Check the router's load-balance method (e.g. --load-balance-method round_robin / shortest_queue).",
            dp.len()
        ),
        figures: vec![
            Figure::new("lowest mean running requests on a DP rank", min, "requests"),
            Figure::new("highest mean running requests on a DP rank", max, "requests"),
        ],
        evidence: Vec::new(),
        confidence: Confidence::Low,
    });
}

fn ramp_only(ev: &Evidence, analyses: &[SchedAnalysis<'_>], out: &mut Vec<Finding>) {
    for a in analyses {
        let obs = merged_obs(a.tl);
        // From the queue's peak on: a warm-up request or an idle line before the burst is not
        // part of the ramp. Only a short prefix may be skipped: the rest must be the ramp.
        let pairs: Vec<(u64, u64)> = obs
            .iter()
            .filter_map(|o| Some((o.running?, o.queue?)))
            .collect();
        let peak = pairs
            .iter()
            .enumerate()
            .max_by_key(|(i, p)| (p.1, std::cmp::Reverse(*i)))
            .map_or(0, |(i, _)| i);
        if peak > (pairs.len() / 10).max(3) {
            continue;
        }
        let run: Vec<u64> = pairs[peak..].iter().map(|p| p.0).collect();
        let q: Vec<u64> = pairs[peak..].iter().map(|p| p.1).collect();
        if run.len() < 4 || q.len() < 4 {
            continue;
        }
        let rising = run[run.len() - 1] > run[0] + 4
            && run.windows(2).filter(|w| w[1] >= w[0]).count() * 10 >= (run.len() - 1) * 8;
        let draining = q[q.len() - 1] + 4 < q[0];
        // Still climbing at the end: most lines are below the final plateau (a run that reaches
        // its ceiling early and stays there has a steady state).
        let top = run.iter().copied().max().unwrap_or(0);
        let on_plateau = run.iter().filter(|&&r| r == top).count();
        if rising && draining && on_plateau * 2 <= run.len() {
            let src = a.tl.first.map(|l| l.source).unwrap_or(0);
            out.push(Finding {
                kind: FindingKind::RampOnly,
                title: "The log shows only the ramp-up".into(),
                detail: format!(
                    "On {}, running requests climb from {} to {} while the queue drains from {} to {}: this excerpt is the start of a burst, not a steady state. Rates measured here understate the steady rate; capture a longer log.",
                    a.key, run[0], run[run.len() - 1], q[0], q[q.len() - 1]
                ),
                figures: vec![
                    Figure::new("running requests at start", run[0] as f64, "requests"),
                    Figure::new("running requests at end", run[run.len() - 1] as f64, "requests"),
                    Figure::new("queued requests at start", q[0] as f64, "requests"),
                    Figure::new("queued requests at end", q[q.len() - 1] as f64, "requests"),
                ],
                evidence: range(ev, &a.key, a.tl).into_iter().map(|mut r| {
                    r.source = ev.sources.get(src).map(|s| s.name.clone()).unwrap_or_default();
                    r
                }).collect(),
                confidence: Confidence::Medium,
            });
            return;
        }
    }
}

fn tiny_pool(
    ev: &Evidence,
    analyses: &[SchedAnalysis<'_>],
    cap: &CapacitySummary,
    out: &mut Vec<Finding>,
) {
    // Infer the pool from #token / token usage when the capacity line is missing.
    for a in analyses {
        let inferred =
            a.tl.decode
                .samples()
                .iter()
                .filter_map(|d| Some((d.tokens? as f64, d.usage?)))
                .filter(|(_, u)| *u >= 0.05)
                .map(|(t, u)| t / u)
                .next();
        let pool = cap.max_total_num_tokens.map(|p| p as f64).or(inferred);
        if let Some(p) = pool
            && p < 8192.0
            && a.agg_max_usage() >= 0.5
        {
            out.push(Finding {
                    kind: FindingKind::TinyKvPool,
                    title: "The KV pool is tiny".into(),
                    detail: format!(
                        "The pool holds only ~{p:.0} tokens (from #token / token usage), far below what a GPU normally gives: --max-total-tokens or a very low mem_fraction_static is set, or the run is a reproduction with an artificial cap. Any real load will be KV-bound."
                    ),
                    figures: vec![Figure::new("KV pool size", p, "tokens")],
                    evidence: range(ev, &a.key, a.tl),
                    confidence: Confidence::Medium,
                });
            return;
        }
    }
}

impl SchedAnalysis<'_> {
    fn agg_max_usage(&self) -> f64 {
        self.tl.agg.max_usage.unwrap_or(0.0)
    }
}
