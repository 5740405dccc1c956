//! Per-scheduler rows of the report and the summary of `/metrics` polls.

use crate::context::MetricsFacts;
use crate::evidence::Evidence;
use crate::evidence::view::SchedulerView;
use crate::report::{Bottleneck, CapacitySummary, MetricsSummary, SchedulerSummary};
use crate::rules::admission;

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
        bottleneck,
    }
}

pub(super) fn metrics_summary(m: &MetricsFacts) -> Option<MetricsSummary> {
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
