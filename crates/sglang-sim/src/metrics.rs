//! The simulator's `/metrics`: SGLang names, types, labels and default
//! bucket bounds (`sglang-observables.md` §3): scheduler gauges and counters
//! per DP rank labelled `engine_type`, `model_name`, `pp_rank`, `tp_rank`
//! (+ `dp_rank` when there are several ranks), tokenizer counters and
//! latency histograms labelled `model_name`; every series also carries
//! `instance` when the simulator is told its name (a fleet).

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// TTFT buckets of SGLang main, seconds.
const TTFT_BUCKETS: &[f64] = &[
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0,
    400.0,
];
/// ITL buckets (0.002 … 8 s).
const ITL_BUCKETS: &[f64] = &[
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
    0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0,
];
/// Queue-time buckets, seconds (SGLang's `queue_time_seconds`, 0.0 … 2400 s).
const QUEUE_BUCKETS: &[f64] = &[
    0.0, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0,
    80.0, 90.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 1200.0, 1800.0, 2400.0,
];
/// e2e buckets (0.1 … 2400 s).
const E2E_BUCKETS: &[f64] = &[
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0,
    400.0, 600.0, 1200.0, 1800.0, 2400.0,
];

pub struct Hist {
    bounds: &'static [f64],
    inner: Mutex<(Vec<u64>, f64, u64)>,
}

impl Hist {
    fn new(bounds: &'static [f64]) -> Self {
        Hist {
            bounds,
            inner: Mutex::new((vec![0; bounds.len()], 0.0, 0)),
        }
    }

    pub fn observe(&self, v: f64) {
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            g.0[i] += 1;
        }
        g.1 += v;
        g.2 += 1;
    }

    /// The `_bucket`, `_sum` and `_count` lines of one label set.
    fn render_series(&self, out: &mut String, name: &str, labels: &str) {
        let g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut cum = 0;
        for (b, c) in self.bounds.iter().zip(g.0.iter()) {
            cum += c;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b:?}\"}} {cum}.0");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}.0", g.2);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {:?}", g.1);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}.0", g.2);
    }
}

/// A gauge holding f64 bits.
#[derive(Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Counters and gauges of one process: the tokenizer (HTTP side) or one DP
/// rank's scheduler. Rendering sums the counters over all of them.
pub struct Metrics {
    pub prompt_tokens_total: AtomicU64,
    pub generation_tokens_total: AtomicU64,
    pub num_requests_total: AtomicU64,
    pub num_aborted_requests_total: AtomicU64,
    pub cached_tokens_total: AtomicU64,
    pub num_retracted_requests_total: AtomicU64,
    pub realtime_prefill_compute: AtomicU64,
    pub num_running_reqs: Gauge,
    pub num_queue_reqs: Gauge,
    pub num_used_tokens: Gauge,
    pub token_usage: Gauge,
    pub gen_throughput: Gauge,
    pub cache_hit_rate: Gauge,
    pub last_gen_throughput: Gauge,
    pub ttft: Hist,
    pub itl: Hist,
    pub e2e: Hist,
    pub queue_time: Hist,
}

/// What the exposition needs besides the counters.
pub struct RenderInfo<'a> {
    pub model: &'a str,
    pub kv_tokens: u64,
    /// `instance` label value, when set.
    pub instance: Option<&'a str>,
}

fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    pub fn new() -> Self {
        Metrics {
            prompt_tokens_total: AtomicU64::new(0),
            generation_tokens_total: AtomicU64::new(0),
            num_requests_total: AtomicU64::new(0),
            num_aborted_requests_total: AtomicU64::new(0),
            cached_tokens_total: AtomicU64::new(0),
            num_retracted_requests_total: AtomicU64::new(0),
            realtime_prefill_compute: AtomicU64::new(0),
            num_running_reqs: Gauge::default(),
            num_queue_reqs: Gauge::default(),
            num_used_tokens: Gauge::default(),
            token_usage: Gauge::default(),
            gen_throughput: Gauge::default(),
            cache_hit_rate: Gauge::default(),
            last_gen_throughput: Gauge::default(),
            ttft: Hist::new(TTFT_BUCKETS),
            itl: Hist::new(ITL_BUCKETS),
            e2e: Hist::new(E2E_BUCKETS),
            queue_time: Hist::new(QUEUE_BUCKETS),
        }
    }
}

/// Prometheus text exposition of a server: `tok` is the tokenizer's
/// metrics, `ranks` one entry per DP rank.
pub fn render(tok: &Metrics, ranks: &[std::sync::Arc<Metrics>], info: &RenderInfo<'_>) -> String {
    let model = label_value(info.model);
    let inst = info
        .instance
        .map(|i| format!(",instance=\"{}\"", label_value(i)))
        .unwrap_or_default();
    let tok_labels = format!("model_name=\"{model}\"{inst}");
    let rank_labels = |r: usize| {
        let dp = if ranks.len() > 1 {
            format!(",dp_rank=\"{r}\"")
        } else {
            String::new()
        };
        format!(
            "engine_type=\"unified\",model_name=\"{model}\",pp_rank=\"0\",tp_rank=\"0\"{dp}{inst}"
        )
    };
    let mut out = String::with_capacity(8192 + ranks.len() * 4096);
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let all = || std::iter::once(tok).chain(ranks.iter().map(|r| r.as_ref()));
    // Tokenizer counters: summed over the processes that bump them.
    for (name, help, f) in [
        (
            "sglang:prompt_tokens_total",
            "Number of prefill tokens processed.",
            (|m: &Metrics| &m.prompt_tokens_total) as fn(&Metrics) -> &AtomicU64,
        ),
        (
            "sglang:generation_tokens_total",
            "Number of generation tokens processed.",
            |m: &Metrics| &m.generation_tokens_total,
        ),
        (
            "sglang:num_requests_total",
            "Number of requests processed.",
            |m: &Metrics| &m.num_requests_total,
        ),
        (
            "sglang:cached_tokens_total",
            "Number of cached prompt tokens.",
            |m: &Metrics| &m.cached_tokens_total,
        ),
        (
            "sglang:num_aborted_requests_total",
            "Number of requests aborted.",
            |m: &Metrics| &m.num_aborted_requests_total,
        ),
    ] {
        let v: u64 = all().map(|m| ld(f(m))).sum();
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name}{{{tok_labels}}} {v}.0"
        );
    }
    // Scheduler gauges, one series per DP rank.
    type G = fn(&Metrics) -> f64;
    let kv = info.kv_tokens as f64;
    let gauges: [(&str, &str, G); 10] = [
        (
            "sglang:num_running_reqs",
            "The number of running requests.",
            |m| m.num_running_reqs.get(),
        ),
        (
            "sglang:num_used_tokens",
            "The number of used tokens.",
            |m| m.num_used_tokens.get(),
        ),
        ("sglang:token_usage", "The token usage.", |m| {
            m.token_usage.get()
        }),
        (
            "sglang:full_token_usage",
            "The token usage of the full-attention pool.",
            |m| m.token_usage.get(),
        ),
        (
            "sglang:gen_throughput",
            "The generation throughput (token/s).",
            |m| m.gen_throughput.get(),
        ),
        (
            "sglang:num_queue_reqs",
            "The number of requests in the waiting queue.",
            |m| m.num_queue_reqs.get(),
        ),
        ("sglang:cache_hit_rate", "The prefix cache hit rate.", |m| {
            m.cache_hit_rate.get()
        }),
        ("sglang:kv_used_tokens", "KV cache tokens in use.", |m| {
            m.num_used_tokens.get()
        }),
        (
            "sglang:kv_evictable_tokens",
            "KV cache tokens held by the radix cache that can be evicted.",
            |_| 0.0,
        ),
        (
            "sglang:num_retracted_reqs",
            "Requests retracted in the last interval.",
            |_| 0.0,
        ),
    ];
    for (name, help, f) in gauges {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (r, m) in ranks.iter().enumerate() {
            let _ = writeln!(out, "{name}{{{}}} {:?}", rank_labels(r), f(m));
        }
    }
    for (name, help, f) in [
        (
            "sglang:kv_available_tokens",
            "KV cache tokens free.",
            (|m: &Metrics, kv: f64| (kv - m.num_used_tokens.get()).max(0.0))
                as fn(&Metrics, f64) -> f64,
        ),
        (
            "sglang:max_total_num_tokens",
            "Maximum total number of tokens in the KV cache pool.",
            |_, kv| kv,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (r, m) in ranks.iter().enumerate() {
            let _ = writeln!(out, "{name}{{{}}} {:?}", rank_labels(r), f(m, kv));
        }
    }
    let name = "sglang:num_retracted_requests_total";
    let _ = writeln!(
        out,
        "# HELP {name} Requests retracted.\n# TYPE {name} counter"
    );
    for (r, m) in ranks.iter().enumerate() {
        let _ = writeln!(
            out,
            "{name}{{{}}} {}.0",
            rank_labels(r),
            ld(&m.num_retracted_requests_total)
        );
    }
    let name = "sglang:realtime_tokens_total";
    let _ = writeln!(
        out,
        "# HELP {name} Tokens processed, by mode.\n# TYPE {name} counter"
    );
    for (r, m) in ranks.iter().enumerate() {
        let l = rank_labels(r);
        let _ = writeln!(
            out,
            "{name}{{{l},mode=\"prefill_compute\"}} {}.0",
            ld(&m.realtime_prefill_compute)
        );
        let _ = writeln!(out, "{name}{{{l},mode=\"prefill_cache\"}} 0.0");
        let _ = writeln!(
            out,
            "{name}{{{l},mode=\"decode\"}} {}.0",
            ld(&m.generation_tokens_total)
        );
    }
    let name = "sglang:queue_time_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Histogram of queueing time in seconds.\n# TYPE {name} histogram"
    );
    for (r, m) in ranks.iter().enumerate() {
        m.queue_time.render_series(&mut out, name, &rank_labels(r));
    }
    for (h, name, help) in [
        (
            &tok.ttft,
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
        ),
        (
            &tok.itl,
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
        ),
        (
            &tok.e2e,
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        h.render_series(&mut out, name, &tok_labels);
    }
    out
}
