//! `/metrics` (Prometheus text exposition) read with [`crate::exposition`],
//! then a typed view of the `sglang:` series listed in
//! `sglang-observables.md` §3.3 (collector:
//! `python/sglang/srt/metrics/collector.py`, v0.5.10+
//! `python/sglang/srt/observability/metrics_collector.py`).
//!
//! A typed value that is not finite (NaN, ±Inf) or beyond what a server can
//! report (a running count above 10^7, a token usage above 1.5, a counter
//! above 10^15, like the 1.8e19 of an unset `u64`) is not used: it is listed
//! in [`MetricsSnapshot::problems`] with its line number, so one bad series
//! never becomes a headline figure. A scrape without any `sglang:` sample
//! (an HTML error page, junk) has no label set: it is "no data", never zeros.
//! Building the view is one pass with hash lookups, linear in the number of
//! series.
//!
//! Two generations of names are read alike (SGLang PR #37461/#37636 and the
//! collector's moves, `sglang-observables.md` §3.3): the device timer's
//! `sglang:gpu_execution_seconds_total{category}` (v0.5.7 – v0.5.10) and
//! `sglang:forward_execution_seconds_total{category}` (v0.5.11+) fill one
//! field; `sglang:cache_config_info{page_size,num_pages}` (a gauge set to 1,
//! v0.5.9) and the gauges `sglang:page_size` / `sglang:num_pages` (v0.5.11+)
//! fill the same two fields. The tokenizer's `is_streaming` label (and the
//! older `stream`) splits a counter or histogram by how the request was
//! served; it is summed over, never a label set of its own. A
//! `sglang:fwd_occupancy` of NaN is SGLang's word for an idle scheduler
//! ([`Occupancy::Idle`]), not a bad value. The removed
//! `sglang:gpu_overlap_wait_seconds_total` is kept as an unknown sample.
//!
//! A scrape is read as it arrives, line by line ([`MetricsReader`], `build.rs`): the text is
//! never held, and a reader stops past a number of series or of label sets of typed series
//! ([`ScrapeCap`]). The label sets are one server's ranks: a figure whose series differ by a
//! label other than [`RANK_LABELS`] is not summed but refused, naming the label
//! ([`NotSummed`], `ranks.rs`).

use std::collections::{BTreeMap, BTreeSet};

mod build;
mod ranks;

pub use build::{MetricsReader, ScrapeCap};
pub use ranks::{NotSummed, RANK_LABELS};

/// A label set, sorted by label name (the `le` bucket label excluded).
pub type Labels = BTreeMap<String, String>;

/// Labels that split a series by how its requests were served and are summed
/// over: `is_streaming` (`"true"`/`"false"`, the tokenizer's counters and
/// latency histograms in `observability/metrics_collector.py`) and `stream`,
/// its earlier spelling.
pub const SUMMED_LABELS: &[&str] = &["is_streaming", "stream"];

/// `sglang:fwd_occupancy` of one scheduler (`observability/metrics_collector.py`,
/// `SchedulerStats.fwd_occupancy`: NaN by default and set back to NaN when the
/// scheduler goes idle; a number only with `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Occupancy {
    /// NaN: the scheduler ran no forward pass in the last interval (never a number).
    Idle,
    /// The GPU-busy share of the forward passes, percent (0–100).
    Percent(f64),
}

/// What `sglang:forward_execution_seconds_total` (or its older name
/// `sglang:gpu_execution_seconds_total`) says, summed over categories and
/// schedulers. SGLang counts it only with `SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`
/// (`managers/scheduler_metrics_mixin.py`, the `DeviceTimer` reporter), so a
/// zero (or a declared family without samples) is the timer switched off,
/// never a measured zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ForwardTimer {
    /// Neither name is declared: a server older than v0.5.7, or metrics off.
    Absent,
    /// Declared, but zero or without samples: the device timer is off.
    NotEnabled,
    /// GPU-busy seconds of forward passes since start, seconds.
    Measured(f64),
}

/// A cumulative Prometheus histogram (one label set).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `(upper bound "le", cumulative count)`, sorted by bound; the last
    /// bound is `+Inf` when the server sent it. Bounds in the metric's unit
    /// (seconds for the latency histograms).
    pub buckets: Vec<(f64, f64)>,
    /// `_sum`: the sum of all observations (seconds for latency histograms).
    pub sum: Option<f64>,
    /// `_count`: the number of observations.
    pub count: Option<f64>,
}

impl Histogram {
    /// Mean observation (`sum / count`); None when unknown or count is 0.
    pub fn mean(&self) -> Option<f64> {
        match (self.sum, self.count) {
            (Some(s), Some(c)) if c > 0.0 => Some(s / c),
            _ => None,
        }
    }

    /// Quantile estimate `q` ∈ [0, 1] by linear interpolation inside the
    /// bucket that holds the rank, like PromQL `histogram_quantile`
    /// (`promql/quantile.go` in Prometheus): the lowest bucket starts at 0,
    /// a rank falling in the `+Inf` bucket returns the highest finite bound.
    /// None when there are no observations or `q` is outside [0, 1].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if !(0.0..=1.0).contains(&q) || self.buckets.is_empty() {
            return None;
        }
        let total = self.buckets.last().map(|b| b.1)?;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut prev_bound = 0.0;
        let mut prev_count = 0.0;
        for (i, &(bound, count)) in self.buckets.iter().enumerate() {
            if count >= rank {
                if bound.is_infinite() {
                    // Highest finite bound, as Prometheus does.
                    return Some(if i > 0 { self.buckets[i - 1].0 } else { 0.0 });
                }
                if i == 0 && bound <= 0.0 {
                    return Some(bound);
                }
                let in_bucket = count - prev_count;
                if in_bucket <= 0.0 {
                    return Some(bound);
                }
                return Some(prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket);
            }
            prev_bound = bound;
            prev_count = count;
        }
        Some(prev_bound)
    }
}

/// One sample kept as parsed (used for metrics outside the typed view).
#[derive(Debug, Clone, PartialEq)]
pub struct RawSample {
    /// Full metric name, e.g. `sglang:realtime_tokens_total`.
    pub name: String,
    /// Label set.
    pub labels: Labels,
    /// Value.
    pub value: RawValue,
}

/// Value of a [`RawSample`].
#[derive(Debug, Clone, PartialEq)]
pub enum RawValue {
    /// A counter.
    Counter(f64),
    /// A gauge.
    Gauge(f64),
    /// A histogram (buckets, sum, count).
    Histogram(Histogram),
    /// A summary: `(quantile, value)` pairs.
    Summary(Vec<(f64, f64)>),
    /// No `# TYPE` line (or `_sum`/`_count` of a histogram not matched).
    Untyped(f64),
}

/// The typed `sglang:` series of one label set. Every field is `None` when
/// that series was not exported with this label set (unknown, never 0).
///
/// Scheduler gauges carry `engine_type`/`tp_rank`/`dp_rank`/... labels while
/// tokenizer counters carry only `model_name`, so one scrape usually yields
/// several label sets (§3.2). The `le` label of histogram buckets, the
/// `quantile` label of summaries and the `mode` label of
/// `sglang:realtime_tokens_total` are not part of the set's labels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabeledMetrics {
    /// The label set.
    pub labels: Labels,
    /// `sglang:num_running_reqs` · running requests (this rank).
    pub num_running_reqs: Option<f64>,
    /// `sglang:num_queue_reqs` · waiting requests.
    pub num_queue_reqs: Option<f64>,
    /// `sglang:num_used_tokens` · used KV slots, tokens.
    pub num_used_tokens: Option<f64>,
    /// `sglang:token_usage` · used / total KV, 0–1 (max over pools for hybrid models).
    pub token_usage: Option<f64>,
    /// `sglang:full_token_usage` · the full-attention pool alone, 0–1 (v0.5.10+).
    pub full_token_usage: Option<f64>,
    /// `sglang:gen_throughput` · tokens/s at the last Decode line.
    pub gen_throughput: Option<f64>,
    /// `sglang:cache_hit_rate` · 0–1 (semantics vary by version, §3.3).
    pub cache_hit_rate: Option<f64>,
    /// `sglang:spec_accept_length` · tokens/step.
    pub spec_accept_length: Option<f64>,
    /// `sglang:max_total_num_tokens` · KV pool capacity, tokens (v0.5.6+).
    pub max_total_num_tokens: Option<f64>,
    /// `sglang:num_retracted_reqs` (or older `sglang:total_retracted_reqs`) ·
    /// requests retracted in the last interval.
    pub num_retracted_reqs: Option<f64>,
    /// `sglang:num_retracted_requests_total` · counter, requests (v0.5.7+).
    pub num_retracted_requests_total: Option<f64>,
    /// `sglang:new_token_ratio` · admission reservation factor.
    pub new_token_ratio: Option<f64>,
    /// `sglang:num_paused_reqs`.
    pub num_paused_reqs: Option<f64>,
    /// `sglang:kv_available_tokens` · tokens (v0.5.11+).
    pub kv_available_tokens: Option<f64>,
    /// `sglang:kv_used_tokens` · tokens (v0.5.11+).
    pub kv_used_tokens: Option<f64>,
    /// `sglang:kv_evictable_tokens` · tokens held by the radix cache that can be freed (v0.5.11+).
    pub kv_evictable_tokens: Option<f64>,
    /// `sglang:prompt_tokens_total` · counter, tokens.
    pub prompt_tokens_total: Option<f64>,
    /// `sglang:generation_tokens_total` · counter, tokens.
    pub generation_tokens_total: Option<f64>,
    /// `sglang:cached_tokens_total` · counter, prompt tokens served from cache.
    pub cached_tokens_total: Option<f64>,
    /// `sglang:num_requests_total` · counter.
    pub num_requests_total: Option<f64>,
    /// `sglang:num_aborted_requests_total` (v0.5.3+) or
    /// `sglang:num_aborted_requests` (v0.4.7 – v0.5.2) · counter.
    pub num_aborted_requests_total: Option<f64>,
    /// `sglang:realtime_tokens_total{mode}` · counter, tokens, by `mode`
    /// (`prefill_compute`, `prefill_cache`, `decode`; v0.5.7+).
    pub realtime_tokens_total: BTreeMap<String, f64>,
    /// `sglang:time_to_first_token_seconds` · TTFT histogram, seconds.
    pub time_to_first_token_seconds: Option<Histogram>,
    /// `sglang:inter_token_latency_seconds` · ITL histogram, seconds (v0.4.3.post3+).
    pub inter_token_latency_seconds: Option<Histogram>,
    /// `sglang:time_per_output_token_seconds` · TPOT histogram, seconds (≤ v0.4.4.post3).
    pub time_per_output_token_seconds: Option<Histogram>,
    /// `sglang:e2e_request_latency_seconds` · histogram, seconds.
    pub e2e_request_latency_seconds: Option<Histogram>,
    /// `sglang:queue_time_seconds` (v0.5.3+) or `sglang:queue_time_s` (v0.5.2) · histogram, seconds.
    pub queue_time_seconds: Option<Histogram>,
    /// PD `sglang:kv_transfer_*` histograms (v0.5.10+), keyed by the name
    /// after `kv_transfer_` (`latency_ms`, `speed_gb_s`, `bootstrap_ms`,
    /// `alloc_ms`, `total_mb`; units in the name).
    pub kv_transfer: BTreeMap<String, Histogram>,
    /// The same `sglang:kv_transfer_*` names exported as gauges (v0.5.2 – v0.5.9).
    pub kv_transfer_gauges: BTreeMap<String, f64>,
    /// `sglang:fwd_occupancy` · forward-pass GPU occupancy (v0.5.12+; NaN is idle).
    pub fwd_occupancy: Option<Occupancy>,
    /// `sglang:forward_execution_seconds_total{category}` (v0.5.11+) or
    /// `sglang:gpu_execution_seconds_total{category}` (v0.5.7 – v0.5.10) ·
    /// counter, GPU-busy seconds of forward passes by `category` (a
    /// `ForwardMode` name); zero unless the device timer is on ([`ForwardTimer`]).
    pub forward_execution_seconds_total: BTreeMap<String, f64>,
    /// `sglang:scheduler_idle_seconds_total` · counter, seconds the scheduler
    /// had nothing to run (PR #37461, v0.5.20).
    pub scheduler_idle_seconds_total: Option<f64>,
    /// `sglang:scheduler_process_cpu_seconds_total` · counter, CPU seconds of
    /// the scheduler process, all threads (PR #37461, v0.5.20; can grow faster than 1 s/s).
    pub scheduler_process_cpu_seconds_total: Option<f64>,
    /// `sglang:scheduler_stage_seconds_total{category}` · counter, wall seconds
    /// of the scheduler loop by stage (`recv_requests`, `run_batch`, `idle`,
    /// `other`, ...; `observability/scheduler_stage_metrics.py`, PR #37636);
    /// any other label is summed over.
    pub scheduler_stage_seconds_total: BTreeMap<String, f64>,
    /// `sglang:prefill_effective_tokens_total{mode}` · counter, prefill tokens
    /// by `mode` (`input`, `device_hit`, `host_hit`, `storage_hit`),
    /// re-prefills of retracted requests excluded (v0.5.18+).
    pub prefill_effective_tokens_total: BTreeMap<String, f64>,
    /// `sglang:page_size` (v0.5.11+) or the `page_size` label of
    /// `sglang:cache_config_info` (v0.5.9) · tokens per KV page.
    pub page_size: Option<f64>,
    /// `sglang:num_pages` (v0.5.11+) or the `num_pages` label of
    /// `sglang:cache_config_info` (v0.5.9) · KV pages, `max_total_num_tokens //
    /// page_size` (`managers/scheduler.py`, `emit_constants` / `emit_cache_config_info`).
    pub num_pages: Option<f64>,
}

/// Plausible range of a typed scalar; outside it the value is rejected.
#[derive(Clone, Copy)]
enum Range {
    /// Requests: 0 ..= 10^7.
    Requests,
    /// Tokens held in the pool: 0 ..= 10^12.
    Tokens,
    /// A fraction: 0 ..= 1.5 (token usage can exceed 1 a little).
    Fraction,
    /// A percentage: 0 ..= 101 (a quotient of two timers can round a little above 100).
    Percent,
    /// tok/s: 0 ..= 10^9.
    Rate,
    /// Counters: 0 ..= 10^15.
    Counter,
    /// Anything finite and not negative.
    Any,
}

impl Range {
    fn max(self) -> f64 {
        match self {
            Range::Requests => 1e7,
            Range::Tokens => 1e12,
            Range::Fraction => 1.5,
            Range::Percent => 101.0,
            Range::Rate => 1e9,
            Range::Counter => 1e15,
            Range::Any => f64::MAX,
        }
    }
}

impl LabeledMetrics {
    fn scalar_slot(&mut self, name: &str) -> Option<(&mut Option<f64>, Range)> {
        use Range::*;
        Some(match name {
            "sglang:num_running_reqs" => (&mut self.num_running_reqs, Requests),
            "sglang:num_queue_reqs" => (&mut self.num_queue_reqs, Requests),
            "sglang:num_used_tokens" => (&mut self.num_used_tokens, Tokens),
            "sglang:token_usage" => (&mut self.token_usage, Fraction),
            "sglang:full_token_usage" => (&mut self.full_token_usage, Fraction),
            "sglang:gen_throughput" => (&mut self.gen_throughput, Rate),
            "sglang:cache_hit_rate" => (&mut self.cache_hit_rate, Fraction),
            "sglang:spec_accept_length" => (&mut self.spec_accept_length, Any),
            "sglang:max_total_num_tokens" => (&mut self.max_total_num_tokens, Tokens),
            "sglang:num_retracted_reqs" | "sglang:total_retracted_reqs" => {
                (&mut self.num_retracted_reqs, Requests)
            }
            "sglang:num_retracted_requests_total" => {
                (&mut self.num_retracted_requests_total, Counter)
            }
            "sglang:new_token_ratio" => (&mut self.new_token_ratio, Any),
            "sglang:num_paused_reqs" => (&mut self.num_paused_reqs, Requests),
            "sglang:kv_available_tokens" => (&mut self.kv_available_tokens, Tokens),
            "sglang:kv_used_tokens" => (&mut self.kv_used_tokens, Tokens),
            "sglang:kv_evictable_tokens" => (&mut self.kv_evictable_tokens, Tokens),
            "sglang:prompt_tokens_total" => (&mut self.prompt_tokens_total, Counter),
            "sglang:generation_tokens_total" => (&mut self.generation_tokens_total, Counter),
            "sglang:cached_tokens_total" => (&mut self.cached_tokens_total, Counter),
            "sglang:num_requests_total" => (&mut self.num_requests_total, Counter),
            "sglang:num_aborted_requests_total" | "sglang:num_aborted_requests" => {
                (&mut self.num_aborted_requests_total, Counter)
            }
            "sglang:scheduler_idle_seconds_total" => {
                (&mut self.scheduler_idle_seconds_total, Counter)
            }
            "sglang:scheduler_process_cpu_seconds_total" => {
                (&mut self.scheduler_process_cpu_seconds_total, Counter)
            }
            "sglang:page_size" => (&mut self.page_size, Tokens),
            "sglang:num_pages" => (&mut self.num_pages, Tokens),
            _ => return None,
        })
    }

    /// A counter split by one label (`mode`, `category`): its map and that label.
    fn keyed_slot(&mut self, name: &str) -> Option<(&mut BTreeMap<String, f64>, &'static str)> {
        Some(match name {
            "sglang:realtime_tokens_total" => (&mut self.realtime_tokens_total, "mode"),
            "sglang:prefill_effective_tokens_total" => {
                (&mut self.prefill_effective_tokens_total, "mode")
            }
            "sglang:forward_execution_seconds_total" | "sglang:gpu_execution_seconds_total" => {
                (&mut self.forward_execution_seconds_total, "category")
            }
            "sglang:scheduler_stage_seconds_total" => {
                (&mut self.scheduler_stage_seconds_total, "category")
            }
            _ => return None,
        })
    }

    fn histogram_slot(&mut self, name: &str) -> Option<&mut Option<Histogram>> {
        Some(match name {
            "sglang:time_to_first_token_seconds" => &mut self.time_to_first_token_seconds,
            "sglang:inter_token_latency_seconds" => &mut self.inter_token_latency_seconds,
            "sglang:time_per_output_token_seconds" => &mut self.time_per_output_token_seconds,
            "sglang:e2e_request_latency_seconds" => &mut self.e2e_request_latency_seconds,
            "sglang:queue_time_seconds" | "sglang:queue_time_s" => &mut self.queue_time_seconds,
            _ => return None,
        })
    }

    fn is_empty(&self) -> bool {
        let blank = LabeledMetrics {
            labels: self.labels.clone(),
            ..Default::default()
        };
        *self == blank
    }
}

/// Why a typed value is not used, or None when it is sound.
fn implausible(v: f64, range: Range) -> Option<&'static str> {
    if !v.is_finite() {
        Some("not a finite number")
    } else if v < 0.0 {
        Some("negative")
    } else if v > range.max() {
        Some("beyond what a server reports")
    } else {
        None
    }
}

/// A parsed `/metrics` scrape: the typed view per label set, every other
/// sample as parsed, and the lines that could not be read or used.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// Typed `sglang:` series, one entry per distinct label set, in order of
    /// first appearance. Empty when the scrape holds no `sglang:` sample.
    pub sets: Vec<LabeledMetrics>,
    /// Samples outside the typed view (other `sglang:` metrics, process
    /// metrics, ...), kept as parsed; histogram and summary parts are kept
    /// as raw untyped samples under their full name.
    pub unknown: Vec<RawSample>,
    /// Unreadable lines and rejected values, each `line N: reason: text`
    /// (the first [`crate::exposition::MAX_PROBLEMS_KEPT`] of each kind).
    pub problems: Vec<String>,
    /// Every problem, counted (unreadable lines, rejected values, figures not summed).
    pub problems_total: usize,
    /// Figures whose series differ by a label other than [`RANK_LABELS`]: not summed over
    /// them, not used (cleared from every label set).
    pub not_summed: Vec<NotSummed>,
    /// Lines in the scrape.
    pub lines: usize,
    /// Samples read (all names).
    pub samples: usize,
    /// Every `sglang:` name that has at least one sample, and every `sglang:`
    /// family declared by a `# TYPE` line (SGLang declares a labelled counter
    /// before its first sample).
    pub declared: BTreeSet<String>,
}

impl MetricsSnapshot {
    /// Parses Prometheus text exposition. Never fails: unreadable lines and
    /// implausible values are listed in [`MetricsSnapshot::problems`].
    pub fn parse(text: &str) -> Self {
        let mut r = MetricsReader::new(usize::MAX, usize::MAX);
        for line in text.split('\n') {
            // no cap to pass
            let _ = r.push_line(line);
        }
        let mut snap = r.finish();
        snap.lines =
            text.split('\n').count() - usize::from(text.ends_with('\n') || text.is_empty());
        snap
    }

    /// True when the scrape held at least one usable `sglang:` series. A
    /// page of HTML, junk, or a server's `/metrics` before any scheduler
    /// wrote is not data.
    pub fn has_data(&self) -> bool {
        !self.sets.is_empty()
    }

    /// Sum of one typed scalar over all label sets (e.g. the total
    /// `generation_tokens_total` over DP ranks); None when no set has it. The sets of a
    /// figure differ by [`RANK_LABELS`] only: a figure split by any other label was refused
    /// while reading ([`MetricsSnapshot::not_summed`]).
    pub fn total(&self, field: impl Fn(&LabeledMetrics) -> Option<f64>) -> Option<f64> {
        let mut acc: Option<f64> = None;
        for m in &self.sets {
            if let Some(v) = field(m) {
                acc = Some(acc.unwrap_or(0.0) + v);
            }
        }
        acc
    }

    /// The KV pool of one scheduler, tokens: the largest
    /// `sglang:max_total_num_tokens` of any label set, else the largest
    /// `page_size × num_pages` (`sglang:page_size` and `sglang:num_pages`, or
    /// `sglang:cache_config_info`'s labels). SGLang exports `num_pages =
    /// max_total_num_tokens // page_size` (`managers/scheduler.py`), so the
    /// product is the pool rounded down to whole pages; the pool is already
    /// a whole number of pages (`profile_max_num_token` rounds it down to one).
    pub fn pool_tokens(&self) -> Option<f64> {
        let max = |it: &mut dyn Iterator<Item = f64>| it.reduce(f64::max);
        max(&mut self.sets.iter().filter_map(|m| m.max_total_num_tokens)).or_else(|| {
            max(&mut self
                .sets
                .iter()
                .filter_map(|m| Some(m.page_size? * m.num_pages?)))
        })
    }

    /// Forward-pass GPU time, summed over categories and label sets
    /// ([`ForwardTimer`]): absent, switched off, or measured (seconds).
    pub fn forward_timer(&self) -> ForwardTimer {
        let total = self.total(|m| {
            (!m.forward_execution_seconds_total.is_empty())
                .then(|| m.forward_execution_seconds_total.values().sum())
        });
        match total {
            Some(t) if t > 0.0 => ForwardTimer::Measured(t),
            Some(_) => ForwardTimer::NotEnabled,
            None if [
                "sglang:forward_execution_seconds_total",
                "sglang:gpu_execution_seconds_total",
            ]
            .iter()
            .any(|n| self.declared.contains(*n)) =>
            {
                ForwardTimer::NotEnabled
            }
            None => ForwardTimer::Absent,
        }
    }

    /// The first label set that has `field`, with its value.
    pub fn first<T: Clone>(
        &self,
        field: impl Fn(&LabeledMetrics) -> Option<T>,
    ) -> Option<(&Labels, T)> {
        self.sets
            .iter()
            .find_map(|m| field(m).map(|v| (&m.labels, v)))
    }
}

fn set_of_labels(
    snap: &mut MetricsSnapshot,
    index: &mut std::collections::HashMap<Labels, usize>,
    labels: &Labels,
) -> usize {
    if let Some(&i) = index.get(labels) {
        return i;
    }
    snap.sets.push(LabeledMetrics {
        labels: labels.clone(),
        ..Default::default()
    });
    index.insert(labels.clone(), snap.sets.len() - 1);
    snap.sets.len() - 1
}

/// A bucket bound: a number or `+Inf`.
fn parse_le(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        _ => s.parse::<f64>().ok().filter(|v| !v.is_nan()),
    }
}
