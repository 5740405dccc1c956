//! Inputs found by the coverage-guided fuzzer (`fuzz/`, see fuzz/README.md), kept as
//! regression tests. Each names the artifact it came from.

use sglang_log::{Event, LogReader, parse_line};

/// `crash-0e9916aa…`: the batch marker sat inside a Ray actor tag, which is stripped as a
/// wrapper before the marker search, so the line came out as `Other` (a lost scheduler line).
#[test]
fn marker_inside_a_stripped_ray_tag_is_not_lost() {
    let line =
        b"(SGLangEngine pid=new fill batch1234, ip=10.0.0.5) [w_token: e_cache_hit_rate: 0.00%.";
    let rec = parse_line(line, 1);
    assert_eq!(
        rec.event,
        Event::Malformed {
            reason: "batch marker not followed by a separator"
        }
    );
    // the same through the reader: one line, one malformed record, nothing dropped
    let mut r = LogReader::from_reader("t", &line[..]);
    let stats = r.for_each(|_| {}).unwrap();
    assert_eq!((stats.lines, stats.malformed_lines), (1, 1));
}

/// `crash-3c74adee…`: a column cut merged a stamp's tail into the graph flag's key
/// (`04:05 E[2025-01-02 03:04:cuda graph: 0`); the damaged line's key is read as `cuda graph`
/// (`recover_cut_keys`), so its device is `cuda`, not the merged text before ` graph`.
#[test]
fn a_recovered_graph_key_names_its_device() {
    let line = b"[248aph: 0, c context_lPrefill batch:04:05 E[2025-01-02 03:04:cuda graph: 0, c context_len=131072";
    let rec = parse_line(line, 1);
    let Event::Batch(b) = &rec.event else {
        panic!("{:?}", rec.event)
    };
    assert_eq!(b.broken_fields(), 1);
    assert_eq!(b.graph_device(), Some("cuda"));
    // `0` is no bool: the flag's value is unknown
    assert_eq!(b.graph(), None);
    // a clean line's device is its key's word, as before
    let clean = parse_line(
        b"Decode batch. #running-req: 1, #token: 5, npu graph: True",
        1,
    );
    let Event::Batch(c) = &clean.event else {
        panic!("{:?}", clean.event)
    };
    assert_eq!((c.graph_device(), c.graph()), (Some("npu"), Some(true)));
}

/// `crash-fcfa8e1a…`: on a damaged line, `##hed-token` (the tail of `#cached-token` after a
/// cut column) is read as `#cached-token`, and its impossible value is set aside under the
/// key as printed: the value is that known key's (the fuzz target's check had asked for a key
/// that ends with the whole known key).
#[test]
fn a_rejected_value_of_a_recovered_key_is_that_keys() {
    let line = b"[2026-01-15 08:00:03 TP0] Prefill batch. ##hed-token: 371,ew-seq: 4, #new-token: 2422, acc#hed-token: 371, token usage: 0.01, #running-req> 7, #queue-req: '46";
    let rec = parse_line(line, 1);
    let Event::Batch(b) = &rec.event else {
        panic!("{:?}", rec.event)
    };
    let rejected: Vec<_> = b.rejected_fields().map(|r| (r.key, r.value)).collect();
    assert_eq!(
        rejected,
        vec![("#queue-req", "'46"), ("##hed-token", "371,ew-seq: 4")]
    );
    assert_eq!(b.get("##hed-token"), Some("371,ew-seq: 4"));
    assert_eq!(b.cached_token(), None); // not a number
    assert_eq!(b.new_token(), Some(2422));
}

/// `crash-1758a0e5…`: a graph-capture bar glued before a decode line (no stamp of its own)
/// was read as the bar, and the batch line it carried was lost; a line with a batch marker is
/// the batch line's (here malformed: its fields are not `key: value`).
#[test]
fn a_capture_bar_before_a_batch_marker_is_the_batch_line() {
    let line = b"> [Capturing batches (chdog_timeout=3002 03:04:05 TP0] Decode batch. #,, chunked_prefill_sizeslow scheduler pass: ksen=16384, max_running_requests=4097";
    let rec = parse_line(line, 1);
    assert!(
        matches!(rec.event, Event::Batch(_) | Event::Malformed { .. }),
        "{:?}",
        rec.event
    );
    // a bar alone is still the bar
    let bar = parse_line(
        b"Capturing batches (bs=8 avail_mem=20.50 GB):  50%|#####",
        1,
    );
    assert!(
        matches!(bar.event, Event::GraphCapture(_)),
        "{:?}",
        bar.event
    );
}

/// `crash-25e40011…`: the access grammar reads a status with leading zeros (`0400` is 400);
/// the error screen looked for a `4` or `5` right after the blanks and missed it.
#[test]
fn an_error_status_with_leading_zeros_is_an_error() {
    let msg = r#"1 - "POST ompls HTTP/0" 0400qror112"#;
    let a = sglang_log::parse_http_access(msg).map(|a| a.status);
    assert_eq!(a, Some(400));
    assert_eq!(
        sglang_log::parse_http_error(msg).map(|a| a.status),
        Some(400)
    );
    assert_eq!(
        sglang_log::parse_http_error(r#"1 - "GET / HTTP/1.1" 0200 OK"#),
        None
    );
}

/// `crash-ee37f8d0…`: `en throughput (token/s)` is `gen throughput (token/s)` cut at its start;
/// on a damaged line it was read as `input throughput (token/s)`, the known key with the
/// longest tail that left a head over. A key that a known key ends with is not recovered as
/// another key.
#[test]
fn a_key_cut_at_its_start_is_not_read_as_another_key() {
    let line = b"Decode batch. #running-req: 3, gen throughput (toke\nn/s): 325.86, #queue-rerunning-r usage: 0.92, en throughput (token/s): 325.86,ng-req: 3, #token: 4";
    let rec = parse_line(line, 1);
    let Event::Batch(b) = &rec.event else {
        panic!("{:?}", rec.event)
    };
    assert!(b.broken_fields() > 0 || b.field_count() > 0);
    assert_eq!(b.input_throughput(), None);
    assert_eq!(b.gen_throughput(), None);
    assert_eq!((b.running_req(), b.num_token()), (Some(3), Some(4)));
    assert_eq!(b.rejected_fields().count(), 0);
}

/// `crash-dad334b4…`: the access grammar reads a status with any number of leading zeros as
/// its value (`000…0153` is 153); the scan that replaced it gave up past 19 digits.
#[test]
fn an_access_status_with_many_leading_zeros_is_read() {
    let msg = format!(
        r#"[202620 - "POST /v1/.ons HTTP/1.1" {}153z"#,
        "0".repeat(50)
    );
    let a = sglang_log::parse_http_access(&msg).map(|a| a.status);
    assert_eq!(a, Some(153));
    let z = format!(r#"1.2.3.4:5 - "GET / HTTP/1.1" {} OK"#, "0".repeat(30));
    assert_eq!(sglang_log::parse_http_access(&z), None); // 0 is no status
}

/// `crash-b8d018ea…` (the `parse_line` target's turned-digits check): an access line with a
/// `[gpu=N]` tag before its peer was kept as an access-line layout, and the same line with
/// another rank digit was read by it with the kept line's rank. A parser that keeps its caches
/// (layouts included) must read every line as a fresh one does.
#[test]
fn an_access_line_with_a_gpu_tag_keeps_its_own_rank() {
    let g0 = br#"[2026-02-21 13:06:55] INFO:    [gpu=0] 0 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request"#;
    let g7 = br#"[2026-02-21 13:06:55] INFO:    [gpu=7] 0 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request"#;
    let mut p = sglang_log::LineParser::new();
    for (i, l) in [&g0[..], g0, g0, g7].into_iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(p.parse(l, n), parse_line(l, n), "line {n}");
    }
    assert_ne!(p.parse(g7, 5).ranks, parse_line(g0, 5).ranks);
}
