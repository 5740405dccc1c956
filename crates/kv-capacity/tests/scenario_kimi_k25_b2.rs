//! The scenario this crate exists for: Kimi-K2.5 (MLA) on 8 × RTX PRO 6000 Blackwell, TP8,
//! mem_fraction_static 0.85, 116,171-token pool, 5.16 GB free after CUDA graphs.
//! Files: `tests/data/scenarios/kimi-k25-b2/` (read here with std::fs; the crate takes values).

use kv_capacity::{
    CapacityInput, Change, Feasibility, FreeSource, GIB, Headroom, InFlightLoad, KvDtype,
    ModelConfig, ParallelConfig, PoolModel, PreSource, activation_estimate_bytes, cell_size_bytes,
    startup_need_bytes, what_if,
};

const MIB: f64 = 1_048_576.0;

fn read(name: &str) -> String {
    let p = format!(
        "{}/../../tests/data/scenarios/kimi-k25-b2/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The number after `key` up to the next space or comma, e.g. `available_gpu_mem=5.16 GB`.
fn log_number(log: &str, key: &str) -> f64 {
    let line = log
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("no {key}"));
    let rest = &line[line.find(key).unwrap() + key.len()..];
    let end = rest.find([' ', ',']).unwrap_or(rest.len());
    rest[..end].parse().unwrap()
}

struct Scenario {
    input: CapacityInput,
    observed_tokens: u64,
}

fn scenario() -> Scenario {
    let model = ModelConfig::from_hf_json(&read("config.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&read("server_info.json")).unwrap();
    let tp = info["tp_size"].as_u64().unwrap() as u32;
    let fraction = info["mem_fraction_static"].as_f64().unwrap();
    let observed_tokens = info["max_total_num_tokens"].as_u64().unwrap();
    let kv_dtype = KvDtype::from_sglang(info["kv_cache_dtype"].as_str().unwrap()).unwrap();
    let parallel = ParallelConfig::tp(tp);
    let cell = cell_size_bytes(&model, &parallel, kv_dtype).unwrap();

    // pre ≈ GPU total: min over the 8 GPUs of nvidia-smi.csv's memory.total (97887 MiB)
    let csv = read("nvidia-smi.csv");
    let total_mib = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .nth(2)
                .unwrap()
                .trim()
                .trim_end_matches(" MiB")
                .parse::<f64>()
                .unwrap()
        })
        .fold(f64::INFINITY, f64::min);
    let pool = PoolModel::calibrated(
        fraction,
        observed_tokens,
        total_mib * MIB,
        PreSource::GpuTotal,
        cell.bytes,
    )
    .unwrap();

    let log = read("server.log");
    let free_gib = log_number(&log, "available_gpu_mem=");
    let samples: Vec<(u64, u64)> = read("responses.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["prompt_tokens"].as_u64().unwrap(),
                v["completion_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    Scenario {
        input: CapacityInput {
            model: Some(model),
            parallel,
            kv_dtype,
            mem_fraction_static: fraction,
            pool,
            // The log's available_gpu_mem is measured at start-up: what a change leaves of it
            // must hold an 8192-token chunk's run-time need (calibrated, 2 GiB; hidden size
            // 7168 over 8 ranks estimates less).
            headroom: Some(Headroom::after_startup(
                free_gib * GIB,
                startup_need_bytes(8192, Some(activation_estimate_bytes(8192, 7168) / 8.0)),
            )),
            load: Some(InFlightLoad::from_samples(&samples).unwrap()),
            gpus_on_host: Some(csv.lines().skip(1).count() as u32),
            max_total_tokens: None,
        },
        observed_tokens,
    }
}

#[test]
fn inputs_read_from_the_scenario() {
    let s = scenario();
    let i = &s.input;
    assert_eq!(s.observed_tokens, 116_171);
    assert_eq!(
        (i.parallel.tp_size, i.mem_fraction_static, i.kv_dtype),
        (8, 0.85, KvDtype::Auto)
    );
    // num_key_value_heads is 64 in config.json, but kv_lora_rank 512 makes it MLA:
    // (512 + 64) × 61 layers × 2 bytes = 70,272 B per token on every rank
    assert_eq!(i.pool.cell_bytes, 70_272);
    // 116,171 × 70,272 B = 8,163,568,512 B = 7.6029 GiB: the log's "KV size: 7.60 GB"
    let kv_gib = 116_171.0 * 70_272.0 / GIB;
    assert_eq!(format!("{kv_gib:.2}"), "7.60");
    assert!(
        read("server.log").contains("KV Cache is allocated. #tokens: 116171, KV size: 7.60 GB")
    );
    // pre = 97,887 MiB = 102,641,958,912 B = 95.59 GiB
    assert_eq!(i.pool.pre_bytes, 102_641_958_912.0);
    let h = i.headroom.expect("headroom");
    assert_eq!(
        (h.free_bytes, h.source),
        (5.16 * GIB, FreeSource::AfterStartup)
    );
    // 8192 × 7168 × 2 B × 16 / 8 ranks = 0.22 GiB of prefill activations, under the
    // calibrated 0.25 GiB per 1,024 chunk tokens = 2 GiB
    assert_eq!(h.fits_at_bytes, 2.0 * GIB);
    assert_eq!(i.gpus_on_host, Some(8));
}

#[test]
fn raising_the_fraction_projection() {
    let s = scenario();
    let t = what_if(&s.input);
    assert_eq!(t.current_tokens, 116_171);
    // slope: 0.01 × 102,641,958,912 B / 70,272 B = 14,606.38 tokens per +0.01
    assert_eq!(format!("{:.2}", t.tokens_per_hundredth), "14606.38");

    let now = t.fraction_row(0.85).unwrap();
    assert_eq!(now.change, Change::Current);
    assert_eq!(now.pool_tokens, 116_171);
    assert_eq!(now.label, "now: mem_fraction_static 0.85");
    assert_eq!(
        t.fraction_row(0.80).unwrap().label,
        "mem_fraction_static 0.80"
    );
    // The running configuration fits: that is an observation.
    let f = now.feasibility.unwrap();
    assert_eq!((f.verdict, f.extra_gib), (Feasibility::Fits, 0.0));

    // 0.88: extra = 0.03 × 102,641,958,912 = 3,079,258,767.36 B (2.868 GiB);
    // 3,079,258,767.36 / 70,272 = 43,819.14 → 116,171 + 43,819 = 159,990 tokens (+37.7 %)
    let r88 = t.fraction_row(0.88).unwrap();
    assert_eq!(r88.pool_tokens, 159_990);
    assert_eq!(format!("{:.1}", r88.change_pct), "37.7");
    assert_eq!(format!("{:.3}", r88.extra_gib_per_gpu), "2.868");
    // free after = 5.16 − 2.868 = 2.29 GiB ≥ the 2 GiB an 8192-token chunk needs → fits (it
    // ran, in the case this scenario mirrors)
    let f88 = r88.feasibility.unwrap();
    assert_eq!(f88.verdict, Feasibility::Fits);
    assert_eq!(format!("{:.2}", f88.free_after_gib), "2.29");

    // 0.93: extra = 0.08 × pre = 8,211,356,712.96 B (7.647 GiB);
    // 8,211,356,712.96 / 70,272 = 116,851.6 → 116,171 + 116,851 = 233,022 tokens (+100.6 %)
    let r93 = t.fraction_row(0.93).unwrap();
    assert_eq!(r93.pool_tokens, 233_022);
    assert_eq!(format!("{:.1}", r93.change_pct), "100.6");
    // 5.16 − 7.647 = −2.49 GiB: the pool would not fit → OOM likely (it ran out of memory)
    let f93 = r93.feasibility.unwrap();
    assert_eq!(f93.verdict, Feasibility::OomLikely);
    assert_eq!(format!("{:.2}", f93.free_after_gib), "-2.49");

    // 0.95 is +125.7 %, not 0.95/0.85 − 1 = +11.8 %: each +0.01 is 1 % of the card
    let r95 = t.fraction_row(0.95).unwrap();
    assert_eq!(r95.pool_tokens, 262_234);
    assert_eq!(format!("{:.1}", r95.change_pct), "125.7");

    // up to 0.88 fits (2.29 GiB left), 0.89 is uncertain (1.34), 0.90 leaves 0.38 GiB:
    // below where runs failed
    let verdicts: Vec<(u64, Feasibility)> = t
        .rows
        .iter()
        .filter(|r| matches!(r.change, Change::Fraction { .. } | Change::Current))
        .map(|r| {
            (
                (r.mem_fraction_static * 100.0).round() as u64,
                r.feasibility.unwrap().verdict,
            )
        })
        .collect();
    use Feasibility::*;
    let want: Vec<(u64, Feasibility)> = (80..=95)
        .map(|k| {
            (
                k,
                if k <= 88 {
                    Fits
                } else if k <= 89 {
                    Uncertain
                } else {
                    OomLikely
                },
            )
        })
        .collect();
    assert_eq!(verdicts, want);
}

#[test]
fn under_load_the_snapshot_decides() {
    // The scenario's nvidia-smi was taken while requests ran: 5,089 MiB free on the fullest GPU.
    let mut s = scenario();
    s.input.headroom = Some(Headroom::under_load(5_089.0 * MIB));
    let t = what_if(&s.input);
    let v = |f: f64| t.fraction_row(f).unwrap().feasibility.unwrap();
    // 0.88: 4.97 − 2.87 = 2.10 GiB left ≥ 1.5 → fits; 0.89: 1.15 → uncertain; 0.90: 0.19,
    // below 0.5 → OOM likely; 0.91: −0.77 → OOM; 0.93 needs 7.65 GiB more than the 4.97 free.
    assert_eq!(v(0.88).verdict, Feasibility::Fits);
    assert_eq!(format!("{:.2}", v(0.88).free_after_gib), "2.10");
    assert_eq!(v(0.89).verdict, Feasibility::Uncertain);
    assert_eq!(v(0.90).verdict, Feasibility::OomLikely);
    assert_eq!(v(0.91).verdict, Feasibility::OomLikely);
    assert_eq!(v(0.93).verdict, Feasibility::OomLikely);
    assert_eq!(format!("{:.2}", v(0.93).extra_gib), "7.65");
}

#[test]
fn fp8_and_tp_rows() {
    let s = scenario();
    let t = what_if(&s.input);
    // fp8 KV: same bytes, cell 35,136 → 116,171 × 70,272 / 35,136 = 232,342 tokens, no extra memory
    let fp8 = t
        .row_where(|c| matches!(c, Change::KvDtype { .. }))
        .unwrap();
    assert_eq!((fp8.cell_bytes, fp8.pool_tokens), (35_136, 232_342));
    assert_eq!(fp8.extra_gib_per_gpu, 0.0);
    // No more memory than today: it fits.
    assert_eq!(fp8.feasibility.unwrap().verdict, Feasibility::Fits);
    // TP16: the MLA cell stays 70,272 B; memory taken since pre (weights) is inferred as
    // 0.85 × pre − 116,171 × 70,272 = 79,082,096,563.2 B (73.65 GiB) and halves;
    // 0.85 × pre − 39,541,048,281.6 = 47,704,616,793.6 B → / 70,272 = 678,856 tokens
    let tp = t.row_where(|c| matches!(c, Change::TpSize { .. })).unwrap();
    assert_eq!(tp.change, Change::TpSize { to: 16 });
    assert_eq!((tp.cell_bytes, tp.pool_tokens), (70_272, 678_856));
    let note = tp.note.as_deref().unwrap();
    assert!(note.contains("needs 16 GPUs"), "{note}");
    assert!(
        note.contains("the host has 8 GPUs, so this spans nodes"),
        "{note}"
    );
    assert!(
        note.contains("MLA: the KV cell is not split by TP"),
        "{note}"
    );
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
}

#[test]
fn decode_concurrency_from_observed_lengths() {
    let s = scenario();
    let load = s.input.load.unwrap();
    // 1,253 responses: E[P] = 201.05, E[C] = 4,098.23 tokens
    assert_eq!(load.requests, 1253);
    assert_eq!(format!("{:.2}", load.mean_prompt_tokens.unwrap()), "201.05");
    assert_eq!(
        format!("{:.2}", load.mean_completion_tokens.unwrap()),
        "4098.23"
    );
    // H = E[C·(P + C/2)] / E[C] = 2,446.08 tokens (naive E[P] + E[C]/2 = 2,250.17)
    assert_eq!(format!("{:.2}", load.mean_held_tokens), "2446.08");
    assert_eq!(
        format!("{:.2}", load.naive_held_tokens().unwrap()),
        "2250.17"
    );
    let t = what_if(&s.input);
    // 116,171 / 2,446.08 = 47.49 requests decoding at once; at 0.88: 159,990 / 2,446.08 = 65.41
    assert_eq!(
        format!(
            "{:.2}",
            t.fraction_row(0.85).unwrap().decode_concurrency.unwrap()
        ),
        "47.49"
    );
    assert_eq!(
        format!(
            "{:.2}",
            t.fraction_row(0.88).unwrap().decode_concurrency.unwrap()
        ),
        "65.41"
    );
}

#[test]
fn memory_figure_model_agrees_with_calibration() {
    // From the log alone: "Load weight end … avail mem=21.85 GB, mem usage=73.15 GB" →
    // pre = 95.00 GiB, avail = 21.85 GiB; rest = 21.85 − 95 × 0.15 = 7.60 GiB
    // → floor(7.60 × 2^30 / 70,272) = 116,126 tokens (observed 116,171: the log rounds to 0.01 GB)
    let log = read("server.log");
    let avail = log_number(&log, "avail mem=");
    let usage = log_number(&log, "mem usage=");
    assert_eq!((avail, usage), (21.85, 73.15));
    let pool = PoolModel::from_memory(
        (avail + usage) * GIB,
        PreSource::LogLoadWeightLine,
        avail * GIB,
        70_272,
    )
    .unwrap();
    assert_eq!(pool.tokens_at(0.85).unwrap(), 116_126);
    // 0.88: rest = 21.85 − 95 × 0.12 = 10.45 GiB → floor(159,673.87) (calibrated: 159,990; the
    // gap is pre: 95.00 GiB from the log against 95.59 GiB card total)
    assert_eq!(pool.tokens_at(0.88).unwrap(), 159_673);
}

#[test]
fn table_serialises_for_json_reports() {
    let t = what_if(&scenario().input);
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(v["current_tokens"], 116_171);
    assert_eq!(v["cell"]["kind"], "mla");
    let r88 = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "mem_fraction_static 0.88")
        .unwrap();
    assert_eq!(r88["pool_tokens"], 159_990);
    assert_eq!(r88["change"]["kind"], "fraction");
    assert_eq!(r88["feasibility"]["verdict"], "fits");
    let r89 = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "mem_fraction_static 0.89")
        .unwrap();
    assert_eq!(r89["feasibility"]["verdict"], "uncertain");
}

#[test]
fn a_max_total_tokens_cap_holds_every_row() {
    // the same scenario started with --max-total-tokens at today's pool (116,171): SGLang
    // takes the smaller of the cap and what memory holds, so no row grows the pool
    let mut s = scenario();
    s.input.max_total_tokens = Some(116_171);
    let t = what_if(&s.input);
    assert!(t.rows.iter().all(|r| r.pool_tokens <= 116_171));
    let capped: Vec<_> = t
        .rows
        .iter()
        .filter(|r| {
            r.note
                .as_deref()
                .is_some_and(|n| n.starts_with("capped by --max-total-tokens"))
        })
        .collect();
    assert!(!capped.is_empty());
    // a capped fraction row takes no more memory than today (the rest stays free); the fp8
    // row at the cap takes less (half the bytes per token)
    for r in &capped {
        match r.change {
            kv_capacity::Change::Fraction { .. } => {
                assert!(r.extra_gib_per_gpu.abs() < 1e-9, "{r:?}")
            }
            kv_capacity::Change::KvDtype { .. } => assert!(r.extra_gib_per_gpu < 0.0, "{r:?}"),
            _ => {}
        }
    }
    assert!(
        t.assumptions
            .iter()
            .any(|a| a.starts_with("--max-total-tokens 116171 caps"))
    );
    // without the cap, raising the fraction grows the pool
    let free = what_if(&scenario().input);
    assert!(free.rows.iter().any(|r| r.pool_tokens > 116_171));
    // a cap above every row changes nothing
    let mut high = scenario();
    high.input.max_total_tokens = Some(10_000_000);
    assert_eq!(what_if(&high.input).rows, free.rows);
}
