//! Property tests: arbitrary bytes never panic, every line yields exactly one record, the alarm
//! parsers run on any message (issue 29), and the batch-marker invariant holds on generated,
//! mutated scheduler lines.

use proptest::prelude::*;
use sglang_log::{Event, LogReader, find_batch_marker, parse_line};

fn fragments() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "[2025-06-01 12:00:00 TP0] ",
        "[14:03:11 DP1 TP3] ",
        "[ DP15 TP15] ",
        "(SGLangEngine pid=7) ",
        "sglang-1  | ",
        "> ",
        "\u{1b}[32m",
        "\u{1b}[0m",
        "2025-10-20 03:02:22 INFO 31 [DP3 TP3 f.py:2] ",
        "Decode batch",
        "Prefill batch",
        "Prefil batch",
        "new fill batch",
        ". ",
        ", ",
        " [12], ",
        "(mixed #running-req: 4)",
        "#running-req: 5",
        "#token: full=1, swa=2",
        "token usage: 0.93",
        "cache hit rate: 12.5%",
        "cuda graph: True",
        "gen throughput (token/s): 1.5",
        ": ",
        ":",
        "=",
        "KV cache pool is full. Retract requests. ",
        "#new_token_ratio: 0.1 -> 0.2",
        "#retracted_reqs: 3",
        "max_total_num_tokens=5, ",
        "server_args=ServerArgs(",
        "'",
        ")",
        "[gpu=0] ",
        "\r",
        "\t",
        " ",
        "KV Cache is allocated. ",
        "#tokens: 9",
        "avail mem=3 GB",
        "Watchdog timeout",
        "é",
        "\u{0}",
    ]);
    prop::collection::vec(pieces, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let rec = parse_line(&bytes, 1);
        if find_batch_marker(&bytes).is_some() {
            let ok = matches!(rec.event, Event::Batch(_) | Event::Malformed { .. });
            prop_assert!(ok, "{:?}", rec.event);
        }
    }

    #[test]
    fn generated_lines_keep_the_marker_invariant(line in fragments()) {
        let rec = parse_line(line.as_bytes(), 3);
        prop_assert_eq!(rec.line_no, 3);
        let marker = find_batch_marker(line.as_bytes()).is_some();
        let batch_or_malformed = matches!(rec.event, Event::Batch(_) | Event::Malformed { .. });
        if marker {
            prop_assert!(batch_or_malformed, "{:?} -> {:?}", line, rec.event);
        }
        if let Event::Batch(b) = &rec.event {
            // accessors never panic and fields are slices of the input
            let _ = (b.running_req(), b.token_usage(), b.num_token(), b.graph(), b.cache_hit_rate());
            for (k, v) in b.fields() {
                prop_assert!(line.contains(k) && line.contains(v));
            }
        }
    }

    #[test]
    fn every_line_yields_one_record(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 0..40)) {
        let mut input = Vec::new();
        for c in &chunks {
            input.extend_from_slice(c);
            input.push(b'\n');
        }
        input.pop(); // last line unterminated
        // a line per `\n`, plus a non-empty unterminated tail
        let tail = input.rsplit(|&c| c == b'\n').next().map_or(0, |t| u64::from(!t.is_empty()));
        let expected = input.iter().filter(|&&c| c == b'\n').count() as u64 + tail;
        let mut n = 0u64;
        let mut last = 0u64;
        let stats = LogReader::from_reader("p", &input[..]).for_each(|rec| {
            n += 1;
            assert_eq!(rec.line_no, last + 1);
            last = rec.line_no;
        }).unwrap();
        prop_assert_eq!(n, expected);
        prop_assert_eq!(stats.lines, expected);
        prop_assert_eq!(stats.bytes, input.len() as u64);
        prop_assert_eq!(stats.lines, stats.events + stats.other_lines + stats.malformed_lines);
    }
}

/// The five fields of the real DP0 line of `tests/data/real/019-…` (key, sound value).
const SOUND: [(&str, &str); 5] = [
    ("#running-req", "92"),
    ("#token", "264288"),
    ("token usage", "0.92"),
    ("gen throughput (token/s)", "324.86"),
    ("#queue-req", "990"),
];

/// Values that no field may hold (issue 13 item 4).
fn damage() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e309".to_string()),
        (1u64..1_000_000).prop_map(|n| format!("-{n}")),
        (20_000_000u64..u64::MAX).prop_map(|n| format!("{n}{n}")),
        (2.0f64..1e6).prop_map(|x| format!("{x:.2}e300")),
    ]
}

proptest! {
    /// One damaged value on a real line: that field is rejected with its key, every other field
    /// keeps its sound value, and the reader counts exactly one rejected field.
    #[test]
    fn one_damaged_value_leaves_the_others_alone(which in 0usize..5, bad in damage()) {
        let fields: Vec<String> = SOUND
            .iter()
            .enumerate()
            .map(|(i, (k, v))| format!("{k}: {}", if i == which { bad.as_str() } else { v }))
            .collect();
        let line = format!("[2025-04-15 17:25:16 DP0 TP0] Decode batch. {}, ", fields.join(", "));
        let rec = parse_line(line.as_bytes(), 1);
        let b = rec.event.as_batch().expect("still a batch line");
        let got = [
            b.running_req().map(|v| v.to_string()),
            b.num_token().map(|v| v.to_string()),
            b.token_usage().map(|v| format!("{v:.2}")),
            b.gen_throughput().map(|v| format!("{v:.2}")),
            b.queue_req().map(|v| v.to_string()),
        ];
        for (i, g) in got.iter().enumerate() {
            if i == which {
                prop_assert_eq!(g, &None, "{}", line);
            } else {
                prop_assert_eq!(g.as_deref(), Some(SOUND[i].1), "{}", line);
            }
        }
        let rejected: Vec<_> = b.rejected_fields().map(|r| r.key).collect();
        prop_assert_eq!(rejected, vec![SOUND[which].0]);
        // a whole line, its newline included (a batch line the input ends inside is set aside)
        let whole = format!("{line}\n");
        let stats = LogReader::from_reader("p", whole.as_bytes()).for_each(|_| {}).unwrap();
        prop_assert_eq!((stats.rejected_lines, stats.rejected_fields), (1, 1));
    }
}

/// Pieces of the alarm lines (issue 29), shuffled and cut anywhere.
fn alarm_fragments() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "[2026-03-01 10:00:00 TP0] ",
        "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] ",
        "[Rank 3] ",
        "Watchdog caught collective operation timeout: ",
        "WorkNCCL(SeqNum=1, OpType=",
        "ALLREDUCE",
        ", Timeout(ms)=",
        ") ran for ",
        " milliseconds",
        "torch.OutOfMemoryError: ",
        "RuntimeError: ",
        "CUDA",
        " out of memory. ",
        "Tried to allocate ",
        "GPU 0 has a total capacity of ",
        " of which ",
        " is free.",
        "256.00 MiB",
        "1e400 GiB",
        "18446744073709551616",
        "slow scheduler pass: ",
        " took ",
        "ms (>= ",
        "Health check failed.",
        "for last ",
        " seconds",
        "Prefetch ",
        "Prefetching ",
        " completed with ",
        " pages for request ",
        "Revoking prefetch for request ",
        "insufficient hits (",
        "Creating storage backend '",
        "'",
        "127.0.0.1:1 - \"GET /health HTTP/1.1\" ",
        "503",
        "....",
        "9",
        "(",
        ")",
        ".",
        " ",
        "é",
    ]);
    prop::collection::vec(pieces, 0..16).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Every alarm parser runs on any message, and a line read as an alarm borrows only slices
    /// of itself.
    #[test]
    fn alarm_lines_never_panic(line in alarm_fragments()) {
        let rec = parse_line(line.as_bytes(), 1);
        let inside = |s: &str| {
            let (o, i) = (line.as_ptr() as usize, s.as_ptr() as usize);
            i >= o && i + s.len() <= o + line.len()
        };
        match &rec.event {
            Event::HttpAccess(a) => prop_assert!(inside(a.path) && inside(a.method)),
            Event::OutOfMemory(m) => prop_assert!(inside(m.device)),
            Event::SlowSchedulerPass(p) => prop_assert!(inside(p.label)),
            Event::Nccl(n) => prop_assert!(n.op.is_none_or(inside)),
            _ => {}
        }
        for m in [line.as_str(), rec.message] {
            let _ = (
                sglang_log::parse_out_of_memory(m),
                sglang_log::parse_nccl(m),
                sglang_log::parse_slow_pass(m),
                sglang_log::parse_hicache_line(m),
                sglang_log::alarms::parse_health_check_failed(m),
            );
        }
    }
}

/// The benchmark clients' real files (`tests/data/clients/`), each read whole.
fn client_files() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/clients");
    let mut out = Vec::new();
    for d in std::fs::read_dir(&dir).expect("clients dir").flatten() {
        if let Ok(files) = std::fs::read_dir(d.path()) {
            for f in files.flatten() {
                if let Ok(t) = std::fs::read_to_string(f.path()) {
                    out.push(t);
                }
            }
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A client's file cut anywhere, with a stretch replaced by arbitrary text (a crash while
    /// writing, a hand edit, another tool's version), is read or refused, never a panic, and
    /// damage never invents requests (at most one more than the whole file gives: the junk's own
    /// line).
    #[test]
    fn damaged_client_files_never_panic(
        which in 0usize..64,
        cut in 0.0f64..1.0,
        at in 0.0f64..1.0,
        junk in "[ -~\n{}\\[\\]\":,0-9]{0,40}",
    ) {
        let files = client_files();
        prop_assume!(!files.is_empty());
        let text = &files[which % files.len()];
        let boundary = |x: f64| {
            let mut i = (text.len() as f64 * x) as usize;
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let (c, a) = (boundary(cut), boundary(at));
        let (lo, hi) = (c.min(a), c.max(a));
        let damaged = format!("{}{junk}{}", &text[..lo], &text[hi..]);
        let whole = sglang_log::parse_client("whole", text).requests.len();
        let ev = sglang_log::parse_client("damaged", &damaged);
        prop_assert!(ev.requests.len() <= whole + 1, "{} > {whole}", ev.requests.len());
    }
}
