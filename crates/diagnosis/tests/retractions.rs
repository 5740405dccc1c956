//! Retraction events on a long log: exact totals however many there are, a bounded sample, and
//! TP ranks' copies of one event still matched to it after the sample is thinned.

use diagnosis::EvidenceBuilder;
use diagnosis::evidence::MAX_RETRACTION_SAMPLES;
use sglang_log::LogReader;

/// `n` retraction events, one per second, each printed by `ranks` TP ranks.
fn log(n: u64, ranks: u32) -> String {
    let mut s = String::new();
    for i in 0..n {
        let (h, m, sec) = (i / 3600, i / 60 % 60, i % 60);
        for tp in 0..ranks {
            s.push_str(&format!(
                "[2026-01-01 {h:02}:{m:02}:{sec:02} TP{tp}] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: {}, #new_token_ratio: 0.1000 -> 0.{:04}\n",
                100 + i % 7,
                3000 + i % 5000
            ));
        }
    }
    s
}

#[test]
fn totals_are_exact_and_the_sample_is_bounded() {
    let n = 3 * MAX_RETRACTION_SAMPLES as u64 + 123;
    let text = log(n, 4);
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("long.log");
    let stats = LogReader::from_reader("long.log", text.as_bytes())
        .for_each(|r| b.push(id, r))
        .expect("read");
    b.finish_source(id, &stats);
    let ev = b.build();
    let t = ev.retraction_totals;
    assert_eq!(ev.retraction_lines, 4 * n);
    assert_eq!(t.events, n, "every rank's copy matched to its event");
    assert_eq!(t.retracted_reqs, 2 * n);
    let freed: u64 = (0..n).map(|i| 100 + i % 7).sum();
    assert_eq!(t.tokens_freed, Some(freed));
    assert_eq!(t.max_ratio_after, Some(0.7999));
    let day = ev.retractions[0].t.expect("t");
    assert_eq!(t.time_span, Some((day, day + (n - 1) as f64)));
    assert_eq!(t.first_line.map(|l| l.line), Some(1));
    assert_eq!(t.last_line.map(|l| l.line), Some(4 * n));
    // Bounded, spread over the whole log, and the newest events still carry every rank.
    assert!(ev.retractions.len() <= MAX_RETRACTION_SAMPLES);
    assert!(ev.retractions.len() > MAX_RETRACTION_SAMPLES / 4);
    assert_eq!(ev.retractions[0].t, Some(day));
    assert_eq!(
        ev.retractions.last().and_then(|e| e.t),
        Some(day + (n - 1) as f64)
    );
    assert!(ev.retractions.iter().all(|e| e.ranks_reporting == 4));
    let report = diagnosis::diagnose(&ev);
    assert_eq!(report.retractions.events, n);
    assert_eq!(report.retractions.retracted_requests, 2 * n);
}
