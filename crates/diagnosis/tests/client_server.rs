//! Client records against the server's log: Little's law between the two views.

use diagnosis::{Context, EvidenceBuilder, FindingKind};
use sglang_log::LogReader;
use sglang_log::parse_client;

/// A steady server: 10 running, nothing queued, a decode line every 10 s for 1,000 s.
fn server_log() -> String {
    let mut s = String::new();
    for i in 0..=100 {
        let t = i * 10;
        s.push_str(&format!(
            "[2026-01-01 00:{:02}:{:02}] Decode batch, #running-req: 10, #token: 5000, token usage: 0.50, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n",
            t / 60,
            t % 60
        ));
    }
    s
}

/// One completion a second, each 30 s after its submit.
fn records(latency_s: f64) -> String {
    (0..1000)
        .map(|i| {
            let end = 1_767_225_600.0 + f64::from(i);
            format!(
                "{{\"id\":\"r{i}\",\"ok\":true,\"submit_unix_s\":{},\"end_unix_s\":{end},\"usage\":{{\"prompt_tokens\":100,\"completion_tokens\":100}}}}\n",
                end - latency_s
            )
        })
        .collect()
}

/// Diagnose a server log beside a client's records (both as text).
fn diagnose_texts(log: &str, records: &str) -> diagnosis::Report {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("server.log");
    let stats = LogReader::from_reader("server.log", log.as_bytes())
        .for_each(|r| b.push(id, r))
        .expect("read");
    b.finish_source(id, &stats);
    let ctx = Context {
        clients: vec![parse_client("records.jsonl", records)],
        ..Context::default()
    };
    diagnosis::diagnose_with(&b.build(), &ctx)
}

fn diagnose(latency_s: f64) -> diagnosis::Report {
    diagnose_texts(&server_log(), &records(latency_s))
}

#[test]
fn requests_held_outside_the_server_break_littles_law() {
    // 1 req/s × 30 s = 30 in flight by the client's account; the server holds 10.
    let r = diagnose(30.0);
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::LittlesLaw)
        .expect("Little's law finding");
    let fig = |name: &str| {
        f.figures
            .iter()
            .find(|g| g.name.starts_with(name))
            .and_then(|g| g.value)
            .expect(name)
    };
    assert_eq!(fig("requests in the server"), 10.0);
    assert!((fig("completion rate × mean latency") - 30.0).abs() < 1.0);
    assert!((fig("relative mismatch") + 0.667).abs() < 0.02);
    assert!(f.detail.contains("outside the server's batch"));
}

#[test]
fn consistent_views_raise_no_littles_law_finding() {
    // 1 req/s × 10 s = 10 in flight, as the server says.
    let r = diagnose(10.0);
    assert!(!r.findings.iter().any(|f| f.kind == FindingKind::LittlesLaw));
    let c = r.client.expect("client");
    assert_eq!(c.completed, 1000);
    assert!((c.windowed_req_per_s.expect("rate").value - 1.0).abs() < 0.1);
}

/// A short client run that straddles the last whole second of a log stamped in whole seconds:
/// the overlap with the server's steady span is shorter than the log clock resolves, so the
/// window is the client's own second half, not a sliver that holds no completion.
#[test]
fn overlap_shorter_than_the_log_clock_falls_back_to_the_clients_second_half() {
    // Decode lines at 00:00:00 .. 00:00:10, one a second.
    let log: String = (0..=10)
        .map(|t| format!(
            "[2026-01-01 00:00:{t:02}] Decode batch, #running-req: 10, #token: 5000, token usage: 0.50, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
        ))
        .collect();
    // All submitted at 00:00:09.95; 10 completions at 10.01, 10.02, ..., 10.10.
    let t0 = 1_767_225_600.0 + 9.95;
    let recs: String = (1..=10)
        .map(|i| {
            let end = 1_767_225_610.0 + f64::from(i) / 100.0;
            format!(
                "{{\"id\":\"r{i}\",\"ok\":true,\"submit_unix_s\":{t0},\"end_unix_s\":{end},\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":40}}}}\n"
            )
        })
        .collect();
    let r = diagnose_texts(&log, &recs);
    let span = r.schedulers[0].span.as_ref().expect("span");
    assert_eq!(span.timestamp_resolution_s, 1.0);
    let w = r
        .client
        .expect("client")
        .windowed_req_per_s
        .expect("windowed rate");
    assert!(w.method.contains("second half"), "{}", w.method);
    // Second half: 10.025 .. 10.10 (0.075 s) holds the 8 completions at 10.03 .. 10.10.
    assert!((w.window_s - 0.075).abs() < 1e-3, "{}", w.window_s);
    assert!((w.value - 8.0 / 0.075).abs() < 0.5, "{}", w.value);
}

/// Issue 32: the client view gives the TTFT its records carry. AIPerf 0.13's first 20 records
/// (`tests/data/clients/aiperf-0.13.0/profile_export.head20.jsonl`) average 0.1230 s; the
/// whole file's 268 give 13.91 s mean, 15.37 s median and 20.58 s p99, AIPerf's own console
/// printing 13,905.82 / 15,375.23 / 20,577.75 ms.
#[test]
fn client_records_give_their_ttft() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/clients/aiperf-0.13.0/profile_export.head20.jsonl");
    let text = std::fs::read_to_string(path).expect("test data");
    let ctx = Context {
        clients: vec![parse_client("profile_export.jsonl", &text)],
        ..Context::default()
    };
    let s = diagnosis::client_view::client_summary(&ctx, None, None).expect("summary");
    let t = s.ttft_s.expect("ttft");
    assert_eq!(t.n, 20);
    assert!((t.mean - 0.122_969_5).abs() < 1e-6, "{t:?}");
    assert!(t.p50 <= t.p99, "{t:?}");
    assert_eq!(s.cancelled, 0);
    // each record's inter_token_latency (ms), as AIPerf averages it: 36.70 ms over these 20
    // (the whole file: 38.0 / 38.7 / 39.1 ms against its console's 37.99 / 38.66 / 39.12)
    let itl = s.itl_s.expect("itl");
    assert_eq!(itl.n, 20);
    assert!((itl.mean - 0.036_697_286).abs() < 1e-8, "{itl:?}");
}
