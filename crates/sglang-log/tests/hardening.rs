//! Issue 13 item 4: non-finite and impossible field values are set aside with a reason, the
//! line's sound fields are still used, and the reader counts what it set aside. The lines are
//! the real first line of `tests/data/real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log` with one
//! value damaged.

use sglang_log::{Event, LogReader, Rejection, parse_line};

/// The real line (DP0 of a DP-attention DeepSeek-R1 run on 2x8 H100).
const REAL: &str = "[2025-04-15 17:25:16 DP0 TP0] Decode batch. #running-req: 92, #token: 264288, token usage: 0.92, gen throughput (token/s): 324.86, #queue-req: 990, ";

/// `REAL` with `from` replaced by `to` (exactly once).
fn damaged(from: &str, to: &str) -> String {
    assert_eq!(REAL.matches(from).count(), 1, "{from}");
    REAL.replace(from, to)
}

/// The accessors' values `(running, token, usage, gen, queue)` and the rejected fields
/// `(key, value, reason)` of a line.
#[allow(clippy::type_complexity)]
fn read(
    line: &str,
) -> (
    (
        Option<u64>,
        Option<u64>,
        Option<f64>,
        Option<f64>,
        Option<u64>,
    ),
    Vec<(String, String, Rejection)>,
) {
    let rec = parse_line(line.as_bytes(), 1);
    let Event::Batch(b) = &rec.event else {
        panic!("not a batch line: {line}");
    };
    let values = (
        b.running_req(),
        b.num_token(),
        b.token_usage(),
        b.gen_throughput(),
        b.queue_req(),
    );
    let rejected = b
        .rejected_fields()
        .map(|r| (r.key.to_string(), r.value.to_string(), r.reason))
        .collect();
    (values, rejected)
}

#[test]
fn the_real_line_is_sound() {
    let (v, rejected) = read(REAL);
    assert_eq!(
        v,
        (Some(92), Some(264_288), Some(0.92), Some(324.86), Some(990))
    );
    assert!(rejected.is_empty(), "{rejected:?}");
}

#[test]
fn non_finite_throughput_is_set_aside_and_the_rest_is_used() {
    for bad in ["NaN", "nan", "1e309", "inf", "-inf"] {
        let line = damaged("324.86", bad);
        let (v, rejected) = read(&line);
        assert_eq!(
            v,
            (Some(92), Some(264_288), Some(0.92), None, Some(990)),
            "{bad}"
        );
        assert_eq!(
            rejected,
            [(
                "gen throughput (token/s)".to_string(),
                bad.to_string(),
                Rejection::NotFinite
            )],
            "{bad}"
        );
    }
}

#[test]
fn impossible_counts_and_usage_are_set_aside() {
    for (from, to, key, reason) in [
        (
            "#queue-req: 990",
            "#queue-req: -3",
            "#queue-req",
            Rejection::Negative,
        ),
        (
            "#running-req: 92",
            "#running-req: 20000000",
            "#running-req",
            Rejection::AboveLimit,
        ),
        (
            "token usage: 0.92",
            "token usage: 97.00",
            "token usage",
            Rejection::AboveLimit,
        ),
        (
            "#token: 264288",
            "#token: 99999999999999999999999",
            "#token",
            Rejection::AboveLimit,
        ),
        (
            "324.86",
            "-12.50",
            "gen throughput (token/s)",
            Rejection::Negative,
        ),
        (
            "#queue-req: 990",
            "#queue-req: 9.5",
            "#queue-req",
            Rejection::NotANumber,
        ),
    ] {
        let line = damaged(from, to);
        let (v, rejected) = read(&line);
        assert_eq!(rejected.len(), 1, "{line}: {rejected:?}");
        assert_eq!(
            (rejected[0].0.as_str(), rejected[0].2),
            (key, reason),
            "{line}"
        );
        // exactly the damaged field is gone
        let sound = (Some(92), Some(264_288), Some(0.92), Some(324.86), Some(990));
        let gone = match key {
            "#running-req" => (None, sound.1, sound.2, sound.3, sound.4),
            "#token" => (sound.0, None, sound.2, sound.3, sound.4),
            "token usage" => (sound.0, sound.1, None, sound.3, sound.4),
            "gen throughput (token/s)" => (sound.0, sound.1, sound.2, None, sound.4),
            _ => (sound.0, sound.1, sound.2, sound.3, None),
        };
        assert_eq!(v, gone, "{line}");
    }
    // the limits themselves are sound
    let (v, rejected) = read(&damaged("#running-req: 92", "#running-req: 10000000"));
    assert_eq!((v.0, rejected.len()), (Some(10_000_000), 0));
    let (v, rejected) = read(&damaged("token usage: 0.92", "token usage: 1.00"));
    assert_eq!((v.2, rejected.len()), (Some(1.0), 0));
}

#[test]
fn the_hybrid_token_form_is_checked_part_by_part() {
    let good = "[2025-07-05 12:00:00] Decode batch. #running-req: 17, #token: full=52010, swa=31020, token usage: full=0.43, swa=0.32, cuda graph: True, gen throughput (token/s): 1203.55, #queue-req: 0";
    let rec = parse_line(good.as_bytes(), 1);
    let b = rec.event.as_batch().unwrap();
    assert_eq!(b.rejected_fields().count(), 0);
    let bad = good.replace("swa=0.32", "swa=NaN");
    let rec = parse_line(bad.as_bytes(), 1);
    let b = rec.event.as_batch().unwrap();
    let r: Vec<_> = b.rejected_fields().map(|r| (r.key, r.reason)).collect();
    assert_eq!(r, [("token usage", Rejection::NotFinite)]);
    assert_eq!(b.token_usage(), Some(0.43));
    assert_eq!(b.swa_token_usage(), None);
}

/// The reader counts the set-aside fields and keeps them with their line numbers; a log whose
/// one line says `NaN` keeps every other line's numbers.
#[test]
fn the_reader_counts_rejected_fields_with_line_numbers() {
    let log = format!(
        "{REAL}\n{}\n{}\n{REAL}\n",
        damaged("324.86", "NaN"),
        damaged("token usage: 0.92", "token usage: 1e309")
            .replace("#queue-req: 990", "#queue-req: -1"),
    );
    let mut gen_sum = 0.0;
    let stats = LogReader::from_reader("damaged", log.as_bytes())
        .for_each(|rec| {
            if let Some(g) = rec.event.as_batch().and_then(|b| b.gen_throughput()) {
                gen_sum += g;
            }
        })
        .unwrap();
    // three sound throughputs (lines 1, 3, 4): the NaN neither poisons nor drops the sum
    assert!((gen_sum - 3.0 * 324.86).abs() < 1e-9, "{gen_sum}");
    assert_eq!(
        (
            stats.batch_lines,
            stats.rejected_lines,
            stats.rejected_fields
        ),
        (4, 2, 3)
    );
    let kept: Vec<_> = stats
        .rejected
        .iter()
        .map(|r| (r.line_no, r.key.as_str(), r.value.as_str(), r.reason))
        .collect();
    assert_eq!(
        kept,
        [
            (2, "gen throughput (token/s)", "NaN", Rejection::NotFinite),
            (3, "#queue-req", "-1", Rejection::Negative),
            (3, "token usage", "1e309", Rejection::NotFinite),
        ]
    );
    assert_eq!(stats.malformed_lines, 0);
}

/// The limits are far from real values: no field of any real log in `tests/data/real*` is set
/// aside.
#[test]
fn no_real_log_has_a_rejected_field() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut files = Vec::new();
    for dir in ["real", "real-2", "real-long"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        files.extend(rd.map(|e| e.unwrap().path()));
    }
    files.sort();
    assert!(files.len() > 20, "{files:?}");
    let mut batch = 0;
    for f in &files {
        let Ok(mut r) = LogReader::open(f) else {
            continue;
        };
        let Ok(stats) = r.for_each(|_| {}) else {
            continue;
        };
        assert_eq!(stats.rejected, [], "{}", f.display());
        batch += stats.batch_lines;
    }
    assert!(batch > 10_000, "{batch}");
}
