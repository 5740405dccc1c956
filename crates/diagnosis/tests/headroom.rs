//! The headroom model end to end: what runs fits, a change fits when it leaves what runs with
//! the same prefill chunk were seen to need (the calibrated band of `kv_capacity`),
//! and the cell comes from the log when no model config is given. On the RTX 4090 log
//! (`real-long/rtx4090-qwen3-4b-kv-retraction.log`: Qwen3-4B on 24 GB, 1.91 GiB free after
//! start-up) and on its start-up lines alone.

use std::path::{Path, PathBuf};

use diagnosis::report::{RecommendationKind, Report};
use diagnosis::{Context, EvidenceBuilder, ModelFacts};
use kv_capacity::{Change, Feasibility, FreeSource};
use sglang_log::LogReader;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

const RTX: &str = "real-long/rtx4090-qwen3-4b-kv-retraction.log";

fn diagnose(text: &str, config: Option<&str>) -> Report {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("rtx4090.log");
    let stats = LogReader::from_reader("rtx4090.log", text.as_bytes())
        .for_each(|r| b.push(id, r))
        .expect("in memory");
    b.finish_source(id, &stats);
    let ctx = Context {
        model: config.map(|rel| ModelFacts {
            source: rel.into(),
            config: kv_capacity::ModelConfig::from_hf_json(
                &std::fs::read_to_string(data(rel)).expect("config"),
            )
            .expect("config parses"),
        }),
        ..Context::default()
    };
    diagnosis::diagnose_with(&b.build(), &ctx)
}

fn verdict(r: &Report, change: Change) -> Feasibility {
    let cm = r.capacity_model.as_ref().expect("capacity model");
    cm.what_if
        .rows
        .iter()
        .find(|w| w.change == change)
        .and_then(|w| w.feasibility)
        .map(|f| f.verdict)
        .expect("row with a verdict")
}

#[test]
fn the_running_row_and_fp8_fit_on_a_24_gb_card() {
    let log = std::fs::read_to_string(data(RTX)).expect("log");
    let r = diagnose(&log, Some("configs/qwen3-4b.json"));
    let cm = r.capacity_model.as_ref().expect("capacity model");
    // 36 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 147,456 B per token
    assert_eq!(cm.cell_bytes, 147_456);
    assert_eq!(verdict(&r, Change::Current), Feasibility::Fits);
    let fp8 = Change::KvDtype {
        to: kv_capacity::KvDtype::Fp8E4m3,
    };
    assert_eq!(verdict(&r, fp8), Feasibility::Fits);
    let f = cm.what_if.rows[0].feasibility.expect("feasibility");
    assert_eq!(f.source, FreeSource::AfterStartup);
    // 2048-token chunks: the calibrated need, 0.25 GiB per 1,024 tokens, is under the 1 GiB
    // floor (the estimate of 2048 × 2560 × 2 B × 16 = 0.156 GiB is less still)
    assert_eq!((f.fits_at_gib, f.oom_below_gib), (1.0, 0.5));
    // No recommendation forbids a change that frees memory (or takes none).
    for rec in &r.recommendations {
        if let RecommendationKind::DoNotRaiseFraction { to } = rec.kind {
            assert!(to > 0.85, "{rec:?}");
        }
    }
}

#[test]
fn start_up_lines_alone_give_a_capacity_verdict() {
    let log = std::fs::read_to_string(data(RTX)).expect("log");
    let startup: String = log.lines().take(35).map(|l| format!("{l}\n")).collect();
    let r = diagnose(&startup, Some("configs/qwen3-4b.json"));
    assert_eq!(r.capacity.max_total_num_tokens, Some(87_552));
    assert_eq!(verdict(&r, Change::Current), Feasibility::Fits);
    // each +0.01 takes 0.23 GiB: 0.88 leaves 1.91 − 3 × 0.23 = 1.22 GiB ≥ 1 → fits; 0.89
    // leaves 0.99 → uncertain (0.5-1 GiB: runs were seen to serve and to fail there); 0.92
    // leaves 0.30 → likely out of memory
    for (to, band) in [
        (0.86, Feasibility::Fits),
        (0.88, Feasibility::Fits),
        (0.89, Feasibility::Uncertain),
        (0.91, Feasibility::Uncertain),
        (0.92, Feasibility::OomLikely),
        (0.95, Feasibility::OomLikely),
    ] {
        assert_eq!(verdict(&r, Change::Fraction { to }), band, "{to}");
    }
}

#[test]
fn without_a_config_the_cell_is_the_logs_and_a_wrong_config_is_named() {
    let log = std::fs::read_to_string(data(RTX)).expect("log");
    // K 6.01 GB + V 6.01 GB for 87,552 tokens: 12.02 × 2^30 / 87,552 = 147,414 B (rounded GB)
    let r = diagnose(&log, None);
    assert_eq!(
        r.capacity_model
            .as_ref()
            .expect("capacity model")
            .cell_bytes,
        147_414
    );
    let r = diagnose(&log, Some("configs/qwen2.5-7b.json"));
    assert!(
        r.not_concluded.iter().any(|n| n.reason
            == diagnosis::report::NotConcludedReason::ModelConfigDisagrees
            && n.text.contains(
                "57344 bytes per token per GPU but the log's KV allocation gives 147414"
            )),
        "{:?}",
        r.not_concluded
    );
    assert_eq!(
        r.capacity_model
            .as_ref()
            .expect("capacity model")
            .cell_bytes,
        147_414
    );
}
