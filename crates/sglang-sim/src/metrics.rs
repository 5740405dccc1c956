//! The simulator's `/metrics`: SGLang names, types, labels and default
//! bucket bounds (`sglang-observables.md` §3; shapes as in a v0.4.9-era dump:
//! scheduler gauges labelled `engine_type`, `model_name`, `pp_rank`, `tp_rank`,
//! tokenizer counters labelled `model_name`).

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

    fn render(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        let g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
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

pub struct Metrics {
    pub prompt_tokens_total: AtomicU64,
    pub generation_tokens_total: AtomicU64,
    pub num_requests_total: AtomicU64,
    pub num_aborted_requests_total: AtomicU64,
    pub cached_tokens_total: AtomicU64,
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
}

impl Metrics {
    pub fn new() -> Self {
        Metrics {
            prompt_tokens_total: AtomicU64::new(0),
            generation_tokens_total: AtomicU64::new(0),
            num_requests_total: AtomicU64::new(0),
            num_aborted_requests_total: AtomicU64::new(0),
            cached_tokens_total: AtomicU64::new(0),
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
        }
    }

    /// Prometheus text exposition.
    pub fn render(&self, model: &str, kv_tokens: u64) -> String {
        let tok = format!("model_name=\"{model}\"");
        let sch =
            format!("engine_type=\"unified\",model_name=\"{model}\",pp_rank=\"0\",tp_rank=\"0\"");
        let mut out = String::with_capacity(8192);
        let counter = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name}{{{tok}}} {v}.0"
            );
        };
        let gauge = |out: &mut String, name: &str, help: &str, v: f64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{sch}}} {v:?}"
            );
        };
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        counter(
            &mut out,
            "sglang:prompt_tokens_total",
            "Number of prefill tokens processed.",
            ld(&self.prompt_tokens_total),
        );
        counter(
            &mut out,
            "sglang:generation_tokens_total",
            "Number of generation tokens processed.",
            ld(&self.generation_tokens_total),
        );
        counter(
            &mut out,
            "sglang:num_requests_total",
            "Number of requests processed.",
            ld(&self.num_requests_total),
        );
        counter(
            &mut out,
            "sglang:cached_tokens_total",
            "Number of cached prompt tokens.",
            ld(&self.cached_tokens_total),
        );
        counter(
            &mut out,
            "sglang:num_aborted_requests_total",
            "Number of requests aborted.",
            ld(&self.num_aborted_requests_total),
        );
        gauge(
            &mut out,
            "sglang:num_running_reqs",
            "The number of running requests.",
            self.num_running_reqs.get(),
        );
        gauge(
            &mut out,
            "sglang:num_used_tokens",
            "The number of used tokens.",
            self.num_used_tokens.get(),
        );
        gauge(
            &mut out,
            "sglang:token_usage",
            "The token usage.",
            self.token_usage.get(),
        );
        gauge(
            &mut out,
            "sglang:gen_throughput",
            "The generation throughput (token/s).",
            self.gen_throughput.get(),
        );
        gauge(
            &mut out,
            "sglang:num_queue_reqs",
            "The number of requests in the waiting queue.",
            self.num_queue_reqs.get(),
        );
        gauge(
            &mut out,
            "sglang:cache_hit_rate",
            "The prefix cache hit rate.",
            self.cache_hit_rate.get(),
        );
        gauge(
            &mut out,
            "sglang:max_total_num_tokens",
            "Maximum total number of tokens in the KV cache pool.",
            kv_tokens as f64,
        );
        self.ttft.render(
            &mut out,
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            &tok,
        );
        self.itl.render(
            &mut out,
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            &tok,
        );
        self.e2e.render(
            &mut out,
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
            &tok,
        );
        out
    }
}
