//! Per-scheduler rows of the report, the summary of `/metrics` polls and of the scheduler's
//! per-request times.

use crate::context::{MetricsFacts, MetricsSample};
use crate::evidence::Evidence;
use crate::evidence::requests::ReqSample;
use crate::evidence::view::SchedulerView;
use crate::report::{
    Bottleneck, CapacitySummary, ForwardTimer, MetricsSummary, OccupancySummary, ReqMode,
    RequestTimesSummary, SchedulerSummary, Spread,
};
use crate::rules::{Input, admission};

pub(super) fn scheduler_summary(
    ev: &Evidence,
    v: &SchedulerView<'_>,
    capacity: &CapacitySummary,
    bottleneck: Bottleneck,
) -> SchedulerSummary {
    let agg = &v.tl.agg;
    let total_prompt = agg.prefill_cached_tokens + agg.prefill_new_tokens;
    SchedulerSummary {
        name: v.key.to_string(),
        source: v
            .key
            .source
            .and_then(|s| ev.sources.get(s))
            .map(|s| s.name.clone()),
        tp: v.tl.tp,
        decode_lines: v.tl.decode.pushed(),
        prefill_lines: v.tl.prefill.pushed(),
        duplicate_lines: v.tl.duplicate_lines,
        span: v.span.clone(),
        running: v.running,
        queued: v.queued,
        token_usage: v.usage,
        gen_throughput: v.gen_tps,
        peak_running: agg.max_running,
        peak_queued: agg.max_queue,
        peak_token_usage: agg.max_usage,
        peak_gen_throughput: agg.max_gen_tps,
        prefix_cache_share: (total_prompt > 0)
            .then(|| agg.prefill_cached_tokens as f64 / total_prompt as f64),
        pd_decode: v.is_pd_decode(),
        admission: admission::model(v, capacity),
        fwd_occupancy: (agg.occupancy_busy_lines + agg.occupancy_idle_lines > 0).then(|| {
            OccupancySummary {
                busy_mean_pct: (agg.occupancy_busy_lines > 0)
                    .then(|| agg.occupancy_busy_sum_pct / agg.occupancy_busy_lines as f64),
                busy_readings: agg.occupancy_busy_lines,
                idle_readings: agg.occupancy_idle_lines,
            }
        }),
        bottleneck,
    }
}

pub(super) fn metrics_summary(m: &MetricsFacts) -> Option<MetricsSummary> {
    let first = m.samples.first()?;
    let last = m.samples.last()?;
    let span_s = last.t - first.t;
    // A counter's increase per second between the first and the last poll that hold it; a
    // fall (a restart) is no rate.
    let per_s = |f: fn(&MetricsSample) -> Option<f64>| {
        let mut held = m.samples.iter().filter_map(|s| Some((s.t, f(s)?)));
        let (t0, a) = held.next()?;
        let (t1, b) = held.next_back()?;
        (t1 > t0 && b >= a).then(|| (b - a) / (t1 - t0))
    };
    let generated_tok_per_s = per_s(|s| s.generation_tokens_total);
    let (busy, idle) = m.samples.iter().fold((0u64, 0u64), |(b, i), s| {
        (
            b + u64::from(s.fwd_occupancy_busy),
            i + u64::from(s.fwd_occupancy_idle),
        )
    });
    // Each poll's mean weighs by the schedulers that gave a number.
    let busy_sum: f64 = m
        .samples
        .iter()
        .filter_map(|s| Some(s.fwd_occupancy_pct? * f64::from(s.fwd_occupancy_busy)))
        .sum();
    let fwd_occupancy = (busy + idle > 0).then(|| OccupancySummary {
        busy_mean_pct: (busy > 0).then(|| busy_sum / busy as f64),
        busy_readings: busy,
        idle_readings: idle,
    });
    let forward_timer = m
        .samples
        .iter()
        .rev()
        .find_map(|s| s.forward_seconds_total)
        .map(|t| {
            if t > 0.0 {
                ForwardTimer::Measured {
                    forward_s_per_s: per_s(|s| s.forward_seconds_total),
                }
            } else {
                ForwardTimer::NotEnabled
            }
        });
    let prefill_hit_share = match (
        per_s(|s| s.prefill_hit_tokens_total),
        per_s(|s| s.prefill_input_tokens_total),
    ) {
        (Some(h), Some(i)) if h + i > 0.0 => Some(h / (h + i)),
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
        scheduler_idle_s_per_s: per_s(|s| s.scheduler_idle_seconds_total),
        scheduler_cpu_s_per_s: per_s(|s| s.scheduler_cpu_seconds_total),
        fwd_occupancy,
        forward_timer,
        prefill_hit_share,
    })
}

/// The per-request times of the log's `ReqTimeStats` lines ([`RequestTimesSummary`]), over
/// the kept sample; `None` when the log has none.
pub(super) fn request_times(input: &Input<'_>) -> Option<RequestTimesSummary> {
    let rt = &input.ev.request_times;
    let s = rt.samples.samples();
    if rt.lines == 0 || s.is_empty() {
        return None;
    }
    let spread = |get: fn(&ReqSample) -> Option<f64>| -> Option<Spread> {
        let xs: Vec<f64> = s.iter().filter_map(get).filter(|x| x.is_finite()).collect();
        Some(Spread {
            n: xs.len(),
            median: throughput_stats::quantile_f64(&xs, 0.5)?,
            p90: throughput_stats::quantile_f64(&xs, 0.9)?,
            max: xs.iter().copied().reduce(f64::max)?,
        })
    };
    // the most common mode
    let modes = [
        ReqMode::Unified,
        ReqMode::Prefill,
        ReqMode::Decode,
        ReqMode::Unknown,
    ];
    let mode = modes
        .into_iter()
        .max_by_key(|m| s.iter().filter(|x| x.mode == *m).count())
        .unwrap_or(ReqMode::Unknown);
    let (cached, input_tokens) = s
        .iter()
        .filter_map(|x| Some((x.cached_input_len?, x.input_len?)))
        .fold((0u64, 0u64), |(c, i), (xc, xi)| {
            (c.saturating_add(xc), i.saturating_add(xi))
        });
    Some(RequestTimesSummary {
        lines: rt.lines,
        sampled: s.len(),
        mode,
        queue_s: spread(|x| x.queue_s),
        forward_s: spread(|x| x.forward_s),
        output_tokens: spread(|x| x.output_len.map(|n| n as f64)),
        prefix_cached_share: (input_tokens > 0)
            .then(|| (cached.min(input_tokens)) as f64 / input_tokens as f64),
        bootstrap_s: spread(|x| x.bootstrap_s),
        alloc_wait_s: spread(|x| x.alloc_wait_s),
        transfer_s: spread(|x| x.transfer_s),
        transfer_gb_per_s: spread(|x| x.transfer_gb_per_s),
        transfer_retries: rt.transfer_retries,
        evidence: rt.first.zip(rt.last).map(|(a, b)| input.span(a, b)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{whole, with_input};

    /// real-4/118 (v0.5.18.dev, `--log-requests`): seven finished requests of an agentic
    /// workload on a 300K-token shared prefix: they waited ~20 ms in the queue and ran 3 s
    /// (median), with nearly all of their prompts from the prefix cache.
    #[test]
    fn the_servers_own_request_times() {
        let lines = whole(
            "real-4/118-rtxpro6000-v0.5.18dev-agentic-300k-prefix-mamba-mtp-reqtimestats.log",
        );
        let q = with_input(&lines, request_times).expect("request times");
        assert_eq!((q.lines, q.sampled, q.mode), (7, 7, ReqMode::Unified));
        let queue = q.queue_s.unwrap();
        assert_eq!(queue.n, 7);
        assert!((queue.median - 0.02001).abs() < 1e-9, "{queue:?}");
        assert!((queue.max - 0.03269).abs() < 1e-9, "{queue:?}");
        let fwd = q.forward_s.unwrap();
        assert!((fwd.median - 3.0283).abs() < 1e-9, "{fwd:?}");
        assert_eq!(q.output_tokens.map(|o| o.max), Some(640.0));
        assert!((q.prefix_cached_share.unwrap() - 0.99673).abs() < 1e-4);
        assert_eq!(q.transfer_s, None);
        let e = q.evidence.unwrap();
        assert_eq!((e.first_line, e.last_line), (5, 35));
        // a log without the lines has none
        assert_eq!(
            with_input(
                &whole("real/001-i938-a100-llama13b-queue12k.log"),
                request_times
            ),
            None
        );
    }

    /// `fwd occupancy` per scheduler: real/065's two PD prefill lines print `nan%` (idle);
    /// the same lines with the spec's own reading (87.31%, `sglang-observables.md` D15) on
    /// one of them give a busy mean over that one line. A log without the field has none.
    #[test]
    fn occupancy_per_scheduler() {
        let nixl = whole("real/065-nixl-i1983-pd-prefill-transfer-disconnect.log");
        let occ = |text: &str| {
            with_input(text, |i| {
                let v = &i.views[0];
                scheduler_summary(i.ev, v, i.capacity, Bottleneck::Inconclusive).fwd_occupancy
            })
        };
        assert_eq!(
            occ(&nixl),
            Some(OccupancySummary {
                busy_mean_pct: None,
                busy_readings: 0,
                idle_readings: 2
            })
        );
        let one = crate::rules::testing::edit(
            &nixl,
            "(per GPU): 9.90, fwd occupancy: nan%",
            "(per GPU): 9.90, fwd occupancy: 87.31%",
        );
        assert_eq!(
            occ(&one),
            Some(OccupancySummary {
                busy_mean_pct: Some(87.31),
                busy_readings: 1,
                idle_readings: 1
            })
        );
        assert_eq!(
            occ(&whole("real/001-i938-a100-llama13b-queue12k.log")),
            None
        );
    }
}
