//! `parse_line` on arbitrary bytes: never panics, exactly one record, the batch-marker
//! invariant, every field is a slice of the line, every accessor runs, the graph flag is the
//! first `<word> graph` field, the screened HTTP error parser agrees with the grammar, and
//! every fast path (access scan, pair walk, envelope and splitter shortcuts, batch- and
//! access-line layouts) agrees with the grammar of record (`sglang_log::grammar_check`).
//!
//! Input shaping: if the first byte is 0xFE, the rest is repeated until the line is just over
//! 64 KiB (the 16-bit span limit), so the long-line paths get fuzzed too.
//!
//! Speed (the target runs ~10^8 times): nothing here walks the line byte by byte in
//! instrumented code. "Is a slice of" is checked on the pointers (stronger than the substring
//! search it replaced, and O(1) on a 64 KiB line), and the batch-marker invariant, which
//! needs a second search of the line, is only evaluated when the event could break it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sglang_log::{Event, find_batch_marker, parse_line};

/// Whether `inner` lies within `outer` (is a sub-slice of it, not a copy).
fn within(inner: &[u8], outer: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    i >= o && i + inner.len() <= o + outer.len()
}

fuzz_target!(|data: &[u8]| {
    let owned;
    let line: &[u8] = match data.split_first() {
        Some((0xFE, rest)) if !rest.is_empty() => {
            owned = rest.repeat((66_000 / rest.len()) + 1);
            &owned
        }
        _ => data,
    };
    let rec = parse_line(line, 7);
    assert_eq!(rec.line_no, 7);
    // a valid-UTF-8 line without `\r` holding a batch marker is `Batch` or `Malformed`
    if !matches!(rec.event, Event::Batch(_) | Event::Malformed { .. }) {
        assert!(
            std::str::from_utf8(line).is_err()
                || line.contains(&b'\r')
                || find_batch_marker(line).is_none(),
            "batch marker lost: {:?}",
            rec.event
        );
    }
    // every fast path reads the input as the grammar of record does: the access scan, the
    // pair walk, and the envelope / key-order / splitter shortcuts (the line after itself, so
    // the caches the first parse filled are used on the second)
    assert!(sglang_log::grammar_check::access_agrees(rec.message));
    if let Ok(s) = std::str::from_utf8(line) {
        assert!(sglang_log::grammar_check::access_agrees(s));
    }
    assert!(sglang_log::grammar_check::pairs_agree(line));
    assert!(sglang_log::grammar_check::lines_agree(&[line, line]));
    // the line layouts: the line kept by its second parse, then read by its layout, as itself
    // and with every digit changed (the same layout; a fraction's `0.` becomes `7.`, whose
    // screening bit, and a status, are read from the line), and the input's own lines
    let turned: Vec<u8> = line
        .iter()
        .map(|&c| if c.is_ascii_digit() { b'0' + (c - b'0' + 7) % 10 } else { c })
        .collect();
    assert!(sglang_log::grammar_check::lines_agree(&[line, line, line, &turned]));
    if line.len() < 4096 && line.contains(&b'\n') {
        let lines: Vec<&[u8]> = line.split(|&c| c == b'\n').collect();
        assert!(sglang_log::grammar_check::lines_agree(&lines));
    }
    // the screened error parser agrees with the whole access grammar
    assert_eq!(
        sglang_log::parse_http_error(rec.message),
        sglang_log::parse_http_access(rec.message).filter(|a| a.status >= 400)
    );
    if let Event::Batch(b) = &rec.event {
        // the graph flag is the first `<word> graph` field (the accessor's shortcuts agree)
        let device = b
            .fields()
            .find_map(|(k, _)| {
                k.strip_suffix(" graph")
                    .filter(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_alphanumeric()))
            });
        // a damaged line may read a merged key as a known graph key (`recover_cut_keys`):
        // then the flag's device is that key's word
        if b.broken_fields() == 0 {
            assert_eq!(b.graph_device(), device);
        } else if let Some(d) = b.graph_device() {
            assert!(
                Some(d) == device || ["cuda", "cpu", "npu", "musa"].contains(&d),
                "graph device {d:?}"
            );
        }
        // the combined accessor says what the two say
        assert_eq!(b.graph_flag(), b.graph_device().map(|d| (d, b.graph())));
        let text = b.text().as_bytes();
        assert!(within(text, line), "batch text is not a slice of the line");
        for (k, v) in b.fields() {
            assert!(!k.is_empty());
            assert!(
                within(k.as_bytes(), text) && within(v.as_bytes(), text),
                "field {k:?}: {v:?} is not a slice of the batch text"
            );
            assert!(b.get(k).is_some());
        }
        assert!(b.field_count() <= sglang_log::MAX_FIELDS);
        let _ = b.unknown_fields().count();
        let _ = (
            b.running_req(),
            b.queue_req(),
            b.num_token(),
            b.num_swa_token(),
            b.token_usage(),
            b.swa_token_usage(),
            b.mamba_num(),
            b.mamba_usage(),
            b.gen_throughput(),
            b.input_throughput(),
            b.new_seq(),
            b.new_token(),
            b.cached_token(),
            b.cache_hit_rate(),
            b.pending_token(),
            b.accept_len(),
            b.accept_rate(),
            b.graph(),
            b.graph_device(),
        );
        let _ = (
            b.pre_allocated_usage(),
            b.prealloc_req(),
            b.bootstrap_req(),
            b.transfer_req(),
            b.retracted_req(),
            b.inflight_req(),
            b.optimistic_req(),
            b.waiting_image_req(),
            b.cap_len(),
            b.fwd_occupancy(),
            b.est_tflops_per_gpu(),
            b.est_read_bw_gbps(),
            b.est_write_bw_gbps(),
            b.timestamp_field(),
        );
        let _ = format!("{b:?}");
        // a rejected value is a field of the line as printed, and the first value of the known
        // key its key is or ends with (a key cut and joined by a terminal is read as the known
        // key of its tail on a damaged line: `recover_cut_keys`)
        for r in b.rejected_fields() {
            assert!(b.fields().any(|f| f == (r.key, r.value)), "{r:?}");
            // the known key it is, else the one sharing its longest tail (of at least 8
            // bytes: `##hed-token` is `#cached-token` cut and joined)
            let tail = |k: &str| {
                k.bytes()
                    .rev()
                    .zip(r.key.bytes().rev())
                    .take_while(|(a, b)| a == b)
                    .count()
            };
            // (never when the key is a known key cut only at its start)
            let known = sglang_log::KNOWN_KEYS
                .iter()
                .find(|k| **k == r.key)
                .or_else(|| {
                    let start_cut = sglang_log::KNOWN_KEYS.iter().any(|k| tail(k) >= r.key.len());
                    sglang_log::KNOWN_KEYS
                        .iter()
                        .filter(|k| !start_cut && tail(k) >= 8)
                        .max_by_key(|k| tail(k))
                });
            assert!(known.is_some_and(|k| b.get(k) == Some(r.value)), "{r:?}");
            let _ = r.reason.describe();
        }
    }
    // the alarm lines' borrowed parts are slices of the line; every alarm parser runs on any
    // message without panicking (issue 29)
    match &rec.event {
        Event::HttpAccess(a) => {
            assert!(within(a.method.as_bytes(), line) && within(a.path.as_bytes(), line));
            assert!((100..600).contains(&a.status));
        }
        Event::OutOfMemory(m) => assert!(within(m.device.as_bytes(), line)),
        Event::Nccl(n) => {
            if let Some(op) = n.op {
                assert!(within(op.as_bytes(), line));
            }
        }
        Event::SlowSchedulerPass(p) => assert!(within(p.label.as_bytes(), line)),
        Event::HiCache(sglang_log::HiCacheLine::StorageBackend(b)) => {
            assert!(within(b.as_bytes(), line))
        }
        Event::ContextRejected(c) => {
            let _ = c.requested_tokens();
        }
        Event::KvCacheDtype(d) => assert!(within(d.as_bytes(), line)),
        _ => {}
    }
    let m = rec.message;
    let _ = (
        sglang_log::parse_out_of_memory(m),
        sglang_log::parse_nccl(m),
        sglang_log::parse_slow_pass(m),
        sglang_log::parse_hicache_line(m),
        sglang_log::alarms::parse_health_check_failed(m),
        sglang_log::parse_context_rejection(m),
    );
    if let Some(t) = rec.timestamp {
        let _ = (t.seconds(), t.date(), t.to_string());
    }
    let _ = (rec.ranks.to_string(), rec.event.name());
});
