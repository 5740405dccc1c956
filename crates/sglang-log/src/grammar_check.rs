//! The fast paths beside the grammars of record they replace, for the fuzz targets (feature
//! `grammar-check`) and the tests: each function says whether the two read `input` alike. The
//! nom grammars stay the definition of every format; a fast path that reads one input
//! differently is a bug of the fast path.

use crate::Record;
use crate::line::{LineCache, parse_line_cached};

/// Whether the hand-written access-line scan ([`crate::parse_http_access`]) reads `msg` as
/// the nom grammar does.
pub fn access_agrees(msg: &str) -> bool {
    crate::parse_http_access(msg) == crate::access::parse_http_access_grammar(msg)
}

/// Whether the one-scan `key: value` / `key=value` pair walk (retraction, capacity and
/// KV-allocation lines) finds the pairs the nom walk finds in `body`, for both separators.
pub fn pairs_agree(body: &[u8]) -> bool {
    type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;
    [b':', b'='].into_iter().all(|kv| {
        let (mut fast, mut grammar): (Pairs<'_>, Pairs<'_>) = (Vec::new(), Vec::new());
        crate::events::for_each_pair(body, b", ", kv, |k, v| fast.push((k, v)));
        crate::events::for_each_pair_grammar(body, b", ", kv, |k, v| grammar.push((k, v)));
        fast == grammar
    })
}

/// The records of `lines`, parsed in order with the reader's caches and fast paths (`fast`)
/// or with the general path only.
fn records(lines: &[&[u8]], fast: bool) -> Vec<String> {
    let mut cache = LineCache::new(fast);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let rec: Record<'_> = parse_line_cached(l, i as u64 + 1, &mut cache);
            format!("{rec:?}")
        })
        .collect()
}

/// Whether the envelope, key-order, splitter and layout fast paths give every line of
/// `lines`, read in order (the caches carry from line to line), the record the general path
/// gives; and whether the line layouts (`batch/layout.rs`) give exactly the record the other
/// fast paths give, a batch line's screening bits included.
pub fn lines_agree(lines: &[&[u8]]) -> bool {
    records(lines, true) == records(lines, false) && layouts_agree(lines)
}

/// Whether every line of `lines`, read in order, gets the same record, bit for bit, with the
/// line layouts as without them, and a batch line's one-pass readings are its accessors'.
fn layouts_agree(lines: &[&[u8]]) -> bool {
    let mut with = LineCache::new(true);
    let mut without = LineCache::without_layouts();
    lines.iter().enumerate().all(|(i, l)| {
        let a = parse_line_cached(l, i as u64 + 1, &mut with);
        let b = parse_line_cached(l, i as u64 + 1, &mut without);
        let same_batch = match (&a.event, &b.event) {
            (crate::Event::Batch(x), crate::Event::Batch(y)) => x.same_record(y),
            _ => true,
        };
        let readings = match &a.event {
            crate::Event::Batch(x) => readings_agree(x),
            _ => true,
        };
        same_batch
            && readings
            && a.line_no == b.line_no
            && a.timestamp == b.timestamp
            && a.ranks == b.ranks
            && std::ptr::eq(a.message, b.message)
            && a.event == b.event
    })
}

/// Every reading of a usual decode line by its accessor: the reference the one-pass read
/// ([`crate::BatchLine::usual_decode`]) must give.
pub(crate) fn decode_by_accessors(b: &crate::BatchLine<'_>) -> crate::DecodeReadings {
    crate::DecodeReadings {
        running: b.running_req(),
        queue: b.queue_req(),
        tokens: b.num_token(),
        usage: b.token_usage(),
        gen_tps: b.gen_throughput(),
        graph: b.graph(),
        accept_len: b.accept_len(),
    }
}

/// Every reading of a usual prefill line by its accessor: the reference the one-pass read
/// ([`crate::BatchLine::usual_prefill`]) must give.
pub(crate) fn prefill_by_accessors(b: &crate::BatchLine<'_>) -> crate::PrefillReadings {
    crate::PrefillReadings {
        new_seq: b.new_seq(),
        new_token: b.new_token(),
        cached_token: b.cached_token(),
        running: b.running_req(),
        queue: b.queue_req(),
        usage: b.token_usage(),
        input_tps: b.input_throughput(),
        graph: b.graph(),
    }
}

/// Whether a batch line's one-pass readings ([`crate::BatchLine::usual_decode`],
/// [`crate::BatchLine::usual_prefill`]; a layout hit's plan reads them all at once with AVX2,
/// else one at a time) are its accessors' readings, where it has them.
fn readings_agree(b: &crate::BatchLine<'_>) -> bool {
    let same =
        |a: &dyn std::fmt::Debug, r: &dyn std::fmt::Debug| format!("{a:?}") == format!("{r:?}");
    b.usual_decode()
        .is_none_or(|r| same(&r, &decode_by_accessors(b)))
        && b.usual_prefill()
            .is_none_or(|r| same(&r, &prefill_by_accessors(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_lines_agree() {
        let decode = b"[2026-01-15 08:00:03 TP0] Decode batch, #running-req: 6, #token: 0, token usage: 0.00, accept len: 2.89, cuda graph: True, gen throughput (token/s): 831.69, #queue-req: 146, ";
        let access = br#"[2026-01-15 08:00:02] INFO:     192.0.2.162:50559 - "POST /generate HTTP/1.1" 200 OK"#;
        let retract = b"[2026-01-15 08:00:12 DP1 TP4] KV cache pool is full. Retract requests. #retracted_reqs: 7, #new_token_ratio: 0.4213 -> 0.6000";
        assert!(lines_agree(&[decode, access, retract, decode]));
        assert!(access_agrees(
            r#"INFO:     192.0.2.162:50559 - "POST /generate HTTP/1.1" 200 OK"#
        ));
        assert!(pairs_agree(
            b"#retracted_reqs: 7, #new_token_ratio: 0.4213 -> 0.6000"
        ));
        // a line the fast envelope does not take still agrees (both take the general path)
        assert!(lines_agree(&[
            b"[2026-01-15 08:00:03 TP0]: Decode batch. #running-req: 1"
        ]));
    }
}
