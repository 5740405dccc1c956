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

use std::collections::BTreeMap;

/// A label set, sorted by label name (the `le` bucket label excluded).
pub type Labels = BTreeMap<String, String>;

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
    /// Every problem, counted (unreadable lines and rejected values).
    pub problems_total: usize,
    /// Lines in the scrape.
    pub lines: usize,
    /// Samples read (all names).
    pub samples: usize,
}

impl MetricsSnapshot {
    /// Parses Prometheus text exposition. Never fails: unreadable lines and
    /// implausible values are listed in [`MetricsSnapshot::problems`].
    pub fn parse(text: &str) -> Self {
        use crate::exposition::{Exposition, MAX_PROBLEMS_KEPT, MetricType, Suffix};
        use std::collections::HashMap;
        let e = Exposition::parse(text);
        let mut snap = MetricsSnapshot {
            problems: e.problems.iter().map(|p| p.to_string()).collect(),
            problems_total: e.problems_total,
            lines: e.lines,
            samples: e.samples.len(),
            ..Default::default()
        };
        let mut rejected = 0usize;
        let mut reject = |snap: &mut MetricsSnapshot, line: usize, what: String| {
            snap.problems_total += 1;
            rejected += 1;
            if rejected <= MAX_PROBLEMS_KEPT {
                snap.problems.push(format!("line {line}: {what}"));
            }
        };
        let mut index: HashMap<Labels, usize> = HashMap::new();
        // Histogram parts by (family, labels without `le`): the histogram and
        // the first line it came from.
        let mut hists: HashMap<(usize, Labels), (Histogram, usize)> = HashMap::new();
        let mut hist_order: Vec<(usize, Labels)> = Vec::new();
        for s in &e.samples {
            let fam = &e.families[s.family];
            // A counter typed OpenMetrics-style (`# TYPE x counter`, sample `x_total`) is
            // looked up by its sample name, as the 0.0.4 format (`# TYPE x_total counter`) has it.
            let full;
            let name = if s.suffix == Suffix::Total {
                full = format!("{}_total", fam.name);
                full.as_str()
            } else {
                fam.name.as_str()
            };
            let mut labels: Labels = s
                .labels
                .iter()
                .filter(|(k, _)| k != "le" && k != "quantile")
                .cloned()
                .collect();
            let is_hist = matches!(fam.kind, MetricType::Histogram);
            if is_hist
                && (name.starts_with("sglang:kv_transfer_")
                    || LabeledMetrics::default().histogram_slot(name).is_some())
            {
                let key = (s.family, labels);
                let entry = hists.entry(key.clone()).or_insert_with(|| {
                    hist_order.push(key);
                    (Histogram::default(), s.line)
                });
                match s.suffix {
                    Suffix::Bucket => match s.label("le").and_then(parse_le) {
                        Some(le) => entry.0.buckets.push((le, s.value)),
                        None => reject(
                            &mut snap,
                            s.line,
                            format!("{name}_bucket without a numeric le label"),
                        ),
                    },
                    Suffix::Sum => entry.0.sum = Some(s.value),
                    Suffix::Count => entry.0.count = Some(s.value),
                    _ => {}
                }
                continue;
            }
            if name == "sglang:realtime_tokens_total" {
                let mode = labels.remove("mode").unwrap_or_default();
                if let Some(why) = implausible(s.value, Range::Counter) {
                    reject(
                        &mut snap,
                        s.line,
                        format!("{name}{{mode={mode:?}}} = {}: {why}; not used", s.value),
                    );
                    continue;
                }
                let i = set_of_labels(&mut snap, &mut index, &labels);
                snap.sets[i].realtime_tokens_total.insert(mode, s.value);
                continue;
            }
            if let Some(short) = name.strip_prefix("sglang:kv_transfer_")
                && matches!(fam.kind, MetricType::Gauge)
            {
                if let Some(why) = implausible(s.value, Range::Any) {
                    reject(
                        &mut snap,
                        s.line,
                        format!("{name} = {}: {why}; not used", s.value),
                    );
                    continue;
                }
                let i = set_of_labels(&mut snap, &mut index, &labels);
                snap.sets[i]
                    .kv_transfer_gauges
                    .insert(short.to_string(), s.value);
                continue;
            }
            let scalar = matches!(s.suffix, Suffix::None | Suffix::Total)
                && !matches!(fam.kind, MetricType::Histogram | MetricType::Summary);
            let probe = LabeledMetrics::default().scalar_slot(name).map(|(_, r)| r);
            match probe {
                Some(range) if scalar => {
                    if let Some(why) = implausible(s.value, range) {
                        reject(
                            &mut snap,
                            s.line,
                            format!("{name} = {}: {why}; not used", s.value),
                        );
                        continue;
                    }
                    let i = set_of_labels(&mut snap, &mut index, &labels);
                    if let Some((slot, _)) = snap.sets[i].scalar_slot(name) {
                        *slot = Some(s.value);
                    }
                }
                _ => {
                    let value = match (fam.kind, s.suffix) {
                        (MetricType::Counter, Suffix::None | Suffix::Total) => {
                            RawValue::Counter(s.value)
                        }
                        (MetricType::Gauge, _) => RawValue::Gauge(s.value),
                        _ => RawValue::Untyped(s.value),
                    };
                    snap.unknown.push(RawSample {
                        name: e.sample_name(s),
                        labels: s.labels.iter().cloned().collect(),
                        value,
                    });
                }
            }
        }
        for key in hist_order {
            let Some((mut h, line)) = hists.remove(&key) else {
                continue;
            };
            let name = e.families[key.0].name.as_str();
            h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Counts must be plausible counters; the sum only finite (it can be
            // large for a long-lived server, and negative for odd units).
            let counts = h.buckets.iter().map(|b| b.1).chain(h.count);
            let sum = h.sum.filter(|x| !x.is_finite());
            if let Some(why) = counts
                .chain(sum)
                .find_map(|v| implausible(v, Range::Counter))
            {
                reject(
                    &mut snap,
                    line,
                    format!("histogram {name}: a count {why}; not used"),
                );
                continue;
            }
            let i = set_of_labels(&mut snap, &mut index, &key.1);
            let set = &mut snap.sets[i];
            if let Some(short) = name.strip_prefix("sglang:kv_transfer_") {
                set.kv_transfer.insert(short.to_string(), h);
            } else if let Some(slot) = set.histogram_slot(name) {
                *slot = Some(h);
            }
        }
        snap.sets.retain(|m| !m.is_empty());
        snap
    }

    /// True when the scrape held at least one usable `sglang:` series. A
    /// page of HTML, junk, or a server's `/metrics` before any scheduler
    /// wrote is not data.
    pub fn has_data(&self) -> bool {
        !self.sets.is_empty()
    }

    /// Sum of one typed scalar over all label sets (e.g. the total
    /// `generation_tokens_total` over DP ranks); None when no set has it.
    pub fn total(&self, field: impl Fn(&LabeledMetrics) -> Option<f64>) -> Option<f64> {
        let mut acc: Option<f64> = None;
        for m in &self.sets {
            if let Some(v) = field(m) {
                acc = Some(acc.unwrap_or(0.0) + v);
            }
        }
        acc
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
