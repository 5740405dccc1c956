//! The simulator's `/metrics`: SGLang names, types, labels and default
//! bucket bounds (`sglang-observables.md` §3): scheduler gauges and counters
//! per DP rank labelled `engine_type`, `model_name`, `pp_rank`, `tp_rank`
//! (+ `dp_rank` when there are several ranks), tokenizer counters and
//! latency histograms labelled `model_name`; every series also carries
//! `instance` when the simulator is told its name (a fleet).
//!
//! Two generations of names ([`crate::MetricsGeneration`]) carry the same figures. The
//! simulated scheduler's time is modelled, in the model's seconds like the latency
//! histograms: forward passes are the modelled prefill and decode durations, idle is the
//! polls with nothing to run; its CPU seconds are its forward seconds (it sleeps while
//! idle, as with `--sleep-on-idle`); `sglang:fwd_occupancy` is 100 × forward / (forward +
//! idle) over its life while requests run, NaN when none do (SGLang's idle). The KV page is
//! 16 tokens when the pool is a multiple of 16, else 1 (SGLang's default).

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

    /// The `_bucket`, `_sum` and `_count` lines of one label set: the sum of `hists`
    /// (which share their bounds).
    fn render_sum(hists: &[&Hist], out: &mut String, name: &str, labels: &str) {
        let Some(first) = hists.first() else { return };
        let mut counts = vec![0u64; first.bounds.len()];
        let (mut sum, mut n) = (0.0, 0u64);
        for h in hists {
            let g = match h.inner.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            for (c, x) in counts.iter_mut().zip(g.0.iter()) {
                *c += x;
            }
            sum += g.1;
            n += g.2;
        }
        let mut cum = 0;
        for (b, c) in first.bounds.iter().zip(counts.iter()) {
            cum += c;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b:?}\"}} {cum}.0");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {n}.0");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum:?}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {n}.0");
    }

    fn render_series(&self, out: &mut String, name: &str, labels: &str) {
        Hist::render_sum(&[self], out, name, labels);
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
    /// Requests, prompt and generated tokens served as streams (`is_streaming="true"`).
    pub streamed_requests: AtomicU64,
    pub streamed_prompt_tokens: AtomicU64,
    pub streamed_generation_tokens: AtomicU64,
    /// Modelled scheduler time, microseconds: idle, decode and prefill (extend) passes.
    pub idle_us: AtomicU64,
    pub forward_decode_us: AtomicU64,
    pub forward_extend_us: AtomicU64,
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
    /// TTFT and end-to-end latency of streamed requests (the others are `ttft`, `e2e`).
    pub ttft_stream: Hist,
    pub e2e_stream: Hist,
}

/// What the exposition needs besides the counters.
pub struct RenderInfo<'a> {
    pub model: &'a str,
    pub kv_tokens: u64,
    /// `instance` label value, when set.
    pub instance: Option<&'a str>,
    /// Which names to write.
    pub generation: crate::MetricsGeneration,
    /// Whether the device timer counts (`SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`).
    pub device_timer: bool,
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
            streamed_requests: AtomicU64::new(0),
            streamed_prompt_tokens: AtomicU64::new(0),
            streamed_generation_tokens: AtomicU64::new(0),
            idle_us: AtomicU64::new(0),
            forward_decode_us: AtomicU64::new(0),
            forward_extend_us: AtomicU64::new(0),
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
            ttft_stream: Hist::new(TTFT_BUCKETS),
            e2e_stream: Hist::new(E2E_BUCKETS),
        }
    }

    /// The TTFT histogram of a streamed or a whole-answer request.
    pub fn ttft_of(&self, streamed: bool) -> &Hist {
        if streamed {
            &self.ttft_stream
        } else {
            &self.ttft
        }
    }

    /// The end-to-end histogram of a streamed or a whole-answer request.
    pub fn e2e_of(&self, streamed: bool) -> &Hist {
        if streamed {
            &self.e2e_stream
        } else {
            &self.e2e
        }
    }

    /// A modelled forward pass of `secs` (model seconds), decode or prefill.
    pub fn add_forward(&self, secs: f64, decode: bool) {
        let c = if decode {
            &self.forward_decode_us
        } else {
            &self.forward_extend_us
        };
        c.fetch_add((secs * 1e6).round() as u64, Ordering::Relaxed);
    }

    /// `secs` (model seconds) with nothing to run.
    pub fn add_idle(&self, secs: f64) {
        self.idle_us
            .fetch_add((secs * 1e6).round() as u64, Ordering::Relaxed);
    }

    fn forward_s(&self) -> f64 {
        (self.forward_decode_us.load(Ordering::Relaxed)
            + self.forward_extend_us.load(Ordering::Relaxed)) as f64
            / 1e6
    }

    fn idle_s(&self) -> f64 {
        self.idle_us.load(Ordering::Relaxed) as f64 / 1e6
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
    let new_gen = info.generation == crate::MetricsGeneration::New;
    // Tokenizer counters: summed over the processes that bump them; in the new generation
    // the request counters are split by `is_streaming` (the streamed share counted apart).
    type C = fn(&Metrics) -> &AtomicU64;
    let counters: [(&str, &str, C, Option<C>); 5] = [
        (
            "sglang:prompt_tokens_total",
            "Number of prefill tokens processed.",
            |m| &m.prompt_tokens_total,
            Some(|m| &m.streamed_prompt_tokens),
        ),
        (
            "sglang:generation_tokens_total",
            "Number of generation tokens processed.",
            |m| &m.generation_tokens_total,
            Some(|m| &m.streamed_generation_tokens),
        ),
        (
            "sglang:num_requests_total",
            "Number of requests processed.",
            |m| &m.num_requests_total,
            Some(|m| &m.streamed_requests),
        ),
        (
            "sglang:cached_tokens_total",
            "Number of cached prompt tokens.",
            |m| &m.cached_tokens_total,
            None,
        ),
        (
            "sglang:num_aborted_requests_total",
            "Number of requests aborted.",
            |m| &m.num_aborted_requests_total,
            None,
        ),
    ];
    for (name, help, f, streamed) in counters {
        let v: u64 = all().map(|m| ld(f(m))).sum();
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        match streamed {
            Some(sf) if new_gen => {
                let st: u64 = all().map(|m| ld(sf(m))).sum();
                let _ = writeln!(
                    out,
                    "{name}{{{tok_labels},is_streaming=\"true\"}} {st}.0\n{name}{{{tok_labels},is_streaming=\"false\"}} {}.0",
                    v.saturating_sub(st)
                );
            }
            _ => {
                let _ = writeln!(out, "{name}{{{tok_labels}}} {v}.0");
            }
        }
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
    for (h, hs, name, help) in [
        (
            &tok.ttft,
            Some(&tok.ttft_stream),
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
        ),
        (
            &tok.itl,
            None,
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
        ),
        (
            &tok.e2e,
            Some(&tok.e2e_stream),
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        match hs {
            Some(hs) if new_gen => {
                for (x, flag) in [(hs, "true"), (h, "false")] {
                    x.render_series(
                        &mut out,
                        name,
                        &format!("{tok_labels},is_streaming=\"{flag}\""),
                    );
                }
            }
            Some(hs) => Hist::render_sum(&[h, hs], &mut out, name, &tok_labels),
            None => h.render_series(&mut out, name, &tok_labels),
        }
    }
    render_generation(&mut out, ranks, info, &rank_labels, &inst);
    out
}

/// The names that differ between the generations: the KV page figures, the device timer
/// and, in the new generation, occupancy, the scheduler's time counters and the effective
/// prefill tokens.
fn render_generation(
    out: &mut String,
    ranks: &[std::sync::Arc<Metrics>],
    info: &RenderInfo<'_>,
    rank_labels: &dyn Fn(usize) -> String,
    inst: &str,
) {
    let page: u64 = if info.kv_tokens.is_multiple_of(16) {
        16
    } else {
        1
    };
    let pages = info.kv_tokens / page.max(1);
    let timer = if info.generation == crate::MetricsGeneration::New {
        "sglang:forward_execution_seconds_total"
    } else {
        "sglang:gpu_execution_seconds_total"
    };
    let _ = writeln!(
        out,
        "# HELP {timer} Total time that GPU is busy executing model forward passes.\n# TYPE {timer} counter"
    );
    if info.device_timer {
        for (r, m) in ranks.iter().enumerate() {
            for (cat, us) in [
                ("decode", &m.forward_decode_us),
                ("extend", &m.forward_extend_us),
            ] {
                let s = us.load(Ordering::Relaxed) as f64 / 1e6;
                let _ = writeln!(
                    out,
                    "{timer}{{{},category=\"{cat}\"}} {s:?}",
                    rank_labels(r)
                );
            }
        }
    }
    if info.generation == crate::MetricsGeneration::Old {
        let _ = writeln!(
            out,
            "# HELP sglang:cache_config_info Information of the cache config.\n# TYPE sglang:cache_config_info gauge\n\
             sglang:cache_config_info{{num_pages=\"{pages}\",page_size=\"{page}\"{inst}}} 1.0"
        );
        let name = "sglang:gpu_overlap_wait_seconds_total";
        let _ = writeln!(
            out,
            "# HELP {name} GPU forward stream idle time waiting for CPU scheduling.\n# TYPE {name} counter"
        );
        if info.device_timer {
            for r in 0..ranks.len() {
                let _ = writeln!(out, "{name}{{{},category=\"forward\"}} 0.0", rank_labels(r));
            }
        }
        return;
    }
    // (metrics, page size, pages, device timer on)
    type G = fn(&Metrics, u64, u64, bool) -> f64;
    let gauges: [(&str, &str, G); 3] = [
        (
            "sglang:page_size",
            "KV cache page size in tokens.",
            |_, p, _, _| p as f64,
        ),
        (
            "sglang:num_pages",
            "Number of KV cache pages.",
            |_, _, n, _| n as f64,
        ),
        (
            "sglang:fwd_occupancy",
            "Forward pass GPU occupancy percentage.",
            |m, _, _, timer| {
                let (f, i) = (m.forward_s(), m.idle_s());
                if !timer || m.num_running_reqs.get() == 0.0 || f + i <= 0.0 {
                    f64::NAN
                } else {
                    (100.0 * f / (f + i)).min(100.0)
                }
            },
        ),
    ];
    for (name, help, g) in gauges {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (r, m) in ranks.iter().enumerate() {
            let v = g(m, page, pages, info.device_timer);
            // prometheus_client writes NaN as `NaN`.
            let v = if v.is_nan() {
                "NaN".to_string()
            } else {
                format!("{v:?}")
            };
            let _ = writeln!(out, "{name}{{{}}} {v}", rank_labels(r));
        }
    }
    type T = fn(&Metrics) -> f64;
    let seconds: [(&str, &str, T); 2] = [
        (
            "sglang:scheduler_idle_seconds_total",
            "Scheduler idle wall time in seconds.",
            |m| m.idle_s(),
        ),
        (
            "sglang:scheduler_process_cpu_seconds_total",
            "Scheduler process CPU time in seconds.",
            |m| m.forward_s(),
        ),
    ];
    for (name, help, f) in seconds {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (r, m) in ranks.iter().enumerate() {
            let _ = writeln!(out, "{name}{{{}}} {:?}", rank_labels(r), f(m));
        }
    }
    let name = "sglang:scheduler_stage_seconds_total";
    let _ = writeln!(
        out,
        "# HELP {name} Scheduler wall time by stage.\n# TYPE {name} counter"
    );
    for (r, m) in ranks.iter().enumerate() {
        let l = rank_labels(r);
        let _ = writeln!(
            out,
            "{name}{{{l},category=\"run_batch\"}} {:?}",
            m.forward_s()
        );
        let _ = writeln!(out, "{name}{{{l},category=\"idle\"}} {:?}", m.idle_s());
    }
    let name = "sglang:prefill_effective_tokens_total";
    let _ = writeln!(
        out,
        "# HELP {name} Effective prefill tokens by mode.\n# TYPE {name} counter"
    );
    for (r, m) in ranks.iter().enumerate() {
        let l = rank_labels(r);
        let input = m.realtime_prefill_compute.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}{{{l},mode=\"input\"}} {input}.0");
        for mode in ["device_hit", "host_hit", "storage_hit"] {
            let _ = writeln!(out, "{name}{{{l},mode=\"{mode}\"}} 0.0");
        }
    }
}
