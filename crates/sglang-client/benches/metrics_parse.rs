//! `/metrics` parse time against the number of series (issue 13 item 3: it must grow linearly).
//!
//! Inputs: synthetic scrapes of 5,000, 10,000, 20,000 and 40,000 series: eight scheduler gauges
//! per DP rank, as SGLang writes them, with `instance` and `dp_rank` labels. Time per series
//! should stay flat from one size to the next.
//!
//! `cargo bench -p sglang-client --bench metrics_parse` (add `-- --quick` for a fast pass).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sglang_client::MetricsSnapshot;
use std::hint::black_box;

fn scrape(series: usize) -> String {
    let names = [
        "num_running_reqs",
        "num_queue_reqs",
        "token_usage",
        "gen_throughput",
        "num_used_tokens",
        "kv_used_tokens",
        "kv_available_tokens",
        "kv_evictable_tokens",
    ];
    let ranks = series / names.len();
    let mut text = String::with_capacity(series * 120);
    for n in names {
        text.push_str(&format!("# HELP sglang:{n} x\n# TYPE sglang:{n} gauge\n"));
        for r in 0..ranks {
            text.push_str(&format!(
                "sglang:{n}{{engine_type=\"unified\",model_name=\"m\",instance=\"10.0.0.{}:30000\",dp_rank=\"{}\"}} {}.5\n",
                r / 8,
                r % 8,
                r % 97
            ));
        }
    }
    text
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("metrics_parse");
    g.sample_size(10);
    for series in [5_000, 10_000, 20_000, 40_000] {
        let text = scrape(series);
        g.throughput(Throughput::Elements(series as u64));
        g.bench_function(format!("{series}_series"), |b| {
            b.iter(|| {
                black_box(MetricsSnapshot::parse(black_box(&text)))
                    .sets
                    .len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
