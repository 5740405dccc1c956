//! End to end: `diagnose` on the simulated founding case (`tests/data/scenarios/`), with every
//! artifact a user would have: server log, saved /server_info, nvidia-smi CSV, model config,
//! the client's progress log and its responses dump.

use std::path::PathBuf;

use diagnosis::report::Report;
use diagnosis::{Bottleneck, FindingKind};
use throughput_doctor_cli::{DiagnoseArgs, diagnose};

fn args(scenario: &str) -> DiagnoseArgs {
    let d = PathBuf::from("tests/data/scenarios").join(scenario);
    DiagnoseArgs {
        logs: vec![d.join("server.log")],
        server_info: Some(d.join("server_info.json")),
        gpu_snapshot: Some(d.join("nvidia-smi.csv")),
        model_config: Some(d.join("config.json")),
        client_log: Some(d.join("client.log")),
        client_records: Some(d.join("responses.jsonl")),
        sample_window: 60.0,
        ..DiagnoseArgs::default()
    }
}

fn run(scenario: &str) -> Report {
    diagnose(&args(scenario)).expect("diagnose")
}

fn row<'a>(r: &'a Report, label: &str) -> &'a kv_capacity::WhatIfRow {
    let cm = r.capacity_model.as_ref().expect("capacity model");
    cm.what_if
        .rows
        .iter()
        .find(|w| w.label.ends_with(label))
        .unwrap_or_else(|| panic!("row {label}"))
}

#[test]
fn b2_is_kv_bound_and_explains_the_client_rate() {
    let r = run("kimi-k25-b2");
    assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);

    // Two hours in, the client prints 0.2 req/s: its lifetime average (1253 done since 14:00:30,
    // one decimal), now close to the windowed rate as the ramp's weight fades.
    let c = r.client.as_ref().expect("client summary");
    assert_eq!(c.printed_req_per_s, Some(0.2));
    assert_eq!(c.completed, 1253);
    assert_eq!(c.total, Some(11000));
    let life = c.lifetime_req_per_s.as_ref().expect("lifetime");
    assert!(
        (life.value - 1253.0 / 7147.0).abs() < 1e-3,
        "{}",
        life.value
    );
    let win = c.windowed_req_per_s.as_ref().expect("windowed");
    assert!(win.low.is_some() && win.high.is_some());
    assert!(win.window_s > 3600.0);
    // The server's steady gen throughput implies ~727 / 4098 = 0.177 req/s, with an interval.
    let imp = c.implied_req_per_s.as_ref().expect("implied");
    assert!((imp.value - 0.1774).abs() < 0.003, "{}", imp.value);
    assert!(imp.low.expect("low") < imp.value && imp.value < imp.high.expect("high"));
    // A 60 s sample at that rate proves nothing (said as a finding when the client's printed
    // rate misleads, as in the early view below).
    let adequacy = &c.adequacy.as_ref().expect("adequacy").text;
    assert!(
        adequacy.starts_with("60 s at 0.177 req/s holds ~10.6"),
        "{adequacy}"
    );
    let eta = c.eta.as_ref().expect("eta");
    assert_eq!(eta.remaining, 9747);

    // The pool at 0.85 and the projections at 0.88 and 0.93, by SGLang's formula with its own
    // `pre` (the log's `Load weight end` line: 21.85 + 73.15 = 95.00 GiB, not the card's
    // 95.59 GiB total): 0.03 × 95.00 GiB / 70,272 B = 43,547 more tokens at 0.88.
    let cm = r.capacity_model.as_ref().expect("capacity model");
    assert_eq!(cm.cell_bytes, 70_272);
    assert_eq!(cm.what_if.current_tokens, 116_171);
    assert_eq!(row(&r, "mem_fraction_static 0.85").pool_tokens, 116_171);
    assert_eq!(row(&r, "mem_fraction_static 0.88").pool_tokens, 159_718);
    assert_eq!(row(&r, "mem_fraction_static 0.93").pool_tokens, 232_297);
    let f93 = row(&r, "mem_fraction_static 0.93")
        .feasibility
        .as_ref()
        .expect("feasibility");
    // Free memory under load: the scenario's nvidia-smi snapshot, 5,118 MiB on its fullest GPU.
    assert_eq!(f93.verdict, kv_capacity::Feasibility::OomLikely);
    assert_eq!(f93.source, kv_capacity::FreeSource::UnderLoad);
    assert!((f93.free_now_gib - 5_118.0 / 1024.0).abs() < 1e-9);
    // 0.88 (which ran in the founding case) fits with its margin: 5.00 − 2.85 = 2.15 GiB left.
    let f88 = row(&r, "mem_fraction_static 0.88")
        .feasibility
        .as_ref()
        .expect("feasibility");
    assert_eq!(f88.verdict, kv_capacity::Feasibility::Fits);
    assert_eq!(format!("{:.2}", f88.free_after_gib), "2.15");
    // 0.89 leaves 1.20 GiB: under the margin, above where runs failed, so uncertain (not
    // forbidden); 0.90 leaves 0.25 GiB: likely out of memory
    let band = |label: &str| {
        row(&r, label)
            .feasibility
            .as_ref()
            .expect("feasibility")
            .verdict
    };
    assert_eq!(
        band("mem_fraction_static 0.89"),
        kv_capacity::Feasibility::Uncertain
    );
    assert_eq!(
        band("mem_fraction_static 0.90"),
        kv_capacity::Feasibility::OomLikely
    );
    // The running configuration fits: that is an observation.
    let now = row(&r, "mem_fraction_static 0.85")
        .feasibility
        .as_ref()
        .expect("feasibility");
    assert_eq!(now.verdict, kv_capacity::Feasibility::Fits);

    // HiCache would not raise decode concurrency.
    let h = cm.hicache.as_ref().expect("hicache verdict");
    assert!(!h.raises_decode_concurrency);
    assert!(r.findings.iter().any(|f| f.kind == FindingKind::HiCache));

    // Throughput is projected for the rows, from a fit of decode step time.
    let p = r.projection.as_ref().expect("projection");
    assert!(p.r2 > 0.8, "R² {}", p.r2);
    assert_eq!(p.running_range, (19.0, 76.0));
    let fp8 = p
        .rows
        .iter()
        .find(|x| x.label.contains("fp8"))
        .expect("fp8 row");
    assert!(fp8.tok_per_s > p.current_tok_per_s);
    assert_eq!(fp8.feasibility, Some(kv_capacity::Feasibility::Fits));
    // The first recommendation raises mem_fraction_static to the largest fraction that fits,
    // 0.88; DP attention (output-preserving, not projected) follows; fp8 KV after them (it
    // costs output fidelity, which matters for distillation data).
    assert_eq!(
        r.recommendations[0].action, "Set --mem-fraction-static 0.88",
        "{:?}",
        r.recommendations[0]
    );
    assert_eq!(
        r.recommendations[1].kind,
        diagnosis::report::RecommendationKind::DpAttention
    );
    assert!(
        r.recommendations[2].action.contains("fp8"),
        "{:?}",
        r.recommendations[2]
    );
    assert!(
        r.recommendations
            .iter()
            .any(|x| x.action == "Do not raise --mem-fraction-static to 0.90 or beyond")
    );
}

#[test]
fn b2_early_the_client_rate_is_a_lifetime_average_dragged_down_by_the_ramp() {
    // The same run seen 15 minutes in: the client prints 0.1 req/s, its lifetime average
    // (129 done in 840 s = 0.154, printed rounded down), while the server's steady rate implies
    // ~0.185 req/s.
    let r = run("kimi-k25-b2-early");
    assert_eq!(r.bottleneck, Bottleneck::KvCacheBound);
    let c = r.client.as_ref().expect("client summary");
    assert_eq!(c.printed_req_per_s, Some(0.1));
    assert_eq!(c.completed, 129);
    let life = c.lifetime_req_per_s.as_ref().expect("lifetime");
    assert!((life.value - 129.0 / 840.0).abs() < 1e-3, "{}", life.value);
    let imp = c.implied_req_per_s.as_ref().expect("implied");
    assert!((imp.value - 0.185).abs() < 0.005, "{}", imp.value);
    let gap = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::ClientGap)
        .expect("gap finding");
    assert!(gap.detail.contains("lifetime average"), "{}", gap.detail);
    // Retracted requests keep their tokens and are re-prefilled (SGLang `reset_for_retract`):
    // the gap is not decode work done twice.
    assert!(!gap.detail.contains("redone"), "{}", gap.detail);
    let adequacy = &c.adequacy.as_ref().expect("adequacy").text;
    assert!(
        adequacy.starts_with("60 s at 0.171 req/s holds ~10.2"),
        "{adequacy}"
    );
    assert!(
        r.findings
            .iter()
            .any(|f| f.kind == FindingKind::SampleAdequacy)
    );
    assert_eq!(c.eta.as_ref().expect("eta").remaining, 10871);
    assert_eq!(
        r.recommendations[0].action,
        "Set --mem-fraction-static 0.88"
    );
}

#[test]
fn b2_four_times_faster_is_not_reachable_and_says_what_could() {
    let mut a = args("kimi-k25-b2");
    a.expect = Some(diagnosis::Expectation::Multiple(4.0));
    let r = diagnose(&a).expect("diagnose");
    let e = r.expectation.as_ref().expect("expectation check");
    assert_eq!(e.reach, Some(diagnosis::report::Reach::BeyondCeiling));
    let ceiling = e.ceiling_tok_per_s.expect("ceiling");
    assert!((1200.0..1450.0).contains(&ceiling), "{ceiling}");
    assert_eq!(
        e.best_change.as_ref().map(|b| b.0.as_str()),
        Some("mem_fraction_static 0.88")
    );
    // an MLA model at TP8 without DP attention: the ceiling is that layout's, and DP
    // attention (each rank holding only its own requests' KV) is named beside the rest
    assert_eq!(e.kv_replicated_by_tp, Some(8));
    assert!(
        e.text.contains("is not reachable with this layout"),
        "{}",
        e.text
    );
    assert!(e.text.contains("speculative decoding"), "{}", e.text);
    assert!(e.text.contains("--enable-dp-attention"), "{}", e.text);
    assert!(
        r.recommendations
            .iter()
            .any(|x| x.kind == diagnosis::report::RecommendationKind::DpAttention),
        "{:?}",
        r.recommendations
    );
    // sized from config.json (9.77 GiB of the attention weights TP splits; q_a and kv_a are
    // whole on every GPU already; no vocab_size, so the embedding DP attention holds whole is
    // not sized) against the log's 7.60 GiB pool per GPU: --dp-size 8 would hold at least
    // 8.55 GiB more per GPU, more than the pool; 4 leaves at most 3.94 GiB (at most ~2.07x
    // the requests), 2 at most 6.38 GiB (~1.68x)
    let s = e.dp_attention.as_ref().expect("DP attention sized");
    assert!((s.split_attention_gib - 9.77).abs() < 0.01, "{s:?}");
    assert_eq!(s.embedding_gib, None);
    assert!((s.pool_gib - 7.60).abs() < 0.01, "{s:?}");
    let dps: Vec<(u32, bool)> = s
        .options
        .iter()
        .map(|o| (o.dp, o.pool_after_gib > 0.0))
        .collect();
    assert_eq!(dps, [(2, true), (4, true), (8, false)]);
    let best = s.best().expect("a DP size that fits");
    assert_eq!(best.dp, 4);
    assert!((best.requests_factor - 2.07).abs() < 0.01, "{best:?}");
    let rec = r
        .recommendations
        .iter()
        .find(|x| x.kind == diagnosis::report::RecommendationKind::DpAttention)
        .unwrap();
    assert!(rec.action.contains("--dp-size 4"), "{}", rec.action);
    assert!(
        rec.expected_gain.contains("--dp-size 8: does not fit"),
        "{}",
        rec.expected_gain
    );
}

#[test]
fn b1_differs_where_the_data_differ() {
    // Shorter completions (~1,577 tokens): the pool is not full, requests still queue.
    let r = run("kimi-k25-b1");
    assert_eq!(r.bottleneck, Bottleneck::SchedulerConservative);
    let s = &r.schedulers[0];
    assert_eq!(s.token_usage.median, Some(0.59));
    assert_eq!(s.queued.median, Some(85.0));
    assert_eq!(s.peak_running, Some(85));
    let c = r.client.as_ref().expect("client");
    assert_eq!(c.completed, 2181);
    assert!((c.mean_completion_tokens.expect("mean") - 1577.0).abs() < 1.0);
    assert!(
        r.recommendations[0]
            .action
            .contains("schedule-conservativeness")
    );
}

#[test]
fn b2_json_report_snapshot() {
    let r = run("kimi-k25-b2");
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["schema_version"], 2);
    // The key numbers of the report, rounded so the snapshot is stable across platforms.
    let round = |x: &serde_json::Value, d: i32| {
        x.as_f64()
            .map(|f| (f * 10f64.powi(d)).round() / 10f64.powi(d))
    };
    let key = serde_json::json!({
        "bottleneck": v["bottleneck"],
        "headline": v["headline"]["text"],
        "steady_gen_throughput": round(&v["steady_gen_throughput"]["value"], 0),
        "capacity": v["capacity"],
        "retractions": {
            "events": v["retractions"]["events"],
            "lines": v["retractions"]["lines"],
            "tokens_freed": v["retractions"]["tokens_freed"],
        },
        "client": {
            "completed": v["client"]["completed"],
            "printed_req_per_s": v["client"]["printed_req_per_s"],
            "lifetime_req_per_s": round(&v["client"]["lifetime_req_per_s"]["value"], 3),
            "windowed_req_per_s": round(&v["client"]["windowed_req_per_s"]["value"], 3),
            "implied_req_per_s": round(&v["client"]["implied_req_per_s"]["value"], 3),
        },
        "what_if": v["capacity_model"]["what_if"]["rows"].as_array().map(|rows| rows.iter().map(|w| serde_json::json!({
            "label": w["label"],
            "pool_tokens": w["pool_tokens"],
            "feasibility": w["feasibility"]["verdict"],
        })).collect::<Vec<_>>()),
        "finding_kinds": v["findings"].as_array().map(|f| f.iter().map(|x| x["kind"].clone()).collect::<Vec<_>>()),
        "recommendations": v["recommendations"].as_array().map(|f| f.iter().map(|x| x["action"].clone()).collect::<Vec<_>>()),
    });
    insta::assert_json_snapshot!("b2_report_key_numbers", key);
}

/// The founding case from what its user really has (issue: "the lever that worked, first"):
/// for b2 and b2-early, with (a) the log alone, (b) log + client log, (c) log + nvidia-smi and
/// (d) every file but the records, and `--expect 4x`: recommendation 1 sets
/// mem_fraction_static 0.88 with its gain in tok/s and req/s; nothing forbids 0.86-0.89; the
/// 0.88 what-if row has a decode concurrency and a projected rate; the Answer says 4x is beyond
/// the ceiling.
#[test]
fn the_lever_that_worked_first_from_what_the_user_has() {
    for scenario in ["kimi-k25-b2", "kimi-k25-b2-early"] {
        let full = args(scenario);
        let log_only = DiagnoseArgs {
            logs: full.logs.clone(),
            sample_window: 60.0,
            expect: Some(diagnosis::Expectation::Multiple(4.0)),
            ..DiagnoseArgs::default()
        };
        let cases = [
            ("log", log_only.clone()),
            (
                "log + client log",
                DiagnoseArgs {
                    client_log: full.client_log.clone(),
                    ..log_only.clone()
                },
            ),
            (
                "log + nvidia-smi",
                DiagnoseArgs {
                    gpu_snapshot: full.gpu_snapshot.clone(),
                    ..log_only.clone()
                },
            ),
            (
                "all but the records",
                DiagnoseArgs {
                    client_records: None,
                    expect: log_only.expect,
                    ..full.clone()
                },
            ),
        ];
        for (inputs, a) in cases {
            let r = diagnose(&a).expect("diagnose");
            let what = format!("{scenario}, {inputs}");
            let first = &r.recommendations[0];
            assert_eq!(first.action, "Set --mem-fraction-static 0.88", "{what}");
            assert!(
                first.expected_gain.contains("tok/s against the measured")
                    && first.expected_gain.contains("req/s"),
                "{what}: {}",
                first.expected_gain
            );
            assert!(first.gain_pct.is_some_and(|g| g > 10.0), "{what}");
            for rec in &r.recommendations {
                if let diagnosis::report::RecommendationKind::DoNotRaiseFraction { to } = rec.kind {
                    assert!(to >= 0.895, "{what}: {}", rec.action);
                }
            }
            let r88 = row(&r, "mem_fraction_static 0.88");
            assert_eq!(
                r88.feasibility.as_ref().map(|f| f.verdict),
                Some(kv_capacity::Feasibility::Fits),
                "{what}"
            );
            // 42 running requests at 0.85 scale to ~58 at 0.88's pool
            assert!(r88.decode_concurrency.is_some(), "{what}");
            let p = r.projection.as_ref().expect("projection");
            assert!(
                p.rows.iter().any(|x| x.label == r88.label),
                "{what}: no projected rate for 0.88"
            );
            let e = r.expectation.as_ref().expect("answer");
            assert_eq!(
                e.reach,
                Some(diagnosis::report::Reach::BeyondCeiling),
                "{what}"
            );
            // with the client's log, 4x is read against what the client prints too
            assert_eq!(
                e.client.is_some(),
                a.client_log.is_some(),
                "{what}: {}",
                e.text
            );
        }
    }
}
