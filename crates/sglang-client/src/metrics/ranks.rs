//! One server's figure is a sum over its ranks, and over nothing else.
//!
//! The typed view's label sets are read as one server's schedulers (and its tokenizer), and
//! [`MetricsSnapshot::total`] sums a figure over them. That is right when the series of a
//! figure differ only by [`RANK_LABELS`] (a DP rank is a scheduler of its own; the summed
//! labels of [`super::SUMMED_LABELS`] and the key of a keyed counter, `mode` or `category`,
//! are taken out before). Series that differ by any other label are not the ranks of one
//! server: the `instance` of a router or a federation that gathers several servers, a label
//! a proxy adds, a per-request custom label of the tokenizer, or a hostile page with one
//! label value per line (540,049 series of `sglang:num_running_reqs` read as "~540049
//! requests run", issue 30 C18). Such a figure is refused: cleared from every label set,
//! listed in [`MetricsSnapshot::not_summed`] naming the label, and counted as a problem.
//! Other figures of the same scrape are used.

use std::collections::BTreeSet;

use super::{LabeledMetrics, MetricsSnapshot};

/// Labels that tell one server's schedulers apart (`sglang-observables.md` §3.2: `tp_rank`,
/// `pp_rank` and `dp_rank` from v0.4.9.post3, `moe_ep_rank` from v0.5.7): a figure is summed
/// over series that differ by these only.
pub const RANK_LABELS: &[&str] = &["dp_rank", "tp_rank", "pp_rank", "moe_ep_rank"];

/// The scalar figures checked, one name per field (an older name reads into the same field).
const SCALARS: &[&str] = &[
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:num_used_tokens",
    "sglang:token_usage",
    "sglang:full_token_usage",
    "sglang:gen_throughput",
    "sglang:cache_hit_rate",
    "sglang:spec_accept_length",
    "sglang:max_total_num_tokens",
    "sglang:num_retracted_reqs",
    "sglang:num_retracted_requests_total",
    "sglang:new_token_ratio",
    "sglang:num_paused_reqs",
    "sglang:kv_available_tokens",
    "sglang:kv_used_tokens",
    "sglang:kv_evictable_tokens",
    "sglang:prompt_tokens_total",
    "sglang:generation_tokens_total",
    "sglang:cached_tokens_total",
    "sglang:num_requests_total",
    "sglang:num_aborted_requests_total",
    "sglang:scheduler_idle_seconds_total",
    "sglang:scheduler_process_cpu_seconds_total",
    "sglang:page_size",
    "sglang:num_pages",
];

/// The counters split by a key label (`mode`, `category`) checked, one name per field.
const KEYED: &[&str] = &[
    "sglang:realtime_tokens_total",
    "sglang:prefill_effective_tokens_total",
    "sglang:forward_execution_seconds_total",
    "sglang:scheduler_stage_seconds_total",
];

/// A figure whose series differ by a label that is not a rank label: not summed, not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotSummed {
    /// The metric, e.g. `sglang:num_running_reqs`.
    pub metric: String,
    /// The first label (by name) whose values differ among its series.
    pub label: String,
    /// Distinct values of that label (a series without it counts as the empty value).
    pub values: usize,
    /// Series of the metric (label sets).
    pub series: usize,
}

impl std::fmt::Display for NotSummed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: its {} series differ by label {:?} ({} values), not only by rank labels ({}): not the ranks of one server, so not summed and not used",
            self.metric,
            self.series,
            self.label,
            self.values,
            RANK_LABELS.join(", ")
        )
    }
}

/// Clears every checked figure whose series differ by a label outside [`RANK_LABELS`], and
/// says so in `snap.not_summed` and at the head of `snap.problems`.
pub(super) fn refuse_sums_over_other_labels(snap: &mut MetricsSnapshot) {
    let mut refused = Vec::new();
    for &name in SCALARS {
        let has = |m: &mut LabeledMetrics| m.scalar_slot(name).is_some_and(|(v, _)| v.is_some());
        if let Some(n) = check(snap, name, &has) {
            for m in &mut snap.sets {
                if let Some((v, _)) = m.scalar_slot(name) {
                    *v = None;
                }
            }
            refused.push(n);
        }
    }
    for &name in KEYED {
        let has = |m: &mut LabeledMetrics| m.keyed_slot(name).is_some_and(|(v, _)| !v.is_empty());
        if let Some(n) = check(snap, name, &has) {
            for m in &mut snap.sets {
                if let Some((v, _)) = m.keyed_slot(name) {
                    v.clear();
                }
            }
            refused.push(n);
        }
    }
    let name = "sglang:fwd_occupancy";
    if let Some(n) = check(snap, name, &|m: &mut LabeledMetrics| {
        m.fwd_occupancy.is_some()
    }) {
        for m in &mut snap.sets {
            m.fwd_occupancy = None;
        }
        refused.push(n);
    }
    if refused.is_empty() {
        return;
    }
    snap.problems_total += refused.len();
    let said: Vec<String> = refused.iter().map(ToString::to_string).collect();
    snap.problems.splice(0..0, said);
    snap.not_summed = refused;
    snap.sets.retain(|m| !m.is_empty());
}

/// The figure `name` held by the sets where `has` is true: the first label outside
/// [`RANK_LABELS`] whose values differ among them, if any.
fn check(
    snap: &mut MetricsSnapshot,
    name: &str,
    has: &dyn Fn(&mut LabeledMetrics) -> bool,
) -> Option<NotSummed> {
    let holders: Vec<usize> = (0..snap.sets.len())
        .filter(|&i| has(&mut snap.sets[i]))
        .collect();
    if holders.len() < 2 {
        return None;
    }
    let names: BTreeSet<&str> = holders
        .iter()
        .flat_map(|&i| snap.sets[i].labels.keys().map(String::as_str))
        .filter(|k| !RANK_LABELS.contains(k))
        .collect();
    names.into_iter().find_map(|label| {
        let values: BTreeSet<&str> = holders
            .iter()
            .map(|&i| snap.sets[i].labels.get(label).map_or("", String::as_str))
            .collect();
        (values.len() > 1).then(|| NotSummed {
            metric: name.to_string(),
            label: label.to_string(),
            values: values.len(),
            series: holders.len(),
        })
    })
}
