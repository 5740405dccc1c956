//! `/metrics` (Prometheus text exposition) parsed with `prometheus-parse`,
//! then a typed view of the `sglang:` series listed in
//! `sglang-observables.md` §3.3 (collector:
//! `python/sglang/srt/metrics/collector.py`, v0.5.10+
//! `python/sglang/srt/observability/metrics_collector.py`).
//!
//! `prometheus-parse` 0.2 matches metric names with `\w+`, which has no `:`,
//! so every `sglang:` line would be ignored. Names are therefore mangled
//! (`:` → [`COLON`]) before parsing and restored afterwards. Its label parser
//! splits on `,` and `=`, so a label value holding either character is
//! mis-read: such lines are counted in [`MetricsSnapshot::problems`].

use std::collections::BTreeMap;

/// Placeholder for `:` inside metric names while `prometheus-parse` runs.
pub const COLON: &str = "__colon__";

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
/// Scheduler gauges carry `engine_type`/`tp_rank`/... labels while tokenizer
/// counters carry only `model_name`, so one scrape usually yields several
/// label sets (§3.2).
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
    /// `sglang:token_usage` · used / total KV, 0–1.
    pub token_usage: Option<f64>,
    /// `sglang:gen_throughput` · tokens/s at the last Decode line.
    pub gen_throughput: Option<f64>,
    /// `sglang:cache_hit_rate` · 0–1 (semantics vary by version, §3.3).
    pub cache_hit_rate: Option<f64>,
    /// `sglang:spec_accept_length` · tokens/step.
    pub spec_accept_length: Option<f64>,
    /// `sglang:max_total_num_tokens` · KV pool capacity, tokens (v0.5.6+).
    pub max_total_num_tokens: Option<f64>,
    /// `sglang:num_retracted_reqs` (or older `sglang:total_retracted_reqs`).
    pub num_retracted_reqs: Option<f64>,
    /// `sglang:new_token_ratio` · admission reservation factor.
    pub new_token_ratio: Option<f64>,
    /// `sglang:num_paused_reqs`.
    pub num_paused_reqs: Option<f64>,
    /// `sglang:kv_available_tokens` · tokens (v0.5.11+).
    pub kv_available_tokens: Option<f64>,
    /// `sglang:kv_used_tokens` · tokens (v0.5.11+).
    pub kv_used_tokens: Option<f64>,
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
}

impl LabeledMetrics {
    fn set_scalar(&mut self, name: &str, v: f64) -> bool {
        let slot = match name {
            "sglang:num_running_reqs" => &mut self.num_running_reqs,
            "sglang:num_queue_reqs" => &mut self.num_queue_reqs,
            "sglang:num_used_tokens" => &mut self.num_used_tokens,
            "sglang:token_usage" => &mut self.token_usage,
            "sglang:gen_throughput" => &mut self.gen_throughput,
            "sglang:cache_hit_rate" => &mut self.cache_hit_rate,
            "sglang:spec_accept_length" => &mut self.spec_accept_length,
            "sglang:max_total_num_tokens" => &mut self.max_total_num_tokens,
            "sglang:num_retracted_reqs" | "sglang:total_retracted_reqs" => {
                &mut self.num_retracted_reqs
            }
            "sglang:new_token_ratio" => &mut self.new_token_ratio,
            "sglang:num_paused_reqs" => &mut self.num_paused_reqs,
            "sglang:kv_available_tokens" => &mut self.kv_available_tokens,
            "sglang:kv_used_tokens" => &mut self.kv_used_tokens,
            "sglang:prompt_tokens_total" => &mut self.prompt_tokens_total,
            "sglang:generation_tokens_total" => &mut self.generation_tokens_total,
            "sglang:cached_tokens_total" => &mut self.cached_tokens_total,
            "sglang:num_requests_total" => &mut self.num_requests_total,
            "sglang:num_aborted_requests_total" | "sglang:num_aborted_requests" => {
                &mut self.num_aborted_requests_total
            }
            _ => return false,
        };
        *slot = Some(v);
        true
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
}

/// A parsed `/metrics` scrape: the typed view per label set, every other
/// sample as parsed, and the lines that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// Typed `sglang:` series, one entry per distinct label set, in order of
    /// first appearance.
    pub sets: Vec<LabeledMetrics>,
    /// Samples outside the typed view (other `sglang:` metrics, process
    /// metrics, ...), kept as parsed.
    pub unknown: Vec<RawSample>,
    /// Lines that could not be parsed (1-based line number and reason).
    pub problems: Vec<String>,
}

impl MetricsSnapshot {
    /// Parses Prometheus text exposition. Never fails: unreadable lines are
    /// listed in [`MetricsSnapshot::problems`].
    pub fn parse(text: &str) -> Self {
        let mut problems = Vec::new();
        let mut mangled = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if let Some(rest) = t.strip_prefix('#') {
                let rest = rest.trim_start();
                if let Some(r) = rest
                    .strip_prefix("HELP ")
                    .or_else(|| rest.strip_prefix("TYPE "))
                {
                    let kw = &rest[..5];
                    let r = r.trim_start();
                    let (name, tail) = r.split_once(char::is_whitespace).unwrap_or((r, ""));
                    mangled.push(format!("# {kw}{} {tail}", name.replace(':', COLON)));
                }
                continue;
            }
            let name_end = t.find(['{', ' ', '\t']).unwrap_or(t.len());
            let (name, rest) = t.split_at(name_end);
            if let Some(why) = check_sample_line(name, rest) {
                problems.push(format!(
                    "line {}: {why}: {}",
                    i + 1,
                    crate::error::excerpt(t, 120)
                ));
                continue;
            }
            mangled.push(format!("{}{}", name.replace(':', COLON), rest));
        }
        let scrape = match prometheus_parse::Scrape::parse(mangled.into_iter().map(Ok)) {
            Ok(s) => s,
            Err(e) => {
                // ok: the iterator yields no I/O errors, kept for completeness.
                problems.push(format!("prometheus-parse failed: {e}"));
                return MetricsSnapshot {
                    problems,
                    ..Default::default()
                };
            }
        };
        Self::from_scrape(scrape, problems)
    }

    fn from_scrape(scrape: prometheus_parse::Scrape, problems: Vec<String>) -> Self {
        let mut raw: Vec<RawSample> = Vec::new();
        // Untyped `_sum` / `_count` companions of histograms, by (name, labels).
        let mut companions: BTreeMap<(String, Labels), f64> = BTreeMap::new();
        for s in scrape.samples {
            let name = s.metric.replace(COLON, ":");
            let labels: Labels = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let value = match s.value {
                prometheus_parse::Value::Counter(v) => RawValue::Counter(v),
                prometheus_parse::Value::Gauge(v) => RawValue::Gauge(v),
                prometheus_parse::Value::Untyped(v) => {
                    if name.ends_with("_sum") || name.ends_with("_count") {
                        companions.insert((name.clone(), labels.clone()), v);
                    }
                    RawValue::Untyped(v)
                }
                prometheus_parse::Value::Histogram(h) => {
                    let mut buckets: Vec<(f64, f64)> =
                        h.iter().map(|b| (b.less_than, b.count)).collect();
                    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                    RawValue::Histogram(Histogram {
                        buckets,
                        sum: None,
                        count: None,
                    })
                }
                prometheus_parse::Value::Summary(q) => {
                    RawValue::Summary(q.iter().map(|c| (c.quantile, c.count)).collect())
                }
            };
            raw.push(RawSample {
                name,
                labels,
                value,
            });
        }
        // Attach `_sum` / `_count` to their histograms.
        let mut used = std::collections::BTreeSet::new();
        for s in raw.iter_mut() {
            if let RawValue::Histogram(h) = &mut s.value {
                let sk = (format!("{}_sum", s.name), s.labels.clone());
                let ck = (format!("{}_count", s.name), s.labels.clone());
                h.sum = companions.get(&sk).copied();
                h.count = companions.get(&ck).copied();
                used.insert(sk);
                used.insert(ck);
            }
        }
        raw.retain(|s| {
            !(matches!(s.value, RawValue::Untyped(_))
                && used.contains(&(s.name.clone(), s.labels.clone())))
        });
        // prometheus-parse returns histograms after all other samples; keep a
        // stable order by name so label sets appear deterministically.
        raw.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.labels.cmp(&b.labels)));

        let mut snap = MetricsSnapshot {
            problems,
            ..Default::default()
        };
        for s in raw {
            let idx = match snap.sets.iter().position(|m| m.labels == s.labels) {
                Some(i) => i,
                None => {
                    snap.sets.push(LabeledMetrics {
                        labels: s.labels.clone(),
                        ..Default::default()
                    });
                    snap.sets.len() - 1
                }
            };
            let set = &mut snap.sets[idx];
            let typed = match &s.value {
                RawValue::Counter(v) | RawValue::Gauge(v) | RawValue::Untyped(v) => {
                    set.set_scalar(&s.name, *v)
                }
                RawValue::Histogram(h) => match set.histogram_slot(&s.name) {
                    Some(slot) => {
                        *slot = Some(h.clone());
                        true
                    }
                    None => false,
                },
                RawValue::Summary(_) => false,
            };
            if !typed {
                snap.unknown.push(s);
            }
        }
        snap.sets.retain(|m| {
            m != &LabeledMetrics {
                labels: m.labels.clone(),
                ..Default::default()
            }
        });
        snap
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

/// Checks the shape of a sample line; returns the reason when it is broken.
fn check_sample_line(name: &str, rest: &str) -> Option<&'static str> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return Some("bad metric name");
    }
    if name.contains(COLON) {
        return Some("metric name contains the reserved sequence __colon__");
    }
    let after_labels = if let Some(body) = rest.strip_prefix('{') {
        let end = match body.find('}') {
            Some(e) => e,
            None => return Some("unclosed label set"),
        };
        let labels = &body[..end];
        // prometheus-parse splits naively on ',' and '='.
        let mut in_quotes = false;
        for c in labels.chars() {
            match c {
                '"' => in_quotes = !in_quotes,
                ',' | '=' | '\\' if in_quotes => {
                    return Some("label value with ',', '=' or an escape (unsupported)");
                }
                _ => {}
            }
        }
        &body[end + 1..]
    } else {
        rest
    };
    let value = after_labels.split_whitespace().next();
    match value {
        None => Some("missing value"),
        Some(v) => {
            let ok = v.parse::<f64>().is_ok()
                || matches!(
                    v.to_ascii_lowercase().as_str(),
                    "nan" | "+inf" | "-inf" | "inf"
                );
            if ok {
                None
            } else {
                Some("value is not a number")
            }
        }
    }
}
